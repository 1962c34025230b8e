//! Measurements shared by every front end: the time-series store and latency histograms.

pub mod hist;
pub mod openmetrics;
pub mod store;
