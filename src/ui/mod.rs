//! The live TUI: terminal guard, keymap -> Action, app state, one render module per panel.

use std::path::Path;
use std::process::ExitCode;

/// `synlab` / `synlab tui`: the live TUI.
pub fn tui_main(_scenario: Option<&Path>, _out: Option<&Path>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the TUI is not built yet")
}
