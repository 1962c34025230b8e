//! HTTP/1.x request parsing and response heads, pure and tested on byte fixtures. Enough of
//! RFC 9112 for a benchmark target: GET/HEAD, HTTP/1.0 and 1.1, `Connection` negotiation,
//! no request bodies, no pipelining guarantees (bytes after a request stay in the buffer).
//! The head's syntax is `httparse`'s (one pass, SIMD where the CPU has it).

/// Request heads larger than this are refused (400) instead of buffered without bound.
pub const MAX_HEAD: usize = 8192;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    pub path: String,
    /// Minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    /// The client wants the connection kept open after the response.
    pub wants_keepalive: bool,
    /// Bytes of the buffer this request used (head, including the blank line).
    pub consumed: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parse {
    /// Need more bytes.
    Partial,
    Done(Request),
    /// Answer with this status and close; the reason is for logs and tests.
    Bad(u16, &'static str),
}

/// Header lines a request may have; more is refused (431) rather than parsed into the heap.
pub const MAX_HEADERS: usize = 32;

/// Parses one request head at the start of `buf`: its syntax by `httparse` (which finds the
/// head's end in the same pass), then what this target serves.
pub fn parse_request(buf: &[u8]) -> Parse {
    // A request line must start with a token; refuse obvious garbage without waiting.
    if buf.first().is_some_and(|c| !c.is_ascii_uppercase()) {
        return Parse::Bad(400, "request line does not start with a method");
    }
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let end = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Parse::Bad(431, "request head too large")
        }
        Ok(httparse::Status::Partial) => return Parse::Partial,
        Err(httparse::Error::TooManyHeaders) => {
            return Parse::Bad(431, "more header lines than the server takes")
        }
        Err(httparse::Error::Version) => return Parse::Bad(400, "unsupported HTTP version"),
        Err(httparse::Error::HeaderName) => return Parse::Bad(400, "bad header name"),
        Err(httparse::Error::Token) => {
            return Parse::Bad(400, "request line is not `METHOD target HTTP/1.x`")
        }
        Err(_) => return Parse::Bad(400, "malformed request head"),
    };
    if end > MAX_HEAD {
        return Parse::Bad(431, "request head too large");
    }
    let (Some(m), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Parse::Bad(400, "request line is not `METHOD target HTTP/1.x`");
    };
    if !target.starts_with('/') {
        return Parse::Bad(400, "target is not an absolute path");
    }
    let method = match m {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ if !m.is_empty() && m.bytes().all(|c| c.is_ascii_uppercase()) => {
            return Parse::Bad(501, "method not implemented")
        }
        _ => return Parse::Bad(400, "bad method token"),
    };
    let mut conn_close = false;
    let mut conn_keepalive = false;
    let mut has_host = false;
    for h in req.headers.iter() {
        let name = h.name;
        let Ok(value) = std::str::from_utf8(h.value) else {
            return Parse::Bad(400, "request head is not UTF-8");
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("connection") {
            for tok in value.split(',') {
                let tok = tok.trim();
                conn_close |= tok.eq_ignore_ascii_case("close");
                conn_keepalive |= tok.eq_ignore_ascii_case("keep-alive");
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            match value.parse::<u64>() {
                Ok(0) => {}
                Ok(_) => return Parse::Bad(400, "request bodies are not accepted"),
                Err(_) => return Parse::Bad(400, "bad Content-Length"),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Parse::Bad(400, "request bodies are not accepted");
        } else if name.eq_ignore_ascii_case("host") {
            has_host = true;
        }
    }
    if minor == 1 && !has_host {
        return Parse::Bad(400, "HTTP/1.1 request without Host");
    }
    let path = target.split(['?', '#']).next().unwrap_or("/").to_string();
    let wants_keepalive = if minor == 1 {
        !conn_close
    } else {
        conn_keepalive && !conn_close
    };
    Parse::Done(Request {
        method,
        path,
        minor,
        wants_keepalive,
        consumed: end,
    })
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        _ => "Error",
    }
}

/// The response head for `status` with a body of `len` bytes.
pub fn response_head(status: u16, minor: u8, len: u64, content_type: &str, keep: bool) -> Vec<u8> {
    let conn = if keep { "keep-alive" } else { "close" };
    format!(
        "HTTP/1.{minor} {status} {}\r\nServer: synlab\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\nConnection: {conn}\r\n\r\n",
        reason(status)
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(b: &[u8]) -> Request {
        match parse_request(b) {
            Parse::Done(r) => r,
            other => panic!(
                "expected Done for {:?}, got {other:?}",
                String::from_utf8_lossy(b)
            ),
        }
    }

    #[test]
    fn http10_get_closes_by_default() {
        let r = done(b"GET /specweb96/class1_3 HTTP/1.0\r\n\r\n");
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.path, "/specweb96/class1_3");
        assert_eq!(r.minor, 0);
        assert!(!r.wants_keepalive);
        assert_eq!(r.consumed, 36);
    }

    #[test]
    fn http10_keepalive_when_asked() {
        let r = done(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(r.wants_keepalive);
    }

    #[test]
    fn http11_keepalive_unless_close() {
        assert!(done(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n").wants_keepalive);
        assert!(!done(b"HEAD /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").wants_keepalive);
    }

    #[test]
    fn query_string_is_dropped() {
        assert_eq!(
            done(b"GET /bytes/10?x=1 HTTP/1.0\r\n\r\n").path,
            "/bytes/10"
        );
    }

    #[test]
    fn partial_reads_wait_for_the_blank_line() {
        let full = b"GET /file/100 HTTP/1.1\r\nHost: h\r\n\r\n";
        for cut in 1..full.len() {
            assert_eq!(parse_request(&full[..cut]), Parse::Partial, "cut at {cut}");
        }
        assert_eq!(done(full).consumed, full.len());
    }

    #[test]
    fn bytes_after_the_head_are_left() {
        let b = b"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n";
        let r = done(b);
        assert_eq!(r.consumed, 19);
        assert_eq!(done(&b[r.consumed..]).path, "/b");
    }

    #[test]
    fn garbage_is_400() {
        for b in [
            &b"\x16\x03\x01\x02\x00\x01\x00"[..],
            b"hello\r\n\r\n",
            b"GET\r\n\r\n",
            b"GET / HTTP/2.0\r\n\r\n",
            b"GET / HTTP/1.0 extra\r\n\r\n",
            b"GET nopath HTTP/1.0\r\n\r\n",
            b"GET / HTTP/1.0\r\nNoColon\r\n\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello",
        ] {
            assert!(
                matches!(parse_request(b), Parse::Bad(400, _)),
                "{:?} -> {:?}",
                String::from_utf8_lossy(b),
                parse_request(b)
            );
        }
    }

    #[test]
    fn other_methods_are_501_and_huge_heads_431() {
        assert!(matches!(
            parse_request(b"POST / HTTP/1.0\r\n\r\n"),
            Parse::Bad(501, _)
        ));
        let mut big = b"GET / HTTP/1.0\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 10, b'a');
        assert!(matches!(parse_request(&big), Parse::Bad(431, _)));
        let mut many = b"GET / HTTP/1.0\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: a\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(matches!(parse_request(&many), Parse::Bad(431, _)));
    }

    #[test]
    fn head_has_length_and_connection() {
        let h = String::from_utf8(response_head(200, 1, 1294, "text/plain", true)).unwrap();
        assert!(h.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(h.contains("Content-Length: 1294\r\n"));
        assert!(h.contains("Connection: keep-alive\r\n"));
        assert!(h.ends_with("\r\n\r\n"));
    }
}
