//! `synlab run`: a headless run of a scenario — its steps, or its sweep point by point with
//! warm-up, hold and cool-down — with a progress bar, a run folder and a summary table.

use super::controller::{Controller, RunOptions};
use super::knobs::{Command, Reply};
use crate::model::col;
use crate::model::SummaryRow;
use crate::model::{SweepParam, SweepPoint, SweepValue};
use crate::report::thresholds::Verdict;
use crate::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What a headless run keeps of its time series in memory: every row is in timeseries.csv,
/// point figures are running sums, and the rolling cross-check looks back 10 s.
const HEADLESS_KEEP_S: f64 = 60.0;

pub use super::summary::{non2xx_note, summary_table};
pub use super::sweep::{commands_for, point_label, sweep_cues};
pub use crate::scenario::points::{plan_points, Point};

/// Pumps the controller for `secs`; false if interrupted or finished early. A child's death
/// ends it at once (true: the caller fails the point and stops the run).
fn run_for(ctrl: &mut Controller, secs: f64, tick: &dyn Fn(&Controller)) -> anyhow::Result<bool> {
    let end = Instant::now() + Duration::from_secs_f64(secs.max(0.0));
    while Instant::now() < end {
        ctrl.pump()?;
        tick(ctrl);
        if ctrl.child_died().is_some() {
            return Ok(true);
        }
        if ctrl.state().finished {
            return Ok(false);
        }
        // Woken by a message or what the core has due; what nothing announces (a child's
        // death, a signal) is looked at within POLL_AT_MOST.
        ctrl.wait_for_input(end.min(Instant::now() + POLL_AT_MOST));
    }
    Ok(true)
}

/// How long a headless run waits at most between looks at its children and its signal flag.
const POLL_AT_MOST: Duration = Duration::from_millis(100);

/// Runs a scenario to completion headless. Returns the run folder and whether it was cut short.
pub fn run_scenario(
    sc: Scenario,
    opts: RunOptions,
    progress: bool,
) -> anyhow::Result<(Option<PathBuf>, Vec<SummaryRow>, bool)> {
    let o = run_gated(sc, opts, progress)?;
    if let Some(e) = o.last_files {
        anyhow::bail!(e);
    }
    Ok((o.dir, o.rows, o.interrupted))
}

/// What a headless run ends with.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub dir: Option<PathBuf>,
    pub rows: Vec<SummaryRow>,
    /// Cut short by a signal.
    pub interrupted: bool,
    /// A child the run depended on died (who and how); the run stopped there.
    pub child_died: Option<crate::model::death::Death>,
    /// The verdicts of the scenario's thresholds and gate, in the order judged.
    pub verdicts: Vec<Verdict>,
    /// A failing threshold with `abort_on_fail` stopped the run.
    pub aborted: bool,
    /// The run folder's last files (events.csv, the run's totals) could not be written: why.
    pub last_files: Option<String>,
    /// The point an interruption cut short, and the hold it planned.
    pub partial: Option<super::ci::Partial>,
}

/// `run_scenario`, with everything the run ended with.
pub fn run_scenario_outcome(
    sc: Scenario,
    opts: RunOptions,
    progress: bool,
) -> anyhow::Result<Outcome> {
    run_gated(sc, opts, progress)
}

/// Runs a scenario headless, judging its thresholds point by point.
pub fn run_gated(sc: Scenario, opts: RunOptions, progress: bool) -> anyhow::Result<Outcome> {
    let p = super::ci::Progress {
        bar: progress,
        ..Default::default()
    };
    run_gated_with(sc, opts, &p)
}

/// `run_gated`, its progress shown as `progress` says (a bar, or CI lines; which trial).
pub fn run_gated_with(
    mut sc: Scenario,
    opts: RunOptions,
    progress: &super::ci::Progress,
) -> anyhow::Result<Outcome> {
    let mut verdicts = Vec::new();
    let mut aborted = false;
    let points = plan_points(&sc);
    // The workers start in the first point's mode, so nothing of another mode (a pool's
    // connections, say) runs before the first point switches to it.
    if let Some(mode) = points.first().and_then(|p| p.mode) {
        sc.load.mode = mode;
    }
    let total: f64 = points.iter().map(|p| p.warmup + p.hold + p.cooldown).sum();
    let kind = sc.sweep.as_ref().and_then(|s| s.kind());
    let curve_kind = sc.sweep.as_ref().and_then(|s| s.curve_kind());
    let target = sc.analysis.capacity;
    let mut ctrl = Controller::start(sc, opts)?;
    ctrl.keep_series(HEADLESS_KEEP_S);
    let gate = ctrl.gate().clone();
    let pb = progress.bar.then(|| progress_bar(total));
    let began = Instant::now();
    let said = std::cell::Cell::new(0usize);
    let tick = |c: &Controller| {
        if let Some(pb) = &pb {
            pb.set_position(began.elapsed().as_secs());
            let r = c.state().store.last(col::RESPONSES).unwrap_or(0.0);
            let a = c.state().store.last(col::ATTEMPTS).unwrap_or(0.0);
            pb.set_message(format!(
                "{}attempts {a:.0}/s, responses {r:.0}/s",
                progress.trial_prefix()
            ));
        }
        // CI: each notice as it is raised, not at the end.
        let notices = c.core().notices();
        for n in notices.iter().skip(said.get()) {
            progress.notice(n);
        }
        said.set(notices.len());
    };
    let mut interrupted = false;
    let mut partial = None;
    // An asked resumed share a point did not make: a notice the first time, run.log after.
    let mut resumed_said = false;
    // The load is paused between points (a cool-down, a settle): the next point resumes it
    // once it is set up, so nothing of the previous point's settings starts in between.
    let mut paused = false;
    for (i, p) in points.iter().enumerate() {
        // Another mode (closed clients after S-Client slots, or back): what the last point
        // left in flight finishes before this one starts, not inside its window.
        let mode_changes = i > 0 && p.mode.is_some() && p.mode != points[i - 1].mode;
        if mode_changes {
            let (waited, left) = ctrl.settle()?;
            paused = true;
            ctrl.log(&format!(
                "before point {}: waited {waited:.1} s for the previous point's connects and requests to finish ({left} still in progress)",
                i + 1
            ));
        }
        let at = (i, points.len());
        let m = measure_point(&mut ctrl, at, p, (kind, curve_kind), paused, &tick)?;
        paused = false;
        let asked = ctrl.core().state().knobs.resumed;
        let short = super::summary::resumed_short_note(asked, &m.row);
        match short.filter(|_| !m.interrupted) {
            Some(note) if !resumed_said => {
                ctrl.notice(&note);
                resumed_said = true;
            }
            Some(note) => ctrl.log(&note),
            None => {}
        }
        // The notices the point's end raised, said before its line.
        tick(&ctrl);
        interrupted = m.interrupted;
        let cut = m.interrupted.then_some(super::ci::Partial {
            point: i + 1,
            planned_hold_s: p.hold,
        });
        partial = partial.or(cut);
        // A point cut before its hold measured anything is not judged: its zeros are none.
        let judged = match cut {
            Some(_) if !m.row.failed && !m.row.measured() => Vec::new(),
            _ => gate.judge_point(&m.row),
        };
        aborted = gate.aborts(&judged);
        for v in judged.iter().filter(|v| !v.passed) {
            ctrl.log(&format!("FAIL {}", v.message));
        }
        progress.point_ended(at, &m.row, &judged, cut);
        verdicts.extend(judged);
        ctrl.recorder.summary_point(m.row);
        let capacity = crate::model::capacity::capacities(ctrl.recorder.points(), &target);
        ctrl.recorder.capacity(capacity);
        ctrl.recorder.write_summary(&verdicts)?;
        if interrupted || aborted || m.died {
            if aborted {
                ctrl.log("a threshold with abort_on_fail failed: run stopped");
            }
            break;
        }
        if p.cooldown > 0.0 {
            ctrl.apply(Command::Pause(true));
            paused = true;
            if !run_for(&mut ctrl, p.cooldown, &tick)? {
                interrupted = true;
                break;
            }
        }
    }
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    if interrupted || ctrl.opts.interrupted.load(Ordering::Relaxed) {
        interrupted = true;
        ctrl.note_interrupted();
    }
    if ctrl.recorder.dir().is_some() {
        verdicts.extend(gate.judge_run(ctrl.recorder.points()));
        verdicts.extend(gate.judge_capacity(ctrl.recorder.capacity_found()));
        ctrl.recorder.write_summary(&verdicts)?;
    }
    if interrupted && ctrl.worker_count() > 0 {
        // The drain can take seconds (requests waiting out a lossy path): said, not silent.
        eprintln!(
            "synlab: interrupted: finishing the requests in flight (at most {:.0} s), then stopping everything",
            ctrl.drain_bound_s().ceil()
        );
    }
    // Everything is stopped whatever the outcome; a file it could not write fails the run
    // after its table, verdicts and report are out.
    let last_files = ctrl.shutdown().err().map(|e| format!("{e:#}"));
    let dir = ctrl.folder_dir().map(Path::to_path_buf);
    let rows = ctrl.recorder.points().to_vec();
    Ok(Outcome {
        dir,
        rows,
        interrupted,
        child_died: ctrl.child_died(),
        verdicts,
        aborted,
        last_files,
        partial,
    })
}

/// Why a point failed: its summary row's `error` and the run table's FAILED note.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PointFailure {
    /// A knob change the point needs was refused (its mode, its sweep value).
    #[error("{0}")]
    Refused(super::knobs::Refusal),
    /// The workers could not be restarted with the point's count or request mix.
    #[error("{0}")]
    Restart(String),
    /// The server or its kernel could not be put in the point's setting (steering, SYN
    /// cookies, backlog): why.
    #[error("{0}")]
    Server(String),
    /// A child the run depends on died in it (who and how).
    #[error("{0}")]
    ChildDied(crate::model::death::Death),
    #[error(transparent)]
    Nothing(#[from] super::client_agg::NothingMeasured),
    /// The point's connections or requests do not add up (a worker lost count of one).
    #[error("the point's counts do not add up, so its figures cannot be trusted: {0}")]
    Miscounted(String),
    /// Every attempt failed: it measured something broken, not the server.
    #[error(transparent)]
    AllFailed(super::client_agg::AllFailed),
}

/// One point measured: its summary row, and whether the run stops after it.
struct Measured {
    row: SummaryRow,
    interrupted: bool,
    died: bool,
}

/// Point `i` of `n`: set up, warm up, hold (its measurement window), its latencies to the
/// recorder and its summary row; a point fails when it could not be set up, a child died, it
/// measured nothing or every attempt in it failed.
fn measure_point(
    ctrl: &mut Controller,
    (i, n): (usize, usize),
    p: &Point,
    (kind, curve_kind): (Option<SweepParam>, Option<SweepParam>),
    paused: bool,
    tick: &dyn Fn(&Controller),
) -> anyhow::Result<Measured> {
    let label = point_label(i, n, p, kind, curve_kind);
    ctrl.log(&label);
    ctrl.mark(&label);
    let mut interrupted = false;
    let mut failed = set_up_point(ctrl, p, kind, curve_kind);
    if paused {
        ctrl.apply(Command::Pause(false));
    }
    if failed.is_none() && !run_for(ctrl, p.warmup, tick)? {
        interrupted = true;
    }
    ctrl.begin_point();
    if failed.is_none() && !interrupted && !run_for(ctrl, p.hold, tick)? {
        interrupted = true;
    }
    let window = ctrl.end_point().expect("a point was begun");
    let died = ctrl.child_died();
    if let Some(d) = &died {
        failed.get_or_insert(PointFailure::ChildDied(d.clone()));
    }
    if failed.is_none() && !interrupted {
        failed = window
            .client
            .measured_nothing(window.t1 - window.t0, ctrl.worker_count())
            .map(PointFailure::from)
            .or_else(|| {
                let broken = window.client.totals().identities_broken();
                broken.map(PointFailure::Miscounted)
            })
            .or_else(|| {
                let tls = ctrl.core().tls_failure();
                window.client.all_failed(tls).map(PointFailure::AllFailed)
            });
    }
    ctrl.recorder.latencies(
        i + 1,
        (window.t0, window.t1 - window.t0),
        &window.client,
        &window.classes,
    );
    let mut row = ctrl.core().summary_row(i + 1, window);
    ctrl.keep_point_access(i + 1);
    row.sweep = kind
        .zip(p.value)
        .map(|(param, value)| SweepPoint { param, value });
    row.curve = curve_kind
        .zip(p.curve)
        .map(|(param, value)| SweepPoint { param, value });
    if let Some(e) = failed {
        row.failed = true;
        row.error = e.to_string();
        ctrl.log(&format!("{label}: FAILED: {e}"));
    }
    Ok(Measured {
        row,
        interrupted,
        died: died.is_some(),
    })
}

/// The progress bar of a run `total_s` seconds long.
fn progress_bar(total_s: f64) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new(total_s.ceil() as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len}s {msg}",
        )
        .expect("valid template"),
    );
    pb
}

/// Puts the lab in the point's settings (mode, curve, sweep value); why it could not, if so.
fn set_up_point(
    ctrl: &mut Controller,
    p: &Point,
    kind: Option<SweepParam>,
    curve_kind: Option<SweepParam>,
) -> Option<PointFailure> {
    let mut failed = None;
    if let Some(m) = p.mode {
        if let Some(f) = refused(ctrl.apply(Command::SetMode(m))) {
            failed = Some(f);
        }
    }
    if let Some(Err(e)) = p.steer.map(|s| ctrl.set_steer(s)) {
        failed = Some(PointFailure::Server(format!("{e:#}")));
    }
    for (param, v) in [curve_kind.zip(p.curve), kind.zip(p.value)]
        .into_iter()
        .flatten()
    {
        if let Some(why) = set_value(ctrl, param, v) {
            failed = Some(why);
        }
    }
    failed
}

/// A knob already at the point's value is set, not refused.
fn refused(r: Reply) -> Option<PointFailure> {
    match r {
        Reply::Refused(super::knobs::Refusal::Unchanged(_)) | Reply::Applied(_) => None,
        Reply::Refused(why) => Some(PointFailure::Refused(why)),
    }
}

/// Sets one swept parameter to `v`: restarts the workers for a count or a mix, applies the
/// knob changes for the rest.
fn set_value(ctrl: &mut Controller, param: SweepParam, v: SweepValue) -> Option<PointFailure> {
    let mut failed = None;
    let restarted = match (param, v) {
        (SweepParam::Workers, SweepValue::Count(n)) => Some(ctrl.restart_workers(n)),
        // A new request mix: the workers take it when they start.
        (_, SweepValue::Workload(w)) => Some(ctrl.restart_workers_with(w)),
        (_, SweepValue::Http { keepalive }) => Some(ctrl.restart_workers_http(keepalive)),
        _ => None,
    };
    if let Some(Err(e)) = restarted {
        failed = Some(PointFailure::Restart(format!("{e:#}")));
    }
    let server = match (param, v) {
        (SweepParam::Steer, SweepValue::Steer(s)) => Some(ctrl.set_steer(s)),
        (SweepParam::Syncookies, SweepValue::Syncookies(n)) => Some(ctrl.set_syncookies(n)),
        (SweepParam::Backlog, SweepValue::Count(n)) => Some(ctrl.set_backlog(n)),
        _ => None,
    };
    if let Some(Err(e)) = server {
        failed = Some(PointFailure::Server(format!("{e:#}")));
    }
    for c in commands_for(param, v, ctrl.mode()) {
        if let Some(f) = refused(ctrl.apply(c)) {
            failed = Some(f);
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::protocol::Mode;
    use crate::model::Totals;

    #[test]
    fn sweeps_plan_one_point_per_mode_and_value() {
        let sc = crate::scenario::load(Path::new("scenarios/simple-vs-sclient.toml")).unwrap();
        let pts = plan_points(&sc);
        assert_eq!(pts.len(), 20);
        assert_eq!(pts[0].mode, Some(Mode::Closed));
        assert_eq!(pts[10].mode, Some(Mode::Sclient));
        assert_eq!(
            commands_for(SweepParam::Concurrency, pts[3].value.unwrap(), Mode::Closed),
            vec![Command::SetLoad(crate::model::LoadKnob::Clients, 8.0)]
        );
        assert_eq!(
            commands_for(
                SweepParam::Concurrency,
                pts[3].value.unwrap(),
                Mode::Sclient
            ),
            vec![Command::SetLoad(crate::model::LoadKnob::Sockets, 8.0)]
        );
    }

    #[test]
    fn the_run_table_says_what_the_latency_percentiles_cover() {
        let c = crate::model::Counters {
            attempts: 1000,
            responses: 900,
            connect_timeouts: 80,
            response_timeouts: 15,
            refused: 5,
            ..Default::default()
        };
        let row = SummaryRow {
            point: 1,
            total_p99_ms: 140.0,
            totals: Some(Totals::of_run(&c)),
            ..Default::default()
        };
        let table = summary_table(&[row, SummaryRow::default()]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[1].ends_with("p50/p99 over 900 completed, 95 timed out, 5 failed otherwise"),
            "{table}"
        );
        assert!(
            !lines[2].contains("p50/p99 over"),
            "no counts, no note: {table}"
        );
    }
}
