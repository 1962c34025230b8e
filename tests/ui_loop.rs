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
