//! A plain user to run synlab as (the rootless lab's tests): as root, SYNLAB_TEST_USER
//! (`.ci/run` creates one; `nobody` otherwise) through setpriv; as anyone else, this user.
//! Each gets a folder of its own and its own copy of the binary, so "nothing left" looks only
//! at its own processes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A plain user to run synlab as, a folder it owns, and its own copy of the binary.
pub struct Plain {
    pub prefix: Vec<String>,
    pub exe: PathBuf,
    pub dir: tempfile::TempDir,
}

pub fn skip_or_fail(why: &str) -> Option<Plain> {
    synlab::sys::privilege::skip_unless_required(why);
    None
}

pub fn plain_user() -> Option<Plain> {
    let name = std::env::var("SYNLAB_TEST_USER").unwrap_or_else(|_| "nobody".into());
    plain_user_named(&name)
}

/// As root: `name`; as anyone else: this user.
pub fn plain_user_named(name: &str) -> Option<Plain> {
    let dir = tempfile::Builder::new()
        .prefix("synlab-rootless-")
        .tempdir_in("/tmp")
        .unwrap();
    let mut prefix = Vec::new();
    if nix::unistd::geteuid().is_root() {
        let Ok(Some(u)) = nix::unistd::User::from_name(name) else {
            return skip_or_fail(&format!(
                "the rootless tests run synlab as user {name}, who does not exist (useradd {name}, or set SYNLAB_TEST_USER)"
            ));
        };
        nix::unistd::chown(dir.path(), Some(u.uid), Some(u.gid)).unwrap();
        prefix = vec![
            "setpriv".into(),
            format!("--reuid={}", u.uid),
            format!("--regid={}", u.gid),
            "--clear-groups".into(),
        ];
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.path().join("synlab");
    std::fs::copy(env!("CARGO_BIN_EXE_synlab"), &exe).unwrap();
    let p = Plain { prefix, exe, dir };
    let userns = p
        .cmd("unshare", &["-r", "-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !userns {
        return skip_or_fail(
            "this kernel refuses user namespaces to a plain user (`unshare -r -n true` failed), so there is no rootless lab to test",
        );
    }
    Some(p)
}

impl Plain {
    /// `program args` as the plain user, in its folder.
    pub fn cmd(&self, program: &str, args: &[&str]) -> Command {
        let mut c = match self.prefix.split_first() {
            Some((p, rest)) => {
                let mut c = Command::new(p);
                c.args(rest).arg(program);
                c
            }
            None => Command::new(program),
        };
        c.args(args)
            .env("HOME", self.dir.path())
            .current_dir(self.dir.path());
        c
    }

    pub fn synlab(&self, args: &[&str]) -> Command {
        self.cmd(self.exe.to_str().unwrap(), args)
    }

    /// `synlab run SCENARIO --out out` as the plain user, to its end.
    pub fn run(&self, sc: &Path) -> std::process::Output {
        self.synlab(&["run", sc.to_str().unwrap(), "--out", "out", "--no-progress"])
            .output()
            .unwrap()
    }

    /// The run folder this user's only run left, and its summary.json.
    pub fn summary(&self) -> (PathBuf, serde_json::Value) {
        let dir = run_folder(&self.dir.path().join("out"));
        let s = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        (dir, serde_json::from_str(&s).unwrap())
    }

    /// The shell line that runs `synlab tui SCENARIO` as the plain user in a terminal (tmux),
    /// its run folders in `out`, then prints the exit code and stays (the screen is read after).
    pub fn tui_shell_line(&self, scenario: &Path) -> String {
        let mut words: Vec<String> = self.prefix.clone();
        words.extend([
            self.exe.display().to_string(),
            "tui".into(),
            scenario.display().to_string(),
            "--out".into(),
            self.dir.path().join("out").display().to_string(),
        ]);
        format!(
            "cd {d} && HOME={d} {}; echo SYNLAB-EXIT=$?; sleep 60",
            words.join(" "),
            d = self.dir.path().display(),
        )
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Live processes running this test's copy of synlab.
    pub fn processes(&self) -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|x| x == self.exe)
            })
            .collect()
    }

    pub fn assert_none_left(&self) {
        let left = self.wait_none_left(5);
        assert!(left.is_empty(), "synlab processes left: {left:?}");
    }

    pub fn wait_none_left(&self, secs: u64) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = self.processes();
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Its folder goes when the test ends, failed too: first this test's synlab must have ended
/// (a failed tmux walk kills the terminal, and the TUI then still writes its run folder,
/// which came back after the folder was removed and stayed in /tmp).
impl Drop for Plain {
    fn drop(&mut self) {
        self.wait_none_left(15);
    }
}

/// The one run folder under `out`.
pub fn run_folder(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no run folder in {}", out.display()))
}

/// As the test's own user (root in CI): `synlab run` of `text` written to `dir/name`, which must
/// exit 0; the run's folder and its summary.json.
pub fn run_here(dir: &Path, name: &str, text: &str) -> (PathBuf, serde_json::Value) {
    let sc = dir.join(name);
    std::fs::write(&sc, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", sc.to_str().unwrap(), "--no-progress", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = run_folder(&dir.join("out"));
    let summary = std::fs::read_to_string(run.join("summary.json")).unwrap();
    (run, serde_json::from_str(&summary).unwrap())
}
