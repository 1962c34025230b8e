//! A child process that ended while the run needed it: who, its pid, and how it ended.

/// How a process ended, as words: "exited with code 1", "was killed by signal 9 (SIGKILL)".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exit {
    #[error("exited with code {0}")]
    Code(i32),
    /// The signal's number and name.
    #[error("was killed by signal {0} ({1})")]
    Signal(i32, String),
    #[error("ended ({0})")]
    Other(String),
}

/// "the delay router (pid 7) was killed by signal 9 (SIGKILL)".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{who} (pid {pid}) {how}")]
pub struct Death {
    pub who: String,
    pub pid: u32,
    pub how: Exit,
}
