//! The latency split over nginx and Apache started by the lab (issue 48 item 4): the service is
//! the access log's request times (nginx `rt:$request_time`, s at 1 ms resolution; Apache
//! `rt_us:%D`, us), counted so a user can check them against the file: summary.json's
//! `meta.access_log` names the lines of the log the run's and each point's counts came from
//! (`first_line`..`last_line`, with their byte offsets), and over exactly those lines the log's
//! times sum to the recorded `service_us`, the docs' awk prints the same, and the split's service
//! x the server's responses is that sum within the log's resolution x lines; the four parts
//! still add up to the mean response time within 1 %. As root in the lab (nginx and Apache) and
//! as the plain CI user in the rootless lab (nginx).

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

/// The awk program docs/11-analyses.md gives to reproduce a point's service from the log's
/// lines `first`..`last` (Apache's own lines skipped).
const AWK: &str = r#"NR >= first && NR <= last && !/"OPTIONS \* |internal dummy connection/ && match($0, / rt(_us)?:[0-9.]+/) { v = substr($0, RSTART + 1, RLENGTH - 1); n++; s += (v ~ /^rt_us/) ? substr(v, 7) : substr(v, 4) * 1e6 } END { printf "%d lines, %.0f us: service %.3f ms\n", n, s, s / n / 1000 }"#;

/// The log's lines an `access_log` meta entry names (`first_line..=last_line`), after checking
/// that its byte offsets are where those lines start and end in the file.
fn span_lines<'a>(log: &'a str, m: &serde_json::Value) -> (u64, u64, Vec<&'a str>) {
    let field = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("no {k} in {m}"));
    let (first, last) = (field("first_line"), field("last_line"));
    assert_eq!(field("restarts"), 0, "the log was not rotated: {m}");
    assert!(first >= 1 && last >= first, "{m}");
    // Where each line starts (the one after the last: the file's end).
    let mut starts = vec![0u64];
    starts.extend(log.match_indices('\n').map(|(i, _)| i as u64 + 1));
    let at = |line: u64| starts[line as usize - 1];
    assert_eq!(field("first_offset"), at(first), "first line's offset: {m}");
    assert_eq!(field("last_offset"), at(last), "last line's offset: {m}");
    assert_eq!(field("end_offset"), at(last + 1), "end offset: {m}");
    // `sed -n FIRST,LASTp`: the same lines as the bytes between the offsets.
    let lines: Vec<&str> = log
        .lines()
        .skip(first as usize - 1)
        .take((last - first + 1) as usize)
        .collect();
    let bytes = &log[field("first_offset") as usize..field("end_offset") as usize];
    assert_eq!(bytes.lines().collect::<Vec<_>>(), lines);
    (first, last, lines)
}

/// The load's lines among `lines` and their request times summed, us, read the plain way.
fn timed(kind: &str, lines: &[&str]) -> (u64, u64) {
    let load: Vec<&str> = lines.iter().copied().filter(|l| !internal(l)).collect();
    let sum = load
        .iter()
        .map(|l| line_time_us(l).unwrap_or_else(|| panic!("{kind}: no request time in {l:?}")))
        .sum();
    (load.len() as u64, sum)
}

/// What the docs' awk prints over lines `first..=last` of `log`: (lines, us, service ms).
fn awk(log: &Path, first: u64, last: u64) -> (u64, u64, f64) {
    let out = std::process::Command::new("awk")
        .args([
            "-v",
            &format!("first={first}"),
            "-v",
            &format!("last={last}"),
            AWK,
        ])
        .arg(log)
        .output()
        .expect("awk");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "awk: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "150 lines, 3450000 us: service 23.000 ms"
    let words: Vec<&str> = text.split_whitespace().collect();
    let parse = |i: usize| -> f64 {
        words
            .get(i)
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("awk printed {text:?}"))
    };
    (parse(0) as u64, parse(2) as u64, parse(5))
}

/// The checks on a run folder whose server wrote `{kind}/access.log` (read after the run).
fn check(kind: &str, run: &Path) {
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    // The meta's new entries are the schema's.
    let schema = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/summary.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&s)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "summary.json breaks the schema: {errors:#?}"
    );
    let log_path = run.join(format!("{kind}/access.log"));
    let log = std::fs::read_to_string(&log_path).unwrap();
    let resolution_us = if kind == "nginx" { 1000.0 } else { 1.0 };
    // The run: synlab's counts are those of the lines it names, exactly.
    let m = &s["meta"]["access_log"]["run"];
    let (run_first, run_last, run_lines) = span_lines(&log, m);
    let (read, run_sum) = timed(kind, &run_lines);
    assert!(read > 50, "{read} lines: {m}");
    assert_eq!(m["lines"].as_u64(), Some(read), "{m}");
    assert_eq!(m["timed"].as_u64(), Some(read), "{m}");
    assert_eq!(
        m["service_us"].as_u64(),
        Some(run_sum),
        "synlab's sum of the run's request times vs the log's lines {run_first}..{run_last}: {m}"
    );
    // The point: its counts came from the lines its meta entry names.
    let points = s["points"].as_array().expect("points");
    assert_eq!(points.len(), 1);
    let p = &points[0];
    let pm = &s["meta"]["access_log"]["points"][0];
    assert_eq!(pm["point"].as_u64(), Some(1), "{pm}");
    let (first, last, lines) = span_lines(&log, pm);
    assert!(
        run_first <= first && last <= run_last,
        "{first}..{last} in the run's {run_first}..{run_last}"
    );
    let (n, sum_us) = timed(kind, &lines);
    assert_eq!(
        p["totals"]["server_responses"].as_u64(),
        Some(n),
        "the server's count of the point vs its lines {first}..{last}: {pm}"
    );
    assert!(n > 50, "{n} lines in the point: {pm}");
    assert_eq!(
        (pm["lines"].as_u64(), pm["timed"].as_u64()),
        (Some(n), Some(n)),
        "{pm}"
    );
    assert_eq!(pm["service_us"].as_u64(), Some(sum_us), "{pm}");
    let service = num(p, "split_service_ms");
    let split_sum_ms = service * n as f64;
    let sum_ms = sum_us as f64 / 1000.0;
    assert!(
        (split_sum_ms - sum_ms).abs() <= resolution_us / 1000.0 * n as f64,
        "{kind}: the split's service sum {split_sum_ms} ms vs the log's {sum_ms} ms over lines {first}..{last}"
    );
    // The docs' awk over the same lines says the same.
    let (awk_n, awk_us, awk_ms) = awk(&log_path, first, last);
    assert_eq!(
        (awk_n, awk_us),
        (n, sum_us),
        "awk over lines {first}..{last}"
    );
    assert!(
        (awk_ms - service).abs() <= 0.0005 + 1e-9 * service,
        "awk's {awk_ms} ms, the split's {service} ms"
    );
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/11-analyses.md"))
        .unwrap();
    assert!(
        docs.contains(AWK),
        "docs/11-analyses.md gives the awk this test runs"
    );
    eprintln!(
        "{kind}: the point's lines {first}..{last} (bytes {}..{}), {n} lines whose request times sum to {sum_ms:.3} ms, the \
         split's service {service:.3} ms x {n} = {split_sum_ms:.3} ms; the run's lines {run_first}..{run_last}, {read} lines, \
         {run_sum} us; split connect {:.3} + queue {} + service {service:.3} + transfer {:.3} = {:.3} ms",
        pm["first_offset"],
        pm["end_offset"],
        num(p, "split_connect_ms"),
        num(p, "split_queue_ms"),
        num(p, "split_transfer_ms"),
        num(p, "split_total_ms"),
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
