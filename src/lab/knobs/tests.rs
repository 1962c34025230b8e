//! The knobs' arithmetic: limits, refusals that say why, bursts, paths, modes.

use super::*;
use crate::model::knob::KnobError;
use crate::model::limits::RATE_MAX;

fn scale_rate(f: f64) -> Command {
    Command::StepLoad(LoadKnob::Rate, LoadStep::Scale(f))
}

fn at_limit(knob: LoadKnob) -> Refusal {
    Refusal::Load(LoadKnobError::AtLimit(knob))
}
use crate::model::units::{Bandwidth, Dur, Percent};

#[test]
fn rate_scales_and_stops_at_limits() {
    let mut k = test_knobs();
    let (e, c) = apply_knobs(&mut k, scale_rate(2.0)).unwrap();
    assert_eq!((e, k.rate), (Effect::Load, Some(2000.0)));
    assert_eq!(
        c,
        Change::Load {
            knob: LoadKnob::Rate,
            from: Some(1000.0),
            to: 2000.0
        }
    );
    k.rate = Some(RATE_MAX);
    assert_eq!(
        apply_knobs(&mut k, scale_rate(2.0)),
        Err(at_limit(LoadKnob::Rate))
    );
    assert_eq!(k.rate, Some(RATE_MAX));
    k.rate = Some(1.0);
    assert_eq!(
        apply_knobs(&mut k, scale_rate(0.4)),
        Err(at_limit(LoadKnob::Rate))
    );
    // Near the top, x2 stops at the limit rather than refusing.
    k.rate = Some(RATE_MAX * 0.75);
    apply_knobs(&mut k, scale_rate(2.0)).unwrap();
    assert_eq!(k.rate, Some(RATE_MAX));
}

/// issue 28: at 1-2/s a fine step still moves the rate by 1/s; at the floor a step down is
/// refused with the reason; a value set to what it already is changes nothing and says so.
#[test]
fn a_press_that_would_change_nothing_is_refused() {
    let mut k = test_knobs();
    k.rate = Some(2.0);
    apply_knobs(&mut k, scale_rate(1.1)).unwrap();
    assert_eq!(k.rate, Some(3.0));
    apply_knobs(&mut k, scale_rate(1.0 / 1.1)).unwrap();
    assert_eq!(k.rate, Some(2.0));
    apply_knobs(&mut k, scale_rate(0.5)).unwrap();
    assert_eq!(k.rate, Some(1.0));
    let before = k.clone();
    assert_eq!(
        apply_knobs(&mut k, scale_rate(0.5)),
        Err(at_limit(LoadKnob::Rate))
    );
    assert_eq!(k, before);
    let same = apply_knobs(&mut k, Command::SetLoad(LoadKnob::Rate, 1.0)).unwrap_err();
    assert_eq!(same.to_string(), "the rate is already 1/s");
    let d = k.sockets;
    assert!(matches!(
        apply_knobs(&mut k, Command::SetLoad(LoadKnob::Sockets, d as f64)),
        Err(Refusal::Unchanged(Change::Load {
            knob: LoadKnob::Sockets,
            ..
        }))
    ));
    assert!(matches!(
        apply_knobs(&mut k, Command::Pause(false)),
        Err(Refusal::Unchanged(Change::Paused(false)))
    ));
    // One path: Tab has nothing to select.
    k.paths.truncate(1);
    assert_eq!(
        apply_knobs(&mut k, Command::SelectNextPath)
            .unwrap_err()
            .to_string(),
        "near is the only network path"
    );
}

#[test]
fn burst_shape_is_kept_within_ratio_times_fraction_le_one() {
    let mut k = test_knobs();
    let ratio_by = |d| Command::StepLoad(LoadKnob::BurstRatio, LoadStep::Add(d));
    apply_knobs(&mut k, ratio_by(6.0)).unwrap(); // 10 x 10% = 1.0 ok
    assert_eq!(k.burst.ratio, 10.0);
    let e = apply_knobs(&mut k, ratio_by(1.0)).unwrap_err();
    assert!(
        matches!(e, Refusal::Load(LoadKnobError::BurstOver { .. })),
        "{e:?}"
    );
    assert_eq!(k.burst.ratio, 10.0);
    apply_knobs(&mut k, Command::BurstOn(true)).unwrap();
    assert!(k.burst_on);
}

#[test]
fn a_path_key_without_paths_says_why_there_are_none() {
    let mut k = test_knobs();
    k.paths.clear();
    assert_eq!(
        apply_knobs(&mut k, Command::SelectNextPath),
        Err(Refusal::Loopback)
    );
    k.lab_off = Some("user namespaces are switched off".into());
    assert_eq!(
        apply_knobs(&mut k, Command::SelectNextPath),
        Err(Refusal::LabOff("user namespaces are switched off".into()))
    );
}

#[test]
fn path_knobs_apply_to_the_selected_path() {
    let mut k = test_knobs();
    apply_knobs(&mut k, Command::SelectNextPath).unwrap();
    let rtt_up = Command::StepPath(PathKnob::Rtt, PathStep::Add(10.0));
    let (e, _) = apply_knobs(&mut k, rtt_up).unwrap();
    assert_eq!(e, Effect::Paths(vec![1]));
    assert_eq!(k.paths[1].rtt, Dur(std::time::Duration::from_millis(110)));
    let bw_down = Command::StepPath(PathKnob::Bandwidth, PathStep::Scale(0.5));
    apply_knobs(&mut k, bw_down).unwrap();
    assert_eq!(k.paths[1].bandwidth, Some(Bandwidth(5_000_000)));
    assert_eq!(
        apply_knobs(
            &mut k,
            Command::StepPath(PathKnob::Loss, PathStep::Add(-1.0))
        ),
        Err(Refusal::Knob(KnobError::OutOfRange(PathKnob::Loss)))
    );
    let all = Command::SetPath {
        path: None,
        value: PathValue::Loss(Percent(2.0)),
    };
    let (e, c) = apply_knobs(&mut k, all).unwrap();
    assert_eq!(e, Effect::Paths(vec![0, 1]));
    assert_eq!(c.to_string(), "all paths: loss = 2.0%");
}

#[test]
fn network_keys_on_loopback_explain_themselves() {
    let mut k = test_knobs();
    k.paths.clear();
    let rtt_up = Command::StepPath(PathKnob::Rtt, PathStep::Add(10.0));
    assert_eq!(apply_knobs(&mut k, rtt_up), Err(Refusal::Loopback));
}

#[test]
fn mode_cycles_through_all_three() {
    let mut k = test_knobs();
    k.mode = Mode::Sclient;
    // Flat out there is no rate to open with: the cycle says it skips open.
    k.rate = None;
    let (_, c) = apply_knobs(&mut k, Command::CycleMode).unwrap();
    assert_eq!(
        c.to_string(),
        "mode closed (open skipped: it needs a rate, and this S-Client runs flat out)"
    );
    k.mode = Mode::Sclient;
    k.rate = Some(1000.0);
    apply_knobs(&mut k, Command::CycleMode).unwrap();
    assert_eq!(k.mode, Mode::Open);
    apply_knobs(&mut k, Command::CycleMode).unwrap();
    assert_eq!(k.mode, Mode::Closed);
    apply_knobs(&mut k, Command::CycleMode).unwrap();
    assert_eq!(k.mode, Mode::Sclient);
}

#[test]
fn requests_per_conn_steps_by_ten_with_keep_alive_and_says_why_not_without() {
    let mut k = test_knobs();
    let rpc = LoadKnob::RequestsPerConn;
    // HTTP/1.0: a connection per request, nothing to change; the help hides the keys.
    assert!(!k.has(rpc));
    let why = apply_knobs(&mut k, Command::StepLoad(rpc, rpc.key_step())).unwrap_err();
    assert_eq!(why, Refusal::NoKeepAlive);
    assert!(why.to_string().contains("http = \"1.1\""), "{why}");
    k.requests_per_conn = Some(1);
    let (e, c) = apply_knobs(&mut k, Command::StepLoad(rpc, rpc.key_step())).unwrap();
    assert_eq!((e, k.requests_per_conn), (Effect::Load, Some(10)));
    assert_eq!(c.to_string(), "requests per connection = 10");
    // The workers get it in the one Load message.
    assert_eq!(k.worker_share(1.0, 1, 1).requests_per_conn, Some(10));
    assert_eq!(
        apply_knobs(&mut k, Command::StepLoad(rpc, rpc.key_step().down())).map(|(_, c)| c),
        Ok(Change::Load {
            knob: rpc,
            from: Some(10.0),
            to: 1.0
        })
    );
    assert_eq!(
        apply_knobs(&mut k, Command::StepLoad(rpc, rpc.key_step().down())),
        Err(at_limit(rpc))
    );
}
