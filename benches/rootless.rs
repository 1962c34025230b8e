//! The rootless lab against the root lab, interleaved in one run (issue 16; root, because it
//! runs the lab both ways: `cargo bench --bench rootless`). The same two-path lab (0 and 50 ms
//! RTT) and built-in server, once as root and once as a plain user (SYNLAB_TEST_USER, else
//! `nobody`) in synlab's user namespace, at an idle rate (1/s: the router's idle CPU) and at a
//! load rate (2,000/s). For each: attempts/s and responses/s, the connect p50 of each path, the
//! router's CPU and its departure error (p50/p99, from its own histograms), whether it had
//! SCHED_FIFO. Medians over the rounds, and rootless / root ratios.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROUNDS: usize = 2;
const RATES: [u32; 2] = [1, 2000];

fn scenario(rate: u32) -> String {
    format!(
        r#"name = "rootless-bench"
duration = "8s"
[target]
arch = "event"
service_time = "200us"
service = "cpu"
backlog = 1024
[load]
mode = "open"
rate = {rate}
arrivals = "poisson"
sockets = 20000
timeout = "1s"
[probe]
interval = "200ms"
[network]
backend = "auto"
[[network.path]]
name = "lan"
rtt = "0ms"
share = 0.5
[[network.path]]
name = "wan"
rtt = "50ms"
share = 0.5
"#
    )
}

#[derive(Default, Clone)]
struct Figures {
    attempts: f64,
    responses: f64,
    lan_p50_ms: f64,
    wan_p50_ms: f64,
    router_cpu_pct: f64,
    late_p50_us: f64,
    late_p99_us: f64,
    realtime: bool,
}

fn run(exe: &Path, dir: &Path, prefix: &[String], rate: u32) -> Figures {
    let sc = dir.join(format!("r{rate}.toml"));
    std::fs::write(&sc, scenario(rate)).unwrap();
    let out = dir.join(format!("out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut c = match prefix.split_first() {
        Some((p, rest)) => {
            let mut c = Command::new(p);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let o = c
        .args(["run", sc.to_str().unwrap(), "--out"])
        .arg(&out)
        .arg("--no-progress")
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let p = &s["points"][0];
    let path = |n: &str| {
        p["paths"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == n))
            .and_then(|x| x["connect_p50_ms"].as_f64())
            .unwrap_or(f64::NAN)
    };
    let t = &s["meta"]["router_timing"];
    // The router's CPU over the run's time series, the first two seconds (start-up) left out.
    let ts = std::fs::read_to_string(run.join("timeseries.csv")).unwrap();
    let mut lines = ts.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|c| *c == n).unwrap();
    let (tc, cc) = (col("t_s"), col("router_cpu_pct"));
    let cpu: Vec<f64> = lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let t: f64 = f.get(tc)?.parse().ok()?;
            let c: f64 = f.get(cc)?.parse().ok()?;
            (t >= 2.0).then_some(c)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&out);
    Figures {
        attempts: p["attempts_per_s"].as_f64().unwrap_or(f64::NAN),
        responses: p["throughput_per_s"].as_f64().unwrap_or(f64::NAN),
        lan_p50_ms: path("lan"),
        wan_p50_ms: path("wan"),
        router_cpu_pct: cpu.iter().sum::<f64>() / cpu.len().max(1) as f64,
        late_p50_us: t["late_p50_us"].as_f64().unwrap_or(f64::NAN),
        late_p99_us: t["late_p99_us"].as_f64().unwrap_or(f64::NAN),
        realtime: t["realtime"].as_bool().unwrap_or(false),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn med(runs: &[Figures], f: fn(&Figures) -> f64) -> f64 {
    median(runs.iter().map(f).collect())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if !synlab::sys::userns::host_root() {
        eprintln!("the rootless bench runs the lab as root and as a plain user: run it as root");
        return;
    }
    let name = std::env::var("SYNLAB_TEST_USER").unwrap_or_else(|_| "nobody".into());
    let u = nix::unistd::User::from_name(&name)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("no user {name} (set SYNLAB_TEST_USER)"));
    let dir = tempfile::Builder::new()
        .prefix("synlab-rootless-bench-")
        .tempdir_in("/tmp")
        .unwrap();
    nix::unistd::chown(dir.path(), Some(u.uid), Some(u.gid)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let exe: PathBuf = dir.path().join("synlab");
    std::fs::copy(env!("CARGO_BIN_EXE_synlab"), &exe).unwrap();
    let plain = vec![
        "setpriv".to_string(),
        format!("--reuid={}", u.uid),
        format!("--regid={}", u.gid),
        "--clear-groups".into(),
    ];
    let mut results: Vec<(&str, u32, Vec<Figures>)> = Vec::new();
    for mode in ["root", "rootless"] {
        for rate in RATES {
            results.push((mode, rate, Vec::new()));
        }
    }
    for round in 0..ROUNDS {
        for rate in RATES {
            for mode in ["root", "rootless"] {
                let prefix: &[String] = if mode == "root" { &[] } else { &plain };
                let f = run(&exe, dir.path(), prefix, rate);
                eprintln!(
                    "round {round} {mode:>8} {rate:>5}/s: {:.0} responses/s, router {:.1}% CPU, late p99 {:.0} us",
                    f.responses, f.router_cpu_pct, f.late_p99_us
                );
                results
                    .iter_mut()
                    .find(|r| r.0 == mode && r.1 == rate)
                    .unwrap()
                    .2
                    .push(f);
            }
        }
    }
    println!(
        "\n{:>8} {:>6} {:>10} {:>11} {:>8} {:>8} {:>11} {:>9} {:>9} {:>9}",
        "lab",
        "rate",
        "attempts/s",
        "responses/s",
        "lan p50",
        "wan p50",
        "router cpu%",
        "late p50",
        "late p99",
        "SCHED_FIFO"
    );
    for (mode, rate, runs) in &results {
        println!(
            "{:>8} {:>6} {:>10.0} {:>11.0} {:>6.2}ms {:>6.2}ms {:>11.1} {:>7.0}us {:>7.0}us {:>9}",
            mode,
            rate,
            med(runs, |f| f.attempts),
            med(runs, |f| f.responses),
            med(runs, |f| f.lan_p50_ms),
            med(runs, |f| f.wan_p50_ms),
            med(runs, |f| f.router_cpu_pct),
            med(runs, |f| f.late_p50_us),
            med(runs, |f| f.late_p99_us),
            runs.iter().all(|f| f.realtime)
        );
    }
    println!("\nrootless / root (medians, same run):");
    for rate in RATES {
        let get = |m: &str| &results.iter().find(|r| r.0 == m && r.1 == rate).unwrap().2;
        let (a, b) = (get("root"), get("rootless"));
        let ratio = |f: fn(&Figures) -> f64| med(b, f) / med(a, f);
        println!(
            "  {rate:>5}/s: responses x{:.3}, router CPU x{:.2}, departure error p50 x{:.2}, p99 x{:.2}",
            ratio(|f| f.responses),
            ratio(|f| f.router_cpu_pct),
            ratio(|f| f.late_p50_us),
            ratio(|f| f.late_p99_us)
        );
    }
}
