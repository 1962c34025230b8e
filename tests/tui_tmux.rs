//! The real terminal: tmux starts `synlab` on the default scenario, keys raise the rate three
//! steps and change the RTT, the screen shows the new values and non-zero rates, `q` restores
//! the terminal and leaves nothing of synlab running or configured.

mod tmux_support;

use std::process::Command;
use std::time::Duration;
use tmux_support::{figure, have_tmux, tmux, wait_for, Session};

/// The run.log of the one run folder under `out`.
fn run_log(out: &std::path::Path) -> Option<String> {
    std::fs::read_dir(out)
        .ok()?
        .filter_map(Result::ok)
        .find_map(|e| std::fs::read_to_string(e.path().join("run.log")).ok())
}

/// The sessions take turns: the first test checks that no synlab worker, server or router is
/// left once it quit, which another session's would break.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("synlab-"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// Whether this user gets the network lab: root builds it on the host, anyone else in a user
/// namespace where the kernel allows one (tests/rootless.rs covers that lab as a plain user).
fn lab_possible() -> bool {
    synlab::sys::userns::host_root()
        || Command::new("unshare")
            .args(["-r", "-n", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

#[test]
fn tmux_default_scenario_keys_change_rate_and_rtt_then_quit_cleans_up() {
    if !have_tmux() {
        return;
    }
    let _turn = turn();
    let lab = lab_possible();
    let before = namespaces();
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!(
        "{} tui --out {}; echo SYNLAB-EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_synlab"),
        tmp.path().display()
    );
    let session = Session::start(&format!("synlab-tui-{}", std::process::id()), &cmd);

    let screen = wait_for(
        &session.0,
        &|s| s.contains("rate 500 conn/s") && s.contains("connections"),
        30,
    );
    assert!(
        screen.contains("rate 500 conn/s"),
        "the TUI did not come up:\n{screen}"
    );
    for _ in 0..3 {
        tmux(&["send-keys", "-t", &session.0, "*"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    tmux(&["send-keys", "-t", &session.0, "R"]);
    let screen = wait_for(
        &session.0,
        &|s| {
            s.contains("rate 4000 conn/s")
                && figure(s, "connections").unwrap_or(0.0) > 1000.0
                && (!lab || s.contains("rtt 30ms"))
        },
        15,
    );
    assert!(
        screen.contains("rate 4000 conn/s"),
        "rate keys had no effect:\n{screen}"
    );
    let attempts = figure(&screen, "connections").unwrap_or(0.0);
    assert!(
        attempts > 1000.0,
        "attempts/s {attempts} after raising the rate:\n{screen}"
    );
    if lab {
        assert!(
            screen.contains("rtt 30ms"),
            "RTT key had no effect:\n{screen}"
        );
    } else {
        assert!(
            screen.contains("refused") || screen.contains("loopback"),
            "{screen}"
        );
    }

    // The drops view (issue 48): `y` puts it in place of the panels, with the kernel's own
    // reasons counted (root) or why not; `y` again brings the panels back.
    tmux(&["send-keys", "-t", &session.0, "y"]);
    let screen = wait_for(
        &session.0,
        &|s| {
            s.contains("what the kernel dropped, and why") && s.contains("the kernel's own reasons")
        },
        10,
    );
    assert!(
        screen.contains("what the kernel dropped, and why"),
        "y did not open the drops view:\n{screen}"
    );
    assert!(screen.contains("the kernel's own reasons"), "{screen}");
    tmux(&["send-keys", "-t", &session.0, "y"]);
    let screen = wait_for(&session.0, &|s| s.contains("connections"), 10);
    assert!(!screen.contains("what the kernel dropped"), "{screen}");

    let screen = session.quit();
    assert!(
        screen.contains("SYNLAB-EXIT=0"),
        "synlab did not exit cleanly:\n{screen}"
    );
    assert_eq!(
        tmux(&["display-message", "-p", "-t", &session.0, "#{alternate_on}"]).trim(),
        "0",
        "the terminal was left on the alternate screen"
    );
    assert!(screen.contains("results:"), "{screen}");
    // Only this session's lab counts: other tests (here and in other checkouts on the machine)
    // build labs of their own meanwhile. run.log names it: "network lab <run id> up".
    let run_id = run_log(tmp.path()).and_then(|log| {
        log.lines()
            .find_map(|l| l.split("network lab ").nth(1))
            .and_then(|rest| rest.split_whitespace().next().map(str::to_string))
    });
    let left: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| !before.contains(n))
        .filter(|n| {
            run_id
                .as_ref()
                .is_some_and(|id| n.contains(&format!("-{id}-")))
        })
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    let procs = Command::new("pgrep")
        .args([
            "-f",
            &format!("{} (worker|serve|router)", env!("CARGO_BIN_EXE_synlab")),
        ])
        .output()
        .unwrap();
    assert!(
        procs.stdout.is_empty(),
        "synlab processes left: {}",
        String::from_utf8_lossy(&procs.stdout)
    );
}

/// Two network paths in a real terminal: the latency panel shows each path's own connect and
/// total percentiles, and the far path's connect p50 is its 50 ms of RTT (the near one's far
/// below). Needs the lab: root, or a user namespace where the kernel allows one.
#[test]
fn tmux_two_paths_show_each_paths_latency() {
    if !have_tmux() {
        return;
    }
    let _turn = turn();
    if !lab_possible() {
        if synlab::sys::privilege::require_privileged() {
            panic!("neither root nor a user namespace: no network lab for two paths");
        }
        synlab::sys::privilege::say_skipped(
            "skipped: neither root nor a user namespace, so no network lab",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let session = Session::tui_on(
        tmp.path(),
        "two-paths",
        "name = \"two-paths\"\nduration = \"2m\"\n\n[target]\narch = \"event\"\nservice_time = \"1ms\"\n\n\
         [load]\nmode = \"open\"\nrate = 200\nsockets = 2000\ntimeout = \"1s\"\n\n\
         [network]\nbackend = \"router\"\n\n[[network.path]]\nname = \"near\"\nrtt = \"0ms\"\n\n\
         [[network.path]]\nname = \"far\"\nrtt = \"50ms\"\n",
    );
    // The p50 of a row `label  p50 p90 p99`, in ms.
    let p50 = |screen: &str, label: &str| -> Option<f64> {
        let line = screen.lines().find(|l| l.contains(label))?;
        let rest = &line[line.find(label)? + label.len()..];
        let tok = rest.split_whitespace().next()?;
        tok.strip_suffix("ms")?.parse().ok()
    };
    let screen = wait_for(
        &session.0,
        &|s| {
            p50(s, "far conn").is_some_and(|v| v >= 50.0)
                && p50(s, "far total").is_some_and(|v| v >= 100.0)
                && p50(s, "near conn").is_some()
        },
        30,
    );
    let far = p50(&screen, "far conn");
    let near = p50(&screen, "near conn");
    assert!(
        far.is_some_and(|v| (50.0..60.0).contains(&v)),
        "far path connect p50 {far:?}:\n{screen}"
    );
    assert!(
        near.is_some_and(|v| v < 10.0),
        "near path connect p50 {near:?}:\n{screen}"
    );
    assert!(
        p50(&screen, "far total").is_some_and(|v| v >= 100.0),
        "far path total p50 (two round trips):\n{screen}"
    );
    let screen = session.quit();
    assert!(
        screen.contains("SYNLAB-EXIT=0"),
        "synlab did not exit cleanly:\n{screen}"
    );
}

/// issue 27: a keep-alive scenario in a real terminal (loopback, any user): a fixed request
/// rate over a pool of 16 persistent connections, well within the server's capacity (50 us of
/// CPU a request). The status line says the rate is requests/s
/// over the pool; the rates panel shows requests/s at the rate and connections/s near 0; a
/// rate key changes the request rate.
#[test]
fn tmux_keepalive_pool_shows_requests_and_connections_apart() {
    if !have_tmux() {
        return;
    }
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let session = Session::tui_on(
        tmp.path(),
        "keepalive",
        "name = \"keepalive\"\nduration = \"2m\"\n\n[target]\narch = \"event\"\nservice_time = \"50us\"\n\n\
         [load]\nmode = \"open\"\nrate = 500\narrivals = \"constant\"\nhttp = \"1.1\"\n\
         connections = 16\nrequests_per_conn = 1000000\n",
    );
    let shows = |rate: f64| {
        move |s: &str| {
            s.contains(&format!("rate {rate:.0} req/s over 16 conns"))
                && figure(s, "requests").is_some_and(|r| (r / rate - 1.0).abs() < 0.05)
                && figure(s, "connections").is_some_and(|c| c < 5.0)
        }
    };
    let screen = wait_for(&session.0, &shows(500.0), 30);
    assert!(
        shows(500.0)(&screen),
        "requests/s at the rate over 16 connections, no new connections:\n{screen}"
    );
    // `*` doubles the rate: the request rate follows, still on the same connections.
    tmux(&["send-keys", "-t", &session.0, "*"]);
    let screen = wait_for(&session.0, &shows(1000.0), 15);
    assert!(
        shows(1000.0)(&screen),
        "the rate key moved the request rate:\n{screen}"
    );
    let screen = session.quit();
    assert!(
        screen.contains("SYNLAB-EXIT=0"),
        "synlab did not exit cleanly:\n{screen}"
    );
}

/// Over TLS (issue 30): the status line says what the clients speak and the resumed share, the
/// rates panel shows handshakes/s full and resumed, the latency panel the handshake's; `U`
/// raises the resumed share live and the handshakes follow.
#[test]
fn tmux_tls_shows_handshakes_and_the_resumed_share_key_moves_them() {
    if !have_tmux() {
        return;
    }
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("tls.toml");
    std::fs::write(
        &sc,
        "name = \"tls\"\nduration = \"2m\"\n\n[target]\ntls = true\nservice_time = \"0ms\"\n\n\
         [load]\nmode = \"open\"\nrate = 400\narrivals = \"constant\"\n\n[load.tls]\nresumed = 0.5\n",
    )
    .unwrap();
    let cmd = format!(
        "{} tui {} --out {}; echo SYNLAB-EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_synlab"),
        sc.display(),
        tmp.path().display()
    );
    let session = Session::start(&format!("synlab-tls-{}", std::process::id()), &cmd);
    // Handshakes at the rate, split as the share says (the chart's latest values).
    let shows = |share: f64| {
        move |s: &str| {
            s.contains(&format!("resumed {:.0}%", share * 100.0))
                && s.contains("TLS 1.3 X25519")
                && s.contains("tls hs")
                && figure(s, "hs resumed").is_some_and(|r| (r / 400.0 - share).abs() < 0.08)
                && figure(s, "hs full").is_some_and(|f| (f / 400.0 - (1.0 - share)).abs() < 0.08)
        }
    };
    let screen = wait_for(&session.0, &shows(0.5), 30);
    assert!(shows(0.5)(&screen), "handshakes half resumed:\n{screen}");
    for _ in 0..3 {
        tmux(&["send-keys", "-t", &session.0, "U"]);
    }
    let screen = wait_for(&session.0, &shows(0.8), 15);
    assert!(
        shows(0.8)(&screen),
        "the key moved the resumed share:\n{screen}"
    );
    let screen = session.quit();
    assert!(
        screen.contains("SYNLAB-EXIT=0"),
        "synlab did not exit cleanly:\n{screen}"
    );
}

/// issue 45 item 4, in a real 80x24 terminal: lesson-overload as shipped, started with the
/// command its description names, shows its whole caption under the status line and the
/// accept-queue chart beside the rates chart (both x axes end in "now").
#[test]
fn tmux_lesson_at_80x24_keeps_the_caption_and_the_queue_chart() {
    if !have_tmux() {
        return;
    }
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let sc =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lesson-overload.toml");
    let cmd = format!(
        "{} tui {} --out {}; echo SYNLAB-EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_synlab"),
        sc.display(),
        tmp.path().display()
    );
    let session = Session::start_sized(
        &format!("synlab-lesson80-{}", std::process::id()),
        &cmd,
        80,
        24,
    );
    let ready = |s: &str| {
        s.contains("▶ 400 requests/s against a server")
            && s.contains("accept queue")
            && s.lines().any(|l| l.matches("now").count() >= 2)
    };
    let screen = wait_for(&session.0, &ready, 30);
    assert!(
        ready(&screen),
        "caption and both charts at 80x24:\n{screen}"
    );
    let caption: String = screen
        .lines()
        .skip_while(|l| !l.starts_with("▶ 400"))
        // The caption's own lines; its live checks (✓ held, … not yet) follow under it.
        .take_while(|l| {
            l.starts_with("▶ ") || (l.starts_with("  ") && !l.trim_start().starts_with(['✓', '…']))
        })
        .map(|l| l.trim_start_matches("▶ ").trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        caption.ends_with("the accept queue is empty."),
        "the whole caption: {caption}\n{screen}"
    );
    let screen = session.quit();
    assert!(screen.contains("SYNLAB-EXIT=0"), "{screen}");
}
