//! The lab's pure core: folds inputs (worker reports, server stats, the access log, probe
//! samples, router stats, ticks, commands, window edges, a child's death) into the lab state
//! and returns effects (control messages, path changes, rows, log lines, summary rows) for
//! the runtime (`lab::controller`) to carry out. Time comes in as seconds since the run
//! started: the core reads no clock and touches no channel, process, file or namespace, so
//! every rule here is tested without root.

use super::client_agg::ClientTotals;
use super::knobs::{Command, Knobs, Reply};
use super::state::{LabState, Warning};
use crate::load::protocol::{Control, StatsDelta, WorkerNotice};
use crate::metrics::window::SampleWindow;
use crate::model::SummaryRow;
use crate::model::{Col, Counters};
use crate::probe::accesslog::StatusCounts;
use crate::probe::ProbeSample;
use crate::scenario::Step;
use crate::target::config::ServerStats;

pub mod checks;
mod classes;
mod commands;
mod effect;
mod inputs;
mod latency_split;
mod live;
mod notices;
mod rows;
mod steps;
mod summary;
#[cfg(test)]
mod tests;
mod udp_drops;
mod window;

pub use commands::split_count;
pub use effect::Effect;
pub use inputs::{LabBackend, NoLab, PathRefusal, TargetUp, TlsSpoken};
pub use live::{CLEAR_AFTER_S, JUDGE_S, LATENCY_S};
pub use steps::Cue;
pub use window::{Window, MIN_STRETCH_S};

/// What the core folds: the producers' messages (they arrive on the controller's one inbox
/// as these), and the runtime's own (ticks, commands, window edges, deaths, signals).
#[derive(Debug)]
pub enum Input {
    /// A worker's stats report (worker id, report).
    Worker(u32, Box<StatsDelta>),
    /// A line from a worker that is not a stats delta (should not happen; logged).
    WorkerText(u32, String),
    Server(ServerStats),
    /// Apache's scoreboard (mod_status): workers busy with a connection now.
    Scoreboard {
        busy: u64,
    },
    /// The server's access log: cumulative counts since start, at this many seconds.
    AccessLog(f64, StatusCounts),
    /// A kernel probe sample.
    Probe(Box<ProbeSample>),
    /// The delay router's latest stats line, and its departure error over the lab's life
    /// (p99 in us, departures). Given before a tick whose row is due (`row_due`).
    Router {
        stats: Box<crate::net::router::RouterStats>,
        late_life: (u64, u64),
    },
    /// Time passed: plays the steps that are due, appends a row when one is due, ends the
    /// TUI's session at its duration.
    Tick,
    /// A knob change; its reply comes back as `Effect::Reply` (for a path change, once the
    /// runtime said whether the lab applied it).
    Command(Command),
    /// The runtime's answer to `Effect::Path`: the lab is under the proposed profiles, or it
    /// could not be put there (the path and why; the core then keeps the knobs as they were).
    PathApplied(Result<(), PathFailure>),
    /// The network lab is up: its backend, where it runs, and each path's profile as built.
    LabUp {
        backend: LabBackend,
        lab: String,
        paths: Vec<crate::net::spec::PathSpec>,
    },
    /// The scenario's network lab could not be built and the run goes on on loopback: why.
    LabOff(NoLab),
    /// The target answers: what it is, for the status line and run.log.
    TargetUp(TargetUp),
    /// A line the server printed besides its stats (its work's calibration, a backlog
    /// change): for run.log.
    ServerNote(String),
    /// Where the server and the load run, and the steering (at start, and when a point
    /// changes the steering).
    Cpus(crate::lab::state::CpuView),
    /// Over TLS, what the clients speak (for the status line).
    Tls(TlsSpoken),
    /// The scenario's thresholds judged on the session so far (the TUI's live verdicts).
    Verdicts(Vec<crate::report::thresholds::Verdict>),
    /// A mark on the charts and in the results.
    Mark(String),
    /// Opens a measurement window (a sweep point's hold, a TUI stretch).
    BeginWindow,
    /// Closes it: `Effect::Window` carries it.
    EndWindow,
    /// A child the run depends on died (who and how): the load stops, the point fails.
    ChildDied(crate::model::death::Death),
    /// A signal asked the run to stop.
    Interrupted,
    /// The TUI's terminal went away (its window was closed): the run stops as on a signal.
    TerminalGone,
}

/// A path change the network lab could not apply: which path, and the lab's error.
#[derive(Debug, Clone, PartialEq)]
pub struct PathFailure {
    pub path: String,
    pub why: PathRefusal,
}

/// One network path's share of the client figures.
pub(crate) struct PathTotals {
    pub(crate) name: String,
    /// Its columns are `path_<name>_<figure>`.
    id: crate::model::PathName,
    tick: ClientTotals,
    window: ClientTotals,
}

impl PathTotals {
    fn new(name: &str) -> Self {
        PathTotals {
            name: name.to_string(),
            id: crate::model::PathName::new(name),
            tick: ClientTotals::default(),
            window: ClientTotals::default(),
        }
    }
}

/// Where a worker runs, as far as the core cares: the path it loads and its share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// The `[[network.path]]` it loads (None: loopback).
    pub path: Option<usize>,
    pub weight: f64,
}

/// The access log's counts: latest, at the open window's start, over the last window.
#[derive(Default, Clone, Copy)]
struct AccessCounts {
    last: Option<StatusCounts>,
    /// When the latest counts came (seconds of the run).
    last_at_s: f64,
    at_point: Option<StatusCounts>,
    point: Option<StatusCounts>,
}

/// The open measurement window: its start, the workers' reports, the server's stats at the
/// start and the sample rows.
#[derive(Clone)]
struct OpenWindow {
    t0: f64,
    client: ClientTotals,
    server_at_open: Option<ServerStats>,
    rows: SampleWindow,
}

/// The lab's state and everything folded into it (one owner: the runtime reads it and sends
/// inputs, it never writes it).
pub struct LabCore {
    state: LabState,
    interval_s: f64,
    slots: Vec<Slot>,
    paths: Vec<PathTotals>,
    /// The request classes reported so far (mixes of two or more classes).
    classes: Vec<classes::ClassTotals>,
    /// The workers' reports since the last row.
    tick: ClientTotals,
    point: Option<OpenWindow>,
    server_last: Option<ServerStats>,
    /// The server reports its own stats (the built-in server; not an access log).
    server_reports: bool,
    server_at_tick: Option<ServerStats>,
    /// The clients' kernel's `net.ipv4.tcp_syn_linear_timeouts` (0 until said: exponential
    /// backoff): where the latency split's SYN retransmission modes lie.
    syn_linear: u32,
    /// The load speaks HTTP/3 (`server_counts_quic`).
    quic: bool,
    /// The server's busy workers as last reported (its own report, Apache's scoreboard; seed 000 Fig. 10).
    busy_latest: Option<f64>,
    /// Full TLS handshakes the server counted that were not the load's (the start-up check's,
    /// on a server that counts handshakes rather than logged requests).
    server_handshakes_not_load: u64,
    access: AccessCounts,
    /// Whether probes run (a row then waits for its interval's sample).
    probes_on: bool,
    /// The newest probe sample not yet folded into a row.
    probe_latest: Option<ProbeSample>,
    /// What the samples a row never took measured (a sample followed by another before the
    /// row): the next row takes the values its own sample leaves empty.
    probe_carry: Vec<(Col, f64)>,
    /// The router's stats for the next row, and those of the row before.
    router_now: Option<(crate::net::router::RouterStats, (u64, u64))>,
    router_last: Option<crate::net::router::RouterStats>,
    /// The router's CPU over its latest two stats lines (% of one core), for the load's CPU.
    router_cpu_pct: Option<f64>,
    /// Every worker report's counts since the start, the final drain included.
    run: Counters,
    /// ... and their QUIC stacks' counts (HTTP/3), and the datagrams the start-up QUIC check
    /// sent (the drops identity's, `udp_drops`).
    run_quic: Option<crate::quic::stats::QuicDelta>,
    h3_check_sent: u64,
    h3_check_initials: u64,
    h3_check_handshakes: u64,
    /// What each worker that has not sent its last report had in progress at its latest one
    /// (a worker still draining at the bound, or gone): the run's totals count it as left.
    run_unfinished: std::collections::BTreeMap<u32, crate::model::InProgress>,
    /// Connect, total and TLS handshake latency since the start (the OpenMetrics histograms).
    run_latency: [hdrhistogram::Histogram<u64>; 3],
    /// (client responses, server responses, difference %) once the run has stopped.
    final_check: Option<(u64, u64, f64)>,
    /// ... and its verdict.
    final_verdict: Option<crate::probe::crosscheck::ResponsesVerdict>,
    /// The clients' latest account of a failed TLS handshake, in words.
    tls_failure: Option<String>,
    notices: Vec<String>,
    /// The workers' notices, one of each kind (the first said), typed.
    worker_notices: Vec<WorkerNotice>,
    steps: Vec<Cue>,
    next_step: usize,
    next_tick_s: f64,
    last_tick_s: f64,
    /// The TUI's end of session (the scenario's duration); headless runs time themselves.
    deadline: Option<f64>,
    /// When the TUI next judges the thresholds live.
    next_verdicts_s: f64,
    /// A path change proposed to the runtime and not yet answered, and what waits for it.
    proposals: commands::Proposals,
    /// The quantile (0-1) of the capacity target (`[analysis] capacity`): each summary row's
    /// `capacity_latency_ms`.
    capacity_q: f64,
    /// The workers' reports of the last few seconds (what the lab is doing now).
    recent: live::Recent,
    /// When each live warning's condition last held, and run.log last said it.
    warned: live::WarnTimes,
    /// A TUI session: every change of the load or a path closes a stretch of settings.
    interactive: bool,
    /// The short stretches not yet said in run.log.
    unsummarised: window::Unsummarised,
}

/// How often the TUI judges the thresholds live, in seconds of the run.
pub const LIVE_VERDICTS_EVERY_S: f64 = 2.0;

impl LabCore {
    /// A core for a scenario named `name` with these knobs, steps and sample interval; its
    /// clock starts at 0 s.
    pub fn new(name: &str, knobs: Knobs, steps: Vec<Step>, interval_s: f64) -> Self {
        let mut state = LabState::new(name, knobs, interval_s);
        state.step = (!steps.is_empty()).then_some((0, steps.len()));
        let steps = steps.into_iter().map(|s| Cue::Step(Box::new(s))).collect();
        LabCore {
            state,
            interval_s,
            slots: Vec::new(),
            paths: Vec::new(),
            classes: Vec::new(),
            tick: ClientTotals::default(),
            point: None,
            server_last: None,
            server_reports: false,
            server_at_tick: None,
            syn_linear: 0,
            quic: false,
            busy_latest: None,
            server_handshakes_not_load: 0,
            access: AccessCounts::default(),
            probes_on: false,
            probe_latest: None,
            probe_carry: Vec::new(),
            router_now: None,
            router_last: None,
            router_cpu_pct: None,
            run: Counters::default(),
            run_quic: None,
            h3_check_sent: 0,
            h3_check_initials: 0,
            h3_check_handshakes: 0,
            run_unfinished: Default::default(),
            run_latency: std::array::from_fn(|_| crate::metrics::hist::new_hist()),
            final_check: None,
            final_verdict: None,
            tls_failure: None,
            notices: Vec::new(),
            worker_notices: Vec::new(),
            steps,
            next_step: 0,
            next_tick_s: interval_s,
            last_tick_s: 0.0,
            deadline: None,
            next_verdicts_s: 0.0,
            proposals: Default::default(),
            capacity_q: crate::model::capacity::CapacityTarget::default().quantile(),
            recent: Default::default(),
            warned: Default::default(),
            interactive: false,
            unsummarised: Default::default(),
        }
    }

    /// The capacity target's quantile (0-1) the summary rows' `capacity_latency_ms` is at.
    pub fn set_capacity_quantile(&mut self, q: f64) {
        self.capacity_q = q;
    }

    /// The state the front ends draw and the runtime reads.
    pub fn state(&self) -> &LabState {
        &self.state
    }

    /// Every worker report's counts since the start, the final drain included.
    pub fn run_counts(&self) -> &Counters {
        &self.run
    }

    /// (client responses, server responses, difference %) once the run has stopped.
    pub fn final_check(&self) -> Option<(u64, u64, f64)> {
        self.final_check
    }

    /// The clients' latest account of a failed TLS handshake (which check, what to do).
    pub fn tls_failure(&self) -> Option<&str> {
        self.tls_failure.as_deref()
    }

    /// The final check's verdict (which count the run trusted and why), once the run stopped.
    pub fn final_verdict(&self) -> Option<&crate::probe::crosscheck::ResponsesVerdict> {
        self.final_verdict.as_ref()
    }

    /// Keeps only the last `secs` seconds of the time series in memory (headless runs).
    pub fn keep_series(&mut self, secs: f64) {
        self.state.store.keep_only(secs);
    }

    /// Folds one input at `now_s` (seconds since the run started); effects go to `fx`.
    pub fn fold(&mut self, input: Input, now_s: f64, fx: &mut Vec<Effect>) {
        match input {
            Input::Worker(_, d) => {
                self.fold_worker(&d, fx);
                self.recent.push(now_s, d);
            }
            Input::WorkerText(id, line) => fx.push(Effect::Log(format!("worker {id}: {line}"))),
            Input::Server(s) => {
                self.busy_latest = Some(s.busy as f64);
                self.server_last = Some(s);
                self.server_reports = true;
            }
            Input::Scoreboard { busy } => self.busy_latest = Some(busy as f64),
            // Its lines are the server's responses, for the same checks as the built-in's.
            Input::AccessLog(t_s, c) => {
                self.server_last = Some(ServerStats {
                    t_s,
                    responses: c.lines,
                    tls_full: c.tls_full,
                    tls_resumed: c.tls_resumed,
                    // The lines' request times: the latency split's service.
                    served: c.timed,
                    service_us: c.service_us,
                    ..Default::default()
                });
                self.access.last = Some(c);
                self.access.last_at_s = now_s;
                if let Some(n) = c.service_notice() {
                    if self.notice_once(&n.to_string()) {
                        fx.push(Effect::Log(n.to_string()));
                    }
                }
            }
            Input::Probe(p) => self.fold_probe(*p, fx),
            Input::Router { stats, late_life } => self.router_now = Some((*stats, late_life)),
            Input::Tick => self.tick(now_s, fx),
            Input::Command(cmd) => self.propose(cmd, now_s, commands::Origin::Command, fx),
            Input::PathApplied(r) => self.path_applied(r, now_s, fx),
            Input::LabUp {
                backend,
                lab,
                paths,
            } => {
                self.paths = paths.iter().map(|p| PathTotals::new(&p.name)).collect();
                self.state.backend = backend.to_string();
                self.state.lab = lab;
                self.state.knobs.paths = paths;
            }
            Input::LabOff(why) => {
                self.state.knobs.lab_off = Some(why.to_string());
                self.state.warn(Warning::NoLab(
                    "loopback only, no WAN shaping (run.log says why)".into(),
                ));
            }
            Input::TargetUp(what) => self.state.target = what.to_string(),
            Input::ServerNote(line) => fx.push(Effect::Log(line)),
            Input::Cpus(v) => self.state.cpus = v,
            Input::Tls(what) => self.state.tls = what.to_string(),
            Input::Verdicts(v) => self.state.verdicts = v,
            Input::Mark(label) => self.mark(&label, now_s, fx),
            Input::BeginWindow => self.begin_window(now_s),
            Input::EndWindow => {
                if let Some(w) = self.end_window(now_s) {
                    fx.push(Effect::Window(Box::new(w)));
                }
            }
            Input::ChildDied(d) => self.child_died_at(d, now_s, fx),
            Input::Interrupted => self.interrupt(fx),
            Input::TerminalGone => {
                if !self.state.terminal_gone {
                    self.state.terminal_gone = true;
                    fx.push(Effect::Log(format!(
                        "[{now_s:.1}s] the terminal went away (its window was closed): the run stops as on an interruption"
                    )));
                }
                self.interrupt(fx);
            }
        }
    }

    /// The run stops on a signal (or a dead terminal): once, said in run.log.
    fn interrupt(&mut self, fx: &mut Vec<Effect>) {
        self.state.finished = true;
        if !self.state.interrupted {
            self.state.interrupted = true;
            fx.push(Effect::Log(
                "interrupted: the run folder holds what was measured up to here".into(),
            ));
        }
    }

    fn fold_worker(&mut self, d: &StatsDelta, fx: &mut Vec<Effect>) {
        self.fold_notices(d, fx);
        if let Some(why) = &d.tls_failure {
            let line = format!("TLS handshake failed: {why}");
            if self.notice_once(&line) {
                fx.push(Effect::Log(format!("worker {}: {line}", d.worker)));
            }
            self.tls_failure = Some(why.clone());
        }
        self.run.add(&d.counts);
        if let Some(q) = &d.quic {
            self.run_quic.get_or_insert_with(Default::default).add(q);
        }
        if d.last {
            self.run_unfinished.remove(&d.worker);
        } else {
            let now = crate::model::InProgress {
                connecting: d.connecting,
                requests: d.requests_in_flight,
            };
            self.run_unfinished.insert(d.worker, now);
        }
        d.connect_us.merge_into(&mut self.run_latency[0]);
        d.total_us.merge_into(&mut self.run_latency[1]);
        d.handshake_us.merge_into(&mut self.run_latency[2]);
        self.tick.add(d);
        if let Some(p) = &mut self.point {
            p.client.add(d);
        }
        self.fold_classes(d);
        let path = self.slots.get(d.worker as usize).and_then(|s| s.path);
        if let Some(pt) = path.and_then(|i| self.paths.get_mut(i)) {
            pt.tick.add(d);
            if self.point.is_some() {
                pt.window.add(d);
            }
        }
    }

    fn fold_probe(&mut self, p: ProbeSample, fx: &mut Vec<Effect>) {
        self.probe_notes(&p, fx);
        if p.syn_source == crate::probe::SynSource::Estimated {
            self.state.warn(Warning::NoPcap);
        }
        if p.kernel.is_some() {
            self.state.kernel_reasons = p.kernel.clone();
        }
        // A row takes one sample. When a second comes before it (the lab's loop late on a
        // busy machine), the first's figures stay for the row: above all the paced
        // socket-state walk's counts, which only every 5 s or so a sample carries; a walk lost
        // so left 10 s between counts, past the 6 s a figure stays current (`-` on screen).
        if let Some(old) = self.probe_latest.replace(p) {
            for (c, v) in old.columns() {
                if let Some(v) = v {
                    self.probe_carry.retain(|(k, _)| *k != c);
                    self.probe_carry.push((c, v));
                }
            }
        }
    }

    /// A probe sample's notes, each logged the first time it comes (also for the samples the
    /// runtime reads after the drain without folding them).
    pub fn probe_notes(&mut self, p: &ProbeSample, fx: &mut Vec<Effect>) {
        for n in &p.notes {
            if self.notice_once(n) {
                fx.push(Effect::Log(format!("probe: {n}")));
            }
        }
    }

    /// A child died: the run stops (once per death); the point it died in fails, read from
    /// [`LabCore::child_died`].
    fn child_died_at(&mut self, d: crate::model::death::Death, now_s: f64, fx: &mut Vec<Effect>) {
        let w = Warning::ChildDied(d.clone());
        if self.state.warnings.contains(&w) {
            return;
        }
        fx.push(Effect::Log(format!("[{now_s:.1}s] {d}: the run stops")));
        self.notice_once(&d.to_string());
        self.state.warn(w);
        self.state.caption = Some(format!("{d}: run stopped (press q to quit)"));
        if !self.state.finished {
            self.propose(Command::Pause(true), now_s, commands::Origin::Core, fx);
            self.state.finished = true;
        }
    }

    /// Who died and how, when a child the run depends on has exited (it fails the point it
    /// died in and stops the run).
    pub fn child_died(&self) -> Option<crate::model::death::Death> {
        self.state.warnings.iter().find_map(|w| match w {
            Warning::ChildDied(d) => Some(d.clone()),
            _ => None,
        })
    }

    /// The built-in server's last stats line (its totals since it started), if it sent one.
    pub fn server_stats(&self) -> Option<&ServerStats> {
        self.server_last.as_ref().filter(|_| self.server_reports)
    }

    /// The server counted `full` handshakes that were not the load's (the start-up check's):
    /// the run's server count leaves them out.
    pub fn server_handshakes_not_load(&mut self, full: u64) {
        self.server_handshakes_not_load += full;
    }

    /// Where the workers run: their paths and shares (the runtime plans them).
    pub fn set_slots(&mut self, slots: Vec<Slot>) {
        self.slots = slots;
    }

    /// The clients' `net.ipv4.tcp_syn_linear_timeouts` (the runtime reads it).
    pub fn set_syn_linear_timeouts(&mut self, n: u32) {
        self.syn_linear = n;
    }

    /// The load speaks HTTP/3 (the controller says so from the scenario).
    pub fn set_quic(&mut self, quic: bool) {
        self.quic = quic;
    }

    /// Probes run: a row waits (up to half an interval) for its interval's sample.
    pub fn set_probes_on(&mut self, on: bool) {
        self.probes_on = on;
    }

    /// Whether the probes run (their rows are awaited).
    pub fn probes_on(&self) -> bool {
        self.probes_on
    }

    /// Interactive use: stretches of settings are summarised, and the load stops at
    /// `duration_s` (`p` then runs it again, past the scenario's end: free play).
    pub fn set_deadline(&mut self, duration_s: f64) {
        self.deadline = Some(duration_s);
        self.interactive = true;
    }

    /// True in a TUI session until it is interrupted.
    pub fn in_session(&self) -> bool {
        self.interactive && !self.state.interrupted
    }

    /// True when the TUI's live verdicts are due at `now_s` (at once, then every
    /// `LIVE_VERDICTS_EVERY_S`); the next is counted from here.
    pub fn verdicts_due(&mut self, now_s: f64) -> bool {
        if now_s < self.next_verdicts_s {
            return false;
        }
        self.next_verdicts_s = now_s + LIVE_VERDICTS_EVERY_S;
        true
    }

    /// The access log's counts over the last window that ended (None: no access log).
    pub fn point_access_counts(&self) -> Option<StatusCounts> {
        self.access.point
    }

    /// The access log's counts since it was opened.
    pub fn access_counts(&self) -> Option<StatusCounts> {
        self.access.last
    }
}
