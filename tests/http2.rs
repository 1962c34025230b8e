//! HTTP/2 end to end (issue 46): the sans-IO client (`synlab::http2::Client`) over a plain
//! blocking loopback socket against the built-in server and nginx (h2c), and h2load against
//! the built-in server over h2c and over TLS (h2 by ALPN), with its stream limit above and
//! below h2load's `-m`: every request succeeds and the server's own counts agree.

mod nginx_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};
use synlab::http2::{Client, ClientOptions, ErrorCode, Event, Request};
use synlab::target::{Arch, FileSet, ServeConfig, Server, ServiceKind};

fn cfg(max_streams: u32) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        arch: Arch::Event,
        workers: 1,
        max_workers: 1,
        backlog: 128,
        service_time_us: 0,
        service: ServiceKind::Cpu,
        files: vec![FileSet::Explicit {
            sizes: vec![1294, 100_000],
        }],
        keepalive: true,
        stats_interval_ms: 100,
        accept_batch: 1,
        lingering_close: false,
        linger_timeout_ms: 2000,
        http3: None,
        tls: None,
        max_streams,
    }
}

/// What one connection of the client did.
#[derive(Debug, Default)]
struct Outcome {
    done: u64,
    body_bytes: u64,
    refused: u64,
    other_resets: Vec<ErrorCode>,
    limit_seen: Option<u32>,
    stats: synlab::http2::Stats,
}

/// Sends `n` GETs of `path` on one connection with up to `m` streams at once, retrying refused
/// ones (as the load engine does), and reads until all ended; bounded by a 30 s deadline.
fn drive(addr: SocketAddr, n: u64, m: u32, path: &str) -> Outcome {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = Client::new(ClientOptions {
        max_streams: m,
        ..Default::default()
    });
    let authority = addr.to_string();
    let req = Request {
        method: "GET",
        scheme: "http",
        authority: &authority,
        path,
        headers: &[],
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut started, mut o) = (0u64, Outcome::default());
    let mut buf = vec![0u8; 64 * 1024];
    while o.done < n {
        assert!(Instant::now() < deadline, "not done in 30 s: {o:?}");
        while started < n && c.capacity() > 0 {
            c.start_request(started, &req).unwrap();
            started += 1;
        }
        let out = c.pending_output().to_vec();
        s.write_all(&out).unwrap();
        c.advance_output(out.len(), Instant::now());
        let k = s.read(&mut buf).expect("the server answers within 10 s");
        assert!(k > 0, "the server closed: {o:?}");
        c.feed(&buf[..k], Instant::now()).unwrap();
        while let Some(e) = c.poll_event() {
            match e {
                Event::Settings(st) => o.limit_seen = st.max_concurrent_streams,
                Event::Head { status, .. } => assert_eq!(status, 200),
                Event::Done {
                    status, body_bytes, ..
                } => {
                    assert_eq!(status, 200);
                    o.done += 1;
                    o.body_bytes += body_bytes;
                }
                Event::Reset {
                    code: ErrorCode::RefusedStream,
                    ..
                } => {
                    o.refused += 1;
                    started -= 1;
                }
                Event::Reset { code, .. } => o.other_resets.push(code),
                e => panic!("unexpected {e:?}"),
            }
        }
    }
    c.close();
    let _ = s.write_all(c.pending_output());
    o.stats = c.stats().clone();
    o
}

#[test]
fn the_client_completes_streams_on_the_builtin_server_and_both_count_them() {
    let srv = Server::start(cfg(4)).unwrap();
    let o = drive(srv.local_addr(), 300, 10, "/file/100000");
    assert_eq!(
        (o.done, o.body_bytes, o.refused),
        (300, 300 * 100_000, 0),
        "{o:?}"
    );
    assert_eq!(
        o.limit_seen,
        Some(4),
        "the advertised limit is the configured one"
    );
    // 30 MB through 64 KiB windows: WINDOW_UPDATEs went out all along.
    assert_eq!(o.stats.data_in, 300 * 100_000);
    assert!(o.stats.hpack_saving() > 0.5, "{:?}", o.stats);
    let st = srv.stop().unwrap();
    assert_eq!(
        (st.h2_streams, st.requests, st.responses, st.h2_refused),
        (300, 300, 300, 0),
        "{st:?}"
    );
}

/// Runs h2load (a bounded run: 60 s at most) and returns its "requests:" line's numbers
/// (total, started, done, succeeded, failed, errored).
fn h2load(args: &[&str]) -> Vec<u64> {
    let out = Command::new("timeout")
        .arg("60")
        .arg("h2load")
        .args(args)
        .output()
        .expect("h2load runs (Debian package nghttp2-client)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("requests:"))
        .unwrap_or_else(|| {
            panic!(
                "no requests line: {text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(|w| w.parse().unwrap())
        .collect()
}

#[test]
fn h2load_against_the_builtin_server_succeeds_and_the_server_counts_every_stream() {
    for max_streams in [128, 3] {
        let srv = Server::start(cfg(max_streams)).unwrap();
        let url = format!("http://{}/file/1294", srv.local_addr());
        let r = h2load(&["-n", "2000", "-c", "4", "-m", "10", &url]);
        // Below -m the streams wait (in h2load, or held by the server before its SETTINGS
        // were acknowledged): none fails.
        assert_eq!(
            r,
            vec![2000, 2000, 2000, 2000, 0, 0],
            "max_streams {max_streams}"
        );
        let st = srv.stop().unwrap();
        assert_eq!(
            (st.h2_streams, st.responses, st.h2_refused),
            (2000, 2000, 0),
            "max_streams {max_streams}: {st:?}"
        );
    }
}

#[test]
fn h2load_over_tls_gets_h2_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let files = synlab::tls::cert::LabCert::generate(synlab::tls::KeyKind::EcdsaP256, None)
        .unwrap()
        .write(dir.path())
        .unwrap();
    let mut c = cfg(16);
    c.tls = Some(synlab::tls::ServerTls {
        cert: files.cert,
        key: files.key,
        session_cache: true,
        tickets: true,
    });
    let srv = Server::start(c).unwrap();
    let url = format!("https://{}/file/1294", srv.local_addr());
    let r = h2load(&["-n", "500", "-c", "2", "-m", "8", &url]);
    assert_eq!(r, vec![500, 500, 500, 500, 0, 0]);
    let st = srv.stop().unwrap();
    assert_eq!(
        (st.h2_streams, st.responses, st.tls_full),
        (500, 500, 2),
        "{st:?}"
    );
}

#[test]
fn the_client_against_nginx_h2c_reads_its_stream_limit_and_its_log_counts_http2_requests() {
    let Some(mut ng) = nginx_support::start("http2_max_concurrent_streams 5;") else {
        return;
    };
    let small = drive(ng.addr, 200, 10, "/f");
    let big = drive(ng.addr, 20, 10, "/big");
    assert_eq!(
        small.limit_seen,
        Some(5),
        "nginx's http2_max_concurrent_streams read back"
    );
    assert_eq!((small.done, small.body_bytes), (200, 200 * 1294));
    assert_eq!((big.done, big.body_bytes), (20, 20 * 300_000));
    assert!(small.other_resets.is_empty() && big.other_resets.is_empty());
    // Every request that was not refused is one log line with HTTP/2.0.
    let log = ng.log_after_stop();
    let h2_lines = log
        .lines()
        .filter(|l| l.contains("\" 200 ") && l.contains(" HTTP/2.0\""))
        .count() as u64;
    assert_eq!(h2_lines, 220, "{log}");
    assert_eq!(small.stats.refused, small.refused);
}
