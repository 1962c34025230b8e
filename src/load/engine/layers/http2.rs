//! The HTTP/2 layer: `crate::http2`'s sans-IO client as an `HttpLayer` of many requests at
//! once (its capacity: the streams free under min(M, the server's SETTINGS_MAX_CONCURRENT_
//! STREAMS)). Over TLS it needs ALPN `h2`; in the clear it speaks h2c with prior knowledge
//! (the preface goes out when the connection is ready). The codec honours the server's
//! SETTINGS (initial window, max frame size), answers PING and sends WINDOW_UPDATEs; this
//! layer turns its events into the engine's per-token ones.

use super::{HttpError, HttpEvent, HttpLayer, MuxCounts, ReqToken, Request};
use crate::http2::{Client, ClientOptions, ErrorCode, Event, Stats};
use std::time::Instant;

/// The ALPN protocol id HTTP/2 over TLS needs.
pub const ALPN_H2: &[u8] = b"h2";

/// One connection's HTTP/2 client.
pub struct Http2 {
    client: Client,
    /// Tokens of the streams in flight, by stream id (few: M at most).
    streams: Vec<(u32, ReqToken)>,
    /// The codec's counts as of the last [`HttpLayer::take_counts`].
    seen: Stats,
    /// The server's SETTINGS arrived (until then one request at a time: its limit is unknown,
    /// and streams sent over it would come back refused instead of waiting here).
    settled: bool,
}

impl Http2 {
    /// A new connection with up to `streams` (M) streams; its preface is queued.
    pub fn new(streams: u32) -> Http2 {
        Http2 {
            client: Client::new(ClientOptions {
                max_streams: streams.max(1),
                ..ClientOptions::default()
            }),
            streams: Vec::new(),
            seen: Stats::default(),
            settled: false,
        }
    }

    fn token_of(&mut self, token: u64) -> ReqToken {
        let t = ReqToken(token as u32);
        self.streams.retain(|&(_, k)| k != t);
        t
    }
}

impl HttpLayer for Http2 {
    fn capacity(&self) -> u32 {
        if self.settled {
            self.client.capacity() as u32
        } else {
            u32::from(self.streams.is_empty() && self.client.capacity() > 0)
        }
    }

    fn start(&mut self, token: ReqToken, req: &Request) {
        let head = crate::http2::Request {
            method: "GET",
            scheme: if req.secure { "https" } else { "http" },
            authority: &req.authority,
            path: &req.path,
            headers: &[],
        };
        match self.client.start_request(token.0 as u64, &head) {
            Ok(id) => self.streams.push((id, token)),
            // The driver asks only within `capacity`.
            Err(e) => debug_assert!(false, "a stream beyond the capacity: {e}"),
        }
    }

    fn output(&self) -> &[u8] {
        self.client.pending_output()
    }

    fn consumed(&mut self, n: usize) {
        self.client.advance_output(n, Instant::now());
    }

    fn feed(&mut self, bytes: &[u8], events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        let fed = self.client.feed(bytes, Instant::now());
        while let Some(ev) = self.client.poll_event() {
            match ev {
                Event::Settings(s) => {
                    self.settled = true;
                    events.push(HttpEvent::Limit(s.max_concurrent_streams));
                }
                Event::Head { token, .. } => {
                    events.push(HttpEvent::FirstByte(ReqToken(token as u32)))
                }
                Event::Done {
                    token,
                    status,
                    header_bytes: _,
                    body_bytes,
                    ..
                } => events.push(HttpEvent::Done {
                    token: self.token_of(token),
                    status,
                    body_bytes,
                    close: false,
                }),
                Event::Reset { token, code } => {
                    let t = self.token_of(token);
                    events.push(match code {
                        ErrorCode::RefusedStream => HttpEvent::Refused(t),
                        c => HttpEvent::Reset(t, c.to_u32()),
                    })
                }
                Event::GoAway { last_stream, .. } => {
                    let last = self
                        .streams
                        .iter()
                        .filter(|&&(id, _)| id <= last_stream)
                        .map(|&(_, t)| t)
                        .max_by_key(|t| t.0);
                    events.push(HttpEvent::GoingAway { last });
                }
                Event::NotProcessed { token } => {
                    events.push(HttpEvent::Unprocessed(self.token_of(token)))
                }
            }
        }
        fed.map_err(|e| HttpError::Invalid(e.reason))
    }

    fn eof(&mut self, _events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        if self.streams.is_empty() {
            Ok(())
        } else {
            Err(HttpError::Invalid(
                "the server closed the connection with streams in flight",
            ))
        }
    }

    fn reads_between_requests(&self) -> bool {
        true
    }

    fn multiplexed(&self) -> bool {
        true
    }

    fn alpn(&self) -> Option<&'static [u8]> {
        Some(ALPN_H2)
    }

    fn set_max_in_flight(&mut self, m: u32) {
        self.client.set_max_streams(m);
    }

    fn take_counts(&mut self, into: &mut MuxCounts) {
        let s = self.client.stats();
        let o = &self.seen;
        into.header_wire += (s.header_wire_out + s.header_wire_in)
            .saturating_sub(o.header_wire_out + o.header_wire_in);
        into.header_plain += (s.header_plain_out + s.header_plain_in)
            .saturating_sub(o.header_plain_out + o.header_plain_in);
        into.flow_stalls += (s.conn_window_stalls + s.stream_window_stalls)
            .saturating_sub(o.conn_window_stalls + o.stream_window_stalls);
        let stalled = (s.conn_window_stalled + s.stream_window_stalled)
            .saturating_sub(o.conn_window_stalled + o.stream_window_stalled);
        into.flow_stall_us += stalled.as_micros() as u64;
        into.pings += s.pings.saturating_sub(o.pings);
        self.seen = s.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http2::{Server, ServerEvent, ServerOptions};

    fn req() -> Request {
        Request {
            path: "/".into(),
            authority: "t".into(),
            h1: Vec::new().into(),
            secure: false,
        }
    }

    /// Moves bytes both ways until neither side has any.
    fn pump(c: &mut Http2, s: &mut Server, events: &mut Vec<HttpEvent>) {
        for _ in 0..16 {
            let out = c.output().to_vec();
            c.consumed(out.len());
            s.feed(&out, Instant::now()).unwrap();
            while let Some(ev) = s.poll_event() {
                if let ServerEvent::Request { stream, .. } = ev {
                    s.respond(stream, 200, &[], 5);
                }
            }
            s.fill(
                Instant::now(),
                1 << 20,
                &mut |_, _, n, out: &mut Vec<u8>| out.extend(std::iter::repeat_n(b'x', n)),
            );
            let back = s.pending_output().to_vec();
            s.advance_output(back.len(), Instant::now());
            if out.is_empty() && back.is_empty() {
                return;
            }
            c.feed(&back, events).unwrap();
        }
    }

    #[test]
    fn one_stream_until_the_server_settings_then_its_limit_under_m() {
        let mut c = Http2::new(10);
        assert_eq!(c.capacity(), 1, "one request before the server's SETTINGS");
        c.start(ReqToken(1), &req());
        assert_eq!(c.capacity(), 0);
        let mut s = Server::new(ServerOptions {
            max_streams: 4,
            ..ServerOptions::default()
        });
        let mut ev = Vec::new();
        pump(&mut c, &mut s, &mut ev);
        assert!(ev.contains(&HttpEvent::Limit(Some(4))), "{ev:?}");
        assert!(ev.iter().any(|e| matches!(
            e,
            HttpEvent::Done {
                token: ReqToken(1),
                status: 200,
                body_bytes: 5,
                ..
            }
        )));
        // The server's 4 under M = 10.
        assert_eq!(c.capacity(), 4);
        let mut counts = MuxCounts::default();
        c.take_counts(&mut counts);
        assert!(counts.header_wire > 0 && counts.header_plain > counts.header_wire);
    }
}
