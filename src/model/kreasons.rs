//! The kernel's own drop reasons (issue 48 item 2): `skb:kfree_skb` counted per `reason` for
//! the run, machine-wide, as root. The typed result the probe, the TUI's drops view and the
//! report read, the reasons' names as this kernel's tracepoint format spells them, and the
//! cross-check of TCP_LISTEN_OVERFLOW against the namespace's ListenOverflows.

use std::fmt;

/// The reasons counted one by one (each its own filtered counter); every other reason is in
/// the counter of all drops. Those a connection's way in meets, and the usual suspects.
pub const OF_INTEREST: &[&str] = &[
    "TCP_LISTEN_OVERFLOW",
    "SOCKET_BACKLOG",
    "NO_SOCKET",
    "SOCKET_RCVBUFF",
    "TCP_OLD_ACK",
    "TCP_RESET",
    "TCP_FLAGS",
    "TCP_ZEROWINDOW",
];

/// The cost that keeps the counting off by default, as measured (bench/kreasons-cost.sh on
/// 6.18, 2 cores): the tracepoint alone, one unfiltered event, 2 % of a core at 100k drops/s;
/// each per-reason filter adds about 0.3 %.
pub const OFF_COST: &str = "about 5 % of a core at 100k drops/s";

/// The kernel's reason that names an accept-queue overflow of the handshake's final ACK.
pub const LISTEN_OVERFLOW: &str = "TCP_LISTEN_OVERFLOW";

/// `enum skb_drop_reason` as this kernel's `skb:kfree_skb` format file lists it: its
/// `__print_symbolic(REC->reason, { 2, "NOT_SPECIFIED" }, ...)`. Numbers differ between
/// kernels, so they are read, never written down.
pub fn parse_reason_names(format: &str) -> Result<Vec<(u32, String)>, String> {
    let at = format
        .find("__print_symbolic(REC->reason")
        .ok_or("no __print_symbolic(REC->reason, ...) in the kfree_skb format file")?;
    let mut out = Vec::new();
    let mut rest = &format[at..];
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let pair = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        let Some((n, name)) = pair.split_once(',') else {
            continue;
        };
        let (Ok(n), name) = (n.trim().parse::<u32>(), name.trim().trim_matches('"')) else {
            continue;
        };
        out.push((n, name.to_string()));
    }
    if out.is_empty() {
        return Err("the kfree_skb format file lists no reason".into());
    }
    Ok(out)
}

/// One reason's count since the counters opened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReasonCount {
    pub name: String,
    pub count: u64,
}

/// Why the kernel's reasons are not counted: the user sees the namespace's counters only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum NotCounted {
    /// Off, as by default: counting costs the kernel CPU on every drop (measured 2-6 % of a
    /// core at 100k drops/s, bench/kreasons-cost.sh), so it is asked for.
    Off,
    /// Not root: counting a tracepoint machine-wide needs root (perf_event_open with
    /// perf_event_paranoid above -1, and tracefs).
    NotRoot,
    /// Root, but the kernel refused: what it said.
    Refused(String),
}

/// What a run's notes say (run.log, `synlab run`'s notices, report.md, `synlab probe`): no
/// view around them, so no "in this view" and no "above"; the TUI's drops view says it in its
/// own words ([`NotCounted::in_view`]).
impl fmt::Display for NotCounted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotCounted::Off => write!(
                f,
                "the kernel's own reasons: not counted, off (counting skb:kfree_skb costs the \
                 kernel CPU on every drop, {OFF_COST}); `kernel_reasons = true` under [probe] \
                 in the scenario, `Y` in the TUI or `synlab probe --kernel-reasons` turns it on \
                 (root); the drops are counted by the namespace's TcpExt/Udp counters"
            ),
            NotCounted::NotRoot => write!(
                f,
                "the kernel's own reasons: not counted, synlab runs as a plain user (counting \
                 skb:kfree_skb machine-wide needs root: perf_event_open of a tracepoint and \
                 tracefs); the drops are counted by the namespace's TcpExt/Udp counters, which \
                 any user may read"
            ),
            NotCounted::Refused(why) => write!(
                f,
                "the kernel's own reasons: not counted ({why}); the drops are counted by the \
                 namespace's TcpExt/Udp counters"
            ),
        }
    }
}

impl NotCounted {
    /// What the TUI's drops view says, under the namespace's counters it lists: its key
    /// turns the counting on there.
    pub fn in_view(&self) -> String {
        match self {
            NotCounted::Off => format!(
                "the kernel's own reasons: off (counting skb:kfree_skb costs the kernel CPU on \
                 every drop, {OFF_COST}); turn on with Y in this view, `kernel_reasons = true` \
                 under [probe] in the scenario, or `synlab probe --kernel-reasons` (root); the \
                 reasons above are the namespace's TcpExt/Udp counters"
            ),
            NotCounted::NotRoot => "the kernel's own reasons: not counted, synlab runs as a \
                 plain user (counting skb:kfree_skb machine-wide needs root: perf_event_open of \
                 a tracepoint and tracefs); the reasons above are the namespace's TcpExt/Udp \
                 counters, which any user may read"
                .into(),
            NotCounted::Refused(why) => format!(
                "the kernel's own reasons: not counted ({why}); the reasons above are the \
                 namespace's TcpExt/Udp counters"
            ),
        }
    }
}

/// The kernel's own reasons for a run so far.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum KernelReasons {
    /// skb:kfree_skb per reason since the counters opened, machine-wide: `reasons` the ones of
    /// interest with a count above zero, the largest first; `all` every reason together.
    Counted {
        reasons: Vec<ReasonCount>,
        all: u64,
        secs: f64,
    },
    NotCounted(NotCounted),
}

impl KernelReasons {
    /// Counts as read: the reasons of interest with a count, largest first (ties by name).
    pub fn counted(counts: Vec<ReasonCount>, all: u64, secs: f64) -> Self {
        let mut reasons: Vec<_> = counts.into_iter().filter(|r| r.count > 0).collect();
        reasons.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
        KernelReasons::Counted { reasons, all, secs }
    }

    /// A reason's count (0 when counted and not seen; None when not counted).
    pub fn count(&self, name: &str) -> Option<u64> {
        match self {
            KernelReasons::Counted { reasons, .. } => Some(
                reasons
                    .iter()
                    .find(|r| r.name == name)
                    .map_or(0, |r| r.count),
            ),
            KernelReasons::NotCounted(_) => None,
        }
    }

    /// The lines the TUI's drops view shows: a head saying where the figures come from, then
    /// one line per reason "  TCP_LISTEN_OVERFLOW  1234  (617/s)"; not counted, why in the
    /// view's words ([`NotCounted::in_view`]).
    pub fn lines(&self) -> Vec<String> {
        match self {
            KernelReasons::NotCounted(why) => vec![why.in_view()],
            KernelReasons::Counted { reasons, all, secs } => {
                let rate = |n: u64| {
                    if *secs > 0.0 {
                        format!("{:.0}/s", n as f64 / secs)
                    } else {
                        "-".into()
                    }
                };
                let mut v = vec![format!(
                    "the kernel's own reasons (skb:kfree_skb, machine-wide, all namespaces) \
                     over {secs:.0}s: {all} drops ({})",
                    rate(*all)
                )];
                let named: u64 = reasons.iter().map(|r| r.count).sum();
                for r in reasons {
                    v.push(format!(
                        "  {:<22}{:>10}  {}",
                        r.name,
                        r.count,
                        rate(r.count)
                    ));
                }
                if *all > named {
                    let o = all - named;
                    v.push(format!("  {:<22}{:>10}  {}", "other reasons", o, rate(o)));
                }
                v
            }
        }
    }
}

/// TCP_LISTEN_OVERFLOW (the kernel's reason, machine-wide) against ListenOverflows (the
/// namespace's counter) over the same span. They are not the same count: ListenOverflows also
/// counts the SYNs that meet a full accept queue (tcp_conn_request), and the kernel frees
/// those SYNs as consumed, without a drop reason (measured on 6.18: a listener that never
/// accepts, 1263 overflows, 0 TCP_LISTEN_OVERFLOW). TCP_LISTEN_OVERFLOW is the handshakes'
/// final ACKs dropped at a full queue: at most the counter, the rest are SYNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct OverflowCheck {
    pub counter: u64,
    pub kernel: u64,
}

/// Counting noise: a few drops may fall between the two reads at either end.
const NOISE: u64 = 2;

impl OverflowCheck {
    /// The counting noise at this size: 1 %, at least `NOISE`.
    fn noise(&self) -> u64 {
        NOISE.max(self.counter.max(self.kernel) / 100)
    }

    /// The two within the counting noise: every overflow was a final ACK.
    pub fn equal(&self) -> bool {
        self.counter.abs_diff(self.kernel) <= self.noise()
    }

    /// The kernel's count is at most the counter's, within the noise; else flagged (another
    /// namespace's listener overflowed: the reasons are machine-wide).
    pub fn consistent(&self) -> bool {
        self.kernel <= self.counter + self.noise()
    }

    /// The SYNs that met a full accept queue: the counter's overflows without a kernel reason.
    pub fn syns(&self) -> u64 {
        self.counter.saturating_sub(self.kernel)
    }
}

impl fmt::Display for OverflowCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (c, k) = (self.counter, self.kernel);
        if self.equal() {
            write!(
                f,
                "ListenOverflows {c} = TCP_LISTEN_OVERFLOW {k} (within 1 %): the accept queue's \
                 drops were handshakes' final ACKs"
            )
        } else if self.consistent() {
            write!(
                f,
                "ListenOverflows {c} = TCP_LISTEN_OVERFLOW {k} final ACKs + {} SYNs that met a \
                 full accept queue (the kernel frees those without a drop reason)",
                self.syns()
            )
        } else {
            write!(
                f,
                "FLAGGED: TCP_LISTEN_OVERFLOW {k} > ListenOverflows {c}: the kernel's reasons \
                 are machine-wide, another namespace's listener overflowed too"
            )
        }
    }
}

/// What a probe sample says of the kernel's reasons: the counts (or why not) and, while
/// counted, the overflow cross-check against the sampled namespace's counter.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelView {
    pub reasons: KernelReasons,
    pub overflow: Option<OverflowCheck>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: &str = "name: kfree_skb\nID: 2310\nformat:\n\tfield:enum skb_drop_reason reason;\toffset:36;\tsize:4;\tsigned:0;\n\nprint fmt: \"skbaddr=%p reason: %s\", REC->skbaddr, __print_symbolic(REC->reason, { 2, \"NOT_SPECIFIED\" }, { 3, \"NO_SOCKET\" }, { 40, \"TCP_LISTEN_OVERFLOW\" }, { 128, \"MAX\" })\n";

    #[test]
    fn reason_names_come_from_the_format_file() {
        let r = parse_reason_names(FORMAT).unwrap();
        assert_eq!(
            r,
            [
                (2, "NOT_SPECIFIED".to_string()),
                (3, "NO_SOCKET".into()),
                (40, "TCP_LISTEN_OVERFLOW".into()),
                (128, "MAX".into())
            ]
        );
        assert!(parse_reason_names("name: kfree_skb\n").is_err());
    }

    #[test]
    fn counted_keeps_non_zero_reasons_largest_first_and_names_the_rest_other() {
        let k = KernelReasons::counted(
            vec![
                ReasonCount {
                    name: "NO_SOCKET".into(),
                    count: 5,
                },
                ReasonCount {
                    name: "TCP_LISTEN_OVERFLOW".into(),
                    count: 400,
                },
                ReasonCount {
                    name: "TCP_RESET".into(),
                    count: 0,
                },
            ],
            420,
            2.0,
        );
        assert_eq!(k.count("TCP_LISTEN_OVERFLOW"), Some(400));
        assert_eq!(k.count("TCP_RESET"), Some(0));
        let l = k.lines();
        assert!(l[0].contains("machine-wide") && l[0].contains("420 drops (210/s)"));
        assert!(l[1].contains("TCP_LISTEN_OVERFLOW") && l[1].ends_with("200/s"));
        assert!(l[2].contains("NO_SOCKET"));
        assert!(l[3].contains("other reasons") && l[3].contains("15"));
        let n = KernelReasons::NotCounted(NotCounted::NotRoot);
        assert_eq!(n.count("TCP_LISTEN_OVERFLOW"), None);
        assert!(n.lines()[0].contains("plain user"));
    }

    #[test]
    fn overflow_check_splits_final_acks_from_syns_and_flags_more_reasons_than_overflows() {
        let c = |counter, kernel| OverflowCheck { counter, kernel };
        assert!(c(1000, 990).equal());
        assert!(!c(1000, 980).equal() && c(1000, 980).consistent());
        assert!(c(3, 1).equal());
        assert!(!c(10, 5).equal());
        let s = c(100, 60).to_string();
        assert!(s.contains("60 final ACKs + 40 SYNs"), "{s}");
        assert!(!s.contains("FLAGGED"), "{s}");
        assert!(!c(60, 100).consistent());
        let s = c(60, 100).to_string();
        assert!(
            s.starts_with("FLAGGED") && s.contains("machine-wide"),
            "{s}"
        );
        assert!(c(1263, 0).to_string().contains("1263 SYNs"));
    }

    /// A run's notes (a headless run's notices, run.log) have no view and nothing above them:
    /// they name the scenario's key (`probe.kernel_reasons`, docs/04) and the TUI's; the drops
    /// view keeps its own words, its key and "the reasons above".
    #[test]
    fn the_notice_says_no_view_words_and_the_view_keeps_them() {
        let all = [
            NotCounted::Off,
            NotCounted::NotRoot,
            NotCounted::Refused("tracefs: EPERM".into()),
        ];
        for n in &all {
            let notice = n.to_string();
            for view_words in ["this view", "above"] {
                assert!(!notice.contains(view_words), "{notice}");
            }
            assert!(notice.contains("TcpExt/Udp counters"), "{notice}");
            assert!(n.in_view().contains("the reasons above"), "{n:?}");
            assert_eq!(KernelReasons::NotCounted(n.clone()).lines(), [n.in_view()]);
        }
        let off = NotCounted::Off.to_string();
        assert!(
            off.contains("`kernel_reasons = true` under [probe]")
                && off.contains("`Y` in the TUI")
                && off.contains("synlab probe --kernel-reasons"),
            "{off}"
        );
        assert!(NotCounted::Off
            .in_view()
            .contains("turn on with Y in this view"));
    }
}
