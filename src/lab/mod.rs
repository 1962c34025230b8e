//! The controller: sets the lab up from a scenario, starts the server and workers, folds their
//! stats and the probes' samples into one state (one owner), and plays steps and sweeps.

pub mod state;

use std::path::Path;
use std::process::ExitCode;

/// `synlab run`: a headless run of a scenario.
pub fn run_main(
    _scenario: &Path,
    _out: Option<&Path>,
    _quick: bool,
    _progress: bool,
) -> anyhow::Result<ExitCode> {
    anyhow::bail!("headless runs are not built yet")
}
