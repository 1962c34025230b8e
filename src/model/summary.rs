//! Parts of a summary row that are more than one number.

use serde::{Deserialize, Serialize};

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
