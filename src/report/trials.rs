//! The aggregate of a repeated run (`synlab run --repeat N`): its trials' run folders
//! (`trial-1` ...) read back, and for every figure of every point the median over the trials,
//! its order-statistics interval (`noise::median_ci`) and the trials' spread; the latency
//! percentiles from the trials' HdrHistograms merged exactly (a percentile of the pooled
//! samples, not an average of percentiles). Written into the run folder as summary.json (with
//! a `trials` section), summary.csv, trials.csv and report.md.

use super::noise::{self, Interval};
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};

/// The prefix of a trial's sub-folder: `trial-1`, `trial-2` ...
pub const TRIAL_PREFIX: &str = "trial-";

/// The percentile columns that are read from the merged histograms: (column, hlog file,
/// quantile).
const MERGED: [(&str, &str, f64); 12] = [
    ("connect_p50_ms", "connect.hlog", 0.5),
    ("connect_p90_ms", "connect.hlog", 0.9),
    ("connect_p99_ms", "connect.hlog", 0.99),
    ("total_p50_ms", "total.hlog", 0.5),
    ("total_p90_ms", "total.hlog", 0.9),
    ("total_p98_ms", "total.hlog", 0.98),
    ("total_p99_ms", "total.hlog", 0.99),
    ("ttfb_p50_ms", "ttfb.hlog", 0.5),
    ("ttfb_p99_ms", "ttfb.hlog", 0.99),
    ("tls_handshake_p50_ms", "handshake.hlog", 0.5),
    ("tls_handshake_p90_ms", "handshake.hlog", 0.9),
    ("tls_handshake_p99_ms", "handshake.hlog", 0.99),
];

/// The trial folders of a repeated run folder, in trial order (empty for a single run).
pub fn trial_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let k = name.strip_prefix(TRIAL_PREFIX)?.parse().ok()?;
            e.path().is_dir().then(|| (k, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// A percentile in ms of a histogram of microseconds (as the lab's own summary computes it:
/// `ClientTotals::q_ms`); NaN when it holds nothing.
pub fn q_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64 / 1000.0
    }
}

/// The histograms of one tag (`point-N`) of every trial's `file`, added into one: exact, as
/// histograms of one lowest value and precision have the same buckets (their ranges may
/// differ: each grows to its values). None when no trial has it.
pub fn merged(trials: &[PathBuf], file: &str, tag: &str) -> anyhow::Result<Option<Histogram<u64>>> {
    let mut out: Option<Histogram<u64>> = None;
    for t in trials {
        let path = t.join(file);
        if !path.exists() {
            continue;
        }
        for (tg, h) in super::hlog::read(&path)? {
            if tg != tag {
                continue;
            }
            match &mut out {
                Some(m) => m
                    .add(&h)
                    .map_err(|e| anyhow::anyhow!("{}: adding {tag}: {e:?}", path.display()))?,
                None => out = Some(h),
            }
        }
    }
    Ok(out)
}

/// One figure of one point over the trials.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: String,
    /// Each trial's value, in trial order (NaN where a trial did not measure it).
    pub values: Vec<f64>,
    pub median: f64,
    pub ci: Option<Interval>,
    pub min: f64,
    pub max: f64,
    /// The percentile of the merged histograms, for a latency percentile column.
    pub merged: Option<f64>,
}

impl Figure {
    pub(super) fn of(name: &str, values: Vec<f64>) -> Self {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let (min, max) = finite
            .iter()
            .fold((f64::NAN, f64::NAN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        Figure {
            name: name.to_string(),
            median: noise::median(&finite),
            ci: noise::median_ci(&finite, noise::LEVEL),
            min,
            max,
            values,
            merged: None,
        }
    }

    /// The figure the aggregate's summary row carries: the merged percentile, else the median.
    pub fn value(&self) -> f64 {
        self.merged.unwrap_or(self.median)
    }

    fn json(&self) -> serde_json::Value {
        let n = finite_json;
        serde_json::json!({
            "median": n(self.median),
            "ci_lo": n(self.ci.map_or(f64::NAN, |c| c.lo)),
            "ci_hi": n(self.ci.map_or(f64::NAN, |c| c.hi)),
            "ci_level_pct": n(self.ci.map_or(f64::NAN, |c| c.level_pct())),
            "min": n(self.min),
            "max": n(self.max),
            "merged": self.merged.map_or(serde_json::Value::Null, n),
            "values": self.values.iter().map(|v| n(*v)).collect::<Vec<_>>(),
        })
    }
}

/// A repeated run's trials, point by point.
#[derive(Debug, Clone)]
pub struct Aggregate {
    pub trials: Vec<PathBuf>,
    /// Per point (trial 1's order): its figures.
    pub points: Vec<Vec<Figure>>,
    /// The first trial's summary.json (meta and point rows the aggregate rows are made from).
    pub(super) first: serde_json::Value,
    /// Any trial interrupted, and the trials that failed a point.
    pub interrupted: bool,
}

/// The numbers of a summary.json point row (the top-level numbers: figures, not counts).
fn numbers(p: &serde_json::Value) -> Vec<(String, f64)> {
    p.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "point")
        .filter_map(|(k, v)| match v {
            serde_json::Value::Number(n) => Some((k.clone(), n.as_f64().unwrap_or(f64::NAN))),
            serde_json::Value::Null => Some((k.clone(), f64::NAN)),
            _ => None,
        })
        .collect()
}

pub(super) fn summary_json(dir: &Path) -> anyhow::Result<serde_json::Value> {
    let path = dir.join("summary.json");
    let src = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&src).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Reads the trials back and aggregates them (points matched by position: the trials ran
/// one scenario's plan).
pub fn aggregate(trials: &[PathBuf]) -> anyhow::Result<Aggregate> {
    let sums: Vec<serde_json::Value> = trials
        .iter()
        .map(|t| summary_json(t))
        .collect::<anyhow::Result<_>>()?;
    let first = sums
        .first()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("a repeated run without a trial"))?;
    let rows = |s: &serde_json::Value| s["points"].as_array().cloned().unwrap_or_default();
    let mut points = Vec::new();
    for (i, p) in rows(&first).iter().enumerate() {
        let mut figures = Vec::new();
        for (name, _) in numbers(p) {
            let values: Vec<f64> = sums
                .iter()
                .map(|s| {
                    rows(s)
                        .get(i)
                        .and_then(|q| q.get(&name))
                        .and_then(|v| v.as_f64())
                        .unwrap_or(f64::NAN)
                })
                .collect();
            let mut f = Figure::of(&name, values);
            if let Some((_, file, q)) = MERGED.iter().find(|m| m.0 == name) {
                let tag = format!("point-{}", i + 1);
                f.merged = merged(trials, file, &tag)?.map(|h| q_ms(&h, *q));
            }
            figures.push(f);
        }
        points.push(figures);
    }
    let interrupted = sums
        .iter()
        .any(|s| s["meta"]["interrupted"].as_bool() == Some(true));
    Ok(Aggregate {
        trials: trials.to_vec(),
        points,
        first,
        interrupted,
    })
}

/// A point row's nested values, aggregated over the trials by [`combine`].
const NESTED: [&str; 3] = ["totals", "paths", "classes"];

/// How a nested number combines over the trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Combine {
    Median,
    /// Counts: summed, so a point's identities (sent = responses + errors + in flight) hold
    /// over all its trials.
    Sum,
}

/// A nested value (`totals`, `paths`, `classes`, `run_totals`) over the trials: the whole
/// numbers under a `totals` key summed, every other number the median of the trials' (as the
/// point's own figures); objects key by key, arrays of named objects matched by `name` (else by
/// position); text and flags trial 1's.
pub(super) fn combine(vals: &[&serde_json::Value], how: Combine) -> serde_json::Value {
    use serde_json::Value as V;
    let Some(first) = vals.first() else {
        return V::Null;
    };
    match first {
        V::Object(o) => V::Object(
            o.iter()
                .map(|(k, _)| {
                    let how = if k == "totals" { Combine::Sum } else { how };
                    let kids: Vec<&V> = vals.iter().filter_map(|t| t.get(k)).collect();
                    (k.clone(), combine(&kids, how))
                })
                .collect(),
        ),
        V::Array(items) => V::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let kids: Vec<&V> = vals
                        .iter()
                        .filter_map(|t| match item.get("name") {
                            Some(n) => t.as_array()?.iter().find(|x| x.get("name") == Some(n)),
                            None => t.get(i),
                        })
                        .collect();
                    combine(&kids, how)
                })
                .collect(),
        ),
        V::Number(_) | V::Null => {
            let whole: Option<Vec<u64>> = vals.iter().map(|v| v.as_u64()).collect();
            match whole {
                Some(w) if how == Combine::Sum => w.iter().sum::<u64>().into(),
                _ => {
                    let finite: Vec<f64> = vals
                        .iter()
                        .filter_map(|v| v.as_f64())
                        .filter(|v| v.is_finite())
                        .collect();
                    finite_json(noise::median(&finite))
                }
            }
        }
        _ => (*first).clone(),
    }
}

/// The server's count of responses, whose status classes are [`server_classes`].
const SERVER_TOTAL: &str = "server_responses_per_s";

/// The server's status classes in an aggregate point row (`server_2xx_per_s` ... whatever
/// columns it has): the median `server_responses_per_s` split by each class's share of the
/// classes over all the `trials` (their rows of the point), so the classes add up to the total
/// they are of. Their own medians, drawn from different trials, need not (2xx 488/s above
/// responses 487/s); nor need a trial's own classes, when its access log's lines were counted
/// over another span than its total (shares within a trial do not depend on it). A trial
/// without the total or a class (no access log it trusts) is left out; without any trial the
/// medians stay.
fn server_classes(row: &mut serde_json::Value, trials: &[&serde_json::Value]) {
    let is_class = |k: &str| k.starts_with("server_") && k.ends_with("xx_per_s");
    let classes: Vec<String> = row
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys())
        .filter(|k| is_class(k))
        .cloned()
        .collect();
    let num = |p: &serde_json::Value, k: &str| p[k].as_f64().filter(|v| v.is_finite());
    let Some(total) = num(row, SERVER_TOTAL) else {
        return;
    };
    let whole: Vec<&&serde_json::Value> = trials
        .iter()
        .filter(|p| num(p, SERVER_TOTAL).is_some() && classes.iter().all(|c| num(p, c).is_some()))
        .collect();
    let of_all = |k: &str| whole.iter().filter_map(|p| num(p, k)).sum::<f64>();
    let all_classes: f64 = classes.iter().map(|c| of_all(c)).sum();
    if all_classes <= 0.0 {
        return;
    }
    for c in &classes {
        row[c] = serde_json::json!(total * of_all(c) / all_classes);
    }
}

/// How the interval is computed, as summary.json's `trials.ci_method` says it.
pub const CI_METHOD: &str = "order statistics of the trials' values (binomial, distribution-free): \
    the widest interval [x(k), x(n+1-k)] whose coverage reaches 95 %, else min .. max with its own coverage";

impl Aggregate {
    /// The level the trials' order-statistics intervals reach (95 % needs 6 trials).
    pub fn level_pct(&self) -> f64 {
        self.points
            .iter()
            .flatten()
            .find_map(|f| f.ci)
            .map_or(0.0, |c| c.level_pct())
    }

    /// The aggregate's point rows: trial 1's rows with every number replaced by its median over
    /// the trials (a latency percentile by the merged histograms' percentile), a point failed
    /// or CLIENT-BOUND when it was in any trial.
    pub fn rows(&self, all: &[serde_json::Value]) -> Vec<serde_json::Value> {
        let first = self.first["points"].as_array().cloned().unwrap_or_default();
        first
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut row = p.clone();
                for f in &self.points[i] {
                    let v = f.value();
                    row[&f.name] = if v.is_finite() {
                        serde_json::json!(v)
                    } else {
                        serde_json::Value::Null
                    };
                }
                let each: Vec<&serde_json::Value> = all.iter().map(|s| &s["points"][i]).collect();
                server_classes(&mut row, &each);
                for key in NESTED {
                    if row.get(key).is_some() {
                        let each: Vec<&serde_json::Value> =
                            all.iter().map(|s| &s["points"][i][key]).collect();
                        let how = if key == "totals" {
                            Combine::Sum
                        } else {
                            Combine::Median
                        };
                        row[key] = combine(&each, how);
                    }
                }
                // A flag raised in any trial, with that trial's reason when trial 1 has none.
                for (flag, why) in [("failed", "error"), ("client_bound", "client_bound_reason")] {
                    let raised = all
                        .iter()
                        .map(|s| &s["points"][i])
                        .find(|p| p[flag].as_bool() == Some(true));
                    row[flag] = raised.is_some().into();
                    if let Some(p) = raised {
                        if row[why].as_str().is_none_or(str::is_empty) {
                            row[why] = p[why].clone();
                        }
                    }
                }
                if row["failed"] == true && row["error"].as_str().is_none_or(str::is_empty) {
                    row["error"] = "the point failed in a trial: see its trial folder".into();
                }
                row
            })
            .collect()
    }

    /// summary.json's `trials` section.
    pub fn trials_json(&self, dir: &Path) -> serde_json::Value {
        let rel = |t: &PathBuf| t.strip_prefix(dir).unwrap_or(t).display().to_string();
        serde_json::json!({
            "n": self.trials.len(),
            "folders": self.trials.iter().map(rel).collect::<Vec<_>>(),
            "ci_method": CI_METHOD,
            "percentiles": "merged: the trials' HdrHistograms of a point added, then read",
            "points": self.points.iter().enumerate().map(|(i, figs)| {
                let mut o = serde_json::Map::new();
                for f in figs {
                    o.insert(f.name.clone(), f.json());
                }
                serde_json::json!({"point": i + 1, "figures": o})
            }).collect::<Vec<_>>(),
        })
    }
}

/// A figure as JSON: a number, or null where none could be made (JSON has no NaN).
pub fn finite_json(v: f64) -> serde_json::Value {
    if v.is_finite() {
        serde_json::json!(v)
    } else {
        serde_json::Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_percentiles_equal_one_histogram_of_all_samples() {
        // Three trials of different spreads; the pooled samples in one histogram.
        let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        let mut trials = Vec::new();
        for (k, (lo, step)) in [(800u64, 3u64), (1_000, 11), (5_000, 97)]
            .iter()
            .enumerate()
        {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            for i in 0..(2_000 + 500 * k as u64) {
                let v = lo + (i * step) % 40_000;
                h.record(v).unwrap();
                all.record(v).unwrap();
            }
            trials.push(h);
        }
        let mut m = trials[0].clone();
        for h in &trials[1..] {
            m.add(h).unwrap();
        }
        for q in [0.5, 0.9, 0.98, 0.99, 0.999] {
            assert_eq!(q_ms(&m, q), q_ms(&all, q), "q {q}");
        }
        // And not the average of the trials' own percentiles.
        let avg: f64 = trials.iter().map(|h| q_ms(h, 0.99)).sum::<f64>() / 3.0;
        assert_ne!(avg, q_ms(&all, 0.99));
    }

    #[test]
    fn nested_counts_are_summed_and_nested_figures_are_medians_matched_by_name() {
        let trial = |resp: u64, sent: u64, p50: f64, a_rate: f64, order_ab: bool| {
            let a = serde_json::json!({"name": "a", "responses_per_s": a_rate,
                "totals": {"responses": resp, "requests": {"sent": sent}}});
            let b = serde_json::json!({"name": "b", "responses_per_s": 7.0,
                "totals": {"responses": 1, "requests": {"sent": 1}}});
            serde_json::json!({
                "totals": {"responses": resp, "requests": {"sent": sent, "errors": 0},
                           "tls": {"resumed_share": p50 / 10.0}},
                "paths": [{"name": "lan", "total_p50_ms": p50}],
                "classes": if order_ab { vec![a, b] } else { vec![b, a] },
            })
        };
        let t = [
            trial(10, 11, 1.0, 100.0, true),
            trial(20, 21, 3.0, 300.0, false),
            trial(30, 31, 2.0, 200.0, true),
        ];
        let each = |k: &str| t.iter().map(|x| &x[k]).collect::<Vec<_>>();
        let totals = combine(&each("totals"), Combine::Sum);
        assert_eq!(totals["responses"], 60);
        assert_eq!(totals["requests"]["sent"], 63);
        assert_eq!(totals["requests"]["errors"], 0);
        // A share under totals is no count: its median.
        assert_eq!(totals["tls"]["resumed_share"], 0.2);
        let paths = combine(&each("paths"), Combine::Median);
        assert_eq!(paths[0]["name"], "lan");
        assert_eq!(paths[0]["total_p50_ms"], 2.0);
        // Classes by name, whatever their order in a trial; their totals summed.
        let classes = combine(&each("classes"), Combine::Median);
        assert_eq!(classes[0]["name"], "a");
        assert_eq!(classes[0]["responses_per_s"], 200.0);
        assert_eq!(classes[0]["totals"]["responses"], 60);
        assert_eq!(classes[1]["totals"]["requests"]["sent"], 3);
    }

    /// The medians of the total and of each class, drawn from different trials, did not add
    /// up (2xx 100 + 4xx 10 under 150 responses/s here), whether or not a trial's own did
    /// (trial 1's classes are over a shorter span than its total, 2 % above it).
    #[test]
    fn the_aggregates_server_classes_add_up_to_its_server_responses() {
        let point = |total: f64, s2xx: f64, s4xx: f64| {
            serde_json::json!({"point": 1, "server_responses_per_s": total,
                "server_2xx_per_s": s2xx, "server_3xx_per_s": 0.0,
                "server_4xx_per_s": s4xx, "server_5xx_per_s": 0.0})
        };
        let trial = |p: serde_json::Value| serde_json::json!({"meta": {}, "points": [p]});
        let all = [
            trial(point(100.0, 91.8, 10.2)),
            trial(point(200.0, 200.0, 0.0)),
            trial(point(150.0, 100.0, 50.0)),
        ];
        let agg = Aggregate {
            trials: Vec::new(),
            points: vec![[
                "server_responses_per_s",
                "server_2xx_per_s",
                "server_4xx_per_s",
            ]
            .iter()
            .map(|k| {
                Figure::of(
                    k,
                    all.iter()
                        .map(|t| t["points"][0][k].as_f64().unwrap())
                        .collect(),
                )
            })
            .collect()],
            first: all[0].clone(),
            interrupted: false,
        };
        let row = &agg.rows(&all)[0];
        let f = |k: &str| row[k].as_f64().unwrap();
        assert_eq!(f("server_responses_per_s"), 150.0);
        let classes: f64 = ["2xx", "3xx", "4xx", "5xx"]
            .iter()
            .map(|c| f(&format!("server_{c}_per_s")))
            .sum();
        assert!((classes - 150.0).abs() < 1e-9, "{row:#}");
        // The shares of all the trials' classes: 2xx 391.8 of 452.
        let want = 150.0 * 391.8 / 452.0;
        assert!((f("server_2xx_per_s") - want).abs() < 1e-9, "{row:#}");
        // Without an access log the classes stay null.
        let bare = [trial(
            serde_json::json!({"point": 1, "server_responses_per_s": 5.0,
            "server_2xx_per_s": null}),
        )];
        let agg = Aggregate {
            points: vec![vec![Figure::of("server_responses_per_s", vec![5.0])]],
            first: bare[0].clone(),
            ..agg
        };
        assert!(agg.rows(&bare)[0]["server_2xx_per_s"].is_null());
    }

    #[test]
    fn a_figure_has_its_median_interval_and_spread() {
        let f = Figure::of(
            "throughput_per_s",
            vec![100.0, 98.0, f64::NAN, 103.0, 99.0, 101.0, 97.0],
        );
        assert_eq!(f.median, 99.5);
        assert_eq!((f.min, f.max), (97.0, 103.0));
        let ci = f.ci.unwrap();
        assert_eq!((ci.lo, ci.hi), (97.0, 103.0));
        assert!(ci.coverage > 0.95);
    }
}
