//! The flags `synlab run` takes for CI: where to write JUnit XML (and, for live dashboards, where
//! to serve OpenMetrics), kept apart so the run's own flags stay short.

use std::path::PathBuf;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunExtras {
    /// Write the threshold verdicts as JUnit XML to FILE (one test case per threshold per
    /// point, and per cross-check when [gate] fail_on_crosscheck is set).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Serve the live time series as OpenMetrics at http://ADDR/metrics (a bare port binds
    /// 127.0.0.1; another interface only when named, e.g. 0.0.0.0:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Build the network lab in a user namespace even as root (the lab a user who is not
    /// root gets; without root that is the default).
    #[arg(long)]
    pub userns: bool,
}
