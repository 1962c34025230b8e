//! Caddy's start-up on the host (loopback, no lab, any user): a fixed port whose UDP side is
//! taken is refused before anything starts (Caddy over TLS serves HTTP/3 on the same port, UDP),
//! and a Caddy that exits after its TCP listener came up (its UDP listener failed) is reported in
//! its own words, not as a target that does not speak TLS.

mod lab_support;

use lab_support::opts;
use std::os::unix::fs::PermissionsExt;
use synlab::lab::controller::Controller;

fn scenario(port: u16, http: &str) -> String {
    format!(
        r#"
name = "caddy-start"
duration = "5s"
[target]
kind = "caddy"
tls = true
port = {port}
[load]
mode = "open"
rate = 20
connections = 2
http = "{http}"
"#
    )
}

/// A UDP socket on the port, TCP free: refused before Caddy is started (or even looked for),
/// naming UDP and HTTP/3. Before, Caddy started, took TCP, failed on UDP and exited, and the
/// run said "does not speak TLS ... Connection reset by peer".
#[test]
fn a_port_whose_udp_side_is_taken_is_refused_before_caddy_starts() {
    let held = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    if std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        synlab::sys::privilege::say_skipped(&format!(
            "skipped: TCP port {port} is in use here, the test needs it free"
        ));
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let sc = synlab::scenario::parse("caddy-start.toml", &scenario(port, "3")).unwrap();
    let err = Controller::start(sc, opts(Some(out.path())))
        .err()
        .expect("the start is refused");
    let msg = format!("{err:#}");
    assert!(
        msg.contains(&format!(
            "target.port {port} is already in use on 127.0.0.1 for UDP"
        )) && msg.contains("HTTP/3"),
        "{msg}"
    );
    // Nothing started: no Caddy folder in the run folder.
    let runs: Vec<_> = std::fs::read_dir(out.path()).unwrap().flatten().collect();
    assert!(
        runs.iter().all(|r| !r.path().join("caddy").exists()),
        "caddy was started"
    );
}

/// Stands in for Caddy: takes the site's TCP port (from the Caddyfile synlab wrote), holds
/// it for a moment, then says what Caddy says when its UDP listener fails and exits 1.
const FAKE_CADDY: &str = r#"#!/bin/sh
exec python3 - "$@" <<'EOF'
import re, socket, sys, time
conf = open(sys.argv[sys.argv.index("--config") + 1]).read()
port = int(re.search(r"https://:(\d+)", conf).group(1))
ip = re.search(r"\tbind (\S+)", conf).group(1)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((ip, port))
s.listen(16)
print('{"level":"info","logger":"http","msg":"enabling HTTP/3 listener","addr":"%s:%d"}' % (ip, port), flush=True)
time.sleep(1.5)
print("Error: loading initial config: loading new config: http app module: start: listen udp %s:%d: bind: address already in use" % (ip, port), end="")
sys.exit(1)
EOF
"#;

/// Caddy takes its TCP port, then fails to listen on UDP and exits: the start-up connect
/// succeeded, the TLS check met a server going away. The error is Caddy's own line.
#[test]
fn a_caddy_that_exits_after_taking_its_tcp_port_is_reported_in_its_own_words() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .map_or(true, |s| !s.success())
    {
        synlab::sys::privilege::skip_unless_required("python3 (the stand-in Caddy) is missing");
        return;
    }
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("caddy");
    std::fs::write(&fake, FAKE_CADDY).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The one test of this binary that changes PATH (the other never looks Caddy up).
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", bin.path().display()));
    let out = tempfile::tempdir().unwrap();
    let sc = synlab::scenario::parse("caddy-start.toml", &scenario(0, "1.1")).unwrap();
    let err = Controller::start(sc, opts(Some(out.path())))
        .err()
        .expect("the start fails");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("the target server exited during start-up")
            && msg.contains("caddy did not start; it said:")
            && msg.contains("listen udp 127.0.0.1:")
            && msg.contains("bind: address already in use"),
        "{msg}"
    );
    assert!(!msg.contains("does not speak TLS"), "{msg}");
}
