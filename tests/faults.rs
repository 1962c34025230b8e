//! Faults injected into real runs of the synlab binary (`synlab run` as a child process): a
//! child killed mid-run (router, server, worker), the controller interrupted by a signal,
//! `net up` then `net down`, targets that never answer, answer garbage or reset, and two runs
//! started together. Each checks the message, the exit code documented in the README, a valid
//! run folder, and that nothing is left behind. Lab tests skip without root unless
//! SYNLAB_REQUIRE_PRIVILEGED=1.

mod probe_support;

use probe_support::privileged;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_synlab");

/// A short loopback scenario: 200 attempts/s against the built-in event server.
fn loopback(duration: &str) -> String {
    format!(
        "name = \"fault\"\nduration = \"{duration}\"\n\n[target]\narch = \"event\"\nservice_time = \"1ms\"\n\n[load]\nmode = \"open\"\nrate = 200\nsockets = 2000\ntimeout = \"1s\"\n"
    )
}

/// The same through the delay router (10 ms RTT).
fn lab(duration: &str) -> String {
    format!(
        "{}\n[network]\nbackend = \"router\"\n\n[[network.path]]\nname = \"wan\"\nrtt = \"10ms\"\n",
        loopback(duration)
    )
}

/// Starts `synlab run` on `toml` with its results under `dir/results`.
fn start_run(dir: &Path, file: &str, toml: &str) -> Child {
    let sc = dir.join(file);
    std::fs::write(&sc, toml).unwrap();
    Command::new(BIN)
        .arg("run")
        .arg(&sc)
        .arg("--out")
        .arg(dir.join("results"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start synlab run")
}

struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Waits for the child (at most `limit`: then it is killed and the test fails).
fn finish(child: Child, limit: Duration) -> Ended {
    let pid = child.id();
    let t0 = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let out = out.unwrap();
            Ended {
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                took: t0.elapsed(),
            }
        }
        Err(_) => {
            // SAFETY: kill(2) on the child this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("synlab (pid {pid}) did not end within {limit:?}");
        }
    }
}

/// (pid, command line) of the processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let stat = synlab::sys::pidstat::PidStat::read(pid);
        if stat.is_some_and(|s| s.ppid == parent) {
            let cmd = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default();
            out.push((pid, cmd.replace('\0', " ")));
        }
    }
    out
}

/// Waits (bounded) for a child of `parent` whose command line has `needle`.
fn wait_child(parent: u32, needle: &str) -> (u32, String) {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        if let Some(c) = children_of(parent)
            .into_iter()
            .find(|(_, c)| c.contains(needle))
        {
            return c;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no child `{needle}` of pid {parent} within 30 s");
}

/// Whether `pid` is still a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// Waits (bounded) until the run has written `rows` time-series rows: it is mid-run.
fn wait_rows(results: &Path, rows: usize) {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        let n = std::fs::read_dir(results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_to_string(e.path().join("timeseries.csv")).ok())
            .map(|s| s.lines().count().saturating_sub(1))
            .unwrap_or(0);
        if n >= rows {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the run wrote fewer than {rows} rows within 30 s");
}

/// The run folders under `results`; each must be valid: summary.json parses and has its
/// rows, timeseries.csv is rectangular with rising times, run.log ends with the shutdown line.
fn valid_folders(results: &Path) -> Vec<(PathBuf, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(results).unwrap() {
        let dir = e.unwrap().path();
        let text = std::fs::read_to_string(dir.join("summary.json"))
            .unwrap_or_else(|e| panic!("{}: summary.json: {e}", dir.display()));
        let summary: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: summary.json: {e}", dir.display()));
        let ts = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        let mut lines = ts.lines();
        let cols = lines.next().unwrap().split(',').count();
        let mut last = f64::NEG_INFINITY;
        for l in lines {
            assert_eq!(l.split(',').count(), cols, "{}: row `{l}`", dir.display());
            let t: f64 = l.split(',').next().unwrap().parse().unwrap();
            assert!(t > last, "{}: times not rising at `{l}`", dir.display());
            last = t;
        }
        let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
        assert!(
            log.contains("stopped; everything started by this run has exited"),
            "{}: run.log:\n{log}",
            dir.display()
        );
        out.push((dir, summary));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The summary rows of a summary.json.
fn rows(summary: &serde_json::Value) -> Vec<serde_json::Value> {
    summary["points"].as_array().cloned().unwrap_or_default()
}

/// Kills the first child of a run matching `needle` mid-run and checks the run stops at once
/// with exit 1, the message, a valid folder, and nothing left. Returns the killed pid.
fn kill_child_mid_run(toml: &str, needle: &str, expect: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let run = start_run(tmp.path(), "fault.toml", toml);
    let run_pid = run.id();
    let (victim, _) = wait_child(run_pid, needle);
    wait_rows(&tmp.path().join("results"), 3);
    let kids: Vec<u32> = children_of(run_pid).into_iter().map(|c| c.0).collect();
    let router_cmd = children_of(run_pid)
        .into_iter()
        .find(|(_, c)| c.contains(" router "))
        .map(|c| c.1);
    // SAFETY: kill(2) on a child of the run this test started.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let killed_at = Instant::now();
    // The scenario lasts 60 s: ending well before says the death stopped the run.
    let end = finish(run, Duration::from_secs(45));
    let msg = format!("{expect} (pid {victim}) was killed by signal 9 (SIGKILL)");
    assert_eq!(end.code, Some(1), "exit code; stderr:\n{}", end.stderr);
    assert!(
        end.stderr.contains(&msg),
        "want `{msg}` in:\n{}",
        end.stderr
    );
    assert!(
        killed_at.elapsed() < Duration::from_secs(30),
        "the run went on {:?} after the kill",
        killed_at.elapsed()
    );
    assert!(end.stdout.contains("FAILED"), "{}", end.stdout);
    let folders = valid_folders(&tmp.path().join("results"));
    assert_eq!(folders.len(), 1);
    let r = rows(&folders[0].1);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["failed"], true);
    assert!(r[0]["error"].as_str().unwrap().contains(&msg), "{r:?}");
    nothing_left(kids, router_cmd);
}

/// None of `kids` runs, and the lab of the router started as `router_cmd` has no namespace
/// or link left.
fn nothing_left(kids: Vec<u32>, router_cmd: Option<String>) {
    let left: Vec<u32> = kids.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "children left running: {left:?}");
    if let Some(cmd) = router_cmd {
        // The router's ports carry the lab's run id: `synlab-<id>-rs`.
        let id = cmd
            .split("synlab-")
            .nth(1)
            .unwrap()
            .split('-')
            .next()
            .unwrap();
        let (nss, links) = synlab::sys::netns::list_leftovers();
        let prefix = format!("synlab-{id}-");
        assert!(
            !nss.iter().chain(&links).any(|n| n.starts_with(&prefix)),
            "lab {id} left behind: {nss:?} {links:?}"
        );
    }
}

#[test]
fn a_router_killed_mid_run_stops_the_run_with_exit_1() {
    if !privileged("killing the delay router") {
        return;
    }
    kill_child_mid_run(&lab("60s"), " router ", "the delay router");
}

#[test]
fn a_server_killed_mid_run_stops_the_run_with_exit_1() {
    kill_child_mid_run(&loopback("60s"), " serve ", "the target server");
}

#[test]
fn a_worker_killed_mid_run_stops_the_run_with_exit_1() {
    kill_child_mid_run(&loopback("60s"), " worker ", "load worker 0");
}

/// SIGINT, SIGTERM and SIGHUP to the controller: exit 130, a valid folder, no child left.
#[test]
fn a_signalled_controller_exits_130_and_leaves_nothing() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let tmp = tempfile::tempdir().unwrap();
        let run = start_run(tmp.path(), "fault.toml", &loopback("60s"));
        let pid = run.id();
        wait_child(pid, " worker ");
        wait_rows(&tmp.path().join("results"), 3);
        let kids: Vec<u32> = children_of(pid).into_iter().map(|c| c.0).collect();
        // SAFETY: kill(2) on the run this test started.
        unsafe { libc::kill(pid as i32, sig) };
        let end = finish(run, Duration::from_secs(30));
        assert_eq!(end.code, Some(130), "signal {sig}; stderr:\n{}", end.stderr);
        assert!(end.stderr.contains("interrupted"), "{}", end.stderr);
        let folders = valid_folders(&tmp.path().join("results"));
        assert_eq!(folders.len(), 1);
        let left: Vec<u32> = kids.into_iter().filter(|&p| alive(p)).collect();
        assert!(left.is_empty(), "signal {sig}: children left: {left:?}");
    }
}

/// Two runs of one scenario started together: two folders, each valid with its own rows,
/// and each names the other in its notices.
#[test]
fn two_runs_started_together_get_their_own_valid_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let a = start_run(tmp.path(), "a.toml", &loopback("4s"));
    let b = start_run(tmp.path(), "b.toml", &loopback("4s"));
    let pa = a.id();
    let ea = finish(a, Duration::from_secs(60));
    let eb = finish(b, Duration::from_secs(60));
    assert_eq!(ea.code, Some(0), "{}", ea.stderr);
    assert_eq!(eb.code, Some(0), "{}", eb.stderr);
    let folders = valid_folders(&tmp.path().join("results"));
    assert_eq!(folders.len(), 2, "{folders:?}");
    for (dir, summary) in &folders {
        assert_eq!(rows(summary).len(), 1, "{}", dir.display());
        // The second run started after the first had become synlab (spawn returns after
        // exec), and the first lasts seconds more: the second names it.
        // Exact line: one folder's name is a prefix of the other's (`-2` suffix).
        let b_dir = format!("results: {}", dir.display());
        if eb.stdout.lines().any(|l| l == b_dir) {
            let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
            assert!(
                log.contains("another synlab is running") && log.contains(&format!("pid {pa} ")),
                "{}: the first run (pid {pa}) is not named:\n{log}",
                dir.display()
            );
        }
    }
}

static IDS: AtomicU32 = AtomicU32::new(0);

/// A run id for `net up` unique to this process and call (`f` + 3 base36 digits + counter).
fn run_id() -> String {
    let mut pid = std::process::id() % 46656;
    let mut s = String::from("f");
    for _ in 0..3 {
        s.push(std::char::from_digit(pid % 36, 36).unwrap());
        pid /= 36;
    }
    format!("{s}{}", IDS.fetch_add(1, Ordering::Relaxed))
}

/// `synlab net up` (returns the router's pid) for `id`.
fn net_up(id: &str) -> u32 {
    let out = Command::new(BIN)
        .args(["net", "up", "--run-id", id])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.split("delay router: pid ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no router pid in:\n{text}"))
}

fn lab_left(id: &str) -> Vec<String> {
    let prefix = format!("synlab-{id}-");
    let (nss, links) = synlab::sys::netns::list_leftovers();
    let mut left: Vec<String> = nss
        .into_iter()
        .chain(links)
        .filter(|n| n.starts_with(&prefix))
        .collect();
    left.extend(
        synlab::sys::netns::synlab_processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(&prefix))
            .map(|p| p.to_string()),
    );
    left
}

#[test]
fn net_up_then_net_down_leaves_no_process() {
    if !privileged("net up / net down") {
        return;
    }
    for _ in 0..4 {
        let id = run_id();
        let router = net_up(&id);
        assert!(alive(router));
        let status = Command::new(BIN).args(["net", "status"]).output().unwrap();
        let status = String::from_utf8_lossy(&status.stdout).into_owned();
        assert!(
            status.contains(&format!(
                "proc  pid {router} `synlab router` in netns synlab-{id}-rtr"
            )),
            "{status}"
        );
        let down = Command::new(BIN)
            .args(["net", "down", "--run-id", &id])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&down.stdout);
        assert!(down.status.success(), "{text}");
        assert!(text.contains(&format!("stopped pid {router} ")), "{text}");
        assert!(!alive(router), "router {router} still runs after net down");
        assert!(lab_left(&id).is_empty(), "{:?}", lab_left(&id));
    }
}

/// A router left up by `net up` whose namespaces are deleted by hand (`ip netns del`) stops
/// by itself: its interfaces are gone.
#[test]
fn a_detached_router_stops_when_its_interfaces_vanish() {
    if !privileged("the router's own exit") {
        return;
    }
    let id = run_id();
    let router = net_up(&id);
    let (nss, _) = synlab::sys::netns::list_leftovers();
    for ns in nss
        .iter()
        .filter(|n| n.starts_with(&format!("synlab-{id}-")))
    {
        assert!(Command::new("ip")
            .args(["netns", "del", ns])
            .status()
            .unwrap()
            .success());
    }
    let end = Instant::now() + Duration::from_secs(10);
    while alive(router) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let still = alive(router);
    if still {
        // SAFETY: the router this test started through net up.
        unsafe { libc::kill(router as i32, libc::SIGKILL) };
    }
    let _ = Command::new(BIN)
        .args(["net", "down", "--run-id", &id])
        .output();
    assert!(
        !still,
        "router {router} still runs 10 s after its namespaces went"
    );
}

/// What a fake target does with each connection.
#[derive(Clone, Copy)]
enum Fake {
    /// Accepts and never answers (reads and holds the connection).
    Silent,
    /// Answers bytes that are not HTTP, then closes.
    Garbage,
    /// Resets every connection (SO_LINGER 0, close).
    Reset,
}

/// A TCP server on 127.0.0.1 behaving as `kind` until `stop`; returns its port.
fn fake_target(kind: Fake, stop: Arc<AtomicBool>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((mut s, _)) => match kind {
                    Fake::Silent => held.push(s),
                    Fake::Garbage => {
                        let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
                        let _ = s.read(&mut [0u8; 512]);
                        let _ = s.write_all(b"\x00\x01garbage, not HTTP at all\r\n\r\n\xff");
                    }
                    Fake::Reset => {
                        let _ = socket2_linger_zero(&s);
                        drop(s);
                    }
                },
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    });
    port
}

/// SO_LINGER {on, 0}: close() sends a RST.
fn socket2_linger_zero(s: &std::net::TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let lg = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: valid linger struct and length on a socket we own.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&lg as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as u32,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A run against a misbehaving target: it ends on time, no response counted, errors counted,
/// a valid folder, and (every attempt failed: it measured something broken) its point failed
/// and the run exits 1.
fn against(kind: Fake) -> serde_json::Value {
    let stop = Arc::new(AtomicBool::new(false));
    let port = fake_target(kind, stop.clone());
    let toml = format!(
        "name = \"fake\"\nduration = \"3s\"\n\n[target]\nkind = \"address\"\naddress = \"127.0.0.1:{port}\"\n\n[load]\nmode = \"open\"\nrate = 100\nsockets = 1000\ntimeout = \"1s\"\nresponse_timeout = \"1s\"\n"
    );
    let tmp = tempfile::tempdir().unwrap();
    let run = start_run(tmp.path(), "fake.toml", &toml);
    let end = finish(run, Duration::from_secs(60));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(end.code, Some(1), "{}{}", end.stdout, end.stderr);
    let folders = valid_folders(&tmp.path().join("results"));
    assert_eq!(folders.len(), 1);
    let r = rows(&folders[0].1);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["failed"], true, "{r:?}");
    assert!(
        r[0]["error"].as_str().unwrap().starts_with("none of the "),
        "{r:?}"
    );
    assert!(end.took < Duration::from_secs(30), "took {:?}", end.took);
    r[0].clone()
}

#[test]
fn a_target_that_never_answers_counts_timeouts_not_responses() {
    let r = against(Fake::Silent);
    assert_eq!(r["throughput_per_s"].as_f64(), Some(0.0), "{r}");
    assert!(r["errors_per_s"].as_f64().unwrap() > 10.0, "{r}");
}

#[test]
fn a_target_that_answers_garbage_counts_errors_not_responses() {
    let r = against(Fake::Garbage);
    assert_eq!(r["throughput_per_s"].as_f64(), Some(0.0), "{r}");
    assert!(r["errors_per_s"].as_f64().unwrap() > 10.0, "{r}");
}

#[test]
fn a_target_that_resets_every_connection_counts_errors_not_responses() {
    let r = against(Fake::Reset);
    assert_eq!(r["throughput_per_s"].as_f64(), Some(0.0), "{r}");
    assert!(r["errors_per_s"].as_f64().unwrap() > 10.0, "{r}");
}

/// What the TUI shows when a child dies: the state it draws from says who died and how, the
/// load is stopped, and the run is marked finished.
#[test]
fn a_childs_death_is_in_the_state_the_tui_draws() {
    use synlab::lab::controller::{Controller, RunOptions};
    std::env::set_var("SYNLAB_EXE", BIN);
    let sc = synlab::scenario::parse("fault.toml", &loopback("60s")).unwrap();
    let opts = RunOptions {
        out_parent: None,
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    };
    let mut c = Controller::start(sc, opts).unwrap();
    c.tui_mode();
    let server = c.server_pid.expect("the built-in server runs as a child");
    // SAFETY: kill(2) on the server this controller started.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let end = Instant::now() + Duration::from_secs(30);
    while c.child_died().is_none() && Instant::now() < end {
        c.pump().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let want = format!("the target server (pid {server}) was killed by signal 9 (SIGKILL)");
    let died = c.child_died().expect("the death is recorded");
    assert_eq!(
        (died.pid, &died.how),
        (
            server,
            &synlab::model::death::Exit::Signal(9, "SIGKILL".into())
        )
    );
    assert_eq!(died.to_string(), want);
    let caption = c.state().caption.clone().unwrap_or_default();
    assert!(
        caption.contains(&want) && caption.contains("run stopped"),
        "{caption}"
    );
    assert!(c.state().finished && c.state().knobs.paused);
    assert!(c.state().warnings.iter().any(|w| w.to_string() == want));
    c.shutdown().unwrap();
}

/// An address target with nothing listening: the connect is refused at once, so the run is
/// refused at once (exit 2, the address and what to do), not after the 10 s start-up wait.
#[test]
fn an_address_with_nothing_listening_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let toml = format!(
        "name = \"nobody\"\nduration = \"3s\"\n\n[target]\naddress = \"127.0.0.1:{port}\"\n\n[load]\nmode = \"open\"\nrate = 50\nsockets = 100\n"
    );
    let run = start_run(tmp.path(), "nobody.toml", &toml);
    let end = finish(run, Duration::from_secs(60));
    assert_eq!(end.code, Some(2), "{}", end.stderr);
    assert!(
        end.stderr.contains(&format!(
            "nothing listens at 127.0.0.1:{port} (connection refused): start the server there first, or correct target.address"
        )),
        "{}",
        end.stderr
    );
    assert!(end.took < Duration::from_secs(5), "took {:?}", end.took);
}

/// A command target that exits at once: exit 2 (bad input), the reason and the command's own
/// last words on stderr and in run.log, a folder with its summary, nothing left running.
#[test]
fn a_command_target_that_exits_at_once_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = "name = \"quits\"\nduration = \"3s\"\n\n[target]\nkind = \"command\"\ncommand = \"sh -c 'echo cannot read server.conf >&2; exit 1' {port}\"\n\n[load]\nmode = \"open\"\nrate = 50\nsockets = 100\n";
    let run = start_run(tmp.path(), "quits.toml", toml);
    let end = finish(run, Duration::from_secs(60));
    assert_eq!(end.code, Some(2), "{}", end.stderr);
    assert!(
        end.stderr
            .contains("the target server exited during start-up"),
        "{}",
        end.stderr
    );
    // Its own words, not only where to find them (as nginx's and Apache's are said).
    assert!(
        end.stderr
            .contains("its last words:\n  cannot read server.conf"),
        "{}",
        end.stderr
    );
    let results = tmp.path().join("results");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dirs[0].join("summary.json")).unwrap())
            .unwrap();
    assert!(rows(&summary).is_empty());
    let log = std::fs::read_to_string(dirs[0].join("run.log")).unwrap();
    assert!(
        log.contains("could not start: the target server exited during start-up")
            && log.contains("stopped; everything started by this run has exited"),
        "{log}"
    );
}

/// The scenario names a port another program already listens on: exit 2 before any server or
/// worker starts, the port and what to do on stderr and in run.log, and not one connection to
/// the program holding the port (the start-up check would otherwise reach it and measure it).
#[test]
fn a_target_port_already_in_use_is_refused_with_exit_2_and_not_loaded() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    holder.set_nonblocking(true).unwrap();
    let port = holder.local_addr().unwrap().port();
    for (file, target) in [
        ("builtin.toml", "arch = \"event\"".to_string()),
        // A command that would outlive the test if it were started: it must not be.
        (
            "command.toml",
            format!("kind = \"command\"\ncommand = \"sleep 30.{port}\""),
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let toml = format!(
            "name = \"busy\"\nduration = \"3s\"\n\n[target]\n{target}\nport = {port}\n\n[load]\nmode = \"open\"\nrate = 50\nsockets = 100\n"
        );
        let run = start_run(tmp.path(), file, &toml);
        let end = finish(run, Duration::from_secs(60));
        assert_eq!(end.code, Some(2), "{file}: {}{}", end.stdout, end.stderr);
        let said = format!("target.port {port} is already in use on 127.0.0.1");
        assert!(end.stderr.contains(&said), "{file}: {}", end.stderr);
        assert!(end.stderr.contains("port = 0"), "{file}: {}", end.stderr);
        let dirs: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("results"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "{file}");
        let log = std::fs::read_to_string(dirs[0].join("run.log")).unwrap();
        assert!(
            log.contains(&format!("could not start: {said}")),
            "{file}: {log}"
        );
        let marker = format!("sleep 30.{port}");
        let started = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(&marker)
            });
        assert!(!started, "{file}: `{marker}` was started");
        match holder.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("{file}: the port's holder was connected to: {other:?}"),
        }
    }
}

/// A client namespace with 10 ephemeral ports and 100 ms of RTT: most attempts find no port
/// (EADDRNOTAVAIL). They are errors of their own kind, never attempts that reached the server,
/// the point is CLIENT-BOUND saying why, run.log names the sysctl to widen, the totals add
/// up, and the folder is valid with nothing left behind.
#[test]
fn ephemeral_ports_exhausted_in_a_client_namespace_are_counted_and_flagged() {
    if !privileged("a client namespace with a narrow ip_local_port_range") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let toml = format!(
        "{}port_range = \"40000-40009\"\n\n[[network.path]]\nname = \"wan\"\nrtt = \"100ms\"\n",
        lab("4s")
            .replace("rate = 200", "rate = 500")
            .split("[[network.path]]")
            .next()
            .unwrap()
    );
    let run = start_run(tmp.path(), "ports.toml", &toml);
    let pid = run.id();
    let (_, router_cmd) = wait_child(pid, " router ");
    let kids: Vec<u32> = children_of(pid).into_iter().map(|c| c.0).collect();
    let end = finish(run, Duration::from_secs(90));
    assert_eq!(end.code, Some(0), "{}{}", end.stdout, end.stderr);
    let folders = valid_folders(&tmp.path().join("results"));
    let (dir, summary) = &folders[0];
    let r = &rows(summary)[0];
    assert_eq!(r["client_bound"], true, "{r}");
    assert!(
        r["client_bound_reason"]
            .as_str()
            .unwrap()
            .contains("ephemeral ports"),
        "{r}"
    );
    let t = &summary["run_totals"];
    let kinds = &t["errors_by_kind"];
    let no_port = kinds["addr_not_avail"].as_u64().unwrap();
    assert!(no_port > 100, "{t}");
    // An attempt without a port never sent a SYN: the server saw only the others.
    let attempts = t["attempts"].as_u64().unwrap();
    assert_eq!(
        t["client_active_opens"].as_u64().unwrap(),
        attempts - no_port,
        "{t}"
    );
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    assert!(
        log.contains("ephemeral ports exhausted: widen net.ipv4.ip_local_port_range"),
        "{log}"
    );
    nothing_left(kids, Some(router_cmd));
}

/// Unmounts a tmpfs on drop (also when the test fails).
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The run folder's disk fills up mid-run (a 16 KiB tmpfs): the run stops with exit 2 and an
/// error naming the file and the cause, leaves no temporary file, and stops every child.
#[test]
fn a_full_disk_stops_the_run_with_the_file_and_the_cause() {
    if !privileged("mounting a tiny tmpfs") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, _guard) = tiny_disk(tmp.path(), "16k");
    let sc = tmp.path().join("full.toml");
    std::fs::write(&sc, loopback("60s")).unwrap();
    let run = Command::new(BIN)
        .arg("run")
        .arg(&sc)
        .arg("--out")
        .arg(mnt.join("results"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = run.id();
    wait_child(pid, " worker ");
    let kids: Vec<u32> = children_of(pid).into_iter().map(|c| c.0).collect();
    let end = finish(run, Duration::from_secs(90));
    assert_eq!(end.code, Some(2), "{}", end.stderr);
    assert!(
        end.stderr.contains("No space left on device") && end.stderr.contains("results/fault-"),
        "{}",
        end.stderr
    );
    let left: Vec<u32> = kids.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "children left: {left:?}");
    for e in std::fs::read_dir(mnt.join("results")).unwrap() {
        for f in std::fs::read_dir(e.unwrap().path()).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "temporary file left: {name}");
        }
    }
}

/// Mounts a tmpfs of `size` on a new folder under `tmp`, unmounted on drop.
fn tiny_disk(tmp: &Path, size: &str) -> (PathBuf, Tmpfs) {
    let mnt = tmp.join("tiny");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount -t tmpfs failed");
    (mnt.clone(), Tmpfs(mnt))
}

/// The disk fills up when the run writes its report (a 64 KiB tmpfs holds the run's own files,
/// not its ~130 KB of plots): the run exits 1 naming each file that could not be written and
/// why, and leaves no temporary file, no empty report.md and no truncated plot. `synlab report`
/// on the same folder says the same and exits 1 too.
#[test]
fn a_full_disk_at_report_time_fails_the_run_naming_each_file() {
    if !privileged("mounting a tiny tmpfs") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, _guard) = tiny_disk(tmp.path(), "64k");
    let sc = tmp.path().join("report.toml");
    std::fs::write(&sc, loopback("2s")).unwrap();
    let run = Command::new(BIN)
        .args(["run", "--no-progress"])
        .arg(&sc)
        .arg("--out")
        .arg(mnt.join("results"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = finish(run, Duration::from_secs(60));
    assert_eq!(end.code, Some(1), "{}\n{}", end.stdout, end.stderr);
    let folder = std::fs::read_dir(mnt.join("results"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let svg = folder.join("plots/timeseries.svg");
    assert!(
        end.stderr.contains("synlab: the run folder is incomplete:")
            && end
                .stderr
                .contains(&format!("writing {} (the disk is full", svg.display()))
            && end.stderr.contains("No space left on device"),
        "{}",
        end.stderr
    );
    let files_whole = |dir: &Path| {
        for f in std::fs::read_dir(dir).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "temporary file left: {name}");
            if p.is_file() {
                let bytes = std::fs::read(&p).unwrap();
                assert!(!bytes.is_empty(), "{name} is empty");
                if name.ends_with(".svg") {
                    assert!(
                        String::from_utf8_lossy(&bytes)
                            .trim_end()
                            .ends_with("</svg>"),
                        "{name} is cut"
                    );
                }
                if name.ends_with(".png") {
                    assert!(bytes.ends_with(&[0xAE, 0x42, 0x60, 0x82]), "{name} is cut");
                }
            }
        }
    };
    files_whole(&folder);
    files_whole(&folder.join("plots"));
    let out = Command::new(BIN)
        .arg("report")
        .arg(&folder)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("could not be written") && err.contains("No space left on device"),
        "{err}"
    );
    files_whole(&folder.join("plots"));
}

/// A run under a low RLIMIT_NOFILE (256, hard too): with CAP_SYS_RESOURCE the worker raises
/// the hard limit itself and says so; without it (root in a container that drops it) the run
/// notes the limit and names the missing capability. Either way the run completes (exit 0).
#[test]
fn a_low_descriptor_limit_is_raised_when_privileged_and_named_when_not() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("nofile.toml");
    std::fs::write(&sc, loopback("3s")).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("run")
        .arg(&sc)
        .arg("--out")
        .arg(tmp.path().join("results"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let rl = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let end = finish(cmd.spawn().unwrap(), Duration::from_secs(60));
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    let folders = valid_folders(&tmp.path().join("results"));
    let log = std::fs::read_to_string(folders[0].0.join("run.log")).unwrap();
    if synlab::sys::privilege::Privileges::current().sys_resource {
        assert!(
            log.contains("raised RLIMIT_NOFILE from 256") && !log.contains("RLIMIT_NOFILE is"),
            "{log}"
        );
    } else if synlab::sys::userns::host_root() {
        assert!(
            log.contains("RLIMIT_NOFILE is 256 (hard limit 256, and raising it needs CAP_SYS_RESOURCE, which this process lacks"),
            "{log}"
        );
    } else {
        // A plain user gets a plain user's advice (issue 42), not root's.
        assert!(
            log.contains("RLIMIT_NOFILE is 256 (hard limit 256, which a plain user cannot raise")
                && !log.contains("docker"),
            "{log}"
        );
    }
}
