//! The summary row (one line of summary.csv / summary.json) and its parts that are more than
//! one number.

use serde::{Deserialize, Serialize};

/// The share of responses (%) that were not 2xx, when it is over 1 %: past that the throughput
/// counts error pages (a wrong request path gives a server's fast 404s) and is flagged.
pub fn non2xx_flag_pct(non2xx_per_s: f64, throughput_per_s: f64) -> Option<f64> {
    (throughput_per_s > 0.0 && non2xx_per_s > 0.01 * throughput_per_s)
        .then(|| 100.0 * non2xx_per_s / throughput_per_s)
}

/// One `[[network.path]]`'s figures in a point (seed 000 §4.4: client classes sharing a
/// server). Latencies cover completed requests; `connect_timeouts` says how many did not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathSummary {
    pub name: String,
    pub attempts_per_s: f64,
    pub throughput_per_s: f64,
    pub errors_per_s: f64,
    pub connect_timeouts: u64,
    pub connect_p50_ms: f64,
    pub connect_p99_ms: f64,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub total_p99_ms: f64,
}

/// One row of summary.csv / summary.json: one sweep point (or the whole run).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SummaryRow {
    pub point: usize,
    pub mode: String,
    pub param: String,
    pub value: String,
    pub failed: bool,
    pub error: String,
    pub hold_s: f64,
    /// The rate the schedule aimed at (attempts/s), NaN when flat out / closed.
    pub offered_rate: f64,
    pub attempts_per_s: f64,
    pub established_per_s: f64,
    /// Client-counted responses/s: the throughput (every complete response, whatever its status).
    pub throughput_per_s: f64,
    /// Of those, responses whose status was not 2xx (a 404 from a wrong path, a 503 ...).
    #[serde(default)]
    pub non2xx_per_s: f64,
    pub server_responses_per_s: f64,
    /// The server's access log over the hold by status class, lines/s (NaN without one).
    #[serde(default)]
    pub server_2xx_per_s: f64,
    #[serde(default)]
    pub server_3xx_per_s: f64,
    #[serde(default)]
    pub server_4xx_per_s: f64,
    #[serde(default)]
    pub server_5xx_per_s: f64,
    pub bytes_in_per_s: f64,
    pub errors_per_s: f64,
    pub connect_timeouts_per_s: f64,
    pub refused_per_s: f64,
    pub connect_p50_ms: f64,
    pub connect_p99_ms: f64,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub total_p98_ms: f64,
    pub total_p99_ms: f64,
    /// Little's Load Factor (seed 004): sum of response times / test time.
    pub little_load_factor: f64,
    pub syn_in_per_s: f64,
    pub accept_queue_mean: f64,
    pub accept_queue_max: f64,
    pub listen_overflows_per_s: f64,
    pub established_mean: f64,
    /// TCP sockets in use in the server's netns (sockstat `inuse`: every state but TIME_WAIT,
    /// closed-but-unacknowledged ones included): the server kernel's open connections in the
    /// lab; on loopback the client's sockets count too.
    #[serde(default)]
    pub server_sockets_mean: f64,
    /// Connections open at the clients (connecting or waiting for the response).
    #[serde(default)]
    pub client_open_mean: f64,
    pub time_wait_mean: f64,
    pub time_wait_max: f64,
    pub server_procs_mean: f64,
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_irq_pct: f64,
    pub cpu_softirq_pct: f64,
    pub cpu_idle_pct: f64,
    /// The rest of the split, so the columns add up to 100 % (nice: other niced work on the
    /// machine; steal: the hypervisor's).
    #[serde(default)]
    pub cpu_nice_pct: f64,
    #[serde(default)]
    pub cpu_iowait_pct: f64,
    #[serde(default)]
    pub cpu_steal_pct: f64,
    pub worker_cpu_pct: f64,
    /// Cross-checks in % difference (NaN when not measurable).
    pub check_syn_vs_attempts_pct: f64,
    /// The difference SYNs vs attempts may show from counting noise alone (see
    /// `probe::crosscheck::syn_check_tolerance_pct`); a larger one is flagged.
    #[serde(default)]
    pub check_syn_tolerance_pct: f64,
    pub check_server_vs_client_pct: f64,
    pub client_bound: bool,
    pub client_bound_reason: String,
    pub backend: String,
    /// The point's counts (summary.json only: the CSV has the rates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<super::Totals>,
    /// Each network path's figures (summary.json only; timeseries.csv has `path_<name>_*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathSummary>,
}
