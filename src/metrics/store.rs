//! The time-series store: one row per sample interval, named columns. Fed by the lab's one
//! owner of state; read by the TUI and the headless writers.
