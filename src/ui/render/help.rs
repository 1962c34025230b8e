//! The `?` overlay: every binding of the keymap table that acts on this run (the TLS keys only
//! over TLS), in as many columns as fit, each as wide as its longest line and a gap apart.

use crate::lab::state::LabState;
use crate::ui::app::App;
use crate::ui::keymap::{Action, Binding, KEYMAP};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

/// Spaces between a column's help and the next column's key.
const GAP: usize = 2;
const MAX_COLS: usize = 3;
const FOOTER: &str = "lower case turns a knob down, upper case up; path keys act on the ▶ path";

/// The bindings that act on this run: a load knob's keys only when the load has the knob (the
/// resumed share over TLS, streams over HTTP/2 and HTTP/3, requests per connection with
/// keep-alive; elsewhere they answer why not).
pub fn bindings(st: &LabState) -> Vec<&'static Binding> {
    KEYMAP
        .iter()
        .filter(|b| match b.action {
            Action::Load(knob, _) => st.knobs.has(knob),
            _ => true,
        })
        .collect()
}

/// The columns for `n` bindings in `avail` cells: how many rows, and each column's help width
/// (its longest help line; cut to fit when one column is still too wide). The most columns
/// whose widths, keys and gaps fit.
fn columns(keys: &[&Binding], key_w: usize, avail: usize) -> (usize, Vec<usize>) {
    let n = keys.len().max(1);
    for cols in (1..=MAX_COLS).rev() {
        let rows = n.div_ceil(cols);
        let mut widths: Vec<usize> = keys
            .chunks(rows)
            .map(|c| c.iter().map(|b| b.help.chars().count()).max().unwrap_or(0))
            .collect();
        let total =
            widths.iter().map(|h| key_w + h).sum::<usize>() + GAP * widths.len().saturating_sub(1);
        if total <= avail {
            return (rows, widths);
        }
        if cols == 1 {
            // One column and still too wide: its help lines are cut.
            widths[0] = avail.saturating_sub(key_w);
            return (rows, widths);
        }
    }
    unreachable!("one column always returns")
}

/// `text` in exactly `w` cells: padded, or cut with "…".
fn fit(text: &str, w: usize) -> String {
    if text.chars().count() <= w {
        format!("{text:<w$}")
    } else {
        let cut: String = text.chars().take(w.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let t = &app.theme;
    let keys = bindings(st);
    // A key's label and at least one space before its help.
    let key_w = keys
        .iter()
        .map(|b| b.key.label().chars().count())
        .max()
        .unwrap_or(0)
        + 1;
    let avail = area.width.saturating_sub(2) as usize;
    let (rows, widths) = columns(&keys, key_w, avail);
    let total =
        widths.iter().map(|h| key_w + h).sum::<usize>() + GAP * widths.len().saturating_sub(1);
    let w = ((total.max(FOOTER.chars().count()) + 2) as u16).min(area.width);
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
            for (col, &help_w) in widths.iter().enumerate() {
                if let Some(b) = keys.get(col * rows + row) {
                    if col > 0 {
                        spans.push(Span::raw(" ".repeat(GAP)));
                    }
                    spans.push(Span::styled(fit(&b.key.label(), key_w), t.label()));
                    spans.push(Span::raw(fit(b.help, help_w)));
                }
            }
            Line::from(spans)
        })
        .collect();
    lines.push(Line::from(Span::styled(FOOTER, t.text())));
    Paragraph::new(lines).render(inner, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixture;

    /// At every width the TUI draws (tall enough for every row), each help line is on screen
    /// whole or cut with "…", and followed by a gap or the border, never by the next column's
    /// key (it was: `D (or clients) x2Tab select next path`).
    #[test]
    fn columns_never_run_into_each_other() {
        let mut st = fixture::under_load();
        // Every knob's keys listed: TLS, HTTP/2 or 3, keep-alive.
        st.knobs.resumed = Some(0.5);
        st.knobs.streams = Some(8);
        st.knobs.requests_per_conn = Some(10);
        let mut app = App::new(crate::ui::theme::Theme { color: false }, 60.0);
        app.show_help = true;
        let ends = ["  ", " │", "│"];
        for width in 20..=260 {
            let text = crate::ui::render::screen_text(&app, &st, width, 60);
            for b in bindings(&st) {
                let whole = ends
                    .iter()
                    .any(|e| text.contains(&format!("{}{e}", b.help)));
                let cut = (1..b.help.len()).any(|n| {
                    let head = &b.help[..n];
                    ends.iter().any(|e| text.contains(&format!("{head}…{e}")))
                });
                assert!(whole || cut, "{width}: `{}` runs on:\n{text}", b.help);
            }
        }
        assert_eq!(fit("keep-alive", 5), "keep…");
        assert_eq!(fit("ab", 4), "ab  ");
    }
}
