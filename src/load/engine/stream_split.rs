//! The latency split of a multiplexed request (HTTP/2, HTTP/3; issue 48 item 4): its time
//! before it went out, split at the moment its connection became usable (`Mux::ready_ns`)
//! into the connection's setup (the split's connect) and the wait for a stream slot on the
//! usable connection (the split's queue, `stream_wait_us`). A stream sent when its connection
//! became usable is one of its connection's first (the server's accept-queue wait is its).

use super::streams::Stream;
use super::Engine;

/// A stream's time before it went out (ns), split at `ready` into the part its connection
/// was not yet usable (connect) and the part it waited for a slot (queue), and whether it
/// went out when the connection became usable (one of its first).
pub(super) fn split_ns(sched: u64, sent: u64, ready: u64) -> (u64, u64, bool) {
    let connect = sent.min(ready).saturating_sub(sched);
    let wait = sent.saturating_sub(sched.max(ready));
    (connect, wait, sent <= ready)
}

impl Engine {
    /// Counts an answered stream's part of the split for its class.
    pub(super) fn stream_split(&mut self, idx: usize, s: &Stream) {
        let (connect, wait, first) = split_ns(
            s.sched_ns,
            s.sent_ns,
            self.slab[idx].mux_state().map_or(0, |m| m.ready_ns),
        );
        self.count(s.class, |c| {
            c.before_send_us += (connect + wait) / 1000;
            c.stream_wait_us += wait / 1000;
            c.first_responses += u64::from(first);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::split_ns;

    #[test]
    fn a_streams_wait_splits_at_its_connections_readiness() {
        // Scheduled at 0, the connection usable at 5, sent then: all connect, a first stream.
        assert_eq!(split_ns(0, 5, 5), (5, 0, true));
        // Scheduled at 0, sent at 9 when a slot freed: 5 connect, 4 waiting for the slot.
        assert_eq!(split_ns(0, 9, 5), (5, 4, false));
        // Scheduled after the connection was usable: no connect, all slot wait.
        assert_eq!(split_ns(7, 9, 5), (0, 2, false));
        assert_eq!(split_ns(7, 7, 5), (0, 0, false));
    }
}
