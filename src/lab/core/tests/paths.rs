//! Live path changes: refused when the lab fails them, one at a time.

use super::*;

/// Issue 32: a path change the runtime fails to apply leaves every knob as it was, and the
/// reply (and the caption bar's last action) says Refused with the lab's reason.
#[test]
fn a_path_change_the_lab_fails_is_refused_and_changes_no_knob() {
    let mut c = core(1, Vec::new());
    at(&mut c, 0.0, lab_up(&["near", "far"]));
    let before = c.state.knobs.clone();
    let cmd = Command::SetPath {
        path: None,
        value: PathValue::Rtt(Dur::from_secs(0.1)),
    };
    let fx = at(&mut c, 1.0, Input::Command(cmd));
    // Proposed, not held: no reply yet, the knobs as they were.
    assert!(
        matches!(fx.as_slice(), [Effect::Path(p)] if p.len() == 2),
        "{fx:?}"
    );
    assert_eq!(c.state.knobs, before);
    let failure = PathFailure {
        path: "far".into(),
        why: super::PathRefusal::Lab(
            "sending the change to the delay router (has it exited?)".into(),
        ),
    };
    let fx = at(&mut c, 1.0, Input::PathApplied(Err(failure)));
    let refusal = Refusal::NotApplied {
        path: "far".into(),
        why: "sending the change to the delay router (has it exited?)".into(),
    };
    assert!(
        matches!(fx.as_slice(), [Effect::Log(_), Effect::Reply(Reply::Refused(r))] if *r == refusal),
        "{fx:?}"
    );
    assert_eq!(
        logs(&fx),
        ["[1.0s] refused: path far unchanged: sending the change to the delay router (has it exited?)"]
    );
    assert_eq!(c.state.knobs, before, "every knob keeps its value");
    assert_eq!(c.state.last_action, Some(Reply::Refused(refusal)));
    assert!(
        c.state.store.events.is_empty(),
        "no change on the charts: {:?}",
        c.state.store.events
    );
    // The same change, applied: held, and said.
    at(&mut c, 2.0, Input::Command(cmd_rtt(0.1)));
    let fx = at(&mut c, 2.0, Input::PathApplied(Ok(())));
    assert!(c
        .state
        .knobs
        .paths
        .iter()
        .all(|p| p.rtt == Dur::from_secs(0.1)));
    assert!(matches!(fx.last(), Some(Effect::Reply(Reply::Applied(_)))));
}

/// A step that changes two knobs of a path proposes the second once the first is answered.
#[test]
fn a_steps_second_path_change_waits_for_the_first() {
    let steps = vec![Step {
        at: Dur::from_secs(1.0),
        rtt: Some(Dur::from_secs(0.05)),
        loss: Some(crate::model::units::Percent(1.0)),
        ..Default::default()
    }];
    let mut c = core(1, steps);
    at(&mut c, 0.0, lab_up(&["wan"]));
    let fx = at(&mut c, 1.0, Input::Tick);
    assert_eq!(
        fx.iter().filter(|e| matches!(e, Effect::Path(_))).count(),
        1
    );
    let fx = at(&mut c, 1.0, Input::PathApplied(Ok(())));
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::Path(p) if p[0].loss.0 == 1.0)));
    // The lab refuses the second: the step says so in run.log, the first holds.
    let why = PathFailure {
        path: "wan".into(),
        why: super::PathRefusal::Lab("the delay router is not running".into()),
    };
    let fx = at(&mut c, 1.0, Input::PathApplied(Err(why)));
    assert_eq!(
        logs(&fx),
        ["step 1: path wan unchanged: the delay router is not running"]
    );
    assert_eq!(c.state.knobs.paths[0].rtt, Dur::from_secs(0.05));
    assert_eq!(c.state.knobs.paths[0].loss.0, 0.0);
}

/// A refused command is in run.log once: a key held against the same refusal adds no line
/// until something is applied; a press at a floor (nothing to change) adds none.
#[test]
fn a_refusal_is_logged_once_until_something_changes() {
    let mut c = core(1, Vec::new());
    let press = || {
        Command::StepPath(
            crate::model::knob::PathKnob::Rtt,
            crate::model::knob::PathStep::Scale(2.0),
        )
    };
    let mut lines = Vec::new();
    for t in [1.0, 1.1, 1.2] {
        let fx = at(&mut c, t, Input::Command(press()));
        assert!(
            matches!(
                fx.last(),
                Some(Effect::Reply(Reply::Refused(Refusal::Loopback)))
            ),
            "{fx:?}"
        );
        lines.extend(logs(&fx).into_iter().map(String::from));
    }
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("refused: no network paths"), "{lines:?}");
    at(&mut c, 2.0, Input::Command(Command::TogglePause));
    let fx = at(&mut c, 2.1, Input::Command(press()));
    assert_eq!(logs(&fx).len(), 1, "said again after a change: {fx:?}");
}
