//! The `?` overlay: every binding of the keymap table that acts on this run (the TLS keys only
//! over TLS), in as many columns as fit.

use crate::lab::state::LabState;
use crate::ui::app::App;
use crate::ui::keymap::{Action, Binding, KEYMAP};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

const KEY_W: usize = 7;
const HELP_W: usize = 31;

/// The bindings that act on this run: a load knob's keys only when the load has the knob (the
/// resumed share over TLS, streams over HTTP/2, requests per connection with keep-alive;
/// elsewhere they answer why not).
pub fn bindings(st: &LabState) -> Vec<&'static Binding> {
    KEYMAP
        .iter()
        .filter(|b| match b.action {
            Action::Load(knob, _) => st.knobs.has(knob),
            _ => true,
        })
        .collect()
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let t = &app.theme;
    let keys = bindings(st);
    let col_w = KEY_W + HELP_W;
    let cols = ((area.width.saturating_sub(2) as usize) / col_w).clamp(1, 3);
    let rows = keys.len().div_ceil(cols);
    let w = ((cols * col_w + 2) as u16).min(area.width);
    let h = ((rows + 3) as u16).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(" keys (? or Esc closes) ", t.title()));
    let inner = block.inner(r);
    block.render(r, buf);
    let mut lines: Vec<Line> = (0..rows)
        .map(|row| {
            let mut spans = Vec::new();
            for col in 0..cols {
                if let Some(b) = keys.get(col * rows + row) {
                    spans.push(Span::styled(
                        format!("{:<KEY_W$}", b.key.label()),
                        t.label(),
                    ));
                    spans.push(Span::raw(format!("{:<HELP_W$}", b.help)));
                }
            }
            Line::from(spans)
        })
        .collect();
    lines.push(Line::from(Span::styled(
        "lower case turns a knob down, upper case up; path keys act on the ▶ path",
        t.text(),
    )));
    Paragraph::new(lines).render(inner, buf);
}
