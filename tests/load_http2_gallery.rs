//! issue 46's head-of-line experiment in the gallery: the page docs/gallery/http2-hol.md
//! quotes its figures from the two runs' summary files beside it (HTTP/1.1 over 6 connections
//! and HTTP/2 over 1, 100 ms RTT, 0 % and 2 % loss), and its plot is there. A page whose
//! table and summaries disagree fails here.

use std::path::Path;

fn summary(name: &str) -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/gallery")
        .join(format!("{name}.summary.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// The point at `loss` ("0%", "2%") of a run: its p50, p90, p99 (ms), rounded as the page
/// writes them.
fn latencies(s: &serde_json::Value, loss: &str) -> [String; 3] {
    let p = s["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["value"] == loss)
        .unwrap_or_else(|| panic!("no point at {loss}"));
    ["total_p50_ms", "total_p90_ms", "total_p99_ms"]
        .map(|k| format!("{:.0}", p[k].as_f64().unwrap_or_else(|| panic!("{k}: {p}"))))
}

#[test]
fn the_head_of_line_page_quotes_its_runs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gallery");
    let page = std::fs::read_to_string(dir.join("http2-hol.md")).unwrap();
    let (h1, h2) = (summary("http2-hol-http11x6"), summary("http2-hol-http2x1"));
    for loss in ["0%", "2%"] {
        let [a, b, c] = latencies(&h1, loss);
        let [d, e, f] = latencies(&h2, loss);
        let row = format!(
            "| {} % | {a} | {b} | {c} | {d} | {e} | {f} |",
            loss.trim_end_matches('%')
        );
        assert!(page.contains(&row), "the page's row for {loss}: want {row}");
    }
    // The two curves, and the machine's load the runs were measured at.
    assert!(dir.join("http2-hol-latency.png").exists());
    assert!(page.contains("load average"), "the page says the load");
    // HTTP/2 carried its requests on streams (its figures are there, not null).
    for p in h2["points"].as_array().unwrap() {
        assert!(p["h2_streams_max"].as_f64().is_some(), "{p}");
    }
}
