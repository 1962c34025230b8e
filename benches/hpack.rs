//! The HPACK crates the HTTP/2 codec could keep (issue 46), timed without criterion: ns per
//! header block to encode the load's request heads (a connection's 100 requests through one
//! encoder, so the dynamic table is used as a real connection uses it), ns per block to decode a
//! server's response heads, and the bytes on the wire against the plain `name: value` size.
//! `cargo bench --bench hpack`.

use std::hint::black_box;
use std::time::Instant;

/// The request head the S-Client sends over HTTP/2 (h2load sends the same fields).
fn request(i: usize) -> Vec<(&'static [u8], Vec<u8>)> {
    vec![
        (&b":method"[..], b"GET".to_vec()),
        (b":scheme", b"http".to_vec()),
        (b":authority", b"198.18.0.1:8080".to_vec()),
        (
            b":path",
            format!("/specweb96/class1_{}", i % 9).into_bytes(),
        ),
        (b"user-agent", b"synlab".to_vec()),
    ]
}

/// nginx's response head to a static file.
fn response() -> Vec<(&'static [u8], Vec<u8>)> {
    vec![
        (&b":status"[..], b"200".to_vec()),
        (b"server", b"nginx/1.22.1".to_vec()),
        (b"date", b"Sat, 28 Nov 2026 03:30:00 GMT".to_vec()),
        (b"content-type", b"application/octet-stream".to_vec()),
        (b"content-length", b"1294".to_vec()),
        (b"last-modified", b"Sat, 28 Nov 2026 03:00:00 GMT".to_vec()),
        (b"etag", b"\"6568e0a0-50e\"".to_vec()),
        (b"accept-ranges", b"bytes".to_vec()),
    ]
}

const PER_CONN: usize = 100;

fn plain_len(h: &[(&[u8], Vec<u8>)]) -> usize {
    h.iter().map(|(n, v)| n.len() + v.len() + 4).sum()
}

fn time(label: &str, mut f: impl FnMut() -> usize) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut n = 0;
        for _ in 0..200 {
            n += f();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("{label:<40} {best:>7.1} ns per block (best of 5)");
}

/// One connection's request blocks encoded by `enc`; returns the wire bytes.
fn wire(mut enc: impl FnMut(&[(&[u8], Vec<u8>)]) -> usize) -> usize {
    (0..PER_CONN).map(|i| enc(&request(i))).sum()
}

fn main() {
    let reqs: Vec<_> = (0..PER_CONN).map(request).collect();
    let resp = response();
    let plain: usize = reqs.iter().map(|r| plain_len(r)).sum();
    println!("plain request heads: {plain} bytes per {PER_CONN} requests");

    // loona-hpack (the maintained fork of hpack-rs; used by the codec).
    let w = wire(|h| {
        let mut e = loona_hpack::Encoder::new();
        e.encode(h.iter().map(|(n, v)| (*n, &v[..]))).len()
    });
    let mut e = loona_hpack::Encoder::new();
    let w_conn: usize = reqs
        .iter()
        .map(|h| e.encode(h.iter().map(|(n, v)| (*n, &v[..]))).len())
        .sum();
    println!("loona-hpack wire: {w_conn} bytes per connection ({w} with a fresh table each)");
    time("loona-hpack encode request", || {
        let mut e = loona_hpack::Encoder::new();
        let mut out = Vec::with_capacity(64);
        for h in &reqs {
            out.clear();
            e.encode_into(h.iter().map(|(n, v)| (*n, &v[..])), &mut out)
                .unwrap();
            black_box(&out);
        }
        PER_CONN
    });
    let block = loona_hpack::Encoder::new().encode(resp.iter().map(|(n, v)| (*n, &v[..])));
    time("loona-hpack decode response", || {
        let mut d = loona_hpack::Decoder::new();
        let mut n = 0;
        for _ in 0..PER_CONN {
            d.decode_with_cb(&block, |a, b| n += a.len() + b.len())
                .unwrap();
        }
        black_box(n);
        PER_CONN
    });

    // hpack 0.3 (hpack-rs, last release 2016).
    let mut e = hpack::Encoder::new();
    let w_conn: usize = reqs
        .iter()
        .map(|h| e.encode(h.iter().map(|(n, v)| (*n, &v[..]))).len())
        .sum();
    println!("hpack wire: {w_conn} bytes per connection");
    time("hpack encode request", || {
        let mut e = hpack::Encoder::new();
        let mut out = Vec::with_capacity(64);
        for h in &reqs {
            out.clear();
            e.encode_into(h.iter().map(|(n, v)| (*n, &v[..])), &mut out)
                .unwrap();
            black_box(&out);
        }
        PER_CONN
    });
    let block = hpack::Encoder::new().encode(resp.iter().map(|(n, v)| (*n, &v[..])));
    time("hpack decode response", || {
        let mut d = hpack::Decoder::new();
        let mut n = 0;
        for _ in 0..PER_CONN {
            d.decode_with_cb(&block, |a, b| n += a.len() + b.len())
                .unwrap();
        }
        black_box(n);
        PER_CONN
    });

    // httlib-hpack (Huffman, best representation, incremental indexing).
    const FLAGS: u8 = 0x1 | 0x2 | 0x4 | 0x10;
    let enc_httlib = |e: &mut httlib_hpack::Encoder, h: &[(&[u8], Vec<u8>)], out: &mut Vec<u8>| {
        for (n, v) in h {
            e.encode((n.to_vec(), v.clone(), FLAGS), out).unwrap();
        }
    };
    let mut e = httlib_hpack::Encoder::default();
    let mut w_conn = 0;
    for h in &reqs {
        let mut out = Vec::new();
        enc_httlib(&mut e, h, &mut out);
        w_conn += out.len();
    }
    println!("httlib-hpack wire: {w_conn} bytes per connection");
    time("httlib-hpack encode request", || {
        let mut e = httlib_hpack::Encoder::default();
        let mut out = Vec::with_capacity(64);
        for h in &reqs {
            out.clear();
            enc_httlib(&mut e, h, &mut out);
            black_box(&out);
        }
        PER_CONN
    });
    let mut block = Vec::new();
    enc_httlib(&mut httlib_hpack::Encoder::default(), &resp, &mut block);
    time("httlib-hpack decode response", || {
        let mut d = httlib_hpack::Decoder::default();
        let mut n = 0;
        for _ in 0..PER_CONN {
            let mut b = block.clone();
            let mut out = Vec::new();
            d.decode(&mut b, &mut out).unwrap();
            n += out.len();
        }
        black_box(n);
        PER_CONN
    });
}
