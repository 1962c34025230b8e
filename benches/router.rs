//! Delay router benchmark (root; `cargo bench --bench router`): a lab with one path of 10 ms RTT
//! (5 ms each way), UDP frames from the client namespace to the server namespace at stepped
//! rates. For each rate: frames sent / relayed / received, and the realised one-way delay minus
//! the configured 5 ms (p50, p99), from the router's own histograms. Reports the highest rate
//! relayed with p99 error within 0.5 ms and no loss, for 64-byte and 1500-byte frames, then
//! the router's CPU at idle. Goals (issue 3): >= 200,000 frames/s (64 B), >= 2 Gbit/s (1500 B),
//! p99 error < 200 us at 10,000 frames/s, idle < 1 % of a core.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::net::lab::Lab;
use synlab::net::spec::NetworkSpec;
use synlab::sys::netns::in_netns;
use synlab::sys::packet::mmsg_headers;

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

/// Pins the calling thread (or process `pid`) to one CPU.
fn pin(pid: i32, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one bit set; pid 0 = this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Sends `count` copies of `payload` on a connected UDP socket with sendmmsg; returns how
/// many the kernel took.
fn send_many(sock: &UdpSocket, payload: &[u8], count: usize) -> usize {
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    let mut msgs = mmsg_headers(std::slice::from_mut(&mut iov), None);
    // Every datagram is the same payload: repeat the one header.
    msgs.resize(count, msgs[0]);
    // SAFETY: every header points at `iov`, which points at `payload`; both outlive the call.
    let n = unsafe { libc::sendmmsg(sock.as_raw_fd(), msgs.as_mut_ptr(), count as u32, 0) };
    n.max(0) as usize
}

/// Receives what is waiting (up to 64 datagrams) with recvmmsg; returns how many.
fn recv_many(sock: &UdpSocket, bufs: &mut [[u8; 2048]; 64]) -> usize {
    let mut iov: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut msgs = mmsg_headers(&mut iov, None);
    // SAFETY: headers point into `bufs`, valid for the call. MSG_WAITFORONE: block for the
    // first (bounded by the socket's read timeout), then take what is there.
    let n = unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            msgs.as_mut_ptr(),
            64,
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        )
    };
    n.max(0) as usize
}

/// Generator and receiver share CPU 0 and batch their syscalls (sendmmsg every 100 us,
/// recvmmsg), so the router, pinned to CPU 1, is what limits the rate.
fn run_rate(lab: &synlab::net::lab::LabNet, size: usize, rate: f64, secs: f64) -> Step {
    let server = SocketAddr::new(lab.server_addr.into(), 9000);
    let client_ns = lab.paths[0].netns.clone();
    let got = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (g, s) = (got.clone(), stop.clone());
    let srv_ns = lab.server_netns.clone();
    let rx = std::thread::spawn(move || {
        pin(0, 0);
        in_netns(&srv_ns, || {
            let sock = UdpSocket::bind(server).unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut bufs = Box::new([[0u8; 2048]; 64]);
            while !s.load(Ordering::Relaxed) {
                g.fetch_add(recv_many(&sock, &mut bufs) as u64, Ordering::Relaxed);
            }
        })
        .unwrap();
    });
    std::thread::sleep(Duration::from_millis(200));
    lab.reset_router_histograms();
    let sent = in_netns(&client_ns, || {
        pin(0, 0);
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        sock.connect(server).unwrap();
        let payload = vec![0x5au8; size.saturating_sub(42).max(18)];
        let start = Instant::now();
        let total = (rate * secs) as u64;
        let tick = Duration::from_micros(100);
        let mut n = 0u64;
        let mut next = start;
        while n < total {
            let due = ((start.elapsed().as_secs_f64() * rate) as u64 + 1).min(total);
            if due > n {
                n += send_many(&sock, &payload, (due - n).min(1024) as usize) as u64;
            }
            next += tick;
            if let Some(d) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
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
    if let Some(pid) = lab.router_pid() {
        pin(pid as i32, 1);
    }
    println!("frame  rate/s     sent    received  loss%   p50 err us  p99 err us  ok");
    for (size, rates) in [
        (
            64usize,
            vec![
                10_000.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0, 300_000.0,
            ],
        ),
        (
            1500,
            vec![10_000.0, 50_000.0, 100_000.0, 130_000.0, 170_000.0],
        ),
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
