//! Lingering close and the hard process cap of the built-in blocking servers over real loopback
//! sockets: after its response a connection keeps its worker busy until the client closes
//! (Apache's lingering close), so with `max_workers = 1` a second connection waits in the
//! accept queue until then; with lingering off, or once the linger timeout passes, it does not.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use synlab::target::{Arch, FileSet, ServeConfig, Server, ServiceKind};

fn start(arch: Arch, lingering_close: bool, linger_timeout_ms: u64) -> Server {
    let cfg = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        arch,
        workers: 1,
        max_workers: 1,
        backlog: 16,
        service_time_us: 0,
        service: ServiceKind::Cpu,
        files: vec![FileSet::Explicit { sizes: vec![1294] }],
        keepalive: false,
        stats_interval_ms: 0,
        accept_batch: 1,
        lingering_close,
        linger_timeout_ms,
        tls: None,
        max_streams: 128,
        http3: None,
    };
    Server::start_with_exe(cfg, std::path::Path::new(env!("CARGO_BIN_EXE_synlab")))
        .expect("server starts")
}

/// Sends a request and reads until the server's FIN; the socket stays open (not closed by us).
fn request_and_read_to_fin(addr: SocketAddr) -> (TcpStream, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /file/1294 HTTP/1.0\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .expect("the response and the server's FIN");
    (s, raw)
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn assert_ok(raw: &[u8]) {
    assert!(
        raw.starts_with(b"HTTP/1.0 200"),
        "{:?}",
        String::from_utf8_lossy(raw)
    );
    assert!(raw.len() > 1294, "full body: {} bytes", raw.len());
}

#[test]
fn a_lingering_connection_holds_the_only_worker_until_the_client_closes() {
    for arch in [Arch::Prefork, Arch::Threaded] {
        // 30 s: the longest linger, so only the client's FIN can end it within this test.
        let srv = start(arch, true, 30_000);
        let addr = srv.local_addr();
        let (a, raw) = request_and_read_to_fin(addr);
        assert_ok(&raw);
        // A has its whole response and the server's FIN, yet its worker is still busy.
        let st = srv.stats();
        assert_eq!(
            (st.responses, st.busy, st.workers),
            (1, 1, 1),
            "{arch:?}: {st:?}"
        );

        // B's handshake completes in the kernel; the capped pool does not grow to accept it.
        let mut b = TcpStream::connect(addr).expect("connect B");
        b.write_all(b"GET /file/1294 HTTP/1.0\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let st = srv.stats();
        assert_eq!(
            (st.accepted, st.busy, st.workers),
            (1, 1, 1),
            "{arch:?}: {st:?}"
        );
        if arch == Arch::Prefork {
            assert_eq!(srv.worker_pids().len(), 1, "the cap is hard");
        }
        b.set_nonblocking(true).unwrap();
        let e = b
            .read(&mut [0u8; 64])
            .expect_err("B must not be answered yet");
        assert_eq!(e.kind(), ErrorKind::WouldBlock, "{arch:?}");
        b.set_nonblocking(false).unwrap();

        // A closes: its worker sees the FIN, ends the linger and takes B from the accept queue.
        drop(a);
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut raw = Vec::new();
        b.read_to_end(&mut raw).expect("B answered once A closed");
        assert_ok(&raw);
        drop(b);
        wait_for("both connections done", || {
            let s = srv.stats();
            s.responses == 2 && s.busy == 0
        });
        let st = srv.stop().unwrap();
        assert_eq!(st.accepted, 2, "{arch:?}");
    }
}

#[test]
fn without_lingering_the_worker_is_free_as_soon_as_the_response_is_out() {
    for arch in [Arch::Prefork, Arch::Threaded] {
        // A 30 s linger timeout: were the worker lingering, it would stay busy past this test.
        let srv = start(arch, false, 30_000);
        let addr = srv.local_addr();
        let (a, raw) = request_and_read_to_fin(addr);
        assert_ok(&raw);
        wait_for("the worker to be free", || srv.stats().busy == 0);
        // A is still open, and B is served at once by the same single worker.
        let (b, raw) = request_and_read_to_fin(addr);
        assert_ok(&raw);
        let st = srv.stats();
        assert_eq!(
            (st.accepted, st.responses, st.workers),
            (2, 2, 1),
            "{arch:?}"
        );
        drop((a, b));
        srv.stop().unwrap();
    }
}

#[test]
fn a_client_that_never_closes_is_let_go_after_the_linger_timeout() {
    let srv = start(Arch::Prefork, true, 200);
    let addr = srv.local_addr();
    let t0 = Instant::now();
    let (a, raw) = request_and_read_to_fin(addr);
    assert_ok(&raw);
    // A never closes; after 200 ms of silence the worker gives up on it and serves B.
    let (b, raw) = request_and_read_to_fin(addr);
    assert_ok(&raw);
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "B was served before the linger timeout: {:?}",
        t0.elapsed()
    );
    wait_for("the worker to be free", || srv.stats().busy == 0);
    drop((a, b));
    srv.stop().unwrap();
}

#[test]
fn a_client_that_keeps_sending_only_extends_the_linger_while_it_sends() {
    // Bytes sent after the response are read and dropped; each restarts the idle wait, and
    // the client's FIN still ends it at once.
    let srv = start(Arch::Prefork, true, 30_000);
    let addr = srv.local_addr();
    let (mut a, raw) = request_and_read_to_fin(addr);
    assert_ok(&raw);
    for _ in 0..3 {
        a.write_all(b"trailing junk the server must drain\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(srv.stats().busy, 1);
    }
    a.shutdown(std::net::Shutdown::Write).unwrap();
    wait_for("the FIN to end the linger", || srv.stats().busy == 0);
    drop(a);
    srv.stop().unwrap();
}

#[test]
fn a_worker_killed_while_holding_a_connection_frees_its_place_in_the_counts() {
    let srv = start(Arch::Prefork, true, 30_000);
    let addr = srv.local_addr();
    let (a, raw) = request_and_read_to_fin(addr);
    assert_ok(&raw);
    let st = srv.stats();
    assert_eq!((st.busy, st.open_conns), (1, 1), "{st:?}");
    let pids = srv.worker_pids();
    assert_eq!(pids.len(), 1);
    // SAFETY: kill on the worker this test's server started.
    unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    // The manager reaps it, takes its connection off the counts and forks a replacement
    // (the cap is 1, so the replacement is the only worker).
    wait_for(
        "a replacement worker and counts without the dead one's connection",
        || {
            let s = srv.stats();
            let now = srv.worker_pids();
            (s.workers, s.busy, s.open_conns) == (1, 0, 0) && now.len() == 1 && now[0] != pids[0]
        },
    );
    let (b, raw) = request_and_read_to_fin(addr);
    assert_ok(&raw);
    drop((a, b));
    srv.stop().unwrap();
}

#[test]
fn scenario_keys_default_to_apache_and_bad_values_name_the_key() {
    let s = synlab::scenario::parse("a.toml", "[target]\narch = \"prefork\"\n").unwrap();
    assert_eq!(
        (
            s.target.max_workers,
            s.target.lingering_close,
            s.target.linger_timeout.0
        ),
        (150, true, Duration::from_secs(2)),
        "Apache's MaxRequestWorkers as shipped, lingering close, SECONDS_TO_LINGER"
    );
    let s = synlab::scenario::parse(
        "b.toml",
        "[target]\narch = \"prefork\"\nmax_workers = 150\nlingering_close = false\n",
    )
    .unwrap();
    assert!(!s.target.lingering_close);
    let err = |toml: &str| format!("{:#}", synlab::scenario::parse("c.toml", toml).unwrap_err());
    let e = err("[target]\nlinger_timeout = \"45s\"\n");
    assert!(
        e.contains("target.linger_timeout") && e.contains("30s"),
        "{e}"
    );
    let e = err("[target]\nlinger_timeout = \"0s\"\n");
    assert!(e.contains("target.linger_timeout"), "{e}");
    let e = err("[target]\nmax_workers = 20000\n");
    assert!(
        e.contains("target.max_workers") && e.contains("10000"),
        "{e}"
    );
    let e = err("[target]\nkind = \"command\"\ncommand = \"nginx\"\nlingering_close = false\n");
    assert!(
        e.contains("target.lingering_close") && e.contains("built-in"),
        "{e}"
    );
}

#[test]
fn serve_flags_turn_lingering_off_and_refuse_a_bad_timeout() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_synlab"))
            .arg("serve")
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--arch", "prefork", "--linger-timeout", "45s"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("linger_timeout") && e.contains("30 s"), "{e}");
    let o = run(&[
        "--arch",
        "prefork",
        "--workers",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--lingering-close",
        "false",
        "--duration",
        "100ms",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(e.contains("lingering close off"), "{e}");
}
