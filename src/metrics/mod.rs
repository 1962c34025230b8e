//! Measurements shared by every front end: the time-series store, measurement windows over
//! its rows and latency histograms.

pub mod hist;
pub mod openmetrics;
pub mod store;
pub mod window;
