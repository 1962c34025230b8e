//! A worker's notices arrive typed (a refused control line, a bad-response reason), and bad
//! responses name their reason end to end: a worker against servers that answer garbage or
//! close mid-response counts them by reason and says each reason once over its protocol; a lab
//! run whose every response is garbage fails its point naming the cause, with the reasons in
//! summary.json.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::Duration;
use synlab::load::protocol::{StatsDelta, WorkerConfig, WorkerNotice};
use synlab::model::BadReason;

mod totals_support;
mod worker_support;

/// A server whose threads read a request and answer `reply`, then close.
fn server(reply: &'static [u8]) -> SocketAddr {
    worker_support::responder(2, Duration::ZERO, reply)
}

fn config(target: SocketAddr) -> WorkerConfig {
    WorkerConfig {
        id: 3,
        rate: Some(200.0),
        sockets: 100,
        duration_s: 0.6,
        ..worker_support::config(target)
    }
}

/// Every stats line of a worker run against `target` until its last (its duration bounds it).
fn run_worker(target: SocketAddr) -> Vec<StatsDelta> {
    run_worker_told(target, &[])
}

/// As `run_worker`, with these control lines written to its stdin at the start.
fn run_worker_told(target: SocketAddr, lines: &[String]) -> Vec<StatsDelta> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args([
            "worker",
            "--config-json",
            &serde_json::to_string(&config(target)).unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn synlab worker");
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut v = Vec::new();
    for line in out.lines() {
        let d: StatsDelta = serde_json::from_str(&line.unwrap()).unwrap();
        let last = d.last;
        v.push(d);
        if last {
            break;
        }
    }
    assert!(child.wait().unwrap().success());
    assert!(v.last().is_some_and(|d| d.last), "no final stats line");
    v
}

/// The bad responses of a worker run: (count, by reason, the typed notices about them).
fn bad_of(v: &[StatsDelta]) -> (u64, synlab::model::BadReasons, Vec<WorkerNotice>) {
    let mut c = synlab::model::Counters::default();
    for d in v {
        c.add(&d.counts);
    }
    assert_eq!(c.responses, 0, "no response was whole");
    let notices = v
        .iter()
        .flat_map(|d| d.notices.iter().cloned())
        .filter(|n| matches!(n, WorkerNotice::BadResponses { .. }))
        .collect();
    (c.bad_responses, c.bad_by_reason, notices)
}

#[test]
fn garbage_is_counted_as_not_http_and_said_once_typed() {
    let (bad, by, notices) = bad_of(&run_worker(server(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")));
    assert!(bad >= 50, "{bad} bad responses");
    assert_eq!(by.not_http, bad, "{by:?}");
    assert_eq!(by.top(), Some((BadReason::NotHttp, bad)));
    assert_eq!(
        notices,
        [WorkerNotice::BadResponses {
            reason: BadReason::NotHttp,
            words: "status line is not HTTP/1.x".into()
        }]
    );
}

#[test]
fn a_body_cut_short_is_counted_as_closed() {
    let cut = b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\nonly this";
    let (bad, by, notices) = bad_of(&run_worker(server(cut)));
    assert!(bad >= 50, "{bad} bad responses");
    assert_eq!(by.closed, bad, "{by:?}");
    assert_eq!(
        notices,
        [WorkerNotice::BadResponses {
            reason: BadReason::Closed,
            words: "connection closed in the middle of a response".into()
        }]
    );
}

/// A control line that is not one, and settings the worker cannot take: each said, typed.
#[test]
fn a_refused_control_is_said_typed() {
    use synlab::load::notice::Refusal;
    use synlab::load::protocol::{Control, LoadSettings};
    let target = server(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
    let mut settings = LoadSettings::of(&config(target));
    settings.sockets = 0;
    let lines = [
        "{\"cmd\":\"dance\"}".to_string(),
        serde_json::to_string(&Control::Load(settings)).unwrap(),
    ];
    let v = run_worker_told(target, &lines);
    let notices: Vec<&WorkerNotice> = v.iter().flat_map(|d| &d.notices).collect();
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, WorkerNotice::BadControl { line, .. } if line == &lines[0])),
        "{notices:?}"
    );
    let refused = WorkerNotice::ControlRefused {
        why: Refusal::NoSockets,
    };
    assert!(notices.contains(&&refused), "{notices:?}");
    assert_eq!(
        refused.to_string(),
        "control refused: sockets must be >= 1, got 0"
    );
}

/// A lab run against a server that answers every request with bytes that are not HTTP: the
/// point fails naming the cause, summary.json counts the bad responses by reason and keeps the
/// workers' notice once.
#[test]
fn a_run_whose_every_response_is_garbage_names_the_cause() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    // Bounded by `stop`.
    let garbage = std::thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                    let mut buf = [0u8; 2048];
                    let _ = s.read(&mut buf);
                    let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\r\n");
                }
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    });
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let toml = format!(
        "duration = \"2s\"\n[target]\nkind = \"address\"\naddress = \"127.0.0.1:{port}\"\n\n[load]\nmode = \"open\"\nrate = 100\narrivals = \"constant\"\ntimeout = \"500ms\"\n"
    );
    let tmp = tempfile::tempdir().unwrap();
    let sc = synlab::scenario::parse("garbage.toml", &toml).unwrap_or_else(|e| panic!("{e}"));
    let opts = synlab::lab::controller::RunOptions {
        out_parent: Some(tmp.path().to_path_buf()),
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    };
    let ran = synlab::lab::run::run_scenario(sc, opts, false);
    stop.store(true, Ordering::Relaxed);
    garbage.join().unwrap();
    let (dir, rows, _) = ran.unwrap();
    let why = &rows[0].error;
    assert!(rows[0].failed, "{rows:?}");
    assert!(
        why.contains("no response was a complete HTTP response: the server's answers are not HTTP"),
        "{why}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.unwrap().join("summary.json")).unwrap())
            .unwrap();
    let totals = &summary["points"][0]["totals"];
    totals_support::assert_identities(totals);
    let requests = &totals["requests"];
    let bad = requests["errors_by_kind"]["bad_responses"]
        .as_u64()
        .unwrap();
    assert!(bad > 50, "{requests}");
    assert_eq!(
        requests["bad_responses_by_reason"]["not_http"], bad,
        "{requests}"
    );
    let notices = summary["meta"]["notices"].as_array().unwrap();
    let said: Vec<&serde_json::Value> = notices
        .iter()
        .filter(|n| n.as_str().is_some_and(|n| n.starts_with("bad responses: ")))
        .collect();
    assert_eq!(
        said,
        [&serde_json::Value::from(
            "bad responses: status line is not HTTP/1.x: the server's answers are not HTTP (is the target an HTTP server on this port? try curl -v) (counted in bad_responses)"
        )],
        "said once whatever the workers: {notices:?}"
    );
}
