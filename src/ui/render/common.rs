//! Shared drawing helpers: number formatting, the time window, and the line chart every
//! time-series panel uses (a one-line header of latest values, then the chart with event lines).

use crate::lab::state::LabState;
use crate::model::Col;
use crate::ui::app::App;
use crate::ui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Widget};

/// The charts' x range: the last `window_s` seconds up to the latest sample.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub since: f64,
    pub now: f64,
}

impl Window {
    pub fn of(app: &App, st: &LabState) -> Self {
        let now = st
            .store
            .times()
            .last()
            .copied()
            .unwrap_or(0.0)
            .max(st.elapsed_s);
        Window {
            since: now - app.window_s,
            now,
        }
    }
}

/// Short numbers for a glance: 12, 1.5, 12.3k, 4.5M.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A value or "n/a" when the column was never measured.
pub fn num_or_na(v: Option<f64>) -> String {
    v.map(num).unwrap_or_else(|| "n/a".into())
}

/// Milliseconds, with a unit switch to seconds past 10 s.
pub fn ms(v: Option<f64>) -> String {
    match v {
        None => "n/a".into(),
        Some(v) if v >= 10_000.0 => format!("{:.1}s", v / 1000.0),
        Some(v) if v >= 100.0 => format!("{v:.0}ms"),
        Some(v) => format!("{v:.1}ms"),
    }
}

/// The smallest 1/2/5 x 10^k at or above `v` (at least 1), for a y-axis top.
pub fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 1.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v - 1e-9)
        .unwrap_or(10.0 * p)
}

/// A bordered panel; returns the inner area.
pub fn panel(area: Rect, buf: &mut Buffer, title: &str, theme: &Theme) -> Rect {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.frame())
        .title(Span::styled(format!(" {title} "), theme.title()));
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

pub use crate::metrics::store::{HEADLINE_S, STALE_S};

/// A column's headline value ([`crate::metrics::store::Store::headline`]): what the lesson's
/// checks judge too.
pub fn headline(st: &LabState, col: Col) -> Option<f64> {
    st.store.headline(col)
}

/// One series of a chart: its name in the header, its headline value and its points.
pub struct Series {
    pub label: String,
    /// None = the column was never measured ("n/a"); Some(empty) = nothing in the window.
    pub points: Option<Vec<(f64, f64)>>,
    /// The headline value (see [`headline`]); None = not current ("-").
    pub value: Option<f64>,
    /// Shown in the header instead of the value (e.g. "128/128 full"); Some("") shows the
    /// name only (a chart whose values are in a table beside it).
    pub latest: Option<String>,
    /// Drawn on the chart (else its value is in the header only).
    pub plotted: bool,
    /// An error figure: drawn in the error colour.
    pub error: bool,
    /// Left out of the header when its line would take the chart's last rows (a setting that
    /// does not move, which a taller panel shows). Such series come last.
    pub gives_way: bool,
}

impl Series {
    pub fn column(st: &LabState, label: &str, col: Col, w: Window) -> Self {
        let points = st.store.col(col).map(|_| st.store.series(col, w.since));
        Series {
            label: label.to_string(),
            points,
            value: headline(st, col),
            latest: None,
            plotted: true,
            error: false,
            gives_way: false,
        }
    }

    /// Header only: its value, not drawn (a chart holds at most four lines, each with a
    /// marker of its own).
    pub fn value_only(st: &LabState, label: &str, col: Col) -> Self {
        Series {
            label: label.to_string(),
            points: st.store.col(col).map(|_| Vec::new()),
            value: headline(st, col),
            latest: None,
            plotted: false,
            error: false,
            gives_way: false,
        }
    }

    /// Drawn in the error colour.
    pub fn as_error(self) -> Self {
        Series {
            error: true,
            ..self
        }
    }

    /// Left out on a panel too short for its header line and the chart (see `gives_way`).
    pub fn gives_way(self) -> Self {
        Series {
            gives_way: true,
            ..self
        }
    }

    /// The sum of two columns row by row (a row counts if either is measured).
    pub fn sum(st: &LabState, label: &str, a: Col, b: Col, w: Window) -> Self {
        Self::sum_of(st, label, &[a, b], w)
    }

    /// The sum of `cols` row by row (a row counts if any of them is measured).
    pub fn sum_of(st: &LabState, label: &str, cols: &[Col], w: Window) -> Self {
        let data: Vec<Option<&[f64]>> = cols.iter().map(|&c| st.store.col(c)).collect();
        let heads: Vec<Option<f64>> = cols.iter().map(|&c| headline(st, c)).collect();
        let value = heads
            .iter()
            .any(Option::is_some)
            .then(|| heads.iter().flatten().sum());
        if data.iter().all(Option::is_none) {
            return Series {
                label: label.into(),
                points: None,
                value,
                latest: None,
                plotted: true,
                error: false,
                gives_way: false,
            };
        }
        let t = st.store.times();
        let start = t.partition_point(|&x| x < w.since);
        let pts = (start..t.len())
            .filter_map(|i| {
                let cells = data.iter().flatten().map(|c| c[i]).filter(|v| !v.is_nan());
                cells
                    .fold(None, |acc: Option<f64>, v| Some(acc.unwrap_or(0.0) + v))
                    .map(|y| (t[i], y))
            })
            .collect();
        Series {
            label: label.into(),
            points: Some(pts),
            value,
            latest: None,
            plotted: true,
            error: false,
            gives_way: false,
        }
    }

    /// The header text: `latest` if set, else the headline value; "n/a" if never measured,
    /// "-" if not current.
    pub fn latest_text(&self) -> String {
        if let Some(l) = &self.latest {
            return l.clone();
        }
        match (&self.points, self.value) {
            (None, _) => "n/a".into(),
            (_, Some(v)) => num(v),
            (_, None) => "-".into(),
        }
    }
}

/// `text` broken into lines of at most `width` characters at spaces (a word longer than a
/// line, a path, is broken across lines, never cut), each styled `style`, the first starting
/// with `first` and the others indented as far.
pub fn wrap(text: &str, first: &str, width: u16, style: Style) -> Vec<Line<'static>> {
    let width = (width as usize).max(8);
    let indent = " ".repeat(first.chars().count());
    let mut lines = Vec::new();
    let mut cur = first.to_string();
    let mut has_word = false;
    for word in text.split_whitespace() {
        let mut rest = word;
        while !rest.is_empty() {
            let len = rest.chars().count();
            if has_word && cur.chars().count() + 1 + len > width {
                lines.push(std::mem::replace(&mut cur, indent.clone()));
                has_word = false;
            }
            if has_word {
                cur.push(' ');
            }
            // Longer than the line's room (it starts the line): as much as fits, the rest on
            // the next line.
            let room = width.saturating_sub(cur.chars().count());
            if !has_word && len > room && room > 0 {
                let at = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
                cur.push_str(&rest[..at]);
                lines.push(std::mem::replace(&mut cur, indent.clone()));
                rest = &rest[at..];
                continue;
            }
            cur.push_str(rest);
            has_word = true;
            rest = "";
        }
    }
    lines.push(cur);
    lines
        .into_iter()
        .map(|l| {
            let l: String = l.chars().take(width).collect();
            Line::from(Span::styled(l, style))
        })
        .collect()
}

/// `text` in at most `w` characters: whole, or cut with "…".
pub fn clip(text: &str, w: usize) -> String {
    if text.chars().count() <= w {
        text.to_string()
    } else {
        let cut: String = text.chars().take(w.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// `lines` (each of one style, as `wrap` makes them) kept to the first `n`; when some are
/// left out the last kept ends in " …" (within `width`), so a cut text never reads as whole.
pub fn cut(lines: Vec<Line<'static>>, n: usize, width: u16) -> Vec<Line<'static>> {
    cut_with(lines, n, width, "…")
}

/// What ends a cut text that the screen shows whole when it is larger.
pub const MORE: &str = "… more: enlarge";

/// [`cut`], the last kept line ending in `tail` ("…", or [`MORE`] to say where the rest is)
/// when some are left out.
pub fn cut_with(
    mut lines: Vec<Line<'static>>,
    n: usize,
    width: u16,
    tail: &str,
) -> Vec<Line<'static>> {
    if lines.len() <= n {
        return lines;
    }
    lines.truncate(n);
    if let Some(last) = lines.last_mut() {
        let style = last.spans.first().map_or_else(Style::default, |s| s.style);
        let text = last.to_string();
        let room = (width as usize).saturating_sub(1 + tail.chars().count());
        let mut keep: String = text.chars().take(room).collect();
        // Cut at a space, when one keeps more than half of the line: no word half said.
        let next = text.chars().nth(room);
        if next.is_some_and(|c| c != ' ') && !keep.ends_with(' ') {
            if let Some(at) = keep.trim_end().rfind(' ').filter(|&at| at > keep.len() / 2) {
                keep.truncate(at);
            }
        }
        *last = Line::from(Span::styled(format!("{} {tail}", keep.trim_end()), style));
    }
    lines
}

/// Lines of groups of spans, as [`pack`] makes them, kept to the first `n`; when some are left
/// out, the last kept one loses its last groups until " …" fits within `width` (a group is
/// never split from its value).
pub fn cut_spans(mut lines: Vec<Line<'static>>, n: usize, width: u16) -> Vec<Line<'static>> {
    if lines.len() <= n {
        return lines;
    }
    lines.truncate(n);
    let is_sep = |s: &Span| s.content.trim().is_empty() || s.content.trim() == "│";
    if let Some(last) = lines.last_mut() {
        let room = (width as usize).saturating_sub(2);
        while last.width() > room {
            // Back to the last separator, which goes with the group it separated.
            let Some(at) = last.spans.iter().rposition(is_sep) else {
                let style = last.spans.first().map_or_else(Style::default, |s| s.style);
                *last = Line::from(Span::styled(clip(&last.to_string(), room), style));
                break;
            };
            last.spans.truncate(at);
        }
        last.spans.push(Span::raw(" …"));
    }
    lines
}

/// Packs groups of spans into lines of `width`, `sep` between groups; a group never splits
/// across lines (a group wider than a line is clipped by the renderer).
pub fn pack(groups: Vec<Vec<Span<'static>>>, sep: &str, width: u16) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    let sep_w = sep.chars().count();
    for g in groups {
        let w: usize = g.iter().map(|s| s.content.chars().count()).sum();
        if used > 0 && used + sep_w + w > width as usize {
            lines.push(Line::from(std::mem::take(&mut cur)));
            used = 0;
        }
        if used > 0 {
            cur.push(Span::raw(sep.to_string()));
            used += sep_w;
        }
        cur.extend(g);
        used += w;
    }
    if !cur.is_empty() {
        lines.push(Line::from(cur));
    }
    lines
}

/// The header of headline values, "━SYN 1.2k  ━attempts 1.0k ..." (NO_COLOR: "⣿SYN ..."): a
/// plotted series' swatch or marker, then its name and value in the terminal's foreground.
pub fn header(series: &[Series], theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let mut plotted = 0;
    let groups = series
        .iter()
        .map(|s| {
            let mut g = Vec::new();
            if s.plotted {
                let look = theme.series(plotted, s.error);
                plotted += 1;
                g.push(Span::styled(look.glyph.to_string(), look.style));
            }
            let value = s.latest_text();
            if value.is_empty() {
                g.push(Span::styled(s.label.clone(), theme.text()));
            } else {
                g.push(Span::styled(format!("{} ", s.label), theme.text()));
                g.push(Span::styled(value, theme.label()));
            }
            g
        })
        .collect();
    pack(groups, "  ", width)
}

/// Draws `lines` at the top of `area` (as many as fit) and returns the rest of it, below them.
pub fn render_top(lines: Vec<Line<'static>>, area: Rect, buf: &mut Buffer) -> Rect {
    let h = (lines.len() as u16).min(area.height);
    Paragraph::new(lines).render(Rect { height: h, ..area }, buf);
    Rect {
        y: area.y + h,
        height: area.height - h,
        ..area
    }
}

/// The fewest rows under its header a chart is drawn in (its plot, x axis and labels).
const CHART_MIN_ROWS: u16 = 4;

/// A line chart of `series` over the window, events as dotted columns, header of latest values
/// on top. Series that give way leave the header when it would leave the chart under
/// `CHART_MIN_ROWS`; below them only the header is drawn (the panel folds to numbers).
pub fn line_chart(
    area: Rect,
    buf: &mut Buffer,
    st: &LabState,
    w: Window,
    series: &[Series],
    theme: &Theme,
) {
    // Each drawn line has a marker of its own in NO_COLOR mode (the event columns' dot is
    // none of them), so a chart draws at most that many.
    debug_assert!(
        series.iter().filter(|s| s.plotted).count() <= crate::ui::theme::MARKERS.len(),
        "a chart draws at most {} series",
        crate::ui::theme::MARKERS.len()
    );
    debug_assert!(
        series.windows(2).all(|p| !p[0].gives_way || p[1].gives_way),
        "series that give way come last"
    );
    let mut lines = header(series, theme, area.width);
    let fixed = series.iter().take_while(|s| !s.gives_way).count();
    if fixed < series.len() && area.height < lines.len() as u16 + CHART_MIN_ROWS {
        lines = header(&series[..fixed], theme, area.width);
    }
    let chart_area = render_top(lines, area, buf);
    if chart_area.height < CHART_MIN_ROWS || chart_area.width < 12 {
        return;
    }
    let ymax = nice_max(
        series
            .iter()
            .filter(|s| s.plotted)
            .filter_map(|s| s.points.as_ref())
            .flatten()
            .map(|p| p.1)
            .fold(0.0, f64::max),
    );
    // Events are columns of dots, one per row, so they never read as a spike in a series
    // (series are braille or block lines).
    // The plot itself is the area less the x axis and its labels.
    let rows = chart_area.height.saturating_sub(2).max(2);
    // All events in one scatter dataset: one canvas layer, one allocation per chart.
    let events: Vec<(f64, f64)> = charted_events(st, w)
        .flat_map(|e| event_dots(e.t_s, ymax, rows))
        .collect();
    let mut datasets = vec![Dataset::default()
        .graph_type(GraphType::Scatter)
        .marker(crate::ui::theme::EVENT_MARKER.0)
        .style(theme.event())
        .data(&events)];
    for (i, s) in series.iter().filter(|s| s.plotted).enumerate() {
        if let Some(p) = &s.points {
            let look = theme.series(i, s.error);
            datasets.push(
                Dataset::default()
                    .graph_type(GraphType::Line)
                    .marker(look.marker)
                    .style(look.style)
                    .data(p),
            );
        }
    }
    let span = w.now - w.since;
    let x_labels = vec![
        Span::styled(format!("-{span:.0}s"), theme.text()),
        Span::styled(format!("-{:.0}s", span / 2.0), theme.text()),
        Span::styled("now", theme.text()),
    ];
    // A short plot holds two labels, 0 and the top; a third would push one of them out.
    let y_labels = if rows >= 5 {
        vec![
            Span::styled("0", theme.text()),
            Span::styled(num(ymax / 2.0), theme.text()),
            Span::styled(num(ymax), theme.text()),
        ]
    } else {
        vec![
            Span::styled("0", theme.text()),
            Span::styled(num(ymax), theme.text()),
        ]
    };
    Chart::new(datasets)
        .x_axis(
            Axis::default()
                .bounds([w.since, w.now])
                .labels(x_labels)
                .style(theme.frame()),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax])
                .labels(y_labels)
                .style(theme.frame()),
        )
        .style(Style::default())
        .render(chart_area, buf);
}

/// The events drawn on the charts in the window: changes, marks and captions (warnings are
/// in events.csv and run.log, not columns on the charts).
pub fn charted_events<'a>(
    st: &'a LabState,
    w: Window,
) -> impl DoubleEndedIterator<Item = &'a crate::metrics::store::Event> + 'a {
    st.store.events.iter().filter(move |e| {
        e.kind != crate::metrics::store::EventKind::Warning && e.t_s >= w.since && e.t_s <= w.now
    })
}

/// Points of an event's dotted column at time `t`: one on each of `rows` (>= 2) plot rows.
fn event_dots(t: f64, ymax: f64, rows: u16) -> impl Iterator<Item = (f64, f64)> {
    // ratatui maps y to row (top - y) * (rows - 1) / (top - bottom), truncated: the bottom row
    // holds only y = 0, each other row a band of 1 / (rows - 1); aim at the band's middle.
    let last = f64::from(rows.max(2) - 1);
    (0..rows.max(2)).map(move |r| (t, ymax * (f64::from(r) - 0.5).max(0.0) / last))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word longer than a line (a path) is broken across lines, whole; cut lines end in "…".
    #[test]
    fn long_words_break_and_cut_lines_say_so() {
        let text = |l: &[Line]| l.iter().map(ToString::to_string).collect::<Vec<_>>();
        let path = "/home/student/results/2025-03-04T10-22-31-run/snapshot-0066.3s.txt";
        let l = wrap(&format!("written to {path}"), "» ", 30, Style::default());
        let l = text(&l);
        assert!(l.iter().all(|x| x.chars().count() <= 30), "{l:?}");
        assert_eq!(l[0], "» written to");
        let joined: String = l[1..].iter().map(|x| x.trim()).collect();
        assert_eq!(joined, path);
        let c = text(&cut(
            wrap("one two three four", "", 8, Style::default()),
            2,
            8,
        ));
        assert_eq!(c, ["one two", "three …"]);
        let whole = text(&cut(wrap("one two", "", 8, Style::default()), 2, 8));
        assert_eq!(whole, ["one two"]);
        assert_eq!(clip("@66s rate 4000/s", 8), "@66s ra…");
    }

    /// Cut status lines lose whole groups (a label keeps its value) and end in " …"; a cut
    /// caption ends at a word, saying where the rest is.
    #[test]
    fn cut_lines_keep_whole_groups_and_words() {
        let group = |k: &str, v: &str| {
            vec![
                Span::raw(format!("{k} ")),
                Span::styled(v.to_string(), Style::default()),
            ]
        };
        let lines = pack(
            vec![
                group("rate", "20000 conn/s"),
                group("mode", "sclient"),
                group("D", "20000"),
                group("T", "1000ms"),
            ],
            "  ",
            32,
        );
        assert_eq!(lines.len(), 2);
        let more = [lines.clone(), lines.clone()].concat();
        let cut = cut_spans(more, 2, 32);
        let text: Vec<String> = cut.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            ["rate 20000 conn/s  mode sclient", "D 20000  T 1000ms …"]
        );
        let narrow = cut_spans(lines.clone(), 1, 20);
        assert_eq!(narrow[0].to_string(), "rate 20000 conn/s …");
        assert_eq!(cut_spans(lines.clone(), 2, 32), lines);
        let c = cut_with(
            wrap(
                "a caption as long as a lesson's longest",
                "",
                30,
                Style::default(),
            ),
            1,
            30,
            MORE,
        );
        assert_eq!(c[0].to_string(), "a caption as … more: enlarge");
    }

    #[test]
    fn event_columns_are_dotted() {
        let d: Vec<_> = event_dots(5.0, 100.0, 10).collect();
        assert_eq!(d.len(), 10);
        assert!(d.iter().all(|p| p.0 == 5.0));
        assert_eq!(d[0].1, 0.0);
        // One point per plot row, as ratatui maps y to rows (truncating).
        let mut row: Vec<usize> = d
            .iter()
            .map(|p| ((100.0 - p.1) * 9.0 / 100.0) as usize)
            .collect();
        row.dedup();
        assert_eq!(row, (0..10).rev().collect::<Vec<_>>());
    }

    #[test]
    fn numbers_read_at_a_glance() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(2.45), "2.5");
        assert_eq!(num(123.4), "123");
        assert_eq!(num(1234.0), "1.2k");
        assert_eq!(num(45_000.0), "45k");
        assert_eq!(num(2_500_000.0), "2.5M");
        assert_eq!(num_or_na(None), "n/a");
        assert_eq!(ms(Some(0.25)), "0.2ms");
        assert_eq!(ms(Some(3000.0)), "3000ms");
        assert_eq!(ms(Some(21_000.0)), "21.0s");
    }

    #[test]
    fn text_wraps_at_spaces_never_mid_word() {
        let l = wrap(
            "CLIENT-BOUND: 47 % fewer attempts than the schedule intended",
            "⚠ ",
            24,
            Style::default(),
        );
        let text: Vec<String> = l.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text,
            [
                "⚠ CLIENT-BOUND: 47 %",
                "  fewer attempts than",
                "  the schedule intended"
            ]
        );
    }

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(101.0), 200.0);
        assert_eq!(nice_max(128.0), 200.0);
        assert_eq!(nice_max(5000.0), 5000.0);
    }
}
