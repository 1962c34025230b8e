//! The controller: sets the lab up from a scenario, starts the server and workers, folds their
//! stats and the probes' samples into one state (one owner), and plays steps and sweeps.

pub mod ci;
pub mod client_agg;
pub mod controller;
pub mod real_server;
pub mod run;
pub mod state;

pub use run::run_main;

/// Column names of the client side in the time-series store (the probes add theirs: see
/// `probe::ProbeSample::columns`).
pub mod columns {
    pub const ATTEMPTS: &str = "attempts_per_s";
    pub const ESTABLISHED: &str = "established_per_s";
    pub const RESPONSES: &str = "responses_per_s";
    pub const ERRORS: &str = "errors_per_s";
    pub const CONNECT_TIMEOUTS: &str = "connect_timeouts_per_s";
    pub const REFUSED: &str = "refused_per_s";
    pub const RESETS: &str = "resets_per_s";
    pub const TARGET_RATE: &str = "target_rate";
    pub const CONNECT_P50: &str = "connect_p50_ms";
    pub const CONNECT_P90: &str = "connect_p90_ms";
    pub const CONNECT_P99: &str = "connect_p99_ms";
    pub const TOTAL_P50: &str = "total_p50_ms";
    pub const TOTAL_P90: &str = "total_p90_ms";
    pub const TOTAL_P99: &str = "total_p99_ms";
    pub const IN_FLIGHT: &str = "in_flight";
    pub const LAG_MAX: &str = "lag_ms_max";
    pub const WORKER_CPU: &str = "worker_cpu_pct";
    pub const SERVER_RESPONSES: &str = "server_responses_per_s";
    /// Probe columns the TUI draws (names from `probe::ProbeSample::columns`).
    pub const SYN_IN: &str = "syn_in_per_s";
    pub const SYN_IN_TOTAL: &str = "syn_in_total";
    pub const SYN_IN_ESTIMATED: &str = "syn_in_estimated";
    pub const ACCEPT_QUEUE: &str = "accept_queue";
    pub const ACCEPT_QUEUE_LIMIT: &str = "accept_queue_limit";
    pub const SYN_RECV: &str = "syn_recv";
    pub const LISTEN_OVERFLOWS: &str = "listen_overflows_per_s";
    pub const ESTABLISHED_SOCKS: &str = "established";
    pub const TIME_WAIT: &str = "time_wait";
    pub const CPU_USER: &str = "cpu_user_pct";
    pub const CPU_SYSTEM: &str = "cpu_system_pct";
    pub const CPU_IRQ: &str = "cpu_irq_pct";
    pub const CPU_SOFTIRQ: &str = "cpu_softirq_pct";
    pub const CPU_IDLE: &str = "cpu_idle_pct";
    pub const PROBE_CPU: &str = "probe_cpu_pct";

    /// A network path's own copy of a client column: `path_<name>_<column>`.
    pub fn path(name: &str, column: &str) -> String {
        format!("path_{name}_{column}")
    }
}

/// What a front end (the TUI) needs from a running lab. The controller implements it; tests
/// implement it over a fixed `LabState`.
pub trait LabControl {
    /// The state to draw.
    fn state(&self) -> &state::LabState;
    /// Folds pending events (worker stats, probe samples, steps) into the state; never blocks
    /// for long.
    fn pump(&mut self) -> anyhow::Result<()>;
    /// A knob change; Ok(description) or Err(why refused).
    fn command(&mut self, cmd: state::Command) -> Result<String, String>;
    /// Puts a mark on the charts and in the results.
    fn mark(&mut self, label: &str);
    /// Jumps to the scenario's next step; returns its caption/description, None if none left.
    fn next_step(&mut self) -> Option<String>;
    /// Writes the current time series and `screen` (a text screenshot) to files; returns the
    /// folder or file written.
    fn snapshot(&mut self, screen: &str) -> anyhow::Result<std::path::PathBuf>;
    /// Stops load, tears everything down and finishes the run folder.
    fn stop(&mut self) -> anyhow::Result<()>;
}
