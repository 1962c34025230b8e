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

/// The latest sample of every series of the store, for `--metrics`.
pub fn latest(store: &crate::metrics::store::Store) -> Vec<(crate::model::Col, f64)> {
    store
        .columns()
        .iter()
        .map(|&c| (c, store.last(c).unwrap_or(f64::NAN)))
        .collect()
}

/// Publishes a lab's latest samples and latency distributions to its `--metrics` endpoint.
pub fn publish(e: &crate::metrics::openmetrics::Exporter, st: &super::state::LabState) {
    e.publish(&latest(&st.store), &st.latency);
}

/// A lab whose time series are published to a `--metrics` endpoint as it is pumped (the TUI
/// drives it like the lab itself).
pub struct Published<'a> {
    pub lab: &'a mut dyn super::LabControl,
    pub exporter: crate::metrics::openmetrics::Exporter,
    last: Option<std::time::Instant>,
}

impl<'a> Published<'a> {
    pub fn new(
        lab: &'a mut dyn super::LabControl,
        exporter: crate::metrics::openmetrics::Exporter,
    ) -> Self {
        Published {
            lab,
            exporter,
            last: None,
        }
    }
}

impl super::LabControl for Published<'_> {
    fn state(&self) -> &super::state::LabState {
        self.lab.state()
    }
    fn pump(&mut self) -> anyhow::Result<()> {
        self.lab.pump()?;
        // Twice a second: fresh for a 1 s scrape, no work per frame.
        if self
            .last
            .is_none_or(|t| t.elapsed() >= std::time::Duration::from_millis(500))
        {
            publish(&self.exporter, self.lab.state());
            self.last = Some(std::time::Instant::now());
        }
        Ok(())
    }
    fn command(&mut self, cmd: super::knobs::Command) -> super::knobs::Reply {
        self.lab.command(cmd)
    }
    fn mark(&mut self, label: &str) {
        self.lab.mark(label)
    }
    fn next_step(&mut self) -> Option<String> {
        self.lab.next_step()
    }
    fn snapshot(&mut self, screen: &str) -> anyhow::Result<std::path::PathBuf> {
        self.lab.snapshot(screen)
    }
    fn stop(&mut self) -> anyhow::Result<()> {
        self.lab.stop()
    }
}

/// Starts the `--metrics` endpoint when asked (and says where it is on stderr).
pub fn start_metrics(
    addr: Option<&str>,
) -> anyhow::Result<Option<crate::metrics::openmetrics::Exporter>> {
    let Some(a) = addr else { return Ok(None) };
    let e =
        crate::metrics::openmetrics::Exporter::start(crate::metrics::openmetrics::parse_addr(a)?)?;
    eprintln!("metrics: http://{}/metrics", e.addr);
    Ok(Some(e))
}
