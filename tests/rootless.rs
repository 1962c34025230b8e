//! The rootless lab, run as a user who is not root: a two-path WAN (0 and 100 ms RTT) whose
//! connect p50s match the RTTs, SYNs counted by pcap, an accept queue that fills under
//! overload, nothing left afterwards (also after SIGKILL), the TUI reacting to the RTT key,
//! and the kernel's refusal explained.
//!
//! As root, each test runs synlab as the plain user SYNLAB_TEST_USER (`.ci/run` creates one;
//! `nobody` otherwise) through setpriv; as anyone else, as that user. Each test runs its own
//! copy of the binary, so "nothing left" looks only at its own processes.

mod lab_support;
mod plain_support;
mod tmux_support;

use plain_support::{plain_user, plain_user_named, run_folder, skip_or_fail};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tmux_support::{have_tmux, tmux, wait_for, Session};

/// The lab tests measure latency to 2 ms: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const TWO_PATHS: &str = r#"
name = "rootless-two-paths"

[target]
arch = "prefork"
workers = 8
max_workers = 8
service = "sleep"
service_time = "10ms"
lingering_close = false
backlog = 16

[load]
mode = "open"
rate = 300
arrivals = "poisson"
sockets = 20000
timeout = "1s"

[probe]
interval = "200ms"

[network]
backend = "auto"

[[network.path]]
name = "lan"
rtt = "0ms"
share = 0.5

[[network.path]]
name = "wan"
rtt = "100ms"
share = 0.5
"#;

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn two_paths_rootless_connect_matches_rtt_syns_by_pcap_queue_fills_nothing_left() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = plain_user() else { return };
    // Below capacity (8 workers x 10 ms = 800/s) for the RTTs and the SYN count, then far
    // past it for the accept queue.
    let sc = p.write(
        "two.toml",
        &format!(
            "{TWO_PATHS}\n[sweep]\nparam = \"load.rate\"\nvalues = [300, 3000]\nwarmup = \"1s\"\nhold = \"4s\"\ncooldown = \"1s\"\n"
        ),
    );
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "rootless run failed: {err}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (dir, s) = p.summary();
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    assert_eq!(s["meta"]["lab"], "rootless (user namespace)", "{log}");

    let below = &s["points"][0];
    for (path, rtt) in [("lan", 0.0), ("wan", 100.0)] {
        let ps = below["paths"].as_array().unwrap();
        let f = ps.iter().find(|x| x["name"] == path).unwrap();
        let p50 = num(f, "connect_p50_ms");
        assert!(
            (p50 - rtt).abs() <= 2.0,
            "path {path}: connect p50 {p50} ms, RTT {rtt} ms\n{log}"
        );
    }
    // Counted by pcap in the server's namespace, not estimated from kernel counters.
    let ts = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut rows = ts.lines();
    let head: Vec<&str> = rows.next().unwrap().split(',').collect();
    let est = head.iter().position(|c| *c == "syn_in_estimated").unwrap();
    let estimated: Vec<&str> = rows
        .filter_map(|r| r.split(',').nth(est))
        .filter(|v| !v.is_empty() && *v != "0")
        .collect();
    assert!(
        estimated.is_empty(),
        "SYN rate estimated, not captured: {estimated:?}\n{log}"
    );
    let (syn, attempts) = (num(below, "syn_in_per_s"), num(below, "attempts_per_s"));
    assert!(
        (syn - attempts).abs() <= attempts * 0.02,
        "SYNs {syn}/s against attempts {attempts}/s\n{log}"
    );

    let over = &s["points"][1];
    assert!(
        num(over, "accept_queue_max") >= 16.0 && num(over, "listen_overflows_per_s") > 0.0,
        "the accept queue did not reach its limit (16) under overload: {over}"
    );
    p.assert_none_left();
}

#[test]
fn sigkill_of_a_rootless_run_leaves_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = plain_user() else { return };
    let sc = p.write(
        "long.toml",
        &TWO_PATHS.replace("rate = 300", "rate = 50").replace(
            "name = \"rootless-two-paths\"",
            "name = \"rootless-two-paths\"\nduration = \"60s\"",
        ),
    );
    let mut child = p
        .synlab(&["run", sc.to_str().unwrap(), "--out", "out", "--no-progress"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // setpriv execs synlab: the child's pid is the controller's. The lab is up before the
    // server and the workers start: wait for them too (controller, router, server, 2 workers).
    let deadline = Instant::now() + Duration::from_secs(30);
    let (up, running) = loop {
        let log = std::fs::read_dir(p.dir.path().join("out"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path().join("run.log")).ok())
            .unwrap_or_default();
        let running = p.processes();
        if (log.contains("network lab") && running.len() >= 5) || Instant::now() > deadline {
            break (log, running);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        up.contains("lab: rootless"),
        "the lab did not come up: {up}"
    );
    assert!(
        running.len() >= 5,
        "expected controller, router, server and two workers: {running:?}\n{up}"
    );
    let left = p.wait_none_left(10);
    assert!(
        left.is_empty(),
        "after SIGKILL of the controller these synlab processes live on (and hold the lab's namespaces): {left:?}"
    );
}

#[test]
fn tui_opens_rootless_and_the_rtt_key_changes_the_path() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !have_tmux() {
        return;
    }
    let Some(p) = plain_user() else { return };
    let sc = p.write(
        "tui.toml",
        "name = \"rootless-tui\"\nduration = \"5m\"\n[load]\nmode = \"open\"\nrate = 200\n\
         [network]\nbackend = \"auto\"\n[[network.path]]\nname = \"wan\"\nrtt = \"20ms\"\n",
    );
    let cmd = p.tui_shell_line(&sc);
    let session = Session::start(&format!("synlab-rootless-{}", std::process::id()), &cmd);
    let screen = wait_for(
        &session.0,
        &|s| s.contains("lab rootless") && s.contains("rtt 20ms"),
        30,
    );
    assert!(
        screen.contains("lab rootless") && screen.contains("rtt 20ms"),
        "the TUI did not come up with its rootless lab:\n{screen}"
    );
    tmux(&["send-keys", "-t", &session.0, "R"]);
    let screen = wait_for(&session.0, &|s| s.contains("rtt 30ms"), 15);
    assert!(
        screen.contains("rtt 30ms"),
        "RTT key had no effect:\n{screen}"
    );
    let screen = session.quit();
    assert!(screen.contains("SYNLAB-EXIT=0"), "{screen}");
    p.assert_none_left();
}

/// The kernel's refusal is explained, naming the setting and the command that lifts it:
/// user.max_user_namespaces = 0 in a throwaway user namespace (the machine's own setting is
/// untouched), then synlab asked for a lab in it.
#[test]
fn a_refused_user_namespace_names_the_sysctl_that_lifts_it() {
    let allowed = Command::new("unshare")
        .args(["-r", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !allowed {
        skip_or_fail("`unshare -r` is refused here, so the refusal cannot be staged in a throwaway namespace");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("lab.toml");
    std::fs::write(
        &sc,
        "name = \"refused\"\nduration = \"2s\"\n[network]\n[[network.path]]\nname = \"wan\"\nrtt = \"20ms\"\n",
    )
    .unwrap();
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec {} run {} --out {} --no-progress",
        env!("CARGO_BIN_EXE_synlab"),
        sc.display(),
        dir.path().join("out").display()
    );
    let out = Command::new("unshare")
        .args(["-r", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("user.max_user_namespaces = 0")
            && err.contains("sudo sysctl -w user.max_user_namespaces="),
        "{err}"
    );
}

const NGINX: &str = r#"
name = "rootless-nginx"
duration = "3s"

[target]
kind = "nginx"
workers = 1
backlog = 511
keepalive = false

[load]
mode = "open"
rate = 200
timeout = "1s"

[network]
backend = "auto"

[[network.path]]
name = "wan"
rtt = "20ms"
"#;

fn installed(path: &str) -> bool {
    Path::new(path).exists()
}

/// nginx and Apache switch their workers to another user, which needs the user's subordinate
/// uid range mapped (newuidmap): then they serve in the rootless lab and their own logs count
/// what the clients counted.
#[test]
fn nginx_runs_in_the_rootless_lab_with_a_subordinate_uid_range() {
    real_server_rootless("nginx", "/usr/sbin/nginx", NGINX);
}

#[test]
fn apache_runs_in_the_rootless_lab_with_a_subordinate_uid_range() {
    let apache = NGINX
        .replace("kind = \"nginx\"", "kind = \"apache\"\nmpm = \"prefork\"")
        .replace("workers = 1", "workers = 8\nmax_workers = 8")
        .replace("rootless-nginx", "rootless-apache");
    real_server_rootless("apache", "/usr/sbin/apache2", &apache);
}

/// nginx over TLS in the rootless lab (issue 30): a line of its log per handshake, and the
/// resumed share asked for, as the clients and as nginx count it.
#[test]
fn nginx_over_tls_runs_in_the_rootless_lab_and_its_log_holds_the_resumed_share() {
    let tls = NGINX
        .replace("keepalive = false", "keepalive = false\ntls = true")
        .replace(
            "timeout = \"1s\"",
            "timeout = \"1s\"\n[load.tls]\nresumed = 0.3",
        )
        .replace("rootless-nginx", "rootless-nginx-tls");
    let Some((log, s)) = real_server_rootless("nginx", "/usr/sbin/nginx", &tls) else {
        return;
    };
    let lines = log.lines().count() as u64;
    let reused = log.lines().filter(|l| l.ends_with(" tls:r")).count() as u64;
    let t = &s["run_totals"]["tls"];
    let (full, resumed) = (t["full"].as_u64().unwrap(), t["resumed"].as_u64().unwrap());
    assert_eq!(full + resumed, lines, "handshakes vs nginx's lines: {t}");
    assert_eq!(t["server_resumed"].as_u64(), Some(reused), "{t}");
    for (what, share) in [
        ("clients", resumed as f64 / lines as f64),
        ("nginx", reused as f64 / lines as f64),
    ] {
        assert!(
            (share - 0.3).abs() <= 0.02,
            "{what}: resumed share {share}: {t}"
        );
    }
}

/// issue 47: Caddy over TLS in the rootless lab (it does not switch users, so it needs no
/// subordinate range): its JSON access log's lines equal the clients' responses.
#[test]
fn caddy_over_tls_runs_in_the_rootless_lab_and_its_log_agrees() {
    let caddy = NGINX
        .replace(
            "kind = \"nginx\"\nworkers = 1\nbacklog = 511\nkeepalive = false",
            "kind = \"caddy\"\ntls = true",
        )
        .replace("rootless-nginx", "rootless-caddy");
    assert!(caddy.contains("kind = \"caddy\"\ntls = true\n"), "{caddy}");
    let Some((log, _)) = real_server_rootless("caddy", "/usr/bin/caddy", &caddy) else {
        return;
    };
    assert!(
        log.lines().all(|l| l.contains("\"proto\":\"HTTP/1.")),
        "synlab's load is HTTP/1.x: {log}"
    );
}

fn real_server_rootless(
    kind: &str,
    bin: &str,
    scenario: &str,
) -> Option<(String, serde_json::Value)> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !installed(bin) || !installed("/usr/bin/newuidmap") {
        skip_or_fail(&format!(
            "{kind} in the rootless lab needs {bin} and newuidmap (the uidmap package)"
        ));
        return None;
    }
    let p = plain_user()?;
    let sc = p.write(&format!("{kind}.toml"), scenario);
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("maps only your own uid") {
        skip_or_fail(&format!(
            "the test user has no subordinate uid range in /etc/subuid ({err})"
        ));
        return None;
    }
    assert!(out.status.success(), "{err}");
    let (dir, s) = p.summary();

    assert_eq!(s["meta"]["lab"], "rootless (user namespace)");
    let log = std::fs::read_to_string(dir.join(format!("{kind}/access.log"))).unwrap();
    let logged = log.lines().count() as u64;
    let t = &s["run_totals"];
    let responses = t["responses"].as_u64().unwrap();
    assert!(responses > 100, "{t}");
    assert_eq!(
        responses, logged,
        "the clients' responses against {kind}'s access log: {t}"
    );
    p.assert_none_left();
    // The run folder goes with the user's folder: its access log is returned.
    Some((log, s))
}

/// Without a subordinate range the rootless lab says what nginx needs instead of starting a
/// server whose workers cannot switch users: before any of the lab is built (no run folder),
/// naming /etc/subuid, and not asking to install newuidmap when it is installed. `check` says
/// the same as a warning.
#[test]
fn nginx_without_a_uid_range_says_what_to_install_and_configure() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !installed("/usr/sbin/nginx") {
        skip_or_fail("needs the nginx package");
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        synlab::sys::privilege::say_skipped(
            "skipped: needs root, to run synlab as `nobody`, a user with no subordinate uid range",
        );
        return;
    }
    let has_range = |f: &str| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with("nobody:") || l.starts_with("65534:"))
    };
    if has_range("/etc/subuid") {
        synlab::sys::privilege::say_skipped("skipped: nobody has a subordinate uid range here");
        return;
    }
    let Some(p) = plain_user_named("nobody") else {
        return;
    };
    let sc = p.write("nginx.toml", NGINX);
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nginx cannot run in this rootless lab")
            && err.contains("/etc/subuid gives nobody no range of 65,536 ids")
            && err.contains("usermod --add-subuids 100000-165535 nobody")
            && err.contains("/etc/subgid gives nobody no range"),
        "{err}"
    );
    let tools = installed("/usr/bin/newuidmap") && installed("/usr/bin/newgidmap");
    assert_eq!(err.contains("apt install uidmap"), !tools, "{err}");
    assert!(
        !p.dir.path().join("out").exists(),
        "a run folder was made: the lab was started before the refusal\n{err}"
    );
    let out = p.synlab(&["check", sc.to_str().unwrap()]).output().unwrap();
    let warned = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{warned}");
    assert!(
        warned.contains("nginx.toml: run as this user, nginx cannot run in its rootless lab")
            && warned.contains("/etc/subuid gives nobody no range"),
        "{warned}"
    );
    p.assert_none_left();
}

/// Rootless, the server gets its own CPU and its receive processing is steered to it (the
/// namespace's default RPS mask, which its owner may set): the same checks as the root run's,
/// from two runs in this test, since a rootless lab cannot change its steering during a run,
/// and says so when a scenario asks it to.
#[test]
fn rootless_steering_charges_the_servers_cpus() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = plain_user() else { return };
    if synlab::sys::machine::online_cpus().len() < 2 {
        synlab::sys::privilege::say_skipped(
            "skipped: one CPU, the server cannot get CPUs of its own",
        );
        return;
    }
    let scenario =
        |steer: &str, values: &str| lab_support::steer_scenario(steer, steer, values, "");
    let run = |steer: &str, values: &str| -> serde_json::Value {
        let sc = p.write(&format!("{steer}.toml"), &scenario(steer, values));
        let out = p
            .synlab(&["run", sc.to_str().unwrap(), "--out", steer, "--no-progress"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{steer}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = run_folder(&p.dir.path().join(steer));
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
    };
    let server = run("server", "[300, 1500]");
    let sender = run("sender", "[1500]");
    assert_eq!(server["meta"]["lab"], "rootless (user namespace)");
    let cpus = &server["meta"]["cpus"];
    assert!(cpus["steer_refused"].is_null(), "{cpus}");
    assert_eq!(cpus["steer"], "server", "{cpus}");
    lab_support::check_steering(
        lab_support::point(&server, "300", "server"),
        lab_support::point(&server, "1500", "server"),
        lab_support::point(&sender, "1500", "sender"),
    );
    // Changing it during the run is refused before the lab is built, with the kernel's why.
    let live = format!(
        "{}steer = [\"server\", \"sender\"]\n",
        scenario("server", "[1500]")
    );
    let out = p.run(&p.write("live.toml", &live));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot change its receive steering during a run"),
        "{err}"
    );
    p.assert_none_left();
}
