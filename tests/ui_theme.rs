//! issue 28, item 10: a screen a class reads on a projector. Every letter and digit the TUI
//! draws in its default theme is readable whatever the terminal's background: in the
//! terminal's own foreground, or (warnings) white on red, contrast 4.5:1 at least by WCAG's
//! formula over the standard xterm palette. With NO_COLOR every drawn series has a marker of
//! its own, none of them the event columns' dot.

use ratatui::backend::TestBackend;
use ratatui::buffer::Cell;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;
use synlab::lab::state::LabState;
use synlab::ui::app::App;
use synlab::ui::fixture;
use synlab::ui::render;
use synlab::ui::theme::{Theme, EVENT_MARKER, MARKERS};

/// The standard xterm palette (what a projector's terminal most likely shows).
fn rgb(c: Color) -> Option<(u8, u8, u8)> {
    Some(match c {
        Color::Black => (0, 0, 0),
        Color::Red => (205, 0, 0),
        Color::Green => (0, 205, 0),
        Color::Yellow => (205, 205, 0),
        Color::Blue => (0, 0, 238),
        Color::Magenta => (205, 0, 205),
        Color::Cyan => (0, 205, 205),
        Color::Gray => (229, 229, 229),
        Color::DarkGray => (127, 127, 127),
        Color::LightRed => (255, 0, 0),
        Color::LightGreen => (0, 255, 0),
        Color::LightYellow => (255, 255, 0),
        Color::LightBlue => (92, 92, 255),
        Color::LightMagenta => (255, 0, 255),
        Color::LightCyan => (0, 255, 255),
        Color::White => (255, 255, 255),
        Color::Rgb(r, g, b) => (r, g, b),
        _ => return None,
    })
}

/// WCAG 2 relative luminance and contrast ratio.
fn luminance((r, g, b): (u8, u8, u8)) -> f64 {
    let ch = |v: u8| {
        let c = f64::from(v) / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)
}

fn contrast(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The least contrast a cell's text has: against a black and a white background when only
/// its foreground is set; between the two when both are; the terminal's own when neither.
fn readable(cell: &Cell) -> Result<(), String> {
    let reversed = cell.modifier.contains(Modifier::REVERSED);
    match (cell.fg, cell.bg) {
        (Color::Reset, Color::Reset) => Ok(()),
        (fg, Color::Reset) if !reversed => {
            let c = rgb(fg).ok_or("unknown colour")?;
            let worst = contrast(c, (0, 0, 0)).min(contrast(c, (255, 255, 255)));
            (worst >= 4.5).then_some(()).ok_or(format!(
                "{fg:?} text on the terminal's background: {worst:.1}:1"
            ))
        }
        (fg, bg) => {
            let (f, b) = (
                rgb(fg).ok_or("unknown colour")?,
                rgb(bg).ok_or("unknown colour")?,
            );
            let c = contrast(f, b);
            (c >= 4.5)
                .then_some(())
                .ok_or(format!("{fg:?} on {bg:?}: {c:.1}:1"))
        }
    }
}

fn states() -> Vec<(&'static str, LabState)> {
    let mut with_warnings = fixture::client_bound();
    with_warnings.caption = Some("800/s: still below capacity".into());
    vec![
        ("idle", fixture::idle()),
        ("under load", fixture::under_load()),
        ("overloaded", fixture::overloaded()),
        ("client-bound", with_warnings),
    ]
}

fn draw(app: &App, st: &LabState, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render::draw(f, app, st)).unwrap();
    term
}

#[test]
fn every_letter_and_digit_is_readable_on_a_dark_or_a_light_projector() {
    let mut app = App::new(Theme { color: true }, 60.0);
    for help in [false, true] {
        app.show_help = help;
        for (name, st) in states() {
            for (w, h) in [(60, 20), (80, 24), (200, 55)] {
                let term = draw(&app, &st, w, h);
                let buf = term.backend().buffer();
                for (i, cell) in buf.content().iter().enumerate() {
                    if !cell.symbol().chars().any(char::is_alphanumeric) {
                        continue;
                    }
                    if let Err(why) = readable(cell) {
                        let (x, y) = (i as u16 % w, i as u16 / w);
                        let row: String =
                            (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
                        panic!(
                            "{name} at {w}x{h}, help {help}: `{}` at ({x},{y}) is {why}\n{row}",
                            cell.symbol()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn with_no_color_each_drawn_series_has_its_own_marker_and_none_is_the_event_dot() {
    let glyphs: Vec<&str> = MARKERS.iter().map(|m| m.1).collect();
    for (i, g) in glyphs.iter().enumerate() {
        assert!(!glyphs[..i].contains(g), "{g} used twice");
        assert_ne!(*g, EVENT_MARKER.1, "a series marker is the event dot");
    }
    let markers: Vec<_> = MARKERS.iter().map(|m| m.0).collect();
    for (i, m) in markers.iter().enumerate() {
        assert!(!markers[..i].contains(m));
        assert_ne!(*m, EVENT_MARKER.0);
    }
    // Every chart draws within that (a debug assertion in the chart), at every size; and no
    // figure in a header is introduced by the event dot (the "SYN in" was).
    let app = App::new(Theme { color: false }, 60.0);
    for (name, st) in states() {
        for (w, h) in [(60, 20), (80, 24), (200, 55)] {
            let text = render::screen_text(&app, &st, w, h);
            for l in text.lines() {
                if let Some(i) = l.find(EVENT_MARKER.1) {
                    let after = &l[i + EVENT_MARKER.1.len()..];
                    assert!(
                        !after.starts_with("SYN") && !after.starts_with("target"),
                        "{name} {w}x{h}: a series shown with the event mark: {l}"
                    );
                }
            }
        }
    }
}
