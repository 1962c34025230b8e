//! Read batching for a closed keep-alive loop whose responses stream in (HTTP/1.1, and HTTP/2's
//! streams: there each connection's read is also fed whole, every frame of it, before its
//! answers leave in one write: `exchange::read_ready`, `streams::mux_flush`).
//!
//! A client that blocks in epoll_wait whenever no response is ready has the server pay for
//! waking it: on loopback the server's send delivers the response to the client's socket from
//! the server's own CPU, and waking a sleeping thread on another CPU costs an IPI there (a VM
//! exit in a guest). With 64 connections against one nginx worker that was +1.8 % of nginx's
//! CPU per request (perf, docs/14-benchmarks.md), so a client lighter than wrk got fewer
//! requests/s than wrk from the same server. When responses are streaming, the worker instead
//! naps briefly on its own timer and then reads what arrived meanwhile, so one wake-up reads
//! several responses and the server wakes nobody.
//!
//! The nap is bounded by what it may cost the measurement: a response read after a nap shows at
//! most the nap in its latency, and the nap is at most 1/32 of the running mean latency (and
//! at most 30 us), so no latency is inflated by more than ~3 % of the typical one. A fast
//! server (mean latency under 160 us) gets no nap at all, and neither does a loop with fewer
//! than two requests in flight, nor any other mode (their sends are scheduled, or their cost is
//! the connections'), nor HTTP/3 (its one UDP socket is read on its own terms).

/// Longest nap.
const NAP_MAX_NS: u64 = 30_000;
/// Shortest nap worth a timer: below it the worker blocks as usual.
const NAP_MIN_NS: u64 = 5_000;
/// The nap's share of the running mean latency, at most.
const MEAN_SHARE: u64 = 32;
/// Weight of the newest latency in the running mean (1/16: follows a change within ~50
/// responses).
const MEAN_WEIGHT_SHIFT: u32 = 4;

/// The running mean of response latency and the nap it allows.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ReadBatching {
    mean_ns: u64,
}

impl ReadBatching {
    /// A response arrived `latency_ns` after its request was due.
    pub(super) fn observe(&mut self, latency_ns: u64) {
        if self.mean_ns == 0 {
            self.mean_ns = latency_ns;
        } else {
            // mean += (x - mean) / 16, in integers.
            self.mean_ns = self.mean_ns - (self.mean_ns >> MEAN_WEIGHT_SHIFT)
                + (latency_ns >> MEAN_WEIGHT_SHIFT);
        }
    }

    /// How long to nap before polling again, when nothing is ready: None to block as usual.
    /// `in_flight` requests await responses; the loop has other work due in `until_due_ns`.
    pub(super) fn nap_ns(&self, in_flight: u64, until_due_ns: u64) -> Option<u64> {
        if in_flight < 2 {
            return None;
        }
        let nap = (self.mean_ns / MEAN_SHARE)
            .min(NAP_MAX_NS)
            .min(until_due_ns);
        (nap >= NAP_MIN_NS).then_some(nap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_mean(ns: u64) -> ReadBatching {
        let mut b = ReadBatching::default();
        b.observe(ns);
        b
    }

    #[test]
    fn the_nap_is_a_32nd_of_the_mean_latency_up_to_30_us() {
        assert_eq!(with_mean(800_000).nap_ns(64, u64::MAX), Some(25_000));
        assert_eq!(with_mean(10_000_000).nap_ns(64, u64::MAX), Some(NAP_MAX_NS));
    }

    #[test]
    fn a_fast_server_or_a_lone_request_gets_no_nap() {
        assert_eq!(with_mean(150_000).nap_ns(64, u64::MAX), None);
        assert_eq!(with_mean(800_000).nap_ns(1, u64::MAX), None);
        assert_eq!(ReadBatching::default().nap_ns(64, u64::MAX), None);
    }

    #[test]
    fn the_nap_ends_before_other_work_is_due() {
        assert_eq!(with_mean(800_000).nap_ns(64, 12_000), Some(12_000));
        assert_eq!(with_mean(800_000).nap_ns(64, 1_000), None);
    }

    #[test]
    fn the_mean_follows_a_change_in_latency() {
        let mut b = with_mean(100_000);
        for _ in 0..100 {
            b.observe(1_000_000);
        }
        let nap = b.nap_ns(64, u64::MAX).unwrap();
        assert!((29_000..=NAP_MAX_NS).contains(&nap), "{nap}");
        for _ in 0..100 {
            b.observe(50_000);
        }
        assert_eq!(b.nap_ns(64, u64::MAX), None);
    }
}
