//! Panel: offered vs achieved. Target rate, SYNs arriving at the server (pcap), connections
//! (attempts and established) and requests per second apart (keep-alive carries many requests
//! on one connection), responses per second, and the errors of each; over TLS the handshakes
//! per second, full and resumed, and the failed ones.

use super::common::{line_chart, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let inner = panel(area, buf, "offered vs achieved  /s", &app.theme);
    // Short labels on narrow panels so the header keeps to two lines.
    let short = inner.width < 60;
    let l = |long: &'static str, brief: &'static str| if short { brief } else { long };
    let mut series = vec![
        Series::column(st, l("target", "tgt"), c::TARGET_RATE, w),
        Series::column(st, l("SYN in", "SYN"), c::SYN_IN, w),
        Series::column(st, l("connections", "conn"), c::ATTEMPTS, w),
        Series::column(st, l("established", "est"), c::ESTABLISHED, w),
        Series::column(st, l("requests", "req"), c::REQUESTS, w),
        Series::column(st, l("responses", "resp"), c::RESPONSES, w),
        Series::column(st, l("conn err", "cerr"), c::CONNECTION_ERRORS, w),
        Series::column(st, l("req err", "rerr"), c::REQUEST_ERRORS, w),
    ];
    // Over TLS: the handshakes, full and resumed, and those that failed (connection errors).
    if st.knobs.resumed.is_some() {
        series.extend([
            Series::column(st, l("hs full", "full"), c::FULL_HANDSHAKES, w),
            Series::column(st, l("hs resumed", "resm"), c::RESUMED_HANDSHAKES, w),
            Series::column(st, l("hs err", "herr"), c::HANDSHAKE_ERRORS, w),
        ]);
    }
    // What the latest dotted column on the charts is.
    if let Some(e) = st.store.events.iter().rev().find(|e| e.t_s >= w.since) {
        series.push(Series {
            label: "•".into(),
            points: None,
            latest: Some(format!("{} @{:.0}s", e.text, e.t_s)),
        });
    }
    line_chart(inner, buf, st, w, &series, &app.theme);
}
