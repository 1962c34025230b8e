//! Lingering close, as Apache 2.4 does it (`ap_lingering_close` in server/connection.c): after
//! the last response, shut down writing (the client sees our FIN) and read until the client's
//! FIN, an error, `SECONDS_TO_LINGER` (2 s) without any data, or, once data keeps coming,
//! `MAX_SECS_TO_LINGER` (30 s) after the first of it. The worker stays busy all that time, so a
//! connection holds its process for about one more round trip: the mechanism that makes a
//! process-per-connection server lose throughput as RTT grows.
//!
//! This module is the decision logic only (pure, tested with made-up instants); the reads are
//! done by [`super::core::serve_blocking`].

use std::time::{Duration, Instant};

/// Apache's SECONDS_TO_LINGER: the longest wait for the client's next bytes or FIN.
pub const SECONDS_TO_LINGER: Duration = Duration::from_secs(2);
/// Apache's MAX_SECS_TO_LINGER: a client that keeps sending is cut off this long after its
/// first bytes.
pub const MAX_SECS_TO_LINGER: Duration = Duration::from_secs(30);

/// What one read during the linger returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Some bytes (thrown away).
    Data,
    /// The client's FIN.
    Eof,
    /// The read's own timeout passed with nothing.
    Timeout,
    /// A reset or another error.
    Error,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Read again, waiting at most this long.
    Read(Duration),
    /// Close the socket now.
    Close,
}

/// The state of one lingering close.
#[derive(Debug, Clone)]
pub struct Linger {
    idle: Duration,
    max: Duration,
    /// When the client last sent something (or the linger began).
    quiet_since: Instant,
    /// Set at the first data: the linger ends at this instant whatever comes.
    cut_off: Option<Instant>,
}

impl Linger {
    /// Starts lingering at `now` (right after shutdown(SHUT_WR)); `idle` is the longest silence
    /// waited for (Apache: 2 s).
    pub fn start(idle: Duration, now: Instant) -> Linger {
        Linger {
            idle,
            max: MAX_SECS_TO_LINGER,
            quiet_since: now,
            cut_off: None,
        }
    }

    /// The first read's wait.
    pub fn first(&self) -> Next {
        Next::Read(self.idle)
    }

    /// Folds in what a read returned at `now` and says what to do next.
    pub fn on_read(&mut self, r: ReadOutcome, now: Instant) -> Next {
        match r {
            ReadOutcome::Eof | ReadOutcome::Error => Next::Close,
            ReadOutcome::Data => {
                let cut_off = *self.cut_off.get_or_insert(now + self.max);
                if now >= cut_off {
                    return Next::Close;
                }
                self.quiet_since = now;
                Next::Read(self.idle.min(cut_off - now))
            }
            ReadOutcome::Timeout => {
                let end = self.quiet_since + self.idle;
                let end = self.cut_off.map_or(end, |c| end.min(c));
                if now >= end {
                    Next::Close
                } else {
                    Next::Read(end - now)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_client_fin_or_reset_ends_the_linger_at_once() {
        let t0 = Instant::now();
        let mut l = Linger::start(SECONDS_TO_LINGER, t0);
        assert_eq!(l.first(), Next::Read(ms(2000)));
        assert_eq!(l.on_read(ReadOutcome::Eof, t0 + ms(100)), Next::Close);
        let mut l = Linger::start(SECONDS_TO_LINGER, t0);
        assert_eq!(l.on_read(ReadOutcome::Error, t0), Next::Close);
    }

    #[test]
    fn a_silent_client_is_waited_for_the_idle_time_even_across_short_reads() {
        let t0 = Instant::now();
        let mut l = Linger::start(SECONDS_TO_LINGER, t0);
        // The reader wakes every 500 ms to look at its stop flag: the wait is what is left.
        assert_eq!(
            l.on_read(ReadOutcome::Timeout, t0 + ms(500)),
            Next::Read(ms(1500))
        );
        assert_eq!(
            l.on_read(ReadOutcome::Timeout, t0 + ms(1999)),
            Next::Read(ms(1))
        );
        assert_eq!(l.on_read(ReadOutcome::Timeout, t0 + ms(2000)), Next::Close);
    }

    #[test]
    fn data_restarts_the_idle_wait_until_30_s_after_the_first_bytes() {
        let t0 = Instant::now();
        let mut l = Linger::start(SECONDS_TO_LINGER, t0);
        assert_eq!(
            l.on_read(ReadOutcome::Data, t0 + ms(1000)),
            Next::Read(ms(2000))
        );
        // 1.9 s of silence after data: still waiting (the idle time counts from the data).
        assert_eq!(
            l.on_read(ReadOutcome::Timeout, t0 + ms(2900)),
            Next::Read(ms(100))
        );
        // A client that keeps trickling bytes is cut off 30 s after its first ones.
        let mut t = t0 + ms(1000);
        for _ in 0..28 {
            t += ms(1000);
            assert_eq!(l.on_read(ReadOutcome::Data, t), Next::Read(ms(2000)));
        }
        // At 30 s only 1 s is left before the cut-off.
        assert_eq!(
            l.on_read(ReadOutcome::Data, t0 + ms(30_000)),
            Next::Read(ms(1000))
        );
        assert_eq!(
            l.on_read(ReadOutcome::Timeout, t0 + ms(31_000)),
            Next::Close
        );
        assert_eq!(l.on_read(ReadOutcome::Data, t0 + ms(31_000)), Next::Close);
    }

    #[test]
    fn a_shorter_idle_time_is_honoured() {
        let t0 = Instant::now();
        let mut l = Linger::start(ms(50), t0);
        assert_eq!(l.first(), Next::Read(ms(50)));
        assert_eq!(l.on_read(ReadOutcome::Timeout, t0 + ms(50)), Next::Close);
    }
}
