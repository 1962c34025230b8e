//! The aggregate of a repeated run (`synlab run --repeat N`): its trials' run folders
//! (`trial-1` ...) read back, and for every figure of every point the median over the trials,
//! its order-statistics interval (`noise::median_ci`) and the trials' spread; the latency
//! percentiles from the trials' HdrHistograms merged exactly (a percentile of the pooled
//! samples, not an average of percentiles). Written into the run folder as summary.json (with
//! a `trials` section), summary.csv, trials.csv and report.md.

use super::noise::{self, Interval};
use hdrhistogram::Histogram;
use std::fmt::Write as _;
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
/// the buckets of equal histograms add. None when no trial has it.
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
    fn of(name: &str, values: Vec<f64>) -> Self {
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
    first: serde_json::Value,
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

fn summary_json(dir: &Path) -> anyhow::Result<serde_json::Value> {
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

/// The figures report.md's table shows: (column, heading).
const SHOWN: [(&str, &str); 6] = [
    ("throughput_per_s", "responses/s"),
    ("attempts_per_s", "attempts/s"),
    ("errors_per_s", "errors/s"),
    ("total_p50_ms", "p50 ms"),
    ("total_p90_ms", "p90 ms"),
    ("total_p99_ms", "p99 ms"),
];

/// Writes the aggregate into the repeated run's folder: summary.json (trial 1's meta with
/// `trials` and `interrupted`, the aggregate rows, the `trials` section), summary.csv (trial
/// 1's columns), trials.csv (one line per point and figure) and report.md.
pub fn write(dir: &Path, agg: &Aggregate) -> anyhow::Result<PathBuf> {
    let all: Vec<serde_json::Value> = agg
        .trials
        .iter()
        .map(|t| summary_json(t))
        .collect::<anyhow::Result<_>>()?;
    let rows = agg.rows(&all);
    let mut meta = agg.first["meta"].as_object().cloned().unwrap_or_default();
    meta.insert("trials".into(), agg.trials.len().into());
    meta.insert("interrupted".into(), agg.interrupted.into());
    let json = serde_json::json!({
        "meta": meta,
        "points": rows,
        "thresholds": [],
        "trials": agg.trials_json(dir),
    });
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))
    };
    write(
        "summary.json",
        serde_json::to_string_pretty(&json)?.as_bytes(),
    )?;
    // summary.csv: trial 1's header, the aggregate's values.
    let first_csv = std::fs::read_to_string(agg.trials[0].join("summary.csv")).unwrap_or_default();
    let header: Vec<&str> = first_csv.lines().next().unwrap_or("").split(',').collect();
    let mut csv = header.join(",");
    csv.push('\n');
    for r in &rows {
        let cells: Vec<String> = header
            .iter()
            .map(|k| match r.get(*k) {
                Some(serde_json::Value::Number(n)) => n.to_string(),
                Some(serde_json::Value::String(s)) if s.contains([',', '"', '\n']) => {
                    format!("\"{}\"", s.replace('"', "\"\""))
                }
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Bool(b)) => b.to_string(),
                _ => String::new(),
            })
            .collect();
        csv.push_str(&cells.join(","));
        csv.push('\n');
    }
    write("summary.csv", csv.as_bytes())?;
    let mut long = String::from("point,figure,n,median,ci_lo,ci_hi,ci_level_pct,min,max,merged\n");
    let c = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else {
            String::new()
        }
    };
    for (i, figs) in agg.points.iter().enumerate() {
        for f in figs {
            let ci = f.ci.unwrap_or(Interval {
                lo: f64::NAN,
                hi: f64::NAN,
                coverage: f64::NAN,
            });
            let _ = writeln!(
                long,
                "{},{},{},{},{},{},{},{},{},{}",
                i + 1,
                f.name,
                f.values.iter().filter(|v| v.is_finite()).count(),
                c(f.median),
                c(ci.lo),
                c(ci.hi),
                c(ci.coverage * 100.0),
                c(f.min),
                c(f.max),
                f.merged.map(c).unwrap_or_default()
            );
        }
    }
    write("trials.csv", long.as_bytes())?;
    let md = dir.join("report.md");
    write("report.md", markdown(dir, agg, &rows).as_bytes())?;
    Ok(md)
}

/// `median [lo .. hi]` of a figure (its merged percentile first for a latency percentile).
pub fn cell(f: &Figure) -> String {
    let s = |v: f64| super::markdown::num(v);
    let ci =
        f.ci.map(|c| format!(" [{} .. {}]", s(c.lo), s(c.hi)))
            .unwrap_or_default();
    match f.merged {
        Some(m) => format!("{} (median {}{ci})", s(m), s(f.median)),
        None => format!("{}{ci}", s(f.median)),
    }
}

fn markdown(dir: &Path, agg: &Aggregate, rows: &[serde_json::Value]) -> String {
    let n = agg.trials.len();
    let level = agg.level_pct();
    let mut s =
        format!(
        "# {} trials of {}\n\nEach figure is the median over the {n} trials with its {level:.1} % \
         confidence interval [lo .. hi] (order statistics: distribution-free; {} trials reach \
         95 %); a latency percentile is first read from the trials' histograms merged, then the \
         median of the trials' own. trials.csv has every figure with the trials' spread.\n\n",
        n,
        agg.first["meta"]["scenario"].as_str().unwrap_or("the scenario"),
        noise::trials_for_median(noise::LEVEL),
    );
    s.push_str("| point |");
    for (_, head) in SHOWN {
        let _ = write!(s, " {head} |");
    }
    s.push_str(" min .. max responses/s |\n|---|");
    for _ in 0..=SHOWN.len() {
        s.push_str("---|");
    }
    s.push('\n');
    for (i, figs) in agg.points.iter().enumerate() {
        let label = rows
            .get(i)
            .and_then(|r| r["value"].as_str())
            .filter(|v| !v.is_empty())
            .map_or_else(|| format!("{}", i + 1), |v| format!("{} {v}", i + 1));
        let _ = write!(s, "| {label} |");
        for (col, _) in SHOWN {
            let c = figs.iter().find(|f| f.name == col).map(cell);
            let _ = write!(s, " {} |", c.unwrap_or_else(|| "-".into()));
        }
        let thr = figs.iter().find(|f| f.name == "throughput_per_s");
        let spread = thr.map_or("-".into(), |f| {
            format!(
                "{} .. {}",
                super::markdown::num(f.min),
                super::markdown::num(f.max)
            )
        });
        let _ = writeln!(s, " {spread} |");
    }
    s.push_str("\nTrials: ");
    let links: Vec<String> = agg
        .trials
        .iter()
        .map(|t| {
            let r = t.strip_prefix(dir).unwrap_or(t).display().to_string();
            format!("[{r}]({r}/report.md)")
        })
        .collect();
    s.push_str(&links.join(", "));
    s.push('\n');
    s
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
        assert_eq!(cell(&f), "99.5 [97.0 .. 103]");
    }
}
