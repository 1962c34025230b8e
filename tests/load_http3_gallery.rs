//! issue 47's third head-of-line curve in the gallery: docs/gallery/http2-hol.md quotes the
//! HTTP/3 run's p50/p90/p99 and the three runs' p99s from the summary files beside it.

use std::path::Path;

fn summary(name: &str) -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/gallery")
        .join(format!("{name}.summary.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// A run's figure `key` (ms) at `loss`, rounded as the page writes it.
fn ms(s: &serde_json::Value, loss: &str, key: &str) -> String {
    let p = s["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["value"] == loss)
        .unwrap_or_else(|| panic!("no point at {loss}"));
    format!(
        "{:.0}",
        p[key].as_f64().unwrap_or_else(|| panic!("{key}: {p}"))
    )
}

#[test]
fn the_head_of_line_page_quotes_the_http3_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gallery");
    let page = std::fs::read_to_string(dir.join("http2-hol.md")).unwrap();
    let h1 = summary("http2-hol-http11x6");
    let h2 = summary("http2-hol-http2x1");
    let h3 = summary("http3-hol-http3x1");
    for loss in ["0%", "2%"] {
        let row = format!(
            "| {} % | {} | {} | {} | {} | {} | {} |",
            loss.trim_end_matches('%'),
            ms(&h3, loss, "total_p50_ms"),
            ms(&h3, loss, "total_p90_ms"),
            ms(&h3, loss, "total_p99_ms"),
            ms(&h1, loss, "total_p99_ms"),
            ms(&h2, loss, "total_p99_ms"),
            ms(&h3, loss, "total_p99_ms"),
        );
        assert!(
            page.contains(&row),
            "the page's HTTP/3 row for {loss}: want {row}"
        );
    }
    // HTTP/3 carried its requests over QUIC (its figures are there, not null).
    for p in h3["points"].as_array().unwrap() {
        assert!(p["quic_packets_sent_per_s"].as_f64().is_some(), "{p}");
    }
    assert!(
        page.contains("http3-hol-http3x1: 2026"),
        "the page says the load"
    );
}
