//! A plain user's loopback of their own (issue 45 item 3): a scenario without `[network]`,
//! run as a plain user, runs in a private user+network namespace, so with another server on
//! the host overloaded and leaving TIME_WAIT, the run's SYN rate (by pcap), overflows and
//! TIME_WAIT are its own, not the host's; and the run folder says which namespace they are from.

mod plain_support;
mod probe_support;

use plain_support::plain_user;
use probe_support::{connect_nonblocking, RawListener};
use std::io::Read;
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The host namespace's TcpExt ListenOverflows (this test runs on the host).
fn host_overflows() -> u64 {
    let t = std::fs::read_to_string("/proc/net/netstat").unwrap();
    let mut lines = t.lines().filter(|l| l.starts_with("TcpExt:"));
    let (head, vals) = (lines.next().unwrap(), lines.next().unwrap());
    head.split_whitespace()
        .zip(vals.split_whitespace())
        .find(|(k, _)| *k == "ListenOverflows")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap()
}

/// TIME_WAIT sockets of the host's namespace, as `ss` counts them.
fn host_time_wait() -> usize {
    let out = std::process::Command::new("ss")
        .args(["-Htn", "state", "time-wait"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// The host namespace's TCP sockets by state, as `ss` counts them (for a failure's message).
fn ss_states() -> String {
    let out = std::process::Command::new("ss")
        .args(["-Htan"])
        .output()
        .unwrap();
    let mut by = std::collections::BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let state = l.split_whitespace().next().unwrap_or("?").to_string();
        *by.entry(state).or_insert(0usize) += 1;
    }
    format!("{by:?}")
}

/// Another server on the host: `n` connections it closes first (TIME_WAIT on its port).
fn time_wait_elsewhere(n: usize) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        for _ in 0..n {
            drop(l.accept().unwrap());
        }
    });
    for _ in 0..n {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = c.read(&mut [0u8; 1]);
    }
    server.join().unwrap();
}

/// A busy, overloaded server on the host: a listener that never accepts, sent a SYN every
/// 5 ms (each dropped at its full queue) until `stop` or 60 s.
fn overloaded_elsewhere(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let l = RawListener::new(1);
        let to = SocketAddrV4::new([127, 0, 0, 1].into(), l.port);
        let end = Instant::now() + Duration::from_secs(60);
        let mut open = std::collections::VecDeque::new();
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            if let Some(fd) = connect_nonblocking(to) {
                open.push_back(fd);
            }
            if open.len() > 100 {
                unsafe { libc::close(open.pop_front().unwrap()) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        open.into_iter().for_each(|fd| unsafe {
            libc::close(fd);
        });
    })
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Below the built-in server's capacity, the clients closing first (HTTP/1.1, one request a
/// connection): the run's own TIME_WAIT is on its clients' side, in its namespace.
const LESSON: &str = r#"
name = "own-loopback"
duration = "4s"

[target]
arch = "event"
service_time = "1ms"
service = "cpu"
backlog = 128

[load]
mode = "open"
rate = 300
arrivals = "poisson"
timeout = "1s"

[probe]
interval = "200ms"
"#;

#[test]
fn a_plain_users_loopback_run_counts_its_own_syns_overflows_and_time_wait_not_the_hosts() {
    let Some(p) = plain_user() else { return };
    time_wait_elsewhere(2000);
    // Counted before the run, while all 2,000 are young: after it, a host table that earlier
    // tests filled (tcp_max_tw_buckets) could have shed its old ones, with the new 2,000 never
    // made (a full table drops them), and counted fewer than the run's own. Counted once the
    // last clients' FINs are in (a socket is in TIME_WAIT only then; 5 s at most).
    let settled = Instant::now() + Duration::from_secs(5);
    let mut host_tw = host_time_wait();
    while host_tw < 2000 && Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(20));
        host_tw = host_time_wait();
    }
    let host_states = ss_states();
    let stop = Arc::new(AtomicBool::new(false));
    let busy = overloaded_elsewhere(stop.clone());
    let sc = p.write("own.toml", LESSON);
    let (o0, t0) = (host_overflows(), Instant::now());
    let out = p.run(&sc);
    let host_ovfl_per_s = (host_overflows() - o0) as f64 / t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    assert!(
        out.status.success(),
        "run failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let (dir, s) = p.summary();
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    let r = &s["points"][0];
    let (syn, attempts) = (num(r, "syn_in_per_s"), num(r, "attempts_per_s"));
    let (ovfl, tw) = (num(r, "listen_overflows_per_s"), num(r, "time_wait_max"));
    println!(
        "host: overflows/s {host_ovfl_per_s:.0}, TIME_WAIT {host_tw}; the run's own namespace: \
         SYN/s {syn:.0} (attempts/s {attempts:.0}), overflows/s {ovfl:.0}, TIME_WAIT max {tw:.0}"
    );
    // The host was busy with another server's overload meanwhile, and held 2,000 TIME_WAIT
    // and more as the run began.
    assert!(host_ovfl_per_s > 50.0, "host overflows/s {host_ovfl_per_s}");
    assert!(
        host_tw >= 2000,
        "host TIME_WAIT {host_tw}; the host's TCP states then: {host_states}"
    );
    // Whose the counters are, in the run folder.
    assert_eq!(s["meta"]["probe_scope"]["netns"], "own_loopback", "{log}");
    assert_eq!(s["meta"]["probe_scope"]["netns_shared"], false, "{log}");
    assert_eq!(
        s["meta"]["lab"], "rootless, own loopback (user+network namespace)",
        "{log}"
    );
    assert!(
        log.contains("loopback of the run's own: netns synlab-"),
        "{log}"
    );
    assert!(
        log.contains("the probes read the run's own loopback namespace"),
        "{log}"
    );
    // SYNs by pcap in its own namespace: the run's attempts, not the host's.
    assert_eq!(num(r, "syn_in_estimated"), 0.0, "SYN rate estimated\n{log}");
    assert!(
        (syn - attempts).abs() <= attempts * 0.02 + 2.0,
        "SYN/s {syn} vs attempts/s {attempts}\n{log}"
    );
    // Below capacity: none of the host's overflows.
    assert_eq!(
        ovfl, 0.0,
        "overflows/s {ovfl} in the run's namespace\n{log}"
    );
    // Every TIME_WAIT there is one of the run's own connections (at most its 300/s for 4 s,
    // with Poisson's spread), none of the host's 2,000 and more.
    assert!(
        tw > 0.0 && tw <= 300.0 * 4.0 * 1.2,
        "TIME_WAIT {tw} in the run's namespace, which made ~1,200 connections\n{log}"
    );
    synlab::report::write_report(&dir).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("the run's own loopback namespace"), "{md}");
    assert!(!md.contains("(netns: all ports)"), "{md}");
    p.assert_none_left();
}
