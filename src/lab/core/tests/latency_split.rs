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

/// The access log's cumulative counts at `t_s`: `lines` lines, `timed` of them with a request
/// time, those times summing to `service_us`.
fn logged(t_s: f64, lines: u64, timed: u64, service_us: u64) -> Input {
    Input::AccessLog(
        t_s,
        crate::probe::accesslog::StatusCounts {
            lines,
            s2xx: lines,
            timed,
            service_us,
            ..Default::default()
        },
    )
}

#[test]
fn an_access_logs_request_times_are_the_service_of_a_real_server() {
    let mut c = core(1, vec![]);
    at(&mut c, 0.0, logged(0.0, 500, 500, 500 * 9000));
    at(&mut c, 0.0, Input::BeginWindow);
    for i in 1..=10 {
        at(&mut c, i as f64 * 0.1, timed(10, 1000, 10_000));
    }
    // The window's 100 lines (read between its edges) took 2 ms each by the server's clock;
    // the 500 before it are not its.
    at(&mut c, 1.0, logged(1.0, 600, 600, 500 * 9000 + 100 * 2000));
    let Some(Effect::Window(w)) = at(&mut c, 1.0, Input::EndWindow).into_iter().next() else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    assert!(
        r.split_queue_ms.is_nan(),
        "an access log has no accept queue"
    );
    assert!(
        (r.split_service_ms - 2.0).abs() < 1e-9,
        "{}",
        r.split_service_ms
    );
    assert!(
        (r.split_transfer_ms - 7.0).abs() < 0.1,
        "{}",
        r.split_transfer_ms
    );
    let sum = r.split_connect_ms + r.split_service_ms + r.split_transfer_ms;
    assert!((sum - r.split_total_ms).abs() < 1e-9);
    assert!(c.notices().is_empty(), "{:?}", c.notices());
}

#[test]
fn a_log_without_request_times_leaves_the_service_unknown_and_says_which_field_to_add() {
    let mut c = core(1, vec![]);
    at(&mut c, 0.0, logged(0.0, 0, 0, 0));
    at(&mut c, 0.0, Input::BeginWindow);
    at(&mut c, 0.5, timed(50, 1000, 10_000));
    let fx = at(&mut c, 1.0, logged(1.0, 50, 0, 0));
    let said: Vec<String> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Log(l) => Some(l.clone()),
            _ => None,
        })
        .collect();
    assert!(
        said.iter().any(|l| l.contains("rt:$request_time")),
        "{said:?}"
    );
    // Said once, however many reads follow.
    at(&mut c, 1.05, logged(1.05, 60, 0, 0));
    let n = c
        .notices()
        .iter()
        .filter(|n| n.contains("rt_us:%D"))
        .count();
    assert_eq!(n, 1, "{:?}", c.notices());
    let Some(Effect::Window(w)) = at(&mut c, 1.1, Input::EndWindow).into_iter().next() else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    assert!(
        r.split_service_ms.is_nan(),
        "unknown, not 0: {}",
        r.split_service_ms
    );
    assert!(
        (r.split_transfer_ms - 9.0).abs() < 0.1,
        "{}",
        r.split_transfer_ms
    );
}

#[test]
fn an_access_log_it_cannot_read_gives_a_point_no_server_count_to_agree_with() {
    // A custom log format: of the window's 100 lines, 80 have no status synlab can read.
    let unread = |t_s: f64, lines: u64, unparsed: u64| {
        Input::AccessLog(
            t_s,
            crate::probe::accesslog::StatusCounts {
                lines,
                s2xx: lines - unparsed,
                unparsed,
                ..Default::default()
            },
        )
    };
    let mut c = core(1, vec![]);
    at(&mut c, 0.0, unread(0.0, 0, 0));
    at(&mut c, 0.0, Input::BeginWindow);
    for i in 1..=10 {
        at(&mut c, i as f64 * 0.1, timed(10, 1000, 10_000));
    }
    at(&mut c, 1.0, unread(1.0, 100, 80));
    let Some(Effect::Window(w)) = at(&mut c, 1.0, Input::EndWindow).into_iter().next() else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    assert!(
        r.server_responses_per_s.is_nan() && r.check_server_vs_client_pct.is_nan(),
        "{} {}",
        r.server_responses_per_s,
        r.check_server_vs_client_pct
    );
    assert!(r.server_2xx_per_s.is_nan(), "{}", r.server_2xx_per_s);
    assert_eq!(r.totals.as_ref().unwrap().server_responses, None);
    // The run's check says why it did not compare.
    let line = c.final_crosscheck().expect("the run's check");
    assert!(
        line.contains("not compared (access log: 80 of 100 lines"),
        "{line}"
    );
}
