//! What every architecture shares: the counters (atomics, in shared memory so forked workers
//! add to the same totals), the per-request service time, turning a parsed request into a
//! response, and the blocking connection loop of the prefork and threaded servers.

use super::config::{ServeConfig, ServerStats, ServiceKind};
use super::files::{Catalog, Resource, PATTERN_BUF_LEN};
use super::http::{self, Method, Parse};
use crate::model::acceptq::{bucket_ms, wait_bucket, WAIT_BUCKETS};
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A keep-alive connection idle this long is closed (also bounds a silent client's hold on a
/// blocking worker).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(15);

/// The server's own counts. All-zero is the valid start state and it holds no pointers, so it
/// can live in a MAP_SHARED mapping.
#[repr(C)]
#[derive(Debug, zerocopy::FromBytes)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    pub responses: AtomicU64,
    pub responses_404: AtomicU64,
    pub bad_requests: AtomicU64,
    pub bytes_out: AtomicU64,
    pub open_conns: AtomicU64,
    pub workers: AtomicU64,
    pub busy: AtomicU64,
    /// Dynamic requests answered 200, per endpoint, and those that failed (500).
    pub dyn_cgi: AtomicU64,
    pub dyn_inproc: AtomicU64,
    pub dyn_db: AtomicU64,
    pub dyn_errors: AtomicU64,
    /// TLS handshakes done full, resumed, and failed (an error, or the client gone midway).
    pub tls_full: AtomicU64,
    pub tls_resumed: AtomicU64,
    pub tls_failed: AtomicU64,
    /// HTTP/2 streams served (each also counts in `requests`), and those refused past
    /// `max_streams` (REFUSED_STREAM).
    pub h2_streams: AtomicU64,
    pub h2_refused: AtomicU64,
    /// HTTP/3 (issue 47): QUIC handshakes completed (and of them with 0-RTT accepted), Retry
    /// packets sent, request streams served (each also counts in `requests`).
    pub h3_handshakes: AtomicU64,
    pub h3_0rtt: AtomicU64,
    pub h3_retries: AtomicU64,
    pub h3_streams: AtomicU64,
    /// What the HTTP/3 socket gave the server (issue 47's drops identity): datagrams read (a
    /// GRO run counted per datagram), of them those whose first packet is an Initial, and the
    /// connection attempts taken in (a first Initial of a connection it did not know; after a
    /// Retry the client's answer too).
    pub h3_datagrams_in: AtomicU64,
    pub h3_initials_in: AtomicU64,
    pub h3_incoming: AtomicU64,
    /// Each accepted connection's wait in the accept queue, exact (issue 48 item 3): a count
    /// per bucket of `model::acceptq::wait_bucket`.
    pub accept_wait: [AtomicU64; WAIT_BUCKETS],
    /// Requests timed from their read to their response starting to go out (issue 48 item 4:
    /// the latency split's service: the server's work, not the response's size), and that
    /// time summed (us).
    pub served: AtomicU64,
    pub service_us: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        <Self as zerocopy::FromZeros>::new_zeroed()
    }
}

/// Most prefork / threaded workers a server may have (the pid table's size).
pub const MAX_WORKERS: usize = 10_000;

/// What the server shares with its prefork manager and workers: one memfd mapping, all-zero at
/// start, no pointers.
#[repr(C)]
#[derive(zerocopy::FromBytes)]
pub struct Shared {
    pub counters: Counters,
    /// Set to 1 by the server: the prefork manager kills its workers and exits.
    pub stop: AtomicU32,
    /// Pids of the live prefork workers (0: a free slot), written by the manager only.
    pub pids: [AtomicI32; MAX_WORKERS],
    /// 1 while the worker in the same slot holds a connection: when a worker dies in the middle
    /// of one, the manager takes it off `busy` and `open_conns`.
    pub busy: [AtomicU8; MAX_WORKERS],
}

impl Shared {
    /// The live worker pids.
    pub fn worker_pids(&self) -> Vec<u32> {
        self.pids
            .iter()
            .map(|p| p.load(Relaxed))
            .filter(|&p| p > 0)
            .map(|p| p as u32)
            .collect()
    }
}

impl Counters {
    /// Counts a connection just accepted by its wait in the accept queue: from handshake
    /// completion to now (tcp_info, before the server sent anything; one getsockopt).
    pub fn record_accept_wait(&self, s: &TcpStream) {
        use std::os::fd::AsFd;
        if let Some(ms) = crate::sys::acceptq::accepted_wait_ms(s.as_fd()) {
            self.accept_wait[wait_bucket(ms)].fetch_add(1, Relaxed);
        }
    }

    /// Counts a request served: `since` is when it was read whole; now its response starts
    /// to go out.
    pub fn record_service(&self, since: Instant) {
        let us = since.elapsed().as_micros().min(u128::from(u64::MAX)) as u64;
        self.served.fetch_add(1, Relaxed);
        self.service_us.fetch_add(us, Relaxed);
    }

    pub fn snapshot(&self, t_s: f64) -> ServerStats {
        ServerStats {
            t_s,
            accepted: self.accepted.load(Relaxed),
            requests: self.requests.load(Relaxed),
            responses: self.responses.load(Relaxed),
            responses_404: self.responses_404.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            open_conns: self.open_conns.load(Relaxed),
            workers: self.workers.load(Relaxed),
            busy: self.busy.load(Relaxed),
            bad_requests: self.bad_requests.load(Relaxed),
            dyn_cgi: self.dyn_cgi.load(Relaxed),
            dyn_inproc: self.dyn_inproc.load(Relaxed),
            dyn_db: self.dyn_db.load(Relaxed),
            dyn_errors: self.dyn_errors.load(Relaxed),
            tls_full: self.tls_full.load(Relaxed),
            tls_resumed: self.tls_resumed.load(Relaxed),
            tls_failed: self.tls_failed.load(Relaxed),
            h2_streams: self.h2_streams.load(Relaxed),
            h2_refused: self.h2_refused.load(Relaxed),
            h3_handshakes: self.h3_handshakes.load(Relaxed),
            h3_0rtt: self.h3_0rtt.load(Relaxed),
            h3_retries: self.h3_retries.load(Relaxed),
            h3_streams: self.h3_streams.load(Relaxed),
            h3_datagrams_in: self.h3_datagrams_in.load(Relaxed),
            h3_initials_in: self.h3_initials_in.load(Relaxed),
            h3_incoming: self.h3_incoming.load(Relaxed),
            listen: String::new(),
            pid: 0,
            accept_wait_ms: (self.accept_wait.iter().enumerate())
                .filter_map(|(b, n)| {
                    let n = n.load(Relaxed);
                    (n > 0).then(|| (bucket_ms(b), n))
                })
                .collect(),
            served: self.served.load(Relaxed),
            service_us: self.service_us.load(Relaxed),
        }
    }
}

/// A response ready to write: the head (with the body inlined for small generated pages) and
/// a count of pattern bytes that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub head: Vec<u8>,
    pub body_len: u64,
    pub keep: bool,
}

impl Response {
    pub fn total_len(&self) -> u64 {
        self.head.len() as u64 + self.body_len
    }
}

/// Builds the response to a parse result. `keepalive` is the server's setting.
pub fn respond(catalog: &Catalog, parse: &Parse, keepalive: bool) -> Response {
    match parse {
        Parse::Done(req) => {
            let keep = keepalive && req.wants_keepalive;
            let head_only = req.method == Method::Head;
            let (status, ctype, inline, body_len) = match catalog.resolve(&req.path) {
                Resource::Pattern(n) => (200, "application/octet-stream", None, n),
                Resource::Index => (200, "text/plain", Some(catalog.index()), 0),
                Resource::NotFound => (404, "text/plain", Some(&b"not found\n"[..]), 0),
            };
            let len = inline.map(|b| b.len() as u64).unwrap_or(body_len);
            let mut head = http::response_head(status, req.minor, len, ctype, keep);
            if head_only {
                return Response {
                    status,
                    head,
                    body_len: 0,
                    keep,
                };
            }
            if let Some(b) = inline {
                head.extend_from_slice(b);
            }
            Response {
                status,
                head,
                body_len,
                keep,
            }
        }
        Parse::Bad(status, why) => {
            let body = format!("{why}\n");
            let mut head = http::response_head(*status, 0, body.len() as u64, "text/plain", false);
            head.extend_from_slice(body.as_bytes());
            Response {
                status: *status,
                head,
                body_len: 0,
                keep: false,
            }
        }
        Parse::Partial => unreachable!("respond() needs a complete request"),
    }
}

/// Progress of writing one response.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteProgress {
    pub done: u64,
}

/// Counts a TLS handshake that completed.
pub fn count_handshake(conn: &rustls::ServerConnection, counters: &Counters) {
    if crate::tls::server::resumed(conn) {
        counters.tls_resumed.fetch_add(1, Relaxed);
    } else {
        counters.tls_full.fetch_add(1, Relaxed);
    }
}

/// The most plaintext handed to TLS before its records are written out.
const TLS_CHUNK: usize = 16 * 1024;

/// The body from `off` to the end of the pattern buffer (or of the body, if sooner).
fn body_piece<'a>(resp: &Response, pattern: &'a [u8], off: u64) -> &'a [u8] {
    let start = (off % PATTERN_BUF_LEN as u64) as usize;
    let n = ((resp.body_len - off) as usize).min(PATTERN_BUF_LEN - start);
    &pattern[start..start + n]
}

/// As [`write_some`], through TLS on a non-blocking socket: the response goes into TLS in
/// record-sized pieces, each written out before the next, so a large file is never held
/// encrypted in memory whole.
pub fn write_some_tls(
    s: &mut TcpStream,
    tls: &mut rustls::ServerConnection,
    resp: &Response,
    pattern: &[u8],
    prog: &mut WriteProgress,
    counters: &Counters,
) -> io::Result<bool> {
    let head_len = resp.head.len() as u64;
    let total = resp.total_len();
    loop {
        while tls.wants_write() {
            match tls.write_tls(s) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        if prog.done >= total {
            return Ok(true);
        }
        let piece = if prog.done < head_len {
            &resp.head[prog.done as usize..]
        } else {
            body_piece(resp, pattern, prog.done - head_len)
        };
        let piece = &piece[..piece.len().min(TLS_CHUNK)];
        let n = tls.writer().write(piece)?;
        prog.done += n as u64;
        counters.bytes_out.fetch_add(n as u64, Relaxed);
    }
}

/// Writes as much of `resp` as the socket takes (one writev of head + body chunk, so a small
/// response is one segment with no Nagle delay between head and body). Ok(true) when complete;
/// WouldBlock is returned as Ok(false) for non-blocking sockets.
pub fn write_some(
    s: &mut impl Write,
    resp: &Response,
    pattern: &[u8],
    prog: &mut WriteProgress,
    counters: &Counters,
) -> io::Result<bool> {
    let head_len = resp.head.len() as u64;
    let total = resp.total_len();
    while prog.done < total {
        let r = if prog.done < head_len {
            let h = &resp.head[prog.done as usize..];
            let blen = resp.body_len.min(PATTERN_BUF_LEN as u64) as usize;
            s.write_vectored(&[IoSlice::new(h), IoSlice::new(&pattern[..blen])])
        } else {
            s.write(body_piece(resp, pattern, prog.done - head_len))
        };
        match r {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                prog.done += n as u64;
                counters.bytes_out.fetch_add(n as u64, Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Counts a parsed request (or a bad one).
pub fn count_request(parse: &Parse, counters: &Counters) {
    counters.requests.fetch_add(1, Relaxed);
    if matches!(parse, Parse::Bad(..)) {
        counters.bad_requests.fetch_add(1, Relaxed);
    }
}

/// Counts a fully written response.
pub fn count_response(resp: &Response, counters: &Counters) {
    count_status(resp.status, counters)
}

/// Counts a fully written response by its status.
pub fn count_status(status: u16, counters: &Counters) {
    counters.responses.fetch_add(1, Relaxed);
    if status == 404 {
        counters.responses_404.fetch_add(1, Relaxed);
    }
}

/// Everything a worker needs to serve, read-only after start.
pub struct Ctx {
    pub cfg: ServeConfig,
    pub catalog: Catalog,
    pub pattern: Vec<u8>,
    /// CGI program and database for the dynamic endpoints.
    pub dynamic: super::dynamic::Dynamic,
    /// HTTPS: the TLS config every connection's handshake uses.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// How a connection's serving loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The last response went out (no keep-alive) or a kept-alive connection idled out: the
    /// server closes, so it lingers.
    ServerCloses,
    /// The client closed first, an error, or the server is stopping: close at once.
    Now,
}

/// Serves one accepted connection to the end on a blocking worker (prefork, threaded):
/// read a request, spend the service time, write the response, repeat while kept alive, then
/// (when `lingering_close` is on) linger until the client's FIN. The worker is busy throughout.
pub fn serve_blocking(mut s: TcpStream, ctx: &Ctx, counters: &Counters, stop: &dyn Fn() -> bool) {
    let _ = s.set_nodelay(true);
    // Wake up now and then to notice a stop or an idle keep-alive connection.
    let _ = s.set_read_timeout(Some(WAKE_EVERY));
    let _ = s.set_write_timeout(Some(IDLE_TIMEOUT));
    let end = match &ctx.tls {
        None => serve_requests(&mut s, ctx, counters, stop),
        Some(config) => {
            let Ok(mut conn) = rustls::ServerConnection::new(config.clone()) else {
                counters.tls_failed.fetch_add(1, Relaxed);
                return;
            };
            if !tls_handshake(&mut conn, &mut s, stop) {
                counters.tls_failed.fetch_add(1, Relaxed);
                return;
            }
            count_handshake(&conn, counters);
            let mut stream = rustls::StreamOwned::new(conn, s);
            let end = serve_requests(&mut stream, ctx, counters, stop);
            if end == End::ServerCloses {
                stream.conn.send_close_notify();
                let _ = stream.conn.complete_io(&mut stream.sock);
            }
            s = stream.sock;
            end
        }
    };
    if end == End::ServerCloses && ctx.cfg.lingering_close {
        linger(
            &mut s,
            Duration::from_millis(ctx.cfg.linger_timeout_ms),
            stop,
        );
    }
}

/// A blocking worker's TLS handshake: true once it is done; false when it failed, the client
/// went away, or it idled past the keep-alive timeout.
fn tls_handshake(
    conn: &mut rustls::ServerConnection,
    s: &mut TcpStream,
    stop: &dyn Fn() -> bool,
) -> bool {
    let started = Instant::now();
    while conn.is_handshaking() {
        match conn.complete_io(s) {
            Ok(_) => {}
            Err(e) if is_read_timeout(&e) => {
                if stop() || started.elapsed() >= IDLE_TIMEOUT {
                    return false;
                }
            }
            Err(_) => {
                // An alert for the client, if there is one to send.
                let _ = conn.write_tls(s);
                return false;
            }
        }
    }
    true
}

/// The read timeout of a blocking worker: how often it looks at its stop flag.
const WAKE_EVERY: Duration = Duration::from_millis(500);

/// Lingering close (see [`super::linger`]): shut down writing, then read and drop whatever
/// comes until the client's FIN or the linger's end.
fn linger(s: &mut TcpStream, idle: Duration, stop: &dyn Fn() -> bool) {
    use super::linger::{Linger, Next, ReadOutcome};
    if s.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let mut l = Linger::start(idle, Instant::now());
    let mut next = l.first();
    let mut sink = [0u8; 512];
    while let Next::Read(wait) = next {
        if stop() {
            return;
        }
        if s.set_read_timeout(Some(wait.clamp(Duration::from_millis(1), WAKE_EVERY)))
            .is_err()
        {
            return;
        }
        let r = match s.read(&mut sink) {
            Ok(0) => ReadOutcome::Eof,
            Ok(_) => ReadOutcome::Data,
            Err(e) if is_read_timeout(&e) => ReadOutcome::Timeout,
            Err(_) => ReadOutcome::Error,
        };
        next = l.on_read(r, Instant::now());
    }
}

/// A blocking read with a timeout that ended without data (or was interrupted): try again.
fn is_read_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Reads requests and writes responses on a blocking connection (plain, or TLS once its
/// handshake is done) until one side closes.
fn serve_requests(
    s: &mut (impl Read + Write),
    ctx: &Ctx,
    counters: &Counters,
    stop: &dyn Fn() -> bool,
) -> End {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let mut idle_since = Instant::now();
    loop {
        let parse = loop {
            let p = if buf.is_empty() {
                Parse::Partial
            } else {
                http::parse_request(&buf)
            };
            if !matches!(p, Parse::Partial) {
                break p;
            }
            match s.read(&mut chunk) {
                Ok(0) => return End::Now,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if is_read_timeout(&e) => {
                    if stop() {
                        return End::Now;
                    }
                    if idle_since.elapsed() >= IDLE_TIMEOUT {
                        return End::ServerCloses;
                    }
                }
                Err(_) => return End::Now,
            }
        };
        count_request(&parse, counters);
        let read_at = Instant::now();
        if let Parse::Done(req) = &parse {
            buf.drain(..req.consumed);
            let st = Duration::from_micros(ctx.cfg.service_time_us);
            match ctx.cfg.service {
                ServiceKind::Cpu => super::work::burn(st.as_nanos() as u64),
                ServiceKind::Sleep => std::thread::sleep(st),
            }
        }
        let resp = match super::dynamic::request_of(&parse, ctx.cfg.keepalive) {
            Some(d) => super::dynamic::finish(&d, ctx.dynamic.execute(d.endpoint), counters),
            None => respond(&ctx.catalog, &parse, ctx.cfg.keepalive),
        };
        counters.record_service(read_at);
        let mut prog = WriteProgress::default();
        match write_some(s, &resp, &ctx.pattern, &mut prog, counters) {
            Ok(true) => count_response(&resp, counters),
            _ => return End::Now,
        }
        if !resp.keep {
            return End::ServerCloses;
        }
        idle_since = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::config::FileSet;

    fn cat() -> Catalog {
        Catalog::new(&[FileSet::Specweb96])
    }

    #[test]
    fn found_file_has_pattern_body_and_keepalive_only_if_both_agree() {
        let p = http::parse_request(b"GET /specweb96/class1_2 HTTP/1.1\r\nHost: a\r\n\r\n");
        let r = respond(&cat(), &p, true);
        assert_eq!((r.status, r.body_len, r.keep), (200, 2048, true));
        assert!(!respond(&cat(), &p, false).keep);
    }

    #[test]
    fn missing_is_404_with_inline_body_and_head_has_no_body() {
        let p = http::parse_request(b"GET /nope HTTP/1.0\r\n\r\n");
        let r = respond(&cat(), &p, true);
        assert_eq!((r.status, r.body_len, r.keep), (404, 0, false));
        assert!(r.head.ends_with(b"\r\n\r\nnot found\n"));
        let h = http::parse_request(b"HEAD /specweb96/class3_9 HTTP/1.0\r\n\r\n");
        let r = respond(&cat(), &h, true);
        assert_eq!(r.body_len, 0);
        assert!(String::from_utf8_lossy(&r.head).contains("Content-Length: 921600"));
    }

    #[test]
    fn bad_request_closes() {
        let r = respond(&cat(), &http::parse_request(b"junk\r\n\r\n"), true);
        assert_eq!((r.status, r.keep), (400, false));
    }
}
