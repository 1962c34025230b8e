//! The controller: starts the target and the workers for a scenario, folds their stats (one
//! event stream, one owner) into the `LabState`, plays timed steps, turns knob changes into
//! control messages, and streams rows into the run folder. The headless runner and the TUI both
//! drive it.

use super::client_agg::{ClientTotals, LoadShape};
use super::state::{Command, Effect, Knobs, LabState, PathKnobs, Warning};
use crate::load::protocol::{Burst, Control, Mode, StatsDelta, WorkerConfig};
use crate::metrics::window::SampleWindow;
use crate::model::{Counters, Totals};
use crate::report::run_folder::RunFolder;
use crate::scenario::{HttpVersion, Scenario, Step, TargetKind};
use crate::sys::process::{ChildProc, Spawn};
use crate::target::config::{ServeConfig, ServerStats};
use anyhow::{bail, Context};
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod finish;
mod sampling;
mod steps;
mod supervise;
mod target;
mod workers;

pub use crate::scenario::workloads::mix_of;
pub use workers::knobs_of;
#[cfg(test)]
use workers::loopback_sources;

/// Messages from the lab's producers to its one owner.
pub enum Msg {
    Worker(u32, Box<StatsDelta>),
    /// A line from a worker that is not a stats delta (should not happen; logged).
    WorkerText(u32, String),
    Server(ServerStats),
    /// The server's access log: cumulative counts since start, at this many seconds.
    AccessLog(f64, crate::probe::accesslog::StatusCounts),
    /// A kernel probe sample (the probes' thread sends them into the same inbox).
    Probe(Box<crate::probe::ProbeSample>),
}

/// Where a worker runs and which share of the total load it carries.
#[derive(Debug, Clone)]
struct WorkerSlot {
    /// The `[[network.path]]` it loads (None: loopback).
    path: Option<usize>,
    weight: f64,
    netns: Option<String>,
    bind_addrs: Vec<IpAddr>,
}

/// Where and how a run writes.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Parent folder of the run folder; None = no run folder (tests).
    pub out_parent: Option<PathBuf>,
    /// Set by Ctrl-C / SIGTERM handlers; the controller stops when it turns true.
    pub interrupted: Arc<AtomicBool>,
    /// Without the privileges for the network lab, run on loopback (with a warning) instead of
    /// refusing. Only for the embedded default scenario: an explicit [network] is a request.
    pub network_fallback: bool,
}

/// One network path's share of the client figures.
struct PathTotals {
    name: String,
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

/// A measurement window (a sweep point's hold, or a whole TUI session) once it has ended.
#[derive(Debug, Clone)]
pub struct Window {
    /// Start and end, seconds since the run started (controller clock).
    pub t0: f64,
    pub t1: f64,
    /// The workers' reports that arrived in it.
    pub client: ClientTotals,
    /// The same, per `[[network.path]]` (name, totals); empty on loopback.
    pub paths: Vec<(String, ClientTotals)>,
    /// The server's own responses/s and count in it (built-in server), when it reported.
    pub server_rate: Option<f64>,
    pub server_responses: Option<u64>,
    /// The sample rows in it: their means and maxima, and the values at its opening edge.
    pub rows: SampleWindow,
}

pub struct Controller {
    /// The scenario as read: nothing changes it once the run starts (a sweep's settings live
    /// in the knobs, the worker count and `workload`).
    scenario: Scenario,
    /// The request mix the workers are started with (a workload sweep sets it per point).
    workload: crate::scenario::Workload,
    pub state: LabState,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    server: Option<ChildProc>,
    pub target_addr: SocketAddr,
    pub server_pid: Option<u32>,
    workers: Vec<ChildProc>,
    /// Where each worker runs and its share of the load.
    slots: Vec<WorkerSlot>,
    /// Per `[[network.path]]`: its column names, and its workers' reports in this sample and
    /// in the open window.
    paths: Vec<PathTotals>,
    n_workers: u32,
    /// The network lab, when the scenario has a [network] section.
    pub net: Option<crate::net::lab::LabNet>,
    router_last: Option<(Instant, crate::net::router::RouterStats)>,
    probe: Option<crate::probe::ProbeHandle>,
    /// The newest probe sample not yet folded into a row.
    probe_latest: Option<crate::probe::ProbeSample>,
    /// The TUI's end of run (the scenario's duration); headless runs time themselves.
    deadline: Option<f64>,
    start: Instant,
    interval: Duration,
    next_tick: Instant,
    last_tick: Instant,
    tick: ClientTotals,
    /// Totals since `begin_point` (a sweep point's hold, or the whole run): its start, the
    /// workers' reports, the server's stats at the start and the sample rows.
    point: Option<(f64, ClientTotals, Option<ServerStats>, SampleWindow)>,
    server_last: Option<ServerStats>,
    server_at_tick: Option<ServerStats>,
    pub folder: Option<RunFolder>,
    steps: Vec<Step>,
    next_step: usize,
    pub opts: RunOptions,
    notices: Vec<String>,
    /// Client-counted responses over the whole run (for the final cross-check).
    /// Every worker report's counts since the start, the final drain included.
    pub run: Counters,
    /// The client namespaces' TcpActiveOpens when the load started (the readiness check's
    /// connects came before), for the run's count of connects.
    client_opens_at_load_start: Option<u64>,
    /// When the TUI next judges the thresholds live.
    next_verdicts: Option<Instant>,
    /// Connect and total latency since the start (for the OpenMetrics histograms).
    run_latency: [hdrhistogram::Histogram<u64>; 2],
    /// (client responses, server responses, difference %) once the run has stopped.
    pub final_check: Option<(u64, u64, f64)>,
    /// The access log's counts: follower, latest, at the point's start, over the last point.
    access: AccessLogState,
    /// kind = "nginx" / "apache": its config, logs and document root.
    real: Option<super::real_server::RealServer>,
}

/// A server's access log followed for its own count of responses.
#[derive(Default)]
struct AccessLogState {
    follower: Option<crate::probe::accesslog::Follower>,
    path: Option<PathBuf>,
    last: Option<crate::probe::accesslog::StatusCounts>,
    at_point: Option<crate::probe::accesslog::StatusCounts>,
    /// Over the last point that ended (end_point).
    point: Option<crate::probe::accesslog::StatusCounts>,
}

/// Picks a free TCP port on loopback (the server binds it right after; the race is benign).
/// The longest the end of a run waits for connections in flight.
const MAX_DRAIN_S: f64 = 10.0;

pub use crate::load::validate::is_lab_address;

impl Controller {
    /// Starts the target and the workers. Nothing is left running if this fails.
    pub fn start(scenario: Scenario, opts: RunOptions) -> anyhow::Result<Self> {
        let (tx, rx) = unbounded();
        let interval = scenario.probe.interval.0;
        let knobs = knobs_of(&scenario);
        let mut state = LabState::new(&scenario.name, knobs, interval.as_secs_f64());
        let folder = match &opts.out_parent {
            Some(p) => Some(RunFolder::create(p, &scenario.name, &scenario.to_toml())?),
            None => None,
        };
        let steps = scenario.steps.clone();
        state.step = (!steps.is_empty()).then_some((0, steps.len()));
        let now = Instant::now();
        let mut c = Controller {
            n_workers: scenario.load.workers,
            workload: scenario.load.workload,
            scenario,
            state,
            tx,
            rx,
            server: None,
            target_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            server_pid: None,
            workers: Vec::new(),
            slots: Vec::new(),
            paths: Vec::new(),
            net: None,
            router_last: None,
            probe: None,
            probe_latest: None,
            deadline: None,
            start: now,
            interval,
            next_tick: now + interval,
            last_tick: now,
            tick: ClientTotals::default(),
            point: None,
            server_last: None,
            server_at_tick: None,
            folder,
            steps,
            next_step: 0,
            opts,
            notices: Vec::new(),
            run: Counters::default(),
            next_verdicts: None,
            client_opens_at_load_start: None,
            run_latency: [
                crate::metrics::hist::new_hist(),
                crate::metrics::hist::new_hist(),
            ],
            final_check: None,
            access: AccessLogState::default(),
            real: None,
        };
        c.log(&format!("scenario {}", c.scenario.name));
        if let Some(line) = crate::sys::netns::others_running_notice() {
            c.log(&line);
            c.notices.push(line);
        }
        let started = (|| {
            c.start_network()?;
            c.start_target()?;
            c.start_probes();
            c.start_workers()
        })();
        if let Err(e) = started {
            // The folder keeps why (the error also goes to stderr); drop stops what started.
            c.log(&format!("could not start: {e:#}"));
            return Err(e);
        }
        c.start = Instant::now();
        c.next_tick = c.start + c.interval;
        c.last_tick = c.start;
        Ok(c)
    }

    pub fn log(&mut self, line: &str) {
        if let Some(f) = &mut self.folder {
            f.log(line);
        }
    }

    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Builds the network lab for a [network] section (root only; says what is missing).
    fn start_network(&mut self) -> anyhow::Result<()> {
        let Some(spec) = self.scenario.network.clone() else {
            return Ok(());
        };
        let blocker = match crate::sys::userns::mode() {
            Some(crate::sys::userns::LabMode::Refused(why)) => Some(why.clone()),
            _ => crate::sys::privilege::Privileges::current().lab_missing(),
        };
        if let Some(missing) = blocker {
            if self.opts.network_fallback {
                let line = format!("network lab off, running on loopback: {missing}");
                self.log(&line);
                self.notices.push(line);
                self.state.knobs.lab_off = Some(missing.clone());
                self.state.warn(Warning::NoLab(
                    "loopback only, no WAN shaping (run.log says why)".into(),
                ));
                return Ok(());
            }
            bail!("{missing}");
        }
        let run_id = crate::net::plan::new_run_id();
        let net = crate::net::lab::Lab::up(&spec, &run_id)
            .context("bringing the network lab up (`synlab net status` lists leftovers, `synlab net down` removes them)")?;
        self.state.backend = format!("{:?}", net.backend).to_lowercase();
        if spec.backend == crate::net::spec::BackendChoice::Auto {
            self.state.backend.push_str(" (auto)");
        }
        self.state.knobs.paths = net
            .paths
            .iter()
            .map(|p| PathKnobs {
                name: p.name.clone(),
                rtt_ms: p.spec.rtt.secs() * 1000.0,
                loss_pct: p.spec.loss.0,
                bandwidth_bps: p.spec.bandwidth.map(|b| b.0),
            })
            .collect();
        for r in &net.leftovers_removed {
            let line = format!("removed a leftover of a crashed earlier run: {r}");
            self.log(&line);
            self.notices.push(line);
        }
        self.state.lab = lab_label();
        let line = format!(
            "network lab {run_id} up: lab: {}, backend {}, server netns {}, {} path(s)",
            self.state.lab,
            self.state.backend,
            net.server_netns,
            net.paths.len()
        );
        self.log(&line);
        self.paths = net.paths.iter().map(|p| PathTotals::new(&p.name)).collect();
        self.net = Some(net);
        Ok(())
    }

    /// Starts the kernel probes on the server's namespace. A probe that cannot start is a
    /// warning, not a failed run: the load and the client's figures still stand.
    fn start_probes(&mut self) {
        let iface = if !self.scenario.probe.iface.is_empty() {
            self.scenario.probe.iface.clone()
        } else if let Some(net) = &self.net {
            net.plan().server.dev.clone()
        } else {
            "lo".to_string()
        };
        let cfg = crate::probe::ProbeConfig {
            interval: self.interval,
            port: self.target_addr.port(),
            server_pid: self.server_pid,
            netns: self.net.as_ref().map(|n| n.server_netns.clone()),
            iface,
            pcap: self.scenario.probe.pcap,
            avoid_cpus: self.scenario.load.cpus.clone(),
        };
        let tx = self.tx.clone();
        let sink = move |p| tx.send(Msg::Probe(Box::new(p))).is_ok();
        match crate::probe::spawn(cfg, sink) {
            Ok(h) => self.probe = Some(h),
            Err(e) => {
                let line = format!("probes could not start: {e:#}");
                self.log(&line);
                self.notices.push(line);
            }
        }
    }

    /// Applies a knob change and carries out its effect.
    pub fn apply(&mut self, cmd: Command) -> Result<String, String> {
        // A TUI session is summarised per stretch of settings: the stretch that a change of the
        // load or of a path ends is closed first, under the settings it ran with.
        let changes = crate::lab::state::apply_knobs(&mut self.state.knobs.clone(), cmd.clone())
            .is_ok_and(|(e, _)| e != Effect::None);
        if changes && self.deadline.is_some() && !self.state.finished {
            self.end_stretch();
        }
        let (effect, text) = self.state.apply(cmd)?;
        match effect {
            Effect::Load => self.push_load_knobs(),
            Effect::Path(i) => self.push_path_knobs(Some(i))?,
            Effect::AllPaths => self.push_path_knobs(None)?,
            Effect::None => {}
        }
        let t = self.elapsed();
        self.log(&format!("[{t:.1}s] {text}"));
        Ok(text)
    }

    /// Folds pending messages, watches the children, plays steps; at each sample interval
    /// appends a row; in the TUI judges the thresholds live. Never blocks. The one pump of
    /// both drivers (headless and TUI): a signal is noted (`note_interrupted`), not an error.
    pub fn pump(&mut self) -> anyhow::Result<()> {
        self.pump_messages();
        self.check_children();
        self.play_steps();
        let now = Instant::now();
        // The probes sample on their own grid of the same interval, with a phase of their own:
        // a row waits (up to half an interval) for the sample of its interval, else rows whose
        // tick lands just before a sample would alternate between none and two.
        let probe_pending = self.probe.is_some()
            && self.probe_latest.is_none()
            && now < self.next_tick + self.interval / 2;
        if now >= self.next_tick && !probe_pending {
            let dt = now.duration_since(self.last_tick).as_secs_f64().max(1e-3);
            self.last_tick = now;
            // Keep a fixed grid; after a stall skip ahead rather than emit a burst of rows. A
            // row may be up to half an interval late (waiting for its probe sample) plus one
            // pump period: only more than a whole interval behind is a stall.
            self.next_tick += self.interval;
            if self.next_tick + self.interval < now {
                self.next_tick = now + self.interval;
            }
            self.sample_row(dt)?;
        }
        if self.opts.interrupted.load(Ordering::Relaxed) {
            self.note_interrupted();
        }
        if let Some(d) = self.deadline {
            if self.elapsed() >= d && !self.state.finished {
                self.deadline = None;
                let _ = self.apply(Command::Pause(true));
                self.state.finished = true;
                self.state.caption = Some(format!(
                    "the scenario's {d:.0} s are over: load stopped (press q to quit)"
                ));
                self.log("duration reached: load stopped");
            }
        }
        if self.deadline.is_some() {
            self.live_verdicts();
        }
        Ok(())
    }

    /// A signal asked the run to stop: the state says so (the drivers stop pumping, exit 130)
    /// and so does the run folder. Once; a second call changes nothing.
    pub fn note_interrupted(&mut self) {
        self.state.finished = true;
        if self.state.interrupted {
            return;
        }
        self.state.interrupted = true;
        self.log("interrupted: the run folder holds what was measured up to here");
        if let Some(f) = &mut self.folder {
            f.meta.insert("interrupted".into(), true.into());
        }
    }

    /// Interactive use: one measurement window over the whole run, ended by the duration.
    pub fn tui_mode(&mut self) {
        self.deadline = Some(self.scenario.duration.secs());
        self.begin_point();
    }

    /// The scenario as read.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    pub fn folder_dir(&self) -> Option<&Path> {
        self.folder.as_ref().map(|f| f.dir.as_path())
    }

    pub fn mode(&self) -> Mode {
        self.state.knobs.mode
    }
}

impl super::LabControl for Controller {
    fn state(&self) -> &LabState {
        &self.state
    }
    fn pump(&mut self) -> anyhow::Result<()> {
        Controller::pump(self)
    }
    fn command(&mut self, cmd: Command) -> crate::lab::state::Reply {
        self.apply(cmd).into()
    }
    fn mark(&mut self, label: &str) {
        Controller::mark(self, label)
    }
    fn next_step(&mut self) -> Option<String> {
        self.skip_to_next_step()
    }
    fn snapshot(&mut self, screen: &str) -> anyhow::Result<PathBuf> {
        self.write_snapshot(screen)
    }
    fn stop(&mut self) -> anyhow::Result<()> {
        self.finish_interactive()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if !self.workers.is_empty() || self.server.is_some() || self.net.is_some() {
            self.shutdown();
        }
    }
}

/// Where the lab runs, for the status line and run.log: "root" or "rootless (user namespace)".
fn lab_label() -> String {
    match crate::sys::userns::mode() {
        Some(m) => m.label().to_string(),
        None if crate::sys::userns::host_root() => "root".into(),
        None => "rootless (user namespace)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_loads_use_four_source_addresses_and_others_none() {
        let v4 = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            loopback_sources(v4("127.0.0.1"), 15_000),
            ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"].map(v4)
        );
        assert!(loopback_sources(v4("127.0.0.1"), 64).is_empty());
        assert!(loopback_sources(v4("198.18.0.1"), 15_000).is_empty());
        assert!(loopback_sources(v4("::1"), 15_000).is_empty());
    }

    #[test]
    fn lab_addresses_are_loopback_and_the_benchmark_range_only() {
        for ok in [
            "127.0.0.1",
            "127.3.4.5",
            "198.18.0.1",
            "198.19.255.254",
            "::1",
        ] {
            assert!(is_lab_address(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "10.0.0.1",
            "192.168.1.1",
            "198.20.0.1",
            "8.8.8.8",
            "172.16.0.1",
        ] {
            assert!(!is_lab_address(bad.parse().unwrap()), "{bad}");
        }
    }

    #[test]
    fn specweb96_mix_weights_follow_seed_001() {
        let mut sc = crate::scenario::default_scenario();
        sc.load.workload = crate::scenario::Workload::Specweb96;
        let mix = mix_of(&sc);
        assert_eq!(mix.len(), 36);
        let class0: f64 = mix
            .iter()
            .filter(|m| m.class == "class0")
            .map(|m| m.weight)
            .sum();
        assert!((class0 - 0.35).abs() < 1e-9, "{class0}");
    }
}
