//! issue 47, in a real terminal (tmux): the TUI over HTTP/3. The UDP (QUIC) panel stands in
//! the accept queue's place with the Initials arriving (pcap) and the server socket's
//! drops and queue, and the status figures count QUIC handshakes completed; `q` ends it with
//! exit 0, saying it is stopping while it drains. The same walk as root and rootless (the
//! plain CI user, through setpriv). And the QUIC lesson's flood at 80x24: its charts stay.

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
    // While it drained, the terminal said so (the start-up line was the last word before).
    assert!(
        end.contains("synlab: stopping: "),
        "no stopping line after q:\n{end}"
    );
}

/// A new user's report: `synlab tui scenarios/lesson-quic.toml` at 80x24, `n` `n` to the
/// flood: the caption, its checks, the busy banner and the alarms left the offered vs achieved
/// panel no chart. Its chart keeps its rows (the y axis' 0 and the x axis' "now"), whatever
/// the machine raises; the UDP panel never says "buffer full" beside a sampled queue; after
/// `q` the terminal says it is draining, and for how long at most.
#[test]
fn the_quic_lessons_flood_keeps_its_chart_at_80x24() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lesson = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/lesson-quic.toml");
    let cmd = format!(
        "{} tui {lesson} --out {}; echo SYNLAB-EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_synlab"),
        dir.path().display()
    );
    let name = format!("synlab-lesson-quic-80x24-{}", std::process::id());
    let s = Session::start_sized(&name, &cmd, 80, 24);
    let started = wait_for(&s.0, &|sc| sc.contains("step 1/4"), 40);
    assert!(started.contains("step 1/4"), "{started}");
    s.keys(&["n"]);
    let second = wait_for(&s.0, &|sc| sc.contains("step 2/4"), 10);
    assert!(second.contains("step 2/4"), "{second}");
    s.keys(&["n"]);
    let flooded = |sc: &str| sc.contains("step 3/4") && sc.contains("DROPPING");
    wait_for(&s.0, &flooded, 20);
    // A few seconds into the flood, the warnings and the busy banner raised.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let screen = s.screen();
    assert!(screen.contains("step 3/4"), "{screen}");
    assert!(screen.contains("▶ 20,000 full handshakes/s"), "{screen}");
    let rates: Vec<String> = screen
        .lines()
        .map(|l| l.split("││").next().unwrap_or(l).to_string())
        .collect();
    assert!(
        rates.iter().any(|l| l.starts_with("│0 ")),
        "the rates chart has no y axis:\n{screen}"
    );
    assert!(
        rates
            .iter()
            .any(|l| l.contains("-60s") && l.contains("now")),
        "the rates chart has no x axis:\n{screen}"
    );
    // A queue sampled below its buffer never stands beside a plain "buffer full".
    if screen.contains(" B sampled") {
        let plain = screen
            .lines()
            .any(|l| l.contains("buffer full") && !l.contains("buffer full between samples"));
        assert!(!plain, "{screen}");
    }
    s.keys(&["q"]);
    let stopping = wait_for(&s.0, &|sc| sc.contains("synlab: stopping: "), 10);
    assert!(
        stopping.contains("synlab: stopping: ") && stopping.contains("(at most 10 s)"),
        "no stopping line after q:\n{stopping}"
    );
    let end = wait_for(&s.0, &|sc| sc.contains("SYNLAB-EXIT="), 40);
    assert!(end.contains("SYNLAB-EXIT=0"), "{end}");
}
