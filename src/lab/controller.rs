//! The controller: starts the target and the workers for a scenario, folds their stats (one
//! event stream, one owner) into the `LabState`, plays timed steps, turns knob changes into
//! control messages, and streams rows into the run folder. The headless runner and the TUI both
//! drive it.

use super::client_agg::{ClientTotals, LoadShape};
use super::state::{Command, Effect, Knobs, LabState, PathKnobs, Warning};
use crate::load::protocol::{Burst, Control, MixEntry, Mode, StatsDelta, WorkerConfig};
use crate::model::{Counters, Totals};
use crate::report::run_folder::RunFolder;
use crate::scenario::{HttpVersion, Scenario, Step, TargetKind, Workload};
use crate::sys::process::{ChildProc, Spawn};
use crate::target::config::{FileSet, ServeConfig, ServerStats};
use anyhow::{bail, Context};
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages from the lab's producers to its one owner.
pub enum Msg {
    Worker(u32, Box<StatsDelta>),
    /// A line from a worker that is not a stats delta (should not happen; logged).
    WorkerText(u32, String),
    Server(ServerStats),
    /// The server's access log: cumulative counts since start, at this many seconds.
    AccessLog(f64, crate::probe::accesslog::StatusCounts),
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

/// Splits `n` workers over paths by share (each path with a share gets at least one).
fn split_workers(n: u32, shares: &[f64]) -> Vec<(usize, u32)> {
    let total: f64 = shares.iter().sum::<f64>().max(1e-9);
    shares
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, s)| (i, ((n as f64 * s / total).round() as u32).max(1)))
        .collect()
}

/// A total (rate, D, N) scaled to one worker's weight; counts round up so none gets 0.
fn share_count(total: u32, weight: f64) -> u32 {
    ((total as f64 * weight).ceil() as u32).max(1)
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
    /// `path_<name>_<column>`, made once per lab (the store keys columns by static names).
    columns: Vec<&'static str>,
    tick: ClientTotals,
    window: ClientTotals,
}

impl PathTotals {
    fn new(name: &str) -> Self {
        let columns = ClientTotals::default()
            .path_columns(1.0)
            .into_iter()
            .map(|(c, _)| &*Box::leak(format!("path_{name}_{c}").into_boxed_str()))
            .collect();
        PathTotals {
            name: name.to_string(),
            columns,
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
}

pub struct Controller {
    pub scenario: Scenario,
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
    probe_rx: Option<Receiver<crate::probe::ProbeSample>>,
    /// The newest probe sample not yet folded into a row.
    probe_latest: Option<crate::probe::ProbeSample>,
    /// The TUI's end of run (the scenario's duration); headless runs time themselves.
    deadline: Option<f64>,
    start: Instant,
    interval: Duration,
    next_tick: Instant,
    last_tick: Instant,
    tick: ClientTotals,
    /// Totals since `begin_point` (a sweep point's hold, or the whole run).
    point: Option<(f64, ClientTotals, Option<ServerStats>)>,
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

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

pub use crate::load::validate::is_lab_address;

/// The request mix for a scenario.
pub fn mix_of(sc: &Scenario) -> Vec<MixEntry> {
    let mut mix: Vec<MixEntry> = match sc.load.workload {
        Workload::Single => vec![MixEntry {
            class: "single".into(),
            path: "/bytes/1294".into(),
            weight: 1.0,
        }],
        Workload::Specweb96
        | Workload::Specweb96Class0
        | Workload::Specweb96Class1
        | Workload::Specweb96Class2
        | Workload::Specweb96Class3 => crate::target::fileset_paths(&FileSet::Specweb96)
            .into_iter()
            .filter(|(class, _, _)| {
                sc.load
                    .workload
                    .specweb96_class()
                    .is_none_or(|keep| keep == class)
            })
            .map(|(class, path, _)| {
                let w = crate::target::SPECWEB96_CLASS_WEIGHTS
                    .iter()
                    .find(|(c, _)| *c == class)
                    .map(|(_, w)| *w)
                    .unwrap_or(0.0);
                MixEntry {
                    class,
                    path,
                    weight: w / 9.0,
                }
            })
            .collect(),
        Workload::Custom => Vec::new(),
        w => crate::scenario::workloads::preset(w)
            .unwrap_or_default()
            .into_iter()
            .map(|m| MixEntry {
                class: m.class,
                path: m.path,
                weight: m.weight,
            })
            .collect(),
    };
    for m in &sc.load.mix {
        mix.push(MixEntry {
            class: if m.class.is_empty() {
                m.path.clone()
            } else {
                m.class.clone()
            },
            path: m.path.clone(),
            weight: m.weight,
        });
    }
    mix
}

/// Initial knobs from a scenario.
pub fn knobs_of(sc: &Scenario) -> Knobs {
    let b = sc.load.burst;
    Knobs {
        mode: sc.load.mode,
        rate: sc.load.rate.map(|r| r.0),
        sockets: sc.load.sockets,
        clients: sc.load.clients,
        timeout: sc.load.timeout.0,
        burst: Burst {
            ratio: b.map(|b| b.ratio).unwrap_or(4.0),
            fraction: b.map(|b| b.fraction.fraction()).unwrap_or(0.1),
            period_s: b.map(|b| b.period.secs()).unwrap_or(10.0),
        },
        burst_on: b.is_some_and(|b| b.enabled),
        paused: false,
        paths: Vec::<PathKnobs>::new(),
        selected_path: 0,
    }
}

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
            probe_rx: None,
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
        if let Some(missing) = crate::sys::privilege::Privileges::current().lab_missing() {
            if self.opts.network_fallback {
                let line = format!("network lab off, running on loopback: {missing}");
                self.log(&line);
                self.notices.push(line);
                self.state
                    .warn(Warning::NoRoot("loopback only, no WAN shaping".into()));
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
        let line = format!(
            "network lab {run_id} up: backend {}, server netns {}, {} path(s)",
            self.state.backend,
            net.server_netns,
            net.paths.len()
        );
        self.log(&line);
        self.paths = net.paths.iter().map(|p| PathTotals::new(&p.name)).collect();
        self.net = Some(net);
        Ok(())
    }

    fn start_target(&mut self) -> anyhow::Result<()> {
        let t = self.scenario.target.clone();
        let server_netns = self.net.as_ref().map(|n| n.server_netns.clone());
        let server_ip: IpAddr = match &self.net {
            Some(n) => IpAddr::V4(n.server_addr),
            None => IpAddr::from([127, 0, 0, 1]),
        };
        match t.kind {
            TargetKind::Builtin => {
                let port = match (t.port, &self.net) {
                    (0, None) => free_port()?,
                    // A fresh namespace has every port free.
                    (0, Some(_)) => 8080,
                    (p, _) => p,
                };
                let listen = SocketAddr::new(server_ip, port);
                let mut files = vec![FileSet::Specweb96];
                match t.files {
                    crate::scenario::FilesPreset::Specweb96 => {}
                    crate::scenario::FilesPreset::Pareto => files.push(FileSet::Pareto {
                        alpha: t.pareto_alpha,
                        min_bytes: t.pareto_min.0,
                        count: t.pareto_count,
                        seed: 1,
                    }),
                    crate::scenario::FilesPreset::Explicit => files.push(FileSet::Explicit {
                        sizes: t.sizes.iter().map(|b| b.0).collect(),
                    }),
                }
                let cfg = ServeConfig {
                    listen,
                    arch: t.arch,
                    workers: t.workers,
                    max_workers: t.max_workers,
                    backlog: t.backlog as i32,
                    service_time_us: t.service_time.0.as_micros() as u64,
                    service: t.service,
                    files,
                    keepalive: t.keepalive || self.scenario.load.http == HttpVersion::Http11,
                    stats_interval_ms: 100,
                    accept_batch: 1,
                    lingering_close: t.lingering_close,
                    linger_timeout_ms: t.linger_timeout.0.as_millis() as u64,
                };
                crate::target::validate(&cfg)?;
                let tx = self.tx.clone();
                let spawn = Spawn {
                    args: vec![
                        "serve".into(),
                        "--config-json".into(),
                        serde_json::to_string(&cfg)?,
                    ],
                    cpus: t.cpus.clone(),
                    netns: server_netns.clone(),
                    ..Default::default()
                };
                let child = ChildProc::spawn("server", &spawn, move |line| {
                    if let Ok(s) = serde_json::from_str::<ServerStats>(line) {
                        let _ = tx.send(Msg::Server(s));
                    }
                })?;
                self.server_pid = Some(child.pid());
                self.server = Some(child);
                self.target_addr = listen;
                self.state.target = format!(
                    "built-in {:?} server on {listen} ({} of {:?} per request, backlog {})",
                    t.arch, t.service_time, t.service, t.backlog
                )
                .to_lowercase();
            }
            TargetKind::Command => {
                let port = match (t.port, &self.net) {
                    (0, None) => free_port()?,
                    (0, Some(_)) => 8080,
                    (p, _) => p,
                };
                let cmdline = t.command.replace("{port}", &port.to_string());
                let spawn = Spawn {
                    program: Some("/bin/sh".into()),
                    args: vec!["-c".into(), format!("exec {cmdline}")],
                    cpus: t.cpus.clone(),
                    netns: server_netns.clone(),
                    output: self.target_log(),
                };
                let child = ChildProc::spawn("target command", &spawn, |_| {})?;
                self.server_pid = Some(child.pid());
                self.server = Some(child);
                self.target_addr = SocketAddr::new(server_ip, port);
                self.state.target = format!("`{cmdline}` on {}", self.target_addr);
            }
            TargetKind::Address => {
                self.target_addr = t.address.parse().context("target.address")?;
                self.state.target = format!("server at {}", self.target_addr);
            }
            kind => {
                let port = match (t.port, &self.net) {
                    (0, None) => free_port()?,
                    (0, Some(_)) => 8080,
                    (p, _) => p,
                };
                self.target_addr = SocketAddr::new(server_ip, port);
                let dir = self.folder.as_ref().map(|f| f.dir.join(kind.name()));
                let real =
                    super::real_server::RealServer::prepare(&self.scenario, self.target_addr, dir)?;
                let child = real.start(server_netns.clone(), t.cpus.clone())?;
                self.log(&format!("{}: {}", kind.name(), real.command));
                self.server_pid = Some(child.pid());
                self.server = Some(child);
                self.state.target = format!("{} on {}", kind.name(), self.target_addr);
                self.access.path = Some(real.access_log.clone());
                self.real = Some(real);
            }
        }
        if !t.access_log.is_empty() {
            self.access.path = Some(PathBuf::from(&t.access_log));
        }
        // Scenario validation refuses such an address already; this guards every other path.
        if !is_lab_address(self.target_addr.ip()) {
            bail!(
                "target {} is outside loopback and the lab's 198.18.0.0/15; synlab loads only its own host",
                self.target_addr
            );
        }
        let up = self.wait_for_target(Duration::from_secs(10));
        if let (Err(e), Some(real)) = (&up, &self.real) {
            bail!("{e:#}\n{}", real.where_to_look());
        }
        up?;
        if let (Some(real), Some(pid)) = (&self.real, self.server_pid) {
            self.server_pid = Some(real.main_pid(pid));
        }
        let line = format!("target: {}", self.state.target);
        self.log(&line);
        if let Some(path) = self.access.path.clone() {
            let tx = self.tx.clone();
            self.access.follower = Some(crate::probe::accesslog::Follower::spawn(
                &path,
                Duration::from_millis(100),
                move |t, c| {
                    let _ = tx.send(Msg::AccessLog(t, c));
                },
            )?);
            self.log(&format!("counting the access log {}", path.display()));
        }
        Ok(())
    }

    /// Where a target command's output goes: `target.log` in the run folder (None without
    /// one: then it shares our terminal).
    fn target_log(&self) -> Option<std::path::PathBuf> {
        self.folder.as_ref().map(|f| f.dir.join("target.log"))
    }

    /// Waits until the target accepts a connection; a clear error if it never does.
    fn wait_for_target(&mut self, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.server.as_mut() {
                if let Some(st) = s.try_wait() {
                    bail!(
                        "the target server exited during start-up ({st}); see its messages {}",
                        match self.target_log() {
                            Some(p) => format!("in {}", p.display()),
                            None => "above".into(),
                        }
                    );
                }
            }
            let addr = self.target_addr;
            let connect =
                move || TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok();
            let up = match self.net.as_ref().and_then(|n| n.paths.first()) {
                Some(p) => crate::sys::netns::in_netns(&p.netns, connect).unwrap_or(false),
                None => connect(),
            };
            if up {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the target at {} does not accept connections after {}s; is it running and listening there?",
                    self.target_addr,
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
        let (tx, rx) = unbounded();
        match crate::probe::spawn(cfg, tx) {
            Ok(h) => {
                self.probe = Some(h);
                self.probe_rx = Some(rx);
            }
            Err(e) => {
                let line = format!("probes could not start: {e:#}");
                self.log(&line);
                self.notices.push(line);
            }
        }
    }

    fn worker_config(&self, id: u32) -> WorkerConfig {
        let k = &self.state.knobs;
        let slot = &self.slots[id as usize];
        WorkerConfig {
            id,
            target: self.target_addr,
            bind_addrs: slot.bind_addrs.clone(),
            mode: k.mode,
            rate: k.rate.map(|r| r * slot.weight),
            arrivals: self.scenario.load.arrivals,
            sockets: share_count(k.sockets, slot.weight),
            clients: share_count(k.clients, slot.weight),
            think_s: self.scenario.load.think.secs(),
            timeout_s: k.timeout.as_secs_f64(),
            response_timeout_s: self.scenario.load.response_timeout.secs(),
            burst: k.burst_on.then_some(k.burst),
            mix: mix_of(&self.scenario),
            keepalive: self.scenario.load.http == HttpVersion::Http11,
            requests_per_conn: self.scenario.load.requests_per_conn,
            host_header: self.target_addr.to_string(),
            duration_s: self.max_run_secs(),
            stats_interval_ms: crate::load::protocol::REPORT_INTERVAL_MS,
            seed: 0x5eed + id as u64,
            paused: k.paused,
        }
    }

    /// Hard bound on the children's lifetime: the planned run plus a margin (the TUI's own
    /// runs are bounded by the scenario's duration too).
    fn max_run_secs(&self) -> f64 {
        let sweep = self.scenario.sweep.as_ref().map(|s| {
            let modes = s.modes.len().max(1) as f64;
            modes * s.values.len() as f64 * (s.warmup.secs() + s.hold.secs() + s.cooldown.secs())
        });
        sweep.unwrap_or(0.0).max(self.scenario.duration.secs()) + 60.0
    }

    /// Decides where each worker runs: spread over the lab's paths by share, or on loopback.
    fn plan_slots(&mut self) {
        self.slots = match &self.net {
            Some(net) => {
                let shares: Vec<f64> = net.paths.iter().map(|p| p.share).collect();
                let total: f64 = shares.iter().sum::<f64>().max(1e-9);
                split_workers(self.n_workers, &shares)
                    .into_iter()
                    .flat_map(|(i, n)| {
                        let p = &net.paths[i];
                        let slot = WorkerSlot {
                            path: Some(i),
                            weight: p.share / total / n as f64,
                            netns: Some(p.netns.clone()),
                            bind_addrs: p.addrs.iter().map(|a| IpAddr::V4(*a)).collect(),
                        };
                        std::iter::repeat_n(slot, n as usize)
                    })
                    .collect()
            }
            None => {
                let l = &self.scenario.load;
                let open_sockets = match l.mode {
                    Mode::Closed => l.clients,
                    _ => l.sockets,
                };
                let bind_addrs = loopback_sources(self.target_addr.ip(), open_sockets);
                (0..self.n_workers)
                    .map(|_| WorkerSlot {
                        path: None,
                        weight: 1.0 / self.n_workers.max(1) as f64,
                        netns: None,
                        bind_addrs: bind_addrs.clone(),
                    })
                    .collect()
            }
        };
    }

    fn start_workers(&mut self) -> anyhow::Result<()> {
        self.plan_slots();
        for id in 0..self.slots.len() as u32 {
            let cfg = self.worker_config(id);
            let tx = self.tx.clone();
            let spawn = Spawn {
                args: vec![
                    "worker".into(),
                    "--config-json".into(),
                    serde_json::to_string(&cfg)?,
                ],
                cpus: self.scenario.load.cpus.clone(),
                netns: self.slots[id as usize].netns.clone(),
                ..Default::default()
            };
            let child = ChildProc::spawn(&format!("worker {id}"), &spawn, move |line| {
                match serde_json::from_str::<StatsDelta>(line) {
                    Ok(d) => {
                        let _ = tx.send(Msg::Worker(id, Box::new(d)));
                    }
                    Err(_) => {
                        let _ = tx.send(Msg::WorkerText(id, line.to_string()));
                    }
                }
            })?;
            self.workers.push(child);
        }
        let n = self.slots.len();
        self.log(&format!("started {n} worker(s)"));
        Ok(())
    }

    /// Stops and restarts the workers (after a change of worker count).
    pub fn restart_workers(&mut self, n: u32) -> anyhow::Result<()> {
        for mut w in self.workers.drain(..) {
            w.stop(Duration::from_secs(2));
        }
        self.pump_messages();
        self.n_workers = n.max(1);
        self.start_workers()
    }

    fn send_all(&mut self, msg: &Control) {
        let line = serde_json::to_string(msg).expect("control messages serialize");
        for w in &mut self.workers {
            let _ = w.send_line(&line);
        }
    }

    /// Sends the load knobs to every worker.
    fn push_load_knobs(&mut self) {
        let k = self.state.knobs.clone();
        let lines: Vec<Vec<Control>> = self
            .slots
            .iter()
            .map(|slot| {
                vec![
                    Control::SetMode { mode: k.mode },
                    Control::SetSockets {
                        sockets: share_count(k.sockets, slot.weight),
                    },
                    Control::SetClients {
                        clients: share_count(k.clients, slot.weight),
                    },
                    Control::SetRate {
                        rate: k.rate.map(|r| r * slot.weight),
                    },
                    Control::SetBurst {
                        burst: k.burst_on.then_some(k.burst),
                    },
                    if k.paused {
                        Control::Pause
                    } else {
                        Control::Resume
                    },
                ]
            })
            .collect();
        for (w, msgs) in self.workers.iter_mut().zip(lines) {
            for m in msgs {
                let _ = w.send_line(&serde_json::to_string(&m).expect("serializes"));
            }
        }
    }

    /// Applies a knob change and carries out its effect.
    pub fn apply(&mut self, cmd: Command) -> Result<String, String> {
        let (effect, text) = self.state.apply(cmd)?;
        match effect {
            Effect::Load => self.push_load_knobs(),
            Effect::Path(i) => self.push_path_knobs(i)?,
            Effect::None => {}
        }
        let t = self.elapsed();
        self.log(&format!("[{t:.1}s] {text}"));
        Ok(text)
    }

    /// Sends path `i`'s knobs (usize::MAX: every path) to the shaping backend.
    fn push_path_knobs(&mut self, i: usize) -> Result<(), String> {
        let Some(net) = self.net.as_mut() else {
            return Err("no network lab in this run (add a [network] section)".into());
        };
        let paths = self.state.knobs.paths.clone();
        for (j, p) in paths.iter().enumerate() {
            if i != usize::MAX && i != j {
                continue;
            }
            let change = crate::net::spec::PathChange {
                rtt: Some(crate::scenario::units::Dur::from_secs(p.rtt_ms / 1000.0)),
                loss: Some(crate::scenario::units::Percent(p.loss_pct)),
                bandwidth: p.bandwidth_bps.map(crate::scenario::units::Bandwidth),
                unlimited: p.bandwidth_bps.is_none(),
                ..Default::default()
            };
            net.set_path(&p.name, &change)
                .map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }

    fn pump_messages(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            match m {
                Msg::Worker(_, d) => {
                    if let Some(n) = &d.notice {
                        if !self.notices.contains(n) {
                            self.notices.push(n.clone());
                            let line = format!("worker {}: {n}", d.worker);
                            self.log(&line);
                        }
                    }
                    if d.counts.addr_not_avail > 0 {
                        self.state.warn(Warning::PortsRunningOut);
                    }
                    if d.counts.out_of_fds > 0 {
                        self.state.warn(Warning::OutOfFds);
                    }
                    self.run.add(&d.counts);
                    self.tick.add(&d);
                    if let Some((_, p, _)) = &mut self.point {
                        p.add(&d);
                    }
                    let path = self.slots.get(d.worker as usize).and_then(|s| s.path);
                    if let Some(pt) = path.and_then(|i| self.paths.get_mut(i)) {
                        pt.tick.add(&d);
                        if self.point.is_some() {
                            pt.window.add(&d);
                        }
                    }
                }
                Msg::WorkerText(id, line) => self.log(&format!("worker {id}: {line}")),
                Msg::Server(s) => self.server_last = Some(s),
                // Its lines are the server's responses, for the same checks as the built-in's.
                Msg::AccessLog(t_s, c) => {
                    self.server_last = Some(ServerStats {
                        t_s,
                        responses: c.lines,
                        ..Default::default()
                    });
                    self.access.last = Some(c);
                }
            }
        }
        let samples: Vec<_> = match &self.probe_rx {
            Some(rx) => rx.try_iter().collect(),
            None => Vec::new(),
        };
        for p in samples {
            for n in &p.notes {
                if !self.notices.contains(n) {
                    self.notices.push(n.clone());
                    let line = format!("probe: {n}");
                    self.log(&line);
                }
            }
            if p.syn_source == crate::probe::SynSource::Estimated {
                self.state.warn(Warning::NoPcap);
            }
            self.probe_latest = Some(p);
        }
    }

    /// Watches every child the run depends on (workers, target, delay router). A death stops
    /// the load at once: the point fails, the TUI says who died and how.
    fn check_children(&mut self) {
        let mut died = Vec::new();
        for w in &mut self.workers {
            if let Some(d) = w.death() {
                died.push(format!("load {d}"));
            }
        }
        if let Some(s) = &mut self.server {
            if let Some(st) = s.try_wait() {
                let who = if s.name == "server" {
                    "the target server"
                } else {
                    "the target command"
                };
                let how = crate::sys::process::describe_exit(&st);
                died.push(format!("{who} (pid {}) {how}", s.pid()));
            }
        }
        if let Some(d) = self.net.as_mut().and_then(|n| n.router_death()) {
            died.push(d);
        }
        for d in died {
            let w = Warning::ChildDied(d.clone());
            if !self.state.warnings.contains(&w) {
                let t = self.elapsed();
                self.log(&format!("[{t:.1}s] {d}: the run stops"));
                if !self.notices.contains(&d) {
                    self.notices.push(d.clone());
                }
                self.state.warn(w);
                self.state.caption = Some(format!("{d}: run stopped (press q to quit)"));
                if !self.state.finished {
                    let _ = self.apply(Command::Pause(true));
                    self.state.finished = true;
                }
            }
        }
    }

    /// True when a child the run depends on has exited.
    pub fn child_died(&self) -> Option<String> {
        self.state.warnings.iter().find_map(|w| match w {
            Warning::ChildDied(d) => Some(d.clone()),
            _ => None,
        })
    }

    fn play_steps(&mut self) {
        let t = self.elapsed();
        while self.next_step < self.steps.len() && self.steps[self.next_step].at.secs() <= t {
            self.run_step(self.next_step);
            self.next_step += 1;
        }
    }

    fn run_step(&mut self, i: usize) {
        let st = self.steps[i].clone();
        self.state.step = Some((i + 1, self.steps.len()));
        let t = self.elapsed();
        if let Some(c) = &st.caption {
            self.state.caption = Some(c.clone());
            self.state.store.event(t, "caption", c.clone());
            self.log(&format!("[{t:.1}s] caption: {c}"));
        }
        if let Some(m) = &st.mark {
            self.mark(m);
        }
        let mut cmds = Vec::new();
        if let Some(m) = st.mode {
            cmds.push(Command::SetMode(m));
        }
        if let Some(r) = st.rate {
            cmds.push(Command::SetRate(Some(r.0)));
        }
        if let Some(n) = st.sockets {
            cmds.push(Command::SetSockets(n));
        }
        if let Some(n) = st.clients {
            cmds.push(Command::SetClients(n));
        }
        if st.burst_ratio.is_some() || st.burst_fraction.is_some() {
            let k = &self.state.knobs;
            cmds.push(Command::SetBurst {
                ratio: st.burst_ratio.unwrap_or(k.burst.ratio),
                fraction: st
                    .burst_fraction
                    .map(|f| f.fraction())
                    .unwrap_or(k.burst.fraction),
            });
        }
        if let Some(b) = st.burst {
            cmds.push(Command::BurstOn(b));
        }
        if let Some(p) = st.pause {
            cmds.push(Command::Pause(p));
        }
        if let Some(r) = st.rtt {
            cmds.push(Command::SetRtt {
                path: st.path.clone(),
                rtt_ms: r.secs() * 1000.0,
            });
        }
        if let Some(l) = st.loss {
            cmds.push(Command::SetLoss {
                path: st.path.clone(),
                loss_pct: l.0,
            });
        }
        if let Some(b) = st.bandwidth {
            cmds.push(Command::SetBandwidth {
                path: st.path.clone(),
                bps: Some(b.0),
            });
        }
        for c in cmds {
            if let Err(e) = self.apply(c) {
                self.log(&format!("step {}: {e}", i + 1));
            }
        }
    }

    pub fn mark(&mut self, label: &str) {
        let t = self.elapsed();
        self.state.store.event(t, "mark", label);
        self.log(&format!("[{t:.1}s] mark: {label}"));
    }

    /// Folds pending messages; at each sample interval appends a row. Never blocks.
    pub fn pump(&mut self) -> anyhow::Result<()> {
        self.pump_messages();
        self.check_children();
        self.play_steps();
        let now = Instant::now();
        // The probes sample on their own grid of the same interval, with a phase of their own:
        // a row waits (up to half an interval) for the sample of its interval, else rows whose
        // tick lands just before a sample would alternate between none and two.
        let probe_pending = self.probe_rx.is_some()
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
            self.state.finished = true;
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
        Ok(())
    }

    /// Interactive use: one measurement window over the whole run, ended by the duration.
    pub fn tui_mode(&mut self) {
        self.deadline = Some(self.scenario.duration.secs());
        self.begin_point();
    }

    /// Writes the store so far and a text screenshot into the run folder.
    pub fn write_snapshot(&mut self, screen: &str) -> anyhow::Result<PathBuf> {
        let dir = self
            .folder
            .as_ref()
            .map(|f| f.dir.clone())
            .unwrap_or_else(std::env::temp_dir);
        let t = self.elapsed();
        let base = dir.join(format!("snapshot-{t:07.1}s"));
        std::fs::write(base.with_extension("txt"), screen)?;
        let store = &self.state.store;
        let mut csv = format!("t_s,{}\n", store.names().join(","));
        for (i, t) in store.times().iter().enumerate() {
            csv.push_str(&format!("{t:.3}"));
            for n in store.names() {
                let v = store.col(n).map(|c| c[i]).unwrap_or(f64::NAN);
                csv.push(',');
                if !v.is_nan() {
                    csv.push_str(&format!("{v}"));
                }
            }
            csv.push('\n');
        }
        std::fs::write(base.with_extension("csv"), csv)?;
        self.mark("snapshot");
        Ok(base.with_extension("txt"))
    }

    /// Ends the TUI's run: the whole run as one summary row, then shutdown.
    pub fn finish_interactive(&mut self) -> anyhow::Result<()> {
        if let Some(window) = self.end_point() {
            let row = super::run::summary_row(self, 1, window);
            let gate = crate::report::thresholds::Gate::of(&self.scenario);
            if let Some(f) = &mut self.folder {
                f.thresholds = gate.judge_point(&row);
                f.summary.push(row);
                f.thresholds.extend(gate.judge_run(&f.summary));
                f.write_summary()?;
            }
        }
        self.shutdown();
        Ok(())
    }

    /// Jumps to the scenario's next step.
    pub fn skip_to_next_step(&mut self) -> Option<String> {
        if self.next_step >= self.steps.len() {
            return None;
        }
        let i = self.next_step;
        // Later steps keep their spacing from this one.
        let shift = self.steps[i].at.secs() - self.elapsed();
        if shift > 0.0 {
            for st in &mut self.steps[i..] {
                st.at = crate::scenario::units::Dur::from_secs(st.at.secs() - shift);
            }
        }
        self.run_step(i);
        self.next_step = i + 1;
        Some(
            self.steps[i]
                .caption
                .clone()
                .unwrap_or_else(|| format!("step {} of {}", i + 1, self.steps.len())),
        )
    }

    fn sample_row(&mut self, dt: f64) -> anyhow::Result<()> {
        let t = self.elapsed();
        self.state.elapsed_s = t;
        let mut cols = std::mem::take(&mut self.tick).columns(dt);
        let server_rate = match (&self.server_at_tick, &self.server_last) {
            (Some(a), Some(b)) if b.t_s > a.t_s => {
                Some((b.responses - a.responses) as f64 / (b.t_s - a.t_s))
            }
            _ => None,
        };
        if self.server_last.is_some() {
            self.server_at_tick = self.server_last.clone();
        }
        cols.push((super::columns::SERVER_RESPONSES, server_rate));
        for p in &mut self.paths {
            let tot = std::mem::take(&mut p.tick);
            cols.extend(
                p.columns
                    .iter()
                    .zip(tot.path_columns(dt))
                    .map(|(n, (_, v))| (*n, v)),
            );
        }
        self.router_columns(&mut cols);
        if let Some(p) = self.probe_latest.take() {
            cols.extend(p.columns());
            self.state.cpu_cores = p
                .per_cpu
                .iter()
                .flatten()
                .map(|c| {
                    [
                        c.user + c.nice,
                        c.system,
                        c.irq + c.softirq,
                        c.idle + c.iowait,
                    ]
                })
                .collect();
        }
        let load = LoadShape {
            mode: self.state.knobs.mode,
            timeout_s: self.state.knobs.timeout.as_secs_f64(),
        };
        if let Some(why) = self.point.as_ref().and_then(|p| p.1.client_bound(&load)) {
            self.state.warn(Warning::ClientBound(why));
        }
        self.state.store.push(t, &cols);
        self.rolling_crosscheck(t);
        if let Some(f) = &mut self.folder {
            let vals: Vec<(&str, f64)> = cols
                .iter()
                .map(|(n, v)| (*n, v.unwrap_or(f64::NAN)))
                .collect();
            f.row(t, &vals)?;
        }
        Ok(())
    }

    /// Every 5 s: pcap SYNs vs client attempts over the last 10 s (Webmonitor's validation); a
    /// disagreement over 2 % (more at low rates: `syn_check_tolerance_pct`) is a warning on
    /// screen and in run.log.
    fn rolling_crosscheck(&mut self, t: f64) {
        const WINDOW: f64 = 10.0;
        let rows = (5.0 / self.interval.as_secs_f64()).round() as usize;
        if !self.state.store.len().is_multiple_of(rows.max(1)) || t < WINDOW + 1.0 {
            return;
        }
        // A knob change inside the window makes the two sources' timing differences count.
        let from = t - WINDOW;
        if self
            .state
            .store
            .events
            .iter()
            .any(|e| e.kind == "change" && e.t_s >= from - 1.0)
        {
            return;
        }
        let store = &self.state.store;
        let (Some((a, _)), Some((s, _))) = (
            store.mean_max(super::columns::ATTEMPTS, from, t + 1e-9),
            store.mean_max(super::columns::SYN_IN, from, t + 1e-9),
        ) else {
            return;
        };
        if a < 20.0 || self.state.warnings.contains(&Warning::NoPcap) {
            return;
        }
        let tol = crate::report::run_folder::syn_check_tolerance_pct(
            a,
            WINDOW,
            self.interval.as_secs_f64(),
        );
        let check = crate::probe::crosscheck::compare("pcap SYNs", s, "client attempts", a, tol);
        self.state
            .warnings
            .retain(|w| !matches!(w, Warning::CrossCheck(_)));
        if check.disagrees {
            let line = format!(
                "SYN/s {s:.0} vs attempts/s {a:.0} ({:+.1}%)",
                check.diff_pct
            );
            self.log(&format!("[{t:.1}s] cross-check disagrees: {line}"));
            self.state.warn(Warning::CrossCheck(line));
        }
    }

    /// The delay router's figures as rates over the last sample (cumulative counters diffed).
    fn router_columns(&mut self, cols: &mut Vec<(&'static str, Option<f64>)>) {
        let Some(now) = self.net.as_ref().and_then(|n| n.router_stats()) else {
            return;
        };
        let sum = |s: &crate::net::router::RouterStats,
                   f: &dyn Fn(&crate::net::router::DirStats) -> u64| {
            s.paths.iter().map(|p| f(&p.up) + f(&p.down)).sum::<u64>()
        };
        let mut behind = 0;
        if let Some((_, prev)) = &self.router_last {
            let dt = (now.t_ms.saturating_sub(prev.t_ms)) as f64 / 1000.0;
            if dt > 0.0 {
                let rate = |f: &dyn Fn(&crate::net::router::DirStats) -> u64| {
                    Some(sum(&now, f).saturating_sub(sum(prev, f)) as f64 / dt)
                };
                cols.push(("router_frames_per_s", rate(&|d| d.relayed)));
                cols.push(("router_lost_per_s", rate(&|d| d.lost)));
                cols.push(("router_queue_drops_per_s", rate(&|d| d.queue_drops)));
                behind = now.ring_drops.saturating_sub(prev.ring_drops);
                cols.push(("router_ring_drops_per_s", Some(behind as f64 / dt)));
                cols.push((
                    "router_cpu_pct",
                    Some(now.cpu_us.saturating_sub(prev.cpu_us) as f64 / 1e4 / dt),
                ));
            }
        }
        cols.push(("router_queue", Some(sum(&now, &|d| d.queue) as f64)));
        self.router_last = Some((Instant::now(), now));
        if behind > 0 && !self.state.warnings.contains(&Warning::RouterBehind) {
            self.log(&format!(
                "[{:.1}s] the delay router fell behind: {behind} frames dropped at its ports \
                 (router CPU-bound; this loss is not the path's). Lower the rate or give the router a core.",
                self.elapsed()
            ));
            self.state.warn(Warning::RouterBehind);
        }
    }

    /// How many load workers run now.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// Starts counting a measurement window (a sweep point's hold).
    pub fn begin_point(&mut self) {
        self.pump_messages();
        for p in &mut self.paths {
            p.window = ClientTotals::default();
        }
        self.access.at_point = self.access.last;
        self.point = Some((
            self.elapsed(),
            ClientTotals::default(),
            self.server_last.clone(),
        ));
    }

    /// Ends the window and returns it: its start and end, the client totals, and the server's
    /// responses in it. The server's rate is taken between its own reports (every 100 ms), over
    /// the time they say passed, so it does not depend on where the window's edges fell.
    pub fn end_point(&mut self) -> Option<Window> {
        self.pump_messages();
        let (t0, client, s0) = self.point.take()?;
        let t1 = self.elapsed();
        self.access.point = self
            .access
            .last
            .map(|b| b.since(&self.access.at_point.unwrap_or_default()));
        let (server_rate, server_responses) = match (s0, &self.server_last) {
            (Some(a), Some(b)) if b.t_s > a.t_s => {
                let n = b.responses.saturating_sub(a.responses);
                (Some(n as f64 / (b.t_s - a.t_s)), Some(n))
            }
            _ => (None, None),
        };
        let paths = self
            .paths
            .iter_mut()
            .map(|p| (p.name.clone(), std::mem::take(&mut p.window)))
            .collect();
        Some(Window {
            t0,
            t1,
            client,
            paths,
            server_rate,
            server_responses,
        })
    }

    /// The end of the run: the workers start nothing new and finish what is in flight, bounded
    /// by the timeouts, so the run's totals hold every attempt's outcome (what is still open
    /// at the bound is counted in `in_flight_at_end`).
    fn drain_workers(&mut self) {
        if self.workers.is_empty() {
            return;
        }
        self.send_all(&Control::Drain);
        let bound =
            self.state.knobs.timeout.as_secs_f64() + self.scenario.load.response_timeout.secs();
        let deadline = Instant::now() + Duration::from_secs_f64(bound.min(MAX_DRAIN_S) + 0.2);
        while Instant::now() < deadline {
            self.pump_messages();
            if self.workers.iter_mut().all(|w| w.try_wait().is_some()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.pump_messages();
        let in_flight = self.run.in_flight_at_end;
        self.log(&format!(
            "drained: the workers finished what was in flight ({in_flight} still open at the bound)"
        ));
    }

    /// Stops the workers and the target, then writes the events file.
    pub fn shutdown(&mut self) {
        self.drain_workers();
        self.probe.take();
        self.send_all(&Control::Stop);
        let deadline = Instant::now() + Duration::from_secs(3);
        for w in &mut self.workers {
            let left = deadline.saturating_duration_since(Instant::now());
            w.stop(left);
        }
        self.pump_messages();
        self.workers.clear();
        if let Some(mut s) = self.server.take() {
            if self.real.is_some() {
                super::real_server::ask_to_stop(self.server_pid.unwrap_or(s.pid()));
            }
            s.stop(Duration::from_secs(2));
        }
        if let Some(mut f) = self.access.follower.take() {
            f.stop();
        }
        self.pump_messages();
        // Once per run (a second shutdown finds nothing new to count).
        if self.final_check.is_none() {
            // Webmonitor's validation (seed 002 Table 9): the server's own count against ours.
            if let Some(st) = &self.server_last {
                let (c, sv) = (self.run.responses, st.responses);
                let diff = if c > 0 {
                    (sv as f64 - c as f64) / c as f64 * 100.0
                } else {
                    0.0
                };
                self.final_check = Some((c, sv, diff));
                let line = format!(
                    "cross-check: client counted {c} responses, server {sv} ({diff:+.2}%){}",
                    if diff.abs() > 2.0 {
                        " DISAGREE (> 2%)"
                    } else {
                        ""
                    }
                );
                self.log(&line);
            }
        }
        if let Some(net) = self.net.take() {
            let line = match net.down() {
                Ok(()) => "network lab removed".to_string(),
                Err(e) => format!("network lab teardown: {e:#} (run `synlab net down`)"),
            };
            self.log(&line);
        }
        let events = self.state.store.events.clone();
        let check = self.final_check;
        let run = self.run;
        let store = &self.state.store;
        let syn_total = (store.last(super::columns::SYN_IN_ESTIMATED) == Some(0.0))
            .then(|| store.last(super::columns::SYN_IN_TOTAL))
            .flatten();
        let (backend, target) = (self.state.backend.clone(), self.state.target.clone());
        let notices = self.notices.clone();
        let access = self.access_summary();
        if let Some(f) = &mut self.folder {
            if let Some(a) = access {
                f.meta.insert("access_log".into(), a);
            }
            let _ = f.write_events(&events);
            f.meta.insert("backend".into(), backend.into());
            f.meta.insert("target".into(), target.into());
            f.meta.insert("notices".into(), notices.into());
            f.meta.insert(
                "machine".into(),
                crate::sys::machine::Machine::read().to_json(),
            );
            if let Some((c, sv, d)) = check {
                f.meta.insert(
                    "check_responses".into(),
                    serde_json::json!({"client": c, "server": sv, "diff_pct": d, "agree": d.abs() <= 2.0}),
                );
            }
            let mut totals = Totals::of(&run, run.in_flight_at_end);
            totals.server_responses = check.map(|(_, sv, _)| sv);
            totals.syn_in = syn_total.map(|v| v as u64);
            f.run_totals = Some(totals);
            let _ = f.write_summary();
            f.log("stopped; everything started by this run has exited");
        }
    }

    /// The access log's counts over the last point that ended (None: no access log).
    pub fn point_access_counts(&self) -> Option<crate::probe::accesslog::StatusCounts> {
        self.access.point
    }

    /// The access log's path and its counts over the run, for summary.json.
    fn access_summary(&self) -> Option<serde_json::Value> {
        let path = self.access.path.as_ref()?;
        let mut v = serde_json::json!({ "path": path.display().to_string() });
        if let Some(c) = self.access.last {
            v["run"] = serde_json::to_value(c).unwrap_or_default();
        }
        Some(v)
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
        Controller::pump(self)?;
        if self.opts.interrupted.load(Ordering::Relaxed) {
            bail!("interrupted by a signal");
        }
        Ok(())
    }
    fn command(&mut self, cmd: Command) -> Result<String, String> {
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

/// Source addresses for a load on IPv4 loopback: 127.0.0.1-4, as the lab gives each client
/// namespace several addresses. connect() hands out only half the ephemeral range (even ports)
/// before it searches the rest, and with one source address and thousands of sockets in
/// SYN-SENT that search took ~70 % of the generator's core (perf: __inet_hash_connect,
/// __inet_check_established); with four, each port serves four 4-tuples. Binding costs two
/// system calls per connection (~2 % of the core), so only loads that can hold more than
/// 1,000 sockets open at once get it.
fn loopback_sources(target: IpAddr, open_sockets: u32) -> Vec<IpAddr> {
    match target {
        IpAddr::V4(a) if a.is_loopback() && open_sockets > 1000 => (1..=4)
            .map(|i| IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, i)))
            .collect(),
        _ => Vec::new(),
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
        sc.load.workload = Workload::Specweb96;
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
