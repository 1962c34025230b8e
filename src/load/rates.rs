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

/// What the rate knob means in `mode` (a pool of `pool` persistent connections in open mode
/// makes it a request rate), as the status line says it.
pub fn rate_text(mode: Mode, rate: Option<f64>, pool: u64) -> String {
    match (mode, rate) {
        (Mode::Closed, _) => "n/a (closed loop)".into(),
        (Mode::Sclient, None) => "flat out (D/T conn/s)".into(),
        (Mode::Open, Some(r)) if pool > 0 => format!("{r:.0} req/s over {pool} conns"),
        (_, Some(r)) => format!("{r:.0} conn/s"),
        (Mode::Open, None) => "none".into(),
    }
}

/// Descriptors a configuration may hold at once. Over TCP one socket per connection: D
/// connecting plus the connections waiting for responses (at most the offered rate x response
/// timeout), N closed clients, or the pool of persistent connections. Over QUIC (HTTP/3) one
/// UDP socket carries every connection of the worker, whatever their number. Plus slack (the
/// epoll, the control eventfd, stdio).
pub fn fds_needed(cfg: &WorkerConfig) -> u64 {
    const SLACK: u64 = 64;
    if cfg.http3 {
        return 1 + SLACK;
    }
    let conns = match cfg.mode {
        Mode::Closed => cfg.clients as u64,
        Mode::Open if cfg.connections > 0 => cfg.connections as u64,
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

    /// TCP needs a socket per connection the load may hold; QUIC one UDP socket per worker.
    #[test]
    fn descriptors_needed_per_protocol() {
        let tcp = WorkerConfig::for_test("127.0.0.1:80".parse().unwrap());
        // D + D/T x the response timeout + slack.
        assert_eq!(fds_needed(&tcp), 10_000 + 40_000 + 64);
        let closed = WorkerConfig {
            mode: Mode::Closed,
            clients: 300,
            ..tcp.clone()
        };
        assert_eq!(fds_needed(&closed), 300 + 64);
        for cfg in [&tcp, &closed] {
            let quic = WorkerConfig {
                http3: true,
                ..cfg.clone()
            };
            assert_eq!(fds_needed(&quic), 1 + 64, "{:?}", quic.mode);
        }
    }

    #[test]
    fn the_status_line_says_which_rate_each_mode_is() {
        assert_eq!(rate_text(Mode::Open, Some(2000.0), 0), "2000 conn/s");
        assert_eq!(
            rate_text(Mode::Open, Some(2000.0), 64),
            "2000 req/s over 64 conns"
        );
        assert_eq!(rate_text(Mode::Sclient, Some(300.0), 0), "300 conn/s");
        assert_eq!(rate_text(Mode::Sclient, None, 0), "flat out (D/T conn/s)");
        assert_eq!(rate_text(Mode::Closed, Some(5.0), 64), "n/a (closed loop)");
    }
}
