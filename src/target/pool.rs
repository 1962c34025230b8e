//! The blocking architectures: `prefork` (processes blocking in accept on the shared listener,
//! like Apache prefork) and `threaded` (threads doing the same). Both start `workers` and add
//! one more whenever all are busy, up to `max_workers` and never beyond (Apache spawns while
//! idle servers run out; here "out" means zero idle): past the cap, connections wait in the
//! kernel's accept queue.
//!
//! Prefork's processes are forked by a manager process that the server starts by exec (`synlab
//! prefork-manager`), never by the server itself: a fork copies only the forking thread, and a
//! child forked while another thread of a multithreaded server (or test harness) held a lock
//! (SQLite's, the allocator's, the environment's) deadlocks on it. The manager is
//! single-threaded from exec to exit, inherits the listener and the shared counters (a memfd),
//! publishes its workers' pids there, and dies with the server (PR_SET_PDEATHSIG), its workers
//! with it.

use super::config::ServeConfig;
use super::core::{self, Counters, Ctx, Shared};
use crate::sys::server_io::{self, SharedMem};
use crate::sys::{errno_of, Errno, Signal};
use anyhow::Context;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the manager looks at the busy count (and reaps dead children).
const MANAGE_EVERY: Duration = Duration::from_millis(5);
/// How long a stopping server waits for its manager to kill and reap its workers before it
/// SIGKILLs the manager (the workers then die by PR_SET_PDEATHSIG).
const MANAGER_STOP_GRACE: Duration = Duration::from_secs(5);

/// One worker's life: accept, serve, repeat, until `stop()` or the listener is shut down.
/// `flag` (prefork) is set while a connection is held, after the counts go up and before they
/// go down, so a worker killed in between is never taken off twice.
fn worker_loop(
    listener: &TcpListener,
    ctx: &Ctx,
    counters: &Counters,
    flag: Option<&AtomicU8>,
    stop: &dyn Fn() -> bool,
) {
    while !stop() {
        match listener.accept() {
            Ok((s, _)) => {
                counters.accepted.fetch_add(1, Relaxed);
                counters.record_accept_wait(&s);
                counters.open_conns.fetch_add(1, Relaxed);
                counters.busy.fetch_add(1, Relaxed);
                flag.inspect(|f| f.store(1, Relaxed));
                core::serve_blocking(s, ctx, counters, stop);
                flag.inspect(|f| f.store(0, Relaxed));
                counters.busy.fetch_sub(1, Relaxed);
                counters.open_conns.fetch_sub(1, Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(errno_of(&e), Some(Errno::EMFILE | Errno::ENFILE)) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if errno_of(&e) == Some(Errno::EINVAL) => return, // listener shut down
            Err(_) => {}
        }
    }
}

/// Whether the manager should add a worker now: all are busy and the cap is not reached.
pub fn should_grow(workers: u64, busy: u64, max_workers: u64) -> bool {
    workers < max_workers && busy >= workers
}

/// The server's side of prefork: starts the manager (`exe prefork-manager`) with the listener
/// and the shared mapping's memfd, watches it until `stop()`, then has it stop its workers.
/// The listener and memfd are closed here once the manager holds them.
pub fn run_prefork(
    listener: TcpListener,
    shm: OwnedFd,
    cfg: &ServeConfig,
    exe: &Path,
    db: Option<&Path>,
    shared: &Shared,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<()> {
    listener.set_nonblocking(false)?;
    let (lfd, sfd) = (listener.as_raw_fd(), shm.as_raw_fd());
    let mut cmd = Command::new(exe);
    cmd.arg("prefork-manager")
        .arg("--config-json")
        .arg(serde_json::to_string(cfg)?)
        .args([
            "--listen-fd",
            &lfd.to_string(),
            "--shm-fd",
            &sfd.to_string(),
        ])
        .args(["--parent", &std::process::id().to_string()])
        // The server's calibrated work: its workers run on the same CPUs.
        .args(["--ns-per-iter", &super::work::speed().to_string()])
        // Our stdout may be the lab's stats channel: the manager never writes there.
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if let Some(db) = db {
        cmd.arg("--db").arg(db);
    }
    server_io::pass_fds(&mut cmd, [lfd, sfd]);
    let mut manager = cmd.spawn().with_context(|| {
        format!(
            "cannot start the prefork manager `{} prefork-manager`",
            exe.display()
        )
    })?;
    drop(listener);
    drop(shm);
    let result = loop {
        if stop() {
            break Ok(());
        }
        if let Some(status) = manager.try_wait()? {
            break Err(anyhow::anyhow!(
                "the prefork manager `{} prefork-manager` (pid {}) exited ({status}); prefork \
                 runs its processes from the synlab executable: inside another program (a test), \
                 point SYNLAB_EXE or Server::start_with_exe at the synlab binary",
                exe.display(),
                manager.id()
            ));
        }
        std::thread::sleep(MANAGE_EVERY);
    };
    shared.stop.store(1, Relaxed);
    let deadline = Instant::now() + MANAGER_STOP_GRACE;
    while manager.try_wait()?.is_none() {
        if Instant::now() >= deadline {
            // Our own child, by its pid; its workers follow it by PR_SET_PDEATHSIG.
            let _ = manager.kill();
            let _ = manager.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    shared.counters.workers.store(0, Relaxed);
    shared.counters.busy.store(0, Relaxed);
    result
}

/// Arguments of `synlab prefork-manager` (set by [`run_prefork`]).
#[derive(Debug, clap::Args)]
pub struct ManagerArgs {
    #[arg(long)]
    pub config_json: String,
    /// The inherited listening socket.
    #[arg(long)]
    pub listen_fd: RawFd,
    /// The inherited memfd of the server's [`Shared`] mapping.
    #[arg(long)]
    pub shm_fd: RawFd,
    /// The server's pid: the manager exits when it is no longer its parent.
    #[arg(long)]
    pub parent: i32,
    /// The /db endpoint's SQLite file (each worker opens its own connection).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// The server's calibrated speed of the CPU work, ns per iteration (0: calibrate here).
    #[arg(long, default_value_t = 0.0)]
    pub ns_per_iter: f64,
}

/// `synlab prefork-manager`: forks and supervises the prefork workers until the server sets
/// the stop flag or goes away. Single-threaded throughout, so every fork is safe.
pub fn manager_main(a: ManagerArgs) -> anyhow::Result<()> {
    server_io::ignore_sigint();
    if a.ns_per_iter > 0.0 {
        super::work::set_speed(a.ns_per_iter);
    }
    if server_io::parent_pid() != a.parent {
        return Ok(()); // the server died before we set PR_SET_PDEATHSIG in it
    }
    let cfg: ServeConfig = serde_json::from_str(&a.config_json).with_context(|| {
        format!(
            "--config-json is not a valid ServeConfig: {}",
            a.config_json
        )
    })?;
    let adopt = |fd| {
        server_io::adopt_fd(fd)
            .with_context(|| format!("fd {fd} was not inherited from the server"))
    };
    let (listener, shm) = (adopt(a.listen_fd)?, adopt(a.shm_fd)?);
    // The server made this memfd for a Shared; it is closed once mapped.
    let shared = SharedMem::<Shared>::from_fd(shm.as_fd()).context("mapping counters")?;
    drop(shm);
    let listener = TcpListener::from(listener);
    // Made once, before the workers are forked: they share its ticket keys (each has its
    // own copy of the session cache, as Apache's processes without a shared cache do).
    let tls = cfg
        .tls
        .as_ref()
        .map(crate::tls::server::config)
        .transpose()?;
    let ctx = Ctx {
        catalog: super::files::Catalog::new(&cfg.files),
        pattern: super::files::pattern_buf(),
        dynamic: super::dynamic::Dynamic {
            exe: crate::sys::process::self_exe(),
            db: a.db,
        },
        tls,
        cfg,
    };
    run_manager(&listener, &ctx, &shared, a.parent)?;
    Ok(())
}

/// The manager's loop: fork the initial workers, grow while all are busy up to the cap, drop
/// dead ones, and on the way out SIGKILL and reap them all.
fn run_manager(listener: &TcpListener, ctx: &Ctx, shared: &Shared, parent: i32) -> io::Result<()> {
    let counters = &shared.counters;
    let max = ctx.cfg.max_workers.max(ctx.cfg.workers).max(1) as u64;
    let mut pids: Vec<i32> = Vec::new();
    let spawn = |pids: &mut Vec<i32>| -> io::Result<()> {
        let slot = shared
            .pids
            .iter()
            .position(|p| p.load(Relaxed) == 0)
            .ok_or_else(|| io::Error::other("no free slot in the worker table"))?;
        let flag = &shared.busy[slot];
        flag.store(0, Relaxed);
        // The child blocks in accept until killed (PDEATHSIG if the manager dies first).
        let pid = server_io::fork_worker(listener.as_raw_fd(), || {
            worker_loop(listener, ctx, counters, Some(flag), &|| false)
        })?;
        shared.pids[slot].store(pid, Relaxed);
        pids.push(pid);
        counters.workers.fetch_add(1, Relaxed);
        Ok(())
    };
    // A worker gone: free its slot, and if it died holding a connection, that connection is
    // neither open nor keeping anyone busy any more.
    let forget = |pid: i32| {
        if let Some(i) = shared.pids.iter().position(|p| p.load(Relaxed) == pid) {
            if shared.busy[i].swap(0, Relaxed) == 1 {
                counters.busy.fetch_sub(1, Relaxed);
                counters.open_conns.fetch_sub(1, Relaxed);
            }
            shared.pids[i].store(0, Relaxed);
        }
    };
    let result = (|| {
        for _ in 0..ctx.cfg.workers.max(1) {
            spawn(&mut pids)?;
        }
        while shared.stop.load(Relaxed) == 0 && server_io::parent_pid() == parent {
            std::thread::sleep(MANAGE_EVERY);
            // A dead child (crash, OOM kill) leaves the pool.
            let before = pids.len();
            pids.retain(|&p| {
                let dead = server_io::try_reap(p);
                if dead {
                    forget(p);
                }
                !dead
            });
            counters
                .workers
                .fetch_sub((before - pids.len()) as u64, Relaxed);
            let w = counters.workers.load(Relaxed);
            if should_grow(w, counters.busy.load(Relaxed), max) || w == 0 {
                spawn(&mut pids)?;
            }
        }
        Ok(())
    })();
    for &p in &pids {
        server_io::kill_pid(p, Signal::SIGKILL);
    }
    for &p in &pids {
        server_io::wait_pid(p);
        forget(p);
    }
    counters.workers.store(0, Relaxed);
    result
}

/// Runs the threaded server until `stop()`; then shuts the listener down so threads blocked
/// in accept return, and joins them (a thread in a keep-alive read notices within 500 ms).
pub fn run_threaded(
    listener: &TcpListener,
    ctx: &Arc<Ctx>,
    shared: &Arc<SharedMem<Shared>>,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    let counters = &shared.counters;
    listener.set_nonblocking(false)?;
    let max = ctx.cfg.max_workers.max(ctx.cfg.workers).max(1) as u64;
    let done = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let spawn = |handles: &mut Vec<std::thread::JoinHandle<()>>| -> io::Result<()> {
        let l = listener.try_clone()?;
        let (ctx, sh, done) = (ctx.clone(), shared.clone(), done.clone());
        let n = handles.len();
        counters.workers.fetch_add(1, Relaxed);
        let h = std::thread::Builder::new()
            .name(format!("serve-{n}"))
            .spawn(move || {
                worker_loop(&l, &ctx, &sh.counters, None, &|| done.load(Relaxed));
                sh.counters.workers.fetch_sub(1, Relaxed);
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
        // The cap is hard: never past it, however busy.
        assert!(!should_grow(150, 150, 150));
        assert!(!should_grow(150, 400, 150));
    }
}
