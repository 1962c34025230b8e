//! Every key in the `?` overlay (the KEYMAP table) is pressed on a fake lab and its effect on
//! the knobs (through `lab::knobs::apply_knobs`, as the lab's core does) or on the UI state is
//! checked.
//! The match in `check` has no wildcard: a new Action cannot be added without a check here.

use synlab::lab::control::LabControl;
use synlab::lab::knobs::{Command, Knobs};
use synlab::load::protocol::Mode;
use synlab::model::knob::{PathKnob, PathStep};
use synlab::model::load_knob::{LoadKnob, LoadStep};
use synlab::ui::app::App;
use synlab::ui::fixture::{self, FakeLab};
use synlab::ui::keymap::{action_for, Action, Key, KEYMAP};
use synlab::ui::render;
use synlab::ui::theme::Theme;

fn setup() -> (App, FakeLab) {
    let mut st = fixture::under_load();
    st.knobs.burst.ratio = 4.0;
    st.knobs.burst.fraction = 0.1;
    // Every path knob away from its limits, so each key's step is applied.
    for &knob in PathKnob::ALL {
        let v = match knob {
            PathKnob::Rtt => "100ms",
            PathKnob::Jitter => "5ms",
            PathKnob::Loss => "1%",
            PathKnob::Bandwidth => "10mbit",
        };
        st.knobs.paths[0].set(knob.parse(v).unwrap());
    }
    // Over TLS, half the handshakes resumed: the resumed-share keys have room both ways.
    st.knobs.resumed = Some(0.5);
    // Over HTTP/2, 8 streams per connection: the streams keys have room both ways.
    st.knobs.streams = Some(8);
    // With keep-alive, 100 requests per connection: room both ways.
    st.knobs.requests_per_conn = Some(100);
    (App::new(Theme { color: false }, 60.0), FakeLab::new(st))
}

fn press(app: &mut App, lab: &mut FakeLab, key: Key) -> Action {
    let a = action_for(key.event()).unwrap_or_else(|| panic!("{key:?} not bound"));
    app.apply(lab, a, &|app, st| render::screen_text(app, st, 80, 24));
    a
}

fn message(app: &App, lab: &FakeLab) -> String {
    app.message_for(lab.state.last_action.as_ref())
        .map(|(t, _)| t.to_string())
        .unwrap_or_default()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

/// A load knob's value in `k`.
fn load_value(k: &Knobs, knob: LoadKnob) -> f64 {
    k.load_value(knob).unwrap()
}

/// Checks the effect of `action` given the lab and app before and after.
fn check(action: Action, before: &FakeLab, lab: &FakeLab, app0: &App, app: &App) {
    let (k0, k) = (&before.state.knobs, &lab.state.knobs);
    match action {
        // On the knob's own number: a step adds in its unit, or scales (rates in whole /s).
        Action::Load(knob, step) => {
            let (x0, x) = (load_value(k0, knob), load_value(k, knob));
            let want = match step {
                LoadStep::Add(d) => x0 + d,
                LoadStep::Scale(f) => (x0 * f).round(),
            };
            assert!(close(x, want), "{knob}: {x}, want {want}");
        }
        Action::CycleMode => {
            assert_ne!(k.mode, k0.mode);
            assert_eq!(lab.commands, vec![Command::CycleMode]);
        }
        Action::ScaleSockets(f) => {
            assert_eq!(k.sockets, (k0.sockets as f64 * f).round() as u32)
        }
        Action::ToggleBurst => assert_eq!(k.burst_on, !k0.burst_on),
        // On the axis's number (ms, %, Mbit/s): a step adds in that unit or scales.
        Action::PathStep(knob, step) => {
            let (x0, x) = (k0.paths[0].get(knob).x(), k.paths[0].get(knob).x());
            let want = match step {
                PathStep::Add(d) => x0.unwrap() + d,
                PathStep::Scale(f) => x0.unwrap() * f,
            };
            assert!(close(x.unwrap(), want), "{knob}: {x:?}, want {want}");
        }
        Action::SelectPath => assert_eq!(k.selected_path, (k0.selected_path + 1) % 2),
        Action::TogglePause => assert_eq!(k.paused, !k0.paused),
        Action::Mark => {
            assert_eq!(lab.marks, vec!["mark 1".to_string()]);
            let e = lab.state.store.events.last().unwrap();
            assert_eq!((e.kind.name(), e.text.as_str()), ("mark", "mark 1"));
        }
        Action::Snapshot => {
            assert_eq!(lab.snapshots.len(), 1);
            assert!(lab.snapshots[0].contains("offered vs achieved"));
            // The file first, then its folder.
            assert_eq!(message(app, lab), "snapshot-1.txt written to results/");
        }
        Action::Zoom(f) => assert_eq!(app.window_s, app0.window_s * f),
        Action::ToggleDrops => assert_eq!(app.show_drops, !app0.show_drops),
        // A lab without probes says why nothing is counted.
        Action::ToggleKernelReasons => {
            assert!(
                message(app, lab).contains("runs no probes"),
                "{}",
                message(app, lab)
            )
        }
        Action::NextStep => {
            assert_eq!(lab.state.caption.as_deref(), Some("step two"));
            // The caption bar shows the step's caption; the message says which step it is.
            assert_eq!(message(app, lab), "next step: 1 of 1");
        }
        Action::ToggleHelp => assert_eq!(app.show_help, !app0.show_help),
        Action::CloseHelp => assert!(!app.show_help),
        Action::Quit => assert!(app.quit),
    }
    // Knob changes are recorded as events with their time (they go in the results).
    if !lab.commands.is_empty() {
        let e = lab.state.store.events.last().unwrap();
        assert_eq!(e.kind.name(), "change", "{action:?}");
        assert_eq!(message(app, lab), e.text, "{action:?}");
    }
}

#[test]
fn every_key_in_the_overlay_has_its_effect() {
    for b in KEYMAP.iter() {
        let (mut app, mut lab) = setup();
        lab.steps.push_back("step two".into());
        if b.action == Action::CloseHelp {
            app.show_help = true;
        }
        let (app0, before) = (app.clone(), FakeLab::new(lab.state.clone()));
        let a = press(&mut app, &mut lab, b.key);
        assert_eq!(a, b.action);
        check(a, &before, &lab, &app0, &app);
        // The overlay lists this key.
        app.show_help = true;
        let screen = render::screen_text(&app, &lab.state, 160, 48);
        assert!(
            screen.contains(&format!("{:<7}{}", b.key.label(), b.help)),
            "{:?} missing from the overlay",
            b.key
        );
    }
}

#[test]
fn refusals_show_in_the_caption_bar_and_change_nothing() {
    let (mut app, mut lab) = setup();
    lab.state.knobs.rate = None; // S-Client flat out: no rate to scale
    let before = lab.state.knobs.clone();
    press(&mut app, &mut lab, Key::Char('+'));
    assert_eq!(lab.state.knobs, before);
    let (text, refused) = app.message_for(lab.state.last_action.as_ref()).unwrap();
    assert!(refused && text.starts_with("refused:"), "{text}");
    assert!(render::screen_text(&app, &lab.state, 80, 24).contains("» refused: the S-Client"));
    // Limits: the window stops at 10 s.
    for _ in 0..5 {
        press(&mut app, &mut lab, Key::Char('z'));
    }
    assert_eq!(app.window_s, 10.0);
    assert!(message(&app, &lab).contains("limits"));
    // No steps left.
    press(&mut app, &mut lab, Key::Char('n'));
    assert_eq!(message(&app, &lab), "no more scenario steps");
}

#[test]
fn d_keys_change_clients_in_closed_mode() {
    let (mut app, mut lab) = setup();
    lab.state.knobs.mode = Mode::Closed;
    press(&mut app, &mut lab, Key::Char('D'));
    assert_eq!(lab.state.knobs.clients, 32);
    assert_eq!(lab.state.knobs.sockets, 1000);
}

#[test]
fn a_later_lab_change_replaces_our_message() {
    let (mut app, mut lab) = setup();
    press(&mut app, &mut lab, Key::Char('m'));
    assert!(message(&app, &lab).starts_with("mark 1"));
    // A scenario step changes a knob on the controller's side.
    lab.command(Command::SetLoad(LoadKnob::Rate, 500.0));
    assert_eq!(message(&app, &lab), "rate 2000/s -> 500/s");
}
