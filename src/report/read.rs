//! Reading a run folder back for the report, tolerant of an interrupted run: a missing file is
//! an empty table plus a warning, a half-written last line of timeseries.csv is dropped, and
//! unknown or missing summary columns are fine (columns are looked up by name).

use crate::model::summary::{SummaryCol, SummaryText};
use crate::model::sweep::{SweepParam, SweepValue};
use crate::model::Col;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One cell of the summary: numbers are NaN when not measured (JSON null or an empty CSV cell).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Num(f64),
    Text(String),
    Flag(bool),
}

/// One summary row (one sweep point) as read back, looked up by typed column
/// ([`SummaryCol`], [`SummaryText`]) so a renamed column is a compile error here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point(pub BTreeMap<String, Cell>);

impl Point {
    /// The number in `col`, NaN when absent or not a number (flags read as 0/1).
    pub fn num(&self, col: SummaryCol) -> f64 {
        match self.0.get(col.name()) {
            Some(Cell::Num(v)) => *v,
            Some(Cell::Text(s)) => s.trim().parse().unwrap_or(f64::NAN),
            Some(Cell::Flag(b)) => f64::from(u8::from(*b)),
            None => f64::NAN,
        }
    }
    pub fn text(&self, col: SummaryText) -> String {
        match self.0.get(col.name()) {
            Some(Cell::Text(s)) => s.clone(),
            Some(Cell::Num(v)) if v.is_nan() => String::new(),
            Some(Cell::Num(v)) => format!("{v}"),
            Some(Cell::Flag(b)) => b.to_string(),
            None => String::new(),
        }
    }
    /// The 1-based point number as written ("" when absent).
    pub fn number(&self) -> String {
        let n = self.num(SummaryCol::Point);
        if n.is_nan() {
            String::new()
        } else {
            format!("{n}")
        }
    }
    pub fn has(&self, col: SummaryCol) -> bool {
        !self.num(col).is_nan()
    }
    pub fn failed(&self) -> bool {
        self.num(SummaryCol::Failed) == 1.0
    }
    pub fn client_bound(&self) -> bool {
        self.num(SummaryCol::ClientBound) == 1.0
    }
    pub fn mode(&self) -> String {
        self.text(SummaryText::Mode)
    }
    /// Measured over HTTP/3: its clients' QUIC figures exist (NaN over TCP), as the summary
    /// decides its own first-packet check.
    pub fn quic(&self) -> bool {
        self.has(SummaryCol::QUIC_MEASURED)
    }
    /// Its sweep value as a value of `param` (None without one, or one that does not read).
    pub fn sweep_value(&self, param: SweepParam) -> Option<SweepValue> {
        SweepValue::parse_text(param, self.text(SummaryText::Value).trim()).ok()
    }
}

/// timeseries.csv: `t_s` plus named columns, NaN where a cell was empty. Read by column id
/// ([`TimeSeries::get`]), so a renamed column is a compile error here, not a missing plot.
#[derive(Debug, Clone, Default)]
pub struct TimeSeries {
    /// The header's names as written (a column of another synlab version is kept, unread).
    columns: Vec<String>,
    pub t_s: Vec<f64>,
    pub rows: Vec<Vec<f64>>,
}

impl TimeSeries {
    /// (t, value) pairs of one column, without unmeasured samples; None if the run did not
    /// write the column (an older run, or a figure it did not measure).
    pub fn get(&self, col: Col) -> Option<Vec<(f64, f64)>> {
        self.column(&col.name())
    }

    fn column(&self, name: &str) -> Option<Vec<(f64, f64)>> {
        let i = self.columns.iter().position(|c| c == name)?;
        Some(
            self.t_s
                .iter()
                .zip(&self.rows)
                .filter_map(|(t, r)| r.get(i).copied().filter(|v| v.is_finite()).map(|v| (*t, v)))
                .collect(),
        )
    }
}

/// One line of events.csv.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub t_s: f64,
    pub kind: String,
    pub text: String,
}

/// Everything the report needs from one run folder.
#[derive(Debug, Clone, Default)]
pub struct RunData {
    pub dir: PathBuf,
    /// The folder's name, used to label the run in overlays.
    pub name: String,
    pub scenario: Option<Scenario>,
    pub meta: serde_json::Map<String, serde_json::Value>,
    pub points: Vec<Point>,
    pub timeseries: TimeSeries,
    pub events: Vec<EventRow>,
    /// Files that were missing or unreadable (an interrupted run), said in report.md.
    pub warnings: Vec<String>,
    /// summary.json's threshold verdicts (empty when the scenario had none).
    pub thresholds: Vec<super::thresholds::Verdict>,
    /// summary.json's capacity of each series of the sweep (empty without a sweep, or an
    /// older run).
    pub capacity: Vec<crate::model::capacity::Capacity>,
}

impl RunData {
    /// The sweep parameter of the run (None without a sweep, or one this version does not
    /// know).
    pub fn param(&self) -> Option<SweepParam> {
        self.points
            .iter()
            .find_map(|p| SweepParam::from_name(&p.text(SummaryText::Param)))
            .or_else(|| {
                self.scenario
                    .as_ref()
                    .and_then(|s| s.sweep.as_ref().and_then(|w| w.kind()))
            })
    }

    /// The modes in order of first appearance.
    pub fn modes(&self) -> Vec<String> {
        let mut modes: Vec<String> = Vec::new();
        for p in &self.points {
            let m = p.mode();
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
        modes
    }

    /// The curves of the run: its modes in order of first appearance, each split by receive
    /// steering when its points ran under more than one (`[sweep] steer`).
    pub fn groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = Vec::new();
        for p in &self.points {
            let g = self.group_of(p);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        groups
    }

    /// The curve point `p` belongs to: its mode, with `steer X` when the run varies it.
    pub fn group_of(&self, p: &Point) -> String {
        let steer = |p: &Point| p.text(SummaryText::Steer);
        let first = self.points.first().map(steer).unwrap_or_default();
        if self.points.iter().all(|q| steer(q) == first) {
            p.mode()
        } else {
            format!("{} steer {}", p.mode(), steer(p))
        }
    }

    /// The run's clients spoke HTTP/3 (its scenario says so, or its points measured QUIC):
    /// its connects are QUIC handshakes, their first packets Initials, not SYNs.
    pub fn http3(&self) -> bool {
        self.scenario
            .as_ref()
            .is_some_and(|s| s.load.http == crate::scenario::model::HttpVersion::Http3)
            || self.points.iter().any(Point::quic)
    }

    pub fn meta_str(&self, key: &str) -> String {
        match self.meta.get(key) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) if !v.is_null() => v.to_string(),
            _ => String::new(),
        }
    }

    /// The backend (from meta, else the first point's `backend` column).
    pub fn backend(&self) -> String {
        let b = self.meta_str("backend");
        if !b.is_empty() {
            return b;
        }
        self.points
            .iter()
            .map(|p| p.text(SummaryText::Backend))
            .find(|b| !b.is_empty())
            .unwrap_or_else(|| "unknown backend".into())
    }
}

/// The files only a run folder has (`run.log` and the resolved scenario from its first moment).
const RUN_FILES: [&str; 4] = ["summary.json", "summary.csv", "timeseries.csv", "run.log"];

/// Reads a run folder. Fails when `dir` is not one (no folder, or none of a run's files in
/// it: a report must not write into an arbitrary directory); a missing file is a warning.
pub fn read_run(dir: &Path) -> anyhow::Result<RunData> {
    if !dir.is_dir() || !RUN_FILES.iter().any(|f| dir.join(f).is_file()) {
        anyhow::bail!(
            "{} is not a run folder (a directory written by `synlab run`, with summary.json inside)",
            dir.display()
        );
    }
    let mut warnings = Vec::new();
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string());

    let scenario = match crate::scenario::load_resolved(&dir.join("scenario.toml")) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!("scenario.toml: {e:#}"));
            None
        }
    };

    let (meta, points) = read_summary(dir, &mut warnings);

    let timeseries = match std::fs::read_to_string(dir.join("timeseries.csv")) {
        Ok(s) => parse_timeseries(&s),
        Err(e) => {
            warnings.push(format!("timeseries.csv: {e}"));
            TimeSeries::default()
        }
    };
    let events = match std::fs::read_to_string(dir.join("events.csv")) {
        Ok(s) => parse_events(&s),
        Err(e) => {
            warnings.push(format!("events.csv: {e}"));
            Vec::new()
        }
    };
    let summary_json = std::fs::read_to_string(dir.join("summary.json")).ok();
    let thresholds = summary_json
        .as_deref()
        .and_then(super::thresholds::read_verdicts)
        .unwrap_or_default();
    let capacity = summary_json
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| serde_json::from_value(v.get("capacity")?.clone()).ok())
        .unwrap_or_default();
    Ok(RunData {
        thresholds,
        capacity,
        dir: dir.to_path_buf(),
        name,
        scenario,
        meta,
        points,
        timeseries,
        events,
        warnings,
    })
}

type Meta = serde_json::Map<String, serde_json::Value>;

/// summary.json first (it has the meta); summary.csv if the JSON is missing or broken.
/// How a run's warnings start when its summary.json could not be read (a run killed before
/// writing it): such a run is not whole.
pub const SUMMARY_JSON_UNREAD: &str = "summary.json: ";

fn read_summary(dir: &Path, warnings: &mut Vec<String>) -> (Meta, Vec<Point>) {
    let json_err = match std::fs::read_to_string(dir.join("summary.json")) {
        Ok(s) => match parse_summary_json(&s) {
            Ok(r) => return r,
            Err(e) => format!("{SUMMARY_JSON_UNREAD}{e}"),
        },
        Err(e) => format!("{SUMMARY_JSON_UNREAD}{e}"),
    };
    match std::fs::read_to_string(dir.join("summary.csv")) {
        Ok(s) => {
            warnings.push(format!("{json_err}; read summary.csv instead (no meta)"));
            (Meta::new(), parse_summary_csv(&s))
        }
        Err(e) => {
            warnings.push(format!("{json_err}; summary.csv: {e}; no summary"));
            (Meta::new(), Vec::new())
        }
    }
}

/// Parses summary.json: `{"meta": {...}, "points": [{...}, ...]}`; null numbers become NaN.
pub fn parse_summary_json(src: &str) -> anyhow::Result<(Meta, Vec<Point>)> {
    let v: serde_json::Value = serde_json::from_str(src)?;
    let meta = v
        .get("meta")
        .and_then(|m| m.as_object())
        .cloned()
        .unwrap_or_default();
    let points = v
        .get("points")
        .and_then(|p| p.as_array())
        .ok_or_else(|| anyhow::anyhow!("no \"points\" array"))?
        .iter()
        .filter_map(|p| p.as_object())
        .map(|o| {
            Point(
                o.iter()
                    .map(|(k, v)| {
                        let c = match v {
                            serde_json::Value::Number(n) => {
                                Cell::Num(n.as_f64().unwrap_or(f64::NAN))
                            }
                            serde_json::Value::Null => Cell::Num(f64::NAN),
                            serde_json::Value::Bool(b) => Cell::Flag(*b),
                            serde_json::Value::String(s) => Cell::Text(s.clone()),
                            other => Cell::Text(other.to_string()),
                        };
                        (k.clone(), c)
                    })
                    .collect(),
            )
        })
        .collect();
    Ok((meta, points))
}

/// Parses summary.csv (header + rows; quoted cells as the lab's recorder writes them).
pub fn parse_summary_csv(src: &str) -> Vec<Point> {
    let mut lines = records(src);
    let Some(keys) = lines.next() else {
        return Vec::new();
    };
    lines
        .filter(|cells| cells.len() == keys.len())
        .map(|cells| {
            Point(
                keys.iter()
                    .cloned()
                    .zip(cells)
                    .map(|(k, c)| {
                        let cell = match c.as_str() {
                            "" => Cell::Num(f64::NAN),
                            "true" => Cell::Flag(true),
                            "false" => Cell::Flag(false),
                            s => match s.parse::<f64>() {
                                // `value` stays text: it may be "100ms" or "[2, 10]".
                                Ok(v) if k != SummaryText::Value.name() => Cell::Num(v),
                                _ => Cell::Text(c),
                            },
                        };
                        (k, cell)
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Parses timeseries.csv; a row with the wrong number of cells (a half-written line) is dropped.
pub fn parse_timeseries(src: &str) -> TimeSeries {
    let mut lines = records(src);
    let Some(mut names) = lines.next() else {
        return TimeSeries::default();
    };
    if names.first().map(String::as_str) != Some("t_s") {
        return TimeSeries::default();
    }
    names.remove(0);
    let mut ts = TimeSeries {
        columns: names,
        ..Default::default()
    };
    for cells in lines {
        if cells.len() != ts.columns.len() + 1 {
            continue;
        }
        let Ok(t) = cells[0].parse::<f64>() else {
            continue;
        };
        ts.t_s.push(t);
        ts.rows.push(
            cells[1..]
                .iter()
                .map(|c| c.parse().unwrap_or(f64::NAN))
                .collect(),
        );
    }
    ts
}

pub fn parse_events(src: &str) -> Vec<EventRow> {
    records(src)
        .skip(1)
        .filter_map(|c| {
            Some(EventRow {
                t_s: c.first()?.parse().ok()?,
                kind: c.get(1)?.clone(),
                text: c.get(2).cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// The records of a CSV file of the run folder (RFC 4180 quoting, as the recorder writes
/// them with the same `csv` crate: a quoted cell may hold a comma, a quote or a newline). The
/// file may be being appended to: only what ends in a newline counts, and a record that does
/// not read (cut short) is left out.
fn records(src: &str) -> impl Iterator<Item = Vec<String>> + '_ {
    let end = if src.ends_with('\n') {
        src.len()
    } else {
        src.rfind('\n').map(|i| i + 1).unwrap_or(0)
    };
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(&src.as_bytes()[..end])
        .into_records()
        .filter_map(Result::ok)
        .map(|r| r.iter().map(str::to_string).collect::<Vec<_>>())
        .filter(|cells| !(cells.len() == 1 && cells[0].trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_newlines_and_empty_cells() {
        let got: Vec<_> =
            records("a,\"1,000\",,\"x\"\"y\"\n \nb,\"two\nlines\"\nc,\"cut").collect();
        assert_eq!(
            got,
            [vec!["a", "1,000", "", "x\"y"], vec!["b", "two\nlines"]]
        );
    }

    #[test]
    fn half_written_timeseries_line_is_dropped() {
        let ts = parse_timeseries("t_s,a,b\n0.2,1,\n0.4,3,2.5\n0.6,4");
        assert_eq!(ts.t_s, [0.2, 0.4]);
        assert!(ts.rows[0][1].is_nan());
        assert_eq!(ts.column("b").unwrap(), [(0.4, 2.5)]);
        assert!(ts.column("zz").is_none());
    }

    #[test]
    fn columns_are_read_by_id_and_an_old_runs_missing_one_is_none() {
        use crate::model::{col, PathName};
        let ts = parse_timeseries(
            "t_s,attempts_per_s,path_wan_responses_per_s,a_column_of_another_version\n\
             0.2,10,,1\n0.4,12,3,1\n",
        );
        assert_eq!(ts.get(col::ATTEMPTS).unwrap(), [(0.2, 10.0), (0.4, 12.0)]);
        let wan = col::RESPONSES.of_path(PathName::new("wan"));
        assert_eq!(ts.get(wan).unwrap(), [(0.4, 3.0)]);
        assert!(ts.get(col::SYN_IN).is_none());
        assert!(ts.get(col::RESPONSES).is_none());
    }

    #[test]
    fn json_nulls_are_nan_and_flags_read() {
        let (meta, pts) = parse_summary_json(
            r#"{"meta":{"backend":"lo"},"points":[{"offered_rate":null,"client_bound":true,"value":"1,000","total_p99_ms":2}]}"#,
        )
        .unwrap();
        assert_eq!(meta["backend"], "lo");
        assert!(pts[0].num(SummaryCol::OfferedRate).is_nan());
        assert!(pts[0].client_bound());
        assert_eq!(pts[0].text(SummaryText::Value), "1,000");
        assert_eq!(pts[0].num(SummaryCol::TotalP99Ms), 2.0);
        assert!(pts[0].num(SummaryCol::TotalP50Ms).is_nan());
    }

    #[test]
    fn summary_csv_keeps_value_as_text() {
        let pts = parse_summary_csv(
            "point,value,failed,total_p99_ms\n1,100ms,false,\n2,\"[2, 10]\",true,3\n",
        );
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].text(SummaryText::Value), "100ms");
        assert!(pts[0].num(SummaryCol::TotalP99Ms).is_nan());
        assert!(pts[1].failed());
        assert_eq!(pts[1].num(SummaryCol::TotalP99Ms), 3.0);
        assert_eq!(pts[1].number(), "2");
        assert_eq!(pts[1].text(SummaryText::Value), "[2, 10]");
    }
}
