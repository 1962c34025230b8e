//! `synlab compare BASELINE RUN [--max-regression 5%]`: two run folders point by point — a table
//! of throughput, latency, errors, accept queue and CPU, the overlay plots `synlab report A B`
//! draws — and exit 3 when a judged metric regressed past the limit. Only whole runs are
//! compared: a run with a missing, partial or failed point, or one that was interrupted, fails
//! the comparison (exit 4) instead of passing on what it did not measure; a CLIENT-BOUND point
//! measured the load generator, so it is flagged and not judged.

use super::read::{Point, RunData};
pub use super::whole::{incomplete, EXIT_INCOMPLETE, SESSION_KEY};
use super::whole::{key, planned_points};
use crate::model::summary::{SummaryCol, SummaryText, Worse};
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

/// Exit code of a regression past the limit.
pub const EXIT_REGRESSION: u8 = 3;

/// What is compared: any numeric summary column, and two figures derived from them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Metric {
    Col(SummaryCol),
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
            Metric::CpuBusy => "cpu_busy_pct",
            Metric::Capacity => "capacity_per_s",
        }
    }

    /// The metric `--on` names: a numeric summary column, `cpu_busy_pct` or `capacity_per_s`
    /// (the same columns a `[[threshold]]` may bound: one rule, [`SummaryCol`]).
    pub fn parse(name: &str) -> Result<Metric, crate::scenario::gate::GateError> {
        [Metric::CpuBusy, Metric::Capacity]
            .into_iter()
            .find(|m| m.name() == name)
            .map_or_else(
                || crate::scenario::gate::check_metric(name).map(Metric::Col),
                Ok,
            )
    }

    /// Which way a change is worse.
    pub fn worse(self) -> Worse {
        match self {
            Metric::Col(c) => c.worse(),
            Metric::CpuBusy => Worse::Higher,
            Metric::Capacity => Worse::Lower,
        }
    }

    /// Whether its change is in percentage points (a share: the error share, CPU %) rather
    /// than in % of the baseline.
    pub fn in_points(self) -> bool {
        match self {
            Metric::Col(c) => c.unit() == crate::model::Unit::Percent,
            Metric::CpuBusy => true,
            Metric::Capacity => false,
        }
    }

    /// The smallest change that can be a regression, in the metric's unit
    /// ([`SummaryCol::floor`]).
    pub fn floor(self) -> f64 {
        match self {
            Metric::Col(c) => c.floor(),
            Metric::CpuBusy => 0.0,
            Metric::Capacity => SummaryCol::ThroughputPerS.floor(),
        }
    }

    fn value(self, p: &Point) -> f64 {
        match self {
            Metric::Col(c) => p.num(c),
            Metric::CpuBusy => 100.0 - p.num(SummaryCol::CpuIdlePct),
            Metric::Capacity => f64::NAN,
        }
    }
}

/// The metrics the table shows: (metric, heading). Judged are those `--on` names; a judged
/// metric not among these gets a column of its own.
const METRICS: [(Metric, &str); 7] = [
    (Metric::Col(SummaryCol::GoodResponsesPerS), "good/s"),
    (Metric::Col(SummaryCol::ThroughputPerS), "responses/s"),
    (Metric::Col(SummaryCol::TotalP50Ms), "p50 ms"),
    (Metric::Col(SummaryCol::TotalP99Ms), "p99 ms"),
    (Metric::Col(SummaryCol::ErrorSharePct), "errors %"),
    // The same statistics, under the same headings, as the run's own table (`synlab run`).
    (Metric::Col(SummaryCol::AcceptQueueMax), "acceptq max"),
    (Metric::CpuBusy, "cpu%"),
];

/// The table's columns: [`METRICS`], then any judged metric not among them.
fn columns(on: &[Metric]) -> Vec<(Metric, &'static str)> {
    let mut c = METRICS.to_vec();
    for m in on {
        if *m != Metric::Capacity && !c.iter().any(|(x, _)| x == m) {
            c.push((*m, m.name()));
        }
    }
    c
}

/// One metric of one point in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub point: String,
    pub metric: Metric,
    pub base: f64,
    pub run: f64,
    /// How much worse the run is, in % of the baseline (percentage points for a percent
    /// metric, e.g. the error share); negative when better; infinite when it rose from 0;
    /// None when not judged or not measured.
    pub regression_pct: Option<f64>,
    /// The change is under the metric's absolute floor ([`SummaryCol::floor`]): noise
    /// however large in %, never a regression.
    pub under_floor: bool,
    /// Why the point is not judged (a CLIENT-BOUND run), None when it is.
    pub unjudged: Option<Unjudged>,
    /// The change the table shows when it is not `run` against `base`: a repeated compare's
    /// judged figure shows its verdict's estimate over the trials (in the unit the limit is
    /// in) and the verdict's mark, so the table and the verdict line say one number.
    pub judged: Option<(f64, &'static str)>,
}

/// Why a point pair is not judged: CLIENT-BOUND in a run (the clients, not the server, set
/// its figures), with the run's reason, and the machine's other work in that point when it was
/// busy: then other work on the lab's CPUs is the likelier cause, and the remedy a quieter
/// machine, not the load's settings its reason would change.
#[derive(Debug, Clone, PartialEq)]
pub struct Unjudged {
    /// "the run" or "the baseline".
    pub side: &'static str,
    pub reason: String,
    pub busy: Option<super::disturbed::Disturbed>,
}

impl std::fmt::Display for Unjudged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.busy {
            None => write!(f, "CLIENT-BOUND in {}: {}", self.side, self.reason),
            Some(d) => write!(
                f,
                "CLIENT-BOUND in {} ({}), but {d}: rerun on a quieter machine before changing \
                 the load's settings",
                self.side,
                without_advice(&self.reason)
            ),
        }
    }
}

/// A CLIENT-BOUND reason without the setting it advises raising (`(raise load.sockets)`,
/// `; raise load.connections`): advice for a load short of sockets, not for a busy machine.
fn without_advice(reason: &str) -> String {
    reason
        .split("; ")
        .filter(|part| !part.starts_with("raise "))
        .map(|part| match part.rfind(" (raise ") {
            Some(at) if part.ends_with(')') => &part[..at],
            _ => part,
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Delta {
    /// A regression past `limit` (% or points): judged, over the limit and over the floor.
    pub fn regressed(&self, limit: f64) -> bool {
        !self.under_floor && self.regression_pct.is_some_and(|r| r > limit)
    }
}

/// How much worse `y` is than `x` for `m`, and whether the change is under its floor.
pub(super) fn regression(m: Metric, x: f64, y: f64) -> (Option<f64>, bool) {
    let bad = match m.worse() {
        Worse::Lower => x - y,
        Worse::Higher => y - x,
        Worse::Either => (y - x).abs(),
    };
    let under_floor = (y - x).abs() < m.floor();
    let pct = if m.in_points() {
        Some(bad)
    } else if x != 0.0 {
        Some(bad / x.abs() * 100.0)
    } else if bad > 0.0 {
        Some(f64::INFINITY)
    } else {
        Some(0.0)
    };
    (pct, under_floor)
}

/// Why a point pair is not judged: a CLIENT-BOUND point measured the load generator, not the
/// server, in either run; and whether the machine was busy in that run's point.
fn client_bound_note(base: &RunData, b: &Point, run: &RunData, r: &Point) -> Option<Unjudged> {
    let note = |side, data: &RunData, p: &Point| Unjudged {
        side,
        reason: p.text(SummaryText::ClientBoundReason),
        busy: super::disturbed::at(data, p),
    };
    match (b.client_bound(), r.client_bound()) {
        (_, true) => Some(note("the run", run, r)),
        (true, false) => Some(note("the baseline", base, b)),
        _ => None,
    }
}

/// The point of `run` that matches `b`, the `i`-th of `base`: by mode and sweep value; by
/// position when neither run has a sweep.
fn matching<'a>(base: &RunData, run: &'a RunData, i: usize, b: &Point) -> Option<&'a Point> {
    run.points.iter().find(|r| key(r) == key(b)).or_else(|| {
        (base.param().is_none() && run.param().is_none())
            .then(|| run.points.get(i))
            .flatten()
    })
}

/// The deltas of the table's metrics at every point the two runs share.
pub fn deltas(base: &RunData, run: &RunData) -> Vec<Delta> {
    deltas_on(base, run, &JUDGED)
}

/// The deltas of the table's metrics and of `on` at every point the two runs share (matched
/// by mode and sweep value; by position when neither run has a sweep).
pub fn deltas_on(base: &RunData, run: &RunData, on: &[Metric]) -> Vec<Delta> {
    let mut out = Vec::new();
    for (i, b) in base.points.iter().enumerate() {
        let Some(r) = matching(base, run, i, b) else {
            continue;
        };
        let label = if b.text(SummaryText::Value).is_empty() {
            b.number()
        } else {
            key(b)
        };
        let unjudged = client_bound_note(base, b, run, r);
        for (m, _) in columns(on) {
            let (x, y) = (m.value(b), m.value(r));
            let measured = x.is_finite() && y.is_finite() && !b.failed() && !r.failed();
            let (regression_pct, under_floor) = if measured && unjudged.is_none() {
                regression(m, x, y)
            } else {
                (None, false)
            };
            out.push(Delta {
                point: label.clone(),
                metric: m,
                base: x,
                run: y,
                regression_pct,
                under_floor,
                unjudged: unjudged.clone(),
                judged: None,
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
            let (regression_pct, under_floor) = regression(Metric::Capacity, x, y);
            Some(Delta {
                point: format!("capacity {series}"),
                metric: Metric::Capacity,
                base: x,
                run: y,
                regression_pct,
                under_floor,
                unjudged: None,
                judged: None,
            })
        })
        .collect()
}

/// The table printed by `synlab compare`: per point, baseline -> run and the change per metric;
/// `!` marks a regression past the limit in a judged metric (`on`), `~` a change under the
/// metric's absolute floor; a point not judged says why.
pub fn table(d: &[Delta], limit_pct: f64, on: &[Metric]) -> String {
    let cols = columns(on);
    let mut s = String::new();
    let _ = write!(s, "{:<18}", "point");
    for (_, head) in &cols {
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
        for (m, _) in &cols {
            let cell = d
                .iter()
                .find(|x| x.point == p && x.metric == *m)
                .map(|x| {
                    if let Some(u) = &x.unjudged {
                        note = format!("not judged: {u}");
                    }
                    let past = x.regressed(limit_pct) && on.contains(m);
                    let mark = match () {
                        _ if past => "!",
                        _ if x.under_floor && on.contains(m) => "~",
                        _ => "",
                    };
                    // The change in the unit the limit is in: points for a share (the error
                    // share, CPU %), % of the baseline for the rest; a judged figure of
                    // repeated runs says its verdict's.
                    let change = match (x.regression_pct, x.judged) {
                        (_, Some((c, mark))) if m.in_points() => format!(" {c:+.1}pt{mark}"),
                        (_, Some((c, mark))) => format!(" {c:+.1}%{mark}"),
                        (Some(_), None) if m.in_points() => {
                            format!(" {:+.1}pt{mark}", x.run - x.base)
                        }
                        (Some(_), None) if x.base != 0.0 => {
                            format!(" {:+.0}%{mark}", (x.run - x.base) / x.base * 100.0)
                        }
                        (Some(_), None) if past => " !".into(),
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
        let past = x.regressed(limit_pct) && on.contains(&x.metric);
        let change = match x.judged {
            Some((c, mark)) => format!("{c:+.1}%{mark}"),
            None => format!(
                "{:+.0}%{}",
                (x.run - x.base) / x.base * 100.0,
                if past { "!" } else { "" }
            ),
        };
        let _ = writeln!(
            s,
            "{}: {} -> {} responses/s ({change})",
            x.point,
            short(x.base),
            short(x.run),
        );
    }
    s
}

fn short(v: f64) -> String {
    super::markdown::num(v)
}

/// `--max-regression`: the largest regression allowed, in % of the baseline (error share: in
/// points). The command line parses it (`5%` or `5`), so a bad value is refused before any
/// run folder is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxRegression(pub f64);

/// A `--max-regression` that is no percentage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a percentage: write e.g. 5%")]
pub struct NotAPercentage(String);

impl std::str::FromStr for MaxRegression {
    type Err = NotAPercentage;
    fn from_str(s: &str) -> Result<Self, NotAPercentage> {
        let t = s.trim().trim_end_matches('%').trim();
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(MaxRegression(v)),
            _ => Err(NotAPercentage(s.to_string())),
        }
    }
}

impl std::fmt::Display for MaxRegression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// The metrics judged unless `--on` names others: the good responses (a 503 is no
/// throughput), the median and p99, the error share (in points) and the capacity.
pub const JUDGED: [Metric; 5] = [
    Metric::Col(SummaryCol::GoodResponsesPerS),
    Metric::Col(SummaryCol::TotalP50Ms),
    Metric::Col(SummaryCol::TotalP99Ms),
    Metric::Col(SummaryCol::ErrorSharePct),
    Metric::Capacity,
];

/// The points a scenario plans: each one's key (`mode [curve] value`) and hold, seconds.
/// How the two runs' plans differ: notes to print (another scenario, other holds), and the
/// reason to refuse the comparison when their points do not match (None when they do).
pub fn mismatch(base: &RunData, run: &RunData) -> (Vec<String>, Option<String>) {
    let mut notes = Vec::new();
    let (Some(bs), Some(rs)) = (&base.scenario, &run.scenario) else {
        return (notes, None);
    };
    if bs.name != rs.name {
        notes.push(format!(
            "the baseline ran scenario `{}`, the run `{}`: their figures are compared point by \
             point as if they measured the same thing",
            bs.name, rs.name
        ));
    }
    let (bp, rp) = (planned_points(bs), planned_points(rs));
    let keys = |v: &[(String, f64)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    if keys(&bp) != keys(&rp) {
        let list = |v: &[(String, f64)]| {
            let k = keys(v);
            if k.iter().all(String::is_empty) {
                format!("{} unswept point(s)", k.len())
            } else {
                k.join(", ")
            }
        };
        return (
            notes,
            Some(format!(
                "the runs' points do not match: the baseline plans {}, the run {}; compare \
                 runs of the same points (mode and sweep values)",
                list(&bp),
                list(&rp)
            )),
        );
    }
    let holds: Vec<String> = bp
        .iter()
        .zip(&rp)
        .filter(|((_, a), (_, b))| (a - b).abs() > 1e-9)
        .map(|((k, a), (_, b))| {
            let k = if k.is_empty() {
                "the point"
            } else {
                k.as_str()
            };
            format!("{k}: {a} s in the baseline, {b} s in the run")
        })
        .collect();
    if !holds.is_empty() {
        notes.push(format!(
            "the runs hold their points for different times ({}): a percentile over a shorter \
             hold has fewer samples in its tail",
            holds.join("; ")
        ));
    }
    (notes, None)
}

/// `synlab compare BASELINE RUN --max-regression LIMIT [--on METRIC,...] [--out DIR]`: exit 0,
/// 3 on a regression, 4 when a run is not whole or nothing could be judged, 2 when the runs'
/// points do not match, 1 when the overlay plots could not be written (4 wins over 1, 1 over
/// 3). The overlay goes to `out`, or into the run's folder (never the baseline's, which a CI
/// job may keep read-only).
pub fn compare_main(
    base: &Path,
    run: &Path,
    limit: MaxRegression,
    on: &[String],
    out: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let limit = limit.0;
    let mut on_metrics = Vec::new();
    for m in on {
        match Metric::parse(m) {
            Ok(j) => on_metrics.push(j),
            Err(e) => anyhow::bail!(
                "--on `{m}`: {e}\n(--on takes the numeric columns of summary.json, cpu_busy_pct \
                 and capacity_per_s)"
            ),
        }
    }
    let (b, r) = (super::read::read_run(base)?, super::read::read_run(run)?);
    let (notes, refusal) = mismatch(&b, &r);
    if let Some(why) = refusal {
        anyhow::bail!(
            "cannot compare {} with {}: {why}",
            base.display(),
            run.display()
        );
    }
    let d = deltas_on(&b, &r, &on_metrics);
    let mut incomplete_lines = Vec::new();
    for (what, data, dir) in [("run", &r, run), ("baseline", &b, base)] {
        for why in incomplete(data) {
            incomplete_lines.push(format!("the {what} {} is not whole: {why}", dir.display()));
        }
    }
    if d.is_empty() && !incomplete_lines.is_empty() {
        // No point in common because one side never finished: that run is the problem, not
        // the pairing.
        return Ok(fails_incomplete(&incomplete_lines, None));
    }
    if d.is_empty() {
        anyhow::bail!(
            "{} and {} share no point (points are matched by mode and sweep value): compare runs \
             of the same scenario",
            base.display(),
            run.display()
        );
    }
    println!("baseline: {}\nrun:      {}", b.name, r.name);
    for n in &notes {
        println!("note: {n}");
    }
    print!("{}", table(&d, limit, &on_metrics));
    let overlay_failed = overlay(base, run, (&b, &r), out);
    let unjudged: Vec<String> = d
        .iter()
        .filter(|x| x.metric == METRICS[0].0)
        .filter_map(|x| x.unjudged.as_ref().map(|u| format!("{} ({u})", x.point)))
        .collect();
    if !unjudged.is_empty() {
        println!("not judged: {}", unjudged.join("; "));
    }
    for m in &on_metrics {
        let of_m: Vec<&Delta> = d.iter().filter(|x| x.metric == *m).collect();
        let lacks = |f: fn(&Delta) -> f64| of_m.iter().all(|x| !f(x).is_finite());
        let side = match (lacks(|x| x.base), lacks(|x| x.run)) {
            _ if of_m.is_empty() || *m == Metric::Capacity => None,
            (true, true) => Some("either run"),
            (true, false) => Some("the baseline"),
            (false, true) => Some("the run"),
            (false, false) => None,
        };
        if let Some(side) = side {
            println!(
                "not judged: {} was not measured in {side} (a run written by an older synlab \
                 lacks it)",
                m.name()
            );
        }
    }
    let floored: Vec<String> = d
        .iter()
        .filter(|x| on_metrics.contains(&x.metric) && x.under_floor)
        .filter(|x| x.regression_pct.is_some_and(|r| r > limit))
        .map(|x| {
            format!(
                "{} at {}: {} -> {} is under the {} floor",
                x.metric.name(),
                x.point,
                short(x.base),
                short(x.run),
                floor_text(x.metric)
            )
        })
        .collect();
    if !floored.is_empty() {
        println!(
            "within the floor (past {limit} % but too small to be a regression): {}",
            floored.join("; ")
        );
    }
    let worse: Vec<&Delta> = d
        .iter()
        .filter(|x| on_metrics.contains(&x.metric))
        .filter(|x| x.regressed(limit))
        .collect();
    for x in &worse {
        let by = x.regression_pct.unwrap_or_default();
        let (change, unit) = match () {
            _ if x.metric.in_points() => (format!("{by:+.1} points"), "points"),
            _ if by.is_infinite() => ("from none".to_string(), "%"),
            _ => (format!("{by:.1} % worse"), "%"),
        };
        eprintln!(
            "REGRESSION {} at {}: {} -> {} ({change}, limit {limit} {unit}{})",
            x.metric.name(),
            x.point,
            short(x.base),
            short(x.run),
            if x.metric == Metric::Col(SummaryCol::ErrorSharePct) {
                "; the error share is in % of the requests that ended"
            } else {
                ""
            }
        );
    }
    let judged_any = d
        .iter()
        .any(|x| on_metrics.contains(&x.metric) && x.regression_pct.is_some());
    if !incomplete_lines.is_empty() || !judged_any {
        let nothing = (!judged_any).then(|| nothing_judged(&d, &on_metrics));
        return Ok(fails_incomplete(&incomplete_lines, nothing));
    }
    if overlay_failed {
        eprintln!("synlab: a file of the comparison could not be written (exit 1)");
        return Ok(ExitCode::from(super::EXIT_UNWRITTEN));
    }
    if worse.is_empty() {
        let points: Vec<&str> = on_metrics
            .iter()
            .filter(|m| m.in_points())
            .map(|m| m.name())
            .collect();
        let points = if points.is_empty() {
            String::new()
        } else {
            format!(" ({limit} points for {})", points.join(", "))
        };
        println!("no regression past {limit} %{points} in {}", on.join(", "));
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("synlab: {} regression(s) past the limit", worse.len());
        Ok(ExitCode::from(EXIT_REGRESSION))
    }
}

/// Says why the comparison cannot be trusted (`INCOMPLETE` lines on stderr) and fails with
/// exit 4.
fn fails_incomplete(lines: &[String], nothing_judged: Option<String>) -> ExitCode {
    say_incomplete(lines, nothing_judged.as_deref());
    ExitCode::from(EXIT_INCOMPLETE)
}

/// The lines of a comparison that fails with exit 4, on stderr: an `INCOMPLETE` line per
/// reason a run is not whole, and the last line's reason: the runs that are not whole, or,
/// when they are, why nothing was judged ([`nothing_judged`]) and what to do.
pub fn say_incomplete(lines: &[String], nothing_judged: Option<&str>) {
    for l in lines {
        eprintln!("INCOMPLETE {l}");
    }
    match nothing_judged {
        Some(why) if lines.is_empty() => {
            eprintln!("synlab: the comparison fails (exit {EXIT_INCOMPLETE}): {why}")
        }
        _ => {
            if let Some(why) = nothing_judged {
                eprintln!("INCOMPLETE {why}");
            }
            eprintln!(
                "synlab: the comparison fails (exit {EXIT_INCOMPLETE}): only whole runs are compared; rerun the incomplete one"
            )
        }
    }
}

/// Why a comparison judged nothing of `on`, and what to do: every point it compared was
/// CLIENT-BOUND (the clients, not the server, set its throughput, so the server's figures say
/// nothing; a busy machine starves the load, else the load falls short as its reason says),
/// or the judged figures were not measured in both runs.
pub fn nothing_judged(d: &[Delta], on: &[Metric]) -> String {
    let names: Vec<&str> = on.iter().map(|m| m.name()).collect();
    let mut points: Vec<(&str, Option<&Unjudged>)> = Vec::new();
    for x in d.iter().filter(|x| x.metric != Metric::Capacity) {
        if !points.iter().any(|(p, _)| *p == x.point) {
            points.push((&x.point, x.unjudged.as_ref()));
        }
    }
    let bound = points.iter().filter(|(_, u)| u.is_some()).count();
    if bound == 0 {
        return format!(
            "nothing was judged: no point of {} was measured in both runs",
            names.join(", ")
        );
    }
    let which = if bound == points.len() {
        "every point compared was CLIENT-BOUND".to_string()
    } else {
        format!(
            "{bound} of the {} points compared were CLIENT-BOUND and the others did not measure {} in both runs",
            points.len(),
            names.join(", ")
        )
    };
    let busy = points
        .iter()
        .filter_map(|(_, u)| u.and_then(|u| u.busy.as_ref().map(|d| (u.side, d))))
        .next();
    let todo = match busy {
        Some((side, d)) => {
            format!("in {side}, {d}: other work starved the lab, so rerun on a quieter machine")
        }
        None => "give the load what the CLIENT-BOUND reason names (or ask less of it: a lower \
                 rate, fewer clients) and run again"
            .to_string(),
    };
    format!(
        "nothing was judged: {which}: the clients, not the server, set the throughput there, \
         so the server's figures are not judged; {todo}"
    )
}

/// The overlay plots of two runs (their aggregates, for repeated runs), into `out` or the
/// run's folder, under `compare-<BASELINE>/`; the line says where, or why there is none. True
/// when they could not be written (said on stderr).
pub fn overlay(base: &Path, run: &Path, (b, r): (&RunData, &RunData), out: Option<&Path>) -> bool {
    let same = matches!(
        (base.canonicalize(), run.canonicalize()),
        (Ok(x), Ok(y)) if x == y
    );
    if same {
        println!("overlay: none (the baseline and the run are one folder)");
        return false;
    }
    if b.param().is_none() || b.param() != r.param() {
        println!("overlay: none (the overlay plots need two sweeps of the same parameter)");
        return false;
    }
    let into = out.map_or_else(|| run.to_path_buf(), Path::to_path_buf);
    // Named after the baseline: `RUN/compare-<BASELINE>/`.
    let named = [b.name.as_str()];
    let dirs = [base.to_path_buf(), run.to_path_buf()];
    match super::write_overlay_into(&dirs, &into, Some(&named)) {
        Ok(md) => {
            println!("overlay: {}", md.display());
            false
        }
        Err(e) => {
            eprintln!("synlab: the overlay plots could not be written: {e:#}");
            true
        }
    }
}

/// A metric's floor as a person reads it: `1 ms`, `1/s`.
pub(crate) fn floor_text(m: Metric) -> String {
    let unit = match m {
        Metric::Col(c) => c.unit().symbol(),
        Metric::Capacity => "/s",
        Metric::CpuBusy => "%",
    };
    let sep = if unit.starts_with('/') || unit.is_empty() {
        ""
    } else {
        " "
    };
    format!("{}{sep}{unit}", m.floor())
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
                "failed": false, "throughput_per_s": thr, "good_responses_per_s": thr,
                "error_share_pct": 0.0, "total_p50_ms": 10.0,
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
            param: "load.rate".into(),
            unit: "/s".into(),
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
        assert_eq!(r("closed 16", "good_responses_per_s"), Some(50.0));
        assert_eq!(r("closed 16", "throughput_per_s"), Some(50.0));
        assert_eq!(r("closed 16", "total_p99_ms"), Some(100.0));
        assert_eq!(r("closed 8", "throughput_per_s"), Some(-2.5));
        assert_eq!(r("closed 8", "total_p99_ms"), Some(-10.0));
        assert_eq!(r("closed 8", "error_share_pct"), Some(0.0));
        assert_eq!(r("closed 8", "cpu_busy_pct"), Some(0.0));
        assert_eq!("5%".parse(), Ok(MaxRegression(5.0)));
        assert_eq!(" 2.5 ".parse(), Ok(MaxRegression(2.5)));
        let bad = "five".parse::<MaxRegression>().unwrap_err();
        assert_eq!(bad.to_string(), "`five` is not a percentage: write e.g. 5%");
        assert!("-1%".parse::<MaxRegression>().is_err());
        let t = table(&d, 5.0, &JUDGED);
        assert!(t.contains("400->200 -50%!"), "{t}");
        assert!(t.contains("80.0->160 +100%!"), "{t}");
        assert!(t.contains("50.0->45.0 -10%"), "{t}");
        // `!` only on the judged columns: p99 left out of `--on` is shown, not marked.
        let t = table(&d, 5.0, &[Metric::Col(SummaryCol::GoodResponsesPerS)]);
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
            "error_share_pct",
            super::super::read::Cell::Num(5.4),
        );
        let d = deltas(&base, &new);
        let e = d
            .iter()
            .find(|x| x.point == "closed 16" && x.metric == Metric::Col(SummaryCol::ErrorSharePct))
            .unwrap();
        assert!((e.regression_pct.unwrap() - 5.4).abs() < 1e-9);
        let t = table(&d, 5.0, &JUDGED);
        assert!(t.contains("0->5.40 +5.4pt!"), "{t}");
    }

    /// Every numeric summary column is a `--on` metric (one rule with the thresholds), judged
    /// the way it is worse: a failed-response rate that rises, from 0 too.
    #[test]
    fn any_summary_column_is_judged_the_way_it_is_worse() {
        assert_eq!(
            Metric::parse("non2xx_per_s"),
            Ok(Metric::Col(SummaryCol::Non2xxPerS))
        );
        assert_eq!(Metric::parse("capacity_per_s"), Ok(Metric::Capacity));
        assert!(Metric::parse("backend").is_err());
        for c in SummaryCol::ALL {
            assert_eq!(Metric::parse(c.name()), Ok(Metric::Col(*c)));
        }
        let mut base = run(&[("8", 400.0, 50.0)]);
        let mut new = run(&[("8", 400.0, 50.0)]);
        let failed = "failed_responses_per_s";
        set(&mut base, 0, failed, super::super::read::Cell::Num(0.0));
        set(&mut new, 0, failed, super::super::read::Cell::Num(52.0));
        let on = [Metric::Col(SummaryCol::FailedResponsesPerS)];
        let d = deltas_on(&base, &new, &on);
        let f = d.iter().find(|x| x.metric == on[0]).unwrap();
        assert!(f.regressed(5.0), "{f:?}");
        assert!(table(&d, 5.0, &on).contains("failed_responses_per_s"));
    }

    /// A change under the metric's absolute floor is noise, however large in %: p50 0.26 ->
    /// 0.34 ms (+31 %) is no regression; 10 -> 13 ms (+30 %) is.
    #[test]
    fn a_change_under_the_floor_is_not_a_regression() {
        let mut base = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        let mut new = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        let p50 = "total_p50_ms";
        set(&mut base, 0, p50, super::super::read::Cell::Num(0.26));
        set(&mut new, 0, p50, super::super::read::Cell::Num(0.34));
        set(&mut new, 1, p50, super::super::read::Cell::Num(13.0));
        let d = deltas(&base, &new);
        let at = |p: &str| {
            d.iter()
                .find(|x| x.point == p && x.metric == Metric::Col(SummaryCol::TotalP50Ms))
                .unwrap()
        };
        assert!(at("closed 8").under_floor);
        assert!(!at("closed 8").regressed(5.0));
        assert!(at("closed 16").regressed(5.0));
        let t = table(&d, 5.0, &JUDGED);
        assert!(t.contains("0.26->0.34 +31%~"), "{t}");
        assert!(t.contains("10.0->13.0 +30%!"), "{t}");
        // A rate's floor: 1/s.
        assert_eq!(SummaryCol::GoodResponsesPerS.floor(), 1.0);
        assert!(regression(Metric::Col(SummaryCol::GoodResponsesPerS), 2.0, 1.2).1);
    }

    /// Another scenario, or other holds, is said; points that do not match are refused.
    #[test]
    fn runs_of_other_points_are_refused_and_other_holds_said() {
        let base = run(&[("8", 400.0, 50.0), ("16", 400.0, 80.0)]);
        assert_eq!(mismatch(&base, &base), (vec![], None));
        let mut held = base.clone();
        held.scenario = Some(
            crate::scenario::parse(
                "y.toml",
                "name = \"other\"\n[load]\nmode = \"closed\"\nclients = 8\n[sweep]\nparam = \"load.clients\"\nvalues = [8, 16]\nhold = \"5s\"\n",
            )
            .unwrap(),
        );
        let (notes, refusal) = mismatch(&base, &held);
        assert_eq!(refusal, None);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("scenario `x`, the run `other`"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("closed 8: 2 s in the baseline, 5 s in the run"),
            "{notes:?}"
        );
        let mut other = base.clone();
        other.scenario = Some(
            crate::scenario::parse(
                "x.toml",
                "[load]\nmode = \"closed\"\nclients = 8\n[sweep]\nparam = \"load.clients\"\nvalues = [8, 32]\nhold = \"2s\"\n",
            )
            .unwrap(),
        );
        let (_, refusal) = mismatch(&base, &other);
        let why = refusal.unwrap();
        assert!(
            why.contains("the baseline plans closed 8, closed 16, the run closed 8, closed 32"),
            "{why}"
        );
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
        // Killed before its summary: said first, whatever else is missing.
        let mut killed = run(&[]);
        killed
            .warnings
            .push("summary.json: No such file or directory (os error 2); no summary".into());
        let why = incomplete(&killed);
        assert!(
            why[0].starts_with("its summary.json cannot be read"),
            "{why:?}"
        );
        assert_eq!(why.len(), 2, "{why:?}");
        // A TUI session's stretches are not a plan's points.
        let mut session = run(&[("8", 400.0, 50.0)]);
        session.meta.insert(SESSION_KEY.into(), "tui".into());
        assert_eq!(incomplete(&session), Vec::<String>::new());
    }
}
