//! `synlab compare BASELINE RUN [--max-regression 5%]`: two run folders point by point — a table
//! of throughput, latency, errors, accept queue and CPU, the overlay plots `synlab report A B`
//! draws — and exit 3 when a judged metric regressed past the limit. Only whole runs are
//! compared: a run with a missing, partial or failed point, or one that was interrupted, fails
//! the comparison (exit 4) instead of passing on what it did not measure; a CLIENT-BOUND point
//! measured the load generator, so it is flagged and not judged.

use super::read::{Point, RunData};
use crate::model::summary::{SummaryCol, SummaryText};
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

/// Exit code of a comparison that cannot judge what it was asked to: a run with missing,
/// partial, failed or interrupted points, or no point that could be judged.
pub const EXIT_INCOMPLETE: u8 = 4;
/// Exit code of a regression past the limit.
pub const EXIT_REGRESSION: u8 = 3;

/// How a metric is judged.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Better {
    Higher,
    Lower,
    /// Shown, not judged: the accept queue and the machine's CPU depend on where the load runs
    /// as much as on the server.
    Shown,
}

/// What is compared: summary columns, and two figures derived from them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Metric {
    Col(SummaryCol),
    /// Errors as a share of attempts, %.
    ErrorShare,
    /// The machine's CPU busy, % (100 - idle).
    CpuBusy,
    /// The run's capacity at its target (summary.json's `capacity`), responses/s, per series
    /// of the sweep: a figure of the run, not of a point.
    Capacity,
}

impl Metric {
    /// Its name, as `--on` and the REGRESSION lines say it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Col(c) => c.name(),
            Metric::ErrorShare => "error_share_pct",
            Metric::CpuBusy => "cpu_busy_pct",
            Metric::Capacity => "capacity_per_s",
        }
    }

    fn value(self, p: &Point) -> f64 {
        match self {
            Metric::Col(c) => p.num(c),
            Metric::ErrorShare => {
                let a = p.num(SummaryCol::AttemptsPerS);
                if a > 0.0 {
                    100.0 * p.num(SummaryCol::ErrorsPerS) / a
                } else {
                    f64::NAN
                }
            }
            Metric::CpuBusy => 100.0 - p.num(SummaryCol::CpuIdlePct),
            Metric::Capacity => f64::NAN,
        }
    }
}

/// The metrics compared: (metric, heading, which way is better).
const METRICS: [(Metric, &str, Better); 6] = [
    (
        Metric::Col(SummaryCol::ThroughputPerS),
        "responses/s",
        Better::Higher,
    ),
    (Metric::Col(SummaryCol::TotalP50Ms), "p50 ms", Better::Lower),
    (Metric::Col(SummaryCol::TotalP99Ms), "p99 ms", Better::Lower),
    (Metric::ErrorShare, "errors %", Better::Lower),
    // The same statistics, under the same headings, as the run's own table (`synlab run`).
    (
        Metric::Col(SummaryCol::AcceptQueueMax),
        "acceptq max",
        Better::Shown,
    ),
    (Metric::CpuBusy, "cpu%", Better::Shown),
];

/// One metric of one point in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub point: String,
    pub metric: Metric,
    pub base: f64,
    pub run: f64,
    /// How much worse the run is, in % of the baseline (percentage points for the error share);
    /// negative when better; None when not judged or not measured.
    pub regression_pct: Option<f64>,
    /// Why the point is not judged (a CLIENT-BOUND run), None when it is.
    pub unjudged: Option<String>,
}

/// `mode [curve] value` of a point, the key points are matched by.
fn key(p: &Point) -> String {
    point_key(
        &p.mode(),
        &p.text(SummaryText::CurveValue),
        &p.text(SummaryText::Value),
    )
}

fn point_key(mode: &str, curve: &str, value: &str) -> String {
    [mode, curve, value]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a point pair is not judged: a CLIENT-BOUND point measured the load generator, not the
/// server, in either run.
fn client_bound_note(b: &Point, r: &Point) -> Option<String> {
    let reason = |p: &Point| p.text(SummaryText::ClientBoundReason);
    match (b.client_bound(), r.client_bound()) {
        (_, true) => Some(format!("CLIENT-BOUND in the run: {}", reason(r))),
        (true, false) => Some(format!("CLIENT-BOUND in the baseline: {}", reason(b))),
        _ => None,
    }
}

/// The deltas of every metric at every point the two runs share (matched by mode and sweep
/// value; by position when neither run has a sweep).
pub fn deltas(base: &RunData, run: &RunData) -> Vec<Delta> {
    let mut out = Vec::new();
    for (i, b) in base.points.iter().enumerate() {
        let r = run.points.iter().find(|r| key(r) == key(b)).or_else(|| {
            (base.param().is_none())
                .then(|| run.points.get(i))
                .flatten()
        });
        let Some(r) = r else { continue };
        let label = if b.text(SummaryText::Value).is_empty() {
            b.number()
        } else {
            key(b)
        };
        let unjudged = client_bound_note(b, r);
        for (m, _, better) in METRICS {
            let (x, y) = (m.value(b), m.value(r));
            let measured = x.is_finite() && y.is_finite() && !b.failed() && !r.failed();
            let regression_pct = match better {
                _ if !measured || unjudged.is_some() => None,
                Better::Shown => None,
                // The error share is a percentage already: its rise in points.
                Better::Lower if m == Metric::ErrorShare => Some(y - x),
                Better::Higher if x > 0.0 => Some((x - y) / x * 100.0),
                Better::Lower if x > 0.0 => Some((y - x) / x * 100.0),
                _ => None,
            };
            out.push(Delta {
                point: label.clone(),
                metric: m,
                base: x,
                run: y,
                regression_pct,
                unjudged: unjudged.clone(),
            });
        }
    }
    out.extend(capacity_deltas(base, run));
    out
}

/// The runs' capacities, series by series (matched by mode and curve), judged as throughput:
/// lower is worse. A series without a capacity in either run is not judged.
fn capacity_deltas(base: &RunData, run: &RunData) -> Vec<Delta> {
    base.capacity
        .iter()
        .filter_map(|b| {
            let r = run
                .capacity
                .iter()
                .find(|r| r.mode == b.mode && r.curve == b.curve)?;
            let series = format!("{} {}", b.mode, b.curve).trim().to_string();
            let (x, y) = (b.requests_per_s?, r.requests_per_s?);
            Some(Delta {
                point: format!("capacity {series}"),
                metric: Metric::Capacity,
                base: x,
                run: y,
                regression_pct: (x > 0.0).then(|| (x - y) / x * 100.0),
                unjudged: None,
            })
        })
        .collect()
}

/// The table printed by `synlab compare`: per point, baseline -> run and the change per metric;
/// `!` marks a regression past the limit in a judged metric (`on`), a point not judged says why.
pub fn table(d: &[Delta], limit_pct: f64, on: &[Metric]) -> String {
    let mut s = String::new();
    let _ = write!(s, "{:<18}", "point");
    for (_, head, _) in METRICS {
        let _ = write!(s, " {head:>22}");
    }
    s.push_str("  notes\n");
    let mut points: Vec<&str> = Vec::new();
    for x in d.iter().filter(|x| x.metric != Metric::Capacity) {
        if !points.contains(&x.point.as_str()) {
            points.push(&x.point);
        }
    }
    for p in points {
        let _ = write!(s, "{p:<18}");
        let mut note = String::new();
        for (m, _, _) in METRICS {
            let cell = d
                .iter()
                .find(|x| x.point == p && x.metric == m)
                .map(|x| {
                    if let Some(u) = &x.unjudged {
                        note = format!("not judged: {u}");
                    }
                    let past = x.regression_pct.is_some_and(|r| r > limit_pct) && on.contains(&m);
                    let mark = if past { "!" } else { "" };
                    // The change in the unit the limit is in: points for the error share (a
                    // percentage already), % of the baseline for the rest.
                    let change = match x.regression_pct {
                        Some(_) if m == Metric::ErrorShare => {
                            format!(" {:+.1}pt{mark}", x.run - x.base)
                        }
                        Some(_) if x.base != 0.0 => {
                            format!(" {:+.0}%{mark}", (x.run - x.base) / x.base * 100.0)
                        }
                        Some(_) if past => " !".into(),
                        _ => String::new(),
                    };
                    format!("{}->{}{change}", short(x.base), short(x.run))
                })
                .unwrap_or_else(|| "-".into());
            let _ = write!(s, " {cell:>22}");
        }
        let _ = writeln!(s, "  {note}");
    }
    for x in d.iter().filter(|x| x.metric == Metric::Capacity) {
        let past = x.regression_pct.is_some_and(|r| r > limit_pct) && on.contains(&x.metric);
        let _ = writeln!(
            s,
            "{}: {} -> {} responses/s ({:+.0}%{})",
            x.point,
            short(x.base),
            short(x.run),
            (x.run - x.base) / x.base * 100.0,
            if past { "!" } else { "" }
        );
    }
    s
}

fn short(v: f64) -> String {
    super::markdown::num(v)
}

/// Parses `5%` or `5` (percent) for --max-regression.
pub fn parse_limit(s: &str) -> anyhow::Result<f64> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => anyhow::bail!("--max-regression `{s}` is not a percentage: write e.g. 5%"),
    }
}

/// The metrics judged unless `--on` names others.
pub const JUDGED: [Metric; 5] = [
    Metric::Col(SummaryCol::ThroughputPerS),
    Metric::Col(SummaryCol::TotalP50Ms),
    Metric::Col(SummaryCol::TotalP99Ms),
    Metric::ErrorShare,
    Metric::Capacity,
];

/// What keeps a run from being compared whole: interrupted, points of its scenario missing,
/// points cut short (held less than planned), failed points. Empty for a whole run.
pub fn incomplete(run: &RunData) -> Vec<String> {
    let mut why = Vec::new();
    if run.meta.get("interrupted").and_then(|v| v.as_bool()) == Some(true) {
        why.push("it was interrupted".to_string());
    }
    for p in run.points.iter().filter(|p| p.failed()) {
        why.push(format!(
            "point {} ({}) failed: {}",
            p.number(),
            key(p),
            p.text(SummaryText::Error)
        ));
    }
    let Some(sc) = &run.scenario else {
        why.push("its scenario.toml cannot be read, so the points it planned are unknown".into());
        return why;
    };
    let planned = crate::scenario::points::plan_points(sc);
    let mut missing = Vec::new();
    for (i, plan) in planned.iter().enumerate() {
        let mode = crate::scenario::points::mode_name(plan.mode.unwrap_or(sc.load.mode));
        let value = plan.value.map(|v| v.to_string()).unwrap_or_default();
        let curve = plan.curve.map(|v| v.to_string()).unwrap_or_default();
        let want = point_key(&mode, &curve, &value);
        let found = if sc.sweep.is_some() {
            run.points.iter().find(|p| key(p) == want)
        } else {
            run.points.get(i)
        };
        let Some(p) = found else {
            missing.push(format!("{} ({want})", i + 1));
            continue;
        };
        // A hold is measured over the workers' reports (100 ms apart): a point cut short by an
        // interruption holds far less than planned; a whole one within a report or so.
        let held = p.num(SummaryCol::HoldS);
        if !p.failed() && held < plan.hold - (0.25f64).max(0.1 * plan.hold) {
            why.push(format!(
                "point {} ({want}) is partial: held {held:.1} s of its {:.1} s",
                p.number(),
                plan.hold
            ));
        }
    }
    if !missing.is_empty() {
        why.push(format!(
            "{} of its {} planned points are missing: {}",
            missing.len(),
            planned.len(),
            missing.join(", ")
        ));
    }
    why
}

/// `synlab compare BASELINE RUN --max-regression LIMIT [--on METRIC,...]`: exit 0, 3 on a
/// regression, 4 when a run is not whole or nothing could be judged, 1 when the overlay plots
/// could not be written (4 wins over 1, 1 over 3).
pub fn compare_main(
    base: &Path,
    run: &Path,
    limit: &str,
    on: &[String],
) -> anyhow::Result<ExitCode> {
    let limit = parse_limit(limit)?;
    let judged: Vec<&str> = JUDGED.iter().map(|m| m.name()).collect();
    let mut on_metrics = Vec::new();
    for m in on {
        match JUDGED.iter().find(|j| j.name() == m) {
            Some(j) => on_metrics.push(*j),
            None => anyhow::bail!(
                "--on `{m}`: compare judges {} (accept queue and CPU are shown, not judged)",
                judged.join(", ")
            ),
        }
    }
    let (b, r) = (super::read::read_run(base)?, super::read::read_run(run)?);
    let d = deltas(&b, &r);
    if d.is_empty() {
        anyhow::bail!(
            "{} and {} share no point (points are matched by mode and sweep value): compare runs \
             of the same scenario",
            base.display(),
            run.display()
        );
    }
    println!("baseline: {}\nrun:      {}", b.name, r.name);
    print!("{}", table(&d, limit, &on_metrics));
    let overlay_failed = if b.param().is_some() && b.param() == r.param() {
        match super::write_comparison(base, run) {
            Ok(md) => {
                println!("overlay: {}", md.display());
                false
            }
            Err(e) => {
                eprintln!("synlab: the overlay plots could not be written: {e:#}");
                true
            }
        }
    } else {
        println!("overlay: none (the overlay plots need two sweeps of the same parameter)");
        false
    };
    let mut incomplete_lines = Vec::new();
    for (what, data, dir) in [("run", &r, run), ("baseline", &b, base)] {
        for why in incomplete(data) {
            incomplete_lines.push(format!("the {what} {} is not whole: {why}", dir.display()));
        }
    }
    let unjudged: Vec<String> = d
        .iter()
        .filter(|x| x.metric == METRICS[0].0)
        .filter_map(|x| x.unjudged.as_ref().map(|u| format!("{} ({u})", x.point)))
        .collect();
    if !unjudged.is_empty() {
        println!("not judged: {}", unjudged.join("; "));
    }
    let worse: Vec<&Delta> = d
        .iter()
        .filter(|x| on_metrics.contains(&x.metric))
        .filter(|x| x.regression_pct.is_some_and(|r| r > limit))
        .collect();
    for x in &worse {
        let by = x.regression_pct.unwrap_or_default();
        let (change, unit) = if x.metric == Metric::ErrorShare {
            (format!("{by:+.1} points"), "points")
        } else {
            (format!("{by:.1} % worse"), "%")
        };
        eprintln!(
            "REGRESSION {} at {}: {} -> {} ({change}, limit {limit} {unit})",
            x.metric.name(),
            x.point,
            short(x.base),
            short(x.run),
        );
    }
    let judged_any = d
        .iter()
        .any(|x| on_metrics.contains(&x.metric) && x.regression_pct.is_some());
    if !incomplete_lines.is_empty() || !judged_any {
        for l in &incomplete_lines {
            eprintln!("INCOMPLETE {l}");
        }
        if !judged_any {
            eprintln!(
                "INCOMPLETE nothing was judged: no point of {} was measured in both runs outside CLIENT-BOUND points",
                on.join(", ")
            );
        }
        eprintln!(
            "synlab: the comparison fails (exit {EXIT_INCOMPLETE}): only whole runs are compared; rerun the incomplete one"
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    if overlay_failed {
        eprintln!("synlab: a file of the comparison could not be written (exit 1)");
        return Ok(ExitCode::from(super::EXIT_UNWRITTEN));
    }
    if worse.is_empty() {
        let points = if on_metrics.contains(&Metric::ErrorShare) {
            format!(" ({limit} points for {})", Metric::ErrorShare.name())
        } else {
            String::new()
        };
        println!("no regression past {limit} %{points} in {}", on.join(", "));
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("synlab: {} regression(s) past the limit", worse.len());
        Ok(ExitCode::from(EXIT_REGRESSION))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed-loop sweep over `load.clients`: (value, throughput, p99) per point.
    fn run(rows: &[(&str, f64, f64)]) -> RunData {
        let json = serde_json::json!({
            "meta": {},
            "points": rows.iter().enumerate().map(|(i, (v, thr, p99))| serde_json::json!({
                "point": i + 1, "mode": "closed", "param": "load.clients", "value": v,
                "failed": false, "throughput_per_s": thr, "total_p50_ms": 10.0,
                "total_p99_ms": p99, "attempts_per_s": thr, "errors_per_s": 0.0,
                "accept_queue_mean": 3.0, "accept_queue_max": 9.0, "cpu_idle_pct": 50.0,
                "hold_s": 2.0, "client_bound": false,
            })).collect::<Vec<_>>(),
        });
        let (meta, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
        let scenario = crate::scenario::parse(
            "x.toml",
            "[load]\nmode = \"closed\"\nclients = 8\n[sweep]\nparam = \"load.clients\"\nvalues = [8, 16]\nhold = \"2s\"\n",
        )
        .unwrap();
        RunData {
            dir: "x".into(),
            name: "x".into(),
            scenario: Some(scenario),
            meta,
            points,
            timeseries: Default::default(),
            events: Vec::new(),
            warnings: Vec::new(),
            thresholds: Vec::new(),
            capacity: Vec::new(),
        }
    }

    fn set(r: &mut RunData, point: usize, key: &str, v: super::super::read::Cell) {
        r.points[point].0.insert(key.into(), v);
    }

    #[test]
    fn capacity_is_judged_per_series_as_throughput() {
        use crate::model::capacity::{Capacity, Found};
        let cap = |r: f64| Capacity {
            mode: "closed".into(),
            curve: String::new(),
            percentile: 98.0,
            under_ms: 100.0,
            found: Found::Interpolated,
            requests_per_s: Some(r),
            bytes_per_s: Some(r * 1000.0),
            at: Some(100.0),
            points: vec![1, 2],
            excluded: Vec::new(),
        };
        let mut base = run(&[("8", 400.0, 50.0)]);
        let mut r = run(&[("8", 400.0, 50.0)]);
        base.capacity = vec![cap(1000.0)];
        r.capacity = vec![cap(900.0)];
        let d = deltas(&base, &r);
        let c = d.iter().find(|x| x.metric == Metric::Capacity).unwrap();
        assert_eq!(c.regression_pct, Some(10.0));
        let t = table(&d, 5.0, &JUDGED);
        assert!(
            t.contains("capacity closed: 1000 -> 900 responses/s (-10%!)"),
            "{t}"
        );
    }

    #[test]
    fn regressions_are_measured_the_way_that_is_worse() {
        let base = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        let new = run(&[("16", 200.0, 160.0), ("8", 410.0, 45.0)]);
        let d = deltas(&base, &new);
        let r = |p: &str, m: &str| {
            d.iter()
                .find(|x| x.point == p && x.metric.name() == m)
                .unwrap()
                .regression_pct
        };
        assert_eq!(r("closed 16", "throughput_per_s"), Some(50.0));
        assert_eq!(r("closed 16", "total_p99_ms"), Some(100.0));
        assert_eq!(r("closed 8", "throughput_per_s"), Some(-2.5));
        assert_eq!(r("closed 8", "total_p99_ms"), Some(-10.0));
        assert_eq!(r("closed 8", "error_share_pct"), Some(0.0));
        assert_eq!(r("closed 8", "cpu_busy_pct"), None);
        assert_eq!(parse_limit("5%").unwrap(), 5.0);
        assert!(parse_limit("five").is_err());
        let t = table(&d, 5.0, &JUDGED);
        assert!(t.contains("400->200 -50%!"), "{t}");
        assert!(t.contains("80.0->160 +100%!"), "{t}");
        assert!(t.contains("50.0->45.0 -10%"), "{t}");
        // `!` only on the judged columns: p99 left out of `--on` is shown, not marked.
        let t = table(&d, 5.0, &[Metric::Col(SummaryCol::ThroughputPerS)]);
        assert!(t.contains("400->200 -50%!"), "{t}");
        assert!(t.contains("80.0->160 +100% "), "{t}");
        assert!(!t.contains("+100%!"), "{t}");
        // The accept queue is its maximum, under the run table's own heading.
        assert!(t.contains("acceptq max") && t.contains("9.00->9.00"), "{t}");
    }

    #[test]
    fn the_error_share_changes_in_points() {
        let base = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        let mut new = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        set(
            &mut new,
            1,
            "errors_per_s",
            super::super::read::Cell::Num(21.6),
        );
        let d = deltas(&base, &new);
        let e = d
            .iter()
            .find(|x| x.point == "closed 16" && x.metric == Metric::ErrorShare)
            .unwrap();
        assert!((e.regression_pct.unwrap() - 5.4).abs() < 1e-9);
        let t = table(&d, 5.0, &JUDGED);
        assert!(t.contains("0->5.40 +5.4pt!"), "{t}");
    }

    #[test]
    fn a_client_bound_point_is_flagged_not_judged() {
        let base = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        let mut new = run(&[("8", 400.0, 50.0), ("16", 100.0, 80.0)]);
        set(
            &mut new,
            1,
            "client_bound",
            super::super::read::Cell::Flag(true),
        );
        set(
            &mut new,
            1,
            "client_bound_reason",
            super::super::read::Cell::Text("workers at 100 % CPU".into()),
        );
        let d = deltas(&base, &new);
        assert!(d
            .iter()
            .filter(|x| x.point == "closed 16")
            .all(|x| x.regression_pct.is_none()));
        let t = table(&d, 5.0, &JUDGED);
        assert!(
            t.contains("not judged: CLIENT-BOUND in the run: workers at 100 % CPU"),
            "{t}"
        );
        assert!(!t.contains('!'), "{t}");
    }

    #[test]
    fn a_run_with_missing_partial_failed_or_interrupted_points_is_not_whole() {
        let whole = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        assert_eq!(incomplete(&whole), Vec::<String>::new());
        let mut cut = run(&[("8", 400.0, 50.0)]);
        cut.meta.insert("interrupted".into(), true.into());
        set(&mut cut, 0, "hold_s", super::super::read::Cell::Num(0.7));
        assert_eq!(
            incomplete(&cut),
            [
                "it was interrupted",
                "point 1 (closed 8) is partial: held 0.7 s of its 2.0 s",
                "1 of its 2 planned points are missing: 2 (closed 16)",
            ]
        );
        let mut failed = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        set(
            &mut failed,
            1,
            "failed",
            super::super::read::Cell::Flag(true),
        );
        set(
            &mut failed,
            1,
            "error",
            super::super::read::Cell::Text("the server died".into()),
        );
        assert_eq!(
            incomplete(&failed),
            ["point 2 (closed 16) failed: the server died"]
        );
    }
}
