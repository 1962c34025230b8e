//! A lesson step's checks judged on the latest second, and whether other work on the
//! machine took enough of the server's CPUs to make a step's figures not the
//! lab's alone.

use crate::lab::state::LabState;
use crate::metrics::store::Store;
use crate::model::col;
use crate::model::expect::Expect;
use crate::model::Col;
use std::fmt;

/// Other work above this share of the server's CPUs puts the busy banner up ...
pub const BUSY_SHARE_PCT: f64 = 15.0;

/// ... when the CPUs had less idle time than this left: with idle time to spare, other work
/// ran beside the server without taking time it wanted (a server that needs 10 % of its CPU
/// is not slowed by a build using 30 %), and a banner then would blame figures that are sound.
pub const BUSY_IDLE_PCT: f64 = 10.0;

/// A check's verdict; its Display is the line the caption band shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    Held(Expect),
    NotYet {
        expect: Expect,
        value: f64,
        bound: f64,
    },
    /// A figure it reads has no current value (none in the latest second, nor a paced
    /// walk's within the last few).
    NotMeasured(Expect),
}

impl Check {
    pub fn held(&self) -> bool {
        matches!(self, Check::Held(_))
    }
}

/// A figure as the caption says it: whole numbers above 10, else two significant places.
fn num(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{:.2}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::Held(e) => write!(f, "✓ held: {e}"),
            Check::NotYet {
                expect,
                value,
                bound,
            } => {
                write!(
                    f,
                    "… not yet: {} = {}, wants {expect}",
                    expect.figure,
                    num(*value)
                )?;
                // A bound that is a figure: say what it is now.
                if matches!(expect.bound, crate::model::expect::Bound::Figure(..)) {
                    write!(f, " ({})", num(*bound))?;
                }
                Ok(())
            }
            Check::NotMeasured(e) => write!(f, "… not measured: {e}"),
        }
    }
}

/// A column's value now, as the TUI shows it beside the check ([`Store::headline`]: the
/// latest second's mean, or the paced socket-state walk's last count while it is current).
fn latest(store: &Store, c: Col) -> Option<f64> {
    store.headline(c)
}

/// `expects` judged on the figures now (the headline values) of `store`.
pub fn judge(store: &Store, expects: &[Expect]) -> Vec<Check> {
    let value_of = |c: Col| latest(store, c);
    expects
        .iter()
        .map(
            |e| match (e.figure.value(&value_of), e.bound_value(&value_of)) {
                (Some(v), Some(b)) if e.op.holds(v, b) => Check::Held(*e),
                (Some(value), Some(bound)) => Check::NotYet {
                    expect: *e,
                    value,
                    bound,
                },
                _ => Check::NotMeasured(*e),
            },
        )
        .collect()
}

/// Other work on a set of the lab's CPUs; its Display is the banner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Busy {
    /// Whose CPUs ("server's").
    pub whose: &'static str,
    /// Other work's share of them, percent.
    pub pct: f64,
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "⚠ the machine is busy: other work took {:.0} % of the {w} CPUs and left none idle: figures not the {w} alone",
            self.pct,
            w = self.whose,
        )
    }
}

/// Other work's share of `n` CPUs: their user+system time less what `own` (the lab's
/// processes on them, percent of one core) used.
fn other_share(store: &Store, n: usize, cores: [Col; 2], own: &[Col]) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let busy = latest(store, cores[0])? + latest(store, cores[1])?;
    let own: f64 = own.iter().map(|c| latest(store, *c).unwrap_or(0.0)).sum();
    Some(super::summary::other_work(busy, n, own) / n as f64)
}

/// The server's CPUs when other work took more than [`BUSY_SHARE_PCT`] of them in the latest
/// second while they had less than [`BUSY_IDLE_PCT`] idle (None without a CPU split: then
/// nothing tells other work apart). The load's CPUs
/// are not judged yet: their split against `load_cpu_pct` has not been checked on a real run,
/// and a false banner would teach the wrong lesson.
pub fn busy(st: &LabState) -> Option<Busy> {
    other_share(
        &st.store,
        st.cpus.server.len(),
        [col::SERVER_CORES_USER, col::SERVER_CORES_SYSTEM],
        &[col::SERVER_CPU_USER_PCT, col::SERVER_CPU_SYS_PCT],
    )
    .filter(|pct| *pct > BUSY_SHARE_PCT)
    .filter(|_| latest(&st.store, col::SERVER_CORES_IDLE).is_some_and(|idle| idle < BUSY_IDLE_PCT))
    .map(|pct| Busy {
        whose: "server's",
        pct,
    })
}
