//! The latency split of a sample row and of a window (issue 48 item 4): the clients' sums over
//! it and the server's times between its edges, as the time series' columns and the summary's
//! fields (the rule itself is `model::latency_split`).

use crate::lab::client_agg::ClientTotals;
use crate::model::latency_split::{ClientTimes, LatencySplit, ServerTimes, SynRetrans};
use crate::model::{col, Col};
use crate::target::config::ServerStats;

/// The clients' side of `t`: its completed requests' response times (from their histogram,
/// us) and the counters of the part before their requests went out.
pub(crate) fn client_times(t: &ClientTotals) -> ClientTimes {
    ClientTimes {
        responses: t.total.len(),
        total_ms_sum: t.total.mean() * t.total.len() as f64 / 1000.0,
        before_send_ms_sum: t.counts.before_send_us as f64 / 1000.0,
        first_responses: t.counts.first_responses,
        stream_wait_ms_sum: t.counts.stream_wait_us as f64 / 1000.0,
    }
}

/// What the server measured between two of its reports (None without both).
pub(crate) fn server_times(
    earlier: Option<&ServerStats>,
    now: Option<&ServerStats>,
) -> Option<ServerTimes> {
    Some(now?.times_since(earlier?))
}

/// `t`'s mean response time split, with the server's times over the same stretch.
pub(crate) fn split(t: &ClientTotals, server: Option<&ServerTimes>) -> Option<LatencySplit> {
    LatencySplit::of(&client_times(t), server)
}

/// A sample row's split columns.
pub(crate) fn columns(
    t: &ClientTotals,
    server: Option<&ServerTimes>,
    linear: u32,
) -> Vec<(Col, Option<f64>)> {
    let s = split(t, server);
    vec![
        (col::SPLIT_CONNECT, s.map(|s| s.connect_ms)),
        (col::SPLIT_QUEUE, s.and_then(|s| s.queue_ms)),
        (col::SPLIT_SERVICE, s.and_then(|s| s.service_ms)),
        (col::SPLIT_TRANSFER, s.map(|s| s.transfer_ms)),
        (
            col::CONNECT_RETRANS,
            SynRetrans::of(&t.connect, linear).map(|r| r.retrans_pct),
        ),
    ]
}
