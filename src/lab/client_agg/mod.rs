//! The clients' accumulator: folds the workers' stats deltas into sums over a span of time
//! (a sample row, a measurement window, a class's or a path's share), one record per worker
//! for what is kept per worker, and the store columns of those sums. Whether the client was
//! the bottleneck is judged from them in [`bound`].

mod bound;

pub use bound::BUSY_ARRIVALS_SHARE;
pub use bound::{client_bound_line, AllFailed, ClientBound, LoadShape, NothingMeasured};

use crate::load::protocol::{ClassDelta, StatsDelta};
use crate::metrics::hist::{new_hist, HistDelta};
use crate::model::{ClassName, Col, Counters, InProgress, PathName, Totals};
use crate::model::{CLASS_FIGURES, PATH_FIGURES};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// What one worker's reports in some sums say of it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WorkerRecord {
    /// Seconds of its own clock the sums cover (the sum of its report intervals).
    pub span_s: f64,
    /// Connections open at its latest report.
    pub open: u64,
    /// Connects and requests in progress at the start of its first report in the sums, and
    /// at its latest report.
    pub at_start: InProgress,
    pub at_end: InProgress,
    /// Its latest scheduled rate (attempts/s); None in a class's share, which has no schedule.
    pub target_rate: Option<f64>,
    /// The pool of persistent connections it keeps (latest report; 0: none).
    pub pool: u32,
    /// Its quickest pool answer so far (us; latest report; 0: none yet).
    pub pool_service_min_us: u64,
    /// TLS handshakes in progress at its latest report.
    pub handshaking: u64,
    /// HTTP/2: the most streams on one of its connections over these reports, and the
    /// server's advertised limit as it last read it.
    pub streams_max: u64,
    pub streams_limit: Option<u32>,
}

/// Counter sums over some span of time, with merged latency histograms.
#[derive(Debug, Clone)]
pub struct ClientTotals {
    /// The workers' counters, summed.
    pub counts: Counters,
    /// Attempts the workers' schedules intended over these reports (target rate x interval).
    pub intended: f64,
    pub lag_us_max: u64,
    pub cpu_s: f64,
    /// Highest CPU share of one worker over one of its intervals (0-1 of a core).
    pub worker_cpu_max: f64,
    /// Each worker that reported in these sums, by its id.
    pub workers: BTreeMap<u32, WorkerRecord>,
    pub connect: Histogram<u64>,
    /// TLS handshakes' own durations.
    pub handshake: Histogram<u64>,
    pub ttfb: Histogram<u64>,
    pub total: Histogram<u64>,
    /// Over HTTP/3, the QUIC clients' counts summed (None: no worker spoke QUIC).
    pub quic: Option<crate::quic::stats::QuicDelta>,
}

impl Default for ClientTotals {
    fn default() -> Self {
        ClientTotals {
            counts: Counters::default(),
            intended: 0.0,
            lag_us_max: 0,
            cpu_s: 0.0,
            worker_cpu_max: 0.0,
            workers: BTreeMap::new(),
            connect: new_hist(),
            handshake: new_hist(),
            ttfb: new_hist(),
            total: new_hist(),
            quic: None,
        }
    }
}

impl ClientTotals {
    /// Empties the sums for the next span, keeping the histograms' storage (a latency
    /// histogram is ~170 kB: a sample row reuses its four instead of allocating them again).
    pub fn reset(&mut self) {
        // Destructured so that a new field cannot be forgotten here.
        let ClientTotals {
            counts,
            intended,
            lag_us_max,
            cpu_s,
            worker_cpu_max,
            workers,
            connect,
            handshake,
            ttfb,
            total,
            quic,
        } = self;
        *quic = None;
        *counts = Counters::default();
        *intended = 0.0;
        *lag_us_max = 0;
        *cpu_s = 0.0;
        *worker_cpu_max = 0.0;
        workers.clear();
        for h in [connect, handshake, ttfb, total] {
            if !h.is_empty() {
                h.reset();
            }
        }
    }

    pub fn add(&mut self, d: &StatsDelta) {
        self.add_counts(d);
        merge(&d.connect_us, &mut self.connect);
        merge(&d.handshake_us, &mut self.handshake);
        merge(&d.ttfb_us, &mut self.ttfb);
        merge(&d.total_us, &mut self.total);
    }

    /// Adds a report's counts, rates and gauges, not its latencies (enough to judge whether
    /// the client was the limit).
    pub fn add_counts(&mut self, d: &StatsDelta) {
        let w = self.add_share_counts(
            (d.worker, d.interval_s),
            &d.counts,
            [
                InProgress {
                    connecting: d.connecting_at_start,
                    requests: d.requests_in_flight_at_start,
                },
                InProgress {
                    connecting: d.connecting,
                    requests: d.requests_in_flight,
                },
            ],
            d.connecting + d.active,
        );
        w.target_rate = Some(d.target_rate);
        if let Some(q) = &d.quic {
            self.quic.get_or_insert_with(Default::default).add(q);
        }
        let w = self.workers.get_mut(&d.worker).expect("added above");
        w.pool = d.pool;
        w.pool_service_min_us = d.pool_service_min_us;
        w.handshaking = d.handshaking;
        w.streams_max = w.streams_max.max(d.streams_max);
        if d.streams_limit.is_some() {
            w.streams_limit = d.streams_limit;
        }
        self.intended += d.target_rate * d.interval_s;
        self.lag_us_max = self.lag_us_max.max(d.lag_us_max);
        let cpu = d.cpu_user_s + d.cpu_sys_s;
        self.cpu_s += cpu;
        if d.interval_s > 0.05 {
            self.worker_cpu_max = self.worker_cpu_max.max(cpu / d.interval_s);
        }
    }

    /// Adds one request class's share of worker report `d` (a class's sums have no schedule,
    /// CPU or pool of their own: those are the whole report's).
    pub fn add_class(&mut self, d: &StatsDelta, c: &ClassDelta) {
        self.add_share_counts(
            (d.worker, d.interval_s),
            &c.counts,
            [
                InProgress {
                    connecting: c.connecting_at_start,
                    requests: c.requests_in_flight_at_start,
                },
                InProgress {
                    connecting: c.connecting,
                    requests: c.requests_in_flight,
                },
            ],
            c.connecting + c.requests_in_flight,
        );
        merge(&c.connect_us, &mut self.connect);
        merge(&c.total_us, &mut self.total);
    }

    /// What the whole of a report and a class's share of it add alike: counts, the time
    /// covered, what was in progress at the report's two ends, connections open. Returns
    /// the worker's record.
    fn add_share_counts(
        &mut self,
        (worker, interval_s): (u32, f64),
        counts: &Counters,
        [at_start, at_end]: [InProgress; 2],
        open: u64,
    ) -> &mut WorkerRecord {
        self.counts.add(counts);
        let w = self.workers.entry(worker).or_insert(WorkerRecord {
            at_start,
            ..Default::default()
        });
        w.span_s += interval_s;
        w.open = open;
        w.at_end = at_end;
        w
    }

    /// The rate all workers' schedules aim at now; None before any worker reported.
    pub fn target_rate(&self) -> Option<f64> {
        let mut rates = self
            .workers
            .values()
            .filter_map(|w| w.target_rate)
            .peekable();
        rates.peek().is_some().then(|| rates.sum())
    }

    /// The workers whose reports stated a schedule (all that reported, but in a class's share).
    fn scheduling_workers(&self) -> usize {
        self.workers
            .values()
            .filter(|w| w.target_rate.is_some())
            .count()
    }

    /// Connections open at all workers (the sum of their latest reports).
    pub fn in_flight(&self) -> u64 {
        self.workers.values().map(|w| w.open).sum()
    }

    /// All errors a person would count as failed requests (see [`Counters::errors`]).
    pub fn errors(&self) -> u64 {
        self.counts.errors()
    }

    /// Connects and requests in progress when these sums began (each worker's state before
    /// its first report in them).
    pub fn at_start(&self) -> InProgress {
        self.workers.values().map(|w| &w.at_start).sum()
    }

    /// Connects and requests in progress at the workers' latest reports (a worker that
    /// stopped reports nothing in progress: it counts what it left in `*_at_end`).
    pub fn at_end(&self) -> InProgress {
        self.workers.values().map(|w| &w.at_end).sum()
    }

    /// The counts of these sums, with both identities (see [`Totals`]).
    pub fn totals(&self) -> Totals {
        Totals::of(&self.counts, self.at_start(), self.at_end())
    }

    /// The persistent connections the workers keep (0: no pool).
    pub fn pool(&self) -> u64 {
        self.workers.values().map(|w| w.pool as u64).sum()
    }

    /// Quantile in milliseconds, None when nothing was recorded.
    pub fn q_ms(h: &Histogram<u64>, q: f64) -> Option<f64> {
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
    }

    /// The time the workers' reports cover: the mean over workers of their summed intervals.
    /// None before any report.
    pub fn covered_s(&self) -> Option<f64> {
        let n = self.workers.len();
        let total: f64 = self.workers.values().map(|w| w.span_s).sum();
        (n > 0 && total > 0.0).then(|| total / n as f64)
    }

    /// The store columns for a sample of `dt` seconds of the controller's clock. Rates divide
    /// by the time the workers' reports cover, not by `dt`: a sample that happens to fold one
    /// or three 100 ms reports instead of two must not read as half or 1.5 times the rate.
    pub fn columns(&self, dt: f64) -> Vec<(Col, Option<f64>)> {
        use crate::model::col::*;
        // A sample that folded no worker report has no client data: a gap, not a drop to zero.
        let reported = self.covered_s().is_some();
        let dt = self.covered_s().unwrap_or(dt);
        let rate = |n: u64| reported.then(|| n as f64 / dt);
        // HTTP/2's columns are empty over HTTP/1.x (a worker's first ALPN refusal or setup
        // says it speaks HTTP/2).
        let h2 = self.h2_streams_max().is_some()
            || self.workers.values().any(|w| w.streams_limit.is_some())
            || self.counts.alpn_refused + self.counts.setups > 0;
        let h2_rate = |n: u64| (reported && h2).then(|| n as f64 / dt);
        let mut cols = vec![
            (ATTEMPTS, rate(self.counts.attempts)),
            (ESTABLISHED, rate(self.counts.established)),
            (RESPONSES, rate(self.counts.responses)),
            (BYTES_IN, rate(self.counts.bytes_in)),
            (ERRORS, rate(self.errors())),
            (CONNECT_TIMEOUTS, rate(self.counts.connect_timeouts)),
            (REFUSED, rate(self.counts.refused)),
            (RESETS, rate(self.counts.resets)),
            (REQUESTS, rate(self.counts.requests)),
            (CONNECTION_ERRORS, rate(self.counts.connection_errors())),
            (REQUEST_ERRORS, rate(self.counts.request_errors())),
            (RESPONSE_TIMEOUTS, rate(self.counts.response_timeouts)),
            (BAD_RESPONSES, rate(self.counts.bad_responses)),
            (ADDR_NOT_AVAIL, rate(self.counts.addr_not_avail)),
            (OUT_OF_FDS, rate(self.counts.out_of_fds)),
            (CONNECT_OTHER_ERRORS, rate(self.counts.connect_other_errors)),
            (REQUEST_OTHER_ERRORS, rate(self.counts.request_other_errors)),
            (POOL_WAITS, rate(self.counts.pool_waits)),
            (
                CONNECTING,
                reported.then(|| self.at_end().connecting as f64),
            ),
            (
                REQUESTS_IN_FLIGHT,
                reported.then(|| self.at_end().requests as f64),
            ),
            (POOL_CONNECTIONS, reported.then(|| self.pool() as f64)),
            (TARGET_RATE, self.target_rate()),
            (CONNECT_P50, Self::q_ms(&self.connect, 0.5)),
            (CONNECT_P90, Self::q_ms(&self.connect, 0.9)),
            (CONNECT_P99, Self::q_ms(&self.connect, 0.99)),
            (TOTAL_P50, Self::q_ms(&self.total, 0.5)),
            (TOTAL_P90, Self::q_ms(&self.total, 0.9)),
            (TOTAL_P99, Self::q_ms(&self.total, 0.99)),
            (IN_FLIGHT, reported.then(|| self.in_flight() as f64)),
            (LAG_MAX, reported.then(|| self.lag_us_max as f64 / 1000.0)),
            (WORKER_CPU, reported.then(|| self.cpu_s / dt * 100.0)),
            (HANDSHAKES, rate(self.counts.handshakes())),
            (FULL_HANDSHAKES, rate(self.counts.handshakes_full)),
            (RESUMED_HANDSHAKES, rate(self.counts.handshakes_resumed)),
            (HANDSHAKE_ERRORS, rate(self.counts.handshake_errors())),
            (RESUMED_SHARE, self.resumed_share_pct()),
            (
                HANDSHAKING,
                reported.then(|| self.workers.values().map(|w| w.handshaking).sum::<u64>() as f64),
            ),
            (HANDSHAKE_P50, Self::q_ms(&self.handshake, 0.5)),
            (HANDSHAKE_P90, Self::q_ms(&self.handshake, 0.9)),
            (HANDSHAKE_P99, Self::q_ms(&self.handshake, 0.99)),
            (H2_STREAMS_MAX, self.h2_streams_max()),
            (
                H2_STREAMS_LIMIT,
                self.workers
                    .values()
                    .filter_map(|w| w.streams_limit)
                    .min()
                    .map(f64::from),
            ),
            (
                H2_REFUSED_STREAMS,
                h2_rate(self.counts.streams_refused + self.counts.streams_unprocessed),
            ),
            (H2_STREAM_RESETS, h2_rate(self.counts.stream_resets)),
            (H2_GOAWAYS, h2_rate(self.counts.goaways)),
            (H2_ALPN_REFUSED, h2_rate(self.counts.alpn_refused)),
            (H2_SETUPS, h2_rate(self.counts.setups)),
            (
                H2_FLOW_STALL,
                (h2 && reported).then(|| self.counts.flow_stall_us as f64 / 1000.0 / dt),
            ),
        ];
        // The stream resets by error code.
        cols.extend(
            crate::model::h2_resets::ResetCode::ALL
                .map(|c| (c.col(), h2_rate(self.counts.stream_resets_by_code.get(c)))),
        );
        cols.extend(self.quic_columns(dt));
        cols
    }

    /// HTTP/3's columns: empty over TCP (no worker sent QUIC counts).
    fn quic_columns(&self, dt: f64) -> Vec<(Col, Option<f64>)> {
        use crate::model::col::*;
        let q = self.quic.filter(|_| self.covered_s().is_some());
        let rate =
            |f: fn(&crate::quic::stats::QuicDelta) -> u64| q.as_ref().map(|q| f(q) as f64 / dt);
        let mean_ms = q.and_then(|q| {
            let n = q.handshakes();
            (n > 0).then(|| q.handshake_us_sum as f64 / n as f64 / 1000.0)
        });
        vec![
            (QUIC_HANDSHAKES_FULL, rate(|q| q.handshakes_full)),
            (QUIC_HANDSHAKES_RESUMED, rate(|q| q.handshakes_resumed)),
            (QUIC_HANDSHAKES_0RTT, rate(|q| q.handshakes_0rtt)),
            (QUIC_HANDSHAKE_MS, mean_ms),
            (QUIC_RETRY, rate(|q| q.retry_received)),
            (QUIC_PACKETS_SENT, rate(|q| q.datagrams_sent)),
            (QUIC_PACKETS_RECV, rate(|q| q.datagrams_received)),
            (QUIC_BYTES_SENT, rate(|q| q.bytes_sent)),
            (QUIC_BYTES_RECV, rate(|q| q.bytes_received)),
            (QUIC_LOST_PACKETS, rate(|q| q.lost_packets)),
            (QUIC_HANDSHAKE_TIMEOUTS, rate(|q| q.err_handshake_timeout)),
            (QUIC_IDLE_TIMEOUTS, rate(|q| q.err_idle_timeout)),
            (QUIC_REFUSED, rate(|q| q.err_refused)),
            (
                QUIC_CLOSED_BY_SERVER,
                rate(|q| q.err_transport + q.err_application),
            ),
            (QUIC_OTHER_ERRORS, rate(|q| q.err_other)),
        ]
    }

    /// HTTP/2: the most streams on one client connection over these reports (None: no
    /// worker spoke HTTP/2).
    pub fn h2_streams_max(&self) -> Option<f64> {
        let m = self.workers.values().map(|w| w.streams_max).max()?;
        (m > 0).then_some(m as f64)
    }

    /// The share of completed TLS handshakes that resumed, percent; None without one.
    pub fn resumed_share_pct(&self) -> Option<f64> {
        crate::model::HandshakeTotals::share(
            self.counts.handshakes_full,
            self.counts.handshakes_resumed,
        )
        .map(|s| s * 100.0)
    }
}

impl ClientTotals {
    /// A network path's own columns, in [`PATH_FIGURES`] order.
    pub fn path_columns(&self, dt: f64, path: PathName) -> Vec<(Col, Option<f64>)> {
        self.figures(dt, &PATH_FIGURES, |f| f.of_path(path))
    }

    /// A request class's own columns, in [`CLASS_FIGURES`] order.
    pub fn class_columns(&self, dt: f64, class: ClassName) -> Vec<(Col, Option<f64>)> {
        self.figures(dt, &CLASS_FIGURES, |f| f.of_class(class))
    }

    fn figures(&self, dt: f64, figs: &[Col], id: impl Fn(Col) -> Col) -> Vec<(Col, Option<f64>)> {
        let all = self.columns(dt);
        figs.iter()
            .map(|f| (id(*f), all.iter().find(|c| c.0 == *f).and_then(|c| c.1)))
            .collect()
    }
}

fn merge(d: &HistDelta, into: &mut Histogram<u64>) {
    if !d.is_empty() {
        d.merge_into(into);
    }
}

#[cfg(test)]
mod tests;
