//! Knob changes: proposed, then held or dropped. A change of the load or the burst holds at
//! once (the workers take what they are sent); a path change is two-phase: the core proposes
//! the new profiles (`Effect::Path`), the runtime answers whether the lab applied them
//! (`Input::PathApplied`), and only then do the knobs change, or the command is refused with
//! the lab's reason and every knob keeps its value. In a TUI session the stretch of settings a
//! change ends is summarised first.

use super::{Effect, LabCore, PathFailure};
use crate::lab::knobs::{
    apply_knobs, Change, Command, Effect as KnobEffect, Knobs, Refusal, Reply,
};
use crate::load::protocol::Control;

/// Where a command came from, which says where its outcome goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Origin {
    /// `Input::Command` (a key, a sweep, the runtime): answered by `Effect::Reply`.
    Command,
    /// Scenario step `i` (1-based): a refusal is that step's line in run.log.
    Step(usize),
    /// The core itself (a deadline, a death): no reply.
    Core,
}

/// A path change waiting for the runtime's answer: the knobs it would make, what it changes,
/// who asked.
struct Pending {
    knobs: Knobs,
    change: Change,
    origin: Origin,
}

/// The path change the runtime has not answered yet, and the commands that came after it (a
/// step that changes two knobs), proposed in order once it is answered.
#[derive(Default)]
pub(super) struct Proposals {
    pending: Option<Pending>,
    queued: std::collections::VecDeque<(Command, Origin)>,
    /// The last refusal run.log has: a key held at a limit is one line, not one per press.
    last_refused: Option<String>,
}

impl LabCore {
    /// A knob change at `now_s`: refused, held at once, or (paths) proposed to the runtime.
    pub(super) fn propose(
        &mut self,
        cmd: Command,
        now_s: f64,
        origin: Origin,
        fx: &mut Vec<Effect>,
    ) {
        if self.proposals.pending.is_some() {
            self.proposals.queued.push_back((cmd, origin));
            return;
        }
        // After a child's death the run is over: nothing resumes the load.
        let resumes = matches!(cmd, Command::Pause(false))
            || (cmd == Command::TogglePause && self.state.knobs.paused);
        if let Some(d) = self.child_died().filter(|_| resumes) {
            return self.settle(origin, Err(Refusal::RunStopped(d.to_string())), now_s, fx);
        }
        let mut next = self.state.knobs.clone();
        match apply_knobs(&mut next, cmd) {
            Err(why) => self.settle(origin, Err(why), now_s, fx),
            Ok((KnobEffect::Paths(idx), change)) => {
                let profiles = idx.iter().map(|&i| next.paths[i].clone()).collect();
                self.proposals.pending = Some(Pending {
                    knobs: next,
                    change,
                    origin,
                });
                fx.push(Effect::Path(profiles));
            }
            Ok((effect, change)) => self.hold(next, effect, change, origin, now_s, fx),
        }
    }

    /// The runtime's answer to the pending path change: held, or refused with the lab's reason.
    pub(super) fn path_applied(
        &mut self,
        r: Result<(), PathFailure>,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(p) = self.proposals.pending.take() else {
            fx.push(Effect::Log(format!(
                "[{now_s:.1}s] a path change was answered that nobody asked for ({r:?})"
            )));
            return;
        };
        match r {
            Ok(()) => {
                let effect = KnobEffect::Paths(Vec::new());
                self.hold(p.knobs, effect, p.change, p.origin, now_s, fx)
            }
            Err(PathFailure { path, why }) => {
                let why = why.to_string();
                self.settle(p.origin, Err(Refusal::NotApplied { path, why }), now_s, fx)
            }
        }
        while self.proposals.pending.is_none() {
            let Some((cmd, origin)) = self.proposals.queued.pop_front() else {
                break;
            };
            self.propose(cmd, now_s, origin, fx);
        }
    }

    /// The knobs become `next`: the stretch they end is closed first, the workers are told,
    /// run.log and the state say what changed.
    fn hold(
        &mut self,
        next: Knobs,
        effect: KnobEffect,
        change: Change,
        origin: Origin,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        // A TUI session is summarised per stretch of settings: the stretch that a change of the
        // load or of a path ends is closed first, under the settings it ran with.
        if effect != KnobEffect::None && self.interactive && !self.state.interrupted {
            self.end_stretch(now_s, fx);
        }
        // The load resumed after the scenario's end: the session goes on (free play).
        let resumed = self.state.knobs.paused && !next.paused;
        if resumed && self.state.finished && self.deadline.is_none() && self.interactive {
            self.state.finished = false;
            self.state.free_play = true;
            self.state.caption = Some(
                "free play: the scenario is over and the load runs until you quit (q); every key works"
                    .into(),
            );
            fx.push(Effect::Log(format!(
                "[{now_s:.1}s] the load resumed past the scenario's end (free play)"
            )));
        }
        self.state.knobs = next;
        if effect == KnobEffect::Load {
            self.push_load_knobs(fx);
        }
        fx.push(Effect::Log(format!("[{now_s:.1}s] {change}")));
        self.settle(origin, Ok(change), now_s, fx);
    }

    /// Records a command's outcome and sends it where its origin says.
    fn settle(
        &mut self,
        origin: Origin,
        outcome: Result<Change, Refusal>,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let reply = Reply::from(outcome);
        self.state.record(&reply);
        match &reply {
            // A key pressed at a floor changed nothing and says so on screen only.
            Reply::Refused(Refusal::Unchanged(_)) => {}
            Reply::Refused(why) if origin == Origin::Command => {
                let line = why.to_string();
                if self.proposals.last_refused.as_ref() != Some(&line) {
                    fx.push(Effect::Log(format!("[{now_s:.1}s] refused: {line}")));
                    self.proposals.last_refused = Some(line);
                }
            }
            Reply::Refused(_) => {}
            Reply::Applied(_) => self.proposals.last_refused = None,
        }
        match (origin, reply) {
            (Origin::Command, r) => fx.push(Effect::Reply(r)),
            (Origin::Step(i), Reply::Refused(why)) => {
                fx.push(Effect::Log(format!("step {i}: {why}")))
            }
            _ => {}
        }
    }

    /// The load knobs for every worker, split by its share: one message each.
    fn push_load_knobs(&self, fx: &mut Vec<Effect>) {
        let k = &self.state.knobs;
        let weights: Vec<f64> = self.slots.iter().map(|s| s.weight).collect();
        let sockets = split_count(k.sockets, &weights);
        let clients = split_count(k.clients, &weights);
        for (worker, slot) in self.slots.iter().enumerate() {
            let share = k.worker_share(slot.weight, sockets[worker], clients[worker]);
            let msgs = vec![Control::Load(share)];
            fx.push(Effect::Send { worker, msgs });
        }
    }
}

/// A count (D, N, a pool's connections) split over the workers by their weights: the shares
/// add up to `total` (largest remainders get the units rounding left over), and none gets 0,
/// so a total below the number of workers is raised to one each.
pub fn split_count(total: u32, weights: &[f64]) -> Vec<u32> {
    let sum: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| total as f64 * w / sum.max(f64::MIN_POSITIVE))
        .collect();
    let mut shares: Vec<u32> = exact.iter().map(|x| x.floor() as u32).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let frac = |i: usize| exact[i] - exact[i].floor();
        frac(b).total_cmp(&frac(a)).then(a.cmp(&b))
    });
    let given: u32 = shares.iter().sum();
    for &i in order.iter().take(total.saturating_sub(given) as usize) {
        shares[i] += 1;
    }
    shares.iter().map(|&s| s.max(1)).collect()
}

#[cfg(test)]
mod split_tests {
    use super::split_count;

    #[test]
    fn a_count_splits_into_shares_that_add_up_to_it() {
        assert_eq!(split_count(64, &[1.0 / 3.0; 3]), vec![22, 21, 21]);
        assert_eq!(split_count(10, &[0.7, 0.3]), vec![7, 3]);
        assert_eq!(split_count(100, &[0.5, 0.25, 0.25]), vec![50, 25, 25]);
        // Fewer than the workers: one each.
        assert_eq!(split_count(1, &[0.5, 0.5]), vec![1, 1]);
    }
}
