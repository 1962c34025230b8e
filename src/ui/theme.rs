//! Colours and glyphs. Colour mode uses the terminal's own ANSI palette (never white, black or
//! yellow for content) so it reads on dark and light backgrounds; NO_COLOR mode sets no colour
//! at all and tells series apart by their marker glyph and label.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;

/// A chart series' look: its colour (colour mode) and marker/glyph (NO_COLOR mode).
#[derive(Debug, Clone, Copy)]
pub struct SeriesLook {
    pub style: Style,
    pub marker: Marker,
    /// Shown before the series name in NO_COLOR mode, matching `marker`.
    pub glyph: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

const PALETTE: [Color; 6] = [
    Color::Blue,
    Color::Green,
    Color::Magenta,
    Color::Red,
    Color::Cyan,
    Color::LightRed,
];
const MARKERS: [(Marker, &str); 5] = [
    (Marker::Braille, "⣿"),
    (Marker::Dot, "•"),
    (Marker::Block, "█"),
    (Marker::HalfBlock, "▀"),
    (Marker::Bar, "▄"),
];

impl Theme {
    /// NO_COLOR set to anything non-empty disables colour (https://no-color.org).
    pub fn from_env() -> Self {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    /// The i-th series of a chart.
    pub fn series(&self, i: usize) -> SeriesLook {
        if self.color {
            SeriesLook {
                style: Style::default().fg(PALETTE[i % PALETTE.len()]),
                marker: Marker::Braille,
                glyph: "",
            }
        } else {
            let (marker, glyph) = MARKERS[i % MARKERS.len()];
            SeriesLook {
                style: Style::default(),
                marker,
                glyph,
            }
        }
    }

    /// A named colour role in colour mode; plain in NO_COLOR mode.
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    pub fn text(&self) -> Style {
        Style::default()
    }
    pub fn dim(&self) -> Style {
        if self.color {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }
    pub fn label(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }
    pub fn title(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }
    /// Warnings: red and bold in colour; reversed in NO_COLOR so they still stand out.
    pub fn warn(&self) -> Style {
        if self.color {
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        }
    }
    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }
    /// The selected path in the status line.
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    /// Event markers on charts.
    pub fn event(&self) -> Style {
        self.fg(Color::DarkGray)
    }
    /// CPU bar parts: user, system, irq, softirq (idle is blank).
    pub fn cpu(&self, part: usize) -> Style {
        self.fg([Color::Green, Color::Red, Color::Magenta, Color::Blue][part % 4])
    }
}

/// CPU bar glyphs: user, system, irq, softirq, idle.
pub const CPU_GLYPHS: [char; 5] = ['█', '▓', '▒', '░', '·'];
