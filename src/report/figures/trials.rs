//! A repeated run's figure: per point, each trial's value as a dot (left to right in trial
//! order, so a drift over the trials shows), the median as a bar and its interval as a band;
//! for throughput, p50 and p99. `report::trials` writes it into the run's report.md.

use crate::report::plots::{Figure, LineKind, Panel, Series, XAxis, XY};
use crate::report::trials::Aggregate;

/// The figures shown: (column, y label).
const SHOWN: [(&str, &str); 3] = [
    ("throughput_per_s", "responses/s"),
    ("total_p50_ms", "p50 (ms)"),
    ("total_p99_ms", "p99 (ms)"),
];

/// Half the width of a point's band, in category units (the points sit at 0, 1, 2 ...).
const HALF: f64 = 0.3;

/// The figure, or None when the trials measured none of the figures. `labels`: each point's
/// label on the x axis.
pub fn trials_figure(agg: &Aggregate, labels: Vec<String>, subtitle: String) -> Option<Figure> {
    let n = agg.trials.len();
    let level = agg.level_pct();
    let gap = |x: f64| XY {
        x,
        y: None,
        client_bound: false,
    };
    let panels: Vec<Panel> = SHOWN
        .iter()
        .filter_map(|(col, y_label)| {
            let (mut band, mut median, mut dots) = (Vec::new(), Vec::new(), Vec::new());
            for (i, figs) in agg.points.iter().enumerate() {
                let Some(f) = figs.iter().find(|f| f.name == *col) else {
                    continue;
                };
                let x = i as f64;
                if let Some(ci) = f.ci {
                    band.extend([XY::new(x - HALF, ci.lo), XY::new(x + HALF, ci.hi)]);
                }
                median.extend([
                    XY::new(x - HALF, f.median),
                    XY::new(x + HALF, f.median),
                    gap(x),
                ]);
                for (k, v) in f.values.iter().enumerate() {
                    let dx = if n > 1 {
                        HALF * 0.8 * (2.0 * k as f64 / (n - 1) as f64 - 1.0)
                    } else {
                        0.0
                    };
                    dots.push(XY::new(x + dx, *v));
                }
            }
            dots.iter().any(|p| p.y.is_some()).then(|| Panel {
                y_label: y_label.to_string(),
                series: vec![
                    Series {
                        name: format!("{level:.1} % interval\nof the median"),
                        color: 0,
                        line: LineKind::Band,
                        points: band,
                    },
                    Series {
                        name: "median of the trials".into(),
                        color: 0,
                        line: LineKind::Solid,
                        points: median,
                    },
                    Series {
                        name: format!("each trial ({n}),\nin trial order"),
                        color: 1,
                        line: LineKind::Scatter,
                        points: dots,
                    },
                ],
            })
        })
        .collect();
    if panels.is_empty() {
        return None;
    }
    Some(Figure {
        stem: "trials".into(),
        title: format!("{n} trials: each trial, the median and its interval"),
        subtitle,
        x_label: "point".into(),
        x_axis: XAxis::Labels(labels),
        panels,
        failed_x: Vec::new(),
        marks: Vec::new(),
    })
}
