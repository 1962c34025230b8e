//! The HTTP/1.x layer: one request at a time on a connection (capacity 1; keep-alive sends the
//! next when the response is in), its bytes the mix's prebuilt `Request::h1`, its response read
//! by the incremental `load::http::ResponseParser`.

use super::{HttpError, HttpEvent, HttpLayer, ReqToken, Request};
use crate::load::http::{BadResponse, Progress, ResponseParser};
use std::sync::Arc;

/// One connection's HTTP/1.x state.
#[derive(Default)]
pub struct Http1 {
    /// The request in flight (None between requests).
    token: Option<ReqToken>,
    request: Option<Arc<[u8]>>,
    /// Bytes of it written.
    sent: usize,
    saw_first_byte: bool,
    parser: ResponseParser,
}

impl Http1 {
    fn unsent(&self) -> &[u8] {
        match &self.request {
            Some(r) => &r[self.sent..],
            None => &[],
        }
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
        self.parser.reset();
    }

    fn output(&self) -> &[u8] {
        self.unsent()
    }

    fn consumed(&mut self, n: usize) {
        self.sent += n;
    }

    fn feed(&mut self, bytes: &[u8], events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        // Bytes before the request is all out, or after its response: stray, dropped.
        let Some(token) = self.token.filter(|_| self.unsent().is_empty()) else {
            return Ok(());
        };
        if !self.saw_first_byte {
            self.saw_first_byte = true;
            events.push(HttpEvent::FirstByte(token));
        }
        match self.parser.feed(bytes) {
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
        match self.parser.eof() {
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
