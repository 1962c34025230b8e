//! The built-in server's configuration (JSON on the command line of the lab-started server, or
//! flags of `synlab serve`) and the stats lines it prints for the controller's cross-checks.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// One epoll loop (like Zeus / nginx with one worker).
    Event,
    /// N processes blocking in accept (like Apache prefork), grown up to max_workers.
    Prefork,
    /// A pool of threads blocking in accept.
    Threaded,
}

/// What a request's service time is spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    /// Busy CPU work for the service time (capacity = cores / service time).
    Cpu,
    /// Sleep for the service time (capacity = workers / service time; event arch: timers).
    Sleep,
}

/// The generated file set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileSet {
    /// SPECweb96 classes (seed 001 Table 2): class0 0-1 KB, class1 1-10 KB, class2 10-100 KB,
    /// class3 100 KB-1 MB; files `/specweb96/class{c}_{i}` for i in 1..=9 of size i x 1/10 class top.
    Specweb96,
    /// `count` files `/pareto/{i}` with Pareto(alpha, min_bytes) sizes (seeded).
    Pareto {
        alpha: f64,
        min_bytes: u64,
        count: u32,
        seed: u64,
    },
    /// Files `/file/{size}` of exactly these sizes.
    Explicit { sizes: Vec<u64> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub arch: Arch,
    /// Processes (prefork) or threads (threaded) to start with; event: ignored (one loop).
    pub workers: u32,
    /// Prefork/threaded grow to this many while all are busy, and never beyond (Apache's
    /// MaxRequestWorkers): past it, connections wait in the accept queue.
    pub max_workers: u32,
    pub backlog: i32,
    pub service_time_us: u64,
    pub service: ServiceKind,
    pub files: Vec<FileSet>,
    /// Honour HTTP/1.1 keep-alive (else close after every response).
    pub keepalive: bool,
    /// Period of the stats lines on stdout (0 = none).
    pub stats_interval_ms: u64,
    /// Event arch: connections accepted per loop iteration (1 = nginx's `multi_accept off`,
    /// so under overload the kernel's accept queue fills as with real servers; 0 = drain it).
    #[serde(default = "default_accept_batch")]
    pub accept_batch: u32,
    /// Prefork/threaded: after a connection's last response, shut down writing and read until
    /// the client's FIN before freeing the worker (Apache's lingering close).
    #[serde(default = "default_true")]
    pub lingering_close: bool,
    /// Longest silence waited for during a lingering close (Apache: 2 s).
    #[serde(default = "default_linger_timeout_ms")]
    pub linger_timeout_ms: u64,
    /// Serve HTTPS: the certificate, and whether sessions are cached and tickets issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::tls::ServerTls>,
    /// Event arch over HTTP/2: streams served at once per connection (its
    /// SETTINGS_MAX_CONCURRENT_STREAMS; past it, streams are refused).
    #[serde(default = "default_max_streams")]
    pub max_streams: u32,
    /// Event arch over TLS: also serve HTTP/3 on a UDP socket of the same port (issue 47).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3Options>,
}

/// How the built-in server serves HTTP/3.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Http3Options {
    /// Answer a first Initial with a Retry (address validation) before any handshake.
    #[serde(default)]
    pub retry: bool,
    /// Accept 0-RTT data from resuming clients.
    #[serde(default)]
    pub early_data: bool,
    /// The UDP socket's SO_RCVBUF in bytes (None: the namespace's rmem_default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<u32>,
}

fn default_max_streams() -> u32 {
    crate::http2::server::DEFAULT_MAX_STREAMS
}

fn default_accept_batch() -> u32 {
    1
}

fn default_true() -> bool {
    true
}

fn default_linger_timeout_ms() -> u64 {
    super::linger::SECONDS_TO_LINGER.as_millis() as u64
}

/// A live change to a lab-started server: one JSON line on its stdin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerControl {
    /// Listen again with this backlog (a `target.backlog` sweep's point).
    pub backlog: Option<u32>,
}

/// A line a lab-started server prints besides its stats: what run.log records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerNote {
    /// How its CPU work was calibrated at start.
    Calibration(super::work::Calibration),
    /// A backlog change was applied (or why not).
    Backlog { backlog: u32, error: Option<String> },
}

impl ServerNote {
    /// The run.log line.
    pub fn describe(&self) -> String {
        match self {
            ServerNote::Calibration(c) => format!("server: {}", c.describe()),
            ServerNote::Backlog {
                backlog,
                error: None,
            } => {
                format!("server: listening with backlog {backlog}")
            }
            ServerNote::Backlog {
                backlog,
                error: Some(e),
            } => format!("server: could not listen with backlog {backlog}: {e}"),
        }
    }
}

/// Apache 2.4 prefork's MaxRequestWorkers as shipped in its httpd-mpm.conf and Debian's
/// mpm_prefork.conf (the compiled-in default is 256).
pub const DEFAULT_MAX_WORKERS: u32 = 150;

/// One line the server prints on stdout every stats interval: cumulative totals since start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    pub t_s: f64,
    pub accepted: u64,
    pub requests: u64,
    /// Responses fully written (the server's own count, for cross-checks).
    pub responses: u64,
    pub responses_404: u64,
    pub bytes_out: u64,
    /// Connections open now.
    pub open_conns: u64,
    /// Processes or threads serving now.
    pub workers: u64,
    /// Workers busy with a connection now (prefork/threaded; event: 0 or 1 while serving).
    #[serde(default)]
    pub busy: u64,
    /// Requests answered 400/431/501 (counted in `responses` too when fully written).
    #[serde(default)]
    pub bad_requests: u64,
    /// Dynamic requests answered (seed 003 endpoints) and those that failed.
    #[serde(default)]
    pub dyn_cgi: u64,
    #[serde(default)]
    pub dyn_inproc: u64,
    #[serde(default)]
    pub dyn_db: u64,
    #[serde(default)]
    pub dyn_errors: u64,
    /// TLS handshakes done, full and resumed, and those that failed or were abandoned.
    #[serde(default)]
    pub tls_full: u64,
    #[serde(default)]
    pub tls_resumed: u64,
    #[serde(default)]
    pub tls_failed: u64,
    /// HTTP/2 streams served (in `requests` too) and refused past `max_streams`.
    #[serde(default)]
    pub h2_streams: u64,
    #[serde(default)]
    pub h2_refused: u64,
    /// HTTP/3: QUIC handshakes (of them with 0-RTT accepted), Retry packets sent, request
    /// streams served (in `requests` too).
    #[serde(default)]
    pub h3_handshakes: u64,
    #[serde(default)]
    pub h3_0rtt: u64,
    #[serde(default)]
    pub h3_retries: u64,
    #[serde(default)]
    pub h3_streams: u64,
    /// HTTP/3: datagrams read from the UDP socket, of them Initials, and the connection
    /// attempts taken in (`Counters::h3_datagrams_in`).
    #[serde(default)]
    pub h3_datagrams_in: u64,
    #[serde(default)]
    pub h3_initials_in: u64,
    #[serde(default)]
    pub h3_incoming: u64,
    /// Where the server listens (the real port when the config asked for port 0).
    #[serde(default)]
    pub listen: String,
    /// Pid of the server (the prefork parent).
    #[serde(default)]
    pub pid: u32,
    /// The accepted connections' exact waits in the accept queue since the start: (lowest ms
    /// of a bucket, count) per bucket that counted (`model::acceptq::ExactWait::of`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept_wait_ms: crate::model::acceptq::WaitCounts,
    /// Requests timed from their read to their response starting to go out, and that time
    /// summed since the start (us): the latency split's service (issue 48 item 4).
    #[serde(default)]
    pub served: u64,
    #[serde(default)]
    pub service_us: u64,
}

impl ServerStats {
    /// What the server measured of the latency split between `earlier` and these totals: its
    /// accepted connections' accept-queue waits and its requests' service.
    pub fn times_since(&self, earlier: &ServerStats) -> crate::model::latency_split::ServerTimes {
        let (waits, wait_ms_sum) =
            crate::model::latency_split::waits_since(&self.accept_wait_ms, &earlier.accept_wait_ms);
        crate::model::latency_split::ServerTimes {
            waits,
            wait_ms_sum,
            served: self.served.saturating_sub(earlier.served),
            service_us_sum: self.service_us.saturating_sub(earlier.service_us),
        }
    }

    /// Responses written between `earlier` and these totals, and their rate (per second); None
    /// when no time passed between the two. A count that went backwards (a restarted server)
    /// counts 0.
    pub fn responses_since(&self, earlier: &ServerStats) -> Option<(u64, f64)> {
        (self.t_s > earlier.t_s).then(|| {
            let n = self.responses.saturating_sub(earlier.responses);
            (n, n as f64 / (self.t_s - earlier.t_s))
        })
    }

    /// QUIC handshakes completed and Retry packets sent between `earlier` and these totals
    /// (HTTP/3); None when no time passed. Whole: quinn-proto does not tell a server which of
    /// its handshakes resumed, so there is no full/resumed split to give.
    pub fn quic_since(&self, earlier: &ServerStats) -> Option<(u64, u64)> {
        (self.t_s > earlier.t_s).then(|| {
            (
                self.h3_handshakes.saturating_sub(earlier.h3_handshakes),
                self.h3_retries.saturating_sub(earlier.h3_retries),
            )
        })
    }

    /// TLS handshakes over TCP (full, resumed) done between `earlier` and these totals; None
    /// when no time passed.
    pub fn handshakes_since(&self, earlier: &ServerStats) -> Option<(u64, u64)> {
        (self.t_s > earlier.t_s).then(|| {
            (
                self.tls_full.saturating_sub(earlier.tls_full),
                self.tls_resumed.saturating_sub(earlier.tls_resumed),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_since_counts_and_rates_an_interval() {
        let at = |t_s: f64, responses: u64| ServerStats {
            t_s,
            responses,
            ..Default::default()
        };
        assert_eq!(
            at(3.0, 700).responses_since(&at(1.0, 100)),
            Some((600, 300.0))
        );
        // No time between the two: no rate.
        assert_eq!(at(1.0, 700).responses_since(&at(1.0, 100)), None);
        // A restarted server's count went backwards: 0, not a wrapped u64.
        assert_eq!(at(2.0, 5).responses_since(&at(1.0, 100)), Some((0, 0.0)));
    }
}
