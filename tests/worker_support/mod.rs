//! One `WorkerConfig` for the tests that run a `synlab worker` by hand (load_worker,
//! load_http2, load_http3, bad_responses): a new field is added here once, and each test
//! writes only what it changes (`WorkerConfig { mode, ..worker_support::config(target) }`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;
use synlab::load::protocol::{Arrivals, Control, MixEntry, Mode, StatsDelta, WorkerConfig};

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

/// A `synlab worker` run by hand: its reports read line by line, controls written to its
/// stdin; killed by pid on drop if it is still running.
pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<std::process::ChildStdout>,
}

impl Worker {
    pub fn spawn(cfg: &WorkerConfig) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_synlab"))
            .args([
                "worker",
                "--config-json",
                &serde_json::to_string(cfg).unwrap(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn synlab worker");
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap());
        Worker { child, stdin, out }
    }

    /// Closes its stdin: the worker takes that end for a stop.
    pub fn end_input(&mut self) {
        drop(self.stdin.take());
    }

    pub fn send(&mut self, c: &Control) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{}", serde_json::to_string(c).unwrap()).unwrap();
        stdin.flush().unwrap();
    }

    /// The next report, None at the end of the worker's output.
    pub fn next(&mut self) -> Option<StatsDelta> {
        let mut line = String::new();
        if self.out.read_line(&mut line).unwrap() == 0 {
            return None;
        }
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line}: {e}")))
    }

    /// The reports after `v` up to the last; the worker exited cleanly.
    pub fn collect(mut self, mut v: Vec<StatsDelta>) -> Vec<StatsDelta> {
        while let Some(d) = self.next() {
            let last = d.last;
            v.push(d);
            if last {
                break;
            }
        }
        assert!(v.last().is_some_and(|d| d.last), "no final stats line");
        assert!(self.child.wait().unwrap().success());
        v
    }

    /// The run's reports when the worker is told to drain after its `reports`-th: it starts
    /// no more attempts and ends once those in progress finished, so the run's bound cuts
    /// none off half-way.
    pub fn drained_after(mut self, reports: usize) -> Vec<StatsDelta> {
        let mut v = Vec::new();
        while v.len() < reports {
            let d = self.next().expect("the worker reports until drained");
            assert!(!d.last, "the worker ended before it was drained");
            v.push(d);
        }
        self.send(&Control::Drain);
        self.collect(v)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
