//! Load generation: the S-Client engine (seed 000 §4.2), open and closed loops, bursts, the
//! request mix and the `synlab worker` child process.

pub mod arrival;
pub mod cli;
pub mod engine;
pub mod http;
pub mod notice;
pub mod protocol;
pub mod rates;
pub mod validate;
