//! The one parser of /proc/<pid>/stat (and task/<tid>/stat, same format): the fields a
//! server's CPU and memory use are computed from, a process's parent, state and start time.
//! The name is in parentheses and may itself contain spaces and parentheses, so the fields
//! are found after the *last* `)`.

/// The fields of /proc/<pid>/stat that synlab uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidStat {
    pub pid: u32,
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    /// Clock ticks in user / kernel mode (all threads, live and exited).
    pub utime: u64,
    pub stime: u64,
    /// Clock ticks of its children that exited and were waited for (a server's CGI programs;
    /// each child's own time and its waited-for children's).
    pub cutime: u64,
    pub cstime: u64,
    pub num_threads: u64,
    /// Clock ticks after boot when the process started: with `pid`, identifies a process.
    pub starttime: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// Why a /proc/<pid>/stat line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PidStatError {
    #[error("{}: no `(comm)` (is this the right file?)", super::procfs::PID_STAT)]
    NoName,
    #[error(
        "{}: fewer than the 24 fields it has since Linux 2.6",
        super::procfs::PID_STAT
    )]
    Short,
    #[error(
        "{}: value `{value}` of `{key}` is not an integer",
        super::procfs::PID_STAT
    )]
    NotANumber { key: &'static str, value: String },
}

impl PidStat {
    pub fn parse(text: &str) -> Result<Self, PidStatError> {
        let open = text.find('(').ok_or(PidStatError::NoName)?;
        let close = text.rfind(')').ok_or(PidStatError::NoName)?;
        if close < open {
            return Err(PidStatError::NoName);
        }
        let pid_s = text[..open].trim();
        let pid = pid_s.parse().map_err(|_| PidStatError::NotANumber {
            key: "pid",
            value: pid_s.into(),
        })?;
        let comm = text[open + 1..close].to_string();
        // Fields after the name, numbered as in proc(5): [0] is field 3 (state).
        let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
        let field = |n: usize, key: &'static str| -> Result<u64, PidStatError> {
            let v = rest.get(n - 3).ok_or(PidStatError::Short)?;
            v.parse().map_err(|_| PidStatError::NotANumber {
                key,
                value: v.to_string(),
            })
        };
        Ok(PidStat {
            pid,
            comm,
            state: rest.first().and_then(|s| s.chars().next()).unwrap_or('?'),
            ppid: field(4, "ppid")? as u32,
            utime: field(14, "utime")?,
            stime: field(15, "stime")?,
            cutime: field(16, "cutime")?,
            cstime: field(17, "cstime")?,
            num_threads: field(20, "num_threads")?,
            starttime: field(22, "starttime")?,
            rss_pages: field(24, "rss")?,
        })
    }

    /// Process `pid`'s stat as it is now (one read, off the sampling path: the probes keep
    /// theirs open, see [`super::procfs::ProcFile`]); None when it is gone or unreadable.
    pub fn read(pid: u32) -> Option<Self> {
        let text = std::fs::read_to_string(super::procfs::pid_stat_path(Some(pid))).ok()?;
        Self::parse(&text).ok()
    }

    /// Whether it is a zombie: it has exited, and only waits to be reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_with_spaces_and_parentheses() {
        let t = include_str!("../../tests/fixtures/proc_pid_stat_awkward.txt");
        let s = PidStat::parse(t).unwrap();
        assert_eq!(s.pid, 8880);
        assert_eq!(s.comm, "a) (b c) x");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 8879);
        assert_eq!(s.num_threads, 1);
        assert_eq!(s.starttime, 239885);
        assert_eq!(s.rss_pages, 417);
    }

    #[test]
    fn plain_process() {
        let t = include_str!("../../tests/fixtures/proc_pid_stat_cat.txt");
        let s = PidStat::parse(t).unwrap();
        assert_eq!(s.comm, "cat");
        assert_eq!(s.state, 'R');
        assert!(s.rss_pages > 0);
    }

    #[test]
    fn synthetic_values_land_in_the_right_fields() {
        let t = "42 (x) y)) S 1 2 3 4 5 6 7 8 9 10 111 222 13 14 15 16 7 18 999 20 333 22\n";
        let s = PidStat::parse(t).unwrap();
        assert_eq!((s.comm.as_str(), s.utime, s.stime), ("x) y)", 111, 222));
        assert_eq!((s.cutime, s.cstime), (13, 14));
        assert_eq!((s.num_threads, s.starttime, s.rss_pages), (7, 999, 333));
    }

    #[test]
    fn fields_count_after_the_last_parenthesis_of_the_name() {
        let t = "42 (a) b (c)) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 777 0 5";
        let s = PidStat::parse(t).unwrap();
        assert_eq!((s.comm.as_str(), s.ppid, s.starttime), ("a) b (c)", 1, 777));
    }

    #[test]
    fn a_live_process_reads_its_parent_and_is_no_zombie() {
        let me = PidStat::read(std::process::id()).expect("our own /proc/<pid>/stat");
        assert_eq!(me.ppid, std::os::unix::process::parent_id());
        assert!(!me.is_zombie());
        assert!(crate::sys::process::running(std::process::id()));
    }

    #[test]
    fn truncated_line_is_an_error() {
        assert_eq!(PidStat::parse("42 (x) S 1 2"), Err(PidStatError::Short));
        assert_eq!(PidStat::parse("garbage"), Err(PidStatError::NoName));
    }
}
