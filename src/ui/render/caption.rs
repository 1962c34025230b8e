//! The caption bar: the scenario's caption (a lesson) and the last action with its result or
//! the reason it was refused, each wrapped at spaces to the screen's width.

use super::common::wrap;
use crate::lab::state::LabState;
use crate::ui::app::App;
use ratatui::text::Line;

pub fn lines(app: &App, st: &LabState, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = Vec::new();
    if let Some(c) = &st.caption {
        out.extend(wrap(c, "▶ ", width, t.label()));
    }
    match app.message_for(st.last_action.as_ref()) {
        Some((text, true)) => out.extend(wrap(&text, "» ", width, t.warn())),
        Some((text, false)) => out.extend(wrap(&text, "» ", width, t.ok())),
        None => out.extend(wrap("ready: press ? for keys", "» ", width, t.text())),
    }
    out
}
