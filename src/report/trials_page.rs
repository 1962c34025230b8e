//! A repeated run's pages: the aggregate of `report::trials` written into the run folder
//! (summary.json with its `trials` section, summary.csv, trials.csv) with report.md and the
//! trials plot. Apart from the aggregate so that the figures (which read `Aggregate`) and the
//! markdown helpers sit between the two, not in a cycle with them.

use super::noise::{self, Interval};
use super::trials::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Aggregates a repeated run's folder again from its `trial-K` sub-folders (`synlab report` of
/// it): the aggregate files and report.md rewritten; returns report.md's path.
pub fn rewrite(dir: &Path) -> anyhow::Result<PathBuf> {
    let agg = aggregate(&trial_dirs(dir))?;
    write(dir, &agg)
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
    let mut json = serde_json::json!({
        "meta": meta,
        "points": rows,
        "thresholds": [],
        "trials": agg.trials_json(dir),
    });
    // The run's counts over all the trials (summed, as a point's).
    for key in ["run_totals", "run_classes"] {
        let each: Vec<&serde_json::Value> = all.iter().filter_map(|s| s.get(key)).collect();
        if each.len() == all.len() {
            let how = if key == "run_totals" {
                Combine::Sum
            } else {
                Combine::Median
            };
            json[key] = combine(&each, how);
        }
    }
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
    let plot = write_plot(dir, agg, &rows);
    let md = dir.join("report.md");
    write("report.md", markdown(dir, agg, &rows, &plot).as_bytes())?;
    match plot {
        Err(e) => Err(super::unwritten::Unwritten(vec![e]).into()),
        Ok(_) => Ok(md),
    }
}

/// The point's label: its number and sweep value.
fn point_label(rows: &[serde_json::Value], i: usize) -> String {
    rows.get(i)
        .and_then(|r| r["value"].as_str())
        .filter(|v| !v.is_empty())
        .map_or_else(|| format!("{}", i + 1), |v| format!("{} {v}", i + 1))
}

/// Draws the trials figure into `dir/plots` (None when there is nothing to draw; Err with
/// what could not be written).
fn write_plot(
    dir: &Path,
    agg: &Aggregate,
    rows: &[serde_json::Value],
) -> Result<Option<super::plots::Figure>, String> {
    let meta = &agg.first["meta"];
    let machine = meta
        .get("machine")
        .and_then(crate::sys::machine::Machine::from_json)
        .map_or_else(|| "not recorded".to_string(), |m| m.describe());
    let subtitle = format!(
        "run: {} · {}\nmachine: {machine}",
        meta["scenario"].as_str().unwrap_or("the scenario"),
        rows.first()
            .and_then(|r| r["backend"].as_str())
            .unwrap_or("")
    );
    let labels = (0..agg.points.len())
        .map(|i| point_label(rows, i))
        .collect();
    let Some(fig) = super::figures::trials_figure(agg, labels, subtitle) else {
        return Ok(None);
    };
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots)
        .map_err(|e| format!("creating {}: {e}", plots.display()))
        .and_then(|_| super::plots::render(&fig, &plots).map_err(|e| format!("{e:#}")))?;
    Ok(Some(fig))
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

fn markdown(
    dir: &Path,
    agg: &Aggregate,
    rows: &[serde_json::Value],
    plot: &Result<Option<super::plots::Figure>, String>,
) -> String {
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
        let _ = write!(s, "| {} |", point_label(rows, i));
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
    match plot {
        Ok(Some(f)) => {
            let _ = write!(
                s,
                "\n![{t}](plots/{st}.png)\n\n[SVG](plots/{st}.svg) · [PNG](plots/{st}.png): \
                 each dot a trial (left to right in trial order, so a drift shows), the bar the \
                 median of the trials, the band its interval.\n",
                t = f.title,
                st = f.stem
            );
        }
        Ok(None) => {}
        Err(e) => {
            let _ = writeln!(s, "\nThe trials plot could not be written: {e}");
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeated run's folder from three trial folders: the aggregate's nested totals are the
    /// trials' sums, report.md shows the trials plot, and `rewrite` (synlab report of the
    /// folder) makes the same files again.
    #[test]
    fn a_repeated_runs_folder_gets_the_trials_plot_and_summed_totals() {
        let dir = tempfile::tempdir().unwrap();
        for (k, (thr, resp)) in [(1000.0, 5000u64), (1100.0, 5500), (900.0, 4500)]
            .iter()
            .enumerate()
        {
            let t = dir.path().join(format!("{TRIAL_PREFIX}{}", k + 1));
            std::fs::create_dir(&t).unwrap();
            let v = serde_json::json!({
                "meta": {"scenario": "three"},
                "points": [{"point": 1, "value": "32", "throughput_per_s": thr,
                    "total_p50_ms": 1.0 + k as f64, "total_p99_ms": 9.0 + k as f64,
                    "failed": false, "client_bound": false, "error": "",
                    "totals": {"responses": resp}}],
                "run_totals": {"responses": resp},
            });
            std::fs::write(t.join("summary.json"), v.to_string()).unwrap();
            std::fs::write(
                t.join("summary.csv"),
                format!("point,throughput_per_s\n1,{thr}\n"),
            )
            .unwrap();
        }
        let md = rewrite(dir.path()).unwrap();
        let text = std::fs::read_to_string(&md).unwrap();
        assert!(text.contains("![3 trials"), "{text}");
        assert!(text.contains("(plots/trials.png)"), "{text}");
        let svg = std::fs::read_to_string(dir.path().join("plots/trials.svg")).unwrap();
        // The band (a rectangle per point and panel) and the trials' dots.
        assert!(
            svg.matches("opacity=\"0.22\"").count() >= 3,
            "a band per panel"
        );
        assert!(
            svg.matches("<circle").count() >= 9,
            "a dot per trial and panel"
        );
        assert!(dir.path().join("plots/trials.png").is_file());
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(v["points"][0]["throughput_per_s"], 1000.0);
        assert_eq!(v["points"][0]["totals"]["responses"], 15000);
        assert_eq!(v["run_totals"]["responses"], 15000);
    }

    #[test]
    fn a_cell_is_the_median_and_its_interval() {
        let f = Figure::of(
            "throughput_per_s",
            vec![100.0, 98.0, f64::NAN, 103.0, 99.0, 101.0, 97.0],
        );
        assert_eq!(cell(&f), "99.5 [97.0 .. 103]");
    }
}
