//! Per-class figures (seed 002 Table 5): each request class's share of the workers' reports,
//! folded as the paths' are (per sample and per window) into `class_<name>_*` columns and the
//! summary's `points[i].classes`. A class is known from the first report that names it, so
//! a sweep over workloads brings its own classes with it.

use super::LabCore;
use crate::lab::client_agg::ClientTotals;
use crate::load::protocol::StatsDelta;
use crate::model::{ClassName, ClassSummary, Col, Counters, Totals};

/// One request class's share of the client figures.
pub(crate) struct ClassTotals {
    pub(crate) name: String,
    /// Its columns are `class_<name>_<figure>`.
    id: ClassName,
    tick: ClientTotals,
    window: ClientTotals,
    /// Every report's counts of the class since the start, the final drain included.
    run: Counters,
}

impl LabCore {
    /// Folds a report's class shares (none when its mix has one class).
    pub(super) fn fold_classes(&mut self, d: &StatsDelta) {
        let open = self.point.is_some();
        for c in &d.classes {
            let i = match self.classes.iter().position(|k| k.name == c.name) {
                Some(i) => i,
                None => {
                    self.classes.push(ClassTotals {
                        name: c.name.clone(),
                        id: ClassName::new(&c.name),
                        tick: ClientTotals::default(),
                        window: ClientTotals::default(),
                        run: Counters::default(),
                    });
                    self.classes.len() - 1
                }
            };
            let k = &mut self.classes[i];
            k.run.add(&c.counts);
            k.tick.add_class(d, c);
            if open {
                k.window.add_class(d, c);
            }
        }
    }

    /// The classes' columns of the sample row over `dt` seconds (the classes that reported).
    pub(super) fn class_columns(&mut self, dt: f64) -> Vec<(Col, Option<f64>)> {
        let mut cols = Vec::new();
        for k in &mut self.classes {
            if k.tick.covered_s().is_some() {
                cols.extend(k.tick.class_columns(dt, k.id));
            }
            k.tick.reset();
        }
        cols
    }

    /// A window opens: the classes count afresh.
    pub(super) fn open_class_windows(&mut self) {
        for k in &mut self.classes {
            k.window.reset();
        }
    }

    /// Each class's counts over the whole run (summary.json's `run_classes`): nothing in
    /// progress at its start, and at its end what the workers left when they stopped.
    pub fn run_class_totals(&self) -> Vec<(String, Totals)> {
        self.classes
            .iter()
            .map(|k| (k.name.clone(), Totals::of_run(&k.run)))
            .collect()
    }

    /// The classes' sums over the window as it ends (those that reported in it).
    pub(super) fn take_class_windows(&mut self) -> Vec<(String, ClientTotals)> {
        let out = self.class_windows();
        self.open_class_windows();
        out
    }

    /// The classes' sums over the open window so far (those that reported in it).
    pub(super) fn class_windows(&self) -> Vec<(String, ClientTotals)> {
        self.classes
            .iter()
            .filter(|k| k.window.covered_s().is_some())
            .map(|k| (k.name.clone(), k.window.clone()))
            .collect()
    }
}

/// One request class's figures over a window of `dt` seconds.
pub(super) fn class_summary(
    name: &str,
    k: &ClientTotals,
    dt: f64,
    server: Option<&crate::model::latency_split::ServerTimes>,
    syn_linear: u32,
) -> ClassSummary {
    let split = super::latency_split::split(k, server);
    let nan_or = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let dt = k.covered_s().unwrap_or(dt).max(1e-3);
    let q = |h: &hdrhistogram::Histogram<u64>, x: f64| ClientTotals::q_ms(h, x).unwrap_or(f64::NAN);
    ClassSummary {
        name: name.to_string(),
        totals: k.totals(),
        requests_per_s: k.counts.requests as f64 / dt,
        responses_per_s: k.counts.responses as f64 / dt,
        bytes_per_s: k.counts.bytes_in as f64 / dt,
        errors_per_s: k.errors() as f64 / dt,
        connect_p50_ms: q(&k.connect, 0.5),
        connect_p90_ms: q(&k.connect, 0.9),
        connect_p99_ms: q(&k.connect, 0.99),
        total_p50_ms: q(&k.total, 0.5),
        total_p90_ms: q(&k.total, 0.9),
        total_p99_ms: q(&k.total, 0.99),
        little_load_factor: k.total.mean() * k.total.len() as f64 / 1e6 / dt,
        split_connect_ms: nan_or(split.map(|s| s.connect_ms)),
        split_queue_ms: nan_or(split.and_then(|s| s.queue_ms)),
        split_service_ms: nan_or(split.and_then(|s| s.service_ms)),
        split_transfer_ms: nan_or(split.map(|s| s.transfer_ms)),
        connect_retrans_pct: nan_or(
            crate::model::latency_split::SynRetrans::of(&k.connect, syn_linear)
                .map(|r| r.retrans_pct),
        ),
    }
}
