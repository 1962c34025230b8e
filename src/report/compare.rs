//! `synlab compare BASELINE RUN [--max-regression 5%]`: two run folders point by point — a table
//! of throughput, latency, errors, accept queue and CPU, the overlay plots `synlab report A B`
//! draws — and exit 3 when a judged metric regressed past the limit.

use super::read::{Point, RunData};
use crate::model::summary::{SummaryCol, SummaryText};
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

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
}

impl Metric {
    /// Its name, as `--on` and the REGRESSION lines say it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Col(c) => c.name(),
            Metric::ErrorShare => "error_share_pct",
            Metric::CpuBusy => "cpu_busy_pct",
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
    (
        Metric::Col(SummaryCol::AcceptQueueMean),
        "acceptq",
        Better::Shown,
    ),
    (Metric::CpuBusy, "cpu %", Better::Shown),
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
}

/// `mode value` of a point, the key points are matched by.
fn key(p: &Point) -> String {
    format!("{} {}", p.mode(), p.text(SummaryText::Value))
        .trim()
        .to_string()
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
        for (m, _, better) in METRICS {
            let (x, y) = (m.value(b), m.value(r));
            let measured = x.is_finite() && y.is_finite() && !b.failed() && !r.failed();
            let regression_pct = match better {
                _ if !measured => None,
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
            });
        }
    }
    out
}

/// The table printed by `synlab compare`: per point, baseline -> run and the change per metric.
pub fn table(d: &[Delta], limit_pct: f64) -> String {
    let mut s = String::new();
    let _ = write!(s, "{:<18}", "point");
    for (_, head, _) in METRICS {
        let _ = write!(s, " {head:>22}");
    }
    s.push('\n');
    let mut points: Vec<&str> = Vec::new();
    for x in d {
        if !points.contains(&x.point.as_str()) {
            points.push(&x.point);
        }
    }
    for p in points {
        let _ = write!(s, "{p:<18}");
        for (m, _, _) in METRICS {
            let cell = d
                .iter()
                .find(|x| x.point == p && x.metric == m)
                .map(|x| {
                    // The change of the value itself; `!` marks a regression past the limit.
                    let change = match x.regression_pct {
                        Some(_) if x.metric == Metric::ErrorShare => String::new(),
                        Some(r) if x.base != 0.0 => format!(
                            " {:+.0}%{}",
                            (x.run - x.base) / x.base * 100.0,
                            if r > limit_pct { "!" } else { "" }
                        ),
                        Some(r) if r > limit_pct => " !".into(),
                        _ => String::new(),
                    };
                    format!("{}->{}{change}", short(x.base), short(x.run))
                })
                .unwrap_or_else(|| "-".into());
            let _ = write!(s, " {cell:>22}");
        }
        s.push('\n');
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
pub const JUDGED: [Metric; 4] = [
    Metric::Col(SummaryCol::ThroughputPerS),
    Metric::Col(SummaryCol::TotalP50Ms),
    Metric::Col(SummaryCol::TotalP99Ms),
    Metric::ErrorShare,
];

/// `synlab compare BASELINE RUN --max-regression LIMIT [--on METRIC,...]`.
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
    print!("{}", table(&d, limit));
    if b.param().is_some() && b.param() == r.param() {
        match super::write_comparison(base, run) {
            Ok(md) => println!("overlay: {}", md.display()),
            Err(e) => eprintln!("synlab: the overlay plots could not be written: {e:#}"),
        }
    } else {
        println!("overlay: none (the overlay plots need two sweeps of the same parameter)");
    }
    let worse: Vec<&Delta> = d
        .iter()
        .filter(|x| on_metrics.contains(&x.metric))
        .filter(|x| x.regression_pct.is_some_and(|r| r > limit))
        .collect();
    for x in &worse {
        eprintln!(
            "REGRESSION {} at {}: {} -> {} ({:.1} {} worse, limit {limit} %)",
            x.metric.name(),
            x.point,
            short(x.base),
            short(x.run),
            x.regression_pct.unwrap_or_default(),
            if x.metric == Metric::ErrorShare {
                "points"
            } else {
                "%"
            }
        );
    }
    if worse.is_empty() {
        println!("no regression past {limit} % in {}", on.join(", "));
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("synlab: {} regression(s) past {limit} %", worse.len());
        Ok(ExitCode::from(3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rows: &[(&str, f64, f64)]) -> RunData {
        let json = serde_json::json!({
            "meta": {},
            "points": rows.iter().enumerate().map(|(i, (v, thr, p99))| serde_json::json!({
                "point": i + 1, "mode": "closed", "param": "load.clients", "value": v,
                "failed": false, "throughput_per_s": thr, "total_p50_ms": 10.0,
                "total_p99_ms": p99, "attempts_per_s": thr, "errors_per_s": 0.0,
                "accept_queue_mean": 3.0, "cpu_idle_pct": 50.0,
            })).collect::<Vec<_>>(),
        });
        let (meta, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
        RunData {
            dir: "x".into(),
            name: "x".into(),
            scenario: None,
            meta,
            points,
            timeseries: Default::default(),
            events: Vec::new(),
            warnings: Vec::new(),
            thresholds: Vec::new(),
        }
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
        let t = table(&d, 5.0);
        assert!(t.contains("400->200 -50%!"), "{t}");
        assert!(t.contains("80.0->160 +100%!"), "{t}");
        assert!(t.contains("50.0->45.0 -10%"), "{t}");
    }
}
