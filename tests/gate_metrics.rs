//! `synlab run --metrics ADDR`: the exposition passes `promtool check metrics`, and a real
//! Prometheus (Debian's package) scraping it during a run returns synlab's series from its query
//! API. Loopback only; both processes are killed by pid when the test ends, pass or fail.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child it holds (by its pid) when dropped.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free now (bound to 0 then released): Prometheus cannot take port 0.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` from 127.0.0.1:`port`: (status line, body), None while nothing listens.
fn get(port: u16, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// GET /metrics asking for OpenMetrics, as Prometheus does: the body.
fn get_openmetrics(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    Some(buf.split_once("\r\n\r\n")?.1.to_string())
}

/// `--metrics` on an address this host does not have fails at once (exit 2) and says so,
/// rather than guessing the port is in use; a port in use is said to be in use.
#[test]
fn a_metrics_address_not_on_this_host_is_named_as_such() {
    let synlab = |addr: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
            .args([
                "probe",
                "--port",
                "1",
                "--no-pcap",
                "--count",
                "1",
                "--metrics",
                addr,
            ])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = synlab("192.0.2.1:9464");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "--metrics: cannot listen on 192.0.2.1:9464: 192.0.2.1 is not an address of this host"
        ),
        "{err}"
    );
    assert!(!err.contains("in use"), "{err}");
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let (code, err) = synlab(&addr);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("cannot listen on {addr}: port")) && err.contains("is in use"),
        "{err}"
    );
}

/// Polls `f` until it returns Some, up to `secs`.
fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < end,
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

const SCENARIO: &str = r#"
name = "metrics"
duration = "25s"
[target]
arch = "event"
service_time = "1ms"
[load]
mode = "open"
rate = 100
timeout = "500ms"
"#;

#[test]
fn prometheus_scrapes_a_run_and_promtool_accepts_the_exposition() {
    for tool in ["/usr/bin/prometheus", "/usr/bin/promtool"] {
        if !Path::new(tool).exists() {
            synlab::sys::privilege::say_skipped(&format!(
                "skipped: {tool} is missing (apt-get install prometheus)"
            ));
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("metrics.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let port = free_port();
    let _run = Killed(
        Command::new(env!("CARGO_BIN_EXE_synlab"))
            .args(["run", "--no-progress", "--metrics"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--out")
            .arg(tmp.path().join("results"))
            .arg(&sc)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let body = wait_for(30, "synlab's /metrics with a response rate", || {
        get(port, "/metrics").filter(|(_, b)| b.contains("synlab_responses_per_second "))
    })
    .1;
    assert_eq!(get(port, "/nope").unwrap().0, "HTTP/1.1 404 Not Found");
    // OpenMetrics, as Prometheus asks for it: each series says what it is and its unit.
    let om = get_openmetrics(port).unwrap();
    for want in [
        "# HELP synlab_target_rate_per_second The arrival rate the load schedule aims at",
        "# UNIT synlab_target_rate_per_second per_second\n",
        "# UNIT synlab_total_p99_seconds seconds\n",
        "# UNIT synlab_total_latency_seconds seconds\n",
        "# HELP synlab_time_wait TIME_WAIT sockets of the whole server network namespace",
    ] {
        assert!(om.contains(want), "{want} is not in:\n{om}");
    }
    assert!(
        !om.contains("latest sample"),
        "a HELP repeats a name:\n{om}"
    );
    assert!(
        body.contains("# TYPE synlab_total_latency_seconds histogram\n")
            && body.contains("synlab_connect_latency_seconds_bucket{le=\"+Inf\"}"),
        "latency is not published as histograms:\n{body}"
    );
    // Connections and requests apart (issue 27), with what is in progress of each.
    for series in [
        "synlab_requests_per_second ",
        "synlab_connection_errors_per_second ",
        "synlab_request_errors_per_second ",
        "synlab_connecting ",
        "synlab_requests_in_flight ",
    ] {
        assert!(body.contains(series), "no {series}in:\n{body}");
    }

    let mut check = Command::new("/usr/bin/promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics refused the exposition:\n{}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let prom_port = free_port();
    let cfg = tmp.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: synlab\n    \
             static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .unwrap();
    let _prom = Killed(
        Command::new("/usr/bin/prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let answer = wait_for(
        20,
        "Prometheus to return synlab_responses_per_second",
        || {
            get(prom_port, "/api/v1/query?query=synlab_responses_per_second")
                .map(|(_, b)| b)
                .filter(|b| b.contains("\"job\":\"synlab\""))
        },
    );
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["status"], "success", "{answer}");
    let rate: f64 = v["data"]["result"][0]["value"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        rate > 0.0,
        "a run at 100/s scraped at {rate} responses/s: {answer}"
    );
    // The distribution is usable as Prometheus users use one: a quantile from the buckets.
    let answer = wait_for(20, "Prometheus to return a latency quantile", || {
        get(
            prom_port,
            "/api/v1/query?query=histogram_quantile(0.5%2Csynlab_total_latency_seconds_bucket)",
        )
        .map(|(_, b)| b)
        .filter(|b| b.contains("\"job\":\"synlab\""))
    });
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let p50: f64 = v["data"]["result"][0]["value"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        p50 > 0.0 && p50 < 1.0,
        "median total latency on loopback at 100/s: {p50} s: {answer}"
    );
}
