//! The client-bound diagnosis: each reason, its threshold and its words; a window that
//! measured nothing; one whose every attempt failed.

use super::{delta, keepalive_delta, OPEN};
use crate::lab::client_agg::*;
use crate::load::protocol::{Mode, StatsDelta};
use crate::model::Counters;

#[test]
fn a_few_arrivals_finding_d_busy_are_not_client_bound_a_material_share_is() {
    // 20,000 arrivals over 10 s, 3 of them found all D sockets busy: not material.
    let mut t = ClientTotals::default();
    let mut d = delta(19_997, 10, 0.01);
    d.interval_s = 10.0;
    d.target_rate = 2000.0;
    d.counts.client_cap_drops = 3;
    t.add(&d);
    assert_eq!(t.client_bound(&OPEN), []);
    // 300 of 20,000 (1.5 %): the client set the pace, and the text says the share.
    let mut t = ClientTotals::default();
    d.counts.attempts = 19_700;
    d.counts.scheduled = 19_700;
    d.counts.client_cap_drops = 300;
    t.add(&d);
    let why = t.client_bound(&OPEN);
    assert_eq!(
        why,
        [ClientBound::SocketsBusy {
            busy: 300,
            arrivals: 20_000
        }]
    );
    assert!(
        why[0].to_string().contains("300 of 20000 arrivals")
            && why[0].to_string().contains("over the 1 %")
    );
}

#[test]
fn a_window_whose_every_attempt_failed_says_why_in_words() {
    let mut t = ClientTotals::default();
    let mut d = delta(500, 10, 0.01);
    d.counts.responses = 0;
    d.counts.connect_timeouts = 0;
    d.counts.bad_certificates = 500;
    t.add(&d);
    let f = t
        .all_failed(Some(
            "the CA file holds a CA certificate used as the server's own",
        ))
        .unwrap();
    assert_eq!(
        (f.attempted, f.kinds.as_str()),
        (500, "500 bad_certificates")
    );
    assert!(
        f.to_string().starts_with(
            "none of the 500 attempts was answered, 500 failed (500 bad_certificates): the CA file"
        ),
        "{f}"
    );
    // Refused everywhere: the words say so without TLS.
    let mut t = ClientTotals::default();
    d.counts.bad_certificates = 0;
    d.counts.refused = 500;
    t.add(&d);
    assert!(t
        .all_failed(None)
        .unwrap()
        .why
        .contains("refused every connection"));
    // One answered: a measurement, however bad.
    let mut t = ClientTotals::default();
    d.counts.responses = 1;
    t.add(&d);
    assert_eq!(t.all_failed(None), None);
}

#[test]
fn late_starts_and_busy_workers_flag_client_bound() {
    let mut t = ClientTotals::default();
    t.add(&delta(100, 150_000, 0.01));
    assert!(matches!(
        t.client_bound(&OPEN)[..],
        [ClientBound::LateForT { .. }]
    ));
    let mut t = ClientTotals::default();
    t.add(&delta(100, 10, 0.095));
    assert!(matches!(
        t.client_bound(&OPEN)[..],
        [ClientBound::WorkerCpu { .. }]
    ));
}

#[test]
fn every_reason_is_given_and_the_clients_own_limits_come_first() {
    // Ports ran out on a busy machine: starts were late too, but the ports are the cause.
    let mut d = delta(100, 150_000, 0.01);
    d.counts.addr_not_avail = 40;
    let mut t = ClientTotals::default();
    t.add(&d);
    let why = t.client_bound(&OPEN);
    assert!(
        matches!(
            why[..],
            [ClientBound::PortsOut, ClientBound::LateForT { .. }]
        ),
        "{why:?}"
    );
}

#[test]
fn the_papers_sclient_overload_is_not_client_bound() {
    // seed 000 §4.2 against a ~1,300/s nginx: D = 15,000, T = 0.5 s, so D/T = 30,000/s; the
    // worker offered 30,484/s on 66 % of a core, starting attempts 10.6 ms late on average.
    let sclient = LoadShape {
        mode: Mode::Sclient,
        timeout_s: 0.5,
    };
    let mut t = ClientTotals::default();
    for _ in 0..100 {
        t.add(&StatsDelta {
            interval_s: 0.1,
            target_rate: 30_000.0,
            counts: Counters {
                attempts: 3_048,
                scheduled: 3_048,
                lag_us_sum: 3_048 * 10_600,
                responses: 130,
                connect_timeouts: 2_900,
                ..Default::default()
            },
            lag_us_max: 40_000,
            cpu_user_s: 0.016,
            cpu_sys_s: 0.05,
            ..Default::default()
        });
    }
    assert_eq!(t.client_bound(&sclient), []);
}

#[test]
fn a_worker_that_cannot_keep_up_is_client_bound() {
    // Asked for 30,000/s, managed 24,000/s at 85 % of a core with a small lag: the shortfall
    // alone says the client was the limit.
    let sclient = LoadShape {
        mode: Mode::Sclient,
        timeout_s: 0.5,
    };
    let mut t = ClientTotals::default();
    for _ in 0..50 {
        t.add(&StatsDelta {
            interval_s: 0.1,
            target_rate: 30_000.0,
            counts: Counters {
                attempts: 2_400,
                scheduled: 2_400,
                lag_us_sum: 2_400 * 3_000,
                ..Default::default()
            },
            cpu_user_s: 0.025,
            cpu_sys_s: 0.06,
            ..Default::default()
        });
    }
    let why = t.client_bound(&sclient);
    assert!(
        matches!(why[..], [ClientBound::Shortfall { started, intended, .. }]
            if (1.0 - started / intended - 0.2).abs() < 0.01),
        "{why:?}"
    );
    // Small counts: a shortfall within Poisson noise is not flagged.
    let mut t = ClientTotals::default();
    t.add(&StatsDelta {
        interval_s: 1.0,
        target_rate: 100.0,
        counts: Counters {
            attempts: 80,
            scheduled: 80,
            ..Default::default()
        },
        ..Default::default()
    });
    assert_eq!(t.client_bound(&OPEN), []);
    // Closed loop: fewer attempts than clients / think is the server's doing.
    let closed = LoadShape {
        mode: Mode::Closed,
        timeout_s: 0.5,
    };
    let mut t = ClientTotals::default();
    t.add(&delta(100, 10, 0.01));
    t.intended = 1_000.0;
    assert_eq!(t.client_bound(&closed), []);
}

#[test]
fn open_arrivals_later_than_their_gap_are_client_bound() {
    // 100/s per worker: a gap of 10 ms; starts 15 ms late on average reorder the arrivals.
    let mut t = ClientTotals::default();
    t.add(&delta(10, 15_000, 0.01));
    assert!(matches!(
        t.client_bound(&OPEN)[..],
        [ClientBound::LateForGap { .. }]
    ));
}

#[test]
fn a_window_without_attempts_or_with_a_silent_worker_measured_nothing() {
    let t = ClientTotals::default();
    assert_eq!(
        t.measured_nothing(5.0, 1),
        Some(NothingMeasured::NoAttempt { window_s: 5.0 })
    );
    let mut t = ClientTotals::default();
    for _ in 0..50 {
        let mut d = delta(100, 10, 0.01);
        d.worker = 0;
        t.add(&d);
    }
    assert_eq!(t.measured_nothing(5.0, 1), None);
    assert!(matches!(
        t.measured_nothing(5.0, 2),
        Some(NothingMeasured::Silent {
            silent: 1,
            workers: 2,
            ..
        })
    ));
    let mut d = delta(100, 10, 0.01);
    d.worker = 1;
    t.add(&d);
    let why = t.measured_nothing(5.0, 2);
    assert!(
        matches!(why, Some(NothingMeasured::Stopped { worker: 1, span_s, .. }) if (span_s - 0.1).abs() < 1e-9),
        "{why:?}"
    );
}

#[test]
fn a_keepalive_window_without_attempts_measured_something_and_adds_up() {
    // The run: closed keep-alive clients on connections opened before the window.
    let mut t = ClientTotals::default();
    for _ in 0..50 {
        t.add(&keepalive_delta(0, 3_800));
    }
    assert_eq!(t.counts.attempts, 0);
    assert_eq!(t.measured_nothing(5.0, 1), None);
    // A server that hung on the pool's connections: requests in flight all window long.
    let mut hung = ClientTotals::default();
    for _ in 0..50 {
        hung.add(&keepalive_delta(0, 0));
    }
    assert_eq!(hung.measured_nothing(5.0, 1), None);
    let totals = t.totals();
    assert_eq!(totals.identities_broken(), None, "{totals:?}");
    assert_eq!(
        (
            totals.requests.in_flight_at_start,
            totals.requests.in_flight_at_end
        ),
        (4, 4)
    );
    let cols = t.columns(5.0);
    let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1;
    assert!((get("requests_per_s").unwrap() - 38_000.0).abs() < 1e-6);
    assert_eq!(get("attempts_per_s"), Some(0.0));
    assert_eq!(get("requests_in_flight"), Some(4.0));
}

#[test]
fn a_pool_without_idle_connections_is_client_bound_and_says_which_to_raise() {
    let mut t = ClientTotals::default();
    let mut d = keepalive_delta(0, 1_000);
    d.pool = 16;
    d.target_rate = 10_000.0;
    d.counts.scheduled = 900;
    d.counts.pool_waits = 100;
    d.counts.pool_wait_us_sum = 100 * 2_500;
    // The server answered as quickly as unloaded (a 20 ms path): the pool set the pace.
    d.counts.pool_served = 1_000;
    d.counts.pool_service_us_sum = 1_000 * 21_000;
    d.pool_service_min_us = 20_400;
    t.add(&d);
    let why = client_bound_line(&t.client_bound(&OPEN));
    assert!(
        why.starts_with("no idle connection: 100 of 1000 requests waited for one of the pool's 16 (mean wait 2.5 ms) while the server answered in 21.0 ms on average, near its quickest (20.4 ms)"),
        "{why}"
    );
    assert!(why.contains("raise load.connections"), "{why}");
    // The same waits with a server that queued the pool's requests (answers 8x slower
    // than its quickest): the server set the pace, and the client is not the bound.
    let mut queued = d.clone();
    queued.counts.pool_service_us_sum = 1_000 * 8 * 20_400;
    let mut t = ClientTotals::default();
    t.add(&queued);
    assert!(
        !client_bound_line(&t.client_bound(&OPEN)).contains("no idle connection"),
        "{:?}",
        t.client_bound(&OPEN)
    );
    // A pool that kept up: a few waits under 1 % are not a bound.
    let mut t = ClientTotals::default();
    d.counts.scheduled = 999;
    d.counts.pool_waits = 1;
    t.add(&d);
    assert!(t.client_bound(&OPEN).is_empty());
    // The schedule's shortfall is counted in requests for a pool.
    let mut t = ClientTotals::default();
    d.target_rate = 20_000.0;
    t.add(&d);
    let why = client_bound_line(&t.client_bound(&OPEN));
    assert!(
        why.contains("50 % fewer requests than the schedule intended"),
        "{why}"
    );
}
