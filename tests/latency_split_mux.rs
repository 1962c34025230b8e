//! The latency split over HTTP/2 and HTTP/3 against the built-in server (issue 48 item 4):
//! per point and per request class the parts add up to the mean response time (within 1 %).
//! A stream's connect is the part of its wait while its connection was not yet usable (the
//! streams sent when it became usable carry its setup; those started on a usable connection
//! none); its wait for a stream slot (one connection of 4 streams, kept busy) is in the
//! queue; the built-in server's service is its own clock over HTTP/2 and HTTP/3 alike (5 ms
//! of sleep at least, from the request read to its response queued), out of the transfer.

mod lab_support;
mod plain_support;

/// Two classes at 150/s over one connection of 4 streams, the server sleeping 5 ms per
/// request on a 10 ms path: about 2.3 requests in flight on 4 slots, so some wait for one.
fn scenario(http: &str) -> String {
    let tls = if http == "3" {
        "tls = true\nhttp3 = true\n"
    } else {
        ""
    };
    format!(
        r#"
name = "split-h{http}"

[target]
arch = "event"
service = "sleep"
service_time = "5ms"
backlog = 128
{tls}
[load]
mode = "open"
rate = 150
arrivals = "poisson"
connections = 1
http = "{http}"
streams = 4
timeout = "3s"

[[load.mix]]
class = "small"
path = "/bytes/1000"
weight = 0.7

[[load.mix]]
class = "large"
path = "/bytes/100000"
weight = 0.3

[network]
backend = "auto"

[[network.path]]
name = "wan"
rtt = "10ms"

[sweep]
param = "load.rate"
values = [150]
warmup = "1s"
hold = "4s"
cooldown = "1s"
"#
    )
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// The parts of `v` (a point or a class): connect and transfer always, queue and service
/// where measured (an empty part's time is in the transfer, so it counts as 0 in the sum).
fn parts(v: &serde_json::Value) -> [f64; 4] {
    [
        "split_connect_ms",
        "split_queue_ms",
        "split_service_ms",
        "split_transfer_ms",
    ]
    .map(|k| num(v, k))
}

fn check(http: &str, s: &serde_json::Value) {
    let points = s["points"].as_array().expect("points");
    assert_eq!(points.len(), 1);
    let p = &points[0];
    assert!(!p["failed"].as_bool().unwrap_or(true), "{p}");
    let mut all = vec![(
        "the point".to_string(),
        p.clone(),
        num(p, "little_load_factor") / num(p, "throughput_per_s") * 1000.0,
    )];
    let classes = p["classes"].as_array().expect("classes");
    assert_eq!(classes.len(), 2, "{p}");
    for k in classes {
        let mean = num(k, "little_load_factor") / num(k, "responses_per_s") * 1000.0;
        all.push((format!("class {}", k["name"]), k.clone(), mean));
    }
    for (what, v, mean) in &all {
        let [c, q, sv, t] = parts(v);
        let z = |x: f64| if x.is_finite() { x } else { 0.0 };
        let sum = c + z(q) + z(sv) + t;
        eprintln!(
            "HTTP/{http} {what}: connect {c:.3} + queue {q:.3} + service {sv:.3} + transfer {t:.3} = {sum:.3} ms, mean {mean:.3} ms"
        );
        assert!(c.is_finite() && t.is_finite(), "{what}: {v}");
        assert!(mean.is_finite() && *mean > 5.0, "{what}: mean {mean}");
        assert!(
            (sum - mean).abs() <= 0.01 * mean,
            "HTTP/{http} {what}: the parts add up to {sum} ms, the mean is {mean} ms"
        );
        assert!(c >= 0.0, "{what}: connect {c}");
        // The clients measure the stream waits: the queue is there over both versions.
        assert!(
            q.is_finite() && q >= 0.0,
            "HTTP/{http} {what}: queue {q}: {v}"
        );
        // The built-in server's own service: at least its 5 ms of sleep (how much later the
        // loop wakes the sleeper is the machine's scheduling: no bound above but the mean).
        assert!(
            sv >= 5.0 && sv <= *mean,
            "HTTP/{http} {what}: service {sv} ms (mean {mean})"
        );
        assert!(t >= -0.01 * mean, "HTTP/{http} {what}: transfer {t}");
    }
    // Streams waited for a slot on the one connection at this load: the point's queue holds
    // their waits (the accept queue is near 0 at this rate).
    let q = num(p, "split_queue_ms");
    assert!(q > 0.0, "HTTP/{http}: no stream waited for a slot: {p}");
}

fn run_root(http: &str) {
    if !lab_support::privileged() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, s) =
        plain_support::run_here(dir.path(), &format!("split-h{http}.toml"), &scenario(http));
    check(http, &s);
}

#[test]
fn the_split_adds_up_per_class_over_http2() {
    run_root("2");
}

#[test]
fn the_split_adds_up_per_class_over_http3() {
    run_root("3");
}

#[test]
fn the_split_adds_up_per_class_over_http2_rootless() {
    let Some(p) = plain_support::plain_user() else {
        return;
    };
    let sc = p.write("split-h2.toml", &scenario("2"));
    let out = p.run(&sc);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rootless run failed: {err}");
    let (_, s) = p.summary();
    assert_eq!(s["meta"]["lab"], "rootless (user namespace)");
    check("2", &s);
    p.assert_none_left();
}
