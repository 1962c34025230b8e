//! report.md's "Where the requests' time went" (issue 48 item 4): per point (and per request
//! class) the mean response time split into connect, accept queue, service and transfer, as
//! figures and a stacked bar of letters, and the connects that waited for a SYN
//! retransmission with their modes (once, twice).

use super::read::Point;
use crate::model::latency_split::{legend, LatencySplit};
use crate::model::summary::SummaryCol as S;
use std::fmt::Write;

/// The bar's width in characters.
const BAR: usize = 40;

/// A split from its four figures (NaN: not measured); None without a transfer figure.
fn split_of(f: impl Fn(&str) -> f64) -> Option<LatencySplit> {
    let some = |v: f64| v.is_finite().then_some(v);
    Some(LatencySplit {
        connect_ms: some(f("split_connect_ms"))?,
        queue_ms: some(f("split_queue_ms")),
        service_ms: some(f("split_service_ms")),
        transfer_ms: some(f("split_transfer_ms"))?,
    })
}

/// How report.md writes a number (`markdown::num`, passed in: markdown calls this module).
type Num = fn(f64) -> String;

/// One table row: its label, the figures, the bar, the SYN retransmissions.
fn row(md: &mut String, num: Num, label: &str, s: &LatencySplit, retrans: String) {
    let ms = |v: Option<f64>| v.map_or("–".to_string(), num);
    let _ = writeln!(
        md,
        "| {label} | {} | {} | {} | {} | {} | `{}` | {retrans} |",
        num(s.total_ms()),
        num(s.connect_ms),
        ms(s.queue_ms),
        ms(s.service_ms),
        num(s.transfer_ms),
        s.bar(BAR)
    );
}

/// The share of connects that waited for a SYN retransmission and the two modes' shares and
/// medians: "20.0 % (once: 15.0 % at 1.00 s; twice: 4.0 % at 2.00 s)".
fn retrans_cell(p: &Point, http3: bool) -> String {
    let all = p.num(S::ConnectRetransPct);
    if !all.is_finite() {
        return "–".into();
    }
    let mut cell = format!("{all:.1} %");
    // The modes are TCP's SYN timeouts; a QUIC client's probe timeouts fall elsewhere.
    if http3 {
        return cell;
    }
    let modes: Vec<String> = [
        ("once", S::ConnectRetransOncePct, S::ConnectRetransOnceMs),
        ("twice", S::ConnectRetransTwicePct, S::ConnectRetransTwiceMs),
    ]
    .iter()
    .filter(|(_, share, _)| p.num(*share) > 0.0)
    .map(|(name, share, at)| {
        format!(
            "{name}: {:.1} % at {:.2} s",
            p.num(*share),
            p.num(*at) / 1000.0
        )
    })
    .collect();
    if !modes.is_empty() {
        let _ = write!(cell, " ({})", modes.join("; "));
    }
    cell
}

/// The section's table, numbers written by `num`; "" when no point has a split (a run before
/// it was recorded).
pub fn table(points: &[Point], num: Num, http3: bool) -> String {
    let mut md = String::new();
    for p in points {
        let Some(s) = split_of(|k| S::parse(k).map_or(f64::NAN, |c| p.num(c))) else {
            continue;
        };
        row(&mut md, num, &p.number(), &s, retrans_cell(p, http3));
        for k in super::figures::point_classes(p) {
            let f = |key: &str| k[key].as_f64().unwrap_or(f64::NAN);
            if let Some(s) = split_of(f) {
                let retrans = f("connect_retrans_pct");
                let cell = if retrans.is_finite() {
                    format!("{retrans:.1} %")
                } else {
                    "–".into()
                };
                let name = k["name"].as_str().unwrap_or("?").replace('|', "\\|");
                row(&mut md, num, &format!("{} {name}", p.number()), &s, cell);
            }
        }
    }
    if md.is_empty() {
        return md;
    }
    // Over HTTP/3 there is no SYN to retransmit: a QUIC client sends its Initial again.
    let (head, why) = if http3 {
        (
            "connects of 1 s or more (Initial repeated)",
            "Over HTTP/3 the connect is the QUIC handshake and there is no SYN: a connect of 1 s \
             or more outlasted the client's first probe timeout (RFC 9002: 3 × the initial RTT \
             estimate of 333 ms, about 1 s, with no RTT measured yet), at which it sends its \
             Initial again.",
        )
    } else {
        (
            "connects with a SYN retransmission",
            "A connect of 1 s or more waited for a SYN retransmission (the initial RTO, seed 000 \
             §2): once near 1 s, twice near 2 s with the kernel's linear SYN timeouts \
             (`net.ipv4.tcp_syn_linear_timeouts`, 4 by default since Linux 6.6) or near 3 s with \
             exponential backoff (run.log says which).",
        )
    };
    format!(
        "| # | mean ms | connect | accept queue | service | transfer | where the time went | \
         {head} |\n|---|---:|---:|---:|---:|---:|---|---|\n{md}\n\
         Bars: {}. Connect is the clients' (per response, its scheduled start to its request \
         going out: its connection's connect for a connection's first request); accept queue and service are the server's own (the built-in server's \
         clock; nginx's and Apache's service from their access log's request time, which runs on to \
         the response's last byte; `–` where the server does not measure them, their time is then in the \
         transfer); transfer is the rest of the mean response time. The parts add up to the \
         mean by construction. {why}\n",
        legend()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_point_has_its_bar_and_its_retransmission_modes() {
        let json = serde_json::json!({"meta": {}, "points": [
            {"point": 1, "split_connect_ms": 0.1, "split_queue_ms": 0.0, "split_service_ms": 1.0,
             "split_transfer_ms": 0.9, "connect_retrans_pct": 0.0},
            {"point": 2, "split_connect_ms": 600.0, "split_queue_ms": 300.0,
             "split_service_ms": 1.0, "split_transfer_ms": 99.0, "connect_retrans_pct": 40.0,
             "connect_retrans_once_pct": 30.0, "connect_retrans_once_ms": 1001.0,
             "connect_retrans_twice_pct": 10.0, "connect_retrans_twice_ms": 3002.0},
            {"point": 3}
        ]});
        let (_, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
        let md = table(&points, crate::report::markdown::num, false);
        assert!(
            md.contains("| 1 | 2.00 | 0.10 | 0 | 1.00 | 0.90 | `"),
            "{md}"
        );
        assert!(
            md.contains("40.0 % (once: 30.0 % at 1.00 s; twice: 10.0 % at 3.00 s)"),
            "{md}"
        );
        let bar2 = md.lines().find(|l| l.starts_with("| 2 |")).unwrap();
        assert!(
            bar2.contains(&format!(
                "`{}{}{}`",
                "C".repeat(24),
                "Q".repeat(12),
                "T".repeat(4)
            )),
            "{bar2}"
        );
        assert!(!md.contains("| 3 |"), "{md}");
        assert_eq!(table(&points[2..], crate::report::markdown::num, false), "");
    }
}
