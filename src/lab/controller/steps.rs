//! Scenario steps at their times, marks, and the TUI's jump to the next step.

use super::*;
use crate::metrics::store::EventKind;

impl Controller {
    pub(super) fn play_steps(&mut self) {
        let t = self.elapsed();
        while self.next_step < self.steps.len() && self.steps[self.next_step].at.secs() <= t {
            self.run_step(self.next_step);
            self.next_step += 1;
        }
    }

    pub(super) fn run_step(&mut self, i: usize) {
        let st = self.steps[i].clone();
        self.state.step = Some((i + 1, self.steps.len()));
        let t = self.elapsed();
        if let Some(c) = &st.caption {
            self.state.caption = Some(c.clone());
            self.state.store.event(t, EventKind::Caption, c.clone());
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
                st.at = crate::model::units::Dur::from_secs(st.at.secs() - shift);
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

    pub fn mark(&mut self, label: &str) {
        let t = self.elapsed();
        self.state.store.event(t, EventKind::Mark, label);
        self.log(&format!("[{t:.1}s] mark: {label}"));
    }
}
