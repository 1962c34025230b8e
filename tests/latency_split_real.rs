//! The latency split over nginx and Apache started by the lab (issue 48 item 4): the service is
//! the access log's request times (nginx `rt:$request_time`, s at 1 ms resolution; Apache
//! `rt_us:%D`, us), counted so a user can check them against the file: over the run,
//! `meta.access_log.run`'s `timed` lines and `service_us` sum are the log's; over the point
//! (its lines are those synlab read between its edges, consecutive in the log), the split's
//! service x the server's responses is the sum of those lines' times within the log's
//! resolution x lines; and the four parts still add up to the mean response time within 1 %.
//! As root in the lab (nginx and Apache) and as the plain CI user in the rootless lab (nginx).

mod lab_support;
mod plain_support;

use std::path::Path;
use synlab::scenario::TargetKind;

/// One class of 200 KB responses at 30/s over a 20 ms path: the server's writes wait for the
/// path's ACKs, so its request times are tens of ms (well above nginx's 1 ms resolution).
fn scenario(kind: &str) -> String {
    // Prefork: a child writes the whole response before it logs (the event MPM may log with
    // the response's last bytes still handed to its listener thread).
    let mpm = if kind == "apache" {
        "mpm = \"prefork\"\nworkers = 8\nmax_workers = 8\n"
    } else {
        "workers = 1\n"
    };
    format!(
        r#"
name = "split-{kind}"
duration = "5s"

[target]
kind = "{kind}"
{mpm}backlog = 511
keepalive = false

[load]
mode = "open"
rate = 30
arrivals = "poisson"
timeout = "3s"

[[load.mix]]
class = "large"
path = "/bytes/200000"
weight = 1.0

[network]
backend = "auto"

[[network.path]]
name = "wan"
rtt = "20ms"
"#
    )
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// A line's request time, us, read the plain way (not synlab's parser): `rt:` seconds or
/// `rt_us:` microseconds.
fn line_time_us(line: &str) -> Option<u64> {
    let field = |m: &str| {
        let at = line.rfind(m)? + m.len();
        line[at..].split(' ').next()
    };
    if let Some(v) = field(" rt_us:") {
        return v.parse().ok();
    }
    let s: f64 = field(" rt:")?.parse().ok()?;
    Some((s * 1e6).round() as u64)
}

/// Apache's own requests (its dummy connections), which are not the load's lines.
fn internal(line: &str) -> bool {
    line.contains("\"OPTIONS * ") || line.contains("(internal dummy connection)")
}

/// The checks on a run folder whose server wrote `log` (its access log, read after the run).
fn check(kind: &str, run: &Path) {
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let log = std::fs::read_to_string(run.join(format!("{kind}/access.log"))).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.trim().is_empty() && !internal(l))
        .collect();
    let times: Vec<u64> = lines
        .iter()
        .map(|l| line_time_us(l).unwrap_or_else(|| panic!("no request time in {l:?}")))
        .collect();
    let resolution_us = if kind == "nginx" { 1000.0 } else { 1.0 };
    // The run: synlab's counts of the lines it read are the file's last lines.
    let m = &s["meta"]["access_log"]["run"];
    let read = m["lines"].as_u64().expect("meta.access_log.run.lines") as usize;
    assert_eq!(m["timed"].as_u64(), Some(read as u64), "{m}");
    assert!(
        read <= lines.len() && read > 50,
        "{read} of {} lines: {m}",
        lines.len()
    );
    let before = lines.len() - read;
    let run_sum: u64 = times[before..].iter().sum();
    assert_eq!(
        m["service_us"].as_u64(),
        Some(run_sum),
        "synlab's sum of the run's request times vs the log's: {m}"
    );
    // The point: its lines are consecutive in the log, as many as the server's responses in
    // it, from the first ones synlab read after the log was opened (the load's first second
    // may be read before the window opens: the offset is the one whose lines' times match).
    let points = s["points"].as_array().expect("points");
    assert_eq!(points.len(), 1);
    let p = &points[0];
    let n = p["totals"]["server_responses"]
        .as_u64()
        .expect("the server's count of the point") as usize;
    assert!(
        n > 50 && n <= read,
        "{n} lines in the point, {read} read: {p}"
    );
    let split_sum_ms = num(p, "split_service_ms") * n as f64;
    let window_ms =
        |o: usize| times[before + o..before + o + n].iter().sum::<u64>() as f64 / 1000.0;
    let (offset, window_sum_ms) = (0..=(read - n).min(30))
        .map(|o| (o, window_ms(o)))
        .min_by(|a, b| {
            (a.1 - split_sum_ms)
                .abs()
                .total_cmp(&(b.1 - split_sum_ms).abs())
        })
        .unwrap();
    let service = num(p, "split_service_ms");
    eprintln!(
        "{kind}: {n} lines in the point (from the run's line {offset}), their request times sum to {window_sum_ms:.3} ms, the \
         split's service {service:.3} ms x {n} = {split_sum_ms:.3} ms; the run's {read} lines \
         {run_sum} us; split connect {:.3} + queue {} + service {service:.3} + transfer {:.3} = {:.3} ms",
        num(p, "split_connect_ms"),
        num(p, "split_queue_ms"),
        num(p, "split_transfer_ms"),
        num(p, "split_total_ms"),
    );
    assert!(
        (split_sum_ms - window_sum_ms).abs() <= resolution_us / 1000.0 * n as f64,
        "{kind}: the split's service sum {split_sum_ms} ms vs the log's {window_sum_ms} ms over {n} lines"
    );
    // The server's writes waited for the path: its time is well above the log's resolution.
    assert!(service > 5.0, "{kind}: service {service} ms");
    // The real server measures no accept-queue wait; the parts add up to the mean.
    assert!(num(p, "split_queue_ms").is_nan(), "{p}");
    let total = num(p, "split_total_ms");
    let parts = num(p, "split_connect_ms") + service + num(p, "split_transfer_ms");
    assert!(
        (parts - total).abs() <= 0.01 * total,
        "{kind}: parts {parts} ms, total {total} ms"
    );
    let mean = num(p, "little_load_factor") / num(p, "throughput_per_s") * 1000.0;
    assert!(
        (total - mean).abs() <= 0.01 * mean,
        "{kind}: the split's total {total} ms against the mean response time {mean} ms"
    );
    assert!(
        service <= total,
        "{kind}: service {service} ms over the total {total} ms"
    );
    // The class's split (one class: the point's) adds up too.
    for k in p["classes"].as_array().into_iter().flatten() {
        let parts =
            num(k, "split_connect_ms") + num(k, "split_service_ms") + num(k, "split_transfer_ms");
        let mean = num(k, "little_load_factor") / num(k, "responses_per_s") * 1000.0;
        assert!(
            (parts - mean).abs() <= 0.01 * mean,
            "class: {parts} vs {mean}: {k}"
        );
    }
}

fn root_run(kind: &str, tk: TargetKind) {
    if !lab_support::privileged() || !lab_support::real_server_installed(tk) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (run, _) =
        plain_support::run_here(dir.path(), &format!("split-{kind}.toml"), &scenario(kind));
    check(kind, &run);
}

#[test]
fn nginx_request_times_are_the_splits_service_as_root() {
    root_run("nginx", TargetKind::Nginx);
}

#[test]
fn apache_request_times_are_the_splits_service_as_root() {
    root_run("apache", TargetKind::Apache);
}

/// nginx in the rootless lab as the plain user (its workers switch users: the user's
/// subordinate uid range and newuidmap, as tests/rootless.rs needs them).
#[test]
fn nginx_request_times_are_the_splits_service_rootless() {
    if !lab_support::real_server_installed(TargetKind::Nginx) {
        return;
    }
    if !Path::new("/usr/bin/newuidmap").exists() {
        plain_support::skip_or_fail(
            "nginx in the rootless lab needs newuidmap (the uidmap package)",
        );
        return;
    }
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("split-nginx.toml", &scenario("nginx"));
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("maps only your own uid") {
        plain_support::skip_or_fail(&format!(
            "the test user has no subordinate uid range in /etc/subuid ({err})"
        ));
        return;
    }
    assert!(out.status.success(), "rootless run failed: {err}");
    let (dir, s) = p.summary();
    assert_eq!(s["meta"]["lab"], "rootless (user namespace)");
    check("nginx", &dir);
    p.assert_none_left();
}
