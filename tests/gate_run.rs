//! Headless runs CI can gate on: `synlab run` exits 0 when every threshold holds and 3 when one
//! fails (naming threshold, point and measured value), `abort_on_fail` stops the run, and
//! `--junit` writes JUnit XML whose counts match the verdicts. Real server, real workers, loopback.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Built-in server with a capacity of 500/s (2 ms of CPU per request, one event loop), offered
/// 100 and 200/s: far under capacity, so throughput >= half the offered rate holds even on a
/// loaded machine, and no response can take less than the 2 ms of service.
const BASE: &str = r#"
name = "gate"
[target]
arch = "event"
service_time = "2ms"
service = "cpu"

[load]
mode = "open"
rate = 100
timeout = "500ms"

[sweep]
param = "load.rate"
values = [100, 200]
warmup = "500ms"
hold = "1s"

[[threshold]]
metric = "throughput_per_s"
min = "0.5 x offered_rate"
"#;

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    run_dir: PathBuf,
    _tmp: tempfile::TempDir,
}

fn run(extra: &str) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("gate.toml");
    std::fs::write(&sc, format!("{BASE}{extra}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", "--no-progress", "--out"])
        .arg(tmp.path().join("results"))
        .arg("--junit")
        .arg(tmp.path().join("junit.xml"))
        .arg(&sc)
        .output()
        .unwrap();
    let run_dir = std::fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .next()
        .expect("a run folder")
        .unwrap()
        .path();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        run_dir,
        _tmp: tmp,
    }
}

/// (tests, failures) of a JUnit file, from the root and summed over the test cases.
fn junit_counts(path: &Path) -> (usize, usize, usize, usize) {
    let xml = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let attr = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<usize>().unwrap();
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let failed = cases
        .iter()
        .filter(|c| c.children().any(|x| x.has_tag_name("failure")))
        .count();
    for s in root.children().filter(|n| n.has_tag_name("testsuite")) {
        assert_eq!(attr(s, "tests"), cases.len());
        assert_eq!(attr(s, "failures"), failed);
    }
    (
        attr(root, "tests"),
        attr(root, "failures"),
        cases.len(),
        failed,
    )
}

fn schema() -> serde_json::Value {
    let src = std::fs::read_to_string("docs/summary.schema.json").unwrap();
    serde_json::from_str(&src).unwrap()
}

/// Where the runs of these tests write --junit: beside the results folder.
fn junit_path(run_dir: &Path) -> std::path::PathBuf {
    run_dir
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("junit.xml")
}

/// summary.json of a run folder, checked against the committed schema.
fn summary(dir: &Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "summary.json breaks docs/summary.schema.json: {errors:#?}"
    );
    v
}

#[test]
fn the_schema_describes_every_summary_column_and_is_valid() {
    let s = schema();
    assert!(jsonschema::meta::is_valid(&s));
    // Every column, the ones written only when there is something to say included.
    let full = synlab::model::SummaryRow {
        totals: Some(Default::default()),
        paths: vec![Default::default()],
        classes: vec![Default::default()],
        ..Default::default()
    };
    let row = serde_json::to_value(full).unwrap();
    let columns: Vec<&String> = row.as_object().unwrap().keys().collect();
    let described: Vec<&String> = s["$defs"]["point"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        columns, described,
        "summary.json's columns changed: describe them in docs/summary.schema.json"
    );
    // A row with an unmeasured value (null) and a verdict over the whole run are valid.
    let mut point = row.clone();
    point["offered_rate"] = serde_json::Value::Null;
    point["point"] = 1.into();
    let doc = serde_json::json!({"meta": {}, "points": [point], "thresholds": [{
        "check": "errors_per_s <= 10", "source": "threshold[0]", "point": null, "value": "",
        "measured": 0.5, "limit": 10.0, "passed": true, "message": "m"}]});
    assert!(jsonschema::is_valid(&s, &doc));
    let mut bad = doc.clone();
    bad["points"][0]["throughput_per_s"] = "fast".into();
    assert!(!jsonschema::is_valid(&s, &bad));
    // meta holds only described keys: every run's summary.json checked here would fail on a
    // new one, and every key the code writes is described.
    let mut unknown = doc.clone();
    unknown["meta"]["not_described"] = 1.into();
    assert!(!jsonschema::is_valid(&s, &unknown));
    let described: Vec<&String> = s["properties"]["meta"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let written = meta_keys_written(Path::new("src"));
    assert!(written.len() >= 10, "{written:?}");
    for k in &written {
        assert!(
            described.contains(&k),
            "summary.json's meta.{k} is written but not in docs/summary.schema.json"
        );
    }
}

/// The meta keys the code writes: the first argument of every `.meta("key", ...)` call and
/// `meta.insert("key".into(), ...)` in the sources under `dir`.
fn meta_keys_written(dir: &Path) -> std::collections::BTreeSet<String> {
    let mut keys = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            keys.extend(meta_keys_written(&p));
            continue;
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let src = std::fs::read_to_string(&p).unwrap();
        for call in [".meta(", "meta.insert("] {
            for (i, _) in src.match_indices(call) {
                let rest = src[i + call.len()..].trim_start();
                if let Some(lit) = rest.strip_prefix('"') {
                    let key = &lit[..lit.find('"').unwrap()];
                    keys.insert(key.to_string());
                }
            }
        }
    }
    keys
}

#[test]
fn thresholds_that_hold_exit_0_and_list_as_passing_tests() {
    let r = run("");
    assert_eq!(r.code, 0, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("thresholds: 2 of 2 checks passed"),
        "{}",
        r.stdout
    );
    let s = summary(&r.run_dir);
    let v = s["thresholds"].as_array().unwrap();
    assert_eq!(v.len(), 2);
    assert!(v.iter().all(|v| v["passed"] == true));
    assert_eq!(v[1]["point"], 2);
    let junit = junit_path(&r.run_dir);
    assert_eq!(junit_counts(&junit), (2, 0, 2, 0));
    let md = std::fs::read_to_string(r.run_dir.join("report.md")).unwrap();
    assert!(md.contains("### Thresholds: pass"), "{md}");
    hlogs_match_the_summary(&r.run_dir, &s);
    states_say_their_samples(&r.run_dir, &s, &md);
}

/// Each point's ESTABLISHED mean says how many samples of the socket states it is over
/// (`states_samples`; the walk is paced, so a short hold may have few), and the samples are
/// the time series' ESTABLISHED cells: the run's walks in all number at least the points'.
fn states_say_their_samples(dir: &Path, s: &serde_json::Value, md: &str) {
    let points = s["points"].as_array().unwrap();
    let ts = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut lines = ts.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = head.iter().position(|c| *c == "established").unwrap();
    let walks = lines
        .filter(|l| l.split(',').nth(i).is_some_and(|c| !c.is_empty()))
        .count();
    let mut in_points = 0;
    for p in points {
        let n = p["states_samples"].as_f64().expect("states_samples") as usize;
        // A 1 s hold at 200 ms samples has at most 6 walks.
        assert!(n <= 6, "{p}");
        assert_eq!(n == 0, p["established_mean"].is_null(), "{p}");
        in_points += n;
    }
    assert!(
        walks >= in_points,
        "{walks} walks in timeseries.csv, {in_points} in the points"
    );
    assert!(md.contains("ESTAB samples"), "{md}");
}

/// connect.hlog and total.hlog, read back with the hdrhistogram crate's log reader, give the
/// percentiles summary.json holds, point by point.
fn hlogs_match_the_summary(dir: &Path, s: &serde_json::Value) {
    let points = s["points"].as_array().unwrap();
    for (file, cols) in [
        (
            "connect.hlog",
            &[(0.5, "connect_p50_ms"), (0.99, "connect_p99_ms")][..],
        ),
        (
            "total.hlog",
            &[
                (0.5, "total_p50_ms"),
                (0.9, "total_p90_ms"),
                (0.98, "total_p98_ms"),
                (0.99, "total_p99_ms"),
            ][..],
        ),
    ] {
        let logs = synlab::report::hlog::read(&dir.join(file)).unwrap();
        assert_eq!(logs.len(), points.len(), "{file}: one interval per point");
        for ((tag, h), p) in logs.iter().zip(points) {
            assert_eq!(tag, &format!("point-{}", p["point"]));
            assert!(!h.is_empty(), "{file} {tag}: empty");
            for (q, col) in cols {
                let from_log = h.value_at_quantile(*q) as f64 / 1000.0;
                assert_eq!(Some(from_log), p[col].as_f64(), "{file} {tag} {col}");
            }
        }
    }
}

#[test]
fn a_failing_threshold_exits_3_names_it_and_abort_on_fail_stops_the_run() {
    let r = run(
        "\n[[threshold]]\nmetric = \"total_p50_ms\"\nmax = \"1ms\"\npoints = [1]\nabort_on_fail = true\n",
    );
    assert_eq!(r.code, 3, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    // Threshold, point and measured value, on stderr.
    assert!(
        r.stderr.contains(
            "threshold `total_p50_ms <= 1ms` at point 1 (load.rate = 100): total_p50_ms = "
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("abort_on_fail stopped the run"),
        "{}",
        r.stderr
    );
    let s = summary(&r.run_dir);
    assert_eq!(s["points"].as_array().unwrap().len(), 1, "the run went on");
    let failed: Vec<&serde_json::Value> = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["passed"] == false)
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0]["measured"].as_f64().unwrap() >= 2.0,
        "{:?}",
        failed[0]
    );
    assert_eq!(failed[0]["limit"].as_f64(), Some(1.0));
    let junit = junit_path(&r.run_dir);
    assert_eq!(junit_counts(&junit), (2, 1, 2, 1));
    let md = std::fs::read_to_string(r.run_dir.join("report.md")).unwrap();
    assert!(md.contains("### Thresholds: **FAIL**"), "{md}");
}

/// A TUI session (the controller in TUI mode, loopback) on BASE without its sweep, renamed
/// `name` and with `extra` appended; its run folder goes under `out` when given.
fn tui_session(name: &str, extra: &str, out: Option<&Path>) -> synlab::lab::controller::Controller {
    use synlab::lab::controller::{Controller, RunOptions};
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let toml = BASE
        .replace(
            "[sweep]\nparam = \"load.rate\"\nvalues = [100, 200]\nwarmup = \"500ms\"\nhold = \"1s\"\n",
            "",
        )
        .replace("name = \"gate\"", &format!("name = \"{name}\"\nduration = \"60s\""))
        + extra;
    let sc = synlab::scenario::parse(&format!("{name}.toml"), &toml).unwrap();
    let opts = RunOptions {
        out_parent: out.map(Path::to_path_buf),
        interrupted: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    };
    let mut c = Controller::start(sc, opts).unwrap();
    c.tui_mode();
    c
}

/// The TUI judges the thresholds on the session so far, every 2 s, for its status line: one
/// that holds and one that does not (2 ms of service cannot give a 1 ms median).
#[test]
fn a_tui_session_judges_its_thresholds_live() {
    use std::time::{Duration, Instant};
    use synlab::lab::control::LabControl;
    let mut c = tui_session(
        "gate",
        "\n[[threshold]]\nmetric = \"total_p50_ms\"\nmax = \"1ms\"\n",
        None,
    );
    let end = Instant::now() + Duration::from_secs(20);
    // Until both are judged on some responses (the first judgement may precede any).
    while Instant::now() < end
        && !(c.state().verdicts.len() == 2 && c.state().verdicts.iter().any(|v| v.passed))
    {
        LabControl::pump(&mut c).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let v = c.state().verdicts.clone();
    c.shutdown().unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v[0].passed && v[0].check.contains("throughput_per_s"),
        "{v:?}"
    );
    assert!(!v[1].passed && v[1].check.contains("total_p50_ms"), "{v:?}");
    assert!(v[1].measured.is_some_and(|m| m > 1.0), "{v:?}");
}

/// A TUI session is summarised per stretch of settings: a rate change after 3.5 s gives two
/// rows, each with the rate it ran at, not one row with the last rate.
#[test]
fn a_tui_session_has_a_summary_row_per_stretch_of_settings() {
    use std::time::{Duration, Instant};
    use synlab::lab::control::LabControl;
    use synlab::lab::controller::Controller;
    use synlab::lab::knobs::Command;
    let tmp = tempfile::tempdir().unwrap();
    let mut c = tui_session("stretches", "", Some(tmp.path()));
    let run_for = |c: &mut Controller, secs: f64| {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            LabControl::pump(c).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    run_for(&mut c, 3.5);
    c.apply(Command::SetLoad(synlab::model::LoadKnob::Rate, 200.0))
        .into_result()
        .unwrap();
    run_for(&mut c, 3.5);
    c.finish_interactive().unwrap();
    let dir = c.folder_dir().unwrap().to_path_buf();
    let s = summary(&dir);
    let rows = s["points"].as_array().unwrap();
    let rates: Vec<f64> = rows
        .iter()
        .map(|r| r["offered_rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, vec![100.0, 200.0], "{s}");
    assert!(
        rows[1]["attempts_per_s"].as_f64().unwrap() > 150.0,
        "the second stretch ran at 200/s: {}",
        rows[1]
    );
}
