//! Verdicts of a scenario's `[[threshold]]`s and `[gate]` on summary rows: per point as the run
//! goes (so `abort_on_fail` can stop it), and over the whole run at its end. They go in the run
//! table, summary.json (`thresholds`), report.md, JUnit XML and the exit code (3 on a failure).

use crate::model::summary::SummaryCol;
use crate::model::SummaryRow;
use crate::probe::crosscheck;
use crate::scenario::gate::{
    check_metric, parse_bound, Aggregate, Bound, GateSpec, Over, RawBound, RunMetric, ThresholdSpec,
};
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};

/// One judged condition at one point (or over the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// What was checked, e.g. `total_p99_ms <= 50` or `gate: not client-bound`.
    pub check: String,
    /// `threshold[i]`, or `gate` for `[gate]` conditions: which part of the scenario asked.
    pub source: String,
    /// The 1-based point; None for a threshold over the whole run.
    pub point: Option<usize>,
    /// The point's sweep value ("" without a sweep or over the run).
    pub value: String,
    /// The measured value (None when it was not measured).
    pub measured: Option<f64>,
    /// The bound it was held to (None for yes/no gate conditions).
    pub limit: Option<f64>,
    pub passed: bool,
    /// One line a person reads: threshold, point and measured value.
    pub message: String,
}

/// What a scenario asks of its results.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    pub thresholds: Vec<Threshold>,
    /// Thresholds on the run's capacity, judged once per series at its end.
    pub capacity: Vec<CapacityThreshold>,
    pub gate: GateSpec,
}

/// A `[[threshold]]` on the run's capacity (`capacity_per_s`, `capacity_bytes_per_s`).
#[derive(Debug, Clone)]
pub struct CapacityThreshold {
    pub index: usize,
    pub metric: RunMetric,
    bounds: Vec<(Op, RawBound, f64)>,
}

/// A `[[threshold]]` ready to judge: its metric and bounds parsed once, when the gate is made.
#[derive(Debug, Clone)]
pub struct Threshold {
    /// Its place in the scenario (`threshold[i]`).
    pub index: usize,
    pub spec: ThresholdSpec,
    metric: SummaryCol,
    bounds: Vec<(Op, RawBound, Bound)>,
}

impl Gate {
    /// The scenario's thresholds and gate. A threshold whose metric or bound does not parse
    /// was refused when the scenario was read (`scenario::validate::gate_problems`); it is left out.
    pub fn of(sc: &Scenario) -> Self {
        let thresholds = sc
            .thresholds
            .iter()
            .enumerate()
            .filter_map(|(index, t)| {
                let metric = check_metric(&t.metric).ok()?;
                let bounds = [(Op::Max, &t.max), (Op::Min, &t.min)]
                    .into_iter()
                    .filter_map(|(op, raw)| {
                        let raw = raw.as_ref()?;
                        Some((op, raw.clone(), parse_bound(raw, metric).ok()?))
                    })
                    .collect();
                Some(Threshold {
                    index,
                    spec: t.clone(),
                    metric,
                    bounds,
                })
            })
            .collect();
        let capacity = sc
            .thresholds
            .iter()
            .enumerate()
            .filter_map(|(index, t)| {
                let metric = RunMetric::parse(&t.metric)?;
                let bounds = [(Op::Max, &t.max), (Op::Min, &t.min)]
                    .into_iter()
                    .filter_map(|(op, raw)| {
                        let raw = raw.as_ref()?;
                        Some((op, raw.clone(), metric.parse_bound(raw).ok()?))
                    })
                    .collect();
                Some(CapacityThreshold {
                    index,
                    metric,
                    bounds,
                })
            })
            .collect();
        Gate {
            thresholds,
            capacity,
            gate: sc.gate.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.thresholds.is_empty() && self.capacity.is_empty() && self.gate.is_empty()
    }

    /// The verdicts of the capacity thresholds: one per series of the sweep (a series whose
    /// capacity was not found fails, saying why).
    pub fn judge_capacity(&self, found: &[crate::model::capacity::Capacity]) -> Vec<Verdict> {
        let mut out = Vec::new();
        for th in &self.capacity {
            for c in found {
                let series = [c.mode.as_str(), c.curve.as_str()]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
                for (op, raw, limit) in &th.bounds {
                    let (sym, ok): (&str, fn(f64, f64) -> bool) = match op {
                        Op::Max => ("<=", |m, l| m <= l),
                        Op::Min => (">=", |m, l| m >= l),
                    };
                    let check = format!("{} {sym} {raw}", th.metric.name());
                    let measured = th.metric.of(c);
                    let passed = measured.is_some_and(|m| ok(m, *limit));
                    let message = match measured {
                        Some(m) => format!(
                            "threshold `{check}` at the run's capacity ({series}, p{} under {} ms): {} = {}: {}",
                            c.percentile,
                            c.under_ms,
                            th.metric.name(),
                            short(m),
                            if passed { "pass" } else { "FAIL" }
                        ),
                        None => format!("threshold `{check}`: {}", c.line()),
                    };
                    out.push(Verdict {
                        check,
                        source: format!("threshold[{}]", th.index),
                        point: None,
                        value: series.clone(),
                        measured,
                        limit: Some(*limit),
                        passed,
                        message,
                    });
                }
            }
        }
        out
    }

    /// The verdicts for one finished point (thresholds over points, and `[gate]` conditions).
    pub fn judge_point(&self, row: &SummaryRow) -> Vec<Verdict> {
        let mut out = Vec::new();
        // A point that failed is a failed check of its own (JUnit lists it), thresholds or not.
        if row.failed {
            out.push(Verdict {
                check: "point measured".into(),
                source: "run".into(),
                point: Some(row.point),
                value: row.value_text(),
                measured: None,
                limit: None,
                passed: false,
                message: format!("point {} failed: {}", point_label(row), row.error),
            });
        }
        for th in &self.thresholds {
            let (t, metric) = (&th.spec, th.metric);
            if t.over != Over::Points || !selects(t, row) {
                continue;
            }
            for (op, raw, bound) in &th.bounds {
                let measured = get(row, metric);
                let limit = match bound {
                    Bound::Abs(v) => Some(*v),
                    Bound::Rel { factor, metric } => get(row, *metric).map(|v| v * factor),
                };
                let why_not = row
                    .failed
                    .then(|| format!("the point failed: {}", row.error));
                out.push(verdict(
                    th.index,
                    &t.metric,
                    (*op, raw),
                    bound,
                    Some(row),
                    measured,
                    limit,
                    why_not,
                ));
            }
        }
        if self.gate.fail_on_client_bound {
            out.push(Verdict {
                check: "gate: not client-bound".into(),
                source: "gate".into(),
                point: Some(row.point),
                value: row.value_text(),
                measured: Some(if row.client_bound { 1.0 } else { 0.0 }),
                limit: None,
                passed: !row.client_bound,
                message: if row.client_bound {
                    format!(
                        "point {} was CLIENT-BOUND ({}): the load generator set its numbers",
                        point_label(row),
                        row.client_bound_reason
                    )
                } else {
                    format!("point {}: not client-bound", point_label(row))
                },
            });
        }
        if self.gate.fail_on_crosscheck {
            let syn_tol = crosscheck::syn_tolerance_of(row.check_syn_tolerance_pct);
            // Over HTTP/3 the check counts first QUIC Initials: its message says so, its
            // `check` (an ID) keeps the SYNs.
            let quic = row.quic();
            for (key, short, what, tol) in [
                (
                    SummaryCol::CheckSynVsAttemptsPct,
                    FIRST_PACKETS_CHECK,
                    if quic {
                        "first QUIC Initials at the server (repeated Initials left out) vs \
                         client attempts"
                    } else {
                        "first SYNs at the server (retransmitted SYNs left out) vs client attempts"
                    },
                    syn_tol,
                ),
                (
                    SummaryCol::CheckServerVsClientPct,
                    "server vs client responses",
                    "server vs client responses",
                    crosscheck::TOLERANCE_PCT,
                ),
            ] {
                let d = get(row, key);
                let mut passed = d.is_none_or(|d| !crosscheck::disagrees(d, tol));
                // The server above the clients by what they abandoned at T is not a failure,
                // and its verdict says so.
                let verdict = (key == SummaryCol::CheckServerVsClientPct)
                    .then(|| responses_verdict(row))
                    .flatten();
                if let Some(v) = &verdict {
                    passed = v.passes();
                }
                out.push(Verdict {
                    check: format!("gate: cross-check {short} within {tol:.1} %"),
                    source: "gate".into(),
                    point: Some(row.point),
                    value: row.value_text(),
                    measured: d,
                    limit: Some(tol),
                    passed,
                    message: match (d, &verdict) {
                        (_, Some(v)) => format!("point {}: {v}", point_label(row)),
                        (None, _) => format!("point {}: {what}: not measured", point_label(row)),
                        (Some(d), None) => format!(
                            "point {}: {what} differ by {d:+.1} % ({} {tol:.1} %)",
                            point_label(row),
                            if passed { "within" } else { "more than" }
                        ),
                    },
                });
            }
        }
        out
    }

    /// The verdicts of thresholds over the whole run (`over = "run"`).
    pub fn judge_run(&self, rows: &[SummaryRow]) -> Vec<Verdict> {
        let all: Vec<&SummaryRow> = rows.iter().filter(|r| !r.failed).collect();
        let mut out = Vec::new();
        for th in &self.thresholds {
            let (t, metric) = (&th.spec, th.metric);
            if t.over != Over::Run {
                continue;
            }
            let agg = |m: SummaryCol| {
                let vals: Vec<f64> = all.iter().filter_map(|r| get(r, m)).collect();
                if vals.is_empty() {
                    return None;
                }
                Some(match t.aggregate {
                    Aggregate::Mean => vals.iter().sum::<f64>() / vals.len() as f64,
                    Aggregate::Max => vals.iter().copied().fold(f64::MIN, f64::max),
                    Aggregate::Min => vals.iter().copied().fold(f64::MAX, f64::min),
                })
            };
            for (op, raw, bound) in &th.bounds {
                let limit = match bound {
                    Bound::Abs(v) => Some(*v),
                    Bound::Rel { factor, metric } => agg(*metric).map(|v| v * factor),
                };
                let why_not = all
                    .is_empty()
                    .then(|| "no point of the run was measured".to_string());
                out.push(verdict(
                    th.index,
                    &t.metric,
                    (*op, raw),
                    bound,
                    None,
                    agg(metric),
                    limit,
                    why_not,
                ));
            }
        }
        out
    }

    /// Whether a failing verdict among `v` asks the run to stop.
    pub fn aborts(&self, v: &[Verdict]) -> bool {
        v.iter().filter(|v| !v.passed).any(|v| {
            self.gate.abort_on_fail
                || v.source
                    .strip_prefix("threshold[")
                    .and_then(|s| s.trim_end_matches(']').parse::<usize>().ok())
                    .and_then(|i| self.thresholds.iter().find(|t| t.index == i))
                    .is_some_and(|t| t.spec.abort_on_fail)
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Max,
    Min,
}

#[allow(clippy::too_many_arguments)]
fn verdict(
    i: usize,
    metric: &str,
    (op, raw): (Op, &RawBound),
    bound: &Bound,
    row: Option<&SummaryRow>,
    measured: Option<f64>,
    limit: Option<f64>,
    why_not: Option<String>,
) -> Verdict {
    let sym = match op {
        Op::Max => "<=",
        Op::Min => ">=",
    };
    // As written: `50ms`, `0.95 x offered_rate`.
    let check = format!("{metric} {sym} {raw}");
    let at = match row {
        Some(r) => format!("point {}", point_label(r)),
        None => "the run".to_string(),
    };
    let (passed, message) = match (why_not, measured, limit) {
        (Some(w), _, _) => (false, format!("threshold `{check}` at {at}: {w}")),
        (None, None, _) => (
            false,
            format!("threshold `{check}` at {at}: {metric} was not measured"),
        ),
        (None, Some(m), None) => (
            false,
            format!("threshold `{check}` at {at}: {metric} = {m:.4}, but the bound's metric was not measured"),
        ),
        (None, Some(m), Some(l)) => {
            let ok = match op {
                Op::Max => m <= l,
                Op::Min => m >= l,
            };
            let rel = match bound {
                Bound::Rel { .. } => format!(" ({bound} = {})", short(l)),
                Bound::Abs(_) => String::new(),
            };
            (
                ok,
                format!(
                    "threshold `{check}` at {at}: {metric} = {}{}{rel}: {}",
                    short(m),
                    unit_note(metric),
                    if ok { "pass" } else { "FAIL" }
                ),
            )
        }
    };
    Verdict {
        check,
        source: format!("threshold[{i}]"),
        point: row.map(|r| r.point),
        value: row.map(SummaryRow::value_text).unwrap_or_default(),
        measured,
        limit,
        passed,
        message,
    }
}

/// What a figure is a share of, where a bare number would mislead.
fn unit_note(metric: &str) -> &'static str {
    match SummaryCol::parse(metric) {
        Some(SummaryCol::ErrorSharePct) => {
            " % of the requests that ended (failed responses and errors over responses and errors)"
        }
        _ => "",
    }
}

fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// The first-packet cross-check's name in its verdict's `check`: an ID (JUnit's test names,
/// scripts), so it says SYNs over HTTP/3 too, where its message says first QUIC Initials.
const FIRST_PACKETS_CHECK: &str = "first SYNs vs client attempts";

/// What a person reads beside a verdict's `check` of a run over HTTP/3 (`http3`): the
/// first-packet check compares first QUIC Initials there. None where the ID says it.
pub fn check_meaning(check: &str, http3: bool) -> Option<&'static str> {
    (http3 && check.contains(FIRST_PACKETS_CHECK))
        .then_some("first QUIC Initials vs client attempts")
}

/// `3 (load.rate = 2000)`, or `1` without a sweep.
pub fn point_label(r: &SummaryRow) -> String {
    match r.sweep {
        None => r.point.to_string(),
        Some(s) => format!("{} ({} = {})", r.point, s.param, s.value),
    }
}

/// A column's value; NaN (not measured) is None.
fn get(row: &SummaryRow, c: SummaryCol) -> Option<f64> {
    Some(row.get(c)).filter(|v| v.is_finite())
}

fn selects(t: &ThresholdSpec, row: &SummaryRow) -> bool {
    if t.points.is_empty() && t.values.is_empty() {
        return true;
    }
    t.points.contains(&row.point)
        || t.values.iter().any(|v| {
            row.sweep.is_some_and(|s| {
                crate::model::SweepValue::parse(s.param, v).is_ok_and(|v| v == s.value)
            })
        })
}

/// Lines for the end of the run table: every failure, then a count. No exit code: the
/// verdict line says it (a failed point or a death outranks a failed check).
pub fn verdict_lines(v: &[Verdict]) -> String {
    if v.is_empty() {
        return String::new();
    }
    let failed: Vec<&Verdict> = v.iter().filter(|v| !v.passed).collect();
    let mut s = String::new();
    for f in &failed {
        s.push_str(&format!("FAIL {}\n", f.message));
    }
    s.push_str(&format!(
        "thresholds: {} of {} checks passed\n",
        v.len() - failed.len(),
        v.len(),
    ));
    s
}

/// summary.json's `thresholds` (None when it has none or they do not parse).
pub fn read_verdicts(summary_json: &str) -> Option<Vec<Verdict>> {
    let v: serde_json::Value = serde_json::from_str(summary_json).ok()?;
    serde_json::from_value(v.get("thresholds")?.clone()).ok()
}

/// Exit code 3 when a verdict failed, after saying which on stderr.
pub fn exit_code(v: &[Verdict], aborted: bool) -> Option<std::process::ExitCode> {
    let failed = v.iter().filter(|v| !v.passed).count();
    if failed == 0 {
        return None;
    }
    eprintln!(
        "synlab: {failed} threshold check(s) failed{}; first: {}",
        if aborted {
            " (abort_on_fail stopped the run)"
        } else {
            ""
        },
        v.iter()
            .find(|v| !v.passed)
            .map(|v| v.message.as_str())
            .unwrap_or("")
    );
    Some(std::process::ExitCode::from(3))
}

/// A point's server-vs-client verdict from its counts (None without the server's count),
/// judged by their rates as the point's check is: the server's count spans its own reports
/// (its count over its rate), the clients' the hold.
fn responses_verdict(row: &SummaryRow) -> Option<crosscheck::ResponsesVerdict> {
    let t = row.totals.as_ref()?;
    let server = t.server_responses?;
    let spans = (row.server_responses_per_s > 0.0).then(|| crosscheck::Spans {
        client_s: row.hold_s,
        server_s: server as f64 / row.server_responses_per_s,
    });
    Some(crosscheck::ResponsesVerdict::judge_over(
        server,
        t.responses,
        t.attempts + t.requests.sent,
        t.requests.errors_by_kind.response_timeouts,
        None,
        spans,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(toml_src: &str) -> Gate {
        let sc = crate::scenario::parse("t.toml", toml_src).unwrap();
        Gate::of(&sc)
    }

    #[test]
    fn a_capacity_threshold_is_judged_per_series_and_fails_without_one() {
        use crate::model::capacity::{Capacity, Found};
        let g = gate(
            "[load]\nmode = \"open\"\nrate = 100\n[sweep]\nparam = \"load.rate\"\nvalues = [100, 200]\n\
             [[threshold]]\nmetric = \"capacity_per_s\"\nmin = \"1k\"\n",
        );
        let cap = |mode: &str, r: Option<f64>, found| Capacity {
            mode: mode.into(),
            curve: String::new(),
            percentile: 98.0,
            under_ms: 100.0,
            found,
            requests_per_s: r,
            bytes_per_s: r.map(|r| r * 1e3),
            at: None,
            param: String::new(),
            unit: String::new(),
            points: vec![1],
            excluded: Vec::new(),
        };
        let v = g.judge_capacity(&[
            cap("closed", Some(1200.0), Found::Interpolated),
            cap("sclient", None, Found::NoneUnder),
        ]);
        assert_eq!(v.len(), 2);
        assert!(v[0].passed, "{}", v[0].message);
        assert_eq!(v[0].check, "capacity_per_s >= 1k");
        assert!(
            v[0].message.contains("capacity_per_s = 1200: pass"),
            "{}",
            v[0].message
        );
        assert!(!v[1].passed);
        assert!(
            v[1].message.contains("no valid point met the target"),
            "{}",
            v[1].message
        );
        assert!(
            g.judge_run(&[]).is_empty(),
            "a capacity threshold is not a point metric"
        );
    }

    const RATE: crate::model::SweepParam =
        crate::model::SweepParam::Load(crate::model::LoadKnob::Rate);

    fn row(point: usize, value: &str) -> SummaryRow {
        SummaryRow {
            point,
            // "" is a row without a sweep.
            sweep: (!value.is_empty()).then(|| crate::model::SweepPoint {
                param: RATE,
                value: crate::model::SweepValue::parse_text(RATE, value).unwrap(),
            }),
            offered_rate: 1000.0,
            throughput_per_s: 900.0,
            total_p99_ms: 40.0,
            check_server_vs_client_pct: f64::NAN,
            ..Default::default()
        }
    }

    const SWEEP: &str = "[sweep]\nparam = \"load.rate\"\nvalues = [1000, 2000]\n";

    #[test]
    fn absolute_and_relative_bounds_judge_each_point() {
        let g = gate(&format!(
            "{SWEEP}[[threshold]]\nmetric = \"total_p99_ms\"\nmax = \"50ms\"\n\
             [[threshold]]\nmetric = \"throughput_per_s\"\nmin = \"0.95 x offered_rate\"\n"
        ));
        let v = g.judge_point(&row(1, "1000"));
        assert_eq!(v.len(), 2);
        assert!(v[0].passed, "{:?}", v[0]);
        assert!(!v[1].passed);
        assert_eq!(v[1].limit, Some(950.0));
        assert_eq!(
            v[1].message,
            "threshold `throughput_per_s >= 0.95 x offered_rate` at point 1 (load.rate = 1000): \
             throughput_per_s = 900 (0.95 x offered_rate = 950): FAIL"
        );
        assert!(!g.aborts(&v));
    }

    #[test]
    fn points_and_values_choose_points_and_run_aggregates() {
        let g = gate(&format!(
            "{SWEEP}[[threshold]]\nmetric = \"total_p99_ms\"\nmax = 30\nvalues = [2000]\nabort_on_fail = true\n\
             [[threshold]]\nmetric = \"total_p99_ms\"\nmax = 30\npoints = [1]\n\
             [[threshold]]\nmetric = \"total_p99_ms\"\nmax = 45\nover = \"run\"\naggregate = \"max\"\n"
        ));
        let a = g.judge_point(&row(1, "1000"));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].source, "threshold[1]");
        assert!(!g.aborts(&a));
        let b = g.judge_point(&row(2, "2000"));
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].source, "threshold[0]");
        assert!(g.aborts(&b));
        let mut r2 = row(2, "2000");
        r2.total_p99_ms = 50.0;
        let run = g.judge_run(&[row(1, "1000"), r2]);
        assert_eq!(run.len(), 1);
        assert_eq!((run[0].measured, run[0].passed), (Some(50.0), false));
        assert_eq!(run[0].point, None);
    }

    #[test]
    fn gate_flags_client_bound_and_crosschecks_and_unmeasured_fails() {
        let g = gate(
            "[gate]\nfail_on_client_bound = true\nfail_on_crosscheck = true\n\
             [[threshold]]\nmetric = \"offered_rate\"\nmin = 1\n",
        );
        let mut r = row(1, "");
        r.offered_rate = f64::NAN;
        r.client_bound = true;
        r.client_bound_reason = "workers at 100 % CPU".into();
        r.check_syn_vs_attempts_pct = 5.0;
        let v = g.judge_point(&r);
        let failed: Vec<&str> = v
            .iter()
            .filter(|v| !v.passed)
            .map(|v| v.check.as_str())
            .collect();
        assert_eq!(
            failed,
            [
                "offered_rate >= 1",
                "gate: not client-bound",
                "gate: cross-check first SYNs vs client attempts within 2.0 %"
            ]
        );
        // The server-vs-client check was not measured: not a failure.
        assert!(v.last().unwrap().passed);
    }

    /// Over HTTP/3 the first-packet check counts first QUIC Initials: its message (the FAIL
    /// line, JUnit's failure, CI's annotation) says so, its `check` (JUnit's test name, an
    /// ID) stays the same as over TCP.
    #[test]
    fn an_http3_points_first_packet_check_says_initials_and_keeps_its_id() {
        let g = gate("[gate]\nfail_on_crosscheck = true\n");
        let judged = |quic: f64| {
            let mut r = row(1, "");
            r.check_syn_vs_attempts_pct = -4.5;
            r.quic_handshakes_full_per_s = quic;
            g.judge_point(&r).remove(0)
        };
        let id = "gate: cross-check first SYNs vs client attempts within 2.0 %";
        let h3 = judged(1140.0);
        assert_eq!(h3.check, id);
        assert_eq!(
            h3.message,
            "point 1: first QUIC Initials at the server (repeated Initials left out) vs client \
             attempts differ by -4.5 % (more than 2.0 %)"
        );
        assert_eq!(
            check_meaning(&h3.check, true),
            Some("first QUIC Initials vs client attempts")
        );
        let tcp = judged(f64::NAN);
        assert_eq!(tcp.check, id);
        assert!(
            tcp.message.contains("first SYNs at the server"),
            "{}",
            tcp.message
        );
        assert_eq!(check_meaning(&tcp.check, false), None);
        assert_eq!(check_meaning("gate: not client-bound", true), None);
    }

    #[test]
    fn the_server_vs_client_message_judges_what_the_check_measures() {
        // A point's window: the clients' 1,637 responses over 5.50 s, the server's 1,605 over
        // its own reports' 5.41 s: the rates differ by -0.32 %, the counts by -1.95 %.
        let g = gate("[gate]\nfail_on_crosscheck = true\n");
        let mut r = row(1, "");
        r.hold_s = 5.50;
        r.throughput_per_s = 1637.0 / 5.50;
        r.server_responses_per_s = 1605.0 / 5.41;
        r.check_server_vs_client_pct =
            crosscheck::signed_diff_pct(r.server_responses_per_s, r.throughput_per_s).unwrap();
        r.totals = Some(crate::model::Totals {
            responses: 1637,
            attempts: 1637,
            server_responses: Some(1605),
            ..Default::default()
        });
        let v = g.judge_point(&r);
        let c = v.last().unwrap();
        assert!(c.passed, "{}", c.message);
        assert!(
            (c.measured.unwrap() + 0.32).abs() < 0.01,
            "{:?}",
            c.measured
        );
        assert!(
            c.message.contains(
                "client counted 1637 responses in 5.50 s, server 1605 in 5.41 s (-0.32% by rate): agree"
            ),
            "{}",
            c.message
        );
    }
}
