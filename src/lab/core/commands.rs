//! Knob changes: applied to the state, turned into control messages per worker and path
//! changes; in a TUI session the stretch of settings a change ends is summarised first.

use super::{Effect, LabCore};
use crate::lab::state::{apply_knobs, Command, Effect as KnobEffect};
use crate::load::protocol::Control;

impl LabCore {
    /// Applies a knob change at `now_s` and says what must be carried out. `step` (1-based)
    /// names the scenario step it comes from, if any. Ok(what changed) or Err(why refused).
    pub(super) fn apply(
        &mut self,
        cmd: Command,
        now_s: f64,
        step: Option<usize>,
        fx: &mut Vec<Effect>,
    ) -> Result<String, String> {
        // A TUI session is summarised per stretch of settings: the stretch that a change of the
        // load or of a path ends is closed first, under the settings it ran with.
        let changes = apply_knobs(&mut self.state.knobs.clone(), cmd.clone())
            .is_ok_and(|(e, _)| e != KnobEffect::None);
        if changes && self.deadline.is_some() && !self.state.finished {
            self.end_stretch(now_s, fx);
        }
        let (effect, text) = self.state.apply(cmd)?;
        let then_log = format!("[{now_s:.1}s] {text}");
        match effect {
            KnobEffect::Load => {
                self.push_load_knobs(fx);
                fx.push(Effect::Log(then_log));
            }
            KnobEffect::Path(i) => fx.push(Effect::Path {
                only: Some(i),
                then_log,
                step,
            }),
            KnobEffect::AllPaths => fx.push(Effect::Path {
                only: None,
                then_log,
                step,
            }),
            KnobEffect::None => fx.push(Effect::Log(then_log)),
        }
        Ok(text)
    }

    /// The load knobs for every worker, split by its share.
    fn push_load_knobs(&self, fx: &mut Vec<Effect>) {
        let k = &self.state.knobs;
        for (worker, slot) in self.slots.iter().enumerate() {
            let msgs = vec![
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
            ];
            fx.push(Effect::Send { worker, msgs });
        }
    }
}

/// A total (rate, D, N) scaled to one worker's weight; counts round up so none gets 0.
pub fn share_count(total: u32, weight: f64) -> u32 {
    ((total as f64 * weight).ceil() as u32).max(1)
}
