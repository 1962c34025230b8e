//! The run's notices: what the workers, probes and runtime said once, for run.log, summary.json
//! and the screen. A worker's are typed and kept once per kind, whichever worker says it.

use super::{Effect, LabCore};
use crate::lab::state::Warning;
use crate::load::protocol::{StatsDelta, WorkerNotice};

impl LabCore {
    /// A worker report's notices: each kind new to the run logged, kept and shown.
    pub(super) fn fold_notices(&mut self, d: &StatsDelta, fx: &mut Vec<Effect>) {
        for n in &d.notices {
            if self.worker_notice_once(n) {
                fx.push(Effect::Log(format!("worker {}: {n}", d.worker)));
                // Ports and descriptors have live warnings of their own (raised and cleared
                // as the counts come and go).
                if !matches!(n, WorkerNotice::PortsExhausted | WorkerNotice::OutOfFds) {
                    self.state.warn(Warning::Worker(n.clone()));
                }
            }
        }
    }

    /// Keeps a notice for summary.json unless the run has it already; true when it is new.
    pub fn notice_once(&mut self, notice: &str) -> bool {
        let new = !self.notices.iter().any(|n| n == notice);
        if new {
            self.notices.push(notice.to_string());
        }
        new
    }

    /// Keeps a worker's notice unless one of its kind came already (from any worker): its
    /// line goes to summary.json's notices; true when it is new.
    pub fn worker_notice_once(&mut self, n: &WorkerNotice) -> bool {
        if self.worker_notices.iter().any(|k| k.kind() == n.kind()) {
            return false;
        }
        self.worker_notices.push(n.clone());
        self.notices.push(n.to_string());
        true
    }

    /// The workers' notices, one of each kind, in the order they came.
    pub fn worker_notices(&self) -> &[WorkerNotice] {
        &self.worker_notices
    }

    /// Keeps a notice for summary.json (even if the run has it).
    pub fn notice(&mut self, notice: String) {
        self.notices.push(notice);
    }

    /// The notices so far, for summary.json.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }
}
