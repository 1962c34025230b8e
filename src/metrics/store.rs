//! The time-series store: one row per sample interval with typed columns (NaN = not measured),
//! plus timed events (marks, knob changes, captions). Fed by the lab's one owner of state; read
//! by the TUI panels and the headless writers.

use crate::model::Col;
use serde::Serialize;
use std::collections::HashMap;

/// How far back a headline figure looks: it is the mean of the rows of the last second (one
/// 200 ms sample jumps by +-10 %), reproducible from timeseries.csv; the charts stay raw.
pub const HEADLINE_S: f64 = 1.0;
/// A figure none of whose rows is this recent is not current: shown "-", not its last value.
/// (The socket-state walk is paced to run at most every 5 s.)
pub const STALE_S: f64 = 6.0;

/// What a timed event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A mark put by the person or a step (`m`, `mark =`).
    Mark,
    /// A knob changed (key, step or sweep).
    Change,
    /// A step's caption.
    Caption,
    /// A warning raised or cleared (events.csv and run.log; not drawn on the charts).
    Warning,
}

impl EventKind {
    /// Its word in events.csv.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Mark => "mark",
            EventKind::Change => "change",
            EventKind::Caption => "caption",
            EventKind::Warning => "warning",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A timed event shown on the charts and written to the results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub t_s: f64,
    pub kind: EventKind,
    pub text: String,
}

/// The longest span a reader needs in memory: the TUI's widest chart (`ui::app::WINDOW_MAX_S`
/// is this). The run folder's timeseries.csv has every row; window figures are running sums
/// (`metrics::window`); the rolling cross-check reads 10 s.
pub const KEEP_S: f64 = 600.0;

/// Rows past `KEEP_S` are dropped this many at a time, so a push does not move every column.
const DROP_BATCH: usize = 64;

#[derive(Debug, Clone, Default)]
pub struct Store {
    ids: Vec<Col>,
    index: HashMap<Col, usize>,
    /// Sample times, seconds since the run started.
    times: Vec<f64>,
    /// Column-major values; every column has `times.len()` entries.
    cols: Vec<Vec<f64>>,
    /// Rows dropped from the front to bound memory (a time series keeps its latest rows).
    dropped: usize,
    max_rows: usize,
    /// Seconds kept in memory, when a run needs less than `KEEP_S` (see `keep_only`).
    keep_s: Option<f64>,
    pub events: Vec<Event>,
}

impl Store {
    /// A store keeping the last `KEEP_S` seconds, at most `max_rows` rows, in memory.
    pub fn new(max_rows: usize) -> Self {
        Store {
            max_rows: max_rows.max(2),
            ..Default::default()
        }
    }

    /// Keeps only the last `secs` in memory: a headless run draws no chart, so it needs no
    /// more than its readers' longest look back (the rolling cross-check's).
    pub fn keep_only(&mut self, secs: f64) {
        self.keep_s = Some(secs.min(KEEP_S));
    }

    /// Appends a row at `t_s`; columns not given are NaN in this row, new columns are NaN in
    /// earlier rows.
    pub fn push(&mut self, t_s: f64, values: &[(Col, Option<f64>)]) {
        let n = self.times.len();
        self.times.push(t_s);
        for c in &mut self.cols {
            c.push(f64::NAN);
        }
        for (id, v) in values {
            let i = match self.index.get(id) {
                Some(&i) => i,
                None => {
                    self.ids.push(*id);
                    self.index.insert(*id, self.cols.len());
                    self.cols.push(vec![f64::NAN; n + 1]);
                    self.cols.len() - 1
                }
            };
            self.cols[i][n] = v.unwrap_or(f64::NAN);
        }
        let keep = self.keep_s.unwrap_or(KEEP_S);
        let old = self.times.partition_point(|&t| t < t_s - keep);
        let over = self.times.len().saturating_sub(self.max_rows);
        if over > 0 || old >= DROP_BATCH {
            let cut = old.max(over);
            self.times.drain(..cut);
            for c in &mut self.cols {
                c.drain(..cut);
            }
            self.dropped += cut;
        }
    }

    pub fn event(&mut self, t_s: f64, kind: EventKind, text: impl Into<String>) {
        self.events.push(Event {
            t_s,
            kind,
            text: text.into(),
        });
    }

    /// The columns recorded so far, in the order they first appeared.
    pub fn columns(&self) -> &[Col] {
        &self.ids
    }
    pub fn len(&self) -> usize {
        self.times.len()
    }
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
    pub fn times(&self) -> &[f64] {
        &self.times
    }
    /// Rows dropped from memory so far (they are in timeseries.csv).
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// A column's values (aligned with `times()`), or None if never recorded.
    pub fn col(&self, id: Col) -> Option<&[f64]> {
        self.index.get(&id).map(|&i| self.cols[i].as_slice())
    }

    /// The latest value of a column that is not NaN.
    pub fn last(&self, id: Col) -> Option<f64> {
        self.col(id)?.iter().rev().find(|v| !v.is_nan()).copied()
    }

    /// (t, v) points of a column with t >= since, NaN skipped: what a chart draws.
    pub fn series(&self, id: Col, since: f64) -> Vec<(f64, f64)> {
        let Some(c) = self.col(id) else {
            return Vec::new();
        };
        let start = self.times.partition_point(|&t| t < since);
        self.times[start..]
            .iter()
            .zip(&c[start..])
            .filter(|(_, v)| !v.is_nan())
            .map(|(&t, &v)| (t, v))
            .collect()
    }

    /// Mean and max of a column over rows with from <= t < to (NaN skipped).
    pub fn mean_max(&self, id: Col, from: f64, to: f64) -> Option<(f64, f64)> {
        let c = self.col(id)?;
        let (mut sum, mut n, mut max) = (0.0, 0usize, f64::NEG_INFINITY);
        for (t, v) in self.times.iter().zip(c) {
            if *t >= from && *t < to && !v.is_nan() {
                sum += v;
                n += 1;
                max = max.max(*v);
            }
        }
        (n > 0).then(|| (sum / n as f64, max))
    }

    /// The mean of a column's values in the rows at or after `from` (the latest rows only are
    /// read), None when none of them has one.
    pub fn mean_since(&self, id: Col, from: f64) -> Option<f64> {
        let c = self.col(id)?;
        let (mut sum, mut n) = (0.0, 0usize);
        for (t, v) in self.times.iter().zip(c).rev() {
            if *t < from {
                break;
            }
            if !v.is_nan() {
                sum += v;
                n += 1;
            }
        }
        (n > 0).then(|| sum / n as f64)
    }

    /// A column's headline value, the one rule for "its value now" (the TUI's figures and a
    /// lesson's checks): the mean over the last [`HEADLINE_S`] of rows; for a column sampled
    /// less often (the paced socket-state walk), its last value while it is current; None when
    /// it is not.
    pub fn headline(&self, id: Col) -> Option<f64> {
        let now = *self.times.last()?;
        if let Some(m) = self.mean_since(id, now - HEADLINE_S + 1e-6) {
            return Some(m);
        }
        self.last_at(id)
            .filter(|(t, _)| now - t <= STALE_S)
            .map(|(_, v)| v)
    }

    /// A column's last value and the time of its row.
    pub fn last_at(&self, id: Col) -> Option<(f64, f64)> {
        let c = self.col(id)?;
        self.times
            .iter()
            .zip(c)
            .rev()
            .find(|(_, v)| !v.is_nan())
            .map(|(t, v)| (*t, *v))
    }

    /// The values of the last row (for writers that stream rows).
    pub fn last_row(&self) -> Option<(f64, Vec<(Col, f64)>)> {
        let i = self.times.len().checked_sub(1)?;
        Some((
            self.times[i],
            self.ids
                .iter()
                .zip(&self.cols)
                .map(|(id, c)| (*id, c[i]))
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::col;

    const A: Col = col::ATTEMPTS;
    const B: Col = col::RESPONSES;

    #[test]
    fn columns_appear_late_and_stay_aligned() {
        let mut s = Store::new(100);
        s.push(0.2, &[(A, Some(1.0))]);
        s.push(0.4, &[(A, Some(2.0)), (B, Some(5.0))]);
        s.push(0.6, &[(B, None)]);
        assert_eq!(s.len(), 3);
        assert!(s.col(B).unwrap()[0].is_nan());
        assert!(s.col(A).unwrap()[2].is_nan());
        assert_eq!(s.last(A), Some(2.0));
        assert_eq!(s.last(B), Some(5.0));
        assert_eq!(s.series(A, 0.3), vec![(0.4, 2.0)]);
        assert_eq!(s.mean_max(A, 0.0, 1.0), Some((1.5, 2.0)));
        assert_eq!(s.columns(), &[A, B]);
    }

    #[test]
    fn memory_is_bounded_keeping_the_latest_rows() {
        let mut s = Store::new(10);
        for i in 0..25 {
            s.push(i as f64, &[(A, Some(i as f64))]);
        }
        assert_eq!(s.len(), 10);
        assert_eq!(s.times()[0], 15.0);
        assert_eq!(s.col(A).unwrap()[0], 15.0);
    }

    #[test]
    fn a_long_run_keeps_the_charts_span_only() {
        // Two samples a second for two hours, as a soak runs: the store keeps the widest
        // chart's span and a batch, however long the run.
        let mut s = Store::new(200_000);
        let interval = 0.5;
        let bound = (KEEP_S / interval) as usize + DROP_BATCH;
        for i in 0..14_400 {
            let t = i as f64 * interval;
            s.push(t, &[(A, Some(t)), (B, Some(1.0))]);
            assert!(s.len() <= bound + 1, "{} rows at {t} s", s.len());
        }
        let now = *s.times().last().unwrap();
        assert!(
            s.times()[0] <= now - KEEP_S,
            "the widest chart is still covered"
        );
        assert_eq!(
            s.series(A, now - KEEP_S).first().map(|p| p.0),
            Some(now - KEEP_S)
        );
        assert_eq!(s.dropped() + s.len(), 14_400);
        assert!(s.cols.iter().all(|c| c.capacity() <= 2 * (bound + 1)));
    }

    #[test]
    fn a_headless_store_keeps_only_what_it_is_told() {
        let mut s = Store::new(200_000);
        s.keep_only(60.0);
        for i in 0..1_000 {
            s.push(i as f64 * 0.2, &[(A, Some(1.0))]);
        }
        let now = *s.times().last().unwrap();
        assert!(s.times()[0] <= now - 60.0, "the last 60 s are there");
        assert!(
            s.len() <= (60.0 / 0.2) as usize + DROP_BATCH + 1,
            "{}",
            s.len()
        );
    }
}
