//! Delay router benchmark (root; `cargo bench --bench router`): a lab with one path of 10 ms RTT
//! (5 ms each way), frames from the client namespace to the server namespace at stepped rates.
//! For each rate: frames sent / relayed / delivered, the realised one-way delay minus the
//! configured 5 ms (p50, p99, from the router's own histograms) and the router's CPU. Reports
//! the highest rate relayed with p99 error within 0.5 ms and no loss, for 64-byte and
//! 1500-byte frames, then the router's CPU at idle. Goals (issue 3): >= 200,000 frames/s
//! (64 B), >= 2 Gbit/s (1500 B), p99 error < 200 us at 10,000 frames/s, idle < 1 % of a core.
//! First, 10,000 frames/s with and without SCHED_FIFO (issue 16: <= 10 % of a core, p99
//! error <= 100 us); `SYNLAB_BENCH_BASELINE_EXE` adds an older router binary as an anchor.
//!
//! The end hosts cost the router's core nothing it would not cost on a wire: the generator
//! (CPU 0) writes raw frames with AF_PACKET, addressed to a MAC the server's veth does not
//! have, so the server's kernel drops each one at the door (PACKET_OTHERHOST) instead of
//! running UDP and waking a receiver on the router's core (veth delivers on the sending CPU:
//! with a UDP receiver, ~45 % of the router's core went to the receiver's stack). Delivered
//! frames are counted by the server veth's rx_packets. `SYNLAB_BENCH_ENDPOINT=udp` keeps the
//! old UDP endpoints for comparison.
//!
//! The anchor, measured first in the same run: how late this machine wakes a SCHED_FIFO
//! thread from a timerfd on the router's CPU, and how often a busy loop there loses the CPU
//! (vCPU preemption by the host). The router's delay error cannot be below that floor. And
//! the CPU floor: a bare timerfd loop woken 10,000 times/s on the router's CPU. The 10,000
//! frames/s table gives the router's wake-ups per frame (its voluntary context switches) and
//! its CPU over that floor: below one wake-up per frame, frames share wake-ups.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::net::lab::{Lab, LabNet};
use synlab::net::spec::NetworkSpec;
use synlab::sys::netns::in_netns;
use synlab::sys::packet::{mmsg_headers, mono_ns, PacketPort, Timer};

const ONE_WAY_US: u64 = 5_000;
const ROUTER_CPU: usize = 1;
const GEN_CPU: usize = 0;

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
    /// p99 of |realised - configured|: frames sent early count too.
    p99_abs_err_us: f64,
    router_cpu_pct: f64,
    /// The router's voluntary context switches (its sleeps, so its wake-ups) per relayed frame,
    /// from /proc/<pid>/status.
    wakes_per_frame: f64,
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

/// CPU ticks (user + system, 1/100 s) of process `pid`.
fn ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let st = synlab::sys::pidstat::PidStat::parse(&s).expect("/proc/<pid>/stat");
    st.utime + st.stime
}

/// Voluntary context switches of process `pid` (each one a sleep, so one wake-up after it).
fn sleeps(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("voluntary_ctxt_switches in /proc/<pid>/status")
}

/// The CPU floor of waking: a bare timerfd loop on the router's CPU, woken every 100 us
/// (10,000 wake-ups/s, one per frame at the 10,000 frames/s step), doing nothing else. Percent
/// of a core, with SCHED_FIFO (`rt`) or at normal priority.
fn wake_floor_pct(secs: f64, rt: bool) -> f64 {
    std::thread::spawn(move || {
        pin(0, ROUTER_CPU);
        if rt {
            let _ = synlab::sys::packet::set_realtime(10);
        }
        synlab::sys::process::set_timer_slack_ns(1);
        let mut t = Timer::new().unwrap();
        let (start, cpu0) = (mono_ns(), synlab::sys::server_io::thread_cpu_ns());
        let n = (secs * 10_000.0) as u64;
        for k in 1..=n {
            t.arm_at(Some(start + k * 100_000)).unwrap();
            let mut pfd = libc::pollfd {
                fd: t.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, -1) };
            t.clear();
        }
        let cpu = synlab::sys::server_io::thread_cpu_ns() - cpu0;
        cpu as f64 / (mono_ns() - start) as f64 * 100.0
    })
    .join()
    .unwrap()
}

fn quantiles(mut v: Vec<u64>) -> (f64, f64, f64) {
    v.sort_unstable();
    let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
    (q(0.5), q(0.99), q(0.999))
}

/// The machine's floor: timerfd wake-up lateness of a SCHED_FIFO thread on the router's CPU
/// (armed 100 us ahead, as the router arms its departures), and gaps a busy loop there sees.
fn timer_anchor(secs: f64) {
    let h = std::thread::spawn(move || {
        pin(0, ROUTER_CPU);
        let fifo = synlab::sys::packet::set_realtime(10).is_ok();
        synlab::sys::process::set_timer_slack_ns(1);
        let mut t = Timer::new().unwrap();
        let mut late = Vec::new();
        let end = mono_ns() + (secs * 1e9) as u64;
        while mono_ns() < end {
            let due = mono_ns() + 100_000;
            t.arm_at(Some(due)).unwrap();
            let mut pfd = libc::pollfd {
                fd: t.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, -1) };
            late.push(mono_ns().saturating_sub(due));
            t.clear();
        }
        let mut gaps = [0u64; 3];
        let mut max_gap = 0;
        // 400 ms spins with 100 ms rests: a SCHED_FIFO thread spinning longer than the
        // kernel's RT budget (950 ms per second) is throttled for 50 ms, which is not the
        // machine's doing and would swamp the figure.
        for _ in 0..(secs / 0.4).ceil() as u32 {
            let end = mono_ns() + 400_000_000;
            let mut last = mono_ns();
            while last < end {
                let now = mono_ns();
                let g = now - last;
                last = now;
                max_gap = max_gap.max(g);
                for (k, lim) in [50_000, 200_000, 1_000_000].iter().enumerate() {
                    gaps[k] += u64::from(g > *lim);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        (fifo, quantiles(late), gaps, max_gap)
    });
    let (fifo, (p50, p99, p999), gaps, max_gap) = h.join().unwrap();
    println!(
        "anchor (CPU {ROUTER_CPU}, SCHED_FIFO {fifo}): timerfd wake-up late by p50 {p50:.0} us, p99 {p99:.0} us, \
         p99.9 {p999:.0} us; a {secs:.0} s busy loop lost the CPU {} times > 50 us, {} > 200 us, {} > 1 ms \
         (longest {:.1} ms)",
        gaps[0],
        gaps[1],
        gaps[2],
        max_gap as f64 / 1e6
    );
}

/// An Ethernet + IPv4 + UDP frame of `size` bytes to a MAC nobody in the lab has.
fn raw_frame(size: usize, src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    let size = size.max(60);
    let mut f = vec![0x5au8; size];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xfe]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (size - 14) as u16;
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[4..8].copy_from_slice(&[0, 0, 0x40, 0]);
    ip[8] = 64;
    ip[9] = 17;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let sum = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum::<u32>();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&40000u16.to_be_bytes());
    udp[2..4].copy_from_slice(&9000u16.to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    f
}

/// rx_packets of `dev` in netns `ns` (/proc/thread-self/net/dev of a thread inside it).
fn rx_packets(ns: &str, dev: &str) -> u64 {
    in_netns(ns, || {
        let t = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
        t.lines()
            .find_map(|l| {
                let (name, rest) = l.split_once(':')?;
                (name.trim() == dev).then(|| rest.split_whitespace().nth(1)?.parse().ok())?
            })
            .expect("server dev in /proc/net/dev")
    })
    .unwrap()
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

/// Paces `total` frames at `rate` from the calling thread (CPU 0): `send(k)` sends up to k
/// frames and returns how many went. Batches every 100 us.
fn pace(rate: f64, secs: f64, mut send: impl FnMut(usize) -> usize) -> u64 {
    pin(0, GEN_CPU);
    let start = Instant::now();
    let total = (rate * secs) as u64;
    let tick = Duration::from_micros(100);
    let mut n = 0u64;
    let mut next = start;
    while n < total {
        let due = ((start.elapsed().as_secs_f64() * rate) as u64 + 1).min(total);
        if due > n {
            n += send((due - n).min(1024) as usize) as u64;
        }
        next += tick;
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    n
}

/// One rate step: frames of `size` bytes at `rate` for `secs`.
fn run_rate(lab: &LabNet, udp: bool, size: usize, rate: f64, secs: f64) -> Step {
    let server = SocketAddr::new(lab.server_addr.into(), 9000);
    let client_ns = lab.paths[0].netns.clone();
    let plan = lab.plan();
    let (client_dev, server_dev) = (plan.paths[0].dev.clone(), plan.server.dev.clone());
    let got = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let rx = udp.then(|| {
        let (g, s) = (got.clone(), stop.clone());
        let srv_ns = lab.server_netns.clone();
        std::thread::spawn(move || {
            pin(0, GEN_CPU);
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
        })
    });
    std::thread::sleep(Duration::from_millis(200));
    let rx0 = rx_packets(&lab.server_netns, &server_dev);
    let router = lab.router_pid().expect("router pid");
    let (cpu0, sleeps0) = (ticks(router), sleeps(router));
    let t0 = Instant::now();
    lab.reset_router_histograms();
    let src = lab.paths[0].addrs[0];
    let sent = in_netns(&client_ns, || {
        if udp {
            let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
            sock.connect(server).unwrap();
            let payload = vec![0x5au8; size.saturating_sub(42).max(18)];
            pace(rate, secs, |k| send_many(&sock, &payload, k))
        } else {
            let port = PacketPort::open(&client_dev).expect("raw port on the client veth");
            let frame = raw_frame(size, src, lab.server_addr);
            let frames: Vec<&[u8]> = vec![frame.as_slice(); 1024];
            pace(rate, secs, |k| port.send_batch(&frames[..k]))
        }
    })
    .unwrap();
    // CPU over the sending time plus the last frames' 5 ms in the delay line.
    std::thread::sleep(Duration::from_millis(20));
    let router_cpu_pct = (ticks(router) - cpu0) as f64 / t0.elapsed().as_secs_f64();
    let wakes = sleeps(router) - sleeps0;
    std::thread::sleep(Duration::from_millis(1200));
    stop.store(true, Ordering::Relaxed);
    let received = match rx {
        Some(h) => {
            h.join().unwrap();
            got.load(Ordering::Relaxed)
        }
        None => rx_packets(&lab.server_netns, &server_dev) - rx0,
    };
    let view = lab.router_view();
    let h = &view.delay_us[0].0;
    let err = |q: f64| h.value_at_quantile(q) as f64 - ONE_WAY_US as f64;
    let mut abs: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| {
            (
                v.value_iterated_to().abs_diff(ONE_WAY_US),
                v.count_at_value(),
            )
        })
        .collect();
    abs.sort_unstable();
    let k = (h.len() as f64 * 0.99).ceil() as u64;
    let mut seen = 0;
    let p99_abs = abs.iter().find(|&&(_, c)| {
        seen += c;
        seen >= k
    });
    Step {
        rate,
        sent,
        received,
        p50_err_us: err(0.5),
        p99_err_us: err(0.99),
        p99_abs_err_us: p99_abs.map_or(0.0, |&(v, _)| v as f64),
        router_cpu_pct,
        wakes_per_frame: wakes as f64 / sent.max(1) as f64,
    }
}

/// The rate steps per frame size; `SYNLAB_BENCH_RATES="64:10000,200000;1500:100000"` overrides.
fn steps() -> Vec<(usize, Vec<f64>)> {
    if let Ok(v) = std::env::var("SYNLAB_BENCH_RATES") {
        return v
            .split(';')
            .map(|part| {
                let (size, rates) = part.split_once(':').expect("SIZE:RATE,RATE");
                let rates = rates.split(',').map(|r| r.parse().expect("rate")).collect();
                (size.parse().expect("frame size"), rates)
            })
            .collect();
    }
    let up_to = |top: f64| -> Vec<f64> {
        [
            10_000.0, 50_000.0, 100_000.0, 200_000.0, 300_000.0, 400_000.0, 500_000.0, 700_000.0,
        ]
        .into_iter()
        .filter(|&r| r <= top)
        .collect()
    };
    // Past the router's core: 64-byte frames at 700,000/s; 1500-byte frames are bounded by
    // the generator and veth copies first.
    vec![(64, up_to(700_000.0)), (1500, up_to(400_000.0))]
}

/// Router CPU (ticks) of `pid` over `secs` of no traffic, in % of a core.
fn idle_pct(pid: u32, secs: u64) -> f64 {
    let a = ticks(pid);
    std::thread::sleep(Duration::from_secs(secs));
    (ticks(pid) - a) as f64 / secs as f64
}

/// Set in the child that measures the rootless router (see `rootless_10k`).
const ROOTLESS_CHILD: &str = "SYNLAB_BENCH_ROOTLESS_CHILD";

/// One 10,000 frames/s step (64 B) in a fresh lab, the router with SCHED_FIFO or at normal
/// priority (`SYNLAB_ROUTER_NO_RT=1`, and sched_setscheduler for a router binary that may not
/// know the variable), then its idle CPU. Returns the scheduling it ran with.
fn measure_10k(udp: bool, secs: f64, rt: bool) -> (&'static str, Step, f64) {
    if rt {
        std::env::remove_var("SYNLAB_ROUTER_NO_RT");
    } else {
        std::env::set_var("SYNLAB_ROUTER_NO_RT", "1");
    }
    let lab = Lab::up(&spec(), &synlab::net::plan::new_run_id()).expect("lab up");
    let pid = lab.router_pid().expect("router pid");
    pin(pid as i32, ROUTER_CPU);
    if !rt {
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: valid sched_param for a pid we started.
        unsafe { libc::sched_setscheduler(pid as i32, libc::SCHED_OTHER, &p) };
    }
    // SAFETY: plain query of a pid we started.
    let policy = unsafe { libc::sched_getscheduler(pid as i32) };
    let s = run_rate(&lab, udp, 64, 10_000.0, secs);
    let idle = idle_pct(pid, 3);
    lab.down().expect("lab down");
    std::env::remove_var("SYNLAB_ROUTER_NO_RT");
    let sched = if policy == libc::SCHED_FIFO {
        "SCHED_FIFO"
    } else {
        "normal"
    };
    (sched, s, idle)
}

/// One row of the 10,000 frames/s table; `floor` is the bare wake-up loop's CPU at the same
/// scheduling (`wake_floor_pct`), measured in the same run.
fn row_10k(name: &str, sched: &str, s: &Step, idle: f64, floor: f64) {
    println!(
        "{name:<9} {sched:<11} {:>5.1} {:>11.0} {:>11.0} {:>13.0} {:>11.2} {:>11.2} {:>11.2}",
        s.router_cpu_pct,
        s.p50_err_us,
        s.p99_err_us,
        s.p99_abs_err_us,
        idle,
        s.wakes_per_frame,
        s.router_cpu_pct / floor
    );
}

/// The header of the 10,000 frames/s table.
const HEAD_10K: &str =
    "router    scheduling  CPU %  p50 err us  p99 err us  p99 |err| us  idle CPU %  \
                        wakes/frame  CPU / floor";

/// The router at 10,000 frames/s (64 B) with SCHED_FIFO, at normal priority (as a user who
/// is not root runs it), and rootless (the lab in a user namespace, built by a copy of this
/// bench run as SYNLAB_TEST_USER, else `nobody`), each in a fresh lab; with
/// `SYNLAB_BENCH_BASELINE_EXE=<older synlab binary>` that router too, in the same run.
fn at_10k(udp: bool, secs: f64) {
    let this = std::env::var("SYNLAB_EXE").expect("set in main");
    let mut exes = vec![("this", this.clone())];
    if let Ok(b) = std::env::var("SYNLAB_BENCH_BASELINE_EXE") {
        exes.push(("baseline", b));
    }
    let floor = [true, false].map(|rt| wake_floor_pct(secs, rt));
    println!(
        "floor: a bare timerfd loop on CPU {ROUTER_CPU} woken 10,000 times/s (one wake-up per frame) \
         costs {:.1} % of a core with SCHED_FIFO, {:.1} % at normal priority",
        floor[0], floor[1]
    );
    println!("router at 10,000 frames/s (64 B), goal <= 10 % of a core with p99 error <= 100 us:");
    println!("{HEAD_10K}");
    for (name, exe) in &exes {
        std::env::set_var("SYNLAB_EXE", exe);
        for (rt, fl) in [true, false].into_iter().zip(floor) {
            let (sched, s, idle) = measure_10k(udp, secs, rt);
            row_10k(name, sched, &s, idle, fl);
        }
    }
    std::env::set_var("SYNLAB_EXE", &this);
    match rootless_10k(&this) {
        Ok(line) => println!("{line}"),
        Err(why) => println!("rootless    not measured: {why}"),
    }
}

/// Runs a copy of this bench as a plain user in child mode; returns its table row.
fn rootless_10k(exe: &str) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let name = std::env::var("SYNLAB_TEST_USER").unwrap_or_else(|_| "nobody".into());
    let u = nix::unistd::User::from_name(&name)
        .ok()
        .flatten()
        .ok_or(format!("no user {name} (set SYNLAB_TEST_USER)"))?;
    let dir = tempfile::Builder::new()
        .prefix("synlab-router-bench-")
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
        .map_err(|e| e.to_string())?;
    let (bench, synlab) = (dir.path().join("router-bench"), dir.path().join("synlab"));
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    std::fs::copy(me, &bench).map_err(|e| format!("copying the bench: {e}"))?;
    std::fs::copy(exe, &synlab).map_err(|e| format!("copying {exe}: {e}"))?;
    let out = std::process::Command::new("setpriv")
        .arg(format!("--reuid={}", u.uid))
        .arg(format!("--regid={}", u.gid))
        .arg("--clear-groups")
        .arg(&bench)
        .arg("--bench")
        .env(ROOTLESS_CHILD, "1")
        .env("SYNLAB_EXE", &synlab)
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .output()
        .map_err(|e| format!("setpriv: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("rootless"))
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "the child as {name} printed no row ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
}

/// Child mode: enter synlab's user namespace (before any thread), measure, print one row.
fn rootless_child(udp: bool, secs: f64) {
    match synlab::sys::userns::prepare(true) {
        synlab::sys::userns::LabMode::Rootless { .. } => {
            let floor = wake_floor_pct(secs, false);
            let (sched, s, idle) = measure_10k(udp, secs, false);
            row_10k("rootless", sched, &s, idle, floor);
        }
        other => println!("rootless    not measured: {}", other.label()),
    }
}

fn main() {
    let secs: f64 = std::env::var("SYNLAB_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let udp = std::env::var("SYNLAB_BENCH_ENDPOINT").is_ok_and(|e| e == "udp");
    if std::env::var_os(ROOTLESS_CHILD).is_some() {
        rootless_child(udp, secs);
        return;
    }
    if !synlab::sys::privilege::Privileges::current().can_build_lab() {
        eprintln!("router bench skipped: needs root (namespaces)");
        return;
    }
    std::env::set_var(
        "SYNLAB_EXE",
        std::env::var("SYNLAB_EXE").unwrap_or_else(|_| "target/release/synlab".into()),
    );
    timer_anchor(secs);
    at_10k(udp, secs);
    let lab = Lab::up(&spec(), &synlab::net::plan::new_run_id()).expect("lab up");
    if let Some(pid) = lab.router_pid() {
        pin(pid as i32, ROUTER_CPU);
    }
    println!(
        "endpoints: {}",
        if udp {
            "UDP sockets (the receiver's stack runs on the router's core)"
        } else {
            "raw frames, dropped at the server's door"
        }
    );
    println!(
        "frame  rate/s     sent   delivered  loss%   p50 err us  p99 err us  router CPU %  ok"
    );
    for (size, rates) in steps() {
        // The highest rate with every step up to it ok: one host stall (see the anchor) can
        // fail a step below rates that pass, and such a step is reported, not skipped.
        let mut best = 0.0;
        let mut all_ok = true;
        for r in rates {
            let s = run_rate(&lab, udp, size, r, secs);
            let loss = 100.0 * (1.0 - s.received as f64 / s.sent.max(1) as f64);
            let ok = loss < 0.1 && s.p99_err_us.abs() <= 500.0;
            all_ok &= ok;
            if all_ok {
                best = s.rate;
            }
            println!(
                "{size:>5} {:>7.0} {:>8} {:>11} {loss:>6.2} {:>12.0} {:>11.0} {:>13.0}  {}",
                s.rate,
                s.sent,
                s.received,
                s.p50_err_us,
                s.p99_err_us,
                s.router_cpu_pct,
                if ok { "yes" } else { "no" }
            );
        }
        println!(
            "{size}-byte frames: highest rate with it and every lower step within 0.5 ms and no loss: {best:.0} frames/s ({:.2} Gbit/s)",
            best * size as f64 * 8.0 / 1e9
        );
    }
    // Idle: no traffic for 5 s.
    let pid = lab.router_pid().expect("router pid");
    println!("router idle CPU: {:.2} % of a core", idle_pct(pid, 5));
    lab.down().expect("lab down");
}
