//! What the tests that drive a lab through its controller share: whether a lab can be built
//! here, the run options, and pumping for a while.

#![allow(dead_code)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::lab::controller::{Controller, RunOptions};
use synlab::sys::privilege::{require_privileged, Privileges};

/// Whether this test may build a network lab: false (skip, saying why) without the
/// privileges, a failure when CI requires every test.
pub fn privileged() -> bool {
    if Privileges::current().can_build_lab() {
        return true;
    }
    let why = Privileges::current().lab_missing().unwrap_or_default();
    if require_privileged() {
        panic!("SYNLAB_REQUIRE_PRIVILEGED=1 but {why}");
    }
    eprintln!("skipped: {why}");
    false
}

/// A run writing into `out` (no run folder without one), no --metrics, no loopback fallback.
pub fn opts(out: Option<&std::path::Path>) -> RunOptions {
    RunOptions {
        out_parent: out.map(|p| p.to_path_buf()),
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    }
}

/// Pumps the controller for `secs`, as the front ends do.
pub fn run_for(c: &mut Controller, secs: f64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        c.pump().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether nginx or Apache is installed: false (skip, saying why) without it, a failure when
/// CI requires every test.
pub fn real_server_installed(kind: synlab::scenario::TargetKind) -> bool {
    match synlab::lab::real_server::find_binary(kind) {
        Ok(_) => true,
        Err(e) if require_privileged() => panic!("SYNLAB_REQUIRE_PRIVILEGED=1 but {e:#}"),
        Err(e) => {
            eprintln!("skipped: {e:#}");
            false
        }
    }
}
