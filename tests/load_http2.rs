//! The load engine over HTTP/2 (issue 46), a `synlab worker` against the built-in event
//! server (h2c with prior knowledge, h2 by ALPN over TLS): in every mode the worker's
//! responses equal the server's HTTP/2 streams, none fail, connection setup is counted apart;
//! a stream limit below M shows as requests waiting, not errors; M changes live; a server that
//! picks http/1.1 by ALPN fails each connection as `alpn_refused`, said in words.

use std::io::Write;
use std::net::SocketAddr;
use synlab::load::protocol::{Control, LoadSettings, Mode, StatsDelta, WorkerConfig};

mod nginx_support;
mod worker_support;
use synlab::target::{Arch, FileSet, ServeConfig, Server, ServiceKind};
use worker_support::Worker;

fn serve(max_streams: u32, tls: Option<synlab::tls::ServerTls>) -> Server {
    Server::start(ServeConfig {
        tls,
        ..serve_config(max_streams)
    })
    .unwrap()
}

fn config(target: SocketAddr, mode: Mode, streams: u32) -> WorkerConfig {
    WorkerConfig {
        id: 3,
        mode,
        rate: None,
        sockets: 4,
        timeout_s: 1.0,
        mix: worker_support::file_1294(),
        keepalive: true,
        duration_s: 1.5,
        streams: Some(streams),
        ..worker_support::config(target)
    }
}

fn sum(v: &[StatsDelta], f: impl Fn(&StatsDelta) -> u64) -> u64 {
    v.iter().map(f).sum()
}

/// The worker's counts over a run, with both identities checked.
#[derive(Debug)]
struct Run {
    established: u64,
    requests: u64,
    responses: u64,
    errors: u64,
    at_end: u64,
    setups: u64,
    waits: u64,
    refused: u64,
    streams_max: u64,
    limit: Option<u32>,
    header_wire: u64,
    header_plain: u64,
}

fn tally(v: &[StatsDelta]) -> Run {
    let c = |f: fn(&synlab::model::Counters) -> u64| sum(v, |d| f(&d.counts));
    let r = Run {
        established: c(|c| c.established),
        requests: c(|c| c.requests),
        responses: c(|c| c.responses),
        errors: c(|c| c.errors()),
        at_end: c(|c| c.requests_at_end),
        setups: c(|c| c.setups),
        waits: c(|c| c.pool_waits),
        refused: c(|c| c.streams_refused + c.streams_unprocessed),
        streams_max: v.iter().map(|d| d.streams_max).max().unwrap_or(0),
        limit: v.iter().rev().find_map(|d| d.streams_limit),
        header_wire: c(|c| c.header_bytes_wire),
        header_plain: c(|c| c.header_bytes_plain),
    };
    assert_eq!(
        r.requests,
        r.responses + c(|c| c.request_errors()) + r.at_end,
        "requests = responses + errors + in flight at the end: {r:?}"
    );
    assert_eq!(
        c(|c| c.attempts),
        r.established + c(|c| c.connection_errors()) + c(|c| c.connecting_at_end),
        "{r:?}"
    );
    r
}

/// The server's count of HTTP/2 streams answered equals the worker's responses (every one it
/// answered reached the worker before it stopped, or is in flight at the end).
fn assert_server_agrees(srv: Server, r: &Run) {
    let st = srv.stop().unwrap();
    assert!(
        st.h2_streams >= r.responses && st.h2_streams <= r.responses + r.at_end,
        "server streams {} vs worker responses {} (+{} in flight at the end): {st:?}",
        st.h2_streams,
        r.responses,
        r.at_end
    );
    assert_eq!(st.h2_refused, r.refused, "{st:?}");
}

#[test]
fn closed_n_connections_by_m_streams_over_h2c() {
    let srv = serve(128, None);
    let mut cfg = config(srv.local_addr(), Mode::Closed, 8);
    cfg.clients = 3;
    let r = tally(&Worker::spawn(&cfg).collect(vec![]));
    assert!(r.responses > 100, "{r:?}");
    assert_eq!(r.errors, 0, "{r:?}");
    // N connections carry every request, M at a time; their setup counted apart.
    assert_eq!((r.established, r.setups), (3, 3), "{r:?}");
    assert_eq!(r.streams_max, 8, "{r:?}");
    assert_eq!(r.limit, Some(128), "the server's advertised limit");
    // HPACK: the repeated request heads shrink to a few bytes each.
    assert!(r.header_wire * 2 < r.header_plain, "{r:?}");
    assert_server_agrees(srv, &r);
}

#[test]
fn a_stream_limit_below_m_makes_requests_wait_not_fail() {
    // Open, a fixed rate over 2 connections of M = 16 streams against a server that allows 2
    // at once and answers a request only after 20 ms: 4 in flight at most, 200/s offered
    // (twice what it holds), so requests wait for streams, counted, never dropped or refused.
    let sc = Server::start(ServeConfig {
        service_time_us: 20_000,
        service: ServiceKind::Sleep,
        ..serve_config(2)
    })
    .unwrap();
    let mut cfg = config(sc.local_addr(), Mode::Open, 16);
    cfg.rate = Some(200.0);
    cfg.connections = 2;
    let r = tally(&Worker::spawn(&cfg).collect(vec![]));
    assert_eq!(r.errors + r.refused, 0, "{r:?}");
    assert_eq!(r.limit, Some(2));
    assert!(r.streams_max <= 2, "never above the server's limit: {r:?}");
    assert!(r.waits > 20, "requests waited for a free stream: {r:?}");
    assert_eq!(r.established, 2, "{r:?}");
    assert_server_agrees(sc, &r);
}

fn serve_config(max_streams: u32) -> ServeConfig {
    ServeConfig {
        http3: None,
        listen: "127.0.0.1:0".parse().unwrap(),
        arch: Arch::Event,
        workers: 1,
        max_workers: 1,
        backlog: 128,
        service_time_us: 0,
        service: ServiceKind::Cpu,
        files: vec![FileSet::Explicit { sizes: vec![1294] }],
        keepalive: true,
        stats_interval_ms: 100,
        accept_batch: 1,
        lingering_close: false,
        linger_timeout_ms: 2000,
        tls: None,
        max_streams,
    }
}

#[test]
fn sclient_slots_set_up_h2_connections_each_with_its_requests() {
    let srv = serve(128, None);
    let mut cfg = config(srv.local_addr(), Mode::Sclient, 4);
    cfg.sockets = 2;
    cfg.requests_per_conn = 4;
    let v = Worker::spawn(&cfg).collect(vec![]);
    let r = tally(&v);
    // No request failed; a connect may (flat out, the server's accept queue of 128 can
    // overflow on a loaded machine: its SYN's retry comes after T, a connect timeout).
    let c = |f: fn(&synlab::model::Counters) -> u64| sum(&v, |d| f(&d.counts));
    assert_eq!(c(|c| c.request_errors()), 0, "{r:?}");
    assert_eq!(
        c(|c| c.connection_errors()),
        c(|c| c.connect_timeouts),
        "{r:?}"
    );
    assert!(r.established > 20, "{r:?}");
    // Each connection: connect, preface and SETTINGS (its setup), then its 4 requests. One
    // whose SETTINGS had not come when the worker stopped has its first request in flight.
    assert!(r.setups + r.at_end >= r.established, "{r:?}");
    let per_conn = r.responses as f64 / r.established as f64;
    assert!(
        (3.5..=4.0).contains(&per_conn),
        "{per_conn} per connection: {r:?}"
    );
    assert_server_agrees(srv, &r);
}

#[test]
fn streams_change_live() {
    let srv = serve(128, None);
    let mut cfg = config(srv.local_addr(), Mode::Closed, 2);
    cfg.clients = 1;
    cfg.duration_s = 3.0;
    let mut w = Worker::spawn(&cfg);
    let mut v = Vec::new();
    for _ in 0..8 {
        v.push(w.next().unwrap());
    }
    let before = v.iter().map(|d| d.streams_max).max().unwrap();
    let mut s = LoadSettings::of(&cfg);
    s.streams = Some(12);
    w.send(&Control::Load(s));
    let v = w.collect(v);
    let after = v[10..].iter().map(|d| d.streams_max).max().unwrap();
    assert_eq!((before, after), (2, 12));
    let r = tally(&v);
    assert_eq!(r.errors, 0, "{r:?}");
    assert_server_agrees(srv, &r);
}

#[test]
fn over_tls_h2_by_alpn_and_a_server_without_it_is_an_alpn_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let files = synlab::tls::cert::LabCert::generate(synlab::tls::KeyKind::EcdsaP256, None)
        .unwrap()
        .write(dir.path())
        .unwrap();
    let tls = synlab::tls::ServerTls {
        cert: files.cert,
        key: files.key,
        session_cache: true,
        tickets: true,
    };
    let client_tls = synlab::tls::ClientTls {
        version: synlab::tls::TlsVersion::V13,
        group: synlab::tls::KxGroup::X25519,
        resumed: 0.0,
        resume_by: synlab::tls::ResumeBy::Tickets,
        sni: String::new(),
        verify: false,
        ca_pem: String::new(),
        handshake_timeout_s: 2.0,
        offer_h2: false,
        early_data: 0.0,
    };
    let srv = serve(16, Some(tls.clone()));
    let mut cfg = config(srv.local_addr(), Mode::Closed, 4);
    cfg.clients = 2;
    cfg.tls = Some(client_tls.clone());
    let r = tally(&Worker::spawn(&cfg).collect(vec![]));
    assert_eq!(r.errors, 0, "{r:?}");
    assert_eq!((r.established, r.limit), (2, Some(16)), "{r:?}");
    assert!(r.responses > 50, "{r:?}");
    assert_server_agrees(srv, &r);

    // A TLS server whose ALPN is http/1.1 only (rustls' own, on loopback).
    let addr = h1_only_tls_server(&tls);
    let mut cfg = config(addr, Mode::Closed, 4);
    cfg.clients = 1;
    // Long enough for a handshake on a busy machine (0.5 s saw none finish).
    cfg.duration_s = 3.0;
    cfg.tls = Some(client_tls);
    let v = Worker::spawn(&cfg).collect(vec![]);
    let refused = sum(&v, |d| d.counts.alpn_refused);
    assert!(refused >= 1, "{v:?}");
    assert_eq!(sum(&v, |d| d.counts.established), 0);
    let words: Vec<String> = v
        .iter()
        .flat_map(|d| d.notices.iter().map(|n| n.to_string()))
        .collect();
    assert!(
        words
            .iter()
            .any(|w| w.contains("picked ALPN http/1.1 where the load needs h2")),
        "{words:?}"
    );
}

/// A TLS server on loopback whose ALPN is http/1.1 only: it completes handshakes and closes.
fn h1_only_tls_server(tls: &synlab::tls::ServerTls) -> SocketAddr {
    use std::sync::Arc;
    // The lab's server config offers http/1.1 only (the built-in target adds h2 to it).
    let config = synlab::tls::server::config(tls).unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(10_000) {
            let Ok(mut s) = s else { return };
            let mut c = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let _ = c.complete_io(&mut s);
        }
    });
    addr
}

/// nginx ends each connection after 40 requests with GOAWAY: the closed loop's connections
/// finish their streams, are replaced, and every request is answered once: after a drain the
/// clients' responses equal nginx's log lines (all HTTP/2), none failed or counted twice.
#[test]
fn goaway_from_nginx_is_survived_with_no_request_lost_or_double_counted() {
    let Some(mut n) = nginx_support::start("keepalive_requests 40;") else {
        return;
    };
    let mut cfg = config(n.addr, Mode::Closed, 8);
    cfg.mix[0].path = "/f".into();
    cfg.clients = 2;
    cfg.duration_s = 10.0;
    let mut w = Worker::spawn(&cfg);
    let mut v = Vec::new();
    for _ in 0..10 {
        v.push(w.next().unwrap());
    }
    w.send(&Control::Drain);
    let v = w.collect(v);
    let r = tally(&v);
    let goaways = sum(&v, |d| d.counts.goaways);
    assert!(goaways >= 2, "{goaways} GOAWAYs: {r:?}");
    assert_eq!((r.errors, r.at_end), (0, 0), "{r:?}");
    assert_eq!(r.requests, r.responses, "{r:?}");
    let log = n.log_after_stop();
    let mut c = synlab::probe::accesslog::StatusCounts::default();
    for l in log.lines() {
        c.add_line(l.as_bytes(), synlab::probe::accesslog::Listener::Plain);
    }
    assert_eq!(
        (c.lines, c.http2, c.s2xx),
        (r.responses, r.responses, r.responses),
        "{c:?} vs {r:?}"
    );
    // Replaced: about one connection per 40 requests.
    assert!(r.established * 40 >= r.responses, "{r:?}");
}

/// An h2c server that resets requests with RST_STREAM: the k-th request of a connection
/// (k = 0, 1, ...) gets `codes[k % codes.len()]`, or a 200 when that is None. One thread per
/// connection; the listener stops when the returned flag is set.
fn resetting_server(
    codes: &'static [Option<u32>],
) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::io::Read;
    use std::sync::atomic::Ordering;
    use synlab::http2::{frame, ErrorCode, ServerEvent, ServerOptions};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = stop.clone();
    std::thread::spawn(move || {
        while !done.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            std::thread::spawn(move || {
                // No limit that matters: the server's codec keeps the streams it did not
                // answer (reset here, beside it) as open.
                let mut srv = synlab::http2::Server::new(ServerOptions {
                    max_streams: 1 << 30,
                    ..ServerOptions::default()
                });
                let (mut k, mut buf) = (0usize, vec![0u8; 16384]);
                loop {
                    let now = std::time::Instant::now();
                    let mut resets = Vec::new();
                    while let Some(ev) = srv.poll_event() {
                        if let ServerEvent::Request { stream, .. } = ev {
                            match codes[k % codes.len()] {
                                Some(code) => frame::write_rst_stream(
                                    &mut resets,
                                    stream,
                                    ErrorCode::from_u32(code),
                                ),
                                None => {
                                    srv.respond(stream, 200, &[], 3);
                                }
                            }
                            k += 1;
                        }
                    }
                    srv.fill(now, 1 << 20, &mut |_, _, n, out: &mut Vec<u8>| {
                        out.extend(std::iter::repeat_n(b'x', n))
                    });
                    let out = srv.pending_output().to_vec();
                    srv.advance_output(out.len(), now);
                    if s.write_all(&out)
                        .and_then(|_| s.write_all(&resets))
                        .is_err()
                    {
                        return;
                    }
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if srv.feed(&buf[..n], std::time::Instant::now()).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (addr, stop)
}

#[test]
fn stream_resets_are_counted_by_their_error_code() {
    use synlab::model::h2_resets::ResetCode;
    // INTERNAL_ERROR, CANCEL, ENHANCE_YOUR_CALM, a code RFC 9113 does not name, and a 200.
    static CODES: [Option<u32>; 5] = [Some(0x2), Some(0x8), Some(0xb), Some(0x42), None];
    let (addr, stop) = resetting_server(&CODES);
    let mut cfg = config(addr, Mode::Closed, 4);
    cfg.clients = 2;
    cfg.duration_s = 1.0;
    let v = Worker::spawn(&cfg).collect(vec![]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let r = tally(&v);
    let mut by = synlab::model::h2_resets::ResetsByCode::default();
    for d in &v {
        by.add(&d.counts.stream_resets_by_code);
    }
    let resets = sum(&v, |d| d.counts.stream_resets);
    assert_eq!(by.total(), resets, "the codes add up to the resets: {by:?}");
    // Each connection's requests go through the codes in turn, four resets to a response:
    // the five counts differ by at most one per connection and the requests in flight at
    // the end.
    let counts = [
        by.get(ResetCode::InternalError),
        by.get(ResetCode::Cancel),
        by.get(ResetCode::EnhanceYourCalm),
        by.get(ResetCode::Other),
        r.responses,
    ];
    let spread = counts.iter().max().unwrap() - counts.iter().min().unwrap();
    assert!(
        spread <= 2 + r.at_end,
        "codes and responses {counts:?} of {} requests: {by:?}",
        r.requests
    );
    assert_eq!(
        by.get(ResetCode::NoError) + by.get(ResetCode::ProtocolError),
        0,
        "{by:?}"
    );
    assert!(r.responses > 20, "{r:?}");
    // A reset request is a request error, never a response; the connections stay up.
    assert_eq!(r.errors, resets, "{r:?}");
    assert_eq!(r.established, 2, "{r:?}");
}

#[test]
fn closed_clients_think_per_stream_over_http2() {
    // N = 2 connections x M = 4 streams, each stream a client thinking 200 ms after each
    // response: a stream sends at most 1 + duration / think requests, however fast the
    // server; without thinking this server answers thousands in the same time.
    let srv = serve(128, None);
    let mut cfg = config(srv.local_addr(), Mode::Closed, 4);
    cfg.clients = 2;
    cfg.think_s = 0.2;
    cfg.duration_s = 1.5;
    let v = Worker::spawn(&cfg).collect(vec![]);
    let r = tally(&v);
    let clients = 2 * 4;
    let most = clients * (1 + (1.5f64 / 0.2) as u64);
    assert!(
        r.requests <= most,
        "{} requests, at most {most}: {r:?}",
        r.requests
    );
    // Every stream went again after thinking (at least twice each), on the same N
    // connections (a thinking stream holds its connection open).
    assert!(r.responses >= 2 * clients, "{r:?}");
    assert_eq!((r.established, r.errors), (2, 0), "{r:?}");
    // At most M at once on a connection, and the streams thinking are not in flight.
    assert_eq!(r.streams_max, 4, "{r:?}");
    // The latency is each request's own (from its send), not the think time.
    let total = v
        .iter()
        .fold(None::<hdrhistogram::Histogram<u64>>, |acc, d| {
            let mut h = acc.unwrap_or_else(|| hdrhistogram::Histogram::new(3).unwrap());
            d.total_us.merge_into(&mut h);
            Some(h)
        })
        .unwrap();
    assert!(
        total.value_at_quantile(0.5) < 100_000,
        "median {} us",
        total.value_at_quantile(0.5)
    );
    assert_server_agrees(srv, &r);
}
