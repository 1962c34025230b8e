//! The blocking architectures: `prefork` (processes blocking in accept on the shared listener,
//! like Apache prefork) and `threaded` (threads doing the same). Both start `workers` and a
//! manager adds one more whenever all are busy, up to `max_workers` (Apache spawns while idle
//! servers run out; here "out" means zero idle).

use super::core::{self, Counters, Ctx};
use crate::sys::server_io;
use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the manager looks at the busy count (and reaps dead children).
const MANAGE_EVERY: Duration = Duration::from_millis(5);

/// One worker's life: accept, serve, repeat, until `stop()` or the listener is shut down.
fn worker_loop(listener: &TcpListener, ctx: &Ctx, counters: &Counters, stop: &dyn Fn() -> bool) {
    while !stop() {
        match listener.accept() {
            Ok((s, _)) => {
                counters.accepted.fetch_add(1, Relaxed);
                counters.open_conns.fetch_add(1, Relaxed);
                counters.busy.fetch_add(1, Relaxed);
                core::serve_blocking(s, ctx, counters, stop);
                counters.busy.fetch_sub(1, Relaxed);
                counters.open_conns.fetch_sub(1, Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return, // listener shut down
            Err(_) => {}
        }
    }
}

/// Whether the manager should add a worker now.
pub fn should_grow(workers: u64, busy: u64, max_workers: u64) -> bool {
    workers < max_workers && busy >= workers
}

/// Prefork: the pids of the live worker processes are kept here for stats and tests.
pub type Pids = Arc<Mutex<Vec<i32>>>;

/// Runs the prefork parent until `stop()`; children are SIGKILLed and reaped on the way out.
pub fn run_prefork(
    listener: &TcpListener,
    ctx: &Ctx,
    counters: &Counters,
    stop: &dyn Fn() -> bool,
    pids: &Pids,
) -> io::Result<()> {
    listener.set_nonblocking(false)?;
    let max = ctx.cfg.max_workers.max(ctx.cfg.workers).max(1) as u64;
    let spawn = |pids: &Pids| -> io::Result<()> {
        // The child blocks in accept forever; the parent kills it at stop (PDEATHSIG if the
        // parent dies first).
        let pid = server_io::fork_worker(listener.as_raw_fd(), || {
            worker_loop(listener, ctx, counters, &|| false)
        })?;
        pids.lock().unwrap().push(pid);
        counters.workers.fetch_add(1, Relaxed);
        Ok(())
    };
    let result = (|| {
        for _ in 0..ctx.cfg.workers.max(1) {
            spawn(pids)?;
        }
        while !stop() {
            std::thread::sleep(MANAGE_EVERY);
            // A dead child (crash, OOM kill) leaves the pool; its busy slot dies with it.
            let dead: Vec<i32> = pids
                .lock()
                .unwrap()
                .iter()
                .copied()
                .filter(|&p| server_io::try_reap(p))
                .collect();
            if !dead.is_empty() {
                pids.lock().unwrap().retain(|p| !dead.contains(p));
                counters.workers.fetch_sub(dead.len() as u64, Relaxed);
            }
            let w = counters.workers.load(Relaxed);
            if should_grow(w, counters.busy.load(Relaxed), max) || w == 0 {
                spawn(pids)?;
            }
        }
        Ok(())
    })();
    let all: Vec<i32> = std::mem::take(&mut *pids.lock().unwrap());
    for &p in &all {
        server_io::kill_pid(p, libc::SIGKILL);
    }
    for &p in &all {
        server_io::wait_pid(p);
    }
    counters.workers.store(0, Relaxed);
    result
}

/// Runs the threaded server until `stop()`; then shuts the listener down so threads blocked
/// in accept return, and joins them (a thread in a keep-alive read notices within 500 ms).
pub fn run_threaded(
    listener: &TcpListener,
    ctx: &Arc<Ctx>,
    counters: &Arc<server_io::SharedMem<Counters>>,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    listener.set_nonblocking(false)?;
    let max = ctx.cfg.max_workers.max(ctx.cfg.workers).max(1) as u64;
    let done = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let spawn = |handles: &mut Vec<std::thread::JoinHandle<()>>| -> io::Result<()> {
        let l = listener.try_clone()?;
        let (ctx, c, done) = (ctx.clone(), counters.clone(), done.clone());
        let n = handles.len();
        counters.workers.fetch_add(1, Relaxed);
        let h = std::thread::Builder::new()
            .name(format!("serve-{n}"))
            .spawn(move || {
                worker_loop(&l, &ctx, &c, &|| done.load(Relaxed));
                c.workers.fetch_sub(1, Relaxed);
            });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                counters.workers.fetch_sub(1, Relaxed);
                return Err(e);
            }
        }
        Ok(())
    };
    let result = (|| {
        for _ in 0..ctx.cfg.workers.max(1) {
            spawn(&mut handles)?;
        }
        while !stop() {
            std::thread::sleep(MANAGE_EVERY);
            if should_grow(
                counters.workers.load(Relaxed),
                counters.busy.load(Relaxed),
                max,
            ) {
                spawn(&mut handles)?;
            }
        }
        Ok(())
    })();
    done.store(true, Relaxed);
    server_io::shutdown_listener(listener.as_raw_fd());
    for h in handles {
        let _ = h.join();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::should_grow;

    #[test]
    fn grows_only_when_all_busy_and_below_max() {
        assert!(should_grow(4, 4, 64));
        assert!(!should_grow(4, 3, 64));
        assert!(!should_grow(64, 64, 64));
    }
}
