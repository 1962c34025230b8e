//! A kernel tracepoint counted machine-wide with perf_event_open (PERF_TYPE_TRACEPOINT, one
//! counting event per online CPU, an optional filter such as `reason == 40`): no BPF, no
//! sampling, no ring buffer. Root only. Its id and format come from tracefs, mounted for the
//! read when it is not (and unmounted right after: an open event needs no tracefs).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// A tracepoint as tracefs describes it: its id (perf's `config`) and its format file.
#[derive(Debug, Clone)]
pub struct TracepointInfo {
    pub id: u64,
    pub format: String,
}

/// Where tracefs is mounted now (/proc/self/mounts), if anywhere.
fn tracefs_mounted() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_, dir, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "tracefs").then(|| PathBuf::from(dir))
    })
}

/// A tracefs mount of our own, unmounted (lazily, then its directory removed) on drop.
struct OwnMount(PathBuf);

impl OwnMount {
    fn new() -> io::Result<Self> {
        let dir = std::env::temp_dir().join(format!("synlab-tracefs-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        nix::mount::mount(
            Some("tracefs"),
            &dir,
            Some("tracefs"),
            nix::mount::MsFlags::MS_NOSUID
                | nix::mount::MsFlags::MS_NODEV
                | nix::mount::MsFlags::MS_NOEXEC,
            None::<&str>,
        )
        .map_err(|e| {
            let _ = std::fs::remove_dir(&dir);
            io::Error::other(format!("mount -t tracefs at {}: {e}", dir.display()))
        })?;
        Ok(OwnMount(dir))
    }
}

impl Drop for OwnMount {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Reads `events/<group>/<name>/{id,format}` from tracefs; mounts tracefs for the read when it
/// is not mounted, and unmounts it after. The bool says whether synlab mounted it.
pub fn read_tracepoint(group: &str, name: &str) -> io::Result<(TracepointInfo, bool)> {
    let read = |root: &Path| -> io::Result<TracepointInfo> {
        let dir = root.join("events").join(group).join(name);
        let id = std::fs::read_to_string(dir.join("id"))
            .map_err(|e| io::Error::new(e.kind(), format!("{}/id: {e}", dir.display())))?;
        let id = id
            .trim()
            .parse()
            .map_err(|_| io::Error::other(format!("{}/id: not a number: {id:?}", dir.display())))?;
        let format = std::fs::read_to_string(dir.join("format"))?;
        Ok(TracepointInfo { id, format })
    };
    match tracefs_mounted() {
        Some(root) => Ok((read(&root)?, false)),
        None => {
            let m = OwnMount::new()?;
            let r = read(&m.0)?;
            drop(m);
            Ok((r, true))
        }
    }
}

/// perf_event_attr as of PERF_ATTR_SIZE_VER0 (64 bytes): all a counting tracepoint needs.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// _IOW('$', 6, char *)
const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
/// _IO('$', 0)
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// attr.flags bit 0: created disabled, enabled once the filter is set.
const FLAG_DISABLED: u64 = 1;

/// One tracepoint counted on every online CPU: the sum of its per-CPU counts.
pub struct TracepointCounter {
    fds: Vec<OwnedFd>,
}

impl TracepointCounter {
    /// Opens the counter of tracepoint `id` on each CPU of `cpus`, with `filter` (ftrace filter
    /// syntax, e.g. `reason == 40`) when given, and starts it.
    pub fn open(id: u64, filter: Option<&str>, cpus: &[usize]) -> io::Result<Self> {
        let filter = filter
            .map(|f| std::ffi::CString::new(f).map_err(|_| io::Error::other("NUL in filter")))
            .transpose()?;
        let mut fds = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let attr = PerfEventAttr {
                type_: PERF_TYPE_TRACEPOINT,
                size: std::mem::size_of::<PerfEventAttr>() as u32,
                config: id,
                flags: FLAG_DISABLED,
                ..Default::default()
            };
            // SAFETY: attr is a valid, initialised perf_event_attr of the size it says; pid -1
            // with a cpu counts every task on that CPU; no group; the fd is owned at once.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    &attr as *const PerfEventAttr,
                    -1 as libc::pid_t,
                    cpu as libc::c_int,
                    -1 as libc::c_int,
                    PERF_FLAG_FD_CLOEXEC,
                )
            };
            if fd < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("perf_event_open(tracepoint {id}, cpu {cpu}): {e}"),
                ));
            }
            // SAFETY: fd was just returned by the kernel and is ours alone.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            if let Some(f) = &filter {
                // SAFETY: a NUL-terminated string the kernel copies during the call.
                let r =
                    unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_SET_FILTER, f.as_ptr()) };
                if r != 0 {
                    let e = io::Error::last_os_error();
                    return Err(io::Error::new(
                        e.kind(),
                        format!("filter {f:?} on tracepoint {id}: {e}"),
                    ));
                }
            }
            fds.push(fd);
        }
        for fd in &fds {
            // SAFETY: an ioctl without argument on our own perf fd.
            if unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(TracepointCounter { fds })
    }

    /// The count since it was opened, over all CPUs.
    pub fn read(&self) -> io::Result<u64> {
        let mut sum = 0u64;
        for fd in &self.fds {
            let mut b = [0u8; 8];
            // A read of a counting event (read_format 0) gives its u64 value.
            let n = nix::unistd::read(fd.as_raw_fd(), &mut b).map_err(io::Error::from)?;
            if n != b.len() {
                return Err(io::Error::other(format!(
                    "perf counter read {n} bytes, not 8"
                )));
            }
            sum += u64::from_ne_bytes(b);
        }
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn attr_is_the_kernels_first_size() {
        // PERF_ATTR_SIZE_VER0: the kernel takes this size and zero-fills the rest.
        assert_eq!(std::mem::size_of::<super::PerfEventAttr>(), 64);
    }
}
