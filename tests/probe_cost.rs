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
    // ESTABLISHED connections on the probed port, held open while the probes are measured
    // (std's listener sets SO_REUSEADDR, so it binds beside the port's TIME_WAIT sockets).
    let est = env_u64("SYNLAB_BENCH_EST", 1_000);
    let held = ns.run(move || {
        let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let mut held = Vec::new();
        for _ in 0..est {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (a, _) = l.accept().unwrap();
            held.push((c, a));
        }
        (l, held)
    });
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
            "  the same, one walk per family".into(),
            cost(20, || {
                _ = d
                    .dump_per_family(states_mask(&SERVER_STATES), port)
                    .unwrap()
            }),
        ));
        rows.push((
            "sock_diag server states + TW, port".into(),
            cost(20, || {
                _ = d
                    .dump(
                        states_mask(&SERVER_STATES) | states_mask(&[state::TIME_WAIT]),
                        port,
                    )
                    .unwrap()
            }),
        ));
        // The probe's walk (issue 44): the states, the connections' queues and the accept
        // queue's ages from one walk asking tcp_info, against the three walks it replaced
        // (four on the per-family ages).
        rows.push((
            "sock_diag states + tcp_info, port".into(),
            cost(20, || {
                _ = d.dump_with_info(states_mask(&SERVER_STATES), port).unwrap()
            }),
        ));
        rows.push((
            "  the same as three walks".into(),
            cost(20, || {
                _ = d.dump(states_mask(&SERVER_STATES), port).unwrap();
                _ = synlab::sys::conn_queues::conn_queues(&mut d, port).unwrap();
                _ = synlab::sys::acceptq::waiting_ages_ms(&mut d, port).unwrap();
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
    // Whole probe at 200 ms for 12 s, as the lab runs it and as `synlab probe` does (the
    // port's TIME_WAIT in the walk): the median sample, the mean (the state walks included)
    // and how many walks of the states there were.
    let whole = |port_time_wait: bool| {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut cfg = synlab::probe::ProbeConfig::new(port);
        cfg.netns = Some(name.clone());
        cfg.port_time_wait = port_time_wait;
        let h = synlab::probe::spawn(cfg, tx).unwrap();
        let mut pcts = Vec::new();
        let mut walks = 0;
        let end = Instant::now() + Duration::from_secs(12);
        while Instant::now() < end {
            let s = rx.recv_timeout(Duration::from_secs(2)).unwrap();
            walks += usize::from(s.m.established.is_some());
            if let Some(p) = s.m.probe_cpu_pct {
                pcts.push(p);
            }
        }
        drop(h);
        let mean = pcts.iter().sum::<f64>() / pcts.len() as f64;
        pcts.sort_by(|a, b| a.total_cmp(b));
        (pcts[pcts.len() / 2], mean, walks)
    };
    let (probe_pct, lab_mean, lab_walks) = whole(false);
    let (_, cli_mean, cli_walks) = whole(true);
    drop(held);
    let tcp_line = ns.run(|| {
        std::fs::read_to_string("/proc/thread-self/net/sockstat")
            .unwrap()
            .lines()
            .find(|l| l.starts_with("TCP:"))
            .unwrap_or_default()
            .to_string()
    });
    println!("\nsockstat at the end: {tcp_line}");
    println!("TIME_WAIT = {tw}, ESTABLISHED = {est} (x2: both ends in the netns)");
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
    println!(
        "all probes at 200 ms over 12 s, state walks included: the lab's {lab_mean:.2} % of a core ({lab_walks} walks), synlab probe's (+ the port's TIME_WAIT) {cli_mean:.2} % ({cli_walks} walks)"
    );
}

/// A TCP SYN from 127.0.0.2:`sport` to 127.0.0.1:`dport` (the kernel adds the IP header).
fn syn_segment(sport: u16, dport: u16, seq: u32) -> [u8; 20] {
    let mut t = [0u8; 20];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = 0x02;
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    t
}

/// Sends `count` SYNs (distinct source ports and sequence numbers) on a raw socket with
/// sendmmsg; returns how many the kernel took.
fn send_syns(fd: i32, dport: u16, first: u64, count: usize) -> usize {
    let mut dst: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    dst.sin_family = libc::AF_INET as u16;
    dst.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    let mut segs: Vec<[u8; 20]> = (0..count as u64)
        .map(|k| {
            let i = first + k;
            syn_segment(1024 + (i % 60000) as u16, dport, i as u32)
        })
        .collect();
    let mut iov: Vec<libc::iovec> = segs
        .iter_mut()
        .map(|s| libc::iovec {
            iov_base: s.as_mut_ptr().cast(),
            iov_len: 20,
        })
        .collect();
    let name = (
        (&mut dst as *mut libc::sockaddr_in).cast(),
        std::mem::size_of::<libc::sockaddr_in>() as u32,
    );
    let mut msgs = synlab::sys::packet::mmsg_headers(&mut iov, Some(name));
    // SAFETY: headers point at live segments and `dst`.
    let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), count as u32, 0) };
    n.max(0) as usize
}

fn pin_thread(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one bit set; 0 = this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The highest SYN rate synlab's pcap source counts with zero kernel drops: raw SYNs to a
/// closed port on lo of a private netns at stepped rates (generator on CPU 0, capture on CPU 1).
#[test]
#[ignore = "benchmark: run bench/probe-cost.sh"]
fn pcap_max_syn_rate() {
    if !privileged("pcap SYN rate benchmark") {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;
    use synlab::sys::pcap::CaptureCounters;
    let ns = Netns::new();
    let port = 9;
    let secs = 2.0;
    println!("\npcap SYN counting (BPF filter, snaplen 96) on lo, {secs} s per step");
    println!(
        "{:>9} {:>9} {:>9} {:>9} {:>8} {:>10}",
        "rate/s", "achieved", "sent", "counted", "drops", "cap CPU %"
    );
    let mut best: f64 = 0.0;
    for rate in [
        50_000.0, 100_000.0, 200_000.0, 300_000.0, 400_000.0, 500_000.0,
    ] {
        let counters = Arc::new(CaptureCounters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (c, st) = (counters.clone(), stop.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let cap = ns.spawn(move || {
            pin_thread(1);
            let cap = synlab::sys::pcap::open("lo", port).expect("open pcap on lo");
            ready_tx.send(()).unwrap();
            cap.run(c, st);
        });
        ready_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let t0 = Instant::now();
        let sent = ns.run(move || {
            pin_thread(0);
            // SAFETY: a raw TCP socket owned by this closure.
            let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_TCP) };
            assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
            let start = Instant::now();
            let total = (rate * secs) as u64;
            let mut n = 0u64;
            while n < total {
                let due = ((start.elapsed().as_secs_f64() * rate) as u64 + 1).min(total);
                if due > n {
                    n += send_syns(fd, port, n, (due - n).min(512) as usize) as u64;
                } else {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
            unsafe { libc::close(fd) };
            n
        });
        let achieved = sent as f64 / t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(500));
        let cpu0 = counters.cpu_us.load(Relaxed);
        stop.store(true, Relaxed);
        cap.join().unwrap();
        let counted = counters.syn_in.load(Relaxed);
        let drops = counters.dropped.load(Relaxed) + counters.if_dropped.load(Relaxed);
        let cpu_pct = cpu0 as f64 / (t0.elapsed().as_secs_f64() + 0.2) / 1e4;
        let ok = counted == sent && drops == 0;
        if ok {
            best = best.max(achieved);
        }
        println!(
            "{rate:>9.0} {achieved:>9.0} {sent:>9} {counted:>9} {drops:>8} {cpu_pct:>10.1}  {}",
            if ok { "ok" } else { "LOSS" }
        );
    }
    println!(
        "highest SYN rate counted exactly with zero kernel drops: {best:.0}/s (goal >= 100,000)"
    );
}
