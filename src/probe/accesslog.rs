//! A server's own count from its access log (common and combined formats, as nginx and Apache
//! write them, and Caddy's JSON lines): the lines appended since the run started, by status
//! class and by HTTP version, and the server's own time per request where the format has it
//! (nginx `$request_time`, Apache `%D`, Caddy's `duration`: the latency split's service). Only
//! the status, the protocol, the session reuse and the request time are parsed, without
//! allocating per line. `LogTail` follows the file like `tail -F` (a size drop is a truncation,
//! a new inode a rotation) and says which of the file's lines it counted (`LineSpan`: line
//! numbers and byte offsets, so a user finds a point's lines with `sed -n A,Bp`); `Follower`
//! polls it on a thread and hands out cumulative counts.

use anyhow::Context;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lines counted by status class; `lines` counts every complete line (the responses the server
/// logged), `unparsed` those whose status field could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StatusCounts {
    pub lines: u64,
    pub s1xx: u64,
    pub s2xx: u64,
    pub s3xx: u64,
    pub s4xx: u64,
    pub s5xx: u64,
    pub unparsed: u64,
    /// Over TLS, the lines whose session-reuse field (`tls:r` / `tls:.` as synlab's nginx
    /// config writes `$ssl_session_reused`, `tls:Resumed` / `tls:Initial` from Apache's
    /// `%{SSL_SESSION_RESUMED}x`) says the request's connection resumed a session or not.
    pub tls_full: u64,
    pub tls_resumed: u64,
    /// Lines the server wrote about itself, not counted in `lines`: Apache's internal dummy
    /// connections (its parent waking a child it wants gone: `OPTIONS *` with its own user
    /// agent; on an HTTPS listener a request without a TLS session, `tls:-`, answered 400).
    pub internal: u64,
    /// Counted lines by the HTTP version the request came in (HTTP/1.0 and 1.1 as `http1`):
    /// the request line's `HTTP/x` in common/combined, `request.proto` in Caddy's JSON.
    pub http1: u64,
    pub http2: u64,
    pub http3: u64,
    /// Counted lines that carry the server's time for the request (`rt:` from nginx's
    /// `$request_time`, `rt_us:` from Apache's `%D`, Caddy's `duration`), and those times
    /// summed, us (nginx's at its 1 ms resolution).
    pub timed: u64,
    pub service_us: u64,
    /// Where in the file the lines counted are (set by `LogTail`; zero for lines added by
    /// hand): `sed -n FIRST,LASTp` prints them.
    #[serde(flatten)]
    pub span: LineSpan,
}

/// The lines of a log file some counts came from: every line from the first to the last
/// (numbers 1-based, as `sed -n` and awk's `NR` count them; offsets in bytes from the file's
/// start), the server's own and unparsed lines among them. With no line read the span is
/// empty: `last_line = first_line - 1` and its three offsets are equal. `restarts` counts the
/// times the reader started a file over in it (truncated, or rotated): when it is not 0 the
/// first line is in an earlier file (or before the truncation) and the last in the current
/// one, so the numbers are not one file's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LineSpan {
    /// The first line's number and the offset of its first byte (0: not read from a file).
    pub first_line: u64,
    pub first_offset: u64,
    /// The last line's number and the offset of its first byte.
    pub last_line: u64,
    pub last_offset: u64,
    /// The offset just past the last line's newline: where the next line starts.
    pub end_offset: u64,
    pub restarts: u64,
}

impl LineSpan {
    /// The lines after `earlier`'s up to this span's last (both from the same reader, this
    /// one later).
    fn since(&self, earlier: &LineSpan) -> LineSpan {
        // Counts added by hand, or the reader's first counts: from the reader's first line.
        if earlier.first_line == 0 {
            return *self;
        }
        let mut s = LineSpan {
            first_line: earlier.last_line + 1,
            first_offset: earlier.end_offset,
            restarts: self.restarts.saturating_sub(earlier.restarts),
            ..*self
        };
        if s.last_line < s.first_line && s.restarts == 0 {
            s.last_offset = s.first_offset;
        }
        s
    }
}

/// What the listener whose log is read speaks: on a plain listener `tls:-` is every line's
/// field (nginx writes `-` for `$ssl_session_reused` there when one `log_format` serves HTTP
/// and HTTPS), so only on an HTTPS listener does `tls:-` mark a request without a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Listener {
    #[default]
    Plain,
    Https,
}

impl StatusCounts {
    /// Counts one log line (without its newline) of a log written for `listener`.
    pub fn add_line(&mut self, line: &[u8], listener: Listener) {
        if line.first() == Some(&b'{') {
            return self.add_json(line);
        }
        let tls = tls_field(line);
        if is_internal(line, tls, listener) {
            self.internal += 1;
            return;
        }
        self.lines += 1;
        match parse_status(line).map(|s| s / 100) {
            Some(1) => self.s1xx += 1,
            Some(2) => self.s2xx += 1,
            Some(3) => self.s3xx += 1,
            Some(4) => self.s4xx += 1,
            Some(5) => self.s5xx += 1,
            _ => self.unparsed += 1,
        }
        match tls.and_then(reused) {
            Some(true) => self.tls_resumed += 1,
            Some(false) => self.tls_full += 1,
            None => {}
        }
        self.add_version(request_version(line));
        self.add_time(request_time_us(line));
    }

    fn add_time(&mut self, us: Option<u64>) {
        if let Some(us) = us {
            self.timed += 1;
            self.service_us += us;
        }
    }

    /// One of Caddy's JSON access-log lines: `status`, `request.proto`, `request.tls.resumed`
    /// (a line that is not such JSON, or has no `request`, is unparsed: another JSON format
    /// would be counted on fields it need not mean the same by).
    fn add_json(&mut self, line: &[u8]) {
        self.lines += 1;
        let Some(l) = serde_json::from_slice::<JsonLine>(line)
            .ok()
            .filter(|l| l.request.is_some())
        else {
            self.unparsed += 1;
            return;
        };
        match l.status.map(|s| s / 100) {
            Some(1) => self.s1xx += 1,
            Some(2) => self.s2xx += 1,
            Some(3) => self.s3xx += 1,
            Some(4) => self.s4xx += 1,
            Some(5) => self.s5xx += 1,
            _ => self.unparsed += 1,
        }
        let req = l.request.unwrap_or_default();
        match req.tls.and_then(|t| t.resumed) {
            Some(true) => self.tls_resumed += 1,
            Some(false) => self.tls_full += 1,
            None => {}
        }
        self.add_version(req.proto.as_deref().and_then(HttpVersion::parse));
        // Seconds as a float: to the us (Caddy writes ns precision).
        self.add_time(
            l.duration
                .filter(|d| d.is_finite() && *d >= 0.0)
                .map(|d| (d * 1e6).round() as u64),
        );
    }

    fn add_version(&mut self, v: Option<HttpVersion>) {
        match v {
            Some(HttpVersion::Http1) => self.http1 += 1,
            Some(HttpVersion::Http2) => self.http2 += 1,
            Some(HttpVersion::Http3) => self.http3 += 1,
            None => {}
        }
    }

    /// The counts added since `earlier`.
    pub fn since(&self, earlier: &StatusCounts) -> StatusCounts {
        StatusCounts {
            lines: self.lines.saturating_sub(earlier.lines),
            s1xx: self.s1xx.saturating_sub(earlier.s1xx),
            s2xx: self.s2xx.saturating_sub(earlier.s2xx),
            s3xx: self.s3xx.saturating_sub(earlier.s3xx),
            s4xx: self.s4xx.saturating_sub(earlier.s4xx),
            s5xx: self.s5xx.saturating_sub(earlier.s5xx),
            unparsed: self.unparsed.saturating_sub(earlier.unparsed),
            tls_full: self.tls_full.saturating_sub(earlier.tls_full),
            tls_resumed: self.tls_resumed.saturating_sub(earlier.tls_resumed),
            internal: self.internal.saturating_sub(earlier.internal),
            http1: self.http1.saturating_sub(earlier.http1),
            http2: self.http2.saturating_sub(earlier.http2),
            http3: self.http3.saturating_sub(earlier.http3),
            timed: self.timed.saturating_sub(earlier.timed),
            service_us: self.service_us.saturating_sub(earlier.service_us),
            span: self.span.since(&earlier.span),
        }
    }

    /// Whether these lines have no request time to give the latency split its service
    /// (enough of them to say so, none with the field): the notice naming the field to add.
    pub fn service_notice(&self) -> Option<NoRequestTime> {
        (self.lines > ISSUE_FLOOR && self.timed == 0).then_some(NoRequestTime)
    }

    /// Lines that were not a 2xx response (unparsed ones included).
    pub fn non2xx(&self) -> u64 {
        self.lines - self.s2xx
    }

    /// Why these lines are not a count of responses synlab can trust: too many it could not
    /// read, or too many it took for the server's own; None when they are.
    pub fn issue(&self) -> Option<LogIssue> {
        if material(self.unparsed, self.lines) {
            return Some(LogIssue::Unparsed {
                unparsed: self.unparsed,
                lines: self.lines,
            });
        }
        let all = self.lines + self.internal;
        material(self.internal, all).then_some(LogIssue::Internal {
            internal: self.internal,
            lines: all,
        })
    }
}

/// A share of the log's lines past which they say something about the log, not about a few
/// odd requests (a scanner's garbage line, Apache's occasional dummy connection).
pub const ISSUE_SHARE: f64 = 0.01;
/// ... and never on fewer lines than this.
const ISSUE_FLOOR: u64 = 10;

fn material(part: u64, whole: u64) -> bool {
    part > ISSUE_FLOOR && part as f64 > ISSUE_SHARE * whole as f64
}

/// Why an access log's count is not the server's count of the load's responses: the line a
/// user reads (the TUI's warning, run.log).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogIssue {
    #[error("access log: {unparsed} of {lines} lines have no status synlab can read (not common/combined, nor Caddy's JSON): the server's count is not trusted; `synlab logformat nginx|apache|caddy` prints a format it reads")]
    Unparsed { unparsed: u64, lines: u64 },
    #[error("access log: {internal} of {lines} lines are the server's own requests (Apache's OPTIONS * / dummy connections, or on HTTPS a request without TLS answered 400), not the load's: the server's count is not trusted")]
    Internal { internal: u64, lines: u64 },
    #[error("access log: {server} lines lag the clients' {client} responses by more than the {in_flight} requests in flight: the log is buffered or misses lines (nginx `access_log ... buffer=`), so the server's count is not trusted")]
    Lagging {
        client: u64,
        server: u64,
        in_flight: u64,
    },
}

/// An access log whose lines carry no request time: the latency split's service is unknown
/// (not 0) and its time is in the transfer. The line run.log and summary.json's notices say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("access log: its lines have no server's time for the request, so the latency split's service is unknown (its time is in the transfer): add `{nginx}` (nginx) or `{apache}` (Apache) at the end of the log format; `synlab logformat nginx|apache` prints one with it", nginx = NGINX_TIME_FIELD.trim_start(), apache = APACHE_TIME_FIELD.trim_start())]
pub struct NoRequestTime;

/// Whether the log's `server` lines lag `client_before`, the responses the clients had
/// received a moment before the log was read (every one of them was logged by then: a server
/// logs a response when it has sent it), by more than the `in_flight` requests.
pub fn lag_issue(client_before: u64, server: u64, in_flight: u64) -> Option<LogIssue> {
    (client_before > server + in_flight).then_some(LogIssue::Lagging {
        client: client_before,
        server,
        in_flight,
    })
}

/// At start, before the run has written a line: whether the log's last lines (up to 20, from
/// its last 16 KiB) are all unreadable as common/combined, so that the user hears of it before
/// the run rather than from a server count of 0 after it. None when they parse or there are none.
pub fn start_issue(path: &Path, listener: Listener) -> Option<LogIssue> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)))
        .ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    // The first piece may be a line cut by the window; the last one is not ended yet.
    let mut lines: Vec<&[u8]> = tail.split(|&c| c == b'\n').collect();
    lines.pop();
    if len > 16 * 1024 && !lines.is_empty() {
        lines.remove(0);
    }
    let mut c = StatusCounts::default();
    for l in lines.iter().rev().filter(|l| !l.is_empty()).take(20) {
        c.add_line(l, listener);
    }
    (c.lines > 0 && c.unparsed == c.lines).then_some(LogIssue::Unparsed {
        unparsed: c.unparsed,
        lines: c.lines,
    })
}

/// The combined format as nginx's `log_format` writes it, which synlab reads.
pub const NGINX_COMBINED: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
/// The session-reuse field nginx appends (`r` resumed, `.` full, `-` on a plain listener).
pub const NGINX_TLS_FIELD: &str = " tls:$ssl_session_reused";
/// The combined format as Apache's `LogFormat` writes it (its quotes escaped for the
/// directive's own).
pub const APACHE_COMBINED: &str = r#"%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\""#;
/// The session-reuse field Apache's mod_ssl appends (`Resumed`, `Initial`, `-`).
pub const APACHE_TLS_FIELD: &str = " tls:%{SSL_SESSION_RESUMED}x";

/// The request-time field synlab appends to nginx's lines: `$request_time`, seconds with ms
/// resolution, from the request's first byte read to the log write after its last byte went to
/// the socket (the response's writing in it, unlike the built-in server's service).
pub const NGINX_TIME_FIELD: &str = " rt:$request_time";
/// ... and to Apache's: `%D`, the time taken to serve the request in microseconds (from the
/// request line's read to the log write, also after the response's last byte).
pub const APACHE_TIME_FIELD: &str = " rt_us:%D";
/// Their markers in a line (what follows is seconds, or microseconds).
const RT_SECONDS: &[u8] = b" rt:";
const RT_MICROS: &[u8] = b" rt_us:";

/// The server whose log format `synlab logformat` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogServer {
    Nginx,
    Apache,
    Caddy,
}

/// The lines to put in a server's config so that synlab reads its access log best: common/
/// combined with the session-reuse field and the request time, one format for HTTP and HTTPS.
pub fn recommended_format(server: LogServer) -> String {
    match server {
        LogServer::Nginx => format!(
            "# nginx, inside http {{}}: one format for HTTP and HTTPS listeners (plain ones log tls:-);\n\
             # rt: is $request_time, the latency split's service (s, ms resolution, to the last byte)\n\
             log_format synlab '{NGINX_COMBINED}{NGINX_TIME_FIELD}{NGINX_TLS_FIELD}';\n\
             access_log /var/log/nginx/access.log synlab;\n"
        ),
        LogServer::Apache => format!(
            "# Apache: the tls field needs mod_ssl loaded (without it, leave{APACHE_TLS_FIELD} out);\n\
             # rt_us: is %D, the latency split's service (us, to the last byte)\n\
             LogFormat \"{APACHE_COMBINED}{APACHE_TIME_FIELD}{APACHE_TLS_FIELD}\" synlab\n\
             CustomLog ${{APACHE_LOG_DIR}}/access.log synlab\n"
        ),
        // Caddy's JSON names the protocol and the session reuse itself.
        LogServer::Caddy => "# Caddy, inside the site block: its JSON lines as they are\n\
             log {\n\
             \toutput file /var/log/caddy/access.log\n\
             \tformat json\n\
             }\n"
            .to_string(),
    }
}

/// The marker of the session-reuse field synlab appends to its TLS servers' log lines.
pub const TLS_FIELD: &str = " tls:";

/// The value of the line's session-reuse field (`r`, `Resumed`, `-`, ...); None when the line
/// has no such field (plain HTTP).
fn tls_field(line: &[u8]) -> Option<&[u8]> {
    let at = memchr::memmem::rfind(line, TLS_FIELD.as_bytes())?;
    let v = &line[at + TLS_FIELD.len()..];
    Some(&v[..v.iter().position(|&c| c == b' ').unwrap_or(v.len())])
}

/// Whether a line with session-reuse field `tls` is one the server wrote about itself (see
/// `StatusCounts::internal`): Apache's own request (`OPTIONS *`, or the user agent it gives
/// its dummy connections), or on an HTTPS listener a request that came without a TLS session
/// (`tls:-`) and was answered 400, which no client of the load sends. A plain listener's
/// `tls:-` is its normal field and never makes a line internal.
fn is_internal(line: &[u8], tls: Option<&[u8]>, listener: Listener) -> bool {
    let apaches_own = memchr::memmem::find(line, b"\"OPTIONS * ").is_some()
        || memchr::memmem::find(line, b"(internal dummy connection)").is_some();
    let no_session =
        listener == Listener::Https && tls == Some(b"-") && parse_status(line) == Some(400);
    apaches_own || no_session
}

/// Whether a session-reuse field says resumed: `r` or `Resumed` (true), `.` or `Initial`
/// (false); None for anything else.
fn reused(tls: &[u8]) -> Option<bool> {
    match tls {
        b"r" | b"Resumed" => Some(true),
        b"." | b"Initial" => Some(false),
        _ => None,
    }
}

/// The server's time for a line's request, us: the last `rt:` field (seconds, as nginx's
/// `$request_time` writes them, `0.003`) or `rt_us:` field (whole microseconds, Apache's
/// `%D`); None without one or when it is not a number (nginx's `-`).
fn request_time_us(line: &[u8]) -> Option<u64> {
    let field = |marker: &[u8]| {
        let at = memchr::memmem::rfind(line, marker)? + marker.len();
        let v = &line[at..];
        Some(&v[..v.iter().position(|&c| c == b' ').unwrap_or(v.len())])
    };
    if let Some(v) = field(RT_MICROS) {
        return digits(v);
    }
    let v = field(RT_SECONDS)?;
    // Seconds and up to six decimals, to the us without a float.
    let (whole, frac) = match memchr::memchr(b'.', v) {
        Some(dot) => (&v[..dot], &v[dot + 1..]),
        None => (v, &b""[..]),
    };
    if frac.len() > 6 || (whole.is_empty() && frac.is_empty()) {
        return None;
    }
    let s = if whole.is_empty() { 0 } else { digits(whole)? };
    let f = if frac.is_empty() { 0 } else { digits(frac)? };
    let scale = 10u64.pow(6 - frac.len() as u32);
    s.checked_mul(1_000_000)?.checked_add(f * scale)
}

/// A run of ASCII digits as a number (None if empty, not all digits, or too large).
fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |a, &d| {
        a.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// The HTTP version a logged request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.0 or HTTP/1.1.
    Http1,
    Http2,
    Http3,
}

impl HttpVersion {
    /// `HTTP/1.0`, `HTTP/1.1`, `HTTP/2.0` (nginx, Apache, Caddy), `HTTP/2`, `HTTP/3.0`, `HTTP/3`.
    pub fn parse(proto: &str) -> Option<HttpVersion> {
        match proto.strip_prefix("HTTP/")? {
            "1.0" | "1.1" => Some(HttpVersion::Http1),
            "2" | "2.0" => Some(HttpVersion::Http2),
            "3" | "3.0" => Some(HttpVersion::Http3),
            _ => None,
        }
    }
}

/// The fields of a Caddy JSON access-log line synlab reads; the rest is skipped.
#[derive(serde::Deserialize)]
struct JsonLine {
    status: Option<u16>,
    request: Option<JsonRequest>,
    /// Seconds the handler took (Caddy: from the request read to the response written).
    duration: Option<f64>,
}

#[derive(serde::Deserialize, Default)]
struct JsonRequest {
    proto: Option<String>,
    tls: Option<JsonTls>,
}

#[derive(serde::Deserialize)]
struct JsonTls {
    resumed: Option<bool>,
}

/// The span of a common/combined line's quoted request (`"GET / HTTP/1.1"`, without its
/// quotes): the first quoted field (the time in brackets has none), where a backslash escapes
/// the next character (Apache writes `\"`; nginx `\x22`).
fn request_field(line: &[u8]) -> Option<std::ops::Range<usize>> {
    let open = memchr::memchr(b'"', line)?;
    let mut i = open + 1;
    loop {
        match *line.get(i)? {
            b'\\' => i += 2,
            b'"' => break,
            _ => i += 1,
        }
    }
    Some(open + 1..i)
}

/// The version at the end of a common/combined line's quoted request (`"GET / HTTP/1.1"`).
fn request_version(line: &[u8]) -> Option<HttpVersion> {
    let req = std::str::from_utf8(line.get(request_field(line)?)?).ok()?;
    HttpVersion::parse(req.rsplit(' ').next()?)
}

/// The status of a common/combined log line: the three digits after the quoted request
/// (`host ident user [time] "GET / HTTP/1.1" 200 1294 ...`). A backslash escapes the next
/// character inside the quotes (Apache writes `\"`; nginx `\x22`).
pub fn parse_status(line: &[u8]) -> Option<u16> {
    let rest = line.get(request_field(line)?.end + 1..)?;
    let start = rest.iter().position(|&c| c != b' ')?;
    let digits = rest.get(start..start + 3)?;
    let after = rest.get(start + 3).copied();
    if !digits.iter().all(u8::is_ascii_digit) || after.is_some_and(|c| c != b' ') {
        return None;
    }
    Some(digits.iter().fold(0u16, |a, &d| a * 10 + (d - b'0') as u16))
}

/// Reads what is appended to a log file, from where it stood when opened, and keeps where its
/// lines are (`LineSpan`: their numbers and offsets in the file) as it goes.
pub struct LogTail {
    path: PathBuf,
    file: File,
    /// The current file's bytes read so far.
    offset: u64,
    inode: (u64, u64),
    listener: Listener,
    /// The start of a line not yet ended by its newline.
    carry: Vec<u8>,
    buf: Vec<u8>,
    /// The file's length when it was opened. Its lines are numbered at the first poll (on the
    /// follower's thread: counting the lines of a large log takes a while).
    opened_at: u64,
    numbered: bool,
    /// A line was being written when the log was opened: the rest of it is still to come, and
    /// it is a line from before the run (not counted).
    skipping: bool,
    /// The lines read since the log was opened: the first, the current file's last (its
    /// number is the current file's lines read), where the next starts, the restarts.
    span: LineSpan,
}

impl LogTail {
    /// Opens `path`, the log of a `listener`, at its current end: only lines written from
    /// now on count. A missing or unreadable file is an error that names it.
    pub fn open_at_end(path: &Path, listener: Listener) -> anyhow::Result<Self> {
        let file = File::open(path).with_context(|| {
            format!(
                "cannot read the access log {}: point target.access_log at the server's access log (common or combined format), readable by this user",
                path.display()
            )
        })?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            anyhow::bail!(
                "the access log {} is not a regular file: point target.access_log at the server's access log",
                path.display()
            );
        }
        Ok(LogTail {
            path: path.to_path_buf(),
            file,
            offset: meta.len(),
            inode: (meta.dev(), meta.ino()),
            listener,
            carry: Vec::new(),
            buf: vec![0; 64 * 1024],
            opened_at: meta.len(),
            numbered: false,
            skipping: false,
            span: LineSpan::default(),
        })
    }

    /// Counts the complete lines appended since the last call, and sets `counts.span` to
    /// where all the lines read since the log was opened are. A file that shrank was
    /// truncated (read again from its start); a new file at the path was rotated in (the old
    /// one is read to its end first, then the new one from its start).
    pub fn poll(&mut self, counts: &mut StatusCounts) -> std::io::Result<()> {
        let read = self.poll_lines(counts);
        counts.span = self.span;
        read
    }

    fn poll_lines(&mut self, counts: &mut StatusCounts) -> std::io::Result<()> {
        if !self.numbered {
            self.number_lines()?;
        }
        let len = self.file.metadata()?.len();
        if len < self.offset {
            self.carry.clear();
            self.start_over();
        }
        self.read_to_end(counts)?;
        if let Ok(meta) = std::fs::metadata(&self.path) {
            if (meta.dev(), meta.ino()) != self.inode {
                if let Ok(f) = File::open(&self.path) {
                    // A line cut at a rotation is the old file's last and ends there.
                    if !self.carry.is_empty() && !self.skipping {
                        counts.add_line(&std::mem::take(&mut self.carry), self.listener);
                        self.line_ended(self.offset);
                    }
                    self.carry.clear();
                    self.file = f;
                    self.inode = (meta.dev(), meta.ino());
                    self.start_over();
                    self.read_to_end(counts)?;
                }
            }
        }
        Ok(())
    }

    /// Numbers the lines that were in the file when it was opened: the first line counted is
    /// the next whole one.
    fn number_lines(&mut self) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let (mut at, mut lines, mut last) = (0u64, 0u64, b'\n');
        while at < self.opened_at {
            let want = (self.opened_at - at).min(self.buf.len() as u64) as usize;
            let n = self.file.read_at(&mut self.buf[..want], at)?;
            if n == 0 {
                // Truncated since: the poll starts it over.
                break;
            }
            lines += memchr::memchr_iter(b'\n', &self.buf[..n]).count() as u64;
            last = self.buf[n - 1];
            at += n as u64;
        }
        self.skipping = last != b'\n';
        let first_line = lines + 1 + u64::from(self.skipping);
        self.span = LineSpan {
            first_line,
            first_offset: self.opened_at,
            last_line: first_line - 1,
            last_offset: self.opened_at,
            end_offset: self.opened_at,
            restarts: 0,
        };
        self.numbered = true;
        Ok(())
    }

    /// Reads the file from its start (truncated, or a new one rotated in): its line 1 next.
    fn start_over(&mut self) {
        self.offset = 0;
        self.skipping = false;
        let s = &mut self.span;
        (s.last_line, s.last_offset, s.end_offset) = (0, 0, 0);
        s.restarts += 1;
    }

    /// A line ended just before offset `next` (after its newline, or at a rotated file's end).
    fn line_ended(&mut self, next: u64) {
        let s = &mut self.span;
        if std::mem::take(&mut self.skipping) {
            // The line being written at the opening ended: the first line counted is next.
            (s.first_offset, s.last_offset) = (next, next);
        } else {
            s.last_line += 1;
            s.last_offset = s.end_offset;
        }
        s.end_offset = next;
    }

    fn read_to_end(&mut self, counts: &mut StatusCounts) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(self.offset))?;
        loop {
            let n = self.file.read(&mut self.buf)?;
            if n == 0 {
                return Ok(());
            }
            let base = self.offset;
            self.offset += n as u64;
            let mut at = 0;
            while let Some(nl) = memchr::memchr(b'\n', &self.buf[at..n]) {
                let end = at + nl;
                match (self.skipping, self.carry.is_empty()) {
                    // The rest of the line being written at the opening: not the run's.
                    (true, _) => {}
                    (false, true) => counts.add_line(&self.buf[at..end], self.listener),
                    (false, false) => {
                        self.carry.extend_from_slice(&self.buf[at..end]);
                        counts.add_line(&self.carry, self.listener);
                        self.carry.clear();
                    }
                }
                self.line_ended(base + end as u64 + 1);
                at = end + 1;
            }
            if !self.skipping {
                self.carry.extend_from_slice(&self.buf[at..n]);
            }
        }
    }
}

/// Follows an access log on a thread: every `interval`, the cumulative counts since start go to
/// `on_sample` with the seconds since the follower started.
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Follower {
    pub fn spawn(
        path: &Path,
        listener: Listener,
        interval: Duration,
        mut on_sample: impl FnMut(f64, StatusCounts) + Send + 'static,
    ) -> anyhow::Result<Self> {
        let mut tail = LogTail::open_at_end(path, listener)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let start = Instant::now();
        let thread = std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || {
                let mut counts = StatusCounts::default();
                loop {
                    let last = flag.load(Ordering::Acquire);
                    // A read error (the file vanished between rotations) is retried next time.
                    let _ = tail.poll(&mut counts);
                    on_sample(start.elapsed().as_secs_f64(), counts);
                    if last {
                        return;
                    }
                    std::thread::park_timeout(interval);
                }
            })?;
        Ok(Follower {
            stop,
            thread: Some(thread),
        })
    }

    /// Reads the log one last time (its final sample is sent) and stops.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const NGINX_COMBINED: &str = r#"198.18.0.2 - - [23/Nov/2026:22:14:03 +0000] "GET /bytes/1294 HTTP/1.0" 200 1294 "-" "synlab""#;
    const APACHE_COMBINED: &str = r#"127.0.0.1 - - [23/Nov/2026:22:14:03 +0000] "GET /specweb96/class0_1 HTTP/1.0" 200 102 "-" "-""#;
    const COMMON_404: &str =
        r#"::1 - frank [10/Oct/2000:13:55:36 -0700] "GET /nope HTTP/1.0" 404 153"#;
    const APACHE_ESCAPED: &str =
        r#"127.0.0.1 - - [23/Nov/2026:22:14:03 +0000] "GET /a\"b HTTP/1.0" 301 - "-" "x""#;
    const NGINX_ESCAPED: &str =
        r#"127.0.0.1 - - [23/Nov/2026:22:14:03 +0000] "GET /a\x22b HTTP/1.1" 503 0 "-" "-""#;
    const NGINX_EMPTY_REQUEST: &str =
        r#"127.0.0.1 - - [23/Nov/2026:22:14:03 +0000] "" 400 0 "-" "-""#;

    #[test]
    fn status_of_common_and_combined_lines() {
        assert_eq!(parse_status(NGINX_COMBINED.as_bytes()), Some(200));
        assert_eq!(parse_status(APACHE_COMBINED.as_bytes()), Some(200));
        assert_eq!(parse_status(COMMON_404.as_bytes()), Some(404));
        assert_eq!(parse_status(APACHE_ESCAPED.as_bytes()), Some(301));
        assert_eq!(parse_status(NGINX_ESCAPED.as_bytes()), Some(503));
        assert_eq!(parse_status(NGINX_EMPTY_REQUEST.as_bytes()), Some(400));
    }

    /// As Caddy 2.6 writes them (trimmed of headers): HTTP/1.1 over TLS, full then resumed,
    /// HTTP/2 and HTTP/3.
    const CADDY_H1: &str = r#"{"level":"info","ts":1795836337.48,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","remote_port":"59900","proto":"HTTP/1.1","method":"GET","host":"synlab.lab","uri":"/","headers":{"User-Agent":["curl/7.88.1"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"","server_name":""}},"user_id":"","duration":0.0001,"size":6,"status":200,"resp_headers":{"Server":["Caddy"]}}"#;

    #[test]
    fn caddys_json_lines_count_by_status_protocol_and_reuse() {
        let h1_resumed = CADDY_H1.replace(r#""resumed":false"#, r#""resumed":true"#);
        let h2 = CADDY_H1.replace(r#""proto":"HTTP/1.1""#, r#""proto":"HTTP/2.0""#);
        let h3_404 = CADDY_H1
            .replace(r#""proto":"HTTP/1.1""#, r#""proto":"HTTP/3.0""#)
            .replace(r#""status":200"#, r#""status":404"#);
        let mut c = StatusCounts::default();
        for l in [CADDY_H1, &h1_resumed, &h2, &h3_404, "{\"not\": caddy"] {
            c.add_line(l.as_bytes(), Listener::Https);
        }
        assert_eq!(
            c,
            StatusCounts {
                lines: 5,
                s2xx: 3,
                s4xx: 1,
                unparsed: 1,
                tls_full: 3,
                tls_resumed: 1,
                http1: 2,
                http2: 1,
                http3: 1,
                // Caddy's `duration` (0.0001 s) on each Caddy line.
                timed: 4,
                service_us: 400,
                ..Default::default()
            }
        );
        // The common/combined request line names its version too.
        let mut c = StatusCounts::default();
        c.add_line(NGINX_COMBINED.as_bytes(), Listener::Plain);
        c.add_line(NGINX_ESCAPED.as_bytes(), Listener::Plain);
        c.add_line(
            NGINX_COMBINED.replace("HTTP/1.0", "HTTP/2.0").as_bytes(),
            Listener::Plain,
        );
        c.add_line(NGINX_EMPTY_REQUEST.as_bytes(), Listener::Plain);
        assert_eq!((c.http1, c.http2, c.http3), (2, 1, 0));
    }

    #[test]
    fn lines_without_a_status_are_unparsed_not_dropped() {
        for bad in [
            "",
            "garbage",
            r#"1.2.3.4 - - [x] "GET / HTTP/1.0"#,
            r#"1.2.3.4 - - [x] "GET / HTTP/1.0" 20"#,
            r#"1.2.3.4 - - [x] "GET / HTTP/1.0" 2000 5"#,
            r#"1.2.3.4 - - [x] "GET / HTTP/1.0" abc 5"#,
        ] {
            assert_eq!(parse_status(bad.as_bytes()), None, "{bad}");
        }
        let mut c = StatusCounts::default();
        c.add_line(b"garbage", Listener::Plain);
        c.add_line(COMMON_404.as_bytes(), Listener::Plain);
        c.add_line(NGINX_COMBINED.as_bytes(), Listener::Plain);
        assert_eq!(
            c,
            StatusCounts {
                lines: 3,
                s2xx: 1,
                s4xx: 1,
                unparsed: 1,
                http1: 2,
                ..Default::default()
            }
        );
        assert_eq!(c.non2xx(), 2);
        let mut later = c;
        later.add_line(NGINX_ESCAPED.as_bytes(), Listener::Plain);
        assert_eq!(
            later.since(&c),
            StatusCounts {
                lines: 1,
                s5xx: 1,
                http1: 1,
                ..Default::default()
            }
        );
    }

    #[test]
    fn apaches_internal_dummy_connections_are_not_responses() {
        // As Apache 2.4 logs them: on a plain listener, and on an HTTPS one (a request
        // without a TLS session, answered 400).
        let plain = r#"::1 - - [26/Nov/2026:14:40:28 +0000] "OPTIONS * HTTP/1.0" 200 126 "-" "Apache/2.4.62 (Debian) (internal dummy connection)""#;
        let tls =
            r#"198.18.0.1 - - [26/Nov/2026:14:40:28 +0000] "GET / HTTP/1.0" 400 402 "-" "-" tls:-"#;
        let load = r#"198.18.1.1 - - [26/Nov/2026:14:40:28 +0000] "GET /bytes/1294 HTTP/1.0" 200 1294 "-" "synlab" tls:Initial"#;
        let mut c = StatusCounts::default();
        for l in [plain, tls, load, NGINX_COMBINED] {
            c.add_line(l.as_bytes(), Listener::Https);
        }
        assert_eq!(
            c,
            StatusCounts {
                lines: 2,
                s2xx: 2,
                tls_full: 1,
                internal: 2,
                http1: 2,
                ..Default::default()
            }
        );
    }

    #[test]
    fn a_plain_listeners_tls_dash_is_a_response_not_apaches_own() {
        // One nginx log_format for HTTP and HTTPS: a plain listener writes `tls:-` on every
        // line, a 400 among them (a client's bad request) included.
        let ok = r#"127.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET /bytes/100 HTTP/1.1" 200 100 "-" "synlab" tls:-"#;
        let bad = r#"127.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET /x HTTP/1.1" 400 150 "-" "synlab" tls:-"#;
        let mut c = StatusCounts::default();
        for l in [ok, ok, bad] {
            c.add_line(l.as_bytes(), Listener::Plain);
        }
        assert_eq!((c.lines, c.s2xx, c.s4xx, c.internal), (3, 2, 1, 0));
        assert_eq!((c.tls_full, c.tls_resumed), (0, 0));
        // On an HTTPS listener only the 400 without a session is the server's own.
        let mut h = StatusCounts::default();
        for l in [ok, bad] {
            h.add_line(l.as_bytes(), Listener::Https);
        }
        assert_eq!((h.lines, h.internal), (1, 1));
        // Apache's OPTIONS * is its own whatever the listener, whatever its user agent.
        let options = r#"::1 - - [27/Nov/2026:10:00:00 +0000] "OPTIONS * HTTP/1.0" 200 - "-" "-""#;
        let mut a = StatusCounts::default();
        a.add_line(options.as_bytes(), Listener::Plain);
        assert_eq!((a.lines, a.internal), (0, 1));
    }

    #[test]
    fn http2_lines_are_counted_by_their_request_protocol() {
        let mut c = StatusCounts::default();
        for l in [
            r#"127.0.0.1 - - [28/Nov/2026:03:25:44 +0000] "GET /index.html HTTP/2.0" 200 6 "-" "h2load nghttp2/1.52.0""#,
            r#"::1 - - [28/Nov/2026:03:25:44 +0000] "GET / HTTP/2.0" 200 6 "-" "curl" tls:."#,
            r#"127.0.0.1 - - [28/Nov/2026:03:25:44 +0000] "GET / HTTP/1.1" 200 6 "-" "HTTP/2.0""#,
            r#"127.0.0.1 - - [28/Nov/2026:03:25:44 +0000] "GET /a"b HTTP/2.0" HTTP/1.1" 200 6 "-" "-""#,
            r#"127.0.0.1 - - [28/Nov/2026:03:25:44 +0000] "-" 400 0 "-" "-""#,
        ] {
            c.add_line(l.as_bytes(), Listener::Plain);
        }
        assert_eq!((c.lines, c.http2), (5, 2), "{c:?}");
    }

    #[test]
    fn trailing_fields_after_combined_are_read() {
        let line = r#"10.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 304 0 "-" "curl/8" 0.003 "upstream=-" tls:r"#;
        let mut c = StatusCounts::default();
        c.add_line(line.as_bytes(), Listener::Https);
        assert_eq!((c.lines, c.s3xx, c.tls_resumed, c.unparsed), (1, 1, 1, 0));
    }

    #[test]
    fn a_log_synlab_cannot_trust_says_why() {
        let mut c = StatusCounts {
            lines: 1000,
            s2xx: 995,
            unparsed: 5,
            ..Default::default()
        };
        assert_eq!(c.issue(), None, "a few odd lines are not the format");
        c.unparsed = 500;
        let why = c.issue().unwrap().to_string();
        assert!(
            why.contains("500 of 1000") && why.contains("synlab logformat"),
            "{why}"
        );
        let c = StatusCounts {
            lines: 0,
            internal: 900,
            ..Default::default()
        };
        assert!(matches!(
            c.issue(),
            Some(LogIssue::Internal {
                internal: 900,
                lines: 900
            })
        ));
        // Lines lag the clients by more than what is in flight: buffered or missing.
        assert_eq!(lag_issue(1000, 990, 20), None);
        assert!(matches!(
            lag_issue(1000, 900, 20),
            Some(LogIssue::Lagging { .. })
        ));
    }

    #[test]
    fn a_log_in_a_format_synlab_cannot_read_is_said_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        append(&p, "");
        assert_eq!(start_issue(&p, Listener::Plain), None, "an empty log");
        // JSON lines (a custom log_format): no quoted request followed by a status.
        append(
            &p,
            "{\"status\":200,\"uri\":\"/\"}\n{\"status\":200,\"uri\":\"/x\"}\n",
        );
        assert!(matches!(
            start_issue(&p, Listener::Plain),
            Some(LogIssue::Unparsed {
                unparsed: 2,
                lines: 2
            })
        ));
        append(&p, &format!("{NGINX_COMBINED}\n"));
        assert_eq!(start_issue(&p, Listener::Plain), None);
    }

    #[test]
    fn the_recommended_formats_are_read_with_their_tls_field() {
        let nginx = recommended_format(LogServer::Nginx);
        assert!(nginx.contains("tls:$ssl_session_reused") && nginx.contains("log_format synlab '"));
        let apache = recommended_format(LogServer::Apache);
        assert!(
            apache.contains(r#"LogFormat "%h %l %u %t \"%r\" %>s"#),
            "{apache}"
        );
        // A line as nginx writes the format on a plain listener and on an HTTPS one.
        let plain = r#"127.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "synlab" tls:-"#;
        let https = r#"127.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "synlab" tls:."#;
        let mut c = StatusCounts::default();
        c.add_line(plain.as_bytes(), Listener::Plain);
        c.add_line(https.as_bytes(), Listener::Https);
        assert_eq!((c.lines, c.s2xx, c.tls_full, c.issue()), (2, 2, 1, None));
    }

    #[test]
    fn request_times_are_read_to_the_us_from_nginx_seconds_and_apache_micros() {
        let nginx = |rt: &str| format!("{NGINX_COMBINED} tls:- rt:{rt}");
        assert_eq!(request_time_us(nginx("0.003").as_bytes()), Some(3000));
        assert_eq!(
            request_time_us(nginx("12.345").as_bytes()),
            Some(12_345_000)
        );
        assert_eq!(request_time_us(nginx("0.000").as_bytes()), Some(0));
        assert_eq!(request_time_us(nginx("2").as_bytes()), Some(2_000_000));
        assert_eq!(request_time_us(nginx(".5").as_bytes()), Some(500_000));
        for bad in ["-", "", "1.2.3", "0.0000001", "x", "1e3", "."] {
            assert_eq!(request_time_us(nginx(bad).as_bytes()), None, "{bad:?}");
        }
        // Apache's %D after the tls field, and before it: the field is found either way.
        let apache = format!("{APACHE_COMBINED} tls:Initial rt_us:1234");
        assert_eq!(request_time_us(apache.as_bytes()), Some(1234));
        let before = format!("{APACHE_COMBINED} rt_us:99 tls:r");
        assert_eq!(request_time_us(before.as_bytes()), Some(99));
        assert_eq!(request_time_us(NGINX_COMBINED.as_bytes()), None);
        // The tls field still reads with the time after it.
        let mut c = StatusCounts::default();
        c.add_line(apache.as_bytes(), Listener::Https);
        c.add_line(nginx("0.010").as_bytes(), Listener::Plain);
        c.add_line(nginx("-").as_bytes(), Listener::Plain);
        assert_eq!(
            (c.lines, c.tls_full, c.timed, c.service_us),
            (3, 1, 2, 1234 + 10_000)
        );
        // Caddy's duration, seconds as a float.
        let mut j = StatusCounts::default();
        j.add_line(CADDY_H1.as_bytes(), Listener::Https);
        assert_eq!((j.timed, j.service_us), (1, 100));
        let later = {
            let mut l = c;
            l.add_line(nginx("1.000").as_bytes(), Listener::Plain);
            l
        };
        let d = later.since(&c);
        assert_eq!((d.lines, d.timed, d.service_us), (1, 1, 1_000_000));
    }

    #[test]
    fn a_log_without_request_times_says_which_field_to_add() {
        let mut c = StatusCounts::default();
        for _ in 0..=ISSUE_FLOOR {
            c.add_line(NGINX_COMBINED.as_bytes(), Listener::Plain);
        }
        let n = c
            .service_notice()
            .expect("no request time in any line")
            .to_string();
        assert!(
            n.contains("`rt:$request_time` (nginx)")
                && n.contains("`rt_us:%D` (Apache)")
                && n.contains("unknown"),
            "{n}"
        );
        c.add_line(
            format!("{NGINX_COMBINED} rt:0.001").as_bytes(),
            Listener::Plain,
        );
        assert_eq!(c.service_notice(), None);
        assert_eq!(
            StatusCounts::default().service_notice(),
            None,
            "no lines yet"
        );
    }

    #[test]
    fn the_recommended_formats_carry_the_request_time() {
        let nginx = recommended_format(LogServer::Nginx);
        assert!(
            nginx.contains(" rt:$request_time tls:$ssl_session_reused';"),
            "{nginx}"
        );
        let apache = recommended_format(LogServer::Apache);
        assert!(
            apache.contains(" rt_us:%D tls:%{SSL_SESSION_RESUMED}x\" synlab"),
            "{apache}"
        );
    }

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn tail_counts_only_appended_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        append(&p, &format!("{NGINX_COMBINED}\n{COMMON_404}\n"));
        let mut t = LogTail::open_at_end(&p, Listener::Plain).unwrap();
        let mut c = StatusCounts::default();
        t.poll(&mut c).unwrap();
        assert_eq!(c.lines, 0, "lines from before the start do not count");
        // A line written in two pieces counts once, when its newline arrives.
        let (a, b) = APACHE_COMBINED.split_at(40);
        append(&p, a);
        t.poll(&mut c).unwrap();
        assert_eq!(c.lines, 0);
        append(&p, &format!("{b}\n{COMMON_404}\n"));
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.s2xx, c.s4xx), (2, 1, 1));
    }

    #[test]
    fn tail_follows_truncation_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        append(&p, &format!("{NGINX_COMBINED}\n{NGINX_COMBINED}\n"));
        let mut t = LogTail::open_at_end(&p, Listener::Plain).unwrap();
        let mut c = StatusCounts::default();
        // Truncated (copytruncate), then one line: the size dropped, read from the start.
        std::fs::write(&p, "").unwrap();
        append(&p, &format!("{COMMON_404}\n"));
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.s4xx), (1, 1));
        // The span's last line is the truncated file's first; it says the file started over.
        let s = c.span;
        assert_eq!((s.last_line, s.last_offset, s.restarts), (1, 0, 1), "{s:?}");
        let before = c;
        // Rotated (rename + new file): the old file's last line, then the new file's.
        append(&p, &format!("{NGINX_COMBINED}\n"));
        std::fs::rename(&p, dir.path().join("access.log.1")).unwrap();
        append(&p, &format!("{NGINX_ESCAPED}\n"));
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.s2xx, c.s4xx, c.s5xx), (3, 1, 1, 1));
        let s = c.span;
        let end = NGINX_ESCAPED.len() as u64 + 1;
        assert_eq!(
            (s.last_line, s.last_offset, s.end_offset, s.restarts),
            (1, 0, end, 2),
            "{s:?}"
        );
        // The lines since: from the old file's line 2 to the new one's line 1, across a restart.
        let d = c.since(&before).span;
        let old_end = COMMON_404.len() as u64 + 1;
        assert_eq!(
            (d.first_line, d.first_offset, d.last_line, d.restarts),
            (2, old_end, 1, 1),
            "{d:?}"
        );
    }

    /// Where each line of a file starts (as `sed -n` and awk's NR number them), and past the last.
    fn line_starts(path: &Path) -> Vec<u64> {
        let text = std::fs::read(path).unwrap();
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', &text).map(|i| i as u64 + 1));
        starts
    }

    /// A span read from `path` holds the file's lines `first_line..=last_line` exactly.
    fn assert_span_is_the_files(path: &Path, s: &LineSpan) {
        let starts = line_starts(path);
        let at = |line: u64| starts[line as usize - 1];
        assert_eq!(s.first_offset, at(s.first_line), "first line: {s:?}");
        assert_eq!(
            s.end_offset,
            at(s.last_line + 1),
            "the line after the last: {s:?}"
        );
        if s.last_line >= s.first_line {
            assert_eq!(s.last_offset, at(s.last_line), "last line: {s:?}");
        } else {
            assert_eq!(
                (s.last_line + 1, s.last_offset, s.end_offset),
                (s.first_line, s.first_offset, s.first_offset),
                "an empty span: {s:?}"
            );
        }
    }

    #[test]
    fn the_span_numbers_the_lines_read_across_reads_that_split_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        // Two lines before the run: the first one counted is line 3.
        append(&p, &format!("{NGINX_COMBINED}\n{COMMON_404}\n"));
        let opened = std::fs::metadata(&p).unwrap().len();
        let mut t = LogTail::open_at_end(&p, Listener::Plain).unwrap();
        let mut c = StatusCounts::default();
        t.poll(&mut c).unwrap();
        let empty = LineSpan {
            first_line: 3,
            first_offset: opened,
            last_line: 2,
            last_offset: opened,
            end_offset: opened,
            restarts: 0,
        };
        assert_eq!(c.span, empty);
        // A line written in two pieces, each read by its own poll: it is line 3 once whole.
        let (a, b) = APACHE_COMBINED.split_at(40);
        append(&p, a);
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.span), (0, empty));
        append(&p, &format!("{b}\n"));
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.span.first_line, c.span.last_line), (1, 3, 3));
        assert_span_is_the_files(&p, &c.span);
        let at_point = c;
        // Lines longer than the reader's 64 KiB buffer, so one poll's reads cut them (and a
        // blank line: a line of the file, counted as unparsed).
        let long = |n: usize| {
            format!(
                "{} rt:0.00{n}",
                NGINX_COMBINED.replace("synlab", &"x".repeat(n * 20_000))
            )
        };
        append(&p, &format!("{}\n\n{}\n{}\n", long(1), long(4), long(2)));
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.span.last_line), (5, 7));
        assert_span_is_the_files(&p, &c.span);
        // The lines since the point's start: lines 4 to 7, their times summed.
        let d = c.since(&at_point);
        assert_eq!(
            (
                d.lines,
                d.timed,
                d.service_us,
                d.span.first_line,
                d.span.last_line
            ),
            (4, 3, 7000, 4, 7)
        );
        assert_span_is_the_files(&p, &d.span);
        // Nothing new: an empty span where the next line will start.
        let e = c;
        t.poll(&mut c).unwrap();
        let none = c.since(&e).span;
        assert_eq!((none.first_line, none.last_line), (8, 7));
        assert_span_is_the_files(&p, &none);
        // Counts not read from a file (by hand, or before the reader's first) have no span of
        // their own: since them, the reader's whole span.
        assert_eq!(c.since(&StatusCounts::default()).span, c.span);
    }

    #[test]
    fn a_line_being_written_at_the_opening_is_not_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        let (a, b) = NGINX_COMBINED.split_at(30);
        append(&p, &format!("{COMMON_404}\n{a}"));
        let mut t = LogTail::open_at_end(&p, Listener::Plain).unwrap();
        let mut c = StatusCounts::default();
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.span.first_line, c.span.last_line), (0, 3, 2));
        // Its end arrives with the run's first line: line 3, counted alone.
        append(&p, &format!("{b}\n{NGINX_ESCAPED}\n"));
        t.poll(&mut c).unwrap();
        assert_eq!((c.lines, c.s5xx, c.s2xx), (1, 1, 0));
        assert_eq!((c.span.first_line, c.span.last_line), (3, 3));
        assert_span_is_the_files(&p, &c.span);
    }

    #[test]
    fn a_missing_log_is_an_error_naming_it() {
        let e = LogTail::open_at_end(Path::new("/nonexistent/synlab/access.log"), Listener::Plain)
            .err()
            .unwrap();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("/nonexistent/synlab/access.log") && msg.contains("target.access_log"),
            "{msg}"
        );
    }

    #[test]
    fn follower_sends_cumulative_counts_and_a_final_sample() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        append(&p, "");
        let (tx, rx) = std::sync::mpsc::channel();
        let mut f = Follower::spawn(
            &p,
            Listener::Plain,
            Duration::from_secs(3600),
            move |t, c| {
                let _ = tx.send((t, c));
            },
        )
        .unwrap();
        append(&p, &format!("{NGINX_COMBINED}\n{COMMON_404}\n"));
        f.stop();
        let last = rx.try_iter().last().unwrap();
        assert_eq!(last.1.lines, 2, "the final read sees every line");
    }
}
