//! The pool of persistent connections (open mode with `connections`): an open-loop request
//! rate over kept-alive connections, as wrk2 does it. Each arrival of the schedule is a
//! request, sent on an idle connection of the pool (the one idle longest) and timed from its
//! scheduled time, so a request that waits for a free connection waits on the clock (no
//! coordinated omission). The pool is kept at its size: a connection the server closes, or
//! that has carried `requests_per_conn` requests, is reopened. The schedule starts once the
//! pool is open (or T has passed), so the first requests are not timed against the handshakes.

use super::conn::{Phase, Role};
use super::policy::Starts;
use super::Engine;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Pause before reopening a pool connection whose connect failed (refused, timed out), so a
/// server that is down is not hammered in a loop.
const RECONNECT_PAUSE_NS: u64 = 10_000_000;

/// The pool's bookkeeping.
#[derive(Debug, Default)]
pub(super) struct Pool {
    /// Pool connections that exist (connecting, idle or carrying a request).
    pub(super) open: u64,
    /// Of those, idle ones.
    pub(super) idle: u64,
    /// Idle connections, longest idle first, as (slot, generation); an entry whose connection
    /// ended or left idleness is stale and skipped.
    queue: VecDeque<(u32, u32)>,
    /// When a connection that failed to connect may be reopened.
    reopen_due: BinaryHeap<Reverse<u64>>,
    /// Since when no connection has been idle (None: one is): a request due since then
    /// waited for the pool, whenever the loop got to it.
    all_busy_since: Option<u64>,
    /// The quickest answer so far (us, send to response; 0: none yet).
    pub(super) service_min_us: u64,
    /// Opening: the schedule waits until every connection is open, or until this time.
    warming_until: Option<u64>,
}

impl Engine {
    /// The pool's size now: the configured one in open mode, none when paused or in another
    /// mode (its connections then close as they come free).
    pub(super) fn pool_target(&self) -> u64 {
        if self.pooled() && !self.sched.paused {
            self.cfg.connections as u64
        } else {
            0
        }
    }

    /// Open mode with a pool: arrivals are requests.
    pub(super) fn pooled(&self) -> bool {
        self.starts() == Starts::RequestsOnPool
    }

    /// The pool's size as configured (0: not pool mode), paused or not.
    pub(super) fn pool_size(&self) -> u32 {
        if self.pooled() {
            self.cfg.connections
        } else {
            0
        }
    }

    /// A pool connection is free (just established, or its response is in): idle for the next
    /// due request, or closed when the pool is over its size (a pause, a drain, another mode).
    pub(super) fn pool_free(&mut self, idx: usize, now: u64) {
        if self.sched.pool.open > self.pool_target() {
            self.slab[idx].phase = Phase::Idle;
            self.finish(idx, now);
        } else if let Some(due) = self.due_request(now) {
            // A request is waiting: it goes out on this connection at once, not after the
            // rest of the event batch, so a server with requests queued is not left idle.
            self.send_scheduled(idx, due, now);
        } else {
            self.pool_idle(idx);
        }
    }

    /// The scheduled time of the next request, if it is due by `now` (none while opening).
    pub(super) fn due_request(&self, now: u64) -> Option<u64> {
        if self.sched.pool.warming_until.is_some() {
            return None;
        }
        self.next_due_ns().filter(|&due| due <= now)
    }

    /// Sends the due request (scheduled at `due`) on connection `idx`: timed from `due`, and
    /// counted as a wait for the pool when it was due while no connection was idle. On a
    /// multiplexed connection it is queued: the caller flushes (`pool_starts`, once for the
    /// requests that go on one connection in a row).
    fn send_scheduled(&mut self, idx: usize, due: u64, now: u64) {
        self.take_due(due, now);
        if self.slab[idx].mux {
            let req = self.pick_request();
            return self.start_stream(idx, req, Some(due), now, true);
        }
        self.slab[idx].sched_ns = due;
        self.begin_request(idx, now);
    }

    /// Takes the due request (scheduled at `due`) off the schedule: counted as a wait for
    /// the pool when it was due while no connection (stream) was idle, else as its lag.
    pub(super) fn take_due(&mut self, due: u64, now: u64) {
        self.sched.schedule.pop();
        if self
            .sched
            .pool
            .all_busy_since
            .is_some_and(|since| due >= since)
        {
            let s = &mut self.report.stats.counts;
            s.pool_waits += 1;
            s.pool_wait_us_sum += now.saturating_sub(due) / 1000;
        } else {
            self.note_lag(now, due);
        }
    }

    /// One more idle place in the pool: a free stream of multiplexed connection `idx`.
    pub(super) fn pool_idle_place(&mut self, idx: usize, gen: u32) {
        self.sched.pool.idle += 1;
        self.sched.pool.all_busy_since = None;
        self.sched.pool.queue.push_back((idx as u32, gen));
    }

    /// A pool connection is idle: it takes the next due request.
    fn pool_idle(&mut self, idx: usize) {
        let gen = self.slab[idx].gen;
        self.slab[idx].phase = Phase::Pooled;
        self.disarm(idx);
        self.sched.pool.idle += 1;
        self.sched.pool.all_busy_since = None;
        self.sched.pool.queue.push_back((idx as u32, gen));
    }

    /// An idle connection left idleness (taken, or closed) at `now`.
    pub(super) fn pool_left_idle(&mut self, now: u64) {
        self.sched.pool.idle -= 1;
        if self.sched.pool.idle == 0 {
            self.sched.pool.all_busy_since = Some(now);
        }
    }

    /// A pool request was answered `us` after it was sent.
    pub(super) fn pool_served(&mut self, us: u64) {
        let s = &mut self.report.stats.counts;
        s.pool_served += 1;
        s.pool_service_us_sum += us;
        let min = &mut self.sched.pool.service_min_us;
        if *min == 0 || us < *min {
            *min = us.max(1);
        }
    }

    /// The idle connection that waited longest, taken out of idleness.
    fn pool_take_idle(&mut self, now: u64) -> Option<usize> {
        while let Some((idx, gen)) = self.sched.pool.queue.pop_front() {
            let c = &mut self.slab[idx as usize];
            if c.gen == gen
                && c.phase == Phase::Streams
                && c.mux_state().is_some_and(|m| m.offered > 0)
            {
                // A free stream of a multiplexed connection (entries beyond `offered` lapse).
                c.mx().offered -= 1;
                self.pool_left_idle(now);
                return Some(idx as usize);
            }
            if c.gen == gen && c.phase == Phase::Pooled {
                self.pool_left_idle(now);
                self.slab[idx as usize].phase = Phase::Idle;
                return Some(idx as usize);
            }
        }
        None
    }

    /// The pool (re)starts (the worker's start, a resume, open mode again): the schedule waits
    /// for its connections, at most T.
    pub(super) fn pool_warm_up(&mut self, now: u64) {
        self.sched.pool.warming_until = self
            .pooled()
            .then(|| now + (self.cfg.timeout_s * 1e9) as u64);
    }

    /// True while the pool is opening and the schedule has not started.
    pub(super) fn pool_warming(&self) -> bool {
        self.pooled() && self.sched.pool.warming_until.is_some()
    }

    /// A pool connection failed to connect: its place is reopened after a pause.
    pub(super) fn pool_reconnect_later(&mut self, now: u64) {
        self.sched
            .pool
            .reopen_due
            .push(Reverse(now + RECONNECT_PAUSE_NS));
    }

    /// When the pool next has something to start: a connection to open, or a request due
    /// while a connection is idle.
    pub(super) fn pool_next_ns(&self, now: u64) -> Option<u64> {
        let target = self.pool_target();
        let open = if self.sched.pool.open + (self.sched.pool.reopen_due.len() as u64) < target {
            Some(now)
        } else if self.sched.pool.open < target {
            self.sched.pool.reopen_due.peek().map(|&Reverse(at)| at)
        } else {
            None
        };
        let request = match self.sched.pool.warming_until {
            Some(until) => Some(until),
            None if self.sched.pool.idle > 0 => self.next_due_ns(),
            None => None,
        };
        match (open, request) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Opens the pool's missing connections and sends the requests that are due on idle
    /// ones, at most `budget` starts of each.
    pub(super) fn pool_starts(&mut self, now: u64, budget: usize) {
        self.pool_open_missing(now, budget);
        if let Some(until) = self.sched.pool.warming_until {
            if self.sched.pool.idle < self.pool_target() && now < until {
                return;
            }
            self.sched.pool.warming_until = None;
            self.sched.schedule.restart(now as f64 / 1e9);
            if self.sched.pool.idle == 0 {
                self.sched.pool.all_busy_since = Some(now);
            }
        }
        // A multiplexed connection's requests queued so far (its free streams are offered
        // in a row): written in one go when the next goes elsewhere, or at the end.
        let mut queued: Option<usize> = None;
        for _ in 0..budget {
            let Some(due) = self.due_request(now) else {
                break;
            };
            let Some(idx) = self.pool_take_idle(now) else {
                break;
            };
            if let Some(q) = queued.filter(|&q| q != idx) {
                self.flush_layer(q, now);
            }
            self.send_scheduled(idx, due, now);
            queued = self.slab[idx].mux.then_some(idx);
        }
        if let Some(q) = queued {
            self.flush_layer(q, now);
        }
    }

    fn pool_open_missing(&mut self, now: u64, budget: usize) {
        let target = self.pool_target();
        // Connections never opened (start, resume) open now. The pool's size is not a live
        // knob, so there are never more reopenings due than places.
        let known = self.sched.pool.open + self.sched.pool.reopen_due.len() as u64;
        for _ in known..target {
            self.sched.pool.reopen_due.push(Reverse(now));
        }
        let mut n = 0;
        while n < budget && now >= self.sched.backoff_until_ns {
            match self.sched.pool.reopen_due.peek() {
                Some(&Reverse(at)) if at <= now => {}
                _ => break,
            }
            let Some(Reverse(at)) = self.sched.pool.reopen_due.pop() else {
                break;
            };
            n += 1;
            self.start_attempt(at, now, Role::Pool);
        }
    }

    /// Closes idle pool connections beyond the pool's size (a pause, a drain, another mode);
    /// busy ones close when their response is in.
    pub(super) fn trim_pool(&mut self, now: u64) {
        while self.sched.pool.open > self.pool_target() {
            let Some(idx) = self.pool_take_idle(now) else {
                break;
            };
            // A multiplexed one with requests in flight closes when they are answered.
            if self.slab[idx].streams().is_empty() {
                self.finish(idx, now);
            }
        }
    }
}
