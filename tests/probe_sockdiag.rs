//! sock_diag on the real kernel and on a recorded reply, and the no-pcap fallback.
//! Re-record the fixture with SYNLAB_RECORD_FIXTURES=1 (root).

mod probe_support;

use probe_support::{privileged, Netns, RawListener};
use std::net::TcpStream;
use std::time::Duration;
use synlab::probe::sockdiag::{parse_replies, states_mask, DiagSummary, SERVER_STATES};
use synlab::probe::{spawn_with, ProbeConfig, SynSource};
use synlab::sys::privilege::Privileges;
use synlab::sys::sockdiag::SockDiag;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/sockdiag_listen16_queued3_v4.bin"
);

/// A listener with backlog 16 and 3 completed, unaccepted connections; returns the raw
/// AF_INET reply for the server's port and the port.
fn three_queued(ns: &Netns) -> (Vec<u8>, u16, Vec<TcpStream>, RawListener) {
    ns.run(|| {
        let l = RawListener::new(16);
        let clients: Vec<_> = (0..3)
            .map(|_| TcpStream::connect(("127.0.0.1", l.port)).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let raw = SockDiag::open()
            .unwrap()
            .dump_raw(libc::AF_INET as u8, states_mask(&SERVER_STATES), l.port)
            .unwrap();
        (raw, l.port, clients, l)
    })
}

fn check(raw: &[u8]) {
    let (socks, done) = parse_replies(raw).unwrap();
    assert!(done, "reply must end with NLMSG_DONE");
    let port = socks[0].sport;
    assert!(
        socks.iter().all(|s| s.sport == port),
        "the kernel filtered on the port"
    );
    let mut d = DiagSummary::default();
    d.add(&socks);
    assert_eq!(d.listeners.len(), 1);
    assert_eq!((d.listeners[0].queued, d.listeners[0].limit), (3, 16));
    assert_eq!(d.listeners[0].local, "127.0.0.1");
    assert_eq!(
        d.established, 3,
        "the 3 queued connections are ESTABLISHED server sockets"
    );
    assert_eq!((d.syn_recv, d.fin_wait, d.close_wait), (0, 0, 0));
}

#[test]
fn recorded_reply_parses() {
    let raw = std::fs::read(FIXTURE).expect("fixture present");
    check(&raw);
}

#[test]
fn live_query_sees_the_accept_queue() {
    if !privileged("sock_diag live test") {
        return;
    }
    let ns = Netns::new();
    let (raw, _port, _clients, _l) = three_queued(&ns);
    check(&raw);
    if std::env::var("SYNLAB_RECORD_FIXTURES").is_ok_and(|v| v == "1") {
        std::fs::write(FIXTURE, &raw).unwrap();
    }
}

#[test]
fn without_cap_net_raw_the_syn_rate_is_estimated_and_said_once() {
    if !privileged("no-pcap fallback test") {
        return;
    }
    let ns = Netns::new();
    let listener = ns.run(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut cfg = ProbeConfig::new(port);
    cfg.netns = Some(ns.0.clone());
    cfg.interval = Duration::from_millis(100);
    let no_raw = Privileges {
        net_raw: false,
        ..Privileges::current()
    };
    let handle = spawn_with(cfg, no_raw, tx).unwrap();
    let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(first.syn_source, SynSource::Estimated);
    assert!(
        first
            .notes
            .iter()
            .any(|n| n.contains("needs CAP_NET_RAW") && n.contains("estimated")),
        "{:?}",
        first.notes
    );
    ns.run(move || {
        for _ in 0..20 {
            drop(TcpStream::connect(("127.0.0.1", port)).unwrap());
        }
    });
    let mut syns = 0.0;
    let mut later_notes = 0;
    for _ in 0..4 {
        let s = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        later_notes += s.notes.len();
        assert_eq!(s.m.syn_in_estimated, Some(1.0));
        assert_eq!(s.m.syn_in_total, None, "no pcap totals without pcap");
        syns += s.m.syn_in_per_s.unwrap() * s.dt_s.unwrap();
    }
    drop(handle);
    assert_eq!(later_notes, 0, "the warning is given once");
    assert!(
        (syns - 20.0).abs() < 0.5,
        "estimated SYNs {syns}, 20 connections made"
    );
}

/// One walk of both families (the older request) finds the same sockets of a port as one
/// request per family: IPv4 and IPv6 listeners and connections, TIME_WAIT too. No privilege
/// needed: the test's own sockets in its own namespace.
#[test]
fn one_walk_finds_what_a_walk_per_family_finds() {
    use std::net::{TcpListener, TcpStream};
    use synlab::probe::sockdiag::state;
    let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = v4.local_addr().unwrap().port();
    let v6 = TcpListener::bind(("::1", port)).ok();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(("127.0.0.1", port)).unwrap());
        held.push(v4.accept().unwrap().0);
    }
    if let Some(l) = &v6 {
        held.push(TcpStream::connect(("::1", port)).unwrap());
        held.push(l.accept().unwrap().0);
    }
    // A server-side close first: TIME_WAIT on the port.
    let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    drop(v4.accept().unwrap().0);
    std::thread::sleep(Duration::from_millis(20));
    drop(c);
    std::thread::sleep(Duration::from_millis(50));
    let mask = states_mask(&SERVER_STATES) | states_mask(&[state::TIME_WAIT]);
    let mut d = SockDiag::open().unwrap();
    let key = |s: &synlab::sys::sockdiag::DiagSocket| (s.state, s.local, s.sport, s.dport);
    let mut one: Vec<_> = d.dump(mask, port).unwrap().iter().map(key).collect();
    assert_eq!(
        d.one_walk(),
        Some(true),
        "the kernel refused the one-walk request"
    );
    let mut two: Vec<_> = d
        .dump_per_family(mask, port)
        .unwrap()
        .iter()
        .map(key)
        .collect();
    one.sort();
    two.sort();
    assert_eq!(one, two);
    let n = |st: u8| one.iter().filter(|s| s.0 == st).count();
    assert_eq!(n(state::LISTEN), 1 + usize::from(v6.is_some()));
    assert_eq!(n(state::ESTABLISHED), 3 + usize::from(v6.is_some()));
    assert_eq!(n(state::TIME_WAIT), 1, "{one:?}");
}
