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

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
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
    let junit = r
        .run_dir
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("junit.xml");
    assert_eq!(junit_counts(&junit), (2, 0, 2, 0));
    let md = std::fs::read_to_string(r.run_dir.join("report.md")).unwrap();
    assert!(md.contains("### Thresholds: pass"), "{md}");
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
    let junit = r
        .run_dir
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("junit.xml");
    assert_eq!(junit_counts(&junit), (2, 1, 2, 1));
    let md = std::fs::read_to_string(r.run_dir.join("report.md")).unwrap();
    assert!(md.contains("### Thresholds: **FAIL**"), "{md}");
}
