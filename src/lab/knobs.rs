//! The knobs a person can turn, the commands that turn them, and their arithmetic: a command
//! changes the knobs within their limits, purely, and says what the core must carry out and
//! what changed (or, typed, why nothing did). One function per knob; `apply_knobs` only
//! dispatches, by family (load, burst, paths).

use crate::load::protocol::{Burst, LoadSettings, Mode};
use crate::model::knob::{PathKnob, PathStep, PathValue};
use crate::model::load_knob::{check_burst, LoadKnob, LoadKnobError, LoadStep};
use crate::net::spec::PathSpec;
use crate::scenario::Scenario;
use std::time::Duration;

// Limits: the load's knobs carry theirs (`model::load_knob`), the paths' theirs (`model::knob`).

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
    /// Each network path's profile: the one copy, which the network lab is put under.
    pub paths: Vec<PathSpec>,
    pub selected_path: usize,
    /// Why a scenario's [network] section has no paths in this run (the lab could not be
    /// built); None when the scenario has none.
    pub lab_off: Option<String>,
    /// Over TLS, the share of handshakes that resume a session (0-1); None: no TLS.
    pub resumed: Option<f64>,
    /// Over HTTP/2, the concurrent streams per connection (M); None: the load speaks HTTP/1.x.
    pub streams: Option<u32>,
    /// With keep-alive, the requests a connection carries; None: a connection per request
    /// (HTTP/1.0).
    pub requests_per_conn: Option<u32>,
}

impl Knobs {
    /// A worker's share of the load's knobs: the rate by its `weight`, D and N as split.
    pub fn worker_share(&self, weight: f64, sockets: u32, clients: u32) -> LoadSettings {
        LoadSettings {
            mode: self.mode,
            rate: self.rate.map(|r| r * weight),
            sockets,
            clients,
            timeout_s: self.timeout.as_secs_f64(),
            burst: self.burst_on.then_some(self.burst),
            paused: self.paused,
            resumed: self.resumed,
            streams: self.streams,
            requests_per_conn: self.requests_per_conn,
        }
    }

    /// A load knob's value now, or why this run has none to change (flat out: no rate; no
    /// TLS, HTTP/2 or keep-alive for the knobs that need them).
    pub fn load_value(&self, knob: LoadKnob) -> Result<f64, Refusal> {
        match knob {
            LoadKnob::Rate => self.rate.ok_or(Refusal::FlatOut),
            LoadKnob::Sockets => Ok(self.sockets as f64),
            LoadKnob::Clients => Ok(self.clients as f64),
            LoadKnob::BurstRatio => Ok(self.burst.ratio),
            LoadKnob::BurstFraction => Ok(self.burst.fraction),
            LoadKnob::Resumed => self.resumed.ok_or(Refusal::NoTls),
            LoadKnob::Streams => self.streams.map(f64::from).ok_or(Refusal::NoHttp2),
            LoadKnob::RequestsPerConn => self
                .requests_per_conn
                .map(f64::from)
                .ok_or(Refusal::NoKeepAlive),
        }
    }

    /// Whether the load of this run has the knob at all (the help shows its keys only then):
    /// a rate may be set later, TLS, HTTP/2 and keep-alive cannot.
    pub fn has(&self, knob: LoadKnob) -> bool {
        !matches!(
            self.load_value(knob),
            Err(Refusal::NoTls | Refusal::NoHttp2 | Refusal::NoKeepAlive)
        )
    }

    /// Sets a load knob checked by `set_load` (the burst's two go by `set_burst`).
    fn put_load(&mut self, knob: LoadKnob, v: f64) {
        match knob {
            LoadKnob::Rate => self.rate = Some(v),
            LoadKnob::Sockets => self.sockets = v as u32,
            LoadKnob::Clients => self.clients = v as u32,
            LoadKnob::Resumed => self.resumed = Some(v),
            LoadKnob::Streams => self.streams = Some(v as u32),
            LoadKnob::RequestsPerConn => self.requests_per_conn = Some(v as u32),
            LoadKnob::BurstRatio | LoadKnob::BurstFraction => unreachable!("set_burst"),
        }
    }
}

/// A change asked for by a key, a scenario step or a sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A load knob's value (a step, a sweep), within the knob's limits.
    SetLoad(LoadKnob, f64),
    /// A key's step of a load knob.
    StepLoad(LoadKnob, LoadStep),
    SetMode(Mode),
    CycleMode,
    /// Both halves of the burst shape at once (a step may change both: each alone could
    /// break ratio x fraction <= 1 on the way).
    SetBurst {
        ratio: f64,
        fraction: f64,
    },
    BurstOn(bool),
    ToggleBurst,
    /// A key's step of one knob of the selected path.
    StepPath(PathKnob, PathStep),
    /// A knob's value on the path named `path` (None: every path), from a step or a sweep.
    SetPath {
        path: Option<String>,
        value: PathValue,
    },
    SelectNextPath,
    Pause(bool),
    TogglePause,
}

/// What the core must do after a command changed the knobs.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Tell the workers (the core splits totals across workers).
    Load,
    /// Put these network paths (indices) under their new profiles; the change holds once the
    /// lab has applied it.
    Paths(Vec<usize>),
    /// Nothing to send (e.g. a path selection).
    None,
}

/// What a command changed, as a reply, the caption bar and run.log say it.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A load knob's new value (the burst's two say `Burst`); `from` None: the rate was flat out.
    Load {
        knob: LoadKnob,
        from: Option<f64>,
        to: f64,
    },
    /// The mode now, and the one a cycle skipped (open, when there is no rate to open with).
    Mode {
        to: Mode,
        skipped: Option<Mode>,
    },
    Paused(bool),
    /// The burst shape (and whether bursts are on).
    Burst(Burst, bool),
    Bursts(bool),
    /// A knob of the path named (None: of every path).
    Path {
        path: Option<String>,
        value: PathValue,
    },
    Selected(String),
}

fn mode_word(m: Mode) -> String {
    format!("{m:?}").to_lowercase()
}

/// Why a command that changes nothing is refused: what already holds.
fn unchanged(c: &Change) -> String {
    match c {
        Change::Load { knob, to, .. } => match knob {
            LoadKnob::Rate => format!("the rate is already {}", fmt_rate(Some(*to))),
            LoadKnob::Sockets => format!("D is already {to}"),
            LoadKnob::Clients => format!("there are already {to} clients"),
            LoadKnob::Resumed => format!("handshakes already resume at {:.0}%", to * 100.0),
            k => format!("the {} is already {}", k.label(), k.show(*to)),
        },
        Change::Mode { to, .. } => format!("the mode is already {}", mode_word(*to)),
        Change::Paused(true) => "the load is already paused".into(),
        Change::Paused(false) => "the load is already running".into(),
        Change::Burst(b, _) => format!(
            "the burst shape is already {:.1}x at {:.0}% of {}s",
            b.ratio,
            b.fraction * 100.0,
            b.period_s
        ),
        Change::Bursts(on) => format!("bursts are already {}", if *on { "on" } else { "off" }),
        Change::Path {
            path: Some(name),
            value,
        } => format!("path {name} already has {}", value.assignment()),
        Change::Path { path: None, value } => {
            format!("every path already has {}", value.assignment())
        }
        Change::Selected(name) => format!("{name} is the only network path"),
    }
}

fn fmt_rate(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.0}/s"),
        None => "flat out".into(),
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Load { knob, from, to } => match knob {
                LoadKnob::Rate => write!(f, "rate {} -> {}", fmt_rate(*from), fmt_rate(Some(*to))),
                LoadKnob::Sockets => write!(f, "D = {to}"),
                LoadKnob::Clients => write!(f, "clients = {to}"),
                LoadKnob::Resumed => write!(f, "resumed handshakes {:.0}%", to * 100.0),
                k => write!(f, "{} = {}", k.label(), k.show(*to)),
            },
            Change::Mode { to, skipped: None } => write!(f, "mode {}", mode_word(*to)),
            Change::Mode {
                to,
                skipped: Some(s),
            } => write!(
                f,
                "mode {} ({} skipped: it needs a rate, and this S-Client runs flat out)",
                mode_word(*to),
                mode_word(*s)
            ),
            Change::Paused(true) => write!(f, "load paused"),
            Change::Paused(false) => write!(f, "load resumed"),
            Change::Burst(b, on) => write!(
                f,
                "burst {:.1}x at {:.0}% of {}s{}",
                b.ratio,
                b.fraction * 100.0,
                b.period_s,
                if *on { "" } else { " (off)" }
            ),
            Change::Bursts(on) => write!(f, "bursts {}", if *on { "on" } else { "off" }),
            Change::Path {
                path: Some(name),
                value,
            } => write!(f, "path {name}: {}", value.assignment()),
            Change::Path { path: None, value } => write!(f, "all paths: {}", value.assignment()),
            Change::Selected(name) => write!(f, "path {name} selected"),
        }
    }
}

/// Why a command changed nothing: the line a person reads after "refused: ".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("the S-Client runs flat out (no rate set): change D with the socket keys or set a rate in the scenario")]
    FlatOut,
    /// The command would leave every knob as it is (a key pressed at a floor, a value set to
    /// what it already is): nothing happens, and nothing is recorded.
    #[error("{}", unchanged(.0))]
    Unchanged(Change),
    /// The run stopped because a child it depends on died: the load cannot resume.
    #[error("the run stopped ({0}); quit with q and start again")]
    RunStopped(String),
    #[error("open mode needs a rate; set one first")]
    OpenNeedsRate,
    /// A load knob's limits (the same a scenario's check applies).
    #[error(transparent)]
    Load(#[from] LoadKnobError),
    #[error("bursts modulate a rate; set a rate first")]
    BurstsNeedRate,
    #[error("no network paths: this run is on loopback (add a [network] section)")]
    Loopback,
    #[error("no network paths: the network lab is off ({0})")]
    LabOff(String),
    #[error("no network path named `{0}`")]
    NoPath(String),
    #[error("the load does not speak TLS (the target has no tls = true): no handshakes to resume")]
    NoTls,
    #[error("the load does not speak HTTP/2 (the scenario has no http = \"2\"): no streams per connection to change")]
    NoHttp2,
    #[error("the load does not keep connections alive (http = \"1.0\": a connection per request): set http = \"1.1\" in [load] to change the requests per connection")]
    NoKeepAlive,
    #[error(transparent)]
    Knob(#[from] crate::model::knob::KnobError),
    /// The network lab could not put a path under its new profile; every knob kept its value.
    #[error("path {path} unchanged: {why}")]
    NotApplied { path: String, why: String },
}

/// What became of a knob command, as the front ends show it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Applied: what changed ("rate 1000/s -> 2000/s").
    Applied(Change),
    /// Refused, knobs unchanged: why.
    Refused(Refusal),
}

impl Reply {
    pub fn is_refused(&self) -> bool {
        matches!(self, Reply::Refused(_))
    }

    /// As a result: what changed, or why nothing did.
    pub fn into_result(self) -> Result<Change, Refusal> {
        match self {
            Reply::Applied(c) => Ok(c),
            Reply::Refused(why) => Err(why),
        }
    }
}

/// The line to show: the change, or "refused: " and the reason.
impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Applied(c) => write!(f, "{c}"),
            Reply::Refused(why) => write!(f, "refused: {why}"),
        }
    }
}

impl From<Result<Change, Refusal>> for Reply {
    fn from(r: Result<Change, Refusal>) -> Self {
        match r {
            Ok(c) => Reply::Applied(c),
            Err(why) => Reply::Refused(why),
        }
    }
}

/// Ok(effect, what changed) or Err(why it was refused; the knobs are unchanged).
type Applied = Result<(Effect, Change), Refusal>;

/// Initial knobs from a scenario (the paths come when the network lab is up).
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
        paths: Vec::new(),
        selected_path: 0,
        lab_off: None,
        resumed: sc
            .target
            .tls
            .then(|| sc.load.tls.as_ref().map_or(0.0, |t| t.resumed)),
        streams: sc.load.streams_per_connection(),
        requests_per_conn: sc.uses_keepalive().then_some(sc.load.requests_per_conn),
    }
}

/// Pure knob arithmetic with limits. A command that would leave every knob as it was is
/// refused (`Refusal::Unchanged`), so it makes no event and no summary row.
pub fn apply_knobs(k: &mut Knobs, cmd: Command) -> Applied {
    let before = k.clone();
    let (effect, change) = dispatch(k, cmd)?;
    if *k == before {
        return Err(Refusal::Unchanged(change));
    }
    Ok((effect, change))
}

fn dispatch(k: &mut Knobs, cmd: Command) -> Applied {
    use Command::*;
    match cmd {
        // The load: rate, mode, concurrency, pause.
        SetLoad(knob, v) => set_load(k, knob, v),
        StepLoad(knob, step) => {
            let now = k.load_value(knob)?;
            set_load(k, knob, knob.stepped(now, step)?)
        }
        SetMode(m) => set_mode(k, m),
        CycleMode => {
            let (to, skipped) = next_mode(k);
            let (effect, _) = set_mode(k, to)?;
            Ok((effect, Change::Mode { to, skipped }))
        }
        Pause(p) => pause(k, p),
        TogglePause => pause(k, !k.paused),
        // The burst shape and its switch.
        SetBurst { ratio, fraction } => set_burst(k, ratio, fraction),
        BurstOn(on) => burst_on(k, on),
        ToggleBurst => burst_on(k, !k.burst_on),
        // The network paths: keys change the selected one, steps and sweeps name one or all.
        StepPath(knob, step) => {
            let p = selected(k)?;
            let (name, v) = (p.name.clone(), p.get(knob).stepped(step)?);
            set_path(k, &Some(name), v)
        }
        SetPath { path, value } => set_path(k, &path, value),
        SelectNextPath => select_next_path(k),
    }
}

/// A load knob's new value, within its limits (`LoadKnob::check`, the rule a scenario's check
/// applies too).
fn set_load(k: &mut Knobs, knob: LoadKnob, v: f64) -> Applied {
    let from = match knob {
        LoadKnob::BurstRatio => return set_burst(k, v, k.burst.fraction),
        LoadKnob::BurstFraction => return set_burst(k, k.burst.ratio, v),
        // A rate may be set from flat out.
        LoadKnob::Rate => k.rate,
        _ => Some(k.load_value(knob)?),
    };
    let to = knob.check(v)?;
    k.put_load(knob, to);
    Ok((Effect::Load, Change::Load { knob, from, to }))
}

/// The mode after the current one: S-Client, open (with a rate), closed; and open when it
/// was skipped for want of a rate.
fn next_mode(k: &Knobs) -> (Mode, Option<Mode>) {
    match k.mode {
        Mode::Sclient if k.rate.is_some() => (Mode::Open, None),
        Mode::Sclient => (Mode::Closed, Some(Mode::Open)),
        Mode::Open => (Mode::Closed, None),
        Mode::Closed => (Mode::Sclient, None),
    }
}

fn set_mode(k: &mut Knobs, m: Mode) -> Applied {
    if m == Mode::Open && k.rate.is_none() {
        return Err(Refusal::OpenNeedsRate);
    }
    k.mode = m;
    Ok((
        Effect::Load,
        Change::Mode {
            to: m,
            skipped: None,
        },
    ))
}

fn pause(k: &mut Knobs, p: bool) -> Applied {
    k.paused = p;
    Ok((Effect::Load, Change::Paused(p)))
}

/// A new burst shape; sent to the workers only while bursts are on.
fn set_burst(k: &mut Knobs, ratio: f64, fraction: f64) -> Applied {
    let (ratio, fraction) = check_burst(ratio, fraction)?;
    k.burst.ratio = (ratio * 10.0).round() / 10.0;
    k.burst.fraction = (fraction * 1000.0).round() / 1000.0;
    let effect = if k.burst_on {
        Effect::Load
    } else {
        Effect::None
    };
    Ok((effect, Change::Burst(k.burst, k.burst_on)))
}

fn burst_on(k: &mut Knobs, on: bool) -> Applied {
    if on && k.rate.is_none() {
        return Err(Refusal::BurstsNeedRate);
    }
    k.burst_on = on;
    Ok((Effect::Load, Change::Bursts(on)))
}

/// Why a path key does nothing in this run.
fn no_paths(k: &Knobs) -> Refusal {
    match &k.lab_off {
        Some(why) => Refusal::LabOff(why.clone()),
        None => Refusal::Loopback,
    }
}

/// The path the keys change: the selected one.
fn selected(k: &Knobs) -> Result<&PathSpec, Refusal> {
    if k.paths.is_empty() {
        return Err(no_paths(k));
    }
    Ok(k.paths.get(k.selected_path).unwrap_or(&k.paths[0]))
}

/// The paths a change names: one by name, or all (None).
fn path_index(k: &Knobs, p: &Option<String>) -> Result<Vec<usize>, Refusal> {
    if k.paths.is_empty() {
        return Err(no_paths(k));
    }
    match p {
        None => Ok((0..k.paths.len()).collect()),
        Some(name) => k
            .paths
            .iter()
            .position(|x| &x.name == name)
            .map(|i| vec![i])
            .ok_or_else(|| Refusal::NoPath(name.clone())),
    }
}

/// Sets a knob's value on the paths `path` names, within the knob's limits.
fn set_path(k: &mut Knobs, path: &Option<String>, value: PathValue) -> Applied {
    let idx = path_index(k, path)?;
    let value = value.checked()?;
    for &i in &idx {
        k.paths[i].set(value);
    }
    let path = match idx[..] {
        [i] => Some(k.paths[i].name.clone()),
        _ => None,
    };
    Ok((Effect::Paths(idx), Change::Path { path, value }))
}

fn select_next_path(k: &mut Knobs) -> Applied {
    if k.paths.is_empty() {
        return Err(no_paths(k));
    }
    k.selected_path = (k.selected_path + 1) % k.paths.len();
    Ok((
        Effect::None,
        Change::Selected(k.paths[k.selected_path].name.clone()),
    ))
}

// Here, not in knobs/tests.rs: tests/layering.rs reads a `#[cfg(test)]` item as test code only
// within its own file.
#[cfg(test)]
fn test_knobs() -> Knobs {
    crate::ui::fixture::knobs()
}

#[cfg(test)]
mod tests;
