//! The flags `synlab run` takes for CI: where to write JUnit XML and a markdown summary (and,
//! for live dashboards, where to serve OpenMetrics), how many trials; and what a run prints
//! where no one watches a terminal: one line per point as it ends, each notice as it is raised,
//! GitHub annotations under GitHub Actions, and one verdict line last.

use crate::model::SummaryRow;
use crate::report::thresholds::Verdict;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunExtras {
    /// Write the threshold verdicts as JUnit XML to FILE (one test case per threshold per
    /// point, and per cross-check when [gate] fail_on_crosscheck is set).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Serve the live time series as OpenMetrics at http://ADDR/metrics (a bare port binds
    /// 127.0.0.1; another interface only when named, e.g. 0.0.0.0:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Build the network lab in a user namespace even as root (the lab a user who is not
    /// root gets; without root that is the default).
    #[arg(long)]
    pub userns: bool,
    /// Run the scenario N times (trial-1 ... sub-folders, the server restarted for each) and
    /// write the median of every figure with its 95 % interval (overrides [output] repeat).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Append a markdown summary (verdicts and figures) to FILE; $GITHUB_STEP_SUMMARY gets it
    /// too when set.
    #[arg(long, value_name = "FILE")]
    pub summary_md: Option<PathBuf>,
}

/// Whether GitHub Actions runs us (its annotation lines are understood there).
pub fn github_actions() -> bool {
    std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true")
}

/// How a headless run shows its progress on stderr.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// A progress bar (stderr is a terminal).
    pub bar: bool,
    /// One line per point as it ends and each notice as it is raised (stderr is not a
    /// terminal: a CI log).
    pub lines: bool,
    /// `::warning` / `::error` annotation lines (GitHub Actions).
    pub annotate: bool,
    /// Trial k of n of a repeated run.
    pub trial: Option<(usize, usize)>,
}

impl Progress {
    /// What a front end shows: a bar on a terminal (unless `--no-progress`), lines elsewhere.
    pub fn for_stderr(bar_wanted: bool) -> Self {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Progress {
            bar: bar_wanted && tty,
            lines: !tty,
            annotate: github_actions(),
            trial: None,
        }
    }

    /// `trial 2 of 5: ` (empty for a single run).
    pub fn trial_prefix(&self) -> String {
        self.trial
            .map(|(k, n)| format!("trial {k} of {n}: "))
            .unwrap_or_default()
    }

    /// A notice the run raised, said at once in CI.
    pub fn notice(&self, text: &str) {
        if !self.lines {
            return;
        }
        let mut e = std::io::stderr();
        let _ = writeln!(e, "synlab: {}notice: {text}", self.trial_prefix());
        if self.annotate {
            let _ = writeln!(e, "::warning title=synlab notice::{}", escape(text));
        }
    }

    /// Point `i` of `n` ended (`cut`: by an interruption): one line with its figures and
    /// failed checks, in CI.
    pub fn point_ended(
        &self,
        (i, n): (usize, usize),
        row: &SummaryRow,
        judged: &[Verdict],
        cut: Option<Partial>,
    ) {
        if !self.lines {
            return;
        }
        let mut e = std::io::stderr();
        let _ = writeln!(
            e,
            "{}",
            point_line(&self.trial_prefix(), (i, n), row, judged, cut)
        );
        if self.annotate {
            for v in judged.iter().filter(|v| !v.passed) {
                let _ = writeln!(e, "::error title=synlab threshold::{}", escape(&v.message));
            }
            if row.failed {
                let _ = writeln!(
                    e,
                    "::error title=synlab point failed::{}",
                    escape(&row.error)
                );
            }
        }
    }
}

/// A point an interruption cut short: which, and the hold it planned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Partial {
    pub point: usize,
    pub planned_hold_s: f64,
}

impl Partial {
    /// What `row`'s figures are when it is this point's and did not fail (a failed point's
    /// error says what happened): the end table's line under it and the markdown row.
    pub fn said_for(&self, row: &SummaryRow) -> Option<String> {
        (row.point == self.point && !row.failed).then(|| self.say(row))
    }

    /// What its figures are, after `row.hold_s` of its hold: over that part, or none at all.
    fn say(&self, row: &SummaryRow) -> String {
        let (planned, held_s) = (self.planned_hold_s, row.hold_s);
        if !row.measured() {
            format!("interrupted before its {planned:.1} s hold measured anything")
        } else {
            format!(
                "interrupted after {held_s:.1} s of its {planned:.1} s hold: its figures are over that part"
            )
        }
    }
}

/// The line a point that ended says in CI.
pub fn point_line(
    prefix: &str,
    (i, n): (usize, usize),
    row: &SummaryRow,
    judged: &[Verdict],
    cut: Option<Partial>,
) -> String {
    let num = crate::report::markdown::num;
    let value = row
        .sweep
        .as_ref()
        .map(|s| format!(" ({} {})", s.param.name(), s.value))
        .unwrap_or_default();
    let failed = judged.iter().filter(|v| !v.passed).count();
    let checks = if judged.is_empty() {
        String::new()
    } else {
        format!(
            ", {} of {} checks passed",
            judged.len() - failed,
            judged.len()
        )
    };
    let state = if row.failed {
        format!(": FAILED: {}", row.error)
    } else if let Some(c) = cut.filter(|_| !row.measured()) {
        format!(": {}", c.say(row))
    } else {
        format!(
            ": {} responses/s, p50 {} ms, p99 {} ms, {} errors/s{checks}",
            num(row.throughput_per_s),
            num(row.total_p50_ms),
            num(row.total_p99_ms),
            num(row.errors_per_s)
        )
    };
    let partial = cut
        .filter(|_| !row.failed && row.measured())
        .map(|c| format!(" ({})", c.say(row)))
        .unwrap_or_default();
    format!("{prefix}point {} of {n}{value}{state}{partial}", i + 1)
}

/// A GitHub workflow command's message: its own line breaks and `%` escaped.
fn escape(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// The one line a run ends with, its exit code's reason.
#[derive(Debug, Clone, PartialEq)]
pub enum RunVerdict {
    Passed { points: usize, checks: usize },
    Failed { code: u8, why: String },
}

impl std::fmt::Display for RunVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunVerdict::Passed { points, checks } => write!(
                f,
                "verdict: PASS: {points} point(s) measured, {checks} check(s) passed (exit 0)"
            ),
            RunVerdict::Failed { code, why } => write!(f, "verdict: FAIL: {why} (exit {code})"),
        }
    }
}

impl RunVerdict {
    /// Says it last: on stdout, and as an annotation under GitHub Actions when it failed,
    /// with what its figures carry besides the server's (the machine's other work:
    /// `report::disturbed::verdict_caveat`) before the exit code, which stays the verdict's.
    pub fn say_with(&self, caveat: Option<&str>) {
        println!("{}", self.line(caveat));
        if let (RunVerdict::Failed { why, .. }, true) = (self, github_actions()) {
            println!("::error title=synlab verdict::{}", escape(why));
        }
    }

    /// The verdict line, with `caveat` said before the exit code.
    pub fn line(&self, caveat: Option<&str>) -> String {
        let said = self.to_string();
        match (caveat, said.rfind(" (exit ")) {
            (Some(c), Some(at)) => format!("{}; {c}{}", &said[..at], &said[at..]),
            _ => said,
        }
    }
}

/// The markdown summary of a run for `--summary-md` and `$GITHUB_STEP_SUMMARY`: the verdict
/// (with its caveat: [`RunVerdict::line`]), the points' figures (an interrupted point's
/// state says how much of its hold they cover), the failed checks.
pub fn summary_markdown_with(
    name: &str,
    (verdict, caveat): (&RunVerdict, Option<&str>),
    (rows, cut): (&[SummaryRow], Option<Partial>),
    verdicts: &[Verdict],
    dir: Option<&Path>,
) -> String {
    let num = crate::report::markdown::num;
    let mark = match verdict {
        RunVerdict::Passed { .. } => "✅",
        RunVerdict::Failed { .. } => "❌",
    };
    let mut s = format!(
        "### synlab run {name}\n\n{mark} {}\n\n",
        verdict.line(caveat)
    );
    s.push_str(
        "| point | responses/s | p50 ms | p99 ms | errors/s | state |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let value = r
            .sweep
            .as_ref()
            .map(|s| format!(" {}", s.value))
            .unwrap_or_default();
        let state = if r.failed {
            format!("FAILED: {}", r.error)
        } else if let Some(said) = cut.and_then(|c| c.said_for(r)) {
            said
        } else if r.client_bound {
            "CLIENT-BOUND".into()
        } else {
            "ok".into()
        };
        s.push_str(&format!(
            "| {}{value} | {} | {} | {} | {} | {} |\n",
            r.point,
            num(r.throughput_per_s),
            num(r.total_p50_ms),
            num(r.total_p99_ms),
            num(r.errors_per_s),
            state.replace('|', "\\|")
        ));
    }
    let failed: Vec<&Verdict> = verdicts.iter().filter(|v| !v.passed).collect();
    if !failed.is_empty() {
        s.push_str("\nFailed checks:\n\n");
        for v in failed {
            s.push_str(&format!("- {}\n", v.message));
        }
    }
    if let Some(d) = dir {
        s.push_str(&format!("\nRun folder: `{}`\n", d.display()));
    }
    s.push('\n');
    s
}

/// Where the markdown summary goes: `--summary-md FILE`, and `$GITHUB_STEP_SUMMARY` when set.
pub fn summary_targets(file: Option<&Path>) -> Vec<PathBuf> {
    let step = std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    file.map(Path::to_path_buf)
        .into_iter()
        .chain(step)
        .collect()
}

/// Appends `md` to each file; what could not be written (path and why).
pub fn write_summary_md(files: &[PathBuf], md: &str) -> Vec<String> {
    let mut unwritten = Vec::new();
    for path in files {
        let r = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(md.as_bytes()));
        if let Err(e) = r {
            unwritten.push(format!("the markdown summary {}: {e}", path.display()));
        }
    }
    unwritten
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_line_says_its_figures_and_checks() {
        let row = SummaryRow {
            point: 2,
            throughput_per_s: 2507.0,
            total_p50_ms: 41.2,
            total_p99_ms: 84.0,
            errors_per_s: 0.0,
            ..Default::default()
        };
        let l = point_line("trial 2 of 5: ", (1, 3), &row, &[], None);
        assert_eq!(
            l,
            "trial 2 of 5: point 2 of 3: 2507 responses/s, p50 41.2 ms, p99 84.0 ms, 0 errors/s"
        );
        // Cut short by an interruption: its figures are said as partial, or as none at all
        // (the zeros of a hold that never began are not measured figures).
        let cut = Some(Partial {
            point: 2,
            planned_hold_s: 4.0,
        });
        let held = SummaryRow {
            hold_s: 1.2,
            ..row.clone()
        };
        assert_eq!(
            point_line("", (1, 3), &held, &[], cut),
            "point 2 of 3: 2507 responses/s, p50 41.2 ms, p99 84.0 ms, 0 errors/s (interrupted \
             after 1.2 s of its 4.0 s hold: its figures are over that part)"
        );
        let none = SummaryRow {
            hold_s: 0.0,
            ..Default::default()
        };
        assert_eq!(
            point_line("", (1, 3), &none, &[], cut),
            "point 2 of 3: interrupted before its 4.0 s hold measured anything"
        );
        let failed = SummaryRow {
            failed: true,
            error: "the server died".into(),
            ..row
        };
        assert_eq!(
            point_line("", (0, 1), &failed, &[], None),
            "point 1 of 1: FAILED: the server died"
        );
    }

    #[test]
    fn the_verdict_and_the_markdown_summary() {
        let v = RunVerdict::Failed {
            code: 3,
            why: "1 of 4 checks failed".into(),
        };
        assert_eq!(
            v.to_string(),
            "verdict: FAIL: 1 of 4 checks failed (exit 3)"
        );
        let md =
            summary_markdown_with("s", (&v, None), (&[SummaryRow::default()], None), &[], None);
        assert!(md.contains("❌ verdict: FAIL"), "{md}");
        assert!(md.contains("| 0 | 0 | 0 | 0 | 0 | ok |"), "{md}");
        // An interrupted point's row says how much of its hold its figures cover ("ok" read
        // as a whole hold).
        let cut = |point, hold_s| {
            let row = SummaryRow {
                point,
                hold_s,
                ..SummaryRow::default()
            };
            let p = Partial {
                point: 2,
                planned_hold_s: 4.0,
            };
            summary_markdown_with("s", (&v, None), (&[row], Some(p)), &[], None)
        };
        assert!(
            cut(2, 1.2).contains(
                "| interrupted after 1.2 s of its 4.0 s hold: its figures are over that part |"
            ),
            "{}",
            cut(2, 1.2)
        );
        assert!(cut(2, 0.0).contains("| interrupted before its 4.0 s hold measured anything |"));
        assert!(
            cut(1, 4.0).contains("| ok |"),
            "another point's row is its own"
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.md");
        assert!(write_summary_md(std::slice::from_ref(&f), "a\n").is_empty());
        assert!(write_summary_md(std::slice::from_ref(&f), "b\n").is_empty());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a\nb\n");
        assert_eq!(escape("50%\nx"), "50%25%0Ax");
    }

    /// A repeated run of 3 trials of 1 point on a busy machine ended `verdict: PASS: 3
    /// point(s) measured, 0 check(s) passed (exit 0)`, saying nothing of the neighbours.
    #[test]
    fn the_verdict_says_the_trials_the_machine_disturbed() {
        use crate::report::disturbed::{verdict_caveat, Disturbed};
        let busy = |pct: f64| Disturbed {
            point: "1".into(),
            whose: "load's",
            pct,
            beside: ("server's", Ok(51.0)),
        };
        let pass = RunVerdict::Passed {
            points: 3,
            checks: 0,
        };
        let c = verdict_caveat(&[busy(91.0), busy(93.0), busy(92.0)], 3);
        assert_eq!(
            pass.line(c.as_deref()),
            "verdict: PASS: 3 point(s) measured, 0 check(s) passed; but the machine was busy in 3 \
             of the 3 trials (other work up to 93 % of the load's CPUs): a disturbed trial's \
             figures carry the neighbours' work as well as the server's, and compare and ab leave \
             such trials out (exit 0)"
        );
        assert_eq!(verdict_caveat(&[], 3), None);
        assert_eq!(pass.line(None), pass.to_string());
        let one = verdict_caveat(&[busy(16.0)], 1).unwrap();
        assert!(one.contains("16 % of the load's CPUs in point 1"), "{one}");
        let fail = RunVerdict::Failed {
            code: 3,
            why: "1 of 4 checks failed".into(),
        };
        assert!(fail.line(Some(&one)).ends_with("server's (exit 3)"));
        let md = summary_markdown_with("s", (&pass, c.as_deref()), (&[], None), &[], None);
        assert!(md.contains("in 3 of the 3 trials"), "{md}");
    }
}
