//! Rate maths for the worker: what a configuration offers, how many descriptors it needs, and
//! whether a stats interval says the client (not the server) was the limit (seed 000 §4.3).

use super::protocol::{Mode, StatsDelta, WorkerConfig};

/// The attempt rate a configuration aims at, attempts/s: the schedule's rate when set; D/T for an
/// sclient flat out (each slot makes at least one attempt per T, seed 000 §4.2); for closed
/// clients an upper bound N/think when they think, else 0 (closed load follows the server).
pub fn offered_rate(
    mode: Mode,
    rate: Option<f64>,
    sockets: u32,
    timeout_s: f64,
    clients: u32,
    think_s: f64,
) -> f64 {
    match (mode, rate) {
        (Mode::Closed, _) if think_s > 0.0 => clients as f64 / think_s,
        (Mode::Closed, _) => 0.0,
        (_, Some(r)) => r,
        (_, None) if timeout_s > 0.0 => sockets as f64 / timeout_s,
        (_, None) => 0.0,
    }
}

/// Descriptors a configuration may hold at once: D connecting plus the connections waiting for
/// responses (at most the offered rate x response timeout), or N closed clients; plus slack.
pub fn fds_needed(cfg: &WorkerConfig) -> u64 {
    const SLACK: u64 = 64;
    let conns = match cfg.mode {
        Mode::Closed => cfg.clients as u64,
        _ => {
            let r = offered_rate(cfg.mode, cfg.rate, cfg.sockets, cfg.timeout_s, 0, 0.0);
            cfg.sockets as u64 + (r * cfg.response_timeout_s.max(cfg.timeout_s)).ceil() as u64
        }
    };
    conns + SLACK
}

/// Limits past which a worker's interval measured the client rather than the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientBoundLimits {
    /// Mean lateness of scheduled starts, microseconds.
    pub mean_lag_us: f64,
    /// The worker's CPU (user + system) as a share of one core.
    pub cpu_share: f64,
}

impl Default for ClientBoundLimits {
    fn default() -> Self {
        ClientBoundLimits {
            mean_lag_us: 2_000.0,
            cpu_share: 0.9,
        }
    }
}

/// Why an interval is client-bound, if it is: attempts started late on average, or the worker
/// used (nearly) a whole core, so the offered load was not what was asked for.
pub fn client_bound(d: &StatsDelta, limits: &ClientBoundLimits) -> Option<String> {
    if d.scheduled > 0 {
        let mean = d.lag_us_sum as f64 / d.scheduled as f64;
        if mean > limits.mean_lag_us {
            return Some(format!(
                "worker {} started attempts {:.1} ms late on average (max {:.1} ms)",
                d.worker,
                mean / 1000.0,
                d.lag_us_max as f64 / 1000.0
            ));
        }
    }
    if d.interval_s > 0.0 {
        let share = (d.cpu_user_s + d.cpu_sys_s) / d.interval_s;
        if share > limits.cpu_share {
            return Some(format!(
                "worker {} used {:.0} % of a core",
                d.worker,
                share * 100.0
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_bound_by_lag_or_cpu() {
        let lim = ClientBoundLimits::default();
        let ok = StatsDelta {
            worker: 2,
            interval_s: 0.1,
            scheduled: 100,
            lag_us_sum: 100 * 50,
            lag_us_max: 400,
            cpu_sys_s: 0.05,
            ..StatsDelta::default()
        };
        assert_eq!(client_bound(&ok, &lim), None);
        let late = StatsDelta {
            lag_us_sum: 100 * 5_000,
            lag_us_max: 12_000,
            ..ok.clone()
        };
        assert_eq!(
            client_bound(&late, &lim).unwrap(),
            "worker 2 started attempts 5.0 ms late on average (max 12.0 ms)"
        );
        let busy = StatsDelta {
            cpu_user_s: 0.02,
            cpu_sys_s: 0.075,
            ..ok
        };
        assert_eq!(
            client_bound(&busy, &lim).unwrap(),
            "worker 2 used 95 % of a core"
        );
    }

    #[test]
    fn sclient_flat_out_offers_d_over_t() {
        assert_eq!(
            offered_rate(Mode::Sclient, None, 10_000, 0.5, 0, 0.0),
            20_000.0
        );
        assert_eq!(
            offered_rate(Mode::Sclient, Some(300.0), 10_000, 0.5, 0, 0.0),
            300.0
        );
        assert_eq!(
            offered_rate(Mode::Open, Some(5000.0), 100, 0.5, 0, 0.0),
            5000.0
        );
        assert_eq!(offered_rate(Mode::Closed, None, 0, 0.5, 20, 0.5), 40.0);
        assert_eq!(offered_rate(Mode::Closed, None, 0, 0.5, 20, 0.0), 0.0);
    }
}
