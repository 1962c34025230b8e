//! The keymap: one table from keys to `Action`s with their help text. The `?` overlay, the
//! one-line hint and key dispatch all read this table, so what is shown is what is bound.

use crate::model::knob::{PathKnob, PathStep};
use crate::model::load_knob::{LoadKnob, LoadStep};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::sync::LazyLock;

/// Everything a person can ask of the TUI. Lab-changing actions become a `Command` in
/// `App::apply`; the others change UI state or call the lab (mark, snapshot, next step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Step a knob of the load (rate, burst ratio, time at peak, resumed share, ...).
    Load(LoadKnob, LoadStep),
    CycleMode,
    /// Multiply D (sockets; clients in closed mode).
    ScaleSockets(f64),
    ToggleBurst,
    /// Step a knob of the selected network path.
    PathStep(PathKnob, PathStep),
    SelectPath,
    TogglePause,
    Mark,
    Snapshot,
    /// Multiply the chart window (0.5 = zoom in, 2 = zoom out).
    Zoom(f64),
    NextStep,
    /// The drops view in place of the panels, and back.
    ToggleDrops,
    /// Count the kernel's own drop reasons, or stop (off by default: their cost).
    ToggleKernelReasons,
    ToggleHelp,
    CloseHelp,
    Quit,
}

/// A key as written in the help ("+", "Tab", "Ctrl-C").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Tab,
    Esc,
}

impl Key {
    pub fn label(&self) -> String {
        match self {
            Key::Char(' ') => "Space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("Ctrl-{}", c.to_ascii_uppercase()),
            Key::Tab => "Tab".into(),
            Key::Esc => "Esc".into(),
        }
    }

    /// The crossterm event this key produces (used by tests and the tmux test's key names).
    pub fn event(&self) -> KeyEvent {
        match *self {
            Key::Char(c) if c.is_ascii_uppercase() => {
                KeyEvent::new(KeyCode::Char(c), KeyModifiers::SHIFT)
            }
            Key::Char(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
            Key::Ctrl(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
            Key::Tab => KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE),
            Key::Esc => KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
        }
    }
}

/// One row of the keymap.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub key: Key,
    pub action: Action,
    pub help: &'static str,
}

const fn b(key: Key, action: Action, help: &'static str) -> Binding {
    Binding { key, action, help }
}

use Action as A;
use Key::Char as C;
use LoadKnob::Rate;
use PathKnob::{Bandwidth as BW, Jitter, Loss, Rtt};
use PathStep::{Add, Scale};

/// A load knob's key step up, and down.
const fn up(k: LoadKnob) -> Action {
    A::Load(k, k.key_step())
}
const fn down(k: LoadKnob) -> Action {
    A::Load(k, k.key_step().down())
}

/// The keys before the load knobs' own.
const HEAD: &[Binding] = &[
    b(C('+'), up(Rate), "rate x1.1"),
    b(C('='), up(Rate), "rate x1.1 (no shift)"),
    b(C('-'), down(Rate), "rate /1.1"),
    b(C('*'), A::Load(Rate, LoadStep::Scale(2.0)), "rate x2"),
    b(C('/'), A::Load(Rate, LoadStep::Scale(0.5)), "rate /2"),
    b(C('c'), A::CycleMode, "cycle mode sclient/open/closed"),
    b(C('d'), A::ScaleSockets(0.5), "D (or clients) /2"),
    b(C('D'), A::ScaleSockets(2.0), "D (or clients) x2"),
];

/// The keys after them.
const TAIL: &[Binding] = &[
    b(C('b'), A::ToggleBurst, "bursts on/off"),
    b(
        C('r'),
        A::PathStep(Rtt, Add(-10.0)),
        "RTT -10 ms (selected path)",
    ),
    b(C('R'), A::PathStep(Rtt, Add(10.0)), "RTT +10 ms"),
    b(C('<'), A::PathStep(Rtt, Add(-50.0)), "RTT -50 ms"),
    b(C('>'), A::PathStep(Rtt, Add(50.0)), "RTT +50 ms"),
    b(C('j'), A::PathStep(Jitter, Add(-1.0)), "jitter -1 ms"),
    b(C('J'), A::PathStep(Jitter, Add(1.0)), "jitter +1 ms"),
    b(C('l'), A::PathStep(Loss, Add(-0.5)), "loss -0.5%"),
    b(C('L'), A::PathStep(Loss, Add(0.5)), "loss +0.5%"),
    b(
        C('w'),
        A::PathStep(BW, Scale(0.5)),
        "bandwidth down (1-2-5 steps)",
    ),
    b(
        C('W'),
        A::PathStep(BW, Scale(2.0)),
        "bandwidth up (1-2-5 steps)",
    ),
    b(Key::Tab, A::SelectPath, "select next path"),
    b(C('p'), A::TogglePause, "pause/resume load"),
    b(C('m'), A::Mark, "mark an event"),
    b(C('s'), A::Snapshot, "snapshot to file"),
    b(C('z'), A::Zoom(0.5), "zoom in (shorter window)"),
    b(C('Z'), A::Zoom(2.0), "zoom out (longer window)"),
    b(C('n'), A::NextStep, "next scenario step"),
    b(C('y'), A::ToggleDrops, "why: what the kernel dropped"),
    b(
        C('Y'),
        A::ToggleKernelReasons,
        "kernel's own reasons on/off",
    ),
    b(C('?'), A::ToggleHelp, "this help"),
    b(Key::Esc, A::CloseHelp, "close help"),
    b(C('q'), A::Quit, "quit (cleans up)"),
    b(Key::Ctrl('c'), A::Quit, "quit (cleans up)"),
];

/// The one source of truth for keys. Lower case turns a knob down, upper case up. The load
/// knobs' keys come from their table (`LoadKnob::keys`), so a new knob brings its own.
pub static KEYMAP: LazyLock<Vec<Binding>> = LazyLock::new(|| {
    let knobs = LoadKnob::ALL.iter().filter_map(|&k| {
        let keys = k.keys()?;
        Some([
            b(C(keys.down), down(k), keys.down_help),
            b(C(keys.up), up(k), keys.up_help),
        ])
    });
    HEAD.iter()
        .copied()
        .chain(knobs.flatten())
        .chain(TAIL.iter().copied())
        .collect()
});

/// The one-line hint: the keys a newcomer needs first.
pub const HINT: &str =
    "+/- rate  * / x2 /2  r/R rtt  l/L loss  p pause  m mark  n step  ? help  q quit";

/// The hint on a screen narrower than `HINT`.
pub const HINT_SHORT: &str = "+/- rate  p pause  n step  ? help  q quit";

/// The key bound to `action` as the help writes it ("Y"): a message that names a key names
/// the one that does it.
pub fn key_for(action: Action) -> String {
    KEYMAP
        .iter()
        .find(|b| b.action == action)
        .map_or_else(|| "?".into(), |b| b.key.label())
}

/// The action bound to a key event, if any. Key releases/repeats of non-press kinds are ignored.
pub fn action_for(ev: KeyEvent) -> Option<Action> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    let key = match ev.code {
        KeyCode::Char(c) if ev.modifiers.contains(KeyModifiers::CONTROL) => {
            Key::Ctrl(c.to_ascii_lowercase())
        }
        // Shift is part of the character already ('D', '+'); some terminals also set SHIFT.
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Tab => Key::Tab,
        KeyCode::Esc => Key::Esc,
        _ => return None,
    };
    KEYMAP.iter().find(|b| b.key == key).map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_bound_once_and_maps_back_to_its_action() {
        for (i, a) in KEYMAP.iter().enumerate() {
            assert!(
                KEYMAP[..i].iter().all(|b| b.key != a.key),
                "{:?} bound twice",
                a.key
            );
            assert_eq!(action_for(a.key.event()), Some(a.action), "{:?}", a.key);
        }
    }

    #[test]
    fn unbound_keys_and_releases_do_nothing() {
        assert_eq!(action_for(Key::Char('g').event()), None);
        let mut ev = Key::Char('q').event();
        ev.kind = KeyEventKind::Release;
        assert_eq!(action_for(ev), None);
    }
}
