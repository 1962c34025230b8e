//! The worker's contract with the controller: its configuration (passed as JSON on the command
//! line of `synlab worker`), control messages (JSON lines on the worker's stdin) and stats deltas
//! (JSON lines on its stdout, one per stats interval). Deltas, so nothing is lost or counted twice.

pub use super::notice::WorkerNotice;
use crate::metrics::hist::HistDelta;
use crate::model::Counters;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};

/// The lab's workers report their counts every 100 ms.
pub const REPORT_INTERVAL_MS: u64 = 100;

/// How connection attempts are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Seed 000 §4.2: D slots, non-blocking connect, timeout T, immediate reconnect. With a
    /// `rate`, slots take their start times from an arrival schedule; without, they run flat out.
    Sclient,
    /// Open loop: a connection starts at each scheduled arrival; D caps concurrent attempts
    /// (an arrival finding the cap reached is counted in `client_cap_drops`). With a pool of
    /// `connections`, each arrival is a request instead, sent on an idle connection of the
    /// pool (see [`WorkerConfig::connections`]).
    Open,
    /// Closed loop ("simple clients", seed 000 §3): N clients, each waits for its response
    /// (or an error), then thinks, then sends the next request.
    Closed,
}

/// Spacing of scheduled arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    Poisson,
    Constant,
}

/// Burst modulation (seed 000 Fig. 8): for `fraction` of each `period` the rate is
/// `ratio` x average; the off-peak rate is derived so the average stays the configured rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Burst {
    pub ratio: f64,
    pub fraction: f64,
    pub period_s: f64,
}

/// One entry of the request mix: a URL path requested with probability proportional to `weight`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixEntry {
    /// Class label used in results (e.g. "class1", "cgi").
    pub class: String,
    pub path: String,
    pub weight: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerConfig {
    pub id: u32,
    pub target: SocketAddr,
    /// Source addresses to spread connections over (lab client addresses); empty = kernel's choice.
    #[serde(default)]
    pub bind_addrs: Vec<IpAddr>,
    pub mode: Mode,
    /// Arrivals/s for this worker (open; sclient when throttled): connection attempts, or
    /// requests with a pool of `connections`. None = sclient flat out.
    pub rate: Option<f64>,
    pub arrivals: Arrivals,
    /// D: sclient slots, or the cap on concurrent attempts in open mode.
    pub sockets: u32,
    /// N for closed mode.
    pub clients: u32,
    pub think_s: f64,
    /// T: connect timeout.
    pub timeout_s: f64,
    /// Give up on a response after this long (counted as response_timeouts).
    pub response_timeout_s: f64,
    pub burst: Option<Burst>,
    pub mix: Vec<MixEntry>,
    /// HTTP/1.1 keep-alive with `requests_per_conn` requests per connection; else HTTP/1.0.
    pub keepalive: bool,
    pub requests_per_conn: u32,
    /// Open mode with keep-alive: a pool of this many persistent connections (reopened when
    /// the server closes one or after `requests_per_conn` requests); each scheduled arrival is
    /// a request sent on an idle one, its latency measured from its scheduled time (a request
    /// that waits for a free connection waits on the clock). 0 = no pool.
    #[serde(default)]
    pub connections: u32,
    pub host_header: String,
    /// Hard bound on the worker's lifetime; it stops by itself after this.
    pub duration_s: f64,
    /// How often the worker reports its counts (the lab uses `REPORT_INTERVAL_MS`).
    pub stats_interval_ms: u64,
    pub seed: u64,
    /// Start with load paused (the TUI can start paused).
    #[serde(default)]
    pub paused: bool,
    /// Speak TLS: each connection's handshake follows its connect (None: plain HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::tls::ClientTls>,
    /// The statuses counted as good responses (`[gate] good_statuses`; empty: every 2xx).
    #[serde(default)]
    pub good_statuses: crate::model::counters::GoodStatuses,
    /// Speak HTTP/2 with up to this many streams per connection (M; h2 by ALPN over TLS, h2c
    /// with prior knowledge in the clear); None: HTTP/1.x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// Speak HTTP/3 over QUIC (issue 47; needs `tls`, TLS 1.3), `streams` requests at once
    /// per connection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3: bool,
}

#[cfg(test)]
impl WorkerConfig {
    /// The lib's tests' worker: S-Client, D = 10,000, T = 0.5 s, HTTP/1.x over TCP, one point
    /// of 1 s; a test changes what it is about with `..WorkerConfig::for_test(target)`.
    pub(crate) fn for_test(target: SocketAddr) -> Self {
        WorkerConfig {
            id: 1,
            target,
            bind_addrs: vec![],
            mode: Mode::Sclient,
            rate: None,
            arrivals: Arrivals::Constant,
            sockets: 10_000,
            clients: 0,
            think_s: 0.0,
            timeout_s: 0.5,
            response_timeout_s: 2.0,
            burst: None,
            mix: vec![],
            keepalive: false,
            requests_per_conn: 1,
            connections: 0,
            host_header: "t".into(),
            duration_s: 1.0,
            stats_interval_ms: 100,
            seed: 1,
            paused: false,
            tls: None,
            good_statuses: Default::default(),
            streams: None,
            http3: false,
        }
    }
}

/// Controller -> worker, one JSON object per line on the worker's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Control {
    /// Every live knob of this worker's load, sent whole on each change: the worker applies
    /// what differs from what it runs, all or nothing.
    Load(LoadSettings),
    /// Start nothing new; exit (after a final stats delta) once nothing is in flight.
    Drain,
    /// Close everything and exit after sending a final stats delta.
    Stop,
}

/// A worker's share of the load's live knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadSettings {
    pub mode: Mode,
    /// Attempts/s (requests/s over a pool); None: S-Client flat out. A new rate continues the
    /// schedule from now at the new spacing (no catch-up burst for the time before).
    pub rate: Option<f64>,
    pub sockets: u32,
    pub clients: u32,
    pub timeout_s: f64,
    /// None: bursts off.
    pub burst: Option<Burst>,
    pub paused: bool,
    /// Over TLS, the share of handshakes that resume, from the next handshake on (None: no TLS).
    pub resumed: Option<f64>,
    /// Over HTTP/2, the streams per connection (M) from now on (None: HTTP/1.x).
    #[serde(default)]
    pub streams: Option<u32>,
    /// With keep-alive, the requests a connection carries, from each connection's next response
    /// on (None: a connection per request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_conn: Option<u32>,
}

impl LoadSettings {
    /// The settings a worker starts with.
    pub fn of(cfg: &WorkerConfig) -> LoadSettings {
        LoadSettings {
            mode: cfg.mode,
            rate: cfg.rate,
            sockets: cfg.sockets,
            clients: cfg.clients,
            timeout_s: cfg.timeout_s,
            burst: cfg.burst,
            paused: cfg.paused,
            resumed: cfg.tls.as_ref().map(|t| t.resumed),
            streams: cfg.streams,
            requests_per_conn: cfg.keepalive.then_some(cfg.requests_per_conn),
        }
    }

    /// A worker's config with these settings, as it starts (the inverse of [`LoadSettings::of`]):
    /// a worker started mid-run starts with the knobs as they are.
    pub fn apply_to(&self, cfg: &mut WorkerConfig) {
        cfg.mode = self.mode;
        cfg.rate = self.rate;
        cfg.sockets = self.sockets;
        cfg.clients = self.clients;
        cfg.timeout_s = self.timeout_s;
        cfg.burst = self.burst;
        cfg.paused = self.paused;
        if let (Some(share), Some(tls)) = (self.resumed, cfg.tls.as_mut()) {
            tls.resumed = share;
        }
        if let Some(n) = self.requests_per_conn {
            cfg.requests_per_conn = n;
        }
        if self.streams.is_some() {
            cfg.streams = self.streams;
        }
    }
}

/// A control line the worker could not read: it is ignored, and said in the worker's notices.
#[derive(Debug, thiserror::Error)]
#[error("ignored control line {line:?}: {error}")]
pub struct BadControl {
    pub line: String,
    pub error: serde_json::Error,
}

impl Control {
    /// One control line as the controller wrote it.
    pub fn parse(line: &str) -> Result<Control, BadControl> {
        serde_json::from_str(line).map_err(|error| BadControl {
            line: line.to_string(),
            error,
        })
    }
}

/// Worker -> controller, one JSON object per line on the worker's stdout: counter deltas since
/// the previous message, gauges as of now, histogram deltas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsDelta {
    pub worker: u32,
    pub seq: u64,
    /// Seconds since the worker started (monotonic clock) at the end of this interval.
    pub t_s: f64,
    pub interval_s: f64,
    /// The rate the schedule aimed at during this interval (burst phase included): attempts/s,
    /// or requests/s with a pool of connections.
    pub target_rate: f64,
    /// Counter deltas over this interval (flattened: the wire format is unchanged).
    #[serde(flatten)]
    pub counts: Counters,
    /// Gauges at the end of the interval: connects in progress (over TLS with their
    /// handshakes), established connections,
    /// requests sent (or being sent) and not yet answered or failed.
    pub connecting: u64,
    pub active: u64,
    #[serde(default)]
    pub requests_in_flight: u64,
    /// The same gauges at the start of the interval (the previous report's), so a window of
    /// reports states both identities: attempts + connecting at its start = established +
    /// connection errors + connecting at its end, and requests + in flight at its start =
    /// responses + request errors + in flight at its end.
    #[serde(default)]
    pub connecting_at_start: u64,
    #[serde(default)]
    pub requests_in_flight_at_start: u64,
    /// The pool of persistent connections this worker keeps (0: none).
    #[serde(default)]
    pub pool: u32,
    /// The quickest answer a pool request has had so far (us, from its send to its response;
    /// 0: none yet): the server's time for a request when nothing queued before it.
    #[serde(default)]
    pub pool_service_min_us: u64,
    /// Of `connecting`, TLS handshakes in progress (their connects are done).
    #[serde(default)]
    pub handshaking: u64,
    /// Multiplexed (HTTP/2): the most requests in flight on one connection in this interval,
    /// and the server's advertised limit as last read (None: none said, or HTTP/1.x).
    #[serde(default)]
    pub streams_max: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams_limit: Option<u32>,
    /// How late the latest scheduled start of this interval was, at most (us).
    pub lag_us_max: u64,
    /// The worker's own CPU time in this interval (s).
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Latency histograms (us), measured from the scheduled start.
    pub connect_us: HistDelta,
    pub ttfb_us: HistDelta,
    pub total_us: HistDelta,
    /// Each request class's share of this report, when the mix has two or more classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassDelta>,
    /// TLS handshakes' own durations (us), from the connect's end to the handshake's.
    #[serde(default)]
    pub handshake_us: HistDelta,
    /// Set on the final message after Stop or the duration bound.
    #[serde(default)]
    pub last: bool,
    /// What the worker has to say once, raised since the last report (each kind once per
    /// worker; the lab keeps one of each kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<WorkerNotice>,
    /// Why a TLS handshake failed, in words (which check, what to do) and the counter it is
    /// in: the first failure of each kind, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_failure: Option<String>,
    /// Over HTTP/3, the QUIC client's counts over this interval (None over TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<crate::quic::stats::QuicDelta>,
}

/// One request class's share of a report (the mix's `class` labels; sent when the mix has two
/// or more): the counts, gauges and latencies of the requests of that class and of the
/// connections opened for them. A connection counts in the class of the request it was opened
/// for (its first; a kept-alive connection's later requests count in their own classes); a
/// pool's connections are opened for no request and count in no class. Both identities hold
/// per class, and the classes' requests add up to the report's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassDelta {
    pub name: String,
    #[serde(flatten)]
    pub counts: Counters,
    pub connecting: u64,
    pub requests_in_flight: u64,
    #[serde(default)]
    pub connecting_at_start: u64,
    #[serde(default)]
    pub requests_in_flight_at_start: u64,
    pub connect_us: HistDelta,
    pub total_us: HistDelta,
}
