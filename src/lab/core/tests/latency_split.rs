//! The latency split's wiring (issue 48 item 4): a window's clients' histograms and the
//! server's reports at its edges make the summary row's split, whose parts add up to the mean
//! response time; a sample row has the same columns.

use super::*;
use crate::metrics::hist::HistDelta;

/// A report of `n` responses of `total_us` each, each its connection's first, sent after a
/// connect of `connect_us`.
fn timed(n: u64, connect_us: u64, total_us: u64) -> Input {
    let hist = |us: u64| {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.record_n(us, n).unwrap();
        HistDelta::drain(&mut h)
    };
    Input::Worker(
        0,
        Box::new(StatsDelta {
            worker: 0,
            interval_s: 0.1,
            counts: Counters {
                attempts: n,
                established: n,
                requests: n,
                responses: n,
                before_send_us: n * connect_us,
                first_responses: n,
                ..Default::default()
            },
            connect_us: hist(connect_us),
            total_us: hist(total_us),
            ..Default::default()
        }),
    )
}

/// The server's totals: `accepted` connections that waited `wait_ms` each, as many requests
/// served in `service_us` each.
fn served(t_s: f64, accepted: u64, wait_ms: u32, service_us: u64) -> Input {
    Input::Server(ServerStats {
        t_s,
        accepted,
        responses: accepted,
        accept_wait_ms: vec![(wait_ms, accepted)],
        served: accepted,
        service_us: accepted * service_us,
        ..Default::default()
    })
}

#[test]
fn a_windows_split_adds_up_to_its_mean_response_time() {
    let mut c = core(1, vec![]);
    at(&mut c, 0.0, served(0.0, 1000, 3, 2000));
    at(&mut c, 0.0, Input::BeginWindow);
    // 100 connects of 1 ms, each for one request of 10 ms in all.
    for i in 1..=10 {
        at(&mut c, i as f64 * 0.1, timed(10, 1000, 10_000));
    }
    // The server accepted those 100 after a 3 ms wait each (plus 1000 earlier at 3 ms: not
    // this window's) and served them in 2 ms each.
    at(&mut c, 1.0, served(1.0, 1100, 3, 2000));
    let Some(Effect::Window(w)) = at(&mut c, 1.0, Input::EndWindow).into_iter().next() else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    let near = |a: f64, b: f64| (a - b).abs() <= 0.01 * b.abs().max(0.01);
    assert!(near(r.split_connect_ms, 1.0), "{}", r.split_connect_ms);
    assert!(near(r.split_queue_ms, 3.0), "{}", r.split_queue_ms);
    assert!(near(r.split_service_ms, 2.0), "{}", r.split_service_ms);
    assert!(near(r.split_transfer_ms, 4.0), "{}", r.split_transfer_ms);
    assert!(near(r.split_total_ms, 10.0), "{}", r.split_total_ms);
    let sum = r.split_connect_ms + r.split_queue_ms + r.split_service_ms + r.split_transfer_ms;
    assert!((sum - r.split_total_ms).abs() < 1e-9);
    assert_eq!(r.connect_retrans_pct, 0.0);
    assert!(r.connect_retrans_once_ms.is_nan());
}

#[test]
fn without_the_servers_figures_its_parts_are_empty_and_in_the_transfer() {
    let mut c = core(1, vec![]);
    at(&mut c, 0.0, Input::BeginWindow);
    at(&mut c, 0.1, timed(10, 1_000_000, 1_005_000));
    let Some(Effect::Window(w)) = at(&mut c, 0.2, Input::EndWindow).into_iter().next() else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    assert!(r.split_queue_ms.is_nan() && r.split_service_ms.is_nan());
    // Within the histograms' 3 significant digits (1 ms buckets near 1 s).
    assert!(
        (r.split_transfer_ms - 5.0).abs() < 1.1,
        "{}",
        r.split_transfer_ms
    );
    // Every connect took a second: each waited for one SYN retransmission.
    assert_eq!(
        (r.connect_retrans_pct, r.connect_retrans_once_pct),
        (100.0, 100.0)
    );
}

#[test]
fn a_sample_row_has_the_split_columns() {
    let mut c = core(1, vec![]);
    // The first row keeps the server's report its next one is measured from.
    at(&mut c, 0.0, served(0.0, 0, 0, 0));
    at(&mut c, INTERVAL + 0.01, Input::Tick);
    at(&mut c, 0.3, timed(10, 1000, 10_000));
    at(&mut c, 0.35, served(0.35, 10, 3, 2000));
    let fx = at(&mut c, 2.0 * INTERVAL + 0.02, Input::Tick);
    let (_, cols) = row(&fx).expect("a row");
    let get = |k| cols.get(&k).copied().flatten().unwrap_or(f64::NAN);
    assert!((get(col::SPLIT_QUEUE) - 3.0).abs() < 0.05, "{cols:?}");
    assert!((get(col::SPLIT_SERVICE) - 2.0).abs() < 0.05, "{cols:?}");
    assert!((get(col::SPLIT_TRANSFER) - 4.0).abs() < 0.1, "{cols:?}");
    assert_eq!(get(col::CONNECT_RETRANS), 0.0);
}
