//! How early the delay router arms its timer before a departure. A timer wake-up lands late by
//! whatever the machine adds (tens of microseconds on bare metal, hundreds on a busy or
//! virtual one); the router arms that much early and polls the rest of the way, so
//! departures keep their spacing. The lead follows the recent wake-ups' 99th percentile.

/// Lead bounds: at least this much, so polling covers the usual wake-up cost ...
pub const MIN_LEAD_NS: u64 = 20_000;
/// ... and at most this much: the router polls for the lead before every departure, so a
/// long lead on a machine with slow wake-ups would keep its core busy (and a SCHED_FIFO task
/// busy for 95 % of a second is throttled by the kernel for the rest, which costs far more
/// than a late wake-up).
pub const MAX_LEAD_NS: u64 = 50_000;
/// Wake-ups remembered, and how often the percentile is recomputed.
const WINDOW: usize = 256;
const REFRESH: usize = 32;

/// Tracks timer lateness and gives the lead to arm with.
#[derive(Debug, Clone)]
pub struct WakeLead {
    late: Vec<u64>,
    /// Reused for the percentile, so the router's loop allocates nothing.
    scratch: Vec<u64>,
    next: usize,
    since_refresh: usize,
    lead: u64,
}

impl Default for WakeLead {
    fn default() -> Self {
        WakeLead {
            late: Vec::with_capacity(WINDOW),
            scratch: Vec::with_capacity(WINDOW),
            next: 0,
            since_refresh: 0,
            lead: MIN_LEAD_NS,
        }
    }
}

impl WakeLead {
    /// A timer armed for `armed_ns` woke us at `woke_ns`.
    pub fn record(&mut self, armed_ns: u64, woke_ns: u64) {
        let late = woke_ns.saturating_sub(armed_ns);
        if self.late.len() < WINDOW {
            self.late.push(late);
        } else {
            self.late[self.next] = late;
        }
        self.next = (self.next + 1) % WINDOW;
        self.since_refresh += 1;
        if self.since_refresh >= REFRESH {
            self.since_refresh = 0;
            self.scratch.clear();
            self.scratch.extend_from_slice(&self.late);
            let k = (self.scratch.len() - 1) * 99 / 100;
            let p99 = *self.scratch.select_nth_unstable(k).1;
            // A little margin above the percentile: polling a few us is cheap, a late
            // departure is not.
            self.lead = (p99 + p99 / 4).clamp(MIN_LEAD_NS, MAX_LEAD_NS);
        }
    }

    /// How long before a departure to arm the timer.
    pub fn lead_ns(&self) -> u64 {
        self.lead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_the_minimum() {
        assert_eq!(WakeLead::default().lead_ns(), MIN_LEAD_NS);
    }

    #[test]
    fn follows_the_99th_percentile_of_lateness_with_a_margin() {
        let mut w = WakeLead::default();
        // 99 % of wake-ups 24 us late, 1 % 36 us late: p99 (index 252 of 256) is 36 us
        // only if more than 1 % are that late; here it is 24 us.
        for i in 0..WINDOW {
            let late = if i % 100 == 0 { 36_000 } else { 24_000 };
            w.record(0, late);
        }
        assert_eq!(w.lead_ns(), 30_000);
        // Now 5 % are 36 us late: the lead covers them.
        for i in 0..WINDOW {
            let late = if i % 20 == 0 { 36_000 } else { 24_000 };
            w.record(0, late);
        }
        assert_eq!(w.lead_ns(), 45_000);
    }

    #[test]
    fn stays_within_bounds() {
        let mut w = WakeLead::default();
        for _ in 0..WINDOW {
            w.record(1_000, 1_000);
        }
        assert_eq!(w.lead_ns(), MIN_LEAD_NS, "punctual timers: the floor");
        for _ in 0..WINDOW {
            w.record(0, 50_000_000);
        }
        assert_eq!(w.lead_ns(), MAX_LEAD_NS, "a stalling machine: the cap");
    }

    #[test]
    fn forgets_old_wake_ups() {
        let mut w = WakeLead::default();
        for _ in 0..WINDOW {
            w.record(0, 500_000);
        }
        assert_eq!(w.lead_ns(), MAX_LEAD_NS);
        for _ in 0..WINDOW {
            w.record(0, 30_000);
        }
        assert_eq!(w.lead_ns(), 37_500);
    }
}
