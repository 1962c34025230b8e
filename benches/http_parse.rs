//! The built-in server's request parser, timed without criterion: ns per request head for the
//! heads the S-Client and wrk send, whole and in three reads (each read parses the buffer so
//! far, as the server does). `cargo bench --bench http_parse`.

use std::hint::black_box;
use std::time::Instant;
use synlab::target::http::{parse_request, Parse};

const HEADS: &[&[u8]] = &[
    b"GET /specweb96/class1_3 HTTP/1.0\r\nHost: 198.18.0.1:8080\r\nUser-Agent: synlab\r\n\r\n",
    b"GET /bytes/1024 HTTP/1.1\r\nHost: 198.18.0.1:8080\r\nConnection: keep-alive\r\n\r\n",
    b"GET /index.html HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: text/html,application/xhtml+xml\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\r\n",
];

fn time(label: &str, rounds: u32, mut f: impl FnMut() -> usize) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut n = 0;
        for _ in 0..rounds {
            n += f();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("{label:<32} {best:>7.1} ns per head (best of 5)");
}

fn main() {
    let rounds = 200_000;
    time("whole head", rounds, || {
        for h in HEADS {
            assert!(matches!(
                black_box(parse_request(black_box(h))),
                Parse::Done(_)
            ));
        }
        HEADS.len()
    });
    time("in three reads", rounds, || {
        for h in HEADS {
            let (a, b) = (h.len() / 3, 2 * h.len() / 3);
            assert_eq!(parse_request(black_box(&h[..a])), Parse::Partial);
            assert_eq!(parse_request(black_box(&h[..b])), Parse::Partial);
            assert!(matches!(
                black_box(parse_request(black_box(h))),
                Parse::Done(_)
            ));
        }
        HEADS.len()
    });
}
