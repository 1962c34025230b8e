//! Repeated trials end to end: `synlab run --repeat 3` on the built-in server over loopback
//! writes trial-1..3 and an aggregate whose latency percentiles are those of the trials' real
//! .hlog histograms merged; `synlab compare` on repeated runs judges with intervals, on single
//! runs says the noise is unknown; CI lines on stderr; `synlab ab` alternates A and B.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Built-in server (2 ms of CPU per request, capacity 500/s), offered 100 and 150/s: far under
/// capacity, so every trial measures the same thing.
const SC: &str = r#"
name = "trials"
[target]
arch = "event"
service_time = "2ms"
service = "cpu"

[load]
mode = "open"
rate = 100
timeout = "500ms"

[sweep]
param = "load.rate"
values = [100, 150]
warmup = "300ms"
hold = "1s"
"#;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn synlab(args: &[&str], paths: &[&Path]) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_synlab"));
    c.args(args).args(paths).env_remove("GITHUB_ACTIONS");
    c.env_remove("GITHUB_STEP_SUMMARY");
    let o = c.output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn only_dir(p: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(v.len(), 1, "{v:?}");
    v.pop().unwrap()
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn a_repeated_run_merges_its_trials_histograms_and_compare_judges_with_intervals() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("trials.toml");
    std::fs::write(&sc, SC).unwrap();
    let results = tmp.path().join("results");
    let md = tmp.path().join("summary.md");
    let r = synlab(
        &["run", "--repeat", "3", "--summary-md"],
        &[&md, Path::new("--out"), &results, &sc],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // stderr is not a terminal here: one line per point as it ends, the trial said.
    assert!(
        r.stderr
            .contains("trial 2 of 3: point 2 of 2 (load.rate 150): "),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("verdict: PASS"),
        "{}",
        r.stdout
    );
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("✅ verdict: PASS"));
    let dir = only_dir(&results);
    let trials: Vec<PathBuf> = (1..=3).map(|k| dir.join(format!("trial-{k}"))).collect();
    for t in &trials {
        assert!(t.join("total.hlog").is_file(), "{}", t.display());
    }
    let s = json(&dir.join("summary.json"));
    // The aggregate is a summary.json the schema describes.
    let schema = json(Path::new("docs/summary.schema.json"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&s)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(s["trials"]["n"], 3);
    assert_eq!(s["meta"]["trials"], 3);
    for point in 1..=2usize {
        // Merge the trials' real histograms of the point by hand: the aggregate's p50 / p99
        // are theirs, and lie within the trials' own (a pooled quantile is between them).
        let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
        let mut count = 0;
        let mut own = Vec::new();
        for t in &trials {
            let ivs = synlab::report::hlog::read(&t.join("total.hlog")).unwrap();
            let (_, h) = ivs
                .into_iter()
                .find(|(tag, _)| *tag == format!("point-{point}"))
                .unwrap();
            count += h.len();
            own.push(h.value_at_quantile(0.99) as f64 / 1000.0);
            match &mut merged {
                Some(m) => m.add(&h).unwrap(),
                None => merged = Some(h),
            }
        }
        let m = merged.unwrap();
        assert_eq!(m.len(), count);
        assert!(count > 100, "{count} samples");
        let row = &s["points"][point - 1];
        for (col, q) in [("total_p50_ms", 0.5), ("total_p99_ms", 0.99)] {
            let want = m.value_at_quantile(q) as f64 / 1000.0;
            assert_eq!(row[col].as_f64().unwrap(), want, "{col} of point {point}");
            assert_eq!(
                s["trials"]["points"][point - 1]["figures"][col]["merged"]
                    .as_f64()
                    .unwrap(),
                want
            );
        }
        let p99 = row["total_p99_ms"].as_f64().unwrap();
        let lo = own.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = own.iter().copied().fold(0.0, f64::max);
        assert!(lo <= p99 && p99 <= hi, "{p99} not within {own:?}");
        // A figure's median and spread over the three trials.
        let f = &s["trials"]["points"][point - 1]["figures"]["throughput_per_s"];
        let v: Vec<f64> = f["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(v.len(), 3);
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(f["median"].as_f64().unwrap(), sorted[1]);
        assert_eq!(
            (f["min"].as_f64().unwrap(), f["max"].as_f64().unwrap()),
            (sorted[0], sorted[2])
        );
        assert_eq!(f["ci_level_pct"].as_f64().unwrap(), 75.0);
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("| point | responses/s |"), "{report}");
    assert!(report.contains("[trial-1](trial-1/report.md)"), "{report}");

    // The repeated run against itself: every judged figure within the noise, with its
    // interval; one JUnit case per judged figure.
    let junit = tmp.path().join("compare.xml");
    let cj = tmp.path().join("compare.json");
    let c = synlab(
        &["compare", "--junit"],
        &[&junit, Path::new("--json"), &cj, &dir, &dir],
    );
    assert_eq!(c.code, 0, "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stdout
            .contains("good_responses_per_s at open 100: +0.0 % (90 % CI"),
        "{}",
        c.stdout
    );
    let j = json(&cj);
    let figures = j["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 8, "2 points x 4 figures: {j:#}");
    // A run against itself has no change, and an interval around none: never a regression
    // (within the noise, within a metric's floor when all of the interval is under it, or
    // unsettled where a busy machine made the trials differ).
    for f in figures {
        assert_eq!(f["change"].as_f64().unwrap(), 0.0, "{f:#}");
        assert!(f["ci_lo"].as_f64().unwrap() <= 0.0 && f["ci_hi"].as_f64().unwrap() >= 0.0);
        assert!(
            ["within_noise", "within_floor", "maybe_past_limit"]
                .contains(&f["verdict"].as_str().unwrap()),
            "{f:#}"
        );
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase").count(), 8, "{xml}");
    assert!(
        xml.contains("failures=\"0\"") && xml.contains("CI"),
        "{xml}"
    );

    // A trial the machine disturbed (other work on the load's CPUs past 5 % of them) is left
    // out of the judgment while 3 others remain, and named; with fewer left all are judged and
    // that is said.
    let four = tmp.path().join("four");
    let cp = |from: &Path, to: &Path| {
        let st = Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .status()
            .unwrap();
        assert!(st.success(), "cp {} {}", from.display(), to.display());
    };
    cp(&dir, &four);
    let busy = four.join("trial-4");
    cp(&trials[0], &busy);
    let mut sj = json(&busy.join("summary.json"));
    sj["meta"]["cpus"]["load"] = serde_json::json!([0]);
    for p in sj["points"].as_array_mut().unwrap() {
        p["load_cores_other_pct"] = serde_json::json!(50.0);
    }
    std::fs::write(busy.join("summary.json"), sj.to_string()).unwrap();
    let c = synlab(&["compare"], &[&dir, &four]);
    assert_eq!(c.code, 0, "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains(&format!(
            "left out the run's trial {}: the machine was busy: other work took 50 % of the load's CPUs in point 1 (limit 5 %)",
            busy.display()
        )),
        "{}",
        c.stdout
    );
    std::fs::remove_dir_all(four.join("trial-1")).unwrap();
    let c = synlab(&["compare"], &[&dir, &four]);
    assert_eq!(c.code, 0, "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains("the machine was busy in 1 of the run's 3 trials (other work up to 50 % of the lab's CPUs): judged on all of them"),
        "{}",
        c.stdout
    );

    // Two single trials: judged alone, the noise said to be unknown.
    let c = synlab(&["compare"], &[&trials[0], &trials[1]]);
    assert!(c.code == 0 || c.code == 3, "{}\n{}", c.stdout, c.stderr);
    assert!(
        c.stdout.contains("noise: unknown with one trial a side"),
        "{}",
        c.stdout
    );
}

#[test]
fn ab_alternates_a_and_b_and_judges_the_pairs_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let one = SC.replace("values = [100, 150]", "values = [100]");
    let (a, b) = (tmp.path().join("a.toml"), tmp.path().join("b.toml"));
    std::fs::write(&a, &one).unwrap();
    std::fs::write(&b, one.replace("name = \"trials\"", "name = \"trials-b\"")).unwrap();
    let results = tmp.path().join("results");
    let aj = tmp.path().join("ab.json");
    // Throughput of an open loop far under capacity is the offered rate in both: judged, and
    // within the limit whatever the machine's load.
    let r = synlab(
        &[
            "ab",
            "--repeat",
            "2",
            "--on",
            "throughput_per_s",
            "--max-regression",
            "20%",
            "--json",
        ],
        &[&aj, Path::new("--out"), &results, &a, &b],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let dir = only_dir(&results);
    for t in ["a-1", "b-1", "b-2", "a-2"] {
        assert!(
            dir.join(t).join("summary.json").is_file(),
            "{t} in {}",
            dir.display()
        );
    }
    // The trials ran A B B A: each later than the one before.
    let started = |t: &str| {
        std::fs::metadata(dir.join(t).join("scenario.toml"))
            .unwrap()
            .modified()
            .unwrap()
    };
    assert!(
        started("a-1") <= started("b-1")
            && started("b-1") <= started("b-2")
            && started("b-2") <= started("a-2")
    );
    assert!(
        r.stderr.contains("trial 3 of 4: B (pair 2)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("throughput_per_s at open 100: ") && r.stdout.contains("B/A"),
        "{}",
        r.stdout
    );
    let j = json(&aj);
    assert_eq!(j["figures"].as_array().unwrap().len(), 1, "{j:#}");
    assert_eq!(j["figures"][0]["trials"][0], 2);
    assert!(
        r.stdout
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("verdict: PASS"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_scenario_asks_for_its_trials_within_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let (ok, bad) = (tmp.path().join("ok.toml"), tmp.path().join("bad.toml"));
    std::fs::write(&ok, format!("{SC}\n[output]\nrepeat = 5\n")).unwrap();
    std::fs::write(&bad, format!("{SC}\n[output]\nrepeat = 0\n")).unwrap();
    let r = synlab(&["check"], &[&ok]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = synlab(&["check"], &[&bad]);
    assert_ne!(r.code, 0);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("output.repeat") && said.contains("1 to 1000"),
        "{said}"
    );
}
