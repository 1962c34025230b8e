//! The TUI's stretches and free play, sweep cues, summary rows' paths.

use super::*;

/// issue 28: the TUI's stretches. Its summary row says its window, and in closed mode no
/// offered rate; a paused stretch is not summarised; the scenario's end closes the stretch
/// before it stops the load; `p` then runs it again as free play, with new stretches; after a
/// child's death nothing resumes it.
#[test]
fn stretches_end_at_the_deadline_and_free_play_goes_on_after_it() {
    let summaries = |fx: &[Effect]| -> Vec<SummaryRow> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Summary(r) => Some((**r).clone()),
                _ => None,
            })
            .collect()
    };
    let mut c = core(1, Vec::new());
    c.set_deadline(20.0);
    at(&mut c, 0.0, Input::BeginWindow);
    drive(&mut c, 0.0, 6.0, &|_| report(100, 100.0, Some(2)));
    let fx = at(&mut c, 6.0, Input::Command(Command::SetMode(Mode::Closed)));
    let rows = summaries(&fx);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].start_s, rows[0].end_s), (0.0, 6.0));
    assert_eq!(rows[0].offered_rate, 1000.0);
    drive(&mut c, 6.0, 10.0, &|_| report(100, 100.0, Some(2)));
    let fx = at(&mut c, 10.0, Input::Command(Command::TogglePause));
    let rows = summaries(&fx);
    assert!(
        rows[0].offered_rate.is_nan(),
        "closed: nothing offered at a rate"
    );
    assert_eq!(rows[0].mode, "closed");
    drive(&mut c, 10.0, 14.0, &|_| report(0, 0.0, None));
    let fx = at(&mut c, 14.0, Input::Command(Command::TogglePause));
    assert!(
        summaries(&fx).is_empty(),
        "a paused stretch is not summarised"
    );
    assert!(logs(&fx).iter().any(|l| l.contains("with the load paused")));
    let mut fx = Vec::new();
    let mut t = 14.0;
    while t < 20.05 {
        t += 0.1;
        at(&mut c, t - 0.005, report(100, 100.0, Some(2)));
        fx.extend(at(&mut c, t, Input::Tick));
    }
    assert!(c.state.finished && c.state.knobs.paused);
    let rows = summaries(&fx);
    assert_eq!(rows.len(), 1, "the deadline closed the stretch: {fx:?}");
    assert!((rows[0].end_s - 20.0).abs() < 0.2, "{}", rows[0].end_s);
    // p after the end: free play, the load runs, FINISHED is gone, stretches go on.
    let fx = at(&mut c, 25.0, Input::Command(Command::TogglePause));
    assert!(matches!(fx.last(), Some(Effect::Reply(Reply::Applied(_)))));
    assert!(!c.state.finished && c.state.free_play && !c.state.knobs.paused);
    assert!(c.state.caption.as_deref().unwrap().starts_with("free play"));
    drive(&mut c, 25.0, 30.0, &|_| report(100, 100.0, Some(2)));
    let fx = at(
        &mut c,
        30.0,
        Input::Command(Command::StepLoad(LoadKnob::Rate, LoadStep::Scale(2.0))),
    );
    let rows = summaries(&fx);
    assert_eq!((rows.len(), rows[0].start_s), (1, 25.0), "{rows:?}");
    // A child dies: the run stops, and p cannot resume it.
    let who = crate::model::death::Death {
        who: "the server".into(),
        pid: 9,
        how: crate::model::death::Exit::Signal(9, "SIGKILL".into()),
    };
    at(&mut c, 31.0, Input::ChildDied(who));
    let fx = at(&mut c, 32.0, Input::Command(Command::TogglePause));
    assert!(
        matches!(
            fx.as_slice(),
            [
                Effect::Log(_),
                Effect::Reply(Reply::Refused(Refusal::RunStopped(_)))
            ]
        ),
        "{fx:?}"
    );
    assert!(c.state.knobs.paused);
}

/// issue 28: a sweep played in the TUI: its points are steps at their times, `n` jumps to the
/// next and the session's end moves with the steps.
#[test]
fn cues_play_at_their_times_and_a_jump_moves_the_end() {
    let mut c = core(1, Vec::new());
    c.set_cues(vec![
        Cue::Point {
            at_s: 0.0,
            label: "point 1/2: load.rate = 800".into(),
            commands: vec![Command::SetLoad(LoadKnob::Rate, 800.0)],
        },
        Cue::Point {
            at_s: 30.0,
            label: "point 2/2: load.rate = 1600".into(),
            commands: vec![Command::SetLoad(LoadKnob::Rate, 1600.0)],
        },
    ]);
    c.set_deadline(60.0);
    at(&mut c, 0.1, Input::Tick);
    assert_eq!(c.state.knobs.rate, Some(800.0));
    assert_eq!(c.state.step, Some((1, 2)));
    assert_eq!(
        c.state.caption.as_deref(),
        Some("point 1/2: load.rate = 800")
    );
    let caption = c.next_step(10.0, &mut Vec::new());
    assert_eq!(caption.as_deref(), Some("point 2/2: load.rate = 1600"));
    assert_eq!(c.state.knobs.rate, Some(1600.0));
    // 20 s earlier than planned: the end too.
    let fx = at(&mut c, 40.05, Input::Tick);
    assert!(
        logs(&fx).contains(&"duration reached: load stopped"),
        "{fx:?}"
    );
}

/// issue 28: a summary row says what each path ran under, so rows of path changes differ.
#[test]
fn a_summary_rows_paths_say_their_profile() {
    let mut c = core(1, Vec::new());
    c.set_slots(vec![Slot {
        path: Some(0),
        weight: 1.0,
    }]);
    at(&mut c, 0.0, lab_up(&["wan"]));
    at(&mut c, 0.0, Input::BeginWindow);
    drive(&mut c, 0.0, 2.0, &|_| report(100, 100.0, Some(2)));
    let Some(Effect::Window(w)) = at(&mut c, 2.0, Input::EndWindow).into_iter().next() else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    let p = &r.paths[0];
    assert_eq!((p.name.as_str(), p.rtt_ms, p.loss_pct), ("wan", 20.0, 0.0));
    assert!(p.bandwidth_mbit.is_nan(), "unlimited");
}

/// A burst of keys in the TUI (a stretch each) once wrote 150 lines to run.log, and a stretch
/// of 2.96 s read "a stretch of 3.0 s is too short to summarise (under 3 s)": the short
/// stretches of a burst are said in one line, once a longer stretch ends, with their count;
/// a single one with its length rounded down.
#[test]
fn a_burst_of_short_stretches_is_one_line_and_a_length_never_reads_as_the_minimum() {
    let faster = || Input::Command(Command::StepLoad(LoadKnob::Rate, LoadStep::Scale(1.01)));
    let mut c = core(1, Vec::new());
    c.set_deadline(100.0);
    at(&mut c, 0.0, Input::BeginWindow);
    let mut lines = Vec::new();
    for k in 1..=150 {
        let fx = at(&mut c, 0.1 * k as f64, faster());
        lines.extend(
            logs(&fx)
                .into_iter()
                .filter(|l| l.contains("stretch"))
                .map(String::from),
        );
    }
    assert!(lines.is_empty(), "nothing said in the burst: {lines:?}");
    // 15.0 s to 25.0 s: summarised, and the burst is said before it.
    drive(&mut c, 15.0, 25.0, &|_| report(100, 100.0, Some(2)));
    let fx = at(&mut c, 25.0, faster());
    let said: Vec<_> = logs(&fx)
        .into_iter()
        .filter(|l| l.contains("stretch"))
        .collect();
    assert_eq!(
        said,
        ["[0.0s to 15.0s] 150 stretches in a row were too short to summarise (each under 3 s); their samples are in timeseries.csv"],
        "{fx:?}"
    );
    assert!(fx.iter().any(|e| matches!(e, Effect::Summary(_))));
    // The session ends 2.96 s later: that one is said alone, with its length as it is.
    let mut fx = Vec::new();
    c.end_stretch_now(27.96, &mut fx);
    assert_eq!(
        logs(&fx),
        ["[28.0s] a stretch of 2.96 s is too short to summarise (under 3 s); its samples are in timeseries.csv"],
    );
    assert_eq!(crate::lab::core::window::short_len(2.96), "2.96");
    assert_eq!(crate::lab::core::window::short_len(2.999), "2.99");
}
