//! The lab's state, owned by one place (the controller loop) and read by the TUI and the
//! headless writers: knob values, the time-series store, warnings, captions. Commands change
//! the knobs purely (`lab::knobs`) and return the effects (control messages) the controller
//! must carry out, so every knob and its limits are tested without processes.

use crate::load::protocol::{Burst, Mode};
use crate::metrics::store::EventKind;
use crate::metrics::store::Store;
use std::time::Duration;

pub use super::knobs::apply_knobs;

/// A network path's live knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct PathKnobs {
    pub name: String,
    pub rtt_ms: f64,
    pub loss_pct: f64,
    /// None = unlimited.
    pub bandwidth_bps: Option<u64>,
}

/// Every knob a person can turn, with its current value.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub mode: Mode,
    /// Total attempts/s over all workers; None = S-Client flat out.
    pub rate: Option<f64>,
    pub sockets: u32,
    pub clients: u32,
    pub timeout: Duration,
    /// The burst shape (kept while bursts are off so `b` can turn it back on).
    pub burst: Burst,
    pub burst_on: bool,
    pub paused: bool,
    pub paths: Vec<PathKnobs>,
    pub selected_path: usize,
    /// Why a scenario's [network] section has no paths in this run (the lab could not be
    /// built); None when the scenario has none.
    pub lab_off: Option<String>,
}

/// A change asked for by a key, a scenario step or a sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Multiply the rate (e.g. 1.1 fine up, 2.0 coarse up, 0.5 coarse down).
    ScaleRate(f64),
    SetRate(Option<f64>),
    SetMode(Mode),
    CycleMode,
    SetSockets(u32),
    SetClients(u32),
    /// Add to the burst ratio / fraction (percentage points).
    BurstRatioBy(f64),
    BurstFractionBy(f64),
    SetBurst {
        ratio: f64,
        fraction: f64,
    },
    BurstOn(bool),
    ToggleBurst,
    /// Add milliseconds to the selected path's RTT (or all paths with `all`).
    RttBy(f64),
    SetRtt {
        path: Option<String>,
        rtt_ms: f64,
    },
    LossBy(f64),
    SetLoss {
        path: Option<String>,
        loss_pct: f64,
    },
    /// Multiply the selected path's bandwidth (2.0 / 0.5); from unlimited, down starts at 100 Mbit/s.
    ScaleBandwidth(f64),
    SetBandwidth {
        path: Option<String>,
        bps: Option<u64>,
    },
    SelectNextPath,
    Pause(bool),
    TogglePause,
}

/// What the controller must do after a command changed the knobs.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Tell the workers (the controller splits totals across workers).
    Load,
    /// Reconfigure network path `index`.
    Path(usize),
    /// Reconfigure every network path.
    AllPaths,
    /// Nothing to send (e.g. a path selection).
    None,
}

/// What became of a knob command, as the front ends show it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Applied: what changed ("rate 1000/s -> 2000/s").
    Applied(String),
    /// Refused, knobs unchanged: why.
    Refused(String),
}

impl Reply {
    pub fn is_refused(&self) -> bool {
        matches!(self, Reply::Refused(_))
    }

    /// The line to show: the change, or "refused: " and the reason.
    pub fn line(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Reply::Applied(text) => text.into(),
            Reply::Refused(why) => format!("refused: {why}").into(),
        }
    }
}

impl From<Result<String, String>> for Reply {
    fn from(r: Result<String, String>) -> Self {
        match r {
            Ok(text) => Reply::Applied(text),
            Err(why) => Reply::Refused(why),
        }
    }
}

/// A warning shown in the status line and recorded in the results.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Warning {
    ClientBound(String),
    CrossCheck(String),
    NoPcap,
    /// The scenario's network lab could not be built (why, in short).
    NoLab(String),
    PortsRunningOut,
    OutOfFds,
    /// A child the run depends on died: who and how ("the delay router (pid 7) was killed by
    /// signal 9 (SIGKILL)").
    ChildDied(String),
    /// The delay router could not keep up: its receive rings overflowed (loss nobody asked for).
    RouterBehind,
    /// The router's departures were late past its goal (p99, microseconds).
    RouterLate(u64),
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::ClientBound(why) => write!(f, "CLIENT-BOUND: {why}"),
            Warning::CrossCheck(what) => write!(f, "cross-check: {what}"),
            Warning::NoPcap => write!(f, "no pcap: SYN/s estimated"),
            Warning::NoLab(what) => write!(f, "network lab off: {what}"),
            Warning::PortsRunningOut => write!(f, "ephemeral ports exhausted"),
            Warning::OutOfFds => write!(f, "out of file descriptors"),
            Warning::ChildDied(what) => write!(f, "{what}"),
            Warning::RouterBehind => write!(f, "delay router overloaded: frames dropped"),
            Warning::RouterLate(p99) => write!(
                f,
                "delay router late: p99 {p99} us (goal < {} us)",
                crate::net::router::LATE_GOAL_US
            ),
        }
    }
}

/// The whole state the front ends read.
#[derive(Debug, Clone)]
pub struct LabState {
    pub scenario_name: String,
    /// "built-in event server on 127.0.0.1:41234" etc.
    pub target: String,
    /// "loopback (no shaping)", "router", "netem"...
    pub backend: String,
    /// Where the network lab runs ("root", "rootless (user namespace)"); empty without one.
    pub lab: String,
    pub knobs: Knobs,
    pub store: Store,
    /// The scenario's thresholds judged on the session so far (TUI; empty without any).
    pub verdicts: Vec<crate::report::thresholds::Verdict>,
    /// Connect and total latency since the start, in fixed buckets (for `--metrics`).
    pub latency: Vec<(&'static str, crate::metrics::hist::Buckets)>,
    /// Seconds since the run started (of the latest sample).
    pub elapsed_s: f64,
    pub interval_s: f64,
    pub warnings: Vec<Warning>,
    /// The scenario's current caption (lessons).
    pub caption: Option<String>,
    /// The last change made or refused, for the caption bar ("rate 1000 -> 1100/s").
    pub last_action: Option<Reply>,
    /// Step i of n, if the scenario has steps.
    pub step: Option<(usize, usize)>,
    /// Per-core CPU of the latest sample: (user, system, irq+softirq, idle) %.
    pub cpu_cores: Vec<[f64; 4]>,
    pub finished: bool,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run; the drivers stop and exit 130.
    pub interrupted: bool,
}

impl LabState {
    pub fn new(scenario_name: &str, knobs: Knobs, interval_s: f64) -> Self {
        LabState {
            scenario_name: scenario_name.to_string(),
            target: String::new(),
            backend: "loopback (no shaping)".into(),
            lab: String::new(),
            knobs,
            store: Store::new(200_000),
            latency: Vec::new(),
            verdicts: Vec::new(),
            elapsed_s: 0.0,
            interval_s,
            warnings: Vec::new(),
            caption: None,
            last_action: None,
            step: None,
            cpu_cores: Vec::new(),
            finished: false,
            interrupted: false,
        }
    }

    /// Adds a warning once. A client-bound warning says why as of now: a newer reason replaces
    /// the older one instead of piling up a line per changed figure.
    pub fn warn(&mut self, w: Warning) {
        if let Warning::ClientBound(_) = w {
            if let Some(old) = self
                .warnings
                .iter_mut()
                .find(|o| matches!(o, Warning::ClientBound(_)))
            {
                *old = w;
                return;
            }
        }
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Applies a command to the knobs. Ok(effect, description) or Err(why it was refused).
    pub fn apply(&mut self, cmd: Command) -> Result<(Effect, String), String> {
        let r = apply_knobs(&mut self.knobs, cmd);
        match &r {
            Ok((_, text)) => {
                self.last_action = Some(Reply::Applied(text.clone()));
                let t = self.elapsed_s;
                self.store.event(t, EventKind::Change, text.clone());
            }
            Err(e) => self.last_action = Some(Reply::Refused(e.clone())),
        }
        r
    }
}
