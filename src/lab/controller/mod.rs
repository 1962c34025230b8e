//! The lab's runtime around its pure core (`lab::core`): starts and supervises the target,
//! the workers, the network lab and the probes, owns the one inbox their messages arrive on
//! and the run folder, feeds the core its inputs with the time, and carries out the effects
//! it returns (control messages, path changes, rows, run.log). The headless runner and the TUI
//! both drive it through the one `pump`.

use super::core::{Effect, Input, LabCore, PathFailure, PathRefusal, Slot};
use super::knobs::{Command, Reply};
use super::state::LabState;
use crate::lab::recorder::Recorder;
use crate::load::protocol::{Control, Mode, StatsDelta, WorkerConfig};
use crate::scenario::{HttpVersion, Scenario, TargetKind};
use crate::sys::process::Spawn;
use crate::target::config::{ServeConfig, ServerStats};
use anyhow::{bail, Context};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod cpus;
#[cfg(test)]
mod fakes;
mod finish;
mod http2;
mod http3;
mod inbox;
mod loopback;
mod runtime;
#[cfg(test)]
mod seam_tests;
mod supervise;
mod target;
mod tls;
mod workers;

pub use super::core::{Window, MIN_STRETCH_S};
use crate::lab::knobs::knobs_of;
pub use crate::scenario::workloads::mix_of;
use runtime::{Child, Lab};
#[cfg(test)]
use workers::loopback_sources;

/// Where a worker runs and which share of the total load it carries.
#[derive(Debug, Clone)]
struct WorkerSlot {
    /// The path it loads and its share (what the core knows of it).
    share: Slot,
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
    /// The `--metrics` endpoint the lab's time series are published to as it is pumped.
    pub metrics: Option<crate::metrics::openmetrics::Exporter>,
}

pub struct Controller {
    /// The scenario as read: nothing changes it once the run starts (a sweep's settings live
    /// in the knobs, the worker count and `workload`).
    scenario: Scenario,
    /// The request mix the workers are started with (a workload sweep sets it per point).
    workload: crate::scenario::Workload,
    /// The clients speak HTTP/1.1 keep-alive (`load.http`, or its sweep value now).
    keepalive: bool,
    /// Apache's scoreboard reader (kind = "apache").
    scoreboard: Option<crate::lab::real_server::status::StatusPoller>,
    /// The state and everything folded into it: the controller reads it and sends it inputs.
    core: LabCore,
    tx: Sender<Input>,
    rx: Receiver<Input>,
    /// The machine as the controller uses it (fakes in tests).
    rt: runtime::Runtime,
    server: Option<Box<dyn Child>>,
    pub target_addr: SocketAddr,
    pub server_pid: Option<u32>,
    workers: Vec<Box<dyn Child>>,
    /// Where each worker runs and its share of the load.
    slots: Vec<WorkerSlot>,
    n_workers: u32,
    /// The network lab, when the scenario has a [network] section.
    pub(crate) net: Option<Box<dyn Lab>>,
    probe: Option<runtime::ProbesRunning>,
    start: Instant,
    interval: Duration,
    /// Owns the run folder: every file of it is written through the recorder.
    pub(crate) recorder: Recorder,
    /// The scenario's thresholds and gate, parsed once.
    gate: crate::report::thresholds::Gate,
    pub opts: RunOptions,
    /// The client namespaces' TcpActiveOpens when the load started (the readiness check's
    /// connects came before), for the run's count of connects.
    client_opens_at_load_start: Option<u64>,
    /// The access log followed for the server's own count of responses.
    access: AccessLogFiles,
    /// kind = "nginx" / "apache": its config, logs and document root.
    real: Option<super::real_server::RealServer>,
    /// The `--metrics` endpoint, fed from the state twice a second.
    publisher: Option<crate::metrics::openmetrics::Publisher>,
    /// The server's CPUs and the load's (workers, router, controller).
    placement: crate::model::Placement,
    /// Over TLS: the certificate the lab made for its server.
    tls: Option<tls::LabTls>,
    /// Whether the probes count the kernel's own drop reasons (the scenario's, then `Y`).
    kernel_reasons: crate::probe::kreasons::Switch,
}

/// A server's access log followed for its own count of responses (the counts are the core's).
#[derive(Default)]
struct AccessLogFiles {
    follower: Option<crate::probe::accesslog::Follower>,
    path: Option<PathBuf>,
    /// Each summary point's counts (with the log's lines they came from), for the run's meta.
    points: Vec<(usize, crate::probe::accesslog::StatusCounts)>,
}

/// The longest the end of a run waits for connections in flight.
pub const MAX_DRAIN_S: f64 = 10.0;

/// How long a drain (the end of a run, a point's settle) may wait for what is in flight, s:
/// T + the response timeout, at most `MAX_DRAIN_S`. The one rule the deadlines, the
/// interrupted run's line and the TUI's stopping line say.
pub fn drain_bound_s(timeout_s: f64, response_timeout_s: f64) -> f64 {
    (timeout_s + response_timeout_s).min(MAX_DRAIN_S)
}

/// The margin a drain's deadline gives past its bound (the last reports on their way).
const DRAIN_MARGIN_S: f64 = 0.2;

pub use crate::load::validate::is_lab_address;

impl Controller {
    /// Starts the target and the workers. Nothing is left running if this fails.
    pub fn start(scenario: Scenario, opts: RunOptions) -> anyhow::Result<Self> {
        Self::start_on(scenario, opts, runtime::Runtime::real())
    }

    /// Starts on `rt`: the network lab, then the target, then the probes, then the load.
    pub(crate) fn start_on(
        scenario: Scenario,
        opts: RunOptions,
        rt: runtime::Runtime,
    ) -> anyhow::Result<Self> {
        let recorder = match &opts.out_parent {
            Some(p) => Recorder::create(p, &scenario.name, &scenario.to_toml())?,
            None => Recorder::off(),
        };
        let mut c = Self::assemble(scenario, opts, recorder, rt);
        c.log(&format!("scenario {}", c.scenario.name));
        if let Some(line) = c.rt.network.others_running() {
            c.log(&line);
            c.core.notice(line);
        }
        let started = (|| {
            c.start_network()?;
            c.place_on_cpus();
            c.start_target()?;
            c.check_http2()?;
            c.check_http3()?;
            c.start_probes();
            c.start_workers()
        })();
        if let Err(e) = started {
            // The folder keeps why (the error also goes to stderr); drop stops what started.
            c.log(&format!("could not start: {e:#}"));
            return Err(e);
        }
        // The core's clock starts now: its first row is one interval from here.
        c.start = c.rt.clock.now();
        c.recorder.set_start(std::time::SystemTime::now());
        Ok(c)
    }

    /// The controller of `scenario` with nothing started yet (no children, no lab, no
    /// probes), recording into `recorder`.
    fn assemble(
        scenario: Scenario,
        opts: RunOptions,
        recorder: Recorder,
        rt: runtime::Runtime,
    ) -> Self {
        let (tx, rx) = channel();
        let interval = scenario.probe.interval.0;
        let knobs = knobs_of(&scenario);
        let publisher = opts
            .metrics
            .clone()
            .map(crate::metrics::openmetrics::Publisher::new);
        let mut core = LabCore::new(
            &scenario.name,
            knobs,
            scenario.steps.clone(),
            interval.as_secs_f64(),
        );
        // The host's (loopback); the lab's clients' once it is up.
        core.set_syn_linear_timeouts(syn_linear_timeouts());
        core.set_quic(scenario.load.http == HttpVersion::Http3);
        // As if the lab comes up; `place_on_cpus` settles it once the lab is up or not.
        let placement = crate::model::Placement::resolve(
            &scenario.target.cpus,
            &scenario.load.cpus,
            scenario.network.is_some(),
            &crate::sys::machine::online_cpus(),
        );
        core.set_capacity_quantile(scenario.analysis.capacity.quantile());
        Controller {
            gate: crate::report::thresholds::Gate::of(&scenario),
            n_workers: scenario.load.workers,
            workload: scenario.load.workload,
            keepalive: scenario.load.http == HttpVersion::Http11,
            scoreboard: None,
            kernel_reasons: crate::probe::kreasons::Switch::new(scenario.probe.kernel_reasons),
            scenario,
            core,
            tx,
            rx,
            server: None,
            start: rt.clock.now(),
            rt,
            target_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            server_pid: None,
            workers: Vec::new(),
            slots: Vec::new(),
            net: None,
            probe: None,
            interval,
            recorder,
            opts,
            client_opens_at_load_start: None,
            access: AccessLogFiles::default(),
            real: None,
            publisher,
            placement,
            tls: None,
        }
    }

    pub fn log(&mut self, line: &str) {
        self.recorder.log(line);
    }

    /// A notice of the run's own (run.log, summary.json's notices), once.
    pub fn notice(&mut self, line: &str) {
        if self.core.notice_once(line) {
            self.recorder.log(line);
        }
    }

    pub fn elapsed(&self) -> f64 {
        self.rt
            .clock
            .now()
            .saturating_duration_since(self.start)
            .as_secs_f64()
    }

    /// Builds the network lab for a [network] section (root only; says what is missing).
    fn start_network(&mut self) -> anyhow::Result<()> {
        let Some(spec) = self.scenario.network.clone() else {
            self.say_loopback();
            return Ok(());
        };
        let blocker = self.rt.network.blocker();
        if let Some(missing) = blocker {
            if self.opts.network_fallback {
                let line = format!("network lab off, running on loopback: {missing}");
                self.log(&line);
                self.core.notice(line);
                self.fold_msg(Input::LabOff(missing));
                return Ok(());
            }
            bail!("{missing}");
        }
        let run_id = crate::net::plan::new_run_id();
        let net = self
            .rt
            .network
            .up(&spec, &run_id, &self.placement)
            .context("bringing the network lab up (`synlab net status` lists leftovers, `synlab net down` removes them)")?;
        let layout = net.layout().clone();
        let backend = super::core::LabBackend::Shaped {
            backend: layout.backend,
            auto: spec.backend == crate::net::spec::BackendChoice::Auto,
        };
        for r in &layout.leftovers_removed {
            let line = format!("removed a leftover of a crashed earlier run: {r}");
            self.log(&line);
            self.core.notice(line);
        }
        let lab = self.rt.network.label();
        let line = format!(
            "network lab {run_id} up: lab: {lab}, backend {backend}, server netns {}, {} path(s)",
            layout.server_netns,
            layout.paths.len()
        );
        self.log(&line);
        self.net = Some(net);
        // The paths as built: the core keeps their profiles from here on.
        let paths = spec.effective_paths();
        self.fold_msg(Input::LabUp {
            backend,
            lab,
            paths,
        });
        // Where the clients' SYN retransmissions fall (the latency split's modes): their
        // namespace's own setting.
        if let Some(p) = layout.paths.first() {
            let linear = crate::sys::netns::in_netns(&p.netns, syn_linear_timeouts);
            let linear = linear.unwrap_or_else(|_| syn_linear_timeouts());
            self.core.set_syn_linear_timeouts(linear);
            let at = |k| crate::model::latency_split::retrans_at_ms(k, linear) / 1000.0;
            self.log(&format!(
                "clients' SYN retransmissions (net.ipv4.tcp_syn_linear_timeouts = {linear}): \
                 {} s, {} s, {} s after the first SYN",
                at(1),
                at(2),
                at(3)
            ));
        }
        Ok(())
    }

    /// Starts the kernel probes on the server's namespace. A probe that cannot start is a
    /// warning, not a failed run: the load and the client's figures still stand.
    fn start_probes(&mut self) {
        let iface = if !self.scenario.probe.iface.is_empty() {
            self.scenario.probe.iface.clone()
        } else if let Some(net) = &self.net {
            net.layout().server_dev.clone()
        } else {
            "lo".to_string()
        };
        let cfg = crate::probe::ProbeConfig {
            interval: self.interval,
            port: self.target_addr.port(),
            server_pid: self.server_pid,
            netns: self.net.as_ref().map(|n| n.layout().server_netns.clone()),
            iface,
            pcap: self.scenario.probe.pcap,
            avoid_cpus: self.probe_avoid_cpus(),
            // The lab's server namespace holds only the server: its sockstat count is the
            // port's. On the host other servers' sockets count there too: walk the port's.
            port_time_wait: self.net.is_none(),
            cores: self.probe_cores(),
            kernel_reasons: self.kernel_reasons.clone(),
        };
        self.recorder.meta("probe_scope", self.probe_scope(&cfg));
        let line = format!("the probes read {}", self.probed_netns(&cfg));
        self.log(&line);
        let tx = self.tx.clone();
        let sink = Box::new(move |p| tx.send(Input::Probe(Box::new(p))).is_ok());
        match self.rt.probes.start(cfg, sink) {
            Ok(h) => {
                self.probe = Some(h);
                self.core.set_probes_on(true);
            }
            Err(e) => {
                let line = format!("probes could not start: {e:#}");
                self.log(&line);
                self.core.notice(line);
            }
        }
    }

    /// Applies a knob change and carries out its effects: applied (what changed) or refused
    /// (why; every knob kept its value).
    pub fn apply(&mut self, cmd: Command) -> Reply {
        // The stretch a change may close holds every report that came before it.
        self.pump_messages();
        let done = self.fold(Input::Command(cmd));
        if let Some(e) = &done.error {
            self.log(&format!("{e:#}"));
        }
        done.reply
            .expect("the core answers every command once its effects are carried out")
    }

    /// Folds pending messages, watches the children, plays steps; at each sample interval
    /// appends a row; in the TUI judges the thresholds live. Never blocks. The one pump of
    /// both drivers (headless and TUI): a signal is noted (`note_interrupted`), not an error.
    pub fn pump(&mut self) -> anyhow::Result<()> {
        self.pump_messages();
        self.log_router_said();
        self.check_children();
        let now = self.elapsed();
        if self.core.row_due(now) {
            if let Some(net) = &self.net {
                if let Some(stats) = net.router_stats() {
                    let late_life = net.router_late_life();
                    let stats = Box::new(stats);
                    self.fold_at(Input::Router { stats, late_life }, now)
                        .result()?;
                }
            }
        }
        self.fold_at(Input::Tick, now).result()?;
        if self.opts.interrupted.load(Ordering::Relaxed) {
            self.note_interrupted();
        }
        if self.core.in_session() {
            self.live_verdicts(now);
        }
        if let Some(p) = &mut self.publisher {
            let st = self.core.state();
            p.tick(&st.store, &st.latency);
        }
        Ok(())
    }

    /// A signal asked the run to stop: the state says so (the drivers stop pumping, exit 130)
    /// and so does the run folder. Once; a second call changes nothing.
    pub fn note_interrupted(&mut self) {
        if self.core.state().interrupted {
            return;
        }
        self.fold_msg(Input::Interrupted);
        self.recorder.meta("interrupted", true.into());
    }

    /// Interactive use: a measurement window per stretch of settings, ended by the duration.
    /// A sweep's points play as steps (their labels as captions) and the session lasts as
    /// long as the sweep; a sweep the TUI cannot play is said to be for `synlab run`.
    pub fn tui_mode(&mut self) {
        let mut duration = self.scenario.duration.secs();
        if self.scenario.sweep.is_some() {
            match super::sweep::sweep_cues(&self.scenario) {
                Ok((points, total)) => {
                    let n = points.len();
                    let mut cues: Vec<super::core::Cue> = self
                        .scenario
                        .steps
                        .iter()
                        .cloned()
                        .map(|s| super::core::Cue::Step(Box::new(s)))
                        .collect();
                    cues.extend(points);
                    self.core.set_cues(cues);
                    duration = total;
                    self.log(&format!(
                        "the sweep plays as {n} steps of the session ({total:.0} s); n jumps to the next point"
                    ));
                }
                Err(why) => {
                    let why = why.to_string();
                    self.log(&why);
                    self.core.say(&why);
                }
            }
        }
        self.core.set_deadline(duration);
        self.begin_point();
    }

    /// Keeps only the last `secs` seconds of the time series in memory (headless runs).
    pub fn keep_series(&mut self, secs: f64) {
        self.core.keep_series(secs);
    }

    /// The lab's state (the core's; the controller only reads it).
    pub fn state(&self) -> &LabState {
        self.core.state()
    }

    /// The lab's core, to read.
    pub fn core(&self) -> &LabCore {
        &self.core
    }

    /// Who died and how, when a child the run depends on has exited.
    pub fn child_died(&self) -> Option<crate::model::death::Death> {
        self.core.child_died()
    }

    /// The scenario as read.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The scenario's thresholds and gate, as parsed when the run started.
    pub fn gate(&self) -> &crate::report::thresholds::Gate {
        &self.gate
    }

    pub fn folder_dir(&self) -> Option<&Path> {
        self.recorder.dir()
    }

    pub fn mode(&self) -> Mode {
        self.core.state().knobs.mode
    }

    /// The network lab's run id, when it is up.
    pub fn lab_run_id(&self) -> Option<&str> {
        self.net.as_ref().map(|n| n.layout().run_id.as_str())
    }

    /// The prefix of the lab's namespaces, when it is up.
    pub fn lab_netns_prefix(&self) -> Option<String> {
        self.net.as_ref().map(|n| n.netns_prefix())
    }

    /// The first client path's namespace (where the load runs from), when the lab is up.
    pub fn first_client_netns(&self) -> Option<&str> {
        let net = self.net.as_ref()?;
        net.layout().paths.first().map(|p| p.netns.as_str())
    }

    /// The delay router's stats over the lab's life, when the lab is up.
    pub fn router_view(&self) -> Option<crate::net::lab::RouterView> {
        self.net.as_ref().map(|n| n.router_view())
    }
}

impl super::control::LabControl for Controller {
    fn state(&self) -> &LabState {
        self.core.state()
    }
    fn pump(&mut self) -> anyhow::Result<()> {
        Controller::pump(self)
    }
    fn command(&mut self, cmd: Command) -> Reply {
        self.apply(cmd)
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
    fn toggle_kernel_reasons(&mut self) -> Result<bool, String> {
        if self.probe.is_none() {
            return Err("the kernel's reasons: no probes run on this lab".into());
        }
        let on = self.kernel_reasons.toggle();
        let line = format!(
            "the kernel's own reasons: counting {} (Y)",
            if on { "on from the next sample" } else { "off" }
        );
        self.log(&line);
        Ok(on)
    }
    fn terminal_gone(&mut self) {
        if self.core.state().interrupted {
            return;
        }
        self.fold_msg(Input::TerminalGone);
        self.recorder.meta("interrupted", true.into());
    }
    fn stop(&mut self) -> anyhow::Result<()> {
        self.finish_interactive()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if !self.workers.is_empty() || self.server.is_some() || self.net.is_some() {
            // An early exit: its own error is already on the way out.
            if let Err(e) = self.shutdown() {
                eprintln!("synlab: {e:#}");
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// This namespace's `net.ipv4.tcp_syn_linear_timeouts`; 0 (exponential backoff) on a kernel
/// without it (before 6.6).
pub(crate) fn syn_linear_timeouts() -> u32 {
    crate::sys::sysctl::read("net/ipv4/tcp_syn_linear_timeouts")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
