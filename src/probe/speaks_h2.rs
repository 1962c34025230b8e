//! Whether a target speaks HTTP/2, asked once at start-up: over TLS, ALPN `h2` offered and
//! chosen; then (over TLS or plain TCP, h2c with prior knowledge) the client preface and an
//! empty SETTINGS frame, answered by the server's own SETTINGS frame, whose limits are read
//! back (SETTINGS_MAX_CONCURRENT_STREAMS, the initial window, the largest frame).

use crate::tls::settings::ClientTls;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
const EMPTY_SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];
const FRAME_SETTINGS: u8 = 0x4;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// The server's first SETTINGS: the limits it advertised (None: not sent, the protocol's
/// default holds: unlimited streams, a 65,535-byte window, 16,384-byte frames).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerSettings {
    pub max_concurrent_streams: Option<u32>,
    pub initial_window: Option<u32>,
    pub max_frame_size: Option<u32>,
}

impl std::fmt::Display for ServerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: Option<u32>, default: &str| v.map_or(default.to_string(), |v| v.to_string());
        write!(
            f,
            "max concurrent streams {}, initial window {}, max frame {}",
            show(self.max_concurrent_streams, "unlimited"),
            show(self.initial_window, "65535"),
            show(self.max_frame_size, "16384"),
        )
    }
}

/// A target that speaks HTTP/2: how it was reached, as run.log says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeaksH2 {
    /// Over TLS: what the handshake agreed ("TLS 1.3, ..., ALPN h2"); None: h2c.
    pub tls: Option<String>,
    pub settings: ServerSettings,
}

impl std::fmt::Display for SpeaksH2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tls {
            Some(tls) => write!(f, "HTTP/2 over {tls}; its SETTINGS: {}", self.settings),
            None => write!(
                f,
                "HTTP/2 in the clear (h2c, prior knowledge); its SETTINGS: {}",
                self.settings
            ),
        }
    }
}

/// Why a target does not speak HTTP/2: the reason a run refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoH2 {
    #[error("no connection: {0}")]
    Connect(String),
    #[error("the TLS handshake failed: {0}")]
    Tls(String),
    #[error("over TLS it chose ALPN {}, not h2: HTTP/2 is not on for this listener (nginx: `http2` on its listen line; Apache: `Protocols h2 http/1.1` with mod_http2)", .chosen.as_deref().unwrap_or("none"))]
    AlpnNotH2 { chosen: Option<String> },
    #[error("it answered the HTTP/2 preface with {0:?}, not a SETTINGS frame: it does not speak h2c with prior knowledge (nginx: `http2` on a plain listen line; Apache: `Protocols h2c http/1.1` with mod_http2)")]
    NotSettings(String),
    #[error("it closed the connection after the HTTP/2 preface without a SETTINGS frame")]
    Closed,
    #[error("no SETTINGS frame within {0} ms of the HTTP/2 preface")]
    Timeout(u128),
}

/// Asks the server at `addr` whether it speaks HTTP/2: over TLS with `tls` (ALPN h2), else h2c.
pub fn check(
    addr: SocketAddr,
    tls: Option<&ClientTls>,
    timeout: Duration,
) -> Result<SpeaksH2, NoH2> {
    match tls {
        Some(t) => {
            let (sock, conn) =
                crate::tls::client::handshake(addr, t, &[b"h2", b"http/1.1"], timeout)
                    .map_err(|e| NoH2::Tls(format!("{e:#}")))?;
            let chosen = conn
                .alpn_protocol()
                .map(|a| String::from_utf8_lossy(a).into_owned());
            if chosen.as_deref() != Some("h2") {
                return Err(NoH2::AlpnNotH2 { chosen });
            }
            let agreed = crate::tls::client::agreed(&conn);
            let mut s = rustls::StreamOwned::new(conn, sock);
            let settings = exchange(&mut s, timeout)?;
            s.conn.send_close_notify();
            let _ = s.flush();
            Ok(SpeaksH2 {
                tls: Some(agreed),
                settings,
            })
        }
        None => {
            let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)
                .map_err(|e| NoH2::Connect(format!("{addr}: {e}")))?;
            let _ = s.set_read_timeout(Some(timeout));
            let _ = s.set_write_timeout(Some(timeout));
            let settings = exchange(&mut s, timeout)?;
            Ok(SpeaksH2 {
                tls: None,
                settings,
            })
        }
    }
}

/// Sends the preface and an empty SETTINGS; reads the server's first frame, which must be
/// its SETTINGS (RFC 9113 section 3.4).
fn exchange(s: &mut (impl Read + Write), timeout: Duration) -> Result<ServerSettings, NoH2> {
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            NoH2::Timeout(timeout.as_millis())
        }
        std::io::ErrorKind::UnexpectedEof => NoH2::Closed,
        _ => NoH2::Connect(e.to_string()),
    };
    let mut hello = PREFACE.to_vec();
    hello.extend_from_slice(&EMPTY_SETTINGS);
    s.write_all(&hello).and_then(|_| s.flush()).map_err(io)?;
    let mut head = [0u8; 9];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Err(NoH2::Closed),
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(io(e)),
        }
    }
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    if got < head.len() || head[3] != FRAME_SETTINGS || head[4] & 1 != 0 || !len.is_multiple_of(6) {
        // An HTTP/1.x server answers the preface as a request: show its first line.
        let mut text = head[..got].to_vec();
        let mut more = [0u8; 120];
        if got == head.len() {
            if let Ok(n) = s.read(&mut more) {
                text.extend_from_slice(&more[..n]);
            }
        }
        let line = String::from_utf8_lossy(&text);
        let first = line.lines().next().unwrap_or_default().to_string();
        return Err(NoH2::NotSettings(first));
    }
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).map_err(io)?;
    Ok(parse_settings(&payload))
}

/// The limits in a SETTINGS frame's payload (6-byte entries: identifier, value).
pub fn parse_settings(payload: &[u8]) -> ServerSettings {
    let mut out = ServerSettings::default();
    for e in payload.chunks_exact(6) {
        let id = u16::from_be_bytes([e[0], e[1]]);
        let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
        match id {
            SETTINGS_MAX_CONCURRENT_STREAMS => out.max_concurrent_streams = Some(v),
            SETTINGS_INITIAL_WINDOW_SIZE => out.initial_window = Some(v),
            SETTINGS_MAX_FRAME_SIZE => out.max_frame_size = Some(v),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A fake peer: what it answers, and what it was sent.
    struct Peer {
        answer: Cursor<Vec<u8>>,
        sent: Vec<u8>,
    }
    impl Read for Peer {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            self.answer.read(b)
        }
    }
    impl Write for Peer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    fn peer(answer: &[u8]) -> Peer {
        Peer {
            answer: Cursor::new(answer.to_vec()),
            sent: Vec::new(),
        }
    }

    #[test]
    fn a_settings_answer_is_read_back_and_anything_else_is_named() {
        // nginx's first frame: max streams 128, window 65536, max frame 16777215.
        let mut frame = vec![0, 0, 18, 4, 0, 0, 0, 0, 0];
        for (id, v) in [(3u16, 128u32), (4, 65536), (5, 16_777_215)] {
            frame.extend_from_slice(&id.to_be_bytes());
            frame.extend_from_slice(&v.to_be_bytes());
        }
        let mut p = peer(&frame);
        let s = exchange(&mut p, Duration::from_secs(1)).unwrap();
        assert_eq!(s.max_concurrent_streams, Some(128));
        assert_eq!(s.initial_window, Some(65536));
        assert_eq!(s.max_frame_size, Some(16_777_215));
        assert!(p.sent.starts_with(PREFACE) && p.sent.ends_with(&EMPTY_SETTINGS));
        let e = exchange(
            &mut peer(b"HTTP/1.1 400 Bad Request\r\nServer: x\r\n\r\n"),
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert_eq!(e, NoH2::NotSettings("HTTP/1.1 400 Bad Request".into()));
        assert_eq!(
            exchange(&mut peer(b""), Duration::from_secs(1)),
            Err(NoH2::Closed)
        );
        // A SETTINGS ack is not the server's own SETTINGS.
        let ack = [0, 0, 0, 4, 1, 0, 0, 0, 0];
        assert!(matches!(
            exchange(&mut peer(&ack), Duration::from_secs(1)),
            Err(NoH2::NotSettings(_))
        ));
        assert_eq!(
            ServerSettings::default().to_string(),
            "max concurrent streams unlimited, initial window 65535, max frame 16384"
        );
    }
}
