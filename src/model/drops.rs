//! What the kernel dropped, and why: each reason the server namespace's TcpExt/Udp counters
//! name, in words, with its per-second column. The one table the probes, the summary, the
//! report, OpenMetrics and `synlab probe` read (issue 48 item 1). Per namespace, readable by
//! any user (/proc/<pid>/net/netstat and snmp).

use super::column::{col, Col};
use super::summary::SummaryCol;

/// One reason: the kernel counter (`Group.Name` of /proc/net/netstat or snmp), what it means
/// in words, its short name (the OpenMetrics `reason` label, the probe table's head) and the
/// per-second column it fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropReason {
    pub counter: &'static str,
    pub words: &'static str,
    pub short: &'static str,
    pub col: Col,
}

const fn r(
    counter: &'static str,
    short: &'static str,
    words: &'static str,
    col: Col,
) -> DropReason {
    DropReason {
        counter,
        words,
        short,
        col,
    }
}

/// Every reason, in the order the kernel meets them on a connection's way in.
pub const DROP_REASONS: &[DropReason] = &[
    r(
        "TcpExt.TCPReqQFullDrop",
        "syn_queue_full_dropped",
        "SYN queue full: SYN dropped",
        col::REQQ_FULL_DROPS_PER_S,
    ),
    r(
        "TcpExt.TCPReqQFullDoCookies",
        "syn_queue_full_cookie",
        "SYN queue full: answered with a SYN cookie",
        col::REQQ_FULL_COOKIES_PER_S,
    ),
    r(
        "TcpExt.SyncookiesSent",
        "syncookies_sent",
        "SYN cookies sent",
        col::SYNCOOKIES_SENT_PER_S,
    ),
    r(
        "TcpExt.SyncookiesRecv",
        "syncookies_recv",
        "SYN cookies returned valid (connection made from a cookie)",
        col::SYNCOOKIES_RECV_PER_S,
    ),
    r(
        "TcpExt.SyncookiesFailed",
        "syncookies_failed",
        "SYN cookies returned invalid (ACK dropped)",
        col::SYNCOOKIES_FAILED_PER_S,
    ),
    r(
        "TcpExt.ListenOverflows",
        "accept_queue_full",
        "accept queue full: SYN or handshake's final ACK dropped",
        col::LISTEN_OVERFLOWS,
    ),
    r(
        "TcpExt.TCPBacklogDrop",
        "socket_backlog_full",
        "socket backlog full while the server held the socket",
        col::BACKLOG_DROPS_PER_S,
    ),
    r(
        "TcpExt.TCPRcvQDrop",
        "receive_queue_full",
        "receive buffer full: segment dropped",
        col::RCVQ_DROPS_PER_S,
    ),
    r(
        "TcpExt.TCPZeroWindowDrop",
        "zero_window",
        "data past a zero window dropped",
        col::ZERO_WINDOW_DROPS_PER_S,
    ),
    r(
        "TcpExt.TCPTimeWaitOverflow",
        "time_wait_overflow",
        "TIME_WAIT table full: closing socket not kept",
        col::TIME_WAIT_OVERFLOWS_PER_S,
    ),
    r(
        "TcpExt.TCPAbortOnMemory",
        "abort_on_memory",
        "connection aborted: out of TCP memory",
        col::ABORT_ON_MEMORY_PER_S,
    ),
    r(
        "Udp.RcvbufErrors",
        "udp_receive_buffer_full",
        "UDP receive buffer full: datagram dropped",
        col::UDP_RCVBUF_ERRORS_PER_S,
    ),
    r(
        "Udp.InErrors",
        "udp_in_errors",
        "UDP datagrams in error (receive buffer full included)",
        col::UDP_IN_ERRORS_PER_S,
    ),
    r(
        "Udp.NoPorts",
        "udp_no_port",
        "UDP datagram to a port without a socket",
        col::UDP_NO_PORTS_PER_S,
    ),
];

impl DropReason {
    /// The reason whose column is `c`.
    pub fn of_col(c: Col) -> Option<&'static DropReason> {
        DROP_REASONS.iter().find(|r| r.col == c)
    }

    /// Its summary column: the point's mean rate, named as its time-series column.
    pub fn summary_col(&self) -> SummaryCol {
        SummaryCol::parse(&self.col.name()).expect("a drop reason without its summary column")
    }
}

/// The reasons with a rate above zero, the largest first (ties in the table's order):
/// what a report or a panel says of one point or sample. `rate` gives each column's value.
pub fn top(rate: impl Fn(Col) -> Option<f64>) -> Vec<(&'static DropReason, f64)> {
    let mut v: Vec<_> = DROP_REASONS
        .iter()
        .filter_map(|r| {
            rate(r.col)
                .filter(|x| x.is_finite() && *x > 0.0)
                .map(|x| (r, x))
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_once_with_a_rate_column_of_the_namespace() {
        for (i, r) in DROP_REASONS.iter().enumerate() {
            for o in &DROP_REASONS[i + 1..] {
                assert_ne!(r.counter, o.counter);
                assert_ne!(r.short, o.short);
                assert_ne!(r.col, o.col);
            }
            assert!(r.col.name().ends_with("_per_s"), "{}", r.col.name());
            assert_eq!(
                r.col.scope(),
                Some(crate::model::Scope::Netns),
                "{}",
                r.counter
            );
            assert_eq!(r.summary_col().name(), r.col.name());
            assert!(r.short.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
        assert_eq!(
            DropReason::of_col(col::LISTEN_OVERFLOWS).unwrap().words,
            "accept queue full: SYN or handshake's final ACK dropped"
        );
    }

    #[test]
    fn top_is_the_non_zero_reasons_largest_first() {
        let t = top(|c| {
            if c == col::LISTEN_OVERFLOWS {
                Some(700.0)
            } else if c == col::REQQ_FULL_DROPS_PER_S {
                Some(30.0)
            } else if c == col::BACKLOG_DROPS_PER_S {
                Some(f64::NAN)
            } else {
                Some(0.0)
            }
        });
        let names: Vec<_> = t.iter().map(|(r, x)| (r.short, *x)).collect();
        assert_eq!(
            names,
            [
                ("accept_queue_full", 700.0),
                ("syn_queue_full_dropped", 30.0)
            ]
        );
    }
}
