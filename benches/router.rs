//! Delay router benchmark (root; `cargo bench --bench router`): a lab with one path of 10 ms RTT
//! (5 ms each way), UDP frames from the client namespace to the server namespace at stepped
//! rates. For each rate: frames sent / relayed / received, and the realised one-way delay minus
//! the configured 5 ms (p50, p99), from the router's own histograms. Reports the highest rate
//! relayed with p99 error within 0.5 ms and no loss, for 64-byte and 1500-byte frames, then
//! the router's CPU at idle. Goals (issue 3): >= 200,000 frames/s (64 B), >= 2 Gbit/s (1500 B),
//! p99 error < 200 us at 10,000 frames/s, idle < 1 % of a core.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::net::lab::Lab;
use synlab::net::spec::NetworkSpec;
use synlab::sys::netns::in_netns;

const ONE_WAY_US: u64 = 5_000;

fn spec() -> NetworkSpec {
    let toml = "backend = \"router\"\n[[path]]\nname = \"wan\"\nrtt = \"10ms\"\nqueue = 100000\n";
    toml::from_str(toml).expect("bench spec")
}

struct Step {
    rate: f64,
    sent: u64,
    received: u64,
    p50_err_us: f64,
    p99_err_us: f64,
}

fn run_rate(lab: &synlab::net::lab::LabNet, size: usize, rate: f64, secs: f64) -> Step {
    let server = SocketAddr::new(lab.server_addr.into(), 9000);
    let client_ns = lab.paths[0].netns.clone();
    let got = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (g, s) = (got.clone(), stop.clone());
    let srv_ns = lab.server_netns.clone();
    let rx = std::thread::spawn(move || {
        in_netns(&srv_ns, || {
            let sock = UdpSocket::bind(server).unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut buf = [0u8; 2048];
            while !s.load(Ordering::Relaxed) {
                if sock.recv(&mut buf).is_ok() {
                    g.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .unwrap();
    });
    std::thread::sleep(Duration::from_millis(200));
    lab.reset_router_histograms();
    let sent = in_netns(&client_ns, || {
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        let payload = vec![0x5au8; size.saturating_sub(42).max(18)];
        let start = Instant::now();
        let mut n = 0u64;
        let total = (rate * secs) as u64;
        while n < total {
            let due = start + Duration::from_secs_f64(n as f64 / rate);
            let now = Instant::now();
            if now < due {
                if due - now > Duration::from_micros(200) {
                    std::thread::sleep(due - now - Duration::from_micros(100));
                }
                continue;
            }
            if sock.send_to(&payload, server).is_ok() {
                n += 1;
            }
        }
        n
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    stop.store(true, Ordering::Relaxed);
    rx.join().unwrap();
    let view = lab.router_view();
    let h = &view.delay_us[0].0;
    let err = |q: f64| h.value_at_quantile(q) as f64 - ONE_WAY_US as f64;
    Step {
        rate,
        sent,
        received: got.load(Ordering::Relaxed),
        p50_err_us: err(0.5),
        p99_err_us: err(0.99),
    }
}

fn main() {
    if !synlab::sys::privilege::Privileges::current().can_build_lab() {
        eprintln!("router bench skipped: needs root (namespaces)");
        return;
    }
    std::env::set_var(
        "SYNLAB_EXE",
        std::env::var("SYNLAB_EXE").unwrap_or_else(|_| "target/release/synlab".into()),
    );
    let secs: f64 = std::env::var("SYNLAB_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let lab = Lab::up(&spec(), &synlab::net::plan::new_run_id()).expect("lab up");
    println!("frame  rate/s     sent    received  loss%   p50 err us  p99 err us  ok");
    for (size, rates) in [
        (
            64usize,
            vec![10_000.0, 50_000.0, 100_000.0, 200_000.0, 300_000.0],
        ),
        (1500, vec![10_000.0, 50_000.0, 100_000.0, 170_000.0]),
    ] {
        let mut best = 0.0;
        for r in rates {
            let s = run_rate(&lab, size, r, secs);
            let loss = 100.0 * (1.0 - s.received as f64 / s.sent.max(1) as f64);
            let ok = loss < 0.1 && s.p99_err_us.abs() <= 500.0;
            if ok {
                best = s.rate;
            }
            println!(
                "{size:>5} {:>7.0} {:>8} {:>11} {loss:>6.2} {:>12.0} {:>11.0}  {}",
                s.rate,
                s.sent,
                s.received,
                s.p50_err_us,
                s.p99_err_us,
                if ok { "yes" } else { "no" }
            );
        }
        println!(
            "{size}-byte frames: highest rate within 0.5 ms and no loss: {best:.0} frames/s ({:.2} Gbit/s)",
            best * size as f64 * 8.0 / 1e9
        );
    }
    // Idle: no traffic for 5 s.
    let pid = lab.router_pid().expect("router pid");
    let ticks = || -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split(' ').collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    };
    let a = ticks();
    std::thread::sleep(Duration::from_secs(5));
    let b = ticks();
    println!(
        "router idle CPU: {:.2} % of a core",
        (b - a) as f64 / 100.0 / 5.0 * 100.0
    );
    lab.down().expect("lab down");
}
