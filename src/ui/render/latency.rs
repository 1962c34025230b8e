//! Panel: latency percentiles (p50/p90/p99) of connect time and total time, measured from the
//! scheduled start. A table of the latest values; a chart of p50 and p99 below when there is room.

use super::common::{line_chart, ms, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::{col as c, Col};
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let theme = &app.theme;
    let inner = panel(area, buf, "latency (ms)", theme);
    let cell = |col: Col| format!("{:>8}", ms(st.store.last(col)));
    let mut lines = vec![Line::from(Span::styled(
        format!("{:<8}{:>8}{:>8}{:>8}", "", "p50", "p90", "p99"),
        theme.dim(),
    ))];
    for (name, cols) in [
        ("connect", [c::CONNECT_P50, c::CONNECT_P90, c::CONNECT_P99]),
        ("total", [c::TOTAL_P50, c::TOTAL_P90, c::TOTAL_P99]),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("{name:<8}"), theme.label()),
            Span::raw(cols.iter().map(|k| cell(*k)).collect::<String>()),
        ]));
    }
    let table_h = (lines.len() as u16).min(inner.height);
    Paragraph::new(lines).render(
        Rect {
            height: table_h,
            ..inner
        },
        buf,
    );
    let rest = Rect {
        y: inner.y + table_h,
        height: inner.height - table_h,
        ..inner
    };
    if rest.height >= 6 {
        let series = [
            Series::column(st, "conn p50", c::CONNECT_P50, w),
            Series::column(st, "conn p99", c::CONNECT_P99, w),
            Series::column(st, "total p50", c::TOTAL_P50, w),
            Series::column(st, "total p99", c::TOTAL_P99, w),
        ];
        line_chart(rest, buf, st, w, &series, theme);
    }
}
