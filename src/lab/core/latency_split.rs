//! The latency split of a sample row and of a window (issue 48 item 4): the clients' sums over
//! it and the server's times between its edges, as the time series' columns and the summary's
//! fields (the rule itself is `model::latency_split`).

use crate::lab::client_agg::ClientTotals;
use crate::model::latency_split::{ClientTimes, LatencySplit, ServerTimes, SynRetrans};
use crate::model::{col, Col};
use crate::target::config::ServerStats;

/// The clients' side of `t`: its completed requests and connects, summed from their
/// histograms (us).
pub(crate) fn client_times(t: &ClientTotals) -> ClientTimes {
    let sum_ms = |h: &hdrhistogram::Histogram<u64>| h.mean() * h.len() as f64 / 1000.0;
    ClientTimes {
        responses: t.total.len(),
        total_ms_sum: sum_ms(&t.total),
        connects: t.connect.len(),
        connect_ms_sum: sum_ms(&t.connect),
        // A pool's connections were opened for no request: their connects are no request's.
        pooled: t.workers.values().any(|w| w.pool > 0),
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
