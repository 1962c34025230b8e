//! nginx on a free loopback port with HTTP/2 in the clear (h2c), one process (no master), its
//! files in a folder of its own; killed by pid on drop.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

/// nginx serving `/f` (1294 bytes) and `/big` (300,000 bytes) over h2c, with `http` (more
/// directives for its `http` block, e.g. `http2_max_concurrent_streams 5;`). None (skipped
/// with a reason, or failed under SYNLAB_REQUIRE_PRIVILEGED=1) when nginx is not installed.
pub fn start(http: &str) -> Option<Nginx> {
    if Command::new("nginx").arg("-v").output().is_err() {
        synlab::sys::privilege::skip_unless_required(
            "nginx is not installed (Debian package nginx)",
        );
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(d.join("www")).unwrap();
    std::fs::write(d.join("www/f"), vec![b'x'; 1294]).unwrap();
    std::fs::write(d.join("www/big"), vec![b'y'; 300_000]).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = d.display();
    let conf = format!(
        "worker_processes 1;\ndaemon off;\nmaster_process off;\nerror_log {p}/error.log;\npid {p}/nginx.pid;\n\
         events {{ worker_connections 256; }}\nhttp {{\n access_log {p}/access.log;\n\
         client_body_temp_path {p}/tmp; proxy_temp_path {p}/tmp; fastcgi_temp_path {p}/tmp;\n\
         uwsgi_temp_path {p}/tmp; scgi_temp_path {p}/tmp;\n {http}\n\
         server {{ listen 127.0.0.1:{port} http2; root {p}/www; }}\n}}\n"
    );
    std::fs::write(d.join("nginx.conf"), conf).unwrap();
    let child = Command::new("nginx")
        .arg("-p")
        .arg(&d)
        .arg("-c")
        .arg(d.join("nginx.conf"))
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx runs");
    let n = Nginx {
        child,
        addr: format!("127.0.0.1:{port}").parse().unwrap(),
        dir,
    };
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(n.addr).is_err() {
        assert!(
            Instant::now() < until,
            "nginx did not listen: {}",
            n.read("error.log")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(n)
}

impl Nginx {
    /// A file of its folder ("" when missing).
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// Its access log once it has exited. nginx writes a request's line after the response's
    /// last bytes went to the socket, so a client may read them first; but it writes it in
    /// the same turn of its event loop and acts on a TERM only between turns: after it exits,
    /// every answered request has its line.
    pub fn log_after_stop(&mut self) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
        self.read("access.log")
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
