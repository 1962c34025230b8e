//! synlab: an interactive terminal performance lab for one Linux host.
//!
//! Layout (ARCHITECTURE.md): `model` (the shared vocabulary: columns, counters, units, knobs),
//! `scenario` (the validated model of a scenario file), `load` (S-Client workers),
//! `target` (the built-in server), `net` (topology plans, shaping models, the delay router),
//! `probe` (kernel counters: parsers and rate maths), `sys` (the only place that talks to the
//! kernel), `lab` (the controller: one owner of state), `metrics` (time series, histograms),
//! `ui` (the TUI), `report` (CSV/JSON/plots).

pub mod cli;
pub mod http2;
pub mod lab;
pub mod load;
pub mod metrics;
pub mod model;
pub mod net;
pub mod probe;
pub mod quic;
pub mod report;
pub mod scenario;
pub mod sys;
pub mod target;
pub mod tls;
pub mod ui;

use std::process::ExitCode;

/// Runs a parsed command line; prints errors with their causes and returns the exit code.
pub fn run(cli: cli::Cli) -> ExitCode {
    match cli::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("synlab: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}
