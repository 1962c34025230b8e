//! The probes inside a real run (issue: kernel probes, overload): the built-in server with
//! backlog 16 and a slow service time, offered 10x its capacity by the S-Client workers. The
//! accept queue fills, listen overflows climb, and pcap counts the SYNs the client sent.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::lab::controller::{Controller, RunOptions};
use synlab::lab::knobs::Command;

const SCENARIO: &str = r#"
duration = "30s"
[target]
arch = "event"
service_time = "5ms"
service = "cpu"
backlog = 16
[load]
mode = "open"
rate = 2000
sockets = 20000
timeout = "500ms"
[probe]
interval = "200ms"
"#;

fn pump_for(c: &mut Controller, secs: f64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        c.pump().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn overload_fills_the_accept_queue_and_pcap_counts_every_syn() {
    let privs = synlab::sys::privilege::Privileges::current();
    if !privs.net_raw {
        if synlab::sys::privilege::require_privileged() {
            panic!("SYNLAB_REQUIRE_PRIVILEGED=1 but pcap needs CAP_NET_RAW (run as root)");
        }
        synlab::sys::privilege::say_skipped("skipped: pcap needs CAP_NET_RAW");
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("probe.toml", SCENARIO).unwrap();
    let opts = RunOptions {
        out_parent: None,
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    };
    let mut c = Controller::start(sc, opts).unwrap();
    pump_for(&mut c, 3.0);
    // Stop offering load; let every attempt resolve (T = 0.5 s) and the probes catch up.
    c.apply(Command::Pause(true)).into_result().unwrap();
    pump_for(&mut c, 1.5);
    let store = &c.state().store;
    let (_, q_max) = store
        .mean_max(synlab::model::col::ACCEPT_QUEUE, 0.0, 1e9)
        .expect("accept queue sampled");
    assert!(
        q_max >= 16.0,
        "accept queue peaked at {q_max}, want the backlog (16) or 17"
    );
    let (_, ovf_max) = store
        .mean_max(synlab::model::col::LISTEN_OVERFLOWS, 0.0, 1e9)
        .unwrap();
    assert!(ovf_max > 0.0, "no listen overflows at 10x capacity");
    assert_eq!(
        store
            .mean_max(synlab::model::col::ACCEPT_QUEUE_LIMIT, 0.0, 1e9)
            .unwrap()
            .1,
        16.0
    );
    let syns = store
        .last(synlab::model::col::SYN_IN_TOTAL)
        .expect("pcap SYN total");
    let attempts = c.core().run_counts().attempts as f64;
    assert!(attempts > 4000.0, "only {attempts} attempts");
    let diff = (syns - attempts) / attempts * 100.0;
    assert!(
        diff.abs() <= 2.0,
        "pcap counted {syns} SYNs, the client made {attempts} attempts ({diff:+.2}%)"
    );
    c.shutdown().unwrap();
}
