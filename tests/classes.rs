//! Per-class results (seed 002 Table 5) end to end: a two-class mix against nginx on
//! loopback. Each point's classes add up to the point (responses, and both identities per
//! class); over the run, each class's responses are nginx's access-log lines for its path,
//! exactly (the run drains, so nothing is in flight at its end); summary.csv, the
//! HdrHistogram logs and report.md carry the classes too.

mod lab_support;
mod totals_support;

use std::collections::BTreeMap;
use synlab::lab::run::run_scenario;
use synlab::scenario::TargetKind;
use totals_support::assert_identities;

const SMALL: &str = "/bytes/1294";
const LARGE: &str = "/bytes/65536";

/// Lines of a combined-format access log per request path.
fn lines_per_path(log: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for l in log.lines() {
        // ... "GET /bytes/1294 HTTP/1.0" 200 ...
        let Some(req) = l.split('"').nth(1) else {
            continue;
        };
        if let Some(path) = req.split(' ').nth(1) {
            *out.entry(path.to_string()).or_default() += 1;
        }
    }
    out
}

#[test]
fn two_classes_against_nginx_add_up_and_match_its_log_per_path() {
    if !lab_support::real_server_installed(TargetKind::Nginx) {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let out = tempfile::tempdir().unwrap();
    let sc = format!(
        r#"name = "classes-nginx"
[target]
kind = "nginx"
workers = 2
[load]
mode = "open"
rate = 400
[[load.mix]]
class = "small"
path = "{SMALL}"
weight = 0.7
[[load.mix]]
class = "large"
path = "{LARGE}"
weight = 0.3
[sweep]
param = "load.rate"
values = [300, 600]
warmup = "1s"
hold = "2s"
"#
    );
    let sc = synlab::scenario::parse("classes.toml", &sc).unwrap();
    let (dir, rows, cut) = run_scenario(sc, lab_support::opts(Some(out.path())), false)
        .unwrap_or_else(|e| {
            panic!("{e:#}");
        });
    assert!(!cut);
    let dir = dir.expect("a run folder");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();

    // Each point: two classes whose responses add up to the point's, each adding up itself.
    for (row, p) in rows.iter().zip(s["points"].as_array().unwrap()) {
        assert!(!row.failed, "{}", row.error);
        let names: Vec<&str> = row.classes.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["small", "large"], "point {}", row.point);
        let sum: u64 = row.classes.iter().map(|k| k.totals.responses).sum();
        let whole = row.totals.as_ref().unwrap();
        assert_eq!(sum, whole.responses, "point {}: classes add up", row.point);
        let sent: u64 = row.classes.iter().map(|k| k.totals.requests.sent).sum();
        assert_eq!(sent, whole.requests.sent);
        for k in p["classes"].as_array().unwrap() {
            assert_identities(&k["totals"]);
        }
        let (small, large) = (&row.classes[0], &row.classes[1]);
        // ~70 / 30 of the requests; the large files take longer.
        let share = small.totals.responses as f64 / whole.responses as f64;
        assert!((0.6..0.8).contains(&share), "small share {share:.2}");
        assert!(
            large.bytes_per_s > 5.0 * small.bytes_per_s,
            "large {} B/s vs small {} B/s",
            large.bytes_per_s,
            small.bytes_per_s
        );
    }

    // The run: each class's responses are nginx's lines for its path, exactly.
    let log = std::fs::read_to_string(dir.join("nginx/access.log")).unwrap();
    let per_path = lines_per_path(&log);
    let run_classes = s["run_classes"].as_array().expect("run_classes");
    assert_eq!(run_classes.len(), 2, "{run_classes:?}");
    for (k, path) in run_classes.iter().zip([SMALL, LARGE]) {
        let t = &k["totals"];
        assert_identities(t);
        assert_eq!(t["in_flight_at_end"], 0, "the run drained: {t}");
        assert_eq!(t["errors"], 0, "{t}");
        assert_eq!(
            t["responses"].as_u64(),
            per_path.get(path).copied(),
            "class {} vs nginx's log for {path}: {per_path:?}",
            k["name"]
        );
    }
    let run_sum: u64 = run_classes
        .iter()
        .map(|k| k["totals"]["responses"].as_u64().unwrap())
        .sum();
    assert_eq!(run_sum, s["run_totals"]["responses"].as_u64().unwrap());

    // summary.csv's class columns, the hlogs' class intervals, report.md's table.
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let head = csv.lines().next().unwrap();
    for c in ["class_small_responses_per_s", "class_large_total_p99_ms"] {
        assert!(head.split(',').any(|h| h == c), "{c} in {head}");
    }
    let ts = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    assert!(
        ts.lines()
            .next()
            .unwrap()
            .contains("class_large_responses_per_s"),
        "timeseries.csv has the classes' columns"
    );
    let logs = synlab::report::hlog::read(&dir.join("total.hlog")).unwrap();
    let tags: Vec<&str> = logs.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tags,
        [
            "point-1",
            "point-1.class-small",
            "point-1.class-large",
            "point-2",
            "point-2.class-small",
            "point-2.class-large"
        ]
    );
    // A class's histogram holds its responses, and the classes' hold the point's.
    for (i, row) in rows.iter().enumerate() {
        let (whole, small, large) = (&logs[3 * i].1, &logs[3 * i + 1].1, &logs[3 * i + 2].1);
        assert_eq!(small.len(), row.classes[0].totals.responses);
        assert_eq!(small.len() + large.len(), whole.len());
    }
    let md = synlab::report::write_report(&dir).unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("per request class"), "{md}");
    assert!(dir.join("plots/classes.png").is_file());
}

/// Kept-alive connections carry requests of several classes: each class's requests add up
/// (both identities per class, at every point and over the run); a closed client's connection
/// counts in the class of its first request, a pool's connections in none.
#[test]
fn keepalive_classes_add_up_and_a_pools_connections_are_in_no_class() {
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    for (load, pool) in [
        "mode = \"closed\"\nclients = 16\nrequests_per_conn = 50\n\
         [sweep]\nparam = \"load.clients\"\nvalues = [8, 16]\n",
        "mode = \"open\"\nrate = 800\nconnections = 16\nrequests_per_conn = 50\n\
         [sweep]\nparam = \"load.rate\"\nvalues = [400, 800]\n",
    ]
    .iter()
    .zip([false, true])
    {
        let out = tempfile::tempdir().unwrap();
        let sc = format!(
            "name = \"classes-ka\"\n[target]\nservice_time = \"200us\"\n\
             [[load.mix]]\nclass = \"a\"\npath = \"/bytes/1294\"\nweight = 0.5\n\
             [[load.mix]]\nclass = \"b\"\npath = \"/bytes/20000\"\nweight = 0.5\n\
             [load]\nhttp = \"1.1\"\n{load}warmup = \"500ms\"\nhold = \"1500ms\"\n"
        );
        let sc = synlab::scenario::parse("ka.toml", &sc).unwrap();
        let (dir, rows, _) = run_scenario(sc, lab_support::opts(Some(out.path())), false).unwrap();
        let s: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.unwrap().join("summary.json")).unwrap(),
        )
        .unwrap();
        for (row, p) in rows.iter().zip(s["points"].as_array().unwrap()) {
            let whole = row.totals.as_ref().unwrap();
            let sum = |f: fn(&synlab::model::Totals) -> u64| -> u64 {
                row.classes.iter().map(|k| f(&k.totals)).sum()
            };
            assert_eq!(sum(|t| t.requests.sent), whole.requests.sent, "{load}");
            assert_eq!(sum(|t| t.responses), whole.responses, "{load}");
            assert_eq!(
                sum(|t| t.requests.in_flight_at_start),
                whole.requests.in_flight_at_start
            );
            for k in p["classes"].as_array().unwrap() {
                assert_identities(&k["totals"]);
            }
            if pool {
                assert_eq!(
                    sum(|t| t.attempts),
                    0,
                    "a pool's connections are in no class"
                );
            } else {
                assert_eq!(sum(|t| t.attempts), whole.attempts, "{load}");
            }
        }
        // The run drains: nothing of any class is left in flight.
        for k in s["run_classes"].as_array().unwrap() {
            assert_identities(&k["totals"]);
            assert_eq!(k["totals"]["in_flight_at_end"], 0, "{k}");
        }
    }
}
