//! The caption bar: the scenario's caption (a lesson), the first thing the eye finds (bold, the
//! strongest contrast on screen, wrapped to the screen's width as a band of its own), then the
//! last action with its result or the reason it was refused. Under the caption, the step's
//! checks of its claims ("✓ held" / "… not yet") and, when other work took the lab's CPUs,
//! the banner that says this step's figures are not the lab's alone; and, while it lasts, the
//! recovery after overload (the server answering its backlog), with a caption or without.

use super::common::wrap;
use crate::lab::core::checks;
use crate::lab::state::LabState;
use crate::ui::app::App;
use ratatui::text::{Line, Span};

/// The caption's lines: each padded to `width`, so the caption reads as one band.
pub fn caption(app: &App, st: &LabState, width: u16) -> Vec<Line<'static>> {
    let style = app.theme.caption();
    let Some(c) = &st.caption else {
        return recovery(app, st, width);
    };
    let mut lines = wrap(c, "▶ ", width, style);
    // The checks on as few lines as they fit (the charts keep their rows at 80x24), each
    // whole on a line unless it is wider than the screen.
    let mut row = String::new();
    for v in checks::judge(&st.store, &st.expect) {
        let v = v.to_string();
        let fits = row.chars().count() + 3 + v.chars().count() <= width as usize;
        if !row.is_empty() && fits {
            row = format!("{row} · {v}");
            continue;
        }
        if !row.is_empty() {
            lines.extend(wrap(&row, "  ", width, style));
        }
        row = v;
    }
    if !row.is_empty() {
        lines.extend(wrap(&row, "  ", width, style));
    }
    let mut out: Vec<Line<'static>> = lines
        .into_iter()
        .map(|l| {
            let text = l.to_string();
            let pad = (width as usize).saturating_sub(text.chars().count());
            Line::from(Span::styled(format!("{text}{}", " ".repeat(pad)), style))
        })
        .collect();
    if let Some(b) = checks::busy(st) {
        out.extend(wrap(&b.to_string(), "", width, app.theme.warn()));
    }
    out.extend(recovery(app, st, width));
    out
}

/// The recovery after overload, named while it lasts (`model::phase::ongoing`, the rule
/// report.md's Phases use, over the same rows): the server answering its backlog after the
/// load dropped, which is why it answers more than is offered and more than the clients
/// receive. A phase of the lesson, not a fault: styled as good news.
fn recovery(app: &App, st: &LabState, width: u16) -> Vec<Line<'static>> {
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
    wrap(&text, "↺ ", width, app.theme.ok())
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
