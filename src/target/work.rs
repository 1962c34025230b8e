//! The built-in server's CPU work (`service = "cpu"`, the dynamic endpoints' work): a fixed
//! amount of user-mode computation per request, calibrated once per server to the time asked.
//!
//! Why not spin on a CPU clock until the time has passed: reading CLOCK_THREAD_CPUTIME_ID is a
//! system call, which put much of the "application" work in system time, and without
//! CONFIG_IRQ_TIME_ACCOUNTING the softirq time that interrupts a thread is charged to that
//! thread's clock, so such a loop absorbed the packets the server received instead of losing
//! CPU to them as real work does. Here the work is a count of iterations of a dependent
//! multiply-rotate chain (no memory traffic, no system call), and an interrupt makes a request
//! take longer, as it would an application's.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use std::time::Instant;

/// One calibration: how long an iteration takes on this core, and how close the calibrated
/// work came to the time asked (what run.log records).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Nanoseconds per iteration, the fastest of the timed runs (an interruption only adds).
    pub ns_per_iter: f64,
    /// The time the check asked for, µs (the service time; 1 ms without one).
    pub check_us: f64,
    /// The calibrated work for `check_us`, timed by the thread's CPU clock (read before and
    /// after, never inside) over `check_runs` runs: the median's error and the 90th
    /// percentile's, in % of `check_us`. CPU time, so a preemption does not count; an
    /// interrupt does, as it does for every request's work.
    pub check_runs: u32,
    pub error_p50_pct: f64,
    pub error_p90_pct: f64,
    /// The calibrating thread's CPU time over the wall time it took: near 1 when the core was
    /// idle (otherwise something else ran on it and the check's error says how much it shows).
    pub cpu_share: f64,
}

impl Calibration {
    /// The line run.log records.
    pub fn describe(&self) -> String {
        format!(
            "service work calibrated: {:.3} ns per iteration; {} runs of {:.0} us of work took {:+.1} % (median) / {:+.1} % (p90) of that; the calibrating thread had {:.0} % of its core",
            self.ns_per_iter,
            self.check_runs,
            self.check_us,
            self.error_p50_pct,
            self.error_p90_pct,
            self.cpu_share * 100.0
        )
    }
}

/// This process's speed of the work, set once (by calibrating, or given by the server that
/// calibrated: its prefork manager and CGI children do the same work on the same CPUs).
static NS_PER_ITER: OnceLock<f64> = OnceLock::new();

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// `iters` rounds of the chain: each depends on the last, so the CPU cannot overlap them and
/// the time per round is fixed by the core, not by memory or the compiler.
#[inline(never)]
pub fn spin(iters: u64) -> u64 {
    let mut x = SEED;
    for _ in 0..iters {
        x = x.rotate_left(5).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5851_f42d;
    }
    std::hint::black_box(x)
}

/// Iterations per timed run of the calibration: ~20-40 us, short enough that most runs see no
/// interruption at all.
const CHUNK: u64 = 20_000;
const CHUNK_RUNS: usize = 40;
const CHECK_RUNS: usize = 20;

/// Measures the work's speed on the calling thread's core (the fastest of short runs timed by
/// the wall clock: an interruption only adds), then checks it against `check_us` of work.
/// Takes ~CHECK_RUNS x check_us (20 ms at 1 ms). Uses no other thread.
pub fn calibrate(check_us: u64) -> Calibration {
    let check_us = if check_us == 0 {
        1000
    } else {
        check_us.min(10_000)
    };
    let cpu0 = crate::sys::server_io::thread_cpu_ns();
    let wall0 = Instant::now();
    spin(CHUNK * 5); // warm up (frequency, caches)
    let mut best = f64::INFINITY;
    for _ in 0..CHUNK_RUNS {
        let t = Instant::now();
        spin(CHUNK);
        best = best.min(t.elapsed().as_nanos() as f64 / CHUNK as f64);
    }
    let ns_per_iter = best.max(1e-3);
    let iters = iters_for(check_us * 1000, ns_per_iter);
    let mut errors: Vec<f64> = (0..CHECK_RUNS)
        .map(|_| {
            let t = crate::sys::server_io::thread_cpu_ns();
            spin(iters);
            let used = crate::sys::server_io::thread_cpu_ns().saturating_sub(t);
            (used as f64 / (check_us as f64 * 1000.0) - 1.0) * 100.0
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    let wall = wall0.elapsed().as_nanos() as f64;
    let cpu = crate::sys::server_io::thread_cpu_ns().saturating_sub(cpu0) as f64;
    Calibration {
        ns_per_iter,
        check_us: check_us as f64,
        check_runs: CHECK_RUNS as u32,
        error_p50_pct: errors[CHECK_RUNS / 2],
        error_p90_pct: errors[CHECK_RUNS * 9 / 10],
        cpu_share: (cpu / wall).min(1.0),
    }
}

fn iters_for(ns: u64, ns_per_iter: f64) -> u64 {
    (ns as f64 / ns_per_iter).round() as u64
}

/// Makes this process's work run at `ns_per_iter` (the first call wins).
pub fn set_speed(ns_per_iter: f64) {
    let _ = NS_PER_ITER.set(ns_per_iter);
}

/// This process's speed: as set, or calibrated now (~1 ms) on first use.
pub fn speed() -> f64 {
    *NS_PER_ITER.get_or_init(|| calibrate(100).ns_per_iter)
}

/// Does `ns` of CPU work (as calibrated) on the calling thread.
pub fn burn(ns: u64) {
    if ns > 0 {
        spin(iters_for(ns, speed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_a_count_and_its_calibration_says_its_error() {
        let c = calibrate(500);
        assert!(c.ns_per_iter > 0.01 && c.ns_per_iter < 100.0, "{c:?}");
        assert_eq!(c.check_runs, CHECK_RUNS as u32);
        assert!(c.error_p90_pct >= c.error_p50_pct);
        assert!(c.describe().starts_with("service work calibrated"));
        // The same count is the same result: the work cannot be skipped.
        assert_eq!(spin(1000), spin(1000));
        assert_ne!(spin(1000), spin(1001));
        assert_eq!(iters_for(1_000_000, 2.0), 500_000);
    }
}
