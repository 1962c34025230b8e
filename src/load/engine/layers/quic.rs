//! The QUIC + HTTP/3 layer (issue 47): `crate::quic`'s sans-IO client as the transport, the
//! security and the HTTP layer of a worker's connections at once. One UDP socket per worker
//! (its fd in the engine's epoll under [`QUIC_KEY`]) carries every QUIC connection, told
//! apart by connection id; on readable the datagrams are fed (recvmmsg), the stack's earliest
//! timer is one more wake-up of the loop (`quic_timers`), and what the connections have to
//! send goes out once per loop turn, before the loop sleeps (sendmmsg, GSO where the kernel
//! has it). A QUIC connection is a slab entry with no socket of its own: `Connecting` until
//! its handshake is done (so the S-Client's D and T bound it as they bound a TCP connect, a
//! late one failing as a handshake timeout), then a multiplexed connection (`streams`) whose
//! requests are HTTP/3 requests on bidirectional streams, up to M at once.
//!
//! The client's events are the engine's per-token `HttpEvent`s (head, response, a stream
//! reset); its handshakes count as TLS's (full or resumed, 0-RTT among the resumed ones, the
//! resumed share exact by TLS's own schedule); its figures (handshakes by kind, Retry,
//! packets, bytes, losses, connection errors by kind) go out as each report's `quic` part.
//! HTTP/1.x connections never see any of this: the engine's hooks are one `Option` test per
//! loop turn.

use super::{HttpError, HttpEvent, HttpLayer, ReqToken, Request};
use crate::load::engine::conn::{Failure, Phase, Role};
use crate::load::engine::layers::{Http, SecError};
use crate::load::engine::Engine;
use crate::load::notice::WorkerNotice;
use crate::load::protocol::WorkerConfig;
use crate::quic::{ClientEvent, ClientOptions, ConnError, ConnId, QuicClient, QuicStats};
use crate::tls::client::HandshakeFailure;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Epoll data word of the worker's QUIC socket (slab keys never reach it: gen < u32::MAX - 1).
pub const QUIC_KEY: u64 = u64::MAX - 1;

/// The client's receive buffer asked for: a burst of handshakes answers with several
/// datagrams each, and the client must not be the one that drops them.
const CLIENT_RCVBUF: u32 = 4 << 20;

/// The worker's QUIC endpoint: the client, and which slab entry each connection is.
pub struct QuicEndpoint {
    pub client: QuicClient,
    /// The slab entry (slot, generation) of each connection.
    owners: HashMap<ConnId, (u32, u32)>,
    /// The run ends: connections closed now are not abandoned handshakes.
    ending: bool,
    /// The client's totals as of the last report.
    seen: QuicStats,
    /// Connection error kinds already said in a notice.
    told: Vec<ConnError>,
}

/// The endpoint as the connections' layers share it.
pub type SharedEndpoint = Rc<RefCell<QuicEndpoint>>;

impl QuicEndpoint {
    /// The worker's endpoint, from its TLS settings (HTTP/3 is always over TLS 1.3).
    pub fn new(cfg: &WorkerConfig) -> anyhow::Result<QuicEndpoint> {
        let Some(tls) = cfg.tls.as_ref() else {
            anyhow::bail!(
                "HTTP/3 runs over QUIC, which is always TLS 1.3: the worker needs its TLS settings"
            );
        };
        anyhow::ensure!(
            tls.version == crate::tls::TlsVersion::V13,
            "HTTP/3 runs over QUIC, which is TLS 1.3 only (got TLS {})",
            tls.version
        );
        let name = if tls.sni.is_empty() {
            cfg.target.ip().to_string()
        } else {
            tls.sni.clone()
        };
        let mut o = ClientOptions::new(cfg.target, &name, &tls.ca_pem);
        o.resumed = tls.resumed;
        o.early_data = tls.early_data;
        // The engine clocks the handshake itself (T, or the response timeout of a closed
        // client): the client's own deadline stays out of its way.
        o.handshake_timeout = Duration::from_secs_f64(cfg.duration_s.max(1.0) + 3600.0);
        o.idle_timeout = Duration::from_secs_f64(cfg.response_timeout_s.max(10.0));
        if !cfg.bind_addrs.is_empty() {
            let ip = cfg.bind_addrs[cfg.id as usize % cfg.bind_addrs.len()];
            o.local = Some(std::net::SocketAddr::new(ip, 0));
        }
        let client = QuicClient::new(o)?;
        // Best effort: without privilege the kernel caps it at rmem_max.
        let _ = client.socket().set_rcvbuf(CLIENT_RCVBUF);
        Ok(QuicEndpoint {
            client,
            owners: HashMap::new(),
            ending: false,
            seen: QuicStats::default(),
            told: Vec::new(),
        })
    }

    /// The client's counts since the last call.
    pub fn take_delta(&mut self) -> crate::quic::stats::QuicDelta {
        let now = self.client.stats();
        let d = crate::quic::stats::QuicDelta::between(&self.seen, &now);
        self.seen = now;
        d
    }
}

/// One QUIC connection's HTTP/3 as the engine's multiplexed layer: its capacity is M less
/// the requests it carries (none while the server's stream credit is used up), its requests
/// go to the shared client tagged with their tokens.
pub struct QuicLayer {
    ep: SharedEndpoint,
    /// None once closed.
    conn: Option<ConnId>,
    /// M: requests at once on the connection.
    max: u32,
}

impl HttpLayer for QuicLayer {
    fn capacity(&self) -> u32 {
        let Some(conn) = self.conn else {
            return 0;
        };
        let ep = self.ep.borrow();
        if !ep.client.usable(conn) || ep.client.blocked(conn) {
            return 0;
        }
        self.max.saturating_sub(ep.client.outstanding(conn) as u32)
    }

    fn start(&mut self, token: ReqToken, req: &Request) {
        if let Some(conn) = self.conn {
            let taken = self.ep.borrow_mut().client.request_tagged(
                conn,
                &req.path,
                token.0 as u64,
                Instant::now(),
            );
            // The driver asks only within `capacity`, which is 0 on a connection not usable.
            debug_assert!(taken, "a request on a QUIC connection that is not usable");
        }
    }

    fn output(&self) -> &[u8] {
        &[]
    }

    fn consumed(&mut self, _n: usize) {}

    fn feed(&mut self, _bytes: &[u8], _events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        Ok(())
    }

    fn eof(&mut self, _events: &mut Vec<HttpEvent>) -> Result<(), HttpError> {
        Ok(())
    }

    fn reads_between_requests(&self) -> bool {
        true
    }

    fn multiplexed(&self) -> bool {
        true
    }

    fn set_max_in_flight(&mut self, m: u32) {
        self.max = m.max(1);
    }

    fn close(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let mut ep = self.ep.borrow_mut();
        ep.owners.remove(&conn);
        // A connection given up before its handshake completed (T passed) is the client's
        // handshake timeout; at the run's end it is only closed.
        let why =
            (!ep.ending && !ep.client.established(conn)).then_some(ConnError::HandshakeTimeout);
        ep.client.close_as(conn, why, Instant::now());
    }
}

/// The failure a QUIC connection that closed before its handshake completed counts as, and
/// the words said once for its kind.
fn handshake_failure(e: Option<ConnError>) -> (Failure, Option<String>) {
    let proto = |kind, e: ConnError| {
        (
            Failure::Tls(kind),
            Some(format!("the QUIC handshake failed: {e}")),
        )
    };
    match e {
        None | Some(ConnError::HandshakeTimeout) => (Failure::HandshakeTimeout, None),
        // TLS alerts travel as QUIC's crypto error codes 0x100-0x1ff (RFC 9001 4.8).
        Some(e @ ConnError::Transport(c)) if (0x100..0x200).contains(&c) => {
            proto(HandshakeFailure::Alert, e)
        }
        Some(e @ ConnError::Local(c)) if (0x100..0x200).contains(&c) => {
            proto(HandshakeFailure::BadCertificate, e)
        }
        Some(e) => proto(HandshakeFailure::Protocol, e),
    }
}

/// How an established connection's open streams failed when it ended: an idle timeout is
/// the responses' timeout; a protocol breach the client found is the server's; any other end
/// (a stateless reset from a server that had dropped the connection, its refusal or close)
/// is the server closing before the responses were complete, as over TCP, not a breach.
fn streams_lost(e: Option<ConnError>) -> Failure {
    use crate::model::BadReason;
    match e {
        Some(ConnError::IdleTimeout) => Failure::ResponseTimeout,
        Some(ConnError::Local(_)) => Failure::BadResponse(
            BadReason::Protocol,
            "the QUIC connection closed with streams open",
        ),
        _ => Failure::BadResponse(
            BadReason::Closed,
            "the QUIC connection ended with streams open",
        ),
    }
}

impl Engine {
    /// The worker's QUIC endpoint, if it speaks HTTP/3.
    fn quic(&self) -> Option<SharedEndpoint> {
        self.layers.quic.clone()
    }

    /// Starts a QUIC connection for an attempt already counted (its first Initial leaves at
    /// the loop turn's flush).
    pub(in crate::load::engine) fn quic_start_attempt(
        &mut self,
        ep: SharedEndpoint,
        sched: u64,
        now: u64,
        role: Role,
        req: usize,
        class: u16,
    ) {
        let started = ep.borrow_mut().client.connect(Instant::now());
        let conn = match started {
            Ok(c) => c,
            Err(e) => {
                self.count(class, |c| c.connect_other_errors += 1);
                let mut ep = ep.borrow_mut();
                if !ep.told.contains(&ConnError::Local(u64::MAX - 1)) {
                    ep.told.push(ConnError::Local(u64::MAX - 1));
                    self.report.notices.push(WorkerNotice::QuicStart {
                        error: format!("{e:#}"),
                    });
                }
                drop(ep);
                return self.attempt_failed(None, now, role, class);
            }
        };
        let idx = self.alloc();
        let gen = self.slab[idx].gen;
        ep.borrow_mut().owners.insert(conn, (idx as u32, gen));
        let max = self.layers.streams.unwrap_or(1);
        let c = &mut self.slab[idx];
        c.sock = None;
        c.role = role;
        c.sched_ns = sched;
        c.deadline_ns = now;
        c.requests = 0;
        c.req = req as u16;
        c.class = class;
        c.phase = Phase::Connecting;
        c.handshake_ns = now;
        c.http = Http::Other(Box::new(QuicLayer {
            ep: ep.clone(),
            conn: Some(conn),
            max,
        }));
        c.mux = true;
        c.mx().offered = 0;
        c.mx().settled = false;
        self.connecting_step(class, true);
        if role == Role::Pool {
            self.sched.pool.open += 1;
        }
        // The handshake is the connect: T bounds it (a closed client waits its response
        // timeout, as over TCP).
        let wait = if role == Role::Client {
            self.cfg.response_timeout_s
        } else {
            self.cfg.timeout_s
        };
        self.arm(idx, now + (wait * 1e9) as u64);
        // With 0-RTT keys the connection takes requests now (they go as early data).
        if ep.borrow().client.usable(conn) {
            self.quic_usable(idx, now, false);
        }
    }

    /// The connection takes requests (handshake done, or 0-RTT keys): established. With
    /// 0-RTT it carries requests before its handshake is done (`settled` false until then),
    /// and is still connecting for the S-Client's D and the gauges.
    fn quic_usable(&mut self, idx: usize, now: u64, handshake_done: bool) {
        if handshake_done {
            self.connected(idx, now);
        } else {
            self.report.early += 1;
        }
        self.slab[idx].mx().settled = handshake_done;
        self.ready(idx);
        self.slab[idx].phase = Phase::Idle;
        self.go(idx, now);
    }

    /// A 0-RTT connection's handshake is done (or it ended before): it stops connecting.
    fn quic_settle(&mut self, idx: usize, now: u64) {
        if !self.slab[idx].mx().settled {
            self.slab[idx].mx().settled = true;
            self.report.early -= 1;
            self.connected(idx, now);
        }
    }

    /// The stack's timers that are due run (retransmissions, idle, pacing).
    pub(in crate::load::engine) fn quic_timers(&mut self) {
        let Some(ep) = self.quic() else {
            return;
        };
        let now = Instant::now();
        let due = ep
            .borrow_mut()
            .client
            .poll_timeout()
            .is_some_and(|t| t <= now);
        if due {
            ep.borrow_mut().client.handle_timeout(now);
            self.quic_events(&ep);
        }
    }

    /// When the stack's next timer is due, ns on the engine's clock.
    pub(in crate::load::engine) fn quic_next_ns(&self) -> Option<u64> {
        let ep = self.layers.quic.as_ref()?;
        let at = ep.borrow_mut().client.poll_timeout()?;
        Some(at.saturating_duration_since(self.start).as_nanos() as u64)
    }

    /// The socket is readable: its datagrams go to their connections, their events to the
    /// engine.
    pub(in crate::load::engine) fn quic_readable(&mut self) {
        let Some(ep) = self.quic() else {
            return;
        };
        let read = ep.borrow_mut().client.on_readable(Instant::now());
        if let Err(e) = read {
            self.quic_socket_error(&ep, e);
        }
        self.quic_events(&ep);
    }

    /// What the connections have to send goes out (before the loop sleeps).
    pub(in crate::load::engine) fn quic_flush(&mut self) {
        let Some(ep) = self.quic() else {
            return;
        };
        let sent = ep.borrow_mut().client.flush(Instant::now());
        if let Err(e) = sent {
            self.quic_socket_error(&ep, e);
        }
        // Closing connections may have finished.
        self.quic_events(&ep);
    }

    fn quic_socket_error(&mut self, ep: &SharedEndpoint, e: std::io::Error) {
        let mut ep = ep.borrow_mut();
        if !ep.told.contains(&ConnError::Local(u64::MAX)) {
            ep.told.push(ConnError::Local(u64::MAX));
            self.report.notices.push(WorkerNotice::QuicSocket {
                error: e.to_string(),
            });
        }
    }

    /// Acts on the client's events, each on the slab entry of its connection.
    fn quic_events(&mut self, ep: &SharedEndpoint) {
        loop {
            let ev = ep.borrow_mut().client.poll_event();
            let Some(ev) = ev else {
                return;
            };
            self.quic_event(ep, ev);
        }
    }

    fn quic_event(&mut self, ep: &SharedEndpoint, ev: ClientEvent) {
        let conn = match &ev {
            ClientEvent::Connected { conn, .. }
            | ClientEvent::Head { conn, .. }
            | ClientEvent::Response { conn, .. }
            | ClientEvent::StreamFailed { conn, .. }
            | ClientEvent::Ready { conn }
            | ClientEvent::Closed { conn, .. } => *conn,
        };
        let owner = ep.borrow().owners.get(&conn).copied();
        let Some((idx, gen)) = owner else {
            return; // a connection the engine already let go (closing)
        };
        let idx = idx as usize;
        if self.slab[idx].gen != gen || self.slab[idx].phase == Phase::Free {
            return;
        }
        let now = self.now_ns();
        let mut events = std::mem::take(&mut self.events);
        match ev {
            ClientEvent::Connected { kind, time, .. } => {
                let s = &mut self.report.stats.counts;
                if kind == crate::quic::HandshakeKind::Full {
                    s.handshakes_full += 1;
                } else {
                    s.handshakes_resumed += 1;
                }
                crate::metrics::hist::record(
                    &mut self.report.hists.handshake,
                    time.as_micros() as u64,
                );
                if self.slab[idx].phase == Phase::Connecting {
                    self.quic_usable(idx, now, true);
                } else {
                    self.quic_settle(idx, now);
                }
            }
            ClientEvent::Ready { .. } => {
                if self.slab[idx].phase == Phase::Streams {
                    self.mux_refill(idx, now);
                }
            }
            ClientEvent::Head { token, .. } => {
                events.push(HttpEvent::FirstByte(ReqToken(token as u32)));
                self.mux_events(idx, &mut events, now);
            }
            ClientEvent::Response {
                token,
                status,
                body_bytes,
                ..
            } => {
                events.push(HttpEvent::Done {
                    token: ReqToken(token as u32),
                    status,
                    body_bytes,
                    close: false,
                });
                self.mux_events(idx, &mut events, now);
            }
            ClientEvent::StreamFailed { token, .. } => {
                // HTTP/3 carries no REFUSED_STREAM of HTTP/2's kind: a stream that failed is
                // a reset (its code is not told apart: H3_REQUEST_REJECTED is rare).
                events.push(HttpEvent::Reset(ReqToken(token as u32), 0));
                self.mux_events(idx, &mut events, now);
            }
            ClientEvent::Closed { error, why, .. } => {
                // Gone from the client: the layer's close finds nothing left to close.
                ep.borrow_mut().owners.remove(&conn);
                self.quic_closed(ep, idx, (error, why), now);
            }
        }
        events.clear();
        self.events = events;
    }

    /// The connection ended on the server's word, the stack's timer or its own close.
    fn quic_closed(
        &mut self,
        ep: &SharedEndpoint,
        idx: usize,
        (error, why): (Option<ConnError>, Option<String>),
        now: u64,
    ) {
        if let Some(e) = error {
            let mut ep = ep.borrow_mut();
            if !ep.told.contains(&e) && e != ConnError::HandshakeTimeout {
                ep.told.push(e);
                let error = match why {
                    Some(w) => format!("{e} ({w:?})"),
                    None => e.to_string(),
                };
                self.report
                    .notices
                    .push(WorkerNotice::QuicConnEnd { error });
            }
        }
        if self.slab[idx].phase != Phase::Connecting {
            self.quic_settle(idx, now);
        }
        match self.slab[idx].phase {
            Phase::Connecting => {
                let (f, words) = handshake_failure(error);
                match (f, words) {
                    (Failure::Tls(kind), words) => {
                        self.sec_failed(idx, SecError::Protocol { kind, words }, now)
                    }
                    (f, _) => self.fail(idx, f, now),
                }
            }
            Phase::Streams if !self.slab[idx].streams().is_empty() => {
                self.fail(idx, streams_lost(error), now)
            }
            _ => self.finish(idx, now),
        }
    }

    /// Before a report: the client's counts since the last one (None over TCP).
    pub(in crate::load::engine) fn quic_report(&mut self) -> Option<crate::quic::stats::QuicDelta> {
        let ep = self.quic()?;
        let d = ep.borrow_mut().take_delta();
        // The wire's bytes, as TCP's are counted.
        let s = &mut self.report.stats.counts;
        s.bytes_in += d.bytes_received;
        s.bytes_out += d.bytes_sent;
        Some(d)
    }

    /// The run ends: what is closed now is closed, not abandoned.
    pub(in crate::load::engine) fn quic_ending(&mut self) {
        if let Some(ep) = self.quic() {
            let mut ep = ep.borrow_mut();
            ep.ending = true;
            // Tickets are of no use past the run: the closes go out with the others.
            ep.client.stop_waiting_for_tickets(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::BadReason;

    /// A lesson's flood ended with connections the server had dropped meanwhile: their
    /// stateless resets were counted as the server breaking the protocol.
    #[test]
    fn streams_lost_to_a_reset_or_a_close_are_closed_early_not_a_breach() {
        let reason = |e| match streams_lost(e) {
            Failure::BadResponse(r, _) => Some(r),
            _ => None,
        };
        for e in [
            ConnError::StatelessReset,
            ConnError::Refused,
            ConnError::Transport(0x9),
            ConnError::Application(0x100),
        ] {
            assert_eq!(reason(Some(e)), Some(BadReason::Closed), "{e}");
        }
        assert_eq!(reason(None), Some(BadReason::Closed));
        assert_eq!(
            reason(Some(ConnError::Local(0x7))),
            Some(BadReason::Protocol)
        );
        assert_eq!(
            streams_lost(Some(ConnError::IdleTimeout)),
            Failure::ResponseTimeout
        );
    }
}
