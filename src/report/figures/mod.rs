//! Which figures a run gets, chosen by its sweep parameter, with the axes of the seed papers'
//! figures (seed 000 Figs. 5-10, seed 004's capacity method), built from one run or overlaid
//! from several (before/after).

mod classes;
mod sweep;
mod timeseries;
mod trials;

pub use classes::{classes_over_time, point_classes};
pub use sweep::sweep_figures;
pub use timeseries::timeseries_figure;
pub use trials::trials_figure;

use super::plots::{Figure, LineKind, Panel, Series, XAxis, XY};
use super::read::{Point, RunData};
use crate::model::knob::PathKnob;
use crate::model::summary::{SummaryCol, SummaryText};
use crate::model::sweep::SweepParam;

/// Which figures a sweep parameter calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Rate,
    Count,
    /// A network path's knob: throughput and connections against it.
    Path(PathKnob),
    Burst,
    /// The resumed share of TLS handshakes: handshakes/s full and resumed against it.
    Resumed,
    Other,
}

pub fn param_kind(param: Option<SweepParam>) -> ParamKind {
    use crate::model::LoadKnob as L;
    use SweepParam as P;
    match param {
        Some(P::Load(L::Rate)) => ParamKind::Rate,
        Some(P::Path(k)) => ParamKind::Path(k),
        Some(P::Burst | P::Load(L::BurstRatio | L::BurstFraction)) => ParamKind::Burst,
        Some(P::Load(L::Resumed)) => ParamKind::Resumed,
        // A knob that counts (D, clients, streams, requests per connection) is a count's axis.
        Some(P::Load(k)) if k.whole() => ParamKind::Count,
        Some(P::Concurrency | P::Workers) => ParamKind::Count,
        Some(P::Load(_) | P::Workload | P::Http | P::Steer | P::Syncookies | P::Backlog) | None => {
            ParamKind::Other
        }
    }
}

/// The x axis label, with units, for a sweep parameter.
pub fn x_label(param: Option<SweepParam>) -> String {
    param.map_or("sweep point", SweepParam::axis).into()
}

/// The numeric x of a point for `param`, None if its value is not a number (a category, an
/// unlimited bandwidth). A rate sweep's x is the rate the schedule aimed at, as measured.
pub fn x_number(param: Option<SweepParam>, p: &Point) -> Option<f64> {
    let param = param?;
    let value = || p.sweep_value(param).and_then(|v| v.x());
    let x = match param {
        SweepParam::Load(crate::model::LoadKnob::Rate) => Some(p.num(SummaryCol::OfferedRate))
            .filter(|x| x.is_finite())
            .or_else(value),
        _ => value(),
    };
    x.filter(|x| x.is_finite())
}

/// A point's series: its mode (and steering, when the run varies it), and its curve
/// (`[sweep.curves]`) as the paper labels it.
fn series_key(r: &RunData, p: &Point) -> String {
    let curve = p.text(SummaryText::CurveValue);
    if curve.is_empty() {
        r.group_of(p)
    } else {
        format!("{} {}", r.group_of(p), category_label(&curve))
    }
}

/// A run's series in order of first appearance.
fn series_of(r: &RunData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &r.points {
        let k = series_key(r, p);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// "4x@10%" (the lab's burst label) as the paper writes it: "(4, 10%)".
pub fn category_label(v: &str) -> String {
    match v.split_once("x@") {
        Some((r, f)) => format!("({r}, {f})"),
        None => v.to_string(),
    }
}

/// The runs being drawn and how their series are named.
pub struct Ctx<'a> {
    pub runs: &'a [RunData],
    pub param: Option<SweepParam>,
    pub x_axis: XAxis,
    pub subtitle: String,
    /// Points a curve has no value at (drawn as gaps), as report.md lists them: "point 5: no
    /// ESTABLISHED (mean)". Failed points are said elsewhere and not listed.
    missing: std::cell::RefCell<Vec<(usize, f64, String)>>,
}

impl<'a> Ctx<'a> {
    pub fn new(runs: &'a [RunData], subtitle: String) -> Ctx<'a> {
        let param = runs.first().and_then(|r| r.param());
        let numeric = runs
            .iter()
            .flat_map(|r| &r.points)
            .all(|p| x_number(param, p).is_some());
        let x_axis = if !numeric {
            let mut labels: Vec<String> = Vec::new();
            for p in runs.iter().flat_map(|r| &r.points) {
                let l = category_label(&p.text(SummaryText::Value));
                if !labels.contains(&l) {
                    labels.push(l);
                }
            }
            XAxis::Labels(labels)
        } else if param_kind(param) == ParamKind::Count {
            let xs: Vec<f64> = runs
                .iter()
                .flat_map(|r| &r.points)
                .filter_map(|p| x_number(param, p))
                .collect();
            let (lo, hi) = xs
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
            if lo > 0.0 && hi / lo >= 30.0 {
                XAxis::Log
            } else {
                XAxis::Linear
            }
        } else {
            XAxis::Linear
        };
        Ctx {
            runs,
            param,
            x_axis,
            subtitle,
            missing: Default::default(),
        }
    }

    /// The sweep's curves are burst shapes (seed 000 Fig. 8).
    pub fn burst_curves(&self) -> bool {
        self.runs
            .iter()
            .flat_map(|r| &r.points)
            .any(|p| p.text(SummaryText::CurveParam) == SweepParam::Burst.name())
    }

    /// The points missing from the curves drawn so far, once each, by run and point.
    pub fn missing(&self) -> Vec<String> {
        let mut m = self.missing.borrow().clone();
        m.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        m.into_iter().map(|(_, _, line)| line).collect()
    }

    fn note_missing(&self, ri: usize, p: &Point, label: &str) {
        let run = if self.runs.len() > 1 {
            format!("`{}` ", self.runs[ri].name)
        } else {
            String::new()
        };
        let line = format!("{run}point {}: no {label}", p.number());
        let mut m = self.missing.borrow_mut();
        if !m.iter().any(|(_, _, l)| *l == line) {
            m.push((ri, p.num(SummaryCol::Point), line));
        }
    }

    fn x(&self, p: &Point) -> Option<f64> {
        match &self.x_axis {
            XAxis::Labels(l) => {
                let v = category_label(&p.text(SummaryText::Value));
                l.iter().position(|c| *c == v).map(|i| i as f64)
            }
            _ => x_number(self.param, p),
        }
    }

    /// (run index, run, series, that run+series' points sorted by x): a series is a mode,
    /// and with `[sweep.curves]` a curve of it (`open (4, 10%)`).
    fn groups(&self) -> Vec<(usize, &RunData, String, Vec<&Point>)> {
        let mut out = Vec::new();
        for (ri, r) in self.runs.iter().enumerate() {
            for s in series_of(r) {
                let mut pts: Vec<&Point> =
                    r.points.iter().filter(|p| series_key(r, p) == s).collect();
                pts.sort_by(|a, b| {
                    let (xa, xb) = (self.x(a).unwrap_or(f64::NAN), self.x(b).unwrap_or(f64::NAN));
                    xa.total_cmp(&xb)
                });
                out.push((ri, r, s, pts));
            }
        }
        out
    }

    fn group_name(&self, run: &RunData, series: &str, metric: &str) -> String {
        let multi = self.runs.iter().any(|r| series_of(r).len() > 1);
        // One mode with curves: the curve alone names the series.
        let one_mode = self.runs.iter().all(|r| r.modes().len() <= 1);
        let series = match series.split_once(' ') {
            Some((_, curve)) if one_mode => curve,
            _ => series,
        };
        let m = if multi {
            format!("{series}: {metric}")
        } else {
            metric.to_string()
        };
        if self.runs.len() > 1 {
            format!("{}\n  {m}", run.name)
        } else {
            m
        }
    }

    /// One series per (run, mode, metric); colors unique, line kind per metric.
    pub fn series(&self, metrics: &[(SummaryCol, &str, LineKind)]) -> Vec<Series> {
        self.series_for(metrics, |_| true)
    }

    /// [`Ctx::series`] of the runs `of` keeps: an overlay's HTTP/3 runs have no accept queue
    /// (their 0 is no measurement), its TCP runs no QUIC handshakes. Colors stay unique across
    /// calls with as many metrics.
    pub fn series_for(
        &self,
        metrics: &[(SummaryCol, &str, LineKind)],
        of: impl Fn(&RunData) -> bool,
    ) -> Vec<Series> {
        let mut out = Vec::new();
        for (gi, (ri, run, mode, pts)) in self.groups().into_iter().enumerate() {
            if !of(run) {
                continue;
            }
            for (mi, (key, label, line)) in metrics.iter().enumerate() {
                if !pts.iter().any(|p| p.has(*key)) {
                    continue;
                }
                let points = pts
                    .iter()
                    .filter_map(|p| {
                        let x = self.x(p)?;
                        let y = Some(p.num(*key)).filter(|y| y.is_finite() && !p.failed());
                        if y.is_none() && !p.failed() {
                            self.note_missing(ri, p, label);
                        }
                        Some(XY {
                            x,
                            y,
                            client_bound: p.client_bound(),
                        })
                    })
                    .collect();
                out.push(Series {
                    name: self.group_name(run, &mode, label),
                    color: gi * metrics.len() + mi,
                    line: *line,
                    points,
                });
            }
        }
        out
    }

    fn xs(&self) -> Vec<f64> {
        self.runs
            .iter()
            .flat_map(|r| &r.points)
            .filter_map(|p| self.x(p))
            .collect()
    }

    fn failed_x(&self) -> Vec<f64> {
        self.runs
            .iter()
            .flat_map(|r| &r.points)
            .filter(|p| p.failed())
            .filter_map(|p| self.x(p))
            .collect()
    }

    /// y = x over the data's x range (sampled densely so it stays straight on a log axis).
    fn identity(&self, name: &str) -> Series {
        let xs = self.xs();
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let points = if lo.is_finite() && hi >= lo {
            (0..=40)
                .map(|i| {
                    let x = if self.x_axis == XAxis::Log && lo > 0.0 {
                        lo * (hi / lo).powf(i as f64 / 40.0)
                    } else {
                        lo + (hi - lo) * i as f64 / 40.0
                    };
                    XY::new(x, x)
                })
                .collect()
        } else {
            Vec::new()
        };
        Series {
            name: name.into(),
            color: 0,
            line: LineKind::Reference,
            points,
        }
    }

    fn horizontal(&self, name: &str, y: f64) -> Series {
        let xs = self.xs();
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        Series {
            name: name.into(),
            color: 0,
            line: LineKind::Reference,
            points: if lo.is_finite() && y.is_finite() {
                vec![XY::new(lo, y), XY::new(hi, y)]
            } else {
                Vec::new()
            },
        }
    }

    fn figure(&self, stem: &str, title: &str, panels: Vec<Panel>) -> Figure {
        Figure {
            stem: stem.into(),
            title: title.into(),
            subtitle: self.subtitle.clone(),
            x_label: x_label(self.param),
            x_axis: self.x_axis.clone(),
            panels,
            failed_x: self.failed_x(),
            marks: Vec::new(),
        }
    }

    /// The largest value of a column over every run's points (0 when none has it).
    fn max(&self, key: SummaryCol) -> f64 {
        self.runs
            .iter()
            .flat_map(|r| &r.points)
            .map(|p| p.num(key))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    }

    fn has(&self, key: SummaryCol) -> bool {
        self.runs.iter().flat_map(|r| &r.points).any(|p| p.has(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::read::Cell;

    fn pt(value: &str, extra: &[(SummaryCol, f64)]) -> Point {
        let mut p = Point::default();
        p.0.insert(SummaryText::Value.name().into(), Cell::Text(value.into()));
        for (k, v) in extra {
            p.0.insert(k.name().into(), Cell::Num(*v));
        }
        p
    }

    #[test]
    fn x_values_take_units() {
        let p = |name| SweepParam::from_name(name);
        assert_eq!(x_number(p("network.rtt"), &pt("100ms", &[])), Some(100.0));
        assert_eq!(x_number(p("network.rtt"), &pt("0.2s", &[])), Some(200.0));
        assert_eq!(x_number(p("network.loss"), &pt("2.5%", &[])), Some(2.5));
        assert_eq!(
            x_number(p("network.bandwidth"), &pt("10mbit", &[])),
            Some(10.0)
        );
        assert_eq!(x_number(p("load.concurrency"), &pt("64", &[])), Some(64.0));
        assert_eq!(
            x_number(
                p("load.rate"),
                &pt("500", &[(SummaryCol::OfferedRate, 480.0)])
            ),
            Some(480.0)
        );
        assert_eq!(x_number(p("load.rate"), &pt("500", &[])), Some(500.0));
        assert_eq!(x_number(p("load.burst"), &pt("4x@10%", &[])), None);
        assert_eq!(category_label("4x@10%"), "(4, 10%)");
    }
}
