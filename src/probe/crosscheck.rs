//! Cross-checks that make the numbers trustworthy (Webmonitor, seed 002, Tables 6 and 9): two
//! independent counts of the same events, their difference in percent, and a flag when they
//! disagree by more than the tolerance (2 % by default).

/// Default tolerance in percent: a check differing by more is flagged (on screen, in run.log,
/// report.md and the gate).
pub const TOLERANCE_PCT: f64 = 2.0;

/// The resumed share of TLS handshakes as the server counted it against the clients' share:
/// they may differ by this many percentage points (the bound; an access log counts
/// per request, which on kept-alive connections weighs each handshake by its requests).
pub const RESUMED_SHARE_POINTS: f64 = 2.0;

/// `measured` against `reference` in signed percent of the reference; None when the reference is
/// zero.
pub fn signed_diff_pct(measured: f64, reference: f64) -> Option<f64> {
    (reference != 0.0).then(|| (measured - reference) / reference * 100.0)
}

/// Whether a difference (in percent, either sign) is past the tolerance; a difference that was
/// not measured (NaN) is not.
pub fn disagrees(diff_pct: f64, tol_pct: f64) -> bool {
    diff_pct.abs() > tol_pct
}

/// How far SYNs/s and attempts/s of one point may differ (%) before the difference means
/// something. The probes' SYN rate is the mean of samples `interval_s` apart and the client's
/// counts come in worker reports 100 ms apart, so the two windows' edges can be up to the
/// longer of the two apart: the attempts in those edge slices (~2 x rate x that, Poisson)
/// make a noise of sqrt(edge) attempts. Allowed: 3 of those standard deviations, and never
/// less than the 2 % of every other check. Long holds get 2 %; a 1.2 s `--quick` hold at
/// 500/s with 200 ms samples gets about 7 %.
pub fn syn_check_tolerance_pct(attempts_per_s: f64, hold_s: f64, interval_s: f64) -> f64 {
    let floor = TOLERANCE_PCT;
    let n = attempts_per_s * hold_s;
    if n <= 0.0 || !n.is_finite() {
        return floor;
    }
    let report_s = crate::load::protocol::REPORT_INTERVAL_MS as f64 / 1000.0;
    let edge = 2.0 * attempts_per_s * interval_s.max(report_s);
    (300.0 * edge.sqrt() / n).max(floor)
}

/// The SYNs a point compares with the client's attempts: the first SYN of each connection,
/// that is every SYN less the retransmitted ones (a lost SYN or SYN-ACK makes the client send
/// its SYN again: one attempt, two SYNs; at 10 % loss that alone is ~+10 %). Without a count
/// of retransmissions (NaN: no capture), the SYNs as they are.
pub fn first_syns(syns: f64, retransmitted: f64) -> f64 {
    if retransmitted.is_finite() {
        syns - retransmitted
    } else {
        syns
    }
}

/// The first SYNs the SYNs-vs-attempts check compares with the client's attempts: the port's,
/// as pcap counted them on the port's packets (`estimated_share` 0: every sample of the window
/// captured). None when any sample's SYN rate was the namespace's estimate instead
/// (PassiveOpens + ListenDrops): that counts every port's connections, the host's other
/// servers' included, and no SYN dropped before a listener saw it, so a difference from the
/// attempts would say nothing about this server; the check is then not made, rather than
/// made on a figure that is not the port's.
pub fn port_first_syns(syns: f64, retransmitted: f64, estimated_share: f64) -> Option<f64> {
    (estimated_share == 0.0).then(|| first_syns(syns, retransmitted))
}

/// Why a point has no SYNs-vs-attempts check, for the places that say it.
pub const NO_PORT_SYNS: &str = "not made: no capture counted the port's SYNs, and the kernel's \
    estimate (PassiveOpens + ListenDrops) counts every port of the server's namespace";

/// The SYNs-vs-attempts tolerance of a point from its recorded `check_syn_tolerance_pct`: never
/// below the default (summary files written before the noise was recorded read 0 or NaN).
pub fn syn_tolerance_of(recorded_pct: f64) -> f64 {
    recorded_pct.max(TOLERANCE_PCT)
}

/// The outcome of comparing two counts of the same thing.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub name: &'static str,
    pub reference_name: &'static str,
    pub measured: f64,
    pub reference: f64,
    /// (measured - reference) / reference, in percent, signed (below the reference is
    /// negative); 0 when both are zero, infinite when only the reference is.
    pub diff_pct: f64,
    pub disagrees: bool,
}

/// Compares `measured` against `reference` with a tolerance in percent.
pub fn compare(
    name: &'static str,
    measured: f64,
    reference_name: &'static str,
    reference: f64,
    tol_pct: f64,
) -> Check {
    let diff_pct = match signed_diff_pct(measured, reference) {
        Some(d) => d,
        None if measured == 0.0 => 0.0,
        None => f64::INFINITY,
    };
    Check {
        name,
        reference_name,
        measured,
        reference,
        diff_pct,
        disagrees: disagrees(diff_pct, tol_pct),
    }
}

/// Initial SYNs counted by pcap vs connection attempts counted by the clients.
pub fn syns_vs_attempts(pcap_initial_syns: u64, client_attempts: u64) -> Check {
    compare(
        "pcap initial SYNs",
        pcap_initial_syns as f64,
        "client attempts",
        client_attempts as f64,
        TOLERANCE_PCT,
    )
}

/// Initial SYNs counted by pcap vs what the kernel accounted for: handshakes completed
/// (PassiveOpens) plus SYNs and final ACKs dropped at the listener (ListenDrops). Attempts
/// still in SYN-RCVD at the end count in neither, so pass them in `in_flight`.
pub fn syns_vs_kernel(
    pcap_initial_syns: u64,
    passive_opens: u64,
    listen_drops: u64,
    in_flight: u64,
) -> Check {
    compare(
        "pcap initial SYNs",
        pcap_initial_syns as f64,
        "PassiveOpens + ListenDrops",
        (passive_opens + listen_drops + in_flight) as f64,
        TOLERANCE_PCT,
    )
}

/// Responses the server counted vs responses the clients received.
pub fn responses(server_responses: u64, client_responses: u64) -> Check {
    compare(
        "server responses",
        server_responses as f64,
        "client responses",
        client_responses as f64,
        TOLERANCE_PCT,
    )
}

/// The server's count of responses against the clients', judged: the line run.log and
/// report.md print, and which count the throughput figures are.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponsesVerdict {
    /// Within the tolerance: the clients' count, confirmed by the server's.
    Agree {
        client: u64,
        server: u64,
        diff_pct: f64,
        spans: Option<Spans>,
    },
    /// The server answered more, by no more than the requests the clients gave up on at
    /// their timeout T (under S-Client overload it answers them after the clients left): both
    /// counts hold, the clients' is what they received in time.
    Abandoned {
        client: u64,
        server: u64,
        abandoned: u64,
        spans: Option<Spans>,
    },
    /// Something was attempted and nothing answered: two zeros that agree on nothing.
    NothingAnswered { attempts: u64, server: u64 },
    /// The server's count cannot be trusted (its access log's issue): the clients' stands alone.
    Untrusted {
        client: u64,
        server: u64,
        why: String,
    },
    /// Past the tolerance with nothing to explain it.
    Disagree {
        client: u64,
        server: u64,
        diff_pct: f64,
        spans: Option<Spans>,
    },
}

/// The times two counts were taken over when they differ (a point's window: the server's
/// count runs between its own reports, the clients' over their reports'): the counts are then
/// judged by their rates, and the line says over what.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spans {
    pub client_s: f64,
    pub server_s: f64,
}

impl Spans {
    /// `server` as if counted over the clients' span.
    fn scale(&self, server: u64) -> f64 {
        server as f64 * self.client_s / self.server_s
    }
}

impl ResponsesVerdict {
    /// Judges the server's count `server` against the clients' `client` of one span, in
    /// which the clients made `attempts` and gave up on `abandoned` requests at T (response
    /// timeouts); `untrusted` is why the server's count is not to be used, if it is not.
    pub fn judge(
        server: u64,
        client: u64,
        attempts: u64,
        abandoned: u64,
        untrusted: Option<String>,
    ) -> Self {
        Self::judge_over(server, client, attempts, abandoned, untrusted, None)
    }

    /// As [`judge`](Self::judge), the counts taken over `spans` (None: the same span).
    pub fn judge_over(
        server: u64,
        client: u64,
        attempts: u64,
        abandoned: u64,
        untrusted: Option<String>,
        spans: Option<Spans>,
    ) -> Self {
        let spans = spans.filter(|s| s.client_s > 0.0 && s.server_s > 0.0);
        let server_f = spans.map_or(server as f64, |s| s.scale(server));
        if let Some(why) = untrusted {
            return ResponsesVerdict::Untrusted {
                client,
                server,
                why,
            };
        }
        if client == 0 && server == 0 && attempts > 0 {
            return ResponsesVerdict::NothingAnswered { attempts, server };
        }
        let diff_pct = match signed_diff_pct(server_f, client as f64) {
            Some(d) => d,
            None if server == 0 => 0.0,
            None => f64::INFINITY,
        };
        if !disagrees(diff_pct, TOLERANCE_PCT) {
            return ResponsesVerdict::Agree {
                client,
                server,
                diff_pct,
                spans,
            };
        }
        // Above the clients by no more than what they abandoned (and the counting noise the
        // tolerance allows): the server finished what the clients no longer waited for.
        let slack = abandoned as f64 + TOLERANCE_PCT / 100.0 * client as f64;
        if server_f > client as f64 && server_f - client as f64 <= slack {
            return ResponsesVerdict::Abandoned {
                client,
                server,
                abandoned,
                spans,
            };
        }
        ResponsesVerdict::Disagree {
            client,
            server,
            diff_pct,
            spans,
        }
    }

    /// Whether the check passes (a gate's `fail_on_crosscheck`): agreement, or a difference
    /// explained; a server count that is not trusted is not a measurement to fail on.
    pub fn passes(&self) -> bool {
        !matches!(
            self,
            ResponsesVerdict::Disagree { .. } | ResponsesVerdict::NothingAnswered { .. }
        )
    }

    /// Which count the throughput figures are, and why.
    pub fn trusted(&self) -> &'static str {
        match self {
            ResponsesVerdict::Agree { .. } => {
                "the throughput is the clients' count, confirmed by the server's own"
            }
            ResponsesVerdict::Abandoned { .. } => {
                "the throughput is the clients' count (answered within T); the server's is higher by work the clients had abandoned"
            }
            ResponsesVerdict::NothingAnswered { .. } => {
                "there is no throughput to trust: nothing was answered"
            }
            ResponsesVerdict::Untrusted { .. } => {
                "the throughput is the clients' count alone: the server's count is not trusted"
            }
            ResponsesVerdict::Disagree { .. } => {
                "distrust the throughput figures: the two counts of the same responses differ"
            }
        }
    }
}

impl std::fmt::Display for ResponsesVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The counts, with their spans when they differ: "client counted N responses[ in
        // 5.50 s], server M[ in 5.41 s]".
        let counts = |f: &mut std::fmt::Formatter<'_>,
                      client: &u64,
                      server: &u64,
                      spans: &Option<Spans>| match spans {
            Some(s) => write!(
                f,
                "client counted {client} responses in {:.2} s, server {server} in {:.2} s",
                s.client_s, s.server_s
            ),
            None => write!(f, "client counted {client} responses, server {server}"),
        };
        let by_rate = |spans: &Option<Spans>| if spans.is_some() { " by rate" } else { "" };
        match self {
            ResponsesVerdict::Agree {
                client,
                server,
                diff_pct,
                spans,
            } => {
                counts(f, client, server, spans)?;
                write!(f, " ({diff_pct:+.2}%{}): agree", by_rate(spans))
            }
            ResponsesVerdict::Abandoned {
                client,
                server,
                abandoned,
                spans,
            } => {
                counts(f, client, server, spans)?;
                write!(
                    f,
                    ": the server answered {} connections the clients had abandoned at T ({abandoned} timed out waiting)",
                    (spans.map_or(*server as f64, |s| s.scale(*server)) - *client as f64).round()
                )
            }
            ResponsesVerdict::NothingAnswered { attempts, server } => write!(
                f,
                "client counted 0 responses of {attempts} attempts, server {server}: nothing was answered, nothing to agree on"
            ),
            ResponsesVerdict::Untrusted {
                client,
                server,
                why,
            } => write!(
                f,
                "client counted {client} responses, server {server}: not compared ({why})"
            ),
            ResponsesVerdict::Disagree {
                client,
                server,
                diff_pct,
                spans,
            } => {
                counts(f, client, server, spans)?;
                write!(
                    f,
                    " ({diff_pct:+.2}%{}) DISAGREE (> {TOLERANCE_PCT}%)",
                    by_rate(spans)
                )
            }
        }?;
        write!(f, "; {}", self.trusted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_verdicts_name_what_happened() {
        use ResponsesVerdict as V;
        assert!(matches!(
            V::judge(1010, 1000, 1000, 0, None),
            V::Agree { .. }
        ));
        // S-Client overload: the server 9 % above, 120 requests abandoned at T.
        let v = V::judge(1090, 1000, 1200, 120, None);
        assert!(matches!(v, V::Abandoned { abandoned: 120, .. }), "{v}");
        assert!(v.passes());
        assert!(
            v.to_string()
                .contains("the server answered 90 connections the clients had abandoned at T"),
            "{v}"
        );
        assert!(!v.to_string().contains("DISAGREE"));
        // More than was abandoned: a disagreement.
        let v = V::judge(1300, 1000, 1400, 120, None);
        assert!(matches!(v, V::Disagree { .. }) && !v.passes(), "{v}");
        // Below the clients is never explained by abandoned work.
        assert!(matches!(
            V::judge(900, 1000, 1000, 500, None),
            V::Disagree { .. }
        ));
        // 0 vs 0 after 20,128 attempts agrees on nothing.
        let v = V::judge(0, 0, 20128, 0, None);
        assert!(matches!(v, V::NothingAnswered { .. }) && !v.passes(), "{v}");
        assert!(!v.to_string().contains("agree:") && !v.to_string().contains(": agree"));
        assert!(matches!(V::judge(0, 0, 0, 0, None), V::Agree { .. }));
        let v = V::judge(0, 500, 500, 0, Some("its lines are unparsed".into()));
        assert!(
            v.passes() && v.to_string().contains("clients' count alone"),
            "{v}"
        );
    }

    #[test]
    fn syn_check_allows_counting_noise_of_short_holds_only() {
        // A 1.2 s quick hold at 500/s, 200 ms samples: 600 attempts, 200 in the edge slices,
        // sqrt(200) = 14.1, x3 = 42.4 attempts = 7.1 %.
        let t = syn_check_tolerance_pct(500.0, 1.2, 0.2);
        assert!((t - 7.07).abs() < 0.01, "{t}");
        // The default 5 s hold at 5,000/s: noise 0.5 %, so the 2 % floor.
        assert_eq!(syn_check_tolerance_pct(5000.0, 5.0, 0.2), 2.0);
        assert_eq!(syn_check_tolerance_pct(0.0, 5.0, 0.2), 2.0);
        // Probe samples faster than the workers' reports: the reports set the edges.
        assert_eq!(
            syn_check_tolerance_pct(500.0, 1.2, 0.02),
            syn_check_tolerance_pct(500.0, 1.2, 0.1)
        );
    }

    #[test]
    fn retransmitted_syns_are_not_attempts() {
        // 10 % of SYNs or SYN-ACKs lost: 1,000 attempts, 1,087 SYNs of which 87 retries.
        assert_eq!(first_syns(1087.0, 87.0), 1000.0);
        assert_eq!(first_syns(1087.0, f64::NAN), 1087.0);
    }

    #[test]
    fn the_syn_check_uses_the_ports_syns_or_none() {
        assert_eq!(port_first_syns(1087.0, 87.0, 0.0), Some(1000.0));
        // Estimated in all or some samples: the namespace's, every port: no check.
        assert_eq!(port_first_syns(5000.0, f64::NAN, 1.0), None);
        assert_eq!(port_first_syns(5000.0, 0.0, 0.5), None);
        // No probe samples at all: nothing to compare either.
        assert_eq!(port_first_syns(f64::NAN, f64::NAN, f64::NAN), None);
    }

    #[test]
    fn within_tolerance() {
        let c = syns_vs_attempts(1010, 1000);
        assert!((c.diff_pct - 1.0).abs() < 1e-9);
        assert!(!c.disagrees);
    }

    #[test]
    fn over_tolerance_is_flagged() {
        // Below the reference: the sign says so (the live line printed +2.1 % for 190
        // first Initials/s against 194 attempts/s).
        let c = responses(950, 1000);
        assert!((c.diff_pct + 5.0).abs() < 1e-9);
        assert!(c.disagrees);
    }

    #[test]
    fn zero_reference() {
        assert!(!syns_vs_attempts(0, 0).disagrees);
        assert!(syns_vs_attempts(3, 0).disagrees);
    }

    #[test]
    fn signed_difference_and_the_disagree_rule() {
        assert_eq!(signed_diff_pct(103.0, 100.0), Some(3.0));
        assert_eq!(signed_diff_pct(97.0, 100.0), Some(-3.0));
        assert_eq!(signed_diff_pct(5.0, 0.0), None);
        assert!(disagrees(-2.5, TOLERANCE_PCT) && !disagrees(2.0, TOLERANCE_PCT));
        assert!(!disagrees(f64::NAN, TOLERANCE_PCT));
        assert_eq!(syn_tolerance_of(f64::NAN), TOLERANCE_PCT);
        assert_eq!(syn_tolerance_of(0.0), TOLERANCE_PCT);
        assert_eq!(syn_tolerance_of(7.0), 7.0);
    }

    #[test]
    fn kernel_side_sums_opens_and_drops() {
        let c = syns_vs_kernel(1000, 600, 390, 10);
        assert_eq!(c.reference, 1000.0);
        assert!(!c.disagrees);
    }
}
