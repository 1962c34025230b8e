//! One connection's state machine: its slab entry (`Conn`, its `Phase` and `Role`), the
//! attempt (socket, bind, connect, the request sent with the connect when the handshake is
//! already done), its readiness events, its failures counted (as a connection's or a
//! request's, by the phase it failed in), and its end.
//!
//! The stages of a connection are explicit phases: `Connecting` -> (over TLS `Handshaking`) ->
//! (established) -> a request (`Sending` -> `Receiving`) -> `Idle` between requests on a
//! kept-alive connection, or `Pooled` between the scheduled requests of a pool connection, or
//! `Draining` for the server's FIN after an HTTP/1.0 response.
//!
//! This is the driver of the connection's layers (see `layers`): it opens the transport,
//! moves the security layer's handshake on from readiness and the timer, and hands the HTTP
//! layer's bytes to the socket (through the security layer) and the socket's bytes to it.

use super::classes::NO_CLASS;
use super::layers::tcp::{self, OpenError};
use super::layers::{AlpnRefused, Http, HttpLayer, SecError, Security, Wire};
use super::streams::Stream;
use super::Engine;
use crate::load::protocol::WorkerNotice;
use crate::metrics::hist::record;
use crate::model::BadReason;
use crate::sys::client_io::{self as io, ConnectStart, Errno, SockError, TcpSocket};
use crate::tls::client::HandshakeFailure;
use std::os::fd::AsFd;

/// The words for a TLS session that broke under a response.
const TLS_BROKE: &str = "the TLS session broke after the handshake (a bad record, or an alert)";

/// Pause before retrying after the kernel refused a socket or a port (EMFILE, EADDRNOTAVAIL).
const RESOURCE_BACKOFF_NS: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Free,
    Connecting,
    /// Connected; the TLS handshake is under way (still `connecting` in the counts).
    Handshaking,
    /// A request is going out (counted in `requests` from when it was set up).
    Sending,
    /// The request is out; its response is coming.
    Receiving,
    /// HTTP/1.0 response complete; waiting for the server's FIN so TIME_WAIT stays on its side.
    Draining,
    /// Kept alive between requests (a closed client thinking, a response just in).
    Idle,
    /// Idle in the pool of persistent connections, for the next scheduled request.
    Pooled,
    /// A multiplexed connection, ready: its requests (0 or more) run side by side (`streams`).
    Streams,
}

impl Phase {
    /// A request is in flight on the connection.
    pub(super) fn in_request(self) -> bool {
        matches!(self, Phase::Sending | Phase::Receiving)
    }
}

/// What a connection is for: what starts it and what follows its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// An S-Client slot's or an open arrival's connection: its own request(s), then closed.
    Attempt,
    /// A closed-loop client's: the client thinks and goes again when it ends.
    Client,
    /// A connection of the persistent pool: scheduled requests are sent on it while idle;
    /// reopened when it ends.
    Pool,
}

/// Why a connection ended before its time, counted as the connection's error while it was
/// connecting and as its request's error while a request was in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Sys(Errno),
    /// T passed before the handshake completed.
    ConnectTimeout,
    /// The response timeout passed with the request in flight.
    ResponseTimeout,
    /// Not HTTP, or closed before the response was complete: why, and the parser's words
    /// (static: counting one allocates nothing).
    BadResponse(BadReason, &'static str),
    /// The handshake timeout passed with the TLS handshake under way.
    HandshakeTimeout,
    /// TLS failed: in the handshake, a connection error of its kind; after it, the request's
    /// bad response.
    Tls(HandshakeFailure),
    /// The handshake agreed another application protocol than the HTTP layer's (ALPN).
    Alpn,
}

/// Readiness a connection waits for once its request is out; `EV_OUT` is added while a request
/// still has bytes to send.
pub(super) const EV_RESPONSE: u32 = io::EV_IN | io::EV_RDHUP | io::EV_ET;

/// A connection's timer when it has none (an idle pool connection).
pub(super) const NO_DEADLINE: u64 = u64::MAX;

/// Whether to send the request right after connect(): kept up while it works (loopback), and
/// on a path where handshakes take a round trip (the lab's), tried only every 64th attempt,
/// so a send that finds SYN_SENT costs almost nothing.
#[derive(Debug)]
pub(super) struct EarlySend {
    score: i32,
    attempts: u32,
}

impl Default for EarlySend {
    fn default() -> Self {
        EarlySend {
            score: 4,
            attempts: 0,
        }
    }
}

impl EarlySend {
    fn try_now(&mut self) -> bool {
        self.attempts = self.attempts.wrapping_add(1);
        self.score > 0 || self.attempts.is_multiple_of(64)
    }
    fn hit(&mut self) {
        self.score = (self.score + 1).min(16);
    }
    fn missed(&mut self) {
        self.score = (self.score - 4).max(0);
    }
}

pub(super) struct Conn {
    pub(super) sock: Option<TcpSocket>,
    pub(super) gen: u32,
    pub(super) phase: Phase,
    pub(super) role: Role,
    /// Scheduled start of the current request (the attempt's for the first one), ns.
    pub(super) sched_ns: u64,
    /// When the current request was set up to be sent, ns (a pool request's service time is
    /// counted from here).
    pub(super) sent_ns: u64,
    /// When the current stage times out (`NO_DEADLINE`: never).
    pub(super) deadline_ns: u64,
    /// The time of this connection's entry in the timer heap (0: none); one entry per
    /// connection, moved on lazily when the deadline moved later.
    pub(super) timer_at: u64,
    /// The mix entry of the current request (before the first: the one it was opened for).
    pub(super) req: u16,
    /// The class of the request it was opened for (`NO_CLASS`: a pool's connection).
    pub(super) class: u16,
    /// Requests begun on this connection (the current one's token).
    pub(super) requests: u32,
    /// Registered for EPOLLOUT (not when the request went out with the connect).
    pub(super) out_armed: bool,
    /// When its handshake began (the connect's end), ns.
    pub(super) handshake_ns: u64,
    /// Its security layer (None: plaintext).
    pub(super) sec: Option<Box<dyn Security>>,
    /// Its HTTP layer.
    pub(super) http: Http,
    /// Its layer is multiplexed: requests run per token (`streams`), not by phase.
    pub(super) mux: bool,
    /// A multiplexed connection's own state, boxed on the slot's first multiplexed
    /// connection and kept for its next ones: an HTTP/1.x slot (one per socket in flight,
    /// 20,000 for as many sockets) carries 8 bytes for it, not ~60.
    mx: Option<Box<Mux>>,
}

/// What a multiplexed connection keeps beside its layer (`streams`).
#[derive(Debug, Default)]
pub(super) struct Mux {
    /// Its requests in flight.
    pub(super) streams: Vec<Stream>,
    /// A pool connection's free streams offered to the pool as idle places.
    pub(super) offered: u32,
    /// The peer said its settings (the setup is done).
    pub(super) settled: bool,
    /// When it became usable (connected, secured), ns: its streams' latency split is taken
    /// from here (`stream_split`).
    pub(super) ready_ns: u64,
    /// A closed client's connection: when each of its streams thinking goes again, ns (each
    /// stream is a client; see `streams`).
    pub(super) thinks: Vec<u64>,
}

impl Conn {
    /// Its multiplexed state, boxed on first use.
    pub(super) fn mx(&mut self) -> &mut Mux {
        self.mx.get_or_insert_with(Box::default)
    }

    /// Its multiplexed requests in flight (none on an HTTP/1.x connection).
    pub(super) fn streams(&self) -> &[Stream] {
        self.mx.as_deref().map_or(&[], |m| &m.streams)
    }

    /// Its multiplexed state, if it ever had one.
    pub(super) fn mux_state(&self) -> Option<&Mux> {
        self.mx.as_deref()
    }

    pub(super) fn free() -> Conn {
        Conn {
            sock: None,
            gen: 0,
            phase: Phase::Free,
            role: Role::Attempt,
            sched_ns: 0,
            sent_ns: 0,
            deadline_ns: NO_DEADLINE,
            timer_at: 0,
            req: 0,
            class: NO_CLASS,
            requests: 0,
            out_armed: false,
            handshake_ns: 0,
            sec: None,
            http: Http::H1(Default::default()),
            mux: false,
            mx: None,
        }
    }

    /// Its socket (a connection past `Free` always has one).
    pub(super) fn sock(&self) -> &TcpSocket {
        self.sock.as_ref().expect("a live connection has a socket")
    }

    /// When its timer entry should next be due: its deadline, or its layer's timer if sooner.
    pub(super) fn next_wake_ns(&self) -> u64 {
        match &self.http {
            Http::Other(l) => l
                .next_timer_ns()
                .map_or(self.deadline_ns, |t| t.min(self.deadline_ns)),
            Http::H1(_) => self.deadline_ns,
        }
    }

    /// Drops its socket and layers.
    pub(super) fn clear(&mut self) {
        self.sock = None;
        if let Http::Other(l) = &mut self.http {
            // A layer that is its own transport (QUIC) lets its connection go.
            l.close();
        }
        if let Some(s) = self.sec.as_mut() {
            if self.phase == Phase::Handshaking {
                s.abandon();
            }
        }
        self.sec = None;
        self.phase = Phase::Free;
    }
}

impl Engine {
    /// Opens a socket and starts a non-blocking connect whose scheduled start was `sched`.
    /// Its first request (and so its class) is picked here, so an attempt that never
    /// connects still counts in the class it was for; a pool's connection has none.
    pub(super) fn start_attempt(&mut self, sched: u64, now: u64, role: Role) {
        let req = if role == Role::Pool {
            0
        } else {
            self.pick_request()
        };
        let class = if role == Role::Pool {
            NO_CLASS
        } else {
            self.class_of_req(req)
        };
        self.count(class, |c| c.attempts += 1);
        if let Some(ep) = self.layers.quic.clone() {
            return self.quic_start_attempt(ep, sched, now, role, req, class);
        }
        let source = (!self.cfg.bind_addrs.is_empty()).then(|| {
            let ip = self.cfg.bind_addrs[self.bind_next % self.cfg.bind_addrs.len()];
            self.bind_next = self.bind_next.wrapping_add(1);
            ip
        });
        let (sock, started) = match tcp::open(&self.target, source) {
            Ok(x) => x,
            Err(OpenError::Bind(e)) if e.kind() == SockError::AddrNotAvail => {
                // Not a port shortage: the source address is not on this host.
                self.count(class, |c| c.connect_other_errors += 1);
                if !self.report.told_bind {
                    self.report.told_bind = true;
                    let addr = source.expect("a bind error has a source address");
                    self.report
                        .notices
                        .push(WorkerNotice::BindUnavailable { addr });
                }
                return self.attempt_failed(None, now, role, class);
            }
            Err(OpenError::Socket(e) | OpenError::Bind(e) | OpenError::Connect(e)) => {
                return self.attempt_failed(Some(e), now, role, class)
            }
        };
        let idx = self.alloc();
        let key = self.key(idx);
        let c = &mut self.slab[idx];
        c.sock = Some(sock);
        c.role = role;
        c.sched_ns = sched;
        c.deadline_ns = now;
        c.requests = 0;
        c.req = req as u16;
        c.class = class;
        c.phase = Phase::Connecting;
        self.layers.renew_http(&mut c.http);
        c.mux = c.http.multiplexed();
        if c.mux {
            // Many requests share the connection: one written while another's bytes are not
            // yet acknowledged must not wait for that ACK (Nagle: up to a round trip), as
            // h2load and browsers set.
            let _ = c.sock().set_nodelay();
        }
        if let Some(m) = c.mx.as_deref_mut() {
            m.offered = 0;
            m.settled = false;
            m.thinks.clear();
        }
        self.connecting_step(class, true);
        if role == Role::Pool {
            self.sched.pool.open += 1;
        }
        // A pool connection has no request of its own to send with the connect, nor has one
        // whose handshake comes first.
        if started == ConnectStart::InProgress
            && role != Role::Pool
            && !self.layers.secure()
            && self.slab[idx].http.sends_h1_first()
            && self.early.try_now()
            && self.send_with_connect(idx, now)
        {
            return;
        }
        // Edge-triggered and registered once: no epoll_ctl MOD between connect, send and receive.
        let added = self
            .epoll
            .add(self.slab[idx].sock().as_fd(), EV_RESPONSE | io::EV_OUT, key);
        if let Err(e) = added {
            return self.fail(idx, Failure::Sys(e), now);
        }
        self.slab[idx].out_armed = true;
        if started == ConnectStart::Connected {
            self.on_established(idx, now);
        } else {
            // A simple client (seed 000 §3) has no short timeout T: it waits out the kernel's
            // own SYN retransmissions (exponential backoff), bounded by the response timeout.
            // That is why closed-loop load cannot push past the server's capacity.
            let wait = if role == Role::Client {
                self.cfg.response_timeout_s
            } else {
                self.cfg.timeout_s
            };
            let deadline = now + (wait * 1e9) as u64;
            self.arm(idx, deadline);
        }
    }

    /// A socket, bind or connect call failed before the connection existed: a connection
    /// error of `class` (`e` None: already counted by the caller).
    pub(super) fn attempt_failed(&mut self, e: Option<Errno>, now: u64, role: Role, class: u16) {
        if let Some(e) = e {
            self.count_connection_error(Failure::Sys(e), class);
            if matches!(
                e.kind(),
                SockError::OutOfFds | SockError::AddrNotAvail | SockError::OutOfMemory
            ) {
                self.sched.backoff_until_ns = now + RESOURCE_BACKOFF_NS;
            }
        }
        match role {
            Role::Client => self.client_done(now.max(self.sched.backoff_until_ns)),
            Role::Pool => self.pool_reconnect_later(now),
            Role::Attempt => {}
        }
    }

    fn count_connection_error(&mut self, f: Failure, class: u16) {
        match f {
            Failure::ConnectTimeout => self.count(class, |s| s.connect_timeouts += 1),
            Failure::Sys(e) => match e.kind() {
                SockError::Refused | SockError::Reset => self.count(class, |s| s.refused += 1),
                SockError::TimedOut => self.count(class, |s| s.connect_timeouts += 1),
                SockError::AddrNotAvail => {
                    self.count(class, |s| s.addr_not_avail += 1);
                    if !self.report.told_ports {
                        self.report.told_ports = true;
                        self.report.notices.push(WorkerNotice::PortsExhausted);
                    }
                }
                SockError::OutOfFds => {
                    self.count(class, |s| s.out_of_fds += 1);
                    if !self.report.told_fds {
                        self.report.told_fds = true;
                        self.report.notices.push(WorkerNotice::OutOfFds);
                    }
                }
                _ => self.count(class, |s| s.connect_other_errors += 1),
            },
            Failure::HandshakeTimeout => self.count(class, |s| s.handshake_timeouts += 1),
            Failure::Tls(HandshakeFailure::Alert) => self.count(class, |s| s.tls_alerts += 1),
            Failure::Tls(HandshakeFailure::BadCertificate) => {
                self.count(class, |s| s.bad_certificates += 1)
            }
            Failure::Tls(HandshakeFailure::Protocol) => {
                self.count(class, |s| s.tls_protocol_errors += 1)
            }
            Failure::Alpn => self.count(class, |s| s.alpn_refused += 1),
            Failure::ResponseTimeout | Failure::BadResponse(..) => {
                unreachable!("a request's failure while connecting")
            }
        }
    }

    pub(super) fn count_request_error(&mut self, f: Failure, class: u16) {
        let bump: fn(&mut crate::model::Counters) = match f {
            Failure::ResponseTimeout => |s| s.response_timeouts += 1,
            Failure::BadResponse(why, words) => return self.count_bad_response(class, why, words),
            Failure::Sys(e) => match e.kind() {
                SockError::Reset => |s| s.resets += 1,
                SockError::TimedOut => |s| s.response_timeouts += 1,
                _ => |s| s.request_other_errors += 1,
            },
            // The TLS layer failing under a response (a bad record, an alert mid-stream).
            Failure::Tls(_) => return self.count_bad_response(class, BadReason::Tls, TLS_BROKE),
            Failure::ConnectTimeout | Failure::HandshakeTimeout | Failure::Alpn => {
                unreachable!("a connect or handshake failure with a request in flight")
            }
        };
        self.count(class, bump);
    }

    /// A bad response, counted by its reason (no allocation: a counter each); the first of
    /// each reason is said in a notice.
    fn count_bad_response(&mut self, class: u16, why: BadReason, words: &'static str) {
        self.count(class, |s| {
            s.bad_responses += 1;
            s.bad_by_reason.bump(why);
        });
        self.report.note_bad_response(why, words);
    }

    /// The connection failed: counted as its connect's error or its request's, by the phase it
    /// failed in (between requests a connection that ends is no one's error), then closed.
    pub(super) fn fail(&mut self, idx: usize, f: Failure, now: u64) {
        let phase = self.slab[idx].phase;
        match phase {
            Phase::Connecting | Phase::Handshaking => {
                self.count_connection_error(f, self.slab[idx].class)
            }
            Phase::Sending | Phase::Receiving => self.count_request_error(f, self.req_class(idx)),
            Phase::Streams => self.mux_failed(idx, f),
            Phase::Draining | Phase::Idle | Phase::Pooled | Phase::Free => {}
        }
        self.close(
            idx,
            now,
            matches!(phase, Phase::Connecting | Phase::Handshaking),
        );
    }

    pub(super) fn on_event(&mut self, key: u64, bits: u32, buf: &mut [u8]) {
        let idx = (key & 0xffff_ffff) as usize;
        if idx >= self.slab.len() || self.slab[idx].gen as u64 != key >> 32 {
            return; // the connection ended earlier in this batch
        }
        let now = self.now_ns();
        if self.slab[idx].phase == Phase::Connecting {
            if bits & (io::EV_ERR | io::EV_HUP) != 0 {
                let e = self.slab[idx].sock().pending_error();
                return self.fail(idx, Failure::Sys(e.unwrap_or(Errno::HANGUP)), now);
            }
            if bits & io::EV_OUT == 0 {
                return;
            }
            self.on_established(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        } else if self.slab[idx].phase == Phase::Handshaking {
            return self.handshake_step(idx, now);
        } else if self.slab[idx].phase == Phase::Sending && bits & (io::EV_OUT | io::EV_ERR) != 0 {
            self.send_more(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        } else if bits & io::EV_OUT != 0 && self.slab[idx].http.reads_between_requests() {
            // A multiplexed layer's own bytes, blocked earlier, go on.
            self.flush_layer(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        }
        let phase = self.slab[idx].phase;
        if matches!(
            phase,
            Phase::Receiving | Phase::Draining | Phase::Idle | Phase::Pooled | Phase::Streams
        ) && bits & (io::EV_IN | io::EV_RDHUP | io::EV_HUP | io::EV_ERR) != 0
        {
            self.read_ready(idx, bits, now, buf);
        }
    }

    /// The connect is done: over TLS the handshake begins, else the connection is ready.
    pub(super) fn on_established(&mut self, idx: usize, now: u64) {
        self.connected(idx, now);
        if self.layers.secure() {
            return self.begin_handshake(idx, now);
        }
        self.ready(idx);
        self.go(idx, now);
    }

    /// An established connection goes on to what it is for: a pool connection waits for a
    /// scheduled request, the others send their own.
    pub(super) fn go(&mut self, idx: usize, now: u64) {
        if self.slab[idx].mux {
            self.mux_ready(idx, now);
        } else if self.slab[idx].role == Role::Pool {
            self.pool_free(idx, now);
        } else {
            self.begin_request(idx, now);
        }
    }

    /// The connect completed: its time is recorded and an S-Client slot is free again (the
    /// handshake, if any, is handed on with the connection, as the request is).
    pub(super) fn connected(&mut self, idx: usize, now: u64) {
        let class = self.slab[idx].class;
        // The worker's gauge moves on to `handshaking`; a class's counts its handshake as
        // connecting until `ready` (or the handshake fails).
        self.report.connecting -= 1;
        self.slot_freed(idx, now);
        let sched = self.slab[idx].sched_ns;
        self.record_connect(class, now.saturating_sub(sched) / 1000);
    }

    /// The connection is established: ready for requests.
    pub(super) fn ready(&mut self, idx: usize) {
        let class = self.slab[idx].class;
        self.class_connect_done(class);
        self.report.active += 1;
        self.count(class, |c| c.established += 1);
    }

    /// Where the handshake completes inside connect() (loopback: the SYN-ACK is processed
    /// before connect returns), sends the first request at once and registers the socket
    /// without EPOLLOUT: one readiness event and its wake-up less per connection. A socket
    /// still in SYN_SENT answers EAGAIN and takes the usual path (false); true when the
    /// connection was dealt with here (its request sent, or it failed and is finished).
    pub(super) fn send_with_connect(&mut self, idx: usize, now: u64) -> bool {
        let req = self.slab[idx].req as usize;
        let n = match self.slab[idx].sock().send(&self.requests[req].h1) {
            Ok(n) => n,
            Err(e) if e.kind() == SockError::WouldBlock => {
                self.early.missed();
                return false;
            }
            Err(e) => {
                // Refused or reset during the handshake: the same count as from an epoll error.
                self.fail(idx, Failure::Sys(e), now);
                return true;
            }
        };
        self.early.hit();
        // Established when connect() returned, which is after `now` (taken before socket()).
        let t = self.now_ns();
        self.connected(idx, t);
        self.ready(idx);
        self.setup_request(idx, req, t);
        self.request_bytes_sent(idx, n);
        let whole = n == self.requests[req].h1.len();
        let mask = if whole {
            EV_RESPONSE
        } else {
            EV_RESPONSE | io::EV_OUT
        };
        let key = self.key(idx);
        if let Err(e) = self.epoll.add(self.slab[idx].sock().as_fd(), mask, key) {
            self.fail(idx, Failure::Sys(e), t);
            return true;
        }
        self.slab[idx].out_armed = !whole;
        true
    }

    /// Ends a connection that did not fail (its response is in, or it was idle).
    pub(super) fn finish(&mut self, idx: usize, now: u64) {
        debug_assert!(
            !self.slab[idx].phase.in_request(),
            "a connection with a request in flight ends through fail()"
        );
        self.close(idx, now, false);
    }

    /// Closes a connection and frees its slot; what follows depends on its role: a closed
    /// client thinks and goes again, a pool connection is reopened.
    pub(super) fn close(&mut self, idx: usize, now: u64, connect_failed: bool) {
        let (phase, role, deadline, class) = {
            let c = &self.slab[idx];
            (c.phase, c.role, c.deadline_ns, c.class)
        };
        match phase {
            Phase::Free => return,
            Phase::Connecting => {
                self.connecting_step(class, false);
                // A timed-out slot was due to reconnect at its deadline, not when we noticed.
                self.slot_freed(idx, deadline.min(now));
            }
            Phase::Handshaking => {
                self.report.handshaking -= 1;
                self.class_connect_done(class);
            }
            Phase::Pooled => {
                self.pool_left_idle(now);
                self.report.active -= 1;
            }
            Phase::Streams => {
                self.mux_closed(idx, now);
                self.report.active -= 1;
            }
            p => {
                if p.in_request() {
                    self.in_flight_step(self.req_class(idx), false);
                }
                self.report.active -= 1;
            }
        }
        self.slab[idx].clear();
        self.release(idx);
        match role {
            Role::Client => {
                let at = now + (self.cfg.think_s * 1e9) as u64;
                self.client_done(at);
            }
            Role::Pool => {
                self.sched.pool.open -= 1;
                if connect_failed {
                    self.pool_reconnect_later(now);
                }
            }
            Role::Attempt => {}
        }
        if phase == Phase::Streams {
            self.mux_carry_retries(now);
        }
    }
}

/// The security layer's driver: its handshake after the connect, timed on its own, counted
/// full or resumed and failed by kind, then the plaintext through it. A connection
/// handshaking is still `connecting` in the counts (not established until the handshake is
/// done) and `handshaking` in the gauges; its S-Client slot was freed when its connect
/// completed, so the offered rate of handshakes does not depend on the server either.
impl Engine {
    /// The connect is done: the handshake begins (its first flight goes out at once).
    fn begin_handshake(&mut self, idx: usize, now: u64) {
        let Some(layer) = self.layers.security() else {
            return;
        };
        self.report.handshaking += 1;
        self.slab[idx].phase = Phase::Handshaking;
        match layer {
            Ok(l) => self.slab[idx].sec = Some(l),
            Err(e) => return self.sec_failed(idx, e, now),
        }
        self.slab[idx].handshake_ns = now;
        let timeout = self.cfg.tls.as_ref().map_or(5.0, |t| t.handshake_timeout_s);
        self.arm(idx, now + (timeout * 1e9) as u64);
        self.handshake_step(idx, now);
    }

    /// Moves the handshake on as far as the socket allows.
    fn handshake_step(&mut self, idx: usize, now: u64) {
        let mut wire = Wire::default();
        let c = &mut self.slab[idx];
        let (Some(sock), Some(sec)) = (c.sock.as_ref(), c.sec.as_mut()) else {
            return;
        };
        let step = sec.handshake(sock, &mut wire);
        self.add_wire(wire);
        match step {
            Ok(None) => {}
            Ok(Some(resumed)) => self.handshake_done(idx, resumed, now),
            Err(e) => self.sec_failed(idx, e, now),
        }
    }

    fn handshake_done(&mut self, idx: usize, resumed: bool, now: u64) {
        if let Some(needed) = self.slab[idx].http.alpn() {
            let picked = self.slab[idx].sec.as_ref().and_then(|s| s.alpn());
            if picked.as_deref() != Some(needed) {
                let picked = picked.map_or("none".into(), |p| String::from_utf8_lossy(&p).into());
                let needed = String::from_utf8_lossy(needed).into();
                return self.sec_failed(idx, SecError::Alpn(AlpnRefused { needed, picked }), now);
            }
        }
        if resumed {
            self.report.stats.counts.handshakes_resumed += 1;
        } else {
            self.report.stats.counts.handshakes_full += 1;
        }
        let started = self.slab[idx].handshake_ns;
        record(
            &mut self.report.hists.handshake,
            now.saturating_sub(started) / 1000,
        );
        self.report.handshaking -= 1;
        self.ready(idx);
        // Established: the phase leaves `Handshaking` for whatever `go` makes it.
        self.slab[idx].phase = Phase::Idle;
        if self.slab[idx].role == Role::Pool && self.sec_flush(idx).is_err() {
            // Established and idle: its end is no one's error (as a pool connection the
            // server closes).
            return self.finish(idx, now);
        }
        self.go(idx, now);
    }

    /// The bytes a security layer moved, counted for the worker.
    pub(super) fn add_wire(&mut self, wire: Wire) {
        self.report.stats.counts.bytes_in += wire.bytes_in;
        self.report.stats.counts.bytes_out += wire.bytes_out;
    }

    /// Writes what the security layer holds: Ok(true) when all is out.
    pub(super) fn sec_flush(&mut self, idx: usize) -> Result<bool, Errno> {
        let mut wire = Wire::default();
        let c = &mut self.slab[idx];
        let (Some(sock), Some(sec)) = (c.sock.as_ref(), c.sec.as_mut()) else {
            return Ok(true);
        };
        let r = sec.flush(sock, &mut wire);
        self.add_wire(wire);
        r
    }

    /// A security layer failed the connection: counted by kind, its words said once per kind.
    pub(super) fn sec_failed(&mut self, idx: usize, e: SecError, now: u64) {
        let f = match e {
            SecError::Sys(e) => Failure::Sys(e),
            SecError::BadStream => Failure::BadResponse(BadReason::Tls, TLS_BROKE),
            SecError::Alpn(a) => {
                if !self.report.told_alpn {
                    self.report.told_alpn = true;
                    self.report.notices.push(WorkerNotice::AlpnRefused(a));
                }
                Failure::Alpn
            }
            SecError::Protocol { kind, words } => {
                let bit = 1u8 << (kind as u8);
                if let Some(words) = words.filter(|_| self.report.told_tls & bit == 0) {
                    self.report.told_tls |= bit;
                    // Its own line in run.log (not joined to other notices), and the reason a
                    // point whose every handshake failed gives.
                    self.report.tls_failure = Some(format!(
                        "{words} (counted in {})",
                        match kind {
                            HandshakeFailure::Alert => "tls_alerts",
                            HandshakeFailure::BadCertificate => "bad_certificates",
                            HandshakeFailure::Protocol => "tls_protocol_errors",
                        }
                    ));
                }
                Failure::Tls(kind)
            }
        };
        self.fail(idx, f, now)
    }
}

#[cfg(test)]
mod tests {
    use super::{Conn, EarlySend};

    /// A flood holds a slot per socket in flight (bench/load.sh's worker RSS: 20,000 of them):
    /// the slot stays within the 152 bytes it had before the connection was made of layers (447fcaa).
    #[test]
    fn a_connection_slot_stays_within_152_bytes() {
        let size = std::mem::size_of::<Conn>();
        assert!(size <= 152, "a connection slot is {size} bytes");
    }

    #[test]
    fn early_send_stays_on_while_it_works_and_backs_off_to_one_try_in_64() {
        let mut e = EarlySend::default();
        for _ in 0..100 {
            assert!(e.try_now());
            e.hit();
        }
        // A path with a real round trip: every try misses.
        let mut tries = 0;
        for _ in 0..640 {
            if e.try_now() {
                tries += 1;
                e.missed();
            }
        }
        assert!(tries <= 4 + 10, "{tries} tries in 640 attempts");
        // Back on a fast path, the periodic try finds it working again.
        for _ in 0..64 {
            if e.try_now() {
                e.hit();
            }
        }
        assert!(e.try_now());
    }
}
