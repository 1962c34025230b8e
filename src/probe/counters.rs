//! Counter maths: turns two readings of a monotonically increasing kernel counter into a
//! per-second rate, telling a 32-bit wrap (kept) from a reset (a new namespace, a restarted
//! server: the sample is dropped and the new value becomes the baseline).

/// How wide the kernel's counter is; decides whether a decrease can be a wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// `unsigned int` counters, e.g. /proc/softirqs.
    U32,
    /// `unsigned long` / u64 counters: /proc/stat, SNMP MIBs on 64-bit kernels.
    U64,
}

/// The increase from `prev` to `cur`, or None when the counter was reset.
///
/// A 32-bit counter that decreases is taken as one wrap when the wrapped distance is below
/// 2^31 (no counter we read moves that much in one interval); otherwise it is a reset.
pub fn delta(prev: u64, cur: u64, width: Width) -> Option<u64> {
    if cur >= prev {
        return Some(cur - prev);
    }
    match width {
        Width::U64 => None,
        Width::U32 => {
            if prev > u32::MAX as u64 || cur > u32::MAX as u64 {
                return None;
            }
            let wrapped = (1u64 << 32) - prev + cur;
            (wrapped < (1u64 << 31)).then_some(wrapped)
        }
    }
}

/// Per-second rate over `dt_s` seconds; None on a reset or a non-positive interval.
pub fn rate(prev: u64, cur: u64, width: Width, dt_s: f64) -> Option<f64> {
    if dt_s <= 0.0 || !dt_s.is_finite() {
        return None;
    }
    delta(prev, cur, width).map(|d| d as f64 / dt_s)
}

/// Like [`rate`] for optional readings (a source may be missing in either sample).
pub fn rate_opt(prev: Option<u64>, cur: Option<u64>, width: Width, dt_s: f64) -> Option<f64> {
    rate(prev?, cur?, width, dt_s)
}

/// `part` as a percentage of `whole`; None when `whole` is zero.
pub fn pct(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| 100.0 * part / whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increase_is_a_rate() {
        assert_eq!(rate(100, 300, Width::U64, 0.5), Some(400.0));
        assert_eq!(rate(7, 7, Width::U32, 1.0), Some(0.0));
    }

    #[test]
    fn u32_wrap_is_kept() {
        let prev = u32::MAX as u64 - 9;
        assert_eq!(delta(prev, 5, Width::U32), Some(15));
    }

    #[test]
    fn u32_large_decrease_is_a_reset() {
        assert_eq!(delta(1_000_000_000, 1_000, Width::U32), None);
        assert_eq!(delta(1_000, 10, Width::U32), None);
    }

    #[test]
    fn u64_decrease_is_a_reset() {
        assert_eq!(delta(u64::MAX - 1, 3, Width::U64), None);
        assert_eq!(rate(50, 10, Width::U64, 1.0), None);
    }

    #[test]
    fn zero_interval_gives_no_rate() {
        assert_eq!(rate(1, 2, Width::U64, 0.0), None);
        assert_eq!(rate_opt(None, Some(2), Width::U64, 1.0), None);
    }

    #[test]
    fn percent_of_zero_is_none() {
        assert_eq!(pct(1.0, 0.0), None);
        assert_eq!(pct(1.0, 4.0), Some(25.0));
    }
}
