//! Kernel probes of the server's namespace: parsers of /proc text and sock_diag replies, rate
//! maths, cross-checks, and `synlab probe`.

pub mod accesslog;
pub mod cli;
pub mod counters;
pub mod cpustat;
pub mod crosscheck;
pub mod kreasons;
pub mod procnet;
pub mod sample;
pub mod sampler;
pub mod scope;
pub mod speaks_h2;

pub use sample::{Cores, Metrics, ProbeSample, SynSource};
pub use sampler::{spawn, spawn_with, ProbeConfig, ProbeHandle, SampleSink};
pub mod sockdiag;
