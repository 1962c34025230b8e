//! Time from a rate key to the new rate in the attempts/s chart (issue 5; goal <= 2 sample
//! intervals). Drives the real controller (built-in server on loopback, real workers) the way
//! the TUI does: `command()` then `pump()` every 10 ms, until a store row shows the new rate
//! (within 15 %; constant arrivals, so Poisson noise of a 200 ms window does not count as lag).
//! `cargo bench --bench key_to_chart` (uses target/release/synlab for the children).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::lab::controller::{Controller, RunOptions};
use synlab::lab::knobs::Command;
use synlab::model::load_knob::{LoadKnob, LoadStep};

fn main() {
    std::env::set_var(
        "SYNLAB_EXE",
        std::env::var("SYNLAB_EXE").unwrap_or_else(|_| "target/release/synlab".into()),
    );
    let sc = synlab::scenario::parse(
        "bench.toml",
        "[target]\nservice_time = \"50us\"\n[load]\nmode = \"open\"\narrivals = \"constant\"\nrate = 500\nsockets = 5000\n[probe]\npcap = false\n",
    )
    .unwrap();
    let interval = sc.probe.interval.secs();
    let opts = RunOptions {
        out_parent: None,
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    };
    let mut c = Controller::start(sc, opts).expect("controller");
    let pump_for = |c: &mut Controller, secs: f64| {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            c.pump().unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    pump_for(&mut c, 2.0);
    let mut delays = Vec::new();
    for i in 0..8 {
        let (factor, target) = if i % 2 == 0 {
            (2.0, 1000.0)
        } else {
            (0.5, 500.0)
        };
        let rows_before = c.state().store.len();
        let t0 = Instant::now();
        c.apply(Command::StepLoad(LoadKnob::Rate, LoadStep::Scale(factor)))
            .into_result()
            .unwrap();
        loop {
            c.pump().unwrap();
            let store = &c.state().store;
            if store.len() > rows_before {
                let v = store.last(synlab::model::col::ATTEMPTS).unwrap_or(0.0);
                if (v - target).abs() / target < 0.15 {
                    break;
                }
            }
            if t0.elapsed() > Duration::from_secs(5) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        delays.push(t0.elapsed().as_secs_f64());
        pump_for(&mut c, 1.0);
    }
    delays.sort_by(f64::total_cmp);
    let med = delays[delays.len() / 2];
    let max = delays[delays.len() - 1];
    println!(
        "key -> chart: median {:.0} ms ({:.2} sample intervals of {:.0} ms), max {:.0} ms ({:.2} intervals); goal <= 2 intervals",
        med * 1e3,
        med / interval,
        interval * 1e3,
        max * 1e3,
        max / interval
    );
    c.shutdown().unwrap();
}
