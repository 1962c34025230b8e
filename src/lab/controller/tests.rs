//! The controller's own tests (the seam's are in seam_tests.rs).

use super::*;

#[test]
fn loopback_loads_use_four_source_addresses_and_others_none() {
    let v4 = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(
        loopback_sources(v4("127.0.0.1"), 15_000),
        ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"].map(v4)
    );
    assert!(loopback_sources(v4("127.0.0.1"), 64).is_empty());
    assert!(loopback_sources(v4("198.18.0.1"), 15_000).is_empty());
    assert!(loopback_sources(v4("::1"), 15_000).is_empty());
}

#[test]
fn lab_addresses_are_loopback_and_the_benchmark_range_only() {
    for ok in [
        "127.0.0.1",
        "127.3.4.5",
        "198.18.0.1",
        "198.19.255.254",
        "::1",
    ] {
        assert!(is_lab_address(ok.parse().unwrap()), "{ok}");
    }
    for bad in [
        "10.0.0.1",
        "192.168.1.1",
        "198.20.0.1",
        "8.8.8.8",
        "172.16.0.1",
    ] {
        assert!(!is_lab_address(bad.parse().unwrap()), "{bad}");
    }
}

#[test]
fn specweb96_mix_weights_follow_seed_001() {
    let mut sc = crate::scenario::default_scenario();
    sc.load.workload = crate::scenario::Workload::Specweb96;
    let mix = mix_of(&sc);
    assert_eq!(mix.len(), 36);
    let class0: f64 = mix
        .iter()
        .filter(|m| m.class == "class0")
        .map(|m| m.weight)
        .sum();
    assert!((class0 - 0.35).abs() < 1e-9, "{class0}");
}
/// The runtime's side of issue 32's two-phase path change: the lab cannot take the change
/// (here: there is no lab), so the command is refused with why and no knob moves.
#[test]
fn a_path_change_the_runtime_cannot_apply_is_refused_and_rolled_back() {
    let opts = RunOptions {
        out_parent: None,
        interrupted: Arc::default(),
        network_fallback: false,
        metrics: None,
    };
    let sc = crate::scenario::default_scenario();
    let mut c = Controller::assemble(sc, opts, Recorder::off(), runtime::Runtime::real());
    let wan = crate::net::spec::PathSpec {
        name: "wan".into(),
        ..Default::default()
    };
    c.fold_msg(Input::LabUp {
        backend: crate::lab::core::LabBackend::Shaped {
            backend: crate::net::plan::Backend::Router,
            auto: false,
        },
        lab: "root".into(),
        paths: vec![wan],
    });
    let before = c.state().knobs.clone();
    let reply = c.apply(Command::SetPath {
        path: Some("wan".into()),
        value: crate::model::knob::PathKnob::Rtt.parse("40ms").unwrap(),
    });
    let refusal = crate::lab::knobs::Refusal::NotApplied {
        path: "wan".into(),
        why: "no network lab in this run (add a [network] section)".into(),
    };
    assert_eq!(reply, Reply::Refused(refusal));
    assert_eq!(c.state().knobs, before);
    assert_eq!(c.state().last_action, Some(reply));
}

#[test]
fn a_row_that_cannot_be_written_drops_no_effect_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let recorder = Recorder::create(tmp.path(), "t", "name = \"t\"\n").unwrap();
    let dir = recorder.dir().unwrap().to_path_buf();
    let opts = RunOptions {
        out_parent: None,
        interrupted: Arc::default(),
        network_fallback: false,
        metrics: None,
    };
    let mut c = Controller::assemble(
        crate::scenario::default_scenario(),
        opts,
        recorder,
        runtime::Runtime::real(),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let row = |t| Effect::Row {
        t,
        cols: vec![(crate::model::col::ATTEMPTS, Some(1.0))],
    };
    let fx = vec![
        row(0.5),
        Effect::Summary(Box::default()),
        row(1.0),
        Effect::Summary(Box::default()),
    ];
    let err = c.carry_out(fx).err().expect("the rows cannot be written");
    assert!(format!("{err:#}").contains("timeseries.csv"), "{err:#}");
    assert_eq!(c.recorder.points().len(), 2, "both summary rows were kept");
    assert_eq!(c.recorder.points()[1].point, 2);
}
