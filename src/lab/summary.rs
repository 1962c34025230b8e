//! The run table printed at the end of a headless run (the summary rows are the core's).

use crate::model::SummaryRow;

fn fmt(v: f64, w: usize) -> String {
    if v.is_nan() {
        format!("{:>w$}", "-")
    } else if v.abs() >= 100.0 {
        format!("{v:>w$.0}")
    } else {
        format!("{v:>w$.1}")
    }
}

/// The end-of-run table's note for a point whose responses were more than 1 % not 2xx: how
/// many of them failed (4xx/5xx not named good: in `error_share_pct`, so a threshold on it
/// catches them), and where a wrong path would come from.
pub fn non2xx_note(r: &SummaryRow) -> Option<String> {
    let pct = crate::model::summary::non2xx_flag_pct(r.non2xx_per_s, r.throughput_per_s)?;
    let failed = 100.0 * r.failed_responses_per_s / r.throughput_per_s;
    Some(if failed > 0.0 {
        format!(
            "NOT 2xx: {pct:.0} % of responses, {failed:.0} % failed (4xx/5xx: counted in \
             error_share_pct; a 4xx may be a wrong request path in load.mix / workload)"
        )
    } else {
        format!("NOT 2xx: {pct:.0} % of responses (none failed: 1xx/3xx or named good)")
    })
}

/// A point that resumed a smaller share of its TLS or QUIC handshakes than `asked` (a share,
/// the knob) by more than 5 points, or made none: what it made and why that falls short. The
/// schedule makes the share exact over new connections; a pool of kept-open connections makes
/// one handshake each (often all before the point), and those before the server's first
/// ticket go full.
pub fn resumed_short_note(asked: Option<f64>, r: &SummaryRow) -> Option<String> {
    let asked_pct = asked.filter(|&a| a > 0.0)? * 100.0;
    let made = (r.full_handshakes_per_s + r.resumed_handshakes_per_s) * r.hold_s;
    if r.failed || !made.is_finite() {
        return None;
    }
    let made = made.round();
    let head = format!("point {}: resumption asked for {asked_pct:.0} %", r.point);
    if made == 0.0 {
        return (r.requests_per_s > 0.0).then(|| {
            format!(
                "{head}, but the point made no handshake: its connections were opened before it \
                 and kept open (a pool makes one handshake a connection; S-Client, or a smaller \
                 requests_per_conn, makes new ones)"
            )
        });
    }
    let got = r.resumed_share_pct;
    if !got.is_finite() || got >= asked_pct - 5.0 {
        return None;
    }
    // Many requests a handshake: kept-open connections (a pool, keep-alive), whatever their
    // number; about one: new connections that found no ticket to resume.
    let requests = r.requests_per_s * r.hold_s;
    let why = if requests >= 2.0 * made {
        "a resumed handshake needs a new connection, and kept-open connections make one each \
         (S-Client, or a smaller requests_per_conn, makes more)"
    } else {
        "a resumed handshake needs the server's session ticket, so those begun before its \
         first ticket came went full, and a server that sends none resumes none (run.log's \
         cross-check has the server's count)"
    };
    Some(format!(
        "{head}, {got:.0} % of its {made:.0} handshakes resumed: {why}"
    ))
}

/// The short table printed at the end of a run.
pub fn summary_table(rows: &[SummaryRow]) -> String {
    let mut s = format!(
        "{:>3} {:>8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>11} {:>6}  notes\n",
        "pt",
        "mode",
        "value",
        "attempts/s",
        "requests/s",
        "responses/s",
        "errors/s",
        "p50 ms",
        "p99 ms",
        "acceptq max",
        "cpu%"
    );
    for r in rows {
        let mut notes = Vec::new();
        if r.failed {
            notes.push(format!("FAILED: {}", r.error));
        }
        if r.client_bound {
            notes.push(format!("CLIENT-BOUND: {}", r.client_bound_reason));
        }
        if let Some(n) = non2xx_note(r) {
            notes.push(n);
        }
        // Timed-out attempts have no latency: say what the percentiles leave out.
        if let Some(t) = &r.totals {
            notes.push(format!(
                "p50/p99 over {}",
                crate::report::markdown::latency_cover(t, r.quic())
            ));
        }
        s.push_str(&format!(
            "{:>3} {:>8} {:>12} {} {} {} {} {} {} {} {}  {}\n",
            r.point,
            r.mode,
            r.sweep.map_or("-".into(), |s| s.value.to_string()),
            fmt(r.attempts_per_s, 10),
            fmt(r.requests_per_s, 10),
            fmt(r.throughput_per_s, 11),
            fmt(r.errors_per_s, 10),
            fmt(r.total_p50_ms, 9),
            fmt(r.total_p99_ms, 9),
            fmt(r.accept_queue_max, 11),
            fmt(100.0 - r.cpu_idle_pct, 6),
            notes.join("; ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of 4 kept-open connections asked for 50 % resumption made 4 full handshakes:
    /// said at the point's end, not left as a 0 % beside the asked 50 %.
    #[test]
    fn a_resumed_share_short_of_the_asked_one_is_said() {
        let pool = SummaryRow {
            point: 1,
            hold_s: 10.0,
            full_handshakes_per_s: 0.4,
            resumed_handshakes_per_s: 0.0,
            resumed_share_pct: 0.0,
            requests_per_s: 200.0,
            ..Default::default()
        };
        let said = resumed_short_note(Some(0.5), &pool).unwrap();
        assert!(
            said.starts_with("point 1: resumption asked for 50 %, 0 % of its 4 handshakes resumed: a resumed handshake needs a new connection"),
            "{said}"
        );
        // A connection a request (S-Client) short of tickets: the ticket's why.
        let sclient = SummaryRow {
            full_handshakes_per_s: 900.0,
            resumed_handshakes_per_s: 100.0,
            resumed_share_pct: 10.0,
            requests_per_s: 1000.0,
            ..pool.clone()
        };
        let said = resumed_short_note(Some(0.5), &sclient).unwrap();
        assert!(said.contains("10 % of its 10000 handshakes resumed: a resumed handshake needs the server's session ticket"), "{said}");
        // A pool whose connections all opened before the point: no handshake in it.
        let none = SummaryRow {
            full_handshakes_per_s: 0.0,
            resumed_share_pct: f64::NAN,
            requests_per_s: 200.0,
            ..pool.clone()
        };
        let said = resumed_short_note(Some(0.5), &none).unwrap();
        assert!(
            said.contains("50 %, but the point made no handshake"),
            "{said}"
        );
        // Met (within 5 points), not asked, or over TCP without TLS (NaN): nothing.
        let met = SummaryRow {
            resumed_share_pct: 47.0,
            ..pool.clone()
        };
        assert_eq!(resumed_short_note(Some(0.5), &met), None);
        assert_eq!(resumed_short_note(Some(0.0), &pool), None);
        assert_eq!(resumed_short_note(None, &pool), None);
        let plain = SummaryRow {
            full_handshakes_per_s: f64::NAN,
            resumed_handshakes_per_s: f64::NAN,
            resumed_share_pct: f64::NAN,
            requests_per_s: 200.0,
            ..pool
        };
        assert_eq!(resumed_short_note(Some(0.5), &plain), None);
    }

    /// Over HTTP/3 a failure of the QUIC handshake by timeout is a timeout in the table's
    /// note (it read "0 timed out, 27691 failed otherwise"); over TCP a TLS handshake's
    /// timeout stays among the other failures, as report.md has it.
    #[test]
    fn quic_handshake_timeouts_are_timeouts_in_the_tables_note() {
        let mut t = crate::model::Totals {
            responses: 5000,
            errors: 27_700,
            ..Default::default()
        };
        t.errors_by_kind.tls.handshake_timeouts = 27_691;
        let quic = SummaryRow {
            quic_handshakes_full_per_s: 500.0,
            totals: Some(t.clone()),
            ..Default::default()
        };
        assert!(summary_table(&[quic])
            .contains("p50/p99 over 5000 completed, 27691 timed out, 9 failed otherwise"),);
        let tcp = SummaryRow {
            quic_handshakes_full_per_s: f64::NAN,
            totals: Some(t),
            ..Default::default()
        };
        assert!(summary_table(&[tcp])
            .contains("p50/p99 over 5000 completed, 0 timed out, 27700 failed otherwise"));
    }
}
