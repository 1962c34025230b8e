//! The client-bound diagnosis (seed 000 §4.3): whether the client, not the server, limited a
//! measurement, whether a window measured anything at all, and why every attempt of one
//! failed, each judged from the clients' sums ([`ClientTotals`]).

use super::ClientTotals;
use crate::load::protocol::Mode;

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

impl ClientTotals {
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
            .workers
            .values()
            .map(|w| w.pool_service_min_us)
            .filter(|&us| us > 0)
            .min();
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
                    Some(self.scheduling_workers().max(1) as f64 / r)
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
        let reported = self.workers.len();
        if reported < workers {
            return Some(NothingMeasured::Silent {
                silent: workers - reported,
                workers,
                window_s,
            });
        }
        // Reports every 100 ms: a worker whose reports cover under half the window stopped.
        if window_s >= 1.0 {
            if let Some((w, r)) = self.workers.iter().find(|(_, r)| r.span_s < 0.5 * window_s) {
                return Some(NothingMeasured::Stopped {
                    worker: *w,
                    span_s: r.span_s,
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
            Some("bad_responses") => match c.bad_by_reason.top() {
                Some((reason, n)) => format!(
                    "no response was a complete HTTP response: {reason} ({n} of {} bad responses)",
                    c.bad_responses
                ),
                None => "no response was a complete HTTP response".into(),
            },
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
}
