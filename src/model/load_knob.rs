//! The load's live knobs (rate, D, clients, burst ratio and time at peak, resumed share, HTTP/2
//! streams per connection, keep-alive requests per connection): one type that says, per knob, its
//! keys in scenario files, its sweep name and axis, its unit and limits, its live keys and how a
//! press steps it, and how its values read. Scenario validation, steps, sweeps, the keymap, the
//! report's figures and the lab's replies all go through it, so a scenario and a key accept
//! exactly the same values, and a new knob is a row here plus its value's path to the workers.

use super::limits::{RATE_MAX, SOCKETS_MAX};
use std::fmt;

/// The most closed-loop clients a run keeps (each is a state machine with its connection).
pub const CLIENTS_MAX: u32 = 20_000;
/// The most concurrent HTTP/2 streams per connection (h2load's `-m`; nginx and Apache advertise
/// 128 and 100 by default, RFC 9113 recommends at least 100).
pub const STREAMS_MAX: u32 = 1000;
/// The highest peak/average ratio of a burst.
pub const BURST_RATIO_MAX: f64 = 20.0;
/// The most requests a kept-alive connection carries before the client closes it (a scenario
/// writes 1,000,000 for "as many as the server allows").
pub const REQUESTS_PER_CONN_MAX: u32 = 1_000_000_000;

/// A live property of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadKnob {
    /// Attempts/s (requests/s over a pool), over all workers.
    Rate,
    /// D: S-Client slots, or the cap on concurrent attempts in open mode.
    Sockets,
    /// N: closed-loop clients.
    Clients,
    /// A burst's peak rate over the average.
    BurstRatio,
    /// The share of each burst period spent at peak (0-1).
    BurstFraction,
    /// Over TLS, the share of handshakes that resume a session (0-1).
    Resumed,
    /// M: over HTTP/2 and HTTP/3, the concurrent streams per connection.
    Streams,
    /// With keep-alive (HTTP/1.1, HTTP/2), the requests a connection carries before the client
    /// closes it.
    RequestsPerConn,
}

/// A knob's live keys: lower case steps it down, upper case up, with their help lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnobKeys {
    pub down: char,
    pub up: char,
    pub down_help: &'static str,
    pub up_help: &'static str,
}

/// How a key changes a load knob: by an amount in the knob's value unit, or by a factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadStep {
    Add(f64),
    Scale(f64),
}

impl LoadStep {
    /// The step the other way (a key's lower-case partner).
    pub const fn down(self) -> LoadStep {
        match self {
            LoadStep::Add(x) => LoadStep::Add(-x),
            LoadStep::Scale(f) => LoadStep::Scale(1.0 / f),
        }
    }
}

/// Why a load knob cannot take a value: the line a person reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadKnobError {
    #[error("{} must be {} (got {})", .knob.label(), .knob.limits_text(), .knob.show(*.value))]
    OutOfRange { knob: LoadKnob, value: f64 },
    #[error("{} limit reached ({})", .0.label(), .0.limits_text())]
    AtLimit(LoadKnob),
    #[error("burst ratio {ratio:.1} x {pct:.0}% at peak > 100%: the peaks alone would exceed the average; lower one of them", pct = .fraction * 100.0)]
    BurstOver { ratio: f64, fraction: f64 },
}

/// Slack for shares written in percent (1% is 0.01 whatever its float).
const EPS: f64 = 1e-9;

impl LoadKnob {
    /// Every live load knob.
    pub const ALL: &'static [LoadKnob] = &[
        LoadKnob::Rate,
        LoadKnob::Sockets,
        LoadKnob::Clients,
        LoadKnob::BurstRatio,
        LoadKnob::BurstFraction,
        LoadKnob::Resumed,
        LoadKnob::Streams,
        LoadKnob::RequestsPerConn,
    ];

    /// Its key path in a scenario's `[load]`.
    pub fn key(self) -> &'static str {
        match self {
            LoadKnob::Rate => "load.rate",
            LoadKnob::Sockets => "load.sockets",
            LoadKnob::Clients => "load.clients",
            LoadKnob::BurstRatio => "load.burst.ratio",
            LoadKnob::BurstFraction => "load.burst.fraction",
            LoadKnob::Resumed => "load.tls.resumed",
            LoadKnob::Streams => "load.streams",
            LoadKnob::RequestsPerConn => "load.requests_per_conn",
        }
    }

    /// Its key in a `[[step]]` (None: steps do not change it).
    pub fn step_key(self) -> Option<&'static str> {
        match self {
            LoadKnob::Rate => Some("rate"),
            LoadKnob::Sockets => Some("sockets"),
            LoadKnob::Clients => Some("clients"),
            LoadKnob::BurstRatio => Some("burst_ratio"),
            LoadKnob::BurstFraction => Some("burst_fraction"),
            LoadKnob::Resumed => Some("tls_resumed"),
            LoadKnob::Streams => Some("streams"),
            LoadKnob::RequestsPerConn => Some("requests_per_conn"),
        }
    }

    /// Its `[sweep] param` (None: swept with another, as the burst's two in `load.burst`).
    pub fn sweep_name(self) -> Option<&'static str> {
        match self {
            LoadKnob::Rate => Some("load.rate"),
            LoadKnob::Sockets => Some("load.sockets"),
            LoadKnob::Clients => Some("load.clients"),
            LoadKnob::Resumed => Some("load.tls.resumed"),
            LoadKnob::Streams => Some("load.streams"),
            LoadKnob::RequestsPerConn => Some("load.requests_per_conn"),
            LoadKnob::BurstRatio | LoadKnob::BurstFraction => None,
        }
    }

    /// The knob swept as `name`.
    pub fn from_sweep_name(name: &str) -> Option<LoadKnob> {
        Self::ALL
            .iter()
            .copied()
            .find(|k| k.sweep_name() == Some(name))
    }

    /// A report's x axis when it is swept, with units.
    pub fn axis(self) -> &'static str {
        match self {
            LoadKnob::Rate => "offered rate (connection attempts/s)",
            LoadKnob::Sockets => "descriptors per S-Client (D)",
            LoadKnob::Clients => "clients (closed-loop processes)",
            LoadKnob::Resumed => "resumed TLS handshakes (share, 0-1)",
            LoadKnob::BurstRatio => "burst (peak/average ratio)",
            LoadKnob::BurstFraction => "burst (% of time at peak)",
            LoadKnob::Streams => "HTTP/2 and HTTP/3 streams per connection (M)",
            LoadKnob::RequestsPerConn => "requests per kept-alive connection",
        }
    }

    /// Its live keys (None: turned by other keys, as D and clients by `d`/`D`, or by none).
    pub const fn keys(self) -> Option<KnobKeys> {
        const fn k(
            down: char,
            up: char,
            down_help: &'static str,
            up_help: &'static str,
        ) -> Option<KnobKeys> {
            Some(KnobKeys {
                down,
                up,
                down_help,
                up_help,
            })
        }
        match self {
            LoadKnob::Rate | LoadKnob::Sockets | LoadKnob::Clients => None,
            LoadKnob::BurstRatio => k('x', 'X', "burst ratio -0.5", "burst ratio +0.5"),
            LoadKnob::BurstFraction => {
                k('f', 'F', "burst time at peak -5%", "burst time at peak +5%")
            }
            LoadKnob::Resumed => k(
                'u',
                'U',
                "TLS: resumed handshakes -10%",
                "TLS: resumed handshakes +10%",
            ),
            LoadKnob::Streams => k(
                'e',
                'E',
                "HTTP/2, 3: streams per conn /2",
                "HTTP/2, 3: streams per conn x2",
            ),
            LoadKnob::RequestsPerConn => k(
                'k',
                'K',
                "keep-alive: requests per conn /10",
                "keep-alive: requests per conn x10",
            ),
        }
    }

    /// How messages name it ("D must be ...").
    pub fn label(self) -> &'static str {
        match self {
            LoadKnob::Rate => "rate",
            LoadKnob::Sockets => "D",
            LoadKnob::Clients => "clients",
            LoadKnob::BurstRatio => "burst ratio",
            LoadKnob::BurstFraction => "time at peak",
            LoadKnob::Resumed => "the resumed share",
            LoadKnob::Streams => "streams per connection",
            LoadKnob::RequestsPerConn => "requests per connection",
        }
    }

    /// Its unit as values are shown ("/s", "%"; "" for a count).
    pub fn unit(self) -> &'static str {
        match self {
            LoadKnob::Rate => "/s",
            LoadKnob::Sockets
            | LoadKnob::Clients
            | LoadKnob::Streams
            | LoadKnob::RequestsPerConn => "",
            LoadKnob::BurstRatio => "x",
            LoadKnob::BurstFraction | LoadKnob::Resumed => "%",
        }
    }

    /// The lowest and highest value, in the value's own unit (shares as 0-1).
    pub fn limits(self) -> (f64, f64) {
        match self {
            LoadKnob::Rate => (1.0, RATE_MAX),
            LoadKnob::Sockets => (1.0, SOCKETS_MAX as f64),
            LoadKnob::Clients => (1.0, CLIENTS_MAX as f64),
            LoadKnob::BurstRatio => (1.0, BURST_RATIO_MAX),
            LoadKnob::BurstFraction => (0.01, 1.0),
            LoadKnob::Resumed => (0.0, 1.0),
            LoadKnob::Streams => (1.0, STREAMS_MAX as f64),
            LoadKnob::RequestsPerConn => (1.0, REQUESTS_PER_CONN_MAX as f64),
        }
    }

    /// A count: whole values only (and a count on a report's axis).
    pub fn whole(self) -> bool {
        matches!(
            self,
            LoadKnob::Sockets | LoadKnob::Clients | LoadKnob::Streams | LoadKnob::RequestsPerConn
        )
    }

    /// The step of a key press, upwards (its lower-case key steps [`LoadStep::down`]).
    pub const fn key_step(self) -> LoadStep {
        match self {
            LoadKnob::Rate => LoadStep::Scale(1.1),
            LoadKnob::Sockets | LoadKnob::Clients | LoadKnob::Streams => LoadStep::Scale(2.0),
            // 1, 10, 100, 1000: a connection per request to nearly all kept.
            LoadKnob::RequestsPerConn => LoadStep::Scale(10.0),
            LoadKnob::BurstRatio => LoadStep::Add(0.5),
            LoadKnob::BurstFraction => LoadStep::Add(0.05),
            LoadKnob::Resumed => LoadStep::Add(0.1),
        }
    }

    /// Values keep this many steps of precision (rates in whole /s, ratios in tenths, shares
    /// in tenths of a percent), so key presses land on round values.
    fn grain(self) -> f64 {
        match self {
            LoadKnob::Rate
            | LoadKnob::Sockets
            | LoadKnob::Clients
            | LoadKnob::Streams
            | LoadKnob::RequestsPerConn => 1.0,
            LoadKnob::BurstRatio => 0.1,
            LoadKnob::BurstFraction => 0.001,
            LoadKnob::Resumed => 0.01,
        }
    }

    /// "1..20000", "1%..100%", "1..1000000 /s".
    pub fn limits_text(self) -> String {
        let (lo, hi) = self.limits();
        format!("{}..{}", self.show(lo), self.show(hi))
    }

    /// A value as messages show it, with its unit: "0.5/s", "50000", "25x", "0.5%".
    pub fn show(self, v: f64) -> String {
        match self.unit() {
            "%" => format!("{}%", round_to(v * 100.0, 0.01)),
            u => format!("{}{u}", round_to(v, 0.001)),
        }
    }

    /// `v` if the knob can take it.
    pub fn check(self, v: f64) -> Result<f64, LoadKnobError> {
        let (lo, hi) = self.limits();
        let whole = !self.whole() || v.fract() == 0.0;
        if v.is_finite() && whole && v >= lo - EPS && v <= hi + EPS {
            Ok(v)
        } else {
            Err(LoadKnobError::OutOfRange {
                knob: self,
                value: v,
            })
        }
    }

    /// The value after a key's step from `now`: on the knob's grain, moving by at least one
    /// grain (at 2/s, x1.1 is 3/s, not 2/s again), stopping at the limits; refused only at a
    /// limit already reached.
    pub fn stepped(self, now: f64, step: LoadStep) -> Result<f64, LoadKnobError> {
        let g = self.grain();
        let raw = match step {
            LoadStep::Add(x) => now + x,
            LoadStep::Scale(f) => now * f,
        };
        let mut next = round_to(raw, g);
        if raw > now {
            next = next.max(now + g);
        } else if raw < now {
            next = next.min(now - g);
        }
        let (lo, hi) = self.limits();
        let next = next.clamp(lo, hi);
        if (next - now).abs() < EPS || (raw < now && next > now) || (raw > now && next < now) {
            return Err(LoadKnobError::AtLimit(self));
        }
        Ok(next)
    }
}

/// `v` on a grid of `g` (floats cleaned of their last bits).
fn round_to(v: f64, g: f64) -> f64 {
    let n = (v / g).round();
    // Printed and parsed back, so 0.1 * 3 is 0.3.
    format!("{:.6}", n * g).parse().unwrap_or(n * g)
}

/// A burst shape both knobs allow, whose peaks fit in the average (ratio x fraction <= 1).
pub fn check_burst(ratio: f64, fraction: f64) -> Result<(f64, f64), LoadKnobError> {
    let ratio = LoadKnob::BurstRatio.check(ratio)?;
    let fraction = LoadKnob::BurstFraction.check(fraction)?;
    if ratio * fraction > 1.0 + EPS {
        return Err(LoadKnobError::BurstOver { ratio, fraction });
    }
    Ok((ratio, fraction))
}

impl fmt::Display for LoadKnob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_what_the_issue_names_and_name_their_sweep() {
        let e = LoadKnob::Rate.check(0.5).unwrap_err();
        assert_eq!(e.to_string(), "rate must be 1/s..1000000/s (got 0.5/s)");
        assert!(LoadKnob::BurstRatio.check(25.0).is_err());
        assert!(LoadKnob::Clients.check(50_000.0).is_err());
        assert!(LoadKnob::Clients.check(2.5).is_err(), "a count is whole");
        assert_eq!(LoadKnob::BurstFraction.check(0.01), Ok(0.01));
        for &k in LoadKnob::ALL {
            if let Some(n) = k.sweep_name() {
                assert_eq!(LoadKnob::from_sweep_name(n), Some(k));
            }
        }
    }

    #[test]
    fn steps_move_by_a_grain_and_stop_at_the_limits() {
        let r = LoadKnob::Rate;
        assert_eq!(r.stepped(2.0, LoadStep::Scale(1.1)), Ok(3.0));
        assert_eq!(r.stepped(3.0, LoadStep::Scale(1.0 / 1.1)), Ok(2.0));
        assert_eq!(r.stepped(1.5, LoadStep::Scale(0.5)), Ok(1.0));
        assert_eq!(
            r.stepped(1.0, LoadStep::Scale(0.5)),
            Err(LoadKnobError::AtLimit(r))
        );
        assert_eq!(
            r.stepped(RATE_MAX * 0.75, LoadStep::Scale(2.0)),
            Ok(RATE_MAX)
        );
        // Below the floor (no scenario can set it) a step down never raises the value.
        assert_eq!(
            r.stepped(0.5, LoadStep::Scale(1.0 / 1.1)),
            Err(LoadKnobError::AtLimit(r))
        );
        let f = LoadKnob::BurstFraction;
        assert_eq!(f.stepped(0.1, LoadStep::Add(-0.05)), Ok(0.05));
        assert_eq!(f.stepped(0.05, LoadStep::Add(-0.05)), Ok(0.01));
        assert_eq!(
            f.stepped(0.01, LoadStep::Add(-0.05)),
            Err(LoadKnobError::AtLimit(f))
        );
        assert_eq!(LoadKnob::Resumed.stepped(0.5, LoadStep::Add(0.1)), Ok(0.6));
        assert_eq!(LoadKnob::BurstRatio.key_step().down(), LoadStep::Add(-0.5));
        let m = LoadKnob::Streams;
        assert_eq!(m.stepped(10.0, m.key_step()), Ok(20.0));
        assert_eq!(
            m.stepped(1.0, m.key_step().down()),
            Err(LoadKnobError::AtLimit(m))
        );
        assert_eq!(m.stepped(800.0, m.key_step()), Ok(STREAMS_MAX as f64));
        assert_eq!(
            m.check(0.0).unwrap_err().to_string(),
            "streams per connection must be 1..1000 (got 0)"
        );
    }
}
