//! A connection's request and response: the request picked from the mix and sent (resumed when
//! the socket was full), the response read and parsed, and what follows it (the next request on
//! a kept-alive connection, back to the pool, a wait for the server's FIN, or the close).
//! Requests go to the connection's HTTP layer and its bytes to the socket (through the security
//! layer); what the layer makes of the bytes that come back arrives as `HttpEvent`s.

use super::conn::{Failure, Phase, Role, EV_RESPONSE};
use super::layers::{HttpEvent, HttpLayer, ReqToken, SecRead, Wire};
use super::Engine;
use crate::metrics::hist::record;
use crate::model::counters::StatusClass;
use crate::model::BadReason;

use crate::sys::client_io::{self as io, SockError};
use rand::Rng;
use std::os::fd::AsFd;

impl Engine {
    /// The next request of the mix.
    pub(super) fn pick_request(&mut self) -> usize {
        if self.requests.len() == 1 {
            0
        } else {
            let total = *self.mix_cum.last().unwrap_or(&1.0);
            let x = self.rng.gen::<f64>() * total;
            self.mix_cum
                .partition_point(|&c| c <= x)
                .min(self.requests.len() - 1)
        }
    }

    /// Starts sending a connection's next request: the one it was opened for, first; then
    /// the next of the mix.
    pub(super) fn begin_request(&mut self, idx: usize, now: u64) {
        let c = &self.slab[idx];
        let req = if c.requests == 0 && c.role != Role::Pool {
            c.req as usize
        } else {
            self.pick_request()
        };
        self.setup_request(idx, req, now);
        self.send_more(idx, now);
    }

    /// A connection's next request, counted from here, nothing of it sent yet; its response
    /// timeout armed.
    pub(super) fn setup_request(&mut self, idx: usize, req: usize, now: u64) {
        let class = self.class_of_req(req);
        self.count(class, |c| c.requests += 1);
        self.in_flight_step(class, true);
        let c = &mut self.slab[idx];
        c.req = req as u16;
        c.sent_ns = now;
        c.requests += 1;
        c.http.start(ReqToken(c.requests), &self.requests[req]);
        c.phase = Phase::Sending;
        let multiplexed = c.http.reads_between_requests();
        let deadline = now + (self.cfg.response_timeout_s * 1e9) as u64;
        self.arm(idx, deadline);
        if multiplexed {
            self.arm_layer_timer(idx);
        }
    }

    /// Writes what the HTTP layer has to send, through the security layer if any.
    pub(super) fn send_more(&mut self, idx: usize, now: u64) {
        if self.slab[idx].sec.is_some() {
            let mut wire = Wire::default();
            let c = &mut self.slab[idx];
            let (Some(sock), Some(sec)) = (c.sock.as_ref(), c.sec.as_mut()) else {
                return;
            };
            let out = c.http.output();
            let n = out.len();
            let r = sec.send(sock, out, &mut wire);
            c.http.consumed(n);
            self.add_wire(wire);
            let blocked = match r {
                Ok(true) => {
                    self.slab[idx].phase = Phase::Receiving;
                    false
                }
                Ok(false) => true,
                Err(e) => return self.fail(idx, Failure::Sys(e), now),
            };
            return self.arm_out_if(blocked, idx, now);
        }
        let c = &self.slab[idx];
        let blocked = match c.sock().send(c.http.output()) {
            Ok(n) => {
                self.request_bytes_sent(idx, n);
                self.slab[idx].phase == Phase::Sending
            }
            Err(e) if e.kind() == SockError::WouldBlock => true,
            Err(e) => return self.fail(idx, Failure::Sys(e), now),
        };
        self.arm_out_if(blocked, idx, now);
    }

    /// Writes a multiplexed layer's bytes outside a request being sent (SETTINGS,
    /// WINDOW_UPDATE, PING acks); the phase stays as it is.
    pub(super) fn flush_layer(&mut self, idx: usize, now: u64) {
        if self.slab[idx].phase == Phase::Sending {
            return self.send_more(idx, now);
        }
        let mut wire = Wire::default();
        let c = &mut self.slab[idx];
        let Some(sock) = c.sock.as_ref() else {
            return;
        };
        let out = c.http.output();
        if out.is_empty() && c.sec.is_none() {
            return;
        }
        let r = match c.sec.as_mut() {
            Some(sec) => {
                let n = out.len();
                let r = sec.send(sock, out, &mut wire);
                c.http.consumed(n);
                r
            }
            None => match sock.send(out) {
                Ok(n) => {
                    wire.bytes_out += n as u64;
                    c.http.consumed(n);
                    Ok(c.http.output().is_empty())
                }
                Err(e) if e.kind() == SockError::WouldBlock => Ok(false),
                Err(e) => Err(e),
            },
        };
        self.add_wire(wire);
        match r {
            Ok(all) => {
                if all && self.slab[idx].mux {
                    self.mux_sent(idx);
                }
                self.arm_out_if(!all, idx, now)
            }
            Err(e) => self.fail(idx, Failure::Sys(e), now),
        }
    }

    /// A layer's own timer is due: what it reports is acted on, what it has to say is written.
    pub(super) fn layer_timer(&mut self, idx: usize, now: u64) {
        let mut events = std::mem::take(&mut self.events);
        self.slab[idx].http.on_timer(now, &mut events);
        let gen = self.slab[idx].gen;
        self.on_http_events(idx, &mut events, false, now);
        self.events = events;
        if self.slab[idx].gen == gen && self.slab[idx].phase != Phase::Free {
            self.flush_layer(idx, now);
        }
    }

    /// The rest goes out when the socket is writable: make sure that is reported.
    fn arm_out_if(&mut self, blocked: bool, idx: usize, now: u64) {
        if blocked && !self.slab[idx].out_armed {
            let key = self.key(idx);
            let armed =
                self.epoll
                    .modify(self.slab[idx].sock().as_fd(), EV_RESPONSE | io::EV_OUT, key);
            if let Err(e) = armed {
                return self.fail(idx, Failure::Sys(e), now);
            }
            self.slab[idx].out_armed = true;
        }
    }

    /// Accounts `n` more bytes of the current request as sent.
    pub(super) fn request_bytes_sent(&mut self, idx: usize, n: usize) {
        self.count(self.req_class(idx), |c| c.bytes_out += n as u64);
        let c = &mut self.slab[idx];
        c.http.consumed(n);
        if c.http.output().is_empty() {
            c.phase = Phase::Receiving;
        }
    }

    pub(super) fn read_ready(&mut self, idx: usize, bits: u32, now: u64, buf: &mut [u8]) {
        let gen = self.slab[idx].gen;
        if self.slab[idx].sec.is_some() {
            self.read_ready_secure(idx, bits, now, buf);
        } else {
            self.read_ready_plain(idx, bits, now, buf);
        }
        if self.slab[idx].mux && self.slab[idx].gen == gen && self.slab[idx].phase != Phase::Free {
            // Read batching: everything read this turn was fed first; its answers (the next
            // requests, WINDOW_UPDATEs, PING acks) leave now, in one write.
            self.mux_flush(idx, now);
        }
    }

    fn read_ready_plain(&mut self, idx: usize, bits: u32, now: u64, buf: &mut [u8]) {
        loop {
            match self.slab[idx].sock().recv(buf) {
                Ok(0) => return self.at_eof(idx, now),
                Ok(n) => {
                    self.count(self.req_class(idx), |c| c.bytes_in += n as u64);
                    if !self.received(idx, &buf[..n], bits, now) {
                        return;
                    }
                    // A short read emptied the socket: what arrives later is a new edge
                    // (epoll ET), so the read that would only say EAGAIN is saved. Not when
                    // the peer's FIN was reported: its EOF is read now.
                    if n < buf.len() && bits & (io::EV_RDHUP | io::EV_HUP) == 0 {
                        return;
                    }
                }
                Err(e) if e.kind() == SockError::WouldBlock => return,
                Err(e) => return self.fail(idx, Failure::Sys(e), now),
            }
        }
    }

    /// As `read_ready`, through the security layer: its plaintext handed to the HTTP layer,
    /// until the socket would block.
    fn read_ready_secure(&mut self, idx: usize, bits: u32, now: u64, buf: &mut [u8]) {
        loop {
            let mut wire = Wire::default();
            let c = &mut self.slab[idx];
            let (Some(sock), Some(sec)) = (c.sock.as_ref(), c.sec.as_mut()) else {
                return;
            };
            let r = sec.recv(sock, buf, &mut wire);
            self.add_wire(wire);
            match r {
                Ok(SecRead::Data(n)) => {
                    if !self.received(idx, &buf[..n], bits, now) {
                        return;
                    }
                    // As in `read_ready_plain`: not when the peer's FIN was reported.
                    let drained = self.slab[idx].sec.as_ref().is_some_and(|s| s.drained());
                    if drained && bits & (io::EV_RDHUP | io::EV_HUP) == 0 {
                        return;
                    }
                }
                Ok(SecRead::WouldBlock) => return,
                Ok(SecRead::Eof) => return self.at_eof(idx, now),
                Err(e) => return self.sec_failed(idx, e, now),
            }
        }
    }

    /// The server closed the connection (or its TLS session).
    fn at_eof(&mut self, idx: usize, now: u64) {
        let phase = self.slab[idx].phase;
        if matches!(phase, Phase::Draining | Phase::Idle | Phase::Pooled) {
            return self.finish(idx, now);
        }
        if phase == Phase::Streams {
            // The requests it still carried are lost (answered ones, and those a GOAWAY
            // left unprocessed, are no longer among them).
            return if self.slab[idx].streams().is_empty() {
                self.finish(idx, now)
            } else {
                self.fail(
                    idx,
                    Failure::BadResponse(
                        BadReason::Closed,
                        "the server closed the connection with requests in flight",
                    ),
                    now,
                )
            };
        }
        let mut events = std::mem::take(&mut self.events);
        let r = self.slab[idx].http.eof(&mut events);
        let done = events.iter().any(|e| matches!(e, HttpEvent::Done { .. }));
        match r {
            Ok(()) if done => {
                self.on_http_events(idx, &mut events, true, now);
            }
            r => {
                events.clear();
                let (why, words) = r
                    .err()
                    .map_or((BadReason::Closed, "connection closed mid-response"), |e| {
                        (e.reason(), e.words())
                    });
                self.fail(idx, Failure::BadResponse(why, words), now);
            }
        }
        self.events = events;
    }

    /// Bytes arrived: true to read on (the connection waits for more, drains to the server's
    /// FIN, or its protocol reads between requests), false when it is done with them.
    fn received(&mut self, idx: usize, bytes: &[u8], bits: u32, now: u64) -> bool {
        let c = &mut self.slab[idx];
        let between = !c.phase.in_request();
        if between && !c.http.reads_between_requests() {
            return true; // unsolicited bytes after a response: drain them
        }
        let gen = c.gen;
        let mut events = std::mem::take(&mut self.events);
        let fed = c.http.feed(bytes, &mut events);
        // Peer's FIN already queued: the read that would see it is saved.
        let fin = bits & (io::EV_RDHUP | io::EV_HUP) != 0;
        let answered = self.on_http_events(idx, &mut events, fin, now);
        self.events = events;
        let c = &self.slab[idx];
        if c.gen != gen || c.phase == Phase::Free {
            return false;
        }
        if let Err(e) = fed {
            self.fail(idx, Failure::BadResponse(e.reason(), e.words()), now);
            return false;
        }
        if c.http.reads_between_requests() && !c.mux {
            // A layer may answer what it read (PING, SETTINGS) and move its timer (a
            // multiplexed one once the read is over: `read_ready`).
            self.flush_layer(idx, now);
            self.arm_layer_timer(idx);
            let c = &self.slab[idx];
            if c.gen != gen || c.phase == Phase::Free {
                return false;
            }
        }
        let c = &self.slab[idx];
        !answered || c.phase == Phase::Draining || c.http.reads_between_requests()
    }

    /// Acts on what the HTTP layer reported (and empties `events`); true when a response
    /// completed.
    fn on_http_events(
        &mut self,
        idx: usize,
        events: &mut Vec<HttpEvent>,
        fin: bool,
        now: u64,
    ) -> bool {
        if self.slab[idx].mux {
            self.mux_events(idx, events, now);
            return false;
        }
        let gen = self.slab[idx].gen;
        let mut answered = false;
        for ev in events.drain(..) {
            if self.slab[idx].gen != gen || self.slab[idx].phase == Phase::Free {
                break;
            }
            match ev {
                HttpEvent::FirstByte(_) => {
                    let sched = self.slab[idx].sched_ns;
                    record(
                        &mut self.report.hists.ttfb,
                        now.saturating_sub(sched) / 1000,
                    );
                }
                HttpEvent::Done {
                    token,
                    status,
                    close,
                    ..
                } => {
                    debug_assert_eq!(token, ReqToken(self.slab[idx].requests));
                    answered = true;
                    self.response_done(idx, status, close, fin, now);
                }
                // The driver keeps one request per connection: a refused or reset one, or a
                // server going away before answering it, ends the connection as the request's
                // error (an HTTP/2 adapter retries refused ones on another connection).
                HttpEvent::Refused(_) | HttpEvent::Reset(..) | HttpEvent::Unprocessed(_) => {
                    if self.slab[idx].phase.in_request() {
                        let words = "the server refused or reset the request's stream";
                        self.fail(idx, Failure::BadResponse(BadReason::Protocol, words), now);
                    }
                }
                HttpEvent::GoingAway { last } => {
                    let current = ReqToken(self.slab[idx].requests);
                    let answers = last.is_some_and(|l| l.0 >= current.0);
                    if self.slab[idx].phase.in_request() && !answers {
                        let words = "the server went away (GOAWAY) before answering";
                        self.fail(idx, Failure::BadResponse(BadReason::Protocol, words), now);
                    }
                }
                HttpEvent::Limit(_) => {}
            }
        }
        events.clear();
        answered
    }

    /// A response with `status` counted for `class` (good, failed, by its status).
    pub(super) fn count_response(&mut self, class: u16, status: u16) {
        let ok = (200..300).contains(&status);
        let judged = self.cfg.good_statuses.class(status);
        self.count(class, |c| {
            c.responses += 1;
            if ok {
                c.responses_2xx += 1;
            } else {
                c.responses_non2xx += 1;
            }
            match judged {
                StatusClass::Good => c.responses_good += 1,
                StatusClass::Failed => c.responses_failed += 1,
                StatusClass::Neither => {}
            }
        });
    }

    /// The current request's response is in (`close`: the server closes after it; `fin`:
    /// its FIN is already here).
    pub(super) fn response_done(
        &mut self,
        idx: usize,
        status: u16,
        close: bool,
        fin: bool,
        now: u64,
    ) {
        let class = self.req_class(idx);
        self.count_response(class, status);
        self.in_flight_step(class, false);
        let (role, sched, sent, requests) = {
            let c = &self.slab[idx];
            (c.role, c.sched_ns, c.sent_ns, c.requests)
        };
        let total_ns = now.saturating_sub(sched);
        self.record_total(class, total_ns / 1000);
        // The latency split's connect: this response's time before its request went out.
        let before_us = sent.saturating_sub(sched) / 1000;
        self.count(class, |c| {
            c.before_send_us += before_us;
            c.first_responses += u64::from(requests == 1);
        });
        self.sched.batching.observe(total_ns);
        if role == Role::Pool {
            self.pool_served(now.saturating_sub(sent) / 1000);
        }
        // The request is answered: the connection is between requests from here.
        self.slab[idx].phase = Phase::Idle;
        let reusable = self.cfg.keepalive
            && !close
            && !fin
            && requests < self.cfg.requests_per_conn
            && !self.sched.paused;
        if reusable && role == Role::Pool {
            self.pool_free(idx, now);
        } else if reusable
            && role == Role::Client
            && self.sched.clients_alive <= self.closed_target()
        {
            if self.cfg.think_s > 0.0 {
                let at = now + (self.cfg.think_s * 1e9) as u64;
                self.arm(idx, at);
            } else {
                self.slab[idx].sched_ns = now;
                self.begin_request(idx, now);
            }
        } else if reusable && role == Role::Attempt {
            // An open arrival's connection sends its requests back to back.
            self.slab[idx].sched_ns = now;
            self.begin_request(idx, now);
        } else if fin || self.cfg.keepalive || !close {
            // The FIN is in, or the server means to keep the connection (we end it, our FIN
            // first): close now. Otherwise wait for the server's FIN.
            self.finish(idx, now);
        } else {
            self.slab[idx].phase = Phase::Draining;
            let at = now + (self.cfg.response_timeout_s * 1e9) as u64;
            self.arm(idx, at);
        }
    }
}
