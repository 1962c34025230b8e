//! A plain user's loopback of their own (issue 45 item 3): a scenario without `[network]`,
//! run in synlab's user namespace, moves into a namespace that holds only `lo`, built by the
//! same plan machinery as a `[network]` lab, so the SYN rate (by pcap, allowed there), the
//! overflows, TIME_WAIT and drops are the run's alone, not the host's. Where the run stays on
//! the host's loopback instead (root, a server already running on the host), it says why.

use crate::net::plan::{self, LOOPBACK_SYSCTLS};
use crate::sys::netns;
use std::sync::OnceLock;

/// Where this process's loopback is, once settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loopback {
    /// A namespace of the lab's own (its name): the counters are this run's alone.
    Own(String),
    /// The host's namespace, shared with every other process on the machine: why.
    Host(String),
}

static LOOPBACK: OnceLock<Loopback> = OnceLock::new();

/// Where the loopback was settled (None: not settled in this process, e.g. a test calling
/// the controller directly, which keeps the host's).
pub fn loopback() -> Option<&'static Loopback> {
    LOOPBACK.get()
}

/// The private namespace this process entered, if any.
pub fn own_netns() -> Option<&'static str> {
    match LOOPBACK.get() {
        Some(Loopback::Own(ns)) => Some(ns),
        _ => None,
    }
}

/// Keeps the host's loopback, for `why` (said in run.log). The first settlement stands.
pub fn keep_host(why: impl Into<String>) -> &'static Loopback {
    LOOPBACK.get_or_init(|| Loopback::Host(why.into()))
}

/// Builds a loopback of the lab's own and moves the calling thread into it. Call on the main
/// thread before the run's threads and children start: they inherit its namespace (setns of
/// a network namespace is the calling thread's alone, so threads already running, such as the
/// `--metrics` endpoint's, stay where they were, and its socket on the host stays reachable).
/// On failure the host's loopback is kept, and the error says why.
pub fn enter_own() -> anyhow::Result<&'static Loopback> {
    if let Some(l) = LOOPBACK.get() {
        return Ok(l);
    }
    if !crate::sys::userns::rootless() {
        anyhow::bail!(
            "a loopback of the lab's own is made in synlab's user namespace only; as root the run keeps the host's"
        );
    }
    // Read in the host's namespace, before the move.
    let host: Vec<(String, String)> = LOOPBACK_SYSCTLS
        .iter()
        .filter_map(|k| Some((k.to_string(), crate::sys::sysctl::read(k).ok()?)))
        .collect();
    let plan = plan::loopback_plan(&plan::new_run_id(), &host)?;
    let guard = netns::apply(&plan.run_id, &plan.ops)
        .map_err(|e| e.context("building the run's own loopback namespace"))?;
    // Held for the process's life: the namespace is mounted in synlab's private /run, and the
    // kernel frees it with the last process inside.
    let _ = guard.leak();
    netns::enter(&plan.netns)?;
    Ok(LOOPBACK.get_or_init(|| Loopback::Own(plan.netns)))
}
