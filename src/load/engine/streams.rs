//! Multiplexed connections (a layer that says it is `multiplexed`: HTTP/2 now, QUIC next):
//! many requests at once on one established connection, as many as the layer's `capacity`
//! says, each its own record (`Stream`: token, mix entry, class, scheduled and sent times),
//! timed from its own scheduled start. The connection stays in `Phase::Streams` from ready to
//! close; what starts its requests is its role, as for one request at a time:
//! - a pool connection (open mode with `connections`) offers each free stream to the pool as
//!   an idle place (`offered`), so a due request takes a stream, not a connection, and one
//!   that finds none waits on the clock and is counted as the pool's wait;
//! - a closed client's connection keeps its streams busy: each stream sends the next request
//!   when its response ends, after `think` when there is one (N connections x M streams, each
//!   stream a client);
//! - an attempt's connection (S-Client, open arrivals) sends its own request, then its next
//!   ones, up to `requests_per_conn`, M at a time, and closes when they are answered.
//!
//! A pool's and a closed client's connections are not bounded by `requests_per_conn`: they
//! carry requests until the server goes away (GOAWAY), as h2load's clients do.
//!
//! A request the server refused (REFUSED_STREAM) or left unprocessed (above a GOAWAY's last
//! stream) stays in flight and is sent again, first, on the next other connection with a free
//! stream (`Retry`); it is counted once as a request and once more in its refusal count. A
//! connection going away takes no new requests and closes when its last one is answered; its
//! role replaces it. The connection's deadline is its oldest request's response timeout.

use super::conn::{Failure, Phase, Role};
use super::layers::{HttpEvent, HttpLayer, MuxCounts, ReqToken};
use super::Engine;
use crate::metrics::hist::record;

/// One request on a multiplexed connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stream {
    pub(super) token: ReqToken,
    pub(super) req: u16,
    pub(super) class: u16,
    /// Its scheduled start (latency counts from here), ns.
    pub(super) sched_ns: u64,
    /// When its bytes left (when it was queued, until they did: `queued`), ns.
    pub(super) sent_ns: u64,
    /// Its bytes wait in the layer's output: they leave in the connection's one write of the
    /// turn (read batching: `mux_sent` stamps the time).
    pub(super) queued: bool,
    /// Its scheduled time is its send (a closed loop's and an attempt's next request, not a
    /// scheduled or refused one): stamped with `sent_ns`, so the turn's batching is not
    /// latency.
    pub(super) sched_at_send: bool,
}

/// A refused or unprocessed request waiting to go again (in flight all along).
#[derive(Debug, Clone, Copy)]
pub(super) struct Retry {
    req: u16,
    sched_ns: u64,
    /// The connection (slot, generation) that refused it: another one sends it.
    from: (u32, u32),
}

impl Engine {
    fn alive(&self, idx: usize, gen: u32) -> bool {
        self.slab[idx].gen == gen && self.slab[idx].phase != Phase::Free
    }

    /// A multiplexed connection is ready (connected, over TLS its handshake done): its
    /// preface goes out with its first requests.
    pub(super) fn mux_ready(&mut self, idx: usize, now: u64) {
        self.slab[idx].phase = Phase::Streams;
        self.slab[idx].mx().ready_ns = now;
        let gen = self.slab[idx].gen;
        self.mux_refill(idx, now);
        if self.alive(idx, gen) {
            self.flush_layer(idx, now);
        }
    }

    /// Sends request `req` (scheduled at `sched`; None: when its bytes leave) on a new stream;
    /// `fresh`: counted as a new request (a retry was counted when it first went).
    pub(super) fn start_stream(
        &mut self,
        idx: usize,
        req: usize,
        sched: Option<u64>,
        now: u64,
        fresh: bool,
    ) {
        let class = self.class_of_req(req);
        if fresh {
            self.count(class, |c| c.requests += 1);
            self.in_flight_step(class, true);
        }
        let c = &mut self.slab[idx];
        c.requests += 1;
        c.req = req as u16;
        let token = ReqToken(c.requests);
        c.http.start(token, &self.requests[req]);
        let first = c.streams().is_empty();
        c.mx().streams.push(Stream {
            token,
            req: req as u16,
            class,
            sched_ns: sched.unwrap_or(now),
            sent_ns: now,
            queued: true,
            sched_at_send: sched.is_none(),
        });
        let n = c.streams().len() as u64;
        self.report.streams_max = self.report.streams_max.max(n);
        if first {
            self.mux_arm(idx);
        }
    }

    /// The connection's deadline: its oldest request's response timeout or, sooner, the end
    /// of a closed client's think time.
    fn mux_arm(&mut self, idx: usize) {
        let timeout = (self.cfg.response_timeout_s * 1e9) as u64;
        let c = &self.slab[idx];
        let response = c.streams().iter().map(|s| s.sent_ns + timeout).min();
        let thinks = c.mux_state().map_or(&[][..], |m| &m.thinks);
        match response.into_iter().chain(thinks.iter().copied()).min() {
            Some(at) => self.arm(idx, at),
            None => self.disarm(idx),
        }
    }

    /// A closed client's request ended (answered or reset): its stream thinks before the
    /// next, as an HTTP/1.1 client does between requests on its kept-alive connection.
    fn client_stream_ended(&mut self, idx: usize, now: u64) {
        if self.slab[idx].role == Role::Client && self.cfg.think_s > 0.0 {
            let at = now + (self.cfg.think_s * 1e9) as u64;
            self.slab[idx].mx().thinks.push(at);
            self.mux_arm(idx);
        }
    }

    /// The first waiting retry another connection than `idx` refused.
    fn take_retry(&mut self, idx: usize) -> Option<Retry> {
        let me = (idx as u32, self.slab[idx].gen);
        let at = self.sched.retries.iter().position(|r| r.from != me)?;
        self.sched.retries.remove(at)
    }

    /// Whether the connection's role starts no more requests on it now.
    fn mux_stopping(&self, idx: usize) -> bool {
        let c = &self.slab[idx];
        // A pool's and a closed client's connections carry requests until the server goes
        // away (as h2load's clients do); an attempt's carries `requests_per_conn`.
        self.sched.paused
            || match c.role {
                Role::Pool => self.sched.pool.open > self.pool_target(),
                Role::Client => self.sched.clients_alive > self.closed_target(),
                Role::Attempt => c.requests >= self.cfg.requests_per_conn,
            }
    }

    /// Fills the connection's free streams as its role says; closes it when it has none in
    /// flight and will take none (gone away, its requests done, the load shrunk).
    pub(super) fn mux_refill(&mut self, idx: usize, now: u64) {
        let gen = self.slab[idx].gen;
        let role = self.slab[idx].role;
        while self.slab[idx].http.capacity() > 0 {
            // Retries first, even while the load stops: they were counted when they first
            // went, and are in flight until answered.
            if let Some(r) = self.take_retry(idx) {
                self.start_stream(idx, r.req as usize, Some(r.sched_ns), now, false);
                continue;
            }
            if self.mux_stopping(idx) {
                break;
            }
            // A closed client's streams thinking take no stream now but hold their place.
            if role == Role::Client
                && self.slab[idx].http.capacity() as usize
                    <= self.slab[idx].mux_state().map_or(0, |m| m.thinks.len())
            {
                break;
            }
            match role {
                Role::Pool => {
                    let Some(due) = self.due_request(now) else {
                        break;
                    };
                    self.take_due(due, now);
                    let req = self.pick_request();
                    self.start_stream(idx, req, Some(due), now, true);
                }
                Role::Attempt if self.slab[idx].requests == 0 => {
                    let (req, sched) = (self.slab[idx].req as usize, self.slab[idx].sched_ns);
                    self.start_stream(idx, req, Some(sched), now, true);
                }
                Role::Attempt | Role::Client => {
                    let req = self.pick_request();
                    self.start_stream(idx, req, None, now, true);
                }
            }
        }
        if !self.alive(idx, gen) {
            return;
        }
        if role == Role::Pool {
            self.pool_offer(idx, now);
        }
        let c = &self.slab[idx];
        if c.streams().is_empty() && (self.mux_stopping(idx) || c.http.capacity() == 0) {
            self.finish(idx, now);
        }
    }

    /// A pool connection offers its free streams as idle places (none when it is stopping);
    /// places it no longer has leave the pool's idle count (their queue entries lapse).
    pub(super) fn pool_offer(&mut self, idx: usize, now: u64) {
        let free = if self.mux_stopping(idx) {
            0
        } else {
            self.slab[idx].http.capacity()
        };
        let gen = self.slab[idx].gen;
        while self.slab[idx].mx().offered < free {
            self.slab[idx].mx().offered += 1;
            self.pool_idle_place(idx, gen);
        }
        while self.slab[idx].mx().offered > free {
            self.slab[idx].mx().offered -= 1;
            self.pool_left_idle(now);
        }
    }

    /// The layer's output all left (`flush_layer`): the requests queued in it were sent now.
    pub(super) fn mux_sent(&mut self, idx: usize) {
        if !self.slab[idx].streams().iter().any(|s| s.queued) {
            return;
        }
        let t = self.now_ns();
        for s in self.slab[idx].mx().streams.iter_mut().filter(|s| s.queued) {
            s.queued = false;
            s.sent_ns = t;
            if s.sched_at_send {
                s.sched_ns = t;
            }
        }
    }

    /// Writes what the connection's layer has to send (one write for all a turn queued) and
    /// moves its timer.
    pub(super) fn mux_flush(&mut self, idx: usize, now: u64) {
        let gen = self.slab[idx].gen;
        self.flush_layer(idx, now);
        if self.alive(idx, gen) {
            self.arm_layer_timer(idx);
        }
    }

    /// Acts on a multiplexed layer's events (and empties `events`), then refills its streams.
    pub(super) fn mux_events(&mut self, idx: usize, events: &mut Vec<HttpEvent>, now: u64) {
        let gen = self.slab[idx].gen;
        for ev in events.drain(..) {
            if !self.alive(idx, gen) {
                break;
            }
            match ev {
                HttpEvent::FirstByte(t) => {
                    if let Some(s) = self.slab[idx].streams().iter().find(|s| s.token == t) {
                        let us = now.saturating_sub(s.sched_ns) / 1000;
                        record(&mut self.report.hists.ttfb, us);
                    }
                }
                HttpEvent::Done { token, status, .. } => {
                    let Some(s) = self.take_stream(idx, token) else {
                        continue;
                    };
                    self.count_response(s.class, status);
                    self.in_flight_step(s.class, false);
                    let total_ns = now.saturating_sub(s.sched_ns);
                    self.record_total(s.class, total_ns / 1000);
                    self.sched.batching.observe(total_ns);
                    self.stream_split(idx, &s);
                    if self.slab[idx].role == Role::Pool {
                        self.pool_served(now.saturating_sub(s.sent_ns) / 1000);
                    }
                    self.client_stream_ended(idx, now);
                }
                HttpEvent::Refused(t) | HttpEvent::Unprocessed(t) => {
                    let Some(s) = self.take_stream(idx, t) else {
                        continue;
                    };
                    if matches!(ev, HttpEvent::Refused(_)) {
                        self.count(s.class, |c| c.streams_refused += 1);
                    } else {
                        self.count(s.class, |c| c.streams_unprocessed += 1);
                    }
                    self.sched.retries.push_back(Retry {
                        req: s.req,
                        sched_ns: s.sched_ns,
                        from: (idx as u32, gen),
                    });
                }
                HttpEvent::Reset(t, code) => {
                    let Some(s) = self.take_stream(idx, t) else {
                        continue;
                    };
                    self.count(s.class, |c| {
                        c.stream_resets += 1;
                        c.stream_resets_by_code.count(code);
                    });
                    self.in_flight_step(s.class, false);
                    self.report.note_reset_code(code);
                    self.client_stream_ended(idx, now);
                }
                HttpEvent::GoingAway { .. } => self.count(self.slab[idx].class, |c| c.goaways += 1),
                HttpEvent::Limit(limit) => {
                    self.report.streams_limit = limit;
                    if !self.slab[idx].mx().settled {
                        // Set up: connected, secured, the server's SETTINGS in.
                        self.slab[idx].mx().settled = true;
                        let us = now.saturating_sub(self.slab[idx].sched_ns) / 1000;
                        let s = &mut self.report.stats.counts;
                        s.setups += 1;
                        s.setup_us_sum += us;
                    }
                }
            }
        }
        events.clear();
        if self.alive(idx, gen) {
            self.mux_refill(idx, now);
        }
    }

    fn take_stream(&mut self, idx: usize, token: ReqToken) -> Option<super::streams::Stream> {
        let v = &mut self.slab[idx].mx().streams;
        let at = v.iter().position(|s| s.token == token)?;
        Some(v.swap_remove(at))
    }

    /// The connection failed with requests in flight: each is its request's error.
    pub(super) fn mux_failed(&mut self, idx: usize, f: Failure) {
        let classes: Vec<u16> = self.slab[idx].streams().iter().map(|s| s.class).collect();
        for class in classes {
            self.count_request_error(f, class);
        }
    }

    /// The connection closes: its requests leave the in-flight gauges (counted by
    /// `mux_failed` when it failed), its idle places the pool, its counts the report.
    pub(super) fn mux_closed(&mut self, idx: usize, now: u64) {
        self.slab[idx].mx().thinks.clear();
        for s in std::mem::take(&mut self.slab[idx].mx().streams) {
            self.in_flight_step(s.class, false);
        }
        while self.slab[idx].mx().offered > 0 {
            self.slab[idx].mx().offered -= 1;
            self.pool_left_idle(now);
        }
        self.mux_take_counts(idx);
    }

    /// A multiplexed connection closed: requests waiting to go again that no connection is
    /// left to carry (the load paused or draining, its last connection gone away) get one
    /// of their own, so none is lost.
    pub(super) fn mux_carry_retries(&mut self, now: u64) {
        let alive = self.report.connecting + self.report.handshaking + self.report.active;
        if self.sched.paused && alive == 0 && !self.sched.retries.is_empty() {
            self.start_attempt(now, now, Role::Attempt);
        }
    }

    /// The connection's deadline: its oldest request timed out (the connection fails, each
    /// request in flight a response timeout), or the deadline moves to the new oldest's.
    pub(super) fn mux_deadline(&mut self, idx: usize, now: u64) {
        let timeout = (self.cfg.response_timeout_s * 1e9) as u64;
        if let Some(oldest) = self.slab[idx].streams().iter().map(|s| s.sent_ns).min() {
            if oldest + timeout <= now {
                return self.fail(idx, Failure::ResponseTimeout, now);
            }
        }
        // Closed clients whose think time is over send their next requests.
        let thinks = &mut self.slab[idx].mx().thinks;
        let thinking = thinks.len();
        thinks.retain(|&at| at > now);
        if thinks.len() < thinking {
            let gen = self.slab[idx].gen;
            self.mux_refill(idx, now);
            if !self.alive(idx, gen) {
                return;
            }
            self.flush_layer(idx, now);
            if !self.alive(idx, gen) {
                return;
            }
        }
        self.mux_arm(idx);
    }

    /// Adds a multiplexed connection's own counts to the report's.
    pub(super) fn mux_take_counts(&mut self, idx: usize) {
        let mut m = MuxCounts::default();
        self.slab[idx].http.take_counts(&mut m);
        let s = &mut self.report.stats.counts;
        s.header_bytes_wire += m.header_wire;
        s.header_bytes_plain += m.header_plain;
        s.flow_stalls += m.flow_stalls;
        s.flow_stall_us += m.flow_stall_us;
    }

    /// Before a report: every multiplexed connection's counts so far.
    pub(super) fn mux_report(&mut self) {
        if self.layers.streams.is_none() {
            return;
        }
        for idx in 0..self.slab.len() {
            if self.slab[idx].phase == Phase::Streams {
                self.mux_take_counts(idx);
            }
        }
    }

    /// A live change of M: every connection's layer takes it, and fills streams it frees.
    pub(super) fn set_streams(&mut self, m: u32, now: u64) {
        self.layers.streams = Some(m);
        for idx in 0..self.slab.len() {
            if self.slab[idx].mux && self.slab[idx].phase != Phase::Free {
                self.slab[idx].http.set_max_in_flight(m);
                if self.slab[idx].phase == Phase::Streams {
                    let gen = self.slab[idx].gen;
                    self.mux_refill(idx, now);
                    if self.alive(idx, gen) {
                        self.flush_layer(idx, now);
                    }
                }
            }
        }
    }
}
