//! A sweep's points as knob changes: the commands that set each point's value (what `synlab
//! run` applies before a point's warm-up), the label a point goes by, and the sweep as the
//! TUI's cues (each point a step at its time). Pure: a scenario in, commands out.

use super::core::Cue;
use super::knobs::Command;
use crate::load::protocol::Mode;
use crate::model::LoadKnob;
use crate::model::{SweepParam, SweepValue};
use crate::scenario::points::{plan_points, Point};
use crate::scenario::Scenario;

/// The knob changes that set a sweep value (every parameter named: a new one is a compile
/// error here, not a sweep that silently changes nothing).
pub fn commands_for(param: SweepParam, v: SweepValue, mode: Mode) -> Vec<Command> {
    match (param, v) {
        (SweepParam::Load(_), SweepValue::Load(knob, v)) => vec![Command::SetLoad(knob, v)],
        (SweepParam::Concurrency, SweepValue::Count(n)) => {
            let knob = if mode == Mode::Closed {
                LoadKnob::Clients
            } else {
                LoadKnob::Sockets
            };
            vec![Command::SetLoad(knob, n as f64)]
        }
        (SweepParam::Burst, SweepValue::Burst { ratio, fraction }) => vec![
            Command::SetBurst { ratio, fraction },
            Command::BurstOn(ratio > 1.0),
        ],
        (SweepParam::Path(_), SweepValue::Path(value)) => {
            vec![Command::SetPath { path: None, value }]
        }
        // No knob: the sweep restarts the workers with the new count or request mix.
        (SweepParam::Workers | SweepParam::Workload | SweepParam::Http, _) => Vec::new(),
        // No knob: the controller changes the server or its kernel (`set_up_point`).
        (SweepParam::Steer | SweepParam::Syncookies | SweepParam::Backlog, _) => Vec::new(),
        // sweep_value gives each parameter its own kind of value.
        (p, v) => unreachable!("{} cannot take the value {v}", p.name()),
    }
}

/// "point 2/6: open load.rate = 2000", "point 7/15: load.burst = 4x@10%, load.rate = 400"
/// (", steer sender" for a `[sweep] steer` point; "run" without a sweep).
pub fn point_label(
    i: usize,
    n: usize,
    p: &Point,
    kind: Option<SweepParam>,
    curve_kind: Option<SweepParam>,
) -> String {
    let curve = curve_kind
        .zip(p.curve)
        .map(|(c, v)| format!("{c} = {v}, "))
        .unwrap_or_default();
    match (&p.mode, kind.zip(p.value)) {
        (m, Some((param, v))) => format!(
            "point {}/{n}: {}{curve}{param} = {v}{}",
            i + 1,
            m.map(|m| format!("{m:?} ").to_lowercase())
                .unwrap_or_default(),
            p.steer.map(|s| format!(", steer {s}")).unwrap_or_default()
        ),
        _ => "run".to_string(),
    }
}

/// Why the TUI cannot play a sweep (the line it says); `synlab run` can.
#[derive(Debug, thiserror::Error)]
pub enum NotPlayable {
    #[error("this scenario's sweep over {} restarts the workers at each point: it plays with `synlab run`; here its base settings run (keys work)", .0.name())]
    RestartsWorkers(SweepParam),
    #[error("this scenario's sweep over {0} changes the server's kernel between points: it plays with `synlab run`; here its base settings run (keys work)")]
    ChangesServer(String),
}

/// A sweep played in the TUI: each point a cue at its time (its label as caption, the commands
/// that set its mode and value; a pause for its cool-down), as `synlab run` would measure it
/// (the same points, labels and settings), and the sweep's length. Err(why) for a sweep the
/// TUI cannot play: one that restarts the workers for each point (`load.workers`,
/// `load.workload`).
pub fn sweep_cues(sc: &Scenario) -> Result<(Vec<Cue>, f64), NotPlayable> {
    let kind = sc.sweep.as_ref().and_then(|s| s.kind());
    let curve_kind = sc.sweep.as_ref().and_then(|s| s.curve_kind());
    for k in [curve_kind, kind].into_iter().flatten() {
        if matches!(
            k,
            SweepParam::Workers | SweepParam::Workload | SweepParam::Http
        ) {
            return Err(NotPlayable::RestartsWorkers(k));
        }
    }
    let points = plan_points(sc);
    // The server's kernel and backlog are set by the run between points, not by a knob.
    let server_side = match kind {
        Some(k @ (SweepParam::Steer | SweepParam::Syncookies | SweepParam::Backlog)) => {
            Some(k.name().to_string())
        }
        _ => points
            .iter()
            .any(|p| p.steer.is_some())
            .then(|| "steer".to_string()),
    };
    if let Some(k) = server_side {
        return Err(NotPlayable::ChangesServer(k));
    }
    let mut cues = Vec::new();
    let mut at = 0.0;
    let mut mode = sc.load.mode;
    for (i, p) in points.iter().enumerate() {
        let mut commands = Vec::new();
        if let Some(m) = p.mode {
            commands.push(Command::SetMode(m));
            mode = m;
        }
        for (k, v) in [curve_kind.zip(p.curve), kind.zip(p.value)]
            .into_iter()
            .flatten()
        {
            commands.extend(commands_for(k, v, mode));
        }
        // After a cool-down the load resumes only once the point is set up.
        if i > 0 && points[i - 1].cooldown > 0.0 {
            commands.push(Command::Pause(false));
        }
        let label = format!(
            "{} (warm-up {:.0} s, hold {:.0} s)",
            point_label(i, points.len(), p, kind, curve_kind),
            p.warmup,
            p.hold
        );
        cues.push(Cue::Point {
            at_s: at,
            label,
            commands,
        });
        at += p.warmup + p.hold;
        if p.cooldown > 0.0 {
            cues.push(Cue::Point {
                at_s: at,
                label: format!(
                    "point {}/{}: cool-down {:.0} s",
                    i + 1,
                    points.len(),
                    p.cooldown
                ),
                commands: vec![Command::Pause(true)],
            });
            at += p.cooldown;
        }
    }
    Ok((cues, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// issue 28: a sweep in the TUI plays its points as steps, each with the label `synlab
    /// run` gives it, its mode and value set, a pause for each cool-down; a sweep that
    /// restarts the workers is said to be for `run`.
    #[test]
    fn a_sweep_plays_in_the_tui_as_cues_with_the_points_labels() {
        let sc = crate::scenario::load(Path::new("scenarios/wan-delay.toml")).unwrap();
        let (cues, total) = sweep_cues(&sc).unwrap();
        let pts = plan_points(&sc);
        let want: f64 = pts.iter().map(|p| p.warmup + p.hold + p.cooldown).sum();
        assert!((total - want).abs() < 1e-9);
        let second = cues.iter().find(|c| {
            matches!(c, Cue::Point { label, .. } if label.starts_with("point 2/") && !label.contains("cool-down"))
        });
        let Some(Cue::Point {
            at_s,
            label,
            commands,
        }) = second
        else {
            panic!("{cues:?}")
        };
        assert!(label.starts_with("point 2/"), "{label}");
        assert!(label.contains("network.rtt = "), "{label}");
        assert!(*at_s > 0.0);
        // The point is set up before a cool-down's pause ends (none of its load in the old
        // settings).
        let set = commands
            .iter()
            .position(|c| matches!(c, Command::SetPath { path: None, .. }));
        assert!(set.is_some(), "{commands:?}");
        if let Some(resume) = commands.iter().position(|c| *c == Command::Pause(false)) {
            assert!(resume > set.unwrap(), "{commands:?}");
        }
        let sc = crate::scenario::load(Path::new("scenarios/simple-vs-sclient.toml")).unwrap();
        let (cues, _) = sweep_cues(&sc).unwrap();
        let modes: Vec<bool> = cues
            .iter()
            .filter(|c| !matches!(c, Cue::Point { label, .. } if label.contains("cool-down")))
            .map(|c| {
                matches!(c, Cue::Point { commands, .. }
                    if commands.iter().any(|c| matches!(c, Command::SetMode(_))))
            })
            .collect();
        assert!(modes.iter().all(|m| *m), "every point sets its mode");
        let mut sc = crate::scenario::default_scenario();
        sc.sweep = crate::scenario::load(Path::new("scenarios/client-check.toml"))
            .unwrap()
            .sweep;
        let why = sweep_cues(&sc).unwrap_err().to_string();
        assert!(why.contains("synlab run"), "{why}");
        // issue 26: steering on and off between points is the run's to set, not a knob's.
        let sc = crate::scenario::load(Path::new("scenarios/overload.toml")).unwrap();
        let why = sweep_cues(&sc).unwrap_err().to_string();
        assert!(why.contains("server's kernel"), "{why}");
    }
}
