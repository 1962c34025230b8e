//! The `event` architecture: one thread, one level-triggered epoll loop, non-blocking sockets
//! (Zeus, or nginx with one worker). CPU service time runs inline (it blocks the loop, which
//! is the point: capacity = 1 / service_time); sleep service time goes to a timer queue inside
//! the loop, so the loop never blocks on it. CGI requests go to a pool of helper threads
//! (see dynamic.rs); the loop picks their pages up when the pool's wake-up socket turns readable.

use super::config::ServiceKind;
use super::core::{self, Counters, Ctx, Response, WriteProgress, IDLE_TIMEOUT};
use super::dynamic::{self, CgiPool, DynRequest, Endpoint};
use super::h2::{self, H2Conn, Step};
use super::http::{self, Parse};
use crate::sys::server_io::{Epoll, EV_ERR, EV_IN, EV_OUT};
use crate::sys::{errno_of, Errno};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

const LISTENER: u64 = u64::MAX;
const CGI_WAKE: u64 = u64::MAX - 1;

enum State {
    Reading,
    /// Waiting for the sleep service time to pass (no epoll interest meanwhile).
    Sleeping(Response),
    /// A CGI child runs for this request in the pool (no epoll interest meanwhile).
    Cgi(DynRequest),
    Writing(Response, WriteProgress),
    /// HTTP/2 (h2 by ALPN, h2c by its preface): streams instead of one request at a time.
    H2(Box<H2Conn>),
}

struct Conn {
    stream: TcpStream,
    /// HTTPS: the connection's TLS (its handshake first, then the requests through it).
    tls: Option<Box<rustls::ServerConnection>>,
    buf: Vec<u8>,
    state: State,
    /// Distinguishes reuses of a slot, so a stale timer never fires on a newer connection.
    gen: u64,
    last_active: Instant,
    /// When its current request was read whole, until its response starts to go out: the
    /// latency split's service is the time between.
    read_at: Option<Instant>,
}

pub struct EventLoop<'a> {
    ctx: &'a Ctx,
    counters: &'a Counters,
    ep: Epoll,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    next_gen: u64,
    /// accept() hit EMFILE/ENFILE: stop polling the listener until a connection closes.
    accept_paused: bool,
    cgi: CgiPool,
}

/// Runs the loop until `stop()` says so (checked at least every 100 ms).
pub fn run(
    listener: &TcpListener,
    ctx: &Ctx,
    counters: &Counters,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let ep = Epoll::new(256)?;
    ep.add(listener.as_raw_fd(), EV_IN, LISTENER)?;
    let cgi = CgiPool::new(ctx.dynamic.exe.clone())?;
    ep.add(cgi.wake_fd().as_raw_fd(), EV_IN, CGI_WAKE)?;
    counters.workers.store(1, Relaxed);
    let mut lp = EventLoop {
        ctx,
        counters,
        ep,
        conns: Vec::new(),
        free: Vec::new(),
        timers: BinaryHeap::new(),
        next_gen: 0,
        accept_paused: false,
        cgi,
    };
    let mut last_sweep = Instant::now();
    let mut ready: Vec<(u64, u32)> = Vec::with_capacity(256);
    while !stop() {
        let timeout = match lp.timers.peek() {
            Some(Reverse((due, _, _))) => {
                let d = due.saturating_duration_since(Instant::now());
                // Round up so we do not spin awake just before the deadline.
                (d.as_micros().div_ceil(1000) as i32).min(100)
            }
            None => 100,
        };
        ready.clear();
        ready.extend(lp.ep.wait(timeout)?);
        for &(token, ev) in &ready {
            if token == LISTENER {
                lp.accept_some(listener)?;
            } else if token == CGI_WAKE {
                lp.cgi_finished();
            } else {
                lp.on_event(token as usize, ev);
            }
        }
        lp.fire_timers();
        if last_sweep.elapsed() >= Duration::from_secs(1) {
            last_sweep = Instant::now();
            lp.close_idle();
            if lp.accept_paused {
                lp.accept_paused = false;
                lp.ep.modify(listener.as_raw_fd(), EV_IN, LISTENER)?;
            }
        }
    }
    Ok(())
}

/// Where a TLS connection stands after its records were read.
enum TlsStep {
    /// Still open; `blocked` when TLS has bytes the socket would not take yet.
    Open { blocked: bool },
    /// The client closed (or its TLS session), or TLS failed: close it.
    Closed,
}

/// Reads what the client sent through TLS: records read and processed (the handshake moves
/// on; once it is done it is counted), what TLS has to send written, and the plaintext added
/// to the connection's buffer.
fn tls_read(c: &mut Conn, counters: &Counters) -> TlsStep {
    let Some(t) = c.tls.as_mut() else {
        return TlsStep::Closed;
    };
    let handshaking = t.is_handshaking();
    let mut eof = false;
    loop {
        match t.read_tls(&mut c.stream) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(_) => {
                if t.process_new_packets().is_err() {
                    // Its alert goes to the client; the close counts the failed handshake.
                    let _ = t.write_tls(&mut c.stream);
                    return TlsStep::Closed;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return TlsStep::Closed,
        }
    }
    if handshaking && !t.is_handshaking() {
        core::count_handshake(t, counters);
    }
    let mut blocked = false;
    while t.wants_write() {
        match t.write_tls(&mut c.stream) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                blocked = true;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return TlsStep::Closed,
        }
    }
    let mut chunk = [0u8; 4096];
    loop {
        match t.reader().read(&mut chunk) {
            Ok(0) => return TlsStep::Closed,
            Ok(n) => c.buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return TlsStep::Closed,
        }
    }
    if eof {
        return TlsStep::Closed;
    }
    TlsStep::Open { blocked }
}

/// Reads what a plain socket has into the connection's buffer; Err when it closed or failed.
fn read_plain(c: &mut Conn) -> Result<(), ()> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match c.stream.read(&mut chunk) {
            Ok(0) => return Err(()),
            Ok(n) => {
                c.buf.extend_from_slice(&chunk[..n]);
                if n < chunk.len() {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
}

impl EventLoop<'_> {
    fn accept_some(&mut self, listener: &TcpListener) -> io::Result<()> {
        let batch = match self.ctx.cfg.accept_batch {
            0 => u32::MAX,
            n => n,
        };
        for _ in 0..batch {
            match listener.accept() {
                Ok((s, _)) => {
                    self.counters.accepted.fetch_add(1, Relaxed);
                    self.counters.record_accept_wait(&s);
                    self.counters.open_conns.fetch_add(1, Relaxed);
                    let _ = s.set_nonblocking(true);
                    let _ = s.set_nodelay(true);
                    let idx = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    self.next_gen += 1;
                    if self.ep.add(s.as_raw_fd(), EV_IN, idx as u64).is_err() {
                        self.counters.open_conns.fetch_sub(1, Relaxed);
                        self.free.push(idx);
                        continue;
                    }
                    let tls = match &self.ctx.tls {
                        Some(config) => match rustls::ServerConnection::new(config.clone()) {
                            Ok(c) => Some(Box::new(c)),
                            Err(_) => {
                                self.counters.tls_failed.fetch_add(1, Relaxed);
                                let _ = self.ep.delete(s.as_raw_fd());
                                self.counters.open_conns.fetch_sub(1, Relaxed);
                                self.free.push(idx);
                                continue;
                            }
                        },
                        None => None,
                    };
                    self.conns[idx] = Some(Conn {
                        stream: s,
                        tls,
                        buf: Vec::new(),
                        state: State::Reading,
                        gen: self.next_gen,
                        last_active: Instant::now(),
                        read_at: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if matches!(errno_of(&e), Some(Errno::EMFILE | Errno::ENFILE)) => {
                    // Leave the rest in the accept queue (the kernel keeps counting overflows)
                    // and stop polling the listener until the sweep, so we do not spin.
                    self.accept_paused = true;
                    self.ep.modify(listener.as_raw_fd(), 0, LISTENER)?;
                    return Ok(());
                }
                // ECONNABORTED and friends: that connection is gone, keep accepting.
                Err(_) => {}
            }
        }
        Ok(())
    }

    fn close(&mut self, idx: usize) {
        if let Some(mut c) = self.conns[idx].take() {
            if let Some(t) = c.tls.as_mut() {
                if t.is_handshaking() {
                    // Failed, or the client gave up on it (its handshake timeout).
                    self.counters.tls_failed.fetch_add(1, Relaxed);
                } else {
                    // close_notify before the FIN, best effort, as nginx's SSL_shutdown.
                    t.send_close_notify();
                    let _ = t.write_tls(&mut c.stream);
                }
            }
            let _ = self.ep.delete(c.stream.as_raw_fd());
            self.counters.open_conns.fetch_sub(1, Relaxed);
            self.free.push(idx);
        }
    }

    fn on_event(&mut self, idx: usize, ev: u32) {
        let Some(c) = self.conns.get_mut(idx).and_then(|c| c.as_mut()) else {
            return;
        };
        match c.state {
            State::Reading if c.tls.is_some() && ev & (EV_IN | EV_ERR | EV_OUT) != 0 => {
                match tls_read(c, self.counters) {
                    TlsStep::Open { blocked } => {
                        let mask = if blocked { EV_IN | EV_OUT } else { EV_IN };
                        let _ = self.ep.modify(c.stream.as_raw_fd(), mask, idx as u64);
                    }
                    TlsStep::Closed => return self.close(idx),
                }
                c.last_active = Instant::now();
                if c.tls.as_ref().and_then(|t| t.alpn_protocol()) == Some(b"h2") {
                    c.state = State::H2(Box::new(H2Conn::new(self.ctx)));
                    return self.h2_input(idx);
                }
                self.advance(idx);
            }
            State::H2(_) if ev & (EV_IN | EV_ERR) != 0 => {
                if c.tls.is_some() {
                    if let TlsStep::Closed = tls_read(c, self.counters) {
                        return self.close(idx);
                    }
                } else if read_plain(c).is_err() {
                    return self.close(idx);
                }
                c.last_active = Instant::now();
                self.h2_input(idx);
            }
            State::H2(_) if ev & EV_OUT != 0 => {
                let State::H2(h) = &mut c.state else {
                    unreachable!()
                };
                let step =
                    h.on_writable(&mut c.stream, c.tls.as_deref_mut(), self.ctx, self.counters);
                self.h2_step(idx, step);
            }
            State::Reading if ev & (EV_IN | EV_ERR) != 0 => {
                let mut chunk = [0u8; 4096];
                loop {
                    match c.stream.read(&mut chunk) {
                        Ok(0) => return self.close(idx),
                        Ok(n) => {
                            c.buf.extend_from_slice(&chunk[..n]);
                            if n < chunk.len() {
                                break;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return self.close(idx),
                    }
                }
                c.last_active = Instant::now();
                self.advance(idx);
            }
            State::Writing(..) if ev & (EV_OUT | EV_ERR) != 0 => self.advance(idx),
            State::Sleeping(_) | State::Cgi(_) if ev & EV_ERR != 0 => self.close(idx),
            _ => {}
        }
    }

    /// Moves a connection through parse -> service -> write as far as it can go now.
    fn advance(&mut self, idx: usize) {
        loop {
            let Some(c) = self.conns[idx].as_mut() else {
                return;
            };
            match &mut c.state {
                State::H2(_) => return,
                State::Reading => {
                    if c.buf.is_empty() {
                        return;
                    }
                    // h2c with prior knowledge: the preface instead of a request line.
                    if c.tls.is_none() {
                        match h2::preface_of(&c.buf) {
                            Some(false) => return,
                            Some(true) => {
                                c.state = State::H2(Box::new(H2Conn::new(self.ctx)));
                                return self.h2_input(idx);
                            }
                            None => {}
                        }
                    }
                    let parse = http::parse_request(&c.buf);
                    if matches!(parse, Parse::Partial) {
                        return;
                    }
                    core::count_request(&parse, self.counters);
                    c.read_at = Some(Instant::now());
                    let st_us = self.ctx.cfg.service_time_us;
                    let dynreq = dynamic::request_of(&parse, self.ctx.cfg.keepalive);
                    if let Some(
                        d @ DynRequest {
                            endpoint: Endpoint::Cgi { work_us },
                            ..
                        },
                    ) = dynreq
                    {
                        // The child runs in the pool; a CPU service time is still the
                        // server's own work (a sleep one is not added to CGI requests).
                        if let Parse::Done(req) = &parse {
                            c.buf.drain(..req.consumed);
                        }
                        if self.ctx.cfg.service == ServiceKind::Cpu {
                            super::work::burn(st_us * 1000);
                        }
                        c.state = State::Cgi(d);
                        let _ = self.ep.modify(c.stream.as_raw_fd(), 0, idx as u64);
                        let token = (idx, c.gen);
                        self.cgi.submit(token, work_us);
                        return;
                    }
                    let resp = match dynreq {
                        Some(d) => {
                            dynamic::finish(&d, self.ctx.dynamic.execute(d.endpoint), self.counters)
                        }
                        None => core::respond(&self.ctx.catalog, &parse, self.ctx.cfg.keepalive),
                    };
                    if let Parse::Done(req) = &parse {
                        c.buf.drain(..req.consumed);
                        if st_us > 0 {
                            match self.ctx.cfg.service {
                                ServiceKind::Cpu => super::work::burn(st_us * 1000),
                                ServiceKind::Sleep => {
                                    let due = Instant::now() + Duration::from_micros(st_us);
                                    self.timers.push(Reverse((due, idx, c.gen)));
                                    c.state = State::Sleeping(resp);
                                    let _ = self.ep.modify(c.stream.as_raw_fd(), 0, idx as u64);
                                    return;
                                }
                            }
                        }
                    }
                    c.state = State::Writing(resp, WriteProgress::default());
                }
                State::Sleeping(_) | State::Cgi(_) => return,
                State::Writing(resp, prog) => {
                    if let Some(t) = c.read_at.take() {
                        self.counters.record_service(t);
                    }
                    let wrote = match c.tls.as_mut() {
                        Some(t) => core::write_some_tls(
                            &mut c.stream,
                            t,
                            resp,
                            &self.ctx.pattern,
                            prog,
                            self.counters,
                        ),
                        None => core::write_some(
                            &mut c.stream,
                            resp,
                            &self.ctx.pattern,
                            prog,
                            self.counters,
                        ),
                    };
                    match wrote {
                        Ok(true) => {
                            core::count_response(resp, self.counters);
                            if !resp.keep {
                                return self.close(idx);
                            }
                            c.state = State::Reading;
                            c.last_active = Instant::now();
                            let _ = self.ep.modify(c.stream.as_raw_fd(), EV_IN, idx as u64);
                        }
                        Ok(false) => {
                            let _ = self.ep.modify(c.stream.as_raw_fd(), EV_OUT, idx as u64);
                            return;
                        }
                        Err(_) => return self.close(idx),
                    }
                }
            }
        }
    }

    /// Hands an HTTP/2 connection the bytes read so far.
    fn h2_input(&mut self, idx: usize) {
        let Some(c) = self.conns[idx].as_mut() else {
            return;
        };
        let State::H2(h) = &mut c.state else {
            return;
        };
        let input = std::mem::take(&mut c.buf);
        let step = h.on_input(
            &input,
            &mut c.stream,
            c.tls.as_deref_mut(),
            self.ctx,
            self.counters,
        );
        c.buf = input;
        c.buf.clear();
        self.h2_step(idx, step);
    }

    /// Polls for what an HTTP/2 connection waits on next, or closes it.
    fn h2_step(&mut self, idx: usize, step: Step) {
        let Some(c) = self.conns[idx].as_mut() else {
            return;
        };
        match step {
            Step::Close => self.close(idx),
            Step::Open { want_write, wake } => {
                let mask = if want_write { EV_IN | EV_OUT } else { EV_IN };
                let _ = self.ep.modify(c.stream.as_raw_fd(), mask, idx as u64);
                if let Some(due) = wake {
                    self.timers.push(Reverse((due, idx, c.gen)));
                }
            }
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&Reverse((due, idx, gen))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            let Some(c) = self.conns[idx].as_mut().filter(|c| c.gen == gen) else {
                continue;
            };
            if let State::H2(h) = &mut c.state {
                let step = h.on_timer(&mut c.stream, c.tls.as_deref_mut(), self.ctx, self.counters);
                self.h2_step(idx, step);
                continue;
            }
            if let State::Sleeping(_) = c.state {
                let State::Sleeping(resp) = std::mem::replace(&mut c.state, State::Reading) else {
                    unreachable!()
                };
                c.state = State::Writing(resp, WriteProgress::default());
                self.advance(idx);
            }
        }
    }

    /// Delivers the pages of finished CGI children to their connections (if still open).
    fn cgi_finished(&mut self) {
        for done in self.cgi.finished() {
            let (idx, gen) = done.token;
            let waiting = self
                .conns
                .get_mut(idx)
                .and_then(|c| c.as_mut())
                .and_then(|c| match c.state {
                    State::Cgi(req) if c.gen == gen => Some((c, req)),
                    _ => None,
                });
            let Some((c, req)) = waiting else {
                // The client left while its CGI ran: the child still counts as work done.
                let n = if done.out.status == 200 {
                    &self.counters.dyn_cgi
                } else {
                    &self.counters.dyn_errors
                };
                n.fetch_add(1, Relaxed);
                continue;
            };
            let resp = dynamic::finish(&req, done.out, self.counters);
            c.state = State::Writing(resp, WriteProgress::default());
            c.last_active = Instant::now();
            self.advance(idx);
        }
    }

    fn close_idle(&mut self) {
        let now = Instant::now();
        let idle: Vec<usize> = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let c = c.as_ref()?;
                let idle = match &c.state {
                    State::Reading => true,
                    State::H2(h) => h.idle(),
                    _ => false,
                };
                (idle && now - c.last_active >= IDLE_TIMEOUT).then_some(i)
            })
            .collect();
        for i in idle {
            self.close(i);
        }
    }
}
