//! Trials the machine disturbed: other work on the lab's own CPUs (the server's or the load's)
//! past [`BUSY_PCT`] of them in a point. On a shared 2-CPU machine such a trial measured the
//! neighbours as much as the server (ci-noise, 2026-11-28: trials with 5-16 % other work on the
//! load's CPU ran nginx 15-35 % slower per response, and 4 of 10 unchanged runs failed compare),
//! so `synlab compare` and `synlab ab` leave them out and say so, and judge nothing when too few
//! remain.

use super::read::{Point, RunData};
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

/// A disturbed trial: the point, whose CPUs and other work's share of them, and what the
/// other set of the lab's CPUs carried in the same point (a hog on the server's CPU is named
/// beside one on the load's, not hidden behind the worse).
#[derive(Debug, Clone, PartialEq)]
pub struct Disturbed {
    pub point: String,
    pub whose: &'static str,
    pub pct: f64,
    /// The other set of CPUs: whose, and other work's share of them (steal in), or why it is
    /// not measured.
    pub beside: (&'static str, Result<f64, &'static str>),
}

impl fmt::Display for Disturbed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the machine was busy: other work took {:.0} % of the {} CPUs in point {} (limit {BUSY_PCT:.0} %)",
            self.pct, self.whose, self.point
        )?;
        match self.beside {
            (whose, Ok(pct)) => write!(f, ", and {pct:.0} % of the {whose} CPUs"),
            (whose, Err(why)) => write!(
                f,
                "; other work on the {whose} CPUs is not measured ({why})"
            ),
        }
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

/// Other work's share of one set of the lab's CPUs in point `p`, % of them: the busy time its
/// processes did not spend, and the hypervisor's steal (the load's figure holds its steal
/// already; the server's is a column of its own). Err says why it is not measured.
fn share(run: &RunData, p: &Point, server: bool) -> Result<f64, &'static str> {
    let (n, other) = if server {
        (cpus(run, "server"), p.num(SummaryCol::ServerCoresOtherPct))
    } else {
        (cpus(run, "load"), p.num(SummaryCol::LoadCoresOtherPct))
    };
    if n == 0 {
        return Err("no CPU split");
    }
    if !other.is_finite() {
        return Err("its processes' own CPU time is unknown");
    }
    let steal = if server {
        p.num(SummaryCol::ServerCoresStealPct)
    } else {
        0.0
    };
    Ok(other / n as f64 + if steal.is_finite() { steal } else { 0.0 })
}

/// Point `p` of `run` disturbed: other work past [`BUSY_PCT`] of either set of the lab's CPUs
/// (the worse named first). None when both ran quiet, or without a CPU split.
pub fn at(run: &RunData, p: &Point) -> Option<Disturbed> {
    const SIDES: [(&str, bool); 2] = [("load's", false), ("server's", true)];
    let [load, server] = SIDES.map(|(_, server)| share(run, p, server));
    let worse_is_server = match (&load, &server) {
        (Ok(l), Ok(s)) => s > l,
        (Err(_), Ok(_)) => true,
        _ => false,
    };
    let (first, second) = if worse_is_server { (1, 0) } else { (0, 1) };
    let shares = [load, server];
    let pct = *shares[first].as_ref().ok()?;
    (pct > BUSY_PCT).then(|| Disturbed {
        point: p.number(),
        whose: SIDES[first].0,
        pct,
        beside: (SIDES[second].0, shares[second]),
    })
}

/// The worst disturbance of a run's points, None when every point ran on CPUs of its own
/// (or the run has no CPU split: then nothing tells other work apart).
pub fn of(run: &RunData) -> Option<Disturbed> {
    run.points
        .iter()
        .filter_map(|p| at(run, p))
        // The worst; the first point of equals.
        .fold(None, |worst: Option<Disturbed>, d| match worst {
            Some(w) if w.pct >= d.pct => Some(w),
            _ => Some(d),
        })
}

/// What a run's verdict line adds when the machine disturbed `busy` of its `trials` trials
/// (a single run is one): the exit code stays the verdict's, but a PASS over the neighbours'
/// work is not the server's alone. None when none was disturbed.
pub fn verdict_caveat(busy: &[Disturbed], trials: usize) -> Option<String> {
    let worst = busy.iter().max_by(|a, b| a.pct.total_cmp(&b.pct))?;
    Some(if trials <= 1 {
        format!(
            "but the machine was busy (other work took {:.0} % of the {} CPUs in point {}): its \
             figures carry the neighbours' work as well as the server's",
            worst.pct, worst.whose, worst.point
        )
    } else {
        format!(
            "but the machine was busy in {} of the {trials} trials (other work up to {:.0} % of \
             the {} CPUs): a disturbed trial's figures carry the neighbours' work as well as \
             the server's, and compare and ab leave such trials out",
            busy.len(),
            worst.pct,
            worst.whose
        )
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
            "the machine was busy: other work took 16 % of the load's CPUs in point 1 (limit 5 %), and 0 % of the server's CPUs"
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

    /// Two hogs, one on each CPU of the lab's split: the line named the load's CPUs only
    /// (the worse), as if the server's had run quiet.
    #[test]
    fn a_busy_line_names_both_sets_of_cpus_or_says_one_is_not_measured() {
        let d = of(&run(88.0, 93.0, 1)).unwrap();
        assert_eq!(
            d.to_string(),
            "the machine was busy: other work took 93 % of the load's CPUs in point 1 (limit 5 %), and 88 % of the server's CPUs"
        );
        // The hypervisor's steal on the server's CPUs is work it did not get, as the load's
        // steal is (held in the load's figure already).
        let mut stolen = run(1.0, 0.0, 1);
        stolen.points[0]
            .0
            .insert("server_cores_steal_pct".into(), Cell::Num(9.0));
        let d = of(&stolen).unwrap();
        assert_eq!((d.whose, d.pct), ("server's", 10.0));
        assert!(
            d.to_string().ends_with(", and 0 % of the load's CPUs"),
            "{d}"
        );
        // A server whose own CPU time is not measured (an address target): said, not 0.
        let unknown = run(f64::NAN, 40.0, 1);
        assert!(
            of(&unknown).unwrap().to_string().ends_with(
                "; other work on the server's CPUs is not measured (its processes' own CPU time is unknown)"
            ),
            "{}",
            of(&unknown).unwrap()
        );
        let mut bare = run(0.0, 40.0, 1);
        bare.meta.insert(
            "cpus".into(),
            serde_json::json!({"server": [], "load": [0]}),
        );
        assert!(of(&bare)
            .unwrap()
            .to_string()
            .ends_with("; other work on the server's CPUs is not measured (no CPU split)"));
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
