//! A network path's live knobs (RTT, jitter, loss, bandwidth): one type that says, per knob, its key in
//! scenario files, its sweep name, its limits, how a key press steps it, how it reads on screen
//! and on a report's axis. Scenario validation, steps, sweeps, keys, the status line, the lab's
//! replies and the report all go through it, so a new live path knob is a variant here (and a
//! field of the path profile that holds it), not a change in every layer.

use super::units::{Bandwidth, Dur, Percent, UnitError};
use std::fmt;
use std::time::Duration;

/// A live property of a network path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathKnob {
    /// Added round-trip delay, half in each direction.
    Rtt,
    /// A random extra delay per frame, uniform in +-jitter, in each direction (frames keep
    /// their order unless the path has `reorder = true`).
    Jitter,
    /// Loss in each direction (Bernoulli).
    Loss,
    /// Bottleneck rate in each direction (or unlimited).
    Bandwidth,
}

/// A value of one path knob, typed by its knob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PathValue {
    Rtt(Dur),
    Jitter(Dur),
    Loss(Percent),
    /// None: unlimited.
    Bandwidth(Option<Bandwidth>),
}

/// How a key changes a knob: by an amount in the knob's own step unit (milliseconds, percent
/// points), or by a factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PathStep {
    Add(f64),
    Scale(f64),
}

/// Why a path knob cannot take a value: the line a person reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KnobError {
    #[error("{knob} must be {limits}", knob = .0.label(), limits = .0.limits_text())]
    OutOfRange(PathKnob),
    #[error("bandwidth is already unlimited")]
    AlreadyUnlimited,
    #[error("`{text}` is not a {} value", .knob.sweep_name())]
    NotAValue { knob: PathKnob, text: String },
    #[error(transparent)]
    Unit(#[from] UnitError),
}

/// A 28.8k modem's line: the slowest client population seed 000 §4.4 names.
const BW_MIN_BPS: u64 = 28_000;
const BW_MAX_BPS: u64 = 100_000_000_000;
/// Scaling down from unlimited starts here; scaling up past `BW_UNLIMITED_ABOVE` lifts the limit.
const BW_FROM_UNLIMITED_BPS: u64 = 100_000_000;
const BW_UNLIMITED_ABOVE: u64 = 10_000_000_000;

impl PathKnob {
    /// Every live path knob, in the order the status line shows them.
    pub const ALL: &'static [PathKnob] = &[
        PathKnob::Rtt,
        PathKnob::Jitter,
        PathKnob::Loss,
        PathKnob::Bandwidth,
    ];

    /// Its key in `[[network.path]]` and `[[step]]`.
    pub fn key(self) -> &'static str {
        match self {
            PathKnob::Rtt => "rtt",
            PathKnob::Jitter => "jitter",
            PathKnob::Loss => "loss",
            PathKnob::Bandwidth => "bandwidth",
        }
    }

    /// Its `[sweep] param`.
    pub fn sweep_name(self) -> &'static str {
        match self {
            PathKnob::Rtt => "network.rtt",
            PathKnob::Jitter => "network.jitter",
            PathKnob::Loss => "network.loss",
            PathKnob::Bandwidth => "network.bandwidth",
        }
    }

    /// How messages name it ("RTT must be ...").
    pub fn label(self) -> &'static str {
        match self {
            PathKnob::Rtt => "RTT",
            PathKnob::Jitter => "jitter",
            PathKnob::Loss => "loss",
            PathKnob::Bandwidth => "bandwidth",
        }
    }

    /// What a sweep of it varies, for figure titles ("Server throughput vs WAN delay"), and
    /// the seed figure it reproduces, if any.
    pub fn what(self) -> (&'static str, Option<&'static str>) {
        match self {
            PathKnob::Rtt => ("WAN delay", Some("seed 000 Figs. 9 and 10")),
            PathKnob::Jitter => ("delay jitter", None),
            PathKnob::Loss => ("packet loss", Some("seed 000 §5.6")),
            PathKnob::Bandwidth => ("bandwidth", None),
        }
    }

    /// A report's x axis for a sweep of it, with the unit of [`PathValue::x`].
    pub fn axis(self) -> &'static str {
        match self {
            PathKnob::Rtt => "round-trip time (ms)",
            PathKnob::Jitter => "delay jitter, each direction (+- ms)",
            PathKnob::Loss => "packet loss (%)",
            PathKnob::Bandwidth => "bandwidth (Mbit/s)",
        }
    }

    /// The knob named `name` in a scenario's `[sweep] param`.
    pub fn from_sweep_name(name: &str) -> Option<PathKnob> {
        PathKnob::ALL
            .iter()
            .copied()
            .find(|k| k.sweep_name() == name)
    }

    fn limits_text(self) -> String {
        match self {
            PathKnob::Rtt => format!("0..{} ms", RTT_MAX.as_millis()),
            PathKnob::Jitter => format!("0..{} ms", JITTER_MAX.as_millis()),
            PathKnob::Loss => format!("0..{LOSS_MAX_PCT}%"),
            PathKnob::Bandwidth => format!(
                "{}kbit..{}gbit",
                BW_MIN_BPS / 1000,
                BW_MAX_BPS / 1_000_000_000
            ),
        }
    }

    /// A value as a scenario writes it (`"100ms"`, `"1%"`, `"10mbit"`), checked against the
    /// knob's limits.
    pub fn parse(self, text: &str) -> Result<PathValue, KnobError> {
        let v = match self {
            PathKnob::Rtt => PathValue::Rtt(Dur::parse(text)?),
            PathKnob::Jitter => PathValue::Jitter(Dur::parse(text)?),
            PathKnob::Loss => PathValue::Loss(Percent::parse(text)?),
            PathKnob::Bandwidth => PathValue::Bandwidth(Some(Bandwidth::parse(text)?)),
        };
        v.checked()
    }
}

impl fmt::Display for PathKnob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

const RTT_MAX: Duration = Duration::from_secs(10);
const JITTER_MAX: Duration = Duration::from_secs(1);
const LOSS_MAX_PCT: f64 = 50.0;

impl PathValue {
    pub fn knob(self) -> PathKnob {
        match self {
            PathValue::Rtt(_) => PathKnob::Rtt,
            PathValue::Jitter(_) => PathKnob::Jitter,
            PathValue::Loss(_) => PathKnob::Loss,
            PathValue::Bandwidth(_) => PathKnob::Bandwidth,
        }
    }

    /// The value if it is within its knob's limits.
    pub fn checked(self) -> Result<PathValue, KnobError> {
        let ok = match self {
            PathValue::Rtt(d) => d.0 <= RTT_MAX,
            PathValue::Jitter(d) => d.0 <= JITTER_MAX,
            PathValue::Loss(p) => (0.0..=LOSS_MAX_PCT).contains(&p.0),
            PathValue::Bandwidth(b) => b.is_none_or(|b| (BW_MIN_BPS..=BW_MAX_BPS).contains(&b.0)),
        };
        if ok {
            Ok(self)
        } else {
            Err(KnobError::OutOfRange(self.knob()))
        }
    }

    /// The value after a key's step, within limits. Loss keeps one decimal; bandwidth scales
    /// from unlimited down to 100 Mbit/s, and up past 10 Gbit/s to unlimited.
    pub fn stepped(self, step: PathStep) -> Result<PathValue, KnobError> {
        let ms = |d: Dur| d.secs() * 1000.0;
        let dur = |ms: f64| {
            if ms < 0.0 {
                Err(KnobError::OutOfRange(self.knob()))
            } else {
                // Whole microseconds, as a scenario can write them.
                Ok(Dur(Duration::from_micros((ms * 1000.0).round() as u64)))
            }
        };
        let next = match (self, step) {
            (PathValue::Rtt(d), PathStep::Add(x)) => PathValue::Rtt(dur(ms(d) + x)?),
            (PathValue::Rtt(d), PathStep::Scale(f)) => PathValue::Rtt(dur(ms(d) * f)?),
            (PathValue::Jitter(d), PathStep::Add(x)) => PathValue::Jitter(dur(ms(d) + x)?),
            (PathValue::Jitter(d), PathStep::Scale(f)) => PathValue::Jitter(dur(ms(d) * f)?),
            (PathValue::Loss(p), PathStep::Add(x)) => {
                PathValue::Loss(Percent(((p.0 + x) * 10.0).round() / 10.0))
            }
            (PathValue::Loss(p), PathStep::Scale(f)) => {
                PathValue::Loss(Percent((p.0 * f * 10.0).round() / 10.0))
            }
            (PathValue::Bandwidth(None), PathStep::Scale(f)) if f < 1.0 => {
                PathValue::Bandwidth(Some(Bandwidth(BW_FROM_UNLIMITED_BPS)))
            }
            (PathValue::Bandwidth(None), _) => return Err(KnobError::AlreadyUnlimited),
            // A scale steps along the 1-2-5 ladder, so values stay round whatever they were.
            (PathValue::Bandwidth(Some(b)), step) => {
                let v = match step {
                    PathStep::Scale(f) if f != 1.0 => b.ladder_step(f > 1.0).0,
                    PathStep::Scale(_) => b.0,
                    PathStep::Add(mbit) => (b.0 as f64 + mbit * 1e6).round().max(0.0) as u64,
                };
                // Down to the floor, not past it (refused only once there).
                let v = if v < BW_MIN_BPS && b.0 > BW_MIN_BPS {
                    BW_MIN_BPS
                } else {
                    v
                };
                PathValue::Bandwidth((v <= BW_UNLIMITED_ABOVE).then_some(Bandwidth(v)))
            }
        };
        match next {
            PathValue::Loss(p) if p.0 < 0.0 => Err(KnobError::OutOfRange(PathKnob::Loss)),
            v => v.checked(),
        }
    }

    /// The number on a report's x axis, in the unit [`PathKnob::axis`] says (None: unlimited).
    /// The unit of [`Self::x`] after the number.
    pub fn x_unit(self) -> &'static str {
        match self {
            PathValue::Rtt(_) | PathValue::Jitter(_) => " ms",
            PathValue::Loss(_) => "%",
            PathValue::Bandwidth(_) => " Mbit/s",
        }
    }

    pub fn x(self) -> Option<f64> {
        match self {
            PathValue::Rtt(d) | PathValue::Jitter(d) => Some(d.secs() * 1000.0),
            PathValue::Loss(p) => Some(p.0),
            PathValue::Bandwidth(b) => b.map(|b| b.bits_per_sec() as f64 / 1e6),
        }
    }

    /// As a reply says it: "rtt = 100 ms".
    pub fn assignment(self) -> String {
        match self {
            PathValue::Rtt(d) => format!("rtt = {:.0} ms", d.secs() * 1000.0),
            PathValue::Jitter(d) => format!("jitter = +-{:.1} ms", d.secs() * 1000.0),
            PathValue::Loss(p) => format!("loss = {:.1}%", p.0),
            PathValue::Bandwidth(b) => format!(
                "bandwidth = {}",
                b.map_or("unlimited".into(), |b| b.human())
            ),
        }
    }

    /// As the status line shows it: "rtt 100ms" (None: a knob that says nothing at its
    /// default, to keep the line short).
    pub fn status(self) -> Option<String> {
        Some(match self {
            PathValue::Rtt(d) => format!("rtt {:.0}ms", d.secs() * 1000.0),
            PathValue::Jitter(d) if d.0.is_zero() => return None,
            PathValue::Jitter(d) => format!("±{:.0}ms", d.secs() * 1000.0),
            PathValue::Loss(p) => format!("loss {:.1}%", p.0),
            PathValue::Bandwidth(b) => {
                format!("bw {}", b.map_or("∞".into(), |b| b.human()))
            }
        })
    }
}

fn unlimited_or(b: Option<Bandwidth>) -> String {
    b.map_or("unlimited".into(), |b| b.to_string())
}

/// The value as a scenario writes it (`100ms`, `1%`, `10mbit`, `unlimited`).
impl fmt::Display for PathValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathValue::Rtt(d) | PathValue::Jitter(d) => write!(f, "{d}"),
            PathValue::Loss(p) => write!(f, "{p}"),
            PathValue::Bandwidth(b) => f.write_str(&unlimited_or(*b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> PathValue {
        PathValue::Rtt(Dur(Duration::from_millis(v)))
    }

    #[test]
    fn every_knob_parses_what_it_displays_and_names_its_sweep() {
        for (&k, text) in PathKnob::ALL.iter().zip(["100ms", "5ms", "1.5%", "10mbit"]) {
            let v = k.parse(text).unwrap();
            assert_eq!((v.knob(), v.to_string()), (k, text.to_string()));
            assert_eq!(PathKnob::from_sweep_name(k.sweep_name()), Some(k));
        }
    }

    #[test]
    fn limits_hold_for_parsed_and_stepped_values() {
        assert_eq!(
            PathKnob::Loss.parse("60%"),
            Err(KnobError::OutOfRange(PathKnob::Loss))
        );
        assert_eq!(
            ms(5).stepped(PathStep::Add(-10.0)),
            Err(KnobError::OutOfRange(PathKnob::Rtt))
        );
        assert_eq!(ms(100).stepped(PathStep::Add(10.0)), Ok(ms(110)));
        assert_eq!(
            PathValue::Loss(Percent(0.0)).stepped(PathStep::Add(-0.5)),
            Err(KnobError::OutOfRange(PathKnob::Loss))
        );
        assert!(matches!(
            PathKnob::Rtt.parse("5"),
            Err(KnobError::Unit(UnitError::NoTimeUnit(_)))
        ));
    }

    #[test]
    fn bandwidth_steps_from_and_to_unlimited() {
        let none = PathValue::Bandwidth(None);
        let mbit = |m: u64| PathValue::Bandwidth(Some(Bandwidth(m * 1_000_000)));
        assert_eq!(none.stepped(PathStep::Scale(0.5)), Ok(mbit(100)));
        assert_eq!(
            none.stepped(PathStep::Scale(2.0)),
            Err(KnobError::AlreadyUnlimited)
        );
        assert_eq!(mbit(10).stepped(PathStep::Scale(0.5)), Ok(mbit(5)));
        assert_eq!(mbit(5_000).stepped(PathStep::Scale(2.0)), Ok(mbit(10_000)));
        assert_eq!(mbit(10_000).stepped(PathStep::Scale(2.0)), Ok(none));
    }

    /// issue 28: keys step bandwidth along 1-2-5 (round values, no drift), and it reads in
    /// Mbit/s, not raw bits.
    #[test]
    fn bandwidth_keys_step_on_round_values_and_read_in_mbit_per_s() {
        let mut v = PathValue::Bandwidth(None);
        let mut down = Vec::new();
        for _ in 0..4 {
            v = v.stepped(PathStep::Scale(0.5)).unwrap();
            down.push(v.status().unwrap());
        }
        assert_eq!(
            down,
            [
                "bw 100 Mbit/s",
                "bw 50 Mbit/s",
                "bw 20 Mbit/s",
                "bw 10 Mbit/s"
            ]
        );
        let mut up = Vec::new();
        for _ in 0..3 {
            v = v.stepped(PathStep::Scale(2.0)).unwrap();
            up.push(v.assignment());
        }
        assert_eq!(
            up,
            [
                "bandwidth = 20 Mbit/s",
                "bandwidth = 50 Mbit/s",
                "bandwidth = 100 Mbit/s"
            ]
        );
        // An odd value from a scenario joins the ladder at the next step.
        let odd = PathValue::Bandwidth(Some(Bandwidth(97_657)));
        assert_eq!(odd.status().unwrap(), "bw 97.657 kbit/s");
        assert_eq!(
            odd.stepped(PathStep::Scale(2.0)).unwrap().status().unwrap(),
            "bw 100 kbit/s"
        );
        let down = odd.stepped(PathStep::Scale(0.5)).unwrap();
        assert_eq!(down.status().unwrap(), "bw 50 kbit/s");
        assert_eq!(
            down.stepped(PathStep::Scale(0.5))
                .unwrap()
                .status()
                .unwrap(),
            "bw 28 kbit/s",
            "the floor: a 28.8k modem"
        );
    }
}
