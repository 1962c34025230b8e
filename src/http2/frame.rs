//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte frame header, the frame types and flags, error
//! codes, SETTINGS, and writers that append whole frames to an output buffer.

use std::fmt;

/// What a client sends first on every connection (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes of a frame header.
pub const HEAD_LEN: usize = 9;
/// A flow-control window's size until SETTINGS_INITIAL_WINDOW_SIZE or WINDOW_UPDATE moves it.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest frame payload a peer must accept before its SETTINGS say more.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The largest payload SETTINGS_MAX_FRAME_SIZE may allow.
pub const MAX_MAX_FRAME: u32 = (1 << 24) - 1;
/// The largest flow-control window (2^31 - 1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const FLAG_END_STREAM: u8 = 0x1;
pub const FLAG_ACK: u8 = 0x1;
pub const FLAG_END_HEADERS: u8 = 0x4;
pub const FLAG_PADDED: u8 = 0x8;
pub const FLAG_PRIORITY: u8 = 0x20;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Reads the header at the start of `b` (at least [`HEAD_LEN`] bytes).
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
        }
    }
}

/// Appends a frame header.
pub fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len <= MAX_MAX_FRAME as usize);
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// An HTTP/2 error code (RFC 9113 §7), as RST_STREAM and GOAWAY carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    NoError,
    ProtocolError,
    InternalError,
    FlowControlError,
    SettingsTimeout,
    StreamClosed,
    FrameSizeError,
    RefusedStream,
    Cancel,
    CompressionError,
    ConnectError,
    EnhanceYourCalm,
    InadequateSecurity,
    Http11Required,
    /// A code this version does not know (peers must treat it as INTERNAL_ERROR, we keep it).
    Other(u32),
}

impl ErrorCode {
    pub fn from_u32(c: u32) -> ErrorCode {
        use ErrorCode::*;
        match c {
            0x0 => NoError,
            0x1 => ProtocolError,
            0x2 => InternalError,
            0x3 => FlowControlError,
            0x4 => SettingsTimeout,
            0x5 => StreamClosed,
            0x6 => FrameSizeError,
            0x7 => RefusedStream,
            0x8 => Cancel,
            0x9 => CompressionError,
            0xa => ConnectError,
            0xb => EnhanceYourCalm,
            0xc => InadequateSecurity,
            0xd => Http11Required,
            c => Other(c),
        }
    }

    pub fn to_u32(self) -> u32 {
        use ErrorCode::*;
        match self {
            NoError => 0x0,
            ProtocolError => 0x1,
            InternalError => 0x2,
            FlowControlError => 0x3,
            SettingsTimeout => 0x4,
            StreamClosed => 0x5,
            FrameSizeError => 0x6,
            RefusedStream => 0x7,
            Cancel => 0x8,
            CompressionError => 0x9,
            ConnectError => 0xa,
            EnhanceYourCalm => 0xb,
            InadequateSecurity => 0xc,
            Http11Required => 0xd,
            Other(c) => c,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorCode::*;
        let s = match self {
            NoError => "NO_ERROR",
            ProtocolError => "PROTOCOL_ERROR",
            InternalError => "INTERNAL_ERROR",
            FlowControlError => "FLOW_CONTROL_ERROR",
            SettingsTimeout => "SETTINGS_TIMEOUT",
            StreamClosed => "STREAM_CLOSED",
            FrameSizeError => "FRAME_SIZE_ERROR",
            RefusedStream => "REFUSED_STREAM",
            Cancel => "CANCEL",
            CompressionError => "COMPRESSION_ERROR",
            ConnectError => "CONNECT_ERROR",
            EnhanceYourCalm => "ENHANCE_YOUR_CALM",
            InadequateSecurity => "INADEQUATE_SECURITY",
            Http11Required => "HTTP_1_1_REQUIRED",
            Other(c) => return write!(f, "error code {c:#x}"),
        };
        f.write_str(s)
    }
}

/// The SETTINGS one side announced (RFC 9113 §6.5.2); fields it did not send keep their
/// defaults. `max_concurrent_streams` None: no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub header_table_size: u32,
    pub enable_push: bool,
    pub max_concurrent_streams: Option<u32>,
    pub initial_window_size: u32,
    pub max_frame_size: u32,
    pub max_header_list_size: Option<u32>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            header_table_size: 4096,
            enable_push: true,
            max_concurrent_streams: None,
            initial_window_size: DEFAULT_WINDOW,
            max_frame_size: DEFAULT_MAX_FRAME,
            max_header_list_size: None,
        }
    }
}

const S_HEADER_TABLE_SIZE: u16 = 0x1;
const S_ENABLE_PUSH: u16 = 0x2;
const S_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const S_INITIAL_WINDOW_SIZE: u16 = 0x4;
const S_MAX_FRAME_SIZE: u16 = 0x5;
const S_MAX_HEADER_LIST_SIZE: u16 = 0x6;

impl Settings {
    /// Applies a SETTINGS payload on top of these values; the error is the connection error
    /// the RFC names for a bad value.
    pub fn apply(&mut self, payload: &[u8]) -> Result<(), (ErrorCode, &'static str)> {
        if !payload.len().is_multiple_of(6) {
            return Err((
                ErrorCode::FrameSizeError,
                "SETTINGS length is not a multiple of 6",
            ));
        }
        for p in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([p[0], p[1]]);
            let v = u32::from_be_bytes([p[2], p[3], p[4], p[5]]);
            match id {
                S_HEADER_TABLE_SIZE => self.header_table_size = v,
                S_ENABLE_PUSH if v > 1 => {
                    return Err((ErrorCode::ProtocolError, "SETTINGS_ENABLE_PUSH above 1"))
                }
                S_ENABLE_PUSH => self.enable_push = v == 1,
                S_MAX_CONCURRENT_STREAMS => self.max_concurrent_streams = Some(v),
                S_INITIAL_WINDOW_SIZE if v > MAX_WINDOW => {
                    return Err((
                        ErrorCode::FlowControlError,
                        "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                    ))
                }
                S_INITIAL_WINDOW_SIZE => self.initial_window_size = v,
                S_MAX_FRAME_SIZE if !(DEFAULT_MAX_FRAME..=MAX_MAX_FRAME).contains(&v) => {
                    return Err((
                        ErrorCode::ProtocolError,
                        "SETTINGS_MAX_FRAME_SIZE outside 2^14..2^24-1",
                    ))
                }
                S_MAX_FRAME_SIZE => self.max_frame_size = v,
                S_MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(v),
                _ => {} // unknown settings are ignored (§6.5.2)
            }
        }
        Ok(())
    }

    /// Appends a SETTINGS frame carrying the values that differ from the defaults.
    pub fn write(&self, out: &mut Vec<u8>) {
        let d = Settings::default();
        let mut p: Vec<(u16, u32)> = Vec::new();
        if self.header_table_size != d.header_table_size {
            p.push((S_HEADER_TABLE_SIZE, self.header_table_size));
        }
        if self.enable_push != d.enable_push {
            p.push((S_ENABLE_PUSH, self.enable_push as u32));
        }
        if let Some(m) = self.max_concurrent_streams {
            p.push((S_MAX_CONCURRENT_STREAMS, m));
        }
        if self.initial_window_size != d.initial_window_size {
            p.push((S_INITIAL_WINDOW_SIZE, self.initial_window_size));
        }
        if self.max_frame_size != d.max_frame_size {
            p.push((S_MAX_FRAME_SIZE, self.max_frame_size));
        }
        if let Some(m) = self.max_header_list_size {
            p.push((S_MAX_HEADER_LIST_SIZE, m));
        }
        write_head(out, p.len() * 6, SETTINGS, 0, 0);
        for (id, v) in p {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub fn write_ping(out: &mut Vec<u8>, ack: bool, data: [u8; 8]) {
    write_head(out, 8, PING, if ack { FLAG_ACK } else { 0 }, 0);
    out.extend_from_slice(&data);
}

pub fn write_window_update(out: &mut Vec<u8>, stream: u32, inc: u32) {
    write_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&inc.to_be_bytes());
}

pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    write_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_u32().to_be_bytes());
}

pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode) {
    write_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_u32().to_be_bytes());
}

/// Appends a header block as HEADERS plus CONTINUATION frames of at most `max_frame` bytes.
pub fn write_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: u32,
) {
    let max = max_frame as usize;
    let mut chunks = block.chunks(max.max(1)).peekable();
    let first = chunks.next().unwrap_or(&[]);
    let mut flags = if end_stream { FLAG_END_STREAM } else { 0 };
    if chunks.peek().is_none() {
        flags |= FLAG_END_HEADERS;
    }
    write_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    while let Some(c) = chunks.next() {
        let f = if chunks.peek().is_none() {
            FLAG_END_HEADERS
        } else {
            0
        };
        write_head(out, c.len(), CONTINUATION, f, stream);
        out.extend_from_slice(c);
    }
}

/// Strips the padding of a DATA or HEADERS payload (and HEADERS' priority fields); None when
/// the padding is longer than the payload (a PROTOCOL_ERROR).
pub fn unpad(flags: u8, kind: u8, payload: &[u8]) -> Option<&[u8]> {
    let mut p = payload;
    let mut pad = 0usize;
    if flags & FLAG_PADDED != 0 {
        pad = *p.first()? as usize;
        p = &p[1..];
    }
    if kind == HEADERS && flags & FLAG_PRIORITY != 0 {
        p = p.get(5..)?;
    }
    if pad > p.len() {
        return None;
    }
    Some(&p[..p.len() - pad])
}
