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
    let queue: Vec<Series> = [
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
    ]
    .into_iter()
    .flatten()
    .collect();
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
                y_label: "accept queue (connections)".into(),
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

    #[test]
    fn a_point_mark_is_its_number() {
        assert_eq!(mark_label("point 3/10: load.rate = 750"), "3");
    }
}
