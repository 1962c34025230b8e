//! `synlab report` on a run folder built from fixtures (a trimmed real quick run of
//! scenarios/overload.toml, with one point made failed and one client-bound): every file is
//! written, SVGs are XML with the titles and axis labels, PNGs decode, report.md has the table,
//! links, cross-checks and flags; an interrupted run still reports; two runs overlay.

use std::path::{Path, PathBuf};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report/run");

/// Copies the fixture run folder into a temp dir named like a real run folder.
fn fixture_run(tmp: &Path, name: &str) -> PathBuf {
    let dir = tmp.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(FIXTURE).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir
}

/// All text content of an SVG, after checking it parses as XML with an <svg> root.
fn svg_text(path: &Path) -> String {
    let src = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&src)
        .unwrap_or_else(|e| panic!("{} is not valid XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks the PNG signature and IHDR, decodes the whole image, returns (width, height).
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{}: no PNG signature",
        path.display()
    );
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (w, h));
    // Not a blank image: the plot has dark pixels (text, axes) and white background.
    assert!(buf.iter().any(|b| *b < 64) && buf.contains(&255));
    (w, h)
}

#[test]
fn report_writes_every_plot_and_report_md() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    let md_path = synlab::report::write_report(&run).unwrap();
    assert_eq!(md_path, run.join("report.md"));

    let expected = [
        (
            "throughput",
            "Throughput vs offered rate (cf. seed 000 Fig. 7)",
            "rate (1/s)",
        ),
        (
            "latency",
            "Response time vs offered rate",
            "response time, connect to last byte (ms)",
        ),
        (
            "capacity",
            "Capacity: p98 response time vs offered rate (seed 004 method)",
            "p98 response time (ms)",
        ),
        (
            "accept_queue",
            "Accept queue and overflows vs offered rate",
            "accept queue (connections)",
        ),
        ("connections", "Connection states vs offered rate", "count"),
        (
            "cpu",
            "CPU split vs offered rate (whole machine)",
            "CPU time (% of all CPUs)",
        ),
        (
            "timeseries",
            "The run over time: overload-20261122-043749",
            "rate (1/s)",
        ),
    ];
    let md = std::fs::read_to_string(&md_path).unwrap();
    for (stem, title, y_label) in expected {
        let svg = run.join(format!("plots/{stem}.svg"));
        let text = svg_text(&svg);
        assert!(
            text.contains(title),
            "{stem}.svg lacks its title; text: {text}"
        );
        assert!(
            text.contains(y_label),
            "{stem}.svg lacks y label {y_label:?}"
        );
        assert!(
            text.contains("backend: loopback (no shaping)"),
            "{stem}.svg lacks the backend"
        );
        assert!(text.contains("machine: "), "{stem}.svg lacks the machine");
        let x_label = if stem == "timeseries" {
            "time since start (s)"
        } else {
            "offered rate (connection attempts/s)"
        };
        assert!(text.contains(x_label), "{stem}.svg lacks x label");
        let (w, h) = png_size(&run.join(format!("plots/{stem}.png")));
        assert!(w >= 1000 && h >= 600, "{stem}.png is {w}x{h}");
        assert!(
            md.contains(&format!("![{title}](plots/{stem}.png)")),
            "report.md lacks {stem}"
        );
        assert!(md.contains(&format!("[SVG](plots/{stem}.svg)")));
    }

    // Legends, the y = x reference, and the flags drawn on the throughput plot.
    let t = svg_text(&run.join("plots/throughput.svg"));
    for legend in [
        "responses/s (throughput)",
        "connection attempts/s",
        "offered = served (y = x)",
        "client-bound point",
        "failed point (gap)",
    ] {
        assert!(t.contains(legend), "throughput.svg lacks legend {legend:?}");
    }
    assert!(svg_text(&run.join("plots/accept_queue.svg")).contains("listen backlog (128)"));

    // report.md: the story, the table with flagged rows, the checks.
    assert!(md.starts_with("# synlab report: overload\n"));
    assert!(md.contains("- **Reproduces:** Banga & Druschel 1998 (seed 000), Fig. 7"));
    assert!(md.contains("- **Expect:** Throughput follows"));
    assert!(md.contains("| # | mode | `load.rate` | offered/s | attempts/s |"));
    assert!(md.contains("| 5 | open | 1250 |"));
    assert!(md.contains("**FAILED**: the server exited during the point (fixture)"));
    assert!(md.contains("| 6 ⚠ | open | 1500 | *1500* |"));
    assert!(md.contains("⚠ **CLIENT-BOUND**: load generator lagged"));
    assert!(md.contains("12649 vs 12681 (+0.3 %): agree"));
    assert!(md.contains("differ by more than 2 % ⚠"));
    assert!(md.contains("**Backend:** loopback (no shaping)"));
    assert!(md.contains("- **Machine:** "));
    // Capacity (summary.json's, as the lab recorded it): interpolated where p98 crosses
    // 100 ms, between the last point under it and the first over it; the failed point 5 and
    // the client-bound point 6 are not judged.
    assert!(
        md.contains("- capacity open (p98 under 100 ms): 789 responses/s, 1.113 MB/s at 909.9 (between points 3 and 4)"),
        "{md}"
    );
}

#[test]
fn report_md_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    insta::with_settings!({filters => vec![
        (r"(?m)^- \*\*Machine:\*\* .*$", "- **Machine:** [machine]"),
        (r"(?m)^- \*\*Report written:\*\* .*$", "- **Report written:** [time]"),
    ]}, {
        insta::assert_snapshot!(md);
    });
}

#[test]
fn interrupted_run_still_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-interrupted");
    // No summary.json yet, a half-written last time-series line, no events.csv.
    std::fs::remove_file(run.join("summary.json")).unwrap();
    std::fs::remove_file(run.join("events.csv")).unwrap();
    let mut ts = std::fs::read_to_string(run.join("timeseries.csv")).unwrap();
    ts.push_str("12.204,1065.03");
    std::fs::write(run.join("timeseries.csv"), ts).unwrap();

    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    assert!(
        md.contains("| 4 | open | 1000 |"),
        "summary.csv rows missing:\n{md}"
    );
    assert!(md.contains("incomplete run folder: summary.json"));
    assert!(md.contains("incomplete run folder: events.csv"));
    assert!(md.contains("client count vs server count: not measured"));
    png_size(&run.join("plots/throughput.png"));
    png_size(&run.join("plots/timeseries.png"));

    // A run folder with nothing measured yet (as a run leaves it in its first moment): still a
    // report, no plots.
    let empty = tmp.path().join("empty-run");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::copy(run.join("scenario.toml"), empty.join("scenario.toml")).unwrap();
    std::fs::write(empty.join("run.log"), "").unwrap();
    let md = std::fs::read_to_string(synlab::report::write_report(&empty).unwrap()).unwrap();
    assert!(md.contains("No sweep point finished"));
    assert!(md.contains("No plots"));

    let err = synlab::report::write_report(&tmp.path().join("nope")).unwrap_err();
    assert!(format!("{err:#}").contains("is not a run folder"));

    // Any other directory is refused, and nothing is written into it.
    let other = tmp.path().join("not-a-run");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let err = synlab::report::write_report(&other).unwrap_err();
    assert!(format!("{err:#}").contains("is not a run folder"));
    let left: Vec<_> = std::fs::read_dir(&other).unwrap().collect();
    assert_eq!(
        left.len(),
        1,
        "report wrote into a directory that is not a run folder"
    );
}

#[test]
fn two_runs_overlay_with_their_names() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fixture_run(tmp.path(), "overload-before");
    let b = fixture_run(tmp.path(), "overload-after");
    // "after": twice the throughput, so the curves differ.
    let json = std::fs::read_to_string(b.join("summary.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        let t = p["throughput_per_s"].as_f64().unwrap();
        p["throughput_per_s"] = serde_json::json!(t * 2.0);
    }
    std::fs::write(b.join("summary.json"), v.to_string()).unwrap();

    let md_path = synlab::report::write_comparison(&a, &b).unwrap();
    assert_eq!(md_path, a.join("compare-overload-after/report.md"));
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.contains("# synlab comparison: `overload-before` vs `overload-after`"));
    assert!(md.contains("## Summary: `overload-before`"));
    assert!(md.contains("## Summary: `overload-after`"));
    let t = svg_text(&a.join("compare-overload-after/plots/throughput.svg"));
    assert!(
        t.contains("overload-before") && t.contains("overload-after"),
        "{t}"
    );
    png_size(&a.join("compare-overload-after/plots/throughput.png"));
    assert!(!a
        .join("compare-overload-after/plots/timeseries.svg")
        .exists());
}

/// Three runs of one sweep overlay into the first one's folder: every run's curve is drawn
/// and summarised.
#[test]
fn three_runs_overlay_into_one_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = ["builtin", "nginx", "apache"]
        .iter()
        .map(|n| fixture_run(tmp.path(), n))
        .collect();
    let md_path = synlab::report::write_overlay(&dirs).unwrap();
    assert_eq!(md_path, dirs[0].join("compare-nginx-apache/report.md"));
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("# synlab comparison: `builtin` vs `nginx` vs `apache`"),
        "{md}"
    );
    let t = svg_text(&dirs[0].join("compare-nginx-apache/plots/throughput.svg"));
    for n in ["builtin", "nginx", "apache"] {
        assert!(md.contains(&format!("## Summary: `{n}`")), "{md}");
        assert!(t.contains(n), "{n} missing from the plot: {t}");
    }
    let e = synlab::report::write_overlay(&[dirs[0].clone(), dirs[1].clone(), dirs[0].clone()])
        .unwrap_err();
    assert!(e.to_string().contains("are the same run folder"), "{e}");
}

/// Turns the fixture into a run without a sweep (as a TUI session or a run of timed steps
/// leaves): no [sweep] in scenario.toml, no param in the summary.
fn unswept(run: &Path) {
    let sc = std::fs::read_to_string(run.join("scenario.toml")).unwrap();
    let (head, rest) = sc.split_once("[sweep]").unwrap();
    let tail = rest.find("\n[").map(|i| &rest[i..]).unwrap_or("");
    std::fs::write(run.join("scenario.toml"), format!("{head}{tail}")).unwrap();
    for f in ["summary.csv", "summary.json"] {
        let s = std::fs::read_to_string(run.join(f)).unwrap();
        let s = s
            .replace(",load.rate,", ",,")
            .replace("\"param\": \"load.rate\"", "\"param\": \"\"")
            .replace("\"param\":\"load.rate\"", "\"param\":\"\"");
        std::fs::write(run.join(f), s).unwrap();
    }
}

#[test]
fn a_run_without_a_sweep_gets_its_time_series_and_no_empty_curves() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "default-20261123-160000");
    unswept(&run);
    let md_path = synlab::report::write_report(&run).unwrap();
    let mut plots: Vec<String> = std::fs::read_dir(run.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    plots.sort();
    assert_eq!(plots, ["timeseries.png", "timeseries.svg"]);
    let md = std::fs::read_to_string(md_path).unwrap();
    assert!(
        !md.contains(" vs \n"),
        "a heading against no parameter:\n{md}"
    );
    let svg = svg_text(&run.join("plots/timeseries.svg"));
    assert!(svg.contains("marked events"), "{svg}");

    let other = fixture_run(tmp.path(), "overload-20261122-043749");
    let e = synlab::report::write_comparison(&other, &run).unwrap_err();
    assert!(
        e.to_string().contains("has no sweep") && e.to_string().contains("default-"),
        "{e}"
    );
}

#[test]
fn a_run_is_not_compared_with_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    let same = run.join("..").join(run.file_name().unwrap());
    let e = synlab::report::write_comparison(&run, &same).unwrap_err();
    assert!(e.to_string().contains("same run folder"), "{e}");
    assert!(!run.join("compare-overload-20261122-043749").exists());
}

#[test]
fn syn_checks_within_their_counting_noise_are_not_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    // The fixture predates the tolerance column: 2 % applies, and the footnote says only that.
    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    assert!(md.contains("| +5.0 % ⚠ |"), "{md}");
    assert!(!md.contains("counting noise"), "{md}");

    // Point 1 differs by 5.0 % with a noise allowance of 6 %; point 3 by 7.6 % with 7 %.
    let path = run.join("summary.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let points = v["points"].as_array_mut().unwrap();
    points[0]["check_syn_tolerance_pct"] = 6.0.into();
    points[2]["check_syn_tolerance_pct"] = 7.0.into();
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    assert!(md.contains("| +5.0 % |"), "{md}");
    assert!(md.contains("| +7.6 % ⚠ |"), "{md}");
    assert!(md.contains("whichever is larger"), "{md}");
    assert!(md.contains("counting noise where that is larger"), "{md}");
}

/// A point's `paths` and `totals` in summary.json.
fn with_paths_and_totals(run: &Path) {
    let path = run.join("summary.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let points = v["points"].as_array_mut().unwrap();
    points[3]["paths"] = serde_json::json!([
        {"name": "lan", "attempts_per_s": 500.2, "throughput_per_s": 498.7, "errors_per_s": 0.0,
         "connect_timeouts": 0, "connect_p50_ms": 0.291, "connect_p99_ms": 1.234,
         "total_p50_ms": 1.05, "total_p90_ms": 2.0, "total_p99_ms": 4.44},
        // Nothing completed on this path: its percentiles are null.
        {"name": "wan|lossy", "attempts_per_s": 499.9, "throughput_per_s": 0.0, "errors_per_s": 120.5,
         "connect_timeouts": 1205, "connect_p50_ms": 100.22, "connect_p99_ms": 1101.0,
         "total_p50_ms": null, "total_p90_ms": null, "total_p99_ms": null}
    ]);
    let totals = |responses: u64, ct: u64, rt: u64, refused: u64| {
        serde_json::json!({
            "attempts": responses + ct + rt + refused, "established": responses + rt,
            "responses": responses, "non2xx": 0, "errors": ct + rt + refused,
            "errors_by_kind": {"connect_timeouts": ct, "refused": refused, "resets": 0,
                "bad_responses": 0, "response_timeouts": rt, "addr_not_avail": 0,
                "out_of_fds": 0, "other": 0},
            "in_flight_at_end": 0, "syn_in": null, "server_responses": null
        })
    };
    points[3]["totals"] = totals(8521, 0, 0, 0);
    points[4]["totals"] = totals(6374, 6096, 12, 3);
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn report_md_has_a_per_path_table_and_says_what_latencies_cover() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    with_paths_and_totals(&run);
    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    // Only point 4 has paths: one table, its rows in order.
    assert_eq!(md.matches("per path**").count(), 1, "{md}");
    let table = md
        .split("**Point 4 per path** (`load.rate` = 1000):\n\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-path table for point 4:\n{md}"));
    let rows: Vec<&str> = table.lines().take_while(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows,
        [
            "| path | attempts/s | responses/s | errors/s | connect p50 ms | connect p99 ms | total p50 ms | total p99 ms | connect timeouts |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| lan | 500 | 499 | 0 | 0.29 | 1.23 | 1.05 | 4.44 | 0 |",
            "| wan\\|lossy | 500 | 0 | 120 | 100 | 1101 | – | – | 1205 |",
        ],
        "{md}"
    );
    // The summary table says what the percentiles cover where the point has counts.
    assert!(md.contains("| latencies over | status |"), "{md}");
    let row = |n: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| {n} |")))
            .unwrap()
            .to_string()
    };
    assert!(
        row("4").contains("| 8521 completed, 0 timed out |"),
        "{}",
        row("4")
    );
    assert!(
        row("5").contains("| 6374 completed, 6108 timed out, 3 failed otherwise |"),
        "{}",
        row("5")
    );
    assert!(row("1").contains("| – |"), "{}", row("1"));
    assert!(
        md.contains("Latency percentiles cover completed requests only"),
        "{md}"
    );
}

#[test]
fn curves_with_missing_points_are_gaps_and_report_md_lists_them() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    // Point 6 (the last, client-bound but not failed) has no ESTABLISHED count, point 2 no
    // TIME_WAIT count; point 5 failed (said as FAILED, not listed here).
    let path = run.join("summary.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let points = v["points"].as_array_mut().unwrap();
    points[5]["established_mean"] = serde_json::Value::Null;
    points[1]["time_wait_mean"] = serde_json::Value::Null;
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();

    let data = synlab::report::read::read_run(&run).unwrap();
    let runs = std::slice::from_ref(&data);
    let ctx = synlab::report::figures::Ctx::new(runs, String::new());
    let figs = synlab::report::figures::sweep_figures(&ctx);
    let conn = figs.iter().find(|f| f.stem == "connections").unwrap();
    let estab = conn.panels[0]
        .series
        .iter()
        .find(|s| s.name == "ESTABLISHED (mean)")
        .unwrap();
    let ys: Vec<bool> = estab.points.iter().map(|p| p.y.is_some()).collect();
    // Sorted by offered rate: 250 .. 1500; point 5 (failed) and point 6 are gaps.
    assert_eq!(ys, [true, true, true, true, false, false], "{estab:?}");
    assert_eq!(
        ctx.missing(),
        [
            "point 2: no TIME_WAIT (mean)",
            "point 6: no ESTABLISHED (mean)"
        ]
    );

    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    assert!(
        md.contains(
            "Values missing from the curves (each is a gap: the curve breaks, or ends early, there):\n\n\
             - point 2: no TIME_WAIT (mean)\n- point 6: no ESTABLISHED (mean)\n"
        ),
        "{md}"
    );
}

/// issue 27: a point whose totals count connections and requests apart gets a row in the
/// counts table, whose two identities a reader can check.
#[test]
fn report_md_counts_connections_and_requests_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture_run(tmp.path(), "overload-20261122-043749");
    let path = run.join("summary.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let t = synlab::model::Totals::of(
        &synlab::model::Counters {
            attempts: 3,
            established: 2,
            refused: 1,
            requests: 40_000,
            responses: 39_990,
            response_timeouts: 4,
            ..Default::default()
        },
        synlab::model::InProgress {
            connecting: 0,
            requests: 64,
        },
        synlab::model::InProgress {
            connecting: 0,
            requests: 70,
        },
    );
    assert_eq!(t.identities_broken(), None);
    v["points"][2]["totals"] = serde_json::to_value(&t).unwrap();
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let md = std::fs::read_to_string(synlab::report::write_report(&run).unwrap()).unwrap();
    assert!(
        md.contains("| # | connection attempts | established | connection errors | connecting at start / end | requests | responses | request errors | requests in flight at start / end |"),
        "{md}"
    );
    assert!(
        md.contains("| 3 | 3 | 2 | 1 | 0 / 0 | 40000 | 39990 | 4 | 64 / 70 |"),
        "{md}"
    );
}
