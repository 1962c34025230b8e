//! issue 47 in the lab: `load.http = "3"` against the built-in server's HTTP/3 and against
//! Caddy (root, and rootless as the plain CI user): the clients' responses equal the server's
//! own count (the built-in server's counter; Caddy's JSON access log, every line of the run
//! an HTTP/3 one), the QUIC figures are in the time series; bad input is refused by `check`
//! with file:line and the key. The worker's own modes are in tests/load_http3.rs.

mod lab_support;
mod plain_support;
mod probe_support;

use lab_support::{opts, real_server_installed as installed};
use std::process::Command;
use synlab::lab::controller::Controller;
use synlab::scenario::TargetKind;

const LAB_H3: &str = r#"
name = "lab-h3"
duration = "3s"
[target]
kind = "KIND"
tls = true
EXTRA
[load]
mode = "open"
rate = 100
connections = 2
http = "3"
streams = 4
[load.tls]
resumed = 0.5
[network]
backend = "auto"
[[network.path]]
name = "wan"
rtt = "10ms"
"#;

const BUILTIN: &str = "arch = \"event\"\nhttp3 = true\n";

fn scenario(kind: &str, extra: &str) -> String {
    LAB_H3.replace("KIND", kind).replace("EXTRA\n", extra)
}

/// One lab run over HTTP/3: after a paused drain, the clients' responses equal the server's
/// own count, nothing failed, the QUIC handshake figures are in the store.
fn lab_h3_counts(kind: &str, extra: &str) {
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    // A long duration, ended by the pause below: how soon the first response comes depends on
    // the server's start and handshakes, which a busy machine slows (Caddy once answered 38 in
    // a fixed 2.5 s), so the load runs 2.5 s from its first response.
    let text = scenario(kind, extra).replace("duration = \"3s\"", "duration = \"60s\"");
    let sc = synlab::scenario::parse("lab-h3.toml", &text).unwrap();
    let mut c = Controller::start(sc, opts(None)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !c
        .core()
        .state()
        .store
        .col(synlab::model::col::RESPONSES)
        .is_some_and(|r| r.iter().any(|&v| v > 0.0))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{kind}: no response in 30 s of load"
        );
        lab_support::run_for(&mut c, 0.1);
    }
    lab_support::run_for(&mut c, 2.5);
    c.apply(synlab::lab::knobs::Command::Pause(true))
        .into_result()
        .unwrap();
    lab_support::run_for(&mut c, 1.0);
    let store = &c.core().state().store;
    let full = store.mean_since(synlab::model::col::QUIC_HANDSHAKES_FULL, 0.0);
    c.shutdown().unwrap();
    let (client, server, _) = c.core().final_check().expect("server-vs-client check made");
    assert!(client > 50, "{kind}: {client} responses");
    assert_eq!(
        server, client,
        "{kind}: the server's count vs the clients' responses"
    );
    // The built-in server counts its QUIC handshakes itself; after the drain they are the
    // clients' completed ones, the start-up check's left out. Caddy's log counts requests.
    let quic = c.core().quic_crosscheck();
    if kind == "builtin" {
        let line = quic.expect("the built-in server counts its QUIC handshakes");
        let n: Vec<&str> = line
            .split(' ')
            .filter(|w| w.parse::<u64>().is_ok())
            .collect();
        assert!(
            n.len() == 2 && n[0] == n[1] && n[0] != "0",
            "{kind}: {line}"
        );
        // Nothing was dropped: every Initial pcap saw arrive the server read, and no more
        // (the start-up check's, sent before the capture, left out of the server's count).
        let u = c.core().udp_drops(None, false).expect("the drops identity");
        assert!(u.initials_in.is_some_and(|i| i > 0), "{u}");
        assert_eq!(u.initials_dropped(), Some(0), "{u}");
    } else {
        assert_eq!(quic, None, "{kind}: no QUIC count of its own");
    }
    if kind == "caddy" {
        let log = c.core().access_counts().expect("access log counted");
        // The start-up check made a handshake and sent no request: every line is the load's.
        assert_eq!(
            (log.http3, log.lines),
            (client, client),
            "caddy's HTTP/3 log lines vs the clients' responses: {log:?}"
        );
    }
    assert!(
        full.is_some_and(|f| f > 0.0),
        "{kind}: quic_handshakes_full_per_s in the time series ({full:?})"
    );
}

#[test]
fn in_the_lab_the_builtin_server_and_caddy_count_every_http3_request() {
    if !probe_support::privileged("HTTP/3 targets in the lab") {
        return;
    }
    lab_h3_counts("builtin", BUILTIN);
    if installed(TargetKind::Caddy) {
        lab_h3_counts("caddy", "");
    }
}

/// Rootless: the plain user's `synlab run` of the built-in server over HTTP/3 in its own lab
/// checks the target over QUIC, loads it, writes the QUIC columns and exits 0, leaving nothing.
#[test]
fn rootless_an_http3_run_of_the_builtin_server() {
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("h3.toml", &scenario("builtin", BUILTIN));
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (_, summary) = p.summary();
    let text = summary.to_string();
    for col in ["quic_handshakes_full_per_s", "quic_packets_sent_per_s"] {
        assert!(text.contains(col), "{col} in summary.json: {text}");
    }
    p.assert_none_left();
}

/// `synlab check` refuses HTTP/3 against a target that cannot take it and 0-RTT without
/// resumption, each with the file, line and key.
#[test]
fn bad_http3_input_is_refused_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[target]\nkind = \"builtin\"\n[load]\nhttp = \"3\"\n",
            "target.tls",
            2,
        ),
        (
            "[target]\nkind = \"nginx\"\ntls = true\n[load]\nhttp = \"3\"\n",
            "target.kind",
            3,
        ),
        (
            "[target]\nkind = \"builtin\"\ntls = true\narch = \"event\"\nhttp3 = true\nquic_early_data = true\ntls_session_cache = true\n[load]\nhttp = \"3\"\n[load.tls]\nearly_data = 0.5\n",
            "load.tls.early_data",
            12,
        ),
    ];
    for (i, (toml, key, line)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&path, format!("name = \"bad\"\n{toml}")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
            .args(["check", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        let at = format!("bad{i}.toml:{line}:");
        assert!(
            err.contains(&at) && err.contains(key),
            "case {i}: wanted {at} and {key} in: {err}"
        );
    }
}
