//! Capacity at a response-time target (seed 004: "the largest throughput ... at which the HTTP
//! response time remains acceptable, e.g. 98 % of requests serviced in less than 0.1 s"), for
//! any sweep: per series of points (a mode, a curve), in the sweep's order, the throughput
//! where the response time at the target's percentile first crosses the target, interpolated
//! linearly between the valid point before it (under) and the one after it (over).
//! Requests/s and bytes/s alike; the points' `capacity_latency_ms` is the percentile they are
//! judged by, so the figure is a hand interpolation from summary.csv. Without a crossing: every
//! point under gives "at least" the highest throughput, none under gives none; a sweep without
//! an order (bursts, workloads) gives its highest throughput under the target.

use super::summary::SummaryRow;
use serde::{Deserialize, Serialize};

/// `[analysis] capacity`: the response-time target (default seed 004's: 98 % under 100 ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityTarget {
    /// The share of requests (%) that must complete under `under`.
    #[serde(default = "default_percentile")]
    pub percentile: f64,
    #[serde(default = "default_under")]
    pub under: super::units::Dur,
}

fn default_percentile() -> f64 {
    98.0
}
fn default_under() -> super::units::Dur {
    super::units::Dur::from_secs(0.1)
}

impl Default for CapacityTarget {
    fn default() -> Self {
        CapacityTarget {
            percentile: default_percentile(),
            under: default_under(),
        }
    }
}

impl CapacityTarget {
    /// The target's percentile as a quantile (0-1).
    pub fn quantile(&self) -> f64 {
        self.percentile / 100.0
    }

    pub fn under_ms(&self) -> f64 {
        self.under.secs() * 1000.0
    }
}

impl std::fmt::Display for CapacityTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p{} under {}", self.percentile, self.under)
    }
}

/// How a series' capacity was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// Between two points, one under the target and one over it.
    Interpolated,
    /// At a point: every valid point past it is over the target, or the sweep has no order
    /// (bursts, workloads) to interpolate along.
    AtPoint,
    /// Every valid point is under the target: the capacity is at least the highest throughput
    /// measured (the sweep did not reach it).
    NotReached,
    /// No valid point is under the target.
    NoneUnder,
    /// No point was valid (failed, CLIENT-BOUND or without a response time).
    NoValidPoint,
}

/// One series' capacity in summary.json's `capacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub mode: String,
    /// The series' curve (`[sweep.curves]`) value, "" without curves.
    #[serde(default)]
    pub curve: String,
    pub percentile: f64,
    pub under_ms: f64,
    pub found: Found,
    /// Responses/s and response bytes/s at capacity (None when none was found).
    pub requests_per_s: Option<f64>,
    pub bytes_per_s: Option<f64>,
    /// The swept parameter's value there, interpolated (None for a sweep without numbers).
    pub at: Option<f64>,
    /// The swept parameter (`network.rtt`) and the unit `at` is in (" ms"; "" for a count);
    /// empty in files written before they were recorded.
    #[serde(default)]
    pub param: String,
    #[serde(default)]
    pub unit: String,
    /// The points it lies between, or the point it is.
    pub points: Vec<usize>,
    /// The series' points the rule left out, and why (their response time is not the
    /// server's, or there is none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<Excluded>,
}

/// A point the capacity rule left out of its series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excluded {
    pub point: usize,
    pub why: Exclusion,
    /// Its response time at the target's percentile, ms (None: none measured).
    pub latency_ms: Option<f64>,
}

/// Why a point does not count towards capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusion {
    /// It failed: its figures are not a measurement.
    Failed,
    /// The client set the pace: its response time is the client's, not the server's.
    ClientBound,
    /// No request completed: it has no response time.
    NoResponseTime,
    /// Interrupted before its hold measured anything: it has no figures at all.
    Unmeasured,
}

impl std::fmt::Display for Exclusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Exclusion::Failed => "failed",
            Exclusion::ClientBound => "CLIENT-BOUND",
            Exclusion::NoResponseTime => "no response time",
            Exclusion::Unmeasured => "not measured",
        })
    }
}

impl Exclusion {
    /// Why such a point does not count: what its figures would have said.
    fn reason(self) -> &'static str {
        match self {
            Exclusion::Failed => "a failed point measured nothing to trust",
            Exclusion::ClientBound => {
                "a CLIENT-BOUND point's response time is the load generator's, not the server's"
            }
            Exclusion::NoResponseTime => "no request completed",
            Exclusion::Unmeasured => {
                "a point interrupted before its hold measured anything has no figures"
            }
        }
    }

    fn of(r: &SummaryRow) -> Option<Exclusion> {
        if r.failed {
            Some(Exclusion::Failed)
        } else if r.client_bound {
            Some(Exclusion::ClientBound)
        } else if !r.measured() {
            Some(Exclusion::Unmeasured)
        } else if !(r.capacity_latency_ms.is_finite() && r.throughput_per_s.is_finite()) {
            Some(Exclusion::NoResponseTime)
        } else {
            None
        }
    }
}

/// "; left out: point 7 (CLIENT-BOUND, p98 265 ms), ...: a CLIENT-BOUND point's ..." — what
/// the sentence excludes and why; "" when nothing was.
fn excluded_text(ex: &[Excluded], percentile: f64) -> String {
    if ex.is_empty() {
        return String::new();
    }
    let pts: Vec<String> = ex
        .iter()
        .map(|e| match e.latency_ms {
            Some(ms) => format!("point {} ({}, p{percentile} {ms:.0} ms)", e.point, e.why),
            None => format!("point {} ({})", e.point, e.why),
        })
        .collect();
    let mut whys: Vec<Exclusion> = Vec::new();
    for e in ex {
        if !whys.contains(&e.why) {
            whys.push(e.why);
        }
    }
    let reasons: Vec<&str> = whys.iter().map(|w| w.reason()).collect();
    format!("; left out: {}: {}", pts.join(", "), reasons.join("; "))
}

impl Capacity {
    /// One line: `capacity closed (p98 under 100 ms): 963 responses/s, 1.200 MB/s at 121.2
    /// (between points 6 and 7)`.
    pub fn line(&self) -> String {
        let series: String = [self.mode.as_str(), self.curve.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" {s}"))
            .collect();
        let head = format!(
            "capacity{series} (p{} under {} ms)",
            self.percentile, self.under_ms
        );
        let where_ = match self.points.as_slice() {
            [a, b] => format!("between points {a} and {b}"),
            [a] => format!("point {a}"),
            _ => String::new(),
        };
        let left_out = excluded_text(&self.excluded, self.percentile);
        match (self.found, self.requests_per_s) {
            (Found::NoneUnder, _) => {
                format!("{head}: none: no valid point met the target{left_out}")
            }
            (Found::NoValidPoint, _) | (_, None) => {
                format!("{head}: not measured: no valid point{left_out}")
            }
            (found, Some(r)) => {
                let at = self
                    .at
                    .map(|x| format!(" at {} {x:.1}{}", self.param, self.unit).replace("  ", " "))
                    .unwrap_or_default();
                let reached = if found == Found::NotReached {
                    "at least "
                } else {
                    ""
                };
                format!(
                    "{head}: {reached}{r:.0} responses/s, {:.3} MB/s{at} ({where_}{}){left_out}",
                    self.bytes_per_s.unwrap_or(f64::NAN) / 1e6,
                    match (found, self.excluded.is_empty()) {
                        (Found::NotReached, true) => ": every point met the target",
                        (Found::NotReached, false) => ": every valid point met the target",
                        _ => "",
                    }
                )
            }
        }
    }
}

/// A point as the capacity rule reads it.
struct Pt {
    point: usize,
    x: Option<f64>,
    latency: f64,
    rate: f64,
    bytes: f64,
}

/// The capacity of each series (mode, curve) of `rows`, in order of first appearance; none
/// without a sweep. `x` gives a point's position along the sweep (None: no order).
pub fn capacities(rows: &[SummaryRow], target: &CapacityTarget) -> Vec<Capacity> {
    let mut series: Vec<(String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.sweep.is_some()) {
        let k = (r.mode.clone(), r.curve_text());
        if !series.contains(&k) {
            series.push(k);
        }
    }
    series
        .into_iter()
        .map(|(mode, curve)| {
            let pts: Vec<&SummaryRow> = rows
                .iter()
                .filter(|r| r.sweep.is_some() && r.mode == mode && r.curve_text() == curve)
                .collect();
            of_series(mode, curve, &pts, target)
        })
        .collect()
}

fn of_series(mode: String, curve: String, rows: &[&SummaryRow], t: &CapacityTarget) -> Capacity {
    let excluded: Vec<Excluded> = rows
        .iter()
        .filter_map(|r| {
            Some(Excluded {
                point: r.point,
                why: Exclusion::of(r)?,
                latency_ms: r
                    .capacity_latency_ms
                    .is_finite()
                    .then_some(r.capacity_latency_ms),
            })
        })
        .collect();
    let mut pts: Vec<Pt> = rows
        .iter()
        .filter(|r| Exclusion::of(r).is_none())
        .map(|r| Pt {
            point: r.point,
            x: r.sweep.and_then(|s| s.value.x()),
            latency: r.capacity_latency_ms,
            rate: r.throughput_per_s,
            bytes: r.bytes_in_per_s,
        })
        .collect();
    let ordered = pts.iter().all(|p| p.x.is_some());
    if ordered {
        pts.sort_by(|a, b| a.x.unwrap_or(0.0).total_cmp(&b.x.unwrap_or(0.0)));
    }
    let under = t.under_ms();
    let meets = |p: &Pt| p.latency <= under;
    let mut out = Capacity {
        mode,
        curve,
        percentile: t.percentile,
        under_ms: under,
        found: Found::NoValidPoint,
        requests_per_s: None,
        bytes_per_s: None,
        at: None,
        param: String::new(),
        unit: String::new(),
        points: Vec::new(),
        excluded,
    };
    if let Some(s) = rows.iter().find_map(|r| r.sweep) {
        out.param = s.param.to_string();
        out.unit = s.value.x_unit().to_string();
    }
    if pts.is_empty() {
        return out;
    }
    // (rate, bytes, x, points, interpolated)
    let crossing = pts
        .windows(2)
        .filter(|_| ordered)
        .find(|w| meets(&w[0]) && !meets(&w[1]))
        .map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let f = (under - a.latency) / (b.latency - a.latency);
            let lerp = |u: f64, v: f64| u + f * (v - u);
            let x = a.x.zip(b.x).map(|(u, v)| lerp(u, v));
            (
                lerp(a.rate, b.rate),
                lerp(a.bytes, b.bytes),
                x,
                vec![a.point, b.point],
                true,
            )
        });
    let best = crossing.or_else(|| {
        pts.iter()
            .filter(|p| meets(p))
            .max_by(|a, b| a.rate.total_cmp(&b.rate))
            .map(|p| (p.rate, p.bytes, p.x, vec![p.point], false))
    });
    match best {
        None => out.found = Found::NoneUnder,
        Some((rate, bytes, x, points, interpolated)) => {
            out.found = if interpolated {
                Found::Interpolated
            } else if pts.iter().all(meets) {
                Found::NotReached
            } else {
                Found::AtPoint
            };
            out.requests_per_s = Some(rate);
            out.bytes_per_s = Some(bytes);
            out.at = x;
            out.points = points;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SweepParam, SweepPoint, SweepValue};

    fn row(point: usize, clients: u32, latency: f64, rate: f64) -> SummaryRow {
        SummaryRow {
            point,
            mode: "closed".into(),
            sweep: Some(SweepPoint {
                param: SweepParam::Load(crate::model::LoadKnob::Clients),
                value: SweepValue::Load(crate::model::LoadKnob::Clients, clients as f64),
            }),
            hold_s: 10.0,
            capacity_latency_ms: latency,
            throughput_per_s: rate,
            bytes_in_per_s: rate * 1000.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_point_interrupted_before_it_measured_is_left_out_as_not_measured() {
        let mut cut = row(3, 128, f64::NAN, f64::NAN);
        cut.hold_s = 0.0;
        let rows = [row(1, 32, 5.0, 600.0), row(2, 64, 20.0, 900.0), cut];
        let c = &capacities(&rows, &CapacityTarget::default())[0];
        assert_eq!(c.excluded.len(), 1, "{c:?}");
        assert_eq!(c.excluded[0].why, Exclusion::Unmeasured);
        let line = c.line();
        assert!(line.contains("point 3 (not measured)"), "{line}");
        assert!(!line.contains("no request completed"), "{line}");
    }

    #[test]
    fn capacity_is_interpolated_where_the_target_is_crossed() {
        // Points out of order on purpose: the sweep's order is its values'.
        let rows = [
            row(3, 128, 80.0, 960.0),
            row(1, 32, 5.0, 600.0),
            row(4, 192, 160.0, 950.0),
            row(2, 64, 20.0, 900.0),
        ];
        let c = &capacities(&rows, &CapacityTarget::default())[0];
        assert_eq!(c.found, Found::Interpolated);
        // 80 -> 160 ms crosses 100 ms a quarter of the way: 960 + 0.25 x (950 - 960).
        assert!((c.requests_per_s.unwrap() - 957.5).abs() < 1e-9, "{c:?}");
        assert!((c.bytes_per_s.unwrap() - 957_500.0).abs() < 1e-6);
        assert!((c.at.unwrap() - 144.0).abs() < 1e-9);
        assert_eq!(c.points, [3, 4]);
        assert!(c.line().contains("958 responses/s"), "{}", c.line());
        // Where along the sweep, named with its unit (before: a bare "at 144.0").
        assert!(
            c.line().contains(" at load.clients 144.0 ("),
            "{}",
            c.line()
        );
        let mut rtt = rows[0].clone();
        rtt.sweep = Some(SweepPoint {
            param: SweepParam::Path(crate::model::PathKnob::Rtt),
            value: SweepValue::Path(crate::model::knob::PathValue::Rtt(
                crate::model::units::Dur::from_secs(0.0199),
            )),
        });
        let c = &capacities(&[rtt], &CapacityTarget::default())[0];
        assert!(
            c.line().contains(" at network.rtt 19.9 ms ("),
            "{}",
            c.line()
        );
    }

    #[test]
    fn capacity_is_at_the_first_crossing_even_where_throughput_falls_past_it() {
        // 10 -> 300 ms crosses 100 ms at 90/290 of the way, throughput falling 900 -> 500;
        // a later point back under the target (noise) does not move it.
        let rows = [
            row(1, 8, 10.0, 900.0),
            row(2, 16, 300.0, 500.0),
            row(3, 32, 90.0, 950.0),
        ];
        let c = &capacities(&rows, &CapacityTarget::default())[0];
        assert_eq!(c.found, Found::Interpolated);
        let want = 900.0 + 90.0 / 290.0 * (500.0 - 900.0);
        assert!((c.requests_per_s.unwrap() - want).abs() < 1e-9, "{c:?}");
        assert_eq!(c.points, [1, 2]);
        // Over the target from the start, under later: the highest point under, said so.
        let rows = [row(1, 8, 200.0, 900.0), row(2, 16, 90.0, 500.0)];
        let c = &capacities(&rows, &CapacityTarget::default())[0];
        assert_eq!((c.found, c.points.as_slice()), (Found::AtPoint, &[2][..]));
    }

    #[test]
    fn invalid_points_are_skipped_and_the_edges_said() {
        let mut bound = row(2, 16, 20.0, 2000.0);
        bound.client_bound = true;
        let rows = [row(1, 8, 10.0, 500.0), bound, row(3, 32, 30.0, 800.0)];
        let c = &capacities(&rows, &CapacityTarget::default())[0];
        assert_eq!(c.found, Found::NotReached);
        assert_eq!(c.requests_per_s, Some(800.0));
        assert!(c.line().contains("at least 800"), "{}", c.line());
        // The sentence says what it left out and why, not that every point met the target.
        let line = c.line();
        assert!(
            line.contains("every valid point met the target); left out: point 2 (CLIENT-BOUND, p98 20 ms): a CLIENT-BOUND point's response time is the load generator's"),
            "{line}"
        );
        assert_eq!(c.excluded[0].why, Exclusion::ClientBound);
        let all = [row(1, 8, 10.0, 500.0), row(3, 32, 30.0, 800.0)];
        let line = capacities(&all, &CapacityTarget::default())[0].line();
        assert!(
            line.ends_with("(point 3: every point met the target)"),
            "{line}"
        );
        let slow = [row(1, 8, 200.0, 500.0)];
        assert_eq!(
            capacities(&slow, &CapacityTarget::default())[0].found,
            Found::NoneUnder
        );
        let mut failed = row(1, 8, 10.0, 500.0);
        failed.failed = true;
        assert_eq!(
            capacities(&[failed], &CapacityTarget::default())[0].found,
            Found::NoValidPoint
        );
        assert!(capacities(&[SummaryRow::default()], &CapacityTarget::default()).is_empty());
    }

    #[test]
    fn each_mode_and_curve_is_its_own_series() {
        let mut other = row(1, 8, 10.0, 100.0);
        other.mode = "sclient".into();
        let rows = [row(1, 8, 10.0, 500.0), other];
        let c = capacities(&rows, &CapacityTarget::default());
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].requests_per_s, Some(100.0));
    }
}
