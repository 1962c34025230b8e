//! What the tests that drive a lab through its controller share: whether a lab can be built
//! here, the run options, and pumping for a while.

#![allow(dead_code)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::lab::controller::{Controller, RunOptions};
use synlab::sys::privilege::Privileges;

/// Whether this test may build a network lab: false (skip, saying why) without the
/// privileges, a failure when CI requires every test.
pub fn privileged() -> bool {
    if Privileges::current().can_build_lab() {
        return true;
    }
    let why = Privileges::current().lab_missing().unwrap_or_default();
    synlab::sys::privilege::skip_unless_required(&why);
    false
}

/// A run writing into `out` (no run folder without one), no --metrics, no loopback fallback.
pub fn opts(out: Option<&std::path::Path>) -> RunOptions {
    RunOptions {
        out_parent: out.map(|p| p.to_path_buf()),
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    }
}

/// Pumps the controller for `secs`, as the front ends do.
pub fn run_for(c: &mut Controller, secs: f64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        c.pump().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The point of `summary` at `rate` with steering `steer`.
pub fn point<'a>(summary: &'a serde_json::Value, rate: &str, steer: &str) -> &'a serde_json::Value {
    summary["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["value"] == rate && p["steer"] == steer)
        .unwrap_or_else(|| panic!("no point at {rate} with steer {steer}"))
}

pub fn num(p: &serde_json::Value, key: &str) -> f64 {
    p[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} not measured: {p}"))
}

/// What every steering test checks of its summary: the server cores' shares add up; with the
/// receive on the server's CPUs their softirq share is above 0.5 % at 6x capacity, rises from
/// the lower rate and is above the unsteered run's; their NET_RX softirqs follow the SYNs the
/// server receives, which the sender's CPU processes without steering.
pub fn check_steering(
    low: &serde_json::Value,
    high: &serde_json::Value,
    sender: &serde_json::Value,
) {
    for p in [low, high, sender] {
        let sum: f64 = [
            "server_cores_user_pct",
            "server_cores_system_pct",
            "server_cores_irq_pct",
            "server_cores_softirq_pct",
            "server_cores_steal_pct",
            "server_cores_idle_pct",
        ]
        .iter()
        .map(|k| num(p, k))
        .sum();
        assert!((sum - 100.0).abs() < 0.5, "shares add up to {sum}: {p}");
    }
    // The cores' counters are the machine's: other work on the server's CPUs (another
    // program's builds or traffic) puts its softirq and NET_RX into them. Say so plainly
    // rather than fail on a comparison below that was not the lab's.
    // On a machine busy with other work the comparisons are skipped, saying so (a failure
    // when CI requires every test: its machine is meant to be quiet).
    let uptime = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    for p in [low, high, sender] {
        let other = num(p, "server_cores_other_pct");
        if other >= 10.0 {
            synlab::sys::privilege::skip_unless_required(&format!(
                "the steering checks: the server's CPUs ran {other:.0} % of work not the \
                 server's (load average {}): their softirq is not the lab's alone; run this test \
                 on a quiet machine",
                uptime.trim()
            ));
            return;
        }
    }
    let si = |p| num(p, "server_cores_softirq_pct");
    let rx = |p| num(p, "server_cores_net_rx_per_s");
    let syn = |p| num(p, "syn_in_per_s");
    eprintln!(
        "softirq {:.2} % / {:.2} % / sender {:.2} %; NET_RX/s {:.0} / {:.0} / sender {:.0}; SYN/s {:.0} / {:.0} / {:.0}; throughput {:.0} / {:.0} / {:.0}",
        si(low), si(high), si(sender), rx(low), rx(high), rx(sender), syn(low), syn(high), syn(sender),
        num(low, "throughput_per_s"), num(high, "throughput_per_s"), num(sender, "throughput_per_s"),
    );
    assert!(
        syn(high) > 5.0 * 250.0,
        "5x capacity offered: {} SYN/s",
        syn(high)
    );
    assert!(si(high) > 0.5, "softirq on the server's CPUs {}", si(high));
    assert!(
        si(high) > si(low),
        "rises with the rate: {} -> {}",
        si(low),
        si(high)
    );
    assert!(
        si(high) > si(sender),
        "steered {} vs sender {}",
        si(high),
        si(sender)
    );
    // Every SYN is a packet the server receives; NET_RX runs per packet or per batch of them.
    assert!(
        rx(high) > 0.5 * syn(high),
        "NET_RX {}/s for {} SYN/s",
        rx(high),
        syn(high)
    );
    assert!(rx(high) > rx(low), "NET_RX rises with the packets received");
    assert!(
        rx(sender) < 0.5 * rx(high),
        "unsteered, the router's CPU receives them: {} vs {}",
        rx(sender),
        rx(high)
    );
}

/// The steering tests' scenario: capacity 250/s (4 ms of CPU per request), the S-Client
/// through the lab with the server's receive steered as `steer` says, a sweep of the offered
/// rate over `values` (TOML) with `extra` lines of `[sweep]` (e.g. `steer = [...]`).
pub fn steer_scenario(name: &str, steer: &str, values: &str, extra: &str) -> String {
    format!(
        r#"name = "{name}"
[target]
service_time = "4ms"
backlog = 64
[load]
mode = "sclient"
rate = 300
sockets = 3000
timeout = "500ms"
[network]
backend = "router"
steer = "{steer}"
[[network.path]]
name = "lan"
rtt = "1ms"
[sweep]
param = "load.rate"
values = {values}
warmup = "2s"
hold = "5s"
{extra}"#
    )
}

/// Whether nginx or Apache is installed: false (skip, saying why) without it, a failure when
/// CI requires every test.
pub fn real_server_installed(kind: synlab::scenario::TargetKind) -> bool {
    match synlab::lab::real_server::find_binary(kind) {
        Ok(_) => true,
        Err(e) => {
            synlab::sys::privilege::skip_unless_required(&format!("{e:#}"));
            false
        }
    }
}
