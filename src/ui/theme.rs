//! Colours and glyphs, readable on a projector. Every letter and digit is drawn in the
//! terminal's own foreground (whatever its background, light or dark, that is what it
//! contrasts with), bold for values; colour marks only which line is which (a swatch before a
//! series' name, the lines themselves) and stands out for the lesson's caption (black on
//! yellow, what the eye goes to first) and for alarms (white on red); a steady condition (no
//! pcap, a late delay router) is a plain note. NO_COLOR mode sets no colour at all: each
//! plotted series has a marker of its own (a chart plots at most `MARKERS.len()` series),
//! alarms are reversed and the caption bold and underlined.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;

/// A chart series' look: its colour (colour mode) and marker/glyph (NO_COLOR mode).
#[derive(Debug, Clone, Copy)]
pub struct SeriesLook {
    pub style: Style,
    pub marker: Marker,
    /// Shown before the series name: a swatch of its colour, or (NO_COLOR) its marker's glyph.
    pub glyph: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

/// Colours of a chart's series, in order; red is kept for errors and warnings. From the
/// terminal's ANSI palette, so a light or dark theme keeps its own shades.
const PALETTE: [Color; 4] = [Color::Cyan, Color::Magenta, Color::Green, Color::LightBlue];
/// An error series (connection errors, listen overflows, system CPU).
pub const ERROR_COLOR: Color = Color::Red;
/// NO_COLOR markers, one per plotted series; the event columns use the dot, which none of
/// these is.
pub const MARKERS: [(Marker, &str); 4] = [
    (Marker::Braille, "⣿"),
    (Marker::Block, "█"),
    (Marker::HalfBlock, "▀"),
    (Marker::Bar, "▄"),
];
/// The event columns' marker.
pub const EVENT_MARKER: (Marker, &str) = (Marker::Dot, "•");

impl Theme {
    /// NO_COLOR set to anything non-empty disables colour (https://no-color.org).
    pub fn from_env() -> Self {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    /// The i-th plotted series of a chart; `error` gives it the error colour.
    pub fn series(&self, i: usize, error: bool) -> SeriesLook {
        if self.color {
            let c = if error {
                ERROR_COLOR
            } else {
                PALETTE[i % PALETTE.len()]
            };
            SeriesLook {
                style: Style::default().fg(c),
                marker: Marker::Braille,
                glyph: "━",
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

    /// Plain text: the terminal's own foreground (said, so no frame colour under it shows).
    pub fn text(&self) -> Style {
        Style::default().fg(Color::Reset)
    }
    /// Lines that frame (borders, axes, idle cells): faint in colour mode; never text.
    pub fn frame(&self) -> Style {
        if self.color {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }
    /// Values and names a person reads first: bold, in the terminal's foreground.
    pub fn label(&self) -> Style {
        self.text().add_modifier(Modifier::BOLD)
    }
    pub fn title(&self) -> Style {
        self.text().add_modifier(Modifier::BOLD)
    }
    /// Warnings: white on red and bold in colour (contrast 5.9:1 with the standard red);
    /// reversed in NO_COLOR so they still stand out.
    pub fn warn(&self) -> Style {
        if self.color {
            Style::default()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        }
    }
    /// The lesson's caption: what a class reads first, so the strongest contrast on screen
    /// (black on light yellow, 19:1) and bold; NO_COLOR: bold and underlined.
    pub fn caption(&self) -> Style {
        if self.color {
            Style::default()
                .fg(Color::Black)
                .bg(Color::LightYellow)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        }
    }
    /// A steady condition worth knowing (no pcap, the delay router late): plain text, not an
    /// alarm.
    pub fn notice(&self) -> Style {
        self.text()
    }
    /// The answer to a key: plain (a refusal is a warning).
    pub fn ok(&self) -> Style {
        self.text()
    }
    /// The selected path in the status line.
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    /// Event markers on charts (dots, never text).
    pub fn event(&self) -> Style {
        self.frame()
    }
    /// CPU bar parts: user, system, irq, softirq (idle is blank). Only the bar's glyphs are
    /// coloured; the legend's words are plain.
    pub fn cpu(&self, part: usize) -> Style {
        if self.color {
            Style::default().fg([Color::Green, ERROR_COLOR, Color::Magenta, Color::Cyan][part % 4])
        } else {
            Style::default()
        }
    }
}

/// CPU bar glyphs: user, system, irq, softirq, idle.
pub const CPU_GLYPHS: [char; 5] = ['█', '▓', '▒', '░', '·'];
