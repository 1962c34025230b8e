//! Load generation: the S-Client engine (seed 000 §4.2), open and closed loops, bursts, the
//! request mix and the `synlab worker` child process.

pub mod cli;
pub mod protocol;
