//! What both roles of a connection share: the receive buffer cut into frames, the output
//! buffer, both sides' SETTINGS, the connection's flow-control windows, PING answers, HPACK
//! and its byte counts, and the connection error that ends it with a GOAWAY.

use super::frame::{self, ErrorCode, Head, Settings};
use std::fmt;
use std::time::{Duration, Instant};

/// A connection error (RFC 9113 §5.4.1): the connection is over; a GOAWAY with `code` was
/// queued for the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnError {
    pub code: ErrorCode,
    pub reason: &'static str,
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 connection error {}: {}", self.code, self.reason)
    }
}

impl std::error::Error for ConnError {}

pub(crate) fn err(code: ErrorCode, reason: &'static str) -> ConnError {
    ConnError { code, reason }
}

/// Counts of one connection, both roles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Streams opened (client: requests sent; server: requests received, refused ones too).
    pub streams: u64,
    /// Streams that ended with a whole response (client: received; server: sent).
    pub streams_done: u64,
    /// Streams refused with REFUSED_STREAM (client: by the server; server: by us).
    pub refused: u64,
    /// RST_STREAM frames received, any code (REFUSED_STREAM included).
    pub resets_received: u64,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// PINGs answered.
    pub pings: u64,
    /// Header block bytes as HPACK put them on the wire, sent and received.
    pub header_wire_out: u64,
    pub header_wire_in: u64,
    /// The same headers as `name: value\r\n` lines (their HTTP/1.1 size), sent and received:
    /// HPACK's saving is 1 - wire / plain.
    pub header_plain_out: u64,
    pub header_plain_in: u64,
    /// DATA payload bytes received and sent.
    pub data_in: u64,
    pub data_out: u64,
    /// Times a flow-control window stood at 0 and for how long. Client: our receive windows
    /// (from the bytes that used them up until our WINDOW_UPDATE left); server: the client's
    /// windows while a response had bytes to send.
    pub conn_window_stalls: u64,
    pub conn_window_stalled: Duration,
    pub stream_window_stalls: u64,
    pub stream_window_stalled: Duration,
}

impl Stats {
    /// HPACK's saving over both directions, 0..1 (h2load's "space savings").
    pub fn hpack_saving(&self) -> f64 {
        let plain = self.header_plain_out + self.header_plain_in;
        let wire = self.header_wire_out + self.header_wire_in;
        if plain == 0 {
            0.0
        } else {
            1.0 - wire as f64 / plain as f64
        }
    }
}

/// A frame for a stream, handed to the role.
pub(crate) enum StreamFrame {
    /// A complete header block (HEADERS + CONTINUATIONs).
    Headers {
        stream: u32,
        block: Vec<u8>,
        end_stream: bool,
    },
    /// DATA: `flow` bytes counted against the windows (padding included), `len` of content.
    Data {
        stream: u32,
        flow: u32,
        len: u32,
        end_stream: bool,
    },
    Reset {
        stream: u32,
        code: ErrorCode,
    },
    WindowUpdate {
        stream: u32,
        inc: u32,
    },
    /// The peer's SETTINGS were applied; `window_delta` moves every stream's send window.
    Settings {
        window_delta: i64,
    },
    /// Our SETTINGS were acknowledged.
    SettingsAck,
    GoAway {
        last_stream: u32,
        code: ErrorCode,
    },
}

/// A window at 0 since when (the stall being timed).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stall(Option<Instant>);

impl Stall {
    /// Starts timing (once) when the window is used up.
    pub fn start(&mut self, now: Instant) -> bool {
        if self.0.is_none() {
            self.0 = Some(now);
            return true;
        }
        false
    }

    /// Stops timing; the time it stood.
    pub fn end(&mut self, now: Instant) -> Option<Duration> {
        self.0.take().map(|t| now.saturating_duration_since(t))
    }
}

pub(crate) struct Core {
    inbuf: Vec<u8>,
    /// Bytes of `inbuf` already cut into frames (dropped in one go after the feed).
    pos: usize,
    pub out: Vec<u8>,
    pub local: Settings,
    pub peer: Settings,
    preface_seen: bool,
    pub peer_settings_seen: bool,
    pub local_acked: bool,
    /// What we may still send on the connection / what the peer may still send us.
    pub send_window: i64,
    pub recv_window: i64,
    /// Our connection window's full size; a WINDOW_UPDATE goes out when half is used.
    pub conn_window: u32,
    recv_unacked: u32,
    /// Our receive window stood at 0 since; ends when the update leaves (`advance_output`).
    pub recv_stall: Stall,
    /// Server role: the peer's connection window stood at 0 while we had DATA to send.
    pub send_stall: Stall,
    /// Stream receive stalls that end when the queued WINDOW_UPDATEs leave.
    pub stream_stalls_pending: Vec<Stall>,
    pub enc: loona_hpack::Encoder<'static>,
    pub dec: super::hpack::Decoder,
    /// A spent header block's buffer, given back (`recycle`) for the next HEADERS: one
    /// allocation per connection, not one per response.
    spare_block: Vec<u8>,
    /// A header block being continued: stream, END_STREAM, the bytes so far.
    cont: Option<(u32, bool, Vec<u8>)>,
    /// The highest stream id the peer opened (a GOAWAY's last-stream-id).
    pub peer_max_stream: u32,
    pub goaway_received: Option<(u32, ErrorCode)>,
    pub error: Option<ConnError>,
    pub stats: Stats,
}

/// The `name: value\r\n` size of a header field.
pub(crate) fn plain_len(name: &[u8], value: &[u8]) -> u64 {
    (name.len() + value.len() + 4) as u64
}

impl Core {
    pub fn new(server_role: bool, local: Settings, conn_window: u32) -> Core {
        let mut out = Vec::with_capacity(256);
        if !server_role {
            out.extend_from_slice(frame::PREFACE);
        }
        local.write(&mut out);
        let conn_window = conn_window.clamp(frame::DEFAULT_WINDOW, frame::MAX_WINDOW);
        if conn_window > frame::DEFAULT_WINDOW {
            frame::write_window_update(&mut out, 0, conn_window - frame::DEFAULT_WINDOW);
        }
        Core {
            inbuf: Vec::new(),
            pos: 0,
            out,
            local,
            peer: Settings::default(),

            preface_seen: !server_role,
            peer_settings_seen: false,
            local_acked: false,
            send_window: frame::DEFAULT_WINDOW as i64,
            recv_window: conn_window as i64,
            conn_window,
            recv_unacked: 0,
            recv_stall: Stall::default(),
            send_stall: Stall::default(),
            stream_stalls_pending: Vec::new(),
            enc: loona_hpack::Encoder::new(),
            dec: super::hpack::Decoder::new(local.header_table_size as usize),
            spare_block: Vec::new(),
            cont: None,
            peer_max_stream: 0,
            goaway_received: None,
            error: None,
            stats: Stats::default(),
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            // The frames cut out go; a partial one left moves to the front (the buffer would
            // otherwise grow, and be copied as it grew, until a read ended on a frame's end).
            self.inbuf.drain(..self.pos);
            self.pos = 0;
        }
        self.inbuf.extend_from_slice(bytes);
    }

    /// Ends the connection with a GOAWAY carrying `e` (once) and returns it.
    pub fn fail(&mut self, e: ConnError) -> ConnError {
        if self.error.is_none() {
            frame::write_goaway(&mut self.out, self.peer_max_stream, e.code);
            self.error = Some(e);
        }
        self.error.unwrap()
    }

    /// The bytes waiting to be sent.
    pub fn pending(&self) -> &[u8] {
        &self.out
    }

    /// `n` bytes of the output were sent at `now`: receive stalls whose update left end.
    pub fn advance(&mut self, n: usize, now: Instant) {
        self.out.drain(..n.min(self.out.len()));
        if let Some(d) = self.recv_stall.end(now) {
            self.stats.conn_window_stalled += d;
        }
        for mut s in self.stream_stalls_pending.drain(..) {
            if let Some(d) = s.end(now) {
                self.stats.stream_window_stalled += d;
            }
        }
    }

    /// Counts `flow` DATA bytes against our connection window, and gives them back with a
    /// WINDOW_UPDATE once half of it is used (we consume what arrives at once).
    pub fn recv_data(&mut self, flow: u32, now: Instant) -> Result<(), ConnError> {
        self.recv_window -= flow as i64;
        if self.recv_window < 0 {
            return Err(err(
                ErrorCode::FlowControlError,
                "the peer sent more DATA than the connection window allows",
            ));
        }
        if self.recv_window == 0 && self.recv_stall.start(now) {
            self.stats.conn_window_stalls += 1;
        }
        self.recv_unacked += flow;
        if self.recv_unacked >= self.conn_window / 2 {
            frame::write_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_window += self.recv_unacked as i64;
            self.recv_unacked = 0;
        }
        Ok(())
    }

    /// A header block's buffer, decoded: the next HEADERS reuses it.
    pub fn recycle(&mut self, block: Vec<u8>) {
        self.spare_block = block;
    }

    /// Decodes a header block: `f` gets each field; the byte counts are added.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), ConnError> {
        let mut plain = 0;
        self.dec
            .decode(block, |n, v| {
                plain += plain_len(n, v);
                f(n, v)
            })
            .map_err(|_| {
                err(
                    ErrorCode::CompressionError,
                    "a header block does not decode",
                )
            })?;
        self.stats.header_wire_in += block.len() as u64;
        self.stats.header_plain_in += plain;
        Ok(())
    }

    /// Queues an encoded header block (`plain`: its fields' `name: value\r\n` size) as
    /// HEADERS (+ CONTINUATION) on `stream`.
    pub fn send_block(&mut self, stream: u32, block: &[u8], plain: u64, end_stream: bool) {
        self.stats.header_wire_out += block.len() as u64;
        self.stats.header_plain_out += plain;
        frame::write_headers(
            &mut self.out,
            stream,
            block,
            end_stream,
            self.peer.max_frame_size,
        );
    }

    /// Encodes `fields` and queues them as HEADERS (+ CONTINUATION) on `stream`; the block's
    /// wire length.
    pub fn send_headers(
        &mut self,
        stream: u32,
        fields: &[(&[u8], &[u8])],
        end_stream: bool,
    ) -> usize {
        let mut block = Vec::with_capacity(64);
        let _ = self.enc.encode_into(fields.iter().copied(), &mut block);
        self.stats.header_wire_out += block.len() as u64;
        self.stats.header_plain_out += fields.iter().map(|(n, v)| plain_len(n, v)).sum::<u64>();
        frame::write_headers(
            &mut self.out,
            stream,
            &block,
            end_stream,
            self.peer.max_frame_size,
        );
        block.len()
    }

    /// Cuts the next whole frame out of the received bytes: connection-level frames are
    /// handled here, stream-level ones returned. None: need more bytes.
    pub fn next_frame(&mut self, now: Instant) -> Result<Option<StreamFrame>, ConnError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let r = self.next_frame_inner(now);
        if let Err(e) = r {
            return Err(self.fail(e));
        }
        r
    }

    fn next_frame_inner(&mut self, now: Instant) -> Result<Option<StreamFrame>, ConnError> {
        loop {
            let avail = &self.inbuf[self.pos..];
            if !self.preface_seen {
                let n = avail.len().min(frame::PREFACE.len());
                if avail[..n] != frame::PREFACE[..n] {
                    return Err(err(
                        ErrorCode::ProtocolError,
                        "the client preface is wrong (not HTTP/2 with prior knowledge?)",
                    ));
                }
                if n < frame::PREFACE.len() {
                    return Ok(None);
                }
                self.pos += n;
                self.preface_seen = true;
                continue;
            }
            if avail.len() < frame::HEAD_LEN {
                return Ok(None);
            }
            let h = Head::parse(avail);
            if h.len > self.local.max_frame_size {
                return Err(err(
                    ErrorCode::FrameSizeError,
                    "a frame is larger than our SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            let total = frame::HEAD_LEN + h.len as usize;
            if avail.len() < total {
                return Ok(None);
            }
            self.pos += total;
            let start = self.pos - h.len as usize;
            if !self.peer_settings_seen && h.kind != frame::SETTINGS {
                return Err(err(
                    ErrorCode::ProtocolError,
                    "the peer's first frame is not SETTINGS",
                ));
            }
            if let Some((s, _, _)) = &self.cont {
                if h.kind != frame::CONTINUATION || h.stream != *s {
                    return Err(err(
                        ErrorCode::ProtocolError,
                        "a header block was interrupted by another frame",
                    ));
                }
            }
            if let Some(f) = self.frame(h, start, now)? {
                return Ok(Some(f));
            }
        }
    }

    fn frame(
        &mut self,
        h: Head,
        start: usize,
        now: Instant,
    ) -> Result<Option<StreamFrame>, ConnError> {
        let payload = start..start + h.len as usize;
        let need_stream = |h: &Head| {
            if h.stream == 0 {
                Err(err(ErrorCode::ProtocolError, "a stream frame on stream 0"))
            } else {
                Ok(())
            }
        };
        match h.kind {
            frame::SETTINGS => {
                if h.stream != 0 {
                    return Err(err(ErrorCode::ProtocolError, "SETTINGS on a stream"));
                }
                if h.flags & frame::FLAG_ACK != 0 {
                    if h.len != 0 {
                        return Err(err(
                            ErrorCode::FrameSizeError,
                            "SETTINGS ACK with a payload",
                        ));
                    }
                    self.local_acked = true;
                    return Ok(Some(StreamFrame::SettingsAck));
                }
                let before = self.peer.initial_window_size as i64;
                let mut peer = self.peer;
                peer.apply(&self.inbuf[payload])
                    .map_err(|(c, r)| err(c, r))?;
                self.peer = peer;
                self.peer_settings_seen = true;
                frame::write_settings_ack(&mut self.out);
                Ok(Some(StreamFrame::Settings {
                    window_delta: peer.initial_window_size as i64 - before,
                }))
            }
            frame::PING => {
                if h.stream != 0 || h.len != 8 {
                    return Err(err(
                        ErrorCode::FrameSizeError,
                        "PING is not 8 bytes on stream 0",
                    ));
                }
                if h.flags & frame::FLAG_ACK == 0 {
                    let mut d = [0u8; 8];
                    d.copy_from_slice(&self.inbuf[payload]);
                    frame::write_ping(&mut self.out, true, d);
                    self.stats.pings += 1;
                }
                Ok(None)
            }
            frame::GOAWAY => {
                if h.stream != 0 || h.len < 8 {
                    return Err(err(
                        ErrorCode::ProtocolError,
                        "GOAWAY is shorter than 8 bytes or on a stream",
                    ));
                }
                let p = &self.inbuf[payload];
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & frame::MAX_WINDOW;
                let code = ErrorCode::from_u32(u32::from_be_bytes([p[4], p[5], p[6], p[7]]));
                self.stats.goaways += 1;
                self.goaway_received = Some((last, code));
                Ok(Some(StreamFrame::GoAway {
                    last_stream: last,
                    code,
                }))
            }
            frame::WINDOW_UPDATE => {
                if h.len != 4 {
                    return Err(err(
                        ErrorCode::FrameSizeError,
                        "WINDOW_UPDATE is not 4 bytes",
                    ));
                }
                let p = &self.inbuf[payload];
                let inc = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & frame::MAX_WINDOW;
                if h.stream == 0 {
                    if inc == 0 {
                        return Err(err(
                            ErrorCode::ProtocolError,
                            "a connection WINDOW_UPDATE of 0",
                        ));
                    }
                    self.send_window += inc as i64;
                    if self.send_window > frame::MAX_WINDOW as i64 {
                        return Err(err(
                            ErrorCode::FlowControlError,
                            "the connection window grew past 2^31-1",
                        ));
                    }
                }
                Ok(Some(StreamFrame::WindowUpdate {
                    stream: h.stream,
                    inc,
                }))
            }
            frame::RST_STREAM => {
                need_stream(&h)?;
                if h.len != 4 {
                    return Err(err(ErrorCode::FrameSizeError, "RST_STREAM is not 4 bytes"));
                }
                let p = &self.inbuf[payload];
                let code = ErrorCode::from_u32(u32::from_be_bytes([p[0], p[1], p[2], p[3]]));
                self.stats.resets_received += 1;
                Ok(Some(StreamFrame::Reset {
                    stream: h.stream,
                    code,
                }))
            }
            frame::DATA => {
                need_stream(&h)?;
                self.recv_data(h.len, now)?;
                let len = frame::unpad(h.flags, h.kind, &self.inbuf[payload])
                    .ok_or(err(
                        ErrorCode::ProtocolError,
                        "DATA padding longer than the frame",
                    ))?
                    .len() as u32;
                self.stats.data_in += len as u64;
                Ok(Some(StreamFrame::Data {
                    stream: h.stream,
                    flow: h.len,
                    len,
                    end_stream: h.flags & frame::FLAG_END_STREAM != 0,
                }))
            }
            frame::HEADERS => {
                need_stream(&h)?;
                let frag = frame::unpad(h.flags, h.kind, &self.inbuf[payload]).ok_or(err(
                    ErrorCode::ProtocolError,
                    "HEADERS padding longer than the frame",
                ))?;
                let end_stream = h.flags & frame::FLAG_END_STREAM != 0;
                if h.flags & frame::FLAG_END_HEADERS != 0 {
                    let mut block = std::mem::take(&mut self.spare_block);
                    block.clear();
                    block.extend_from_slice(frag);
                    return Ok(Some(StreamFrame::Headers {
                        stream: h.stream,
                        block,
                        end_stream,
                    }));
                }
                self.cont = Some((h.stream, end_stream, frag.to_vec()));
                Ok(None)
            }
            frame::CONTINUATION => {
                let Some((stream, end_stream, mut block)) = self.cont.take() else {
                    return Err(err(
                        ErrorCode::ProtocolError,
                        "CONTINUATION without HEADERS",
                    ));
                };
                block.extend_from_slice(&self.inbuf[payload]);
                if h.flags & frame::FLAG_END_HEADERS != 0 {
                    return Ok(Some(StreamFrame::Headers {
                        stream,
                        block,
                        end_stream,
                    }));
                }
                self.cont = Some((stream, end_stream, block));
                Ok(None)
            }
            frame::PUSH_PROMISE => Err(err(
                ErrorCode::ProtocolError,
                "PUSH_PROMISE though we disabled push",
            )),
            // PRIORITY is advisory; unknown types are ignored (§4.1).
            _ => Ok(None),
        }
    }
}
