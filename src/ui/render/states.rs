//! Panel: TCP connection states of the server over time (ESTABLISHED, TIME_WAIT).

use super::common::{line_chart, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let inner = panel(area, buf, "TCP states", &app.theme);
    let series = [
        Series::column(st, "ESTABLISHED", c::ESTABLISHED_SOCKS, w),
        Series::column(st, "TIME_WAIT", c::TIME_WAIT, w),
    ];
    line_chart(inner, buf, st, w, &series, &app.theme);
}
