//! A connection's TLS: its handshake after the connect (non-blocking, in the same
//! edge-triggered loop: records read from and written to the engine's own socket with rustls'
//! `read_tls` / `process_new_packets` / `write_tls`), timed on its own, counted full or
//! resumed, and failed by kind; then the requests' bytes through it.
//!
//! A connection handshaking is still `connecting` in the counts (it is not established until
//! the handshake is done) and `handshaking` in the gauges; its S-Client slot was freed when its
//! connect completed, so the offered rate of handshakes does not depend on the server either.

use super::conn::{Failure, Phase};
use super::Engine;
use crate::metrics::hist::record;
use crate::sys::client_io::Errno;
use crate::tls::client::{classify, failure_words, HandshakeFailure};
use crate::tls::schedule::Plan;
use rustls::ClientConnection;
use std::io::{ErrorKind, Read, Write};

/// One connection's TLS state.
pub(super) struct TlsConn {
    pub(super) conn: ClientConnection,
    /// Whether the schedule meant it to resume.
    plan: Plan,
    /// When the handshake began (the connect's end), ns; 0 once it is done.
    started_ns: u64,
}

/// What a read of TLS records brought.
pub(super) enum TlsRead {
    /// Records were read (and processed).
    Some,
    /// Nothing more to read now.
    WouldBlock,
    /// The peer closed the connection (TCP FIN).
    Eof,
}

impl Engine {
    /// The connect is done: the handshake begins (its ClientHello goes out at once).
    pub(super) fn begin_handshake(&mut self, idx: usize, now: u64) {
        let Some(client) = self.tls.as_mut() else {
            return;
        };
        self.handshaking += 1;
        self.slab[idx].phase = Phase::Handshaking;
        let (conn, plan) = match client.start() {
            Ok(x) => x,
            // rustls refused to build a ClientHello from our own config: counted, not hidden.
            Err(_) => return self.fail(idx, Failure::Tls(HandshakeFailure::Protocol), now),
        };
        self.slab[idx].tls = Some(Box::new(TlsConn {
            conn,
            plan,
            started_ns: now,
        }));
        let timeout = self.cfg.tls.as_ref().map_or(5.0, |t| t.handshake_timeout_s);
        self.arm(idx, now + (timeout * 1e9) as u64);
        self.handshake_io(idx, now);
    }

    /// Moves the handshake on as far as the socket allows: writes what TLS has to send, reads
    /// and processes what came, until the socket would block or the handshake is done.
    pub(super) fn handshake_io(&mut self, idx: usize, now: u64) {
        loop {
            let done = !self.tls_of(idx).conn.is_handshaking();
            // Done: our Finished goes out with the first request (or right away for a pool
            // connection, which may wait for one).
            if done {
                return self.handshake_done(idx, now);
            }
            if let Err(e) = self.tls_flush(idx) {
                return self.fail(idx, Failure::Sys(e), now);
            }
            match self.tls_read(idx) {
                Ok(TlsRead::Some) => {}
                Ok(TlsRead::WouldBlock) => return,
                // Closed before the handshake was done, without an alert.
                Ok(TlsRead::Eof) => {
                    return self.fail(idx, Failure::Tls(HandshakeFailure::Protocol), now)
                }
                Err(f) => return self.fail(idx, f, now),
            }
        }
    }

    fn handshake_done(&mut self, idx: usize, now: u64) {
        let (plan, started) = {
            let t = self.tls_of(idx);
            (t.plan, t.started_ns)
        };
        let resumed = match self.tls.as_mut() {
            Some(client) => client.completed(plan, &self.slab[idx].tls.as_ref().expect("tls").conn),
            None => false,
        };
        if resumed {
            self.stats.counts.handshakes_resumed += 1;
        } else {
            self.stats.counts.handshakes_full += 1;
        }
        self.tls_of(idx).started_ns = 0;
        record(
            &mut self.hists.handshake,
            now.saturating_sub(started) / 1000,
        );
        self.handshaking -= 1;
        self.ready(idx);
        if self.slab[idx].role == super::conn::Role::Pool && self.tls_flush(idx).is_err() {
            // Established and idle: its end is no one's error (as a pool connection the
            // server closes).
            self.slab[idx].phase = Phase::Idle;
            return self.finish(idx, now);
        }
        self.go(idx, now);
    }

    /// A connection ends with its handshake under way (failed, timed out, or the run's end):
    /// it leaves the resumption schedule.
    pub(super) fn handshake_abandoned(&mut self, idx: usize) {
        self.handshaking -= 1;
        self.class_connect_done(self.slab[idx].class);
        if let (Some(client), Some(t)) = (self.tls.as_mut(), self.slab[idx].tls.as_ref()) {
            client.failed(t.plan);
        }
    }

    pub(super) fn tls_of(&mut self, idx: usize) -> &mut TlsConn {
        self.slab[idx]
            .tls
            .as_mut()
            .expect("a TLS connection has its TLS state")
    }

    /// Writes what TLS has to send; Ok(true) when all of it went out, Ok(false) when the
    /// socket is full (EPOLLOUT says when to go on).
    pub(super) fn tls_flush(&mut self, idx: usize) -> Result<bool, Errno> {
        let c = &mut self.slab[idx];
        let (Some(sock), Some(t)) = (c.sock.as_ref(), c.tls.as_mut()) else {
            return Ok(true);
        };
        let mut s = sock;
        while t.conn.wants_write() {
            match t.conn.write_tls(&mut s) {
                Ok(n) => self.stats.counts.bytes_out += n as u64,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Errno::of_io(&e)),
            }
        }
        Ok(true)
    }

    /// Reads TLS records from the socket and processes them. A TLS error is the failure
    /// it counts as (its alert to the server is sent first, best effort).
    pub(super) fn tls_read(&mut self, idx: usize) -> Result<TlsRead, Failure> {
        let c = &mut self.slab[idx];
        let (Some(sock), Some(t)) = (c.sock.as_ref(), c.tls.as_mut()) else {
            return Ok(TlsRead::Eof);
        };
        let mut s = sock;
        let n = match t.conn.read_tls(&mut s) {
            Ok(0) => return Ok(TlsRead::Eof),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(TlsRead::WouldBlock),
            Err(e) if e.kind() == ErrorKind::Interrupted => return Ok(TlsRead::Some),
            Err(e) => return Err(Failure::Sys(Errno::of_io(&e))),
        };
        self.stats.counts.bytes_in += n as u64;
        if let Err(e) = t.conn.process_new_packets() {
            let kind = classify(&e);
            let _ = t.conn.write_tls(&mut s);
            // Said once per kind, in words: the counts say how often.
            let bit = 1u8 << (kind as u8);
            if self.told_tls & bit == 0 {
                self.told_tls |= bit;
                // Its own line in run.log (not joined to other notices), and the reason a
                // point whose every handshake failed gives.
                self.tls_failure = Some(format!(
                    "{} (counted in {})",
                    failure_words(&e),
                    match kind {
                        HandshakeFailure::Alert => "tls_alerts",
                        HandshakeFailure::BadCertificate => "bad_certificates",
                        HandshakeFailure::Protocol => "tls_protocol_errors",
                    }
                ));
            }
            return Err(Failure::Tls(kind));
        }
        Ok(TlsRead::Some)
    }

    /// Hands the current request to TLS (once) and writes it out; Ok(true) when it is all
    /// out, Ok(false) when the socket is full.
    pub(super) fn tls_send(&mut self, idx: usize) -> Result<bool, Errno> {
        let (req, sent) = {
            let c = &self.slab[idx];
            (c.req as usize, c.sent as usize)
        };
        let len = self.requests[req].len();
        if sent < len {
            let bytes = &self.requests[req][sent..];
            let t = self.slab[idx].tls.as_mut().expect("tls");
            t.conn
                .writer()
                .write_all(bytes)
                .map_err(|e| Errno::of_io(&e))?;
            self.slab[idx].sent = len as u32;
        }
        self.tls_flush(idx)
    }

    /// Plaintext TLS has decrypted, into `buf`: Ok(0) when the server closed the TLS session
    /// (close_notify) or the connection, Err(WouldBlock) when none is there yet.
    pub(super) fn tls_plaintext(&mut self, idx: usize, buf: &mut [u8]) -> std::io::Result<usize> {
        let t = self.slab[idx].tls.as_mut().expect("tls");
        match t.conn.reader().read(buf) {
            // Closed without close_notify: the end of the stream all the same (HTTP/1.0
            // servers often do; the response's length says whether it was complete).
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(0),
            r => r,
        }
    }
}
