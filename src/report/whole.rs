//! Whether a run folder is whole: what keeps it from standing as a result (interrupted,
//! killed before its summary, points missing, cut short or failed), said the same way by
//! `synlab compare`, `synlab ab`, `synlab report` and report.md.

use super::read::{Point, RunData};
use crate::model::summary::{SummaryCol, SummaryText};

/// Exit code of a comparison that cannot judge what it was asked to: a run with missing,
/// partial, failed or interrupted points, or no point that could be judged.
pub const EXIT_INCOMPLETE: u8 = 4;

/// summary.json's `meta` key that says what made the run: `"tui"` for a live session (whose
/// points are the stretches of settings the person chose, not a plan to hold).
pub const SESSION_KEY: &str = "session";

/// The points a scenario plans, as (key, hold in s): the key as [`key`] names a measured one.
pub(crate) fn planned_points(sc: &crate::scenario::Scenario) -> Vec<(String, f64)> {
    crate::scenario::points::plan_points(sc)
        .iter()
        .map(|plan| {
            let mode = crate::scenario::points::mode_name(plan.mode.unwrap_or(sc.load.mode));
            let value = plan.value.map(|v| v.to_string()).unwrap_or_default();
            let curve = plan.curve.map(|v| v.to_string()).unwrap_or_default();
            (point_key(&mode, &curve, &value), plan.hold)
        })
        .collect()
}

/// A point's name for matching across runs: its mode, curve and sweep value.
pub(crate) fn key(p: &Point) -> String {
    point_key(
        &p.mode(),
        &p.text(SummaryText::CurveValue),
        &p.text(SummaryText::Value),
    )
}

pub(crate) fn point_key(mode: &str, curve: &str, value: &str) -> String {
    [mode, curve, value]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// What keeps a run from being compared whole: interrupted, points of its scenario missing,
/// points cut short (held less than planned), failed points. Empty for a whole run.
pub fn incomplete(run: &RunData) -> Vec<String> {
    let mut why = Vec::new();
    if run.meta.get("interrupted").and_then(|v| v.as_bool()) == Some(true) {
        why.push("it was interrupted".to_string());
    }
    if let Some(w) = run
        .warnings
        .iter()
        .find(|w| w.starts_with(super::read::SUMMARY_JSON_UNREAD))
    {
        why.push(format!(
            "its summary.json cannot be read, so the run ended before writing it (killed, or its disk filled): {w}"
        ));
    }
    for p in run.points.iter().filter(|p| p.failed()) {
        why.push(format!(
            "point {} ({}) failed: {}",
            p.number(),
            key(p),
            p.text(SummaryText::Error)
        ));
    }
    // A TUI session ends when the person quits: its stretches are whole as they are.
    if run.meta.get(SESSION_KEY).and_then(|v| v.as_str()) == Some("tui") {
        return why;
    }
    let Some(sc) = &run.scenario else {
        why.push("its scenario.toml cannot be read, so the points it planned are unknown".into());
        return why;
    };
    let planned = planned_points(sc);
    let mut missing = Vec::new();
    for (i, (want, hold)) in planned.iter().enumerate() {
        let found = if sc.sweep.is_some() {
            run.points.iter().find(|p| key(p) == *want)
        } else {
            run.points.get(i)
        };
        let Some(p) = found else {
            missing.push(format!("{} ({want})", i + 1));
            continue;
        };
        // A hold is measured over the workers' reports (100 ms apart): a point cut short by an
        // interruption holds far less than planned; a whole one within a report or so.
        let held = p.num(SummaryCol::HoldS);
        if !p.failed() && held < hold - (0.25f64).max(0.1 * hold) {
            why.push(format!(
                "point {} ({want}) is partial: held {held:.1} s of its {hold:.1} s",
                p.number(),
            ));
        }
    }
    if !missing.is_empty() {
        why.push(format!(
            "{} of its {} planned points are missing: {}",
            missing.len(),
            planned.len(),
            missing.join(", ")
        ));
    }
    why
}
