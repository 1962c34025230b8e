//! `synlab run`: a headless run of a scenario — its steps, or its sweep point by point with
//! warm-up, hold and cool-down — with a progress bar, a run folder and a summary table.

use super::client_agg::{ClientTotals, LoadShape};
use super::controller::{Controller, RunOptions, Window};
use super::state::Command;
use crate::load::protocol::Mode;
use crate::model::{col, Col, PathSummary, Totals};
use crate::report::run_folder::SummaryRow;
use crate::report::thresholds::{Gate, Verdict};
use crate::scenario::{Scenario, SweepParam, SweepValue};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Factor `--quick` scales a scenario's durations by.
pub const QUICK_FACTOR: f64 = 0.25;

/// Registers Ctrl-C / SIGTERM / SIGHUP to set the returned flag (a second Ctrl-C exits at once).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag));
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// The parent folder of run folders: --out, else the scenario's [output] dir, else ./results.
pub fn out_parent(sc: &Scenario, out: Option<&Path>) -> PathBuf {
    out.map(Path::to_path_buf)
        .or_else(|| sc.output.dir.clone())
        .unwrap_or_else(|| PathBuf::from("results"))
}

pub use crate::scenario::points::{plan_points, Point};

/// The knob changes that set a sweep value (every parameter named: a new one is a compile
/// error here, not a sweep that silently changes nothing).
pub fn commands_for(param: SweepParam, v: SweepValue, mode: Mode) -> Vec<Command> {
    match (param, v) {
        (SweepParam::Rate, SweepValue::Rate(r)) => vec![Command::SetRate(Some(r))],
        (SweepParam::Sockets, SweepValue::Count(n)) => vec![Command::SetSockets(n)],
        (SweepParam::Clients, SweepValue::Count(n)) => vec![Command::SetClients(n)],
        (SweepParam::Concurrency, SweepValue::Count(n)) => {
            if mode == Mode::Closed {
                vec![Command::SetClients(n)]
            } else {
                vec![Command::SetSockets(n)]
            }
        }
        (SweepParam::Burst, SweepValue::Burst { ratio, fraction }) => vec![
            Command::SetBurst { ratio, fraction },
            Command::BurstOn(ratio > 1.0),
        ],
        (SweepParam::Rtt, SweepValue::Rtt(d)) => vec![Command::SetRtt {
            path: None,
            rtt_ms: d.secs() * 1000.0,
        }],
        (SweepParam::Loss, SweepValue::Loss(p)) => vec![Command::SetLoss {
            path: None,
            loss_pct: p.0,
        }],
        (SweepParam::Bandwidth, SweepValue::Bandwidth(b)) => vec![Command::SetBandwidth {
            path: None,
            bps: Some(b.0),
        }],
        // No knob: the sweep restarts the workers with the new count or request mix.
        (SweepParam::Workers | SweepParam::Workload, _) => Vec::new(),
        // sweep_value gives each parameter its own kind of value.
        (p, v) => unreachable!("{} cannot take the value {v}", p.name()),
    }
}

fn nan_or(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// Builds a summary row from a measurement window.
pub fn summary_row(ctrl: &Controller, point: usize, w: Window) -> SummaryRow {
    let (t0, t1, tot, server_rate) = (w.t0, w.t1, &w.client, w.server_rate);
    // Client rates over the time the workers' reports cover (not the controller's wall
    // window, whose edges fall between reports), as the time series does.
    let dt = tot.covered_s().unwrap_or(t1 - t0).max(1e-3);
    // The sample rows' figures come from the window's running sums (the store keeps minutes).
    let mean = |c: Col| nan_or(w.rows.mean(c));
    let max = |c: Col| nan_or(w.rows.max(c));
    let q = |h: &hdrhistogram::Histogram<u64>, x: f64| nan_or(ClientTotals::q_ms(h, x));
    let little = tot.total.mean() * tot.total.len() as f64 / 1e6 / dt;
    let cross = |a: f64, b: f64| {
        if a > 0.0 {
            (b - a) / a * 100.0
        } else {
            f64::NAN
        }
    };
    let bound = tot.client_bound(&LoadShape {
        mode: ctrl.state.knobs.mode,
        timeout_s: ctrl.state.knobs.timeout.as_secs_f64(),
    });
    let access = ctrl.point_access_counts();
    SummaryRow {
        point,
        mode: format!("{:?}", ctrl.state.knobs.mode).to_lowercase(),
        hold_s: dt,
        offered_rate: nan_or(ctrl.state.knobs.rate),
        attempts_per_s: tot.counts.attempts as f64 / dt,
        established_per_s: tot.counts.established as f64 / dt,
        throughput_per_s: tot.counts.responses as f64 / dt,
        non2xx_per_s: tot.counts.responses_non2xx as f64 / dt,
        server_responses_per_s: nan_or(server_rate),
        server_2xx_per_s: nan_or(access.map(|c| c.s2xx as f64 / dt)),
        server_3xx_per_s: nan_or(access.map(|c| c.s3xx as f64 / dt)),
        server_4xx_per_s: nan_or(access.map(|c| c.s4xx as f64 / dt)),
        server_5xx_per_s: nan_or(access.map(|c| c.s5xx as f64 / dt)),
        bytes_in_per_s: tot.counts.bytes_in as f64 / dt,
        errors_per_s: tot.errors() as f64 / dt,
        connect_timeouts_per_s: tot.counts.connect_timeouts as f64 / dt,
        refused_per_s: tot.counts.refused as f64 / dt,
        connect_p50_ms: q(&tot.connect, 0.5),
        connect_p99_ms: q(&tot.connect, 0.99),
        total_p50_ms: q(&tot.total, 0.5),
        total_p90_ms: q(&tot.total, 0.9),
        total_p98_ms: q(&tot.total, 0.98),
        total_p99_ms: q(&tot.total, 0.99),
        little_load_factor: little,
        syn_in_per_s: mean(col::SYN_IN),
        accept_queue_mean: mean(col::ACCEPT_QUEUE),
        accept_queue_max: max(col::ACCEPT_QUEUE),
        listen_overflows_per_s: mean(col::LISTEN_OVERFLOWS),
        established_mean: mean(col::ESTABLISHED_SOCKS),
        server_sockets_mean: mean(col::TCP_INUSE),
        client_open_mean: mean(col::IN_FLIGHT),
        time_wait_mean: mean(col::TIME_WAIT),
        time_wait_max: max(col::TIME_WAIT),
        server_procs_mean: mean(col::SERVER_PROCS),
        cpu_user_pct: mean(col::CPU_USER),
        cpu_system_pct: mean(col::CPU_SYSTEM),
        cpu_irq_pct: mean(col::CPU_IRQ),
        cpu_softirq_pct: mean(col::CPU_SOFTIRQ),
        cpu_idle_pct: mean(col::CPU_IDLE),
        cpu_nice_pct: mean(col::CPU_NICE_PCT),
        cpu_iowait_pct: mean(col::CPU_IOWAIT_PCT),
        cpu_steal_pct: mean(col::CPU_STEAL_PCT),
        worker_cpu_pct: tot.cpu_s / dt * 100.0,
        check_syn_vs_attempts_pct: cross(tot.counts.attempts as f64 / dt, mean(col::SYN_IN)),
        check_syn_tolerance_pct: crate::report::run_folder::syn_check_tolerance_pct(
            tot.counts.attempts as f64 / dt,
            dt,
            ctrl.state.interval_s,
        ),
        check_server_vs_client_pct: match server_rate {
            Some(s) => cross(tot.counts.responses as f64 / dt, s),
            None => f64::NAN,
        },
        client_bound: bound.is_some(),
        client_bound_reason: bound.unwrap_or_default(),
        backend: ctrl.state.backend.clone(),
        totals: Some(window_totals(ctrl, &w)),
        paths: w
            .paths
            .iter()
            .map(|(name, p)| path_summary(name, p, dt))
            .collect(),
        ..Default::default()
    }
}

/// One network path's figures over a window of `dt` seconds (its workers' covered time).
fn path_summary(name: &str, p: &ClientTotals, dt: f64) -> PathSummary {
    let dt = p.covered_s().unwrap_or(dt).max(1e-3);
    let q = |h: &hdrhistogram::Histogram<u64>, x: f64| nan_or(ClientTotals::q_ms(h, x));
    PathSummary {
        name: name.to_string(),
        attempts_per_s: p.counts.attempts as f64 / dt,
        throughput_per_s: p.counts.responses as f64 / dt,
        errors_per_s: p.errors() as f64 / dt,
        connect_timeouts: p.counts.connect_timeouts,
        connect_p50_ms: q(&p.connect, 0.5),
        connect_p99_ms: q(&p.connect, 0.99),
        total_p50_ms: q(&p.total, 0.5),
        total_p90_ms: q(&p.total, 0.9),
        total_p99_ms: q(&p.total, 0.99),
    }
}

/// A window's counts: the client's, the SYNs pcap saw between the samples at its edges, and
/// the server's own count.
fn window_totals(ctrl: &Controller, w: &Window) -> Totals {
    let mut t = Totals::of(&w.client.counts, w.client.in_flight);
    let pcap = ctrl.state.store.last(col::SYN_IN_ESTIMATED) == Some(0.0);
    if pcap {
        // The pcap total of the last sample at or before each edge.
        let (a, b) = (
            w.rows.at_open(col::SYN_IN_TOTAL),
            w.rows.latest(col::SYN_IN_TOTAL),
        );
        if let (Some(a), Some(b)) = (a, b) {
            t.syn_in = Some((b - a).max(0.0) as u64);
        }
    }
    t.server_responses = w.server_responses;
    t
}

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
        if ctrl.state.finished {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(true)
}

/// Runs a scenario to completion headless. Returns the run folder and whether it was cut short.
pub fn run_scenario(
    sc: Scenario,
    opts: RunOptions,
    progress: bool,
) -> anyhow::Result<(Option<PathBuf>, Vec<SummaryRow>, bool)> {
    run_gated(sc, opts, progress, None).map(|o| (o.dir, o.rows, o.interrupted))
}

/// What a headless run ends with.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub dir: Option<PathBuf>,
    pub rows: Vec<SummaryRow>,
    /// Cut short by a signal.
    pub interrupted: bool,
    /// A child the run depended on died (who and how); the run stopped there.
    pub child_died: Option<String>,
    /// The verdicts of the scenario's thresholds and gate, in the order judged.
    pub verdicts: Vec<Verdict>,
    /// A failing threshold with `abort_on_fail` stopped the run.
    pub aborted: bool,
}

/// `run_scenario`, with everything the run ended with.
pub fn run_scenario_outcome(
    sc: Scenario,
    opts: RunOptions,
    progress: bool,
) -> anyhow::Result<Outcome> {
    run_gated(sc, opts, progress, None)
}

/// Runs a scenario headless, judging its thresholds point by point (and publishing the time
/// series to `metrics` when given).
pub fn run_gated(
    sc: Scenario,
    opts: RunOptions,
    progress: bool,
    metrics: Option<&crate::metrics::openmetrics::Exporter>,
) -> anyhow::Result<Outcome> {
    let gate = Gate::of(&sc);
    let mut verdicts = Vec::new();
    let mut aborted = false;
    let points = plan_points(&sc);
    let total: f64 = points.iter().map(|p| p.warmup + p.hold + p.cooldown).sum();
    let param = sc
        .sweep
        .as_ref()
        .map(|s| s.param.clone())
        .unwrap_or_default();
    let kind = sc.sweep.as_ref().and_then(|s| s.kind());
    let name = sc.name.clone();
    let mut ctrl = Controller::start(sc, opts)?;
    let t0 = std::time::SystemTime::now() - Duration::from_secs_f64(ctrl.elapsed());
    let mut hlog = crate::report::hlog::Recorder::new(&name, t0);
    let pb = if progress {
        let pb = indicatif::ProgressBar::new(total.ceil() as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len}s {msg}",
            )
            .expect("valid template"),
        );
        Some(pb)
    } else {
        None
    };
    let began = Instant::now();
    let published = std::cell::Cell::new(began);
    let tick = |c: &Controller| {
        if let Some(m) = metrics {
            // Twice a second: fresh for a 1 s scrape, and no work per 10 ms pump.
            if published.get().elapsed() >= Duration::from_millis(500) {
                super::ci::publish(m, &c.state);
                published.set(Instant::now());
            }
        }
        if let Some(pb) = &pb {
            pb.set_position(began.elapsed().as_secs());
            let r = c.state.store.last(col::RESPONSES).unwrap_or(0.0);
            let a = c.state.store.last(col::ATTEMPTS).unwrap_or(0.0);
            pb.set_message(format!("attempts {a:.0}/s, responses {r:.0}/s"));
        }
    };
    let mut interrupted = false;
    for (i, p) in points.iter().enumerate() {
        let label = match (&p.mode, &p.value) {
            (m, Some(v)) => format!(
                "point {}/{}: {}{param} = {v}",
                i + 1,
                points.len(),
                m.map(|m| format!("{m:?} ").to_lowercase())
                    .unwrap_or_default()
            ),
            _ => "run".to_string(),
        };
        ctrl.log(&label);
        ctrl.mark(&label);
        let mut failed = None;
        if let Some(m) = p.mode {
            if let Err(e) = ctrl.apply(Command::SetMode(m)) {
                failed = Some(e);
            }
        }
        if let Some(v) = p.value {
            if let (Some(SweepParam::Workers), SweepValue::Count(n)) = (kind, v) {
                if let Err(e) = ctrl.restart_workers(n) {
                    failed = Some(format!("{e:#}"));
                }
            }
            // A new request mix: the workers take it from the scenario when they start.
            if let crate::scenario::SweepValue::Workload(w) = v {
                ctrl.scenario.load.workload = w;
                let n = ctrl.scenario.load.workers;
                if let Err(e) = ctrl.restart_workers(n) {
                    failed = Some(format!("{e:#}"));
                }
            }
            for c in kind.map_or_else(Vec::new, |k| commands_for(k, v, ctrl.mode())) {
                if let Err(e) = ctrl.apply(c) {
                    failed = Some(e);
                }
            }
        }
        if failed.is_none() && !run_for(&mut ctrl, p.warmup, &tick)? {
            interrupted = true;
        }
        ctrl.begin_point();
        if failed.is_none() && !interrupted && !run_for(&mut ctrl, p.hold, &tick)? {
            interrupted = true;
        }
        let window = ctrl.end_point().expect("a point was begun");
        let died = ctrl.child_died();
        if let Some(d) = &died {
            failed.get_or_insert(d.clone());
        }
        if failed.is_none() && !interrupted {
            failed = window
                .client
                .measured_nothing(window.t1 - window.t0, ctrl.worker_count());
        }
        hlog.push(
            i + 1,
            window.t0,
            window.t1 - window.t0,
            &window.client.connect,
            &window.client.total,
        );
        let mut row = summary_row(&ctrl, i + 1, window);
        row.param = param.clone();
        row.value = p.value.map(|v| v.to_string()).unwrap_or_default();
        if let Some(e) = failed {
            row.failed = true;
            row.error = e.clone();
            ctrl.log(&format!("{label}: FAILED: {e}"));
        }
        let judged = gate.judge_point(&row);
        aborted = gate.aborts(&judged);
        for v in judged.iter().filter(|v| !v.passed) {
            ctrl.log(&format!("FAIL {}", v.message));
        }
        verdicts.extend(judged);
        if let Some(f) = &mut ctrl.folder {
            f.summary.push(row);
            f.thresholds.clone_from(&verdicts);
            f.write_summary()?;
            hlog.write(&f.dir)?;
        }
        if interrupted || aborted || died.is_some() {
            if aborted {
                ctrl.log("a threshold with abort_on_fail failed: run stopped");
            }
            break;
        }
        if p.cooldown > 0.0 {
            ctrl.apply(Command::Pause(true)).ok();
            if !run_for(&mut ctrl, p.cooldown, &tick)? {
                interrupted = true;
                break;
            }
            ctrl.apply(Command::Pause(false)).ok();
        }
    }
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    if interrupted || ctrl.opts.interrupted.load(Ordering::Relaxed) {
        interrupted = true;
        ctrl.log("interrupted: the run folder holds what was measured up to here");
        if let Some(f) = &mut ctrl.folder {
            f.meta.insert("interrupted".into(), true.into());
        }
    }
    if let Some(f) = &mut ctrl.folder {
        verdicts.extend(gate.judge_run(&f.summary));
        f.thresholds.clone_from(&verdicts);
        f.write_summary()?;
    }
    ctrl.shutdown();
    let dir = ctrl.folder_dir().map(Path::to_path_buf);
    let rows = ctrl
        .folder
        .as_ref()
        .map(|f| f.summary.clone())
        .unwrap_or_default();
    Ok(Outcome {
        dir,
        rows,
        interrupted,
        child_died: ctrl.child_died(),
        verdicts,
        aborted,
    })
}

fn fmt(v: f64, w: usize) -> String {
    if v.is_nan() {
        format!("{:>w$}", "-")
    } else if v.abs() >= 100.0 {
        format!("{v:>w$.0}")
    } else {
        format!("{v:>w$.1}")
    }
}

/// The end-of-run table's note for a point whose responses were more than 1 % not 2xx.
pub fn non2xx_note(r: &SummaryRow) -> Option<String> {
    crate::report::run_folder::non2xx_flag_pct(r.non2xx_per_s, r.throughput_per_s).map(|pct| {
        format!("NOT 2xx: {pct:.0} % of responses (check the request paths: load.mix / workload)")
    })
}

/// The short table printed at the end of a run.
pub fn summary_table(rows: &[SummaryRow]) -> String {
    let mut s = format!(
        "{:>3} {:>8} {:>12} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>6}  notes\n",
        "pt",
        "mode",
        "value",
        "attempts/s",
        "responses/s",
        "errors/s",
        "p50 ms",
        "p99 ms",
        "acceptq",
        "cpu%"
    );
    for r in rows {
        let mut notes = Vec::new();
        if r.failed {
            notes.push(format!("FAILED: {}", r.error));
        }
        if r.client_bound {
            notes.push(format!("CLIENT-BOUND: {}", r.client_bound_reason));
        }
        if let Some(n) = non2xx_note(r) {
            notes.push(n);
        }
        // Timed-out attempts have no latency: say what the percentiles leave out.
        if let Some(t) = &r.totals {
            notes.push(format!(
                "p50/p99 over {}",
                crate::report::markdown::latency_cover(t)
            ));
        }
        s.push_str(&format!(
            "{:>3} {:>8} {:>12} {} {} {} {} {} {} {}  {}\n",
            r.point,
            r.mode,
            if r.value.is_empty() { "-" } else { &r.value },
            fmt(r.attempts_per_s, 10),
            fmt(r.throughput_per_s, 11),
            fmt(r.errors_per_s, 10),
            fmt(r.total_p50_ms, 9),
            fmt(r.total_p99_ms, 9),
            fmt(r.accept_queue_max, 8),
            fmt(100.0 - r.cpu_idle_pct, 6),
            notes.join("; ")
        ));
    }
    s
}

/// `synlab run SCENARIO [--out DIR] [--quick]`.
/// Decides, before any thread starts, where a scenario's network lab is built: as root on
/// the host, or in synlab's own user namespace (not root, or `force`). Scenarios without a
/// [network] section stay as they are: their command targets keep the user's own identity.
pub fn settle_lab_mode(sc: &Scenario, force: bool) {
    if sc.network.is_some() || force {
        crate::sys::userns::prepare(force);
    }
}

pub fn run_main(
    scenario: &Path,
    out: Option<&Path>,
    quick: bool,
    progress: bool,
    extras: &super::ci::RunExtras,
) -> anyhow::Result<ExitCode> {
    let mut sc = crate::scenario::load(scenario)?;
    let name = sc.name.clone();
    if quick {
        sc = sc.scaled(QUICK_FACTOR);
    }
    let parent = out_parent(&sc, out);
    settle_lab_mode(&sc, extras.userns);
    let exporter = super::ci::start_metrics(extras.metrics.as_deref())?;
    let interrupted = interrupt_flag();
    let opts = RunOptions {
        out_parent: Some(parent),
        interrupted: Arc::clone(&interrupted),
        network_fallback: scenario.as_os_str() == "default",
    };
    let progress = progress && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let Outcome {
        dir,
        rows,
        interrupted: cut,
        child_died,
        verdicts,
        aborted,
    } = run_gated(sc, opts, progress, exporter.as_ref())?;
    print!("{}", summary_table(&rows));
    print!("{}", crate::report::thresholds::verdict_lines(&verdicts));
    if let Some(path) = &extras.junit {
        crate::report::junit::write(path, &name, &verdicts)?;
        println!("junit: {}", path.display());
    }
    if let Some(d) = &dir {
        match crate::report::write_report(d) {
            Ok(md) => println!("report: {}", md.display()),
            Err(e) => eprintln!("synlab: the report could not be written: {e:#}"),
        }
        println!("results: {}", d.display());
    }
    if cut || interrupted.load(Ordering::Relaxed) {
        eprintln!("synlab: interrupted; the run folder holds what was measured");
        return Ok(ExitCode::from(130));
    }
    if let Some(d) = child_died {
        eprintln!("synlab: {d}; the run stopped there and everything it started was removed (exit 1); the run folder holds what was measured");
        return Ok(ExitCode::from(1));
    }
    let failed = rows.iter().filter(|r| r.failed).count();
    if failed > 0 {
        eprintln!(
            "synlab: {failed} of {} points failed; see the table and run.log in the run folder",
            rows.len()
        );
        return Ok(ExitCode::from(1));
    }
    if let Some(code) = crate::report::thresholds::exit_code(&verdicts, aborted) {
        return Ok(code);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_plan_one_point_per_mode_and_value() {
        let sc = crate::scenario::load(Path::new("scenarios/simple-vs-sclient.toml")).unwrap();
        let pts = plan_points(&sc);
        assert_eq!(pts.len(), 20);
        assert_eq!(pts[0].mode, Some(Mode::Closed));
        assert_eq!(pts[10].mode, Some(Mode::Sclient));
        assert_eq!(
            commands_for(SweepParam::Concurrency, pts[3].value.unwrap(), Mode::Closed),
            vec![Command::SetClients(8)]
        );
        assert_eq!(
            commands_for(
                SweepParam::Concurrency,
                pts[3].value.unwrap(),
                Mode::Sclient
            ),
            vec![Command::SetSockets(8)]
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
            totals: Some(Totals::of(&c, 0)),
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
