//! issue 47's counts over HTTP/3 held against each other in the lab: pcap's first QUIC
//! Initials against the clients' attempts (a worker's one UDP socket carries many attempts at
//! once), a target that does not answer QUIC refused at start-up by the controller, and Caddy
//! over HTTP/3 in the rootless lab.

mod lab_support;
mod plain_support;

use std::sync::Mutex;
use synlab::lab::controller::Controller;
use synlab::lab::knobs::Command;
use synlab::model::col;

/// One lab at a time in this file: "nothing left" looks at this process's children.
static SERIAL: Mutex<()> = Mutex::new(());

/// S-Client slots over HTTP/3 against the built-in server: every attempt is a new QUIC
/// connection, several in their handshakes at once on each worker's socket.
const SCLIENT_H3: &str = r#"
name = "h3-initials"
duration = "60s"
[target]
arch = "event"
tls = true
http3 = true
[load]
mode = "sclient"
rate = 400
sockets = 2000
timeout = "1s"
http = "3"
[[load.mix]]
path = "/bytes/100"
[network]
backend = "auto"
[[network.path]]
name = "wan"
rtt = "4ms"
"#;

/// pcap's first Initials and all its Initials, and the clients' attempts, once every attempt
/// has ended (paused, drained) and the capture has caught up.
fn settled(c: &mut Controller) -> (f64, f64, u64) {
    c.apply(Command::Pause(true)).into_result().unwrap();
    // T = 1 s bounds every attempt; the capture publishes within 50 ms, rows every 200 ms.
    lab_support::run_for(c, 1.8);
    let store = &c.core().state().store;
    let first = store
        .last(col::QUIC_FIRST_INITIAL_TOTAL)
        .expect("pcap's first Initials in the store");
    let all = store.last(col::QUIC_INITIAL_IN_TOTAL).unwrap();
    (first, all, c.core().run_counts().attempts)
}

/// Between two settled instants pcap's first Initials equal the attempts exactly: each
/// attempt's later Initials (the client's second flight with its ACKs, PTO retransmissions)
/// are counted apart as repeats, though many attempts share one 4-tuple. Before the fix the
/// tracker kept one connection ID per 4-tuple and counted +29 % at 250/s, +54 % at 8,000/s.
#[test]
fn pcap_first_initials_equal_the_attempts_and_repeats_are_apart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !lab_support::privileged() {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("h3-initials.toml", SCLIENT_H3).unwrap();
    let mut c = Controller::start(sc, lab_support::opts(None)).unwrap();
    // From a settled start (the start-up QUIC check came before the capture; the workers'
    // first attempts may come before the capture's first sample) to a settled end.
    let (f0, a0, n0) = settled(&mut c);
    c.apply(Command::Pause(false)).into_result().unwrap();
    lab_support::run_for(&mut c, 3.0);
    let (f1, a1, n1) = settled(&mut c);
    let dropped = c.core().state().store.last(col::PCAP_DROPS).unwrap_or(0.0);
    c.shutdown().unwrap();
    let (first, all, attempts) = (f1 - f0, a1 - a0, (n1 - n0) as f64);
    assert!(
        attempts >= 500.0,
        "only {attempts} attempts in 3 s at 400/s"
    );
    assert_eq!(dropped, 0.0, "the capture itself dropped packets");
    assert_eq!(
        first, attempts,
        "pcap's first Initials vs the clients' attempts ({all} Initials in all)"
    );
    // An attempt's later Initials (most handshakes' second flight acknowledges the server's
    // Initial in one: 828 of 1,172 in a run here) are counted, apart from the first ones.
    assert!(
        all > first,
        "{all} Initials, {first} first: the later ones are not counted apart"
    );
}

/// Live (not zombie) processes whose parent is this test process, as "pid (name)".
fn children() -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid ...: the fields after the last ')'.
            let rest: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(vec![], |(_, r)| r.split_whitespace().collect());
            rest.len() > 1 && rest[0] != "Z" && rest[1] == me
        })
        // "pid (name)": what stays the same while it runs.
        .filter_map(|stat| Some(format!("{})", stat.rsplit_once(')')?.0)))
        .collect()
}

/// A built-in server answering TLS over TCP only (http3 off after the scenario was checked,
/// as a target that stopped serving QUIC would be): the controller refuses the run at
/// start-up with what is wrong and what to do, and nothing it started is left.
#[test]
fn a_target_without_quic_is_refused_at_start_and_nothing_is_left() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    // On loopback (no [network]): the same check, runnable by anyone.
    let toml = SCLIENT_H3
        .split("[network]")
        .next()
        .unwrap()
        .replace("duration = \"60s\"", "duration = \"2s\"");
    let mut sc = synlab::scenario::parse("no-quic.toml", &toml).unwrap();
    sc.target.http3 = false;
    let before = children();
    let err = match Controller::start(sc, lab_support::opts(None)) {
        Ok(c) => {
            drop(c);
            panic!("a target without QUIC was loaded over HTTP/3");
        }
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains("does not answer QUIC on UDP port")
            && err.contains("serve HTTP/3 there (built-in: http3 = true"),
        "{err}"
    );
    let left: Vec<String> = children()
        .into_iter()
        .filter(|c| !before.contains(c))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Caddy over HTTP/3 in the rootless lab, as the plain CI user: Caddy's JSON access log has a
/// line for each of the clients' responses, every one of them HTTP/3.
#[test]
fn rootless_caddy_over_http3_logs_every_response() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !std::path::Path::new("/usr/bin/caddy").exists() {
        synlab::sys::privilege::skip_unless_required("Caddy is not installed (/usr/bin/caddy)");
        return;
    }
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write(
        "caddy-h3.toml",
        r#"
name = "rootless-caddy-h3"
duration = "3s"
[target]
kind = "caddy"
tls = true
[load]
mode = "open"
rate = 100
connections = 2
http = "3"
streams = 4
[network]
backend = "auto"
[[network.path]]
name = "wan"
rtt = "10ms"
"#,
    );
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (dir, s) = p.summary();
    assert_eq!(s["meta"]["lab"], "rootless (user namespace)", "{err}");
    let log = std::fs::read_to_string(dir.join("caddy/access.log")).unwrap();
    let responses = s["run_totals"]["responses"].as_u64().unwrap();
    assert!(responses > 100, "{}", s["run_totals"]);
    assert_eq!(
        log.lines().count() as u64,
        responses,
        "Caddy's log lines vs the clients' responses"
    );
    assert!(
        log.lines().all(|l| l.contains("\"proto\":\"HTTP/3")),
        "a line not over HTTP/3: {log}"
    );
    // The connections' handshakes were before the hold: QUIC's traffic shows in it.
    assert!(
        s["points"][0]["quic_packets_recv_per_s"]
            .as_f64()
            .is_some_and(|f| f > 0.0),
        "{}",
        s["points"][0]
    );
    p.assert_none_left();
}
