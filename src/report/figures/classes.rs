//! The request classes' figures (seed 002 Table 5): each class's responses/s and response
//! time against the sweep, or over the run's time without a sweep.

use super::Ctx;
use crate::model::{col, ClassName};
use crate::report::plots::{Figure, LineKind, Panel, Series, XAxis, XY};
use crate::report::read::{Point, RunData};

/// A point's classes as summary.json holds them (read by name: a class with nothing completed
/// has null percentiles).
pub fn point_classes(p: &Point) -> Vec<serde_json::Value> {
    match serde_json::from_str(&p.text(crate::model::summary::SummaryText::Classes)) {
        Ok(serde_json::Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

/// The paper the figures compare with, as a reader finds it (seed 002 in the code).
const CF: &str = "(cf. Almeida, Almeida & Yates 1997, Table 5)";

/// A class's name in a legend: as the scenario names it ("class0", "static"), with "class"
/// before it only when it does not say so itself ("class 1", never "class class0").
fn legend(name: &str) -> String {
    if name.to_ascii_lowercase().starts_with("class") {
        name.to_string()
    } else {
        format!("class {name}")
    }
}

/// The class names of a run's points, in order of first appearance.
fn class_names(points: &[Point]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for k in points.iter().flat_map(point_classes) {
        if let Some(n) = k["name"].as_str() {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_string());
            }
        }
    }
    names
}

/// Per class: responses/s and p99 response time against the sweep (None without classes).
pub fn classes_figure(ctx: &Ctx) -> Option<Figure> {
    let mut rates = Vec::new();
    let mut p99 = Vec::new();
    let mut color = 0;
    for (ri, run, mode, pts) in ctx.groups() {
        for name in class_names(&run.points) {
            for (out, key, what, line) in [
                (
                    &mut rates,
                    "responses_per_s",
                    "responses/s",
                    LineKind::Solid,
                ),
                (
                    &mut p99,
                    "total_p99_ms",
                    "p99 response time",
                    LineKind::Dashed,
                ),
            ] {
                let points = pts
                    .iter()
                    .filter_map(|p| {
                        let x = ctx.x(p)?;
                        let y = point_classes(p)
                            .iter()
                            .find(|k| k["name"].as_str() == Some(&name))
                            .and_then(|k| k[key].as_f64())
                            .filter(|y| y.is_finite() && !p.failed());
                        if y.is_none() && !p.failed() {
                            ctx.note_missing(ri, p, &format!("{what} of class {name}"));
                        }
                        Some(XY {
                            x,
                            y,
                            client_bound: p.client_bound(),
                        })
                    })
                    .collect();
                out.push(Series {
                    name: ctx.group_name(run, &mode, &legend(&name)),
                    color,
                    line,
                    points,
                });
            }
            color += 1;
        }
    }
    if rates.is_empty() {
        return None;
    }
    Some(ctx.figure(
        "classes",
        &format!("Per request class: throughput and p99 response time {CF}"),
        vec![
            Panel {
                y_label: "responses/s".into(),
                series: rates,
            },
            Panel {
                y_label: "p99 response time (ms)".into(),
                series: p99,
            },
        ],
    ))
}

/// A run without a sweep: each class's responses/s and p99 over time (timeseries.csv).
pub fn classes_over_time(run: &RunData, subtitle: &str) -> Option<Figure> {
    let names = class_names(&run.points);
    if names.is_empty() {
        return None;
    }
    let series = |fig: crate::model::Col, line: LineKind| -> Vec<Series> {
        names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let pts = run.timeseries.get(fig.of_class(ClassName::new(n)))?;
                Some(Series {
                    name: legend(n),
                    color: i,
                    line,
                    points: pts.into_iter().map(|(t, v)| XY::new(t, v)).collect(),
                })
            })
            .collect()
    };
    let fig = Figure {
        stem: "classes".into(),
        title: format!("Per request class over time {CF}"),
        subtitle: subtitle.into(),
        x_label: "time since start (s)".into(),
        x_axis: XAxis::Linear,
        panels: vec![
            Panel {
                y_label: "responses/s".into(),
                series: series(col::RESPONSES, LineKind::Solid),
            },
            Panel {
                y_label: "p99 response time (ms)".into(),
                series: series(col::TOTAL_P99, LineKind::Dashed),
            },
        ],
        failed_x: Vec::new(),
        marks: Vec::new(),
    };
    fig.has_data().then_some(fig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legend_says_class_once() {
        assert_eq!(legend("class0"), "class0");
        assert_eq!(legend("Class3"), "Class3");
        assert_eq!(legend("static"), "class static");
        assert_eq!(legend("1"), "class 1");
        assert!(!CF.contains("seed"));
    }
}
