//! The server's own CPU in the lab (root; the rootless run is in tests/rootless.rs): the
//! server gets its own CPUs, its receive processing is steered to them (what it receives costs
//! its CPUs, as a NIC's interrupts would) or left on the sender's, and its processes' CPU per
//! response is its own, as /proc/<pid>/stat says.

mod lab_support;

use lab_support::{check_steering, opts, point, privileged, run_for, steer_scenario};
use std::path::Path;
use synlab::lab::controller::Controller;

/// One lab at a time: both put their server on the same CPU, whose softirq and NET_RX each
/// test reads as its server's.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether the machine can give the server CPUs of its own (skips, saying why, otherwise).
fn two_cpus() -> bool {
    let n = synlab::sys::machine::online_cpus().len();
    if n >= 2 {
        return true;
    }
    // Not a missing privilege: a one-CPU machine has no split to test.
    synlab::sys::privilege::say_skipped(&format!(
        "skipped: this machine has {n} CPU, the server cannot get CPUs of its own"
    ));
    false
}

/// The only run folder under `out`.
fn run_folder(out: &Path) -> std::path::PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// As root the steering changes live between points: one run, rate x steering.
#[test]
fn steering_charges_the_servers_cpus_for_what_it_receives() {
    let _one_lab = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !privileged() || !two_cpus() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let sc = d.path().join("steer.toml");
    // Below capacity and at 6x it, each rate steered to the server's CPUs and left on the
    // sender's, back to back.
    let text = steer_scenario(
        "steer",
        "server",
        "[300, 1500]",
        "steer = [\"server\", \"sender\"]\n",
    );
    std::fs::write(&sc, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", "--no-progress", "--out"])
        .arg(d.path().join("out"))
        .arg(&sc)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_folder(&d.path().join("out"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let cpus = &summary["meta"]["cpus"];
    assert!(!cpus["server"].as_array().unwrap().is_empty(), "{cpus}");
    assert!(cpus["steer_refused"].is_null(), "{cpus}");
    check_steering(
        point(&summary, "300", "server"),
        point(&summary, "1500", "server"),
        point(&summary, "1500", "sender"),
    );
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    assert!(log.contains("cpus: server on CPU"), "{log}");
    assert!(log.contains("service work calibrated"), "{log}");
}

/// The server's processes' CPU per response in the summary is their own: the kernel's count
/// of their CPU time (/proc/<pid>/stat, read here at the window's edges) over the responses
/// the server counted in it, within 5 %.
#[test]
fn the_servers_cpu_per_response_is_what_proc_says() {
    let _one_lab = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !privileged() || !two_cpus() {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse(
        "cpu.toml",
        r#"
duration = "60s"
[target]
service_time = "1ms"
[load]
mode = "open"
rate = 300
timeout = "1s"
[network]
backend = "router"
[[network.path]]
name = "lan"
rtt = "1ms"
"#,
    )
    .unwrap();
    let mut c = Controller::start(sc, opts(None)).unwrap();
    let pid = c.server_pid.expect("the built-in server runs");
    let ticks = || {
        let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let s = synlab::sys::pidstat::PidStat::parse(&t).unwrap();
        (s.utime + s.stime) as f64 / synlab::sys::procfs::clock_ticks() as f64
    };
    run_for(&mut c, 2.0);
    c.begin_point();
    let cpu0 = ticks();
    run_for(&mut c, 8.0);
    let cpu1 = ticks();
    let w = c.end_point().unwrap();
    let responses = w.server_responses.expect("the server's own count") as f64;
    let row = c.core().summary_row(1, w);
    let by_proc = (cpu1 - cpu0) * 1e6 / responses;
    let ours = row.server_cpu_us_per_response;
    eprintln!(
        "server CPU per response: summary {ours:.0} us, /proc/{pid}/stat {by_proc:.0} us ({responses} responses)"
    );
    assert!(responses > 1500.0, "{responses}");
    assert!(
        (ours / by_proc - 1.0).abs() < 0.05,
        "summary {ours} us vs /proc {by_proc} us per response"
    );
    // 1 ms of work per request, and little else.
    assert!((1000.0..1500.0).contains(&ours), "{ours} us per response");
    c.shutdown().unwrap();
}
