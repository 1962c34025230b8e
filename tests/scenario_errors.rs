//! Broken scenario files produce messages that name file, line, column and key, and say what
//! to do (insta snapshots of the exact text), and every shipped scenario passes the check.

use std::path::Path;

fn error_of(name: &str) -> String {
    let path = Path::new("tests/scenarios_broken").join(name);
    match synlab::scenario::load(&path) {
        Ok(_) => panic!("{name} should not parse"),
        Err(e) => format!("{e:#}"),
    }
}

macro_rules! broken {
    ($($test:ident => $file:expr),* $(,)?) => {$(
        #[test]
        fn $test() {
            insta::assert_snapshot!(error_of($file));
        }
    )*};
}

broken! {
    typo_key => "typo_key.toml",
    typo_mode => "typo_mode.toml",
    negative_rate => "negative_rate.toml",
    timeout_no_unit => "timeout_no_unit.toml",
    burst_too_big => "burst_too_big.toml",
    zero_sockets => "zero_sockets.toml",
    typo_target_key => "typo_target_key.toml",
    syntax => "syntax.toml",
    step_after_end => "step_after_end.toml",
    sweep_typo => "sweep_typo.toml",
    open_without_rate => "open_without_rate.toml",
    probe_too_fast => "probe_too_fast.toml",
    rate_bad_suffix => "rate_bad_suffix.toml",
    unknown_top => "unknown_top.toml",
    remote_address => "remote_address.toml",
    address_with_builtin => "address_with_builtin.toml",
    rate_too_high => "rate_too_high.toml",
    threshold_typo => "threshold_typo.toml",
}

#[test]
fn address_or_command_alone_implies_the_kind() {
    use synlab::scenario::model::TargetKind;
    let s = synlab::scenario::parse("a.toml", "[target]\naddress = \"127.0.0.1:8080\"\n").unwrap();
    assert_eq!(s.target.kind, TargetKind::Address);
    let s = synlab::scenario::parse("c.toml", "[target]\ncommand = \"nginx\"\n").unwrap();
    assert_eq!(s.target.kind, TargetKind::Command);
    let s = synlab::scenario::parse("b.toml", "[target]\narch = \"prefork\"\n").unwrap();
    assert_eq!(s.target.kind, TargetKind::Builtin);
}

#[test]
fn a_mix_alone_is_the_whole_workload() {
    use synlab::scenario::model::Workload;
    let mix = "[[load.mix]]\npath = \"/index.html\"\n";
    let s = synlab::scenario::parse("m.toml", mix).unwrap();
    assert_eq!(s.load.workload, Workload::Custom);
    assert_eq!(synlab::lab::controller::mix_of(&s).len(), 1);
    // Written out, the resolved scenario says so and reads back the same.
    let again = synlab::scenario::parse("resolved.toml", &s.to_toml()).unwrap();
    assert_eq!(s, again);
    // A workload written next to a mix keeps both (a preset plus extra requests).
    let s = synlab::scenario::parse("w.toml", &format!("[load]\nworkload = \"single\"\n{mix}"))
        .unwrap();
    assert_eq!(s.load.workload, Workload::Single);
    assert_eq!(synlab::lab::controller::mix_of(&s).len(), 2);
    let s = synlab::scenario::parse("d.toml", "").unwrap();
    assert_eq!(s.load.workload, Workload::Single);
}

#[test]
fn every_shipped_scenario_passes_check() {
    let mut n = 0;
    for entry in std::fs::read_dir("scenarios").unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            synlab::scenario::load(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 3, "expected the shipped scenarios, found {n}");
}

#[test]
fn embedded_default_round_trips_through_the_resolved_toml() {
    let s = synlab::scenario::default_scenario();
    let again = synlab::scenario::parse("resolved.toml", &s.to_toml()).unwrap();
    assert_eq!(s, again);
}

#[test]
fn missing_file_says_where_to_look() {
    let e = synlab::scenario::load(Path::new("nope/none.toml")).unwrap_err();
    assert!(format!("{e}").contains("scenarios/"), "{e}");
}
