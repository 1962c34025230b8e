//! The SYNs-vs-attempts cross-check under packet loss: a lost SYN or SYN-ACK makes the client
//! send its SYN again, so the server sees more SYNs than the clients made attempts. The check
//! compares first SYNs (retransmissions left out) with attempts and says so: a run at 10 %
//! loss with `fail_on_crosscheck` passes, though its SYNs exceed its attempts by far more than
//! the tolerance. Root (the network lab on the host; skips without, fails with
//! SYNLAB_REQUIRE_PRIVILEGED=1).

mod probe_support;

use probe_support::privileged;
use std::process::Command;

/// 200 attempts/s through the delay router at 20 ms RTT and 10 % loss each way; T = 4 s
/// covers a SYN's first two retransmissions (1 s, 3 s), so all but 0.1 % of the attempts reach
/// the server. A 10 s hold of 2,000 attempts puts the check's tolerance at its 2 % floor, four
/// standard deviations of its counting noise (0.45 %) away.
const LOSSY: &str = r#"
name = "lossy"
[target]
arch = "event"
service_time = "1ms"

[load]
mode = "open"
rate = 200
sockets = 4000
timeout = "4s"

[network]
backend = "router"

[[network.path]]
name = "wan"
rtt = "20ms"
loss = "10%"

[sweep]
param = "load.rate"
values = [200]
warmup = "3s"
hold = "10s"

[gate]
fail_on_crosscheck = true
"#;

#[test]
fn retransmitted_syns_under_loss_are_not_counted_as_attempts() {
    if !privileged("a lossy network lab") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("lossy.toml");
    std::fs::write(&sc, LOSSY).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", "--no-progress", "--out"])
        .arg(tmp.path().join("results"))
        .arg(&sc)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = std::fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .next()
        .expect("a run folder")
        .unwrap()
        .path();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let p = &s["points"][0];
    let (syns, attempts) = (
        p["syn_in_per_s"].as_f64().unwrap(),
        p["attempts_per_s"].as_f64().unwrap(),
    );
    let tol = p["check_syn_tolerance_pct"].as_f64().unwrap();
    // The loss shows: every SYN counted is far more than the attempts...
    assert!(
        syns > attempts * (1.0 + 2.0 * tol / 100.0),
        "SYNs {syns}/s vs attempts {attempts}/s: no retransmissions to leave out?\n{stdout}"
    );
    // ... and the check, over first SYNs, holds; its verdict says what it compared.
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let d = p["check_syn_vs_attempts_pct"].as_f64().unwrap();
    eprintln!("SYNs {syns:.1}/s, attempts {attempts:.1}/s, first SYNs vs attempts {d:+.1} % (tolerance {tol:.1} %)");
    assert!(
        d.abs() <= tol,
        "first SYNs vs attempts {d:+.1} % (tolerance {tol:.1} %)"
    );
    let verdicts = s["thresholds"].as_array().unwrap();
    let syn = verdicts
        .iter()
        .find(|v| v["message"].as_str().unwrap().contains("SYNs"))
        .expect("a SYN verdict");
    assert!(
        syn["message"].as_str().unwrap().contains(
            "first SYNs at the server (retransmitted SYNs left out) vs client attempts differ by"
        ) && syn["passed"] == true,
        "{syn}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("the SYNs pcap saw less the retransmitted ones"),
        "{md}"
    );
}
