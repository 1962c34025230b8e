//! Results: the run folder's CSV/JSON writers and plots.

pub mod run_folder;

use std::path::PathBuf;

/// `synlab report RUN [RUN2]`.
pub fn report_main(_runs: &[PathBuf]) -> anyhow::Result<()> {
    anyhow::bail!("reports are not built yet")
}
