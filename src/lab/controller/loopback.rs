//! Where a run without `[network]` has its loopback (issue 45 item 3), said in run.log and
//! on the status line, and the namespace the probes' counters are from.

use super::Controller;
use crate::lab::core::Input;
use crate::model::ProbedNetns;
use crate::net::loopback::Loopback;

/// The status line's and summary.json's words for a loopback of the run's own.
pub const OWN_LOOPBACK_LAB: &str = "rootless, own loopback (user+network namespace)";

impl Controller {
    /// Says where the loopback of a run without `[network]` is; a loopback of the run's own
    /// is a lab of its own on the status line (no WAN paths, counters unlabelled).
    pub(super) fn say_loopback(&mut self) {
        match crate::net::loopback::loopback() {
            Some(Loopback::Own(ns)) => {
                let line = format!(
                    "loopback of the run's own: netns {ns} in synlab's user namespace \
                     (SYN/s by pcap, overflows, TIME_WAIT and drops are this run's alone)"
                );
                self.log(&line);
                self.fold_msg(Input::LabUp {
                    backend: crate::lab::core::LabBackend::OwnLoopback,
                    lab: OWN_LOOPBACK_LAB.into(),
                    paths: Vec::new(),
                });
            }
            Some(Loopback::Host(why)) => {
                self.log(&format!("loopback: the host's network namespace: {why}"))
            }
            None => {}
        }
    }

    /// Which namespace the probes read: the lab's server namespace, the run's own loopback
    /// or the host's.
    pub(super) fn probed_netns(&self, cfg: &crate::probe::ProbeConfig) -> ProbedNetns {
        if cfg.netns.is_some() {
            ProbedNetns::Lab
        } else if crate::net::loopback::own_netns().is_some() {
            ProbedNetns::OwnLoopback
        } else {
            ProbedNetns::Host
        }
    }
}
