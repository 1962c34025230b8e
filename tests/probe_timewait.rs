//! TIME_WAIT on the real kernel: N connection-per-request transactions where the server closes
//! first, in a private netns; the probe's count (/proc/net/sockstat `tw`) must match
//! `ss -tan state time-wait` taken at the same moment within 2 %.

mod probe_support;

use probe_support::{privileged, Netns};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;
use synlab::probe::{spawn, ProbeConfig};

const N: usize = 400;

fn ss_time_wait(ns: &str) -> u64 {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-tan", "state", "time-wait"])
        .output()
        .expect("run ss");
    let lines = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
    lines.saturating_sub(1) // header
}

#[test]
fn time_wait_matches_ss() {
    if !privileged("TIME_WAIT probe test") {
        return;
    }
    let ns = Netns::new();
    let (port_tx, port_rx) = crossbeam_channel::bounded(1);
    let server = ns.spawn(move || {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        port_tx.send(l.local_addr().unwrap().port()).unwrap();
        for _ in 0..N {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 64];
            let _ = c.read(&mut buf).unwrap();
            c.write_all(b"HTTP/1.0 200 OK\r\n\r\nok").unwrap();
            drop(c); // the server closes first: its side enters TIME_WAIT
        }
    });
    let port: u16 = port_rx.recv().unwrap();
    ns.run(move || {
        for _ in 0..N {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let mut v = Vec::new();
            s.read_to_end(&mut v).unwrap();
        }
    });
    server.join().unwrap();
    std::thread::sleep(Duration::from_millis(100)); // last FIN/ACK exchanges

    let (tx, rx) = crossbeam_channel::unbounded();
    let mut cfg = ProbeConfig::new(port);
    cfg.netns = Some(ns.0.clone());
    cfg.pcap = false;
    cfg.interval = Duration::from_millis(100);
    let handle = spawn(cfg, tx).unwrap();
    let before = ss_time_wait(&ns.0);
    let probe = rx
        .recv_timeout(Duration::from_secs(5))
        .unwrap()
        .m
        .time_wait
        .expect("time_wait read");
    let after = ss_time_wait(&ns.0);
    drop(handle);
    eprintln!("probe time_wait {probe}, ss {before}..{after}, transactions {N}");
    let ss = (before + after) as f64 / 2.0;
    let diff = 100.0 * (probe - ss).abs() / ss;
    assert!(diff <= 2.0, "probe {probe} vs ss {ss}: {diff:.2} %");
    assert!(
        probe >= N as f64 * 0.98,
        "{probe} TIME_WAIT sockets after {N} server-closed transactions"
    );
}
