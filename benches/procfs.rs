//! The `procfs` crate against synlab's own /proc readers (issue 44 item 6; the decision and
//! its figures are in ARCHITECTURE.md, "/proc behind `sys`"): a process's stat, its main
//! thread's children and its socket inodes (from /proc/PID/fd), each read whole per call as
//! the walks off the sampling path do, and the sampling path's kept-open stat for reference.
//! Reads this process, which holds 100 sockets for the fd walk.
//! `cargo bench --features procfs-bench --bench procfs`.

use std::hint::black_box;
use std::time::Instant;
use synlab::sys::pidstat::PidStat;
use synlab::sys::procfs::{self, ProcFile};

/// Best of 5 rounds of `rounds` calls, in microseconds per call.
fn time(label: &str, rounds: u32, mut f: impl FnMut() -> u64) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut sum = 0;
        for _ in 0..rounds {
            sum += f();
        }
        black_box(sum);
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(rounds));
    }
    println!("{label:<44} {:>8.1} us per call (best of 5)", best / 1000.0);
}

fn main() {
    let pid = std::process::id();
    // Sockets for the fd walk to find (a server holds a listener and its connections).
    let _socks: Vec<_> = (0..100)
        .map(|_| std::os::unix::net::UnixStream::pair().expect("a socket pair"))
        .collect();
    let me = || procfs_crate::process::Process::new(pid as i32).expect("this process");
    let n = 5_000;
    time("stat: own (PidStat::read)", n, || {
        PidStat::read(pid).expect("own stat").starttime
    });
    time("stat: procfs (Process::new + stat)", n, || {
        me().stat().expect("stat").starttime
    });
    let mut kept = ProcFile::open(procfs::pid_stat_path(Some(pid))).expect("own stat");
    time("stat: own, kept open (the sampling path)", n, || {
        PidStat::parse(kept.read().expect("read"))
            .expect("parse")
            .starttime
    });
    time("children: own (procfs::children)", n, || {
        procfs::children(pid).len() as u64
    });
    time("children: procfs (task_main_thread.children)", n, || {
        let main = me().task_main_thread().expect("main thread");
        main.children().expect("children").len() as u64
    });
    time("socket fds: own (procfs::socket_inodes)", n / 10, || {
        procfs::socket_inodes(pid).len() as u64
    });
    time("socket fds: procfs (fd() sockets)", n / 10, || {
        me().fd()
            .expect("fds")
            .flatten()
            .filter(|f| matches!(f.target, procfs_crate::process::FDTarget::Socket(_)))
            .count() as u64
    });
}
