//! The client role: requests out as streams, responses in as events keyed by the caller's
//! request token. Sans-IO: the caller feeds what its socket read, sends what
//! [`Client::pending_output`] holds, and passes `now` (no clock is read here).

use super::conn::{err, ConnError, Core, Stall, Stats, StreamFrame};
use super::frame::{self, ErrorCode, Settings};
use super::request_block::RequestEncoder;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

/// The client's choices (h2load's defaults: `-m 1`, `-w 30`, `-W 30`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// Streams at once on this connection at most (`load.streams`, h2load's `-m`); the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS may lower it.
    pub max_streams: u32,
    /// Our receive window per stream and for the connection.
    pub stream_window: u32,
    pub conn_window: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            max_streams: 1,
            stream_window: (1 << 30) - 1,
            conn_window: (1 << 30) - 1,
        }
    }
}

/// The streams a client assumes the server allows until its SETTINGS arrive (RFC 9113
/// §6.5.2 recommends servers allow at least 100).
pub const ASSUMED_MAX_STREAMS: u32 = 100;

/// A request's head.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    pub scheme: &'a str,
    pub authority: &'a str,
    pub path: &'a str,
    /// More header fields (lower-case names).
    pub headers: &'a [(&'a str, &'a str)],
}

/// What happened on the connection, in the order the frames came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The server's SETTINGS (the first: its preface; later ones: changes).
    Settings(Settings),
    /// A response's head arrived (`at`: the feed that brought it, the time of first byte).
    Head {
        token: u64,
        status: u16,
        at: Instant,
    },
    /// A response ended: its header block's wire bytes and its body bytes.
    Done {
        token: u64,
        status: u16,
        header_bytes: u64,
        body_bytes: u64,
        at: Instant,
    },
    /// The server reset the stream (REFUSED_STREAM: it was not processed, retry elsewhere).
    Reset { token: u64, code: ErrorCode },
    /// The server is going away: streams up to `last_stream` still finish.
    GoAway { last_stream: u32, code: ErrorCode },
    /// A stream above a GOAWAY's last-stream-id: the server did not process it (retry).
    NotProcessed { token: u64 },
}

/// Why a request could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("no free stream: {active} of {limit} in flight")]
    NoCapacity { active: usize, limit: u32 },
    #[error("the server sent GOAWAY: open a new connection")]
    GoingAway,
    #[error("the connection's stream ids are used up: open a new connection")]
    IdsExhausted,
    #[error("{0}")]
    Closed(ConnError),
}

/// Hashes a stream id by one multiplication: ids are the client's own odd counter, so
/// SipHash's resistance to chosen keys buys nothing (it was ~2 % of the client's CPU, perf).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = ((self.0 << 8) | b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, id: u32) {
        // An odd multiplier: the low bits (the bucket) stay distinct for ids in a row, the
        // top ones (the table's tags) are mixed.
        self.0 = (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

struct Stream {
    token: u64,
    status: u16,
    recv_window: i64,
    unacked: u32,
    header_bytes: u64,
    body_bytes: u64,
    stall: Stall,
}

/// One HTTP/2 client connection's protocol state.
pub struct Client {
    core: Core,
    opts: ClientOptions,
    streams: IdMap<Stream>,
    next_id: u32,
    events: VecDeque<Event>,
    /// Request header blocks, encoded once per head (the server's table as we filled it).
    heads: RequestEncoder,
}

impl Client {
    /// A new connection: its preface, SETTINGS and connection WINDOW_UPDATE are queued.
    pub fn new(opts: ClientOptions) -> Client {
        let local = Settings {
            enable_push: false,
            initial_window_size: opts.stream_window.clamp(1, frame::MAX_WINDOW),
            ..Settings::default()
        };
        Client {
            core: Core::new(false, local, opts.conn_window),
            opts,
            streams: IdMap::default(),
            next_id: 1,
            events: VecDeque::new(),
            heads: RequestEncoder::default(),
        }
    }

    /// Bytes to send now (the caller writes what the socket takes, then [`Self::advance_output`]).
    pub fn pending_output(&self) -> &[u8] {
        self.core.pending()
    }

    /// `n` bytes of the output were sent at `now`.
    pub fn advance_output(&mut self, n: usize, now: Instant) {
        self.core.advance(n, now)
    }

    /// The server's SETTINGS as they stand (defaults until its first arrives).
    pub fn peer_settings(&self) -> Option<&Settings> {
        self.core.peer_settings_seen.then_some(&self.core.peer)
    }

    /// Streams in flight.
    pub fn active(&self) -> usize {
        self.streams.len()
    }

    /// The streams allowed at once now: ours (M) and the server's limit.
    pub fn limit(&self) -> u32 {
        let server = match self.core.peer_settings_seen {
            true => self.core.peer.max_concurrent_streams.unwrap_or(u32::MAX),
            false => ASSUMED_MAX_STREAMS,
        };
        self.opts.max_streams.min(server)
    }

    /// Changes M (a live change of `load.streams`): streams above a lower M finish, none
    /// new start until the count is under it.
    pub fn set_max_streams(&mut self, m: u32) {
        self.opts.max_streams = m.max(1);
    }

    /// How many more requests may start now (0 after GOAWAY or an error).
    pub fn capacity(&self) -> usize {
        if self.core.error.is_some()
            || self.core.goaway_received.is_some()
            || self.next_id > frame::MAX_WINDOW
        {
            return 0;
        }
        (self.limit() as usize).saturating_sub(self.streams.len())
    }

    /// Sends a request on a new stream; its events carry `token`. Returns the stream id.
    pub fn start_request(&mut self, token: u64, req: &Request<'_>) -> Result<u32, StartError> {
        if let Some(e) = self.core.error {
            return Err(StartError::Closed(e));
        }
        if self.core.goaway_received.is_some() {
            return Err(StartError::GoingAway);
        }
        if self.next_id > frame::MAX_WINDOW {
            return Err(StartError::IdsExhausted);
        }
        if self.capacity() == 0 {
            return Err(StartError::NoCapacity {
                active: self.streams.len(),
                limit: self.limit(),
            });
        }
        let id = self.next_id;
        self.next_id += 2;
        let pseudo: [(&[u8], &[u8]); 4] = [
            (b":method", req.method.as_bytes()),
            (b":scheme", req.scheme.as_bytes()),
            (b":authority", req.authority.as_bytes()),
            (b":path", req.path.as_bytes()),
        ];
        let fields = pseudo.into_iter().chain(
            req.headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        );
        let (block, plain) = self.heads.block(fields);
        self.core.send_block(id, block, plain, true);
        self.core.stats.streams += 1;
        self.streams.insert(
            id,
            Stream {
                token,
                status: 0,
                recv_window: self.core.local.initial_window_size as i64,
                unacked: 0,
                header_bytes: 0,
                body_bytes: 0,
                stall: Stall::default(),
            },
        );
        Ok(id)
    }

    /// Says goodbye (GOAWAY NO_ERROR): the caller closes after sending it.
    pub fn close(&mut self) {
        if self.core.error.is_none() {
            frame::write_goaway(&mut self.core.out, 0, ErrorCode::NoError);
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    pub fn stats(&self) -> &Stats {
        &self.core.stats
    }

    /// True once a connection error ended it (its GOAWAY is in the output).
    pub fn is_failed(&self) -> Option<ConnError> {
        self.core.error
    }

    /// Takes in bytes the socket read at `now`; events queue up for [`Self::poll_event`].
    pub fn feed(&mut self, bytes: &[u8], now: Instant) -> Result<(), ConnError> {
        self.core.feed(bytes);
        while let Some(f) = self.core.next_frame(now)? {
            if let Err(e) = self.on_frame(f, now) {
                return Err(self.core.fail(e));
            }
        }
        Ok(())
    }

    fn on_frame(&mut self, f: StreamFrame, now: Instant) -> Result<(), ConnError> {
        match f {
            StreamFrame::Settings { .. } => {
                self.heads.peer_table_size(self.core.peer.header_table_size);
                self.events.push_back(Event::Settings(self.core.peer))
            }
            StreamFrame::SettingsAck | StreamFrame::WindowUpdate { .. } => {}
            StreamFrame::GoAway { last_stream, code } => {
                let mut gone: Vec<u32> = self
                    .streams
                    .keys()
                    .copied()
                    .filter(|&id| id > last_stream)
                    .collect();
                gone.sort_unstable();
                self.events.push_back(Event::GoAway { last_stream, code });
                for id in gone {
                    let s = self.streams.remove(&id).expect("listed above");
                    self.events
                        .push_back(Event::NotProcessed { token: s.token });
                }
            }
            StreamFrame::Reset { stream, code } => {
                if let Some(s) = self.streams.remove(&stream) {
                    if code == ErrorCode::RefusedStream {
                        self.core.stats.refused += 1;
                    }
                    self.events.push_back(Event::Reset {
                        token: s.token,
                        code,
                    });
                }
            }
            StreamFrame::Headers {
                stream,
                block,
                end_stream,
            } => {
                let mut status = None;
                self.core.decode(&block, |n, v| {
                    if n == b":status" {
                        status = std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.parse::<u16>().ok());
                    }
                })?;
                let block_len = block.len() as u64;
                self.core.recycle(block);
                if stream % 2 == 0 {
                    return Err(err(ErrorCode::ProtocolError, "the server opened a stream"));
                }
                let Some(s) = self.streams.get_mut(&stream) else {
                    return Ok(()); // a stream we no longer track (reset): HPACK state is kept
                };
                s.header_bytes += block_len;
                // 1xx heads are interim: the final one follows.
                if s.status == 0 {
                    match status {
                        Some(st) if st >= 200 => {
                            s.status = st;
                            self.events.push_back(Event::Head {
                                token: s.token,
                                status: st,
                                at: now,
                            });
                        }
                        Some(_) => {}
                        None => {
                            frame::write_rst_stream(
                                &mut self.core.out,
                                stream,
                                ErrorCode::ProtocolError,
                            );
                            let s = self.streams.remove(&stream).expect("got above");
                            self.events.push_back(Event::Reset {
                                token: s.token,
                                code: ErrorCode::ProtocolError,
                            });
                            return Ok(());
                        }
                    }
                }
                if end_stream {
                    self.finish(stream, now);
                }
            }
            StreamFrame::Data {
                stream,
                flow,
                len,
                end_stream,
            } => {
                let Some(s) = self.streams.get_mut(&stream) else {
                    return Ok(());
                };
                s.recv_window -= flow as i64;
                if s.recv_window < 0 {
                    return Err(err(
                        ErrorCode::FlowControlError,
                        "the server sent more DATA than a stream's window allows",
                    ));
                }
                if s.recv_window == 0 && s.stall.start(now) {
                    self.core.stats.stream_window_stalls += 1;
                }
                s.body_bytes += len as u64;
                s.unacked += flow;
                if end_stream {
                    self.finish(stream, now);
                } else if s.unacked >= self.core.local.initial_window_size / 2 {
                    frame::write_window_update(&mut self.core.out, stream, s.unacked);
                    s.recv_window += s.unacked as i64;
                    s.unacked = 0;
                    let stall = std::mem::take(&mut s.stall);
                    self.core.stream_stalls_pending.push(stall);
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, stream: u32, now: Instant) {
        if let Some(mut s) = self.streams.remove(&stream) {
            if let Some(d) = s.stall.end(now) {
                self.core.stats.stream_window_stalled += d;
            }
            self.core.stats.streams_done += 1;
            self.events.push_back(Event::Done {
                token: s.token,
                status: s.status,
                header_bytes: s.header_bytes,
                body_bytes: s.body_bytes,
                at: now,
            });
        }
    }
}
