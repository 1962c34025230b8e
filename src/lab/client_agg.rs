//! Folds the workers' stats deltas into per-sample rates and per-point totals, and decides
//! whether the client (not the server) was the bottleneck (seed 000 §4.3).

use crate::load::protocol::{ClassDelta, Mode, StatsDelta};
use crate::metrics::hist::{new_hist, HistDelta};
use crate::model::{ClassName, Col, Counters, InProgress, PathName, Totals};
use crate::model::{CLASS_FIGURES, PATH_FIGURES};
use hdrhistogram::Histogram;

/// Attempts short of the schedule by more than this share (or 3 sd of a Poisson count) mean
/// the client fell behind. Not less: a report interval in which the rate changed states the
/// new rate for all of it, so a session of rate changes intends a little more than it asked.
const SHORTFALL_FLOOR: f64 = 0.05;
/// A mean start lag over this share of T is material.
const LAG_SHARE_OF_T: f64 = 0.1;
/// Open arrivals: a mean lag over one inter-arrival gap is material, but never below this
/// (timer and batching jitter at high rates; a busy machine's scheduling delays).
const LAG_FLOOR_S: f64 = 0.005;
/// Arrivals that found all D sockets busy (late: S-Client holds them until a socket frees)
/// are a material share of the schedule past this: 1 %, so a handful of 20,000 does not make
/// a point CLIENT-BOUND while a client that set the pace does.
pub const BUSY_ARRIVALS_SHARE: f64 = 0.01;
/// A worker using more of a core than this cannot be trusted to keep its schedule.
const WORKER_CPU_LIMIT: f64 = 0.9;
/// Pool mode: more than this share of the requests waiting for an idle connection means the
/// pool or the server set the pace ...
const POOL_WAIT_SHARE: f64 = 0.01;
/// ... the pool when the server answered its requests about as quickly as when nothing
/// queued before them (mean within this factor of the quickest answer): more connections
/// would have carried more. A server that queues them (its answers slower by more) is the
/// limit itself, and more connections would only queue deeper.
const POOL_QUEUE_FACTOR: f64 = 2.0;

/// What the client-bound test needs to know of the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadShape {
    pub mode: Mode,
    pub timeout_s: f64,
}

/// Why a measurement window measured nothing trustworthy (the point fails).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NothingMeasured {
    #[error("no connection attempt and no request in the {window_s:.1} s window although load was asked for: the load generator measured nothing (see run.log)")]
    NoAttempt { window_s: f64 },
    #[error("{silent} of {workers} load workers never reported in the {window_s:.1} s window")]
    Silent {
        silent: usize,
        workers: usize,
        window_s: f64,
    },
    #[error("load worker {worker} reported for only {span_s:.1} s of the {window_s:.1} s window")]
    Stopped {
        worker: u32,
        span_s: f64,
        window_s: f64,
    },
}

/// A window in which something was attempted and every attempt failed: it measured something
/// broken (a certificate, an address, a server that is not there), not a server's capacity.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("none of the {attempted} attempts was answered, {failed} failed ({kinds}): {why}")]
pub struct AllFailed {
    /// Connection attempts and requests begun.
    pub attempted: u64,
    /// Those that failed (with those begun before the window that failed in it).
    pub failed: u64,
    /// The failures by kind, largest first ("20128 bad_certificates").
    pub kinds: String,
    /// What went wrong, in words, and what to do.
    pub why: String,
}

/// One reason the client, not the server, limited a measurement (seed 000 §4.3).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientBound {
    #[error("client ran out of ephemeral ports")]
    PortsOut,
    #[error("client ran out of file descriptors")]
    FdsOut,
    #[error("{busy} of {arrivals} arrivals found all D sockets busy, over the {:.0} % that makes it material (raise load.sockets)", BUSY_ARRIVALS_SHARE * 100.0)]
    SocketsBusy { busy: u64, arrivals: u64 },
    #[error("no idle connection: {waits} of {scheduled} requests waited for one of the pool's {pool} (mean wait {mean_wait_ms:.1} ms) while the server answered in {service_ms:.1} ms on average, near its quickest ({service_min_ms:.1} ms): the pool set the pace; raise load.connections")]
    NoIdleConnection {
        waits: u64,
        scheduled: u64,
        pool: u64,
        mean_wait_ms: f64,
        service_ms: f64,
        service_min_ms: f64,
    },
    /// `unit` is "attempts" (new connections) or "requests" (a pool's).
    #[error("{pct:.0} % fewer {unit} than the schedule intended ({done} of {intended:.0})", pct = (1.0 - .started / .intended) * 100.0)]
    Shortfall {
        started: f64,
        unit: &'static str,
        done: u64,
        intended: f64,
    },
    /// `unit` as for `Shortfall`.
    #[error("{unit} started {:.1} ms late on average, {:.0} % of the timeout T", .lag_s * 1000.0, .of_t * 100.0)]
    LateForT {
        unit: &'static str,
        lag_s: f64,
        of_t: f64,
    },
    #[error("{unit} started {:.1} ms late on average, more than the {:.2} ms between a worker's arrivals", .lag_s * 1000.0, .gap_s * 1000.0)]
    LateForGap {
        unit: &'static str,
        lag_s: f64,
        gap_s: f64,
    },
    #[error("a worker used {:.0}% of a core", .cpu * 100.0)]
    WorkerCpu { cpu: f64 },
}

/// Every reason that holds, as one line ("...; ...").
pub fn client_bound_line(why: &[ClientBound]) -> String {
    why.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
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
    /// The latest scheduled rate of each worker (attempts/s).
    pub target_by_worker: std::collections::BTreeMap<u32, f64>,
    /// Seconds of each worker's own clock these sums cover (the sum of its report intervals).
    pub span_by_worker: std::collections::BTreeMap<u32, f64>,
    /// Connections open at each worker at its latest report.
    pub in_flight_by_worker: std::collections::BTreeMap<u32, u64>,
    /// Connections open at all workers (sum of their latest reports).
    pub in_flight: u64,
    /// Connects and requests in progress at each worker at the start of its first report
    /// in these sums, and at its latest report.
    pub at_start_by_worker: std::collections::BTreeMap<u32, InProgress>,
    pub at_end_by_worker: std::collections::BTreeMap<u32, InProgress>,
    /// The pool of persistent connections each worker keeps (latest report; 0: none).
    pub pool_by_worker: std::collections::BTreeMap<u32, u32>,
    /// Each worker's quickest pool answer so far (us; latest report; 0: none yet).
    pub pool_service_min_by_worker: std::collections::BTreeMap<u32, u64>,
    /// TLS handshakes in progress at each worker at its latest report.
    pub handshaking_by_worker: std::collections::BTreeMap<u32, u64>,
    pub connect: Histogram<u64>,
    /// TLS handshakes' own durations.
    pub handshake: Histogram<u64>,
    pub ttfb: Histogram<u64>,
    pub total: Histogram<u64>,
}

impl Default for ClientTotals {
    fn default() -> Self {
        ClientTotals {
            counts: Counters::default(),
            intended: 0.0,
            lag_us_max: 0,
            cpu_s: 0.0,
            worker_cpu_max: 0.0,
            target_by_worker: Default::default(),
            span_by_worker: Default::default(),
            in_flight_by_worker: Default::default(),
            in_flight: 0,
            at_start_by_worker: Default::default(),
            at_end_by_worker: Default::default(),
            pool_by_worker: Default::default(),
            pool_service_min_by_worker: Default::default(),
            handshaking_by_worker: Default::default(),
            connect: new_hist(),
            handshake: new_hist(),
            ttfb: new_hist(),
            total: new_hist(),
        }
    }
}

impl ClientTotals {
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
        self.add_share_counts(
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
        self.intended += d.target_rate * d.interval_s;
        self.lag_us_max = self.lag_us_max.max(d.lag_us_max);
        let cpu = d.cpu_user_s + d.cpu_sys_s;
        self.cpu_s += cpu;
        if d.interval_s > 0.05 {
            self.worker_cpu_max = self.worker_cpu_max.max(cpu / d.interval_s);
        }
        self.target_by_worker.insert(d.worker, d.target_rate);
        self.pool_by_worker.insert(d.worker, d.pool);
        self.pool_service_min_by_worker
            .insert(d.worker, d.pool_service_min_us);
        self.handshaking_by_worker.insert(d.worker, d.handshaking);
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
    /// covered, what was in progress at the report's two ends, connections open.
    fn add_share_counts(
        &mut self,
        (worker, interval_s): (u32, f64),
        counts: &Counters,
        [at_start, at_end]: [InProgress; 2],
        open: u64,
    ) {
        self.counts.add(counts);
        *self.span_by_worker.entry(worker).or_default() += interval_s;
        self.in_flight_by_worker.insert(worker, open);
        self.in_flight = self.in_flight_by_worker.values().sum();
        self.at_start_by_worker.entry(worker).or_insert(at_start);
        self.at_end_by_worker.insert(worker, at_end);
    }

    /// The rate all workers' schedules aim at now; None before any worker reported.
    pub fn target_rate(&self) -> Option<f64> {
        (!self.target_by_worker.is_empty()).then(|| self.target_by_worker.values().sum())
    }

    /// All errors a person would count as failed requests (see [`Counters::errors`]).
    pub fn errors(&self) -> u64 {
        self.counts.errors()
    }

    /// Connects and requests in progress when these sums began (each worker's state before
    /// its first report in them).
    pub fn at_start(&self) -> InProgress {
        self.at_start_by_worker.values().sum()
    }

    /// Connects and requests in progress at the workers' latest reports (a worker that
    /// stopped reports nothing in progress: it counts what it left in `*_at_end`).
    pub fn at_end(&self) -> InProgress {
        self.at_end_by_worker.values().sum()
    }

    /// The counts of these sums, with both identities (see [`Totals`]).
    pub fn totals(&self) -> Totals {
        Totals::of(&self.counts, self.at_start(), self.at_end())
    }

    /// The persistent connections the workers keep (0: no pool).
    pub fn pool(&self) -> u64 {
        self.pool_by_worker.values().map(|&p| p as u64).sum()
    }

    /// Why the client, not the server, limited this measurement; None if it did not.
    ///
    /// The test is what the client's shortfall cost the schedule (seed 000 §4.3), not a fixed
    /// lag: attempts short of what the schedule intended beyond counting noise; starts so late
    /// that the lag is a material share of the timeout T (it eats the connect budget and shows
    /// in every latency, which is measured from the scheduled start) or, for open arrivals, of
    /// the gap between arrivals; D exhausted; a worker on a whole core; ports or descriptors out.
    pub fn client_bound(&self, load: &LoadShape) -> Vec<ClientBound> {
        let c = &self.counts;
        // Every reason that holds, the client's own limits first: they are causes, where a
        // shortfall or a late start may be their effect (or the machine's load).
        let mut why = Vec::new();
        if c.addr_not_avail > 0 {
            why.push(ClientBound::PortsOut);
        }
        if c.out_of_fds > 0 {
            why.push(ClientBound::FdsOut);
        }
        let arrivals = c.attempts + c.client_cap_drops;
        if c.client_cap_drops as f64 > BUSY_ARRIVALS_SHARE * arrivals as f64 {
            why.push(ClientBound::SocketsBusy {
                busy: c.client_cap_drops,
                arrivals,
            });
        }
        let pool = self.pool();
        let scheduled = c.scheduled + c.pool_waits;
        let service_min_us = self
            .pool_service_min_by_worker
            .values()
            .filter(|&&us| us > 0)
            .min()
            .copied();
        if let (true, Some(min_us)) = (pool > 0 && c.pool_served > 0, service_min_us) {
            let service_us = c.pool_service_us_sum as f64 / c.pool_served as f64;
            let waited = c.pool_waits as f64 > POOL_WAIT_SHARE * scheduled as f64;
            if waited && service_us <= POOL_QUEUE_FACTOR * min_us as f64 {
                why.push(ClientBound::NoIdleConnection {
                    waits: c.pool_waits,
                    scheduled,
                    pool,
                    mean_wait_ms: c.pool_wait_us_sum as f64 / c.pool_waits as f64 / 1000.0,
                    service_ms: service_us / 1000.0,
                    service_min_ms: min_us as f64 / 1000.0,
                });
            }
        }
        let unit = if pool > 0 { "requests" } else { "attempts" };
        if load.mode != Mode::Closed && self.intended >= 1.0 {
            // What the schedule handed out: arrivals started, dropped at the cap, or (a pool's
            // requests) sent after waiting for a connection.
            let (started, done) = if pool > 0 {
                (scheduled, c.requests)
            } else {
                (c.attempts + c.client_cap_drops, c.attempts)
            };
            let started = started as f64;
            let noise = (3.0 * self.intended.sqrt()).max(SHORTFALL_FLOOR * self.intended);
            if started < self.intended - noise {
                why.push(ClientBound::Shortfall {
                    started,
                    unit,
                    done,
                    intended: self.intended,
                });
            }
        }
        if c.scheduled > 0 {
            let lag_s = c.lag_us_sum as f64 / c.scheduled as f64 / 1e6;
            let of_t = lag_s / load.timeout_s.max(1e-6);
            let gap_s = match (load.mode, self.target_rate()) {
                (Mode::Open, Some(r)) if r > 0.0 => {
                    Some(self.target_by_worker.len().max(1) as f64 / r)
                }
                _ => None,
            };
            if of_t > LAG_SHARE_OF_T {
                why.push(ClientBound::LateForT { unit, lag_s, of_t });
            } else if let Some(gap_s) = gap_s.filter(|g| lag_s > g.max(LAG_FLOOR_S)) {
                why.push(ClientBound::LateForGap { unit, lag_s, gap_s });
            }
        }
        if self.worker_cpu_max > WORKER_CPU_LIMIT {
            why.push(ClientBound::WorkerCpu {
                cpu: self.worker_cpu_max,
            });
        }
        why
    }

    /// Why a measurement window of `window_s` seconds with `workers` load workers measured
    /// nothing trustworthy: no attempt, no request and nothing in progress while load was asked
    /// for (a schedule that stopped advancing, a worker stuck), or a worker that never reported
    /// or stopped reporting. Requests in flight throughout (a server that hung on a pool's
    /// connections) are a measurement: of a server that answered nothing.
    pub fn measured_nothing(&self, window_s: f64, workers: usize) -> Option<NothingMeasured> {
        // Kept-alive connections carry requests without a new attempt: either counts.
        let c = &self.counts;
        let waiting = self.at_start().requests + self.at_start().connecting;
        if c.attempts == 0 && c.client_cap_drops == 0 && c.requests == 0 && waiting == 0 {
            return Some(NothingMeasured::NoAttempt { window_s });
        }
        let reported = self.span_by_worker.len();
        if reported < workers {
            return Some(NothingMeasured::Silent {
                silent: workers - reported,
                workers,
                window_s,
            });
        }
        // Reports every 100 ms: a worker whose reports cover under half the window stopped.
        if window_s >= 1.0 {
            if let Some((w, span)) = self
                .span_by_worker
                .iter()
                .find(|(_, &span)| span < 0.5 * window_s)
            {
                return Some(NothingMeasured::Stopped {
                    worker: *w,
                    span_s: *span,
                    window_s,
                });
            }
        }
        None
    }

    /// Why every attempt of this window failed, if it did (attempts or requests begun, some
    /// failed, none answered). `tls_words` is the clients' account of a failed handshake
    /// (which check failed, what to do), when there was one.
    pub fn all_failed(&self, tls_words: Option<&str>) -> Option<AllFailed> {
        let c = &self.counts;
        let attempted = c.attempts.max(c.requests);
        if attempted == 0 || c.responses > 0 || c.errors() == 0 {
            return None;
        }
        let by_kind = serde_json::to_value(&self.totals().errors_by_kind).unwrap_or_default();
        let mut kinds: Vec<(u64, String)> = by_kind
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((v.as_u64().filter(|&n| n > 0)?, k.clone())))
            .collect();
        kinds.sort_by_key(|k| std::cmp::Reverse(k.0));
        let why = match kinds.first().map(|k| k.1.as_str()) {
            Some("bad_certificates" | "tls_alerts" | "tls_protocol_errors") => tls_words
                .unwrap_or("the TLS handshake failed (run.log says how)")
                .to_string(),
            Some("refused") => "the target refused every connection: nothing listens at its address and port".into(),
            Some("connect_timeouts") => "no connection was accepted within the timeout T: is the target up and reachable?".into(),
            Some("handshake_timeouts") => "no TLS handshake finished within load.tls.handshake_timeout: does the target speak TLS?".into(),
            Some("response_timeouts") => "no response came within the timeout T".into(),
            Some("addr_not_avail") => "the clients ran out of ephemeral ports".into(),
            Some("out_of_fds") => "the clients ran out of file descriptors".into(),
            Some("resets") => "the server reset every request".into(),
            Some("bad_responses") => "no response was a complete HTTP response".into(),
            _ => "see run.log".into(),
        };
        Some(AllFailed {
            attempted,
            failed: c.errors(),
            kinds: kinds
                .iter()
                .map(|(n, k)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
            why,
        })
    }

    /// Quantile in milliseconds, None when nothing was recorded.
    pub fn q_ms(h: &Histogram<u64>, q: f64) -> Option<f64> {
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
    }

    /// The time the workers' reports cover: the mean over workers of their summed intervals.
    /// None before any report.
    pub fn covered_s(&self) -> Option<f64> {
        let n = self.span_by_worker.len();
        let total: f64 = self.span_by_worker.values().sum();
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
        vec![
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
            (IN_FLIGHT, reported.then_some(self.in_flight as f64)),
            (LAG_MAX, reported.then(|| self.lag_us_max as f64 / 1000.0)),
            (WORKER_CPU, reported.then(|| self.cpu_s / dt * 100.0)),
            (HANDSHAKES, rate(self.counts.handshakes())),
            (FULL_HANDSHAKES, rate(self.counts.handshakes_full)),
            (RESUMED_HANDSHAKES, rate(self.counts.handshakes_resumed)),
            (HANDSHAKE_ERRORS, rate(self.counts.handshake_errors())),
            (RESUMED_SHARE, self.resumed_share_pct()),
            (
                HANDSHAKING,
                reported.then(|| self.handshaking_by_worker.values().sum::<u64>() as f64),
            ),
            (HANDSHAKE_P50, Self::q_ms(&self.handshake, 0.5)),
            (HANDSHAKE_P90, Self::q_ms(&self.handshake, 0.9)),
            (HANDSHAKE_P99, Self::q_ms(&self.handshake, 0.99)),
        ]
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
mod tests {
    use super::*;

    fn delta(attempts: u64, lag_us: u64, cpu: f64) -> StatsDelta {
        StatsDelta {
            interval_s: 0.1,
            target_rate: attempts as f64 / 0.1,
            counts: Counters {
                attempts,
                scheduled: attempts,
                lag_us_sum: lag_us * attempts,
                responses: attempts / 2,
                connect_timeouts: 3,
                ..Default::default()
            },
            lag_us_max: lag_us,
            cpu_user_s: cpu,
            ..Default::default()
        }
    }

    const OPEN: LoadShape = LoadShape {
        mode: Mode::Open,
        timeout_s: 1.0,
    };

    #[test]
    fn rates_come_from_the_sample_length() {
        let mut t = ClientTotals::default();
        t.add(&delta(100, 10, 0.01));
        t.add(&delta(100, 10, 0.01));
        let cols = t.columns(0.2);
        let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1;
        assert_eq!(get("attempts_per_s"), Some(1000.0));
        assert_eq!(get("responses_per_s"), Some(500.0));
        assert_eq!(get("errors_per_s"), Some(30.0));
        assert_eq!(get("connect_p50_ms"), None);
        assert!(t.client_bound(&OPEN).is_empty());
    }

    #[test]
    fn a_sample_folding_three_reports_is_not_read_as_one_and_a_half_times_the_rate() {
        // Two workers at 1,000/s each, reporting every 100 ms; this 200 ms sample caught three
        // reports of worker 0 and one of worker 1.
        let mut t = ClientTotals::default();
        for w in [0, 0, 0, 1] {
            let mut d = delta(100, 10, 0.01);
            d.worker = w;
            d.connecting = 5;
            t.add(&d);
        }
        let cols = t.columns(0.2);
        let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1.unwrap();
        // 400 attempts over (0.3 s + 0.1 s) / 2 workers = 0.2 s of each worker's time.
        assert_eq!(get("attempts_per_s"), 2000.0);
        assert_eq!(
            get("in_flight"),
            10.0,
            "open connections add up over workers"
        );
    }

    #[test]
    fn a_few_arrivals_finding_d_busy_are_not_client_bound_a_material_share_is() {
        // 20,000 arrivals over 10 s, 3 of them found all D sockets busy: not material.
        let mut t = ClientTotals::default();
        let mut d = delta(19_997, 10, 0.01);
        d.interval_s = 10.0;
        d.target_rate = 2000.0;
        d.counts.client_cap_drops = 3;
        t.add(&d);
        assert_eq!(t.client_bound(&OPEN), []);
        // 300 of 20,000 (1.5 %): the client set the pace, and the text says the share.
        let mut t = ClientTotals::default();
        d.counts.attempts = 19_700;
        d.counts.scheduled = 19_700;
        d.counts.client_cap_drops = 300;
        t.add(&d);
        let why = t.client_bound(&OPEN);
        assert_eq!(
            why,
            [ClientBound::SocketsBusy {
                busy: 300,
                arrivals: 20_000
            }]
        );
        assert!(
            why[0].to_string().contains("300 of 20000 arrivals")
                && why[0].to_string().contains("over the 1 %")
        );
    }

    #[test]
    fn a_window_whose_every_attempt_failed_says_why_in_words() {
        let mut t = ClientTotals::default();
        let mut d = delta(500, 10, 0.01);
        d.counts.responses = 0;
        d.counts.connect_timeouts = 0;
        d.counts.bad_certificates = 500;
        t.add(&d);
        let f = t
            .all_failed(Some(
                "the CA file holds a CA certificate used as the server's own",
            ))
            .unwrap();
        assert_eq!(
            (f.attempted, f.kinds.as_str()),
            (500, "500 bad_certificates")
        );
        assert!(
            f.to_string().starts_with(
                "none of the 500 attempts was answered, 500 failed (500 bad_certificates): the CA file"
            ),
            "{f}"
        );
        // Refused everywhere: the words say so without TLS.
        let mut t = ClientTotals::default();
        d.counts.bad_certificates = 0;
        d.counts.refused = 500;
        t.add(&d);
        assert!(t
            .all_failed(None)
            .unwrap()
            .why
            .contains("refused every connection"));
        // One answered: a measurement, however bad.
        let mut t = ClientTotals::default();
        d.counts.responses = 1;
        t.add(&d);
        assert_eq!(t.all_failed(None), None);
    }

    #[test]
    fn late_starts_and_busy_workers_flag_client_bound() {
        let mut t = ClientTotals::default();
        t.add(&delta(100, 150_000, 0.01));
        assert!(matches!(
            t.client_bound(&OPEN)[..],
            [ClientBound::LateForT { .. }]
        ));
        let mut t = ClientTotals::default();
        t.add(&delta(100, 10, 0.095));
        assert!(matches!(
            t.client_bound(&OPEN)[..],
            [ClientBound::WorkerCpu { .. }]
        ));
    }

    #[test]
    fn every_reason_is_given_and_the_clients_own_limits_come_first() {
        // Ports ran out on a busy machine: starts were late too, but the ports are the cause.
        let mut d = delta(100, 150_000, 0.01);
        d.counts.addr_not_avail = 40;
        let mut t = ClientTotals::default();
        t.add(&d);
        let why = t.client_bound(&OPEN);
        assert!(
            matches!(
                why[..],
                [ClientBound::PortsOut, ClientBound::LateForT { .. }]
            ),
            "{why:?}"
        );
    }

    #[test]
    fn the_papers_sclient_overload_is_not_client_bound() {
        // seed 000 §4.2 against a ~1,300/s nginx: D = 15,000, T = 0.5 s, so D/T = 30,000/s; the
        // worker offered 30,484/s on 66 % of a core, starting attempts 10.6 ms late on average.
        let sclient = LoadShape {
            mode: Mode::Sclient,
            timeout_s: 0.5,
        };
        let mut t = ClientTotals::default();
        for _ in 0..100 {
            t.add(&StatsDelta {
                interval_s: 0.1,
                target_rate: 30_000.0,
                counts: Counters {
                    attempts: 3_048,
                    scheduled: 3_048,
                    lag_us_sum: 3_048 * 10_600,
                    responses: 130,
                    connect_timeouts: 2_900,
                    ..Default::default()
                },
                lag_us_max: 40_000,
                cpu_user_s: 0.016,
                cpu_sys_s: 0.05,
                ..Default::default()
            });
        }
        assert_eq!(t.client_bound(&sclient), []);
    }

    #[test]
    fn a_worker_that_cannot_keep_up_is_client_bound() {
        // Asked for 30,000/s, managed 24,000/s at 85 % of a core with a small lag: the shortfall
        // alone says the client was the limit.
        let sclient = LoadShape {
            mode: Mode::Sclient,
            timeout_s: 0.5,
        };
        let mut t = ClientTotals::default();
        for _ in 0..50 {
            t.add(&StatsDelta {
                interval_s: 0.1,
                target_rate: 30_000.0,
                counts: Counters {
                    attempts: 2_400,
                    scheduled: 2_400,
                    lag_us_sum: 2_400 * 3_000,
                    ..Default::default()
                },
                cpu_user_s: 0.025,
                cpu_sys_s: 0.06,
                ..Default::default()
            });
        }
        let why = t.client_bound(&sclient);
        assert!(
            matches!(why[..], [ClientBound::Shortfall { started, intended, .. }]
                if (1.0 - started / intended - 0.2).abs() < 0.01),
            "{why:?}"
        );
        // Small counts: a shortfall within Poisson noise is not flagged.
        let mut t = ClientTotals::default();
        t.add(&StatsDelta {
            interval_s: 1.0,
            target_rate: 100.0,
            counts: Counters {
                attempts: 80,
                scheduled: 80,
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(t.client_bound(&OPEN), []);
        // Closed loop: fewer attempts than clients / think is the server's doing.
        let closed = LoadShape {
            mode: Mode::Closed,
            timeout_s: 0.5,
        };
        let mut t = ClientTotals::default();
        t.add(&delta(100, 10, 0.01));
        t.intended = 1_000.0;
        assert_eq!(t.client_bound(&closed), []);
    }

    #[test]
    fn open_arrivals_later_than_their_gap_are_client_bound() {
        // 100/s per worker: a gap of 10 ms; starts 15 ms late on average reorder the arrivals.
        let mut t = ClientTotals::default();
        t.add(&delta(10, 15_000, 0.01));
        assert!(matches!(
            t.client_bound(&OPEN)[..],
            [ClientBound::LateForGap { .. }]
        ));
    }

    #[test]
    fn garbage_responses_are_errors_in_the_rates() {
        let mut t = ClientTotals::default();
        t.add(&StatsDelta {
            interval_s: 0.1,
            counts: Counters {
                attempts: 10,
                established: 10,
                bad_responses: 10,
                ..Default::default()
            },
            ..Default::default()
        });
        let cols = t.columns(0.1);
        let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1;
        assert_eq!(get("errors_per_s"), Some(100.0));
        assert_eq!(get("responses_per_s"), Some(0.0));
    }

    #[test]
    fn a_window_without_attempts_or_with_a_silent_worker_measured_nothing() {
        let t = ClientTotals::default();
        assert_eq!(
            t.measured_nothing(5.0, 1),
            Some(NothingMeasured::NoAttempt { window_s: 5.0 })
        );
        let mut t = ClientTotals::default();
        for _ in 0..50 {
            let mut d = delta(100, 10, 0.01);
            d.worker = 0;
            t.add(&d);
        }
        assert_eq!(t.measured_nothing(5.0, 1), None);
        assert!(matches!(
            t.measured_nothing(5.0, 2),
            Some(NothingMeasured::Silent {
                silent: 1,
                workers: 2,
                ..
            })
        ));
        let mut d = delta(100, 10, 0.01);
        d.worker = 1;
        t.add(&d);
        let why = t.measured_nothing(5.0, 2);
        assert!(
            matches!(why, Some(NothingMeasured::Stopped { worker: 1, span_s, .. }) if (span_s - 0.1).abs() < 1e-9),
            "{why:?}"
        );
    }

    /// A keep-alive worker's reports: `n` requests answered a report, 4 connections open.
    fn keepalive_delta(worker: u32, n: u64) -> StatsDelta {
        StatsDelta {
            worker,
            interval_s: 0.1,
            counts: Counters {
                requests: n,
                responses: n,
                ..Default::default()
            },
            active: 4,
            requests_in_flight: 4,
            requests_in_flight_at_start: 4,
            ..Default::default()
        }
    }

    #[test]
    fn a_keepalive_window_without_attempts_measured_something_and_adds_up() {
        // The run: closed keep-alive clients on connections opened before the window.
        let mut t = ClientTotals::default();
        for _ in 0..50 {
            t.add(&keepalive_delta(0, 3_800));
        }
        assert_eq!(t.counts.attempts, 0);
        assert_eq!(t.measured_nothing(5.0, 1), None);
        // A server that hung on the pool's connections: requests in flight all window long.
        let mut hung = ClientTotals::default();
        for _ in 0..50 {
            hung.add(&keepalive_delta(0, 0));
        }
        assert_eq!(hung.measured_nothing(5.0, 1), None);
        let totals = t.totals();
        assert_eq!(totals.identities_broken(), None, "{totals:?}");
        assert_eq!(
            (
                totals.requests.in_flight_at_start,
                totals.requests.in_flight_at_end
            ),
            (4, 4)
        );
        let cols = t.columns(5.0);
        let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1;
        assert!((get("requests_per_s").unwrap() - 38_000.0).abs() < 1e-6);
        assert_eq!(get("attempts_per_s"), Some(0.0));
        assert_eq!(get("requests_in_flight"), Some(4.0));
    }

    #[test]
    fn a_window_takes_each_workers_state_at_its_first_and_last_report() {
        // Two workers; the window opened with 2 + 1 requests in flight and 1 connect in progress.
        let mut t = ClientTotals::default();
        let mut first = keepalive_delta(0, 10);
        (first.requests_in_flight_at_start, first.requests_in_flight) = (2, 3);
        first.counts.requests = 11;
        first.connecting_at_start = 1;
        first.counts.established = 1;
        first.counts.attempts = 0;
        t.add(&first);
        let mut other = keepalive_delta(1, 5);
        (other.requests_in_flight_at_start, other.requests_in_flight) = (1, 1);
        t.add(&other);
        // Worker 0 stops: what it left is counted, its gauges go to 0.
        let mut last = keepalive_delta(0, 3);
        (last.requests_in_flight_at_start, last.requests_in_flight) = (3, 0);
        last.counts.requests_at_end = 0;
        last.counts.bad_responses = 3;
        last.counts.responses = 0;
        last.counts.requests = 0;
        t.add(&last);
        let totals = t.totals();
        assert_eq!(totals.identities_broken(), None, "{totals:?}");
        assert_eq!(totals.requests.in_flight_at_start, 3);
        assert_eq!(totals.connections.connecting_at_start, 1);
        assert_eq!(totals.requests.in_flight_at_end, 1);
    }

    #[test]
    fn a_pool_without_idle_connections_is_client_bound_and_says_which_to_raise() {
        let mut t = ClientTotals::default();
        let mut d = keepalive_delta(0, 1_000);
        d.pool = 16;
        d.target_rate = 10_000.0;
        d.counts.scheduled = 900;
        d.counts.pool_waits = 100;
        d.counts.pool_wait_us_sum = 100 * 2_500;
        // The server answered as quickly as unloaded (a 20 ms path): the pool set the pace.
        d.counts.pool_served = 1_000;
        d.counts.pool_service_us_sum = 1_000 * 21_000;
        d.pool_service_min_us = 20_400;
        t.add(&d);
        let why = client_bound_line(&t.client_bound(&OPEN));
        assert!(
            why.starts_with("no idle connection: 100 of 1000 requests waited for one of the pool's 16 (mean wait 2.5 ms) while the server answered in 21.0 ms on average, near its quickest (20.4 ms)"),
            "{why}"
        );
        assert!(why.contains("raise load.connections"), "{why}");
        // The same waits with a server that queued the pool's requests (answers 8x slower
        // than its quickest): the server set the pace, and the client is not the bound.
        let mut queued = d.clone();
        queued.counts.pool_service_us_sum = 1_000 * 8 * 20_400;
        let mut t = ClientTotals::default();
        t.add(&queued);
        assert!(
            !client_bound_line(&t.client_bound(&OPEN)).contains("no idle connection"),
            "{:?}",
            t.client_bound(&OPEN)
        );
        // A pool that kept up: a few waits under 1 % are not a bound.
        let mut t = ClientTotals::default();
        d.counts.scheduled = 999;
        d.counts.pool_waits = 1;
        t.add(&d);
        assert!(t.client_bound(&OPEN).is_empty());
        // The schedule's shortfall is counted in requests for a pool.
        let mut t = ClientTotals::default();
        d.target_rate = 20_000.0;
        t.add(&d);
        let why = client_bound_line(&t.client_bound(&OPEN));
        assert!(
            why.contains("50 % fewer requests than the schedule intended"),
            "{why}"
        );
    }

    #[test]
    fn a_sample_without_worker_reports_is_a_gap_not_a_zero() {
        let cols = ClientTotals::default().columns(0.2);
        for (name, v) in cols {
            assert_eq!(v, None, "{name} should be empty without client data");
        }
    }
}
