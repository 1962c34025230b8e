//! The live TUI: terminal guard, keymap -> Action, app state, one render module per panel.
//!
//! `run_tui` drives any `LabControl`: it redraws at a fixed frame rate (independent of the
//! sampling interval), pumps the lab between frames and turns keys into actions.

pub mod app;
#[cfg(any(test, feature = "test-support"))]
pub mod fixture;
pub mod keymap;
pub mod render;
pub mod terminal;
pub mod theme;

use crate::lab::control::LabControl;
use crate::lab::session::{self, Start};
use anyhow::Context;
use app::App;
use crossterm::event::{self, Event};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use theme::Theme;

/// `synlab` / `synlab tui`: the live TUI on a scenario (the embedded default without one).
pub fn tui_main(start: Start) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the TUI needs a terminal; for a headless run use `synlab run {}`",
            start.name()
        );
    }
    let (sc, opts) = start.open()?;
    let interrupted = opts.interrupted.clone();
    eprintln!("synlab: starting {} ...", sc.name);
    let ui = UiOptions {
        response_timeout_s: Some(sc.load.response_timeout.secs()),
        ..UiOptions::default()
    };
    let mut ctrl = crate::lab::controller::Controller::start(sc, opts)?;
    ctrl.tui_mode();
    terminal_watch(&interrupted, ctrl.lab_netns_prefix());
    let result = run_tui(&mut ctrl, ui);
    let unwritten = session::report_and_folder(ctrl.folder_dir());
    result?;
    let died = ctrl.child_died();
    if let Some(code) = session::cut_short(ctrl.state().interrupted, died.as_ref()) {
        return Ok(code);
    }
    match unwritten {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            // The terminal may be gone (a hangup): the line is lost, never a panic.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "synlab: the run folder is incomplete: {e:#} (exit 1)"
            );
            Ok(ExitCode::from(1))
        }
    }
}

/// Set once the event loop has returned: the terminal no longer holds the process, and the lab's
/// own shutdown (its drain is bounded) takes it from there.
static EVENT_LOOP_RETURNED: AtomicBool = AtomicBool::new(false);

/// How long the loop may stay inside the terminal library after the terminal hung up before
/// the watch detaches from it (that library spins on a hung-up terminal's end of file).
const DEAD_TTY_GRACE: Duration = Duration::from_secs(2);
/// After a signal or a hangup, how long the lab may take to stop before the process is ended
/// with its namespaces removed: a last resort, past the drain's own bound.
const LAST_RESORT: Duration = Duration::from_secs(30);

/// Watches the terminal while the event loop runs. The loop itself sees a hangup (it polls
/// the terminal before reading it) and signals (the lab's pump); this thread is for a loop
/// caught inside the terminal library when the terminal went away between the two: it
/// detaches the process from the dead terminal, which lets the library return, and only if
/// the loop still never returns ends the process (namespaces removed; the children die with
/// it, PDEATHSIG).
fn terminal_watch(flag: &Arc<AtomicBool>, netns_prefix: Option<String>) {
    let flag = flag.clone();
    let _ = std::thread::Builder::new()
        .name("terminal-watch".into())
        .spawn(move || {
            let Ok(tty) = crate::sys::tty::Tty::open() else {
                return;
            };
            let hung_up = || tty.hung_up();
            if !loop_stuck(&flag, &hung_up, &EVENT_LOOP_RETURNED, DEAD_TTY_GRACE) {
                return;
            }
            let _ = crate::sys::tty::detach_from_terminal();
            let deadline = Instant::now() + LAST_RESORT;
            while Instant::now() < deadline {
                if EVENT_LOOP_RETURNED.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(p) = netns_prefix {
                let _ = crate::sys::netns::cleanup_matching(&p);
            }
            std::process::exit(130);
        });
}

/// Waits for a signal or a hangup, then up to `grace` for the event loop to return: true when
/// it did not (the loop is stuck on a dead terminal), false once it did (a long drain is left
/// to finish).
fn loop_stuck(
    signal: &AtomicBool,
    hung_up: &dyn Fn() -> bool,
    returned: &AtomicBool,
    grace: Duration,
) -> bool {
    let step = Duration::from_millis(100);
    while !signal.load(Ordering::Relaxed) && !hung_up() {
        if returned.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(step);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if returned.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(step);
    }
    !returned.load(Ordering::Relaxed)
}

/// How the TUI looks and paces itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UiOptions {
    /// Redraws per second (clamped to 1..=60).
    pub fps: u32,
    /// Initial chart window, seconds (zoomable with z/Z).
    pub window_s: f64,
    /// No colours at all (NO_COLOR).
    pub no_color: bool,
    /// The scenario's `load.response_timeout`, seconds: with T, how long the drain at the end
    /// may take (the stopping line says it).
    pub response_timeout_s: Option<f64>,
}

impl Default for UiOptions {
    /// 10 fps, a 60 s window, colour unless NO_COLOR is set.
    fn default() -> Self {
        UiOptions {
            fps: 10,
            window_s: 60.0,
            no_color: !Theme::from_env().color,
            response_timeout_s: None,
        }
    }
}

/// Runs the TUI on `lab` until the person quits or the terminal goes away; then restores the
/// terminal (or, when it is gone, detaches from it) and calls `lab.stop()` (full cleanup). An
/// error from the lab ends the TUI with the terminal restored.
pub fn run_tui(lab: &mut dyn LabControl, opts: UiOptions) -> anyhow::Result<()> {
    let tty = crate::sys::tty::Tty::open().context("the TUI needs a terminal to read keys from")?;
    let guard = terminal::TerminalGuard::enter()
        .context("cannot put the terminal in raw mode: is stdout a terminal? (use `synlab run` for headless runs)")?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut app = App::new(
        Theme {
            color: !opts.no_color,
        },
        opts.window_s,
    );
    // Whether the kernel's own reasons can be counted: a question to the system, asked once.
    app.host_root = crate::sys::userns::host_root();
    let frame = Duration::from_secs_f64(1.0 / opts.fps.clamp(1, 60) as f64);
    // The terminal is asked first: a hung-up one never reaches the terminal library. After an
    // event, the library may hold more it read at once (keys pasted or sent together): those
    // are taken before waiting on the terminal again.
    let mut may_hold_more = false;
    let mut input = |timeout: Duration| -> std::io::Result<Polled> {
        use crate::sys::tty::Readiness;
        let wait = if may_hold_more {
            Duration::ZERO
        } else {
            timeout
        };
        let ready = tty.wait(wait)?;
        if ready == Readiness::Gone {
            return Ok(Polled::TerminalGone);
        }
        // The terminal library may already hold what made the terminal readable (or wait on
        // its own for more of a key's escape sequence): it is asked to wait out the rest of
        // the frame, not to answer at once, so input it does not turn into an event is no
        // loop around a terminal that stays readable.
        let library_wait = if may_hold_more { Duration::ZERO } else { wait };
        if (ready == Readiness::Input || may_hold_more) && event::poll(library_wait)? {
            may_hold_more = true;
            return Ok(Polled::Event(event::read()?));
        }
        if may_hold_more {
            may_hold_more = false;
            return Ok(Polled::Again);
        }
        Ok(Polled::Nothing)
    };
    let result = event_loop(&mut term, lab, &mut app, frame, &mut input);
    EVENT_LOOP_RETURNED.store(true, Ordering::Relaxed);
    if lab.state().terminal_gone || tty.hung_up() {
        // Nothing can be shown any more: whatever is written from here on is dropped.
        let _ = crate::sys::tty::detach_from_terminal();
    }
    drop(term);
    drop(guard);
    // The terminal is the shell's again, and the lab drains (up to its bound) before the run
    // folder is written: said, so the start-up line is not the last word for seconds. A
    // terminal that is gone takes nothing (the line is dropped, never a panic).
    {
        use std::io::Write;
        let line = stopping_line(lab.state(), opts.response_timeout_s);
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    let stopped = lab.stop().context("stopping the lab");
    result.and(stopped)
}

/// What the terminal says once the TUI has left it, while the lab drains what is in flight
/// (the controller's `drain_bound_s`) before it writes the run
/// folder: "synlab: stopping: draining 1200 requests in flight (at most 10 s)". The figures
/// are the latest sample's (requests sent and not answered, connects and handshakes in
/// progress), the bound T as the knobs have it now.
pub fn stopping_line(st: &crate::lab::state::LabState, response_timeout_s: Option<f64>) -> String {
    use crate::model::col;
    let last = |c| st.store.last(c).map(|v: f64| v.max(0.0).round() as u64);
    let (requests, connects) = (last(col::REQUESTS_IN_FLIGHT), last(col::CONNECTING));
    let bound = response_timeout_s.map(|r| {
        let s = crate::lab::controller::drain_bound_s(st.knobs.timeout.as_secs_f64(), r);
        format!(" (at most {} s)", secs_text(s))
    });
    let bound = bound.unwrap_or_default();
    let what = match (requests.unwrap_or(0), connects.unwrap_or(0)) {
        _ if requests.is_none() && connects.is_none() => {
            format!("draining what is in flight{bound}")
        }
        (0, 0) => "nothing in flight; writing the run folder".to_string(),
        (r, 0) => format!("draining {r} requests in flight{bound}"),
        (0, c) => format!("draining {c} connects in flight{bound}"),
        // One line of 80 columns up to seven figures each (a flood has 5-digit connects).
        (r, c) => format!("draining {r} requests, {c} connects{bound}"),
    };
    format!("synlab: stopping: {what}")
}

/// Seconds as a person reads them: "10", "1.5".
fn secs_text(s: f64) -> String {
    if (s - s.round()).abs() < 0.05 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// When the frame after a draw at `now` is due, the last one having been due at `due`: one
/// frame on when the draw was the due one (at once after a slow frame, rather than a burst of
/// redraws); still `due` when input ended the wait early (a resize redraws at once), so the
/// schedule never runs ahead of the clock by more than a frame, however many early draws.
pub fn next_frame_after(due: Instant, frame: Duration, now: Instant) -> Instant {
    if due > now {
        due.min(now + frame)
    } else {
        (due + frame).max(now)
    }
}

/// What waiting for input found.
#[derive(Debug)]
pub enum Polled {
    Event(Event),
    /// Nothing before the timeout (or input that made no event).
    Nothing,
    /// Nothing yet, without having waited: ask again.
    Again,
    /// The terminal hung up: its window or emulator was closed.
    TerminalGone,
}

/// Waits up to the timeout for a terminal event.
pub type Input<'a> = dyn FnMut(Duration) -> std::io::Result<Polled> + 'a;

/// The main loop: pump the lab, draw, then read input until the next frame is due. Returns
/// when the person quits, a signal interrupted the lab or the terminal went away (the lab is
/// then told, and ends as on an interruption). Generic over the backend and the input so
/// tests run it headless.
pub fn event_loop<B: ratatui::backend::Backend>(
    term: &mut Terminal<B>,
    lab: &mut dyn LabControl,
    app: &mut App,
    frame: Duration,
    input: &mut Input,
) -> anyhow::Result<()> {
    let mut next_frame = Instant::now();
    loop {
        lab.pump()?;
        // A signal stops the session as it stops a headless run (the caller exits 130).
        if lab.state().interrupted {
            return Ok(());
        }
        if let Err(e) = term.draw(|f| render::draw(f, app, lab.state())) {
            if crate::sys::tty::is_gone_error(&e) {
                lab.terminal_gone();
                return Ok(());
            }
            return Err(e.into());
        }
        next_frame = next_frame_after(next_frame, frame, Instant::now());
        // Input until the next frame is due (the lab is still pumped every frame, so signals
        // and deadlines are seen).
        loop {
            let now = Instant::now();
            if now >= next_frame {
                break;
            }
            let ev = match input(next_frame - now)? {
                Polled::Nothing => break,
                Polled::Again => continue,
                Polled::TerminalGone => {
                    lab.terminal_gone();
                    return Ok(());
                }
                Polled::Event(ev) => ev,
            };
            match ev {
                Event::Key(k) => {
                    if let Some(action) = keymap::action_for(k) {
                        let size = term.size()?;
                        app.apply(lab, action, &|app, st| {
                            render::screen_text(app, st, size.width, size.height)
                        });
                        if app.quit {
                            return Ok(());
                        }
                    }
                }
                Event::Resize(..) => {
                    // Redraw at the new size now (draw() resizes and clears).
                    term.autoresize()?;
                    break;
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After `q` the terminal says the lab is stopping, with what it drains and its bound (T +
    /// the response timeout, at most the controller's cap), not the start-up line alone.
    #[test]
    fn the_stopping_line_says_what_is_drained_and_for_how_long() {
        use crate::model::col;
        let mut st = fixture::quic_lesson_flood();
        let t = st.elapsed_s + 0.2;
        st.store.push(
            t,
            &[
                (col::REQUESTS_IN_FLIGHT, Some(12.0)),
                (col::CONNECTING, Some(20000.0)),
            ],
        );
        assert_eq!(
            stopping_line(&st, Some(10.0)),
            "synlab: stopping: draining 12 requests, 20000 connects (at most 10 s)"
        );
        // The widest line still fits the 80 columns the lessons are shown at.
        let mut wide = fixture::quic_lesson_flood();
        wide.store.push(
            t,
            &[
                (col::REQUESTS_IN_FLIGHT, Some(9_999_999.0)),
                (col::CONNECTING, Some(9_999_999.0)),
            ],
        );
        wide.knobs.timeout = Duration::from_millis(9_500);
        let line = stopping_line(&wide, Some(1.0));
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
        st.store.push(
            t + 0.2,
            &[
                (col::REQUESTS_IN_FLIGHT, Some(40.0)),
                (col::CONNECTING, Some(0.0)),
            ],
        );
        st.knobs.timeout = Duration::from_millis(500);
        assert_eq!(
            stopping_line(&st, Some(1.0)),
            "synlab: stopping: draining 40 requests in flight (at most 1.5 s)"
        );
        st.store.push(
            t + 0.4,
            &[
                (col::REQUESTS_IN_FLIGHT, Some(0.0)),
                (col::CONNECTING, Some(0.0)),
            ],
        );
        assert_eq!(
            stopping_line(&st, Some(1.0)),
            "synlab: stopping: nothing in flight; writing the run folder"
        );
        // Never measured: what is in flight, whatever it is.
        let fresh = crate::lab::state::LabState::new("t", fixture::knobs(), 0.2);
        assert_eq!(
            stopping_line(&fresh, None),
            "synlab: stopping: draining what is in flight"
        );
    }

    #[test]
    fn the_watch_stands_down_once_the_loop_returned() {
        let (signal, returned) = (AtomicBool::new(true), AtomicBool::new(true));
        let alive = || false;
        // A drain after the loop returned is left alone, however long the grace.
        assert!(!loop_stuck(
            &signal,
            &alive,
            &returned,
            Duration::from_secs(3600)
        ));
        // A loop that never returns is stuck once the grace is over.
        returned.store(false, Ordering::Relaxed);
        assert!(loop_stuck(&signal, &alive, &returned, Duration::ZERO));
        // A hangup without any signal (a program in a closed window gets none) counts too.
        let dead = || true;
        assert!(loop_stuck(
            &AtomicBool::new(false),
            &dead,
            &returned,
            Duration::ZERO
        ));
    }
}
