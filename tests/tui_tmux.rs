//! The real terminal: tmux starts `synlab` on the default scenario, keys raise the rate three
//! steps and change the RTT, the screen shows the new values and non-zero rates, `q` restores
//! the terminal and leaves nothing of synlab running or configured.

mod tmux_support;

use std::process::Command;
use std::time::Duration;
use tmux_support::{figure, have_tmux, tmux, wait_for, Session};

fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("synlab-"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn tmux_default_scenario_keys_change_rate_and_rtt_then_quit_cleans_up() {
    if !have_tmux() {
        return;
    }
    // Root builds the lab on the host; anyone else in a user namespace, where the kernel
    // allows one (tests/rootless.rs covers that lab as a plain user).
    let lab = synlab::sys::userns::host_root()
        || Command::new("unshare")
            .args(["-r", "-n", "true"])
            .status()
            .is_ok_and(|s| s.success());
    let before = namespaces();
    let tmp = tempfile::tempdir().unwrap();
    let session = Session(format!("synlab-tui-{}", std::process::id()));
    let cmd = format!(
        "{} tui --out {}; echo SYNLAB-EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_synlab"),
        tmp.path().display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &session.0,
        "-x",
        "160",
        "-y",
        "48",
        &cmd,
    ]);

    let screen = wait_for(
        &session.0,
        &|s| s.contains("rate 500/s") && s.contains("attempts"),
        30,
    );
    assert!(
        screen.contains("rate 500/s"),
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
            s.contains("rate 4000/s")
                && figure(s, "attempts").unwrap_or(0.0) > 1000.0
                && (!lab || s.contains("rtt 30ms"))
        },
        15,
    );
    assert!(
        screen.contains("rate 4000/s"),
        "rate keys had no effect:\n{screen}"
    );
    let attempts = figure(&screen, "attempts").unwrap_or(0.0);
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

    tmux(&["send-keys", "-t", &session.0, "q"]);
    let screen = wait_for(&session.0, &|s| s.contains("SYNLAB-EXIT="), 20);
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
    let left: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| !before.contains(n))
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
