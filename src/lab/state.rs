//! The lab's state, owned by one place (the controller loop) and read by the TUI and the
//! headless writers: knob values, the time-series store, warnings, captions. Commands change
//! knobs here, purely, and return the effects (control messages) the controller must carry out,
//! so every knob and its limits are tested without processes.

use crate::load::protocol::{Burst, Mode};
use crate::metrics::store::EventKind;
use crate::metrics::store::Store;
use std::time::Duration;

/// Limits enforced on live changes (a visible message, never a panic).
pub const RATE_MIN: f64 = 1.0;
pub use crate::model::limits::RATE_MAX;
pub const SOCKETS_MAX: u32 = 200_000;
pub const CLIENTS_MAX: u32 = 20_000;
pub const BURST_RATIO_MAX: f64 = 20.0;
pub const RTT_MAX_MS: f64 = 2_000.0;
pub const LOSS_MAX_PCT: f64 = 50.0;
pub const BW_MIN_BPS: u64 = 64_000;
pub const BW_MAX_BPS: u64 = 100_000_000_000;

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

fn fmt_rate(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.0}/s"),
        None => "flat out".into(),
    }
}

/// Why a path key does nothing in this run.
fn no_paths(k: &Knobs) -> String {
    match &k.lab_off {
        Some(why) => format!("no network paths: the network lab is off ({why})"),
        None => "no network paths: this run is on loopback (add a [network] section)".into(),
    }
}

/// Pure knob arithmetic with limits.
pub fn apply_knobs(k: &mut Knobs, cmd: Command) -> Result<(Effect, String), String> {
    use Command::*;
    let path_index = |k: &Knobs, p: &Option<String>| -> Result<Vec<usize>, String> {
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
                .ok_or_else(|| format!("no network path named `{name}`")),
        }
    };
    match cmd {
        ScaleRate(f) => {
            let old = k.rate;
            let base = match old {
                Some(r) => r,
                None => {
                    return Err("the S-Client runs flat out (no rate set): change D with the socket keys or set a rate in the scenario".into())
                }
            };
            let new = (base * f).round();
            if !(RATE_MIN..=RATE_MAX).contains(&new) {
                return Err(format!(
                    "rate limit reached ({} to {} /s)",
                    RATE_MIN, RATE_MAX
                ));
            }
            k.rate = Some(new);
            Ok((
                Effect::Load,
                format!("rate {} -> {}", fmt_rate(old), fmt_rate(k.rate)),
            ))
        }
        SetRate(r) => {
            if let Some(v) = r {
                if !(RATE_MIN..=RATE_MAX).contains(&v) {
                    return Err(format!("rate {v} is outside {RATE_MIN}..{RATE_MAX} /s"));
                }
            }
            let old = k.rate;
            k.rate = r;
            Ok((
                Effect::Load,
                format!("rate {} -> {}", fmt_rate(old), fmt_rate(r)),
            ))
        }
        SetMode(m) => {
            if m == Mode::Open && k.rate.is_none() {
                return Err("open mode needs a rate; set one first".into());
            }
            k.mode = m;
            Ok((Effect::Load, format!("mode {m:?}").to_lowercase()))
        }
        CycleMode => {
            let next = match k.mode {
                Mode::Sclient if k.rate.is_some() => Mode::Open,
                Mode::Sclient | Mode::Open => Mode::Closed,
                Mode::Closed => Mode::Sclient,
            };
            apply_knobs(k, SetMode(next))
        }
        SetSockets(n) => {
            if n == 0 || n > SOCKETS_MAX {
                return Err(format!("D must be 1..{SOCKETS_MAX}"));
            }
            k.sockets = n;
            Ok((Effect::Load, format!("D = {n}")))
        }
        SetClients(n) => {
            if n == 0 || n > CLIENTS_MAX {
                return Err(format!("clients must be 1..{CLIENTS_MAX}"));
            }
            k.clients = n;
            Ok((Effect::Load, format!("clients = {n}")))
        }
        BurstRatioBy(d) => {
            let (r, f) = (k.burst.ratio + d, k.burst.fraction);
            apply_knobs(
                k,
                SetBurst {
                    ratio: r,
                    fraction: f,
                },
            )
        }
        BurstFractionBy(d) => {
            let (r, f) = (k.burst.ratio, k.burst.fraction + d / 100.0);
            apply_knobs(
                k,
                SetBurst {
                    ratio: r,
                    fraction: f,
                },
            )
        }
        SetBurst { ratio, fraction } => {
            if !(1.0..=BURST_RATIO_MAX).contains(&ratio) {
                return Err(format!("burst ratio must be 1..{BURST_RATIO_MAX}"));
            }
            if !(0.009..=1.0).contains(&fraction) {
                return Err("time at peak must be 1%..100%".into());
            }
            if ratio * fraction > 1.0 + 1e-9 {
                return Err(format!(
                    "ratio {ratio:.1} x {:.0}% at peak > 100%: lower one of them",
                    fraction * 100.0
                ));
            }
            k.burst.ratio = (ratio * 10.0).round() / 10.0;
            k.burst.fraction = (fraction * 1000.0).round() / 1000.0;
            Ok((
                if k.burst_on {
                    Effect::Load
                } else {
                    Effect::None
                },
                format!(
                    "burst {:.1}x at {:.0}% of {}s{}",
                    k.burst.ratio,
                    k.burst.fraction * 100.0,
                    k.burst.period_s,
                    if k.burst_on { "" } else { " (off)" }
                ),
            ))
        }
        BurstOn(on) => {
            if on && k.rate.is_none() {
                return Err("bursts modulate a rate; set a rate first".into());
            }
            k.burst_on = on;
            Ok((
                Effect::Load,
                format!("bursts {}", if on { "on" } else { "off" }),
            ))
        }
        ToggleBurst => {
            let on = !k.burst_on;
            apply_knobs(k, BurstOn(on))
        }
        RttBy(d) => {
            let i = *path_index(k, &None)?.get(k.selected_path).unwrap_or(&0);
            let name = k.paths[i].name.clone();
            let v = k.paths[i].rtt_ms + d;
            apply_knobs(
                k,
                SetRtt {
                    path: Some(name),
                    rtt_ms: v,
                },
            )
        }
        SetRtt { path, rtt_ms } => {
            let idx = path_index(k, &path)?;
            if !(0.0..=RTT_MAX_MS).contains(&rtt_ms) {
                return Err(format!("RTT must be 0..{RTT_MAX_MS} ms"));
            }
            for &i in &idx {
                k.paths[i].rtt_ms = rtt_ms;
            }
            Ok((
                effect_of(&idx),
                format!("{} rtt = {rtt_ms:.0} ms", path_label(k, &idx)),
            ))
        }
        LossBy(d) => {
            let i = *path_index(k, &None)?.get(k.selected_path).unwrap_or(&0);
            let name = k.paths[i].name.clone();
            let v = ((k.paths[i].loss_pct + d) * 10.0).round() / 10.0;
            apply_knobs(
                k,
                SetLoss {
                    path: Some(name),
                    loss_pct: v,
                },
            )
        }
        SetLoss { path, loss_pct } => {
            let idx = path_index(k, &path)?;
            if !(0.0..=LOSS_MAX_PCT).contains(&loss_pct) {
                return Err(format!("loss must be 0..{LOSS_MAX_PCT}%"));
            }
            for &i in &idx {
                k.paths[i].loss_pct = loss_pct;
            }
            Ok((
                effect_of(&idx),
                format!("{} loss = {loss_pct:.1}%", path_label(k, &idx)),
            ))
        }
        ScaleBandwidth(f) => {
            let i = *path_index(k, &None)?.get(k.selected_path).unwrap_or(&0);
            let name = k.paths[i].name.clone();
            let new = match k.paths[i].bandwidth_bps {
                None if f < 1.0 => Some(100_000_000),
                None => return Err("bandwidth is already unlimited".into()),
                Some(b) => {
                    let v = (b as f64 * f).round() as u64;
                    if v > 10_000_000_000 {
                        None
                    } else {
                        Some(v)
                    }
                }
            };
            apply_knobs(
                k,
                SetBandwidth {
                    path: Some(name),
                    bps: new,
                },
            )
        }
        SetBandwidth { path, bps } => {
            let idx = path_index(k, &path)?;
            if let Some(b) = bps {
                if !(BW_MIN_BPS..=BW_MAX_BPS).contains(&b) {
                    return Err(format!(
                        "bandwidth must be {}kbit..{}gbit",
                        BW_MIN_BPS / 1000,
                        BW_MAX_BPS / 1_000_000_000
                    ));
                }
            }
            for &i in &idx {
                k.paths[i].bandwidth_bps = bps;
            }
            let shown = match bps {
                Some(b) => crate::model::units::Bandwidth(b).to_string(),
                None => "unlimited".into(),
            };
            Ok((
                effect_of(&idx),
                format!("{} bandwidth = {shown}", path_label(k, &idx)),
            ))
        }
        SelectNextPath => {
            if k.paths.is_empty() {
                return Err(no_paths(k));
            }
            k.selected_path = (k.selected_path + 1) % k.paths.len();
            Ok((
                Effect::None,
                format!("path {} selected", k.paths[k.selected_path].name),
            ))
        }
        Pause(p) => {
            k.paused = p;
            Ok((
                Effect::Load,
                if p {
                    "load paused".into()
                } else {
                    "load resumed".into()
                },
            ))
        }
        TogglePause => {
            let p = !k.paused;
            apply_knobs(k, Pause(p))
        }
    }
}

fn effect_of(idx: &[usize]) -> Effect {
    if idx.len() == 1 {
        Effect::Path(idx[0])
    } else {
        // Several paths: the controller re-sends every path (cheap).
        Effect::AllPaths
    }
}

fn path_label(k: &Knobs, idx: &[usize]) -> String {
    if idx.len() == 1 {
        format!("path {}:", k.paths[idx[0]].name)
    } else {
        "all paths:".into()
    }
}

#[cfg(test)]
pub(crate) fn test_knobs() -> Knobs {
    crate::ui::fixture::knobs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_scales_and_stops_at_limits() {
        let mut k = test_knobs();
        let (e, t) = apply_knobs(&mut k, Command::ScaleRate(2.0)).unwrap();
        assert_eq!((e, k.rate), (Effect::Load, Some(2000.0)));
        assert!(t.contains("1000/s -> 2000/s"), "{t}");
        k.rate = Some(RATE_MAX);
        assert!(apply_knobs(&mut k, Command::ScaleRate(2.0)).is_err());
        assert_eq!(k.rate, Some(RATE_MAX));
        k.rate = Some(1.0);
        assert!(apply_knobs(&mut k, Command::ScaleRate(0.4)).is_err());
    }

    #[test]
    fn burst_shape_is_kept_within_ratio_times_fraction_le_one() {
        let mut k = test_knobs();
        apply_knobs(&mut k, Command::BurstRatioBy(6.0)).unwrap(); // 10 x 10% = 1.0 ok
        assert_eq!(k.burst.ratio, 10.0);
        let e = apply_knobs(&mut k, Command::BurstRatioBy(1.0)).unwrap_err();
        assert!(e.contains("> 100%"), "{e}");
        assert_eq!(k.burst.ratio, 10.0);
        apply_knobs(&mut k, Command::BurstOn(true)).unwrap();
        assert!(k.burst_on);
    }

    #[test]
    fn a_path_key_without_paths_says_why_there_are_none() {
        let mut k = test_knobs();
        k.paths.clear();
        let e = apply_knobs(&mut k, Command::SelectNextPath).unwrap_err();
        assert!(e.contains("add a [network] section"), "{e}");
        k.lab_off = Some("user namespaces are switched off".into());
        let e = apply_knobs(&mut k, Command::SelectNextPath).unwrap_err();
        assert!(
            e.contains("the network lab is off (user namespaces are switched off)")
                && !e.contains("add a [network]"),
            "{e}"
        );
    }

    #[test]
    fn path_knobs_apply_to_the_selected_path() {
        let mut k = test_knobs();
        apply_knobs(&mut k, Command::SelectNextPath).unwrap();
        let (e, _) = apply_knobs(&mut k, Command::RttBy(10.0)).unwrap();
        assert_eq!(e, Effect::Path(1));
        assert_eq!(k.paths[1].rtt_ms, 110.0);
        apply_knobs(&mut k, Command::ScaleBandwidth(0.5)).unwrap();
        assert_eq!(k.paths[1].bandwidth_bps, Some(5_000_000));
        assert!(apply_knobs(&mut k, Command::LossBy(-1.0)).is_err());
        let (e, _) = apply_knobs(
            &mut k,
            Command::SetLoss {
                path: None,
                loss_pct: 2.0,
            },
        )
        .unwrap();
        assert_eq!(e, Effect::AllPaths);
    }

    #[test]
    fn network_keys_on_loopback_explain_themselves() {
        let mut k = test_knobs();
        k.paths.clear();
        let e = apply_knobs(&mut k, Command::RttBy(10.0)).unwrap_err();
        assert!(e.contains("loopback"), "{e}");
    }

    #[test]
    fn mode_cycles_through_all_three() {
        let mut k = test_knobs();
        k.mode = Mode::Sclient;
        apply_knobs(&mut k, Command::CycleMode).unwrap();
        assert_eq!(k.mode, Mode::Open);
        apply_knobs(&mut k, Command::CycleMode).unwrap();
        assert_eq!(k.mode, Mode::Closed);
        apply_knobs(&mut k, Command::CycleMode).unwrap();
        assert_eq!(k.mode, Mode::Sclient);
    }
}
