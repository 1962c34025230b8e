//! Per-class counting: when the mix has two or more request classes, every count, gauge and
//! latency that belongs to a request (or to the connection opened for it) is kept for its
//! class as well as for the whole worker, and reported as `ClassDelta`s.
//!
//! A connection's class is that of the request it was opened for (picked when the attempt
//! starts, so an attempt that never connects still counts in a class); a kept-alive
//! connection's later requests count in their own classes; a pool's connections are opened
//! for no request and count in none (`NO_CLASS`).

use super::Engine;
use crate::load::protocol::{ClassDelta, MixEntry};
use crate::metrics::hist::{new_hist, record, HistDelta};
use crate::model::Counters;
use hdrhistogram::Histogram;

/// The class of what has none (a pool's connection, a mix of one class).
pub(super) const NO_CLASS: u16 = u16::MAX;

/// One class's counts since its last report, and what it has in progress.
pub(super) struct ClassTally {
    name: String,
    counts: Counters,
    connecting: u64,
    requests_in_flight: u64,
    /// (connecting, requests in flight) as of the last report.
    reported: (u64, u64),
    connect: Histogram<u64>,
    total: Histogram<u64>,
}

/// The mix's classes: each entry's class index, and the tallies (both empty with fewer than
/// two classes: nothing is counted twice then).
pub(super) fn classes_of(mix: &[MixEntry]) -> (Vec<u16>, Vec<ClassTally>) {
    let mut names: Vec<&str> = Vec::new();
    let class_of: Vec<u16> = mix
        .iter()
        .map(|m| {
            let i = names.iter().position(|n| *n == m.class).unwrap_or_else(|| {
                names.push(&m.class);
                names.len() - 1
            });
            i as u16
        })
        .collect();
    if names.len() < 2 || names.len() >= NO_CLASS as usize {
        return (Vec::new(), Vec::new());
    }
    let tallies = names
        .iter()
        .map(|n| ClassTally {
            name: n.to_string(),
            counts: Counters::default(),
            connecting: 0,
            requests_in_flight: 0,
            reported: (0, 0),
            connect: new_hist(),
            total: new_hist(),
        })
        .collect();
    (class_of, tallies)
}

impl Engine {
    /// The class of mix entry `req` (`NO_CLASS` without classes).
    pub(super) fn class_of_req(&self, req: usize) -> u16 {
        self.report.class_of.get(req).copied().unwrap_or(NO_CLASS)
    }

    /// The class of the request connection `idx` carries now.
    pub(super) fn req_class(&self, idx: usize) -> u16 {
        self.class_of_req(self.slab[idx].req as usize)
    }

    /// Counts `f` for the worker and for `class`.
    pub(super) fn count(&mut self, class: u16, f: impl Fn(&mut Counters)) {
        f(&mut self.report.stats.counts);
        if let Some(t) = self.report.classes.get_mut(class as usize) {
            f(&mut t.counts);
        }
    }

    /// Moves the connects-in-progress gauge of the worker and of `class` by one.
    /// A class's connect (and its handshake, over TLS) is over: established or failed.
    pub(super) fn class_connect_done(&mut self, class: u16) {
        if let Some(t) = self.report.classes.get_mut(class as usize) {
            t.connecting -= 1;
        }
    }

    pub(super) fn connecting_step(&mut self, class: u16, up: bool) {
        let step = |g: &mut u64| if up { *g += 1 } else { *g -= 1 };
        step(&mut self.report.connecting);
        if let Some(t) = self.report.classes.get_mut(class as usize) {
            step(&mut t.connecting);
        }
    }

    /// Moves the requests-in-flight gauge of the worker and of `class` by one.
    pub(super) fn in_flight_step(&mut self, class: u16, up: bool) {
        let step = |g: &mut u64| if up { *g += 1 } else { *g -= 1 };
        step(&mut self.report.requests_in_flight);
        if let Some(t) = self.report.classes.get_mut(class as usize) {
            step(&mut t.requests_in_flight);
        }
    }

    /// Records a connect latency (us) for the worker and for `class`.
    pub(super) fn record_connect(&mut self, class: u16, us: u64) {
        record(&mut self.report.hists.connect, us);
        if let Some(t) = self.report.classes.get_mut(class as usize) {
            record(&mut t.connect, us);
        }
    }

    /// Records a response time (us) for the worker and for `class`.
    pub(super) fn record_total(&mut self, class: u16, us: u64) {
        record(&mut self.report.hists.total, us);
        if let Some(t) = self.report.classes.get_mut(class as usize) {
            record(&mut t.total, us);
        }
    }

    /// The worker stops: what each class still has in progress is counted as left at the end,
    /// as the worker's is.
    pub(super) fn classes_left_at_end(&mut self) {
        for t in &mut self.report.classes {
            t.counts.connecting_at_end += t.connecting;
            t.counts.requests_at_end += t.requests_in_flight;
            t.connecting = 0;
            t.requests_in_flight = 0;
        }
    }

    /// Every class's share of the report being written (its counts taken, its histograms
    /// drained).
    pub(super) fn class_deltas(&mut self) -> Vec<ClassDelta> {
        self.report
            .classes
            .iter_mut()
            .map(|t| {
                let at_start = t.reported;
                t.reported = (t.connecting, t.requests_in_flight);
                ClassDelta {
                    name: t.name.clone(),
                    counts: std::mem::take(&mut t.counts),
                    connecting: t.connecting,
                    requests_in_flight: t.requests_in_flight,
                    connecting_at_start: at_start.0,
                    requests_in_flight_at_start: at_start.1,
                    connect_us: HistDelta::drain(&mut t.connect),
                    total_us: HistDelta::drain(&mut t.total),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(class: &str) -> MixEntry {
        MixEntry {
            class: class.into(),
            path: "/".into(),
            weight: 1.0,
        }
    }

    #[test]
    fn classes_are_counted_only_with_two_or_more() {
        let (of, t) = classes_of(&[entry("a"), entry("a")]);
        assert!(of.is_empty() && t.is_empty());
        let (of, t) = classes_of(&[entry("a"), entry("b"), entry("a"), entry("c")]);
        assert_eq!(of, [0, 1, 0, 2]);
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }
}
