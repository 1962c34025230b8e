//! What the core asks the runtime to do: its output, as `Input` is its input.

use super::{Control, Reply, SummaryRow, Window};
use crate::model::Col;

/// What the runtime carries out, in order.
#[derive(Debug)]
pub enum Effect {
    /// Control messages for worker `worker` (an index into the slots).
    Send { worker: usize, msgs: Vec<Control> },
    /// Put these paths under these profiles (a proposal: the knobs change once the runtime
    /// answers `Input::PathApplied`).
    Path(Vec<crate::net::spec::PathSpec>),
    /// A row of timeseries.csv at `t` seconds.
    Row {
        t: f64,
        cols: Vec<(Col, Option<f64>)>,
    },
    /// A line for run.log.
    Log(String),
    /// A measurement window ended (`Input::EndWindow`).
    Window(Box<Window>),
    /// A TUI stretch of settings closed into a summary row (the runtime numbers and keeps it).
    Summary(Box<SummaryRow>),
    /// The outcome of `Input::Command`: applied (what changed) or refused (why).
    Reply(Reply),
    /// A step's `net.ipv4.tcp_syncookies` for the server's namespace (0, 1 or 2).
    Syncookies(u8),
}
