//! Scenario steps at their times, marks, and the TUI's jump to the next step.

use super::commands::Origin;
use super::{Effect, LabCore};
use crate::lab::knobs::Command;
use crate::metrics::store::EventKind;
use crate::scenario::Step;

impl LabCore {
    /// Plays every step whose time has come by `now_s`.
    pub(super) fn play_steps(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        while self.next_step < self.steps.len() && self.steps[self.next_step].at.secs() <= now_s {
            self.run_step(self.next_step, now_s, fx);
            self.next_step += 1;
        }
    }

    fn run_step(&mut self, i: usize, now_s: f64, fx: &mut Vec<Effect>) {
        let st = self.steps[i].clone();
        self.state.step = Some((i + 1, self.steps.len()));
        if let Some(c) = &st.caption {
            self.state.caption = Some(c.clone());
            self.state.store.event(now_s, EventKind::Caption, c.clone());
            fx.push(Effect::Log(format!("[{now_s:.1}s] caption: {c}")));
        }
        if let Some(m) = &st.mark {
            self.mark(m, now_s, fx);
        }
        for c in self.step_commands(&st) {
            self.propose(c, now_s, Origin::Step(i + 1), fx);
        }
    }

    /// The knob changes a step asks for, in the order they are applied.
    fn step_commands(&self, st: &Step) -> Vec<Command> {
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
        let shift = self.steps[i].at.secs() - now_s;
        if shift > 0.0 {
            for st in &mut self.steps[i..] {
                st.at = crate::model::units::Dur::from_secs(st.at.secs() - shift);
            }
        }
        self.run_step(i, now_s, fx);
        self.next_step = i + 1;
        Some(
            self.steps[i]
                .caption
                .clone()
                .unwrap_or_else(|| format!("step {} of {}", i + 1, self.steps.len())),
        )
    }

    pub(super) fn mark(&mut self, label: &str, now_s: f64, fx: &mut Vec<Effect>) {
        self.state.store.event(now_s, EventKind::Mark, label);
        fx.push(Effect::Log(format!("[{now_s:.1}s] mark: {label}")));
    }
}
