//! The event server's HTTP/2 connections (h2 by ALPN over TLS, h2c with prior knowledge): the
//! [`crate::http2::Server`] codec fed from the socket, each stream answered as an HTTP/1.x
//! request to the same path would be (same catalog, dynamic endpoints, service time and
//! counters), plus the count of streams and of streams refused past `max_streams`.

use super::config::ServiceKind;
use super::core::{self, Counters, Ctx, Response};
use super::files::PATTERN_BUF_LEN;
use super::http::{Method, Parse, Request};
use crate::http2::{self, RequestHead, ServerEvent};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// Output held in the codec before the socket must take some (DATA is made as it drains).
const MAX_OUT: usize = 256 * 1024;

/// True when `buf` (a new plain connection's first bytes) is, or may yet be, the HTTP/2
/// client preface: Some(true) complete, Some(false) a prefix so far, None not h2c.
pub fn preface_of(buf: &[u8]) -> Option<bool> {
    let n = buf.len().min(http2::frame::PREFACE.len());
    (buf[..n] == http2::frame::PREFACE[..n]).then_some(n == http2::frame::PREFACE.len())
}

/// A response's body: its inline bytes, then pattern bytes.
struct Body {
    inline: Vec<u8>,
    pattern: u64,
}

/// One HTTP/2 connection of the event loop.
pub struct H2Conn {
    codec: http2::Server,
    bodies: HashMap<u32, Body>,
    /// Streams waiting out a sleep service time: due, stream, status, head's fields, body.
    sleeping: Vec<(Instant, u32, Response)>,
    refused_seen: u64,
}

/// What the loop does next with the connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Open; `want_write` when output waits for the socket; `wake` when a sleeping stream is due.
    Open {
        want_write: bool,
        wake: Option<Instant>,
    },
    Close,
}

impl H2Conn {
    pub fn new(ctx: &Ctx) -> H2Conn {
        H2Conn {
            codec: http2::Server::new(http2::ServerOptions {
                max_streams: ctx.cfg.max_streams,
                ..Default::default()
            }),
            bodies: HashMap::new(),
            sleeping: Vec::new(),
            refused_seen: 0,
        }
    }

    /// No stream open or held: the connection may be closed as idle.
    pub fn idle(&self) -> bool {
        self.codec.active() == 0 && self.sleeping.is_empty()
    }

    /// Takes the bytes read (plaintext), answers what they asked, writes what the socket takes.
    pub fn on_input(
        &mut self,
        input: &[u8],
        s: &mut TcpStream,
        tls: Option<&mut rustls::ServerConnection>,
        ctx: &Ctx,
        counters: &Counters,
    ) -> Step {
        let now = Instant::now();
        let fed = self.codec.feed(input, now);
        let refused = self.codec.stats().refused;
        counters
            .h2_refused
            .fetch_add(refused - self.refused_seen, Relaxed);
        self.refused_seen = refused;
        self.events(ctx, counters);
        let step = self.flush(s, tls, ctx, counters);
        match fed {
            // The GOAWAY naming the error went out with the flush, best effort.
            Err(_) => Step::Close,
            Ok(()) => step,
        }
    }

    /// Answers the streams whose sleep service time has passed.
    pub fn on_timer(
        &mut self,
        s: &mut TcpStream,
        tls: Option<&mut rustls::ServerConnection>,
        ctx: &Ctx,
        counters: &Counters,
    ) -> Step {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) =
            self.sleeping.drain(..).partition(|(t, _, _)| *t <= now);
        self.sleeping = later;
        let slept = Duration::from_micros(ctx.cfg.service_time_us);
        for (at, stream, resp) in due {
            // Due its service time after it was read (the latency split's service).
            if let Some(read_at) = at.checked_sub(slept) {
                counters.record_service(read_at);
            }
            self.send(stream, &resp);
        }
        self.flush(s, tls, ctx, counters)
    }

    /// The socket turned writable.
    pub fn on_writable(
        &mut self,
        s: &mut TcpStream,
        tls: Option<&mut rustls::ServerConnection>,
        ctx: &Ctx,
        counters: &Counters,
    ) -> Step {
        self.flush(s, tls, ctx, counters)
    }

    fn events(&mut self, ctx: &Ctx, counters: &Counters) {
        while let Some(e) = self.codec.poll_event() {
            match e {
                ServerEvent::Request { stream, head } => self.request(stream, &head, ctx, counters),
                ServerEvent::Sent { stream, status } => {
                    self.bodies.remove(&stream);
                    core::count_status(status, counters);
                }
                ServerEvent::Reset { stream, .. } => {
                    self.bodies.remove(&stream);
                    self.sleeping.retain(|(_, id, _)| *id != stream);
                }
                ServerEvent::GoAway { .. } => {}
            }
        }
    }

    /// Serves one stream as the HTTP/1.1 request `GET path` would be.
    fn request(&mut self, stream: u32, head: &RequestHead, ctx: &Ctx, counters: &Counters) {
        counters.h2_streams.fetch_add(1, Relaxed);
        let read_at = Instant::now();
        let parse = parse_of(&head.method, &head.path);
        core::count_request(&parse, counters);
        // The CGI endpoint runs here, blocking the loop for its run (HTTP/1.x uses the pool).
        let resp = match super::dynamic::request_of(&parse, true) {
            Some(d) => super::dynamic::finish(&d, ctx.dynamic.execute(d.endpoint), counters),
            None => core::respond(&ctx.catalog, &parse, true),
        };
        let st_us = ctx.cfg.service_time_us;
        if matches!(parse, Parse::Done(_)) && st_us > 0 {
            match ctx.cfg.service {
                ServiceKind::Cpu => super::work::burn(st_us * 1000),
                ServiceKind::Sleep => {
                    let due = read_at + Duration::from_micros(st_us);
                    self.sleeping.push((due, stream, resp));
                    return;
                }
            }
        }
        counters.record_service(read_at);
        self.send(stream, &resp);
    }

    /// Queues a response made for HTTP/1.x as HTTP/2: its status and Content-Type, the
    /// inline body after its head, then its pattern bytes.
    fn send(&mut self, stream: u32, resp: &Response) {
        let (ctype, inline) = split_head(&resp.head);
        let len = inline.len() as u64 + resp.body_len;
        let len_s = len.to_string();
        let ctype = ctype.unwrap_or("application/octet-stream");
        let fields = [
            ("server", "synlab"),
            ("content-type", ctype),
            ("content-length", len_s.as_str()),
        ];
        if self.codec.respond(stream, resp.status, &fields, len) && len > 0 {
            self.bodies.insert(
                stream,
                Body {
                    inline: inline.to_vec(),
                    pattern: resp.body_len,
                },
            );
        }
    }

    /// Makes DATA while the socket takes bytes.
    fn flush(
        &mut self,
        s: &mut TcpStream,
        mut tls: Option<&mut rustls::ServerConnection>,
        ctx: &Ctx,
        counters: &Counters,
    ) -> Step {
        loop {
            // TLS records made earlier go first.
            if let Some(t) = tls.as_deref_mut() {
                while t.wants_write() {
                    match t.write_tls(s) {
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.open(true),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return Step::Close,
                    }
                }
            }
            let now = Instant::now();
            let bodies = &self.bodies;
            let pattern = &ctx.pattern;
            self.codec.fill(now, MAX_OUT, &mut |id, off, n, out| {
                body_bytes(bodies.get(&id), pattern, off, n, out)
            });
            // Responses queued whole (counted once their last DATA is queued).
            self.events(ctx, counters);
            let out = self.codec.pending_output();
            if out.is_empty() {
                break;
            }
            let wrote = match tls.as_deref_mut() {
                // At most a few records at a time, so TLS never holds a window's worth.
                Some(t) => t.writer().write(&out[..out.len().min(64 * 1024)]),
                None => s.write(out),
            };
            match wrote {
                Ok(0) => return Step::Close,
                Ok(n) => {
                    counters.bytes_out.fetch_add(n as u64, Relaxed);
                    self.codec.advance_output(n, now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.open(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
        self.open(false)
    }

    fn open(&self, want_write: bool) -> Step {
        Step::Open {
            want_write,
            wake: self.sleeping.iter().map(|(t, _, _)| *t).min(),
        }
    }
}

/// Reads what a TLS connection has decrypted into `buf`, and whether it is closed.
pub fn tls_plaintext(t: &mut rustls::ServerConnection, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match t.reader().read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Appends `n` body bytes from `off`: the inline part, then the pattern (wrapping).
fn body_bytes(b: Option<&Body>, pattern: &[u8], mut off: u64, mut n: usize, out: &mut Vec<u8>) {
    let Some(b) = b else {
        out.resize(out.len() + n, 0); // unreachable: a stream with DATA to send has its body
        return;
    };
    let il = b.inline.len() as u64;
    if off < il {
        let k = ((il - off) as usize).min(n);
        out.extend_from_slice(&b.inline[off as usize..off as usize + k]);
        off += k as u64;
        n -= k;
    }
    debug_assert!(off - il + n as u64 <= b.pattern);
    while n > 0 {
        let start = ((off - il) % PATTERN_BUF_LEN as u64) as usize;
        let k = n.min(PATTERN_BUF_LEN - start);
        out.extend_from_slice(&pattern[start..start + k]);
        off += k as u64;
        n -= k;
    }
}

/// An HTTP/2 or HTTP/3 request's method and path as the HTTP/1.1 request the server knows.
pub(super) fn parse_of(method: &str, path: &str) -> Parse {
    match method {
        "GET" | "HEAD" if path.starts_with('/') => Parse::Done(Request {
            method: if method == "GET" {
                Method::Get
            } else {
                Method::Head
            },
            path: path.split(['?', '#']).next().unwrap_or("/").to_string(),
            minor: 1,
            wants_keepalive: true,
            consumed: 0,
        }),
        "GET" | "HEAD" => Parse::Bad(400, "target is not an absolute path"),
        _ => Parse::Bad(501, "method not implemented"),
    }
}

/// The Content-Type of an HTTP/1.x response head, and the inline body after it.
pub(super) fn split_head(head: &[u8]) -> (Option<&str>, &[u8]) {
    let end = memchr::memmem::find(head, b"\r\n\r\n")
        .map(|i| i + 4)
        .unwrap_or(head.len());
    let text = std::str::from_utf8(&head[..end]).unwrap_or("");
    let ctype = text
        .split("\r\n")
        .find_map(|l| l.strip_prefix("Content-Type: "));
    (ctype, &head[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_is_told_from_http1_early() {
        assert_eq!(preface_of(b"PRI * HT"), Some(false));
        assert_eq!(preface_of(http2::frame::PREFACE), Some(true));
        assert_eq!(preface_of(b"GET / HTTP/1.1\r\n"), None);
        assert_eq!(preface_of(b"P"), Some(false));
    }

    #[test]
    fn an_http1_head_gives_its_type_and_inline_body() {
        let h = super::super::http::response_head(404, 1, 10, "text/plain", true);
        let mut r = h.clone();
        r.extend_from_slice(b"not found\n");
        assert_eq!(split_head(&r), (Some("text/plain"), &b"not found\n"[..]));
    }

    #[test]
    fn body_bytes_run_from_inline_into_the_pattern_and_wrap() {
        let pattern: Vec<u8> = (0..PATTERN_BUF_LEN).map(|i| i as u8).collect();
        let b = Body {
            inline: b"abc".to_vec(),
            pattern: 2 * PATTERN_BUF_LEN as u64,
        };
        let mut out = Vec::new();
        body_bytes(Some(&b), &pattern, 1, 4, &mut out);
        assert_eq!(out, b"bc\x00\x01");
        out.clear();
        body_bytes(
            Some(&b),
            &pattern,
            3 + PATTERN_BUF_LEN as u64 - 1,
            3,
            &mut out,
        );
        assert_eq!(out, [(PATTERN_BUF_LEN - 1) as u8, 0, 1]);
    }
}
