//! The flags `synlab run` takes for CI: where to write JUnit XML (and, for live dashboards, where
//! to serve OpenMetrics), kept apart so the run's own flags stay short.

use std::path::PathBuf;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunExtras {
    /// Write the threshold verdicts as JUnit XML to FILE (one test case per threshold per
    /// point, and per cross-check when [gate] fail_on_crosscheck is set).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}
