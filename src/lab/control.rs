//! What a front end needs from a running lab: the controller implements it, the TUI's tests a
//! fake over a fixed state.

use super::knobs::{Command, Reply};
use super::state::LabState;

/// What a front end (the TUI) needs from a running lab. The controller implements it; tests
/// implement it over a fixed `LabState`.
pub trait LabControl {
    /// The state to draw.
    fn state(&self) -> &LabState;
    /// Folds pending events (worker stats, probe samples, steps) into the state; never blocks
    /// for long. A signal is not an error: the state says `interrupted` (and `finished`).
    fn pump(&mut self) -> anyhow::Result<()>;
    /// A knob change: applied (what changed) or refused (why).
    fn command(&mut self, cmd: Command) -> Reply;
    /// Puts a mark on the charts and in the results.
    fn mark(&mut self, label: &str);
    /// Jumps to the scenario's next step; returns its caption/description, None if none left.
    fn next_step(&mut self) -> Option<String>;
    /// Writes the current time series and `screen` (a text screenshot) to files; returns the
    /// folder or file written.
    fn snapshot(&mut self, screen: &str) -> anyhow::Result<std::path::PathBuf>;
    /// Turns the counting of the kernel's own drop reasons on or off (its cost keeps it off
    /// by default): whether it is on now, or why it cannot be.
    fn toggle_kernel_reasons(&mut self) -> Result<bool, String> {
        Err("the kernel's reasons: this lab runs no probes".into())
    }
    /// The terminal went away: the run ends as on an interruption (the state says
    /// `interrupted` and `terminal_gone`; `stop` then drains and writes the folder).
    fn terminal_gone(&mut self);
    /// Stops load, tears everything down and finishes the run folder.
    fn stop(&mut self) -> anyhow::Result<()>;
}
