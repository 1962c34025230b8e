//! SYN cookies always on (tcp_syncookies = 2) on the real kernel, as root (issue 48): a
//! listener with backlog 16 in a private netns, flooded while it accepts everything. Every SYN
//! is answered with a cookie and the handshakes come back as validated cookies, where with
//! cookies off a full SYN queue drops them; the drops view says so.

mod probe_support;

use probe_support::{connect_nonblocking, privileged, Netns, RawListener};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::probe::procnet::NetCounters;
use synlab::ui::render::drops::cookies_line;

/// The listener's backlog, and the SYNs the flood sends.
const BACKLOG: u64 = 16;
const FLOOD: u64 = 800;

/// The namespace's counters, read by a thread inside it.
fn counters(ns: &Netns) -> NetCounters {
    ns.run(|| {
        let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
        NetCounters::parse(&snmp, &netstat).unwrap()
    })
}

#[test]
fn with_syncookies_2_the_syns_become_cookies_sent_and_validated() {
    if !privileged("syncookies test") {
        return;
    }
    let ns = Netns::new();
    ns.run(|| std::fs::write("/proc/sys/net/ipv4/tcp_syncookies", "2").unwrap());
    let listener = ns.run(|| RawListener::new(BACKLOG as i32));
    let (port, lfd) = (listener.port, listener.fd);
    let before = counters(&ns);
    // The flood is bounded by count, not by time: the client keeps fewer than BACKLOG
    // connections un-accepted, so the accept queue can never overflow however slowly the
    // acceptor thread is scheduled (a busy CI machine), and every SYN must become a cookie sent.
    let syns = Arc::new(AtomicU64::new(0));
    let accepted = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(20);
    let server = {
        let (syns, accepted, done) = (syns.clone(), accepted.clone(), done.clone());
        ns.spawn(move || {
            unsafe { libc::fcntl(lfd, libc::F_SETFL, libc::O_NONBLOCK) };
            // Accept (and close) until the clients are done and every SYN is accepted.
            while Instant::now() < deadline
                && !(done.load(SeqCst) && accepted.load(SeqCst) >= syns.load(SeqCst))
            {
                let c = unsafe { libc::accept(lfd, std::ptr::null_mut(), std::ptr::null_mut()) };
                if c >= 0 {
                    accepted.fetch_add(1, SeqCst);
                    unsafe { libc::close(c) };
                } else {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        })
    };
    // Clients: connects in a loop, each closed 100 ms on (before any SYN retry).
    let t0 = Instant::now();
    let clients = {
        let (syns, accepted, done) = (syns.clone(), accepted.clone(), done.clone());
        ns.spawn(move || {
            let to = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
            let mut open: std::collections::VecDeque<(i32, Instant)> = Default::default();
            while syns.load(SeqCst) < FLOOD && Instant::now() < deadline {
                while open
                    .front()
                    .is_some_and(|(_, t)| t.elapsed() >= Duration::from_millis(100))
                {
                    unsafe { libc::close(open.pop_front().unwrap().0) };
                }
                let waiting = syns.load(SeqCst) - accepted.load(SeqCst);
                if open.len() < 64 && waiting < BACKLOG - 4 {
                    if let Some(fd) = connect_nonblocking(to) {
                        syns.fetch_add(1, SeqCst);
                        open.push_back((fd, Instant::now()));
                    }
                } else {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            done.store(true, SeqCst);
            for (fd, _) in open {
                unsafe { libc::close(fd) };
            }
        })
    };
    clients.join().unwrap();
    server.join().unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let (syns, accepted) = (syns.load(SeqCst), accepted.load(SeqCst));
    let after = counters(&ns);
    let d = |k: &str| after.counter(k).unwrap() - before.counter(k).unwrap();
    let (sent, recv) = (d("TcpExt.SyncookiesSent"), d("TcpExt.SyncookiesRecv"));
    let (queue_full, overflows) = (
        d("TcpExt.TCPReqQFullDoCookies"),
        d("TcpExt.ListenOverflows"),
    );
    let line = cookies_line(sent as f64 / secs, recv as f64 / secs);
    eprintln!(
        "{syns} SYNs, {accepted} accepted; SyncookiesSent {sent}, SyncookiesRecv {recv}, \
         TCPReqQFullDoCookies {queue_full}, ListenOverflows {overflows}\n{line:?}"
    );
    assert!(
        syns >= FLOOD,
        "only {syns} SYNs in 20 s: the flood did not run"
    );
    // Every SYN got a cookie (the kernel counts TCPReqQFullDoCookies for each in mode 2) and,
    // the accept queue never full, was sent one.
    let noise = 2 + syns / 100;
    assert!(
        queue_full.abs_diff(syns) <= noise,
        "{queue_full} cookie decisions, {syns} SYNs"
    );
    assert!(
        (sent + overflows).abs_diff(syns) <= noise,
        "{sent} cookies + {overflows} overflows vs {syns} SYNs"
    );
    assert!(
        overflows <= noise,
        "{overflows} overflows: the queue was kept below its limit"
    );
    // The handshakes came back as validated cookies: each accepted connection is one.
    assert!(
        recv.abs_diff(accepted) <= noise && recv > 0,
        "{recv} validated, {accepted} accepted"
    );
    let line = line.expect("the view says cookies");
    assert!(
        line.contains("validated/s") && line.contains("tcp_syncookies"),
        "{line}"
    );
    drop(listener);
}
