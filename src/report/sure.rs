//! `synlab compare` that says how sure it is. On repeated runs (folders with `trial-K`
//! sub-folders) every judged figure is decided by the interval of its change over the trials
//! (`noise::shift`: Hodges-Lehmann with its exact Mann-Whitney interval): a regression only
//! when the whole interval is past the limit, "within the noise" when it holds no change. On
//! single runs the change is judged alone, as `compare::compare_main` does, and the verdict
//! says that the noise is unknown and how many trials would settle it. `--json FILE` and
//! `--junit FILE` carry one entry per judged figure with its interval.

use super::compare::{self, Delta, Metric, EXIT_INCOMPLETE, EXIT_REGRESSION};
use super::noise::{self, Scale, Shift};
use super::read::RunData;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The most trials a "may be past" line suggests; more means the figure is too noisy to judge.
const MAX_TRIALS_SAID: usize = 100;

/// What the interval of a figure's change says against the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sureness {
    /// The whole interval is past the limit.
    Regression,
    /// The interval reaches past the limit but not wholly: about `trials` trials each would
    /// settle it (None when the estimate sits on the limit).
    MaybePast { trials: Option<usize> },
    /// Surely worse, surely within the limit.
    WorseWithin,
    /// The interval holds no change.
    Noise,
    /// Surely better.
    Better,
    /// One trial a side: the noise is unknown; `past` the change alone is past the limit.
    Unknown { past: bool },
    /// Past the limit in %, or possibly so, but every change the interval holds is smaller
    /// than the figure's floor (a p50 of 1.18 -> 1.26 ms): too small to be a regression.
    UnderFloor,
}

impl Sureness {
    /// The word summary.json and --json use.
    pub fn key(self) -> &'static str {
        match self {
            Sureness::Regression => "regression",
            Sureness::MaybePast { .. } => "maybe_past_limit",
            Sureness::WorseWithin => "worse_within_limit",
            Sureness::Noise => "within_noise",
            Sureness::Better => "better",
            Sureness::Unknown { past: true } => "past_limit_noise_unknown",
            Sureness::Unknown { past: false } => "within_limit_noise_unknown",
            Sureness::UnderFloor => "within_floor",
        }
    }
    /// Its mark in compare's table: `!` fails the comparison, `?` may be past the limit, `~`
    /// within the floor.
    pub fn mark(self) -> &'static str {
        match self {
            _ if self.fails() => "!",
            Sureness::MaybePast { .. } => "?",
            Sureness::UnderFloor => "~",
            _ => "",
        }
    }
    /// Whether it fails the comparison (exit 3): a sure regression, or, with the noise
    /// unknown, a change past the limit (as a single-run compare always judged).
    pub fn fails(self) -> bool {
        matches!(
            self,
            Sureness::Regression | Sureness::Unknown { past: true }
        )
    }
}

/// One judged figure of one point: the medians, the change with its interval, the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub point: String,
    pub metric: Metric,
    pub trials: (usize, usize),
    pub base: f64,
    pub run: f64,
    /// In % of the baseline (ratio figures) or in points (the error share).
    pub scale: Scale,
    pub shift: Shift,
    pub limit: f64,
    pub verdict: Sureness,
    /// The trials a side (pairs, for A/B) whose interval reaches 95 %.
    pub settles: usize,
}

impl Judged {
    /// The change and its interval in the unit the limit is in: % of the baseline, or points.
    pub fn change(&self) -> (f64, f64, f64) {
        let f = |r: f64| match self.scale {
            Scale::Ratio => (r - 1.0) * 100.0,
            Scale::Difference => r,
        };
        (
            f(self.shift.estimate),
            f(self.shift.ci.lo),
            f(self.shift.ci.hi),
        )
    }
    fn unit(&self) -> &'static str {
        match self.scale {
            Scale::Ratio => "%",
            Scale::Difference => "pt",
        }
    }
}

impl std::fmt::Display for Judged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (c, lo, hi) = self.change();
        let u = self.unit();
        let lim = format!("{} {u} limit", self.limit);
        write!(f, "{} at {}: {c:+.1} {u}", self.metric.name(), self.point)?;
        if !matches!(self.verdict, Sureness::Unknown { .. }) {
            write!(
                f,
                " ({:.0} % CI {lo:+.1} .. {hi:+.1} {u})",
                self.shift.ci.level_pct()
            )?;
        }
        match self.verdict {
            Sureness::Regression => write!(f, ": regression past the {lim}")?,
            Sureness::MaybePast { trials } => {
                write!(f, ": may be past the {lim}: the interval straddles it")?;
                match trials {
                    // Past this the estimate of 1/sqrt(n) narrowing means nothing: say so.
                    Some(n) if n > MAX_TRIALS_SAID => write!(
                        f,
                        "; over {MAX_TRIALS_SAID} trials a side would be needed: too noisy here to judge at this limit"
                    )?,
                    Some(n) => write!(f, "; about {n} trials a side would settle it")?,
                    None => {}
                }
            }
            Sureness::WorseWithin => write!(f, ": worse, within the {lim}")?,
            Sureness::Noise => write!(f, ": within the noise")?,
            Sureness::Better => write!(f, ": better")?,
            Sureness::UnderFloor => write!(
                f,
                ": within the {} floor (past the {lim} in %, too small to be a regression)",
                super::compare::floor_text(self.metric)
            )?,
            Sureness::Unknown { past } => write!(
                f,
                ": {} the {lim}; the noise is unknown (one trial a side): --repeat {} on both would settle it",
                if past { "past" } else { "within" },
                noise::trials_for_shift(noise::LEVEL)
            )?,
        }
        let (n, m) = self.trials;
        if n.min(m) > 1 && self.shift.ci.coverage < noise::LEVEL {
            write!(
                f,
                " (only {:.0} % sure with {n} and {m} trials: {} reach 95 %)",
                self.shift.ci.level_pct(),
                self.settles
            )?;
        }
        Ok(())
    }
}

/// Decides one figure: `regression` is the interval in regression units (worse > 0), sorted.
pub fn decide(regression: (f64, f64, f64), limit: f64, trials: (usize, usize)) -> Sureness {
    let (est, lo, hi) = regression;
    if trials.0 <= 1 && trials.1 <= 1 {
        return Sureness::Unknown { past: est > limit };
    }
    if lo > limit {
        Sureness::Regression
    } else if hi > limit {
        // The interval narrows about as 1/sqrt(n): the trials whose half-width fits between
        // the estimate and the limit.
        let half = (hi - lo) / 2.0;
        let gap = (est - limit).abs();
        let n = trials.0.min(trials.1) as f64;
        let need = (gap > 0.0).then(|| (n * (half / gap).powi(2)).ceil() as usize);
        Sureness::MaybePast {
            trials: need.map(|k| k.max(trials.0.min(trials.1) + 1)),
        }
    } else if lo > 0.0 {
        Sureness::WorseWithin
    } else if hi < 0.0 {
        Sureness::Better
    } else {
        Sureness::Noise
    }
}

/// The run folders of a folder's trials: its `trial-K` sub-folders, else itself.
fn trial_runs(dir: &Path) -> anyhow::Result<Vec<RunData>> {
    let dirs = super::trials::trial_dirs(dir);
    if dirs.is_empty() {
        return Ok(vec![super::read::read_run(dir)?]);
    }
    dirs.iter().map(|d| super::read::read_run(d)).collect()
}

/// The value of (point, metric) in each of `runs`, matched by compare's own rules against `other`.
fn values(runs: &[RunData], other: &RunData, x: &Delta, base_side: bool) -> Vec<f64> {
    runs.iter()
        .filter_map(|r| {
            let d = if base_side {
                compare::deltas_on(r, other, &[x.metric])
            } else {
                compare::deltas_on(other, r, &[x.metric])
            };
            d.into_iter()
                .find(|y| y.point == x.point && y.metric == x.metric)
                .map(|y| if base_side { y.base } else { y.run })
        })
        .collect()
}

/// The table of repeated runs, cell by cell what the verdicts judge: each figure the median
/// of the judged trials' own values (a latency percentile each trial's own, as judged, not the
/// merged histograms' of the aggregate's summary.json), and a judged figure's change its
/// verdict's estimate (the median of the trials' pairwise changes) with its mark.
pub fn shown(d: &[Delta], base: &[RunData], run: &[RunData], j: &[Judged]) -> Vec<Delta> {
    d.iter()
        .map(|x| {
            let mut y = x.clone();
            let b = noise::median(&values(base, &run[0], x, true));
            let r = noise::median(&values(run, &base[0], x, false));
            if b.is_finite() && r.is_finite() {
                (y.base, y.run) = (b, r);
                if y.regression_pct.is_some() {
                    (y.regression_pct, y.under_floor) = compare::regression(x.metric, b, r);
                }
            }
            y.judged = j
                .iter()
                .find(|k| k.point == x.point && k.metric == x.metric)
                .map(|k| (k.change().0, k.verdict.mark()));
            y
        })
        .collect()
}

/// What the table of repeated runs shows, said above it.
pub fn table_heading(trials: (usize, usize)) -> String {
    format!(
        "baseline -> run: the median of the judged trials' own figures ({} and {} trials; a p50 or \
         p99 is each trial's own, not summary.json's percentile of the merged histograms);\n\
         a judged figure's change is its verdict's below (the median of the trials' pairwise \
         changes): ! a regression, ? may be past the limit, ~ within the floor\n",
        trials.0, trials.1
    )
}

/// Judges every judged figure (`on`, measured in both) of the medians' deltas `d` with the
/// trials' values.
pub fn judge(
    d: &[Delta],
    base: &[RunData],
    run: &[RunData],
    limit: f64,
    on: &[Metric],
) -> Vec<Judged> {
    let mut out = Vec::new();
    for x in d.iter().filter(|x| on.contains(&x.metric)) {
        if x.regression_pct.is_none() {
            continue;
        }
        let b = values(base, &run[0], x, true);
        let r = values(run, &base[0], x, false);
        let scale = if x.metric.in_points() {
            Scale::Difference
        } else {
            Scale::Ratio
        };
        let Some(shift) = noise::shift(&b, &r, scale, noise::LEVEL) else {
            continue;
        };
        // Which way is worse, as compare measured it: a regression of the same sign as the
        // change means lower is better.
        let j0 = Judged {
            point: x.point.clone(),
            metric: x.metric,
            trials: (b.len(), r.len()),
            base: noise::median(&b),
            run: noise::median(&r),
            scale,
            shift,
            limit,
            verdict: Sureness::Noise,
            settles: noise::trials_for_shift(noise::LEVEL),
        };
        out.push(decided(j0, lower_better(x)));
    }
    out
}

/// Which way is worse, as compare measured it: a regression of the same sign as the change
/// means lower is better.
fn lower_better(x: &Delta) -> bool {
    match x.regression_pct {
        Some(reg) if x.run != x.base => (reg > 0.0) == (x.run > x.base),
        _ => !matches!(x.metric, Metric::Capacity) && !x.metric.name().contains("throughput"),
    }
}

/// `j` with its verdict from its interval.
fn decided(j: Judged, lower_better: bool) -> Judged {
    let (c, lo, hi) = j.change();
    let regression = if lower_better {
        (c, lo, hi)
    } else {
        (-c, -hi, -lo)
    };
    let mut verdict = decide(regression, j.limit, j.trials);
    // The farthest change the interval holds, in the figure's unit (as compare's floor).
    let farthest = match j.scale {
        Scale::Ratio => lo.abs().max(hi.abs()) / 100.0 * j.base.abs(),
        Scale::Difference => lo.abs().max(hi.abs()),
    };
    let judged_past = matches!(
        verdict,
        Sureness::Regression | Sureness::MaybePast { .. } | Sureness::Unknown { past: true }
    );
    if judged_past && farthest < j.metric.floor() {
        verdict = Sureness::UnderFloor;
    }
    Judged { verdict, ..j }
}

/// A/B of interleaved pairs (A, B): per judged figure the median of the pairs' ratios B/A
/// (differences for the error share) with its order-statistics interval (the sign test's,
/// distribution-free; pairs taken side by side in time cancel the host's drift).
pub fn judge_paired(pairs: &[(RunData, RunData)], limit: f64, on: &[Metric]) -> Vec<Judged> {
    let Some((a0, b0)) = pairs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let all: Vec<Vec<Delta>> = pairs
        .iter()
        .map(|(a, b)| compare::deltas_on(a, b, on))
        .collect();
    for x in compare::deltas_on(a0, b0, on)
        .iter()
        .filter(|x| on.contains(&x.metric))
    {
        let scale = if x.metric.in_points() {
            Scale::Difference
        } else {
            Scale::Ratio
        };
        let mut per = Vec::new();
        let mut lower = None;
        for d in &all {
            let Some(y) = d
                .iter()
                .find(|y| y.point == x.point && y.metric == x.metric)
            else {
                continue;
            };
            if y.regression_pct.is_none() {
                continue;
            }
            if y.run != y.base && lower.is_none() {
                lower = Some(lower_better(y));
            }
            match scale {
                Scale::Ratio if y.base > 0.0 && y.run > 0.0 => per.push((y.run / y.base).ln()),
                Scale::Difference => per.push(y.run - y.base),
                _ => {}
            }
        }
        let Some(ci) = noise::median_ci(&per, noise::LEVEL) else {
            continue;
        };
        let back = |v: f64| match scale {
            Scale::Ratio => v.exp(),
            Scale::Difference => v,
        };
        let side = |i: usize| {
            let v: Vec<f64> = pairs
                .iter()
                .filter_map(|p| {
                    let d = compare::deltas_on(&p.0, &p.1, &[x.metric]);
                    let y = d
                        .into_iter()
                        .find(|y| y.point == x.point && y.metric == x.metric)?;
                    Some(if i == 0 { y.base } else { y.run })
                })
                .collect();
            noise::median(&v)
        };
        let j = Judged {
            point: x.point.clone(),
            metric: x.metric,
            trials: (per.len(), per.len()),
            base: side(0),
            run: side(1),
            scale,
            shift: Shift {
                estimate: back(noise::median(&per)),
                ci: noise::Interval {
                    lo: back(ci.lo),
                    hi: back(ci.hi),
                    coverage: ci.coverage,
                },
            },
            limit,
            verdict: Sureness::Noise,
            settles: noise::trials_for_median(noise::LEVEL),
        };
        out.push(decided(j, lower.unwrap_or_else(|| lower_better(x))));
    }
    out
}

/// --json: the comparison's figures and verdicts.
pub fn json(base: &Path, run: &Path, limit: f64, j: &[Judged], exit: u8) -> serde_json::Value {
    let n = super::trials::finite_json;
    serde_json::json!({
        "baseline": base.display().to_string(),
        "run": run.display().to_string(),
        "limit": limit,
        "exit": exit,
        "figures": j.iter().map(|x| {
            let (c, lo, hi) = x.change();
            serde_json::json!({
                "point": x.point,
                "metric": x.metric.name(),
                "unit": x.unit(),
                "trials": [x.trials.0, x.trials.1],
                "baseline": n(x.base),
                "run": n(x.run),
                "change": n(c),
                "ci_lo": n(lo),
                "ci_hi": n(hi),
                "ci_level_pct": n(x.shift.ci.level_pct()),
                "verdict": x.verdict.key(),
                "line": x.to_string(),
            })
        }).collect::<Vec<_>>(),
    })
}

/// --junit: one test case per judged figure, failed when it fails the comparison; the line
/// (with the interval) is its message.
pub fn junit(j: &[Judged], incomplete: &[String]) -> quick_junit::Report {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut suite = TestSuite::new("synlab.compare");
    for x in j {
        let status = if x.verdict.fails() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(x.to_string()).set_type(x.verdict.key());
            s
        } else {
            TestCaseStatus::success()
        };
        let mut case = TestCase::new(format!("{} @ {}", x.metric.name(), x.point), status);
        case.set_classname("synlab.compare");
        case.set_system_out(x.to_string());
        suite.add_test_case(case);
    }
    for why in incomplete {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(why.clone()).set_type("incomplete");
        let mut case = TestCase::new("whole runs", s);
        case.set_classname("synlab.compare");
        suite.add_test_case(case);
    }
    let mut r = Report::new("synlab");
    r.add_test_suite(suite);
    r
}

/// `synlab compare`'s flags beyond the two folders and the limit.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub json: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    /// Where the overlay plots go (`--out`; default the run's folder).
    pub overlay: Option<PathBuf>,
}

fn write_outputs(
    out: &Outputs,
    (base, run, limit): (&Path, &Path, f64),
    j: &[Judged],
    incomplete: &[String],
    code: u8,
) -> Vec<String> {
    let mut failed = Vec::new();
    if let Some(p) = &out.json {
        let s = serde_json::to_string_pretty(&json(base, run, limit, j, code)).unwrap_or_default();
        match crate::sys::files::atomic_write(p, s.as_bytes()) {
            Ok(()) => println!("json: {}", p.display()),
            Err(e) => failed.push(format!("{}: {e:#}", p.display())),
        }
    }
    if let Some(p) = &out.junit {
        let xml = junit(j, incomplete).to_string().unwrap_or_default();
        match crate::sys::files::atomic_write(p, xml.as_bytes()) {
            Ok(()) => println!("junit: {}", p.display()),
            Err(e) => failed.push(format!("{}: {e:#}", p.display())),
        }
    }
    failed
}

pub fn parse_on(on: &[String]) -> anyhow::Result<Vec<Metric>> {
    on.iter()
        .map(|m| Metric::parse(m).map_err(|e| anyhow::anyhow!("--on: {e}")))
        .collect()
}

/// `synlab compare BASELINE RUN ...`: repeated runs are judged here with their intervals;
/// single runs by `compare::compare_main`, then said to be of unknown noise. Exit 0, 3 on a
/// regression, 4 when a run is not whole, 1 when a file could not be written.
pub fn compare_cli(
    base: &Path,
    run: &Path,
    max_regression: compare::MaxRegression,
    on: &[String],
    out: &Outputs,
) -> anyhow::Result<ExitCode> {
    let limit = max_regression.0;
    let repeated =
        !super::trials::trial_dirs(base).is_empty() || !super::trials::trial_dirs(run).is_empty();
    if !repeated {
        let code = compare::compare_main(base, run, max_regression, on, out.overlay.as_deref())?;
        let on_m = parse_on(on)?;
        let (b, r) = (super::read::read_run(base)?, super::read::read_run(run)?);
        let d = compare::deltas_on(&b, &r, &on_m);
        let j = judge(&d, &[b], &[r], limit, &on_m);
        println!(
            "noise: unknown with one trial a side, so each change was judged alone; \
             `synlab run --repeat {}` for both (or more trials for noisy figures) would say how sure it is",
            noise::trials_for_shift(noise::LEVEL)
        );
        let failed = write_outputs(out, (base, run, limit), &j, &[], exit_u8(&code));
        if !failed.is_empty() {
            eprintln!("synlab: not written: {}", failed.join("; "));
        }
        return Ok(code);
    }
    let on_m = parse_on(on)?;
    let (bt_all, rt_all) = (trial_runs(base)?, trial_runs(run)?);
    // Trials the machine disturbed measured the neighbours too: judged without them.
    let kept = |runs: &[RunData], what: &str| {
        let (k, said) = super::disturbed::judged_trials(runs, what);
        for l in &said {
            println!("{l}");
        }
        k.into_iter().cloned().collect::<Vec<RunData>>()
    };
    let (bt, rt) = (kept(&bt_all, "baseline"), kept(&rt_all, "run"));
    let (b, r) = (super::read::read_run(base)?, super::read::read_run(run)?);
    // The same notes and refusals as two single runs get (scenarios, planned points).
    let (notes, refusal) = compare::mismatch(&bt_all[0], &rt_all[0]);
    if let Some(why) = refusal {
        anyhow::bail!(
            "cannot compare {} with {}: {why}",
            base.display(),
            run.display()
        );
    }
    let d = compare::deltas_on(&b, &r, &on_m);
    if d.is_empty() {
        anyhow::bail!(
            "{} and {} share no point (points are matched by mode and sweep value): compare runs \
             of the same scenario",
            base.display(),
            run.display()
        );
    }
    println!(
        "baseline: {} ({} trials)\nrun:      {} ({} trials)",
        b.name,
        bt_all.len(),
        r.name,
        rt_all.len()
    );
    for n in &notes {
        println!("note: {n}");
    }
    let j = judge(&d, &bt, &rt, limit, &on_m);
    print!("{}", table_heading((bt.len(), rt.len())));
    print!("{}", compare::table(&shown(&d, &bt, &rt, &j), limit, &on_m));
    for x in &j {
        println!("{x}");
    }
    // The aggregates' rows are the trials' medians: their curves overlaid as single runs'.
    let overlay_failed = compare::overlay(base, run, (&b, &r), out.overlay.as_deref());
    let mut incomplete = Vec::new();
    for (what, runs) in [("run", &rt_all), ("baseline", &bt_all)] {
        for t in runs.iter() {
            for why in super::whole::incomplete(t) {
                incomplete.push(format!(
                    "the {what} trial {} is not whole: {why}",
                    t.dir.display()
                ));
            }
        }
    }
    let worse: Vec<&Judged> = j.iter().filter(|x| x.verdict.fails()).collect();
    let nothing = j.is_empty().then(|| compare::nothing_judged(&d, &on_m));
    let code = if !incomplete.is_empty() || j.is_empty() {
        compare::say_incomplete(&incomplete, nothing.as_deref());
        EXIT_INCOMPLETE
    } else if !worse.is_empty() {
        for x in &worse {
            eprintln!("REGRESSION {x}");
        }
        EXIT_REGRESSION
    } else {
        0
    };
    let mut failed = write_outputs(out, (base, run, limit), &j, &incomplete, code);
    if overlay_failed {
        failed.push("the overlay plots".into());
    }
    let code = if code == 0 && !failed.is_empty() {
        eprintln!("synlab: not written: {} (exit 1)", failed.join("; "));
        super::EXIT_UNWRITTEN
    } else {
        code
    };
    let noisy = j.iter().filter(|x| x.verdict == Sureness::Noise).count();
    let maybe = j
        .iter()
        .filter(|x| matches!(x.verdict, Sureness::MaybePast { .. }))
        .count();
    match nothing {
        Some(why) if incomplete.is_empty() => println!("verdict: FAIL: {why} (exit {code})"),
        _ => println!(
            "verdict: {}: {} figure(s) judged, {} regression(s) past the limit with the whole interval, {maybe} unsettled, {noisy} within the noise (exit {code})",
            if code == 0 { "PASS" } else { "FAIL" },
            j.len(),
            worse.len()
        ),
    }
    Ok(ExitCode::from(code))
}

/// The number of an exit code (ExitCode hides it).
fn exit_u8(code: &ExitCode) -> u8 {
    [0u8, 1, 2, 3, 4, 130]
        .into_iter()
        .find(|c| ExitCode::from(*c) == *code)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_decides_and_says_so() {
        // -7.9 % throughput with its interval wholly past 5 %.
        assert_eq!(decide((7.9, 5.6, 10.2), 5.0, (5, 5)), Sureness::Regression);
        assert_eq!(
            decide((3.1, -4.0, 9.8), 5.0, (5, 5)).key(),
            "maybe_past_limit"
        );
        assert_eq!(decide((1.0, -2.0, 4.0), 5.0, (5, 5)), Sureness::Noise);
        assert_eq!(decide((2.0, 0.5, 4.0), 5.0, (5, 5)), Sureness::WorseWithin);
        assert_eq!(decide((-3.0, -4.0, -1.0), 5.0, (5, 5)), Sureness::Better);
        assert_eq!(
            decide((6.0, 6.0, 6.0), 5.0, (1, 1)),
            Sureness::Unknown { past: true }
        );
        assert!(!Sureness::MaybePast { trials: None }.fails());
    }

    #[test]
    fn a_change_under_the_figures_floor_is_no_regression_however_sure() {
        // A p50 of 1.18 -> 1.26 ms (+6.8 %) in 3 trials a side: past the 5 % limit, but 0.08
        // ms is under the 1 ms floor that a single-run compare applies too.
        let base = [1.17, 1.18, 1.19];
        let run = [1.25, 1.26, 1.27];
        let p50 = Metric::Col(crate::model::summary::SummaryCol::TotalP50Ms);
        let j = Judged {
            point: "open 400".into(),
            metric: p50,
            trials: (3, 3),
            base: 1.18,
            run: 1.26,
            scale: Scale::Ratio,
            shift: noise::shift(&base, &run, Scale::Ratio, noise::LEVEL).unwrap(),
            limit: 5.0,
            verdict: Sureness::Noise,
            settles: 4,
        };
        let j = decided(j, true);
        assert_eq!(j.verdict, Sureness::UnderFloor);
        assert!(!j.verdict.fails());
        assert!(j.to_string().contains("within the 1 ms floor"), "{j}");
        // The same change in %, from 118 to 126 ms, is one.
        let far = Judged {
            base: 118.0,
            run: 126.0,
            shift: noise::shift(
                &base.map(|x| x * 100.0),
                &run.map(|x| x * 100.0),
                Scale::Ratio,
                noise::LEVEL,
            )
            .unwrap(),
            ..j
        };
        assert_ne!(decided(far, true).verdict, Sureness::UnderFloor);
    }

    #[test]
    fn a_line_says_the_change_its_interval_and_the_verdict() {
        let base = [2500.0, 2510.0, 2490.0, 2505.0, 2495.0];
        let run: Vec<f64> = base.iter().map(|x| x * 0.921).collect();
        let shift = noise::shift(&base, &run, Scale::Ratio, noise::LEVEL).unwrap();
        let mut j = Judged {
            point: "closed 8".into(),
            metric: Metric::Col(crate::model::summary::SummaryCol::ThroughputPerS),
            trials: (5, 5),
            base: 2500.0,
            run: 2302.5,
            scale: Scale::Ratio,
            shift,
            limit: 5.0,
            verdict: Sureness::Regression,
            settles: 4,
        };
        let l = j.to_string();
        assert!(
            l.starts_with("throughput_per_s at closed 8: -7.9 % (97 % CI -"),
            "{l}"
        );
        assert!(l.ends_with("regression past the 5 % limit"), "{l}");
        j.verdict = Sureness::Noise;
        assert!(j.to_string().ends_with(": within the noise"));
        j.verdict = decide((3.1, -4.0, 9.8), 5.0, (5, 5));
        assert_eq!(j.verdict, Sureness::MaybePast { trials: Some(66) });
        assert!(j
            .to_string()
            .ends_with("about 66 trials a side would settle it"));
        j.verdict = Sureness::MaybePast { trials: Some(500) };
        assert!(j
            .to_string()
            .ends_with("too noisy here to judge at this limit"));
        j.trials = (1, 1);
        j.verdict = Sureness::Unknown { past: true };
        let l = j.to_string();
        assert!(!l.contains("CI"), "{l}");
        assert!(
            l.contains("the noise is unknown (one trial a side): --repeat 4"),
            "{l}"
        );
        let x = junit(std::slice::from_ref(&j), &[]).to_string().unwrap();
        assert!(x.contains("failures=\"1\""), "{x}");
    }
}
