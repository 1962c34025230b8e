//! A protocol that is not HTTP, as a layer of its own, driven by the unchanged engine: the
//! seam's proof that scheduling, pools, timeouts and counting need no change for a new one.
//!
//! The protocol: a request is `Q <path>\n`; a response is `R <status> <length>\n` and that many
//! bytes; the connection stays open for the next request. The client says `P\n` every 20 ms
//! on its own timer (bytes of the layer's own, outside any request), which the server counts.

use super::super::Engine;
use super::{Http, HttpError, HttpEvent, HttpLayer, ReqToken, Request};
use crate::load::protocol::{Mode, StatsDelta, WorkerConfig};
use crate::sys::client_io::EventFd;
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The line protocol's client layer.
#[derive(Default)]
struct LineProto {
    out: Vec<u8>,
    token: Option<ReqToken>,
    head: Vec<u8>,
    status: u16,
    /// Body bytes still to come (None: in the head).
    left: Option<u64>,
    /// When it next says `P` (0: not started).
    ping_at: u64,
}

const PING_NS: u64 = 20_000_000;

impl HttpLayer for LineProto {
    fn capacity(&self) -> u32 {
        1
    }
    fn start(&mut self, token: ReqToken, req: &Request) {
        self.token = Some(token);
        self.out
            .extend_from_slice(format!("Q {}\n", req.path).as_bytes());
        self.head.clear();
        self.left = None;
    }
    fn output(&self) -> &[u8] {
        &self.out
    }
    fn consumed(&mut self, n: usize) {
        self.out.drain(..n);
    }
    fn feed(&mut self, mut bytes: &[u8], events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        let Some(token) = self.token else {
            return Ok(());
        };
        if self.head.is_empty() && self.left.is_none() && !bytes.is_empty() {
            events.push(HttpEvent::FirstByte(token));
        }
        while !bytes.is_empty() {
            match self.left {
                None => {
                    let b = bytes[0];
                    bytes = &bytes[1..];
                    if b != b'\n' {
                        self.head.push(b);
                        continue;
                    }
                    let head = String::from_utf8_lossy(&self.head).to_string();
                    let mut f = head.split(' ');
                    let (Some("R"), Some(status), Some(len)) = (f.next(), f.next(), f.next())
                    else {
                        return Err(HttpError::Invalid("not a line-protocol response"));
                    };
                    self.status = status.parse().map_err(|_| HttpError::Invalid("status"))?;
                    self.left = Some(len.parse().map_err(|_| HttpError::Invalid("length"))?);
                }
                Some(left) => {
                    let take = left.min(bytes.len() as u64);
                    bytes = &bytes[take as usize..];
                    self.left = Some(left - take);
                }
            }
            if self.left == Some(0) {
                events.push(HttpEvent::Done {
                    token,
                    status: self.status,
                    body_bytes: 0,
                    close: false,
                });
                self.token = None;
                return Ok(());
            }
        }
        Ok(())
    }
    fn eof(&mut self, _events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        match self.token {
            Some(_) => Err(HttpError::Invalid("closed mid-response")),
            None => Ok(()),
        }
    }
    fn reads_between_requests(&self) -> bool {
        true
    }
    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.ping_at)
    }
    fn on_timer(&mut self, now: u64, _events: &mut Vec<HttpEvent>) {
        if self.ping_at != 0 {
            self.out.extend_from_slice(b"P\n");
        }
        self.ping_at = now + PING_NS;
    }
}

/// A line-protocol server on loopback: answers each `Q` with `R 200 5\nhello` (and `Q /bad`
/// with status 503), until the client closes.
fn line_server(pings: Arc<AtomicU64>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let pings = Arc::clone(&pings);
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                for line in BufReader::new(s).lines() {
                    let Ok(line) = line else { return };
                    if line == "P" {
                        pings.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let status = if line == "Q /bad" { 503 } else { 200 };
                    if w.write_all(format!("R {status} 5\nhello").as_bytes())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The stats lines written to a buffer the test reads after the run.
#[derive(Clone, Default)]
struct Lines(Rc<RefCell<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_new_protocol_is_a_layer_and_the_engine_counts_it_unchanged() {
    let pings = Arc::new(AtomicU64::new(0));
    let target = line_server(Arc::clone(&pings));
    let cfg = WorkerConfig {
        mode: Mode::Closed,
        sockets: 10,
        clients: 4,
        timeout_s: 1.0,
        response_timeout_s: 5.0,
        keepalive: true,
        requests_per_conn: 1_000_000,
        ..WorkerConfig::for_test(target)
    };
    let (_tx, rx) = crossbeam_channel::unbounded();
    let mut e = Engine::new(cfg, rx, Arc::new(EventFd::new().unwrap()), vec![]).unwrap();
    // The one line that chooses the layer.
    e.layers.http = |_| Http::Other(Box::new(LineProto::default()));
    let lines = Lines::default();
    e.report.sink = Box::new(lines.clone());
    e.run().unwrap();
    let text = String::from_utf8(lines.0.borrow().clone()).unwrap();
    let v: Vec<StatsDelta> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(v.last().is_some_and(|d| d.last), "no final stats line");
    let sum = |f: fn(&StatsDelta) -> u64| v.iter().map(f).sum::<u64>();
    let (established, requests, responses) = (
        sum(|d| d.counts.established),
        sum(|d| d.counts.requests),
        sum(|d| d.counts.responses),
    );
    assert!(responses > 20, "{responses} responses in 1 s");
    assert_eq!(sum(|d| d.counts.responses_2xx), responses);
    // Every request answered or still in flight at the end; none failed.
    assert_eq!(requests, responses + sum(|d| d.counts.requests_at_end));
    assert_eq!(sum(|d| d.counts.bad_responses + d.counts.resets), 0);
    // Kept alive: one connection per client for the whole run.
    assert_eq!(
        established, 4,
        "{established} connections for {requests} requests"
    );
    let ttfb: u64 = v.iter().map(|d| d.ttfb_us.count()).sum();
    assert_eq!(ttfb, requests - sum(|d| d.counts.requests_at_end));
    // The layer's own timer ran and its own bytes went out, between and beside requests:
    // each connection pings every 20 ms from its first request on (~200 in 1 s; a loaded
    // machine's loop may be late, never silent).
    let pings = pings.load(Ordering::Relaxed);
    assert!(
        pings >= 20,
        "{pings} pings from {established} connections in 1 s"
    );
}
