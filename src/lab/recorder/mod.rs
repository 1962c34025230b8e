//! The recorder: owns the run folder and writes its files as the run goes. `scenario.toml`
//! (resolved), `timeseries.csv` (streamed, one row per sample), `summary.csv` /
//! `summary.json` (rewritten whole after every sweep point, so an interrupted run leaves valid
//! files), the points' latency distributions (`connect.hlog`, `total.hlog`: hlog.rs),
//! `events.csv`, `run.log` and the snapshots. The report (`report::read`) reads them
//! back. Without a run folder (tests) it records nothing.

pub mod hlog;
mod records;

use crate::metrics::store::{Event, Store};
use crate::model::summary::SummaryRow;
use crate::model::Col;
use crate::report::thresholds::Verdict;
use crate::sys::files::atomic_write;
use anyhow::Context;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use records::{class_columns, csv_record, csv_row, fmt_num, header};

/// Records a run into its folder (or nowhere: `Recorder::off`).
pub struct Recorder {
    folder: Option<Folder>,
}

/// The files of one run folder, open as the run goes.
struct Folder {
    dir: PathBuf,
    log: BufWriter<File>,
    /// timeseries.csv, once its first row is written, and its columns in order.
    ts: Option<(BufWriter<File>, Vec<Col>)>,
    ts_path: PathBuf,
    summary: Vec<SummaryRow>,
    /// Extra facts for summary.json (backend, target, notices).
    meta: serde_json::Map<String, serde_json::Value>,
    /// The whole run's counts, once it has ended (summary.json's `run_totals`).
    run_totals: Option<crate::model::Totals>,
    /// Each request class's counts over the whole run (summary.json's `run_classes`).
    run_classes: Vec<(String, crate::model::Totals)>,
    /// The capacity of each series of the sweep so far (summary.json's `capacity`).
    capacity: Vec<crate::model::capacity::Capacity>,
    /// Verdicts of the scenario's thresholds and gate (summary.json `thresholds`).
    thresholds: Vec<Verdict>,
    /// The points' latency distributions, written with the summary once there is one.
    latencies: hlog::Latencies,
    /// How many points the latency logs on disk hold.
    latencies_written: usize,
}

impl Recorder {
    /// Records nothing: no run folder.
    pub fn off() -> Self {
        Recorder { folder: None }
    }

    /// Creates `<parent>/<name>-<timestamp>/` and writes the resolved scenario.
    pub fn create(parent: &Path, name: &str, scenario_toml: &str) -> anyhow::Result<Self> {
        Ok(Recorder {
            folder: Some(Folder::create(parent, name, scenario_toml)?),
        })
    }

    /// The run folder, if there is one.
    pub fn dir(&self) -> Option<&Path> {
        self.folder.as_ref().map(|f| f.dir.as_path())
    }

    /// A line for run.log, with the time of day.
    pub fn log(&mut self, line: &str) {
        if let Some(f) = &mut self.folder {
            f.log(line);
        }
    }

    /// Appends one row to timeseries.csv (a None cell is left empty).
    pub fn row(&mut self, t_s: f64, cols: &[(Col, Option<f64>)]) -> anyhow::Result<()> {
        match &mut self.folder {
            Some(f) => f.row(t_s, cols),
            None => Ok(()),
        }
    }

    /// Keeps a measured point's summary row (written by `write_summary`). Nothing is kept
    /// without a run folder.
    pub fn summary_point(&mut self, row: SummaryRow) {
        if let Some(f) = &mut self.folder {
            f.summary.push(row);
        }
    }

    /// The run's t = 0 on the wall clock (when the lab had started): the latency logs' base.
    pub fn set_start(&mut self, at: SystemTime) {
        if let Some(f) = &mut self.folder {
            f.latencies.set_base(at);
        }
    }

    /// Keeps a point's latency distributions (microseconds), measured from `start_s` for
    /// `dur_s`, and each of its request classes' (written with the summary).
    pub fn latencies(
        &mut self,
        point: usize,
        span: (f64, f64),
        whole: &crate::lab::client_agg::ClientTotals,
        classes: &[(String, crate::lab::client_agg::ClientTotals)],
    ) {
        if let Some(f) = &mut self.folder {
            let l = &mut f.latencies;
            l.push(hlog::tag(point, None), span, hists(whole));
            for (name, k) in classes {
                l.push(hlog::tag(point, Some(name)), span, hists(k));
            }
        }
    }

    /// The summary rows kept so far.
    pub fn points(&self) -> &[SummaryRow] {
        self.folder.as_ref().map_or(&[], |f| &f.summary)
    }

    /// Each request class's counts over the whole run, for summary.json's `run_classes`
    /// (written with the run's totals; nothing with fewer than two classes).
    pub fn run_classes(&mut self, classes: Vec<(String, crate::model::Totals)>) {
        if let Some(f) = &mut self.folder {
            f.run_classes = classes;
        }
    }

    /// The sweep's capacity at its target, per series, for summary.json's `capacity`.
    pub fn capacity(&mut self, c: Vec<crate::model::capacity::Capacity>) {
        if let Some(f) = &mut self.folder {
            f.capacity = c;
        }
    }

    /// The capacity last kept (none without a run folder or a sweep).
    pub fn capacity_found(&self) -> &[crate::model::capacity::Capacity] {
        self.folder.as_ref().map_or(&[], |f| &f.capacity)
    }

    /// A fact for summary.json's `meta`.
    pub fn meta(&mut self, key: &str, value: serde_json::Value) {
        if let Some(f) = &mut self.folder {
            f.meta.insert(key.into(), value);
        }
    }

    /// Rewrites summary.csv and summary.json with the points so far and these verdicts.
    pub fn write_summary(&mut self, verdicts: &[Verdict]) -> anyhow::Result<()> {
        let Some(f) = &mut self.folder else {
            return Ok(());
        };
        f.thresholds = verdicts.to_vec();
        f.write_summary()?;
        f.write_latencies()
    }

    /// The run folder's last files: events.csv, the run's totals into summary.json, and the
    /// last line of run.log. Both files are tried; the first that could not be written is the
    /// error.
    pub fn finish(&mut self, events: &[Event], totals: crate::model::Totals) -> anyhow::Result<()> {
        let Some(f) = &mut self.folder else {
            return Ok(());
        };
        let events = f.write_events(events);
        f.run_totals = Some(totals);
        let summary = f.write_summary();
        f.log("stopped; everything started by this run has exited");
        events.and(summary)
    }

    /// Writes the time series in memory and a text screenshot (`screen`) as
    /// `snapshot-<t>s.csv` / `.txt` into the run folder (the temp folder without one);
    /// returns the text file.
    pub fn snapshot(&self, t: f64, screen: &str, store: &Store) -> anyhow::Result<PathBuf> {
        let dir = self
            .dir()
            .map_or_else(std::env::temp_dir, Path::to_path_buf);
        let base = dir.join(format!("snapshot-{t:07.1}s"));
        atomic_write(&base.with_extension("txt"), screen.as_bytes())?;
        // The rows as timeseries.csv writes them.
        let cols = store.columns();
        let mut csv = header(cols);
        for (i, t) in store.times().iter().enumerate() {
            let cells = cols.iter().map(|c| store.col(*c).map(|v| v[i]));
            csv.push_str(&csv_row(*t, cells));
        }
        atomic_write(&base.with_extension("csv"), csv.as_bytes())?;
        Ok(base.with_extension("txt"))
    }
}

/// A scenario name as a folder name a shell reads without quotes: every character other than
/// a letter, a digit, `.`, `_` or `-` (spaces, slashes) becomes `-`, a run of them one `-`
/// ("wan delay / nginx" -> "wan-delay-nginx"); "run" when nothing is left.
pub fn folder_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let out = out.trim_matches(|c| c == '-' || c == '.');
    if out.is_empty() {
        "run".into()
    } else {
        out.to_string()
    }
}

impl Folder {
    /// Creates `<parent>/<name>-<timestamp>/` (the name made safe: `folder_name`) and writes
    /// the resolved scenario.
    fn create(parent: &Path, name: &str, scenario_toml: &str) -> anyhow::Result<Self> {
        let name = folder_name(name);
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating the results folder {}", parent.display()))?;
        // create_dir, not create_dir_all: it fails if the folder exists, so two runs started
        // in the same second each get their own (the second takes the next suffix).
        let mut n = 1;
        let dir = loop {
            let dir = if n == 1 {
                parent.join(format!("{name}-{stamp}"))
            } else {
                parent.join(format!("{name}-{stamp}-{n}"))
            };
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => n += 1,
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("creating the run folder {}", dir.display()))
                }
            }
        };
        atomic_write(&dir.join("scenario.toml"), scenario_toml.as_bytes())?;
        let log = BufWriter::new(File::create(dir.join("run.log"))?);
        Ok(Folder {
            ts_path: dir.join("timeseries.csv"),
            dir,
            log,
            ts: None,
            summary: Vec::new(),
            meta: Default::default(),
            run_totals: None,
            run_classes: Vec::new(),
            capacity: Vec::new(),
            thresholds: Vec::new(),
            latencies: hlog::Latencies::new(&name, SystemTime::now()),
            latencies_written: 0,
        })
    }

    fn log(&mut self, line: &str) {
        let t = chrono::Local::now().format("%H:%M:%S%.3f");
        let _ = writeln!(self.log, "{t} {line}");
        let _ = self.log.flush();
    }

    /// Appends one time-series row. The first row sets the header; a column that first appears
    /// later (a rate needs two samples) is added to it then: the file is rewritten once, with
    /// empty cells for the earlier rows.
    fn row(&mut self, t_s: f64, values: &[(Col, Option<f64>)]) -> anyhow::Result<()> {
        if self.ts.is_none() {
            let cols: Vec<Col> = values.iter().map(|v| v.0).collect();
            let f = File::create(&self.ts_path)
                .with_context(|| format!("creating {}", self.ts_path.display()))?;
            let mut w = BufWriter::new(f);
            w.write_all(header(&cols).as_bytes())?;
            self.ts = Some((w, cols));
        }
        let late: Vec<Col> = {
            let cols = &self.ts.as_ref().expect("header written").1;
            values
                .iter()
                .map(|v| v.0)
                .filter(|c| !cols.contains(c))
                .collect()
        };
        if !late.is_empty() {
            self.add_columns(late)?;
        }
        let (w, cols) = self.ts.as_mut().expect("header written");
        let cells = cols
            .iter()
            .map(|c| values.iter().find(|(k, _)| k == c).and_then(|(_, v)| *v));
        w.write_all(csv_row(t_s, cells).as_bytes())
            .and_then(|_| w.flush())
            .with_context(|| format!("appending a row to {}", self.ts_path.display()))?;
        Ok(())
    }

    /// Adds columns to timeseries.csv: a new header, and an empty cell per new column on every
    /// row written so far.
    fn add_columns(&mut self, late: Vec<Col>) -> anyhow::Result<()> {
        let (mut w, mut cols) = self.ts.take().expect("header written");
        w.flush()?;
        drop(w);
        let old = std::fs::read_to_string(&self.ts_path)?;
        cols.extend(late.iter().copied());
        let pad = ",".repeat(late.len());
        let mut out = header(&cols);
        for line in old.lines().skip(1) {
            out.push_str(line);
            out.push_str(&pad);
            out.push('\n');
        }
        // Write aside and rename, so an interruption leaves the old file or the new, whole.
        let tmp = self.ts_path.with_extension("csv.tmp");
        std::fs::write(&tmp, out)?;
        std::fs::rename(&tmp, &self.ts_path)?;
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.ts_path)?;
        self.ts = Some((BufWriter::new(f), cols));
        Ok(())
    }

    /// Rewrites summary.csv and summary.json with the rows so far.
    fn write_summary(&mut self) -> anyhow::Result<()> {
        let header = serde_json::to_value(SummaryRow::default())?;
        let keys: Vec<String> = header.as_object().unwrap().keys().cloned().collect();
        let classes = class_columns(&self.summary);
        let class_keys = classes.iter().map(|(id, fig)| format!("class_{id}_{fig}"));
        let mut csv = csv_record(keys.iter().cloned().chain(class_keys));
        for r in &self.summary {
            let v = serde_json::to_value(r)?;
            let o = v.as_object().unwrap();
            let cells: Vec<String> = keys
                .iter()
                .map(|k| match &o[k] {
                    serde_json::Value::Number(n) => {
                        n.as_f64().map(fmt_num).unwrap_or_else(|| n.to_string())
                    }
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .chain(classes.iter().map(|(id, fig)| {
                    r.classes
                        .iter()
                        .find(|k| crate::model::ClassName::new(&k.name).as_str() == *id)
                        .and_then(|k| k.csv_figures().into_iter().find(|f| f.0 == *fig))
                        .map(|f| fmt_num(f.1))
                        .unwrap_or_default()
                }))
                .collect();
            csv.push_str(&csv_record(cells));
        }
        atomic_write(&self.dir.join("summary.csv"), csv.as_bytes())?;
        let mut json = serde_json::json!({
            "meta": self.meta,
            "points": self.summary,
            "thresholds": self.thresholds,
        });
        if !self.capacity.is_empty() {
            json["capacity"] = serde_json::to_value(&self.capacity)?;
        }
        if let Some(t) = &self.run_totals {
            json["run_totals"] = serde_json::to_value(t)?;
            if !self.run_classes.is_empty() {
                let classes: Vec<serde_json::Value> = self
                    .run_classes
                    .iter()
                    .map(|(name, t)| serde_json::json!({"name": name, "totals": t}))
                    .collect();
                json["run_classes"] = classes.into();
            }
        }
        atomic_write(
            &self.dir.join("summary.json"),
            serde_json::to_string_pretty(&json)?.as_bytes(),
        )?;
        Ok(())
    }

    /// Rewrites the latency logs when a point was added since they were last written.
    fn write_latencies(&mut self) -> anyhow::Result<()> {
        if self.latencies.points() == self.latencies_written {
            return Ok(());
        }
        for (file, bytes) in self.latencies.encode()? {
            atomic_write(&self.dir.join(file), &bytes)?;
        }
        self.latencies_written = self.latencies.points();
        Ok(())
    }

    fn write_events(&mut self, events: &[Event]) -> anyhow::Result<()> {
        let mut s = csv_record(["t_s", "kind", "text"].map(String::from));
        for e in events {
            let t = format!("{:.3}", e.t_s);
            s.push_str(&csv_record([t, e.kind.to_string(), e.text.clone()]));
        }
        atomic_write(&self.dir.join("events.csv"), s.as_bytes())
    }
}

/// A window's latency distributions, one per hlog file.
fn hists(t: &crate::lab::client_agg::ClientTotals) -> hlog::PointLatencies<'_> {
    hlog::PointLatencies {
        connect: &t.connect,
        handshake: &t.handshake,
        ttfb: &t.ttfb,
        total: &t.total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::col;

    #[test]
    fn runs_created_together_each_get_their_own_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().join("results");
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| Folder::create(&parent, "same", "x = 1\n").unwrap().dir))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut uniq = dirs.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), 8, "{dirs:?}");
        for d in &dirs {
            assert!(d.join("scenario.toml").is_file() && d.join("run.log").is_file());
        }
    }

    #[test]
    fn run_folder_names_have_no_spaces() {
        assert_eq!(folder_name("lesson-wan"), "lesson-wan");
        assert_eq!(folder_name("wan delay / nginx"), "wan-delay-nginx");
        assert_eq!(folder_name(" my test "), "my-test");
        assert_eq!(folder_name("v1.2_ok"), "v1.2_ok");
        assert_eq!(folder_name("../.."), "run");
        assert_eq!(folder_name(""), "run");
        let tmp = tempfile::tempdir().unwrap();
        let f = Folder::create(tmp.path(), "two words", "x = 1\n").unwrap();
        let name = f.dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("two-words-") && !name.contains(' '),
            "{name}"
        );
    }

    #[test]
    fn a_column_that_appears_later_gets_into_the_header() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rf = Folder::create(tmp.path(), "t", "name = \"t\"\n").unwrap();
        let (a, rate) = (col::ACCEPT_QUEUE, col::ATTEMPTS);
        rf.row(0.2, &[(a, Some(1.0))]).unwrap();
        rf.row(0.4, &[(a, Some(2.0)), (rate, Some(7.0))]).unwrap();
        rf.row(0.6, &[(rate, Some(8.0)), (a, Some(3.0))]).unwrap();
        let ts = std::fs::read_to_string(rf.dir.join("timeseries.csv")).unwrap();
        assert_eq!(
            ts,
            "t_s,accept_queue,attempts_per_s\n0.200,1,\n0.400,2,7\n0.600,3,8\n"
        );
    }

    #[test]
    fn files_are_valid_at_every_point() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rf = Folder::create(tmp.path(), "t", "name = \"t\"\n").unwrap();
        let (a, b) = (col::ACCEPT_QUEUE, col::TIME_WAIT);
        rf.row(0.2, &[(a, Some(1.0)), (b, None)]).unwrap();
        rf.row(0.4, &[(b, Some(2.5)), (a, Some(3.0))]).unwrap();
        let ts = std::fs::read_to_string(rf.dir.join("timeseries.csv")).unwrap();
        assert_eq!(ts, "t_s,accept_queue,time_wait\n0.200,1,\n0.400,3,2.5000\n");
        rf.summary.push(SummaryRow {
            error: "1,000".into(),
            offered_rate: f64::NAN,
            ..Default::default()
        });
        rf.write_summary().unwrap();
        let csv = std::fs::read_to_string(rf.dir.join("summary.csv")).unwrap();
        assert!(csv.lines().nth(1).unwrap().contains("\"1,000\""));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rf.dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(json["points"].as_array().unwrap().len(), 1);
        assert!(rf.dir.join("scenario.toml").exists());
    }

    #[test]
    fn a_snapshot_writes_its_rows_as_timeseries_csv_does() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = Recorder::create(tmp.path(), "t", "name = \"t\"\n").unwrap();
        let mut store = Store::new(60);
        store.push(
            0.2,
            &[(col::ACCEPT_QUEUE, Some(1.0)), (col::TIME_WAIT, None)],
        );
        store.push(
            0.4,
            &[(col::ACCEPT_QUEUE, Some(3.0)), (col::TIME_WAIT, Some(2.5))],
        );
        for (t, cols) in [(0.2, [Some(1.0), None]), (0.4, [Some(3.0), Some(2.5)])] {
            let row = [(col::ACCEPT_QUEUE, cols[0]), (col::TIME_WAIT, cols[1])];
            rec.row(t, &row).unwrap();
        }
        let txt = rec.snapshot(0.4, "screen", &store).unwrap();
        let dir = rec.dir().unwrap();
        let ts = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        let snap = std::fs::read_to_string(txt.with_extension("csv")).unwrap();
        assert_eq!(snap, ts);
    }

    #[test]
    fn the_last_files_that_cannot_be_written_are_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = Recorder::create(tmp.path(), "t", "name = \"t\"\n").unwrap();
        std::fs::remove_dir_all(rec.dir().unwrap()).unwrap();
        let e = rec.finish(&[], Default::default()).unwrap_err();
        assert!(format!("{e:#}").contains("events.csv"), "{e:#}");
    }

    /// A text with a newline, a comma and quotes (an error's two lines, a step's caption)
    /// comes back whole through `synlab report`'s reader: summary.csv and events.csv.
    #[test]
    fn a_quoted_newline_round_trips_through_the_report_reader() {
        use crate::metrics::store::EventKind;
        use crate::report::read::{parse_summary_csv, read_run};
        let text = "refused: \"far\", 2 paths\nsecond line, \"quoted\"";
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = Recorder::create(tmp.path(), "t", "name = \"t\"\n").unwrap();
        for error in [text, "plain"] {
            rec.summary_point(SummaryRow {
                error: error.into(),
                ..Default::default()
            });
        }
        let events = [text, "after"].map(|text| Event {
            t_s: 1.5,
            kind: EventKind::Mark,
            text: text.into(),
        });
        rec.finish(&events, Default::default()).unwrap();
        let dir = rec.dir().unwrap();
        let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
        let errors: Vec<String> = parse_summary_csv(&csv)
            .iter()
            .map(|p| p.text(crate::model::summary::SummaryText::Error))
            .collect();
        assert_eq!(errors, [text, "plain"]);
        let run = read_run(dir).unwrap();
        let texts: Vec<&str> = run.events.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, [text, "after"]);
        assert_eq!(run.events[0].kind, "mark");
    }
}
