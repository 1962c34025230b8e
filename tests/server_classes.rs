//! A point's server figures from an access log: `server_responses_per_s` and its status
//! classes (`server_2xx_per_s` ... `server_5xx_per_s`) over one shared window, so the total
//! is the sum of its classes. Driven through the lab's pure core (no run, no root).
//!
//! Before, the total was the log's lines over the log reader's own span (`window.rs`,
//! `ServerStats::responses_since`) and the classes the same lines over the clients' covered
//! time (`summary.rs`, `/ dt`): a keep-alive run against nginx wrote `server_2xx_per_s` 44083
//! over `server_responses_per_s` 43613.

use synlab::lab::core::{Effect, Input, LabCore, Slot};
use synlab::load::protocol::StatsDelta;
use synlab::model::Counters;
use synlab::probe::accesslog::StatusCounts;

fn fold(c: &mut LabCore, t: f64, input: Input) -> Vec<Effect> {
    let mut fx = Vec::new();
    c.fold(input, t, &mut fx);
    fx
}

/// One worker's report of `n` responses over 0.1 s.
fn report(n: u64) -> Input {
    Input::Worker(
        0,
        Box::new(StatsDelta {
            worker: 0,
            interval_s: 0.1,
            counts: Counters {
                requests: n,
                responses: n,
                ..Default::default()
            },
            ..Default::default()
        }),
    )
}

/// The access log read at `t_s`: `ok` 2xx and `missing` 404 lines since it was opened.
fn log(t_s: f64, ok: u64, missing: u64) -> Input {
    Input::AccessLog(
        t_s,
        StatusCounts {
            lines: ok + missing,
            s2xx: ok,
            s4xx: missing,
            ..Default::default()
        },
    )
}

#[test]
fn the_servers_total_is_the_sum_of_its_classes() {
    let mut c = LabCore::new(
        "t",
        synlab::lab::knobs::knobs_of(&synlab::scenario::default_scenario()),
        Vec::new(),
        0.2,
    );
    c.set_slots(vec![Slot {
        path: None,
        weight: 1.0,
    }]);
    fold(&mut c, 0.0, log(0.0, 0, 0));
    fold(&mut c, 0.0, Input::BeginWindow);
    for i in 1..=10 {
        fold(&mut c, i as f64 * 0.1, report(100));
    }
    // The log is read 50 ms after the window's last report: its span is 1.05 s, the clients'
    // reports cover 1.0 s.
    fold(&mut c, 1.05, log(1.05, 950, 50));
    let fx = fold(&mut c, 1.05, Input::EndWindow);
    let Some(Effect::Window(w)) = fx.into_iter().find(|e| matches!(e, Effect::Window(_))) else {
        panic!("a window")
    };
    let r = c.summary_row(1, *w);
    let classes = r.server_2xx_per_s + r.server_3xx_per_s + r.server_4xx_per_s + r.server_5xx_per_s;
    assert!(
        (classes - r.server_responses_per_s).abs() < 1e-6,
        "total {} against its classes {classes} (2xx {}, 4xx {})",
        r.server_responses_per_s,
        r.server_2xx_per_s,
        r.server_4xx_per_s
    );
}
