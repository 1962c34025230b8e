//! issue 47: synlab's own QUIC + HTTP/3 client (src/quic) against the built-in server's HTTP/3
//! (src/target/h3.rs) over loopback: requests and responses counted on both sides agree,
//! bodies have the files' sizes, handshakes are full / resumed / 0-RTT in the asked shares,
//! Retry is sent and received once per connection, and a port without a QUIC server ends in a
//! handshake timeout. The same client against caddy in the lab is in tests/real_servers.rs.

use std::time::{Duration, Instant};
use synlab::quic::{run_closed, ClientOptions, ConnError, HandshakeKind};
use synlab::target::config::Http3Options;
use synlab::target::{Arch, FileSet, ServeConfig, Server, ServiceKind};
use synlab::tls::cert::LabCert;

struct Lab {
    _dir: tempfile::TempDir,
    ca_pem: String,
    server: Server,
}

fn start(h3: Http3Options, cache: bool, tickets: bool) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let cert = LabCert::generate(synlab::tls::KeyKind::EcdsaP256, None).unwrap();
    let files = cert.write(dir.path()).unwrap();
    let cfg = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        arch: Arch::Event,
        workers: 1,
        max_workers: 1,
        backlog: 128,
        service_time_us: 0,
        service: ServiceKind::Cpu,
        files: vec![FileSet::Explicit {
            sizes: vec![1294, 200_000],
        }],
        keepalive: true,
        stats_interval_ms: 100,
        accept_batch: 1,
        lingering_close: false,
        linger_timeout_ms: 2000,
        tls: Some(synlab::tls::ServerTls {
            cert: files.cert,
            key: files.key,
            session_cache: cache,
            tickets,
        }),
        max_streams: 16,
        http3: Some(h3),
    };
    Lab {
        _dir: dir,
        ca_pem: cert.ca_pem,
        server: Server::start(cfg).unwrap(),
    }
}

fn opts(lab: &Lab) -> ClientOptions {
    ClientOptions::new(
        lab.server.local_addr(),
        synlab::tls::settings::LAB_NAME,
        &lab.ca_pem,
    )
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

#[test]
fn requests_and_responses_agree_on_both_sides() {
    let lab = start(Http3Options::default(), false, true);
    let run = run_closed(opts(&lab), 4, 50, 8, "/file/1294", deadline()).unwrap();
    let big = run_closed(opts(&lab), 1, 5, 5, "/file/200000", deadline()).unwrap();
    let missing = run_closed(opts(&lab), 1, 3, 1, "/nope", deadline()).unwrap();
    let st = lab.server.stop().unwrap();
    let s = &run.stats;
    assert_eq!(s.attempts, 4);
    assert_eq!(s.handshakes_of(HandshakeKind::Full), 4, "{s:?}");
    assert_eq!((s.requests, s.responses), (200, 200), "{s:?}");
    assert_eq!(run.statuses.get(&200), Some(&200));
    assert_eq!(s.body_bytes, 200 * 1294);
    assert_eq!(s.errors_total(), 0, "{:?}", s.errors);
    assert_eq!(big.stats.body_bytes, 5 * 200_000);
    assert_eq!(missing.statuses.get(&404), Some(&3));
    // The server's own counts: every stream a request, every response written.
    assert_eq!(st.h3_handshakes, 6);
    assert_eq!(st.h3_streams, 208);
    assert_eq!(st.requests, 208);
    assert_eq!(st.responses, 208);
    assert_eq!(st.responses_404, 3);
    assert_eq!(st.h3_retries, 0);
    // What the server read of its socket (loopback, nothing dropped): every datagram the
    // clients sent, a new connection taken in per attempt, their first Initials among them.
    let sent: u64 = [&run, &big, &missing]
        .iter()
        .map(|r| r.stats.datagrams_sent)
        .sum();
    assert_eq!(st.h3_datagrams_in, sent, "{st:?}");
    assert_eq!(st.h3_incoming, 6, "{st:?}");
    assert!(st.h3_initials_in >= 6, "{st:?}");
    // The stack's own datagram counts saw the traffic.
    assert!(
        s.datagrams_sent >= 4 && s.bytes_received > 200 * 1294,
        "{s:?}"
    );
}

/// The resumed share is exact (the TLS schedule), and full handshakes are told from resumed
/// ones by the certificate verified, not by a guess.
#[test]
fn the_resumed_share_is_exact() {
    let lab = start(Http3Options::default(), false, true);
    let mut o = opts(&lab);
    o.resumed = 0.5;
    let run = run_closed(o, 20, 1, 1, "/file/1294", deadline()).unwrap();
    let s = &run.stats;
    assert_eq!(s.handshakes_of(HandshakeKind::Full), 10, "{s:?}");
    assert_eq!(s.handshakes_of(HandshakeKind::Resumed), 10, "{s:?}");
    assert_eq!(s.responses, 20);
    assert_eq!(lab.server.stop().unwrap().h3_handshakes, 20);
}

#[test]
fn zero_rtt_is_accepted_when_the_server_takes_it() {
    let lab = start(
        Http3Options {
            early_data: true,
            ..Default::default()
        },
        true,
        false,
    );
    let mut o = opts(&lab);
    o.resumed = 1.0;
    o.early_data = 1.0;
    let run = run_closed(o.clone(), 6, 2, 2, "/file/1294", deadline()).unwrap();
    let s = &run.stats;
    let zero = s.handshakes_of(HandshakeKind::ZeroRtt);
    let full = s.handshakes_of(HandshakeKind::Full);
    // The first has no session yet: full. Every other one is 0-RTT: each closed connection
    // waits for the tickets the server sends after the client's Finished, and every ticket
    // is offered (the three configs share their verifier and resolver, which rustls asks
    // of a ticket before it offers it). A full one after the first is only ever one that
    // found the store empty, which only a wait that ran out (50 ms, a loaded machine) leaves.
    assert_eq!(s.before_first_ticket, 1, "{s:?}");
    assert!((1..=1 + s.ticket_waits_expired).contains(&full), "{s:?}");
    if s.ticket_waits_expired == 0 {
        assert_eq!((full, zero), (1, 5), "{s:?}");
    }
    assert_eq!(full + zero, 6, "{s:?}");
    assert_eq!((s.resume_declined, s.zero_rtt_declined), (0, 0), "{s:?}");
    assert_eq!(s.responses, 12);
    // Without the wait, a 0-RTT connection answered in 0.5-RTT mostly closes before its
    // tickets come: it spends one and brings none back, so up to one in three finds the store
    // empty (full, 0-RTT, 0-RTT, full, ...; a full one brings two). How many is a race between
    // the server's answer and its tickets (the CI once saw two full, not three), so what is
    // asserted is the bound, and that the server declined none.
    o.wait_for_tickets = false;
    let no_wait = run_closed(o, 9, 1, 1, "/file/1294", deadline()).unwrap();
    let n = &no_wait.stats;
    let n_full = n.handshakes_of(HandshakeKind::Full);
    let n_zero = n.handshakes_of(HandshakeKind::ZeroRtt);
    assert_eq!(n.before_first_ticket, 1, "{n:?}");
    assert!((1..=3).contains(&n_full), "{n:?}");
    assert_eq!(n_full + n_zero, 9, "{n:?}");
    assert_eq!((n.resume_declined, n.zero_rtt_declined), (0, 0), "{n:?}");
    let st = lab.server.stop().unwrap();
    assert_eq!(st.h3_0rtt, zero + n_zero);
    assert_eq!(st.h3_streams, 12 + 9);
}

#[test]
fn retry_is_sent_and_received_once_per_connection() {
    let lab = start(
        Http3Options {
            retry: true,
            ..Default::default()
        },
        false,
        true,
    );
    let run = run_closed(opts(&lab), 3, 2, 1, "/file/1294", deadline()).unwrap();
    assert_eq!(run.stats.retry_received, 3, "{:?}", run.stats);
    assert_eq!(run.stats.responses, 6);
    let st = lab.server.stop().unwrap();
    assert_eq!(st.h3_retries, 3);
    assert_eq!(st.h3_handshakes, 3);
    // Each attempt taken in twice: its first Initial (answered with the Retry), its answer.
    assert_eq!(st.h3_incoming, 6, "{st:?}");
}

/// A UDP port nobody serves QUIC on: the handshake times out, counted by kind.
#[test]
fn no_quic_server_is_a_handshake_timeout() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let cert = LabCert::generate(synlab::tls::KeyKind::EcdsaP256, None).unwrap();
    let mut o = ClientOptions::new(
        silent.local_addr().unwrap(),
        synlab::tls::settings::LAB_NAME,
        &cert.ca_pem,
    );
    o.handshake_timeout = Duration::from_millis(300);
    let run = run_closed(o, 2, 1, 1, "/", deadline()).unwrap();
    assert_eq!(run.stats.errors.get(&ConnError::HandshakeTimeout), Some(&2));
    assert_eq!(run.stats.handshakes_total(), 0);
    assert_eq!(run.stats.responses, 0);
}
