//! Where a request's time went (issue 48 item 4): a class's mean response time split into
//! connect, accept-queue wait, the server's service and the rest (transfer), and the connects
//! that needed a SYN retransmission with the 1 s / 3 s modes seed 000 explains.
//!
//! The parts are sums over the same requests divided by their count, so they add up to the
//! mean response time by construction:
//! - connect: the client's, per response the time from its scheduled start to its request
//!   going out: its connection's connect (SYN-ACK in) and handshake for a connection's first
//!   request, nothing for a kept-alive connection's later ones (a pool's request: the wait for
//!   a free connection); over HTTP/2 and HTTP/3, a stream's part of that time while its
//!   connection was not yet usable (connected, TLS or QUIC's handshake done): the streams sent
//!   when their connection became usable carry its setup, those started on a connection
//!   already usable nothing;
//! - queue: the server's, each accepted connection's time from handshake completion to
//!   accept (the built-in server, tcp_info), its mean for each response that was its
//!   connection's first (over HTTP/2 and HTTP/3: the streams sent when it became usable);
//!   plus, over HTTP/2 and HTTP/3, the client's: a stream's wait for a slot on its usable
//!   connection (the server's SETTINGS_MAX_CONCURRENT_STREAMS, or M, full);
//! - service: the server's, per request from the request read to its response starting to
//!   go out (the built-in server's own clock: its work, not the response's size; nginx's
//!   `$request_time` and Apache's `%D` run on to the last byte);
//! - transfer: the rest of the mean response time: the request's travel, the response's
//!   bytes going out and travelling,
//!   the server's ACK of the handshake arriving after the client's SYN-ACK, and the server's
//!   time between accept and reading the request.
//!
//! A part the server does not measure is None, and its time is in the transfer.

use std::fmt;

/// The SYN's first retransmission timeout (the kernel's TCP_TIMEOUT_INIT, RFC 6298): a
/// connect that took this long waited for a SYN (or SYN-ACK) retransmission.
pub const RTO_INIT_MS: f64 = 1000.0;

/// When a connect's `k`-th SYN retransmission goes out, ms after its first SYN: the initial
/// RTO for each of the first `linear` + 1 timeouts (`net.ipv4.tcp_syn_linear_timeouts`, Linux
/// 6.6 and later, 4 by default: 1, 2, 3, 4, 5 s), doubling after them (then 7, 11 s); with 0
/// the classic exponential backoff seed 000 §2 describes: 1, 3, 7 s.
pub fn retrans_at_ms(k: u32, linear: u32) -> f64 {
    (1..=k)
        .map(|i| {
            let doublings = i.saturating_sub(linear + 1).min(20);
            RTO_INIT_MS * f64::from(1u32 << doublings)
        })
        .sum()
}

/// The parts of a request's time, in the order they happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Connect,
    Queue,
    Service,
    Transfer,
}

impl Part {
    pub const ALL: [Part; 4] = [Part::Connect, Part::Queue, Part::Service, Part::Transfer];

    /// Its letter in a stacked bar (readable without colour, in markdown and a terminal).
    pub fn glyph(self) -> char {
        match self {
            Part::Connect => 'C',
            Part::Queue => 'Q',
            Part::Service => 'S',
            Part::Transfer => 'T',
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Connect => "connect",
            Part::Queue => "accept queue",
            Part::Service => "service",
            Part::Transfer => "transfer",
        })
    }
}

/// What the server says of the requests of a stretch (a point, a sample): the connections it
/// accepted with their waits in the accept queue, and the requests it timed with their
/// service.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerTimes {
    /// Accepted connections whose wait was measured, and their waits summed (ms).
    pub waits: u64,
    pub wait_ms_sum: f64,
    /// Requests whose service was timed, and their service summed (us).
    pub served: u64,
    pub service_us_sum: u64,
}

impl ServerTimes {
    /// The mean wait per accepted connection, ms (None without one).
    pub fn wait_ms(&self) -> Option<f64> {
        (self.waits > 0).then(|| self.wait_ms_sum / self.waits as f64)
    }

    /// The mean service per request, ms (None without one).
    pub fn service_ms(&self) -> Option<f64> {
        (self.served > 0).then(|| self.service_us_sum as f64 / self.served as f64 / 1000.0)
    }
}

/// The sum of the waits of cumulative per-bucket counts (`acceptq::WaitCounts`) between two
/// reports, ms, and how many: each bucket's count since `earlier` at the bucket's middle (its
/// own ms in the 1 ms buckets below 1024 ms: a difference of two jiffy clocks is the wait
/// on average).
pub fn waits_since(now: &[(u32, u64)], earlier: &[(u32, u64)]) -> (u64, f64) {
    let (mut n, mut sum) = (0u64, 0.0);
    for &(ms, c) in now {
        let before = earlier
            .iter()
            .find(|(m, _)| *m == ms)
            .map_or(0, |&(_, c)| c);
        let d = c.saturating_sub(before);
        let b = super::acceptq::wait_bucket(ms);
        let width = if b + 1 < super::acceptq::WAIT_BUCKETS {
            super::acceptq::bucket_ms(b + 1) - ms
        } else {
            0
        };
        // 1 ms buckets hold whole ms; the wider ones are taken at their middle.
        let at = if width <= 1 {
            f64::from(ms)
        } else {
            f64::from(ms) + f64::from(width) / 2.0
        };
        n += d;
        sum += d as f64 * at;
    }
    (n, sum)
}

/// The client's side of a stretch for one class (or all): its completed requests' response
/// times summed, the part of them before the requests went out, and how many were their
/// connection's first.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientTimes {
    pub responses: u64,
    pub total_ms_sum: f64,
    pub before_send_ms_sum: f64,
    pub first_responses: u64,
    /// Of `before_send_ms_sum`, the multiplexed requests' waits for a stream slot (0 over
    /// HTTP/1.x).
    pub stream_wait_ms_sum: f64,
}

/// A class's mean response time, split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySplit {
    pub connect_ms: f64,
    /// None where the server does not measure it (its time is then in `transfer_ms`).
    pub queue_ms: Option<f64>,
    pub service_ms: Option<f64>,
    pub transfer_ms: f64,
}

impl LatencySplit {
    /// The split of `client`'s mean response time, with the server's `server` times (None:
    /// the server measures neither). None without a completed request.
    pub fn of(client: &ClientTimes, server: Option<&ServerTimes>) -> Option<Self> {
        if client.responses == 0 {
            return None;
        }
        let n = client.responses as f64;
        let total = client.total_ms_sum / n;
        // A stream's wait for a slot is the queue's, not the connect's.
        let streams = client.stream_wait_ms_sum / n;
        let connect = client.before_send_ms_sum / n - streams;
        // A connection waited in the accept queue once: for its first response(s).
        let accept = server
            .and_then(|s| s.wait_ms())
            .map(|w| w * client.first_responses as f64 / n);
        let queue = match accept {
            Some(a) => Some(a + streams),
            None => (client.stream_wait_ms_sum > 0.0).then_some(streams),
        };
        let service = server.and_then(|s| s.service_ms());
        Some(LatencySplit {
            connect_ms: connect,
            queue_ms: queue,
            service_ms: service,
            transfer_ms: total - connect - queue.unwrap_or(0.0) - service.unwrap_or(0.0),
        })
    }

    /// The mean response time: the parts' sum.
    pub fn total_ms(&self) -> f64 {
        self.connect_ms
            + self.queue_ms.unwrap_or(0.0)
            + self.service_ms.unwrap_or(0.0)
            + self.transfer_ms
    }

    /// One part, ms (a part not measured is None).
    pub fn part(&self, p: Part) -> Option<f64> {
        match p {
            Part::Connect => Some(self.connect_ms),
            Part::Queue => self.queue_ms,
            Part::Service => self.service_ms,
            Part::Transfer => Some(self.transfer_ms),
        }
    }

    /// A stacked bar `width` characters long: each part's letter (`Part::glyph`) in proportion
    /// to its share of the total (largest remainders, so the bar is exactly `width` long); a
    /// negative transfer (the server's parts over the client's total) draws as none.
    pub fn bar(&self, width: usize) -> String {
        let parts: Vec<(Part, f64)> = Part::ALL
            .iter()
            .map(|&p| (p, self.part(p).unwrap_or(0.0).max(0.0)))
            .collect();
        let sum: f64 = parts.iter().map(|p| p.1).sum();
        if sum <= 0.0 || width == 0 {
            return " ".repeat(width);
        }
        let exact: Vec<f64> = parts.iter().map(|p| p.1 / sum * width as f64).collect();
        let mut cells: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
        let mut order: Vec<usize> = (0..cells.len()).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor()))
        });
        let short = width - cells.iter().sum::<usize>();
        for &i in order.iter().take(short) {
            cells[i] += 1;
        }
        parts
            .iter()
            .zip(cells)
            .flat_map(|((p, _), n)| std::iter::repeat_n(p.glyph(), n))
            .collect()
    }
}

impl fmt::Display for LatencySplit {
    /// "connect 0.1 ms + accept queue 12.0 ms + service 1.0 ms + transfer 0.3 ms = 13.4 ms"
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cell = |v: Option<f64>| v.map_or("not measured".to_string(), |v| format!("{v:.1} ms"));
        write!(
            f,
            "connect {} + accept queue {} + service {} + transfer {} = {:.1} ms",
            cell(Some(self.connect_ms)),
            cell(self.queue_ms),
            cell(self.service_ms),
            cell(Some(self.transfer_ms)),
            self.total_ms()
        )
    }
}

/// The bar's legend, as report.md and the TUI print it under the bars.
pub fn legend() -> String {
    Part::ALL
        .iter()
        .map(|p| format!("{} {p}", p.glyph()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The connects that waited for a SYN retransmission: every connect of 1 s or more (the
/// initial RTO; the lab's paths' round trips are shorter), and the two modes seed 000 §2
/// explains: one retransmission and two, each from its retransmission's time to the next's
/// (`retrans_at_ms`: 1 and 2 s on a kernel with linear SYN timeouts, 1 and 3 s without),
/// each with its median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynRetrans {
    pub connects: u64,
    pub retrans_pct: f64,
    pub once_pct: f64,
    pub twice_pct: f64,
    /// The median connect of each mode, ms (NaN when none is in it).
    pub once_ms: f64,
    pub twice_ms: f64,
}

impl SynRetrans {
    /// From a histogram of connect times (us), on a kernel with `linear` linear SYN timeouts.
    /// None without a connect.
    pub fn of(connect_us: &hdrhistogram::Histogram<u64>, linear: u32) -> Option<Self> {
        let n = connect_us.len();
        if n == 0 {
            return None;
        }
        let us = |ms: f64| (ms * 1000.0) as u64;
        // Counts and the median of [lo, hi) ms; a bucket by its highest value (a connect of
        // 1.00005 s shares a bucket with 0.99994 s at 3 significant digits).
        let band = |lo: f64, hi: f64| {
            let (lo, hi) = (us(lo), us(hi));
            let in_band: Vec<(u64, u64)> = connect_us
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .filter(|&(v, _)| v >= lo && v < hi)
                .collect();
            let count: u64 = in_band.iter().map(|b| b.1).sum();
            let mut seen = 0;
            let median = in_band
                .iter()
                .find(|b| {
                    seen += b.1;
                    2 * seen >= count
                })
                .map_or(f64::NAN, |b| {
                    connect_us.median_equivalent(b.0) as f64 / 1000.0
                });
            (count, median)
        };
        let at = |k| retrans_at_ms(k, linear);
        let (all, _) = band(at(1), f64::INFINITY);
        let (one, m1) = band(at(1), at(2));
        let (two, m2) = band(at(2), at(3));
        let pct = |k: u64| k as f64 * 100.0 / n as f64;
        Some(SynRetrans {
            connects: n,
            retrans_pct: pct(all),
            once_pct: pct(one),
            twice_pct: pct(two),
            once_ms: m1,
            twice_ms: m2,
        })
    }
}

impl fmt::Display for SynRetrans {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.1} % of {} connects waited for a SYN retransmission",
            self.retrans_pct, self.connects
        )?;
        if self.once_pct > 0.0 {
            let s = self.once_ms / 1000.0;
            write!(f, "; once: {:.1} % near {s:.2} s", self.once_pct)?;
        }
        if self.twice_pct > 0.0 {
            let s = self.twice_ms / 1000.0;
            write!(f, "; twice: {:.1} % near {s:.2} s", self.twice_pct)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(responses: u64, total: f64, firsts: u64, before_send: f64) -> ClientTimes {
        ClientTimes {
            responses,
            total_ms_sum: total,
            before_send_ms_sum: before_send,
            first_responses: firsts,
            stream_wait_ms_sum: 0.0,
        }
    }

    #[test]
    fn the_parts_add_up_to_the_mean_response_time() {
        // 100 responses over 50 connections (two requests each): 30 ms of connects each.
        let c = client(100, 100.0 * 20.0, 50, 50.0 * 3.0);
        let s = ServerTimes {
            waits: 50,
            wait_ms_sum: 50.0 * 10.0,
            served: 100,
            service_us_sum: 100 * 4000,
        };
        let split = LatencySplit::of(&c, Some(&s)).unwrap();
        assert_eq!(split.connect_ms, 1.5);
        assert_eq!(split.queue_ms, Some(5.0));
        assert_eq!(split.service_ms, Some(4.0));
        assert!((split.transfer_ms - 9.5).abs() < 1e-9, "{split:?}");
        assert!((split.total_ms() - 20.0).abs() < 1e-9);
        assert!(split.to_string().ends_with("= 20.0 ms"), "{split}");
    }

    #[test]
    fn what_the_server_does_not_measure_stays_in_the_transfer() {
        let split = LatencySplit::of(&client(10, 50.0, 10, 10.0), None).unwrap();
        assert_eq!((split.queue_ms, split.service_ms), (None, None));
        assert_eq!(split.transfer_ms, 4.0);
        assert!(split.to_string().contains("accept queue not measured"));
        assert_eq!(LatencySplit::of(&client(0, 0.0, 3, 3.0), None), None);
    }

    #[test]
    fn a_streams_wait_for_a_slot_is_queue_not_connect() {
        // 10 streams: 4 ms before sending in all, 3 ms of it waiting for a slot.
        let mut c = client(10, 100.0, 2, 4.0);
        c.stream_wait_ms_sum = 3.0;
        let split = LatencySplit::of(&c, None).unwrap();
        assert!((split.connect_ms - 0.1).abs() < 1e-9, "{split:?}");
        assert_eq!(split.queue_ms, Some(0.3));
        assert!((split.total_ms() - 10.0).abs() < 1e-9);
        // With the server's accept-queue wait, both: 2 first streams x 5 ms over 10.
        let s = ServerTimes {
            waits: 1,
            wait_ms_sum: 5.0,
            ..Default::default()
        };
        let split = LatencySplit::of(&c, Some(&s)).unwrap();
        assert!((split.queue_ms.unwrap() - 1.3).abs() < 1e-9, "{split:?}");
        assert!((split.total_ms() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn the_bar_is_exactly_as_wide_as_asked_in_proportion() {
        let s = LatencySplit {
            connect_ms: 1.0,
            queue_ms: Some(5.0),
            service_ms: Some(3.0),
            transfer_ms: 1.0,
        };
        assert_eq!(s.bar(10), "CQQQQQSSST");
        assert_eq!(s.bar(20).chars().count(), 20);
        assert_eq!(s.bar(3).chars().count(), 3);
        let none = LatencySplit {
            connect_ms: 0.0,
            queue_ms: None,
            service_ms: None,
            transfer_ms: 0.0,
        };
        assert_eq!(none.bar(4), "    ");
        assert!(legend().starts_with("C connect, Q accept queue"));
    }

    #[test]
    fn waits_since_takes_the_buckets_counted_since() {
        let earlier = [(0, 10), (5, 2)];
        let now = [(0, 12), (5, 4), (1088, 1)];
        let (n, sum) = waits_since(&now, &earlier);
        assert_eq!(n, 5);
        // 2 x 0 + 2 x 5 + one in the 1088..1152 bucket at its middle.
        assert_eq!(sum, 10.0 + 1120.0);
    }

    #[test]
    fn syn_retransmissions_are_the_connects_of_a_second_or_more_in_their_modes() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.record_n(200, 80).unwrap(); // 0.2 ms
        h.record_n(1_000_030, 15).unwrap(); // one retransmission, 30 us after the RTO
        h.record_n(3_000_400, 4).unwrap(); // two, exponential
        h.record_n(7_000_500, 1).unwrap(); // three
        let r = SynRetrans::of(&h, 0).unwrap();
        assert_eq!(r.connects, 100);
        assert_eq!((r.retrans_pct, r.once_pct, r.twice_pct), (20.0, 15.0, 4.0));
        assert!((r.once_ms - 1000.0).abs() < 1.0, "{r:?}");
        assert!((r.twice_ms - 3000.4).abs() < 2.0, "{r:?}");
        assert!(r.to_string().contains("once: 15.0 % near 1.00 s"), "{r}");
        assert_eq!(
            SynRetrans::of(&hdrhistogram::Histogram::new(3).unwrap(), 0),
            None
        );
        // Linear timeouts: the second retransmission 2 s after the first SYN, the third 3 s.
        let lin = SynRetrans::of(&h, 4).unwrap();
        assert_eq!((lin.once_pct, lin.twice_pct), (15.0, 0.0));
        h.record_n(2_000_100, 5).unwrap();
        let lin = SynRetrans::of(&h, 4).unwrap();
        assert_eq!(lin.twice_pct, 5.0 * 100.0 / 105.0);
    }

    #[test]
    fn the_retransmissions_come_linear_then_doubling() {
        let at = |linear| {
            (1..=7)
                .map(|k| retrans_at_ms(k, linear) / 1000.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(at(4), [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 11.0]);
        assert_eq!(at(0), [1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 127.0]);
    }
}
