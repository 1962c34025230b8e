//! UI state (window, help overlay, last message) and `apply(Action)`: the one place where an
//! action turns into a lab command, a lab call or a UI change.

use super::keymap::Action;
use super::theme::Theme;
use crate::lab::control::LabControl;
use crate::lab::knobs::{Command, Reply};
use crate::load::protocol::Mode;
use crate::model::load_knob::{LoadKnob, LoadStep};
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
    /// The drops view ("what the kernel dropped, and why") in place of the panels.
    pub show_drops: bool,
    pub quit: bool,
    pub message: Option<Message>,
    pub marks: usize,
    /// synlab runs as the host's root: the kernel's own reasons (its tracepoints) need it.
    /// `run_tui` asks the process; `new` assumes root.
    pub host_root: bool,
}

impl App {
    pub fn new(theme: Theme, window_s: f64) -> Self {
        App {
            theme,
            window_s: window_s.clamp(WINDOW_MIN_S, WINDOW_MAX_S),
            show_help: false,
            show_drops: false,
            quit: false,
            message: None,
            marks: 0,
            host_root: true,
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
            _ => last_action.map(|r| (Cow::Owned(r.to_string()), r.is_refused())),
        }
    }

    /// Shows `text` in the caption bar, as a warning when `refused`.
    fn say(&mut self, lab: &dyn LabControl, text: String, refused: bool) {
        self.message = Some(Message {
            text,
            refused,
            seen_last_action: lab.state().last_action.clone(),
        });
    }

    fn command(&mut self, lab: &mut dyn LabControl, cmd: Command) {
        let r = lab.command(cmd);
        self.say(lab, r.to_string(), r.is_refused());
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
            Load(knob, step) => self.command(lab, Command::StepLoad(knob, step)),
            CycleMode => self.command(lab, Command::CycleMode),
            ScaleSockets(f) => {
                let knob = if lab.state().knobs.mode == Mode::Closed {
                    LoadKnob::Clients
                } else {
                    LoadKnob::Sockets
                };
                self.command(lab, Command::StepLoad(knob, LoadStep::Scale(f)))
            }
            ToggleBurst => self.command(lab, Command::ToggleBurst),
            PathStep(knob, step) => self.command(lab, Command::StepPath(knob, step)),
            SelectPath => self.command(lab, Command::SelectNextPath),
            TogglePause => self.command(lab, Command::TogglePause),
            Mark => {
                self.marks += 1;
                let label = format!("mark {}", self.marks);
                lab.mark(&label);
                let t = lab.state().elapsed_s;
                self.say(lab, format!("{label} at {t:.1}s"), false);
            }
            Snapshot => {
                let text = screen(self, lab.state());
                match lab.snapshot(&text) {
                    Ok(p) => self.say(lab, snapshot_written(&p), false),
                    Err(e) => self.say(lab, format!("snapshot failed: {e:#}"), true),
                }
            }
            Zoom(f) => {
                let w = (self.window_s * f).clamp(WINDOW_MIN_S, WINDOW_MAX_S);
                if w == self.window_s {
                    let text = format!(
                        "window stays {:.0}s (limits {WINDOW_MIN_S:.0}..{WINDOW_MAX_S:.0}s)",
                        self.window_s
                    );
                    self.say(lab, text, true);
                } else {
                    self.window_s = w;
                    self.say(lab, format!("window {w:.0}s"), false);
                }
            }
            // The step's caption is in the caption bar already: the message says which step.
            NextStep => match lab.next_step() {
                Some(s) => {
                    let text = match lab.state().step {
                        Some((i, n)) if lab.state().caption.as_deref() == Some(s.as_str()) => {
                            format!("next step: {i} of {n}")
                        }
                        _ => format!("next step: {s}"),
                    };
                    self.say(lab, text, false)
                }
                None => self.say(lab, "no more scenario steps".into(), true),
            },
            ToggleHelp => self.show_help = !self.show_help,
            ToggleDrops => self.show_drops = !self.show_drops,
            // Not the host's root: said plainly, nothing tried.
            ToggleKernelReasons if !self.host_root => {
                let key = super::keymap::key_for(ToggleKernelReasons);
                let text = format!(
                    "{key} needs root (the kernel's tracepoints): synlab runs as a plain user"
                );
                self.say(lab, text, true)
            }
            ToggleKernelReasons => match lab.toggle_kernel_reasons() {
                Ok(on) => {
                    let key = super::keymap::key_for(ToggleKernelReasons);
                    let text = if on {
                        format!("the kernel's own reasons: counting from the next sample ({key} stops it)")
                    } else {
                        format!("the kernel's own reasons: off ({key} counts them again)")
                    };
                    self.say(lab, text, false)
                }
                Err(why) => self.say(lab, why, true),
            },
            CloseHelp => self.show_help = false,
            Quit => self.quit = true,
        }
    }
}

/// What the caption bar says of a snapshot: the file first, then its folder, so the name
/// survives a narrow screen ("snapshot-0066.3s.txt written to /home/.../results/run/").
fn snapshot_written(p: &std::path::Path) -> String {
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
    match (p.file_name(), dir) {
        (Some(name), Some(dir)) => {
            format!("{} written to {}/", name.to_string_lossy(), dir.display())
        }
        _ => format!("snapshot written to {}", p.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's-reasons messages name the key that toggles them, as the help does.
    #[test]
    fn kernel_reasons_messages_name_their_key() {
        assert_eq!(
            super::super::keymap::key_for(Action::ToggleKernelReasons),
            "Y"
        );
    }
}
