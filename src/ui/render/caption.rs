//! The caption bar: the scenario's caption (a lesson) and the last action with its result or
//! the reason it was refused.

use crate::lab::state::LabState;
use crate::ui::app::App;
use ratatui::text::{Line, Span};

pub fn lines(app: &App, st: &LabState) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = Vec::new();
    if let Some(c) = &st.caption {
        out.push(Line::from(Span::styled(format!("▶ {c}"), t.label())));
    }
    let last = match app.message_for(st.last_action.as_ref()) {
        Some((text, true)) => Span::styled(format!("» {text}"), t.warn()),
        Some((text, false)) => Span::styled(format!("» {text}"), t.ok()),
        None => Span::styled("» ready: press ? for keys".to_string(), t.dim()),
    };
    out.push(Line::from(last));
    out
}
