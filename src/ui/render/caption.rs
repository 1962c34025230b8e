//! The caption bar: the scenario's caption (a lesson), the first thing the eye finds (bold, the
//! strongest contrast on screen, wrapped to the screen's width as a band of its own), then the
//! last action with its result or the reason it was refused. Under the caption, the step's
//! checks of its claims ("✓ held" / "… not yet") and, when other work took the lab's CPUs,
//! the banner that says this step's figures are not the lab's alone; and, while it lasts, the
//! recovery after overload (the server answering its backlog), with a caption or without.

use super::common::{clip, cut_with, wrap, MORE};
use crate::lab::core::checks;
use crate::lab::state::LabState;
use crate::ui::app::App;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// The caption's lines, at most `max` (a cut one ends in "… more: enlarge"): each padded to
/// `width`, so the caption reads as one band. None without a caption.
pub fn caption(app: &App, st: &LabState, width: u16, max: usize) -> Vec<Line<'static>> {
    let style = app.theme.caption();
    let Some(c) = &st.caption else {
        return Vec::new();
    };
    let lines = cut_with(wrap(c, "▶ ", width, style), max, width, MORE);
    pad(lines, width, style)
}

/// Lines padded to `width` in `style`: the caption's band.
fn pad(lines: Vec<Line<'static>>, width: u16, style: Style) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .map(|l| {
            let text = l.to_string();
            let pad = (width as usize).saturating_sub(text.chars().count());
            Line::from(Span::styled(format!("{text}{}", " ".repeat(pad)), style))
        })
        .collect()
}

/// The step's checks under its caption, in its band, on at most `max` lines: as few lines as
/// they fit (the charts keep their rows at 80x24), each whole on a line unless it is wider
/// than the screen. Cut to fewer lines than they need, each row keeps one line (cut with "…")
/// and the last says how many checks it leaves out ("· +1 more: enlarge").
pub fn checks(app: &App, st: &LabState, width: u16, max: usize) -> Vec<Line<'static>> {
    if st.caption.is_none() {
        return Vec::new();
    }
    let style = app.theme.caption();
    // Rows of checks, each as many whole checks as fit the width.
    let mut rows: Vec<Vec<String>> = Vec::new();
    for v in checks::judge(&st.store, &st.expect) {
        let v = v.to_string();
        match rows.last_mut() {
            Some(row)
                if row.join(" · ").chars().count() + 3 + v.chars().count() <= width as usize =>
            {
                row.push(v)
            }
            _ => rows.push(vec![v]),
        }
    }
    let whole: Vec<Line<'static>> = rows
        .iter()
        .flat_map(|row| wrap(&row.join(" · "), "  ", width, style))
        .collect();
    if whole.len() <= max {
        return pad(whole, width, style);
    }
    let w = width as usize;
    let kept = rows.len().min(max);
    let left_out: usize = rows[kept..].iter().map(Vec::len).sum();
    let mut lines: Vec<String> = rows[..kept]
        .iter()
        .map(|row| clip(&format!("  {}", row.join(" · ")), w))
        .collect();
    if let Some(last) = lines.last_mut().filter(|_| left_out > 0) {
        let more = format!(" · +{left_out} more: enlarge");
        let keep = w.saturating_sub(more.chars().count());
        *last = format!("{}{more}", clip(last, keep));
    }
    let lines = lines
        .into_iter()
        .map(|l| Line::from(Span::styled(l, style)))
        .collect();
    pad(lines, width, style)
}

/// When other work took the server's CPUs: the banner that says this step's figures are not
/// the server's alone, on at most `max` lines (on one, in short words when they fit, else cut
/// with "…").
pub fn busy(app: &App, st: &LabState, width: u16, max: usize) -> Vec<Line<'static>> {
    let style = app.theme.warn();
    let Some(b) = checks::busy(st).filter(|_| st.caption.is_some()) else {
        return Vec::new();
    };
    let whole = wrap(&b.to_string(), "", width, style);
    if whole.len() <= max {
        return whole;
    }
    let short = format!(
        "⚠ busy: others took {:.0} % of the {w} CPUs: figures not the {w} alone",
        b.pct,
        w = b.whose
    );
    if max == 1 && short.chars().count() <= width as usize {
        return vec![Line::from(Span::styled(short, style))];
    }
    cut_with(whole, max, width, "…")
}

/// The recovery after overload, named while it lasts (`model::phase::ongoing`, the rule
/// report.md's Phases use, over the same rows): the server answering its backlog after the
/// load dropped, which is why it answers more than is offered and more than the clients
/// receive. A phase of the lesson, not a fault: styled as good news.
pub fn recovery(app: &App, st: &LabState, width: u16, max: usize) -> Vec<Line<'static>> {
    use crate::model::col;
    let s = &st.store;
    let (Some(offered), Some(server), Some(client)) = (
        s.col(col::TARGET_RATE),
        s.col(col::SERVER_RESPONSES),
        s.col(col::RESPONSES),
    ) else {
        return Vec::new();
    };
    let t = s.times();
    let rows: Vec<_> = (1..t.len())
        .map(|i| (t[i], t[i] - t[i - 1], offered[i], server[i], client[i]))
        .collect();
    let Some(r) = crate::model::phase::ongoing(&rows) else {
        return Vec::new();
    };
    let last = |c| s.last(c).unwrap_or(f64::NAN);
    let text = format!(
        "recovery after overload, since {:.0} s: the server is answering its backlog, {} \
         responses/s against {} offered, {} more than its clients received so far (requests \
         queued in the overload, whose clients have mostly given up)",
        r.start_s,
        super::common::num(last(col::SERVER_RESPONSES)),
        super::common::num(last(col::TARGET_RATE)),
        super::common::num(r.surplus),
    );
    cut_with(wrap(&text, "↺ ", width, app.theme.ok()), max, width, MORE)
}

/// The last action's line(s); with a caption and nothing done yet, none (the hint line says
/// which key opens the help).
pub fn message(app: &App, st: &LabState, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    match app.message_for(st.last_action.as_ref()) {
        Some((text, true)) => wrap(&text, "» ", width, t.warn()),
        Some((text, false)) => wrap(&text, "» ", width, t.ok()),
        None if st.caption.is_some() => Vec::new(),
        None => wrap("ready: press ? for keys", "» ", width, t.text()),
    }
}
