//! Panel: TCP connection states of the server's port over time: the connections it holds
//! (ESTABLISHED, FIN_WAIT-1/2, CLOSE_WAIT, LAST_ACK: each holds a socket, and in a
//! process-per-connection server a process, until it closes) and TIME_WAIT; where the probed
//! namespace holds other servers' sockets, its TIME_WAIT apart, labelled.

use super::common::{line_chart, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The states of a connection the server still holds: "held" is their sum (a lesson's
/// "connections open at once": with a lingering close most of them sit in FIN_WAIT).
pub const HELD: [crate::model::Col; 4] = crate::model::expect::HELD;

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let inner = panel(area, buf, "TCP states", &app.theme);
    let shared = super::queue::netns_shared(st);
    let port = |label: &str| {
        if shared {
            format!("{label} port")
        } else {
            label.to_string()
        }
    };
    let mut series = vec![
        Series::sum_of(st, &port("held"), &HELD, w),
        Series::column(st, &port("ESTAB"), c::ESTABLISHED_SOCKS, w),
        Series::column(st, "FIN_WAIT", c::FIN_WAIT, w),
        Series::value_only(st, "CLOSE_WAIT", c::CLOSE_WAIT),
        Series::value_only(st, "LAST_ACK", c::LAST_ACK),
    ];
    if shared {
        series.push(Series::column(st, "TIME_WAIT port", c::PORT_TIME_WAIT, w));
        // A chart draws at most four lines: the namespace's count is a header figure.
        series.push(Series::value_only(st, "TIME_WAIT netns", c::TIME_WAIT));
    } else {
        series.push(Series::column(st, "TIME_WAIT", c::TIME_WAIT, w));
    }
    line_chart(inner, buf, st, w, &series, &app.theme);
}
