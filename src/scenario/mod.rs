//! Scenario files: the serde model, units, validation with file/line/column/key errors, and the
//! embedded default scenario.

use std::path::PathBuf;
use std::process::ExitCode;

/// `synlab check FILE...`.
pub fn check_main(_files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    anyhow::bail!("scenario checks are not built yet")
}

pub mod units;
