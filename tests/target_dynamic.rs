//! The built-in server's dynamic endpoints (seed 003) over real loopback sockets: /cgi forks
//! and execs a child per request (a new pid each time, reaped afterwards), /inproc runs in the
//! server, /db queries the embedded SQLite database with a cost that grows with rows, the
//! event loop keeps serving while a CGI child runs, and the server counts each kind.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use synlab::target::{Arch, FileSet, ServeConfig, Server, ServiceKind};

fn server(arch: Arch) -> Server {
    // The synlab binary runs the prefork manager and the CGI children (this test binary
    // cannot); nothing in this process ever forks without exec.
    Server::start_with_exe(
        ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            arch,
            workers: 2,
            max_workers: 8,
            backlog: 64,
            service_time_us: 0,
            service: ServiceKind::Cpu,
            files: vec![FileSet::Specweb96],
            keepalive: false,
            stats_interval_ms: 0,
            accept_batch: 1,
            lingering_close: true,
            linger_timeout_ms: 2000,
            http3: None,
            tls: None,
            max_streams: 128,
        },
        std::path::Path::new(env!("CARGO_BIN_EXE_synlab")),
    )
    .expect("server starts")
}

struct Resp {
    status: u16,
    head: String,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .map(str::trim)
    }
}

/// Sends `GET path` with HTTP/1.0 and reads the response until the server closes.
fn get(addr: SocketAddr, path: &str) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a full head");
    Resp {
        status: head[9..12].parse().unwrap(),
        head: head.to_string(),
        body: body.to_string(),
    }
}

#[test]
fn every_endpoint_answers_200_with_a_body_and_is_counted_in_every_arch() {
    for arch in [Arch::Event, Arch::Prefork, Arch::Threaded] {
        let srv = server(arch);
        let a = srv.local_addr();
        for (path, want) in [
            ("/cgi/0", "<h1>cgi</h1>"),
            ("/cgi/2000", "2000 us of CPU"),
            ("/inproc/1000", "<h1>inproc</h1>"),
            ("/db/150", "sales over 150 items"),
        ] {
            let r = get(a, path);
            assert_eq!(r.status, 200, "{arch:?} {path}: {}", r.body);
            assert!(r.body.contains(want), "{arch:?} {path}: {}", r.body);
            assert_eq!(
                r.header("Content-Length")
                    .unwrap()
                    .parse::<usize>()
                    .unwrap(),
                r.body.len()
            );
        }
        assert_eq!(get(a, "/db/20001").status, 404);
        assert_eq!(get(a, "/cgi/abc").status, 404);
        let st = srv.stop().unwrap();
        assert_eq!(
            (st.dyn_cgi, st.dyn_inproc, st.dyn_db, st.dyn_errors),
            (2, 1, 1, 0),
            "{arch:?}: {st:?}"
        );
        assert_eq!(st.responses, 6, "{arch:?}");
    }
}

#[test]
fn cgi_forks_a_new_reaped_process_per_request() {
    for arch in [Arch::Event, Arch::Prefork] {
        let srv = server(arch);
        let me = std::process::id();
        let mut pids = Vec::new();
        for _ in 0..5 {
            let r = get(srv.local_addr(), "/cgi/0");
            let pid: u32 = r
                .header("X-Synlab-Pid")
                .expect("pid header")
                .parse()
                .unwrap();
            assert!(r.body.contains(&format!("pid {pid},")), "{}", r.body);
            assert_ne!(pid, me, "the CGI ran inside the server");
            assert!(!srv.worker_pids().contains(&pid));
            pids.push(pid);
        }
        let mut uniq = pids.clone();
        uniq.sort_unstable();
        uniq.dedup();
        assert_eq!(uniq.len(), 5, "{arch:?}: one process per request: {pids:?}");
        // The server waited for each child: none is left, not even as a zombie.
        for p in &pids {
            assert!(
                !std::path::Path::new(&format!("/proc/{p}")).exists(),
                "{arch:?}: cgi child {p} was not reaped"
            );
        }
        // /inproc runs in the server: no pid header.
        assert!(get(srv.local_addr(), "/inproc/0")
            .header("X-Synlab-Pid")
            .is_none());
        srv.stop().unwrap();
    }
}

fn median_ms(addr: SocketAddr, path: &str, n: usize) -> f64 {
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            assert_eq!(get(addr, path).status, 200);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[n / 2]
}

#[test]
fn db_cost_grows_with_rows() {
    let srv = server(Arch::Event);
    let a = srv.local_addr();
    get(a, "/db/100"); // opens the connection
    let small = median_ms(a, "/db/100", 15);
    let large = median_ms(a, "/db/20000", 15);
    eprintln!("db median latency: 100 rows {small:.3} ms, 20000 rows {large:.3} ms");
    // 200x the rows: a generous 3x bound holds on a loaded machine.
    assert!(
        large > 3.0 * small,
        "20000 rows took {large:.3} ms, 100 rows {small:.3} ms"
    );
    srv.stop().unwrap();
}

#[test]
fn the_event_loop_serves_others_while_a_cgi_child_runs() {
    let srv = server(Arch::Event);
    let a = srv.local_addr();
    // A CGI child burning 400 ms of CPU.
    let slow = std::thread::spawn(move || {
        let t = Instant::now();
        let r = get(a, "/cgi/400000");
        (r.status, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    for _ in 0..5 {
        assert_eq!(get(a, "/specweb96/class0_1").status, 200);
    }
    let fast = t.elapsed();
    let (status, slow_took) = slow.join().unwrap();
    assert_eq!(status, 200);
    assert!(
        fast < slow_took,
        "static requests waited for the CGI: {fast:?} vs the CGI's {slow_took:?}"
    );
    let st = srv.stop().unwrap();
    assert_eq!((st.dyn_cgi, st.responses), (1, 6));
}
