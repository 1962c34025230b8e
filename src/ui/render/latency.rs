//! Panel: latency percentiles (p50/p90/p99) of connect time and total time, measured from the
//! scheduled start. A table of the latest values (and each network path's, when there are
//! several, and each request class's response time, when the mix has several); a chart of
//! p50 and p99 below when there is room.

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
    // Rows in groups that show or hide together: the totals, a path's two, a class's one.
    let mut rows: Vec<(String, [Col; 3])> = [
        ("connect", [c::CONNECT_P50, c::CONNECT_P90, c::CONNECT_P99]),
        ("total", [c::TOTAL_P50, c::TOTAL_P90, c::TOTAL_P99]),
    ]
    .into_iter()
    .map(|(name, cols)| (name.to_string(), cols))
    .collect();
    let mut groups: Vec<(usize, &str)> = vec![(2, "")];
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
            groups.push((2, "path"));
        }
    }
    // Each request class's response time (its connects are its paths'), for the classes the
    // store has columns of (a mix of several classes).
    let classes = st
        .store
        .columns()
        .iter()
        .filter(|k| k.figure() == c::TOTAL_P50)
        .filter_map(|k| k.class());
    for class in classes {
        let cols = [c::TOTAL_P50, c::TOTAL_P90, c::TOTAL_P99].map(|k| k.of_class(class));
        rows.push((format!("{} total", class.as_str()), cols));
        groups.push((1, "class"));
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
    // totals, then as many whole groups (paths, then classes) as fit above it.
    let room = (inner.height as usize).saturating_sub(1);
    let (mut shown, mut kept) = (0, 0);
    for (i, (n, _)) in groups.iter().enumerate() {
        let hint = usize::from(i + 1 < groups.len() && rows.len() > room);
        if i > 0 && shown + n + hint > room {
            break;
        }
        shown += n;
        kept = i + 1;
    }
    for (name, cols) in &rows[..shown] {
        let name: String = name.chars().take(label_w - 1).collect();
        lines.push(Line::from(vec![
            Span::styled(format!("{name:<label_w$}"), theme.label()),
            Span::raw(cols.iter().map(|k| cell(*k)).collect::<String>()),
        ]));
    }
    let hidden = |kind: &str| groups[kept..].iter().filter(|g| g.1 == kind).count();
    let hint: Vec<String> = [("path", hidden("path")), ("class", hidden("class"))]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(kind, n)| format!("+{n} {kind}(s)"))
        .collect();
    if !hint.is_empty() {
        lines.push(Line::from(Span::styled(
            format!("{} (enlarge to see)", hint.join(", ")),
            theme.dim(),
        )));
    }
    let rest = render_top(lines, inner, buf);
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
