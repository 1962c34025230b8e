//! UI state (window, help overlay, last message) and `apply(Action)`: the one place where an
//! action turns into a lab command, a lab call or a UI change.

use super::keymap::Action;
use super::theme::Theme;
use crate::lab::state::{Command, Reply};
use crate::lab::LabControl;
use crate::load::protocol::Mode;
use std::borrow::Cow;

/// Chart window limits, seconds.
pub const WINDOW_MIN_S: f64 = 10.0;
/// The widest chart: what the store keeps in memory.
pub const WINDOW_MAX_S: f64 = crate::metrics::store::KEEP_S;

/// The message shown in the caption bar after an action.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub text: String,
    pub refused: bool,
    /// The lab's `last_action` when this message was made: a later lab change (a scenario
    /// step) replaces the message in the caption bar.
    seen_last_action: Option<Reply>,
}

#[derive(Debug, Clone)]
pub struct App {
    pub theme: Theme,
    /// Width of the charts' time window, seconds.
    pub window_s: f64,
    pub show_help: bool,
    pub quit: bool,
    pub message: Option<Message>,
    pub marks: usize,
}

impl App {
    pub fn new(theme: Theme, window_s: f64) -> Self {
        App {
            theme,
            window_s: window_s.clamp(WINDOW_MIN_S, WINDOW_MAX_S),
            show_help: false,
            quit: false,
            message: None,
            marks: 0,
        }
    }

    /// The caption-bar message: ours, unless the lab has made a newer change since.
    pub fn message_for<'a>(
        &'a self,
        last_action: Option<&'a Reply>,
    ) -> Option<(Cow<'a, str>, bool)> {
        match &self.message {
            Some(m) if m.seen_last_action.as_ref() == last_action => {
                Some((Cow::Borrowed(m.text.as_str()), m.refused))
            }
            _ => last_action.map(|r| (r.line(), r.is_refused())),
        }
    }

    /// Ok(text) is shown plainly, Err(text) as a warning.
    fn say(&mut self, lab: &dyn LabControl, r: Result<String, String>) {
        let (text, refused) = match r {
            Ok(t) => (t, false),
            Err(e) => (e, true),
        };
        self.message = Some(Message {
            text,
            refused,
            seen_last_action: lab.state().last_action.clone(),
        });
    }

    fn command(&mut self, lab: &mut dyn LabControl, cmd: Command) {
        let r = match lab.command(cmd) {
            r @ Reply::Applied(_) => Ok(r.line().into_owned()),
            r @ Reply::Refused(_) => Err(r.line().into_owned()),
        };
        self.say(lab, r);
    }

    /// Carries out an action. `screen` renders the current screen as text (for snapshots); it
    /// is only called for `Action::Snapshot`.
    pub fn apply(
        &mut self,
        lab: &mut dyn LabControl,
        action: Action,
        screen: &dyn Fn(&App, &crate::lab::state::LabState) -> String,
    ) {
        use Action::*;
        match action {
            ScaleRate(f) => self.command(lab, Command::ScaleRate(f)),
            CycleMode => self.command(lab, Command::CycleMode),
            ScaleSockets(f) => {
                let k = &lab.state().knobs;
                let scale = |n: u32| ((n as f64 * f).round() as u32).max(1);
                let cmd = if k.mode == Mode::Closed {
                    Command::SetClients(scale(k.clients))
                } else {
                    Command::SetSockets(scale(k.sockets))
                };
                self.command(lab, cmd)
            }
            BurstRatioBy(d) => self.command(lab, Command::BurstRatioBy(d)),
            BurstFractionBy(d) => self.command(lab, Command::BurstFractionBy(d)),
            ToggleBurst => self.command(lab, Command::ToggleBurst),
            RttBy(d) => self.command(lab, Command::RttBy(d)),
            LossBy(d) => self.command(lab, Command::LossBy(d)),
            ScaleBandwidth(f) => self.command(lab, Command::ScaleBandwidth(f)),
            SelectPath => self.command(lab, Command::SelectNextPath),
            TogglePause => self.command(lab, Command::TogglePause),
            Mark => {
                self.marks += 1;
                let label = format!("mark {}", self.marks);
                lab.mark(&label);
                let t = lab.state().elapsed_s;
                self.say(lab, Ok(format!("{label} at {t:.1}s")));
            }
            Snapshot => {
                let text = screen(self, lab.state());
                let r = lab
                    .snapshot(&text)
                    .map(|p| format!("snapshot written to {}", p.display()))
                    .map_err(|e| format!("snapshot failed: {e:#}"));
                self.say(lab, r);
            }
            Zoom(f) => {
                let w = (self.window_s * f).clamp(WINDOW_MIN_S, WINDOW_MAX_S);
                let r = if w == self.window_s {
                    Err(format!(
                        "window stays {:.0}s (limits {WINDOW_MIN_S:.0}..{WINDOW_MAX_S:.0}s)",
                        self.window_s
                    ))
                } else {
                    self.window_s = w;
                    Ok(format!("window {w:.0}s"))
                };
                self.say(lab, r);
            }
            NextStep => {
                let r = lab
                    .next_step()
                    .map(|s| format!("next step: {s}"))
                    .ok_or_else(|| "no more scenario steps".to_string());
                self.say(lab, r);
            }
            ToggleHelp => self.show_help = !self.show_help,
            CloseHelp => self.show_help = false,
            Quit => self.quit = true,
        }
    }
}
