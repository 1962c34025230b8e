//! The HTTP client side, pure: request bytes for the mix, and an incremental response parser that
//! works over split reads with no allocation (it keeps only a short line prefix inline), so one
//! lives in every connection slot of the worker's slab.

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
    Invalid(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
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
    Done,
}

const LINE_KEEP: usize = 48;
/// Guard against a peer that never ends its header block.
const MAX_HEAD: u32 = 64 * 1024;

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
                State::StatusLine | State::Headers => {
                    // A line at a time (memchr), not a byte at a time: the header block is
                    // most of what a small response costs to parse.
                    let rest = &buf[i..];
                    let end = memchr::memchr(b'\n', rest);
                    let part = &rest[..end.unwrap_or(rest.len())];
                    let used = part.len() + usize::from(end.is_some());
                    i += used;
                    self.head_bytes = self.head_bytes.saturating_add(used as u32);
                    if self.head_bytes > MAX_HEAD {
                        return Progress::Invalid("response header block over 64 KiB");
                    }
                    let have = self.line_len as usize;
                    let keep = part.len().min(LINE_KEEP - have);
                    self.line[have..have + keep].copy_from_slice(&part[..keep]);
                    self.line_len += keep as u16;
                    if end.is_some() {
                        if let Err(e) = self.end_line() {
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
                Progress::Invalid("connection closed before any response byte")
            }
            _ => Progress::Invalid("connection closed in the middle of a response"),
        }
    }

    fn response(&self, consumed: usize) -> Response {
        Response {
            status: self.status,
            body_bytes: self.body_read,
            close: self.conn_close.unwrap_or(self.http10) || self.content_length.is_none(),
            consumed,
        }
    }

    fn end_line(&mut self) -> Result<(), &'static str> {
        let kept = &self.line[..self.line_len as usize];
        let line = kept.strip_suffix(b"\r").unwrap_or(kept);
        match self.state {
            State::StatusLine => {
                // "HTTP/1.1 200 OK"
                if line.len() < 12 || !line.starts_with(b"HTTP/1.") || line[8] != b' ' {
                    return Err("status line is not HTTP/1.x");
                }
                self.http10 = line[7] == b'0';
                let code = &line[9..12];
                if !code.iter().all(u8::is_ascii_digit) {
                    return Err("status code is not three digits");
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
                    self.state = match self.content_length {
                        Some(0) => State::Done,
                        Some(_) => State::Body,
                        None => State::BodyToEof,
                    };
                }
            }
            State::Headers => {
                if let Some(v) = header_value(line, b"content-length") {
                    let s = std::str::from_utf8(v).map_err(|_| "bad Content-Length")?;
                    let n = s.trim().parse().map_err(|_| "bad Content-Length")?;
                    self.content_length = Some(n);
                } else if let Some(v) = header_value(line, b"connection") {
                    if v.eq_ignore_ascii_case(b"close") {
                        self.conn_close = Some(true);
                    } else if v.eq_ignore_ascii_case(b"keep-alive") {
                        self.conn_close = Some(false);
                    }
                } else if let Some(v) = header_value(line, b"transfer-encoding") {
                    if v.eq_ignore_ascii_case(b"chunked") {
                        return Err("chunked responses are not supported");
                    }
                }
            }
            State::Body | State::BodyToEof | State::Done => {}
        }
        self.line_len = 0;
        Ok(())
    }
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
        assert!(matches!(p.eof(), Progress::Invalid(m) if m.contains("before any")));
        let mut p = ResponseParser::default();
        assert!(matches!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Progress::Invalid(_)
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
