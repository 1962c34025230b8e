//! Live /proc reads for the probes: files kept open and re-read from offset 0 (cheaper than
//! open+close each sample), the server's process family, socket owners, thread CPU time, and
//! entering another network namespace from the calling thread only.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// A /proc file read again and again through one descriptor.
#[derive(Debug)]
pub struct ProcFile {
    path: PathBuf,
    file: File,
    buf: String,
}

impl ProcFile {
    pub fn open(path: impl Into<PathBuf>) -> std::io::Result<Self> {
        let path = path.into();
        let file = File::open(&path)?;
        Ok(ProcFile {
            path,
            file,
            buf: String::with_capacity(8192),
        })
    }

    /// The whole file as it is now.
    pub fn read(&mut self) -> std::io::Result<&str> {
        self.buf.clear();
        self.file.seek(SeekFrom::Start(0))?;
        self.file.read_to_string(&mut self.buf)?;
        Ok(&self.buf)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The system's CPU times (`cpu` lines) and interrupt counts (read every sample).
pub const STAT: &str = "/proc/stat";
/// Softirq counts per CPU (read every sample).
pub const SOFTIRQS: &str = "/proc/softirqs";
/// The TCP/IP counters (`Tcp:`, `Ip:` ...) of a namespace, as the parsers name them in errors
/// (read through [`net_dir`]).
pub const NET_SNMP: &str = "/proc/net/snmp";
/// The extended TCP counters (`TcpExt:`), likewise.
pub const NET_NETSTAT: &str = "/proc/net/netstat";
/// Socket counts per protocol, likewise.
pub const NET_SOCKSTAT: &str = "/proc/net/sockstat";
/// How a /proc/<pid>/stat line is named in errors.
pub const PID_STAT: &str = "/proc/<pid>/stat";

/// /proc/<pid>/stat (`self`: this process).
pub fn pid_stat_path(pid: Option<u32>) -> PathBuf {
    match pid {
        Some(p) => PathBuf::from(format!("/proc/{p}/stat")),
        None => PathBuf::from("/proc/self/stat"),
    }
}

/// The kernel's ceiling on a process's open files (fs.nr_open); None when unreadable.
pub fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// The low end of the kernel's ephemeral port range (net.ipv4.ip_local_port_range) of the
/// calling thread's namespace; None when unreadable.
pub fn ephemeral_low() -> Option<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
}

/// The children of `pid`'s main thread (/proc/PID/task/PID/children), oldest first.
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The /proc/.../net directory of the namespace the calling thread is in (after
/// [`enter_netns`], the probed one).
pub fn net_dir() -> PathBuf {
    PathBuf::from("/proc/thread-self/net")
}

/// Which network namespace a probe thread should live in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetnsTarget {
    /// A named netns under /run/netns.
    Named(String),
    /// The netns of a process.
    OfPid(u32),
}

impl NetnsTarget {
    pub fn path(&self) -> PathBuf {
        match self {
            NetnsTarget::Named(n) => PathBuf::from("/run/netns").join(n),
            NetnsTarget::OfPid(p) => PathBuf::from(format!("/proc/{p}/ns/net")),
        }
    }
}

fn ns_ino(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path)?.ino())
}

/// Moves the calling thread (only) into `target`'s network namespace; a no-op if it is there
/// already (so no CAP_SYS_ADMIN is needed to probe our own namespace).
pub fn enter_netns(target: &NetnsTarget) -> std::io::Result<()> {
    let path = target.path();
    if ns_ino(&path)? == ns_ino(Path::new("/proc/thread-self/ns/net"))? {
        return Ok(());
    }
    let f = File::open(&path)?;
    // SAFETY: a valid fd; CLONE_NEWNET changes only this thread's namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time of the calling thread, in microseconds (see `server_io::thread_cpu_ns`).
pub fn thread_cpu_us() -> u64 {
    super::server_io::thread_cpu_ns() / 1000
}

/// Clock ticks per second (USER_HZ) for /proc/<pid>/stat times.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// `pid` and all its descendants, through /proc/PID/task/TID/children.
pub fn process_family(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() && out.len() < 100_000 {
        let p = out[i];
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in tasks.flatten() {
                let mut path = t.path();
                path.push("children");
                if let Ok(s) = std::fs::read_to_string(&path) {
                    out.extend(s.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
                }
            }
        }
        i += 1;
    }
    out
}

/// Inodes of the sockets a process holds open (from /proc/PID/fd).
pub fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let s = l.to_str()?;
            s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// Processes holding any of `inodes` open (a walk over every /proc/PID/fd: run once, not per
/// sample). Sorted by pid, so the first is usually the parent of a prefork family.
pub fn pids_holding(inodes: &[u64]) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| socket_inodes(pid).iter().any(|i| inodes.contains(i)))
        .collect();
    pids.sort_unstable();
    pids
}
