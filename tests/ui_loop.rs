//! The main loop on a TestBackend with scripted input (no terminal, no sleeps): it pumps the
//! lab once per frame, keys reach the lab, a resize redraws at the new size, `q` ends it.

use crossterm::event::Event;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::collections::VecDeque;
use std::time::Duration;
use synlab::ui::app::App;
use synlab::ui::fixture::{self, FakeLab};
use synlab::ui::keymap::Key;
use synlab::ui::theme::Theme;
use synlab::ui::{event_loop, Polled};

/// The loop at 100 ms frames until it returns.
fn run(
    term: &mut Terminal<TestBackend>,
    lab: &mut FakeLab,
    app: &mut App,
    input: &mut dyn FnMut(Duration) -> std::io::Result<Polled>,
) {
    event_loop(term, lab, app, Duration::from_millis(100), input).unwrap();
}

#[test]
fn frames_pump_the_lab_keys_act_and_q_quits() {
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut lab = FakeLab::new(fixture::under_load());
    let mut app = App::new(Theme { color: true }, 60.0);
    // None = "no input before the next frame": one frame each.
    let mut script: VecDeque<Option<Event>> = VecDeque::from([
        None,
        Some(Event::Key(Key::Char('+').event())),
        None,
        Some(Event::Resize(100, 30)), // TestBackend keeps 80x24; the loop still redraws
        Some(Event::Key(Key::Char('*').event())),
        None,
        Some(Event::Key(Key::Char('q').event())),
        Some(Event::Key(Key::Char('+').event())), // never read: the loop has quit
    ]);
    let mut input = |_t: Duration| {
        Ok(match script.pop_front().expect("loop read past q") {
            Some(ev) => Polled::Event(ev),
            None => Polled::Nothing,
        })
    };
    run(&mut term, &mut lab, &mut app, &mut input);
    assert!(app.quit);
    // Frames: start, after None, after None, after Resize (immediate redraw), after None.
    assert_eq!(lab.pumps, 5);
    assert_eq!(lab.state.knobs.rate, Some(4400.0));
    assert!(
        !lab.stopped,
        "stop() is run_tui's job after the terminal is restored"
    );
    let buf = term.backend().buffer().clone();
    let row0: String = (0..80).map(|x| buf[(x, 0)].symbol().to_string()).collect();
    assert!(row0.starts_with("synlab · default"), "{row0}");
}

/// A signal stops the session as it stops a headless run: the pump notes it in the state and
/// the loop ends at once (no input read), for `tui_main` to exit 130.
#[test]
fn an_interrupted_lab_ends_the_loop_before_any_input() {
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut st = fixture::under_load();
    st.interrupted = true;
    st.finished = true;
    let mut lab = FakeLab::new(st);
    let mut app = App::new(Theme { color: true }, 60.0);
    let mut input = |_t: Duration| -> std::io::Result<Polled> {
        panic!("the loop read input after the lab was interrupted")
    };
    run(&mut term, &mut lab, &mut app, &mut input);
    assert_eq!(lab.pumps, 1);
    assert!(!app.quit, "ended by the signal, not by a key");
}

/// issue 28: the terminal goes away under the TUI (its window closed: a hangup, no signal).
/// The loop tells the lab, which ends as on an interruption, and returns without reading or
/// drawing again.
#[test]
fn a_terminal_that_goes_away_ends_the_session_as_an_interruption() {
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut lab = FakeLab::new(fixture::under_load());
    let mut app = App::new(Theme { color: true }, 60.0);
    let mut script: VecDeque<Polled> = VecDeque::from([
        Polled::Event(Event::Key(Key::Char('+').event())),
        Polled::TerminalGone,
    ]);
    let mut input = |_t: Duration| Ok(script.pop_front().expect("the loop read past the hangup"));
    run(&mut term, &mut lab, &mut app, &mut input);
    assert!(lab.state.terminal_gone && lab.state.interrupted);
    assert_eq!(lab.pumps, 1, "no frame after the hangup");
    assert!(!app.quit, "ended by the hangup, not by a key");
    assert_eq!(
        lab.state.knobs.rate,
        Some(2200.0),
        "the key before it still acted"
    );
}

/// A tester's tmux resizes made the loop draw early dozens of times in a row; each early draw
/// pushed the next frame one frame later, until the loop waited an hour for input and the
/// screen froze. However many early returns, no wait asked for is longer than a frame.
#[test]
fn early_redraws_never_push_the_next_frame_past_one_frame() {
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut lab = FakeLab::new(fixture::under_load());
    let mut app = App::new(Theme { color: true }, 60.0);
    let (mut calls, mut longest) = (0, Duration::ZERO);
    let mut input = |t: Duration| {
        calls += 1;
        longest = longest.max(t);
        Ok(match calls {
            // Resizes, then input that made no event, each returning at once.
            1..=200 if calls % 2 == 0 => Polled::Event(Event::Resize(80, 24)),
            1..=200 => Polled::Nothing,
            _ => Polled::Event(Event::Key(Key::Char('q').event())),
        })
    };
    run(&mut term, &mut lab, &mut app, &mut input);
    assert!(app.quit);
    assert!(longest <= Duration::from_millis(100), "{longest:?}");
}

#[test]
fn the_frame_schedule_keeps_to_the_clock() {
    use std::time::Instant;
    use synlab::ui::next_frame_after;
    let (t0, f) = (Instant::now(), Duration::from_millis(100));
    // The due draw: one frame on.
    assert_eq!(next_frame_after(t0, f, t0), t0 + f);
    // A slow frame: at once, not a burst.
    assert_eq!(next_frame_after(t0, f, t0 + 3 * f), t0 + 3 * f);
    // An early draw keeps the due time.
    assert_eq!(next_frame_after(t0 + f, f, t0 + f / 2), t0 + f);
}
