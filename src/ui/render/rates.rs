//! Panel: offered vs achieved. What the schedule aims at, connections (attempts) started,
//! responses and connection errors per second on the chart; SYNs arriving at the server
//! (pcap; over HTTP/3 the clients' first QUIC Initials), connections established, requests begun (keep-alive carries many on one
//! connection) and request errors in the header; over TLS the handshakes per second, full and
//! resumed, and the failed ones (connection errors) in the header too. Each error figure is
//! one column of timeseries.csv, never a sum of overlapping ones.

use super::common::{charted_events, clip, line_chart, panel, Series, Window};
use crate::lab::state::LabState;
use crate::load::protocol::Mode;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// What the schedule's line is, by mode: a target (attempts/s, or requests/s over a pool),
/// the least a flat-out S-Client offers (D/T: every connect timing out), or nothing (a closed
/// loop has no schedule).
fn target_label(st: &LabState, short: bool) -> Option<&'static str> {
    let k = &st.knobs;
    match (k.mode, k.rate) {
        (Mode::Closed, _) => None,
        (Mode::Sclient, None) => Some(if short { "D/T" } else { "D/T min" }),
        _ => Some(if short { "tgt" } else { "target" }),
    }
}

/// The rate of the server's first packets: over HTTP/3 the clients' first Initials (pcap), a
/// connection's first packet as the SYN is TCP's; else the SYNs.
fn first_packets(st: &LabState, short: bool) -> Series {
    if super::udp::quic_load(st) {
        let label = if short { "1st Init" } else { "first Initials" };
        return Series::value_only(st, label, c::QUIC_FIRST_INITIAL_PER_S);
    }
    Series::value_only(st, syn_label(st, short), c::SYN_IN)
}

/// The SYN rate's label: whose it is where the probed namespace holds other servers' sockets
/// (the port's, counted by pcap; or the namespace's estimate from its counters, every port).
fn syn_label(st: &LabState, short: bool) -> &'static str {
    let estimated = st.store.last(c::SYN_IN_ESTIMATED) == Some(1.0);
    match (super::queue::netns_shared(st), estimated, short) {
        (false, _, false) => "SYN in",
        (false, _, true) => "SYN",
        (true, false, false) => "SYN in port",
        (true, false, true) => "SYN port",
        (true, true, false) => "SYN in netns est",
        (true, true, true) => "SYN* ns",
    }
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let inner = panel(area, buf, "offered vs achieved  /s", &app.theme);
    // Short labels on narrow panels so the header keeps to two lines.
    let short = inner.width < 60;
    let l = |long: &'static str, brief: &'static str| if short { brief } else { long };
    let mut series = Vec::new();
    if let Some(t) = target_label(st, short) {
        series.push(Series::column(st, t, c::TARGET_RATE, w));
    }
    // Over a pool of persistent connections the rate is of requests: those are drawn, and
    // the connections (near 0 once the pool is open) are in the header.
    let pool = st.store.last(c::POOL_CONNECTIONS).unwrap_or(0.0) > 0.0;
    let (drawn, started, failed, other, other_err) = if pool {
        (
            (l("requests", "req"), c::REQUESTS),
            (l("responses", "resp"), c::RESPONSES),
            (l("req err", "rerr"), c::REQUEST_ERRORS),
            (l("connections", "conn"), c::ATTEMPTS),
            (l("conn err", "cerr"), c::CONNECTION_ERRORS),
        )
    } else {
        (
            (l("connections", "conn"), c::ATTEMPTS),
            (l("responses", "resp"), c::RESPONSES),
            (l("conn err", "cerr"), c::CONNECTION_ERRORS),
            (l("requests", "req"), c::REQUESTS),
            (l("req err", "rerr"), c::REQUEST_ERRORS),
        )
    };
    series.extend([
        Series::column(st, drawn.0, drawn.1, w),
        Series::column(st, started.0, started.1, w),
        Series::column(st, failed.0, failed.1, w).as_error(),
        first_packets(st, short),
    ]);
    // A short panel keeps its chart: the figures that are not drawn give way first.
    let roomy = inner.height >= 10;
    // Over TLS: the handshakes, full and resumed (what a handshake flood is about), and
    // those that failed.
    let tls = st.knobs.resumed.is_some();
    if tls {
        series.extend([
            Series::value_only(st, l("hs full", "full"), c::FULL_HANDSHAKES),
            Series::value_only(st, l("hs resumed", "resm"), c::RESUMED_HANDSHAKES),
        ]);
    }
    if tls && roomy {
        series.push(Series::value_only(
            st,
            l("hs err", "herr"),
            c::HANDSHAKE_ERRORS,
        ));
    }
    if pool || roomy {
        series.push(Series::value_only(st, other.0, other.1));
    }
    if roomy {
        series.extend([
            Series::value_only(st, l("established", "est"), c::ESTABLISHED),
            Series::value_only(st, other_err.0, other_err.1),
        ]);
    }
    // What the latest dotted column on the charts is: its time first, its words cut with
    // "…" to the panel (run.log and events.csv have them whole).
    if let Some(e) = charted_events(st, w).next_back().filter(|_| roomy) {
        let text = format!("@{:.0}s {}", e.t_s, e.text);
        series.push(Series {
            label: crate::ui::theme::EVENT_MARKER.1.into(),
            points: None,
            value: None,
            latest: Some(clip(&text, usize::from(inner.width).saturating_sub(2))),
            plotted: false,
            error: false,
            gives_way: false,
        });
    }
    line_chart(inner, buf, st, w, &series, &app.theme);
}
