//! `[[threshold]]` and `[gate]`: what makes a headless run fail for CI. The model, the parsing
//! of bounds (with the metric's unit, or relative to another metric of the same point) and their
//! validation against summary.json's columns. Evaluation lives in `report::thresholds`.

use crate::model::summary::{SummaryCol, SummaryText};
use crate::model::units::UnitError;
use crate::model::Unit;
use serde::{Deserialize, Serialize};

/// One `[[threshold]]`: a bound on a summary.json column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ThresholdSpec {
    /// A numeric column of summary.json, e.g. `total_p99_ms`.
    pub metric: String,
    /// Upper bound: a number in the metric's unit, a string with a unit (`"50ms"`, `"5k"`,
    /// `"2%"`), or relative to another metric of the same point (`"1.1 x offered_rate"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<RawBound>,
    /// Lower bound, written as `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<RawBound>,
    /// Only these points (1-based numbers, as in the run table).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<usize>,
    /// Only the points at these sweep values (as written in `[sweep] values`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<toml::Value>,
    /// `points` (default): judge each point; `run`: judge the metric aggregated over the run.
    #[serde(default, skip_serializing_if = "is_default")]
    pub over: Over,
    /// How `over = "run"` aggregates the points: `mean` (default), `max` or `min`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub aggregate: Aggregate,
    /// Stop the run at the first point that fails this threshold.
    #[serde(default, skip_serializing_if = "is_default")]
    pub abort_on_fail: bool,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// A bound as written: a number or a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RawBound {
    Num(f64),
    Text(String),
}

impl std::fmt::Display for RawBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RawBound::Num(v) => write!(f, "{v}"),
            RawBound::Text(s) => write!(f, "{s}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Over {
    #[default]
    Points,
    Run,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    #[default]
    Mean,
    Max,
    Min,
}

/// `[gate]`: run-wide conditions that fail the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GateSpec {
    /// Fail when any point is CLIENT-BOUND (the load generator, not the server, set its numbers).
    #[serde(skip_serializing_if = "is_default")]
    pub fail_on_client_bound: bool,
    /// Fail when a point's cross-check disagrees past its tolerance (`probe::crosscheck`: SYNs
    /// vs attempts, server vs client responses).
    #[serde(skip_serializing_if = "is_default")]
    pub fail_on_crosscheck: bool,
    /// Stop the run at the first point that fails any threshold or gate condition.
    #[serde(skip_serializing_if = "is_default")]
    pub abort_on_fail: bool,
    /// The response statuses that count as good (`good_per_s`); every other 4xx and 5xx is a
    /// failed response (`failed_responses_per_s`, `error_share_pct`). Empty: every 2xx.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub good_statuses: Vec<u16>,
}

impl GateSpec {
    /// True when it judges nothing (`good_statuses` says how to count, not what to judge).
    pub fn is_empty(&self) -> bool {
        let GateSpec {
            fail_on_client_bound,
            fail_on_crosscheck,
            abort_on_fail,
            good_statuses: _,
        } = self;
        !(*fail_on_client_bound || *fail_on_crosscheck || *abort_on_fail)
    }

    /// Why `good_statuses` cannot be used: (index, problem) per status outside 100-599.
    pub fn status_problems(&self) -> Vec<(usize, NotAStatus)> {
        self.good_statuses
            .iter()
            .enumerate()
            .filter(|(_, s)| !(100..=599).contains(*s))
            .map(|(i, s)| (i, NotAStatus(*s)))
            .collect()
    }
}

/// A `[gate] good_statuses` entry outside the HTTP statuses (100 to 599).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not an HTTP status: name statuses from 100 to 599, e.g. [200, 304]")]
pub struct NotAStatus(pub u16);

/// A parsed bound: `factor x metric` of the same point, or an absolute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Abs(f64),
    Rel { factor: f64, metric: SummaryCol },
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Abs(v) => write!(f, "{v}"),
            Bound::Rel { factor, metric } => write!(f, "{factor} x {}", metric.name()),
        }
    }
}

/// The numeric columns of summary.json (booleans count as 0/1), in the file's order, then the
/// run's own figures ([`RunMetric`]).
fn metric_names() -> Vec<String> {
    SummaryCol::ALL
        .iter()
        .map(|c| c.name().to_string())
        .chain(RunMetric::ALL.iter().map(|m| m.name().to_string()))
        .collect()
}

/// A figure of the whole run a threshold may bound (summary.json's `capacity`): judged once
/// per series of the sweep at the run's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMetric {
    /// Responses/s at capacity (`capacity[i].requests_per_s`).
    CapacityPerS,
    /// Response bytes/s at capacity (`capacity[i].bytes_per_s`).
    CapacityBytesPerS,
}

impl RunMetric {
    pub const ALL: [RunMetric; 2] = [RunMetric::CapacityPerS, RunMetric::CapacityBytesPerS];

    pub fn name(self) -> &'static str {
        match self {
            RunMetric::CapacityPerS => "capacity_per_s",
            RunMetric::CapacityBytesPerS => "capacity_bytes_per_s",
        }
    }

    pub fn parse(name: &str) -> Option<RunMetric> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Its value in one series' capacity (None: not found).
    pub fn of(self, c: &crate::model::capacity::Capacity) -> Option<f64> {
        match self {
            RunMetric::CapacityPerS => c.requests_per_s,
            RunMetric::CapacityBytesPerS => c.bytes_per_s,
        }
    }

    /// A bound on it: a number or a rate with a suffix (`950`, `"1.2k"`, `"5M"`).
    pub fn parse_bound(self, raw: &RawBound) -> Result<f64, GateError> {
        match raw {
            RawBound::Num(v) => Ok(*v),
            RawBound::Text(s) => super::units::Num::parse(s.trim())
                .map(|n| n.0)
                .map_err(|unit| GateError::RunBound {
                    unit,
                    metric: self.name(),
                }),
        }
    }
}

/// Why a threshold's metric or bound cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("`{name}` is a text column (or a nested object) of summary.json; a threshold needs a number\nhelp: the nearest numeric columns: {near}; every one is listed in docs/summary.schema.json", near = closest(name, 3).join(", "))]
    TextColumn { name: String },
    #[error("unknown metric `{name}`\nhelp: did you mean `{nearest}`? (any numeric column of summary.json)")]
    UnknownMetricNear { name: String, nearest: String },
    #[error("unknown metric `{name}`\nhelp: the nearest numeric columns of summary.json: {near}; every one is listed in docs/summary.schema.json", near = closest(name, 3).join(", "))]
    UnknownMetric { name: String },
    #[error("in `{bound}`: the factor {unit}; write e.g. \"0.95 x offered_rate\"")]
    Factor { bound: String, unit: UnitError },
    #[error("in `{bound}`: {metric}")]
    RelativeTo {
        bound: String,
        metric: Box<GateError>,
    },
    #[error("`{0}` is not a percentage; write e.g. \"2%\"")]
    NotAPercentage(String),
    #[error("{unit}\nhelp: a bound is a number in {}'s unit, a value with a unit, or \"F x METRIC\"", .metric.name())]
    Bound { unit: UnitError, metric: SummaryCol },
    #[error("{bad}\nhelp: a bound is a number in {}'s unit, a value with a unit, or \"F x METRIC\"", .metric.name())]
    Percentage {
        bad: Box<GateError>,
        metric: SummaryCol,
    },
    #[error("{unit}\nhelp: {metric} is bounded by a number per second, e.g. 950 or \"1.2k\"")]
    RunBound {
        unit: UnitError,
        metric: &'static str,
    },
}

/// The `n` metric names nearest to `name` by edit distance, quoted: what an error offers
/// when no name is near enough to be the likely intent (never the whole list of ~90).
pub fn closest(name: &str, n: usize) -> Vec<String> {
    let mut names = metric_names();
    // A part of a column's name (`p99_ms` of `total_p99_ms`) names it better than a short
    // column a few edits away (`end_s`).
    let part = |c: &str| name.len() >= 3 && c.contains(name);
    names.sort_by_key(|c| (!part(c), strsim::damerau_levenshtein(name, c), c.clone()));
    names
        .into_iter()
        .take(n)
        .map(|c| format!("`{c}`"))
        .collect()
}

/// The summary column a metric names; the error names the nearest column.
pub fn check_metric(name: &str) -> Result<SummaryCol, GateError> {
    if let Some(c) = SummaryCol::parse(name) {
        return Ok(c);
    }
    if SummaryText::ALL.iter().any(|t| t.name() == name) {
        return Err(GateError::TextColumn { name: name.into() });
    }
    Err(match super::diag::nearest(name, &metric_names()) {
        Some(n) => GateError::UnknownMetricNear {
            name: name.into(),
            nearest: n.to_string(),
        },
        None => GateError::UnknownMetric { name: name.into() },
    })
}

/// Parses a bound for `metric`: numbers are in the metric's unit (ms, s, %, /s); strings may
/// carry a unit, or be `F x METRIC`.
pub fn parse_bound(raw: &RawBound, metric: SummaryCol) -> Result<Bound, GateError> {
    let s = match raw {
        RawBound::Num(v) => return Ok(Bound::Abs(*v)),
        RawBound::Text(s) => s.trim(),
    };
    let rel = s
        .split_once(" x ")
        .or_else(|| s.split_once('*'))
        .or_else(|| s.split_once('×'));
    if let Some((f, m)) = rel {
        let factor: f64 = super::units::Num::parse(f.trim())
            .map_err(|unit| GateError::Factor {
                bound: s.into(),
                unit,
            })?
            .0;
        let metric = check_metric(m.trim()).map_err(|e| GateError::RelativeTo {
            bound: s.into(),
            metric: Box::new(e),
        })?;
        return Ok(Bound::Rel { factor, metric });
    }
    if let Some(metric) = SummaryCol::parse(s) {
        return Ok(Bound::Rel {
            factor: 1.0,
            metric,
        });
    }
    parse_abs(s, metric).map(Bound::Abs)
}

/// An absolute value in `metric`'s unit.
fn parse_abs(s: &str, metric: SummaryCol) -> Result<f64, GateError> {
    use super::units::{Dur, Num};
    let plain = s.parse::<f64>().ok().filter(|v| v.is_finite());
    if let Some(v) = plain {
        return Ok(v);
    }
    let bound = |unit| GateError::Bound { unit, metric };
    match metric.unit() {
        Unit::Milliseconds => Dur::parse(s).map(|d| d.secs() * 1e3).map_err(bound),
        Unit::Seconds => Dur::parse(s).map(|d| d.secs()).map_err(bound),
        Unit::Percent => s
            .strip_suffix('%')
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or_else(|| {
                let bad = Box::new(GateError::NotAPercentage(s.into()));
                GateError::Percentage { bad, metric }
            }),
        _ => Num::parse(s).map(|n| n.0).map_err(bound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_of_a_columns_name_suggests_the_columns_that_hold_it() {
        let near = closest("p99_ms", 3);
        assert!(near.contains(&"`total_p99_ms`".to_string()), "{near:?}");
        assert!(!near.contains(&"`end_s`".to_string()), "{near:?}");
    }

    #[test]
    fn bounds_take_the_metrics_unit_or_another_metric() {
        let b = |s: &str, m: &str| {
            parse_bound(&RawBound::Text(s.into()), SummaryCol::parse(m).unwrap())
        };
        assert_eq!(b("50ms", "total_p99_ms"), Ok(Bound::Abs(50.0)));
        assert_eq!(b("1.5s", "total_p99_ms"), Ok(Bound::Abs(1500.0)));
        assert_eq!(b("5k", "throughput_per_s"), Ok(Bound::Abs(5000.0)));
        assert_eq!(b("-3%", "check_server_vs_client_pct"), Ok(Bound::Abs(-3.0)));
        assert_eq!(b("12", "accept_queue_max"), Ok(Bound::Abs(12.0)));
        assert_eq!(
            b("0.95 x offered_rate", "throughput_per_s"),
            Ok(Bound::Rel {
                factor: 0.95,
                metric: SummaryCol::OfferedRate
            })
        );
        assert_eq!(
            b("attempts_per_s", "throughput_per_s"),
            Ok(Bound::Rel {
                factor: 1.0,
                metric: SummaryCol::AttemptsPerS
            })
        );
        let e = b("0.95 x offered_rat", "throughput_per_s").unwrap_err();
        assert!(
            matches!(&e, GateError::RelativeTo { metric, .. }
                if matches!(&**metric, GateError::UnknownMetricNear { nearest, .. } if nearest == "offered_rate")),
            "{e:?}"
        );
        assert!(b("50", "total_p99_ms").is_ok());
        assert!(b("fast", "total_p99_ms").is_err());
    }

    #[test]
    fn good_statuses_are_http_statuses_and_judge_nothing_alone() {
        let sc = crate::scenario::parse(
            "s.toml",
            "[load]\nrate = 10\n[gate]\ngood_statuses = [200, 304]\n",
        )
        .unwrap();
        assert_eq!(sc.gate.good_statuses, [200, 304]);
        assert!(sc.gate.is_empty(), "good_statuses alone judges nothing");
        let e = crate::scenario::parse(
            "s.toml",
            "[load]\nrate = 10\n[gate]\ngood_statuses = [200, 304, 700]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("s.toml:4"), "{e}");
        assert!(e.contains("gate.good_statuses[2]"), "{e}");
        assert!(e.contains("700 is not an HTTP status"), "{e}");
    }

    #[test]
    fn metrics_are_the_numeric_columns() {
        let names = metric_names();
        assert!(names.contains(&"total_p99_ms".to_string()));
        assert!(names.contains(&"client_bound".to_string()));
        assert!(!names.contains(&"backend".to_string()));
        assert_eq!(
            check_metric("throughput_per_sec"),
            Err(GateError::UnknownMetricNear {
                name: "throughput_per_sec".into(),
                nearest: "throughput_per_s".into()
            })
        );
        assert_eq!(check_metric("total_p99_ms"), Ok(SummaryCol::TotalP99Ms));
        assert_eq!(
            check_metric("backend"),
            Err(GateError::TextColumn {
                name: "backend".into()
            })
        );
        // Nothing near: the three nearest, not the ~90 names.
        let e = check_metric("zzzzzzzzzzzzzzzzzzzzzzz")
            .unwrap_err()
            .to_string();
        assert_eq!(e.matches('`').count(), 2 + 6, "{e}");
        assert!(e.contains("docs/summary.schema.json"), "{e}");
        assert!(e.len() < 300, "{e}");
    }
}
