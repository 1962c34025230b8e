//! The run's named phases in report.md (issue 45 item 2): recovery after overload, the server
//! answering its backlog once the load dropped (`model::phase`), from timeseries.csv; and the
//! whole run's server-above-client difference said as that recovery where it explains it,
//! not as a fault of the counts.

use crate::model::col;
use crate::model::phase::{self, Recovery};
use crate::probe::crosscheck::TOLERANCE_PCT;
use crate::report::read::RunData;
use std::collections::BTreeMap;

/// The run's stretches of recovery, from its time series (none when it lacks the server's
/// count or the offered rate).
pub fn recoveries(r: &RunData) -> Vec<Recovery> {
    let ts = &r.timeseries;
    let (Some(offered), Some(server), Some(client)) = (
        ts.get(col::TARGET_RATE),
        ts.get(col::SERVER_RESPONSES),
        ts.get(col::RESPONSES),
    ) else {
        return Vec::new();
    };
    // Keyed by the row's time in ms: the three columns of one row share it.
    let key = |t: f64| (t * 1000.0).round() as i64;
    let by_t = |v: Vec<(f64, f64)>| -> BTreeMap<i64, f64> {
        v.into_iter().map(|(t, x)| (key(t), x)).collect()
    };
    let (server, client) = (by_t(server), by_t(client));
    let mut rows = Vec::new();
    let mut prev: Option<f64> = None;
    for (t, o) in offered {
        let dt = prev.map_or(0.0, |p| t - p);
        prev = Some(t);
        if let (Some(s), Some(c)) = (server.get(&key(t)), client.get(&key(t))) {
            if dt > 0.0 {
                rows.push((t, dt, o, *s, *c));
            }
        }
    }
    phase::recoveries(&rows)
}

/// report.md's phases section: each recovery named, with what the server did in it; empty
/// when the run had none.
pub fn section(r: &RunData, suffix: &str) -> String {
    let recs = recoveries(r);
    if recs.is_empty() {
        return String::new();
    }
    let mut md = format!("## Phases{suffix}\n\n");
    for rec in &recs {
        md.push_str(&format!("- {rec}.\n"));
    }
    md.push('\n');
    md
}

/// The whole run's counts said as its recovery, where the server answered more than its
/// clients received by no more than its recoveries' surplus (and the counting tolerance):
/// both counts hold. None where the recovery does not explain the difference.
pub fn explains(r: &RunData, client: f64, server: f64) -> Option<String> {
    let recs = recoveries(r);
    let surplus: f64 = recs.iter().map(|x| x.surplus).sum();
    let over = server - client;
    let explained =
        over > 0.0 && !recs.is_empty() && over <= surplus + TOLERANCE_PCT / 100.0 * client;
    explained.then(|| {
        let when: Vec<String> = recs
            .iter()
            .map(|x| format!("{:.0}–{:.0} s", x.start_s, x.end_s))
            .collect();
        format!(
            "{client:.0} vs {server:.0}: the server answered {over:.0} more, in its recovery \
             after overload ({}), answering the backlog whose clients had given up (see \
             Phases): both counts hold, the clients' is what they received in time",
            when.join(", ")
        )
    })
}
