//! Steps and sweep points, a child's death, commands and their replies.

use super::*;

#[test]
fn steps_play_at_their_times_and_split_the_load_over_the_workers() {
    let steps = vec![
        Step {
            at: Dur::from_secs(1.0),
            caption: Some("warm up".into()),
            ..Default::default()
        },
        Step {
            at: Dur::from_secs(2.0),
            rate: Some(Num(2000.0)),
            rtt: Some(Dur::from_secs(0.05)),
            ..Default::default()
        },
    ];
    let mut c = core(2, steps);
    at(&mut c, 0.0, lab_up(&["wan"]));
    assert_eq!(c.state.step, Some((0, 2)));
    assert!(logs(&at(&mut c, 0.9, Input::Tick)).is_empty());
    let fx = at(&mut c, 1.0, Input::Tick);
    assert_eq!(logs(&fx), ["[1.0s] caption: warm up"]);
    assert_eq!(c.state.caption.as_deref(), Some("warm up"));
    assert_eq!(c.state.step, Some((1, 2)));
    let fx = at(&mut c, 2.1, Input::Tick);
    let rates: Vec<(usize, Option<f64>)> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Send { worker, msgs } => msgs.iter().find_map(|m| match m {
                Control::Load(s) => Some((*worker, s.rate)),
                _ => None,
            }),
            _ => None,
        })
        .collect();
    assert_eq!(rates, [(0, Some(1000.0)), (1, Some(1000.0))]);
    assert!(logs(&fx)[0].starts_with("[2.1s] "), "{:?}", logs(&fx));
    // The path change is proposed to the runtime; the knob holds once it is applied.
    let proposed = fx.iter().find_map(|e| match e {
        Effect::Path(p) => Some(p.clone()),
        _ => None,
    });
    assert_eq!(
        proposed.expect("a path change")[0].rtt,
        Dur::from_secs(0.05)
    );
    assert_eq!(c.state.knobs.paths[0].rtt, Dur::from_secs(0.02));
    let fx = at(&mut c, 2.1, Input::PathApplied(Ok(())));
    assert_eq!(c.state.knobs.paths[0].rtt, Dur::from_secs(0.05));
    assert_eq!(logs(&fx), ["[2.1s] path wan: rtt = 50 ms"]);
    assert_eq!(c.state.step, Some((2, 2)));
    assert_eq!(c.next_step(3.0, &mut Vec::new()), None, "none left");
}

#[test]
fn a_sweep_points_window_makes_its_summary_row() {
    let mut c = core(2, Vec::new());
    at(&mut c, 0.9, server(1.0, 0));
    at(&mut c, 1.0, Input::BeginWindow);
    for k in 0..10 {
        let t = 1.0 + 0.1 * (k + 1) as f64;
        // Two workers, 500/s each, 98 % answered.
        at(&mut c, t, delta(0, 0.1, 50, 49));
        at(&mut c, t, delta(1, 0.1, 50, 49));
    }
    at(&mut c, 2.0, server(2.0, 980));
    let fx = at(&mut c, 2.05, Input::EndWindow);
    let Some(Effect::Window(w)) = fx.into_iter().next() else {
        panic!("the window comes back")
    };
    assert_eq!((w.t0, w.t1), (1.0, 2.05));
    assert_eq!(
        (w.server_responses, w.server_rate),
        (Some(980), Some(980.0))
    );
    let r = c.summary_row(3, *w);
    assert_eq!(
        (r.point, r.mode.as_str(), r.offered_rate),
        (3, "open", 1000.0)
    );
    // Rates over the 1.0 s the reports cover, not the 1.05 s window.
    assert!((r.hold_s - 1.0).abs() < 1e-9, "{}", r.hold_s);
    assert!((r.attempts_per_s - 1000.0).abs() < 1e-6);
    assert!((r.throughput_per_s - 980.0).abs() < 1e-6);
    assert!((r.server_responses_per_s - 980.0).abs() < 1e-6);
    assert!(r.check_server_vs_client_pct.abs() < 1e-6);
    let totals = r.totals.expect("counts");
    assert_eq!((totals.attempts, totals.responses), (1000, 980));
    assert_eq!(totals.server_responses, Some(980));
    assert!(at(&mut c, 3.0, Input::EndWindow).is_empty(), "none open");
}

#[test]
fn a_childs_death_stops_the_load_and_fails_the_point_once() {
    let mut c = core(2, Vec::new());
    let who = crate::model::death::Death {
        who: "load worker 1".into(),
        pid: 7,
        how: crate::model::death::Exit::Signal(9, "SIGKILL".into()),
    };
    let fx = at(&mut c, 3.0, Input::ChildDied(who.clone()));
    let pauses = fx
        .iter()
        .filter(|e| matches!(e, Effect::Send { msgs, .. } if msgs.iter().any(|m| matches!(m, Control::Load(s) if s.paused))))
        .count();
    assert_eq!(pauses, 2, "both workers paused: {fx:?}");
    assert_eq!(logs(&fx)[0], format!("[3.0s] {who}: the run stops"));
    assert!(c.state.finished && c.state.knobs.paused);
    assert!(c.state.warnings.contains(&Warning::ChildDied(who.clone())));
    assert_eq!(
        c.child_died(),
        Some(who.clone()),
        "the one record of the death"
    );
    assert_eq!(
        c.state.caption,
        Some(format!("{who}: run stopped (press q to quit)"))
    );
    assert!(c.notices().contains(&who.to_string()));
    assert!(at(&mut c, 3.1, Input::ChildDied(who)).is_empty(), "once");
}

#[test]
fn a_command_replies_and_a_tui_stretch_closes_under_its_own_settings() {
    let mut c = core(1, Vec::new());
    c.set_deadline(60.0);
    at(&mut c, 0.0, Input::BeginWindow);
    at(&mut c, 3.5, delta(0, 3.5, 3500, 3500));
    let fx = at(
        &mut c,
        4.0,
        Input::Command(Command::SetLoad(LoadKnob::Rate, 2000.0)),
    );
    let row = fx.iter().find_map(|e| match e {
        Effect::Summary(r) => Some(r),
        _ => None,
    });
    assert_eq!(row.expect("the stretch closed").offered_rate, 1000.0);
    assert!(matches!(fx.last(), Some(Effect::Reply(Reply::Applied(_)))));
    assert_eq!(c.window_start(), Some(4.0), "the next stretch opened");
    // Refused: knobs unchanged, no effect but the reply and its line in run.log.
    let fx = at(
        &mut c,
        4.5,
        Input::Command(Command::SetLoad(LoadKnob::Rate, -1.0)),
    );
    assert!(
        matches!(
            fx.as_slice(),
            [
                Effect::Log(_),
                Effect::Reply(Reply::Refused(Refusal::Load(_)))
            ]
        ),
        "{fx:?}"
    );
    // The duration ends the session: load paused, once.
    let fx = at(&mut c, 60.0, Input::Tick);
    assert!(logs(&fx).contains(&"duration reached: load stopped"));
    assert!(c.state.finished && c.in_session(), "p may run it again");
}
