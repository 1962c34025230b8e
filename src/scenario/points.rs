//! The points a scenario runs: one per mode, curve and sweep value, or the run as a whole,
//! each with its warmup, hold and cooldown.

use super::{Scenario, SweepValue};
use crate::load::protocol::Mode;

/// One planned measurement: a mode, a curve and a sweep value (None: the run as a whole).
#[derive(Debug, Clone)]
pub struct Point {
    pub mode: Option<Mode>,
    /// The `[sweep.curves]` value it is measured under (None without curves).
    pub curve: Option<SweepValue>,
    pub value: Option<SweepValue>,
    /// The receive steering of a `[sweep] steer` point (None: the lab's own).
    pub steer: Option<crate::model::Steer>,
    pub warmup: f64,
    pub hold: f64,
    pub cooldown: f64,
}

/// A mode as the summary's `mode` column says it (`open`, `sclient`, `closed`).
pub fn mode_name(m: Mode) -> String {
    format!("{m:?}").to_lowercase()
}

/// The points a scenario runs, in order: per mode, per curve, the sweep's values.
pub fn plan_points(sc: &Scenario) -> Vec<Point> {
    match &sc.sweep {
        Some(sw) => {
            let modes: Vec<Option<Mode>> = if sw.modes.is_empty() {
                vec![None]
            } else {
                sw.modes.iter().copied().map(Some).collect()
            };
            let steers: Vec<Option<crate::model::Steer>> = if sw.steer.is_empty() {
                vec![None]
            } else {
                sw.steer.iter().copied().map(Some).collect()
            };
            let curves: Vec<Option<SweepValue>> = match &sw.curves {
                None => vec![None],
                Some(c) => c
                    .values
                    .iter()
                    .map(|v| c.kind().and_then(|k| SweepValue::parse(k, v).ok()))
                    .collect(),
            };
            let mut out = Vec::new();
            for m in modes {
                for c in &curves {
                    for v in &sw.values {
                        for &steer in &steers {
                            out.push(Point {
                                mode: m,
                                curve: *c,
                                value: sw.kind().and_then(|k| SweepValue::parse(k, v).ok()),
                                steer,
                                warmup: sw.warmup.secs(),
                                hold: sw.hold.secs(),
                                cooldown: sw.cooldown.secs(),
                            });
                        }
                    }
                }
            }
            out
        }
        None => {
            let d = sc.duration.secs();
            let warmup = (d * 0.1).min(2.0);
            vec![Point {
                mode: None,
                curve: None,
                value: None,
                steer: None,
                warmup,
                hold: d - warmup,
                cooldown: 0.0,
            }]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_run_is_one_point_after_a_short_warmup() {
        let mut sc = crate::scenario::default_scenario();
        sc.duration = crate::model::units::Dur::from_secs(30.0);
        let pts = plan_points(&sc);
        assert_eq!(pts.len(), 1);
        assert_eq!((pts[0].warmup, pts[0].hold), (2.0, 28.0));
    }
}
