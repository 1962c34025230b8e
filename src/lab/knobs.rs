//! Knob arithmetic: a command changes the knobs within their limits, purely, and returns the
//! effect the controller must carry out and a line saying what changed (or why nothing did).
//! One function per knob; `apply_knobs` only dispatches, by family (load, burst, paths).

use super::state::{Command, Effect, Knobs, PathKnobs};
use crate::load::protocol::{Burst, Mode};
use crate::scenario::Scenario;

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

/// Ok(effect, what changed) or Err(why it was refused; the knobs are unchanged).
type Applied = Result<(Effect, String), String>;

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
        lab_off: None,
    }
}

/// Pure knob arithmetic with limits.
pub fn apply_knobs(k: &mut Knobs, cmd: Command) -> Applied {
    use Command::*;
    match cmd {
        // The load: rate, mode, concurrency, pause.
        ScaleRate(f) => scale_rate(k, f),
        SetRate(r) => set_rate(k, r),
        SetMode(m) => set_mode(k, m),
        CycleMode => set_mode(k, next_mode(k)),
        SetSockets(n) => set_sockets(k, n),
        SetClients(n) => set_clients(k, n),
        Pause(p) => pause(k, p),
        TogglePause => pause(k, !k.paused),
        // The burst shape and its switch.
        BurstRatioBy(d) => set_burst(k, k.burst.ratio + d, k.burst.fraction),
        BurstFractionBy(d) => set_burst(k, k.burst.ratio, k.burst.fraction + d / 100.0),
        SetBurst { ratio, fraction } => set_burst(k, ratio, fraction),
        BurstOn(on) => burst_on(k, on),
        ToggleBurst => burst_on(k, !k.burst_on),
        // The network paths: keys change the selected one, steps and sweeps name one or all.
        RttBy(d) => {
            let p = selected(k)?;
            let (name, v) = (p.name.clone(), p.rtt_ms + d);
            set_rtt(k, &Some(name), v)
        }
        SetRtt { path, rtt_ms } => set_rtt(k, &path, rtt_ms),
        LossBy(d) => {
            let p = selected(k)?;
            let (name, v) = (p.name.clone(), ((p.loss_pct + d) * 10.0).round() / 10.0);
            set_loss(k, &Some(name), v)
        }
        SetLoss { path, loss_pct } => set_loss(k, &path, loss_pct),
        ScaleBandwidth(f) => {
            let p = selected(k)?;
            let (name, v) = (p.name.clone(), scaled_bandwidth(p.bandwidth_bps, f)?);
            set_bandwidth(k, &Some(name), v)
        }
        SetBandwidth { path, bps } => set_bandwidth(k, &path, bps),
        SelectNextPath => select_next_path(k),
    }
}

fn fmt_rate(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.0}/s"),
        None => "flat out".into(),
    }
}

fn scale_rate(k: &mut Knobs, f: f64) -> Applied {
    let old = k.rate;
    let Some(base) = old else {
        return Err("the S-Client runs flat out (no rate set): change D with the socket keys or set a rate in the scenario".into());
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

fn set_rate(k: &mut Knobs, r: Option<f64>) -> Applied {
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

/// The mode after the current one: S-Client, open (with a rate), closed.
fn next_mode(k: &Knobs) -> Mode {
    match k.mode {
        Mode::Sclient if k.rate.is_some() => Mode::Open,
        Mode::Sclient | Mode::Open => Mode::Closed,
        Mode::Closed => Mode::Sclient,
    }
}

fn set_mode(k: &mut Knobs, m: Mode) -> Applied {
    if m == Mode::Open && k.rate.is_none() {
        return Err("open mode needs a rate; set one first".into());
    }
    k.mode = m;
    Ok((Effect::Load, format!("mode {m:?}").to_lowercase()))
}

fn set_sockets(k: &mut Knobs, n: u32) -> Applied {
    if n == 0 || n > SOCKETS_MAX {
        return Err(format!("D must be 1..{SOCKETS_MAX}"));
    }
    k.sockets = n;
    Ok((Effect::Load, format!("D = {n}")))
}

fn set_clients(k: &mut Knobs, n: u32) -> Applied {
    if n == 0 || n > CLIENTS_MAX {
        return Err(format!("clients must be 1..{CLIENTS_MAX}"));
    }
    k.clients = n;
    Ok((Effect::Load, format!("clients = {n}")))
}

fn pause(k: &mut Knobs, p: bool) -> Applied {
    k.paused = p;
    let text = if p { "load paused" } else { "load resumed" };
    Ok((Effect::Load, text.into()))
}

/// A new burst shape; sent to the workers only while bursts are on.
fn set_burst(k: &mut Knobs, ratio: f64, fraction: f64) -> Applied {
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
    let effect = if k.burst_on {
        Effect::Load
    } else {
        Effect::None
    };
    Ok((
        effect,
        format!(
            "burst {:.1}x at {:.0}% of {}s{}",
            k.burst.ratio,
            k.burst.fraction * 100.0,
            k.burst.period_s,
            if k.burst_on { "" } else { " (off)" }
        ),
    ))
}

fn burst_on(k: &mut Knobs, on: bool) -> Applied {
    if on && k.rate.is_none() {
        return Err("bursts modulate a rate; set a rate first".into());
    }
    k.burst_on = on;
    Ok((
        Effect::Load,
        format!("bursts {}", if on { "on" } else { "off" }),
    ))
}

/// Why a path key does nothing in this run.
fn no_paths(k: &Knobs) -> String {
    match &k.lab_off {
        Some(why) => format!("no network paths: the network lab is off ({why})"),
        None => "no network paths: this run is on loopback (add a [network] section)".into(),
    }
}

/// The path the keys change: the selected one.
fn selected(k: &Knobs) -> Result<&PathKnobs, String> {
    if k.paths.is_empty() {
        return Err(no_paths(k));
    }
    Ok(k.paths.get(k.selected_path).unwrap_or(&k.paths[0]))
}

/// The paths a change names: one by name, or all (None).
fn path_index(k: &Knobs, p: &Option<String>) -> Result<Vec<usize>, String> {
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
}

/// Sets a value on the paths `path` names once `valid` holds; `what` says the new value.
fn set_paths(
    k: &mut Knobs,
    path: &Option<String>,
    valid: Result<(), String>,
    set: impl Fn(&mut PathKnobs),
    what: &str,
) -> Applied {
    let idx = path_index(k, path)?;
    valid?;
    for &i in &idx {
        set(&mut k.paths[i]);
    }
    let (effect, label) = match idx[..] {
        [i] => (Effect::Path(i), format!("path {}:", k.paths[i].name)),
        // Several paths: the controller re-sends every path (cheap).
        _ => (Effect::AllPaths, "all paths:".to_string()),
    };
    Ok((effect, format!("{label} {what}")))
}

fn set_rtt(k: &mut Knobs, path: &Option<String>, rtt_ms: f64) -> Applied {
    let valid = if (0.0..=RTT_MAX_MS).contains(&rtt_ms) {
        Ok(())
    } else {
        Err(format!("RTT must be 0..{RTT_MAX_MS} ms"))
    };
    let what = format!("rtt = {rtt_ms:.0} ms");
    set_paths(k, path, valid, |p| p.rtt_ms = rtt_ms, &what)
}

fn set_loss(k: &mut Knobs, path: &Option<String>, loss_pct: f64) -> Applied {
    let valid = if (0.0..=LOSS_MAX_PCT).contains(&loss_pct) {
        Ok(())
    } else {
        Err(format!("loss must be 0..{LOSS_MAX_PCT}%"))
    };
    let what = format!("loss = {loss_pct:.1}%");
    set_paths(k, path, valid, |p| p.loss_pct = loss_pct, &what)
}

/// The bandwidth after scaling by `f`: from unlimited, down starts at 100 Mbit/s; up past
/// 10 Gbit/s is unlimited.
fn scaled_bandwidth(bps: Option<u64>, f: f64) -> Result<Option<u64>, String> {
    match bps {
        None if f < 1.0 => Ok(Some(100_000_000)),
        None => Err("bandwidth is already unlimited".into()),
        Some(b) => {
            let v = (b as f64 * f).round() as u64;
            Ok((v <= 10_000_000_000).then_some(v))
        }
    }
}

fn set_bandwidth(k: &mut Knobs, path: &Option<String>, bps: Option<u64>) -> Applied {
    let valid = match bps {
        Some(b) if !(BW_MIN_BPS..=BW_MAX_BPS).contains(&b) => Err(format!(
            "bandwidth must be {}kbit..{}gbit",
            BW_MIN_BPS / 1000,
            BW_MAX_BPS / 1_000_000_000
        )),
        _ => Ok(()),
    };
    let shown = match bps {
        Some(b) => crate::model::units::Bandwidth(b).to_string(),
        None => "unlimited".into(),
    };
    let what = format!("bandwidth = {shown}");
    set_paths(k, path, valid, |p| p.bandwidth_bps = bps, &what)
}

fn select_next_path(k: &mut Knobs) -> Applied {
    if k.paths.is_empty() {
        return Err(no_paths(k));
    }
    k.selected_path = (k.selected_path + 1) % k.paths.len();
    Ok((
        Effect::None,
        format!("path {} selected", k.paths[k.selected_path].name),
    ))
}

#[cfg(test)]
fn test_knobs() -> Knobs {
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
