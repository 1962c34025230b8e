//! Trials the machine disturbed: other work on the lab's own CPUs (the server's or the load's)
//! past [`BUSY_PCT`] of them in a point. On a shared 2-CPU machine such a trial measured the
//! neighbours as much as the server (ci-noise, 2026-11-28: trials with 5-16 % other work on the
//! load's CPU ran nginx 15-35 % slower per response, and 4 of 10 unchanged runs failed compare),
//! so `synlab compare` and `synlab ab` leave them out and say so, and judge nothing when too few
//! remain.

use super::read::RunData;
use crate::model::summary::SummaryCol;
use std::fmt;

/// Other work's share of a set of the lab's CPUs, in % of them, past which a trial is left out.
/// Undisturbed trials read -6 .. +3 % here (the load's figure is the CPUs' busy time less the
/// lab's processes', each sampled on its own clock).
pub const BUSY_PCT: f64 = 5.0;

/// The fewest trials a side a comparison rests on once disturbed ones are left out; with fewer
/// it judges on all of them and says that the verdict carries the neighbours' noise (a busy
/// CI runner then still gets a verdict, as before, not a refusal).
pub const MIN_TRIALS: usize = 3;

/// What a disturbed run's figures are, said after the disturbance (a single run's verdicts,
/// its report.md).
pub const MEANING: &str = "its figures carry the neighbours' work as well as the server's \
     (`synlab compare` and `synlab ab` leave such a trial out); rerun on a quieter machine to trust them";

/// A disturbed trial: the point, whose CPUs and other work's share of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Disturbed {
    pub point: String,
    pub whose: &'static str,
    pub pct: f64,
}

impl fmt::Display for Disturbed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the machine was busy: other work took {:.0} % of the {} CPUs in point {} (limit {BUSY_PCT:.0} %)",
            self.pct, self.whose, self.point
        )
    }
}

/// The CPU count of `meta.cpus.<side>` (0 without a split).
fn cpus(run: &RunData, side: &str) -> usize {
    run.meta
        .get("cpus")
        .and_then(|c| c.get(side))
        .and_then(|v| v.as_array())
        .map_or(0, Vec::len)
}

/// The worst disturbance of a run's points, None when every point ran on CPUs of its own
/// (or the run has no CPU split: then nothing tells other work apart).
pub fn of(run: &RunData) -> Option<Disturbed> {
    let sides = [
        (
            "server's",
            SummaryCol::ServerCoresOtherPct,
            cpus(run, "server"),
        ),
        ("load's", SummaryCol::LoadCoresOtherPct, cpus(run, "load")),
    ];
    run.points
        .iter()
        .flat_map(|p| {
            sides.iter().filter_map(move |(whose, col, n)| {
                let other = p.num(*col);
                (*n > 0 && other.is_finite()).then(|| Disturbed {
                    point: p.number(),
                    whose,
                    pct: other / *n as f64,
                })
            })
        })
        .filter(|d| d.pct > BUSY_PCT)
        // The worst; the first point of equals.
        .fold(None, |worst: Option<Disturbed>, d| match worst {
            Some(w) if w.pct >= d.pct => Some(w),
            _ => Some(d),
        })
}

/// Whether `disturbed` of `total` trials (or pairs) are left out: while [`MIN_TRIALS`] others
/// remain. The one rule compare and ab share.
pub fn leave_out(disturbed: usize, total: usize) -> bool {
    disturbed > 0 && total - disturbed >= MIN_TRIALS
}

/// The trials a comparison judges on: `runs` without the disturbed ones while at least
/// [`MIN_TRIALS`] remain, else all of them; and the lines that say which were left out, or why
/// none was (`what`: "run", "baseline").
pub fn judged_trials<'a>(runs: &'a [RunData], what: &str) -> (Vec<&'a RunData>, Vec<String>) {
    let busy: Vec<(usize, Disturbed)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, of(r)?)))
        .collect();
    if busy.is_empty() {
        return (runs.iter().collect(), Vec::new());
    }
    if !leave_out(busy.len(), runs.len()) {
        let worst = busy.iter().map(|(_, d)| d.pct).fold(0.0, f64::max);
        let line = format!(
            "the machine was busy in {} of the {what}'s {} trials (other work up to {worst:.0} % of the lab's CPUs): judged on all of them, so the verdict carries the neighbours' noise; rerun on a quieter machine to be sure",
            busy.len(),
            runs.len()
        );
        return (runs.iter().collect(), vec![line]);
    }
    let kept = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| busy.iter().all(|(b, _)| b != i))
        .map(|(_, r)| r)
        .collect();
    let said = busy
        .iter()
        .map(|(i, d)| {
            format!(
                "left out the {what}'s trial {}: {d}",
                runs[*i].dir.display()
            )
        })
        .collect();
    (kept, said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::read::{Cell, Point};

    fn run(server_other: f64, load_other: f64, load_cpus: usize) -> RunData {
        let mut p = Point::default();
        p.0.insert("point".into(), Cell::Num(1.0));
        p.0.insert("server_cores_other_pct".into(), Cell::Num(server_other));
        p.0.insert("load_cores_other_pct".into(), Cell::Num(load_other));
        let mut r = RunData::default();
        r.points.push(p);
        r.meta.insert(
            "cpus".into(),
            serde_json::json!({"server": [1], "load": (0..load_cpus).collect::<Vec<_>>()}),
        );
        r
    }

    #[test]
    fn other_work_past_the_limit_on_either_side_disturbs_a_trial() {
        assert_eq!(of(&run(0.0, 3.0, 1)), None);
        let d = of(&run(0.0, 16.3, 1)).unwrap();
        assert_eq!((d.whose, d.pct), ("load's", 16.3));
        assert_eq!(
            d.to_string(),
            "the machine was busy: other work took 16 % of the load's CPUs in point 1 (limit 5 %)"
        );
        // % of one core spread over the side's CPUs: 8 % over two is 4 % of them.
        assert_eq!(of(&run(0.0, 8.0, 2)), None);
        assert_eq!(of(&run(7.0, 0.0, 1)).unwrap().whose, "server's");
        // No split: nothing tells other work apart.
        assert_eq!(of(&run(50.0, 50.0, 0)).map(|d| d.whose), Some("server's"));
        let mut bare = run(50.0, 50.0, 0);
        bare.meta.clear();
        assert_eq!(of(&bare), None);
    }

    #[test]
    fn disturbed_trials_are_left_out_while_enough_remain() {
        let quiet = || run(0.0, 1.0, 1);
        let runs = [quiet(), run(0.0, 9.0, 1), quiet(), quiet()];
        let (kept, said) = judged_trials(&runs, "run");
        assert_eq!(kept.len(), 3);
        assert_eq!(said.len(), 1);
        assert!(said[0].contains("left out the run's trial"), "{}", said[0]);
        assert!(said[0].contains("9 % of the load's CPUs"), "{}", said[0]);
        // Two disturbed of four: too few left, so all are judged, and that is said.
        let runs = [quiet(), run(0.0, 9.0, 1), run(12.0, 0.0, 1), quiet()];
        let (kept, said) = judged_trials(&runs, "baseline");
        assert_eq!(kept.len(), 4);
        assert_eq!(
            said,
            ["the machine was busy in 2 of the baseline's 4 trials (other work up to 12 % of the lab's CPUs): judged on all of them, so the verdict carries the neighbours' noise; rerun on a quieter machine to be sure"]
        );
        let runs = [quiet(), quiet()];
        let (kept, said) = judged_trials(&runs, "run");
        assert_eq!((kept.len(), said.len()), (2, 0));
    }
}
