//! When the delay router wakes and what it sends when it does. A timer wake-up costs CPU
//! (15-25 us on a virtual machine, where the timer interrupt is emulated; a few us on bare
//! metal) and lands late by tens of microseconds (hundreds without SCHED_FIFO on a busy
//! host). So the router neither wakes once per frame nor busy-polls up to each departure:
//!
//! - Departures within a window of `2 * half` go out together in one wake-up, in the middle
//!   between the first and the last: each frame leaves at most `half` early or late. `half` is what the error goal
//!   leaves after the timer's own spread (p99 minus p50 lateness), so the delay error stays
//!   within the goal while the wake-ups per second fall.
//! - The timer is armed early by the typical (p50) lateness instead of polling through it; a
//!   wake-up that comes earlier than that polls the few remaining microseconds. A full window
//!   (a dense stream, where a late wake-up would make every frame of it late) is woken for a
//!   p99 lateness ahead of its first frame instead, and the router polls from there.
//! - While the next departure is near, the router leaves new frames in the receive rings
//!   (their kernel timestamps keep their delays exact) and reads them on that departure's
//!   wake-up, as far as the shortest path delay allows.
//!
//! Nothing here assumes SCHED_FIFO: without it the lateness spread is wider, so the window
//! shrinks (to none when the spread alone exceeds the goal) and the error is what the
//! machine gives; the router reports it.

/// The router's delay-error goal (p99 of realised minus configured delay).
pub const ERROR_GOAL_NS: u64 = 100_000;
/// The widest half-window, whatever the goal leaves.
pub const MAX_HALF_WINDOW_NS: u64 = 80_000;
/// Frames sent ahead of their time in one batch: a batch leaves in one sendmmsg whose
/// frames go out one after the other (1-2 us each), so a long one would make its last frames
/// late; at rates where windows hold more, the router is awake between frames anyway.
pub const MAX_BATCH: usize = 16;
/// Bounds of the lead before a full window (see `WakeStats::dense_lead_ns`): the cap keeps
/// polling well under the kernel's limit for a SCHED_FIFO task (95 % of each second).
pub const MIN_DENSE_LEAD_NS: u64 = 20_000;
pub const MAX_DENSE_LEAD_NS: u64 = 50_000;
/// Shorter sleeps are polled instead: a wake-up costs about as much CPU as polling this
/// long, and every sleep risks the host taking the CPU for longer (on a virtual machine),
/// so a router whose departures come this close together stays awake and sends each on time.
pub const MIN_SLEEP_NS: u64 = 50_000;
/// The most the timer is armed early: beyond this a wake-up is late because the machine is
/// busy, not because of the timer, and arming earlier would only add polling.
pub const MAX_COMP_NS: u64 = 200_000;
/// Unread frames wait at most this long in a receive ring (4,096 slots: ~2,900 frames at
/// 700,000 frames/s, room to spare) ...
pub const MAX_RX_DEFER_NS: u64 = 2_000_000;
/// ... and only when every path delays frames at least this long.
pub const MIN_LATENCY_TO_DEFER_NS: u64 = 1_000_000;
/// Wake-ups remembered, and how often the percentiles are recomputed.
const WINDOW: usize = 256;
const REFRESH: usize = 32;

/// Tracks timer lateness (armed time to the moment the router runs).
#[derive(Debug, Clone)]
pub struct WakeStats {
    late: Vec<u64>,
    /// Reused for the percentiles, so the router's loop allocates nothing.
    scratch: Vec<u64>,
    next: usize,
    since_refresh: usize,
    p50: u64,
    p99: u64,
}

impl Default for WakeStats {
    fn default() -> Self {
        WakeStats {
            late: Vec::with_capacity(WINDOW),
            scratch: Vec::with_capacity(WINDOW),
            next: 0,
            since_refresh: 0,
            p50: 0,
            p99: 0,
        }
    }
}

impl WakeStats {
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
            let n = self.scratch.len() - 1;
            self.p99 = *self.scratch.select_nth_unstable(n * 99 / 100).1;
            self.p50 = *self.scratch.select_nth_unstable(n / 2).1;
        }
    }

    /// How early to arm the timer: the typical lateness.
    pub fn comp_ns(&self) -> u64 {
        self.p50.min(MAX_COMP_NS)
    }

    /// How early to arm the timer for a full window (a dense stream, where every frame of
    /// the window would wait for a late wake-up): the p99 lateness with a quarter's margin,
    /// within [`MIN_DENSE_LEAD_NS`, `MAX_DENSE_LEAD_NS`]; the router polls the rest.
    pub fn dense_lead_ns(&self) -> u64 {
        (self.p99 + self.p99 / 4).clamp(MIN_DENSE_LEAD_NS, MAX_DENSE_LEAD_NS)
    }

    /// Half the window of departures sent together: the error goal (with a tenth kept as
    /// margin) less the timer's spread around its typical lateness.
    pub fn half_window_ns(&self) -> u64 {
        let spread = self.p99 - self.p50;
        (ERROR_GOAL_NS * 9 / 10)
            .saturating_sub(spread)
            .min(MAX_HALF_WINDOW_NS)
    }
}

/// What the router does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send what is due now (departures up to `now + half`).
    Send,
    /// The send time is closer than the timer's lateness: poll without sleeping.
    Poll,
    /// Sleep with the timer armed at this time (`u64::MAX`: nothing held).
    Sleep(u64),
}

/// The decision at `now` for the next window of departures: `(first, last)`, the earliest
/// held departure and the last within `2 * half` of it. They go out together at the window's
/// middle, so none leaves more than half the window early or late (a lone frame leaves on
/// time); the timer is armed earlier by the typical lateness `comp`, and a sleep shorter
/// than [`MIN_SLEEP_NS`] is polled through instead. A departure already due goes at once
/// (after a planned wake-up the caller sends what is due within `half` of now, so nothing
/// leaves more than `half` early; awake, only what is due).
pub fn next_step(now: u64, window: Option<(u64, u64)>, comp: u64) -> Next {
    let Some((first, last)) = window else {
        return Next::Sleep(u64::MAX);
    };
    let send_at = first + (last - first) / 2;
    if first <= now {
        // Due already (a busy router, or a wake-up past the first): no waiting for the middle.
        Next::Send
    } else if send_at.saturating_sub(comp) < now + MIN_SLEEP_NS {
        Next::Poll
    } else {
        Next::Sleep(send_at - comp)
    }
}

/// Whether arriving frames may stay unread in the rings while the router sleeps `sleep_ns`
/// until its next departure, given the shortest delay `min_latency_ns` a frame can get on
/// any path: only when every path is slower than [`MIN_LATENCY_TO_DEFER_NS`], and for no
/// longer than half that delay or [`MAX_RX_DEFER_NS`] (so a frame read late still has its
/// departure ahead). A longer sleep waits for arrivals as they come: reading them early
/// would need a wake-up of its own.
pub fn may_defer_rx(min_latency_ns: u64, sleep_ns: u64) -> bool {
    min_latency_ns >= MIN_LATENCY_TO_DEFER_NS
        && sleep_ns <= (min_latency_ns / 2).min(MAX_RX_DEFER_NS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(late: impl Fn(usize) -> u64) -> WakeStats {
        let mut w = WakeStats::default();
        for i in 0..WINDOW {
            w.record(1_000, 1_000 + late(i));
        }
        w
    }

    #[test]
    fn starts_with_no_compensation_and_the_widest_window() {
        let w = WakeStats::default();
        assert_eq!((w.comp_ns(), w.half_window_ns()), (0, MAX_HALF_WINDOW_NS));
    }

    #[test]
    fn punctual_timers_batch_the_widest_window() {
        let w = fed(|_| 5_000);
        assert_eq!(w.comp_ns(), 5_000);
        assert_eq!(w.half_window_ns(), MAX_HALF_WINDOW_NS);
    }

    #[test]
    fn the_window_shrinks_by_the_timers_spread() {
        // p50 20 us; 5 % of wake-ups 60 us late, so p99 is 60 us: spread 40 us, and the goal
        // (90 us with margin) leaves 50 us.
        let w = fed(|i| if i % 20 == 0 { 60_000 } else { 20_000 });
        assert_eq!(w.comp_ns(), 20_000);
        assert_eq!(w.half_window_ns(), 50_000);
        // A spread past the goal (a busy host without SCHED_FIFO): no batching at all.
        let w = fed(|i| if i % 10 == 0 { 900_000 } else { 30_000 });
        assert_eq!(w.half_window_ns(), 0);
        assert_eq!(w.comp_ns(), 30_000);
    }

    #[test]
    fn a_dense_window_is_woken_for_a_p99_lateness_ahead_within_bounds() {
        let w = fed(|i| if i % 20 == 0 { 36_000 } else { 20_000 });
        assert_eq!(w.dense_lead_ns(), 45_000);
        assert_eq!(fed(|_| 1_000).dense_lead_ns(), MIN_DENSE_LEAD_NS);
        assert_eq!(
            fed(|_| 900_000).dense_lead_ns(),
            MAX_DENSE_LEAD_NS,
            "a busy host: polling stays bounded"
        );
    }

    #[test]
    fn compensation_is_capped_and_old_wake_ups_are_forgotten() {
        let mut w = fed(|_| 5_000_000);
        assert_eq!(w.comp_ns(), MAX_COMP_NS);
        for _ in 0..WINDOW {
            w.record(0, 30_000);
        }
        assert_eq!(
            (w.comp_ns(), w.half_window_ns()),
            (30_000, MAX_HALF_WINDOW_NS)
        );
    }

    #[test]
    fn steps_send_at_the_windows_middle() {
        const US: u64 = 1_000;
        let now = 1_000_000;
        assert_eq!(next_step(now, None, 0), Next::Sleep(u64::MAX));
        assert_eq!(next_step(now, Some((now - US, now - US)), 0), Next::Send);
        // Overdue: out now, whatever follows it.
        assert_eq!(
            next_step(now, Some((now - US, now + 100 * US)), 0),
            Next::Send
        );
        // A lone frame: on time, armed early by the typical lateness.
        assert_eq!(
            next_step(now, Some((now + 300 * US, now + 300 * US)), 20 * US),
            Next::Sleep(now + 280 * US)
        );
        // Two 100 us apart: between them.
        assert_eq!(
            next_step(now, Some((now + 300 * US, now + 400 * US)), 20 * US),
            Next::Sleep(now + 330 * US)
        );
        // Too close for a sleep to pay: poll.
        assert_eq!(
            next_step(now, Some((now + 10 * US, now + 10 * US)), 20 * US),
            Next::Poll
        );
        assert_eq!(
            next_step(now, Some((now + 69 * US, now + 69 * US)), 20 * US),
            Next::Poll
        );
        assert_eq!(
            next_step(now, Some((now + 70 * US, now + 70 * US)), 20 * US),
            Next::Sleep(now + 50 * US)
        );
    }

    #[test]
    fn a_uniform_stream_needs_one_wake_per_window() {
        // 10,000 frames/s (100 us apart) with a 60 us half-window: every other departure
        // needs a wake-up, and none leaves more than 50 us off its time.
        const US: u64 = 1_000;
        let half = 60 * US;
        let departs: Vec<u64> = (1..=1000).map(|i| i * 100 * US).collect();
        let (mut now, mut i, mut wakes, mut worst) = (0u64, 0usize, 0, 0i64);
        while i < departs.len() {
            let last = *departs[i..]
                .iter()
                .take_while(|&&d| d <= departs[i] + 2 * half)
                .last()
                .unwrap();
            match next_step(now, Some((departs[i], last)), 0) {
                Next::Send => {
                    while i < departs.len() && departs[i] <= now + half {
                        worst = worst.max((now as i64 - departs[i] as i64).abs());
                        i += 1;
                    }
                }
                Next::Poll => unreachable!("no lateness: never polls"),
                Next::Sleep(t) => {
                    now = t;
                    wakes += 1;
                }
            }
        }
        assert_eq!(wakes, 500);
        assert_eq!(worst, 50 * US as i64);
    }

    #[test]
    fn arrivals_wait_only_on_slow_paths_and_until_a_near_departure() {
        const MS: u64 = 1_000_000;
        assert!(may_defer_rx(5 * MS, 100_000));
        assert!(may_defer_rx(5 * MS, MAX_RX_DEFER_NS));
        assert!(
            !may_defer_rx(5 * MS, MAX_RX_DEFER_NS + 1),
            "a far departure"
        );
        assert!(may_defer_rx(MS + MS / 2, 750_000));
        assert!(
            !may_defer_rx(MS + MS / 2, 750_001),
            "half the shortest delay"
        );
        assert!(!may_defer_rx(MS / 2, 10_000), "a fast path reads at once");
    }
}
