//! issue 47, in a real terminal (tmux): the TUI over HTTP/3. The UDP (QUIC) panel stands in
//! the accept queue's place with the Initials arriving (pcap) and the server socket's
//! drops and queue, and the status figures count QUIC handshakes completed; `q` ends it with
//! exit 0. The same walk as root and rootless (the plain CI user, through setpriv).

mod plain_support;
mod tmux_support;

use tmux_support::{figure, have_tmux, wait_for, Session};

/// S-Client slots over HTTP/3 against the built-in server, well below its capacity.
const SCENARIO: &str = r#"
name = "tui-h3"
duration = "60s"
[target]
arch = "event"
tls = true
http3 = true
[load]
mode = "sclient"
rate = 200
sockets = 2000
timeout = "1s"
http = "3"
"#;

#[test]
fn over_http3_the_tui_shows_the_udp_panel_and_quic_handshakes() {
    if !have_tmux() {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let dir = tempfile::tempdir().unwrap();
    walk(&Session::tui_on(dir.path(), "tui-h3", SCENARIO));
}

/// As the plain user (SYNLAB_TEST_USER through setpriv when root): skipped with the reason
/// when there is no such user or no user namespaces, a failure when SYNLAB_REQUIRE_PRIVILEGED=1.
#[test]
fn rootless_over_http3_the_tui_shows_the_udp_panel_and_quic_handshakes() {
    if !have_tmux() {
        return;
    }
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("tui-h3.toml", SCENARIO);
    let cmd = p.tui_shell_line(&sc);
    let name = format!("synlab-tui-h3-rootless-{}", std::process::id());
    walk(&Session::start(&name, &cmd));
    p.assert_none_left();
}

/// The walk: the UDP panel with Initials arriving, full QUIC handshakes completing, no TCP
/// accept-queue panel; then `q`.
fn walk(s: &Session) {
    let shows = |sc: &str| {
        sc.contains("UDP (QUIC)")
            && figure(sc, "Initials/s").is_some_and(|v| v > 0.0)
            && figure(sc, "full").is_some_and(|v| v > 0.0)
    };
    let screen = wait_for(&s.0, &shows, 40);
    assert!(shows(&screen), "no UDP panel or QUIC handshakes:\n{screen}");
    // Below capacity nothing is dropped at the server's socket.
    assert!(
        screen.contains("drops/s port"),
        "the socket's drops are charted:\n{screen}"
    );
    // Over QUIC there is no accept queue and no TCP connection's queues to chart (their
    // panels' titles; the latter was drawn for QUIC, as "HTTP/2 conn queues").
    for title in ["┌ accept queue", "conn queues"] {
        assert!(
            !screen.contains(title),
            "a TCP panel ({title}) over HTTP/3:\n{screen}"
        );
    }
    let end = s.quit();
    assert!(end.contains("SYNLAB-EXIT=0"), "{end}");
}
