//! What a load worker has to tell the run once (a limit raised, ports run out, a control line
//! refused, why responses are bad): typed, with the facts as fields, carried over the worker
//! protocol as they are; Display is the line a user reads in run.log and summary.json.

use crate::model::BadReason;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The server chose another application protocol than the one the HTTP layer needs: a
/// connection error of its own (`alpn_refused`), its line said once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("the server picked ALPN {picked} where the load needs {needed}: enable it on the server (nginx: `http2 on;`, Apache: `Protocols h2 http/1.1`) or load it over HTTP/1.1")]
pub struct AlpnRefused {
    pub needed: String,
    /// What it picked ("none" when it picked nothing).
    pub picked: String,
}

/// Why a worker refused a control message (the lab checks the knobs first: a refusal is a
/// bug of the lab's, said rather than applied in part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum Refusal {
    #[error("sockets must be >= 1, got 0")]
    NoSockets,
    #[error("timeout_s must be > 0, got {got}")]
    Timeout { got: f64 },
    #[error("requests_per_conn must be >= 1, got 0")]
    NoRequestsPerConn,
    #[error("the resumed share must be 0 to 1, got {got}")]
    ResumedShare { got: f64 },
    #[error("this worker does not speak TLS")]
    NotTls,
    #[error("streams must be >= 1, got 0")]
    NoStreams,
    #[error("this worker speaks HTTP/1.x: it has no streams per connection")]
    StreamsOverHttp1,
    #[error("this worker speaks HTTP/2: streams must be given")]
    StreamsMissing,
    /// The arrival schedule refused the rate or burst (`arrival::ScheduleError`'s words).
    #[error("{words}")]
    Schedule { words: String },
}

/// One thing a worker says once. The lab keeps one of each [`NoticeKind`] (the first worker's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "notice", rename_all = "snake_case")]
pub enum WorkerNotice {
    /// The worker raised its descriptor limit for the load.
    RaisedNofile { from: u64, to: u64, needs: u64 },
    /// The descriptor limit stays below what the load could need: why (the worker's
    /// privileges, the kernel's ceiling) and what to do.
    NofileShort {
        soft: u64,
        hard: u64,
        needs: u64,
        nr_open: u64,
        /// The worker may raise hard limits (CAP_SYS_RESOURCE).
        sys_resource: bool,
        /// The worker is root of the host (not of a container's user namespace).
        host_root: bool,
    },
    /// setrlimit failed (the system's words).
    NofileFailed { needs: u64, error: String },
    /// A control line that is not a control message: ignored.
    BadControl { line: String, error: String },
    /// A control message the worker refused (its settings out of range for this worker).
    ControlRefused { why: Refusal },
    /// A source address to bind that is not on this host.
    BindUnavailable { addr: IpAddr },
    /// EADDRNOTAVAIL on connect: the clients ran out of ephemeral ports.
    PortsExhausted,
    /// EMFILE / ENFILE: out of descriptors.
    OutOfFds,
    /// The server picked another application protocol than the load speaks.
    AlpnRefused(AlpnRefused),
    /// The server reset streams with this HTTP/2 error code.
    StreamReset { code: u32 },
    /// Responses were bad for this reason; `words` are the parser's for the first one.
    BadResponses { reason: BadReason, words: String },
    /// The QUIC client could not start a connection (its configuration refused: the stack's
    /// words).
    QuicStart { error: String },
    /// The QUIC client's UDP socket failed.
    QuicSocket { error: String },
    /// QUIC connections ended with this error (the stack's words, one notice each).
    QuicConnEnd { error: String },
}

/// What makes two notices the same for the lab: their variant, and for resets and bad
/// responses the code or reason (each said once), for a refusal its words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoticeKind<'a> {
    RaisedNofile,
    NofileShort,
    NofileFailed,
    BadControl,
    ControlRefused(&'a Refusal),
    BindUnavailable,
    PortsExhausted,
    OutOfFds,
    AlpnRefused,
    StreamReset(u32),
    BadResponses(BadReason),
    QuicStart,
    QuicSocket,
    QuicConnEnd(&'a str),
}

impl WorkerNotice {
    pub fn kind(&self) -> NoticeKind<'_> {
        match self {
            WorkerNotice::RaisedNofile { .. } => NoticeKind::RaisedNofile,
            WorkerNotice::NofileShort { .. } => NoticeKind::NofileShort,
            WorkerNotice::NofileFailed { .. } => NoticeKind::NofileFailed,
            WorkerNotice::BadControl { .. } => NoticeKind::BadControl,
            WorkerNotice::ControlRefused { why } => NoticeKind::ControlRefused(why),
            WorkerNotice::BindUnavailable { .. } => NoticeKind::BindUnavailable,
            WorkerNotice::PortsExhausted => NoticeKind::PortsExhausted,
            WorkerNotice::OutOfFds => NoticeKind::OutOfFds,
            WorkerNotice::AlpnRefused(_) => NoticeKind::AlpnRefused,
            WorkerNotice::StreamReset { code } => NoticeKind::StreamReset(*code),
            WorkerNotice::BadResponses { reason, .. } => NoticeKind::BadResponses(*reason),
            WorkerNotice::QuicStart { .. } => NoticeKind::QuicStart,
            WorkerNotice::QuicSocket { .. } => NoticeKind::QuicSocket,
            WorkerNotice::QuicConnEnd { error } => NoticeKind::QuicConnEnd(error),
        }
    }
}

impl std::fmt::Display for WorkerNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerNotice::RaisedNofile { from, to, needs } => write!(
                f,
                "raised RLIMIT_NOFILE from {from} to {to} (this load needs up to {needs})"
            ),
            WorkerNotice::NofileShort {
                soft,
                hard,
                needs,
                nr_open,
                sys_resource,
                host_root,
            } => {
                let p = crate::sys::privilege::Privileges {
                    net_admin: false,
                    net_raw: false,
                    sys_admin: false,
                    sys_resource: *sys_resource,
                };
                let note = crate::sys::privilege::nofile_note(
                    &p, *soft, *hard, *needs, *nr_open, *host_root,
                );
                f.write_str(&note)
            }
            WorkerNotice::NofileFailed { needs, error } => {
                write!(f, "could not raise RLIMIT_NOFILE to {needs}: {error}")
            }
            WorkerNotice::BadControl { line, error } => {
                write!(f, "ignored control line {line:?}: {error}")
            }
            WorkerNotice::ControlRefused { why } => write!(f, "control refused: {why}"),
            WorkerNotice::BindUnavailable { addr } => write!(
                f,
                "cannot bind source address {addr}: it is not configured on this host (check bind_addrs)"
            ),
            WorkerNotice::PortsExhausted => f.write_str(
                "ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or add client addresses",
            ),
            WorkerNotice::OutOfFds => f.write_str(
                "out of file descriptors: raise the hard RLIMIT_NOFILE (ulimit -Hn) or lower sockets/clients",
            ),
            WorkerNotice::AlpnRefused(a) => write!(f, "{a} (counted in alpn_refused)"),
            WorkerNotice::StreamReset { code } => write!(
                f,
                "the server reset streams with {} (counted in stream_resets)",
                crate::http2::ErrorCode::from_u32(*code)
            ),
            WorkerNotice::BadResponses { reason, words } => write!(
                f,
                "bad responses: {words}: {reason} (counted in bad_responses)"
            ),
            WorkerNotice::QuicStart { error } => {
                write!(f, "a QUIC connection could not start: {error}")
            }
            WorkerNotice::QuicSocket { error } => {
                write!(f, "the QUIC client's UDP socket failed: {error}")
            }
            WorkerNotice::QuicConnEnd { error } => write!(
                f,
                "QUIC connections end: {error} (counted in quic_conn_errors)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each variant's line, as run.log and summary.json say it.
    #[test]
    fn each_notice_reads_as_a_user_reads_it() {
        let cases: Vec<(WorkerNotice, &str)> = vec![
            (
                WorkerNotice::RaisedNofile { from: 1024, to: 65536, needs: 40000 },
                "raised RLIMIT_NOFILE from 1024 to 65536 (this load needs up to 40000)",
            ),
            (
                WorkerNotice::NofileShort {
                    soft: 1024,
                    hard: 4096,
                    needs: 40000,
                    nr_open: 1 << 20,
                    sys_resource: false,
                    host_root: false,
                },
                "RLIMIT_NOFILE is 1024 (hard limit 4096, which a plain user cannot raise: an administrator raises it (`nofile` in /etc/security/limits.conf, or LimitNOFILE= of your session's service), or run synlab as root) and this load could need up to 40000 descriptors if every connection waited its full response timeout; if out_of_fds errors appear, raise the limit or lower load.sockets, the rate or load.response_timeout",
            ),
            (
                WorkerNotice::NofileFailed { needs: 9000, error: "Operation not permitted (os error 1)".into() },
                "could not raise RLIMIT_NOFILE to 9000: Operation not permitted (os error 1)",
            ),
            (
                WorkerNotice::BadControl { line: "{\"cmd\":\"x\"}".into(), error: "unknown variant `x`".into() },
                "ignored control line \"{\\\"cmd\\\":\\\"x\\\"}\": unknown variant `x`",
            ),
            (
                WorkerNotice::ControlRefused { why: Refusal::NoSockets },
                "control refused: sockets must be >= 1, got 0",
            ),
            (
                WorkerNotice::BindUnavailable { addr: "198.18.9.9".parse().unwrap() },
                "cannot bind source address 198.18.9.9: it is not configured on this host (check bind_addrs)",
            ),
            (
                WorkerNotice::PortsExhausted,
                "ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or add client addresses",
            ),
            (
                WorkerNotice::OutOfFds,
                "out of file descriptors: raise the hard RLIMIT_NOFILE (ulimit -Hn) or lower sockets/clients",
            ),
            (
                WorkerNotice::AlpnRefused(AlpnRefused {
                    needed: "h2".into(),
                    picked: "http/1.1".into(),
                }),
                "the server picked ALPN http/1.1 where the load needs h2: enable it on the server (nginx: `http2 on;`, Apache: `Protocols h2 http/1.1`) or load it over HTTP/1.1 (counted in alpn_refused)",
            ),
            (
                WorkerNotice::StreamReset { code: 0x2 },
                "the server reset streams with INTERNAL_ERROR (counted in stream_resets)",
            ),
            (
                WorkerNotice::BadResponses {
                    reason: BadReason::NotHttp,
                    words: "status line is not HTTP/1.x".into(),
                },
                "bad responses: status line is not HTTP/1.x: the server's answers are not HTTP (is the target an HTTP server on this port? try curl -v) (counted in bad_responses)",
            ),
            (
                WorkerNotice::QuicStart { error: "invalid remote address".into() },
                "a QUIC connection could not start: invalid remote address",
            ),
            (
                WorkerNotice::QuicSocket { error: "Connection refused (os error 111)".into() },
                "the QUIC client's UDP socket failed: Connection refused (os error 111)",
            ),
            (
                WorkerNotice::QuicConnEnd { error: "idle timeout".into() },
                "QUIC connections end: idle timeout (counted in quic_conn_errors)",
            ),
        ];
        for (n, text) in &cases {
            assert_eq!(n.to_string(), *text);
            // Over the worker protocol and back, unchanged.
            let wire = serde_json::to_string(n).unwrap();
            assert_eq!(
                &serde_json::from_str::<WorkerNotice>(&wire).unwrap(),
                n,
                "{wire}"
            );
        }
    }

    #[test]
    fn notices_are_the_same_by_kind_not_by_words() {
        let a = WorkerNotice::RaisedNofile {
            from: 1024,
            to: 4096,
            needs: 4000,
        };
        let b = WorkerNotice::RaisedNofile {
            from: 1024,
            to: 8192,
            needs: 8000,
        };
        assert_eq!(a.kind(), b.kind());
        let r1 = WorkerNotice::StreamReset { code: 1 };
        let r2 = WorkerNotice::StreamReset { code: 2 };
        assert_ne!(r1.kind(), r2.kind());
        let bad = |reason, words: &str| WorkerNotice::BadResponses {
            reason,
            words: words.into(),
        };
        assert_eq!(
            bad(BadReason::Framing, "bad Content-Length").kind(),
            bad(BadReason::Framing, "bad chunk size").kind()
        );
        assert_ne!(
            bad(BadReason::Framing, "x").kind(),
            bad(BadReason::Closed, "x").kind()
        );
    }
}
