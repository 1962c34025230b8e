//! The built-in server's HTTP/3 (issue 47): a UDP socket on the TLS listener's port, served
//! by quinn-proto's server side on its own thread, each request stream answered as the
//! HTTP/1.1 request to the same path would be (same catalog, service time and counters), plus
//! its own counts of QUIC handshakes (0-RTT apart), Retry packets sent, streams served and
//! their service time, and of the datagrams (Initials apart) it read from its socket.

use super::config::{Http3Options, ServiceKind};
use super::core::{self, Counters, Ctx, Response};
use super::files::PATTERN_BUF_LEN;
use super::h2::{parse_of, split_head};
use crate::quic::h3::{self as codec, FrameReader, StreamFrame};
use crate::sys::quic_packets::initial_version;
use crate::sys::udp_mmsg::{Datagrams, RecvBatch, UdpSock};
use bytes::BytesMut;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, StreamEvent, StreamId,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait in the loop without a timer (so a stop is seen).
const TICK: Duration = Duration::from_millis(20);

/// The QUIC server config: the server's TLS (its certificate, cache and tickets) with ALPN
/// h3, 0-RTT as asked, and `max_streams` request streams per connection.
pub fn server_config(
    tls: &crate::tls::ServerTls,
    o: &Http3Options,
    max_streams: u32,
) -> anyhow::Result<Arc<quinn_proto::ServerConfig>> {
    let mut c = Arc::unwrap_or_clone(crate::tls::server::config(tls)?);
    c.alpn_protocols = vec![b"h3".to_vec()];
    // QUIC asks for exactly u32::MAX or 0 (RFC 9001 4.6.1).
    c.max_early_data_size = if o.early_data { u32::MAX } else { 0 };
    if o.early_data {
        // rustls takes 0-RTT only on a resumption from its session cache (single use, so
        // early data cannot be replayed), never from a stateless ticket.
        c.ticketer = Arc::new(NoTickets);
    }
    let quic = quinn_proto::crypto::rustls::QuicServerConfig::try_from(Arc::new(c))
        .map_err(|e| anyhow::anyhow!("the server's TLS config does not suit QUIC: {e}"))?;
    let mut s = quinn_proto::ServerConfig::with_crypto(Arc::new(quic));
    let mut t = quinn_proto::TransportConfig::default();
    t.max_concurrent_bidi_streams(max_streams.into());
    t.max_idle_timeout(Some(quinn_proto::IdleTimeout::try_from(
        core::IDLE_TIMEOUT,
    )?));
    s.transport_config(Arc::new(t));
    Ok(Arc::new(s))
}

/// A ticketer that issues none (rustls's own is private).
#[derive(Debug)]
struct NoTickets;

impl rustls::server::ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// Binds the HTTP/3 socket on `addr` (the TLS listener's) with the asked receive buffer.
pub fn bind(addr: SocketAddr, o: &Http3Options) -> anyhow::Result<UdpSock> {
    let mut sock = UdpSock::bind(addr).map_err(|e| {
        anyhow::anyhow!("cannot bind UDP {addr} for HTTP/3: {e}; pick a port free for UDP too")
    })?;
    // The kernel drops and counts what a full buffer cannot take per skb: with GRO on, a
    // client's GSO run (a connection's burst of streams) would be one drop of up to 64
    // datagrams, and the drops identity (datagrams sent less read = dropped) would not hold.
    sock.gro_off()
        .map_err(|e| anyhow::anyhow!("turning UDP_GRO off on the HTTP/3 socket {addr}: {e}"))?;
    if let Some(bytes) = o.rcvbuf {
        sock.set_rcvbuf(bytes)
            .map_err(|e| anyhow::anyhow!("setting the HTTP/3 socket's rcvbuf to {bytes}: {e}"))?;
    }
    Ok(sock)
}

/// A response being written: its HEADERS, DATA head and inline body first, then pattern bytes.
struct Out {
    prefix: Vec<u8>,
    sent: usize,
    pattern_off: u64,
    pattern_left: u64,
    status: u16,
}

struct Conn {
    quic: quinn_proto::Connection,
    established: bool,
    /// Its TLS accepted 0-RTT data: latched when seen, since the stack drops the 0-RTT keys
    /// once 1-RTT packets arrive, which can be in the datagram that completes the handshake.
    early: bool,
    control: bool,
    readers: HashMap<StreamId, FrameReader>,
    outs: HashMap<StreamId, Out>,
    /// The earliest of its entries in the timer heap (None: none due before a later one).
    armed: Option<Instant>,
}

/// The HTTP/3 loop: runs until `stop()`.
pub fn run(
    mut sock: UdpSock,
    ctx: &Ctx,
    counters: &Counters,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<()> {
    let o = ctx.cfg.http3.clone().unwrap_or_default();
    let tls = ctx
        .cfg
        .tls
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("HTTP/3 needs the server's TLS settings"))?;
    let config = server_config(tls, &o, ctx.cfg.max_streams)?;
    let mut endpoint = Endpoint::new(
        Arc::new(EndpointConfig::default()),
        Some(config),
        true,
        None,
    );
    let mut conns: HashMap<ConnectionHandle, Conn> = HashMap::new();
    let mut batch = RecvBatch::default();
    let mut sleeping: Vec<(Instant, ConnectionHandle, StreamId, Response)> = Vec::new();
    let mut tx = Tx::default();
    let segments = sock.offload().gso_segments;
    // Only connections with work are touched in a turn (a datagram, a due timer, a response
    // whose service time is over): walking all of them each turn cost the flood's server
    // most of its time once thousands waited. A connection's timer enters the heap when it
    // is earlier than the one it has there; a later or stale entry only wakes it for nothing.
    let mut ready: HashSet<ConnectionHandle> = HashSet::new();
    let mut timers: BinaryHeap<Reverse<(Instant, ConnectionHandle)>> = BinaryHeap::new();
    while !stop() {
        let now = Instant::now();
        let timer = timers
            .peek()
            .map(|Reverse((t, _))| *t)
            .into_iter()
            .chain(sleeping.iter().map(|s| s.0))
            .min();
        let wait = timer.map_or(TICK, |t| t.saturating_duration_since(now).min(TICK));
        if tx.queue.is_empty() {
            sock.wait_readable(Some(wait))?;
        }
        let now = Instant::now();
        while sock.recv(&mut batch)? > 0 {
            for (m, bytes) in batch.iter() {
                for d in bytes.chunks(m.stride.max(1)) {
                    count_datagram(d, counters);
                    let mut buf = Vec::new();
                    match endpoint.handle(now, m.from, None, None, BytesMut::from(d), &mut buf) {
                        Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                            if let Some(c) = conns.get_mut(&h) {
                                c.early |= c.quic.has_0rtt();
                                c.quic.handle_event(ev);
                                ready.insert(h);
                            }
                        }
                        Some(DatagramEvent::Response(t)) => {
                            tx.push(t.destination, &buf[..t.size], t.segment_size)
                        }
                        Some(DatagramEvent::NewConnection(inc)) => {
                            counters.h3_incoming.fetch_add(1, Relaxed);
                            if o.retry && !inc.remote_address_validated() && inc.may_retry() {
                                if let Ok(t) = endpoint.retry(inc, &mut buf) {
                                    counters.h3_retries.fetch_add(1, Relaxed);
                                    tx.push(t.destination, &buf[..t.size], t.segment_size);
                                }
                                continue;
                            }
                            match endpoint.accept(inc, now, &mut buf, None) {
                                Ok((h, quic)) => {
                                    ready.insert(h);
                                    conns.insert(
                                        h,
                                        Conn {
                                            early: quic.has_0rtt(),
                                            quic,
                                            established: false,
                                            control: false,
                                            readers: HashMap::new(),
                                            outs: HashMap::new(),
                                            armed: None,
                                        },
                                    );
                                }
                                Err(e) => {
                                    if let Some(t) = e.response {
                                        tx.push(t.destination, &buf[..t.size], t.segment_size);
                                    }
                                }
                            }
                        }
                        None => {}
                    }
                }
            }
        }
        // Timers, then each connection's events and output.
        let due: Vec<_> = {
            let (d, later): (Vec<_>, Vec<_>) = sleeping.drain(..).partition(|s| s.0 <= now);
            sleeping = later;
            d
        };
        let slept = Duration::from_micros(ctx.cfg.service_time_us);
        for (at, h, id, resp) in due {
            if let Some(c) = conns.get_mut(&h) {
                // Due its service time after it was read (the latency split's service).
                if let Some(read_at) = at.checked_sub(slept) {
                    counters.record_service(read_at);
                }
                start_response(c, id, &resp);
                ready.insert(h);
            }
        }
        while let Some(&Reverse((t, h))) = timers.peek() {
            if t > now {
                break;
            }
            timers.pop();
            if let Some(c) = conns.get_mut(&h) {
                if c.armed == Some(t) {
                    c.armed = None;
                }
                ready.insert(h);
            }
        }
        for h in ready.drain() {
            let Some(c) = conns.get_mut(&h) else {
                continue;
            };
            if c.quic.poll_timeout().is_some_and(|t| t <= now) {
                c.quic.handle_timeout(now);
            }
            while let Some(ev) = c.quic.poll_endpoint_events() {
                if let Some(back) = endpoint.handle_event(h, ev) {
                    c.quic.handle_event(back);
                }
            }
            events(c, h, ctx, counters, &mut sleeping);
            write_bodies(c, ctx, counters);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let Some(t) = c.quic.poll_transmit(now, segments, &mut buf) else {
                    break;
                };
                tx.push(t.destination, &buf[..t.size], t.segment_size);
            }
            while let Some(ev) = c.quic.poll_endpoint_events() {
                if let Some(back) = endpoint.handle_event(h, ev) {
                    c.quic.handle_event(back);
                }
            }
            if c.quic.is_drained() {
                conns.remove(&h);
            } else if let Some(t) = c.quic.poll_timeout() {
                if !matches!(c.armed, Some(a) if a <= t) {
                    c.armed = Some(t);
                    timers.push(Reverse((t, h)));
                }
            }
        }
        tx.send(&mut sock)?;
    }
    // What reached the socket and was not dropped is counted read, the datagrams left in its
    // queue at the stop too (not served): the drops identity's "read" is then complete.
    while sock.recv(&mut batch)? > 0 {
        for (m, bytes) in batch.iter() {
            bytes
                .chunks(m.stride.max(1))
                .for_each(|d| count_datagram(d, counters));
        }
    }
    Ok(())
}

/// Counts a datagram read from the socket, and whether its first packet is an Initial (the
/// capture's rule, `sys::quic_packets`): what the kernel did not drop, for the drops identity.
fn count_datagram(d: &[u8], counters: &Counters) {
    counters.h3_datagrams_in.fetch_add(1, Relaxed);
    if initial_version(d).is_some() {
        counters.h3_initials_in.fetch_add(1, Relaxed);
    }
}

/// Datagram runs made and not yet sent.
#[derive(Default)]
struct Tx {
    queue: Vec<(SocketAddr, usize, usize, Option<usize>)>,
    out: Vec<u8>,
}

impl Tx {
    fn push(&mut self, to: SocketAddr, data: &[u8], segment: Option<usize>) {
        let start = self.out.len();
        self.out.extend_from_slice(data);
        self.queue.push((to, start, self.out.len(), segment));
    }

    /// Sends what the socket takes; a refused GSO run is cut into single datagrams.
    fn send(&mut self, sock: &mut UdpSock) -> io::Result<()> {
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
            let before = sock.offload().gso_segments;
            let sent = sock.send(&items)?;
            drop(items);
            self.queue.drain(..sent);
            if sent == 0 {
                if sock.offload().gso_segments == before {
                    return Ok(()); // the socket is full: the rest goes next turn
                }
                let mut q = Vec::new();
                for (to, s, e, seg) in self.queue.drain(..) {
                    let seg = seg.unwrap_or(e - s);
                    let mut a = s;
                    while a < e {
                        q.push((to, a, (a + seg).min(e), None));
                        a = (a + seg).min(e);
                    }
                }
                self.queue = q;
            }
        }
        self.out.clear();
        Ok(())
    }
}

fn events(
    c: &mut Conn,
    h: ConnectionHandle,
    ctx: &Ctx,
    counters: &Counters,
    sleeping: &mut Vec<(Instant, ConnectionHandle, StreamId, Response)>,
) {
    while let Some(ev) = c.quic.poll() {
        match ev {
            Event::Connected => {
                handshake_done(c, counters);
                open_control(c);
            }
            // A client answered in 0.5-RTT (after 0-RTT requests) may close in the packet that
            // carries its Finished: the stack then reports no Connected, but the handshake
            // completed all the same (its TLS is done).
            Event::ConnectionLost { .. }
                if !c.established && !c.quic.crypto_session().is_handshaking() =>
            {
                handshake_done(c, counters);
            }
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = c.quic.streams().accept(dir) {
                    if dir == Dir::Bi {
                        c.readers.insert(id, FrameReader::default());
                    }
                    read(c, h, id, ctx, counters, sleeping);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => read(c, h, id, ctx, counters, sleeping),
            Event::Stream(StreamEvent::Stopped { id, .. }) => {
                c.outs.remove(&id);
            }
            _ => {}
        }
    }
}

/// The connection's handshake completed: counted, with 0-RTT when its TLS accepted early data.
fn handshake_done(c: &mut Conn, counters: &Counters) {
    c.established = true;
    counters.h3_handshakes.fetch_add(1, Relaxed);
    // Server side, 0-RTT keys exist only when its TLS accepted the early data
    // (`accepted_0rtt` is the client's view).
    if c.early || c.quic.has_0rtt() {
        counters.h3_0rtt.fetch_add(1, Relaxed);
    }
}

/// Opens the server's control stream with its SETTINGS (RFC 9114 6.2.1).
fn open_control(c: &mut Conn) {
    if c.control {
        return;
    }
    if let Some(id) = c.quic.streams().open(Dir::Uni) {
        let _ = c
            .quic
            .send_stream(id)
            .write(&codec::control_stream_opening());
        c.control = true;
    }
}

/// Reads a stream: a request's HEADERS start its response; the client's own unidirectional
/// streams (control, QPACK) are read and dropped.
fn read(
    c: &mut Conn,
    h: ConnectionHandle,
    id: StreamId,
    ctx: &Ctx,
    counters: &Counters,
    sleeping: &mut Vec<(Instant, ConnectionHandle, StreamId, Response)>,
) {
    let mut frames = Vec::new();
    let mut bad = false;
    {
        let mut recv = c.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut reader = c.readers.get_mut(&id);
        while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
            if let Some(r) = reader.as_deref_mut() {
                bad |= r.feed(&chunk.bytes, &mut frames).is_err();
            }
        }
        let _ = chunks.finalize();
    }
    if bad {
        c.readers.remove(&id);
        let _ = c.quic.send_stream(id).reset(codec::H3_FRAME_ERROR.into());
        return;
    }
    let Some(fields) = frames.into_iter().find_map(|f| match f {
        StreamFrame::Headers(f) => Some(f),
        _ => None,
    }) else {
        return;
    };
    // One request per stream: later bytes (a body) are not read for.
    c.readers.remove(&id);
    counters.h3_streams.fetch_add(1, Relaxed);
    let read_at = Instant::now();
    let text = |n: &str| {
        codec::field(&fields, n)
            .and_then(|v| std::str::from_utf8(v).ok())
            .unwrap_or("")
            .to_string()
    };
    let parse = parse_of(&text(":method"), &text(":path"));
    core::count_request(&parse, counters);
    let resp = match super::dynamic::request_of(&parse, true) {
        Some(d) => super::dynamic::finish(&d, ctx.dynamic.execute(d.endpoint), counters),
        None => core::respond(&ctx.catalog, &parse, true),
    };
    let st_us = ctx.cfg.service_time_us;
    if matches!(parse, super::http::Parse::Done(_)) && st_us > 0 {
        match ctx.cfg.service {
            ServiceKind::Cpu => super::work::burn(st_us * 1000),
            ServiceKind::Sleep => {
                sleeping.push((read_at + Duration::from_micros(st_us), h, id, resp));
                return;
            }
        }
    }
    counters.record_service(read_at);
    start_response(c, id, &resp);
}

/// Queues a response made for HTTP/1.x as HTTP/3: HEADERS (status, type, length), one DATA
/// frame with the inline body then the pattern bytes.
fn start_response(c: &mut Conn, id: StreamId, resp: &Response) {
    let (ctype, inline) = split_head(&resp.head);
    let len = inline.len() as u64 + resp.body_len;
    let len_s = len.to_string();
    let status = resp.status.to_string();
    let mut prefix = codec::headers_frame(&[
        (":status", &status),
        ("server", "synlab"),
        ("content-type", ctype.unwrap_or("application/octet-stream")),
        ("content-length", &len_s),
    ]);
    if len > 0 {
        codec::put_frame_head(&mut prefix, codec::FRAME_DATA, len);
        prefix.extend_from_slice(inline);
    }
    c.outs.insert(
        id,
        Out {
            prefix,
            sent: 0,
            pattern_off: 0,
            pattern_left: resp.body_len,
            status: resp.status,
        },
    );
}

/// Writes what the streams' flow control takes; a response written whole ends its stream and
/// is counted.
fn write_bodies(c: &mut Conn, ctx: &Ctx, counters: &Counters) {
    let mut done = Vec::new();
    for (id, o) in c.outs.iter_mut() {
        let mut s = c.quic.send_stream(*id);
        loop {
            let chunk: &[u8] = if o.sent < o.prefix.len() {
                &o.prefix[o.sent..]
            } else if o.pattern_left > 0 {
                let start = (o.pattern_off % PATTERN_BUF_LEN as u64) as usize;
                let k = (PATTERN_BUF_LEN - start).min(o.pattern_left as usize);
                &ctx.pattern[start..start + k]
            } else {
                let _ = s.finish();
                done.push((*id, o.status));
                break;
            };
            match s.write(chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    counters.bytes_out.fetch_add(n as u64, Relaxed);
                    if o.sent < o.prefix.len() {
                        o.sent += n;
                    } else {
                        o.pattern_off += n as u64;
                        o.pattern_left -= n as u64;
                    }
                }
            }
        }
    }
    for (id, status) in done {
        c.outs.remove(&id);
        core::count_status(status, counters);
    }
}
