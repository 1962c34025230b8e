//! Panel: latency percentiles (p50/p90/p99) of connect time and total time, measured from the
//! scheduled start, over the last second, and what they are over: the connects completed and
//! the requests answered in it, with the ones that timed out or failed (they have no latency,
//! so at overload the percentiles alone look better than the service was); over TLS the
//! handshake's own duration too. A percentile of nothing is "-", never the last value seen.
//! With several paths, each path's own rows; with several request classes, each class's
//! response time; a chart of p50 and p99 (each sample's, as timeseries.csv has them) below
//! when there is room. Under the table, where the last sample's requests' time went: their
//! mean response time as a stacked bar of connect, accept queue, service and transfer
//! (`model::latency_split`), and the share of connects that waited for a SYN retransmission.

use super::common::{line_chart, ms, num, pack, panel, render_top, Series, Window};
use crate::lab::state::{LabState, LiveLatency};
use crate::model::col as c;
use crate::model::latency_split::{LatencySplit, Part};
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// What the percentiles are over, as groups for `pack`: "over 955 answered, 620 timed out,
/// 3 failed" (connects and responses apart when the panel is wide).
fn over(l: &LiveLatency, wide: bool) -> Vec<Vec<Span<'static>>> {
    let n = |v: u64| num(v as f64);
    let mut g = if wide {
        vec![
            "over".to_string(),
            format!("{} connects,", n(l.connects)),
            format!("{} responses;", n(l.responses)),
        ]
    } else {
        vec!["over".to_string(), format!("{} answered,", n(l.responses))]
    };
    g.push(format!("{} timed out", n(l.connect_timeouts)));
    if l.other_errors > 0 {
        let last = g.last_mut().expect("pushed");
        last.push(',');
        g.push(format!("{} failed", n(l.other_errors)));
    }
    g.into_iter().map(|t| vec![Span::raw(t)]).collect()
}

/// The latest sample's latency split and its share of connects that waited for a SYN
/// retransmission: the last row with a split, its columns read in that same row.
fn latest_split(st: &LabState) -> Option<(LatencySplit, Option<f64>)> {
    let store = &st.store;
    let transfer = store.col(c::SPLIT_TRANSFER)?;
    let i = transfer.iter().rposition(|v| !v.is_nan())?;
    let at = |col| {
        store
            .col(col)
            .and_then(|v: &[f64]| v.get(i).copied())
            .filter(|v| !v.is_nan())
    };
    Some((
        LatencySplit {
            connect_ms: at(c::SPLIT_CONNECT)?,
            queue_ms: at(c::SPLIT_QUEUE),
            service_ms: at(c::SPLIT_SERVICE),
            transfer_ms: transfer[i],
        },
        at(c::CONNECT_RETRANS),
    ))
}

/// The split's lines: "split  CQQQQSST 13.4ms, 20% SYN retx", then the legend.
fn split_lines(
    s: &LatencySplit,
    retrans: Option<f64>,
    label_w: usize,
    width: u16,
    theme: &crate::ui::theme::Theme,
) -> Vec<Line<'static>> {
    let tail = match retrans {
        Some(r) if r > 0.0 => format!(" {}, {r:.0}% SYN retx", ms(Some(s.total_ms()))),
        _ => format!(" {}", ms(Some(s.total_ms()))),
    };
    let bar_w = (width as usize)
        .saturating_sub(label_w + tail.chars().count())
        .clamp(4, 40);
    let legend: Vec<Vec<Span<'static>>> = Part::ALL
        .iter()
        .map(|p| vec![Span::raw(format!("{} {p}", p.glyph()))])
        .collect();
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{:<label_w$}", "split"), theme.label()),
        Span::raw(s.bar(bar_w)),
        Span::raw(tail),
    ])];
    out.extend(pack(legend, ", ", width));
    out
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let theme = &app.theme;
    let inner = panel(
        area,
        buf,
        &format!("latency, last {:.0} s", crate::lab::core::LATENCY_S),
        theme,
    );
    let cells = |p: Option<[f64; 3]>| match p {
        Some(v) => v.iter().map(|x| format!("{:>8}", ms(Some(*x)))).collect(),
        None => format!("{:>8}{:>8}{:>8}", "-", "-", "-"),
    };
    let live = &st.live;
    let mut rows: Vec<(String, Option<[f64; 3]>)> = vec![
        ("connect".into(), live.all.connect),
        ("total".into(), live.all.total),
    ];
    // Over TLS the handshake's own duration, between connect and total.
    let tls = st.knobs.resumed.is_some();
    if tls {
        rows.insert(1, ("tls hs".into(), live.all.handshake));
    }
    // Rows in groups that show or hide together: the totals, a path's two, a class's one.
    let mut groups: Vec<(usize, &str)> = vec![(rows.len(), "")];
    // With several paths, each path's own percentiles follow (one path's would repeat the
    // totals).
    if live.paths.len() > 1 {
        for (name, l) in &live.paths {
            rows.push((format!("{name} conn"), l.connect));
            rows.push((format!("{name} total"), l.total));
            groups.push((2, "path"));
        }
    }
    // Each request class's response time (its connects are its paths'), with a mix of
    // several classes.
    for (name, l) in &live.classes {
        rows.push((format!("{name} total"), l.total));
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
        theme.text(),
    ))];
    let cover = pack(over(&live.all, inner.width >= 50), " ", inner.width);
    // Rows past the panel's height give way to a hint (as the CPU panel's cores do): the
    // totals and what they cover, then as many whole groups (paths, then classes) as fit
    // above it.
    let room = (inner.height as usize).saturating_sub(1 + cover.len());
    let (mut shown, mut kept) = (0, 0);
    for (i, (n, _)) in groups.iter().enumerate() {
        let hint = usize::from(i + 1 < groups.len() && rows.len() > room);
        if i > 0 && shown + n + hint > room {
            break;
        }
        shown += n;
        kept = i + 1;
    }
    for (name, p) in &rows[..shown] {
        let name: String = name.chars().take(label_w - 1).collect();
        lines.push(Line::from(vec![
            Span::styled(format!("{name:<label_w$}"), theme.label()),
            Span::raw(cells(*p)),
        ]));
    }
    lines.extend(cover);
    // Where the last sample's requests' time went, as a stacked bar (when measured and there
    // is room for it and its legend).
    if let Some((split, retrans)) = latest_split(st) {
        let more = split_lines(&split, retrans, label_w, inner.width, theme);
        // Kept only with a line to spare (the hint's).
        if (inner.height as usize) > lines.len() + more.len() {
            lines.extend(more);
        }
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
            theme.text(),
        )));
    }
    let rest = render_top(lines, inner, buf);
    if rest.height >= 6 {
        // The chart's values are the table's: its header names the lines only.
        // A chart draws at most four lines (one marker each): over TLS the handshake's p99
        // takes the connect p50's place (the table above keeps it).
        let mut series = Vec::new();
        if !tls {
            series.push(Series::column(st, "conn p50", c::CONNECT_P50, w));
        }
        series.push(Series::column(st, "conn p99", c::CONNECT_P99, w));
        if tls {
            series.push(Series::column(st, "hs p99", c::HANDSHAKE_P99, w));
        }
        series.extend([
            Series::column(st, "total p50", c::TOTAL_P50, w),
            Series::column(st, "total p99", c::TOTAL_P99, w),
        ]);
        let series: Vec<Series> = series
            .into_iter()
            .map(|s| Series {
                latest: Some(String::new()),
                ..s
            })
            .collect();
        line_chart(rest, buf, st, w, &series, theme);
    }
}
