//! Recovery after overload as a named phase, and a process-per-connection server's busy
//! processes, in report.md and the plots (issue 45 item 2): a run whose server answered its
//! backlog after the load dropped says so in a Phases section, and its whole-run cross-check
//! says the server's surplus is that recovery, not "distrust the throughput figures".

use std::fmt::Write;

/// A run folder from the report fixture with the time series of a lesson's overload and
/// recovery: 4,000/s offered (the server answers 1,000/s, its clients 700/s), then 600/s
/// offered while the server goes on answering its backlog at 1,000/s for 5 s; busy workers
/// of 150 all through the overload.
fn run_with_recovery() -> tempfile::TempDir {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/run");
    let tmp = tempfile::tempdir().unwrap();
    for f in ["events.csv", "scenario.toml", "summary.csv"] {
        std::fs::copy(src.join(f), tmp.path().join(f)).unwrap();
    }
    let mut ts = String::from(
        "t_s,target_rate,responses_per_s,server_responses_per_s,server_busy,server_workers\n",
    );
    let mut served = (0.0, 0.0);
    for i in 1..=20 {
        let t = i as f64;
        let (offered, client, server, busy) = match i {
            1..=10 => (4000.0, 700.0, 1000.0, 150.0),
            11..=15 => (600.0, 600.0, 1000.0, 150.0),
            _ => (600.0, 600.0, 600.0, 40.0),
        };
        served.0 += client;
        served.1 += server;
        writeln!(ts, "{t},{offered},{client},{server},{busy},150").unwrap();
    }
    std::fs::write(tmp.path().join("timeseries.csv"), ts).unwrap();
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("summary.json")).unwrap()).unwrap();
    // The overload's own surplus (300/s for 10 s) is the clients' response timeouts; the
    // recovery's (400/s for 5 s) is what this test is about: count only that one as unexplained.
    let (client, server) = (served.1 - 2000.0, served.1);
    s["meta"]["check_responses"] = serde_json::json!({
        "agree": false, "client": client, "server": server,
        "diff_pct": 100.0 * (server - client) / client,
        "verdict": "client counted fewer: distrust the throughput figures",
        "trusted": "distrust the throughput figures: the two counts of the same responses differ"
    });
    for p in s["points"].as_array_mut().unwrap() {
        p["server_busy_max"] = serde_json::json!(150.0);
    }
    std::fs::write(tmp.path().join("summary.json"), s.to_string()).unwrap();
    tmp
}

#[test]
fn recovery_after_overload_is_a_named_phase_not_a_fault_and_busy_processes_are_reported() {
    let tmp = run_with_recovery();
    let md_path = synlab::report::write_report(tmp.path()).unwrap();
    let md = std::fs::read_to_string(md_path).unwrap();
    assert!(md.contains("## Phases"), "{md}");
    assert!(
        md.contains("- recovery after overload, 10–15 s: the server answered its backlog, 2000 responses more"),
        "{md}"
    );
    let check = md
        .lines()
        .find(|l| l.starts_with("- Responses over the whole run"))
        .unwrap();
    assert!(
        check.contains("in its recovery after overload (10–15 s)") && !check.contains("distrust"),
        "{check}"
    );
    assert!(md.contains("server busy max"), "{md}");
    // The plots: the busy processes against how many there are, the server's own count.
    let run = synlab::report::read::read_run(tmp.path()).unwrap();
    let fig = synlab::report::figures::timeseries_figure(&run, "").unwrap();
    let busy = fig
        .panels
        .iter()
        .find(|p| p.y_label == "server processes")
        .expect("a panel of server processes");
    assert!(busy
        .series
        .iter()
        .any(|s| s.name == "server processes busy"));
    assert!(fig.panels[0]
        .series
        .iter()
        .any(|s| s.name == "responses/s (server's own count)"));
}

#[test]
fn a_run_without_recovery_has_no_phases_and_its_disagreement_stands() {
    let tmp = run_with_recovery();
    let ts = tmp.path().join("timeseries.csv");
    let flat = std::fs::read_to_string(&ts)
        .unwrap()
        .replace(",600,600,1000,", ",600,600,600,");
    std::fs::write(&ts, flat).unwrap();
    let md = std::fs::read_to_string(synlab::report::write_report(tmp.path()).unwrap()).unwrap();
    assert!(!md.contains("## Phases"), "{md}");
    assert!(md.contains("distrust the throughput figures"), "{md}");
}
