//! Apache's scoreboard through mod_status (`/server-status?auto`): how many of its workers are
//! busy with a connection, polled twice a second from inside the server's namespace (over its
//! loopback, so neither the router nor the server port's capture sees the polls) for seed 000
//! Fig. 10's server processes. The config keeps these requests out of the access log, so the
//! server-vs-client check still counts the load alone; each poll is one short connection the
//! server closes (a TIME_WAIT socket for 60 s: ~120 in the namespace's count).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// mod_status's machine-readable page.
pub const STATUS_PATH: &str = "/server-status?auto";

/// How often the scoreboard is read.
pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// `BusyWorkers: N` of a `?auto` page (the response's body, or the whole response).
pub fn busy_workers(page: &str) -> Option<u64> {
    page.lines()
        .find_map(|l| l.trim().strip_prefix("BusyWorkers:"))
        .and_then(|v| v.trim().parse().ok())
}

/// One read of the scoreboard at `addr`.
fn read_busy(addr: SocketAddr) -> Option<u64> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    let req = format!("GET {STATUS_PATH} HTTP/1.0\r\nHost: synlab-status\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut page = String::new();
    s.read_to_string(&mut page).ok()?;
    busy_workers(&page)
}

/// A thread reading the scoreboard until stopped (or dropped).
pub struct StatusPoller {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl StatusPoller {
    /// Polls `addr` every `POLL_EVERY` from inside `netns` (None: this namespace), handing
    /// each busy count to `on`. A poll that fails (the server restarting, no mod_status) is
    /// skipped: the column has a gap there.
    pub fn spawn(
        addr: SocketAddr,
        netns: Option<String>,
        on: impl Fn(u64) + Send + 'static,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("apache-status".into())
            .spawn(move || {
                if let Some(ns) = &netns {
                    if crate::sys::netns::enter(ns).is_err() {
                        return;
                    }
                }
                while !flag.load(Ordering::Relaxed) {
                    if let Some(n) = read_busy(addr) {
                        on(n);
                    }
                    std::thread::sleep(POLL_EVERY);
                }
            })
            .ok();
        StatusPoller { stop, handle }
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for StatusPoller {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn busy_workers_is_read_from_the_auto_page() {
        let page = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nServerVersion: Apache/2.4\n\
                    Total Accesses: 10\nBusyWorkers: 17\nIdleWorkers: 133\nScoreboard: __W_\n";
        assert_eq!(super::busy_workers(page), Some(17));
        assert_eq!(super::busy_workers("no status here"), None);
    }
}
