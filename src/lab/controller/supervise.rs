//! Watching the children the run depends on: a death (who and how) goes to the core, which
//! stops the load and fails the point.

use super::*;
use crate::model::death::Death;

impl Controller {
    /// What the delay router said besides its stats and answers (its last error before it
    /// died, a late answer) goes to run.log: its stderr is not the terminal's.
    pub(super) fn log_router_said(&mut self) {
        let said = self.net.as_ref().map(|n| n.take_router_said());
        for line in said.into_iter().flatten() {
            self.log(&format!("the delay router: {line}"));
        }
    }

    /// Watches every child the run depends on (workers, target, delay router). A death stops
    /// the load at once: the point fails, the TUI says who died and how.
    pub(super) fn check_children(&mut self) {
        let mut died = Vec::new();
        for w in &mut self.workers {
            if let Some(d) = w.death() {
                died.push(Death {
                    who: format!("load {}", d.who),
                    ..d
                });
            }
        }
        if let Some(s) = &mut self.server {
            if let Some(d) = s.death() {
                let who = if s.name() == "server" {
                    "the target server"
                } else {
                    "the target command"
                };
                died.push(Death {
                    who: who.into(),
                    ..d
                });
            }
        }
        if let Some(d) = self.net.as_mut().and_then(|n| n.router_death()) {
            died.push(d);
        }
        for d in died {
            self.fold_msg(Input::ChildDied(d));
        }
    }
}
