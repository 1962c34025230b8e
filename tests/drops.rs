//! The drops group (issue 48 item 1) on the real kernel: a listener with backlog 16 that never
//! accepts, flooded in a private netns. The group's "accept queue full" rate, summed over the
//! samples, must equal the namespace's own ListenOverflows change, and the report's "what the
//! kernel dropped, and why" must name it first.

mod probe_support;

use probe_support::{connect_nonblocking, privileged, Netns, RawListener};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};
use synlab::model::col;
use synlab::model::drops::{DropReason, DROP_REASONS};
use synlab::probe::procnet::NetCounters;
use synlab::probe::{spawn, ProbeConfig, ProbeSample};
use synlab::report::read::{Cell, Point};

/// Keeps up to 64 attempts open, each closed after 200 ms (before the first SYN retry).
fn blast(port: u16, for_: Duration) -> u64 {
    let to = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let end = Instant::now() + for_;
    let mut open: std::collections::VecDeque<(i32, Instant)> = Default::default();
    let mut attempts = 0;
    while Instant::now() < end {
        while open
            .front()
            .is_some_and(|(_, t)| t.elapsed() >= Duration::from_millis(200))
        {
            let (fd, _) = open.pop_front().unwrap();
            unsafe { libc::close(fd) };
        }
        if open.len() < 64 {
            if let Some(fd) = connect_nonblocking(to) {
                attempts += 1;
                open.push_back((fd, Instant::now()));
            }
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    for (fd, _) in open {
        unsafe { libc::close(fd) };
    }
    attempts
}

/// The namespace's ListenOverflows, read by a thread inside it (thread-self: this thread's
/// namespace, not the process's).
fn overflows(ns: &Netns) -> u64 {
    let c = ns.run(|| {
        let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
        NetCounters::parse(&snmp, &netstat).unwrap()
    });
    c.counter("TcpExt.ListenOverflows").unwrap()
}

#[test]
fn accept_queue_full_rate_adds_up_to_listen_overflows_and_leads_the_report() {
    if !privileged("drops test") {
        return;
    }
    let ns = Netns::new();
    let listener = ns.run(|| RawListener::new(16));
    let port = listener.port;
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut cfg = ProbeConfig::new(port);
    cfg.netns = Some(ns.0.clone());
    let handle = spawn(cfg, tx).expect("probes start");
    let first: ProbeSample = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let before = overflows(&ns);

    let blasters: Vec<_> = (0..2)
        .map(|_| ns.spawn(move || blast(port, Duration::from_secs(2))))
        .collect();
    let attempts: u64 = blasters.into_iter().map(|b| b.join().unwrap()).sum();
    assert!(
        attempts > 500,
        "only {attempts} attempts: the blast did not run"
    );
    // Every client is closed: once the counter stops moving, a sample taken after that reads
    // its final value.
    let mut samples = vec![first];
    let mut settled = 0;
    while settled < 2 {
        let s: ProbeSample = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        settled = if s.m.listen_overflows_per_s == Some(0.0) {
            settled + 1
        } else {
            0
        };
        samples.push(s);
        assert!(samples.len() < 200, "the overflows never stopped");
    }
    let after = overflows(&ns);
    drop(handle);

    let counted: f64 = samples
        .iter()
        .filter_map(|s| {
            let r = DropReason::of_col(col::LISTEN_OVERFLOWS).unwrap();
            Some(s.m.get(r.col)? * s.dt_s?)
        })
        .sum();
    let kernel = (after - before) as f64;
    eprintln!("attempts {attempts}, ListenOverflows +{kernel}, drops group's accept queue full summed {counted:.1}");
    assert!(kernel > 0.0, "the kernel counted no overflow");
    assert!(
        (counted - kernel).abs() < 0.5,
        "accept queue full summed over the samples {counted} vs ListenOverflows +{kernel}"
    );

    // The report of this run as one point: each reason's mean rate over the samples, as the
    // lab's summary takes it.
    let rated: Vec<&ProbeSample> = samples.iter().filter(|s| s.dt_s.is_some()).collect();
    let mut row = BTreeMap::new();
    row.insert("point".to_string(), Cell::Num(1.0));
    for r in DROP_REASONS {
        let mean = rated.iter().filter_map(|s| s.m.get(r.col)).sum::<f64>() / rated.len() as f64;
        row.insert(r.col.name().to_string(), Cell::Num(mean));
    }
    let md = synlab::report::markdown::drops_table(&[Point(row)]);
    let line = md.lines().find(|l| l.starts_with("| 1 |")).expect(&md);
    assert!(
        line.starts_with("| 1 | accept queue full: SYN or handshake's final ACK dropped "),
        "{md}"
    );
}

/// The plain user to run synlab as (root runs it through setpriv), with its own copy of the
/// binary; None (skipped, or a panic under SYNLAB_REQUIRE_PRIVILEGED) where there is none.
fn plain_user() -> Option<(Vec<String>, tempfile::TempDir)> {
    let name = std::env::var("SYNLAB_TEST_USER").unwrap_or_else(|_| "nobody".into());
    if !nix::unistd::geteuid().is_root() {
        let why = "needs root, to run synlab as a plain user against a root-owned listener";
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
    std::fs::copy(env!("CARGO_BIN_EXE_synlab"), dir.path().join("synlab")).unwrap();
    let prefix = vec![
        "setpriv".into(),
        format!("--reuid={}", u.uid),
        format!("--regid={}", u.gid),
        "--clear-groups".into(),
        dir.path().join("synlab").display().to_string(),
    ];
    Some((prefix, dir))
}

/// Rootless: a plain user's `synlab probe --json` of a flooded root-owned listener on the
/// host reads the drops group from the namespace's counters, "accept queue full" above zero.
/// (The host namespace is shared with whatever else runs: only "above zero" is asserted.)
#[test]
fn a_plain_user_sees_the_drops_by_reason() {
    let Some((prefix, _dir)) = plain_user() else {
        return;
    };
    let listener = RawListener::new(16);
    let port = listener.port;
    let mut probe = std::process::Command::new(&prefix[0])
        .args(&prefix[1..])
        .args([
            "probe",
            "--json",
            "--count",
            "12",
            "--port",
            &port.to_string(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The flood starts once the probe has taken its first sample (its baseline), so the
    // samples after it see the flood however long the probe took to start.
    let mut stdout = std::io::BufReader::new(probe.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    lines.push(first);
    let attempts = blast(port, Duration::from_secs(2));
    lines.extend(std::io::BufRead::lines(stdout).map(Result::unwrap));
    let out = probe.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let samples: Vec<serde_json::Value> = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect(l))
        .collect();
    let full: Vec<f64> = samples
        .iter()
        .filter_map(|s| s["netns"]["drops"]["accept_queue_full"].as_f64())
        .collect();
    eprintln!("attempts {attempts}, accept_queue_full/s per sample {full:?}");
    assert!(
        attempts > 100,
        "only {attempts} attempts: the blast did not run"
    );
    assert!(full.len() + 1 >= samples.len(), "{samples:?}");
    assert!(full.iter().any(|v| *v > 0.0), "{samples:?}");
    for r in DROP_REASONS {
        assert!(
            samples[1]["netns"]["drops"][r.short].is_number(),
            "{} in {}",
            r.short,
            samples[1]
        );
    }
    drop(listener);
}
