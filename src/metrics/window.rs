//! A measurement window over the sample rows (a sweep point's hold, a TUI stretch): opened at
//! its start, fed every row, it keeps running sums per column, so its means and maxima need no
//! stored rows however long it lasts.

use super::store::Store;
use crate::model::Col;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy)]
struct Acc {
    n: usize,
    sum: f64,
    max: f64,
    last: f64,
    /// Sum of value x the time since the previous row, and of those times.
    weighted: f64,
    weight: f64,
}

#[derive(Debug, Clone, Default)]
pub struct SampleWindow {
    t0: f64,
    /// The previous row's time (the opening, before the first row).
    last_t: f64,
    acc: HashMap<Col, Acc>,
    /// Each column's latest value (NaN skipped) when the window opened.
    at_open: HashMap<Col, f64>,
}

impl SampleWindow {
    /// Opens at `t0`; `store` gives each column's value at the opening edge.
    pub fn open(t0: f64, store: &Store) -> Self {
        let at_open = store
            .columns()
            .iter()
            .filter_map(|&c| Some((c, store.last(c)?)))
            .collect();
        SampleWindow {
            t0,
            last_t: t0,
            acc: HashMap::new(),
            at_open,
        }
    }

    /// Folds in one row at `t_s` (rows before the opening are not the window's; NaN and None
    /// are not measured).
    pub fn feed(&mut self, t_s: f64, row: &[(Col, Option<f64>)]) {
        if t_s < self.t0 {
            return;
        }
        let dt = (t_s - self.last_t).max(0.0);
        self.last_t = t_s;
        for (c, v) in row {
            let Some(v) = v.filter(|v| !v.is_nan()) else {
                continue;
            };
            let a = self.acc.entry(*c).or_insert(Acc {
                n: 0,
                sum: 0.0,
                max: f64::NEG_INFINITY,
                last: v,
                weighted: 0.0,
                weight: 0.0,
            });
            a.weighted += v * dt;
            a.weight += dt;
            a.n += 1;
            a.sum += v;
            a.max = a.max.max(v);
            a.last = v;
        }
    }

    /// The mean of a column's values in the window, None if it has none.
    pub fn mean(&self, c: Col) -> Option<f64> {
        self.acc.get(&c).map(|a| a.sum / a.n as f64)
    }

    /// The mean of a column's values weighted by the time each row covers (since the row before
    /// it). For a share or rate the sampler derives from a counter (CPU ticks), this is the
    /// counter's change over the window's rows: a sampler that runs late makes one long
    /// interval, which the plain mean would count as one short one, and at 100 ticks a second
    /// the shares of short intervals are coarse, so the plain mean of such shares is biased.
    pub fn time_mean(&self, c: Col) -> Option<f64> {
        let a = self.acc.get(&c)?;
        Some(if a.weight > 0.0 {
            a.weighted / a.weight
        } else {
            a.sum / a.n as f64
        })
    }

    /// How many values of a column the window holds.
    pub fn count(&self, c: Col) -> usize {
        self.acc.get(&c).map_or(0, |a| a.n)
    }

    pub fn max(&self, c: Col) -> Option<f64> {
        self.acc.get(&c).map(|a| a.max)
    }

    /// A column's value at the opening edge (its latest before the window).
    pub fn at_open(&self, c: Col) -> Option<f64> {
        self.at_open.get(&c).copied()
    }

    /// A column's latest value up to now: in the window, else at its opening.
    pub fn latest(&self, c: Col) -> Option<f64> {
        self.acc.get(&c).map(|a| a.last).or_else(|| self.at_open(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::col;

    type Row = Vec<(Col, Option<f64>)>;

    /// The rows of a run with gaps and a column that appears late.
    fn rows() -> Vec<(f64, Row)> {
        (0..400)
            .map(|i| {
                let t = 0.5 * (i + 1) as f64;
                let q = (i as f64 * 0.37).sin() * 50.0 + 60.0;
                let mut row = vec![
                    (col::ACCEPT_QUEUE, (i % 7 != 3).then_some(q)),
                    (col::TIME_WAIT, Some(i as f64 * 3.0)),
                    (col::SYN_IN_TOTAL, Some(i as f64 * 10.0)),
                ];
                if i > 150 {
                    row.push((col::TCP_INUSE, Some(f64::NAN)));
                    row.push((col::CPU_USER, Some(q / 2.0)));
                }
                (t, row)
            })
            .collect()
    }

    #[test]
    fn means_and_maxima_equal_the_stored_rows() {
        let mut store = Store::new(200_000);
        let (t0, t1) = (40.25, 170.0);
        let mut w = None;
        for (t, row) in rows() {
            if w.is_none() && t >= t0 {
                w = Some(SampleWindow::open(t0, &store));
            }
            store.push(t, &row);
            if let Some(w) = &mut w {
                if t < t1 {
                    w.feed(t, &row);
                }
            }
        }
        let w = w.unwrap();
        for c in [
            col::ACCEPT_QUEUE,
            col::TIME_WAIT,
            col::CPU_USER,
            col::TCP_INUSE,
            col::ESTABLISHED,
        ] {
            let old = store.mean_max(c, t0, t1);
            assert_eq!(old.map(|m| m.0), w.mean(c), "mean of {c}");
            assert_eq!(old.map(|m| m.1), w.max(c), "max of {c}");
        }
        assert!(w.mean(col::CPU_USER).is_some());
        assert_eq!(w.mean(col::TCP_INUSE), None, "NaN is not a value");
        // The edges the summary's SYN count is taken between.
        assert_eq!(w.at_open(col::SYN_IN_TOTAL), Some(790.0));
        assert_eq!(w.latest(col::SYN_IN_TOTAL), Some(3380.0));
    }

    #[test]
    fn rows_before_the_opening_are_not_counted() {
        let mut w = SampleWindow::open(10.0, &Store::new(10));
        w.feed(9.5, &[(col::ATTEMPTS, Some(1000.0))]);
        w.feed(10.0, &[(col::ATTEMPTS, Some(10.0))]);
        w.feed(10.5, &[(col::ATTEMPTS, Some(20.0))]);
        assert_eq!(w.mean(col::ATTEMPTS), Some(15.0));
        assert_eq!((w.count(col::ATTEMPTS), w.count(col::ESTABLISHED)), (2, 0));
        assert_eq!(w.max(col::ATTEMPTS), Some(20.0));
        assert_eq!(w.latest(col::ATTEMPTS), Some(20.0));
        assert_eq!(w.at_open(col::ATTEMPTS), None);
    }

    /// A server whose CPU ticks (100 a second) are sampled at irregular times, working harder
    /// in the long intervals (a late sampler: the CPU was busy): the time-weighted mean of the
    /// per-interval shares is the ticks' change over the span; the plain mean is far off.
    #[test]
    fn the_time_mean_of_shares_is_the_counters_change() {
        let mut w = SampleWindow::open(0.0, &Store::new(10));
        let (mut t, mut cpu_s, mut ticks) = (0.0, 0.0f64, 0.0);
        for i in 0..400 {
            let (dt, busy) = if i % 4 == 0 { (0.45, 0.6) } else { (0.05, 0.1) };
            t += dt;
            cpu_s += dt * busy;
            let now = (cpu_s * 100.0).floor();
            let share = (now - ticks) / 100.0 / dt * 100.0;
            ticks = now;
            w.feed(t, &[(col::SERVER_CPU_USER_PCT, Some(share))]);
        }
        let by_counter = ticks / 100.0 / t * 100.0;
        let timed = w.time_mean(col::SERVER_CPU_USER_PCT).unwrap();
        let plain = w.mean(col::SERVER_CPU_USER_PCT).unwrap();
        assert!((timed - by_counter).abs() < 1e-9, "{timed} vs {by_counter}");
        assert!(
            (plain / by_counter - 1.0).abs() > 0.3,
            "{plain} vs {by_counter}"
        );
    }
}
