//! Panel: latency percentiles (p50/p90/p99) of connect time and total time, measured from the
//! scheduled start, and over TLS of the handshake's own duration. A table of the latest values (and each network path's, when there are
//! several); a chart of p50 and p99 below when there is room.

use super::common::{line_chart, ms, panel, render_top, Series, Window};
use crate::lab::state::LabState;
use crate::model::{col as c, Col, PathName};
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let theme = &app.theme;
    let inner = panel(area, buf, "latency (ms)", theme);
    let cell = |col: Col| format!("{:>8}", ms(st.store.last(col)));
    let mut rows: Vec<(String, [Col; 3])> = [
        ("connect", [c::CONNECT_P50, c::CONNECT_P90, c::CONNECT_P99]),
        ("total", [c::TOTAL_P50, c::TOTAL_P90, c::TOTAL_P99]),
    ]
    .into_iter()
    .map(|(name, cols)| (name.to_string(), cols))
    .collect();
    // Over TLS the handshake's own duration, between connect and total.
    let tls = st.knobs.resumed.is_some();
    if tls {
        rows.insert(
            1,
            (
                "tls hs".into(),
                [c::HANDSHAKE_P50, c::HANDSHAKE_P90, c::HANDSHAKE_P99],
            ),
        );
    }
    let totals = rows.len();
    // With several paths, each path's own percentiles follow (one path's would repeat the
    // totals); only for paths the lab measures, i.e. whose columns the store has.
    if st.knobs.paths.len() > 1 {
        for p in &st.knobs.paths {
            let path = PathName::new(&p.name);
            if st.store.col(c::CONNECT_P50.of_path(path)).is_none() {
                continue;
            }
            for (what, cols) in [
                ("conn", [c::CONNECT_P50, c::CONNECT_P90, c::CONNECT_P99]),
                ("total", [c::TOTAL_P50, c::TOTAL_P90, c::TOTAL_P99]),
            ] {
                rows.push((format!("{} {what}", p.name), cols.map(|k| k.of_path(path))));
            }
        }
    }
    // The label column fits the longest label, leaving the three figures their room.
    let label_w = rows
        .iter()
        .map(|r| r.0.chars().count() + 1)
        .max()
        .unwrap_or(8)
        .clamp(8, (inner.width as usize).saturating_sub(24).max(8));
    let mut lines = vec![Line::from(Span::styled(
        format!("{:<label_w$}{:>8}{:>8}{:>8}", "", "p50", "p90", "p99"),
        theme.dim(),
    ))];
    // Rows past the panel's height give way to a hint (as the CPU panel's cores do): the
    // totals, then as many whole paths as fit above it.
    let room = (inner.height as usize).saturating_sub(1);
    let shown = if rows.len() <= room {
        rows.len()
    } else {
        totals + room.saturating_sub(totals + 1) / 2 * 2
    };
    for (name, cols) in &rows[..shown] {
        let name: String = name.chars().take(label_w - 1).collect();
        lines.push(Line::from(vec![
            Span::styled(format!("{name:<label_w$}"), theme.label()),
            Span::raw(cols.iter().map(|k| cell(*k)).collect::<String>()),
        ]));
    }
    let hidden = (rows.len() - shown).div_ceil(2);
    if hidden > 0 {
        lines.push(Line::from(Span::styled(
            format!("+{hidden} path(s) (enlarge to see)"),
            theme.dim(),
        )));
    }
    let rest = render_top(lines, inner, buf);
    if rest.height >= 6 {
        let mut series = vec![
            Series::column(st, "conn p50", c::CONNECT_P50, w),
            Series::column(st, "conn p99", c::CONNECT_P99, w),
        ];
        if tls {
            series.push(Series::column(st, "hs p99", c::HANDSHAKE_P99, w));
        }
        series.extend([
            Series::column(st, "total p50", c::TOTAL_P50, w),
            Series::column(st, "total p99", c::TOTAL_P99, w),
        ]);
        line_chart(rest, buf, st, w, &series, theme);
    }
}
