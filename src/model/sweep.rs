//! What a sweep varies (`[sweep] param`) and its typed values: parsed once from the scenario,
//! carried in summary rows, written as the scenario writes them and read back by the report.

use super::knob::{KnobError, PathKnob, PathValue};
use super::load_knob::{LoadKnob, LoadKnobError};
use super::units::{Num, TimeShare, UnitError};
use super::workload::Workload;
use std::fmt;

/// The parameters a sweep can vary, one name each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SweepParam {
    /// A live knob of the load (rate, D, clients, the resumed share).
    Load(LoadKnob),
    Concurrency,
    Workers,
    Burst,
    Workload,
    /// The clients' HTTP version: `1.0` (the server closes each connection first) or `1.1`
    /// (keep-alive; with one request per connection the client closes first), so the same
    /// load leaves TIME_WAIT on the server or on the clients (seed 002 Tables 10-14).
    Http,
    /// A live knob of every network path.
    Path(PathKnob),
    /// Where the server's receive processing runs (`[network] steer`).
    Steer,
    /// The server namespace's `net.ipv4.tcp_syncookies`.
    Syncookies,
    /// The server's listen backlog (the accept queue's limit).
    Backlog,
}

/// The server's and the server kernel's parameters a sweep can vary.
const SERVER_PARAMS: [SweepParam; 3] = [
    SweepParam::Steer,
    SweepParam::Syncookies,
    SweepParam::Backlog,
];

const LOAD_PARAMS: [SweepParam; 5] = [
    SweepParam::Concurrency,
    SweepParam::Workers,
    SweepParam::Burst,
    SweepParam::Workload,
    SweepParam::Http,
];

impl SweepParam {
    /// Every parameter, the load's first.
    pub fn all() -> impl Iterator<Item = SweepParam> {
        LoadKnob::ALL
            .iter()
            .filter(|k| k.sweep_name().is_some())
            .map(|&k| SweepParam::Load(k))
            .chain(LOAD_PARAMS)
            .chain(PathKnob::ALL.iter().map(|&k| SweepParam::Path(k)))
            .chain(SERVER_PARAMS)
    }

    /// Its name in scenario files and results.
    pub fn name(self) -> &'static str {
        match self {
            SweepParam::Load(k) => k.sweep_name().unwrap_or(k.key()),
            SweepParam::Concurrency => "load.concurrency",
            SweepParam::Workers => "load.workers",
            SweepParam::Burst => "load.burst",
            SweepParam::Workload => "load.workload",
            SweepParam::Http => "load.http",
            SweepParam::Path(k) => k.sweep_name(),
            SweepParam::Steer => "network.steer",
            SweepParam::Syncookies => "network.syncookies",
            SweepParam::Backlog => "target.backlog",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().find(|p| p.name() == name)
    }

    /// A path's property: the scenario needs a [network] section.
    pub fn needs_network(self) -> bool {
        matches!(
            self,
            SweepParam::Path(_) | SweepParam::Steer | SweepParam::Syncookies
        )
    }

    /// A report's x axis for it, with units.
    pub fn axis(self) -> &'static str {
        match self {
            SweepParam::Load(k) => k.axis(),
            SweepParam::Concurrency => {
                "concurrency: clients (closed loop) or descriptors D (S-Client)"
            }
            SweepParam::Workers => "load-generator workers",
            SweepParam::Workload => "workload (request mix)",
            SweepParam::Burst => "burst (peak/average ratio, % of time at peak)",
            SweepParam::Http => "HTTP version (1.0: the server closes first; 1.1: the client)",
            SweepParam::Path(k) => k.axis(),
            SweepParam::Steer => "receive steering (where the server's NET_RX softirq runs)",
            SweepParam::Syncookies => {
                "net.ipv4.tcp_syncookies (0 off, 1 when a SYN queue overflows, 2 always)"
            }
            SweepParam::Backlog => "listen backlog (the accept queue's limit)",
        }
    }
}

impl fmt::Display for SweepParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A typed sweep value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SweepValue {
    /// A load knob's value (shares 0 to 1).
    Load(LoadKnob, f64),
    Count(u32),
    Burst {
        ratio: f64,
        fraction: f64,
    },
    /// A named request mix (load.workload; the workers restart with it).
    Workload(Workload),
    /// HTTP/1.1 keep-alive (true) or HTTP/1.0 (load.http; the workers restart with it).
    Http {
        keepalive: bool,
    },
    Path(PathValue),
    Steer(super::cpus::Steer),
    /// A `tcp_syncookies` setting: 0, 1 or 2.
    Syncookies(u8),
}

/// Why a `[sweep] values` entry is not a value of its parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepValueError {
    #[error("`{text}` is not a {param} value")]
    NotAValue { param: SweepParam, text: String },
    #[error("{param} takes whole numbers >= 1 (got {n})")]
    NotACount { param: SweepParam, n: f64 },
    #[error("load.burst values are [ratio, fraction] pairs, e.g. [4, \"10%\"]")]
    NotABurstPair,
    #[error("the burst ratio must be a number")]
    BurstRatioNotANumber,
    #[error("`{0}` is not a workload; use one of {names}", names = Workload::ALL.map(|w| w.name()).join(", "))]
    NotAWorkload(String),
    #[error("`{0}` is not a steering; use \"server\" (the server's CPUs) or \"sender\" (the sending CPU)")]
    NotASteer(String),
    #[error("`{0}` is not a tcp_syncookies setting; use 0 (off), 1 (when a SYN queue overflows) or 2 (always)")]
    NotASyncookies(String),
    #[error("`{0}` is not an HTTP version; use \"1.0\" or \"1.1\"")]
    NotAnHttpVersion(String),
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// The live knob's limits, as a key and a scenario's check apply them.
    #[error(transparent)]
    Load(#[from] LoadKnobError),
}

impl SweepValue {
    /// One `[sweep] values` entry of `param`.
    pub fn parse(param: SweepParam, v: &toml::Value) -> Result<SweepValue, SweepValueError> {
        let text = |v: &toml::Value| match v {
            toml::Value::String(s) => Ok(s.clone()),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(f.to_string()),
            other => Err(SweepValueError::NotAValue {
                param,
                text: other.to_string(),
            }),
        };
        match param {
            SweepParam::Burst => {
                let arr = v
                    .as_array()
                    .filter(|a| a.len() == 2)
                    .ok_or(SweepValueError::NotABurstPair)?;
                let ratio = arr[0]
                    .as_float()
                    .or(arr[0].as_integer().map(|i| i as f64))
                    .ok_or(SweepValueError::BurstRatioNotANumber)?;
                let fraction = TimeShare::parse(&text(&arr[1])?)?.fraction();
                burst(ratio, fraction)
            }
            SweepParam::Workload => v
                .clone()
                .try_into::<Workload>()
                .map(SweepValue::Workload)
                .map_err(|_| SweepValueError::NotAWorkload(v.to_string())),
            // A value a scenario sets: within the live knob's limits, as a key would set it.
            SweepParam::Load(k) => match Self::parse_text(param, &text(v)?)? {
                SweepValue::Load(_, x) => Ok(SweepValue::Load(k, k.check(x)?)),
                other => Ok(other),
            },
            _ => Self::parse_text(param, &text(v)?),
        }
    }

    /// A value as [`Display`](fmt::Display) writes it (summary.csv's `value`), or a scalar
    /// as a scenario writes it; a load knob's limits are [`SweepValue::parse`]'s (a run folder
    /// of an older synlab reads back whatever it swept).
    pub fn parse_text(param: SweepParam, text: &str) -> Result<SweepValue, SweepValueError> {
        match param {
            SweepParam::Load(k) => {
                let v = match k {
                    // A share, written 0.5 as the scenario's `resumed` is.
                    LoadKnob::Resumed => {
                        text.trim()
                            .parse()
                            .map_err(|_| SweepValueError::NotAValue {
                                param,
                                text: text.to_string(),
                            })?
                    }
                    _ => Num::parse(text)?.0,
                };
                Ok(SweepValue::Load(k, v))
            }
            SweepParam::Concurrency | SweepParam::Workers | SweepParam::Backlog => {
                let n = Num::parse(text)?.0;
                if n < 1.0 || n.fract() != 0.0 || n > 1e6 {
                    return Err(SweepValueError::NotACount { param, n });
                }
                Ok(SweepValue::Count(n as u32))
            }
            SweepParam::Burst => {
                let (r, f) = text
                    .split_once("x@")
                    .ok_or(SweepValueError::NotABurstPair)?;
                let ratio = r
                    .trim()
                    .parse()
                    .map_err(|_| SweepValueError::BurstRatioNotANumber)?;
                burst(ratio, TimeShare::parse(f)?.fraction())
            }
            SweepParam::Workload => Workload::ALL
                .into_iter()
                .find(|w| w.name() == text.trim())
                .map(SweepValue::Workload)
                .ok_or_else(|| SweepValueError::NotAWorkload(text.to_string())),
            SweepParam::Http => match text.trim() {
                "1.0" | "1" => Ok(SweepValue::Http { keepalive: false }),
                "1.1" => Ok(SweepValue::Http { keepalive: true }),
                other => Err(SweepValueError::NotAnHttpVersion(other.to_string())),
            },
            SweepParam::Path(k) => Ok(SweepValue::Path(k.parse(text)?)),
            SweepParam::Steer => super::cpus::Steer::parse(text)
                .map(SweepValue::Steer)
                .ok_or_else(|| SweepValueError::NotASteer(text.to_string())),
            SweepParam::Syncookies => match text.trim() {
                "0" | "1" | "2" => Ok(SweepValue::Syncookies(
                    text.trim().parse().expect("a digit"),
                )),
                _ => Err(SweepValueError::NotASyncookies(text.to_string())),
            },
        }
    }

    /// The number on a report's x axis ([`SweepParam::axis`]); None for values that are
    /// categories (bursts, workloads) or not a number (unlimited bandwidth).
    /// The unit of [`Self::x`] as a line writes it after the number ("/s", " ms"; "" for a
    /// count or a share).
    pub fn x_unit(self) -> &'static str {
        match self {
            SweepValue::Load(k, _) => match k.unit() {
                "%" => "",
                u => u,
            },
            SweepValue::Path(v) => v.x_unit(),
            _ => "",
        }
    }

    pub fn x(self) -> Option<f64> {
        match self {
            SweepValue::Load(_, v) => Some(v),
            SweepValue::Count(n) => Some(n as f64),
            SweepValue::Burst { .. }
            | SweepValue::Workload(_)
            | SweepValue::Steer(_)
            | SweepValue::Http { .. } => None,
            SweepValue::Syncookies(n) => Some(n as f64),
            SweepValue::Path(v) => v.x(),
        }
    }
}

/// A burst shape within the live knobs' limits.
fn burst(ratio: f64, fraction: f64) -> Result<SweepValue, SweepValueError> {
    let (ratio, fraction) = super::load_knob::check_burst(ratio, fraction)?;
    Ok(SweepValue::Burst { ratio, fraction })
}

/// As summary.csv's `value` column writes it (the scenario's notation; bursts as `4x@10%`).
impl fmt::Display for SweepValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepValue::Load(_, v) => write!(f, "{v}"),
            SweepValue::Count(n) => write!(f, "{n}"),
            SweepValue::Burst { ratio, fraction } => write!(f, "{ratio}x@{}%", fraction * 100.0),
            SweepValue::Workload(w) => write!(f, "{}", w.name()),
            SweepValue::Http { keepalive } => f.write_str(if *keepalive { "1.1" } else { "1.0" }),
            SweepValue::Path(v) => write!(f, "{v}"),
            SweepValue::Steer(s) => write!(f, "{s}"),
            SweepValue::Syncookies(n) => write!(f, "{n}"),
        }
    }
}

/// A point's sweep setting: the parameter and its value there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    pub param: SweepParam,
    pub value: SweepValue,
}

/// `param` and `value` columns of a summary row ("" and "" without a sweep).
pub mod columns {
    use super::{SweepParam, SweepPoint, SweepValue};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Cols {
        param: String,
        value: String,
    }

    pub fn serialize<S: Serializer>(p: &Option<SweepPoint>, s: S) -> Result<S::Ok, S::Error> {
        let (param, value) = match p {
            Some(p) => (p.param.to_string(), p.value.to_string()),
            None => (String::new(), String::new()),
        };
        Cols { param, value }.serialize(s)
    }

    /// A row of an unknown parameter (another synlab version's) reads as no sweep.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SweepPoint>, D::Error> {
        let c = Cols::deserialize(d)?;
        Ok(SweepParam::from_name(&c.param).and_then(|param| {
            SweepValue::parse_text(param, &c.value)
                .ok()
                .map(|value| SweepPoint { param, value })
        }))
    }
}

/// `curve_param` and `curve_value` columns of a summary row: the `[sweep.curves]` setting the
/// point was measured under ("" and "" without curves).
pub mod curve_columns {
    use super::{SweepParam, SweepPoint, SweepValue};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Cols {
        #[serde(default)]
        curve_param: String,
        #[serde(default)]
        curve_value: String,
    }

    pub fn serialize<S: Serializer>(p: &Option<SweepPoint>, s: S) -> Result<S::Ok, S::Error> {
        let (curve_param, curve_value) = match p {
            Some(p) => (p.param.to_string(), p.value.to_string()),
            None => (String::new(), String::new()),
        };
        Cols {
            curve_param,
            curve_value,
        }
        .serialize(s)
    }

    /// A row without the columns (an older run) or of an unknown parameter reads as none.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SweepPoint>, D::Error> {
        let c = Cols::deserialize(d)?;
        Ok(SweepParam::from_name(&c.curve_param).and_then(|param| {
            SweepValue::parse_text(param, &c.curve_value)
                .ok()
                .map(|value| SweepPoint { param, value })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_from_what_the_summary_writes() {
        let cases: [(SweepParam, toml::Value); 11] = [
            (SweepParam::Steer, "sender".into()),
            (SweepParam::Syncookies, 2.into()),
            (SweepParam::Backlog, 16.into()),
            (SweepParam::Load(LoadKnob::Rate), 2000.into()),
            (SweepParam::Load(LoadKnob::Resumed), 0.5.into()),
            (SweepParam::Concurrency, 8.into()),
            (
                SweepParam::Burst,
                toml::Value::Array(vec![4.into(), "10%".into()]),
            ),
            (SweepParam::Workload, "heavy_cgi".into()),
            (SweepParam::Http, "1.1".into()),
            (SweepParam::Path(PathKnob::Rtt), "50ms".into()),
            (SweepParam::Path(PathKnob::Bandwidth), "10mbit".into()),
        ];
        for (p, v) in cases {
            let parsed = SweepValue::parse(p, &v).unwrap();
            assert_eq!(
                SweepValue::parse_text(p, &parsed.to_string()),
                Ok(parsed),
                "{p}"
            );
        }
        assert_eq!(
            SweepValue::parse(SweepParam::Path(PathKnob::Rtt), &"50ms".into())
                .unwrap()
                .x(),
            Some(50.0)
        );
    }

    #[test]
    fn a_value_of_the_wrong_kind_is_refused() {
        let clients = SweepParam::Load(LoadKnob::Clients);
        assert_eq!(
            SweepValue::parse(clients, &"1.5".into()),
            Err(SweepValueError::Load(LoadKnobError::OutOfRange {
                knob: LoadKnob::Clients,
                value: 1.5
            }))
        );
        assert!(matches!(
            SweepValue::parse(SweepParam::Workload, &"nope".into()),
            Err(SweepValueError::NotAWorkload(_))
        ));
        assert_eq!(
            SweepParam::from_name("network.loss"),
            Some(SweepParam::Path(PathKnob::Loss))
        );
        // A share of time at peak is a percentage: a bare 10 could be 10 % or 1000 %.
        let bare = toml::Value::Array(vec![4.into(), 10.into()]);
        assert_eq!(
            SweepValue::parse(SweepParam::Burst, &bare),
            Err(SweepValueError::Unit(UnitError::AmbiguousShare(10.0)))
        );
    }
}
