//! issue 46: over HTTP/2 the connections the clients made equal the SYNs the server's port
//! saw (pcap, first SYNs: retransmitted ones apart) and the connects the clients' kernels
//! started (Tcp ActiveOpens of the client namespaces), while the requests are several times
//! more: the SYNs follow the connections, not the requests. `synlab run` in the network lab
//! as root, and as the plain user in its rootless lab.

mod plain_support;

use std::process::Command;

/// S-Client over HTTP/2 (h2c) against the built-in event server: each connection carries 4
/// requests, 2 streams at a time, then closes; slots reconnect, so connections keep coming.
const SCENARIO: &str = r#"
name = "h2-syns"
duration = "4s"
[target]
arch = "event"
[load]
mode = "sclient"
rate = 60
sockets = 50
timeout = "2s"
http = "2"
streams = 2
requests_per_conn = 4
[probe]
interval = "200ms"
[network]
backend = "auto"
[[network.path]]
name = "lan"
rtt = "2ms"
"#;

/// The run's totals: SYNs and ActiveOpens against the connections, requests against them.
fn check(who: &str, summary: &serde_json::Value) {
    let t = &summary["run_totals"];
    let n = |k: &str| {
        t[k].as_u64()
            .unwrap_or_else(|| panic!("{who}: {k} not in run_totals: {t}"))
    };
    let (attempts, established) = (n("attempts"), n("established"));
    let syns = n("syn_in") - t["syn_retrans"].as_u64().unwrap_or(0);
    eprintln!(
        "{who}: connections {attempts} (established {established}), responses {}, pcap first SYNs {syns}, clients' ActiveOpens {}",
        n("responses"),
        t["client_active_opens"]
    );
    assert!(established > 50, "{who}: {t}");
    assert_eq!(n("errors"), 0, "{who}: {t}");
    assert_eq!(attempts, established, "{who}: {t}");
    assert_eq!(
        syns, attempts,
        "{who}: pcap's first SYNs vs connections: {t}"
    );
    assert_eq!(
        n("client_active_opens"),
        attempts,
        "{who}: the clients' TcpActiveOpens vs connections: {t}"
    );
    // 4 requests on each connection (one open when the run stopped ends after the requests
    // it had in flight: fewer): the SYNs count the connections, a quarter of the requests.
    let responses = n("responses");
    assert!(
        responses <= 4 * established && responses > 3 * established,
        "{who}: {responses} responses on {established} connections: {t}"
    );
}

#[test]
fn over_http2_the_connections_equal_the_syns_and_active_opens_in_the_lab() {
    let privs = synlab::sys::privilege::Privileges::current();
    if !privs.can_build_lab() || !privs.net_raw {
        synlab::sys::privilege::skip_unless_required("the network lab and pcap need root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("h2-syns.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", sc.to_str().unwrap(), "--out"])
        .arg(dir.path().join("out"))
        .arg("--no-progress")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = plain_support::run_folder(&dir.path().join("out"));
    let s = std::fs::read_to_string(run.join("summary.json")).unwrap();
    check("root", &serde_json::from_str(&s).unwrap());
}

#[test]
fn rootless_over_http2_the_connections_equal_the_syns_and_active_opens() {
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("h2-syns.toml", SCENARIO);
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("maps only your own uid") {
        plain_support::skip_or_fail(&format!("no subordinate uid range ({err})"));
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (_, summary) = p.summary();
    check("rootless", &summary);
    p.assert_none_left();
}
