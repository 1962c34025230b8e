//! Privileged tests of the network lab on the delay router backend: added RTT (and a live
//! change), per-path RTTs, Bernoulli loss, a bandwidth limit, and cleanup after drop and after
//! SIGKILL. Skipped without root unless SYNLAB_REQUIRE_PRIVILEGED=1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use synlab::net::lab::{Lab, LabNet};
use synlab::net::spec::{BackendChoice, NetworkSpec, PathSpec};
use synlab::scenario::units::{Bandwidth, Dur, Percent};
use synlab::sys::netns;
use synlab::sys::privilege::{require_privileged, Privileges};

/// Timing tests run one at a time: the machine has 2 cores.
static SERIAL: Mutex<()> = Mutex::new(());
static N: AtomicU32 = AtomicU32::new(0);

fn privileged() -> bool {
    let p = Privileges::current();
    if p.can_build_lab() && p.net_raw {
        return true;
    }
    let why = p
        .lab_missing()
        .unwrap_or_else(|| "CAP_NET_RAW is missing".into());
    assert!(
        !require_privileged(),
        "SYNLAB_REQUIRE_PRIVILEGED=1 but {why}"
    );
    synlab::sys::privilege::say_skipped(&format!("skipping: {why}"));
    false
}

/// A run id unique to this process and test: `t` + 3 base36 digits of the pid + a counter.
fn run_id() -> String {
    let mut pid = std::process::id() % 46656;
    let mut s = String::new();
    for _ in 0..3 {
        s.push(std::char::from_digit(pid % 36, 36).unwrap());
        pid /= 36;
    }
    format!("t{s}{}", N.fetch_add(1, Ordering::Relaxed))
}

fn path(name: &str, rtt_ms: u64) -> PathSpec {
    PathSpec {
        name: name.into(),
        rtt: Dur(Duration::from_millis(rtt_ms)),
        ..Default::default()
    }
}

fn up(paths: Vec<PathSpec>) -> LabNet {
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let spec = NetworkSpec {
        backend: BackendChoice::Router,
        paths,
        ..Default::default()
    };
    Lab::up(&spec, &run_id()).expect("lab up")
}

/// A TCP server in the server netns that accepts and closes (or streams `bulk` bytes).
fn tcp_server(lab: &LabNet, bulk: usize) -> (SocketAddr, Arc<AtomicBool>) {
    let ns = lab.server_netns.clone();
    let addr = lab.server_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let st = stop.clone();
    std::thread::spawn(move || {
        netns::enter(&ns).unwrap();
        let l = TcpListener::bind((addr, 0)).unwrap();
        l.set_nonblocking(true).unwrap();
        tx.send(l.local_addr().unwrap()).unwrap();
        let chunk = Arc::new(vec![7u8; 64 * 1024]);
        while !st.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((mut s, _)) if bulk > 0 => {
                    s.set_nonblocking(false).unwrap();
                    let chunk = chunk.clone();
                    std::thread::spawn(move || {
                        let mut left = bulk;
                        while left > 0 {
                            let n = left.min(chunk.len());
                            if s.write_all(&chunk[..n]).is_err() {
                                return;
                            }
                            left -= n;
                        }
                    });
                }
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    });
    (rx.recv().unwrap(), stop)
}

/// `n` TCP connects from the client netns, `par` at a time; returns sorted connect times (us).
/// Connect times through the lab, sorted, in microseconds: as the connecting thread saw them
/// (`user`, which adds the thread's wake-up after the SYN-ACK: scheduling on a busy machine),
/// and as the kernel timed the handshake (`kernel`: TCP_INFO's first RTT sample, SYN sent to
/// SYN-ACK received, which is what the lab's delay shapes).
struct Times {
    user: Vec<u64>,
    kernel: Vec<u64>,
}

fn handshake_rtt_us(c: &TcpStream) -> u64 {
    use std::os::fd::AsRawFd;
    // SAFETY: getsockopt fills a zeroed tcp_info of the size it is given.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            c.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    info.tcpi_rtt as u64
}

fn connect_times(client_ns: &str, to: SocketAddr, n: usize, par: usize) -> Times {
    // One connect first so the neighbour entries exist (ARP crosses the delay too).
    let ns = client_ns.to_string();
    std::thread::scope(|s| {
        s.spawn(|| {
            netns::enter(&ns).unwrap();
            TcpStream::connect_timeout(&to, Duration::from_secs(3)).unwrap();
        });
    });
    let out = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for k in 0..par {
            let (ns, out) = (&ns, &out);
            s.spawn(move || {
                netns::enter(ns).unwrap();
                // Staggered starts: a smooth connection rate, not `par` SYNs in lockstep.
                std::thread::sleep(Duration::from_micros(100_000 * k as u64 / par as u64));
                let mut mine = Vec::new();
                for _ in (k..n).step_by(par) {
                    let t = Instant::now();
                    let c = TcpStream::connect_timeout(&to, Duration::from_secs(3)).unwrap();
                    mine.push((t.elapsed().as_micros() as u64, handshake_rtt_us(&c)));
                    drop(c);
                }
                out.lock().unwrap().extend(mine);
            });
        }
    });
    let v = out.into_inner().unwrap();
    let sorted = |f: fn(&(u64, u64)) -> u64| {
        let mut x: Vec<u64> = v.iter().map(f).collect();
        x.sort_unstable();
        x
    };
    Times {
        user: sorted(|p| p.0),
        kernel: sorted(|p| p.1),
    }
}

fn pct(v: &[u64], p: f64) -> u64 {
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Whether `pid` has exited (gone, or a zombie waiting for a reaper) within `limit`.
fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        if matches!(state, None | Some("Z") | Some("X")) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn leftovers(run: &str) -> Vec<String> {
    let prefix = format!("synlab-{run}-");
    let (a, b) = netns::list_leftovers();
    a.into_iter()
        .chain(b)
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn added_rtt_shows_in_tcp_connect_time_and_changes_live() {
    if !privileged() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut lab = up(vec![path("wan", 100)]);
    let (srv, stop) = tcp_server(&lab, 0);
    let ns = lab.paths[0].netns.clone();
    let times = connect_times(&ns, srv, 1000, 40);
    // The median as the application sees it; the tail as the kernel timed the handshake (the
    // connecting threads' own wake-ups, late on a busy machine, are not the lab's delay).
    let (p50, p99) = (pct(&times.user, 0.5), pct(&times.kernel, 0.99));
    let t = &times.user;
    let v = lab.router_view();
    eprintln!(
        "rtt 100ms: connect p50 {p50} us, handshake p99 {p99} us, connect p99 {} max {}; router delay up p50 {} p99 {} us, timer late p50 {} p99 {} max {} us",
        pct(t, 0.99),
        t[t.len() - 1],
        v.delay_us[0].0.value_at_quantile(0.5),
        v.delay_us[0].0.value_at_quantile(0.99),
        v.late_us.value_at_quantile(0.5),
        v.late_us.value_at_quantile(0.99),
        v.late_us.max()
    );
    assert!((98_000..=102_000).contains(&p50), "p50 {p50} us");
    assert!(p99 <= 105_000, "handshake p99 {p99} us");

    lab.set_path(&path("wan", 20)).unwrap();
    // The decrease glides in at half real-time speed: 80 ms of glide for 100 -> 20 ms.
    std::thread::sleep(Duration::from_millis(300));
    let t = connect_times(&ns, srv, 200, 20).user;
    let p50 = pct(&t, 0.5);
    eprintln!("rtt 20ms: connect p50 {p50} us, p99 {}", pct(&t, 0.99));
    assert!(
        (19_000..=22_000).contains(&p50),
        "p50 after change {p50} us"
    );
    let v = lab.router_view();
    assert!(v.latest.unwrap().paths[0].up.relayed > 2000);
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn two_paths_each_see_their_own_rtt() {
    if !privileged() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = up(vec![path("lan", 0), path("wan", 100)]);
    let (srv, stop) = tcp_server(&lab, 0);
    let (lan, wan) = std::thread::scope(|s| {
        let a = s.spawn(|| connect_times(&lab.paths[0].netns, srv, 200, 10).user);
        let b = s.spawn(|| connect_times(&lab.paths[1].netns, srv, 100, 20).user);
        (a.join().unwrap(), b.join().unwrap())
    });
    let (l, w) = (pct(&lan, 0.5), pct(&wan, 0.5));
    eprintln!("lan p50 {l} us, wan p50 {w} us");
    assert!(l < 3_000, "lan p50 {l} us");
    assert!((98_000..=103_000).contains(&w), "wan p50 {w} us");
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn bernoulli_loss_of_five_percent_on_20000_frames() {
    if !privileged() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = up(vec![PathSpec {
        loss: Percent(5.0),
        ..path("lossy", 2)
    }]);
    let server_ns = lab.server_netns.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let addr = lab.server_addr;
    let counter = std::thread::spawn(move || {
        netns::enter(&server_ns).unwrap();
        let s = UdpSocket::bind((addr, 0)).unwrap();
        // Room for the whole burst: with the default buffer (~270 of these datagrams) a
        // receiver that waits 15 ms for a CPU on a busy machine drops frames the router
        // delivered, and they would count as the path's loss.
        nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::RcvBufForce, &(16 << 20))
            .unwrap();
        s.set_read_timeout(Some(Duration::from_millis(800)))
            .unwrap();
        tx.send(s.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 2048];
        let mut got = 0u32;
        let deadline = Instant::now() + Duration::from_secs(12);
        while Instant::now() < deadline {
            match s.recv(&mut buf) {
                Ok(_) if &buf[..4] == b"SYNL" => got += 1,
                Ok(_) => {}
                Err(_) if got > 0 => break,
                Err(_) => {}
            }
        }
        got
    });
    let to = rx.recv().unwrap();
    let ns = lab.paths[0].netns.clone();
    let sent = 20_000u32;
    std::thread::scope(|s| {
        s.spawn(|| {
            netns::enter(&ns).unwrap();
            // ARP first (it can be lost too): a TCP connect retries until it gets through.
            let _ =
                TcpStream::connect_timeout(&SocketAddr::from((addr, 9)), Duration::from_secs(5));
            let u = UdpSocket::bind("0.0.0.0:0").unwrap();
            let msg = [b'S', b'Y', b'N', b'L', 0, 0, 0, 0];
            // 20 datagrams per ms: 20 000 frames in about a second.
            let t0 = Instant::now();
            for i in 0..sent {
                u.send_to(&msg, to).unwrap();
                if i % 20 == 19 {
                    let due = Duration::from_millis(i as u64 / 20);
                    if let Some(w) = due.checked_sub(t0.elapsed()) {
                        std::thread::sleep(w);
                    }
                }
            }
        });
    });
    let got = counter.join().unwrap();
    let loss = 1.0 - got as f64 / sent as f64;
    let st = lab.router_stats().unwrap();
    eprintln!(
        "sent {sent}, received {got}: loss {:.2} %; router up: relayed {} lost {} queue drops {}",
        loss * 100.0,
        st.paths[0].up.relayed,
        st.paths[0].up.lost,
        st.paths[0].up.queue_drops
    );
    assert!((0.045..=0.055).contains(&loss), "loss {loss}");
}

#[test]
fn ten_mbit_path_carries_bulk_at_nine_to_ten_mbit() {
    if !privileged() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = up(vec![PathSpec {
        bandwidth: Some(Bandwidth(10_000_000)),
        queue: 100,
        ..path("dsl", 20)
    }]);
    let bulk = 3_000_000usize;
    let (srv, stop) = tcp_server(&lab, bulk);
    let ns = lab.paths[0].netns.clone();
    let (bytes, secs) = std::thread::scope(|s| {
        s.spawn(|| {
            netns::enter(&ns).unwrap();
            let mut c = TcpStream::connect_timeout(&srv, Duration::from_secs(3)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = vec![0u8; 65536];
            let mut got = 0usize;
            let mut first = None;
            while got < bulk {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        first.get_or_insert_with(Instant::now);
                        got += n;
                    }
                }
            }
            (got, first.unwrap().elapsed().as_secs_f64())
        })
        .join()
        .unwrap()
    });
    let mbit = bytes as f64 * 8.0 / secs / 1e6;
    eprintln!("bulk {bytes} bytes in {secs:.2} s: {mbit:.2} Mbit/s goodput");
    assert_eq!(bytes, bulk);
    assert!((9.0..=10.0).contains(&mbit), "goodput {mbit:.2} Mbit/s");
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn dropping_the_lab_removes_everything() {
    if !privileged() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let mut spec = NetworkSpec {
        backend: BackendChoice::Router,
        paths: vec![path("a", 10), path("b", 0)],
        ..Default::default()
    };
    spec.sysctl.server.somaxconn = Some(321);
    let lab = Lab::up(&spec, &run_id()).expect("lab up");
    // Sysctls and offloads landed in the lab's namespaces, not the host's.
    let server_dev = lab.plan().server.dev.clone();
    let (somaxconn, txcsum) = netns::in_netns(&lab.server_netns, || {
        (
            synlab::sys::sysctl::read("net/core/somaxconn").unwrap(),
            synlab::sys::ethtool::tx_checksum_on(&server_dev).unwrap(),
        )
    })
    .unwrap();
    assert_eq!((somaxconn.as_str(), txcsum), ("321", false));
    let ports = netns::in_netns(&lab.paths[0].netns, || {
        synlab::sys::sysctl::read("net/ipv4/ip_local_port_range").unwrap()
    })
    .unwrap();
    assert_eq!(ports, "1024 65535");
    assert_ne!(
        synlab::sys::sysctl::read("net/core/somaxconn").unwrap(),
        "321"
    );
    let run = lab.run_id.clone();
    let router = lab.router_pid().unwrap();
    assert_eq!(leftovers(&run).len(), 4, "{:?}", leftovers(&run));
    drop(lab);
    assert!(leftovers(&run).is_empty(), "{:?}", leftovers(&run));
    assert!(
        gone_within(router, Duration::from_secs(3)),
        "router still running"
    );
}

/// Run as a child by `sigkill_then_net_down_removes_everything`: builds a lab and waits.
#[test]
fn hold_lab_child() {
    let Ok(id) = std::env::var("SYNLAB_TEST_HOLD_LAB") else {
        return;
    };
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let spec = NetworkSpec {
        backend: BackendChoice::Router,
        paths: vec![path("x", 5)],
        ..Default::default()
    };
    let lab = Lab::up(&spec, &id).unwrap();
    println!("UP {}", lab.router_pid().unwrap());
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(20));
}

/// Starts `hold_lab_child` building lab `id` in a child process; returns it and the router pid.
fn hold_lab(id: &str) -> (std::process::Child, u32) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "hold_lab_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SYNLAB_TEST_HOLD_LAB", id)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    let mut so = child.stdout.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 256];
    while !out.contains("UP ") || !out[out.find("UP ").unwrap()..].contains('\n') {
        assert!(
            Instant::now() < deadline,
            "child never built its lab: {out}"
        );
        let n = so.read(&mut buf).unwrap();
        assert!(n > 0, "child exited: {out}");
        out.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let router: u32 = out[out.find("UP ").unwrap() + 3..]
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (child, router)
}

#[test]
fn sigkill_then_net_down_removes_everything() {
    if !privileged() {
        return;
    }
    // Serial: another test's Lab::up would remove the killed lab first (its owner is dead).
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let id = run_id();
    let (mut child, router) = hold_lab(&id);
    assert_eq!(leftovers(&id).len(), 3);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["net", "down", "--run-id", &id])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(String::from_utf8_lossy(&st.stdout).contains(&format!("synlab-{id}-srv")));
    assert!(leftovers(&id).is_empty(), "{:?}", leftovers(&id));
    // The router died with its parent (PDEATHSIG).
    assert!(
        gone_within(router, Duration::from_secs(3)),
        "router {router} survived"
    );
}

#[test]
fn the_next_lab_removes_a_crashed_labs_leftovers_and_says_so() {
    if !privileged() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let id = run_id();
    let (mut child, router) = hold_lab(&id);
    child.kill().unwrap(); // SIGKILL: its lab stays, its owner is gone
    child.wait().unwrap();
    assert_eq!(leftovers(&id).len(), 3, "the crashed lab is still there");
    let lab = up(vec![path("x", 0)]);
    let srv = format!("netns synlab-{id}-srv");
    assert!(
        lab.leftovers_removed.contains(&srv),
        "{:?}",
        lab.leftovers_removed
    );
    assert!(leftovers(&id).is_empty(), "{:?}", leftovers(&id));
    assert!(
        gone_within(router, Duration::from_secs(3)),
        "router {router} survived"
    );
    assert!(
        leftovers(&lab.run_id).len() >= 3,
        "the new lab itself is untouched"
    );
}
