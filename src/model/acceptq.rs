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

#[cfg(test)]
mod tests {
    use super::*;

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
