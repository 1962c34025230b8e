//! Which handshakes resume: a schedule, not a coin. An accumulator gains the resumed share at
//! each handshake and spends 1 on each resumption (Bresenham's line), so a share of 0.3
//! resumes exactly 3 in every 10 consecutive handshakes, over any window.
//!
//! A resumption can fall through: no session is stored yet (the run's first handshakes), or
//! the server declines it (its cache is off, the ticket expired). Its credit is then kept, so
//! the next handshake tries again and the run's share stays exact; the credit kept is bounded
//! (`MAX_CREDIT`), so a server that never resumes does not leave a burst of resumptions owed.
//! A handshake that fails is taken out of the schedule altogether: the share is of the
//! handshakes that completed.

/// The most resumptions owed (handshakes that were due to resume and could not).
pub const MAX_CREDIT: f64 = 256.0;

#[derive(Debug, Clone, PartialEq)]
pub struct ResumeSchedule {
    share: f64,
    credit: f64,
}

/// What the schedule planned for one handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Offer a stored session.
    Resume,
    Full,
}

impl ResumeSchedule {
    /// `share` of the handshakes resume (clamped to 0..=1).
    pub fn new(share: f64) -> Self {
        ResumeSchedule {
            share: share.clamp(0.0, 1.0),
            credit: 0.0,
        }
    }

    pub fn share(&self) -> f64 {
        self.share
    }

    /// A new share from the next handshake on (what is owed stays owed).
    pub fn set_share(&mut self, share: f64) {
        self.share = share.clamp(0.0, 1.0);
    }

    /// The plan for the next handshake; `have_session` says whether a session is stored.
    pub fn next(&mut self, have_session: bool) -> Plan {
        self.credit = (self.credit + self.share).min(MAX_CREDIT);
        // A little slack: 0.1 + 0.2 + ... must reach 1 when it should.
        if have_session && self.credit >= 1.0 - 1e-9 {
            self.credit -= 1.0;
            Plan::Resume
        } else {
            Plan::Full
        }
    }

    /// The handshake completed; `resumed` says whether the server resumed it. A planned
    /// resumption that came out full is owed again.
    pub fn completed(&mut self, plan: Plan, resumed: bool) {
        if plan == Plan::Resume && !resumed {
            self.credit = (self.credit + 1.0).min(MAX_CREDIT);
        }
    }

    /// The handshake failed: as if it had never been planned.
    pub fn failed(&mut self, plan: Plan) {
        self.credit -= self.share;
        if plan == Plan::Resume {
            self.credit += 1.0;
        }
        self.credit = self.credit.min(MAX_CREDIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resumed_in(s: &mut ResumeSchedule, n: usize) -> usize {
        (0..n)
            .filter(|_| {
                let p = s.next(true);
                s.completed(p, p == Plan::Resume);
                p == Plan::Resume
            })
            .count()
    }

    #[test]
    fn a_share_is_exact_over_any_window() {
        for (share, per10) in [(0.0, 0), (0.3, 3), (0.5, 5), (0.7, 7), (1.0, 10)] {
            let mut s = ResumeSchedule::new(share);
            for w in 0..100 {
                assert_eq!(resumed_in(&mut s, 10), per10, "share {share}, window {w}");
            }
        }
        // Any window, not only aligned ones: 0.3 gives 3 or 4 in every 11.
        let mut s = ResumeSchedule::new(0.3);
        let plans: Vec<bool> = (0..1000).map(|_| s.next(true) == Plan::Resume).collect();
        for w in plans.windows(10) {
            assert_eq!(w.iter().filter(|&&r| r).count(), 3);
        }
    }

    #[test]
    fn no_session_yet_is_owed_and_made_up() {
        let mut s = ResumeSchedule::new(0.5);
        // The first 10 handshakes find no session.
        for _ in 0..10 {
            assert_eq!(s.next(false), Plan::Full);
        }
        // Made up as soon as sessions are stored: 100 handshakes of which 5 owed + 50.
        let r = resumed_in(&mut s, 100);
        assert_eq!(r, 55);
        // Over the 110, exactly half.
    }

    #[test]
    fn declined_resumptions_are_owed_but_bounded() {
        let mut s = ResumeSchedule::new(1.0);
        for _ in 0..10_000 {
            let p = s.next(true);
            s.completed(p, false);
        }
        assert!(s.credit <= MAX_CREDIT);
        // A failed handshake leaves the schedule as it was.
        let mut s = ResumeSchedule::new(0.5);
        let before = s.clone();
        let p = s.next(true);
        s.failed(p);
        assert_eq!(s, before);
        let _ = s.next(true);
        let p = s.next(true);
        assert_eq!(p, Plan::Resume);
        s.failed(p);
        assert!((s.credit - 0.5).abs() < 1e-12);
    }
}
