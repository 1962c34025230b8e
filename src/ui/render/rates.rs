//! Panel: offered vs achieved. Target rate, SYNs arriving at the server (pcap), attempts,
//! established and responses per second, and errors + connect timeouts per second.

use super::common::{line_chart, panel, Series, Window};
use crate::lab::columns as c;
use crate::lab::state::LabState;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let inner = panel(area, buf, "offered vs achieved  /s", &app.theme);
    let series = [
        Series::column(st, "target", c::TARGET_RATE, w),
        Series::column(st, "SYN in", c::SYN_IN, w),
        Series::column(st, "attempts", c::ATTEMPTS, w),
        Series::column(st, "established", c::ESTABLISHED, w),
        Series::column(st, "responses", c::RESPONSES, w),
        Series::sum(st, "err+timeout", c::ERRORS, c::CONNECT_TIMEOUTS, w),
    ];
    line_chart(inner, buf, st, w, &series, &app.theme);
}
