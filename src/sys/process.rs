//! Child processes of the controller (server, workers, router): started from our own binary,
//! tied to the controller's life with PR_SET_PDEATHSIG, killed by pid and reaped.

use anyhow::Context;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Path of the synlab binary children are started from: our own executable, or `SYNLAB_EXE`
/// when set (integration tests run the library inside a test harness, not inside synlab).
pub fn self_exe() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("SYNLAB_EXE") {
        return p.into();
    }
    std::env::current_exe().unwrap_or_else(|_| "/proc/self/exe".into())
}

/// Options for a child: which netns to enter before exec, and extra args.
#[derive(Debug, Clone, Default)]
pub struct Spawn {
    /// Program to run; None = our own binary (the usual case).
    pub program: Option<String>,
    pub args: Vec<String>,
    /// Name of a netns under /run/netns to enter before exec (None = the controller's).
    pub netns: Option<String>,
    /// Pin the child to these CPUs (empty = no pinning).
    pub cpus: Vec<usize>,
    /// Send the child's stdout and stderr to this file (appended) instead of reading stdout
    /// lines and sharing our stderr: for a target command's access log, which would flood the
    /// terminal or draw over the TUI.
    pub output: Option<std::path::PathBuf>,
    /// The child's stderr goes into its stdout pipe (read as lines like the rest) instead of
    /// our stderr: for a child whose every word is for run.log, not the TUI's terminal.
    pub stderr_to_stdout: bool,
}

/// A running child whose stdout lines arrive through `on_line` on a reader thread.
pub struct ChildProc {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ChildProc {
    /// Starts `self_exe() args...`; the child dies when the controller dies (PDEATHSIG).
    pub fn spawn(
        name: &str,
        spawn: &Spawn,
        mut on_line: impl FnMut(&str) + Send + 'static,
    ) -> anyhow::Result<Self> {
        let mut cmd = Command::new(
            spawn
                .program
                .clone()
                .map(std::path::PathBuf::from)
                .unwrap_or_else(self_exe),
        );
        cmd.args(&spawn.args).stdin(Stdio::piped());
        match &spawn.output {
            Some(path) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {} for {name}'s output", path.display()))?;
                cmd.stdout(f.try_clone()?).stderr(f);
            }
            None => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
            }
        }
        let merge_stderr = spawn.stderr_to_stdout && spawn.output.is_none();
        let netns = spawn.netns.clone();
        let cpus = spawn.cpus.clone();
        let parent = std::process::id();
        // SAFETY: only async-signal-safe calls (prctl, getppid, open, setns, sched_setaffinity,
        // close) run between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The controller may have died between fork and prctl.
                if libc::getppid() as u32 != parent {
                    libc::_exit(1);
                }
                // std has set up the pipes by now: fd 1 is the stdout pipe.
                if merge_stderr && libc::dup2(1, 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(ns) = &netns {
                    super::netns_enter_raw(ns)?;
                }
                // Own process group, so a command's children (nginx workers) go with it.
                libc::setpgid(0, 0);
                // A CPU the kernel refuses (offline, outside synlab's cpuset) fails the start
                // rather than leaving the child unpinned.
                if !cpus.is_empty() && !set_affinity(&cpus) {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {name} ({})", self_exe().display()))?;
        let stdin = child.stdin.take();
        let reader = match child.stdout.take() {
            Some(stdout) => Some(
                std::thread::Builder::new()
                    .name(format!("{name}-out"))
                    .spawn(move || {
                        // A worker's report is one line of 10-30 kB (its latency
                        // histograms): read whole, not in 8 kB pieces with a wake-up each.
                        let mut r = BufReader::with_capacity(READ_BUFFER, stdout);
                        let mut line = String::new();
                        loop {
                            line.clear();
                            match r.read_line(&mut line) {
                                Ok(0) | Err(_) => break,
                                Ok(_) => on_line(line.trim_end()),
                            }
                        }
                    })?,
            ),
            None => None,
        };
        Ok(ChildProc {
            name: name.to_string(),
            child,
            stdin,
            reader,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one line on the child's stdin; an error means the child is gone.
    pub fn send_line(&mut self, line: &str) -> std::io::Result<()> {
        match self.stdin.as_mut() {
            Some(s) => {
                s.write_all(line.as_bytes())?;
                s.write_all(b"\n")?;
                s.flush()
            }
            None => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin closed",
            )),
        }
    }

    /// Has the child exited? Returns its status if so.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// If the child has exited: who (its name), its pid and how it ended.
    pub fn death(&mut self) -> Option<Death> {
        let st = self.try_wait()?;
        Some(Death {
            who: self.name.clone(),
            pid: self.pid(),
            how: exit_of(&st),
        })
    }

    /// Closes stdin (the child's cue to stop), waits up to `grace`, then SIGKILLs by pid.
    pub fn stop(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.stdin.take();
        let deadline = Instant::now() + grace;
        loop {
            if let Some(st) = self.try_wait() {
                self.join_reader();
                return Some(st);
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_group();
        let st = self.child.wait().ok();
        self.join_reader();
        st
    }

    /// SIGKILL to the child's process group (the child and what it forked), by pid.
    fn kill_group(&mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: plain kill(2) on the group we created for this child in pre_exec.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
    }

    fn join_reader(&mut self) {
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if self.try_wait().is_none() {
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}

pub use crate::model::death::{Death, Exit};

/// How a process ended (its signal named).
pub fn exit_of(st: &std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(sig)) => Exit::Signal(sig, signal_name(sig)),
        (None, None) => Exit::Other(st.to_string()),
    }
}

/// The name of a signal number (the common ones; others as `signal N`).
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Lets a write to a closed pipe end this process quietly, as `head` expects of `cat`. Rust
/// ignores SIGPIPE, so `synlab check ... | head -1` would otherwise panic in println!. Only for
/// commands that hold nothing to clean up: a run must outlive its reader and tear down.
pub fn die_quietly_on_broken_pipe() {
    // SAFETY: restoring the default disposition of one signal; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The buffer a child's output is read through.
const READ_BUFFER: usize = 64 << 10;

/// Sets this thread's timer slack (default 50 us) so timer wake-ups are not batched; 0 restores
/// the thread's default.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// The CPUs the calling thread may run on (empty if that cannot be read).
pub fn thread_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; pid 0 is the calling thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Whether process `pid` runs: /proc shows it, and not as a zombie waiting to be reaped.
pub fn running(pid: u32) -> bool {
    super::pidstat::PidStat::read(pid).is_some_and(|s| !s.is_zombie())
}

/// Moves the calling thread off `cpus` (the load workers' CPUs), so the lab's own threads do
/// not take time from the load they measure. Keeps the thread where it is when that would
/// leave it no CPU. Returns the CPUs it now may run on (empty: unchanged or failed).
pub fn thread_avoid_cpus(cpus: &[usize]) -> Vec<usize> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let keep = cpus_left(thread_cpus().into_iter(), cpus);
    if keep.is_empty() {
        return Vec::new();
    }
    if !set_affinity(&keep) {
        return Vec::new();
    }
    keep
}

/// Pins the calling thread (or a child between fork and exec: no allocation, only a system
/// call) to `cpus`; false if the kernel refused.
fn set_affinity(cpus: &[usize]) -> bool {
    // SAFETY: cpu_set_t is plain data; indices are kept below CPU_SETSIZE (CPU_SET would
    // panic past it); pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The CPUs of `allowed` that are not in `avoid`.
fn cpus_left(allowed: impl Iterator<Item = usize>, avoid: &[usize]) -> Vec<usize> {
    allowed.filter(|c| !avoid.contains(c)).collect()
}

#[cfg(test)]
mod affinity_tests {
    use super::*;

    #[test]
    fn exits_are_described_by_code_or_signal() {
        use std::os::unix::process::ExitStatusExt;
        let killed = std::process::ExitStatus::from_raw(libc::SIGKILL);
        assert_eq!(exit_of(&killed), Exit::Signal(9, "SIGKILL".into()));
        let code = std::process::ExitStatus::from_raw(3 << 8);
        assert_eq!(exit_of(&code), Exit::Code(3));
    }

    #[test]
    fn the_workers_cpus_are_left_out_unless_nothing_remains() {
        assert_eq!(cpus_left([0, 1, 2, 3].into_iter(), &[1]), vec![0, 2, 3]);
        assert!(cpus_left([1].into_iter(), &[1]).is_empty());
    }

    #[test]
    fn a_thread_moves_off_the_given_cpus() {
        let (allowed, moved, after) = std::thread::spawn(|| {
            let allowed = thread_cpus();
            assert!(
                thread_avoid_cpus(&[]).is_empty(),
                "nothing to avoid: unchanged"
            );
            let moved = thread_avoid_cpus(&allowed[..1]);
            (allowed, moved, thread_cpus())
        })
        .join()
        .unwrap();
        assert!(!allowed.is_empty());
        if allowed.len() > 1 {
            assert_eq!(moved, allowed[1..]);
            assert_eq!(after, allowed[1..]);
        } else {
            assert!(moved.is_empty(), "one CPU: the thread stays where it is");
            assert_eq!(after, allowed);
        }
    }
}
