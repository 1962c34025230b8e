//! Helpers of the real-terminal tests: run tmux, wait for a screen, read a figure off it.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

/// Whether tmux is here; without it the caller skips (or fails when privileged tests are required).
pub fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return true;
    }
    if synlab::sys::privilege::require_privileged() {
        panic!("tmux is not installed (apt-get install tmux)");
    }
    synlab::sys::privilege::say_skipped("skipped: tmux is not installed");
    false
}

pub fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn wait_for(session: &str, what: &dyn Fn(&str) -> bool, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let screen = tmux(&["capture-pane", "-t", session, "-p"]);
        if what(&screen) || Instant::now() > deadline {
            return screen;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A detached tmux session of 160x48 running `cmd`; killed on drop.
pub struct Session(pub String);

impl Session {
    pub fn start(name: &str, cmd: &str) -> Session {
        Session::start_sized(name, cmd, 160, 48)
    }

    /// `synlab tui` on the scenario `toml`, written as `dir/NAME.toml`, with its run folders in
    /// `dir`; the session (named after `name` and this test process) stays after the exit code.
    pub fn tui_on(dir: &std::path::Path, name: &str, toml: &str) -> Session {
        let sc = dir.join(format!("{name}.toml"));
        std::fs::write(&sc, toml).unwrap();
        let cmd = format!(
            "{} tui {} --out {}; echo SYNLAB-EXIT=$?; sleep 60",
            env!("CARGO_BIN_EXE_synlab"),
            sc.display(),
            dir.display()
        );
        Session::start(&format!("synlab-{name}-{}", std::process::id()), &cmd)
    }

    /// A session of `w` x `h` cells.
    pub fn start_sized(name: &str, cmd: &str, w: u16, h: u16) -> Session {
        let (w, h) = (w.to_string(), h.to_string());
        tmux(&["new-session", "-d", "-s", name, "-x", &w, "-y", &h, cmd]);
        Session(name.to_string())
    }

    /// The screen now.
    pub fn screen(&self) -> String {
        tmux(&["capture-pane", "-t", &self.0, "-p"])
    }

    /// Types `keys` (tmux key names: "q", "Tab", "*").
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            tmux(&["send-keys", "-t", &self.0, k]);
        }
    }
}

impl Session {
    /// Presses `q` and waits (20 s at most) for the shell line the session's command ends
    /// with (`echo SYNLAB-EXIT=$?`); the screen then, with synlab's exit code on it.
    pub fn quit(&self) -> String {
        tmux(&["send-keys", "-t", &self.0, "q"]);
        wait_for(&self.0, &|s| s.contains("SYNLAB-EXIT="), 20)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .output();
    }
}

/// The first of `labels` found as `label N` with a figure N (a long or a short label: the
/// screen's width picks which the TUI shows).
pub fn figure_any(screen: &str, labels: &[&str]) -> Option<f64> {
    labels.iter().find_map(|l| figure(screen, l))
}

/// The accept queue and its limit, from "queue 128/128 ..." (not the panel's title).
pub fn queue(screen: &str) -> Option<(f64, f64)> {
    screen.match_indices("queue ").find_map(|(i, _)| {
        let tok: String = screen[i + 6..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        let (q, l) = tok.split_once('/')?;
        Some((parse_figure(q)?, parse_figure(l)?))
    })
}

/// "1.2k" -> 1200, "12" -> 12.
pub fn parse_figure(tok: &str) -> Option<f64> {
    let (num, mult) = match tok.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match tok.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (tok, 1.0),
        },
    };
    num.parse::<f64>().ok().map(|v| v * mult)
}

/// The first `label N` on the screen whose N is a figure (warnings may use the same word).
pub fn figure(screen: &str, label: &str) -> Option<f64> {
    let pat = format!("{label} ");
    screen.match_indices(&pat).find_map(|(i, _)| {
        let rest = &screen[i + pat.len()..];
        let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        parse_figure(&tok)
    })
}
