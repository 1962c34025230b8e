//! The drops group (issue 48 item 1) on the real kernel: a listener with backlog 16 that never
//! accepts, flooded in a private netns. The group's "accept queue full" rate, summed over the
//! samples, must equal the namespace's own ListenOverflows change, and the report's "what the
//! kernel dropped, and why" must name it first.

mod probe_support;

use probe_support::{connect_nonblocking, privileged, Netns, RawListener};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};
use synlab::model::col;
use synlab::model::drops::{DropReason, DROP_REASONS};
use synlab::probe::procnet::NetCounters;
use synlab::probe::{spawn, ProbeConfig, ProbeSample};
use synlab::report::read::{Cell, Point};

/// Keeps up to 64 attempts open, each closed after 200 ms (before the first SYN retry).
fn blast(port: u16, for_: Duration) -> u64 {
    let to = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let end = Instant::now() + for_;
    let mut open: std::collections::VecDeque<(i32, Instant)> = Default::default();
    let mut attempts = 0;
    while Instant::now() < end {
        while open
            .front()
            .is_some_and(|(_, t)| t.elapsed() >= Duration::from_millis(200))
        {
            let (fd, _) = open.pop_front().unwrap();
            unsafe { libc::close(fd) };
        }
        if open.len() < 64 {
            if let Some(fd) = connect_nonblocking(to) {
                attempts += 1;
                open.push_back((fd, Instant::now()));
            }
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    for (fd, _) in open {
        unsafe { libc::close(fd) };
    }
    attempts
}

/// The namespace's ListenOverflows, read by a thread inside it (thread-self: this thread's
/// namespace, not the process's).
fn overflows(ns: &Netns) -> u64 {
    let c = ns.run(|| {
        let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
        NetCounters::parse(&snmp, &netstat).unwrap()
    });
    c.counter("TcpExt.ListenOverflows").unwrap()
}

#[test]
fn accept_queue_full_rate_adds_up_to_listen_overflows_and_leads_the_report() {
    if !privileged("drops test") {
        return;
    }
    let ns = Netns::new();
    let listener = ns.run(|| RawListener::new(16));
    let port = listener.port;
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut cfg = ProbeConfig::new(port);
    cfg.netns = Some(ns.0.clone());
    let handle = spawn(cfg, tx).expect("probes start");
    let first: ProbeSample = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let before = overflows(&ns);

    let blasters: Vec<_> = (0..2)
        .map(|_| ns.spawn(move || blast(port, Duration::from_secs(2))))
        .collect();
    let attempts: u64 = blasters.into_iter().map(|b| b.join().unwrap()).sum();
    assert!(
        attempts > 500,
        "only {attempts} attempts: the blast did not run"
    );
    // Every client is closed: once the counter stops moving, a sample taken after that reads
    // its final value.
    let mut samples = vec![first];
    let mut settled = 0;
    while settled < 2 {
        let s: ProbeSample = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        settled = if s.m.listen_overflows_per_s == Some(0.0) {
            settled + 1
        } else {
            0
        };
        samples.push(s);
        assert!(samples.len() < 200, "the overflows never stopped");
    }
    let after = overflows(&ns);
    drop(handle);

    let counted: f64 = samples
        .iter()
        .filter_map(|s| {
            let r = DropReason::of_col(col::LISTEN_OVERFLOWS).unwrap();
            Some(s.m.get(r.col)? * s.dt_s?)
        })
        .sum();
    let kernel = (after - before) as f64;
    eprintln!("attempts {attempts}, ListenOverflows +{kernel}, drops group's accept queue full summed {counted:.1}");
    assert!(kernel > 0.0, "the kernel counted no overflow");
    assert!(
        (counted - kernel).abs() < 0.5,
        "accept queue full summed over the samples {counted} vs ListenOverflows +{kernel}"
    );

    // The report of this run as one point: each reason's mean rate over the samples, as the
    // lab's summary takes it.
    let rated: Vec<&ProbeSample> = samples.iter().filter(|s| s.dt_s.is_some()).collect();
    let mut row = BTreeMap::new();
    row.insert("point".to_string(), Cell::Num(1.0));
    for r in DROP_REASONS {
        let mean = rated.iter().filter_map(|s| s.m.get(r.col)).sum::<f64>() / rated.len() as f64;
        row.insert(r.col.name().to_string(), Cell::Num(mean));
    }
    let md = synlab::report::markdown::drops_table(&[Point(row)]);
    let line = md.lines().find(|l| l.starts_with("| 1 |")).expect(&md);
    assert!(
        line.starts_with("| 1 | accept queue full: handshake's final ACK dropped "),
        "{md}"
    );
}
