//! The load generator's HTTP/1.x response parser (`load::http::ResponseParser`), timed without
//! criterion: ns per response for a Content-Length response (the hot path: every keep-alive
//! response of a run), whole and in three reads, and for a chunked one.
//! `cargo bench --bench http_response`.

use std::hint::black_box;
use std::time::Instant;
use synlab::load::http::{Progress, ResponseParser};

/// nginx's answer to /bytes/4000 (its header block as nginx writes it).
fn with_length() -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Sat, 28 Nov 2026 06:30:00 GMT\r\nContent-Type: application/octet-stream\r\nContent-Length: 4000\r\nLast-Modified: Sat, 28 Nov 2026 06:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6568a0a0-fa0\"\r\nAccept-Ranges: bytes\r\n\r\n".to_vec();
    r.extend(std::iter::repeat_n(b'a', 4000));
    r
}

/// The same body as nginx's sub_filter sends it: chunked (one 4000-byte chunk and the last).
fn chunked() -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Sat, 28 Nov 2026 06:30:00 GMT\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\nfa0\r\n".to_vec();
    r.extend(std::iter::repeat_n(b'b', 4000));
    r.extend(b"\r\n0\r\n\r\n");
    r
}

fn time(label: &str, rounds: u32, mut f: impl FnMut() -> usize) {
    let mut best = f64::MAX;
    for _ in 0..7 {
        let t = Instant::now();
        let mut n = 0;
        for _ in 0..rounds {
            n += f();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("{label:<36} {best:>7.1} ns per response (best of 7)");
}

/// Feeds `r` in `reads` pieces; the response must complete on the last.
fn parse(p: &mut ResponseParser, r: &[u8], reads: usize) -> usize {
    p.reset();
    let step = r.len().div_ceil(reads);
    let mut out = 0;
    for piece in r.chunks(step) {
        if let Progress::Done(d) = p.feed(black_box(piece)) {
            out = d.body_bytes as usize;
        }
    }
    assert_eq!(out, 4000);
    1
}

fn main() {
    let rounds = 200_000;
    let (len, ch) = (with_length(), chunked());
    let mut p = ResponseParser::default();
    time("Content-Length, whole", rounds, || parse(&mut p, &len, 1));
    time("Content-Length, in three reads", rounds, || {
        parse(&mut p, &len, 3)
    });
    if std::env::args().all(|a| a != "--length-only") {
        time("chunked, whole", rounds, || parse(&mut p, &ch, 1));
        time("chunked, in three reads", rounds, || parse(&mut p, &ch, 3));
    }
}
