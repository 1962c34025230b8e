//! The connection's layers and the seam the engine drives them through.
//!
//! A connection is a transport (`tcp`: a non-blocking TCP socket; UDP for QUIC next), an
//! optional security layer (`Security`: none, or `tls`) and an HTTP layer (`HttpLayer`:
//! `http1` now). Each layer is a state machine with no socket loop of its own: the engine's
//! connection driver (`conn`, `exchange`) owns the socket, the epoll registration and the
//! timer, and moves the layers on from readiness and timers; the layers answer in bytes to
//! write and in events keyed by a request token. The scheduler (arrivals, S-Client slots, the
//! pool, closed clients), the timeouts, the counting and the reporting see only those events,
//! so a new protocol is a new layer in its own module plus one line in [`Layers::of`].
//!
//! The HTTP seam is the multiplexed one: a layer reports how many requests it takes at once
//! (`capacity`: HTTP/1.x keep-alive is 1, HTTP/2 the streams free under min(M, the server's
//! max concurrent streams)), takes requests by token, and reports per token (first byte, done
//! with status and bytes, refused, reset, not processed) and per connection (going away with
//! the last token it will answer, the peer's limit); it may have bytes to write that belong
//! to no request (HTTP/2 SETTINGS, WINDOW_UPDATE, PING acks) and timers of its own. A layer
//! that says it is `multiplexed` is driven per token (`streams`: each request its own record,
//! its scheduled time, class and response timeout, on one connection that stays established
//! between them); the others one request at a time (HTTP/1.x, the test's line protocol).
//! Nothing in the driver is HTTP/2's: a QUIC/HTTP/3 layer is driven the same way.

pub mod http1;
pub mod http2;
pub mod quic;
pub mod tcp;
pub mod tls;

use crate::load::protocol::WorkerConfig;
use crate::model::BadReason;
use crate::sys::client_io::{Errno, TcpSocket};
use crate::tls::client::{HandshakeFailure, TlsClient};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// A request on one connection: the connection's count of requests begun when it started
/// (unique per connection, so per-request events name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReqToken(pub u32);

/// One request of the mix, in the forms the HTTP layers take: the target and authority (for a
/// layer that encodes its own head, as HTTP/2's HPACK does) and the HTTP/1.x bytes, built once.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub authority: String,
    pub h1: Arc<[u8]>,
    /// Over TLS (a layer that names its scheme, as HTTP/2's `:scheme`, says https).
    pub secure: bool,
}

/// What an HTTP layer says about its requests and its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpEvent {
    /// The first byte of the response to this request arrived.
    FirstByte(ReqToken),
    /// The response is complete.
    Done {
        token: ReqToken,
        status: u16,
        body_bytes: u64,
        /// The server closes the connection after it (HTTP/1.0, `Connection: close`).
        close: bool,
    },
    /// The server refused the request before processing it (HTTP/2 REFUSED_STREAM): it may be
    /// sent again on another connection.
    Refused(ReqToken),
    /// The request was reset after it began (HTTP/2 RST_STREAM with another code: its
    /// number).
    Reset(ReqToken, u32),
    /// The server goes away: requests after `last` (all, when None) will not be answered.
    GoingAway { last: Option<ReqToken> },
    /// A request after a going-away's `last`: not processed, so it may be sent again.
    Unprocessed(ReqToken),
    /// The peer's limit of requests at once on this connection (None: none), as it said it.
    Limit(Option<u32>),
}

/// A multiplexed layer's counts of its own, taken (and zeroed) by the driver: the header
/// bytes on the wire and as HTTP/1.1 lines (the compression's saving), the flow-control
/// stalls and their time, the PINGs answered.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MuxCounts {
    pub header_wire: u64,
    pub header_plain: u64,
    pub flow_stalls: u64,
    pub flow_stall_us: u64,
    pub pings: u64,
}

/// Why an HTTP layer gave up on the connection's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpError {
    /// The bytes are not a response of this protocol (or the stream ended in the middle of one):
    /// a multiplexed protocol's words (counted as [`BadReason::Protocol`]).
    Invalid(&'static str),
    /// The HTTP/1.x parser's reason.
    Parse(crate::load::http::BadResponse),
}

impl HttpError {
    /// The reason it is counted under (`bad_by_reason`).
    pub fn reason(self) -> BadReason {
        use crate::load::http::BadResponse as B;
        match self {
            HttpError::Invalid(_) => BadReason::Protocol,
            HttpError::Parse(B::StatusLine | B::StatusCode) => BadReason::NotHttp,
            HttpError::Parse(B::HeadTooLong) => BadReason::HeadTooLong,
            HttpError::Parse(B::ClosedBeforeAnyByte | B::ClosedMidResponse) => BadReason::Closed,
            HttpError::Parse(
                B::ContentLength
                | B::ChunkSize
                | B::ChunkSizeTooLarge
                | B::ChunkLineTooLong
                | B::ChunkEnd,
            ) => BadReason::Framing,
        }
    }

    /// What the parser said, in its own words.
    pub fn words(self) -> &'static str {
        match self {
            HttpError::Invalid(w) => w,
            HttpError::Parse(b) => b.words(),
        }
    }
}

/// An HTTP layer: requests in, bytes out; bytes in, events out. Sans-IO: it never touches a
/// socket, so the engine keeps owning its sockets, buffers and timers.
pub trait HttpLayer {
    /// Requests it takes in flight at once now.
    fn capacity(&self) -> u32;
    /// Begins a request; its bytes join [`Self::output`].
    fn start(&mut self, token: ReqToken, req: &Request);
    /// Bytes it wants written now (requests, and frames of its own).
    fn output(&self) -> &[u8];
    /// `n` bytes of [`Self::output`] were written.
    fn consumed(&mut self, n: usize);
    /// Bytes received; what they completed is pushed to `events`.
    fn feed(&mut self, bytes: &[u8], events: &mut Vec<HttpEvent>) -> Result<(), HttpError>;
    /// The peer ended the byte stream.
    fn eof(&mut self, events: &mut Vec<HttpEvent>) -> Result<(), HttpError>;
    /// Whether bytes between requests are the protocol's own (read and fed) rather than
    /// stray bytes after a response (read and dropped).
    fn reads_between_requests(&self) -> bool {
        false
    }
    /// Whether the first request's bytes are its `Request::h1` as is, so the driver may send
    /// them with the connect (before the layer is told, saving a wake-up on loopback).
    fn sends_h1_first(&self) -> bool {
        false
    }
    /// When the layer's own next timer is due, ns (PING, idle), if it has one.
    fn next_timer_ns(&self) -> Option<u64> {
        None
    }
    /// Its timer is due.
    fn on_timer(&mut self, _now: u64, _events: &mut Vec<HttpEvent>) {}
    /// Whether requests run side by side (driven per token; see the module's words).
    fn multiplexed(&self) -> bool {
        false
    }
    /// The ALPN protocol it needs over TLS (None: any; the TLS layer offers it first).
    fn alpn(&self) -> Option<&'static [u8]> {
        None
    }
    /// A live change of the most requests at once it may carry (M).
    fn set_max_in_flight(&mut self, _m: u32) {}
    /// Adds its counts since the last call to `into`.
    fn take_counts(&mut self, _into: &mut MuxCounts) {}
    /// The connection ends: a layer that is its own transport (QUIC) lets it go.
    fn close(&mut self) {}
}

/// The HTTP layer of a connection: HTTP/1.x inline (the hot path: no indirect call, and an
/// allocation per slot, not per connection), any other behind the trait.
pub enum Http {
    H1(http1::Http1),
    Other(Box<dyn HttpLayer>),
}

macro_rules! each {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            Http::H1($l) => $e,
            Http::Other($l) => $e,
        }
    };
}

impl HttpLayer for Http {
    fn capacity(&self) -> u32 {
        each!(self, l => l.capacity())
    }
    fn start(&mut self, token: ReqToken, req: &Request) {
        each!(self, l => l.start(token, req))
    }
    fn output(&self) -> &[u8] {
        each!(self, l => l.output())
    }
    fn consumed(&mut self, n: usize) {
        each!(self, l => l.consumed(n))
    }
    fn feed(&mut self, bytes: &[u8], events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        each!(self, l => l.feed(bytes, events))
    }
    fn eof(&mut self, events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        each!(self, l => l.eof(events))
    }
    fn reads_between_requests(&self) -> bool {
        each!(self, l => l.reads_between_requests())
    }
    fn sends_h1_first(&self) -> bool {
        each!(self, l => l.sends_h1_first())
    }
    fn next_timer_ns(&self) -> Option<u64> {
        each!(self, l => l.next_timer_ns())
    }
    fn on_timer(&mut self, now: u64, events: &mut Vec<HttpEvent>) {
        each!(self, l => l.on_timer(now, events))
    }
    fn multiplexed(&self) -> bool {
        match self {
            Http::H1(_) => false,
            Http::Other(l) => l.multiplexed(),
        }
    }
    fn alpn(&self) -> Option<&'static [u8]> {
        each!(self, l => l.alpn())
    }
    fn set_max_in_flight(&mut self, m: u32) {
        each!(self, l => l.set_max_in_flight(m))
    }
    fn take_counts(&mut self, into: &mut MuxCounts) {
        each!(self, l => l.take_counts(into))
    }
    fn close(&mut self) {
        each!(self, l => l.close())
    }
}

/// Bytes a security layer moved over the wire in one call (counted by the engine).
#[derive(Debug, Default, Clone, Copy)]
pub struct Wire {
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Why a security layer failed the connection.
#[derive(Debug)]
pub enum SecError {
    Sys(Errno),
    /// The protocol failed: its kind, and the words a user reads (said once per kind; None:
    /// the count says it all).
    Protocol {
        kind: HandshakeFailure,
        words: Option<String>,
    },
    /// The plaintext stream broke after the handshake (a bad response, as the server's).
    BadStream,
    /// The server's ALPN choice is not the protocol the HTTP layer speaks (it picked
    /// `http/1.1`, or none, where HTTP/2 needs `h2`).
    Alpn(AlpnRefused),
}

pub use crate::load::notice::AlpnRefused;

/// What a security layer's read gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecRead {
    /// `n` bytes of plaintext in the buffer.
    Data(usize),
    /// Nothing more now.
    WouldBlock,
    /// The peer closed (the session, or the connection).
    Eof,
}

/// A security layer between the transport and the HTTP layer (TLS): a handshake after the
/// connect, then plaintext through it. Sans-IO but for the socket handed to each call.
pub trait Security {
    /// Moves the handshake on as far as the socket allows: Ok(Some(resumed)) once it is done.
    fn handshake(&mut self, sock: &TcpSocket, wire: &mut Wire) -> Result<Option<bool>, SecError>;
    /// Takes plaintext to send (all of it) and writes what it can: Ok(true) when all is out,
    /// Ok(false) when the socket is full (EPOLLOUT says when to [`Self::flush`]).
    fn send(&mut self, sock: &TcpSocket, plain: &[u8], wire: &mut Wire) -> Result<bool, Errno>;
    /// Writes what it holds: Ok(true) when all is out.
    fn flush(&mut self, sock: &TcpSocket, wire: &mut Wire) -> Result<bool, Errno>;
    /// The next plaintext into `buf`, reading from the socket as needed.
    fn recv(
        &mut self,
        sock: &TcpSocket,
        buf: &mut [u8],
        wire: &mut Wire,
    ) -> Result<SecRead, SecError>;
    /// The connection ends with the handshake unfinished (failed, timed out, the run's end).
    fn abandon(&mut self);
    /// The application protocol the handshake agreed (ALPN), once it is done.
    fn alpn(&self) -> Option<Vec<u8>> {
        None
    }
    /// The last [`Self::recv`] emptied the socket (a short read): what arrives later is a new
    /// edge (epoll ET), so the read that would only say EAGAIN may be saved.
    fn drained(&self) -> bool {
        false
    }
}

/// Which layers this worker's connections are made of: chosen once, here, from the config.
pub struct Layers {
    /// Over TLS, the worker's TLS client (configs, sessions, the resumption schedule), shared
    /// with each connection's layer.
    tls: Option<Rc<RefCell<TlsClient>>>,
    /// Makes a connection's HTTP layer, given M (None: HTTP/1.x).
    pub http: fn(Option<u32>) -> Http,
    /// Over HTTP/2 and HTTP/3, the streams per connection (M; a live knob); None: HTTP/1.x.
    pub streams: Option<u32>,
    /// Over HTTP/3, the worker's QUIC endpoint (its one UDP socket carries every connection;
    /// see `quic`): the transport, TLS and HTTP of each connection at once.
    pub quic: Option<quic::SharedEndpoint>,
}

impl Layers {
    /// The one place the layers are chosen (a new protocol: a line here).
    pub fn of(cfg: &WorkerConfig) -> anyhow::Result<Layers> {
        if cfg.http3 {
            let ep = quic::QuicEndpoint::new(cfg)?;
            return Ok(Layers {
                tls: None,
                http: |_| Http::H1(http1::Http1::default()),
                streams: Some(cfg.streams.unwrap_or(1)),
                quic: Some(Rc::new(RefCell::new(ep))),
            });
        }
        let tls = match &cfg.tls {
            Some(t) => {
                let mut t = t.clone();
                // HTTP/2 over TLS offers h2 first (and http/1.1, so a server without it says
                // so by its choice rather than by a failed handshake).
                t.offer_h2 = cfg.streams.is_some();
                Some(Rc::new(RefCell::new(TlsClient::new(&t, cfg.target.ip())?)))
            }
            None => None,
        };
        Ok(Layers {
            tls,
            http: |streams| match streams {
                Some(m) => Http::Other(Box::new(http2::Http2::new(m))),
                None => Http::H1(http1::Http1::default()),
            },
            streams: cfg.streams,
            quic: None,
        })
    }

    /// A new connection's HTTP layer in the slot's `http`, which keeps what storage its
    /// previous one leaves (an HTTP/1.x parser's box: `http1`).
    pub fn renew_http(&self, http: &mut Http) {
        let mut new = (self.http)(self.streams);
        if let (Http::H1(old), Http::H1(h1)) = (&mut *http, &mut new) {
            h1.keep_storage_of(old);
        }
        *http = new;
    }

    /// Whether connections have a security layer (QUIC's TLS is its own).
    pub fn secure(&self) -> bool {
        self.tls.is_some() || self.quic.is_some()
    }

    /// A new connection's security layer (None: plaintext); Err when the layer could not
    /// begin (rustls refused our own config: counted as a protocol error).
    pub fn security(&self) -> Option<Result<Box<dyn Security>, SecError>> {
        let client = self.tls.as_ref()?;
        Some(tls::TlsLayer::start(client).map(|l| Box::new(l) as Box<dyn Security>))
    }

    /// The share of TLS handshakes that resume (a live knob).
    pub fn set_resumed(&self, share: f64) {
        if let Some(c) = &self.tls {
            c.borrow_mut().set_resumed(share);
        }
        if let Some(q) = &self.quic {
            q.borrow_mut().client.set_resumed(share);
        }
    }
}

#[cfg(test)]
mod tests;
