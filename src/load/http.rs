//! The HTTP client side, pure: request bytes for the mix, and an incremental response parser that
//! works over split reads with no allocation of its own (it keeps only a short line prefix
//! inline); the HTTP/1.x layer boxes one per connection slot at the slot's first response byte.
//! Bodies are framed by Content-Length, by chunked transfer-coding (nginx's sub_filter and gzip,
//! any streamed response) or by the close.

/// The request for `path`: HTTP/1.0 (the server closes) or HTTP/1.1 keep-alive.
pub fn request(path: &str, host: &str, keepalive: bool) -> Vec<u8> {
    let version = if keepalive { "HTTP/1.1" } else { "HTTP/1.0" };
    format!("GET {path} {version}\r\nHost: {host}\r\nUser-Agent: synlab\r\n\r\n").into_bytes()
}

/// What a parser concluded after a chunk of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The response is not complete yet.
    NeedMore,
    /// The response is complete; `consumed` bytes of the last chunk belonged to it.
    Done(Response),
    /// The bytes are not an HTTP response.
    Invalid(BadResponse),
}

/// Why the bytes are not an HTTP/1.x response (or the stream ended inside one); Display is the
/// line a user reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadResponse {
    StatusLine,
    StatusCode,
    ContentLength,
    HeadTooLong,
    /// A chunk-size line that does not start with hex digits, or has more than an extension
    /// after them.
    ChunkSize,
    /// A chunk size past 2^64 (more than 16 hex digits of value).
    ChunkSizeTooLarge,
    ChunkLineTooLong,
    /// The bytes after a chunk's data are not CRLF: the data ran past its size.
    ChunkEnd,
    ClosedBeforeAnyByte,
    ClosedMidResponse,
}

impl BadResponse {
    /// The words, static (the engine's `HttpError` carries them).
    pub fn words(self) -> &'static str {
        match self {
            BadResponse::StatusLine => "status line is not HTTP/1.x",
            BadResponse::StatusCode => "status code is not three digits",
            BadResponse::ContentLength => "bad Content-Length",
            BadResponse::HeadTooLong => "response header block over 64 KiB",
            BadResponse::ChunkSize => {
                "bad chunk size in a chunked response (not hex digits, optionally followed by ;extensions)"
            }
            BadResponse::ChunkSizeTooLarge => "chunk size in a chunked response over 2^64 bytes",
            BadResponse::ChunkLineTooLong => "chunk-size line of a chunked response over 4 KiB",
            BadResponse::ChunkEnd => {
                "chunk data of a chunked response not followed by CRLF (longer than its size said)"
            }
            BadResponse::ClosedBeforeAnyByte => "connection closed before any response byte",
            BadResponse::ClosedMidResponse => "connection closed in the middle of a response",
        }
    }
}

impl std::fmt::Display for BadResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.words())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The body's bytes: the payload, without a chunked body's framing.
    pub body_bytes: u64,
    /// The server asked to close the connection (or it is HTTP/1.0 without keep-alive).
    pub close: bool,
    pub consumed: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StatusLine,
    Headers,
    Body,
    /// No Content-Length: the body runs to EOF.
    BodyToEof,
    /// Chunked: a chunk-size line (hex size, optional `;extensions`).
    ChunkSize,
    /// Chunked: `chunk_left` bytes of the chunk's data to come.
    ChunkData,
    /// Chunked: the CRLF after a chunk's data.
    ChunkEnd,
    /// Chunked: trailer lines after the last (zero) chunk, up to an empty line.
    Trailers,
    Done,
}

/// How the body is framed, from Transfer-Encoding (RFC 9112 6.3: it overrides Content-Length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    /// No Transfer-Encoding: Content-Length, or to EOF.
    Identity,
    /// chunked is the final coding.
    Chunked,
    /// Another final coding: the body runs to EOF.
    Other,
}

const LINE_KEEP: usize = 48;
/// Guard against a peer that never ends its header block (trailers count with it).
const MAX_HEAD: u32 = 64 * 1024;
/// Guard against a peer that never ends a chunk-size line (extensions included).
const MAX_CHUNK_LINE: u32 = 4 * 1024;

/// Incremental HTTP/1.x response parser: status, Content-Length, Connection.
#[derive(Debug, Clone, Copy)]
pub struct ResponseParser {
    state: State,
    /// The first LINE_KEEP bytes of the current line (enough to match the headers we need).
    line: [u8; LINE_KEEP],
    line_len: u16,
    head_bytes: u32,
    status: u16,
    http10: bool,
    content_length: Option<u64>,
    conn_close: Option<bool>,
    body_read: u64,
    coding: Coding,
    /// Bytes of the current chunk-size (or chunk-end) line so far.
    chunk_line: u32,
    chunk_left: u64,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl ResponseParser {
    /// A parser waiting for the start of a response.
    pub const DEFAULT: ResponseParser = ResponseParser {
        state: State::StatusLine,
        line: [0; LINE_KEEP],
        line_len: 0,
        head_bytes: 0,
        status: 0,
        http10: false,
        content_length: None,
        conn_close: None,
        body_read: 0,
        coding: Coding::Identity,
        chunk_line: 0,
        chunk_left: 0,
    };

    /// Ready for a new response.
    pub fn reset(&mut self) {
        *self = ResponseParser::default();
    }

    /// True once any byte of the response has been seen.
    pub fn started(&self) -> bool {
        self.head_bytes > 0
    }

    /// Feeds the next chunk of the byte stream.
    pub fn feed(&mut self, buf: &[u8]) -> Progress {
        let mut i = 0;
        while i < buf.len() {
            match self.state {
                State::StatusLine
                | State::Headers
                | State::ChunkSize
                | State::ChunkEnd
                | State::Trailers => {
                    // A line at a time (memchr), not a byte at a time: the header block is
                    // most of what a small response costs to parse.
                    let rest = &buf[i..];
                    let end = memchr::memchr(b'\n', rest);
                    let part = &rest[..end.unwrap_or(rest.len())];
                    let used = part.len() + usize::from(end.is_some());
                    i += used;
                    if matches!(self.state, State::ChunkSize | State::ChunkEnd) {
                        // Chunk lines have their own bound: a long stream has many of them.
                        self.chunk_line = self.chunk_line.saturating_add(used as u32);
                        if self.chunk_line > MAX_CHUNK_LINE {
                            return Progress::Invalid(BadResponse::ChunkLineTooLong);
                        }
                    } else {
                        self.head_bytes = self.head_bytes.saturating_add(used as u32);
                        if self.head_bytes > MAX_HEAD {
                            return Progress::Invalid(BadResponse::HeadTooLong);
                        }
                    }
                    let have = self.line_len as usize;
                    let keep = part.len().min(LINE_KEEP - have);
                    let ended = if have == 0 && end.is_some() {
                        // A whole line in this read (the usual case): read where it lies.
                        Some(self.end_line(&part[..keep]))
                    } else {
                        self.line[have..have + keep].copy_from_slice(&part[..keep]);
                        self.line_len += keep as u16;
                        end.map(|_| {
                            let line = self.line;
                            self.end_line(&line[..self.line_len as usize])
                        })
                    };
                    if let Some(ended) = ended {
                        if let Err(e) = ended {
                            return Progress::Invalid(e);
                        }
                        if self.state == State::Done {
                            return Progress::Done(self.response(i));
                        }
                    }
                }
                State::Body => {
                    let want = self.content_length.unwrap_or(0) - self.body_read;
                    let take = want.min((buf.len() - i) as u64);
                    self.body_read += take;
                    i += take as usize;
                    if self.body_read == self.content_length.unwrap_or(0) {
                        self.state = State::Done;
                        return Progress::Done(self.response(i));
                    }
                }
                State::BodyToEof => {
                    self.body_read += (buf.len() - i) as u64;
                    i = buf.len();
                }
                State::ChunkData => {
                    let take = self.chunk_left.min((buf.len() - i) as u64);
                    self.chunk_left -= take;
                    self.body_read += take;
                    i += take as usize;
                    if self.chunk_left == 0 {
                        self.state = State::ChunkEnd;
                    }
                }
                State::Done => return Progress::Done(self.response(0)),
            }
        }
        Progress::NeedMore
    }

    /// The peer closed the connection: completes a read-to-EOF body, else the response was cut.
    pub fn eof(&mut self) -> Progress {
        match self.state {
            State::BodyToEof => {
                self.state = State::Done;
                Progress::Done(Response {
                    close: true,
                    ..self.response(0)
                })
            }
            State::Done => Progress::Done(self.response(0)),
            State::StatusLine if self.head_bytes == 0 => {
                Progress::Invalid(BadResponse::ClosedBeforeAnyByte)
            }
            _ => Progress::Invalid(BadResponse::ClosedMidResponse),
        }
    }

    fn response(&self, consumed: usize) -> Response {
        Response {
            status: self.status,
            body_bytes: self.body_read,
            // A body with no framing of its own ends with the connection.
            close: self.conn_close.unwrap_or(self.http10)
                || (self.content_length.is_none() && self.coding != Coding::Chunked),
            consumed,
        }
    }

    /// The line just ended: `kept`, its first `LINE_KEEP` bytes.
    fn end_line(&mut self, kept: &[u8]) -> Result<(), BadResponse> {
        let line = kept.strip_suffix(b"\r").unwrap_or(kept);
        match self.state {
            State::StatusLine => {
                // "HTTP/1.1 200 OK"
                if line.len() < 12 || !line.starts_with(b"HTTP/1.") || line[8] != b' ' {
                    return Err(BadResponse::StatusLine);
                }
                self.http10 = line[7] == b'0';
                let code = &line[9..12];
                if !code.iter().all(u8::is_ascii_digit) {
                    return Err(BadResponse::StatusCode);
                }
                self.status = code.iter().fold(0u16, |a, d| a * 10 + (d - b'0') as u16);
                self.state = State::Headers;
            }
            State::Headers if line.is_empty() => {
                // 1xx responses carry no body and precede the real one.
                if (100..200).contains(&self.status) {
                    *self = ResponseParser {
                        head_bytes: self.head_bytes,
                        ..ResponseParser::default()
                    };
                } else if self.status == 204 || self.status == 304 {
                    self.content_length = Some(0);
                    self.state = State::Done;
                } else {
                    self.state = match (self.coding, self.content_length) {
                        (Coding::Chunked, _) => State::ChunkSize,
                        (Coding::Other, _) => {
                            self.content_length = None;
                            State::BodyToEof
                        }
                        (Coding::Identity, Some(0)) => State::Done,
                        (Coding::Identity, Some(_)) => State::Body,
                        (Coding::Identity, None) => State::BodyToEof,
                    };
                }
            }
            // Only three headers matter, two starting with "c" and one with "t": the others
            // (Server, Date, ETag, ...) are passed over on their first byte.
            State::Headers if !matches!(line[0] | 0x20, b'c' | b't') => {}
            State::Headers => {
                if let Some(v) = header_value(line, b"content-length") {
                    self.content_length = Some(decimal(v).ok_or(BadResponse::ContentLength)?);
                } else if let Some(v) = header_value(line, b"connection") {
                    if v.eq_ignore_ascii_case(b"close") {
                        self.conn_close = Some(true);
                    } else if v.eq_ignore_ascii_case(b"keep-alive") {
                        self.conn_close = Some(false);
                    }
                } else if let Some(v) = header_value(line, b"transfer-encoding") {
                    // The final coding decides the framing ("gzip, chunked" is chunked).
                    let last = v.rsplit(|&b| b == b',').next().unwrap_or(v);
                    self.coding = if last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                        Coding::Chunked
                    } else {
                        Coding::Other
                    };
                }
            }
            State::ChunkSize => {
                let truncated = self.chunk_line as usize > kept.len() + 1;
                self.chunk_left = chunk_size(line, truncated)?;
                self.state = if self.chunk_left == 0 {
                    State::Trailers
                } else {
                    State::ChunkData
                };
                self.chunk_line = 0;
            }
            State::ChunkEnd => {
                if !line.is_empty() {
                    return Err(BadResponse::ChunkEnd);
                }
                self.state = State::ChunkSize;
                self.chunk_line = 0;
            }
            // Trailer fields are read past (none changes how the response is counted).
            State::Trailers if line.is_empty() => self.state = State::Done,
            State::Trailers | State::Body | State::BodyToEof | State::ChunkData | State::Done => {}
        }
        self.line_len = 0;
        Ok(())
    }
}

/// The size on a chunk-size line (CR stripped): hex digits, then nothing or `;extensions`
/// (whitespace allowed before the `;`). `truncated`: the line ran past what was kept of it.
fn chunk_size(line: &[u8], truncated: bool) -> Result<u64, BadResponse> {
    let mut size: u64 = 0;
    let mut digits = 0;
    for &b in line {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        size = size.checked_mul(16).ok_or(BadResponse::ChunkSizeTooLarge)? | u64::from(d);
        digits += 1;
    }
    if digits == 0 {
        return Err(BadResponse::ChunkSize);
    }
    match line[digits..].trim_ascii_start().first() {
        Some(b';') => Ok(size),
        // Nothing after the size, unless the line went on past the part kept of it.
        None if !truncated => Ok(size),
        _ => Err(BadResponse::ChunkSize),
    }
}

/// A Content-Length value: decimal digits only (RFC 9110 8.6), None when empty, anything
/// else, or past u64.
fn decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then_some(())
            .and_then(|()| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
    })
}

/// The trimmed value of `line` if it is the header `name` (case-insensitive).
fn header_value<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    if line.len() <= name.len()
        || !line[..name.len()].eq_ignore_ascii_case(name)
        || line[name.len()] != b':'
    {
        return None;
    }
    let v = &line[name.len() + 1..];
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |p| p + 1);
    Some(&v[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] =
        b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";

    fn feed_split(bytes: &[u8], chunk: usize) -> Progress {
        let mut p = ResponseParser::default();
        let mut off = 0;
        for c in bytes.chunks(chunk) {
            match p.feed(c) {
                Progress::NeedMore => off += c.len(),
                Progress::Done(r) => {
                    return Progress::Done(Response {
                        consumed: off + r.consumed,
                        ..r
                    })
                }
                other => return other,
            }
        }
        p.eof()
    }

    #[test]
    fn whole_and_split_reads_give_the_same_response() {
        let whole = feed_split(OK, OK.len());
        for chunk in 1..OK.len() {
            assert_eq!(feed_split(OK, chunk), whole, "chunk {chunk}");
        }
        assert_eq!(
            whole,
            Progress::Done(Response {
                status: 200,
                body_bytes: 5,
                close: true,
                consumed: OK.len()
            })
        );
    }

    #[test]
    fn no_content_length_reads_to_eof() {
        let r = b"HTTP/1.0 404 Not Found\r\nContent-Type: text/html\r\n\r\nnot here";
        let mut p = ResponseParser::default();
        assert_eq!(p.feed(r), Progress::NeedMore);
        match p.eof() {
            Progress::Done(resp) => {
                assert_eq!(resp.status, 404);
                assert_eq!(resp.body_bytes, 8);
                assert!(resp.close);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keepalive_response_leaves_the_next_one_unread() {
        let two = [OK, b"HTTP/1.1 503 Busy\r\ncontent-length:0\r\n\r\n"].concat();
        let ka = String::from_utf8(two)
            .unwrap()
            .replace("Connection: close", "Connection: keep-alive");
        let mut p = ResponseParser::default();
        let Progress::Done(r) = p.feed(ka.as_bytes()) else {
            panic!()
        };
        assert!(!r.close);
        p.reset();
        let Progress::Done(r2) = p.feed(&ka.as_bytes()[r.consumed..]) else {
            panic!()
        };
        assert_eq!(r2.status, 503);
        assert_eq!(r2.body_bytes, 0);
    }

    #[test]
    fn http10_defaults_to_close_and_11_to_keepalive() {
        let mut p = ResponseParser::default();
        let Progress::Done(r) = p.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n") else {
            panic!()
        };
        assert!(r.close);
        p.reset();
        let Progress::Done(r) = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") else {
            panic!()
        };
        assert!(!r.close);
    }

    #[test]
    fn interim_100_continue_is_skipped() {
        let mut p = ResponseParser::default();
        let r = p.feed(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
        );
        assert!(matches!(
            r,
            Progress::Done(Response {
                status: 201,
                body_bytes: 2,
                ..
            })
        ));
    }

    #[test]
    fn garbage_and_truncation_are_invalid() {
        let mut p = ResponseParser::default();
        assert!(matches!(
            p.feed(b"SSH-2.0-OpenSSH\r\n"),
            Progress::Invalid(_)
        ));
        let mut p = ResponseParser::default();
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
            Progress::NeedMore
        );
        assert!(matches!(p.eof(), Progress::Invalid(_)));
        let mut p = ResponseParser::default();
        assert_eq!(p.eof(), Progress::Invalid(BadResponse::ClosedBeforeAnyByte));
        let mut p = ResponseParser::default();
        assert!(matches!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Progress::Invalid(_)
        ));
    }

    #[test]
    fn content_length_is_digits_only_and_fits_in_u64() {
        let len = |v: &str| {
            let head = format!("HTTP/1.1 200 OK\r\nDate: x\r\ncontent-LENGTH:  {v} \r\n\r\n");
            match ResponseParser::default().feed(head.as_bytes()) {
                Progress::Invalid(e) => Err(e),
                Progress::Done(r) => Ok(Some(r.body_bytes)),
                Progress::NeedMore => Ok(None),
            }
        };
        assert_eq!(len("0"), Ok(Some(0)));
        assert_eq!(len("5"), Ok(None), "5 bytes to come");
        assert_eq!(len("18446744073709551615"), Ok(None));
        for bad in ["", "+5", "-1", "5 5", "0x10", "18446744073709551616"] {
            assert_eq!(len(bad), Err(BadResponse::ContentLength), "{bad:?}");
        }
    }

    /// nginx's sub_filter answer: chunks with an extension, a trailer, then the next
    /// keep-alive response.
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n5;name=\"v\"\r\nhello\r\n1A \r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Checksum: 42\r\nX-Other: y\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";

    /// Length of CHUNKED's first response.
    fn first_len() -> usize {
        CHUNKED.len() - b"HTTP/1.1 204 No Content\r\n\r\n".len()
    }

    #[test]
    fn chunked_split_at_every_byte_boundary_parses_the_same() {
        let whole = feed_split(CHUNKED, CHUNKED.len());
        assert_eq!(
            whole,
            Progress::Done(Response {
                status: 200,
                body_bytes: 5 + 26,
                close: false,
                consumed: first_len(),
            })
        );
        for chunk in 1..CHUNKED.len() {
            assert_eq!(feed_split(CHUNKED, chunk), whole, "reads of {chunk} bytes");
        }
        // Every two-read split, and the bytes after the response left for the next one.
        for cut in 0..=CHUNKED.len() {
            let mut p = ResponseParser::default();
            let (a, b) = CHUNKED.split_at(cut);
            let r = match p.feed(a) {
                Progress::NeedMore => match p.feed(b) {
                    Progress::Done(r) => Response {
                        consumed: a.len() + r.consumed,
                        ..r
                    },
                    other => panic!("cut {cut}: {other:?}"),
                },
                Progress::Done(r) => r,
                other => panic!("cut {cut}: {other:?}"),
            };
            assert_eq!(Progress::Done(r), whole, "cut at {cut}");
            p.reset();
            let next = p.feed(&CHUNKED[r.consumed..]);
            assert!(
                matches!(next, Progress::Done(Response { status: 204, .. })),
                "{next:?}"
            );
        }
    }

    fn parse_all(bytes: &[u8]) -> Progress {
        let mut p = ResponseParser::default();
        match p.feed(bytes) {
            Progress::NeedMore => p.eof(),
            other => other,
        }
    }

    fn chunked_with(body: &str) -> Vec<u8> {
        format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{body}").into_bytes()
    }

    #[test]
    fn bad_chunk_sizes_are_typed_errors() {
        for (body, want) in [
            ("zz\r\nhello\r\n0\r\n\r\n", BadResponse::ChunkSize),
            ("\r\nhello\r\n0\r\n\r\n", BadResponse::ChunkSize),
            ("5 x\r\nhello\r\n0\r\n\r\n", BadResponse::ChunkSize),
            ("-5\r\nhello\r\n0\r\n\r\n", BadResponse::ChunkSize),
            (
                "1ffffffffffffffff\r\nhello\r\n0\r\n\r\n",
                BadResponse::ChunkSizeTooLarge,
            ),
            ("3\r\nhello\r\n0\r\n\r\n", BadResponse::ChunkEnd),
            ("5\r\nhel", BadResponse::ClosedMidResponse),
        ] {
            assert_eq!(
                parse_all(&chunked_with(body)),
                Progress::Invalid(want),
                "{body:?}"
            );
        }
        let endless = chunked_with(&format!("5;{}", "x".repeat(5000)));
        assert_eq!(
            parse_all(&endless),
            Progress::Invalid(BadResponse::ChunkLineTooLong)
        );
        // The words name what is wrong.
        assert!(BadResponse::ChunkSize.to_string().contains("chunk size"));
    }

    #[test]
    fn chunk_lines_past_the_kept_prefix_parse_the_same_whole_and_split() {
        // An extension past the 48 bytes kept is accepted; junk after the size past them is
        // not: both alike whether the line lies whole in a read or is split across reads.
        for (line, want) in [
            (format!("5;{}", "e".repeat(60)), None),
            (
                format!("5{}x", " ".repeat(60)),
                Some(BadResponse::ChunkSize),
            ),
        ] {
            let r = chunked_with(&format!("{line}\r\nhello\r\n0\r\n\r\n"));
            let whole = feed_split(&r, r.len());
            match want {
                None => assert!(
                    matches!(whole, Progress::Done(x) if x.body_bytes == 5),
                    "{whole:?}"
                ),
                Some(e) => assert_eq!(whole, Progress::Invalid(e)),
            }
            for chunk in 1..r.len() {
                assert_eq!(feed_split(&r, chunk), whole, "chunk {chunk}");
            }
        }
    }

    #[test]
    fn chunked_sizes_extensions_and_framing() {
        // Upper and lower hex, a size with leading zeros, blanks before an extension.
        let ok = chunked_with("00A\r\n0123456789\r\nb ; ext=1\r\nhello world\r\n0;last\r\n\r\n");
        assert!(matches!(
            parse_all(&ok),
            Progress::Done(Response {
                body_bytes: 21,
                close: false,
                ..
            })
        ));
        // "gzip, chunked": chunked is the final coding; it overrides a Content-Length.
        let gz = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert!(matches!(
            parse_all(gz),
            Progress::Done(Response {
                body_bytes: 3,
                close: false,
                ..
            })
        ));
        // Another final coding: the body runs to the close.
        let other = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabcdef";
        assert!(matches!(
            parse_all(other),
            Progress::Done(Response {
                body_bytes: 6,
                close: true,
                ..
            })
        ));
        // Connection: close on a chunked response still closes.
        let closing =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n";
        assert!(matches!(
            parse_all(closing),
            Progress::Done(Response {
                body_bytes: 0,
                close: true,
                ..
            })
        ));
    }

    #[test]
    fn request_bytes() {
        assert_eq!(
            request("/a.html", "127.0.0.1", false),
            b"GET /a.html HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: synlab\r\n\r\n"
        );
        assert!(request("/", "h", true).starts_with(b"GET / HTTP/1.1\r\n"));
    }
}
