//! Folds the workers' stats deltas into per-sample rates and per-point totals, and decides
//! whether the client (not the server) was the bottleneck (seed 000 §4.3).

use crate::load::protocol::StatsDelta;
use crate::metrics::hist::{new_hist, HistDelta};
use hdrhistogram::Histogram;

/// Counter sums over some span of time, with merged latency histograms.
#[derive(Debug, Clone)]
pub struct ClientTotals {
    pub attempts: u64,
    pub established: u64,
    pub connect_timeouts: u64,
    pub refused: u64,
    pub resets: u64,
    pub addr_not_avail: u64,
    pub out_of_fds: u64,
    pub other_errors: u64,
    pub client_cap_drops: u64,
    pub responses: u64,
    pub responses_2xx: u64,
    pub responses_non2xx: u64,
    pub response_timeouts: u64,
    /// Answers that were not HTTP, or connections closed before the response was complete.
    pub bad_responses: u64,
    pub bytes_in: u64,
    pub scheduled: u64,
    pub lag_us_sum: u64,
    pub lag_us_max: u64,
    pub cpu_s: f64,
    /// Highest CPU share of one worker over one of its intervals (0-1 of a core).
    pub worker_cpu_max: f64,
    /// The latest scheduled rate of each worker (attempts/s).
    pub target_by_worker: std::collections::BTreeMap<u32, f64>,
    /// Seconds of each worker's own clock these sums cover (the sum of its report intervals).
    pub span_by_worker: std::collections::BTreeMap<u32, f64>,
    /// Connections open at each worker at its latest report.
    pub in_flight_by_worker: std::collections::BTreeMap<u32, u64>,
    /// Connections open at all workers (sum of their latest reports).
    pub in_flight: u64,
    pub connect: Histogram<u64>,
    pub ttfb: Histogram<u64>,
    pub total: Histogram<u64>,
}

impl Default for ClientTotals {
    fn default() -> Self {
        ClientTotals {
            attempts: 0,
            established: 0,
            connect_timeouts: 0,
            refused: 0,
            resets: 0,
            addr_not_avail: 0,
            out_of_fds: 0,
            other_errors: 0,
            client_cap_drops: 0,
            responses: 0,
            responses_2xx: 0,
            responses_non2xx: 0,
            response_timeouts: 0,
            bad_responses: 0,
            bytes_in: 0,
            scheduled: 0,
            lag_us_sum: 0,
            lag_us_max: 0,
            cpu_s: 0.0,
            worker_cpu_max: 0.0,
            target_by_worker: Default::default(),
            span_by_worker: Default::default(),
            in_flight_by_worker: Default::default(),
            in_flight: 0,
            connect: new_hist(),
            ttfb: new_hist(),
            total: new_hist(),
        }
    }
}

impl ClientTotals {
    pub fn add(&mut self, d: &StatsDelta) {
        self.attempts += d.attempts;
        self.established += d.established;
        self.connect_timeouts += d.connect_timeouts;
        self.refused += d.refused;
        self.resets += d.resets;
        self.addr_not_avail += d.addr_not_avail;
        self.out_of_fds += d.out_of_fds;
        self.other_errors += d.other_errors;
        self.client_cap_drops += d.client_cap_drops;
        self.responses += d.responses;
        self.responses_2xx += d.responses_2xx;
        self.responses_non2xx += d.responses_non2xx;
        self.response_timeouts += d.response_timeouts;
        self.bad_responses += d.bad_responses;
        self.bytes_in += d.bytes_in;
        self.scheduled += d.scheduled;
        self.lag_us_sum += d.lag_us_sum;
        self.lag_us_max = self.lag_us_max.max(d.lag_us_max);
        let cpu = d.cpu_user_s + d.cpu_sys_s;
        self.cpu_s += cpu;
        if d.interval_s > 0.05 {
            self.worker_cpu_max = self.worker_cpu_max.max(cpu / d.interval_s);
        }
        self.target_by_worker.insert(d.worker, d.target_rate);
        *self.span_by_worker.entry(d.worker).or_default() += d.interval_s;
        self.in_flight_by_worker
            .insert(d.worker, d.connecting + d.active);
        self.in_flight = self.in_flight_by_worker.values().sum();
        merge(&d.connect_us, &mut self.connect);
        merge(&d.ttfb_us, &mut self.ttfb);
        merge(&d.total_us, &mut self.total);
    }

    /// The rate all workers' schedules aim at now; None before any worker reported.
    pub fn target_rate(&self) -> Option<f64> {
        (!self.target_by_worker.is_empty()).then(|| self.target_by_worker.values().sum())
    }

    /// All errors a person would count as failed requests.
    pub fn errors(&self) -> u64 {
        self.connect_timeouts
            + self.refused
            + self.resets
            + self.addr_not_avail
            + self.out_of_fds
            + self.other_errors
            + self.response_timeouts
            + self.bad_responses
    }

    /// Why the client, not the server, may have limited this measurement; None if it did not.
    pub fn client_bound(&self) -> Option<String> {
        let mean_lag_ms = if self.scheduled > 0 {
            self.lag_us_sum as f64 / self.scheduled as f64 / 1000.0
        } else {
            0.0
        };
        if mean_lag_ms > 5.0 {
            return Some(format!(
                "attempts started {mean_lag_ms:.1} ms late on average"
            ));
        }
        if self.worker_cpu_max > 0.9 {
            return Some(format!(
                "a worker used {:.0}% of a core",
                self.worker_cpu_max * 100.0
            ));
        }
        if self.client_cap_drops > 0 {
            return Some(format!(
                "{} arrivals found all D sockets busy (raise load.sockets)",
                self.client_cap_drops
            ));
        }
        if self.addr_not_avail > 0 {
            return Some("client ran out of ephemeral ports".into());
        }
        if self.out_of_fds > 0 {
            return Some("client ran out of file descriptors".into());
        }
        None
    }

    /// Quantile in milliseconds, None when nothing was recorded.
    pub fn q_ms(h: &Histogram<u64>, q: f64) -> Option<f64> {
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
    }

    /// The time the workers' reports cover: the mean over workers of their summed intervals.
    /// None before any report.
    pub fn covered_s(&self) -> Option<f64> {
        let n = self.span_by_worker.len();
        let total: f64 = self.span_by_worker.values().sum();
        (n > 0 && total > 0.0).then(|| total / n as f64)
    }

    /// The store columns for a sample of `dt` seconds of the controller's clock. Rates divide
    /// by the time the workers' reports cover, not by `dt`: a sample that happens to fold one
    /// or three 100 ms reports instead of two must not read as half or 1.5 times the rate.
    pub fn columns(&self, dt: f64) -> Vec<(&'static str, Option<f64>)> {
        use super::columns::*;
        let dt = self.covered_s().unwrap_or(dt);
        let rate = |n: u64| Some(n as f64 / dt);
        vec![
            (ATTEMPTS, rate(self.attempts)),
            (ESTABLISHED, rate(self.established)),
            (RESPONSES, rate(self.responses)),
            (ERRORS, rate(self.errors())),
            (CONNECT_TIMEOUTS, rate(self.connect_timeouts)),
            (REFUSED, rate(self.refused)),
            (RESETS, rate(self.resets)),
            (TARGET_RATE, self.target_rate()),
            (CONNECT_P50, Self::q_ms(&self.connect, 0.5)),
            (CONNECT_P90, Self::q_ms(&self.connect, 0.9)),
            (CONNECT_P99, Self::q_ms(&self.connect, 0.99)),
            (TOTAL_P50, Self::q_ms(&self.total, 0.5)),
            (TOTAL_P90, Self::q_ms(&self.total, 0.9)),
            (TOTAL_P99, Self::q_ms(&self.total, 0.99)),
            (IN_FLIGHT, Some(self.in_flight as f64)),
            (LAG_MAX, Some(self.lag_us_max as f64 / 1000.0)),
            (WORKER_CPU, Some(self.cpu_s / dt * 100.0)),
        ]
    }
}

fn merge(d: &HistDelta, into: &mut Histogram<u64>) {
    if !d.is_empty() {
        d.merge_into(into);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(attempts: u64, lag_us: u64, cpu: f64) -> StatsDelta {
        StatsDelta {
            interval_s: 0.1,
            attempts,
            scheduled: attempts,
            lag_us_sum: lag_us * attempts,
            lag_us_max: lag_us,
            cpu_user_s: cpu,
            responses: attempts / 2,
            connect_timeouts: 3,
            ..Default::default()
        }
    }

    #[test]
    fn rates_come_from_the_sample_length() {
        let mut t = ClientTotals::default();
        t.add(&delta(100, 10, 0.01));
        t.add(&delta(100, 10, 0.01));
        let cols = t.columns(0.2);
        let get = |n: &str| cols.iter().find(|c| c.0 == n).unwrap().1;
        assert_eq!(get("attempts_per_s"), Some(1000.0));
        assert_eq!(get("responses_per_s"), Some(500.0));
        assert_eq!(get("errors_per_s"), Some(30.0));
        assert_eq!(get("connect_p50_ms"), None);
        assert!(t.client_bound().is_none());
    }

    #[test]
    fn a_sample_folding_three_reports_is_not_read_as_one_and_a_half_times_the_rate() {
        // Two workers at 1,000/s each, reporting every 100 ms; this 200 ms sample caught three
        // reports of worker 0 and one of worker 1.
        let mut t = ClientTotals::default();
        for w in [0, 0, 0, 1] {
            let mut d = delta(100, 10, 0.01);
            d.worker = w;
            d.connecting = 5;
            t.add(&d);
        }
        let cols = t.columns(0.2);
        let get = |n: &str| cols.iter().find(|c| c.0 == n).unwrap().1.unwrap();
        // 400 attempts over (0.3 s + 0.1 s) / 2 workers = 0.2 s of each worker's time.
        assert_eq!(get("attempts_per_s"), 2000.0);
        assert_eq!(
            get("in_flight"),
            10.0,
            "open connections add up over workers"
        );
    }

    #[test]
    fn late_starts_and_busy_workers_flag_client_bound() {
        let mut t = ClientTotals::default();
        t.add(&delta(100, 9_000, 0.01));
        assert!(t.client_bound().unwrap().contains("late"));
        let mut t = ClientTotals::default();
        t.add(&delta(100, 10, 0.095));
        assert!(t.client_bound().unwrap().contains("core"));
    }
}
