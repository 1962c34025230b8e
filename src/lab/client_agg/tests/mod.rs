//! The accumulator's sums and columns; the client-bound diagnosis's tests are in `bound`.

use super::*;
use crate::load::protocol::Mode;

mod bound;

pub(super) fn delta(attempts: u64, lag_us: u64, cpu: f64) -> StatsDelta {
    StatsDelta {
        interval_s: 0.1,
        target_rate: attempts as f64 / 0.1,
        counts: Counters {
            attempts,
            scheduled: attempts,
            lag_us_sum: lag_us * attempts,
            responses: attempts / 2,
            connect_timeouts: 3,
            ..Default::default()
        },
        lag_us_max: lag_us,
        cpu_user_s: cpu,
        ..Default::default()
    }
}

pub(super) const OPEN: LoadShape = LoadShape {
    mode: Mode::Open,
    timeout_s: 1.0,
};

#[test]
fn rates_come_from_the_sample_length() {
    let mut t = ClientTotals::default();
    t.add(&delta(100, 10, 0.01));
    t.add(&delta(100, 10, 0.01));
    let cols = t.columns(0.2);
    let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1;
    assert_eq!(get("attempts_per_s"), Some(1000.0));
    assert_eq!(get("responses_per_s"), Some(500.0));
    assert_eq!(get("errors_per_s"), Some(30.0));
    assert_eq!(get("connect_p50_ms"), None);
    assert!(t.client_bound(&OPEN).is_empty());
}

#[test]
fn a_sample_folding_three_reports_is_not_read_as_one_and_a_half_times_the_rate() {
    // Two workers at 1,000/s each, reporting every 100 ms; this 200 ms sample caught three
    // reports of worker 0 and one of worker 1.
    let mut t = ClientTotals::default();
    for w in [0, 0, 0, 1] {
        let mut d = delta(100, 10, 0.01);
        d.worker = w;
        d.connecting = 5;
        t.add(&d);
    }
    let cols = t.columns(0.2);
    let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1.unwrap();
    // 400 attempts over (0.3 s + 0.1 s) / 2 workers = 0.2 s of each worker's time.
    assert_eq!(get("attempts_per_s"), 2000.0);
    assert_eq!(
        get("in_flight"),
        10.0,
        "open connections add up over workers"
    );
}

#[test]
fn garbage_responses_are_errors_in_the_rates() {
    let mut t = ClientTotals::default();
    t.add(&StatsDelta {
        interval_s: 0.1,
        counts: Counters {
            attempts: 10,
            established: 10,
            bad_responses: 10,
            ..Default::default()
        },
        ..Default::default()
    });
    let cols = t.columns(0.1);
    let get = |n: &str| cols.iter().find(|c| c.0.name() == n).unwrap().1;
    assert_eq!(get("errors_per_s"), Some(100.0));
    assert_eq!(get("responses_per_s"), Some(0.0));
}

/// A keep-alive worker's reports: `n` requests answered a report, 4 connections open.
pub(super) fn keepalive_delta(worker: u32, n: u64) -> StatsDelta {
    StatsDelta {
        worker,
        interval_s: 0.1,
        counts: Counters {
            requests: n,
            responses: n,
            ..Default::default()
        },
        active: 4,
        requests_in_flight: 4,
        requests_in_flight_at_start: 4,
        ..Default::default()
    }
}

#[test]
fn a_window_takes_each_workers_state_at_its_first_and_last_report() {
    // Two workers; the window opened with 2 + 1 requests in flight and 1 connect in progress.
    let mut t = ClientTotals::default();
    let mut first = keepalive_delta(0, 10);
    (first.requests_in_flight_at_start, first.requests_in_flight) = (2, 3);
    first.counts.requests = 11;
    first.connecting_at_start = 1;
    first.counts.established = 1;
    first.counts.attempts = 0;
    t.add(&first);
    let mut other = keepalive_delta(1, 5);
    (other.requests_in_flight_at_start, other.requests_in_flight) = (1, 1);
    t.add(&other);
    // Worker 0 stops: what it left is counted, its gauges go to 0.
    let mut last = keepalive_delta(0, 3);
    (last.requests_in_flight_at_start, last.requests_in_flight) = (3, 0);
    last.counts.requests_at_end = 0;
    last.counts.bad_responses = 3;
    last.counts.responses = 0;
    last.counts.requests = 0;
    t.add(&last);
    let totals = t.totals();
    assert_eq!(totals.identities_broken(), None, "{totals:?}");
    assert_eq!(totals.requests.in_flight_at_start, 3);
    assert_eq!(totals.connections.connecting_at_start, 1);
    assert_eq!(totals.requests.in_flight_at_end, 1);
}

#[test]
fn a_sample_without_worker_reports_is_a_gap_not_a_zero() {
    let cols = ClientTotals::default().columns(0.2);
    for (name, v) in cols {
        assert_eq!(v, None, "{name} should be empty without client data");
    }
}

#[test]
fn a_reset_sum_reads_as_a_fresh_one_and_sums_afresh() {
    let mut d = delta(100, 10, 0.01);
    d.connect_us = crate::metrics::hist::HistDelta(vec![(500, 100)]);
    d.total_us = crate::metrics::hist::HistDelta(vec![(900, 50)]);
    d.pool = 4;
    let mut reused = ClientTotals::default();
    reused.add(&d);
    let mut other = delta(7, 10, 0.01);
    other.worker = 3;
    reused.add(&other);
    reused.reset();
    assert_eq!(reused.columns(0.1), ClientTotals::default().columns(0.1));
    assert!(reused.workers.is_empty() && reused.connect.is_empty());
    // After a reset it sums what follows exactly as a fresh one does.
    let mut fresh = ClientTotals::default();
    for t in [&mut reused, &mut fresh] {
        t.add(&d);
    }
    assert_eq!(reused.columns(0.1), fresh.columns(0.1));
    assert_eq!(reused.totals(), fresh.totals());
    assert_eq!(reused.workers, fresh.workers);
}
