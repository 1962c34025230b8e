//! Latency histograms: HdrHistogram in microseconds, and the compact delta form workers send.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value a latency histogram records: 10 minutes in microseconds.
pub const MAX_US: u64 = 600_000_000;

/// A new latency histogram (microseconds, 3 significant digits), sized to the values it has
/// seen (the crate's auto-resizing one, growing up to `MAX_US`, where `record` clamps): one made
/// for the whole range is 172 KB of counts, all of them written at every reset (a worker resets
/// four every 100 ms, and two per request class), where latencies under 16 ms take 40 KB.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new(3).expect("valid histogram precision")
}

/// Records `us`, clamped to 1..=`MAX_US` so an outlier never panics or is lost.
pub fn record(h: &mut Histogram<u64>, us: u64) {
    let _ = h.record(us.clamp(1, MAX_US));
}

/// The non-empty buckets of a histogram as (value in us, count) pairs: what a worker sends
/// each stats interval. Small (one pair per distinct bucket), loss-free, and mergeable.
/// On the wire one string, `"v*c v v*c"` (a count of 1 unwritten): read from the line in
/// place into a vector sized once. As JSON pairs, the controller's reader thread spent its
/// time growing vectors, ~1 % of the load's CPU at 40,000 connections/s (issue 44).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistDelta(pub Vec<(u64, u64)>);

impl Serialize for HistDelta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use std::fmt::Write;
        let mut out = String::with_capacity(self.0.len() * 8);
        for (i, &(v, c)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let _ = match c {
                1 => write!(out, "{sep}{v}"),
                _ => write!(out, "{sep}{v}*{c}"),
            };
        }
        s.serialize_str(&out)
    }
}

impl<'de> Deserialize<'de> for HistDelta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl serde::de::Visitor<'_> for Pairs {
            type Value = HistDelta;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a histogram delta: \"value*count value ...\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<HistDelta, E> {
                HistDelta::parse(s)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(s), &self))
            }
        }
        d.deserialize_str(Pairs)
    }
}

impl HistDelta {
    /// Takes the recorded values out of `h` (which is reset) as a delta.
    pub fn drain(h: &mut Histogram<u64>) -> Self {
        let pairs = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        h.reset();
        HistDelta(pairs)
    }

    /// The pairs of the wire form (`"v*c v"`, one space between); None at anything else.
    fn parse(s: &str) -> Option<Self> {
        if s.is_empty() {
            return Some(HistDelta::default());
        }
        let mut pairs = Vec::with_capacity(s.bytes().filter(|&b| b == b' ').count() + 1);
        for p in s.split(' ') {
            pairs.push(match p.split_once('*') {
                Some((v, c)) => (v.parse().ok()?, c.parse().ok()?),
                None => (p.parse().ok()?, 1),
            });
        }
        Some(HistDelta(pairs))
    }

    /// Adds this delta into `into`.
    pub fn merge_into(&self, into: &mut Histogram<u64>) {
        for &(v, c) in &self.0 {
            let _ = into.record_n(v.clamp(1, MAX_US), c);
        }
    }

    /// The value at quantile `q` (0-1) of the delta, from its pairs (no histogram built):
    /// the smallest recorded value with at least q of the count at or below it.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        self.clone().quantiles([q]).map(|[v]| v)
    }

    /// The values at quantiles `qs` (each 0-1, ascending), as [`HistDelta::quantile`] gives
    /// each, with the pairs sorted in place once (the live latency's three a row).
    pub fn quantiles<const N: usize>(&mut self, qs: [f64; N]) -> Option<[u64; N]> {
        debug_assert!(qs.windows(2).all(|w| w[0] <= w[1]), "{qs:?} not ascending");
        let total = self.count();
        if total == 0 {
            return None;
        }
        self.0.sort_unstable_by_key(|p| p.0);
        let mut out = [0; N];
        let mut pairs = self.0.iter();
        let (mut seen, mut at) = (0, 0);
        for (o, q) in out.iter_mut().zip(qs) {
            let want = ((q * total as f64).ceil() as u64).max(1);
            while seen < want {
                let &(v, c) = pairs.next()?;
                seen += c;
                at = v;
            }
            *o = at;
        }
        Some(out)
    }

    pub fn count(&self) -> u64 {
        self.0.iter().map(|p| p.1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Buckets per doubling of the latency buckets published as OpenMetrics histograms: bounds
/// 2^(1/16) = 1.044x apart (Prometheus' native histograms at schema 4), so that
/// `histogram_quantile`'s linear interpolation inside one bucket is within 4.5 % of the
/// run's own percentile, whatever the distribution (a 40 ms path's responses all fell in one
/// 50-100 ms bucket with bounds 2.5x apart).
pub const BUCKETS_PER_DOUBLING: i32 = 16;
/// The bounds run from 2^-14 s (61 us: a loopback connect) to 2^6 s (64 s: past any timeout
/// a scenario sets by default); slower responses count past every bound (`+Inf`).
const LOWEST_EXP: i32 = -14 * BUCKETS_PER_DOUBLING;
const HIGHEST_EXP: i32 = 6 * BUCKETS_PER_DOUBLING;

/// Upper bounds (seconds) of the latency buckets, ascending (4 significant digits, so the
/// `le` labels read plainly; the ratio between neighbours stays 1.044 within 0.1 %).
pub fn bucket_bounds_s() -> &'static [f64] {
    static BOUNDS: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    BOUNDS.get_or_init(|| {
        (LOWEST_EXP..=HIGHEST_EXP)
            .map(|k| {
                let b = 2f64.powf(f64::from(k) / f64::from(BUCKETS_PER_DOUBLING));
                format!("{b:.3e}")
                    .parse()
                    .expect("a formatted float parses")
            })
            .collect()
    })
}

/// The bucket a value (seconds) falls in: the first bound at or above it; past every bound,
/// the bounds' count (`+Inf`).
fn bucket_of(s: f64, bounds: &[f64]) -> usize {
    let guess = (s.log2() * f64::from(BUCKETS_PER_DOUBLING)).ceil() - f64::from(LOWEST_EXP);
    let mut i = if guess.is_finite() {
        guess.clamp(0.0, bounds.len() as f64) as usize
    } else {
        0
    };
    // The guess is off by one at most (rounded bounds, float error): step to the exact one.
    while i > 0 && s <= bounds[i - 1] {
        i -= 1;
    }
    while i < bounds.len() && s > bounds[i] {
        i += 1;
    }
    i
}

/// A latency histogram in fixed buckets: counts per bucket of [`bucket_bounds_s`] (not
/// cumulative), the last one past every bound; sum of the values in seconds; count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Buckets {
    pub counts: Vec<u64>,
    pub sum_s: f64,
    pub count: u64,
}

impl Buckets {
    /// Bins every recorded value of `h` (microseconds) once.
    pub fn of(h: &Histogram<u64>) -> Self {
        let mut b = Buckets::default();
        b.refill(h);
        b
    }

    /// Bins `h` again into these buckets, reusing their storage (a sample row's run latency).
    pub fn refill(&mut self, h: &Histogram<u64>) {
        let bounds = bucket_bounds_s();
        self.counts.clear();
        self.counts.resize(bounds.len() + 1, 0);
        self.sum_s = 0.0;
        for v in h.iter_recorded() {
            let (us, n) = (v.value_iterated_to(), v.count_at_value());
            let s = us as f64 / 1e6;
            self.counts[bucket_of(s, bounds)] += n;
            self.sum_s += s * n as f64;
        }
        self.count = h.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_quantiles_match_the_histogram_they_came_from() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            record(&mut h, v * 10);
        }
        let (p50, p99) = (h.value_at_quantile(0.5), h.value_at_quantile(0.99));
        let d = HistDelta::drain(&mut h);
        assert_eq!(d.quantile(0.5), Some(p50));
        assert_eq!(d.quantile(0.99), Some(p99));
        assert_eq!(HistDelta::default().quantile(0.5), None);
    }

    #[test]
    fn quantiles_in_one_pass_are_each_quantile_of_unsorted_concatenated_pairs() {
        // Two reports' pairs one after the other (as the live latency joins them): unsorted,
        // one value in both, counts that put quantiles on pair edges and inside pairs.
        let d = HistDelta(vec![(30, 5), (10, 1), (20, 4), (500, 1), (20, 3), (40, 86)]);
        let qs = [0.0, 0.01, 0.05, 0.09, 0.5, 0.9, 0.99, 1.0];
        // The rule, walked the plain way: the smallest value with at least q of the count at
        // or below it.
        let reference = |q: f64| {
            let mut p = d.0.clone();
            p.sort_unstable();
            let want = ((q * 100.0).ceil() as u64).max(1);
            let mut seen = 0;
            p.into_iter().find_map(|(v, c)| {
                seen += c;
                (seen >= want).then_some(v)
            })
        };
        let each: Vec<_> = qs.iter().map(|&q| d.quantile(q).unwrap()).collect();
        assert_eq!(each, [10, 10, 20, 30, 40, 40, 40, 500]);
        assert_eq!(each, qs.map(|q| reference(q).unwrap()));
        assert_eq!(d.clone().quantiles(qs).unwrap().to_vec(), each);
        assert_eq!(HistDelta::default().quantiles([0.5, 0.9]), None);
    }

    #[test]
    fn buckets_hold_every_value_once_in_the_first_bound_above_it() {
        let bounds = bucket_bounds_s();
        for w in bounds.windows(2) {
            let r = w[1] / w[0];
            assert!((1.04..1.05).contains(&r), "{w:?}");
        }
        assert!(bounds[0] < 62e-6 && *bounds.last().unwrap() >= 64.0);
        let mut h = new_hist();
        record(&mut h, 10); // 10 us: under the first bound
        record(&mut h, 20_000); // 20 ms
        record(&mut h, 20_000);
        record(&mut h, 100_000_000); // 100 s: past every bound
        let b = Buckets::of(&h);
        assert_eq!(b.count, 4);
        assert_eq!(b.counts.iter().sum::<u64>(), 4);
        assert_eq!(b.counts[0], 1);
        let i = b.counts.iter().position(|c| *c == 2).unwrap();
        assert!(bounds[i - 1] < 0.02 && 0.02 <= bounds[i], "{i}");
        assert_eq!(*b.counts.last().unwrap(), 1);
        // A value on a bound is in that bound's bucket (`le`: less or equal).
        for (i, b) in bounds.iter().enumerate() {
            assert_eq!(bucket_of(*b, bounds), i);
            assert_eq!(bucket_of(b * 1.000_001, bounds), i + 1);
        }
    }

    #[test]
    fn delta_round_trip_preserves_counts_and_quantiles() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            record(&mut h, v * 100);
        }
        let p99 = h.value_at_quantile(0.99);
        let d = HistDelta::drain(&mut h);
        assert_eq!(h.len(), 0);
        assert_eq!(d.count(), 1000);
        let mut merged = new_hist();
        d.merge_into(&mut merged);
        assert_eq!(merged.len(), 1000);
        assert_eq!(merged.value_at_quantile(0.99), p99);
    }

    #[test]
    fn a_delta_crosses_the_wire_as_one_string_and_comes_back_whole() {
        let d = HistDelta(vec![(1, 1), (250, 3), (MAX_US, 1), (u64::MAX, u64::MAX)]);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"1 250*3 {MAX_US} {m}*{m}\"", m = u64::MAX));
        assert_eq!(serde_json::from_str::<HistDelta>(&json).unwrap(), d);
        let empty = serde_json::to_string(&HistDelta::default()).unwrap();
        assert_eq!(empty, "\"\"");
        assert_eq!(
            serde_json::from_str::<HistDelta>(&empty).unwrap(),
            HistDelta::default()
        );
        // Inside a worker's line, read in place; a damaged one is an error, not a guess.
        let mut h = new_hist();
        for v in 1..=5000u64 {
            record(&mut h, v * 7);
        }
        let d = HistDelta::drain(&mut h);
        let line = serde_json::json!({ "total_us": d }).to_string();
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        let back: HistDelta = serde_json::from_value(back["total_us"].clone()).unwrap();
        assert_eq!(back.count(), 5000);
        assert_eq!(back, d);
        for bad in [
            "\"1*\"",
            "\"x\"",
            "\"1*2*3\"",
            "[[1,2]]",
            "\"-1\"",
            "\"1  2\"",
            "\" 1\"",
        ] {
            assert!(serde_json::from_str::<HistDelta>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost() {
        let mut h = new_hist();
        record(&mut h, 0);
        record(&mut h, u64::MAX);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn buckets_refilled_from_another_histogram_are_that_histograms_alone() {
        let (mut a, mut b) = (new_hist(), new_hist());
        for us in [80, 900, 45_000, 2_000_000] {
            record(&mut a, us);
        }
        record(&mut b, 1_500);
        let mut reused = Buckets::of(&a);
        reused.refill(&b);
        assert_eq!(reused, Buckets::of(&b));
        reused.refill(&new_hist());
        assert_eq!(reused, Buckets::of(&new_hist()));
    }
}
