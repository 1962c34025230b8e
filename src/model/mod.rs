//! The shared vocabulary of the lab: types every layer speaks (the time series' columns, the worker's counters, ...).
//! A leaf: it imports nothing of synlab, so any module may depend on it.

pub mod acceptq;
pub mod bad_response;
pub mod capacity;
pub mod column;
pub mod column_help;
pub mod counters;
pub mod cpus;
pub mod death;
pub mod drops;
pub mod expect;
pub mod h2_resets;
pub mod knob;
pub mod kreasons;
pub mod latency_split;
pub mod limits;
pub mod load_knob;
pub mod phase;
pub mod summary;
pub mod sweep;
pub mod udp_drops;
pub mod units;
pub mod workload;

pub use bad_response::{BadReason, BadReasons};
pub use column::{
    col, ClassName, Col, Kind, PathName, ProbeScope, ProbedNetns, Scope, Unit, CLASS_FIGURES,
    PATH_FIGURES,
};
pub use counters::{Counters, ErrorKinds, HandshakeTotals, InProgress, Totals};
pub use cpus::{Placement, Steer};
pub use knob::{KnobError, PathKnob, PathStep, PathValue};
pub use load_knob::{LoadKnob, LoadKnobError, LoadStep};
pub use summary::{ClassSummary, PathSummary, SummaryRow};
pub use sweep::{SweepParam, SweepPoint, SweepValue};
pub use workload::Workload;
