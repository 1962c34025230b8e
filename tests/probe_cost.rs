//! Probe cost benchmark (ignored by default; run through bench/probe-cost.sh): CPU time of one
//! read of each source at a given number of TIME_WAIT sockets in a private netns, the total
//! probe CPU % at a 200 ms interval, and `ss -tan` / /proc/net/tcp at the same counts.

mod probe_support;

use probe_support::{privileged, Netns};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use synlab::probe::sockdiag::{state, states_mask, SERVER_STATES};
use synlab::sys::procfs::{thread_cpu_us, ProcFile};
use synlab::sys::sockdiag::SockDiag;

fn env_u64(k: &str, d: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

/// `n` server-closed transactions from many client addresses (127.0.1.x) so ports last.
fn make_time_wait(ns: &Netns, n: u64) -> u16 {
    let l = ns.run(|| TcpListener::bind("127.0.0.1:0").unwrap());
    let port = l.local_addr().unwrap().port();
    let server = ns.spawn(move || {
        for _ in 0..n {
            let (mut c, _) = l.accept().unwrap();
            c.write_all(b"x").unwrap();
        }
    });
    ns.run(move || {
        for i in 0..n {
            let src: SocketAddr = format!(
                "127.0.{}.{}:0",
                1 + (i / 20000) / 250,
                1 + (i / 20000) % 250
            )
            .parse()
            .unwrap();
            let s = socket2_free_connect(src, port);
            let mut s = s;
            let mut b = [0u8; 1];
            let _ = s.read(&mut b);
        }
    });
    server.join().unwrap();
    port
}

fn socket2_free_connect(src: SocketAddr, port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(src) = src else {
        unreachable!()
    };
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as u16;
        sa.sin_addr.s_addr = u32::from_ne_bytes(src.ip().octets());
        let len = std::mem::size_of::<libc::sockaddr_in>() as u32;
        assert_eq!(
            libc::bind(fd, (&sa as *const libc::sockaddr_in).cast(), len),
            0,
            "bind {src}"
        );
        sa.sin_port = port.to_be();
        sa.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        assert_eq!(
            libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), len),
            0
        );
        TcpStream::from_raw_fd(fd)
    }
}

/// CPU µs per call of `f`, averaged over `n` calls.
fn cost(n: u32, mut f: impl FnMut()) -> f64 {
    let t = thread_cpu_us();
    for _ in 0..n {
        f();
    }
    (thread_cpu_us() - t) as f64 / n as f64
}

#[test]
#[ignore = "benchmark: run bench/probe-cost.sh"]
fn probe_cost() {
    if !privileged("probe cost benchmark") {
        return;
    }
    let tw = env_u64("SYNLAB_BENCH_TW", 10_000);
    let ns = Netns::new();
    let t0 = Instant::now();
    let port = make_time_wait(&ns, tw);
    eprintln!("made {tw} TIME_WAIT in {:.1} s", t0.elapsed().as_secs_f64());
    let name = ns.0.clone();
    let rows = ns.run(move || {
        let mut rows = Vec::new();
        for (label, path) in [
            ("/proc/net/snmp", "/proc/thread-self/net/snmp"),
            ("/proc/net/netstat", "/proc/thread-self/net/netstat"),
            ("/proc/net/sockstat", "/proc/thread-self/net/sockstat"),
            ("/proc/stat", "/proc/stat"),
            ("/proc/softirqs", "/proc/softirqs"),
        ] {
            let mut f = ProcFile::open(path).unwrap();
            rows.push((label.to_string(), cost(50, || _ = f.read().unwrap().len())));
        }
        let mut d = SockDiag::open().unwrap();
        rows.push((
            "sock_diag LISTEN, port".into(),
            cost(50, || {
                _ = d.dump(states_mask(&[state::LISTEN]), port).unwrap()
            }),
        ));
        rows.push((
            "sock_diag server states, port".into(),
            cost(20, || {
                _ = d.dump(states_mask(&SERVER_STATES), port).unwrap()
            }),
        ));
        rows.push((
            "sock_diag all incl. TIME_WAIT".into(),
            cost(5, || _ = d.dump(!(1u32 << state::SYN_SENT), 0).unwrap()),
        ));
        let mut f = ProcFile::open("/proc/thread-self/net/tcp").unwrap();
        rows.push((
            "/proc/net/tcp (for comparison)".into(),
            cost(3, || _ = f.read().unwrap().len()),
        ));
        rows
    });
    let ss = {
        let t = Instant::now();
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &name, "ss", "-tan"])
            .output()
            .unwrap();
        assert!(out.status.success());
        t.elapsed().as_secs_f64() * 1e6
    };
    // Whole probe at 200 ms for 3 s.
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut cfg = synlab::probe::ProbeConfig::new(port);
    cfg.netns = Some(name);
    let h = synlab::probe::spawn(cfg, tx).unwrap();
    let mut pcts = Vec::new();
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        if let Some(p) = rx
            .recv_timeout(Duration::from_secs(2))
            .unwrap()
            .m
            .probe_cpu_pct
        {
            pcts.push(p);
        }
    }
    drop(h);
    pcts.sort_by(|a, b| a.total_cmp(b));
    let probe_pct = pcts[pcts.len() / 2];
    println!("\nTIME_WAIT = {tw}");
    println!("{:<34} {:>12}", "source", "CPU us/read");
    for (l, us) in rows {
        println!("{l:<34} {us:>12.1}");
    }
    println!(
        "{:<34} {:>12.1}  (wall, incl. process start; ~ CPU of one ss run)",
        "ss -tan", ss
    );
    let ss_pct = ss / 200_000.0 * 100.0;
    println!(
        "all probes at 200 ms: {probe_pct:.2} % of a core (median); ss -tan at 200 ms: ~{ss_pct:.0} %; ratio ~{:.0}x",
        ss_pct / probe_pct.max(0.01)
    );
}
