//! The HTTP/1.x layer: one request at a time on a connection (capacity 1; keep-alive sends the
//! next when the response is in), its bytes the mix's prebuilt `Request::h1`, its response read
//! by the incremental `load::http::ResponseParser`.
//!
//! The parser (96 bytes) is boxed at a slot's first response byte and kept for the slot's next
//! connections (`keep_storage_of`): a flood's sockets in flight (20,000 slots, none answered)
//! carry 8 bytes for it, and a slot that is answered again and again allocates once.

use super::{HttpError, HttpEvent, HttpLayer, ReqToken, Request};
use crate::load::http::{BadResponse, Progress, ResponseParser};
use std::sync::Arc;

/// One connection's HTTP/1.x state.
#[derive(Default)]
pub struct Http1 {
    /// The request in flight (None between requests).
    token: Option<ReqToken>,
    /// Bytes of it written.
    sent: u32,
    saw_first_byte: bool,
    request: Option<Arc<[u8]>>,
    /// Reset at the response's first byte (so only meaningful after it).
    parser: Option<Box<ResponseParser>>,
}

impl Http1 {
    fn unsent(&self) -> &[u8] {
        match &self.request {
            Some(r) => &r[self.sent as usize..],
            None => &[],
        }
    }

    /// Takes over the parser storage of the slot's previous HTTP/1.x layer.
    pub fn keep_storage_of(&mut self, old: &mut Http1) {
        self.parser = old.parser.take();
    }
}

impl HttpLayer for Http1 {
    fn capacity(&self) -> u32 {
        1
    }

    fn start(&mut self, token: ReqToken, req: &Request) {
        debug_assert!(
            self.token.is_none(),
            "HTTP/1.x carries one request at a time"
        );
        self.token = Some(token);
        self.request = Some(Arc::clone(&req.h1));
        self.sent = 0;
        self.saw_first_byte = false;
    }

    fn output(&self) -> &[u8] {
        self.unsent()
    }

    fn consumed(&mut self, n: usize) {
        self.sent += n as u32;
    }

    fn feed(&mut self, bytes: &[u8], events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        // Bytes before the request is all out, or after its response: stray, dropped.
        let Some(token) = self.token.filter(|_| self.unsent().is_empty()) else {
            return Ok(());
        };
        let parser = self.parser.get_or_insert_with(Box::default);
        if !self.saw_first_byte {
            self.saw_first_byte = true;
            parser.reset();
            events.push(HttpEvent::FirstByte(token));
        }
        match parser.feed(bytes) {
            Progress::NeedMore => Ok(()),
            Progress::Done(r) => {
                self.token = None;
                events.push(HttpEvent::Done {
                    token,
                    status: r.status,
                    body_bytes: r.body_bytes,
                    close: r.close,
                });
                Ok(())
            }
            Progress::Invalid(why) => Err(HttpError::Parse(why)),
        }
    }

    fn eof(&mut self, events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        let Some(token) = self.token else {
            return Ok(());
        };
        let Some(parser) = self.parser.as_mut().filter(|_| self.saw_first_byte) else {
            return Err(HttpError::Parse(BadResponse::ClosedBeforeAnyByte));
        };
        match parser.eof() {
            Progress::Done(r) => {
                self.token = None;
                events.push(HttpEvent::Done {
                    token,
                    status: r.status,
                    body_bytes: r.body_bytes,
                    close: true,
                });
                Ok(())
            }
            Progress::Invalid(why) => Err(HttpError::Parse(why)),
            Progress::NeedMore => Err(HttpError::Parse(BadResponse::ClosedMidResponse)),
        }
    }

    fn sends_h1_first(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Request {
        Request {
            path: "/".into(),
            authority: "a".into(),
            h1: Arc::from(&b"GET / HTTP/1.1\r\n\r\n"[..]),
            secure: false,
        }
    }

    /// A new connection on the slot, as `Layers::renew_http` makes it.
    fn renewed(old: &mut Http1) -> Http1 {
        let mut h = Http1::default();
        h.keep_storage_of(old);
        h
    }

    fn sent(h: &mut Http1, token: u32) {
        h.start(ReqToken(token), &request());
        let n = h.output().len();
        h.consumed(n);
    }

    #[test]
    fn a_slot_s_next_connection_parses_afresh_after_one_died_mid_response() {
        let mut first = Http1::default();
        sent(&mut first, 1);
        let mut ev = Vec::new();
        // Cut inside a header line and inside the chunked framing's state.
        first
            .feed(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe",
                &mut ev,
            )
            .unwrap();
        first.feed(b"llo\r\n3;ext", &mut ev).unwrap();
        assert!(first.parser.is_some());

        // The next connection on the slot: its storage, none of its state.
        let mut next = renewed(&mut first);
        assert!(next.parser.is_some());
        sent(&mut next, 1);
        let mut ev = Vec::new();
        assert_eq!(
            next.eof(&mut ev),
            Err(HttpError::Parse(BadResponse::ClosedBeforeAnyByte))
        );
        let mut next = renewed(&mut next);
        sent(&mut next, 1);
        next.feed(b"HTTP/1.1 404 Nope\r\nContent-Length: 2\r\n\r\nno", &mut ev)
            .unwrap();
        assert_eq!(
            ev,
            [
                HttpEvent::FirstByte(ReqToken(1)),
                HttpEvent::Done {
                    token: ReqToken(1),
                    status: 404,
                    body_bytes: 2,
                    close: false
                }
            ]
        );
    }
}
