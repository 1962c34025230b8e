//! The per-mode start policy, stated once: where a worker's attempts come from (closed
//! clients' wakes, an S-Client's free slots, scheduled arrivals), when the next one is due and
//! what caps them; and the closed-loop clients' lifecycle.

use super::batching::ReadBatching;
use super::conn::{Phase, Role};
use super::pool::Pool;
use super::Engine;
use crate::load::arrival::Schedule;
use crate::load::protocol::Mode;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Most arrivals started per loop pass, so a late worker still services its sockets.
const STARTS_PER_PASS: usize = 512;

/// Where attempts come from, by mode (see [`Engine::starts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Starts {
    /// Closed: each client's next request, at its wake time (`wakes`); no cap.
    Clients,
    /// Sclient flat out: D slots, each reconnecting when it is freed (`slots_due`).
    FreeSlots,
    /// Sclient with a rate: scheduled arrivals; one beyond D connecting waits for a free slot.
    ArrivalsIntoSlots,
    /// Open: scheduled arrivals; one beyond D connecting is dropped (a client-cap drop).
    Arrivals,
    /// Open with a pool of persistent connections: scheduled arrivals are requests, each sent
    /// on an idle connection of the pool (see `pool`).
    RequestsOnPool,
}

/// The scheduler's state: what decides when the next attempt or request starts.
pub(super) struct Sched {
    /// Closed clients' wake times (their next request, after thinking).
    pub(super) wakes: BinaryHeap<Reverse<u64>>,
    /// Sclient flat out: when each free slot (re)connects, earliest first. A freed slot is due
    /// at once (its T deadline, or the moment its connect completed or failed), so a late
    /// reconnect shows as lag; slots that start fresh are spread over T (seed 000 §4.2: "these
    /// D connection requests are spaced out over T"), else they stay in lockstep: all time out
    /// together, all retry together, and the server idles between the bursts.
    pub(super) slots_due: BinaryHeap<Reverse<u64>>,
    /// Scheduled arrivals (open, sclient with a rate, the pool's requests).
    pub(super) schedule: Schedule,
    /// Closed clients alive (connected, connecting or thinking).
    pub(super) clients_alive: u32,
    pub(super) pool: Pool,
    pub(super) paused: bool,
    /// Drain: no new attempts; the worker exits once nothing is in flight.
    pub(super) draining: bool,
    /// No attempts before this (the kernel refused a socket or a port).
    pub(super) backoff_until_ns: u64,
    /// The responses' running mean latency, for read batching (`Engine::batching`).
    pub(super) batching: ReadBatching,
    /// Multiplexed: refused or unprocessed requests waiting to go again (in flight).
    pub(super) retries: std::collections::VecDeque<super::streams::Retry>,
}

impl Engine {
    /// Where this worker's attempts come from now (its mode, and for sclient whether it has a
    /// rate): the one statement of the per-mode policy.
    pub(super) fn starts(&self) -> Starts {
        match self.cfg.mode {
            Mode::Closed => Starts::Clients,
            Mode::Sclient if self.sched.schedule.rate().is_none() => Starts::FreeSlots,
            Mode::Sclient => Starts::ArrivalsIntoSlots,
            Mode::Open if self.cfg.connections > 0 => Starts::RequestsOnPool,
            Mode::Open => Starts::Arrivals,
        }
    }

    /// When the loop next has an attempt to start: None while paused, with nothing queued, or
    /// while every slot of an sclient is connecting.
    pub(super) fn next_start_ns(&self, now: u64) -> Option<u64> {
        if self.sched.paused {
            return None;
        }
        let starts = self.starts();
        if starts == Starts::RequestsOnPool {
            return self
                .pool_next_ns(now)
                .map(|due| due.max(self.sched.backoff_until_ns.max(now)));
        }
        if self.waits_for_slot(starts) {
            return None;
        }
        // Free slots without a due time are started (spread over T) at once.
        let due = if starts == Starts::FreeSlots && self.slots_missing() > 0 {
            Some(now)
        } else {
            self.queued_start(starts)
        };
        due.map(|due| due.max(self.sched.backoff_until_ns.max(now)))
    }

    /// Read batching, while this worker runs a closed keep-alive loop, not over HTTP/3 (see
    /// `batching`): decided by the mode now, since a live change can switch modes.
    pub(super) fn batching(&self) -> Option<ReadBatching> {
        let closed = self.starts() == Starts::Clients;
        (closed && self.cfg.keepalive && !self.cfg.http3).then_some(self.sched.batching)
    }

    /// The thread's timer slack for this mode: the naps of read batching are 5-30 us, which
    /// the default 50 us slack would stretch to ~80 us; every other mode keeps the thread's
    /// default (0 restores it), as it always had.
    pub(super) fn timer_slack_for_mode(&self) {
        let slack = if self.batching().is_some() { 1_000 } else { 0 };
        crate::sys::process::set_timer_slack_ns(slack);
    }

    /// All D sockets are connecting and this mode's next start waits for one to free up.
    pub(super) fn waits_for_slot(&self, starts: Starts) -> bool {
        matches!(starts, Starts::FreeSlots | Starts::ArrivalsIntoSlots)
            && self.report.connecting >= self.cfg.sockets as u64
    }

    /// The scheduled start (ns) of the next attempt queued in this mode.
    pub(super) fn queued_start(&self, starts: Starts) -> Option<u64> {
        match starts {
            Starts::Clients => self.sched.wakes.peek().map(|&Reverse(at)| at),
            Starts::FreeSlots => self.sched.slots_due.peek().map(|&Reverse(at)| at),
            Starts::ArrivalsIntoSlots | Starts::Arrivals | Starts::RequestsOnPool => {
                self.next_due_ns()
            }
        }
    }

    /// Takes the start [`Self::queued_start`] returned off its queue.
    pub(super) fn pop_start(&mut self, starts: Starts) {
        match starts {
            Starts::Clients => {
                self.sched.wakes.pop();
            }
            Starts::FreeSlots => {
                self.sched.slots_due.pop();
            }
            Starts::ArrivalsIntoSlots | Starts::Arrivals | Starts::RequestsOnPool => {
                self.sched.schedule.pop();
            }
        }
    }

    /// Sclient flat out: free slots with no due time yet.
    pub(super) fn slots_missing(&self) -> u64 {
        (self.cfg.sockets as u64)
            .saturating_sub(self.report.connecting + self.sched.slots_due.len() as u64)
    }

    pub(super) fn start_attempts(&mut self, now: u64) {
        if self.sched.paused || now < self.sched.backoff_until_ns {
            return;
        }
        let starts = self.starts();
        if starts == Starts::RequestsOnPool {
            return self.pool_starts(now, STARTS_PER_PASS);
        }
        if starts == Starts::FreeSlots {
            self.queue_missing_slots(now);
        }
        let mut n = 0;
        while n < STARTS_PER_PASS
            && now >= self.sched.backoff_until_ns
            && !self.waits_for_slot(starts)
        {
            let due = match self.queued_start(starts) {
                Some(due) if due <= now => due,
                _ => break,
            };
            self.pop_start(starts);
            n += 1;
            self.note_lag(now, due);
            if starts == Starts::Arrivals && self.report.connecting >= self.cfg.sockets as u64 {
                self.report.stats.counts.client_cap_drops += 1;
            } else {
                let role = if starts == Starts::Clients {
                    Role::Client
                } else {
                    Role::Attempt
                };
                self.start_attempt(due, now, role);
            }
        }
        if starts == Starts::FreeSlots {
            self.drop_surplus_slots();
        }
    }

    /// Slots with no due time yet (start, Resume, a larger D) start spread over T.
    pub(super) fn queue_missing_slots(&mut self, now: u64) {
        let missing = self.slots_missing();
        if let Some(step) = ((self.cfg.timeout_s * 1e9) as u64).checked_div(missing) {
            for k in 0..missing {
                self.sched.slots_due.push(Reverse(now + k * step));
            }
        }
    }

    /// A smaller D: drop the latest due times beyond the free slots.
    pub(super) fn drop_surplus_slots(&mut self) {
        let d = self.cfg.sockets as u64;
        let keep = (d - self.report.connecting.min(d)) as usize;
        if self.sched.slots_due.len() > keep {
            let mut v = std::mem::take(&mut self.sched.slots_due).into_sorted_vec();
            // Sorted by Reverse: the latest times come first.
            v.drain(..v.len() - keep);
            self.sched.slots_due = v.into_iter().collect();
        }
    }

    /// When the schedule's next arrival is due, ns.
    pub(super) fn next_due_ns(&self) -> Option<u64> {
        self.sched.schedule.next_due().map(|due| (due * 1e9) as u64)
    }

    pub(super) fn note_lag(&mut self, now: u64, due: u64) {
        let lag_us = now.saturating_sub(due) / 1000;
        self.report.stats.counts.scheduled += 1;
        self.report.stats.counts.lag_us_sum += lag_us;
        self.report.stats.lag_us_max = self.report.stats.lag_us_max.max(lag_us);
    }

    /// Records when an sclient slot became free (flat out only; scheduled modes have arrivals).
    pub(super) fn slot_freed(&mut self, idx: usize, due: u64) {
        if self.starts() == Starts::FreeSlots && self.slab[idx].role == Role::Attempt {
            self.sched.slots_due.push(Reverse(due));
        }
    }

    pub(super) fn closed_target(&self) -> u32 {
        if self.cfg.mode == Mode::Closed && !self.sched.paused {
            self.cfg.clients
        } else {
            0
        }
    }

    /// A client's request ended: it goes again at `at`, or retires if there are too many.
    pub(super) fn client_done(&mut self, at: u64) {
        if self.sched.clients_alive > self.closed_target() {
            self.sched.clients_alive -= 1;
        } else {
            self.sched.wakes.push(Reverse(at));
        }
    }

    /// Starts clients up to the target, all at `now`.
    pub(super) fn spawn_clients(&mut self, now: u64) {
        while self.sched.clients_alive < self.closed_target() {
            self.sched.clients_alive += 1;
            self.sched.wakes.push(Reverse(now));
        }
    }

    /// Thinking clients beyond the target retire at once (those thinking on a kept-alive
    /// connection close it); busy ones when their request ends.
    pub(super) fn retire_idle_clients(&mut self, now: u64) {
        while self.sched.clients_alive > self.closed_target() && self.sched.wakes.pop().is_some() {
            self.sched.clients_alive -= 1;
        }
        for idx in 0..self.slab.len() {
            if self.sched.clients_alive <= self.closed_target() {
                break;
            }
            let c = &self.slab[idx];
            if c.phase == Phase::Idle && c.role == Role::Client {
                // Its close retires the client (`client_done`: over the target).
                self.finish(idx, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::protocol::{Control, LoadSettings, WorkerConfig};
    use crate::sys::client_io::EventFd;
    use std::sync::Arc;

    fn engine(mode: Mode, connections: u32) -> Engine {
        let cfg = WorkerConfig {
            mode,
            clients: 4,
            connections,
            rate: Some(100.0),
            keepalive: true,
            requests_per_conn: 1_000_000,
            ..WorkerConfig::for_test("127.0.0.1:9".parse().unwrap())
        };
        let (_tx, rx) = crossbeam_channel::unbounded();
        Engine::new(cfg, rx, Arc::new(EventFd::new().unwrap()), vec![]).unwrap()
    }

    fn switch(e: &mut Engine, mode: Mode) {
        let s = LoadSettings {
            mode,
            ..LoadSettings::of(&e.cfg)
        };
        e.apply(Control::Load(s), 0, 0.0).unwrap();
    }

    #[test]
    fn read_batching_follows_a_live_change_of_mode() {
        // Started closed it batches; switched to an S-Client it must not nap before its
        // connects and timeouts.
        let mut e = engine(Mode::Closed, 0);
        assert!(e.batching().is_some());
        switch(&mut e, Mode::Sclient);
        assert!(e.batching().is_none());
        // Started open (a pool, a schedule of its own) it does not; switched closed it does.
        let mut e = engine(Mode::Open, 4);
        assert!(e.batching().is_none());
        switch(&mut e, Mode::Closed);
        assert!(e.batching().is_some());
    }
}
