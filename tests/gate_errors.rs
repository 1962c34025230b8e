//! Failed responses are failures (issue 43): nginx in the lab shedding ~12 % of its requests
//! with fast 503s (`limit_req ... nodelay`) keeps its throughput of responses, but fails an
//! error-share threshold in `synlab run` (exit 3) and `synlab compare` against a healthy
//! baseline run of the same scenario (exit 3: good responses and the error share regressed).

mod lab_support;
mod probe_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use synlab::scenario::TargetKind;

/// nginx in the lab behind a 20 ms path, offered 400/s (open loop). `limit` adds a request
/// limit of 350/s for all clients (one zone keyed by the Host header, which every request
/// carries alike): past its burst, the 50/s over it are answered 503 at once.
fn scenario(limit: bool) -> String {
    let extra = if limit {
        r#"extra_config = ["limit_req_zone $host zone=shed:1m rate=350r/s;", "limit_req zone=shed burst=20 nodelay;"]"#
    } else {
        ""
    };
    format!(
        r#"
name = "shed"
[target]
kind = "nginx"
workers = 2
{extra}

[load]
mode = "open"
rate = 400
timeout = "1s"

[network]
backend = "router"
[[network.path]]
name = "wan"
rtt = "20ms"

[sweep]
param = "load.rate"
values = [400]
warmup = "1s"
hold = "4s"

[[threshold]]
metric = "error_share_pct"
max = 1
"#
    )
}

fn synlab(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the scenario into `parent/<tag>/`: its exit code, output and run folder.
fn run(parent: &Path, tag: &str, limit: bool) -> (i32, String, PathBuf) {
    let sc = parent.join(format!("{tag}.toml"));
    std::fs::write(&sc, scenario(limit)).unwrap();
    let out = parent.join(tag);
    let (code, stdout, stderr) = synlab(&[
        "run".as_ref(),
        "--no-progress".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        sc.as_os_str(),
    ]);
    let dir = std::fs::read_dir(&out)
        .unwrap_or_else(|e| panic!("no run folder ({e}):\n{stdout}\n{stderr}"))
        .next()
        .expect("a run folder")
        .unwrap()
        .path();
    (code, format!("{stdout}\n{stderr}"), dir)
}

fn point(dir: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    v["points"][0].clone()
}

#[test]
fn nginx_shedding_503s_fails_the_error_share_threshold_and_compare() {
    if !probe_support::privileged("nginx shedding 503s in the lab")
        || !lab_support::real_server_installed(TargetKind::Nginx)
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, healthy) = run(tmp.path(), "healthy", false);
    assert_eq!(code, 0, "the healthy run passes its threshold:\n{out}");
    let h = point(&healthy);
    assert_eq!(h["failed_responses_per_s"], 0.0, "{h}");

    let (code, out, shed) = run(tmp.path(), "shed", true);
    assert_eq!(code, 3, "the shedding run fails its threshold:\n{out}");
    assert!(
        out.contains("FAIL threshold `error_share_pct <= 1`")
            && out.contains("% of the requests that ended"),
        "{out}"
    );
    let p = point(&shed);
    let (all, good, failed, share) = (
        p["throughput_per_s"].as_f64().unwrap(),
        p["good_responses_per_s"].as_f64().unwrap(),
        p["failed_responses_per_s"].as_f64().unwrap(),
        p["error_share_pct"].as_f64().unwrap(),
    );
    // nginx answered nearly every request (fast 503s count as responses) ...
    assert!(all > 0.9 * 400.0, "{p}");
    // ... but 50/s over its 350/s limit failed: about 12.5 %.
    assert!((5.0..25.0).contains(&share), "{p}");
    assert!((good + failed - all).abs() < 1.0, "{p}");
    assert!(good < 0.95 * all, "{p}");
    let totals = &p["totals"];
    assert_eq!(
        totals["good"].as_u64().unwrap() + totals["failed_responses"].as_u64().unwrap(),
        totals["responses"].as_u64().unwrap(),
        "{totals}"
    );
    // nginx's own log says the same (its 5xx lines).
    let server_5xx = p["server_5xx_per_s"].as_f64().unwrap();
    assert!((server_5xx - failed).abs() <= 0.05 * failed + 1.0, "{p}");

    let (code, stdout, stderr) = synlab(&[
        "compare".as_ref(),
        healthy.as_os_str(),
        shed.as_os_str(),
        "--max-regression=5%".as_ref(),
    ]);
    assert_eq!(
        code, 3,
        "compare against the healthy run:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("REGRESSION good_responses_per_s at"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("REGRESSION error_share_pct at")
            && stderr.contains("the error share is in % of the requests that ended"),
        "{stdout}\n{stderr}"
    );
    // All responses did not regress: judged alone, the run passes (what compare did before).
    let (code, stdout, stderr) = synlab(&[
        "compare".as_ref(),
        healthy.as_os_str(),
        shed.as_os_str(),
        "--max-regression=5%".as_ref(),
        "--on=throughput_per_s".as_ref(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}
