//! `synlab run` in lab mode (root): the server in its netns, workers in the client namespaces by
//! path share, the delay router between them; the added RTT shows in the client's connect
//! times, live changes reach the router, and nothing of the lab is left after the run.

mod lab_support;

use lab_support::{opts, privileged, run_for};
use synlab::lab::controller::Controller;
use synlab::lab::knobs::Command;
use synlab::model::knob::PathKnob;

fn lab_namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("synlab-"))
                .collect()
        })
        .unwrap_or_default()
}

const SCENARIO: &str = r#"
duration = "30s"
[target]
arch = "event"
service_time = "100us"
[load]
mode = "open"
rate = 200
timeout = "1s"
workers = 2
[network]
backend = "router"
[[network.path]]
name = "near"
share = 0.5
rtt = "0ms"
[[network.path]]
name = "far"
share = 0.5
rtt = "80ms"
"#;

#[test]
fn lab_run_shapes_each_path_changes_live_and_cleans_up() {
    if !privileged() {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("lab.toml", SCENARIO).unwrap();
    let mut c = Controller::start(sc, opts(None)).unwrap();
    // This run's namespaces only: another lab (a concurrent run) may be up too.
    let prefix = format!("synlab-{}-", c.lab_run_id().expect("lab up"));
    let ours: Vec<String> = lab_namespaces()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(
        ours.len() >= 4,
        "server, router and two client namespaces: {ours:?}"
    );
    assert_eq!(c.state().backend, "router");
    assert!(c.target_addr.ip().to_string().starts_with("198.18."));

    run_for(&mut c, 1.0);
    c.begin_point();
    run_for(&mut c, 3.0);
    let tot = c.end_point().unwrap().client;
    // Half the connections cross 0 ms, half 80 ms: p25 near 0, p75 near 80 ms.
    let q = |x| tot.connect.value_at_quantile(x) as f64 / 1000.0;
    assert!(
        tot.counts.responses > 300,
        "responses {}",
        tot.counts.responses
    );
    assert!(q(0.25) < 10.0, "near path connect p25 {} ms", q(0.25));
    assert!(
        (78.0..90.0).contains(&q(0.75)),
        "far path connect p75 {} ms",
        q(0.75)
    );

    // Live: the far path to 20 ms; new connections see it, none are reset.
    c.apply(Command::SetPath {
        path: Some("far".into()),
        value: PathKnob::Rtt.parse("20ms").unwrap(),
    })
    .into_result()
    .unwrap();
    run_for(&mut c, 1.0);
    c.begin_point();
    run_for(&mut c, 2.0);
    let tot = c.end_point().unwrap().client;
    let q = |x| tot.connect.value_at_quantile(x) as f64 / 1000.0;
    assert!(
        (18.0..30.0).contains(&q(0.75)),
        "far path after change: p75 {} ms",
        q(0.75)
    );
    assert_eq!(
        tot.counts.resets, 0,
        "a live change must not reset connections"
    );
    let frames = c
        .state()
        .store
        .last(synlab::model::col::ROUTER_FRAMES_PER_S)
        .unwrap_or(0.0);
    assert!(frames > 100.0, "router relayed {frames} frames/s");

    c.shutdown().unwrap();
    drop(c);
    let left: Vec<String> = lab_namespaces()
        .into_iter()
        .filter(|n| ours.contains(n))
        .collect();
    assert!(left.is_empty(), "namespaces left after the run: {left:?}");
}

#[test]
fn a_timeout_shorter_than_the_rtt_is_refused_with_the_reason() {
    let bad = SCENARIO.replace("timeout = \"1s\"", "timeout = \"50ms\"");
    let e = synlab::scenario::parse("lab.toml", &bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("must exceed the largest path RTT"), "{e}");
}
