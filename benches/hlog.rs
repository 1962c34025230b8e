//! What writing the HdrHistogram interval logs costs (issue 17): `cargo bench --bench hlog`.
//! A real loopback sweep (`synlab run`, six rates) measures its latencies; then its own
//! `connect.hlog` and `total.hlog` are read back and the writes the run made (after each point,
//! both files rewritten whole with every point so far) are replayed here on this thread's CPU
//! clock. The anchor is the same run's controller: its CPU time and its responses/s. The writes
//! happen after a point's window has closed, so they cannot lower that point's figures; what
//! they cost is the controller's CPU and the gap before the next window.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use synlab::lab::recorder::hlog::Latencies;
use synlab::report::hlog::read;

const RATES: [u32; 6] = [500, 1000, 2000, 3000, 4000, 5000];
const REPLAYS: usize = 7;

fn scenario() -> String {
    let values: Vec<String> = RATES.iter().map(|r| r.to_string()).collect();
    format!(
        r#"name = "hlog-bench"
[target]
arch = "event"
service_time = "100us"
backlog = 1024
[load]
mode = "open"
rate = 500
arrivals = "poisson"
sockets = 20000
timeout = "1s"
[sweep]
param = "load.rate"
values = [{}]
warmup = "1s"
hold = "4s"
"#,
        values.join(", ")
    )
}

/// The controller's own CPU seconds (utime + stime, its threads, not its children).
fn cpu_s(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let st = synlab::sys::pidstat::PidStat::parse(&text).ok()?;
    Some((st.utime + st.stime) as f64 / synlab::sys::procfs::clock_ticks() as f64)
}

fn thread_cpu() -> Duration {
    Duration::from_nanos(synlab::sys::server_io::thread_cpu_ns())
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_synlab");
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("hlog-bench.toml");
    std::fs::write(&sc, scenario()).unwrap();
    let started = Instant::now();
    let mut child = Command::new(exe)
        .arg("run")
        .arg(&sc)
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start synlab run");
    let pid = child.id();
    // Sampled until it exits: the last reading misses at most 50 ms of its CPU.
    let mut controller_cpu = 0.0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Some(c) = cpu_s(pid) {
            controller_cpu = c;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "synlab run failed: {status}");
    let wall = started.elapsed().as_secs_f64();
    let run = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let points = summary["points"].as_array().unwrap();
    let responses: f64 = points
        .iter()
        .map(|p| p["throughput_per_s"].as_f64().unwrap())
        .sum::<f64>()
        / points.len() as f64;
    let connect = read(&run.join("connect.hlog")).unwrap();
    let total = read(&run.join("total.hlog")).unwrap();
    assert_eq!(connect.len(), RATES.len(), "one interval per point");
    let values: u64 = total.iter().map(|(_, h)| h.len()).sum();

    // The run's writes: after point k, both files with points 1..=k.
    let out = dir.path().join("replay");
    std::fs::create_dir(&out).unwrap();
    let mut per_run = Vec::new();
    let mut last_write = Vec::new();
    for _ in 0..REPLAYS {
        let mut rec = Latencies::new("hlog-bench", std::time::SystemTime::now());
        let mut spent = Duration::ZERO;
        for (k, ((_, c), (_, t))) in connect.iter().zip(&total).enumerate() {
            let t0 = thread_cpu();
            let empty = synlab::metrics::hist::new_hist();
            let h = synlab::lab::recorder::hlog::PointLatencies {
                connect: c,
                handshake: &empty,
                ttfb: &empty,
                total: t,
            };
            rec.push(format!("point-{}", k + 1), (k as f64 * 5.0, 4.0), h);
            // As the recorder writes them: each file aside, then renamed over the old one.
            for (file, bytes) in rec.encode().unwrap() {
                let path = Path::new(&out).join(file);
                std::fs::write(path.with_extension("tmp"), bytes).unwrap();
                std::fs::rename(path.with_extension("tmp"), &path).unwrap();
            }
            let d = thread_cpu() - t0;
            spent += d;
            if k + 1 == connect.len() {
                last_write.push(d);
            }
        }
        per_run.push(spent);
    }
    per_run.sort();
    last_write.sort();
    let hlog_s = per_run[REPLAYS / 2].as_secs_f64();
    let last_ms = last_write[REPLAYS / 2].as_secs_f64() * 1e3;
    let size: u64 = ["connect.hlog", "total.hlog"]
        .iter()
        .map(|f| std::fs::metadata(run.join(f)).unwrap().len())
        .sum();

    println!("hlog writing against the same run's controller ({} points, {values} latencies, files {size} bytes)", RATES.len());
    println!("  run: {wall:.1} s, {responses:.0} responses/s mean over the points, controller CPU {controller_cpu:.2} s");
    println!(
        "  hlog writes (median of {REPLAYS} replays): {:.2} ms CPU for the run, {last_ms:.2} ms for the last point's write",
        hlog_s * 1e3
    );
    println!(
        "  ratio hlog / controller CPU: {:.4}; hlog as share of one core over the run: {:.4} %",
        hlog_s / controller_cpu.max(1e-9),
        hlog_s / wall * 100.0
    );
    println!(
        "  last write / the 1 s warm-up that follows it: {:.4}",
        last_ms / 1000.0
    );
}
