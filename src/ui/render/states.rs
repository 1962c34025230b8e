//! Panel: TCP connection states of the server over time (ESTABLISHED, TIME_WAIT): the port's,
//! and where the probed namespace holds other servers' sockets, its TIME_WAIT apart, labelled.

use super::common::{line_chart, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let inner = panel(area, buf, "TCP states", &app.theme);
    let series = if super::queue::netns_shared(st) {
        vec![
            Series::column(st, "ESTABLISHED port", c::ESTABLISHED_SOCKS, w),
            Series::column(st, "TIME_WAIT port", c::PORT_TIME_WAIT, w),
            Series::column(st, "TIME_WAIT netns", c::TIME_WAIT, w),
        ]
    } else {
        vec![
            Series::column(st, "ESTABLISHED", c::ESTABLISHED_SOCKS, w),
            Series::column(st, "TIME_WAIT", c::TIME_WAIT, w),
        ]
    };
    line_chart(inner, buf, st, w, &series, &app.theme);
}
