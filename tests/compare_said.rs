//! What `synlab compare` says, on run folders written here by hand (no run, no root): a run
//! compared with itself, CLIENT-BOUND points of a quiet and of a busy machine, the table of
//! repeated runs against the verdicts' own figures, and the overlay of repeated runs.

use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIO: &str = r#"
name = "said"
[load]
mode = "closed"
clients = 8
[sweep]
param = "load.clients"
values = [8]
hold = "2s"
"#;

const SOCKETS: &str = "12 of 400 arrivals found all D sockets busy, over the 1 % that makes it \
                       material (raise load.sockets)";

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn synlab(args: &[&str], paths: &[&Path]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(args)
        .args(paths)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The one point of a closed-loop sweep at 8 clients, with these figures.
fn point(thr: f64, p99: f64) -> serde_json::Value {
    serde_json::json!({
        "point": 1, "mode": "closed", "param": "load.clients", "value": "8",
        "failed": false, "error": "", "throughput_per_s": thr, "good_responses_per_s": thr,
        "error_share_pct": 0.0, "total_p50_ms": 10.0, "total_p99_ms": p99,
        "attempts_per_s": 8.0, "errors_per_s": 0.0, "accept_queue_max": 9.0,
        "cpu_idle_pct": 50.0, "hold_s": 2.0, "client_bound": false, "client_bound_reason": "",
    })
}

/// A run folder `dir` of one point, with the lab's default CPU split.
fn folder(dir: &Path, p: serde_json::Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let meta = serde_json::json!({"cpus": {"server": [1], "load": [0]}});
    let sj = serde_json::json!({"meta": meta, "points": [p]});
    std::fs::write(dir.join("summary.json"), sj.to_string()).unwrap();
    std::fs::write(dir.join("scenario.toml"), SCENARIO).unwrap();
    dir.to_path_buf()
}

/// A repeated run's folder: `trial-K` folders of these points, and `agg` as its aggregate.
fn repeated(dir: &Path, trials: &[serde_json::Value], agg: serde_json::Value) -> PathBuf {
    for (k, p) in trials.iter().enumerate() {
        folder(&dir.join(format!("trial-{}", k + 1)), p.clone());
    }
    folder(dir, agg)
}

fn client_bound(mut p: serde_json::Value, why: &str) -> serde_json::Value {
    p["client_bound"] = true.into();
    p["client_bound_reason"] = why.into();
    p
}

/// Two hogs, one on each of the lab's CPUs.
fn busy(mut p: serde_json::Value) -> serde_json::Value {
    p["load_cores_other_pct"] = 93.0.into();
    p["server_cores_other_pct"] = 88.0.into();
    p
}

fn last_line(s: &str) -> &str {
    s.trim_end().lines().last().unwrap_or_default()
}

/// A whole run compared with itself: exit 0. A whole CLIENT-BOUND one: nothing judged (exit
/// 4), and the reason is that, not a run "incomplete" ("only whole runs are compared; rerun
/// the incomplete one").
#[test]
fn a_run_with_itself_passes_and_a_client_bound_one_says_why_nothing_was_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let x = folder(&tmp.path().join("x"), point(400.0, 50.0));
    let c = synlab(&["compare"], &[&x, &x]);
    assert_eq!(c.code, 0, "{}\n{}", c.stdout, c.stderr);

    let cb = folder(
        &tmp.path().join("cb"),
        client_bound(point(400.0, 50.0), SOCKETS),
    );
    let c = synlab(&["compare"], &[&cb, &cb]);
    assert_eq!(c.code, 4, "{}\n{}", c.stdout, c.stderr);
    assert!(!c.stderr.contains("incomplete"), "{}", c.stderr);
    assert!(!c.stderr.contains("only whole runs"), "{}", c.stderr);
    assert_eq!(
        last_line(&c.stderr),
        "synlab: the comparison fails (exit 4): nothing was judged: every point compared was \
         CLIENT-BOUND: the clients, not the server, set the throughput there, so the server's \
         figures are not judged; give the load what the CLIENT-BOUND reason names (or ask less \
         of it: a lower rate, fewer clients) and run again"
    );
    assert!(
        c.stdout
            .contains(&format!("CLIENT-BOUND in the run: {SOCKETS}")),
        "{}",
        c.stdout
    );
}

/// Two hogs during a repeated run: every trial disturbed and CLIENT-BOUND. compare said
/// `not judged: CLIENT-BOUND ... (raise load.sockets)` and `INCOMPLETE nothing was judged`;
/// the busy line named the load's CPUs only.
#[test]
fn client_bound_trials_of_a_busy_machine_name_the_machine_not_the_loads_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let p = || busy(client_bound(point(400.0, 50.0), SOCKETS));
    let trials = [p(), p(), p()];
    let base = repeated(&tmp.path().join("base"), &trials, p());
    let run = repeated(&tmp.path().join("run"), &trials, p());
    let c = synlab(&["compare"], &[&base, &run]);
    assert_eq!(c.code, 4, "{}\n{}", c.stdout, c.stderr);
    let said = format!("{}{}", c.stdout, c.stderr);
    assert!(!said.contains("raise load.sockets"), "{said}");
    assert!(!said.contains("INCOMPLETE"), "{said}");
    assert!(
        c.stdout.contains(
            "not judged: CLIENT-BOUND in the run (12 of 400 arrivals found all D sockets busy, \
             over the 1 % that makes it material), but the machine was busy: other work took 93 % \
             of the load's CPUs in point 1 (limit 5 %), and 88 % of the server's CPUs: rerun on a \
             quieter machine before changing the load's settings"
        ),
        "{}",
        c.stdout
    );
    assert!(
        last_line(&c.stderr).ends_with("other work starved the lab, so rerun on a quieter machine"),
        "{}",
        c.stderr
    );
    assert!(
        last_line(&c.stdout).starts_with("verdict: FAIL: nothing was judged: every point"),
        "{}",
        c.stdout
    );
}

/// The table of repeated runs showed `p99 46.4->1341 +2791%!` under `medians over the
/// trials` (the merged histograms' percentiles, not medians) while the verdict judged
/// `total_p99_ms at 1: +3732.5 %`: now each cell is the median of the trials' own figures
/// and a judged figure's change is its verdict's. With `--out` the overlay is written (it was
/// neither written nor said).
#[test]
fn the_table_of_repeated_runs_shows_what_the_verdict_judges_and_the_overlay_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let trials = |p99: [f64; 3]| p99.map(|v| point(400.0, v));
    // The aggregates' p99 is the merged histograms': neither median.
    let base = repeated(
        &tmp.path().join("base"),
        &trials([40.0, 46.4, 50.0]),
        point(400.0, 47.0),
    );
    let run = repeated(
        &tmp.path().join("run"),
        &trials([1200.0, 1341.0, 2000.0]),
        point(400.0, 1500.0),
    );
    let out = tmp.path().join("plots-here");
    let c = synlab(&["compare", "--out"], &[&out, &base, &run]);
    assert_eq!(c.code, 3, "{}\n{}", c.stdout, c.stderr);
    assert!(
        !c.stdout.contains("medians over the trials:"),
        "{}",
        c.stdout
    );
    assert!(
        c.stdout.contains(
            "baseline -> run: the median of the judged trials' own figures (3 and 3 trials"
        ),
        "{}",
        c.stdout
    );
    // The median of the 9 pairwise ratios is 30: +2900 %; the medians' ratio is +2790 %, the
    // merged percentiles' +3091 %.
    let verdict = c
        .stdout
        .lines()
        .find(|l| l.starts_with("total_p99_ms at closed 8: "))
        .unwrap_or_else(|| panic!("{}", c.stdout));
    assert!(
        verdict.starts_with("total_p99_ms at closed 8: +2900.0 % ("),
        "{verdict}"
    );
    assert!(c.stdout.contains("46.4->1341 +2900.0%!"), "{}", c.stdout);
    assert!(!c.stdout.contains("47.0->1500"), "{}", c.stdout);

    let md = out.join("compare-base").join("report.md");
    assert!(md.is_file(), "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains(&format!("overlay: {}", md.display())),
        "{}",
        c.stdout
    );
}
