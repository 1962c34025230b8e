//! Rate maths for the worker: what a configuration offers, how many descriptors it needs, and
//! whether a stats interval says the client (not the server) was the limit (seed 000 §4.3).

use super::protocol::{Mode, WorkerConfig};

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

#[cfg(test)]
mod tests {
    use super::*;

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
