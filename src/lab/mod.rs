//! The lab: a pure core (`core`) that folds the workers' stats, the probes' samples and the
//! rest into one state (one owner) and says what to do, the controller (its runtime: the
//! server, the workers, the network lab, the probes, the recorder of the run folder), and the
//! drivers of steps and sweeps.

pub mod ci;
pub mod client_agg;
pub mod controller;
pub mod core;
pub mod knobs;
pub mod real_server;
pub mod recorder;
pub mod run;
pub mod state;
pub mod summary;

pub use run::run_main;

/// What a front end (the TUI) needs from a running lab. The controller implements it; tests
/// implement it over a fixed `LabState`.
pub trait LabControl {
    /// The state to draw.
    fn state(&self) -> &state::LabState;
    /// Folds pending events (worker stats, probe samples, steps) into the state; never blocks
    /// for long. A signal is not an error: the state says `interrupted` (and `finished`).
    fn pump(&mut self) -> anyhow::Result<()>;
    /// A knob change: applied (what changed) or refused (why).
    fn command(&mut self, cmd: knobs::Command) -> knobs::Reply;
    /// Puts a mark on the charts and in the results.
    fn mark(&mut self, label: &str);
    /// Jumps to the scenario's next step; returns its caption/description, None if none left.
    fn next_step(&mut self) -> Option<String>;
    /// Writes the current time series and `screen` (a text screenshot) to files; returns the
    /// folder or file written.
    fn snapshot(&mut self, screen: &str) -> anyhow::Result<std::path::PathBuf>;
    /// Stops load, tears everything down and finishes the run folder.
    fn stop(&mut self) -> anyhow::Result<()>;
}
