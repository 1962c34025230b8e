//! What the controller spends on a worker's report (issue 44): its JSON line parsed (the
//! stats reader thread) and folded into the core (the controller thread), both on the load's
//! CPU as the lab places its threads. A real `synlab worker` loads the built-in server on
//! loopback for 4 s (closed, 64 clients, `/file/1294`, a report every 100 ms) and its lines are
//! kept; then they are parsed and folded again and again on this thread's CPU clock, with a tick
//! every second of the run as the controller folds them. The anchor is the same run's worker:
//! its own CPU time (its reports' `cpu_user_s + cpu_sys_s`), so the figure is the controller's
//! share of what the load itself spends. `cargo bench --bench stats_fold`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use synlab::lab::core::{Effect, Input, LabCore, Slot};
use synlab::lab::knobs::knobs_of;
use synlab::load::protocol::{Mode, StatsDelta, WorkerConfig};
use synlab::target::{Arch, FileSet, ServeConfig, Server, ServiceKind};

/// The tests' worker configuration (every field once), changed here where the bench differs.
#[path = "../tests/worker_support/mod.rs"]
mod worker_support;

const REPLAYS: usize = 15;

fn thread_cpu() -> Duration {
    Duration::from_nanos(synlab::sys::server_io::thread_cpu_ns())
}

fn server() -> Server {
    let cfg = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        arch: Arch::Event,
        workers: 1,
        max_workers: 1,
        backlog: 1024,
        service_time_us: 0,
        service: ServiceKind::Cpu,
        files: vec![FileSet::Explicit { sizes: vec![1294] }],
        keepalive: false,
        stats_interval_ms: 100,
        accept_batch: 1,
        lingering_close: false,
        linger_timeout_ms: 2000,
        tls: None,
        max_streams: 16,
        http3: None,
    };
    Server::start(cfg).expect("built-in server")
}

/// The worker's report lines over a 4 s closed load of the server.
fn worker_lines(server: &Server) -> Vec<String> {
    let cfg = WorkerConfig {
        id: 0,
        mode: Mode::Closed,
        rate: None,
        clients: 64,
        timeout_s: 1.0,
        mix: worker_support::file_1294(),
        duration_s: 4.0,
        ..worker_support::config(server.local_addr())
    };
    let mut child = Command::new(synlab::sys::process::self_exe())
        .args([
            "worker",
            "--config-json",
            &serde_json::to_string(&cfg).unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn synlab worker");
    let out = BufReader::new(child.stdout.take().unwrap());
    let lines: Vec<String> = out.lines().map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success(), "the worker failed");
    lines
}

/// One replay: every line parsed, then folded (a tick at each second of the run).
/// Returns (parse, fold) CPU time.
fn replay(lines: &[String]) -> (Duration, Duration) {
    let knobs = knobs_of(&synlab::scenario::default_scenario());
    let mut core = LabCore::new("bench", knobs, Vec::new(), 1.0);
    core.set_slots(vec![Slot {
        path: None,
        weight: 1.0,
    }]);
    let mut fx: Vec<Effect> = Vec::new();
    let (mut parse, mut fold) = (Duration::ZERO, Duration::ZERO);
    let mut next_tick = 1.0;
    for line in lines {
        let t0 = thread_cpu();
        let d: StatsDelta = serde_json::from_str(line).expect("a stats line");
        let t1 = thread_cpu();
        let now = d.t_s;
        core.fold(Input::Worker(d.worker, Box::new(d)), now, &mut fx);
        if now >= next_tick {
            core.fold(Input::Tick, now, &mut fx);
            next_tick += 1.0;
        }
        fx.clear();
        let t2 = thread_cpu();
        parse += t1 - t0;
        fold += t2 - t1;
    }
    (parse, fold)
}

fn main() {
    // The worker and server run from this build's binary, or from `SYNLAB_EXE` (an older
    // build's bench run beside this one's, each with its own binary): `self_exe` reads it.
    if std::env::var_os("SYNLAB_EXE").is_none() {
        std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    }
    let server = server();
    let lines = worker_lines(&server);
    let _ = server.stop();
    let deltas: Vec<StatsDelta> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let run_s = deltas.last().map_or(0.0, |d| d.t_s);
    let worker_cpu_s: f64 = deltas.iter().map(|d| d.cpu_user_s + d.cpu_sys_s).sum();
    let conns: u64 = deltas.iter().map(|d| d.counts.established).sum();
    let bytes: usize = lines.iter().map(String::len).sum();
    let pairs: usize = deltas
        .iter()
        .map(|d| d.connect_us.0.len() + d.ttfb_us.0.len() + d.total_us.0.len())
        .sum();
    println!(
        "run: {} reports over {run_s:.2} s, {:.0} conn/s, worker CPU {:.3} s ({:.0} % of a CPU); \
         {:.0} bytes and {:.0} histogram pairs a report",
        lines.len(),
        conns as f64 / run_s,
        worker_cpu_s,
        100.0 * worker_cpu_s / run_s,
        bytes as f64 / lines.len() as f64,
        pairs as f64 / lines.len() as f64,
    );
    let mut runs: Vec<(Duration, Duration)> = (0..REPLAYS).map(|_| replay(&lines)).collect();
    runs.sort_by_key(|r| r.0 + r.1);
    let (parse, fold) = runs[REPLAYS / 2];
    let n = lines.len() as f64;
    let us = |d: Duration| d.as_secs_f64() * 1e6 / n;
    let share = |d: Duration| 100.0 * d.as_secs_f64() / worker_cpu_s;
    println!(
        "per report (median of {REPLAYS} replays): parse {:.1} us, fold {:.1} us, total {:.1} us",
        us(parse),
        us(fold),
        us(parse + fold)
    );
    println!(
        "as a share of the worker's own CPU in the same run: parse {:.3} %, fold {:.3} %, \
         total {:.3} %",
        share(parse),
        share(fold),
        share(parse + fold)
    );
}
