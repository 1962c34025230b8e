//! The kernel's own drop reasons (issue 48 item 2) on the real kernel, as root: skb:kfree_skb
//! counted per reason against the namespace's counters and the SYN arithmetic while a
//! listener with backlog 16 is flooded in a private netns; their cost per drop; as a plain
//! user, the view that says why not.

mod probe_support;

use probe_support::{connect_nonblocking, privileged, Netns, RawListener};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};
use synlab::model::kreasons::{OverflowCheck, LISTEN_OVERFLOW};
use synlab::probe::kreasons::{plan, ReasonCounters};
use synlab::probe::procnet::NetCounters;
use synlab::sys::tracepoint::{read_tracepoint, TracepointCounter};

/// Keeps up to 64 attempts open, each closed after 200 ms (before the first SYN retry): one
/// SYN each.
fn blast(port: u16, for_: Duration) -> u64 {
    let to = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let end = Instant::now() + for_;
    let mut open: std::collections::VecDeque<(i32, Instant)> = Default::default();
    let mut attempts = 0;
    while Instant::now() < end {
        while open
            .front()
            .is_some_and(|(_, t)| t.elapsed() >= Duration::from_millis(200))
        {
            let (fd, _) = open.pop_front().unwrap();
            unsafe { libc::close(fd) };
        }
        if open.len() < 64 {
            if let Some(fd) = connect_nonblocking(to) {
                attempts += 1;
                open.push_back((fd, Instant::now()));
            }
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    for (fd, _) in open {
        unsafe { libc::close(fd) };
    }
    attempts
}

/// The namespace's counters and its sockets in SYN-RCVD (state 03 of /proc/net/tcp), read
/// by a thread inside it.
fn counters(ns: &Netns) -> (NetCounters, u64) {
    ns.run(|| {
        let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
        let tcp = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap();
        let syn_recv = tcp
            .lines()
            .skip(1)
            .filter(|l| l.split_whitespace().nth(3) == Some("03"))
            .count() as u64;
        (NetCounters::parse(&snmp, &netstat).unwrap(), syn_recv)
    })
}

/// The cross-check table of the issue: ListenOverflows (the drops view), the kernel's
/// TCP_LISTEN_OVERFLOW, and the SYN arithmetic (SYNs in - connections made - SYN-RCVD left).
/// On 6.18 the SYNs that meet a full accept queue count in ListenOverflows and are freed
/// without a drop reason: the kernel's count is the final ACKs only, and the check says so.
#[test]
fn listen_overflows_against_the_kernels_reason_and_the_syn_arithmetic() {
    if !privileged("kernel reasons test") {
        return;
    }
    let ns = Netns::new();
    let listener = ns.run(|| RawListener::new(16));
    let port = listener.port;
    let k = ReasonCounters::start(true).expect("root counts kfree_skb");
    eprintln!("{}", k.note);
    let (before, _) = counters(&ns);
    let k0 = k.read().count(LISTEN_OVERFLOW).unwrap();
    let blasters: Vec<_> = (0..2)
        .map(|_| ns.spawn(move || blast(port, Duration::from_secs(2))))
        .collect();
    let syns: u64 = blasters.into_iter().map(|b| b.join().unwrap()).sum();
    let (after, syn_recv_left) = counters(&ns);
    let k1 = k.read();
    let d = |key: &str| after.counter(key).unwrap() - before.counter(key).unwrap();
    let kernel = k1.count(LISTEN_OVERFLOW).unwrap() - k0;
    let check = OverflowCheck {
        counter: d("TcpExt.ListenOverflows"),
        kernel,
    };
    let made = d("Tcp.PassiveOpens");
    let arithmetic = syns as i64 - made as i64 - syn_recv_left as i64;
    eprintln!(
        "| ListenOverflows (drops view) | TCP_LISTEN_OVERFLOW (kernel) | SYNs in - made - SYN-RCVD left |\n\
         | {} | {} | {syns} - {made} - {syn_recv_left} = {arithmetic} |\n{check}",
        check.counter, check.kernel
    );
    assert!(syns > 500, "only {syns} SYNs: the blast did not run");
    assert!(check.consistent(), "{check}");
    // Every SYN either made a connection, waits in SYN-RCVD, or overflowed.
    assert!(
        (arithmetic - check.counter as i64).unsigned_abs() <= 2 + check.counter / 100,
        "SYN arithmetic {arithmetic} vs ListenOverflows {}",
        check.counter
    );
    // The listener never accepts: past its 17 entries, every SYN met a full queue (freed
    // without a reason), the final ACKs of the 17 did not.
    assert_eq!(check.syns() + check.kernel, check.counter);
    assert!(check.syns() > 0, "{check}");
    drop(listener);
}

/// UDP datagrams to a port without a socket: the kernel drops each with NO_SOCKET, and the
/// counters see at least that many (machine-wide: others' drops may add).
#[test]
fn the_counters_count_what_the_kernel_drops_by_its_reason() {
    if !privileged("kernel reasons test") {
        return;
    }
    let ns = Netns::new();
    let k = ReasonCounters::start(true).expect("root counts kfree_skb");
    let before = k.read();
    let sent = ns.run(|| {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        // A port nothing listens on: bind one and close it.
        let port = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        (0..300)
            .filter(|_| s.send_to(b"x", ("127.0.0.1", port)).is_ok())
            .count() as u64
    });
    let after = k.read();
    let no_socket = after.count("NO_SOCKET").unwrap() - before.count("NO_SOCKET").unwrap();
    eprintln!("sent {sent}, NO_SOCKET +{no_socket}");
    assert!(sent >= 250, "only {sent} datagrams went out");
    assert!(no_socket >= sent, "{sent} sent, NO_SOCKET +{no_socket}");
    let all = |r: &synlab::model::kreasons::KernelReasons| match r {
        synlab::model::kreasons::KernelReasons::Counted { all, .. } => *all,
        _ => unreachable!(),
    };
    assert!(all(&after) - all(&before) >= no_socket);
}

/// This thread's CPU time, ns (the loopback receive path, drops included, runs in the
/// sender's context: IRQ time accounting is off on this kernel, so it counts here).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU ns per datagram sent to a port without a socket (each a NO_SOCKET kfree_skb), best
/// of `trials`.
fn ns_per_drop(ns: &Netns, n: u32, trials: u32) -> f64 {
    ns.run(move || {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        (0..trials)
            .map(|_| {
                let t0 = thread_cpu_ns();
                for _ in 0..n {
                    let _ = s.send_to(b"x", ("127.0.0.1", port));
                }
                (thread_cpu_ns() - t0) as f64 / n as f64
            })
            .fold(f64::INFINITY, f64::min)
    })
}

/// The counters of one shape of the cost benchmark: `all` (one event, no filter), `overflow`
/// (all + TCP_LISTEN_OVERFLOW's filter, what the opt-in counting opens), `full` (all + a filter
/// per reason of `OF_INTEREST`, the earlier default).
fn open_shape(shape: &str) -> Box<dyn std::any::Any> {
    let (tp, _) = read_tracepoint("skb", "kfree_skb").expect("tracefs");
    let cpus = synlab::sys::machine::online_cpus();
    let plan = plan(&tp.format).unwrap();
    let filters: Vec<Option<String>> = match shape {
        "all" => vec![None],
        "overflow" => vec![None, Some(plan[0].1.clone())],
        "full" => std::iter::once(None)
            .chain(plan.iter().map(|(_, f)| Some(f.clone())))
            .collect(),
        "started" => {
            // What the probe opens: ReasonCounters::start, whatever its plan is now.
            let k = ReasonCounters::start(true).expect("root counts kfree_skb");
            eprintln!("  started: {}", k.note);
            return Box::new(k);
        }
        other => panic!("unknown shape {other:?}: all, overflow, full, started"),
    };
    Box::new(
        filters
            .iter()
            .map(|f| TracepointCounter::open(tp.id, f.as_deref(), &cpus).unwrap())
            .collect::<Vec<_>>(),
    )
}

/// The cost of the reason counters: CPU per drop (a UDP datagram to a port without a
/// socket: one NO_SOCKET kfree_skb each) without and with the counters of each shape,
/// alternated in the same run, best of each, as a ratio and as a share of a core at 100k
/// drops/s. A measurement, not a gate (timing on a shared machine): bench/kreasons-cost.sh,
/// shapes in SYNLAB_BENCH_SHAPES (default `all overflow full`).
#[test]
#[ignore = "benchmark: run bench/kreasons-cost.sh"]
fn cost_of_the_reason_counters_per_drop() {
    if !privileged("kernel reasons cost") {
        return;
    }
    let ns = Netns::new();
    let shapes = std::env::var("SYNLAB_BENCH_SHAPES").unwrap_or("all overflow full".into());
    let (n, trials) = (50_000, 5);
    for shape in shapes.split_whitespace() {
        let (mut off, mut on) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            off = off.min(ns_per_drop(&ns, n, trials));
            let counters = open_shape(shape);
            on = on.min(ns_per_drop(&ns, n, trials));
            drop(counters);
        }
        let extra = (on - off).max(0.0);
        println!(
            "{shape:>9}: {off:.0} ns/drop without, {on:.0} ns/drop with: ratio {:.3}, +{extra:.0} ns \
             = {:.2} % of a core at 100k drops/s",
            on / off,
            extra * 100_000.0 / 1e9 * 100.0
        );
    }
}

/// As a plain user: `synlab probe --json --kernel-reasons` says the kernel's reasons are not counted and why
/// (machine-wide group), while the drops group reads the namespace's counters.
#[test]
fn a_plain_user_is_told_why_the_kernels_reasons_are_not_counted() {
    let name = std::env::var("SYNLAB_TEST_USER").unwrap_or_else(|_| "nobody".into());
    if !nix::unistd::geteuid().is_root() {
        let why = "needs root, to run synlab as a plain user";
        if synlab::sys::privilege::require_privileged() {
            panic!("{why}");
        }
        synlab::sys::privilege::say_skipped(&format!("skipped: {why}"));
        return;
    }
    let Some(u) = nix::unistd::User::from_name(&name).ok().flatten() else {
        return;
    };
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_synlab"), dir.path().join("synlab")).unwrap();
    let listener = RawListener::new(16);
    let out = std::process::Command::new("setpriv")
        .args([
            format!("--reuid={}", u.uid),
            format!("--regid={}", u.gid),
            "--clear-groups".into(),
        ])
        .arg(dir.path().join("synlab"))
        .args([
            "probe",
            "--json",
            "--kernel-reasons",
            "--count",
            "2",
            "--port",
        ])
        .arg(listener.port.to_string())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let s: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        s["machine"]["kernel_drop_reasons"]["reasons"]["NotCounted"], "NotRoot",
        "{s}"
    );
    assert!(s["netns"]["drops"]["accept_queue_full"].is_number(), "{s}");
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(first["notes"].to_string().contains("plain user"), "{first}");
    drop(listener);
}
