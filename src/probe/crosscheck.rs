//! Cross-checks that make the numbers trustworthy (Webmonitor, seed 002, Tables 6 and 9): two
//! independent counts of the same events, their difference in percent, and a flag when they
//! disagree by more than the tolerance (2 % by default).

/// Default tolerance in percent.
pub const TOLERANCE_PCT: f64 = 2.0;

/// The outcome of comparing two counts of the same thing.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub name: &'static str,
    pub reference_name: &'static str,
    pub measured: f64,
    pub reference: f64,
    /// |measured - reference| / reference, in percent; None when both are zero... or the
    /// reference is zero and the measurement is not (reported as infinite disagreement).
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
    let diff_pct = if reference == 0.0 {
        if measured == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        100.0 * (measured - reference).abs() / reference.abs()
    };
    Check {
        name,
        reference_name,
        measured,
        reference,
        diff_pct,
        disagrees: diff_pct > tol_pct,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_tolerance() {
        let c = syns_vs_attempts(1010, 1000);
        assert!((c.diff_pct - 1.0).abs() < 1e-9);
        assert!(!c.disagrees);
    }

    #[test]
    fn over_tolerance_is_flagged() {
        let c = responses(950, 1000);
        assert!((c.diff_pct - 5.0).abs() < 1e-9);
        assert!(c.disagrees);
    }

    #[test]
    fn zero_reference() {
        assert!(!syns_vs_attempts(0, 0).disagrees);
        assert!(syns_vs_attempts(3, 0).disagrees);
    }

    #[test]
    fn kernel_side_sums_opens_and_drops() {
        let c = syns_vs_kernel(1000, 600, 390, 10);
        assert_eq!(c.reference, 1000.0);
        assert!(!c.disagrees);
    }
}
