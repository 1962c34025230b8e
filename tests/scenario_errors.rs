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
    command_without_port => "command_without_port.toml",
    empty => "empty.toml",
    threshold_typo => "threshold_typo.toml",
    pool_without_keepalive => "pool_without_keepalive.toml",
    burst_fraction_bare => "burst_fraction_bare.toml",
    shares_over_full => "shares_over_full.toml",
    tls_resumed_out_of_range => "tls_resumed_out_of_range.toml",
    tls_unknown_group => "tls_unknown_group.toml",
    tls_unknown_version => "tls_unknown_version.toml",
    tls_without_target_tls => "tls_without_target_tls.toml",
}

#[test]
fn address_or_command_alone_implies_the_kind() {
    use synlab::scenario::model::TargetKind;
    let s = synlab::scenario::parse("a.toml", "[target]\naddress = \"127.0.0.1:8080\"\n").unwrap();
    assert_eq!(s.target.kind, TargetKind::Address);
    let s = synlab::scenario::parse("c.toml", "[target]\ncommand = \"nginx {port}\"\n").unwrap();
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

/// `synlab check` on a file: (exit code, stdout, stderr).
fn check(name: &str, toml: &str) -> (Option<i32>, String, String) {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join(name);
    std::fs::write(&f, toml).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_synlab"))
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    let strip =
        |b: &[u8]| String::from_utf8_lossy(b).replace(&d.path().display().to_string(), "DIR");
    (out.status.code(), strip(&out.stdout), strip(&out.stderr))
}

/// What `check` refuses (exit 2, file:line:column and key): a command target that does not say
/// its port, an empty file.
#[test]
fn check_refuses_a_command_without_its_port_and_an_empty_file() {
    let (code, _, err) = check(
        "cmd.toml",
        "[target]\ncommand = \"python3 -m http.server 9000\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("DIR/cmd.toml:2:11: `target.command`: does not say which port its server listens on: write {port}"),
        "{err}"
    );
    // With the port said, the same command passes.
    let (code, out, err) = check(
        "cmd.toml",
        "[target]\ncommand = \"python3 -m http.server 9000\"\nport = 9000\n",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ok (cmd, "), "{out}");
    let (code, out, err) = check("empty.toml", "\n# nothing\n");
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("DIR/empty.toml: the scenario is empty (no key set)"),
        "{err}"
    );
    assert!(!out.contains("ok"), "{out}");
}

/// `cpus` naming a CPU this machine does not have, or the same CPU for the server and the load,
/// is refused by `check` and by `run` (exit 2, before anything starts), at its file and line,
/// with the machine's CPU count.
#[test]
fn check_and_run_refuse_an_absent_cpu_and_an_overlap() {
    let n = synlab::sys::machine::online_cpus().len();
    let absent = format!("[target]\nservice_time = \"1ms\"\ncpus = [{}]\n", n + 90);
    let (code, _, err) = check("absent.toml", &absent);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "DIR/absent.toml:3:8: `target.cpus`: CPU {} does not exist here: this machine has {n} CPU(s) synlab may use",
            n + 90
        )),
        "{err}"
    );
    let overlap = "[target]\ncpus = [0]\n\n[load]\ncpus = [0]\n";
    let (code, _, err) = check("overlap.toml", overlap);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "DIR/overlap.toml:5:8: `load.cpus`: CPU(s) 0 are in both target.cpus and load.cpus"
        ),
        "{err}"
    );
    assert!(err.contains(&format!("this machine has {n}")), "{err}");
    // `run` refuses the same file before it starts anything.
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("absent.toml");
    std::fs::write(&f, &absent).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", "--no-progress", "--out"])
        .arg(d.path().join("out"))
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("absent.toml:3:8: `target.cpus`: CPU"), "{err}");
    assert!(
        !d.path().join("out").exists(),
        "nothing started, no run folder"
    );
}

/// What `check` warns about (exit 0, file:line:column and key), and the length of a sweep.
#[test]
fn check_warns_of_what_no_point_uses_and_says_how_long_a_sweep_runs() {
    let (code, out, err) = check(
        "closed.toml",
        "duration = \"30s\"\n[load]\nmode = \"closed\"\nclients = 8\nrate = 500\n\
         [sweep]\nparam = \"load.clients\"\nvalues = [8, 16]\nwarmup = \"1s\"\nhold = \"3s\"\n",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: DIR/closed.toml:5:8: `load.rate`: is not used: every point runs mode = \"closed\""),
        "{err}"
    );
    assert!(
        err.contains("warning: DIR/closed.toml:1:12: `duration`: is not used with a [sweep]: the run lasts its points' warmup + hold + cooldown (~8 s)"),
        "{err}"
    );
    assert!(
        out.contains(
            "sweep of load.clients over 2 points, ~8 s plus the lab's set-up, 2 warning(s)"
        ),
        "{out}"
    );

    let two_paths =
        "[network]\nbackend = \"router\"\n[[network.path]]\nname = \"near\"\nrtt = \"10ms\"\n\
         [[network.path]]\nname = \"far\"\nrtt = \"100ms\"\n[sweep]\nparam = \"network.rtt\"\n\
         values = [\"20ms\", \"50ms\"]\n";
    let (code, _, err) = check("rtt.toml", two_paths);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: DIR/rtt.toml:10:9: `sweep.param`: `network.rtt` sets all 2 paths at once: each value replaces every path's own (`near` 10ms, `far` 100ms), which no point uses"),
        "{err}"
    );

    let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let (code, out, err) = check(
        "long.toml",
        &format!(
            "[load]\nmode = \"open\"\nrate = 100\n[sweep]\nparam = \"load.rate\"\nwarmup = \"1s\"\nhold = \"3s\"\nvalues = [{}]\n",
            values.join(", ")
        ),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("sweep of load.rate over 1000 points, ~67 minutes"),
        "{out}"
    );
}

/// `[sweep.curves]` and `[analysis] capacity` are checked like the rest: a curve parameter the
/// sweep already varies, a percentile out of range and a capacity threshold without a sweep
/// are refused with their keys.
#[test]
fn curves_capacity_targets_and_capacity_thresholds_are_checked() {
    let err = |src: &str| match synlab::scenario::parse("x.toml", src) {
        Ok(_) => panic!("should not parse:\n{src}"),
        Err(e) => format!("{e:#}"),
    };
    let sweep = "[sweep]\nparam = \"load.rate\"\nvalues = [100, 200]\n";
    let e = err(&format!(
        "[load]\nmode = \"open\"\nrate = 100\n{sweep}[sweep.curves]\nparam = \"load.rate\"\nvalues = [1]\n"
    ));
    assert!(e.contains("`sweep.curves.param`"), "{e}");
    let e = err(&format!(
        "[load]\nmode = \"open\"\nrate = 100\n{sweep}[sweep.curves]\nparam = \"load.burst\"\nvalues = [[4, 10]]\n"
    ));
    assert!(
        e.contains("`sweep.curves.values[0]`") && e.contains("ambiguous"),
        "{e}"
    );
    let e = err("[analysis]\ncapacity = { percentile = 100 }\n");
    assert!(e.contains("`analysis.capacity.percentile`"), "{e}");
    let e = err("[[threshold]]\nmetric = \"capacity_per_s\"\nmin = 900\n");
    assert!(e.contains("has no [sweep]"), "{e}");
    let ok = format!(
        "[load]\nmode = \"open\"\nrate = 100\n{sweep}[sweep.curves]\nparam = \"load.burst\"\nvalues = [[1, \"100%\"], [4, \"10%\"]]\n\
         [[threshold]]\nmetric = \"capacity_bytes_per_s\"\nmin = \"1M\"\n"
    );
    let s = synlab::scenario::parse("ok.toml", &ok).unwrap();
    assert_eq!(synlab::scenario::points::plan_points(&s).len(), 4);
}
