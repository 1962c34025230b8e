//! The lab: a pure core (`core`) that folds the workers' stats, the probes' samples and the
//! rest into one state (one owner) and says what to do, the controller (its runtime: the
//! server, the workers, the network lab, the probes, the recorder of the run folder), and the
//! drivers of steps and sweeps.

pub mod ab;
pub mod ci;
pub mod client_agg;
pub mod control;
pub mod controller;
pub mod core;
pub mod knobs;
pub mod real_server;
pub mod recorder;
pub mod repeat;
pub mod run;
pub mod run_end;
pub mod session;
pub mod state;
pub mod summary;
pub mod sweep;
