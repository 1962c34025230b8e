//! Checks on a `totals` object of summary.json shared by the end-to-end tests: both identities
//! (connections, requests) and the errors by kind adding up.
#![allow(dead_code)]

/// Asserts both identities and that each side's errors by kind add up to its errors; returns
/// (connection attempts, requests sent).
pub fn assert_identities(t: &serde_json::Value) -> (u64, u64) {
    let n = |o: &serde_json::Value, k: &str| {
        o[k].as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {o}"))
    };
    let (c, r) = (&t["connections"], &t["requests"]);
    assert_eq!(
        n(c, "attempts") + n(c, "connecting_at_start"),
        n(c, "established") + n(c, "errors") + n(c, "connecting_at_end"),
        "connections add up: {c}"
    );
    assert_eq!(
        n(r, "sent") + n(r, "in_flight_at_start"),
        n(r, "responses") + n(r, "errors") + n(r, "in_flight_at_end"),
        "requests add up: {r}"
    );
    for o in [c, r] {
        let sum: u64 = o["errors_by_kind"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(sum, n(o, "errors"), "errors by kind add up: {o}");
    }
    // Bad responses by reason (absent when none) add up to them.
    if let Some(by) = r.get("bad_responses_by_reason").and_then(|v| v.as_object()) {
        let sum: u64 = by.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(
            sum,
            n(&r["errors_by_kind"], "bad_responses"),
            "by reason: {r}"
        );
    }
    // Over TLS every established connection did one handshake, full or resumed, and each
    // failed one is a connection error of its kind.
    if let Some(tls) = t.get("tls").filter(|v| !v.is_null()) {
        assert_eq!(
            n(c, "established"),
            n(tls, "full") + n(tls, "resumed"),
            "established = full + resumed handshakes: {t}"
        );
        let k = &c["errors_by_kind"];
        assert_eq!(
            n(tls, "failed"),
            n(k, "handshake_timeouts")
                + n(k, "tls_alerts")
                + n(k, "bad_certificates")
                + n(k, "tls_protocol_errors"),
            "failed handshakes are the TLS connection errors: {t}"
        );
    }
    (n(c, "attempts"), n(r, "sent"))
}
