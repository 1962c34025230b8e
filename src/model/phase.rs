//! Recovery after overload as a phase of its own (issue 45 item 2): once the offered load
//! drops below what the server can do, a server that was overloaded goes on answering its
//! backlog, the requests queued while it was overloaded, whose clients have mostly given up.
//! It then answers more than is offered now and more than the clients receive. That is the
//! server recovering, not a fault of the counts, and it is named so on screen and in report.md.

/// The share by which the server's answers must exceed both the offered rate and the clients'
/// responses (the counting noise of one interval stays under it).
const MARGIN: f64 = 0.05;
/// The least excess, in responses/s (at low rates one response more is not a backlog).
const MIN_EXCESS_PER_S: f64 = 5.0;
/// The shortest stretch named a recovery: a server's count that lands one sample late makes
/// single intervals above both rates, which are timing, not a backlog.
const MIN_STRETCH_S: f64 = 2.0;

/// Whether one interval is overload: more is offered than the server answers.
fn overloaded(offered: f64, server: f64) -> bool {
    offered > server * (1.0 + MARGIN) + MIN_EXCESS_PER_S
}

/// Whether one interval is the server answering its backlog: it answers more than is
/// offered now (`offered`, the target rate) and more than its clients receive (`client`).
pub fn answering_backlog(offered: f64, server: f64, client: f64) -> bool {
    let above = |x: f64| server > x * (1.0 + MARGIN) + MIN_EXCESS_PER_S;
    offered.is_finite()
        && server.is_finite()
        && client.is_finite()
        && above(offered)
        && above(client)
}

/// One stretch of recovery: from `start_s` to `end_s` (the ends of its first and last
/// intervals), with the responses the server sent beyond what its clients received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery {
    pub start_s: f64,
    pub end_s: f64,
    pub surplus: f64,
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "recovery after overload, {:.0}–{:.0} s: the server answered its backlog, {:.0} responses more than its clients received (requests queued while it was overloaded, whose clients had mostly given up)",
            self.start_s, self.end_s, self.surplus
        )
    }
}

/// The stretches of recovery in rows of (t at the interval's end, interval length, offered,
/// server responses/s, client responses/s): after an interval of overload, lasting at least
/// [`MIN_STRETCH_S`]; two stretches one interval apart are one.
pub fn recoveries(rows: &[(f64, f64, f64, f64, f64)]) -> Vec<Recovery> {
    let mut out: Vec<Recovery> = Vec::new();
    let mut gap = 0;
    let mut was_overloaded = false;
    for &(t, dt, offered, server, client) in rows {
        was_overloaded |= overloaded(offered, server);
        if !was_overloaded || !answering_backlog(offered, server, client) {
            gap += 1;
            continue;
        }
        let surplus = (server - client) * dt;
        match out.last_mut() {
            Some(r) if gap <= 1 => {
                r.end_s = t;
                r.surplus += surplus;
            }
            _ => out.push(Recovery {
                start_s: t - dt,
                end_s: t,
                surplus,
            }),
        }
        gap = 0;
    }
    out.retain(|r| r.end_s - r.start_s >= MIN_STRETCH_S);
    out
}

/// The recovery still going on at the last row of `rows` (the live screen's): the last
/// stretch of [`recoveries`], when it reaches the last row or the one before (one interval's
/// gap does not split a stretch there either). None once the server answers no more than is
/// offered, and before a stretch is [`MIN_STRETCH_S`] long.
pub fn ongoing(rows: &[(f64, f64, f64, f64, f64)]) -> Option<Recovery> {
    let n = rows.len();
    let since = rows.get(n.checked_sub(2)?)?.0;
    recoveries(rows).pop().filter(|r| r.end_s >= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_answering_more_than_is_offered_and_received_is_recovering() {
        // After 4,000/s, back to 600/s: the server still answers at its capacity.
        assert!(answering_backlog(600.0, 1000.0, 600.0));
        // Overload itself: it answers less than is offered.
        assert!(!answering_backlog(4000.0, 1000.0, 700.0));
        // Steady state within the noise.
        assert!(!answering_backlog(600.0, 612.0, 600.0));
        assert!(!answering_backlog(0.0, 3.0, 0.0));
        assert!(!answering_backlog(f64::NAN, 1000.0, 600.0));
    }

    #[test]
    fn recoveries_are_stretches_with_their_surplus() {
        let rows = [
            (1.0, 1.0, 4000.0, 1000.0, 700.0),
            (2.0, 1.0, 600.0, 1000.0, 600.0),
            (3.0, 1.0, 600.0, 1000.0, 650.0),
            (4.0, 1.0, 600.0, 600.0, 600.0),
            (5.0, 1.0, 600.0, 900.0, 600.0),
            (6.0, 1.0, 600.0, 600.0, 600.0),
            (7.0, 1.0, 600.0, 600.0, 600.0),
            (8.0, 1.0, 600.0, 900.0, 600.0),
            (9.0, 1.0, 600.0, 900.0, 600.0),
        ];
        let r = recoveries(&rows);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].start_s, r[0].end_s), (1.0, 5.0));
        assert_eq!(r[0].surplus, 400.0 + 350.0 + 300.0);
        assert_eq!((r[1].start_s, r[1].end_s, r[1].surplus), (7.0, 9.0, 600.0));
        assert!(r[0]
            .to_string()
            .starts_with("recovery after overload, 1–5 s"));
    }

    #[test]
    fn a_blip_or_a_surplus_without_overload_before_is_no_recovery() {
        // The server's count one sample late: one short interval above both rates.
        let late = [
            (1.0, 1.0, 4000.0, 1000.0, 700.0),
            (1.2, 0.2, 600.0, 1000.0, 600.0),
            (2.2, 1.0, 600.0, 600.0, 600.0),
        ];
        assert!(recoveries(&late).is_empty());
        // Never overloaded: a surplus is not a recovery (the cross-check judges it).
        let steady = [
            (1.0, 1.0, 600.0, 600.0, 600.0),
            (2.0, 1.0, 600.0, 900.0, 600.0),
            (3.0, 1.0, 600.0, 900.0, 600.0),
            (4.0, 1.0, 600.0, 900.0, 600.0),
        ];
        assert!(recoveries(&steady).is_empty());
    }

    #[test]
    fn a_recovery_is_ongoing_while_it_reaches_the_last_rows() {
        let mut rows = vec![(1.0, 1.0, 4000.0, 1000.0, 700.0)];
        for t in 2..=3 {
            rows.push((f64::from(t), 1.0, 600.0, 1000.0, 600.0));
        }
        // Two intervals: 1-3 s, long enough; ongoing.
        let r = ongoing(&rows).expect("ongoing");
        assert_eq!((r.start_s, r.end_s), (1.0, 3.0));
        // One interval back at the offered rate: still one stretch (a gap of one).
        rows.push((4.0, 1.0, 600.0, 600.0, 600.0));
        assert!(ongoing(&rows).is_some());
        // Two: over.
        rows.push((5.0, 1.0, 600.0, 600.0, 600.0));
        assert!(ongoing(&rows).is_none());
        // Too short to be named yet: one interval of answering the backlog.
        let short = [
            (1.0, 1.0, 4000.0, 1000.0, 700.0),
            (2.0, 1.0, 600.0, 1000.0, 600.0),
        ];
        assert!(ongoing(&short).is_none());
        assert!(ongoing(&[]).is_none());
    }
}
