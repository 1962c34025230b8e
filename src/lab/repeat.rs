//! `synlab run --repeat N` (or `[output] repeat = N`): the scenario run N times, each trial a
//! whole run (the lab, the server and the workers started afresh, so no trial inherits
//! another's caches, connections or queue) in its own `trial-K` sub-folder of the run folder,
//! and the aggregate (`report::trials`) written beside them.

use super::ci::{Progress, RunExtras, RunVerdict};
use super::controller::RunOptions;
use super::run::run_gated_with;
use super::run_end::run_verdict;
use super::session::Start;
use crate::model::SummaryRow;
use crate::report::trials;
use crate::scenario::Scenario;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Creates `<parent>/<name>-<timestamp>-x<N>/`, the next free suffix when it exists.
fn create_folder(parent: &Path, name: &str, n: usize) -> anyhow::Result<PathBuf> {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    std::fs::create_dir_all(parent)
        .with_context(|| format!("creating the results folder {}", parent.display()))?;
    for k in 1..10_000 {
        let dir = if k == 1 {
            parent.join(format!("{name}-{stamp}-x{n}"))
        } else {
            parent.join(format!("{name}-{stamp}-x{n}-{k}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("creating the run folder {}", dir.display()))
            }
        }
    }
    anyhow::bail!("no free run folder name under {}", parent.display())
}

/// What the repeated run ended with.
pub struct Repeated {
    /// The repeated run's folder (the aggregate) and its trials' folders.
    pub dir: PathBuf,
    pub trials: Vec<PathBuf>,
    /// Every trial's point rows and verdicts, in trial order.
    pub rows: Vec<SummaryRow>,
    pub verdicts: Vec<crate::report::thresholds::Verdict>,
    pub interrupted: bool,
    pub child_died: Option<crate::model::death::Death>,
    pub aborted: bool,
    /// Files that could not be written (path and why).
    pub unwritten: Vec<String>,
    /// The trials the machine disturbed, each with its worst point.
    pub disturbed: Vec<crate::report::disturbed::Disturbed>,
}

/// Runs `n` trials of `sc` into one run folder and aggregates them; stops after a trial that
/// was interrupted, lost a child or aborted (the aggregate covers the trials done).
pub fn run_trials(
    sc: &Scenario,
    opts: &RunOptions,
    n: usize,
    show: &Progress,
) -> anyhow::Result<Repeated> {
    let parent = opts
        .out_parent
        .clone()
        .unwrap_or_else(|| PathBuf::from("results"));
    let dir = create_folder(&parent, &sc.name, n)?;
    let mut r = Repeated {
        dir: dir.clone(),
        trials: Vec::new(),
        rows: Vec::new(),
        verdicts: Vec::new(),
        interrupted: false,
        child_died: None,
        aborted: false,
        unwritten: Vec::new(),
        disturbed: Vec::new(),
    };
    for k in 1..=n {
        let o = RunOptions {
            out_parent: Some(dir.clone()),
            interrupted: opts.interrupted.clone(),
            network_fallback: opts.network_fallback,
            metrics: opts.metrics.clone(),
        };
        let p = Progress {
            trial: Some((k, n)),
            ..show.clone()
        };
        if show.lines {
            eprintln!("synlab: trial {k} of {n} starts");
        }
        let out = run_gated_with(sc.clone(), o, &p)?;
        r.unwritten.extend(out.last_files.clone());
        if let Some(made) = &out.dir {
            let to = dir.join(format!("{}{k}", trials::TRIAL_PREFIX));
            std::fs::rename(made, &to)
                .with_context(|| format!("renaming {} to {}", made.display(), to.display()))?;
            if let Err(e) = crate::report::write_report(&to) {
                r.unwritten.push(format!("{e:#}"));
            }
            let failed = out.verdicts.iter().filter(|v| !v.passed).count();
            println!(
                "trial {k} of {n}: {} point(s), {failed} failed check(s): {}",
                out.rows.len(),
                to.display()
            );
            // Said as the trial ends, so a CI log shows when the machine got in the way.
            if let Some(d) = crate::report::read::read_run(&to)
                .ok()
                .and_then(|run| crate::report::disturbed::of(&run))
            {
                println!("trial {k} of {n}: {d}: compare and ab leave this trial out");
                r.disturbed.push(d);
            }
            r.trials.push(to);
        }
        r.rows.extend(out.rows);
        r.verdicts.extend(out.verdicts);
        r.aborted |= out.aborted;
        r.interrupted |= out.interrupted || opts.interrupted.load(Ordering::Relaxed);
        r.child_died = out.child_died;
        if r.interrupted || r.child_died.is_some() || r.aborted {
            break;
        }
    }
    if let Some(first) = r.trials.first() {
        // The resolved scenario beside the aggregate: `synlab compare` plans its points from it.
        let _ = std::fs::copy(first.join("scenario.toml"), dir.join("scenario.toml"));
        let agg = trials::aggregate(&r.trials)?;
        match crate::report::trials_page::write(&dir, &agg) {
            Ok(md) => println!("report: {}", md.display()),
            Err(e) => r.unwritten.push(format!("{e:#}")),
        }
        print!("{}", table(&agg));
    }
    println!("results: {}", dir.display());
    Ok(r)
}

/// The run's table: per point, the median [interval] of throughput and the merged p50 / p99.
fn table(agg: &trials::Aggregate) -> String {
    // The level order statistics reach with these trials (95 % needs 6).
    let level = agg.level_pct();
    let mut s = format!(
        "{} trials: median [{level:.1} % interval] (latency percentiles of the merged histograms)\n",
        agg.trials.len()
    );
    for (i, figs) in agg.points.iter().enumerate() {
        let f = |name: &str| {
            figs.iter()
                .find(|f| f.name == name)
                .map(crate::report::trials_page::cell)
                .unwrap_or_else(|| "-".into())
        };
        s.push_str(&format!(
            "point {}: responses/s {}, p50 ms {}, p99 ms {}, errors/s {}\n",
            i + 1,
            f("throughput_per_s"),
            f("total_p50_ms"),
            f("total_p99_ms"),
            f("errors_per_s"),
        ));
    }
    s
}

/// `synlab run SCENARIO [--out DIR] [--quick] [--repeat N]`.
pub fn run_main(
    scenario: &Path,
    out: Option<&Path>,
    quick: bool,
    progress: bool,
    extras: &super::ci::RunExtras,
) -> anyhow::Result<ExitCode> {
    let start = Start {
        scenario: Some(scenario),
        out,
        metrics: extras.metrics.as_deref(),
        userns: extras.userns,
        quick,
    };
    let (sc, opts) = start.open()?;
    let show = super::ci::Progress::for_stderr(progress);
    let repeat = extras
        .repeat
        .map(|n| n as usize)
        .unwrap_or(sc.output.repeat.unwrap_or(1));
    if repeat > 1 {
        return repeat_main(sc, opts, repeat, &show, extras);
    }
    super::run_end::single_main(sc, opts, &show, extras)
}

/// `synlab run --repeat N`: exit as a single run does, over all the trials (a failed point or
/// check in any trial fails it).
pub fn repeat_main(
    sc: Scenario,
    opts: RunOptions,
    n: usize,
    show: &Progress,
    extras: &RunExtras,
) -> anyhow::Result<ExitCode> {
    let name = sc.name.clone();
    let mut r = run_trials(&sc, &opts, n, show)?;
    print!("{}", crate::report::thresholds::verdict_lines(&r.verdicts));
    if let Some(path) = &extras.junit {
        match crate::report::junit::write(
            path,
            &name,
            &r.verdicts,
            super::run_end::cut_short_reason(r.interrupted, r.child_died.as_ref()).as_deref(),
        ) {
            Ok(()) => println!("junit: {}", path.display()),
            Err(e) => r.unwritten.push(format!("{e:#}")),
        }
    }
    let verdict = run_verdict(
        &r.unwritten,
        r.interrupted,
        r.child_died.as_ref(),
        &r.rows,
        &r.verdicts,
        r.aborted,
    );
    // The exit code is the verdict's; its line says what the neighbours' work may have moved.
    let caveat = crate::report::disturbed::verdict_caveat(&r.disturbed, r.trials.len());
    let aggregate_rows = aggregate_rows(&r.dir);
    let md = super::ci::summary_markdown_with(
        &format!("{name} ({} trials, medians)", r.trials.len()),
        (&verdict, caveat.as_deref()),
        (&aggregate_rows, None),
        &r.verdicts,
        Some(&r.dir),
    );
    for e in super::ci::write_summary_md(
        &super::ci::summary_targets(extras.summary_md.as_deref()),
        &md,
    ) {
        eprintln!("synlab: not written: {e}");
    }
    verdict.say_with(caveat.as_deref());
    Ok(match verdict {
        RunVerdict::Passed { .. } => ExitCode::SUCCESS,
        RunVerdict::Failed { code, .. } => ExitCode::from(code),
    })
}

/// The aggregate's rows as summary rows for the markdown summary (the figures it shows; a
/// median of counts need not be a whole number, so the rows are not deserialized whole).
fn aggregate_rows(dir: &Path) -> Vec<SummaryRow> {
    let Ok(src) = std::fs::read_to_string(dir.join("summary.json")) else {
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_str(&src).unwrap_or_default();
    let num = |p: &serde_json::Value, k: &str| p[k].as_f64().unwrap_or(f64::NAN);
    v["points"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| SummaryRow {
            point: p["point"].as_u64().unwrap_or(0) as usize,
            throughput_per_s: num(p, "throughput_per_s"),
            total_p50_ms: num(p, "total_p50_ms"),
            total_p99_ms: num(p, "total_p99_ms"),
            errors_per_s: num(p, "errors_per_s"),
            failed: p["failed"].as_bool().unwrap_or(false),
            client_bound: p["client_bound"].as_bool().unwrap_or(false),
            error: p["error"].as_str().unwrap_or("").to_string(),
            ..Default::default()
        })
        .collect()
}
