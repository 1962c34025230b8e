//! Broken scenario files produce messages that name file, line, column and key, and say what
//! to do (insta snapshots of the exact text), and every shipped scenario passes the check.

use std::path::Path;
use synlab::model::load_knob::LoadKnob;

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
    lab_range_address => "lab_range_address.toml",
    hold_under_a_sample => "hold_under_a_sample.toml",
    three_typos => "three_typos.toml",
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
    // issue 42: what `check` let through and the run then broke on.
    path_with_crlf => "path_with_crlf.toml",
    path_with_control => "path_with_control.toml",
    empty_class => "empty_class.toml",
    sni_not_a_name => "sni_not_a_name.toml",
    tls_ca_missing => "tls_ca_missing.toml",
    // issue 44: the live knobs' limits, in [load], a step and a sweep.
    rate_below_floor => "rate_below_floor.toml",
    burst_ratio_too_high => "burst_ratio_too_high.toml",
    too_many_clients => "too_many_clients.toml",
    step_too_many_clients => "step_too_many_clients.toml",
    step_expect_typo => "step_expect_typo.toml",
    sweep_rate_below_floor => "sweep_rate_below_floor.toml",
    // issue 46: the built-in server's HTTP/2 stream limit.
    max_streams_zero => "max_streams_zero.toml",
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

/// A share as a scenario writes it: "30%".
fn pct(v: f64) -> String {
    format!("{}%", (v * 1000.0).round() / 10.0)
}

/// A TOML line that sets `knob` to `v` in `[load]`, with what the knob needs around it (the
/// burst's other half within ratio x fraction <= 1, a TLS target for the resumed share).
fn load_lines(knob: LoadKnob, v: f64) -> String {
    match knob {
        LoadKnob::Rate => format!("[load]\nrate = {v:?}\n"),
        LoadKnob::Sockets => format!("[load]\nsockets = {v}\n"),
        LoadKnob::Clients => format!("[load]\nclients = {v}\n"),
        LoadKnob::BurstRatio => {
            format!("[load]\nrate = 100\n[load.burst]\nratio = {v:?}\nfraction = \"1%\"\n")
        }
        LoadKnob::BurstFraction => format!(
            "[load]\nrate = 100\n[load.burst]\nratio = 1\nfraction = \"{}\"\n",
            pct(v)
        ),
        LoadKnob::Resumed => format!("[target]\ntls = true\n[load.tls]\nresumed = {v:?}\n"),
        LoadKnob::Streams => format!("[load]\nhttp = \"2\"\nstreams = {v}\n"),
        LoadKnob::RequestsPerConn => format!("[load]\nhttp = \"1.1\"\nrequests_per_conn = {v}\n"),
    }
}

/// Whether the live knob refuses `v` (a value it already has is not a refusal), from knobs
/// that leave the burst's other half room.
fn live_refuses(knob: LoadKnob, v: f64) -> bool {
    use synlab::lab::knobs::{apply_knobs, knobs_of, Command, Refusal};
    let mut sc = synlab::scenario::default_scenario();
    sc.target.tls = true;
    sc.load.http = synlab::scenario::HttpVersion::Http2;
    let mut k = knobs_of(&sc);
    k.rate = Some(100.0);
    match knob {
        LoadKnob::BurstRatio => k.burst.fraction = 0.01,
        LoadKnob::BurstFraction => k.burst.ratio = 1.0,
        _ => {}
    }
    match apply_knobs(&mut k, Command::SetLoad(knob, v)) {
        Ok(_) | Err(Refusal::Unchanged(_)) => false,
        Err(_) => true,
    }
}

/// `check`'s verdict on a scenario: None if it passes, else its message, which must name the
/// file and the line of the value: the last line that starts with `key_line`.
fn check_refuses(toml: &str, key_line: &str) -> Option<String> {
    let e = match synlab::scenario::parse("knob.toml", toml) {
        Ok(_) => return None,
        Err(e) => e.to_string(),
    };
    let line = toml
        .lines()
        .collect::<Vec<_>>()
        .iter()
        .rposition(|l| l.starts_with(key_line))
        .unwrap_or_else(|| panic!("no line {key_line:?} in\n{toml}"))
        + 1;
    assert!(
        e.contains(&format!("knob.toml:{line}:")),
        "refused at another line than {line} ({key_line}):\n{e}\n{toml}"
    );
    Some(e)
}

/// issue 44: one rule per load knob. For every knob and values inside, at and past its limits
/// (rate 0.5, burst ratio 25, 50,000 clients among them), a scenario that sets the value in
/// `[load]`, in a `[[step]]` or in a `[sweep]` is refused by `check` with file:line exactly
/// when the live knob refuses the same value.
#[test]
fn check_refuses_exactly_what_a_live_knob_refuses() {
    let values: &[(LoadKnob, &[f64])] = &[
        (LoadKnob::Rate, &[0.5, 1.0, 2000.0, 1e6, 1.5e6]),
        (LoadKnob::Sockets, &[0.0, 1.0, 200_000.0, 200_001.0]),
        (LoadKnob::Clients, &[0.0, 1.0, 16.0, 20_000.0, 50_000.0]),
        (LoadKnob::BurstRatio, &[0.5, 1.0, 4.0, 20.0, 25.0]),
        (LoadKnob::BurstFraction, &[0.005, 0.01, 0.3, 1.0]),
        (LoadKnob::Resumed, &[0.0, 0.3, 1.0, 1.5]),
        (LoadKnob::Streams, &[0.0, 1.0, 100.0, 1000.0, 1001.0]),
        (LoadKnob::RequestsPerConn, &[0.0, 1.0, 1e6, 1e9, 1.5, 2e9]),
    ];
    assert_eq!(values.len(), LoadKnob::ALL.len(), "every load knob");
    let mut refused = 0;
    for &(knob, vs) in values {
        for &v in vs {
            let live = live_refuses(knob, v);
            refused += live as usize;
            let (_, field) = knob.key().rsplit_once('.').unwrap();
            let in_load = check_refuses(&load_lines(knob, v), &format!("{field} ="));
            assert_eq!(in_load.is_some(), live, "{knob} = {v}: {in_load:?}");
            if let Some(step_key) = knob.step_key() {
                let other = match knob {
                    LoadKnob::BurstRatio => "burst_fraction = \"1%\"\n".to_string(),
                    LoadKnob::BurstFraction => "burst_ratio = 1\n".to_string(),
                    _ => String::new(),
                };
                let value = match knob {
                    LoadKnob::BurstFraction => format!("\"{}\"", pct(v)),
                    _ if knob.whole() => format!("{v}"),
                    _ => format!("{v:?}"),
                };
                let http = match knob {
                    LoadKnob::Streams => "http = \"2\"\n",
                    LoadKnob::RequestsPerConn => "http = \"1.1\"\n",
                    _ => "",
                };
                // A step's resumed share needs the clients to speak TLS.
                let tls = if knob == LoadKnob::Resumed {
                    ("[target]\ntls = true\n", "[load.tls]\n")
                } else {
                    ("", "")
                };
                let toml = format!(
                    "{}[load]\nrate = 100\n{http}{}[[step]]\nat = \"1s\"\n{other}{step_key} = {value}\n",
                    tls.0, tls.1
                );
                let in_step = check_refuses(&toml, &format!("{step_key} ="));
                assert_eq!(
                    in_step.is_some(),
                    live,
                    "step {step_key} = {v}: {in_step:?}"
                );
            }
            if let Some(param) = knob.sweep_name() {
                let tls = match knob {
                    LoadKnob::Resumed => "[target]\ntls = true\n",
                    LoadKnob::Streams => "[load]\nhttp = \"2\"\n",
                    LoadKnob::RequestsPerConn => "[load]\nhttp = \"1.1\"\n",
                    _ => "",
                };
                let toml = format!("{tls}[sweep]\nparam = \"{param}\"\nvalues = [{v:?}]\n");
                let in_sweep = check_refuses(&toml, "values =");
                assert_eq!(
                    in_sweep.is_some(),
                    live,
                    "sweep {param} = {v}: {in_sweep:?}"
                );
            }
        }
    }
    assert!(refused >= 10, "the values reach past the limits");
    // The binary says so too, and exits 2.
    let (code, _, err) = check("slow.toml", "[load]\nmode = \"open\"\nrate = 0.5\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("DIR/slow.toml:3:"), "{err}");
}

/// issue 42: `load.tls.ca` is read from the scenario file's folder, as the run reads it: a
/// file there passes (and the run is given its full path), one that is not there is refused;
/// `synlab report` reads a run folder's scenario whether or not the file is still there.
#[test]
fn the_ca_file_is_read_from_the_scenario_folder() {
    let d = tempfile::tempdir().unwrap();
    let toml = "[target]\nkind = \"address\"\naddress = \"127.0.0.1:8443\"\ntls = true\n[load.tls]\nverify = true\nca = \"ca.pem\"\n";
    let f = d.path().join("s.toml");
    std::fs::write(&f, toml).unwrap();
    let e = synlab::scenario::load(&f).unwrap_err();
    assert!(format!("{e:#}").contains("s.toml:7:"), "{e:#}");
    std::fs::write(d.path().join("ca.pem"), "").unwrap();
    let s = synlab::scenario::load(&f).unwrap();
    let ca = &s.load.tls.as_ref().unwrap().ca;
    assert_eq!(Path::new(ca), d.path().join("ca.pem"));
    // A run folder's resolved scenario reads back though the CA is gone since.
    let resolved = d.path().join("scenario.toml");
    std::fs::write(&resolved, s.to_toml()).unwrap();
    std::fs::remove_file(d.path().join("ca.pem")).unwrap();
    assert!(synlab::scenario::load(&resolved).is_err());
    assert_eq!(synlab::scenario::load_resolved(&resolved).unwrap(), s);
}

/// issue 46: HTTP/2's keys. `streams` without http = "2" (in [load], a step, a sweep), 0 or
/// past the limit, and Apache's prefork with HTTP/2 are refused by `check` (exit 2) at their
/// line; http = "2" alone passes with a warning that says the engine cannot load it yet.
#[test]
fn http2_keys_are_refused_at_their_line_when_they_cannot_work() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[load]\nhttp = \"1.1\"\nstreams = 10\n",
            ":3:",
            "needs http = \"2\"",
        ),
        ("[load]\nstreams = 10\n", ":2:", "the load speaks HTTP/1.0"),
        (
            "[load]\nhttp = \"2\"\nstreams = 0\n",
            ":3:",
            "streams per connection must be 1..1000 (got 0)",
        ),
        (
            "[load]\nhttp = \"2\"\nstreams = 1001\n",
            ":3:",
            "must be 1..1000 (got 1001)",
        ),
        (
            "[load]\nrate = 10\n[[step]]\nat = \"1s\"\nstreams = 4\n",
            ":5:",
            "needs http = \"2\"",
        ),
        (
            "[sweep]\nparam = \"load.streams\"\nvalues = [1, 10]\n",
            ":2:",
            "needs http = \"2\"",
        ),
        (
            "[target]\nkind = \"apache\"\nmpm = \"prefork\"\n[load]\nhttp = \"2\"\n",
            ":3:",
            "prefork MPM (the default) refuses HTTP/2",
        ),
        (
            "[target]\nkind = \"apache\"\n[load]\nhttp = \"2\"\n",
            ":2:",
            "set mpm = \"event\"",
        ),
    ];
    for (toml, line, want) in cases {
        let (code, _, err) = check("h2.toml", toml);
        assert_eq!(code, Some(2), "{toml}\n{err}");
        assert!(err.contains(&format!("DIR/h2.toml{line}")), "{toml}\n{err}");
        assert!(err.contains(want), "{toml}\n{err}");
    }
    let (code, out, err) = check("ok.toml", "[load]\nhttp = \"2\"\nstreams = 100\n");
    assert_eq!(code, Some(0), "{out}{err}");
    // The engine speaks HTTP/2: no warning that it does not.
    assert!(
        !format!("{out}{err}").contains("does not speak HTTP/2"),
        "{out}{err}"
    );
    let s = synlab::scenario::parse("ok.toml", "[load]\nhttp = \"2\"\n").unwrap();
    assert_eq!(s.load.streams_per_connection(), Some(1), "h2load's default");
}

/// The requests_per_conn knob (k/K, a step's requests_per_conn, a sweep of
/// load.requests_per_conn) changes a kept-alive connection's count: without keep-alive `check`
/// refuses the step and the sweep at their line (exit 2), as the live key refuses; with it they
/// pass.
#[test]
fn requests_per_conn_steps_and_sweeps_need_keep_alive() {
    let cases: &[(&str, &str)] = &[
        (
            "[load]\nrate = 10\n[[step]]\nat = \"1s\"\nrequests_per_conn = 100\n",
            ":5:",
        ),
        (
            "[sweep]\nparam = \"load.requests_per_conn\"\nvalues = [1, 100]\n",
            ":2:",
        ),
    ];
    for (toml, line) in cases {
        let (code, _, err) = check("rpc.toml", toml);
        assert_eq!(code, Some(2), "{toml}\n{err}");
        assert!(
            err.contains(&format!("DIR/rpc.toml{line}")),
            "{toml}\n{err}"
        );
        assert!(
            err.contains("needs keep-alive: set http = \"1.1\""),
            "{toml}\n{err}"
        );
        let kept = format!("[load]\nhttp = \"1.1\"\n{}", toml.replace("[load]\n", ""));
        let (code, out, err) = check("rpc.toml", &kept);
        assert_eq!(code, Some(0), "{kept}\n{out}{err}");
    }
}
