//! Time in the accept queue (issue 48 item 3): what one sample says of the connections that
//! wait in a port's accept queue (how many, the oldest, the mean age), and Little's law on a
//! steady point: the mean wait equals the mean queue depth over the accept rate.

use std::fmt;

/// One sample of the waiting connections' ages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueAges {
    pub waiting: usize,
    pub oldest_ms: f64,
    pub mean_ms: f64,
}

impl QueueAges {
    /// The ages (ms) of the connections waiting now; None when none waits.
    pub fn of(ages_ms: &[u32]) -> Option<Self> {
        let n = ages_ms.len();
        (n > 0).then(|| QueueAges {
            waiting: n,
            oldest_ms: f64::from(*ages_ms.iter().max().unwrap()),
            mean_ms: ages_ms.iter().map(|&a| f64::from(a)).sum::<f64>() / n as f64,
        })
    }
}

/// Little's law on a steady point: `mean_wait_ms` measured against `mean_depth` /
/// `accept_per_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LittleCheck {
    pub mean_wait_ms: f64,
    pub mean_depth: f64,
    pub accept_per_s: f64,
}

/// How far the measured wait may be from Little's prediction on a steady point.
pub const LITTLE_TOLERANCE: f64 = 0.10;

impl LittleCheck {
    /// The wait Little's law predicts, ms (None without accepts).
    pub fn predicted_ms(&self) -> Option<f64> {
        (self.accept_per_s > 0.0).then(|| self.mean_depth / self.accept_per_s * 1000.0)
    }

    /// The measured wait within 10 % of the prediction.
    pub fn holds(&self) -> bool {
        self.predicted_ms()
            .is_some_and(|p| (self.mean_wait_ms - p).abs() <= LITTLE_TOLERANCE * p.max(1e-9))
    }
}

impl fmt::Display for LittleCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.predicted_ms() {
            None => write!(f, "Little's law: no accepts, nothing to check"),
            Some(p) => write!(
                f,
                "Little's law: mean wait {:.1} ms {} mean depth {:.2} / accept rate {:.1}/s = \
                 {p:.1} ms ({:+.1} %)",
                self.mean_wait_ms,
                if self.holds() {
                    "="
                } else {
                    "!= (off by more than 10 %)"
                },
                self.mean_depth,
                self.accept_per_s,
                (self.mean_wait_ms / p - 1.0) * 100.0
            ),
        }
    }
}

/// The built-in server's exact accept-queue waits: one count per bucket, in shared memory
/// (forked workers add to it, so atomics, no pointers). Buckets are 1 ms wide up to
/// `LINEAR_MS` (tcp_info gives whole ms), then 16 per doubling (6 % wide) up to 2^20 ms.
pub const LINEAR_MS: u32 = 1024;
const SUB: u32 = 16;
const OCTAVES: u32 = 10;
pub const WAIT_BUCKETS: usize = (LINEAR_MS + SUB * OCTAVES) as usize;

/// The bucket of a wait of `ms`.
pub fn wait_bucket(ms: u32) -> usize {
    if ms < LINEAR_MS {
        return ms as usize;
    }
    let oct = (31 - ms.leading_zeros()) - LINEAR_MS.trailing_zeros(); // 0 for 1024..2047
    if oct >= OCTAVES {
        return WAIT_BUCKETS - 1;
    }
    let base = LINEAR_MS << oct;
    let sub = (ms - base) / (base / SUB);
    (LINEAR_MS + oct * SUB + sub) as usize
}

/// The lowest wait (ms) of bucket `b`.
pub fn bucket_ms(b: usize) -> u32 {
    let b = b as u32;
    if b < LINEAR_MS {
        return b;
    }
    let (oct, sub) = ((b - LINEAR_MS) / SUB, (b - LINEAR_MS) % SUB);
    let base = LINEAR_MS << oct;
    base + sub * (base / SUB)
}

/// The built-in server's accept-queue waits over its life, as its stats line carries them:
/// (lowest ms of a bucket, count) for the buckets that counted.
pub type WaitCounts = Vec<(u32, u64)>;

/// What the run reports of the built-in server's exact waits: an HdrHistogram of them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExactWait {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl ExactWait {
    /// From the counts of a stats line (None when nothing was accepted); each bucket's count
    /// recorded at its lowest value into an HdrHistogram (ms, 3 significant digits).
    pub fn of(counts: &[(u32, u64)]) -> Option<Self> {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).ok()?;
        for &(ms, n) in counts {
            h.record_n(u64::from(ms), n).ok()?;
        }
        (!h.is_empty()).then(|| ExactWait {
            count: h.len(),
            mean_ms: h.mean(),
            p50_ms: h.value_at_quantile(0.5) as f64,
            p99_ms: h.value_at_quantile(0.99) as f64,
            max_ms: h.max() as f64,
        })
    }
}

impl fmt::Display for ExactWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "accept-queue wait, the built-in server's own, exact per connection (handshake \
             completion to accept: tcp_info last_data_sent at accept): {} connections, mean \
             {:.1} ms, p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
            self.count, self.mean_ms, self.p50_ms, self.p99_ms, self.max_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_buckets_are_exact_ms_then_sixteen_per_doubling() {
        for ms in [0, 1, 17, 1023] {
            assert_eq!(bucket_ms(wait_bucket(ms)), ms);
        }
        assert_eq!(wait_bucket(1024), 1024);
        assert_eq!(bucket_ms(wait_bucket(1100)), 1088);
        assert_eq!(bucket_ms(wait_bucket(3000)), 2944);
        assert_eq!(wait_bucket(u32::MAX), WAIT_BUCKETS - 1);
        let mut last = 0;
        for b in 1..WAIT_BUCKETS {
            assert!(bucket_ms(b) > last, "bucket {b}");
            last = bucket_ms(b);
            assert_eq!(wait_bucket(bucket_ms(b)), b);
        }
    }

    #[test]
    fn exact_wait_summarises_the_counts() {
        assert_eq!(ExactWait::of(&[]), None);
        let w = ExactWait::of(&[(10, 99), (1000, 1)]).unwrap();
        assert_eq!((w.count, w.p50_ms, w.max_ms), (100, 10.0, 1000.0));
        assert!((w.mean_ms - 19.9).abs() < 0.01, "{w:?}");
        assert!(w.to_string().contains("100 connections"), "{w}");
    }

    #[test]
    fn ages_say_how_many_wait_the_oldest_and_the_mean() {
        assert_eq!(QueueAges::of(&[]), None);
        let a = QueueAges::of(&[10, 40, 100]).unwrap();
        assert_eq!((a.waiting, a.oldest_ms, a.mean_ms), (3, 100.0, 50.0));
    }

    #[test]
    fn little_holds_within_ten_percent_and_says_by_how_much() {
        let c = |w| LittleCheck {
            mean_wait_ms: w,
            mean_depth: 16.0,
            accept_per_s: 200.0,
        };
        assert_eq!(c(80.0).predicted_ms(), Some(80.0));
        assert!(c(87.0).holds() && c(73.0).holds());
        assert!(!c(90.0).holds());
        assert!(c(80.0).to_string().contains("= 80.0 ms (+0.0 %)"));
        assert!(c(90.0).to_string().contains("off by more than 10 %"));
        let none = LittleCheck {
            accept_per_s: 0.0,
            ..c(1.0)
        };
        assert!(!none.holds());
    }
}
