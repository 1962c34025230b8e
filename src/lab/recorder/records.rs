//! The run folder's CSV records: timeseries.csv's header and rows, summary.csv's per-class
//! columns, numbers as the files spell them.

use crate::model::summary::SummaryRow;
use crate::model::Col;

/// summary.csv's per-class columns: (class as columns spell it, figure), for every class of
/// any row, in order of first appearance.
pub(super) fn class_columns(rows: &[SummaryRow]) -> Vec<(&'static str, &'static str)> {
    let mut ids: Vec<&'static str> = Vec::new();
    for k in rows.iter().flat_map(|r| &r.classes) {
        let id = crate::model::ClassName::new(&k.name).as_str();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let figs = crate::model::ClassSummary::default()
        .csv_figures()
        .map(|f| f.0);
    ids.iter()
        .flat_map(|id| figs.iter().map(move |f| (*id, *f)))
        .collect()
}

/// timeseries.csv's header line: `t_s` and the columns' names.
pub(super) fn header(cols: &[Col]) -> String {
    let names = cols.iter().map(|c| c.name().to_string());
    csv_record(std::iter::once("t_s".to_string()).chain(names))
}

/// One line of timeseries.csv (and of a snapshot): the time, then a cell per column, empty
/// where there is no value.
pub(super) fn csv_row(t_s: f64, cells: impl Iterator<Item = Option<f64>>) -> String {
    let cells = cells.map(|v| v.map(fmt_num).unwrap_or_default());
    csv_record(std::iter::once(format!("{t_s:.3}")).chain(cells))
}

/// One record of the run folder's CSV files, ending in a newline, quoted as RFC 4180 says (a
/// cell with a comma, a quote or a newline is quoted) by the `csv` crate, which
/// `report::read` reads them back with.
pub(super) fn csv_record(cells: impl IntoIterator<Item = String>) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(cells).expect("writing a record into memory");
    let bytes = w.into_inner().expect("flushing into memory");
    String::from_utf8(bytes).expect("the cells were text")
}

pub(super) fn fmt_num(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}
