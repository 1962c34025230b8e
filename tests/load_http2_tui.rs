//! issue 46, in a real terminal (tmux): the TUI over HTTP/2. The status line shows the
//! streams (M per connection, the most in flight against the server's advertised limit), the
//! queue panel charts the connections' socket queues (the accept queue is nearly empty over a
//! few connections and says so), and the streams keys (`E` x2, `e` /2) change M, which the
//! workers then carry. The same walk as root and rootless (the plain CI user, through setpriv).

mod plain_support;
mod tmux_support;

use tmux_support::{have_tmux, wait_for, Session};

const SCENARIO: &str = r#"
name = "tui-h2"
duration = "60s"
[target]
arch = "event"
max_streams = 64
service = "sleep"
service_time = "50ms"
[load]
mode = "closed"
clients = 2
http = "2"
streams = 4
"#;

/// "streams 8/conn in flight 8 of 64": (M, in flight, limit).
fn streams(screen: &str) -> Option<(u32, u32, u32)> {
    let at = screen.find("streams ")?;
    let words: Vec<&str> = screen[at..].split_whitespace().take(7).collect();
    let m = words.get(1)?.strip_suffix("/conn")?.parse().ok()?;
    if words.get(2..4)? != ["in", "flight"] || words.get(5) != Some(&"of") {
        return None;
    }
    Some((m, words[4].parse().ok()?, words[6].parse().ok()?))
}

#[test]
fn over_http2_the_tui_shows_streams_and_connection_queues_and_the_streams_key_changes_m() {
    if !have_tmux() {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let dir = tempfile::tempdir().unwrap();
    walk(&Session::tui_on(dir.path(), "tui-h2", SCENARIO));
}

/// As the plain user (SYNLAB_TEST_USER through setpriv when root): skipped with the reason
/// when there is no such user or no user namespaces, a failure when SYNLAB_REQUIRE_PRIVILEGED=1.
#[test]
fn rootless_over_http2_the_tui_shows_streams_and_connection_queues_and_the_streams_key_changes_m() {
    if !have_tmux() {
        return;
    }
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("tui-h2.toml", SCENARIO);
    let cmd = p.tui_shell_line(&sc);
    let name = format!("synlab-tui-h2-rootless-{}", std::process::id());
    walk(&Session::start(&name, &cmd));
    p.assert_none_left();
}

/// The walk: streams figures and connection queues on screen, `E` x2 then `e`, `q`.
fn walk(s: &Session) {
    // M = 4 per connection, all 4 in flight at some moment, the server's 64 read back.
    let screen = wait_for(
        &s.0,
        &|sc| streams(sc).is_some_and(|(m, f, l)| (m, l) == (4, 64) && f >= 1),
        40,
    );
    let (m, inflight, limit) =
        streams(&screen).unwrap_or_else(|| panic!("no streams figures:\n{screen}"));
    assert_eq!((m, limit), (4, 64), "{screen}");
    assert!(inflight <= 4, "never more than M in flight: {screen}");
    // The queue panel is the connections' queues, and says why.
    assert!(
        screen.contains("HTTP/2 conn queues"),
        "the queue panel over HTTP/2:\n{screen}"
    );
    for label in ["recvq B/conn", "sendq B/conn"] {
        assert!(screen.contains(label), "{label} not shown:\n{screen}");
    }
    // E doubles M twice: 16 per connection, and the workers go above the old 4.
    s.keys(&["E"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.keys(&["E"]);
    let screen = wait_for(
        &s.0,
        &|sc| streams(sc).is_some_and(|(m, f, _)| m == 16 && f > 4),
        20,
    );
    let (m, inflight, _) = streams(&screen).unwrap_or_else(|| panic!("{screen}"));
    assert_eq!(m, 16, "E x2 from 4: {screen}");
    assert!(
        (5..=16).contains(&inflight),
        "the workers carry the new M: {screen}"
    );
    // e halves it: 8, and the status line follows.
    s.keys(&["e"]);
    let screen = wait_for(&s.0, &|sc| streams(sc).is_some_and(|(m, ..)| m == 8), 10);
    assert_eq!(streams(&screen).map(|t| t.0), Some(8), "{screen}");
    let end = s.quit();
    assert!(end.contains("SYNLAB-EXIT=0"), "{end}");
}
