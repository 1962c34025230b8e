//! TLS end to end (issue 30): the built-in server over TLS with the resumed share at 0, 0.5
//! and 1 (the clients' and the server's counts agree), by tickets and by session ids, its
//! prefork processes sharing ticket keys; nginx and Apache over TLS in the lab, whose access
//! logs hold a line per handshake and the same resumed share; a certificate that fails verification
//! counted as such; a plain-HTTP target with `tls = true` refused at start-up, nothing left.

mod lab_support;
mod probe_support;
mod totals_support;

use lab_support::opts;
use std::path::{Path, PathBuf};
use synlab::scenario::TargetKind;
use totals_support::assert_identities;

/// Runs a scenario headless into a fresh folder: (run folder, summary.json, run.log).
fn run(toml: &str, out: &Path) -> (PathBuf, serde_json::Value, String) {
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("tls.toml", toml).unwrap();
    let (dir, rows, cut) = synlab::lab::run::run_scenario(sc, opts(Some(out)), false).unwrap();
    assert!(!cut, "not interrupted");
    assert!(rows.iter().all(|r| !r.failed), "{rows:?}");
    let dir = dir.expect("a run folder");
    let s = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    (dir, serde_json::from_str(&s).unwrap(), log)
}

fn num(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// The run's handshakes: the clients' (full, resumed) and the server's.
fn handshakes(s: &serde_json::Value) -> ((u64, u64), (u64, u64)) {
    let t = &s["run_totals"];
    assert_identities(t);
    let tls = &t["tls"];
    let n = |k: &str| tls[k].as_u64().unwrap_or_else(|| panic!("{k} in {tls}"));
    assert_eq!(n("failed"), 0, "{t}");
    (
        (n("full"), n("resumed")),
        (n("server_full"), n("server_resumed")),
    )
}

#[test]
fn builtin_server_resumes_the_share_asked_and_counts_what_the_clients_count() {
    let out = tempfile::tempdir().unwrap();
    let (_, s, log) = run(
        r#"
name = "tls-builtin-sweep"
[target]
tls = true
service_time = "0ms"
[load]
mode = "open"
rate = 400
[load.tls]
resumed = 0.5
[sweep]
param = "load.tls.resumed"
values = [0, 0.5, 1]
warmup = "500ms"
hold = "2s"
"#,
        out.path(),
    );
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for (p, share) in points.iter().zip([0.0, 50.0, 100.0]) {
        let (client, server) = (
            num(p, "resumed_share_pct"),
            num(p, "server_resumed_share_pct"),
        );
        assert!(num(p, "handshakes_per_s") > 300.0, "{p}");
        // The schedule is exact over any window; at 1 the very first handshake of the run
        // had no session yet (the 0.5 point stored plenty).
        assert!(
            (client - share).abs() <= 1.0,
            "clients: {client}% for {share}%: {p}"
        );
        // The server's reports come every 100 ms, so its window's edges differ a little.
        assert!(
            (server - share).abs() <= 2.0,
            "server: {server}% for {share}%: {p}"
        );
        assert!(num(p, "tls_handshake_p50_ms") > 0.0, "{p}");
    }
    // Over the run (drained): the same handshakes, counted on both sides.
    let (client, server) = handshakes(&s);
    assert_eq!(client, server, "clients (full, resumed) vs the server's");
    assert!(
        log.contains("cross-check: client counted") && !log.contains("DISAGREE"),
        "{log}"
    );
}

#[test]
fn tls12_resumes_by_session_ids_and_prefork_shares_its_ticket_keys() {
    for (target, tls, what) in [
        (
            "tls_tickets = false",
            "version = \"1.2\"\nresumption = \"ids\"",
            "TLS 1.2 by session ids (event server, cache only)",
        ),
        (
            "arch = \"prefork\"\nworkers = 4\nlingering_close = false\ntls_session_cache = false",
            "resumption = \"tickets\"",
            "TLS 1.3 tickets across prefork processes (no cache)",
        ),
    ] {
        let out = tempfile::tempdir().unwrap();
        let (_, s, log) = run(
            &format!(
                "name = \"tls-resume\"\nduration = \"3s\"\n[target]\ntls = true\nservice_time = \"0ms\"\n{target}\n\
                 [load]\nmode = \"open\"\nrate = 300\n[load.tls]\nresumed = 0.5\n{tls}\n"
            ),
            out.path(),
        );
        let (client, server) = handshakes(&s);
        assert_eq!(client, server, "{what}: clients vs the server");
        let share = client.1 as f64 / (client.0 + client.1) as f64;
        assert!((share - 0.5).abs() <= 0.02, "{what}: resumed share {share}");
        let want = if tls.contains("1.2") {
            "TLS 1.2"
        } else {
            "TLS 1.3"
        };
        assert!(
            log.contains(&format!("the target answered: {want}")),
            "{what}: {log}"
        );
    }
}

fn nginx_installed() -> bool {
    lab_support::real_server_installed(TargetKind::Nginx)
}

/// A real server (`nginx`, `apache`) over TLS in the lab (20 ms RTT through the delay
/// router), 30 % resumed. Apache's prefork holds a process for each connection's handshake
/// and request (three round trips), so it starts with 16 (prefork adds at most 32 a second:
/// one process would refuse the first seconds of 200/s).
fn lab_scenario(kind: &str) -> String {
    let workers = if kind == "apache" { 16 } else { 1 };
    format!(
        r#"
name = "tls-{kind}-lab"
duration = "4s"
[target]
kind = "{kind}"
workers = {workers}
tls = true
[load]
mode = "open"
rate = 200
timeout = "1s"
[load.tls]
resumed = 0.3
[network]
backend = "router"
[[network.path]]
name = "wan"
rtt = "20ms"
"#
    )
}

/// The server's access log (`nginx/access.log`, `apache/access.log`): (lines, lines whose
/// session was resumed), every line carrying the session-reuse field. Apache's internal dummy
/// connections (from the server's own address, without a TLS session: `tls:-`) are the
/// server's, not responses to the load, and are left out as synlab leaves them out.
fn access_log(dir: &Path) -> (u64, u64) {
    let log = std::fs::read_to_string(dir.join("access.log")).unwrap();
    let (internal, lines): (Vec<&str>, Vec<&str>) = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .partition(|l| l.ends_with(" tls:-"));
    assert!(
        internal.iter().all(|l| l.starts_with("198.18.0.")),
        "a line without a TLS session from a client: {internal:?}"
    );
    let reuse: Vec<Option<bool>> = lines
        .iter()
        .map(|l| match l.rsplit_once(" tls:").map(|(_, f)| f) {
            Some("r" | "Resumed") => Some(true),
            Some("." | "Initial") => Some(false),
            _ => None,
        })
        .collect();
    assert!(
        reuse.iter().all(Option::is_some),
        "a line without the tls field: {lines:?}"
    );
    let reused = reuse.iter().filter(|r| **r == Some(true)).count();
    (lines.len() as u64, reused as u64)
}

/// Over TLS in the lab, the server's access log holds a line per handshake (one request per
/// connection) and the resumed share the clients asked for, and it is the server's count.
fn over_tls_in_the_lab(kind: &str) {
    let out = tempfile::tempdir().unwrap();
    let (dir, s, _) = run(&lab_scenario(kind), out.path());
    let ((full, resumed), (sf, sr)) = handshakes(&s);
    let (lines, reused) = access_log(&dir.join(kind));
    let t = &s["run_totals"];
    assert_eq!(t["errors"].as_u64(), Some(0), "{t}");
    assert!(full + resumed > 300, "{t}");
    // One request per connection, none failed: a handshake, a request and a log line each.
    assert_eq!(full + resumed, lines, "handshakes vs {kind}'s lines: {t}");
    assert_eq!(
        (sf, sr),
        (lines - reused, reused),
        "the log is the server's count"
    );
    let client_share = resumed as f64 / (full + resumed) as f64;
    let server_share = reused as f64 / lines as f64;
    assert!((client_share - 0.3).abs() <= 0.02, "clients {client_share}");
    assert!((server_share - 0.3).abs() <= 0.02, "{kind} {server_share}");
    assert!(s["meta"]["lab"].as_str().is_some());
}

#[test]
fn nginx_over_tls_in_the_lab_logs_a_line_per_handshake_and_the_resumed_share() {
    if !lab_support::privileged() || !nginx_installed() {
        return;
    }
    over_tls_in_the_lab("nginx");
}

#[test]
fn apache_over_tls_in_the_lab_logs_a_line_per_handshake_and_the_resumed_share() {
    if !lab_support::privileged() || !lab_support::real_server_installed(TargetKind::Apache) {
        return;
    }
    over_tls_in_the_lab("apache");
}

#[test]
fn a_certificate_that_fails_verification_is_a_bad_certificate_and_says_so() {
    if !lab_support::privileged() || !nginx_installed() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    // The lab's certificate is not for this name: verification fails every handshake.
    let sc = lab_scenario("nginx").replace(
        "resumed = 0.3",
        "resumed = 0\nverify = true\nsni = \"other.synlab.test\"",
    );
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("tls.toml", &sc).unwrap();
    let (dir, rows, _) = synlab::lab::run::run_scenario(sc, opts(Some(out.path())), false).unwrap();
    // Every handshake failed: the point measured something broken, and fails saying what.
    assert!(rows[0].failed, "{rows:?}");
    assert!(
        rows[0]
            .error
            .contains("is not for the name the clients verify"),
        "{}",
        rows[0].error
    );
    let dir = dir.unwrap();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    let t = &s["run_totals"];
    assert_identities(t);
    let kinds = &t["connections"]["errors_by_kind"];
    let bad = kinds["bad_certificates"].as_u64().unwrap();
    assert!(bad > 100, "{t}");
    assert_eq!(bad, t["attempts"].as_u64().unwrap(), "every handshake: {t}");
    assert_eq!(t["responses"].as_u64(), Some(0));
    assert!(
        log.contains("TLS handshake failed: the server's certificate is not for the name")
            && log.contains("counted in bad_certificates")
            && !log.contains("NotValidForName"),
        "{log}"
    );
}

#[test]
fn a_plain_http_target_with_tls_is_refused_at_start_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A plain-HTTP built-in server, started by the lab as a command target.
    let exe = env!("CARGO_BIN_EXE_synlab");
    let sc = dir.path().join("plain.toml");
    std::fs::write(
        &sc,
        format!(
            "[target]\nkind = \"command\"\ncommand = \"{exe} serve --listen 127.0.0.1:{{port}}\"\nport = {port}\ntls = true\n\
             [load]\nmode = \"open\"\nrate = 100\n"
        ),
    )
    .unwrap();
    let out = std::process::Command::new(exe)
        .args(["run", sc.to_str().unwrap(), "--out"])
        .arg(dir.path().join("out"))
        .arg("--no-progress")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "the target at 127.0.0.1:{port} does not speak TLS"
        )),
        "{err}"
    );
    // The server the lab started is gone.
    let tag = format!("127.0.0.1:{port}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&tag) && c.contains(" serve "))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
}
