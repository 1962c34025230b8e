//! The server role, for the built-in target: requests in as events, responses out as HEADERS
//! and DATA under the client's flow-control windows. The stream limit: SETTINGS_MAX_CONCURRENT_
//! STREAMS is announced; a stream beyond it is held until one ends while our SETTINGS are not
//! yet acknowledged (the client could not know the limit), and refused with REFUSED_STREAM after.

use super::conn::{err, ConnError, Core, Stall, Stats, StreamFrame};
use super::frame::{self, ErrorCode, Settings};
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// SETTINGS_MAX_CONCURRENT_STREAMS (`target.max_streams`).
    pub max_streams: u32,
    /// Our receive windows (request bodies are not served, so these stay small).
    pub stream_window: u32,
    pub conn_window: u32,
}

/// nginx's `http2_max_concurrent_streams` default.
pub const DEFAULT_MAX_STREAMS: u32 = 128;

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_streams: DEFAULT_MAX_STREAMS,
            stream_window: frame::DEFAULT_WINDOW,
            conn_window: frame::DEFAULT_WINDOW,
        }
    }
}

/// A request's head as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestHead {
    pub method: String,
    pub scheme: String,
    pub authority: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// A request to answer with [`Server::respond`].
    Request { stream: u32, head: RequestHead },
    /// The client reset a stream (its response, if any, is dropped).
    Reset { stream: u32, code: ErrorCode },
    /// A response was queued whole (its last DATA frame is in the output).
    Sent { stream: u32, status: u16 },
    /// The client is going away.
    GoAway { code: ErrorCode },
}

struct Stream {
    send_window: i64,
    status: u16,
    /// The response's body: total and sent; None until [`Server::respond`].
    body: Option<(u64, u64)>,
    stall: Stall,
}

/// Appends the next `n` body bytes of `stream` from `offset` to the output.
pub type BodyFn<'a> = dyn FnMut(u32, u64, usize, &mut Vec<u8>) + 'a;

pub struct Server {
    core: Core,
    opts: ServerOptions,
    streams: HashMap<u32, Stream>,
    /// Streams beyond the limit received before our SETTINGS were acknowledged.
    waiting: VecDeque<(u32, RequestHead)>,
    /// Streams whose body has bytes to send, in turn.
    sending: VecDeque<u32>,
    last_client_stream: u32,
    events: VecDeque<ServerEvent>,
}

impl Server {
    /// A new connection: our SETTINGS (the server preface) are queued.
    pub fn new(opts: ServerOptions) -> Server {
        let local = Settings {
            max_concurrent_streams: Some(opts.max_streams),
            initial_window_size: opts.stream_window.clamp(1, frame::MAX_WINDOW),
            ..Settings::default()
        };
        Server {
            core: Core::new(true, local, opts.conn_window),
            opts,
            streams: HashMap::new(),
            waiting: VecDeque::new(),
            sending: VecDeque::new(),
            last_client_stream: 0,
            events: VecDeque::new(),
        }
    }

    pub fn pending_output(&self) -> &[u8] {
        self.core.pending()
    }

    pub fn advance_output(&mut self, n: usize, now: Instant) {
        self.core.advance(n, now)
    }

    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    pub fn stats(&self) -> &Stats {
        &self.core.stats
    }

    /// Streams being served and held.
    pub fn active(&self) -> usize {
        self.streams.len() + self.waiting.len()
    }

    /// Asks the client to go away (after the streams it opened so far).
    pub fn go_away(&mut self) {
        if self.core.error.is_none() {
            frame::write_goaway(
                &mut self.core.out,
                self.last_client_stream,
                ErrorCode::NoError,
            );
        }
    }

    pub fn feed(&mut self, bytes: &[u8], now: Instant) -> Result<(), ConnError> {
        self.core.feed(bytes);
        while let Some(f) = self.core.next_frame(now)? {
            if let Err(e) = self.on_frame(f, now) {
                return Err(self.core.fail(e));
            }
        }
        Ok(())
    }

    /// Queues a response's head; `body_len` bytes follow through [`Self::fill`]. False when
    /// the stream is gone (reset by the client).
    pub fn respond(
        &mut self,
        stream: u32,
        status: u16,
        headers: &[(&str, &str)],
        body_len: u64,
    ) -> bool {
        let Some(s) = self.streams.get_mut(&stream) else {
            return false;
        };
        s.status = status;
        let st = status.to_string();
        let mut fields: Vec<(&[u8], &[u8])> = vec![(b":status", st.as_bytes())];
        fields.extend(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        self.core.send_headers(stream, &fields, body_len == 0);
        if body_len == 0 {
            self.end_stream(stream);
        } else {
            self.streams.get_mut(&stream).expect("got above").body = Some((body_len, 0));
            self.sending.push_back(stream);
        }
        true
    }

    /// Queues DATA frames while the windows allow and the output holds under `max_out`
    /// bytes; `body(stream, offset, n, out)` appends the next `n` body bytes of a stream.
    pub fn fill(&mut self, now: Instant, max_out: usize, body: &mut BodyFn<'_>) {
        let mut turns = self.sending.len();
        while turns > 0 && self.core.out.len() < max_out {
            if self.core.send_window <= 0 {
                if self.core.send_stall.start(now) {
                    self.core.stats.conn_window_stalls += 1;
                }
                return;
            }
            let Some(id) = self.sending.pop_front() else {
                return;
            };
            turns -= 1;
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            let Some((total, sent)) = s.body else {
                continue;
            };
            if s.send_window <= 0 {
                // Back in turn when its WINDOW_UPDATE comes.
                if s.stall.start(now) {
                    self.core.stats.stream_window_stalls += 1;
                }
                continue;
            }
            let n = (total - sent)
                .min(s.send_window as u64)
                .min(self.core.send_window as u64)
                .min(self.core.peer.max_frame_size as u64) as usize;
            let last = sent + n as u64 == total;
            frame::write_head(
                &mut self.core.out,
                n,
                frame::DATA,
                if last { frame::FLAG_END_STREAM } else { 0 },
                id,
            );
            let before = self.core.out.len();
            body(id, sent, n, &mut self.core.out);
            debug_assert_eq!(
                self.core.out.len() - before,
                n,
                "the body callback must append n bytes"
            );
            s.send_window -= n as i64;
            s.body = Some((total, sent + n as u64));
            self.core.send_window -= n as i64;
            self.core.stats.data_out += n as u64;
            if last {
                self.end_stream(id);
            } else {
                self.sending.push_back(id);
                turns += 1;
            }
        }
    }

    /// The response of `stream` is queued whole: free its place for a held stream.
    fn end_stream(&mut self, stream: u32) {
        if let Some(s) = self.streams.remove(&stream) {
            self.core.stats.streams_done += 1;
            self.events.push_back(ServerEvent::Sent {
                stream,
                status: s.status,
            });
        }
        self.admit_waiting();
    }

    fn admit_waiting(&mut self) {
        while self.streams.len() < self.opts.max_streams as usize {
            let Some((id, head)) = self.waiting.pop_front() else {
                return;
            };
            self.open(id, head);
        }
    }

    fn open(&mut self, id: u32, head: RequestHead) {
        self.streams.insert(
            id,
            Stream {
                send_window: self.core.peer.initial_window_size as i64,
                status: 0,
                body: None,
                stall: Stall::default(),
            },
        );
        self.events
            .push_back(ServerEvent::Request { stream: id, head });
    }

    fn on_frame(&mut self, f: StreamFrame, now: Instant) -> Result<(), ConnError> {
        match f {
            StreamFrame::Settings { window_delta } => {
                for s in self.streams.values_mut() {
                    s.send_window += window_delta;
                }
            }
            StreamFrame::SettingsAck => {}
            StreamFrame::GoAway { code, .. } => self.events.push_back(ServerEvent::GoAway { code }),
            StreamFrame::WindowUpdate { stream: 0, .. } => {
                if let Some(d) = self.core.send_stall.end(now) {
                    self.core.stats.conn_window_stalled += d;
                }
            }
            StreamFrame::WindowUpdate { stream, inc } => {
                if let Some(s) = self.streams.get_mut(&stream) {
                    let was_blocked = s.send_window <= 0;
                    s.send_window += inc as i64;
                    if s.send_window > frame::MAX_WINDOW as i64 {
                        return Err(err(
                            ErrorCode::FlowControlError,
                            "a stream window grew past 2^31-1",
                        ));
                    }
                    if let Some(d) = s.stall.end(now) {
                        self.core.stats.stream_window_stalled += d;
                    }
                    if was_blocked
                        && s.send_window > 0
                        && s.body.is_some()
                        && !self.sending.contains(&stream)
                    {
                        self.sending.push_back(stream);
                    }
                }
            }
            StreamFrame::Reset { stream, code } => {
                self.waiting.retain(|(id, _)| *id != stream);
                if self.streams.remove(&stream).is_some() {
                    self.sending.retain(|&id| id != stream);
                    self.admit_waiting();
                }
                self.events.push_back(ServerEvent::Reset { stream, code });
            }
            StreamFrame::Data { .. } => {} // request bodies are not served; the window is given back
            StreamFrame::Headers { stream, block, .. } => {
                let mut head = RequestHead::default();
                self.core.decode(&block, |n, v| {
                    let v = String::from_utf8_lossy(v).into_owned();
                    match n {
                        b":method" => head.method = v,
                        b":scheme" => head.scheme = v,
                        b":authority" => head.authority = v,
                        b":path" => head.path = v,
                        _ => {}
                    }
                })?;
                self.core.recycle(block);
                if stream % 2 == 0 {
                    return Err(err(
                        ErrorCode::ProtocolError,
                        "the client opened an even stream",
                    ));
                }
                if stream <= self.last_client_stream {
                    // Trailers of a stream already open, or a reused id.
                    if self.streams.contains_key(&stream)
                        || self.waiting.iter().any(|(id, _)| *id == stream)
                    {
                        return Ok(());
                    }
                    return Err(err(ErrorCode::ProtocolError, "a stream id was reused"));
                }
                self.last_client_stream = stream;
                self.core.peer_max_stream = stream;
                self.core.stats.streams += 1;
                if self.streams.len() < self.opts.max_streams as usize && self.waiting.is_empty() {
                    self.open(stream, head);
                } else if !self.core.local_acked {
                    self.waiting.push_back((stream, head));
                } else {
                    frame::write_rst_stream(&mut self.core.out, stream, ErrorCode::RefusedStream);
                    self.core.stats.refused += 1;
                }
            }
        }
        Ok(())
    }
}
