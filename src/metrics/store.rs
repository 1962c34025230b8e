//! The time-series store: one row per sample interval with named columns (NaN = not measured),
//! plus timed events (marks, knob changes, captions). Fed by the lab's one owner of state; read
//! by the TUI panels and the headless writers.

use serde::Serialize;
use std::collections::HashMap;

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
}

impl EventKind {
    /// Its word in events.csv.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Mark => "mark",
            EventKind::Change => "change",
            EventKind::Caption => "caption",
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

#[derive(Debug, Clone, Default)]
pub struct Store {
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// Sample times, seconds since the run started.
    times: Vec<f64>,
    /// Column-major values; every column has `times.len()` entries.
    cols: Vec<Vec<f64>>,
    /// Rows dropped from the front to bound memory (a time series keeps its latest rows).
    dropped: usize,
    max_rows: usize,
    pub events: Vec<Event>,
}

impl Store {
    /// A store keeping at most `max_rows` rows in memory (the CSV writer keeps them all).
    pub fn new(max_rows: usize) -> Self {
        Store {
            max_rows: max_rows.max(2),
            ..Default::default()
        }
    }

    /// Appends a row at `t_s`; columns not given are NaN in this row, new columns are NaN in
    /// earlier rows.
    pub fn push(&mut self, t_s: f64, values: &[(&str, Option<f64>)]) {
        let n = self.times.len();
        self.times.push(t_s);
        for c in &mut self.cols {
            c.push(f64::NAN);
        }
        for (name, v) in values {
            let i = match self.index.get(*name) {
                Some(&i) => i,
                None => {
                    self.names.push(name.to_string());
                    self.index.insert(name.to_string(), self.cols.len());
                    self.cols.push(vec![f64::NAN; n + 1]);
                    self.cols.len() - 1
                }
            };
            self.cols[i][n] = v.unwrap_or(f64::NAN);
        }
        if self.times.len() > self.max_rows {
            let cut = self.times.len() - self.max_rows;
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

    pub fn names(&self) -> &[String] {
        &self.names
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

    /// A column's values (aligned with `times()`), or None if never recorded.
    pub fn col(&self, name: &str) -> Option<&[f64]> {
        self.index.get(name).map(|&i| self.cols[i].as_slice())
    }

    /// The latest value of a column that is not NaN.
    pub fn last(&self, name: &str) -> Option<f64> {
        self.col(name)?.iter().rev().find(|v| !v.is_nan()).copied()
    }

    /// (t, v) points of a column with t >= since, NaN skipped: what a chart draws.
    pub fn series(&self, name: &str, since: f64) -> Vec<(f64, f64)> {
        let Some(c) = self.col(name) else {
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
    pub fn mean_max(&self, name: &str, from: f64, to: f64) -> Option<(f64, f64)> {
        let c = self.col(name)?;
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

    /// The values of the last row, by name (for writers that stream rows).
    pub fn last_row(&self) -> Option<(f64, Vec<(&str, f64)>)> {
        let i = self.times.len().checked_sub(1)?;
        Some((
            self.times[i],
            self.names
                .iter()
                .zip(&self.cols)
                .map(|(n, c)| (n.as_str(), c[i]))
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_appear_late_and_stay_aligned() {
        let mut s = Store::new(100);
        s.push(0.2, &[("a", Some(1.0))]);
        s.push(0.4, &[("a", Some(2.0)), ("b", Some(5.0))]);
        s.push(0.6, &[("b", None)]);
        assert_eq!(s.len(), 3);
        assert!(s.col("b").unwrap()[0].is_nan());
        assert!(s.col("a").unwrap()[2].is_nan());
        assert_eq!(s.last("a"), Some(2.0));
        assert_eq!(s.last("b"), Some(5.0));
        assert_eq!(s.series("a", 0.3), vec![(0.4, 2.0)]);
        assert_eq!(s.mean_max("a", 0.0, 1.0), Some((1.5, 2.0)));
    }

    #[test]
    fn memory_is_bounded_keeping_the_latest_rows() {
        let mut s = Store::new(10);
        for i in 0..25 {
            s.push(i as f64, &[("x", Some(i as f64))]);
        }
        assert_eq!(s.len(), 10);
        assert_eq!(s.times()[0], 15.0);
        assert_eq!(s.col("x").unwrap()[0], 15.0);
    }
}
