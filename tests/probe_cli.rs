//! `synlab probe` says whose each figure is. A port with no traffic next to a busy one in the
//! same namespace: the port's SYNs, sockets and TIME_WAIT are its own (held against `ss`, read
//! by the test), the namespace's counters and TIME_WAIT are grouped as the namespace's, in the
//! JSON and under the table's group headers. As root (pcap, a private namespace); and as a
//! plain user against a root-owned server on the host, where the SYN rate is the namespace's
//! estimate, srv%cpu and procs are "-" with the reason, and --pid, which cannot enter a root
//! process's namespace, is refused with the --port to use instead.

mod probe_support;

use probe_support::{privileged, Netns};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_synlab");

/// Sockets of `port` in `state` as `ss` counts them, run in `netns` (None: the host's).
fn ss_count(netns: Option<&str>, state: &str, port: u16) -> usize {
    let mut c = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "ss"]);
            c
        }
        None => Command::new("ss"),
    };
    let filter = format!("( sport = :{port} )");
    let out = c.args(["-Htan", "state", state, &filter]).output().unwrap();
    assert!(out.status.success(), "ss failed");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Every TIME_WAIT socket of a namespace, as `ss` counts them.
fn ss_all_time_wait(netns: &str) -> usize {
    let out = Command::new("ip")
        .args(["netns", "exec", netns, "ss", "-Htan", "state", "time-wait"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// `n` connections to `l` that the server closes first: `n` TIME_WAIT sockets on its port.
fn server_closed(l: &TcpListener, n: usize) {
    let port = l.local_addr().unwrap().port();
    for _ in 0..n {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        drop(l.accept().unwrap().0);
        let mut b = [0u8; 1];
        let _ = c.read(&mut b);
    }
}

/// `n` connections to `l` held open (both ends).
fn held(l: &TcpListener, n: usize) -> Vec<(TcpStream, TcpStream)> {
    let port = l.local_addr().unwrap().port();
    (0..n)
        .map(|_| {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            (c, l.accept().unwrap().0)
        })
        .collect()
}

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_idle_port_is_told_from_its_busy_namespace() {
    if !privileged("a private netns and pcap") {
        return;
    }
    let ns = Netns::new();
    // Port A: idle, 3 connections held, 4 TIME_WAIT. Port B: busy during the probe.
    let (idle, busy, conns) = ns.run(|| {
        let idle = TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = TcpListener::bind("127.0.0.1:0").unwrap();
        server_closed(&idle, 4);
        server_closed(&busy, 50);
        let conns = held(&idle, 3);
        (idle, busy, conns)
    });
    let a = idle.local_addr().unwrap().port();
    std::thread::sleep(Duration::from_millis(100));
    let tw_a = ss_count(Some(&ns.0), "time-wait", a);
    let est_a = ss_count(Some(&ns.0), "established", a);
    let tw_all_before = ss_all_time_wait(&ns.0);
    // Traffic on B for as long as the probe runs.
    let load = ns.spawn(move || {
        let end = Instant::now() + Duration::from_millis(2500);
        while Instant::now() < end {
            server_closed(&busy, 10);
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let out = Command::new(BIN)
        .args([
            "probe",
            "--json",
            "--count",
            "8",
            "--interval",
            "200ms",
            "--netns",
        ])
        .arg(&ns.0)
        .args(["--port", &a.to_string()])
        .output()
        .unwrap();
    load.join().unwrap();
    let tw_all_after = ss_all_time_wait(&ns.0);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ss_count(Some(&ns.0), "time-wait", a),
        tw_a,
        "port A's TIME_WAIT moved"
    );
    let samples = json_lines(&out.stdout);
    assert_eq!(samples.len(), 8);
    let mut namespace_opens = 0.0f64;
    for s in &samples {
        assert_eq!(s["syn_source"], "pcap", "{s}");
        assert_eq!(s["port"]["port"], a);
        if !s["dt_s"].is_null() {
            assert_eq!(s["port"]["syn_in_per_s"], 0.0, "port A had no SYN: {s}");
        }
        namespace_opens =
            namespace_opens.max(s["netns"]["passive_opens_per_s"].as_f64().unwrap_or(0.0));
        if let Some(tw) = s["port"]["time_wait"].as_f64() {
            assert_eq!(tw as usize, tw_a, "the port's TIME_WAIT against ss: {s}");
            assert_eq!(
                s["port"]["established"].as_f64().unwrap() as usize,
                est_a,
                "{s}"
            );
        }
        let ns_tw = s["netns"]["time_wait"].as_f64().unwrap() as usize;
        assert!(
            (tw_all_before..=tw_all_after).contains(&ns_tw),
            "the namespace's TIME_WAIT {ns_tw} against ss {tw_all_before}..{tw_all_after}"
        );
        assert!(
            s["machine"]["cpu_idle_pct"].is_number() || s["dt_s"].is_null(),
            "{s}"
        );
        assert!(s["port"].get("tcp_orphan").is_none() && s["machine"].get("tcp_orphan").is_some());
    }
    assert!(
        samples.iter().any(|s| s["port"]["time_wait"].is_number()),
        "no sample walked the port's states"
    );
    assert!(
        namespace_opens > 50.0,
        "port B's load did not show in the namespace: {namespace_opens}"
    );
    assert!(
        tw_a == 4 && est_a == 3,
        "ss: {tw_a} TIME_WAIT, {est_a} ESTABLISHED on port A"
    );
    assert!(
        tw_all_after > tw_a + 50,
        "ss: the namespace holds B's TIME_WAIT too"
    );

    // The table: the port's columns under its own header, the namespace's under its own.
    let out = Command::new(BIN)
        .args(["probe", "--count", "2", "--netns"])
        .arg(&ns.0)
        .args(["--port", &a.to_string()])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let groups = table.lines().next().unwrap();
    assert!(
        groups.contains(&format!(" port {a} ")) && groups.contains(" netns: all ports "),
        "{table}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("figures by owner: port {a} = its packets (pcap)")),
        "{err}"
    );
    drop((conns, idle));
}

/// The plain user to run synlab as (root runs it through setpriv), with its own copy of the
/// binary; None (skipped) where there is none.
fn plain_user() -> Option<(Vec<String>, tempfile::TempDir)> {
    let name = std::env::var("SYNLAB_TEST_USER").unwrap_or_else(|_| "nobody".into());
    if !nix::unistd::geteuid().is_root() {
        // Already a plain user: the root-owned server below cannot be made.
        let why = "needs root, to hold a root-owned server for a plain user to probe";
        if synlab::sys::privilege::require_privileged() {
            panic!("{why}");
        }
        synlab::sys::privilege::say_skipped(&format!("skipped: {why}"));
        return None;
    }
    let u = nix::unistd::User::from_name(&name).ok().flatten()?;
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(BIN, dir.path().join("synlab")).unwrap();
    let prefix = vec![
        "setpriv".into(),
        format!("--reuid={}", u.uid),
        format!("--regid={}", u.gid),
        "--clear-groups".into(),
        dir.path().join("synlab").display().to_string(),
    ];
    Some((prefix, dir))
}

#[test]
fn a_plain_user_probing_a_root_server_is_told_what_it_cannot_see() {
    let Some((prefix, _dir)) = plain_user() else {
        return;
    };
    let run = |args: &[&str]| {
        Command::new(&prefix[0])
            .args(&prefix[1..])
            .args(args)
            .output()
            .unwrap()
    };
    // A root-owned server on the host: 2 TIME_WAIT and 2 connections on its port.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    server_closed(&l, 2);
    let conns = held(&l, 2);
    std::thread::sleep(Duration::from_millis(100));
    let (tw, est) = (
        ss_count(None, "time-wait", port),
        ss_count(None, "established", port),
    );
    let out = run(&[
        "probe",
        "--json",
        "--count",
        "4",
        "--port",
        &port.to_string(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "srv%cpu and procs are \"-\": port {port}'s socket belongs to uid 0 (root)"
        )) && err.contains("run the probe as root"),
        "{err}"
    );
    let samples = json_lines(&out.stdout);
    for s in &samples {
        assert_eq!(s["syn_source"], "estimated", "{s}");
        // The estimate is the namespace's, never the port's.
        assert!(s["port"].get("syn_in_per_s").is_none(), "{s}");
        assert!(s["netns"].get("syn_in_estimate_per_s").is_some(), "{s}");
        assert_eq!(s["server"]["pid"], serde_json::Value::Null);
        if let Some(t) = s["port"]["time_wait"].as_f64() {
            assert_eq!(t as usize, tw, "the port's TIME_WAIT against ss: {s}");
            assert_eq!(
                s["port"]["established"].as_f64().unwrap() as usize,
                est,
                "{s}"
            );
        }
    }
    assert!(samples.iter().any(|s| s["port"]["time_wait"].is_number()));
    assert_eq!((tw, est), (2, 2));
    // The table puts the estimate under the namespace's header, marked *.
    let out = run(&["probe", "--count", "2", "--port", &port.to_string()]);
    let table = String::from_utf8_lossy(&out.stdout);
    let mut lines = table.lines();
    let (groups, heads) = (lines.next().unwrap(), lines.next().unwrap());
    let netns_at = groups.find(" netns: all ports ").expect("a netns group");
    let star = heads.find("syn/s*").expect("the estimate's column");
    assert!(star > netns_at.saturating_sub(10), "{table}");

    // --pid of a root process: its namespace cannot be entered; --port is the way.
    let out = run(&[
        "probe",
        "--count",
        "1",
        "--pid",
        &std::process::id().to_string(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "cannot enter the network namespace of pid {}",
            std::process::id()
        )) && err
            .contains("probe it by its port instead: `synlab probe --port PORT` (without --pid)"),
        "{err}"
    );
    drop((conns, l));
}
