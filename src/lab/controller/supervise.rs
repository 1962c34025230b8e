//! Watching the children the run depends on: a death (who and how) goes to the core, which
//! stops the load and fails the point.

use super::*;

impl Controller {
    /// Watches every child the run depends on (workers, target, delay router). A death stops
    /// the load at once: the point fails, the TUI says who died and how.
    pub(super) fn check_children(&mut self) {
        let mut died = Vec::new();
        for w in &mut self.workers {
            if let Some(d) = w.death() {
                died.push(format!("load {d}"));
            }
        }
        if let Some(s) = &mut self.server {
            if let Some(st) = s.try_wait() {
                let who = if s.name == "server" {
                    "the target server"
                } else {
                    "the target command"
                };
                let how = crate::sys::process::describe_exit(&st);
                died.push(format!("{who} (pid {}) {how}", s.pid()));
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
