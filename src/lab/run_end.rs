//! How a headless run of `synlab run` ends: its table, the interrupted point's part, the
//! verdicts and the verdict line with its exit code (1 a file or a death or a failed point, 3
//! a failed check, 130 interrupted).

use super::controller::RunOptions;
use super::run::{run_gated_with, summary_table, Outcome};
use super::session;
use crate::model::SummaryRow;
use crate::report::thresholds::Verdict;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One run of `synlab run` (a single trial; `repeat::run_main` decides between this and
/// repeated trials).
pub(crate) fn single_main(
    sc: crate::scenario::Scenario,
    opts: RunOptions,
    show: &super::ci::Progress,
    extras: &super::ci::RunExtras,
) -> anyhow::Result<ExitCode> {
    let name = sc.name.clone();
    let target = sc.analysis.capacity;
    let interrupted = Arc::clone(&opts.interrupted);
    let Outcome {
        dir,
        rows,
        interrupted: cut,
        child_died,
        verdicts,
        aborted,
        last_files,
        partial,
    } = run_gated_with(sc, opts, show)?;
    print!("{}", summary_table(&rows));
    // The interrupted point's figures are over the part it held, or nothing: said under the
    // table, whose zeros would otherwise read as measured.
    if let Some(cut) = partial {
        if let Some(said) = rows.iter().find_map(|r| cut.said_for(r)) {
            println!("point {}: {said}", cut.point);
        }
    }
    for c in crate::model::capacity::capacities(&rows, &target) {
        println!("{}", c.line());
    }
    print!("{}", crate::report::thresholds::verdict_lines(&verdicts));
    // Other work on the lab's CPUs is said next to the verdicts it may have moved (a
    // repeated run's trials say it as they end, and compare and ab leave them out).
    let busy = dir
        .as_deref()
        .and_then(|d| crate::report::read::read_run(d).ok())
        .and_then(|run| crate::report::disturbed::of(&run));
    if let Some(d) = &busy {
        println!("note: {d}: {}", crate::report::disturbed::MEANING);
    }
    // The verdict line carries it too: a CI log's last line is often all that is read.
    let caveat = crate::report::disturbed::verdict_caveat(busy.as_slice(), 1);
    // Every file that could not be written (each says its path and why) fails the run.
    let mut unwritten: Vec<String> = last_files.into_iter().collect();
    let signalled = cut || interrupted.load(Ordering::Relaxed);
    if let Some(path) = &extras.junit {
        let cut_short = cut_short_reason(signalled, child_died.as_ref());
        match crate::report::junit::write(path, &name, &verdicts, cut_short.as_deref()) {
            Ok(()) => println!("junit: {}", path.display()),
            Err(e) => unwritten.push(format!("{e:#}")),
        }
    }
    if let Err(e) = session::report_and_folder(dir.as_deref()) {
        unwritten.push(format!("{e:#}"));
    }
    let verdict = run_verdict(
        &unwritten,
        signalled,
        child_died.as_ref(),
        &rows,
        &verdicts,
        aborted,
    );
    let md = super::ci::summary_markdown_with(
        &name,
        (&verdict, caveat.as_deref()),
        (&rows, partial),
        &verdicts,
        dir.as_deref(),
    );
    let targets = super::ci::summary_targets(extras.summary_md.as_deref());
    for e in super::ci::write_summary_md(&targets, &md) {
        eprintln!("synlab: not written: {e}");
    }
    verdict.say_with(caveat.as_deref());
    Ok(match verdict {
        super::ci::RunVerdict::Passed { .. } => ExitCode::SUCCESS,
        super::ci::RunVerdict::Failed { code, .. } => ExitCode::from(code),
    })
}

/// Why a run's JUnit file gets an errored "run finished whole" case, if it does.
pub(crate) fn cut_short_reason(
    signalled: bool,
    died: Option<&crate::model::death::Death>,
) -> Option<String> {
    match (signalled, died) {
        (true, _) => Some("it was interrupted".to_string()),
        (false, Some(d)) => Some(format!("a process of the lab died: {d}")),
        (false, None) => None,
    }
}

/// How a run ends, said on stderr as it always was: a file not written (1, unless a signal cut
/// the run short: 130), a death (1), failed points (1), failed checks (3), else passed.
pub(crate) fn run_verdict(
    unwritten: &[String],
    signalled: bool,
    died: Option<&crate::model::death::Death>,
    rows: &[SummaryRow],
    verdicts: &[Verdict],
    aborted: bool,
) -> super::ci::RunVerdict {
    use super::ci::RunVerdict::{Failed, Passed};
    if signalled {
        for e in unwritten.iter() {
            eprintln!("synlab: not written: {e}");
        }
    } else if !unwritten.is_empty() {
        let why = format!("the run folder is incomplete: {}", unwritten.join("; "));
        eprintln!("synlab: {why} (exit 1)");
        return Failed { code: 1, why };
    }
    if session::cut_short(signalled, died).is_some() {
        return match died {
            Some(d) if !signalled => Failed {
                code: 1,
                why: d.to_string(),
            },
            _ => Failed {
                code: 130,
                why: "interrupted".into(),
            },
        };
    }
    let failed = rows.iter().filter(|r| r.failed).count();
    if failed > 0 {
        eprintln!(
            "synlab: {failed} of {} points failed; see the table and run.log in the run folder",
            rows.len()
        );
        return Failed {
            code: 1,
            why: format!("{failed} of {} points failed", rows.len()),
        };
    }
    if crate::report::thresholds::exit_code(verdicts, aborted).is_some() {
        let n = verdicts.iter().filter(|v| !v.passed).count();
        let first = verdicts
            .iter()
            .find(|v| !v.passed)
            .map(|v| v.message.clone());
        return Failed {
            code: 3,
            why: format!(
                "{n} of {} checks failed; first: {}",
                verdicts.len(),
                first.unwrap_or_default()
            ),
        };
    }
    Passed {
        points: rows.len(),
        checks: verdicts.len(),
    }
}
