//! `synlab serve --config-json` as the lab runs it: JSON ServerStats lines on stdout whose
//! counts match the client's, exit on stdin EOF, and prefork workers that die with the server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use synlab::target::config::ServerNote;
use synlab::target::{Arch, FileSet, ServeConfig, ServerStats, ServiceKind};

fn cfg(arch: Arch, workers: u32) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        arch,
        workers,
        max_workers: workers,
        backlog: 64,
        service_time_us: 0,
        service: ServiceKind::Cpu,
        files: vec![FileSet::Specweb96],
        keepalive: false,
        stats_interval_ms: 100,
        accept_batch: 1,
        lingering_close: true,
        linger_timeout_ms: 2000,
        http3: None,
        tls: None,
        max_streams: 128,
    }
}

/// The server child; SIGKILLed and reaped on drop if a test fails half-way.
struct ServerProc {
    child: Child,
    lines: BufReader<ChildStdout>,
    /// The lines besides stats (its work's calibration ...), as they came.
    notes: Vec<ServerNote>,
}

impl ServerProc {
    fn start(c: &ServeConfig) -> (ServerProc, ServerStats) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_synlab"))
            .args(["serve", "--config-json", &serde_json::to_string(c).unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start synlab serve");
        let lines = BufReader::new(child.stdout.take().unwrap());
        let mut p = ServerProc {
            child,
            lines,
            notes: Vec::new(),
        };
        let first = p
            .next_stats()
            .expect("a first stats line right after binding");
        (p, first)
    }

    /// The next stats line; the notes on the way are kept in `notes`.
    fn next_stats(&mut self) -> Option<ServerStats> {
        loop {
            let mut line = String::new();
            if self.lines.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Ok(n) = serde_json::from_str::<ServerNote>(&line) {
                self.notes.push(n);
                continue;
            }
            return Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("bad stats line {line:?}: {e}")),
            );
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get10(addr: SocketAddr, path: &str) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert!(
        all.starts_with(b"HTTP/1.0 200"),
        "{:?}",
        String::from_utf8_lossy(&all[..all.len().min(40)])
    );
    all.len()
}

/// Live processes whose parent is `ppid` (from /proc/*/stat).
fn children_of(ppid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the `(comm)`: state ppid ...
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let mut f = after.split(' ');
        let state = f.next().unwrap_or("");
        if f.next().and_then(|p| p.parse::<u32>().ok()) == Some(ppid) && state != "Z" {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s[s.rfind(')').unwrap() + 2..].starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn json_stats_lines_count_what_the_client_got_and_stdin_eof_stops() {
    for arch in [Arch::Event, Arch::Threaded, Arch::Prefork] {
        let (mut p, first) = ServerProc::start(&cfg(arch, 2));
        let addr: SocketAddr = first
            .listen
            .parse()
            .expect("listen address in the first line");
        assert_ne!(addr.port(), 0);
        assert_eq!(first.responses, 0);
        let mut bytes = 0u64;
        for i in 0..50 {
            bytes += get10(addr, &format!("/specweb96/class{}_{}", i % 3, 1 + i % 9)) as u64;
        }
        std::thread::sleep(Duration::from_millis(250));
        drop(p.child.stdin.take()); // EOF: the controller's stop signal
        let mut lines = vec![first];
        while let Some(s) = p.next_stats() {
            lines.push(s);
        }
        let t0 = Instant::now();
        while p.child.try_wait().unwrap().is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{arch:?}: no exit after stdin EOF"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            lines.len() >= 3,
            "{arch:?}: periodic lines, got {}",
            lines.len()
        );
        assert!(lines
            .windows(2)
            .all(|w| w[1].t_s >= w[0].t_s && w[1].responses >= w[0].responses));
        let last = lines.last().unwrap();
        assert_eq!(last.responses, 50, "{arch:?}");
        assert_eq!(last.accepted, 50, "{arch:?}");
        assert_eq!(last.bytes_out, bytes, "{arch:?}: bytes the client read");
    }
}

/// User and system clock ticks of process `pid`.
fn cpu_ticks(pid: u32) -> (u64, u64) {
    let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let s = synlab::sys::pidstat::PidStat::parse(&t).unwrap();
    (s.utime, s.stime)
}

/// `service = "cpu"` is a calibrated count of user-mode work with no system call inside: a
/// server kept busy by it spends its CPU in user mode, as an application does (spinning on
/// the thread's CPU clock read 40 % user, 58 % system), and it says how its work was
/// calibrated and how close the calibrated work came to the time asked.
#[test]
fn a_cpu_bound_service_is_user_time_and_says_its_calibration() {
    let mut c = cfg(Arch::Event, 1);
    c.service_time_us = 2000;
    let (mut p, first) = ServerProc::start(&c);
    let addr: SocketAddr = first.listen.parse().unwrap();
    assert!(p.next_stats().is_some());
    let cal = match p.notes.first() {
        Some(ServerNote::Calibration(cal)) => *cal,
        other => panic!("no calibration line after the first stats line: {other:?}"),
    };
    eprintln!("{}", cal.describe());
    assert_eq!(cal.check_us, 2000.0);
    // CPU time of the calibrated work against the time asked: a few % apart at most.
    assert!(cal.error_p50_pct.abs() < 10.0, "{cal:?}");
    let pid = p.child.id();
    let (u0, s0) = cpu_ticks(pid);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    get10(addr, "/specweb96/class0_1");
                    n += 1;
                }
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let served: u64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let (u1, s1) = cpu_ticks(pid);
    let (user, system) = ((u1 - u0) as f64, (s1 - s0) as f64);
    let share = user / (user + system);
    eprintln!(
        "{served} responses; server {user} user + {system} system ticks: user {:.0} %",
        share * 100.0
    );
    assert!(served > 100, "{served}");
    assert!(
        user + system > 50.0,
        "the server was busy: {user} + {system} ticks"
    );
    assert!(
        share > 0.85,
        "user share {share:.2} ({user} user, {system} system ticks)"
    );
}

#[test]
fn prefork_reports_its_workers_and_they_die_with_the_parent() {
    let (mut p, first) = ServerProc::start(&cfg(Arch::Prefork, 3));
    let pid = p.child.id();
    assert_eq!(first.pid, pid);
    assert_eq!(first.workers, 3, "workers reported at start");
    // The server's one child is the exec'd manager (single-threaded, so its forks are safe);
    // the workers are the manager's children.
    let managers = children_of(pid);
    assert_eq!(
        managers.len(),
        1,
        "one prefork manager under {pid}: {managers:?}"
    );
    let comm = std::fs::read_to_string(format!("/proc/{}/cmdline", managers[0])).unwrap();
    assert!(comm.contains("prefork-manager"), "{comm:?}");
    let kids = children_of(managers[0]);
    assert_eq!(
        kids.len(),
        3,
        "worker processes under {}: {kids:?}",
        managers[0]
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", managers[0])).unwrap();
    assert!(
        status.contains("Threads:\t1\n"),
        "the manager is single-threaded"
    );
    // They serve.
    let addr: SocketAddr = first.listen.parse().unwrap();
    get10(addr, "/specweb96/class0_1");
    assert!(p.next_stats().is_some());
    // SIGKILL the server: nothing may outlive it (PR_SET_PDEATHSIG, manager then workers).
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    let all: Vec<u32> = managers.iter().chain(&kids).copied().collect();
    let t0 = Instant::now();
    while all.iter().any(|&k| alive(k)) {
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "processes outlived the killed server: {:?}",
            all.iter().filter(|&&k| alive(k)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn bad_flags_and_configs_say_what_to_do() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_synlab"))
            .arg("serve")
            .args(args)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?} should fail");
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    assert!(run(&["--service-time", "5"]).contains("has no unit"));
    assert!(run(&["--files", "spec"]).contains("use specweb96"));
    assert!(
        run(&["--arch", "prefork", "--workers", "8", "--max-workers", "2"])
            .contains("set max_workers >= workers")
    );
    assert!(run(&["--config-json", "{\"listen\":1}"]).contains("not a valid ServeConfig"));
}

#[test]
fn standalone_prints_where_it_listens_and_stops_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--arch",
            "threaded",
            "--duration",
            "20s",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("listening on http://127.0.0.1:"), "{line}");
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    get10(addr, "/specweb96/class1_1");
    // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "no exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(st.success(), "{st:?}");
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("1 responses"), "{rest}");
}
