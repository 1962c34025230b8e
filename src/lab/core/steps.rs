//! A session's timed changes (a scenario's steps; in the TUI, a sweep's points too) at their
//! times, marks, and the TUI's jump to the next one.

use super::commands::Origin;
use super::{Effect, LabCore};
use crate::lab::knobs::Command;
use crate::metrics::store::EventKind;
use crate::model::load_knob::LoadKnob;
use crate::scenario::Step;

/// One timed change of a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Cue {
    /// A scenario's `[[step]]` (its commands are taken when it plays: a burst step keeps the
    /// shape the knobs have then). Boxed: a step is far larger than a point.
    Step(Box<Step>),
    /// A sweep point played in the TUI: at `at_s`, its label as caption and mark, and the
    /// commands that set it.
    Point {
        at_s: f64,
        label: String,
        commands: Vec<Command>,
    },
}

impl Cue {
    fn at(&self) -> f64 {
        match self {
            Cue::Step(s) => s.at.secs(),
            Cue::Point { at_s, .. } => *at_s,
        }
    }

    fn shift(&mut self, by: f64) {
        match self {
            Cue::Step(s) => s.at = crate::model::units::Dur::from_secs(s.at.secs() - by),
            Cue::Point { at_s, .. } => *at_s -= by,
        }
    }

    fn caption(&self) -> Option<&str> {
        match self {
            Cue::Step(s) => s.caption.as_deref(),
            Cue::Point { label, .. } => Some(label),
        }
    }
}

impl LabCore {
    /// The session's timed changes: `cues` in time order (a sweep's points among the steps).
    pub fn set_cues(&mut self, mut cues: Vec<Cue>) {
        cues.sort_by(|a, b| a.at().total_cmp(&b.at()));
        self.state.step = (!cues.is_empty()).then_some((0, cues.len()));
        self.steps = cues;
        self.next_step = 0;
    }

    /// Puts `text` in the caption bar (until the next step's caption).
    pub fn say(&mut self, text: &str) {
        self.state.caption = Some(text.to_string());
    }

    /// When the next step plays (None: no step left).
    pub(super) fn next_step_at(&self) -> Option<f64> {
        self.steps.get(self.next_step).map(Cue::at)
    }

    /// Plays every step whose time has come by `now_s`.
    pub(super) fn play_steps(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        while self.next_step_at().is_some_and(|at| at <= now_s) {
            self.run_step(self.next_step, now_s, fx);
            self.next_step += 1;
        }
    }

    fn run_step(&mut self, i: usize, now_s: f64, fx: &mut Vec<Effect>) {
        let cue = self.steps[i].clone();
        self.state.step = Some((i + 1, self.steps.len()));
        if let Some(c) = cue.caption() {
            self.state.caption = Some(c.to_string());
            self.state.store.event(now_s, EventKind::Caption, c);
            fx.push(Effect::Log(format!("[{now_s:.1}s] caption: {c}")));
        }
        // A new caption brings its own checks (none: the old caption's claims are gone).
        if let Cue::Step(st) = &cue {
            if st.caption.is_some() || !st.expect.is_empty() {
                self.state.expect = st.expect.clone();
            }
        } else {
            self.state.expect.clear();
        }
        let (mark, commands) = match &cue {
            Cue::Step(st) => (st.mark.clone(), self.step_commands(st)),
            Cue::Point {
                label, commands, ..
            } => (Some(label.clone()), commands.clone()),
        };
        if let Some(m) = &mark {
            self.mark(m, now_s, fx);
        }
        if let Some(n) = match &cue {
            Cue::Step(st) => st.syncookies,
            Cue::Point { .. } => None,
        } {
            fx.push(Effect::Syncookies(n));
        }
        for c in commands {
            self.propose(c, now_s, Origin::Step(i + 1), fx);
        }
    }

    /// The knob changes a step asks for, in the order they are applied.
    fn step_commands(&self, st: &Step) -> Vec<Command> {
        let mut cmds = Vec::new();
        if let Some(m) = st.mode {
            cmds.push(Command::SetMode(m));
        }
        // The burst's two are set together: one alone could break ratio x fraction <= 1.
        for (knob, v) in st.load_values() {
            if !matches!(knob, LoadKnob::BurstRatio | LoadKnob::BurstFraction) {
                cmds.push(Command::SetLoad(knob, v));
            }
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
        for value in st.path_values() {
            cmds.push(Command::SetPath {
                path: st.path.clone(),
                value,
            });
        }
        cmds
    }

    /// Jumps to the scenario's next step at `now_s`; later steps keep their spacing from it.
    /// Its caption (or "step i of n"), None when none is left.
    pub fn next_step(&mut self, now_s: f64, fx: &mut Vec<Effect>) -> Option<String> {
        if self.next_step >= self.steps.len() {
            return None;
        }
        let i = self.next_step;
        let shift = self.steps[i].at() - now_s;
        if shift > 0.0 {
            for st in &mut self.steps[i..] {
                st.shift(shift);
            }
            // The session's end moves with its steps.
            if let Some(d) = &mut self.deadline {
                *d -= shift;
            }
        }
        self.run_step(i, now_s, fx);
        self.next_step = i + 1;
        Some(
            self.steps[i]
                .caption()
                .map(str::to_string)
                .unwrap_or_else(|| format!("step {} of {}", i + 1, self.steps.len())),
        )
    }

    pub(super) fn mark(&mut self, label: &str, now_s: f64, fx: &mut Vec<Effect>) {
        self.state.store.event(now_s, EventKind::Mark, label);
        fx.push(Effect::Log(format!("[{now_s:.1}s] mark: {label}")));
    }
}
