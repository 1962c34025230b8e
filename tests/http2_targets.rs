//! issue 46: nginx and Apache with HTTP/2 as the lab writes them (`load.http = "2"`): loaded by
//! h2load (an independent HTTP/2 client) the log lines whose protocol is HTTP/2 equal h2load's
//! succeeded requests, the kernel's established connections on the server's port equal
//! h2load's `-c`, the advertised stream limit reads back; loaded by synlab's own engine in the
//! lab (root and rootless) every request is an HTTP/2 log line; and a target that does not
//! speak HTTP/2 is refused at start with the reason (exit 2).

mod lab_support;
mod plain_support;
mod probe_support;

use lab_support::{opts, real_server_installed as installed};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use synlab::lab::controller::Controller;
use synlab::lab::real_server::RealServer;
use synlab::probe::accesslog::{Listener, StatusCounts};
use synlab::probe::speaks_h2;
use synlab::scenario::TargetKind;
use synlab::sys::sockdiag::{state, states_mask, SockDiag};

fn h2load_installed() -> bool {
    let ok = Command::new("h2load")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        synlab::sys::privilege::skip_unless_required(
            "h2load is not installed (Debian package nghttp2-client)",
        );
    }
    ok
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_listening(addr: SocketAddr) {
    let t0 = Instant::now();
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{addr} never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// h2load's "requests: N total, N started, N done, S succeeded, ..." line: S.
fn succeeded(out: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with("requests:"))
        .unwrap_or_else(|| panic!("no requests line in\n{out}"));
    let at = line.find(" succeeded").unwrap();
    line[..at].rsplit(' ').next().unwrap().parse().unwrap()
}

/// The server's ESTABLISHED sockets on `port` (this namespace), as the kernel view reads them.
fn established(port: u16) -> usize {
    let mut d = SockDiag::open().unwrap();
    d.dump(states_mask(&[state::ESTABLISHED]), port)
        .unwrap()
        .len()
}

/// The JSON object under `v` (at any depth) that has the key `key`.
fn find<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    let o = v.as_object()?;
    if o.contains_key(key) {
        return Some(v);
    }
    o.values().find_map(|c| find(c, key))
}

/// `kind` on loopback with HTTP/2 in the clear (h2c), as the lab writes its config; h2load
/// with `conns` connections x 10 streams for 3 s: established connections during the load,
/// and after it, the log's HTTP/2 lines against h2load's succeeded requests.
fn h2c_counts(kind: &str, extra: &str, want_streams: u32) {
    let conns = 8;
    let sc = synlab::scenario::parse(
        "h2.toml",
        &format!(
            "[target]\nkind = \"{kind}\"\nworkers = 2\n{extra}[load]\nhttp = \"2\"\nstreams = 10\n"
        ),
    )
    .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let real = RealServer::prepare(&sc, addr, None, None).unwrap();
    let mut server = real.start(None, Vec::new()).unwrap();
    wait_listening(addr);
    let h2 = speaks_h2::check(addr, None, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{kind} with the lab's HTTP/2 config: {e}"));
    assert_eq!(h2.tls, None);
    assert_eq!(
        h2.settings.max_concurrent_streams,
        Some(want_streams),
        "{kind}'s advertised stream limit: {h2}"
    );
    let url = format!("http://{addr}/bytes/1294");
    let h2load = |args: &[&str], url: &str| {
        Command::new("h2load")
            .args(["-c", &conns.to_string(), "-m", "10"])
            .args(args)
            .arg(url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // A timed load holds its connections open: the kernel's view of them while it runs, as
    // `synlab probe` samples it (the established connections' count, queues, retransmissions).
    // Paced (20 requests/s per connection) so that no connection reaches the server's
    // keep-alive request limit (nginx 1000, Apache 100) and closes while it is sampled.
    let mut timed = h2load(&["-D", "4", "--rps", "20"], &url);
    // The probe starts once all of them are open: its first sample walks the socket states at
    // once, and on a machine whose socket table is large (earlier tests' TIME_WAIT) the next
    // walk is seconds later (the walks' CPU budget), after the probe's 2.4 s: a first walk
    // taken while h2load was still connecting was the only one (CI saw 7 of 8).
    let opened = Instant::now() + Duration::from_secs(3);
    while established(addr.port()) < conns && Instant::now() < opened {
        std::thread::sleep(Duration::from_millis(20));
    }
    let probe = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args([
            "probe",
            "--port",
            &addr.port().to_string(),
            "--json",
            "--no-pcap",
        ])
        .args(["--interval", "200ms", "--count", "12"])
        .output()
        .unwrap();
    assert!(timed.wait().unwrap().success());
    let lines = String::from_utf8_lossy(&probe.stdout).into_owned();
    assert!(
        probe.status.success(),
        "{lines}{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let (mut open, mut seen) = (0.0f64, Vec::new());
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let port =
            find(&v, "conn_recvq_bytes_mean").unwrap_or_else(|| panic!("no conn figures in {l}"));
        if let Some(n) = port["established"].as_f64() {
            open = open.max(n);
            seen.push(format!(
                "est {n} recvq mean {} max {} sendq mean {} max {} retrans {}",
                port["conn_recvq_bytes_mean"],
                port["conn_recvq_bytes_max"],
                port["conn_sendq_bytes_mean"],
                port["conn_sendq_bytes_max"],
                port["conn_retrans"]
            ));
            assert!(port["conn_recvq_bytes_max"].as_f64().is_some(), "{l}");
            assert!(port["conn_sendq_bytes_max"].as_f64().is_some(), "{l}");
            assert!(port["conn_retrans"].as_f64().is_some(), "{l}");
        }
    }
    assert_eq!(
        open as usize, conns,
        "the kernel view's established connections vs h2load -c: {seen:#?}"
    );
    eprintln!("{kind} kernel view during h2load -c {conns} -m 10: {seen:#?}");
    assert_eq!(established(addr.port()), 0, "h2load closed its connections");
    // A counted load (every request answered before it ends), from an empty log.
    // Its requests carry a query of their own: a request of the timed load the server ends
    // after h2load stopped may still be logged, and is not one of these.
    let counted = format!("{url}?counted");
    let out = h2load(&["-n", "5000"], &counted)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "h2load: {text}");
    let ok = succeeded(&text);
    assert_eq!(ok, 5000, "{text}");
    // Both servers write a request's line after its response's last bytes were sent, so
    // h2load may have read them first: the log is read once the server has stopped (both
    // finish the requests in hand on TERM, nginx within its event loop's turn, Apache's
    // workers before its child exits).
    synlab::lab::real_server::ask_to_stop(real.main_pid(server.pid()));
    server.stop(Duration::from_secs(10));
    let mut c = StatusCounts::default();
    let log = std::fs::read_to_string(&real.access_log).unwrap();
    for l in log.lines().filter(|l| l.contains("?counted ")) {
        c.add_line(l.as_bytes(), Listener::Plain);
    }
    // The check's own connection sent no request: every line is h2load's.
    assert_eq!(
        c.http2, ok,
        "{kind}'s HTTP/2 log lines vs h2load's succeeded: {c:?}\n{text}"
    );
    assert_eq!((c.lines, c.s2xx), (ok, ok), "{c:?}");
    eprintln!(
        "{kind} h2c: h2load succeeded {ok}, log HTTP/2 lines {} (ratio {:.4}); established {open} vs -c {conns}",
        c.http2,
        c.http2 as f64 / ok as f64
    );
}

#[test]
fn nginx_h2c_log_lines_equal_h2loads_requests_and_the_kernel_sees_its_connections() {
    if !installed(TargetKind::Nginx) || !h2load_installed() {
        return;
    }
    // nginx 1.22's http2_max_concurrent_streams default.
    h2c_counts("nginx", "", 128);
}

#[test]
fn apache_event_h2c_log_lines_equal_h2loads_requests_and_the_kernel_sees_its_connections() {
    if !installed(TargetKind::Apache) || !h2load_installed() {
        return;
    }
    // mod_http2's H2MaxSessionStreams default.
    h2c_counts("apache", "mpm = \"event\"\nmax_workers = 50\n", 100);
}

const LAB_H2: &str = r#"
name = "lab-h2"
duration = "3s"
[target]
kind = "KIND"
workers = 2
tls = true
[load]
mode = "open"
rate = 100
connections = 2
http = "2"
streams = 10
[network]
backend = "auto"
[[network.path]]
name = "wan"
rtt = "10ms"
"#;

/// One lab run with HTTP/2 against `kind`: after a paused drain, the clients' responses equal
/// the access log's lines whose protocol is HTTP/2 (every line of the run is one), and nothing
/// failed; the server's advertised limit is what the clients read.
fn lab_h2_counts(kind: &str, extra: &str, limit: u32) {
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let toml = LAB_H2
        .replace("KIND", kind)
        .replace("tls = true\n", &format!("tls = true\n{extra}"));
    let sc = synlab::scenario::parse("lab-h2.toml", &toml).unwrap();
    let mut c = Controller::start(sc, opts(None)).unwrap();
    lab_support::run_for(&mut c, 2.5);
    c.apply(synlab::lab::knobs::Command::Pause(true))
        .into_result()
        .unwrap();
    lab_support::run_for(&mut c, 1.0);
    let limit_read = c
        .core()
        .state()
        .store
        .last(synlab::model::col::H2_STREAMS_LIMIT);
    c.shutdown().unwrap();
    let (client, server, _) = c.core().final_check().expect("server-vs-client check made");
    let log = c.core().access_counts().expect("access log counted");
    assert!(client > 50, "{kind}: {client} responses");
    assert_eq!(
        (log.http2, log.lines, server),
        (client, client, client),
        "{kind}: the log's HTTP/2 lines vs the clients' responses: {log:?}"
    );
    assert_eq!(limit_read, Some(limit as f64), "{kind}'s advertised limit");
}

/// In the lab (root): nginx and Apache (event) over TLS with HTTP/2 (h2 by ALPN), loaded by
/// the engine: the requests equal the log's HTTP/2 lines.
#[test]
fn in_the_lab_nginx_and_apache_over_h2_log_every_request_as_http2() {
    if !probe_support::privileged("HTTP/2 targets in the lab") {
        return;
    }
    for (kind, extra, streams) in [("nginx", "", 128), ("apache", "mpm = \"event\"\n", 100)] {
        if !installed(if kind == "nginx" {
            TargetKind::Nginx
        } else {
            TargetKind::Apache
        }) {
            continue;
        }
        lab_h2_counts(kind, extra, streams);
    }
}

/// A target that does not speak HTTP/2 (Python's http.server, HTTP/1.x only) is found at
/// start, with the reason: it answers the preface as an HTTP/1.x request.
#[test]
fn a_target_without_http2_is_refused_at_start_with_the_reason() {
    if Command::new("python3").arg("-V").output().is_err() {
        synlab::sys::privilege::skip_unless_required("python3 is not installed");
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let toml = "[target]\nkind = \"command\"\ncommand = \"python3 -m http.server --bind 127.0.0.1 {port}\"\n[load]\nmode = \"open\"\nrate = 10\nhttp = \"2\"\n";
    let sc = synlab::scenario::parse("no-h2.toml", toml).unwrap();
    let e = format!("{:#}", Controller::start(sc, opts(None)).err().unwrap());
    assert!(e.contains("does not speak HTTP/2: "), "{e}");
    assert!(e.contains("does not speak h2c with prior knowledge"), "{e}");
}

/// Rootless: the plain user's `synlab run` of nginx over TLS with HTTP/2 in its own lab checks
/// the target (ALPN h2, SETTINGS), loads it over HTTP/2 and exits 0, leaving nothing.
#[test]
fn rootless_an_http2_run_of_nginx_loads_it() {
    if !std::path::Path::new("/usr/sbin/nginx").exists()
        || !std::path::Path::new("/usr/bin/newuidmap").exists()
    {
        plain_support::skip_or_fail("nginx in the rootless lab needs nginx and newuidmap");
        return;
    }
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("h2.toml", &LAB_H2.replace("KIND", "nginx"));
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("maps only your own uid") {
        plain_support::skip_or_fail(&format!("no subordinate uid range ({err})"));
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !err.contains("does not speak HTTP/2"),
        "the engine loads it: {err}"
    );
    p.assert_none_left();
}
