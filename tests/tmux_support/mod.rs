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
    eprintln!("skipped: tmux is not installed");
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
        tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "160",
            "-y",
            "48",
            cmd,
        ]);
        Session(name.to_string())
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

/// The first `label N` on the screen whose N is a figure (warnings may use the same word).
pub fn figure(screen: &str, label: &str) -> Option<f64> {
    let pat = format!("{label} ");
    screen.match_indices(&pat).find_map(|(i, _)| {
        let rest = &screen[i + pat.len()..];
        let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        let (num, mult) = match tok.strip_suffix('k') {
            Some(n) => (n, 1e3),
            None => (tok.as_str(), 1.0),
        };
        num.parse::<f64>().ok().map(|v| v * mult)
    })
}
