//! The QUIC + HTTP/3 client: quinn-proto's sans-IO endpoint driven from one UDP socket of
//! our own ([`crate::sys::udp_mmsg`]: batched reads and writes, GSO/GRO), its timers handed
//! out ([`QuicClient::poll_timeout`]) so the caller's loop (a thread's poll, an engine's timer
//! wheel) decides when to call back. Requests are GETs on bidirectional streams; responses
//! come back as [`ClientEvent`]s, the totals as [`QuicStats`].

use super::h3::{self, FrameReader, StreamFrame};
use super::stats::{ConnError, HandshakeKind, QuicStats};
use super::tls::{ClientTlsSet, Offer};
use crate::sys::udp_mmsg::{Datagrams, RecvBatch, UdpSock};
use bytes::BytesMut;
use quinn_proto::{
    ConnectionError, ConnectionHandle, Dir, Endpoint, EndpointConfig, Event, StreamEvent, StreamId,
    TransportErrorCode, VarInt,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use quinn_proto::ConnectionHandle as ConnId;

/// Transmits queued past this many wait for the socket before more are made.
const MAX_QUEUED: usize = 1024;

/// The least a closed connection waits for its session tickets (a busy machine's scheduling
/// delays, on loopback where the round trip is microseconds).
const TICKET_WAIT_MIN: Duration = Duration::from_millis(50);
/// Waits that ran out with no ticket ever received, after which the server is taken to send
/// none and closes stop waiting until one comes: the first connections wait too (before, a
/// connection waited only once a ticket had been seen, so every early connection whose
/// tickets came after its close made the next one full as well, a chain as long as the
/// machine was slow), and a server that sends none holds only this many closes.
const NO_TICKETS_AFTER: u32 = 3;

/// What a client connects to and how.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub server: SocketAddr,
    /// The name sent (SNI) and verified; also the requests' `:authority`.
    pub server_name: String,
    /// Trusted roots, PEM (the lab's CA).
    pub ca_pem: String,
    /// Share of handshakes that resume a stored session (exact, by schedule).
    pub resumed: f64,
    /// Share of the resumed handshakes that send their first request as 0-RTT data.
    pub early_data: f64,
    /// A connection not established after this long is closed as a handshake timeout.
    pub handshake_timeout: Duration,
    /// QUIC's idle timeout (both ends take the smaller one).
    pub idle_timeout: Duration,
    /// The local address to bind (None: an ephemeral port of the server's family).
    pub local: Option<SocketAddr>,
    /// A connection the caller closes before any session ticket reached it stays open until
    /// one does (at most [`ticket_wait`]), when handshakes resume and the server sends
    /// tickets at all. The server sends them only once it has the client's Finished: a
    /// connection answered in 0.5-RTT data (a 0-RTT one) that closed at once would never
    /// receive them, and each would spend a ticket and bring none back.
    pub wait_for_tickets: bool,
}

impl ClientOptions {
    pub fn new(server: SocketAddr, server_name: &str, ca_pem: &str) -> ClientOptions {
        ClientOptions {
            server,
            server_name: server_name.to_string(),
            ca_pem: ca_pem.to_string(),
            resumed: 0.0,
            early_data: 0.0,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            local: None,
            wait_for_tickets: true,
        }
    }
}

/// What happened that the caller acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// The handshake completed.
    Connected {
        conn: ConnId,
        kind: HandshakeKind,
        time: Duration,
    },
    /// A request's response head (its HEADERS) arrived.
    Head { conn: ConnId, token: u64 },
    /// A response came in whole.
    Response {
        conn: ConnId,
        /// The caller's tag of the request ([`QuicClient::request_tagged`]; 0 otherwise).
        token: u64,
        status: u16,
        body_bytes: u64,
        /// From the request's send to its HEADERS, and to its stream's end.
        ttfb: Duration,
        total: Duration,
    },
    /// A request's stream failed (reset by the server, a framing error).
    StreamFailed { conn: ConnId, token: u64 },
    /// More requests may be sent on the connection (streams were granted).
    Ready { conn: ConnId },
    /// The connection is gone; `error` None when the client closed it.
    Closed {
        conn: ConnId,
        error: Option<ConnError>,
        /// The reason text of the close frame, when the closing side wrote one.
        why: Option<String>,
    },
}

struct Request {
    token: u64,
    /// Its path while it went in 0-RTT data (sent again if the server declines that).
    early_path: Option<Box<str>>,
    sent: Instant,
    reader: FrameReader,
    status: Option<u16>,
    ttfb: Option<Duration>,
    body: u64,
}

struct Conn {
    quic: quinn_proto::Connection,
    started: Instant,
    offer: Offer,
    /// Full handshakes verify the certificate: whether this connection's did. Told per
    /// connection by the verifier's count around each of its own inputs (one thread, so a
    /// verification in that call is this connection's), not over its whole life, which
    /// would take a full handshake of another connection in flight at the same time for its.
    verified: bool,
    established: bool,
    control: Option<StreamId>,
    requests: HashMap<StreamId, Request>,
    /// The reason recorded when the client closed it itself (a handshake timeout).
    closed_by_us: Option<Option<ConnError>>,
    reported_lost: bool,
    /// Requests taken with no stream credit left: opened, in order, when the server grants
    /// more (token, path, when taken).
    waiting: VecDeque<(u64, Box<str>, Instant)>,
    /// Its timer entry's time in the client's heap (None: none).
    timer: Option<Instant>,
    /// Established and its Finished not flushed yet: a close now waits for the flush (see
    /// [`QuicClient::close_as`]).
    finished_unsent: bool,
    /// A close (H3_NO_ERROR) deferred until its Finished is out.
    close_after_flush: bool,
    /// Session tickets received on it.
    tickets: u64,
    /// Closed by the caller and waiting for its tickets until then (see
    /// [`ClientOptions::wait_for_tickets`]).
    ticket_wait: Option<Instant>,
    /// It waited for its tickets once already: its next close is the close.
    waited: bool,
}

impl Conn {
    /// Takes requests: not closed, nor waiting for its tickets to close.
    fn open(&self) -> bool {
        self.closed_by_us.is_none() && self.ticket_wait.is_none()
    }
}

/// How long a closed connection waits for its session tickets: they are due one round trip
/// after its Finished left; three cover a lost Finished or ticket sent again.
pub fn ticket_wait(rtt: Duration) -> Duration {
    (3 * rtt).max(TICKET_WAIT_MIN)
}

/// The client: one endpoint, one socket, its connections.
pub struct QuicClient {
    opts: ClientOptions,
    endpoint: Endpoint,
    sock: UdpSock,
    tls: ClientTlsSet,
    conns: HashMap<ConnectionHandle, Conn>,
    events: VecDeque<ClientEvent>,
    /// Datagram runs made and not yet sent: destination, range in `out`, GSO segment size.
    queue: Vec<(SocketAddr, usize, usize, Option<usize>)>,
    out: Vec<u8>,
    recv: RecvBatch,
    stats: QuicStats,
    /// Connection-level counters of connections already gone.
    gone: quinn_proto::ConnectionStats,
    /// Datagrams the endpoint itself answered with (stateless resets to packets for
    /// connections already gone): in no connection's counters, but sent all the same.
    endpoint_datagrams: u64,
    /// Connections touched since the last flush (only they may have packets to make).
    dirty: HashSet<ConnectionHandle>,
    /// Each connection's next timer (lazy: an entry whose time is no longer its
    /// connection's is skipped), so a turn costs O(log n), not a walk over every connection.
    timers: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
    /// Closed connections wait for their tickets ([`ClientOptions::wait_for_tickets`], until
    /// [`QuicClient::stop_waiting_for_tickets`]).
    /// Ticket waits that ran out before any ticket had come (`NO_TICKETS_AFTER`).
    ticketless_waits: u32,
    wait_for_tickets: bool,
}

impl QuicClient {
    /// A client bound to an ephemeral port (or `opts.local`) of the calling thread's network
    /// namespace.
    pub fn new(opts: ClientOptions) -> anyhow::Result<QuicClient> {
        let bind = opts.local.unwrap_or_else(|| {
            if opts.server.is_ipv4() {
                SocketAddr::from(([0, 0, 0, 0], 0))
            } else {
                SocketAddr::from(([0u16; 8], 0))
            }
        });
        let sock = UdpSock::bind(bind)
            .map_err(|e| anyhow::anyhow!("binding the QUIC client's UDP socket {bind}: {e}"))?;
        let tls = ClientTlsSet::new(
            &opts.ca_pem,
            opts.resumed,
            opts.early_data,
            opts.idle_timeout,
        )?;
        let endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        Ok(QuicClient {
            endpoint,
            sock,
            tls,
            conns: HashMap::new(),
            events: VecDeque::new(),
            queue: Vec::new(),
            out: Vec::new(),
            recv: RecvBatch::default(),
            stats: QuicStats::default(),
            gone: Default::default(),
            endpoint_datagrams: 0,
            dirty: HashSet::new(),
            timers: BinaryHeap::new(),
            wait_for_tickets: opts.wait_for_tickets,
            ticketless_waits: 0,
            opts,
        })
    }

    /// A new resumed share from the next connection on (a live knob).
    pub fn set_resumed(&mut self, share: f64) {
        self.tls.set_resumed(share);
    }

    pub fn socket(&self) -> &UdpSock {
        &self.sock
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Starts a connection (its first Initial goes out at the next [`QuicClient::flush`]).
    pub fn connect(&mut self, now: Instant) -> anyhow::Result<ConnId> {
        let (config, offer) = self.tls.next_config();
        let (ch, quic) = self
            .endpoint
            .connect(now, config, self.opts.server, &self.opts.server_name)
            .map_err(|e| anyhow::anyhow!("starting a QUIC connection: {e}"))?;
        self.stats.attempts += 1;
        if self.tls.resumes() && self.tls.tickets_stored() == 0 {
            self.stats.before_first_ticket += 1;
        }
        let zero_rtt = quic.has_0rtt();
        self.conns.insert(
            ch,
            Conn {
                quic,
                started: now,
                offer,
                verified: false,
                established: false,
                control: None,
                requests: HashMap::new(),
                closed_by_us: None,
                reported_lost: false,
                waiting: VecDeque::new(),
                timer: None,
                finished_unsent: false,
                close_after_flush: false,
                tickets: 0,
                ticket_wait: None,
                waited: false,
            },
        );
        self.dirty.insert(ch);
        // With 0-RTT keys the first requests may go now, in early data.
        if zero_rtt {
            self.events.push_back(ClientEvent::Ready { conn: ch });
        }
        Ok(ch)
    }

    /// Sends `GET path` on a new stream; false when the connection has no stream to spare now
    /// (a [`ClientEvent::Ready`] says when it has) or is not usable.
    pub fn request(&mut self, conn: ConnId, path: &str, now: Instant) -> bool {
        let Some(c) = self.conns.get_mut(&conn) else {
            return false;
        };
        if !c.open() || !(c.established || c.quic.has_0rtt()) || !c.waiting.is_empty() {
            return false;
        }
        let sent = send_request(c, &self.opts.server_name, path, 0, now);
        if sent {
            self.stats.requests += 1;
            self.dirty.insert(conn);
        }
        sent
    }

    /// Sends `GET path` tagged `token` (its events carry it): at once on a new stream, or, when
    /// the server's stream credit is used up, as soon as it grants more (in order). False only
    /// when the connection is not usable.
    pub fn request_tagged(&mut self, conn: ConnId, path: &str, token: u64, now: Instant) -> bool {
        let Some(c) = self.conns.get_mut(&conn) else {
            return false;
        };
        if !c.open() || !(c.established || c.quic.has_0rtt()) {
            return false;
        }
        if !c.waiting.is_empty() || !send_request(c, &self.opts.server_name, path, token, now) {
            c.waiting.push_back((token, path.into(), now));
        }
        self.stats.requests += 1;
        self.dirty.insert(conn);
        true
    }

    /// Requests taken on `conn` and not yet answered (waiting for a stream included).
    pub fn outstanding(&self, conn: ConnId) -> usize {
        self.conns
            .get(&conn)
            .map_or(0, |c| c.requests.len() + c.waiting.len())
    }

    /// Whether `conn` has requests waiting for the server's stream credit.
    pub fn blocked(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|c| !c.waiting.is_empty())
    }

    /// Requests in flight on `conn`.
    pub fn in_flight(&self, conn: ConnId) -> usize {
        self.conns.get(&conn).map_or(0, |c| c.requests.len())
    }

    /// Is `conn` established (or sending 0-RTT) and open?
    pub fn usable(&self, conn: ConnId) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|c| c.open() && (c.established || c.quic.has_0rtt()))
    }

    /// Closes `conn` (H3_NO_ERROR); it leaves once its closing period ends. With no session
    /// ticket received yet it may first wait for one ([`ClientOptions::wait_for_tickets`]).
    pub fn close(&mut self, conn: ConnId, now: Instant) {
        self.close_as(conn, None, now);
    }

    /// Closes `conn` as the caller's own `error` (counted as the stack's would be: a handshake
    /// timeout of the caller's clock, say); a connection not established is no longer owed to
    /// the resumption schedule.
    pub fn close_as(&mut self, conn: ConnId, error: Option<ConnError>, now: Instant) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if c.closed_by_us.is_none() && !c.reported_lost {
                if c.ticket_wait.is_some() {
                    return; // closes when its tickets come or the wait ends
                }
                if error.is_none()
                    && c.established
                    && !c.waited
                    && c.tickets == 0
                    && self.wait_for_tickets
                    && self.tls.resumes()
                    && (self.tls.tickets_stored() > 0 || self.ticketless_waits < NO_TICKETS_AFTER)
                {
                    // Its tickets are owed to the next resumptions (see wait_for_tickets).
                    c.waited = true;
                    c.waiting.clear();
                    c.ticket_wait = Some(now + ticket_wait(c.quic.rtt()));
                    self.rearm(conn);
                    return;
                }
                if error.is_none() && c.finished_unsent {
                    // Answered in 0.5-RTT (after 0-RTT requests) before its own Finished left:
                    // closing now would put the close in the Finished's packet, and the
                    // server would never see its handshake complete. It closes once that
                    // packet is out.
                    c.close_after_flush = true;
                    self.dirty.insert(conn);
                    return;
                }
                c.closed_by_us = Some(error);
                // Counted now: a closing connection may outlive the caller's last report.
                count_own(&mut self.stats, &mut self.tls, c, error);
                c.waiting.clear();
                let code = if c.established { h3::H3_NO_ERROR } else { 0 };
                c.quic
                    .close(now, VarInt::from_u32(code), bytes::Bytes::new());
                self.dirty.insert(conn);
            }
        }
    }

    /// Whether `conn`'s handshake is done.
    pub fn established(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.established)
    }

    /// Connections open (including those closing, and those waiting for their tickets).
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// From now on a close is immediate, and the connections waiting for their session
    /// tickets close now (a run's end).
    pub fn stop_waiting_for_tickets(&mut self, now: Instant) {
        self.wait_for_tickets = false;
        let waiting: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.ticket_wait.is_some())
            .map(|(h, _)| *h)
            .collect();
        for h in waiting {
            self.end_ticket_wait(h, now);
        }
    }

    /// Session tickets received so far, and offered (each a resumption attempted).
    pub fn tickets(&self) -> (u64, u64) {
        (self.tls.tickets_stored(), self.tls.tickets_taken())
    }

    /// A connection's wait for its tickets is over (they came, or its time is up): it closes.
    fn end_ticket_wait(&mut self, h: ConnId, now: Instant) {
        if let Some(c) = self.conns.get_mut(&h) {
            if c.ticket_wait.take().is_some() {
                self.close_as(h, None, now);
            }
        }
    }

    /// When the client wants [`QuicClient::handle_timeout`] next: the earliest QUIC timer or
    /// handshake deadline.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, h))) = self.timers.peek() {
            if self.conns.get(&h).is_some_and(|c| c.timer == Some(at)) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }

    /// Runs the timers that are due.
    pub fn handle_timeout(&mut self, now: Instant) {
        let hs = self.opts.handshake_timeout;
        while let Some(&Reverse((at, h))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(mut c) = self.conns.get_mut(&h) else {
                continue;
            };
            if c.timer != Some(at) {
                continue;
            }
            c.timer = None;
            if c.ticket_wait.is_some_and(|t| t <= now) {
                self.stats.ticket_waits_expired += 1;
                if self.tls.tickets_stored() == 0 {
                    self.ticketless_waits += 1;
                }
                self.end_ticket_wait(h, now);
                let Some(again) = self.conns.get_mut(&h) else {
                    continue;
                };
                c = again;
            }
            if !c.established && c.closed_by_us.is_none() && c.started + hs <= now {
                c.closed_by_us = Some(Some(ConnError::HandshakeTimeout));
                count_own(
                    &mut self.stats,
                    &mut self.tls,
                    c,
                    Some(ConnError::HandshakeTimeout),
                );
                c.waiting.clear();
                c.quic.close(now, VarInt::from_u32(0), bytes::Bytes::new());
            }
            c.quic.handle_timeout(now);
            self.dirty.insert(h);
            self.process(h, now);
        }
    }

    /// Puts `h`'s next timer (its stack's, or its handshake deadline) in the heap if it moved.
    fn rearm(&mut self, h: ConnectionHandle) {
        let hs = self.opts.handshake_timeout;
        let Some(c) = self.conns.get_mut(&h) else {
            return;
        };
        let deadline = (!c.established && c.closed_by_us.is_none())
            .then_some(c.started + hs)
            .or(c.ticket_wait);
        let next = match (c.quic.poll_timeout(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if next != c.timer {
            c.timer = next;
            if let Some(t) = next {
                self.timers.push(Reverse((t, h)));
            }
        }
    }

    /// Reads what the socket holds and feeds it to the connections; true when something was read.
    pub fn on_readable(&mut self, now: Instant) -> io::Result<bool> {
        let mut any = false;
        loop {
            let n = self.sock.recv(&mut self.recv)?;
            if n == 0 {
                return Ok(any);
            }
            any = true;
            // The batch is taken out while its datagrams are handled (they borrow `self`),
            // not copied: a copy per run was a malloc, memmove and free per read (perf).
            let batch = std::mem::replace(&mut self.recv, RecvBatch::empty());
            for (m, bytes) in batch.iter() {
                for d in bytes.chunks(m.stride.max(1)) {
                    self.datagram(now, m.from, d);
                }
            }
            self.recv = batch;
        }
    }

    fn datagram(&mut self, now: Instant, from: SocketAddr, d: &[u8]) {
        match long_header_kind(d) {
            Some(LongKind::VersionNegotiation) => self.stats.version_negotiation += 1,
            Some(LongKind::Retry) => self.stats.retry_received += 1,
            _ => {}
        }
        let mut buf = Vec::new();
        match self
            .endpoint
            .handle(now, from, None, None, BytesMut::from(d), &mut buf)
        {
            Some(quinn_proto::DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = self.conns.get_mut(&h) {
                    // One thread: what the TLS did in this call is this connection's.
                    let (before, tickets) = (self.tls.verified(), self.tls.tickets_stored());
                    c.quic.handle_event(ev);
                    c.verified |= self.tls.verified() > before;
                    c.tickets += self.tls.tickets_stored() - tickets;
                    let came = c.tickets > 0 && c.ticket_wait.is_some();
                    self.dirty.insert(h);
                    self.process(h, now);
                    if came {
                        self.end_ticket_wait(h, now);
                    }
                }
            }
            Some(quinn_proto::DatagramEvent::Response(t)) => {
                self.endpoint_datagrams += t.segment_size.map_or(1, |g| t.size.div_ceil(g)) as u64;
                self.enqueue(t.destination, &buf[..t.size], t.segment_size);
            }
            // A client endpoint takes no new connections.
            Some(quinn_proto::DatagramEvent::NewConnection(i)) => self.endpoint.ignore(i),
            None => {}
        }
    }

    /// Handles what a connection did after input or a timer: its events for the endpoint and
    /// for us.
    fn process(&mut self, h: ConnectionHandle, now: Instant) {
        let Some(c) = self.conns.get_mut(&h) else {
            return;
        };
        while let Some(ev) = c.quic.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(h, ev) {
                c.quic.handle_event(back);
            }
        }
        while let Some(ev) = c.quic.poll() {
            match ev {
                Event::HandshakeDataReady | Event::DatagramReceived | Event::DatagramsUnblocked => {
                }
                Event::Connected => {
                    c.established = true;
                    c.finished_unsent = true;
                    let time = now.saturating_duration_since(c.started);
                    let full = c.verified;
                    let kind = if full {
                        HandshakeKind::Full
                    } else if c.quic.accepted_0rtt() {
                        HandshakeKind::ZeroRtt
                    } else {
                        HandshakeKind::Resumed
                    };
                    if c.offer != Offer::Full && full {
                        self.stats.resume_declined += 1;
                    }
                    if c.offer == Offer::EarlyData && !c.quic.accepted_0rtt() {
                        self.stats.zero_rtt_declined += 1;
                    }
                    self.tls.completed(c.offer, !full);
                    if c.offer == Offer::EarlyData && !c.quic.accepted_0rtt() {
                        // The server declined the early data: the stack dropped the streams
                        // sent in it, so their requests go again (first, in order) in 1-RTT.
                        c.control = None;
                        let mut again: Vec<(StreamId, Request)> = c.requests.drain().collect();
                        again.sort_by_key(|(id, _)| id.index());
                        for (_, r) in again.into_iter().rev() {
                            let path = r.early_path.unwrap_or_default();
                            c.waiting.push_front((r.token, path, r.sent));
                        }
                    }
                    *self.stats.handshakes.entry(kind).or_default() += 1;
                    self.stats.handshake_time_sum += time;
                    self.stats.handshake_time_max = self.stats.handshake_time_max.max(time);
                    open_control(c);
                    open_waiting(c, &self.opts.server_name);
                    self.events.push_back(ClientEvent::Connected {
                        conn: h,
                        kind,
                        time,
                    });
                    self.events.push_back(ClientEvent::Ready { conn: h });
                }
                Event::ConnectionLost { reason } => {
                    // The client's own closes were counted when it closed.
                    let (error, counted) = match c.closed_by_us {
                        Some(mine) => (mine, true),
                        // Closed by the caller already, waiting for its tickets: its end.
                        None if c.ticket_wait.is_some() => (None, true),
                        None => (Some(classify(&reason, c.established)), false),
                    };
                    if let Some(e) = error.filter(|_| !counted) {
                        if e == ConnError::StatelessReset {
                            self.stats.stateless_resets += 1;
                        }
                        *self.stats.errors.entry(e).or_default() += 1;
                        if !c.established {
                            self.tls.failed(c.offer);
                        }
                    }
                    c.reported_lost = true;
                    let why = Some(close_text(&reason)).filter(|w| !w.is_empty() && !counted);
                    self.events.push_back(ClientEvent::Closed {
                        conn: h,
                        error,
                        why,
                    });
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    read_stream(c, h, id, now, &mut self.stats, &mut self.events);
                }
                Event::Stream(StreamEvent::Opened { dir }) => {
                    // The server's control and QPACK streams: read and let go.
                    while let Some(id) = c.quic.streams().accept(dir) {
                        read_stream(c, h, id, now, &mut self.stats, &mut self.events);
                    }
                }
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => {
                    open_waiting(c, &self.opts.server_name);
                    self.events.push_back(ClientEvent::Ready { conn: h });
                }
                Event::Stream(StreamEvent::Stopped { id, .. }) => {
                    if let Some(r) = c.requests.remove(&id) {
                        self.events.push_back(ClientEvent::StreamFailed {
                            conn: h,
                            token: r.token,
                        });
                    }
                }
                Event::Stream(_) => {}
            }
        }
        // The handshake timed out by our close before the stack said anything: report now.
        if c.quic.is_drained() {
            let c = self.conns.remove(&h).unwrap();
            if !c.reported_lost {
                // Only the client's own closes drain unreported: counted when it closed.
                let error = c.closed_by_us.flatten();
                self.events.push_back(ClientEvent::Closed {
                    conn: h,
                    error,
                    why: None,
                });
            }
            add_conn_stats(&mut self.gone, &c.quic.stats());
            self.dirty.remove(&h);
            return;
        }
        self.rearm(h);
    }

    /// Makes and sends what the connections have to send; true when all of it went out
    /// (false: the socket is full, call again once it is writable).
    pub fn flush(&mut self, now: Instant) -> io::Result<bool> {
        let segments = self.sock.offload().gso_segments;
        let handles: Vec<ConnectionHandle> = self.dirty.drain().collect();
        let mut buf = Vec::new();
        for (i, &h) in handles.iter().enumerate() {
            loop {
                if self.queue.len() >= MAX_QUEUED && !self.send_queued()? {
                    // This one and those not reached yet make their packets next time.
                    self.dirty.extend(handles[i..].iter().copied());
                    return Ok(false);
                }
                let Some(c) = self.conns.get_mut(&h) else {
                    break;
                };
                buf.clear();
                let Some(t) = c.quic.poll_transmit(now, segments, &mut buf) else {
                    break;
                };
                self.enqueue(t.destination, &buf[..t.size], t.segment_size);
            }
            if let Some(c) = self.conns.get_mut(&h) {
                c.finished_unsent = false;
                if std::mem::take(&mut c.close_after_flush) {
                    // Its Finished is queued in earlier datagrams: the close follows.
                    c.closed_by_us = Some(None);
                    c.waiting.clear();
                    c.quic
                        .close(now, VarInt::from_u32(h3::H3_NO_ERROR), bytes::Bytes::new());
                    buf.clear();
                    while let Some(t) = c.quic.poll_transmit(now, segments, &mut buf) {
                        let (dest, seg, size) = (t.destination, t.segment_size, t.size);
                        self.stats.initials_sent += initials_in(&buf[..size], seg);
                        let start = self.out.len();
                        self.out.extend_from_slice(&buf[..size]);
                        self.queue.push((dest, start, self.out.len(), seg));
                        buf.clear();
                    }
                }
            }
            // poll_transmit may have finished a closing connection.
            self.process(h, now);
        }
        self.send_queued()
    }

    fn enqueue(&mut self, to: SocketAddr, data: &[u8], segment: Option<usize>) {
        self.stats.initials_sent += initials_in(data, segment);
        let start = self.out.len();
        self.out.extend_from_slice(data);
        self.queue.push((to, start, self.out.len(), segment));
    }

    fn send_queued(&mut self) -> io::Result<bool> {
        while !self.queue.is_empty() {
            let items: Vec<Datagrams<'_>> = self
                .queue
                .iter()
                .map(|(to, s, e, seg)| Datagrams {
                    to: *to,
                    data: &self.out[*s..*e],
                    segment: *seg,
                })
                .collect();
            let gso_before = self.sock.offload().gso_segments;
            let sent = self.sock.send(&items)?;
            drop(items);
            self.queue.drain(..sent);
            if sent == 0 {
                if self.sock.offload().gso_segments != gso_before {
                    // GSO refused: send the runs again datagram by datagram.
                    self.split_queued();
                    continue;
                }
                return Ok(false);
            }
        }
        self.out.clear();
        Ok(true)
    }

    fn split_queued(&mut self) {
        let mut q = Vec::new();
        for (to, s, e, seg) in self.queue.drain(..) {
            let seg = seg.unwrap_or(e - s);
            let mut a = s;
            while a < e {
                let b = (a + seg).min(e);
                q.push((to, a, b, None));
                a = b;
            }
        }
        self.queue = q;
    }

    /// Takes the next event.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// The totals so far (connections open included).
    pub fn stats(&self) -> QuicStats {
        let mut s = self.stats.clone();
        let mut total = self.gone;
        for c in self.conns.values() {
            add_conn_stats(&mut total, &c.quic.stats());
        }
        s.datagrams_sent = total.udp_tx.datagrams + self.endpoint_datagrams;
        s.datagrams_received = total.udp_rx.datagrams;
        s.bytes_sent = total.udp_tx.bytes;
        s.bytes_received = total.udp_rx.bytes;
        s.lost_packets = total.path.lost_packets;
        s.lost_bytes = total.path.lost_bytes;
        s.congestion_events = total.path.congestion_events;
        s
    }

    /// Waits for the socket to be readable until `deadline` or the next timer, whichever comes
    /// first, then reads, runs the timers and flushes: one turn of a thread's own loop.
    pub fn turn(&mut self, deadline: Instant) -> io::Result<()> {
        let now = Instant::now();
        self.flush(now)?;
        let wake = self.poll_timeout().map_or(deadline, |t| t.min(deadline));
        if self.events.is_empty() {
            self.sock
                .wait_readable(Some(wake.saturating_duration_since(now)))?;
        }
        let now = Instant::now();
        self.on_readable(now)?;
        self.handle_timeout(now);
        self.flush(now)?;
        Ok(())
    }
}

/// A connection the client closes itself with `error`: counted as the stack's errors are,
/// and, not established, no longer owed to the resumption schedule.
fn count_own(stats: &mut QuicStats, tls: &mut ClientTlsSet, c: &Conn, error: Option<ConnError>) {
    if let Some(e) = error {
        *stats.errors.entry(e).or_default() += 1;
        if !c.established {
            tls.failed(c.offer);
        }
    }
}

/// Opens the client's control stream once the connection may (RFC 9114 6.2.1).
fn open_control(c: &mut Conn) {
    if c.control.is_some() {
        return;
    }
    if let Some(id) = c.quic.streams().open(Dir::Uni) {
        let _ = c.quic.send_stream(id).write(&h3::control_stream_opening());
        c.control = Some(id);
    }
}

/// Opens a stream for `GET path` and writes its HEADERS; false when the server's stream credit
/// is used up.
/// The datagrams of a run (`segment`: GSO's size of each) whose first packet is an Initial,
/// by the rule the capture and the built-in server count them with.
fn initials_in(run: &[u8], segment: Option<usize>) -> u64 {
    run.chunks(segment.unwrap_or(run.len()).max(1))
        .filter(|d| crate::sys::quic_packets::initial_version(d).is_some())
        .count() as u64
}

fn send_request(c: &mut Conn, authority: &str, path: &str, token: u64, now: Instant) -> bool {
    open_control(c);
    let Some(id) = c.quic.streams().open(Dir::Bi) else {
        return false;
    };
    let head = h3::request_headers("GET", authority, path);
    let mut s = c.quic.send_stream(id);
    // A GET's HEADERS is far below any stream's initial credit.
    if s.write(&head).map(|n| n < head.len()).unwrap_or(true) || s.finish().is_err() {
        return false;
    }
    let early = !c.established;
    c.requests.insert(
        id,
        Request {
            token,
            early_path: early.then(|| path.into()),
            sent: now,
            reader: FrameReader::default(),
            status: None,
            ttfb: None,
            body: 0,
        },
    );
    true
}

/// Sends the requests that waited for stream credit, in order, as far as it goes.
fn open_waiting(c: &mut Conn, authority: &str) {
    while let Some((token, path, at)) = c.waiting.pop_front() {
        if !send_request(c, authority, &path, token, at) {
            c.waiting.push_front((token, path, at));
            return;
        }
    }
}

/// Reads what a stream has: a request's response frames, or a server stream's bytes dropped.
fn read_stream(
    c: &mut Conn,
    h: ConnId,
    id: StreamId,
    now: Instant,
    stats: &mut QuicStats,
    events: &mut VecDeque<ClientEvent>,
) {
    let mut recv = c.quic.recv_stream(id);
    let Ok(mut chunks) = recv.read(true) else {
        return;
    };
    let mut frames = Vec::new();
    let mut finished = false;
    let mut failed = false;
    let req = c.requests.get_mut(&id);
    let mut req = req;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                if let Some(r) = req.as_deref_mut() {
                    if r.reader.feed(&chunk.bytes, &mut frames).is_err() {
                        failed = true;
                        break;
                    }
                }
            }
            Ok(None) => {
                finished = true;
                break;
            }
            Err(quinn_proto::ReadError::Blocked) => break,
            Err(quinn_proto::ReadError::Reset(_)) => {
                failed = true;
                break;
            }
        }
    }
    let _ = chunks.finalize();
    let Some(r) = req else {
        return;
    };
    for f in frames {
        match f {
            StreamFrame::Headers(fields) if r.status.is_none() => {
                r.status = h3::status_of(&fields);
                r.ttfb = Some(now.saturating_duration_since(r.sent));
                events.push_back(ClientEvent::Head {
                    conn: h,
                    token: r.token,
                });
            }
            StreamFrame::Data(n) => r.body += n,
            _ => {}
        }
    }
    if failed || (finished && r.status.is_none()) {
        let token = r.token;
        c.requests.remove(&id);
        events.push_back(ClientEvent::StreamFailed { conn: h, token });
        return;
    }
    if finished {
        let r = c.requests.remove(&id).unwrap();
        let status = r.status.unwrap_or(0);
        stats.responses += 1;
        stats.body_bytes += r.body;
        stats.status_classes[usize::from(status / 100).min(5)] += 1;
        events.push_back(ClientEvent::Response {
            conn: h,
            token: r.token,
            status,
            body_bytes: r.body,
            ttfb: r.ttfb.unwrap_or_default(),
            total: now.saturating_duration_since(r.sent),
        });
    }
}

/// The reason phrase a close carried (quinn-proto raises one error code for several causes:
/// the phrase tells them apart in run.log).
fn close_text(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::ConnectionClosed(c) => String::from_utf8_lossy(&c.reason).into_owned(),
        ConnectionError::ApplicationClosed(c) => String::from_utf8_lossy(&c.reason).into_owned(),
        ConnectionError::TransportError(e) => e.reason.clone(),
        _ => String::new(),
    }
}

fn classify(reason: &ConnectionError, established: bool) -> ConnError {
    match reason {
        ConnectionError::TimedOut if established => ConnError::IdleTimeout,
        ConnectionError::TimedOut => ConnError::HandshakeTimeout,
        ConnectionError::Reset => ConnError::StatelessReset,
        ConnectionError::VersionMismatch => ConnError::VersionMismatch,
        ConnectionError::ConnectionClosed(c)
            if c.error_code == TransportErrorCode::CONNECTION_REFUSED =>
        {
            ConnError::Refused
        }
        ConnectionError::ConnectionClosed(c) => ConnError::Transport(u64::from(c.error_code)),
        ConnectionError::ApplicationClosed(c) => ConnError::Application(c.error_code.into_inner()),
        ConnectionError::TransportError(e) => ConnError::Local(u64::from(e.code)),
        ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => ConnError::Local(0),
    }
}

fn add_conn_stats(t: &mut quinn_proto::ConnectionStats, s: &quinn_proto::ConnectionStats) {
    t.udp_tx.datagrams += s.udp_tx.datagrams;
    t.udp_tx.bytes += s.udp_tx.bytes;
    t.udp_rx.datagrams += s.udp_rx.datagrams;
    t.udp_rx.bytes += s.udp_rx.bytes;
    t.path.lost_packets += s.path.lost_packets;
    t.path.lost_bytes += s.path.lost_bytes;
    t.path.congestion_events += s.path.congestion_events;
}

/// The long-header packets a client counts before the stack sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongKind {
    VersionNegotiation,
    Retry,
    Other,
}

/// What a datagram's first packet is, when it has a long header (RFC 9000 17.2; RFC 8999 for
/// version negotiation, version 0).
pub fn long_header_kind(d: &[u8]) -> Option<LongKind> {
    let first = *d.first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let version = u32::from_be_bytes(d.get(1..5)?.try_into().ok()?);
    Some(if version == 0 {
        LongKind::VersionNegotiation
    } else if version == 1 && (first >> 4) & 0x03 == 0x03 {
        LongKind::Retry
    } else {
        LongKind::Other
    })
}

/// What [`run_closed`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClosedRun {
    pub stats: QuicStats,
    /// Responses per status (all seen).
    pub statuses: std::collections::BTreeMap<u16, u64>,
}

/// A closed loop on one thread: `connections` connections one after another, each with
/// `per_connection` GETs of `path`, `streams` of them in flight at once; stops at `deadline`.
/// The tests' and the checks' client.
pub fn run_closed(
    opts: ClientOptions,
    connections: u64,
    per_connection: u64,
    streams: usize,
    path: &str,
    deadline: Instant,
) -> anyhow::Result<ClosedRun> {
    let mut client = QuicClient::new(opts)?;
    let mut run = ClosedRun::default();
    for _ in 0..connections {
        let conn = client.connect(Instant::now())?;
        let (mut sent, mut done) = (0u64, 0u64);
        let mut open = true;
        while open && Instant::now() < deadline {
            client.turn(deadline)?;
            while let Some(ev) = client.poll_event() {
                match ev {
                    ClientEvent::Response { status, .. } => {
                        done += 1;
                        *run.statuses.entry(status).or_default() += 1;
                    }
                    ClientEvent::StreamFailed { .. } => done += 1,
                    ClientEvent::Closed { .. } => open = false,
                    ClientEvent::Connected { .. }
                    | ClientEvent::Ready { .. }
                    | ClientEvent::Head { .. } => {}
                }
            }
            let now = Instant::now();
            while open
                && sent < per_connection
                && client.in_flight(conn) < streams
                && client.request(conn, path, now)
            {
                sent += 1;
            }
            if done >= per_connection && client.usable(conn) {
                client.close(conn, now);
            }
        }
    }
    // The last closes go out before the socket goes.
    client.stop_waiting_for_tickets(Instant::now());
    client.flush(Instant::now())?;
    run.stats = client.stats();
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::initials_in;

    /// quinn-proto closes with CONNECTION_ID_LIMIT_ERROR for two causes; its phrase says which.
    #[test]
    fn a_close_keeps_the_reason_phrase_the_peer_wrote() {
        use quinn_proto::{ConnectionClose, ConnectionError, TransportErrorCode};
        let closed = ConnectionError::ConnectionClosed(ConnectionClose {
            error_code: TransportErrorCode::CONNECTION_ID_LIMIT_ERROR,
            frame_type: None,
            reason: bytes::Bytes::from_static(b"queued too many retired CIDs"),
        });
        assert_eq!(super::close_text(&closed), "queued too many retired CIDs");
        assert_eq!(super::close_text(&ConnectionError::TimedOut), "");
    }

    /// A v1 Initial's first bytes (long header, fixed bit, type 0) and a 1-RTT packet's.
    const INITIAL: [u8; 5] = [0xc3, 0, 0, 0, 1];
    const SHORT: [u8; 5] = [0x41, 0, 0, 0, 1];

    #[test]
    fn the_initials_sent_are_the_datagrams_of_a_run_that_begin_with_one() {
        let datagram = |head: [u8; 5], len: usize| {
            let mut d = head.to_vec();
            d.resize(len, 0);
            d
        };
        assert_eq!(initials_in(&datagram(INITIAL, 1200), None), 1);
        assert_eq!(initials_in(&datagram(SHORT, 1200), None), 0);
        // A GSO run: each segment is a datagram; the last may be shorter.
        let run = [
            datagram(INITIAL, 1200),
            datagram(SHORT, 1200),
            datagram(INITIAL, 1200),
            datagram(SHORT, 300),
        ]
        .concat();
        assert_eq!(initials_in(&run, Some(1200)), 2);
        assert_eq!(initials_in(&[], Some(1200)), 0);
    }
}
