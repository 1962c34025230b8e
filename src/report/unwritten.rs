//! Files of a report that could not be written: an error of its own, so the page writers
//! (report.md of a run, of a repeated run) raise it without importing the report module above them.

/// Files of a report that could not be written, each with its path and why; report.md lists
/// the plots among them when it could be written itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Unwritten(pub Vec<String>);

impl std::fmt::Display for Unwritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} file(s) of the report could not be written: {}",
            self.0.len(),
            self.0.join("; ")
        )
    }
}

impl std::error::Error for Unwritten {}
