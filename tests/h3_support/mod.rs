//! A tiny HTTP/3 client for the tests (issue 47): QUIC by quinn on rustls (aws-lc-rs), HTTP/3
//! by hand, as much as a GET needs (RFC 9114): the client's control stream with an empty
//! SETTINGS frame, and per request a bidirectional stream with a HEADERS frame in QPACK's
//! static table only (RFC 9204: no dynamic table, so no encoder/decoder streams), then the
//! response's HEADERS (its `:status`) and DATA frames. Curl and h2load here have no HTTP/3.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// What a run of the client did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct H3Counts {
    /// QUIC connections made (each a handshake).
    pub connections: u64,
    pub requests: u64,
    /// Responses with `:status` 200, and their body bytes.
    pub ok: u64,
    pub body_bytes: u64,
}

// QUIC variable-length integers (RFC 9000 16): the crate's own.
use synlab::quic::h3::{get_varint, put_varint};

/// A QPACK string literal without Huffman (H = 0) after a `prefix`-bit integer's first byte
/// `flags`.
fn put_qpack_int(b: &mut Vec<u8>, flags: u8, prefix: u8, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        b.push(flags | v as u8);
        return;
    }
    b.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 128 {
        b.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    b.push(rest as u8);
}

/// The HEADERS frame of `GET path` to `authority`, in QPACK's static table.
pub fn get_headers(authority: &str, path: &str) -> Vec<u8> {
    // Required insert count 0, base 0: no dynamic table.
    let mut block = vec![0x00, 0x00];
    // Indexed field lines, static (T = 1): :method GET (17), :scheme https (23).
    block.extend_from_slice(&[0xc0 | 17, 0xc0 | 23]);
    // Literal with a static name reference (01NT, 4-bit index): :authority (0), :path (1).
    for (index, value) in [(0u8, authority), (1, path)] {
        block.push(0x50 | index);
        put_qpack_int(&mut block, 0x00, 7, value.len());
        block.extend_from_slice(value.as_bytes());
    }
    let mut frame = Vec::new();
    put_varint(&mut frame, 0x01);
    put_varint(&mut frame, block.len() as u64);
    frame.extend_from_slice(&block);
    frame
}

/// The `:status` of a response's field section when the server gave it as an indexed static
/// entry (RFC 9204 Appendix A), as quic-go does for the statuses the table has.
fn status_of(block: &[u8]) -> Option<u16> {
    let line = *block.get(2)?;
    if line & 0xc0 != 0xc0 {
        return None;
    }
    match line & 0x3f {
        24 => Some(103),
        25 => Some(200),
        26 => Some(304),
        27 => Some(404),
        28 => Some(503),
        _ => None,
    }
}

/// Reads a whole response stream: its status and its body's length.
pub fn parse_response(mut b: &[u8]) -> Option<(u16, u64)> {
    let (mut status, mut body) = (None, 0u64);
    while !b.is_empty() {
        let (kind, n) = get_varint(b)?;
        let (len, m) = get_varint(&b[n..])?;
        let payload = b.get(n + m..n + m + len as usize)?;
        match kind {
            0x01 if status.is_none() => status = status_of(payload),
            0x00 => body += len,
            _ => {}
        }
        b = &b[n + m + len as usize..];
    }
    Some((status?, body))
}

/// `connections` QUIC connections to `server` (certificate verified against `ca_pem`, name
/// `sni`), each sending `per_connection` GETs of `path` one after another; in the calling
/// thread's network namespace.
pub fn run(
    server: SocketAddr,
    sni: &str,
    ca_pem: &str,
    path: &str,
    connections: u64,
    per_connection: u64,
) -> anyhow::Result<H3Counts> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let verifier = synlab::tls::client::verifier_for(ca_pem)?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_webpki_verifier(verifier)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
        let mut cfg = quinn::ClientConfig::new(Arc::new(quic));
        let mut transport = quinn::TransportConfig::default();
        transport.max_idle_timeout(Some(Duration::from_secs(10).try_into()?));
        cfg.transport_config(Arc::new(transport));
        let bind: SocketAddr = if server.is_ipv4() {
            "0.0.0.0:0".parse()?
        } else {
            "[::]:0".parse()?
        };
        let mut endpoint = quinn::Endpoint::client(bind)?;
        endpoint.set_default_client_config(cfg);
        let mut c = H3Counts::default();
        for _ in 0..connections {
            let conn =
                tokio::time::timeout(Duration::from_secs(10), endpoint.connect(server, sni)?)
                    .await??;
            c.connections += 1;
            // The client's control stream: type 0x00, then SETTINGS (0x04) with none. It stays
            // open for the connection's life (closing it is an error).
            let mut control = conn.open_uni().await?;
            control.write_all(&[0x00, 0x04, 0x00]).await?;
            let authority = server.to_string();
            for _ in 0..per_connection {
                let (mut send, mut recv) = conn.open_bi().await?;
                send.write_all(&get_headers(&authority, path)).await?;
                send.finish()?;
                c.requests += 1;
                let bytes =
                    tokio::time::timeout(Duration::from_secs(10), recv.read_to_end(16 << 20))
                        .await??;
                if let Some((200, body)) = parse_response(&bytes) {
                    c.ok += 1;
                    c.body_bytes += body;
                }
            }
            // H3_NO_ERROR.
            conn.close(0x100u32.into(), b"");
            drop(control);
        }
        endpoint.wait_idle().await;
        Ok(c)
    })
}

#[test]
fn a_get_is_a_headers_frame_of_static_entries_and_literals() {
    let f = get_headers("198.18.0.1:8080", "/bytes/1294");
    assert_eq!(&f[..1], &[0x01]);
    let (len, n) = get_varint(&f[1..]).unwrap();
    assert_eq!(len as usize, f.len() - 1 - n);
    let block = &f[1 + n..];
    assert_eq!(&block[..4], &[0, 0, 0xd1, 0xd7]);
    assert_eq!(block[4], 0x50);
    assert_eq!(block[5] as usize, "198.18.0.1:8080".len());
    // A response: HEADERS (:status 200 indexed) and two DATA frames.
    let mut r = vec![0x01, 0x03, 0x00, 0x00, 0xd9];
    r.extend_from_slice(&[0x00, 0x02, b'h', b'i', 0x00, 0x01, b'!']);
    assert_eq!(parse_response(&r), Some((200, 3)));
    let mut v = Vec::new();
    put_varint(&mut v, 1294);
    assert_eq!(get_varint(&v), Some((1294, 2)));
}
