//! The built-in target server: event / prefork / threaded architectures, service time,
//! generated file set, HTTP/1.0 and 1.1 keep-alive, its own request counters.

pub mod cli;
pub mod config;
