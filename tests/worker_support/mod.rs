//! One `WorkerConfig` for the tests that run a `synlab worker` by hand (load_worker,
//! load_http2, load_http3, bad_responses): a new field is added here once, and each test
//! writes only what it changes (`WorkerConfig { mode, ..worker_support::config(target) }`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;
use synlab::load::protocol::{Arrivals, MixEntry, Mode, WorkerConfig};

/// An HTTP/1.0 open load of 1000/s at `target` for 3 s, reporting every 100 ms: every field
/// set, none of the features on (no TLS, no keep-alive, no pool, no HTTP/2 or 3).
pub fn config(target: SocketAddr) -> WorkerConfig {
    WorkerConfig {
        id: 7,
        target,
        bind_addrs: vec![],
        mode: Mode::Open,
        rate: Some(1000.0),
        arrivals: Arrivals::Constant,
        sockets: 1000,
        clients: 0,
        think_s: 0.0,
        timeout_s: 0.5,
        response_timeout_s: 5.0,
        burst: None,
        mix: vec![],
        keepalive: false,
        requests_per_conn: 1,
        connections: 0,
        host_header: "synlab-test".into(),
        duration_s: 3.0,
        stats_interval_ms: 100,
        seed: 1,
        paused: false,
        tls: None,
        good_statuses: Default::default(),
        streams: None,
        http3: false,
    }
}

/// One class `f` of 1294-byte files (`/file/1294`), which the built-in server serves.
pub fn file_1294() -> Vec<MixEntry> {
    vec![MixEntry {
        class: "f".into(),
        path: "/file/1294".into(),
        weight: 1.0,
    }]
}

/// A server for a worker to load: `threads` threads accept, read the request's head, sleep
/// `service`, write `reply` and close.
pub fn responder(threads: usize, service: Duration, reply: &'static [u8]) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    for _ in 0..threads {
        let l = l.try_clone().unwrap();
        std::thread::spawn(move || loop {
            let Ok((mut s, _)) = l.accept() else { continue };
            s.set_read_timeout(Some(Duration::from_secs(2))).ok();
            let mut buf = [0u8; 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            if !service.is_zero() {
                std::thread::sleep(service);
            }
            let _ = s.write_all(reply);
        });
    }
    addr
}
