//! The statistics of repeated trials, distribution-free and deterministic: the median of a
//! figure with its order-statistics confidence interval (binomial, as the sign test), and the
//! change between two groups of trials with the Hodges-Lehmann estimate and its exact
//! Mann-Whitney interval. No resampling: the same trials give the same interval every time,
//! and the interval's true coverage is known (and said) even with a handful of trials.

/// The level synlab's intervals aim for.
pub const LEVEL: f64 = 0.95;

/// A confidence interval and the coverage it truly has (order statistics reach only discrete
/// levels: with 5 trials the widest interval, min .. max, covers 93.75 %, not 95 %).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    /// Its coverage, 0..1 (the level it reaches, at least `LEVEL` when enough trials).
    pub coverage: f64,
}

impl Interval {
    /// Its coverage in percent, as the lines a user reads say it ("95 % CI", "94 % CI").
    pub fn level_pct(&self) -> f64 {
        self.coverage * 100.0
    }
    /// Whether `x` lies in it.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// The median of finite values (NaN for none): the middle one, or the mean of the two middle.
pub fn median(values: &[f64]) -> f64 {
    let v = sorted(values);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// P(X <= k) for X ~ Binomial(n, 1/2).
fn binom_half_cdf(n: usize, k: usize) -> f64 {
    let mut c = 1.0f64; // C(n, 0)
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            c = c * (n + 1 - i) as f64 / i as f64;
        }
        sum += c;
    }
    sum / 2f64.powi(n as i32)
}

/// The order-statistics interval of the median: [x(k), x(n+1-k)] with the largest k whose
/// coverage 1 - 2 P(Bin(n, 1/2) < k) reaches `level`; with too few values to reach it, the
/// widest (min .. max) with its own, lower coverage. None without a finite value.
pub fn median_ci(values: &[f64], level: f64) -> Option<Interval> {
    let v = sorted(values);
    let n = v.len();
    if n == 0 {
        return None;
    }
    let coverage = |k: usize| 1.0 - 2.0 * binom_half_cdf(n, k - 1);
    let mut k = 1;
    while k < n.div_ceil(2) && coverage(k + 1) >= level {
        k += 1;
    }
    Some(Interval {
        lo: v[k - 1],
        hi: v[n - k],
        coverage: if n == 1 { 0.0 } else { coverage(k) },
    })
}

/// The fewest trials whose median interval reaches `level` (6 at 95 %).
pub fn trials_for_median(level: f64) -> usize {
    (2..200)
        .find(|&n| 1.0 - 2.0 * binom_half_cdf(n, 0) >= level)
        .unwrap_or(200)
}

/// The exact null distribution of the Mann-Whitney U for group sizes `n` and `m` (no ties):
/// P(U <= u) for u = 0 ..= n*m.
fn mann_whitney_cdf(n: usize, m: usize) -> Vec<f64> {
    // counts[i][j][u]: arrangements of i and j values with U = u, built by the last value's
    // group (the recurrence of Mann and Whitney, 1947); kept as one layer per i.
    let max = n * m;
    let mut prev: Vec<Vec<f64>> = (0..=m)
        .map(|_| {
            let mut c = vec![0.0; max + 1];
            c[0] = 1.0;
            c
        })
        .collect();
    for _ in 1..=n {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; m + 1];
        cur[0][0] = 1.0;
        for j in 1..=m {
            for u in 0..=max {
                // The largest value is from the first group: it beats all j of the second.
                let a = if u >= j { prev[j][u - j] } else { 0.0 };
                let b = cur[j - 1][u];
                cur[j][u] = a + b;
            }
        }
        prev = cur;
    }
    let counts = &prev[m];
    let total: f64 = counts.iter().sum();
    let mut acc = 0.0;
    counts
        .iter()
        .map(|c| {
            acc += c / total;
            acc
        })
        .collect()
}

/// How one group of trials changed against another: the estimate and its interval, as a
/// ratio (run / base) or a difference (run - base).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    pub estimate: f64,
    pub ci: Interval,
}

/// Whether a change is a ratio (a rate, a latency: its change in % of the baseline) or a
/// difference (a share already in percent: its change in points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Ratio,
    Difference,
}

/// The change from `base` to `run` with the Hodges-Lehmann estimate (the median of all
/// pairwise differences, of logarithms for a ratio) and its distribution-free interval from the
/// exact Mann-Whitney distribution: [D(k), D(nm+1-k)] with the largest k whose coverage reaches
/// `level`, else the widest with its own coverage. None when a group has no usable value (a
/// ratio needs positive values).
pub fn shift(base: &[f64], run: &[f64], scale: Scale, level: f64) -> Option<Shift> {
    let f = |x: f64| match scale {
        Scale::Ratio if x > 0.0 => Some(x.ln()),
        Scale::Ratio => None,
        Scale::Difference => x.is_finite().then_some(x),
    };
    let b: Vec<f64> = base.iter().filter_map(|&x| f(x)).collect();
    let r: Vec<f64> = run.iter().filter_map(|&x| f(x)).collect();
    if b.is_empty() || r.is_empty() {
        return None;
    }
    let mut d: Vec<f64> = r
        .iter()
        .flat_map(|y| b.iter().map(move |x| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    let (n, m, nm) = (b.len(), r.len(), d.len());
    let cdf = mann_whitney_cdf(n, m);
    let coverage = |k: usize| 1.0 - 2.0 * cdf[k - 1];
    let mut k = 1;
    while k < nm.div_ceil(2) && coverage(k + 1) >= level {
        k += 1;
    }
    let back = |x: f64| match scale {
        Scale::Ratio => x.exp(),
        Scale::Difference => x,
    };
    Some(Shift {
        estimate: back(median(&d)),
        ci: Interval {
            lo: back(d[k - 1]),
            hi: back(d[nm - k]),
            coverage: coverage(k).max(0.0),
        },
    })
}

/// The fewest trials per group whose change interval reaches `level` (4 each at 95 %).
pub fn trials_for_shift(level: f64) -> usize {
    (1..100)
        .find(|&n| 1.0 - 2.0 * mann_whitney_cdf(n, n)[0] >= level)
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn median_intervals_are_order_statistics_with_their_true_coverage() {
        // 5 trials cannot reach 95 %: min .. max, covering 1 - 2/32.
        let ci = median_ci(&[5.0, 1.0, 4.0, 2.0, 3.0], LEVEL).unwrap();
        assert_eq!((ci.lo, ci.hi), (1.0, 5.0));
        assert!((ci.coverage - 0.9375).abs() < 1e-12);
        // 6 do: min .. max at 1 - 2/64.
        let ci = median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], LEVEL).unwrap();
        assert_eq!((ci.lo, ci.hi), (1.0, 6.0));
        assert!((ci.coverage - 0.96875).abs() < 1e-12);
        // 10: [x(2), x(9)], coverage 1 - 2 * 11/1024 (the sign test's table).
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = median_ci(&v, LEVEL).unwrap();
        assert_eq!((ci.lo, ci.hi), (2.0, 9.0));
        assert!((ci.coverage - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        assert_eq!(trials_for_median(LEVEL), 6);
        assert_eq!(median_ci(&[7.0], LEVEL).unwrap().coverage, 0.0);
    }

    #[test]
    fn the_mann_whitney_distribution_matches_its_table() {
        // n = m = 5: 252 arrangements; P(U <= 2) = 4/252, P(U <= 3) = 7/252.
        let cdf = mann_whitney_cdf(5, 5);
        assert!((cdf[2] - 4.0 / 252.0).abs() < 1e-12);
        assert!((cdf[3] - 7.0 / 252.0).abs() < 1e-12);
        assert!((cdf[25] - 1.0).abs() < 1e-12);
        assert_eq!(trials_for_shift(LEVEL), 4);
    }

    #[test]
    fn a_shift_is_found_with_its_interval() {
        let base = [100.0, 102.0, 98.0, 101.0, 99.0];
        let run: Vec<f64> = base.iter().map(|x| x * 0.9).collect();
        let s = shift(&base, &run, Scale::Ratio, LEVEL).unwrap();
        assert!((s.estimate - 0.9).abs() < 0.01, "{s:?}");
        assert!(s.ci.lo < s.estimate && s.estimate < s.ci.hi, "{s:?}");
        assert!(s.ci.hi < 0.95, "a 10 % drop in 2 % noise is sure: {s:?}");
        assert!((s.ci.coverage - (1.0 - 8.0 / 252.0)).abs() < 1e-12);
        // The same trials on both sides: no change, inside the noise.
        let s = shift(&base, &base, Scale::Ratio, LEVEL).unwrap();
        assert_eq!(s.estimate, 1.0);
        assert!(s.ci.contains(1.0));
        // Differences for a share in percent.
        let s = shift(&[0.0, 0.1], &[5.0, 5.1], Scale::Difference, LEVEL).unwrap();
        assert!((s.estimate - 5.0).abs() < 1e-9);
        // One trial each: the interval is a point, with no coverage.
        let s = shift(&[100.0], &[90.0], Scale::Ratio, LEVEL).unwrap();
        assert_eq!(s.ci.coverage, 0.0);
        assert!(shift(&[0.0], &[1.0], Scale::Ratio, LEVEL).is_none());
    }
}
