//! The whole run over time, from timeseries.csv, with the sweep points marked.

use crate::model::{col, Col};
use crate::report::plots::{Figure, LineKind, Panel, Series, XAxis, XY};
use crate::report::read::RunData;

/// The whole run over time from timeseries.csv, sweep points marked from events.csv.
pub fn timeseries_figure(run: &RunData, subtitle: &str) -> Option<Figure> {
    let ts = &run.timeseries;
    let series = |c: Col, name: &str, color: usize, line: LineKind| -> Option<Series> {
        let pts = ts.get(c)?;
        Some(Series {
            name: name.into(),
            color,
            line,
            points: pts.into_iter().map(|(t, v)| XY::new(t, v)).collect(),
        })
    };
    let rates: Vec<Series> = [
        series(col::ATTEMPTS, "connection attempts/s", 1, LineKind::Solid),
        series(col::RESPONSES, "responses/s (client)", 0, LineKind::Solid),
        series(
            col::SERVER_RESPONSES,
            "responses/s (server's own count)",
            4,
            LineKind::Dashed,
        ),
        // Over HTTP/3 no SYN arrives: a connection's first packet is its first Initial.
        if run.http3() {
            series(
                col::QUIC_FIRST_INITIAL_PER_S,
                "first Initials/s at the server",
                2,
                LineKind::Dashed,
            )
        } else {
            series(col::SYN_IN, "SYN/s at the server", 2, LineKind::Dashed)
        },
    ]
    .into_iter()
    .flatten()
    .collect();
    // Over HTTP/3 no TCP socket listens (its accept queue reads 0 unmeasured): a QUIC
    // server's queue is its UDP socket's receive queue, up to its buffer.
    let (queue_label, queue) = if run.http3() {
        (
            "server's UDP receive queue (bytes)",
            [
                series(col::UDP_RCV_QUEUE, "UDP receive queue", 3, LineKind::Solid),
                series(
                    col::UDP_RCVBUF,
                    "UDP receive buffer",
                    0,
                    LineKind::Reference,
                ),
            ],
        )
    } else {
        (
            "accept queue (connections)",
            [
                series(
                    col::ACCEPT_QUEUE,
                    "accept queue (connections)",
                    3,
                    LineKind::Solid,
                ),
                series(
                    col::ACCEPT_QUEUE_LIMIT,
                    "accept queue limit",
                    0,
                    LineKind::Reference,
                ),
            ],
        )
    };
    let queue: Vec<Series> = queue.into_iter().flatten().collect();
    // A process-per-connection server's busy workers (Apache's scoreboard, the prefork
    // server's): what a slow network holds, beside how many it has.
    let busy: Vec<Series> = [
        series(
            col::SERVER_BUSY,
            "server processes busy",
            5,
            LineKind::Solid,
        ),
        series(
            col::SERVER_WORKERS,
            "server processes",
            0,
            LineKind::Reference,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let marks = run
        .events
        .iter()
        .filter(|e| e.kind == crate::metrics::store::EventKind::Mark.name())
        .map(|e| (e.t_s, mark_label(&e.text)))
        .collect();
    let fig = Figure {
        stem: "timeseries".into(),
        title: format!("The run over time: {}", run.name),
        subtitle: subtitle.into(),
        x_label: if run.param().is_none() {
            "time since start (s); vertical lines: marked events".into()
        } else {
            "time since start (s); vertical lines: sweep points".into()
        },
        x_axis: XAxis::Linear,
        panels: vec![
            Panel {
                y_label: "rate (1/s)".into(),
                series: rates,
            },
            Panel {
                y_label: queue_label.into(),
                series: queue,
            },
        ],
        failed_x: Vec::new(),
        marks,
    };
    let mut fig = fig;
    if busy.iter().any(|s| s.line != LineKind::Reference) {
        fig.panels.push(Panel {
            y_label: "server processes".into(),
            series: busy,
        });
    }
    fig.has_data().then_some(fig)
}

/// "point 3/10: load.rate = 750" -> "3"; other marks keep their text.
fn mark_label(text: &str) -> String {
    text.strip_prefix("point ")
        .and_then(|r| r.split('/').next())
        .map(|n| n.to_string())
        .unwrap_or_else(|| text.chars().take(16).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over HTTP/3 the queue panel is the server's UDP receive queue, not an accept queue
    /// that reads 0 unmeasured; a TCP run keeps its accept queue.
    #[test]
    fn an_http3_runs_queue_panel_is_its_udp_socket() {
        let run = |quic: bool| {
            let mut p = serde_json::json!({"point": 1});
            if quic {
                p["quic_handshakes_full_per_s"] = 1122.0.into();
            }
            let json = serde_json::json!({"meta": {}, "points": [p]});
            let (meta, points) =
                crate::report::read::parse_summary_json(&json.to_string()).unwrap();
            RunData {
                name: "x".into(),
                meta,
                points,
                timeseries: crate::report::read::parse_timeseries(
                    "t_s,attempts_per_s,accept_queue,accept_queue_limit,udp_rcv_queue_bytes,\
                     udp_rcvbuf_bytes\n1,3000,0,128,104896,212992\n",
                ),
                ..Default::default()
            }
        };
        let panel = |quic: bool| {
            let f = timeseries_figure(&run(quic), "").unwrap();
            let p = &f.panels[1];
            let names: Vec<String> = p.series.iter().map(|s| s.name.clone()).collect();
            (p.y_label.clone(), names, p.series[0].points[0].y)
        };
        assert_eq!(
            panel(true),
            (
                "server's UDP receive queue (bytes)".to_string(),
                vec!["UDP receive queue".into(), "UDP receive buffer".into()],
                Some(104896.0)
            )
        );
        assert_eq!(
            panel(false),
            (
                "accept queue (connections)".to_string(),
                vec![
                    "accept queue (connections)".into(),
                    "accept queue limit".into()
                ],
                Some(0.0)
            )
        );
    }

    #[test]
    fn a_point_mark_is_its_number() {
        assert_eq!(mark_label("point 3/10: load.rate = 750"), "3");
    }
}
