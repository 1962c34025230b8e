//! The built-in target server: event / prefork / threaded architectures, service time,
//! generated file set, HTTP/1.0 and 1.1 keep-alive, its own request counters.
//!
//! Library use: [`Server::start`] binds and serves on a background thread (prefork: that thread
//! starts the exec'd manager process that forks the workers, see [`pool`]); [`serve`] runs a server until told to stop while printing one
//! [`ServerStats`] JSON line per interval (what `synlab serve --config-json` does for the lab).

pub mod cli;
pub mod config;
pub mod core;
pub mod dynamic;
pub mod event;
pub mod files;
pub mod h2;
pub mod h3;
pub mod http;
pub mod linger;
pub mod pool;
pub mod work;

pub use config::{Arch, FileSet, ServeConfig, ServerStats, ServiceKind};
pub use files::{fileset_paths, specweb96_size, SPECWEB96_CLASS_WEIGHTS};

use crate::sys::server_io::{self, SharedMem};
use anyhow::Context;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most HTTP/2 streams per connection `max_streams` may allow.
pub const MAX_STREAMS: u32 = 65_536;

/// Checks a config before binding; messages name the field and what to change.
pub fn validate(cfg: &ServeConfig) -> anyhow::Result<()> {
    if cfg.backlog < 1 {
        anyhow::bail!(
            "backlog {} must be >= 1 (the kernel caps it at net.core.somaxconn)",
            cfg.backlog
        );
    }
    if cfg.arch != Arch::Event {
        if cfg.workers < 1 {
            anyhow::bail!(
                "workers {} must be >= 1 for arch {:?}",
                cfg.workers,
                cfg.arch
            );
        }
        if cfg.max_workers < cfg.workers {
            anyhow::bail!(
                "max_workers {} is below workers {}; set max_workers >= workers",
                cfg.max_workers,
                cfg.workers
            );
        }
        if cfg.max_workers as usize > core::MAX_WORKERS {
            anyhow::bail!(
                "max_workers {} is above {}; pick a smaller pool",
                cfg.max_workers,
                core::MAX_WORKERS
            );
        }
        if cfg.lingering_close
            && !(1..=linger::MAX_SECS_TO_LINGER.as_millis() as u64).contains(&cfg.linger_timeout_ms)
        {
            anyhow::bail!(
                "linger_timeout {} ms is out of range: use 1 ms to 30 s (Apache waits 2 s), or turn \
                 lingering_close off",
                cfg.linger_timeout_ms
            );
        }
    }
    if cfg.max_streams == 0 || cfg.max_streams > MAX_STREAMS {
        anyhow::bail!(
            "max_streams {} is out of range: use 1 to {MAX_STREAMS} (nginx's default is 128)",
            cfg.max_streams
        );
    }
    if cfg.service_time_us > 10_000_000 {
        anyhow::bail!(
            "service time {} us is above 10 s; use a smaller one",
            cfg.service_time_us
        );
    }
    for f in &cfg.files {
        files::validate(f)?;
    }
    if let Some(t) = &cfg.tls {
        crate::tls::server::config(t)?;
    }
    if let Some(h3) = &cfg.http3 {
        if cfg.arch != Arch::Event || cfg.tls.is_none() {
            anyhow::bail!(
                "HTTP/3 is served by the event arch over TLS: set arch event and the TLS \
                 certificate, or turn http3 off"
            );
        }
        if h3.early_data && !cfg.tls.as_ref().is_some_and(|t| t.session_cache) {
            anyhow::bail!(
                "0-RTT needs the TLS session cache (the server takes early data only on a \
                 resumption from its cache, never from a ticket): turn the cache on"
            );
        }
    }
    Ok(())
}

/// The server's TLS config; the event arch offers HTTP/2 by ALPN first (it speaks both).
fn tls_config(t: &crate::tls::ServerTls, arch: Arch) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let c = crate::tls::server::config(t)?;
    if arch != Arch::Event {
        return Ok(c);
    }
    let mut c = Arc::unwrap_or_clone(c);
    c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(c))
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    /// The listening socket (a second descriptor of it): `set_backlog` listens again on it.
    listener: std::net::TcpListener,
    /// How fast this server's CPU work runs, measured at its start.
    calibration: work::Calibration,
    shared: Arc<SharedMem<core::Shared>>,
    stop: Arc<AtomicBool>,
    runner: Option<JoinHandle<anyhow::Result<()>>>,
    started: Instant,
    /// The /db endpoint's SQLite file, removed after the workers stop.
    _db: Option<dynamic::DbFile>,
}

impl Server {
    /// Validates, binds (port 0 picks a free port) and starts serving in the background. Prefork
    /// runs its processes from our own executable, or `SYNLAB_EXE` (see [`Server::start_with_exe`]).
    pub fn start(cfg: ServeConfig) -> anyhow::Result<Server> {
        Server::start_with_exe(cfg, &crate::sys::process::self_exe())
    }

    /// As [`Server::start`], with `exe` the synlab binary that runs the prefork manager and the
    /// CGI children (a program embedding the library, such as a test, passes the synlab binary).
    pub fn start_with_exe(cfg: ServeConfig, exe: &Path) -> anyhow::Result<Server> {
        validate(&cfg)?;
        // Before anything runs here: the CPUs the server was started on are idle yet.
        let calibration = work::calibrate(cfg.service_time_us);
        work::set_speed(calibration.ns_per_iter);
        let listener = server_io::bind_listener(cfg.listen, cfg.backlog).with_context(|| {
            format!(
                "cannot listen on {}; pick a free address or port 0",
                cfg.listen
            )
        })?;
        let addr = listener.local_addr()?;
        // HTTP/3 on the same port, UDP (bound here so a taken port fails the start).
        let h3_sock = cfg.http3.as_ref().map(|o| h3::bind(addr, o)).transpose()?;
        let relisten = listener
            .try_clone()
            .context("a second descriptor of the listener")?;
        let (shared, shm_fd) =
            SharedMem::<core::Shared>::new_memfd().context("mapping the counters")?;
        let shared = Arc::new(shared);
        let stop = Arc::new(AtomicBool::new(false));
        // Without a database the server still serves; /db answers 500 with the reason.
        let db = dynamic::DbFile::create()
            .map_err(|e| eprintln!("synlab serve: {e:#}; /db/ requests will fail"))
            .ok();
        let initial = match cfg.arch {
            Arch::Event => 1,
            _ => cfg.workers as u64,
        };
        let dynamic = dynamic::Dynamic {
            exe: exe.to_path_buf(),
            db: db.as_ref().map(|d| d.path.clone()),
        };
        let (sh, s2) = (shared.clone(), stop.clone());
        let runner = std::thread::Builder::new()
            .name("serve-main".into())
            .spawn(move || {
                run(cfg, listener, h3_sock, shm_fd, dynamic, &sh, &|| {
                    s2.load(Relaxed)
                })
            })?;
        let mut s = Server {
            addr,
            listener: relisten,
            calibration,
            shared,
            stop,
            runner: Some(runner),
            started: Instant::now(),
            _db: db,
        };
        // Return once the initial workers run, so stats at start show them all.
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.shared.counters.workers.load(Relaxed) < initial {
            if s.is_finished() || Instant::now() >= deadline {
                s.shutdown()?;
                anyhow::bail!("the server did not start its {initial} workers");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(s)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The calibration of this server's CPU work.
    pub fn calibration(&self) -> work::Calibration {
        self.calibration
    }

    /// Changes the listen backlog live: listen() on a listening socket sets its accept-queue
    /// limit anew (capped at the namespace's somaxconn) and keeps what is queued.
    pub fn set_backlog(&self, backlog: i32) -> std::io::Result<()> {
        server_io::relisten(&self.listener, backlog)
    }

    /// Cumulative counts since start.
    pub fn stats(&self) -> ServerStats {
        let mut s = self
            .shared
            .counters
            .snapshot(self.started.elapsed().as_secs_f64());
        s.listen = self.addr.to_string();
        s.pid = std::process::id();
        s
    }

    /// Pids of the prefork worker processes (empty for other architectures).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.shared.worker_pids()
    }

    /// Has the serving thread ended on its own (an error)?
    pub fn is_finished(&self) -> bool {
        self.runner.as_ref().is_none_or(|r| r.is_finished())
    }

    /// Stops serving (prefork: kills and reaps the workers) and returns the final counts.
    pub fn stop(mut self) -> anyhow::Result<ServerStats> {
        self.shutdown()?;
        Ok(self.stats())
    }

    fn shutdown(&mut self) -> anyhow::Result<()> {
        self.stop.store(true, Relaxed);
        if let Some(r) = self.runner.take() {
            match r.join() {
                Ok(res) => res.context("the server failed")?,
                Err(_) => anyhow::bail!("the server thread panicked"),
            }
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The serving thread: runs the architecture until `stop()`.
fn run(
    cfg: ServeConfig,
    listener: std::net::TcpListener,
    h3_sock: Option<crate::sys::udp_mmsg::UdpSock>,
    shm_fd: std::os::fd::OwnedFd,
    dynamic: dynamic::Dynamic,
    shared: &Arc<SharedMem<core::Shared>>,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<()> {
    if cfg.arch == Arch::Prefork {
        let (exe, db): (PathBuf, Option<PathBuf>) = (dynamic.exe, dynamic.db);
        return pool::run_prefork(listener, shm_fd, &cfg, &exe, db.as_deref(), shared, stop);
    }
    drop(shm_fd);
    let ctx = Arc::new(core::Ctx {
        catalog: files::Catalog::new(&cfg.files),
        pattern: files::pattern_buf(),
        dynamic,
        tls: cfg
            .tls
            .as_ref()
            .map(|t| tls_config(t, cfg.arch))
            .transpose()?,
        cfg,
    });
    // HTTP/3 on its own thread, told to stop once the TCP side has (`stop` is not Sync).
    let h3_stop = AtomicBool::new(false);
    let r = std::thread::scope(|scope| -> anyhow::Result<()> {
        let h3 = h3_sock.map(|sock| {
            std::thread::Builder::new()
                .name("serve-h3".into())
                .spawn_scoped(scope, || {
                    h3::run(sock, &ctx, &shared.counters, &|| h3_stop.load(Relaxed))
                })
        });
        let h3 = h3.transpose()?;
        let r = match ctx.cfg.arch {
            Arch::Event => event::run(&listener, &ctx, &shared.counters, stop),
            _ => pool::run_threaded(&listener, &ctx, shared, stop),
        };
        h3_stop.store(true, Relaxed);
        if let Some(t) = h3 {
            match t.join() {
                Ok(res) => res.context("the HTTP/3 server failed")?,
                Err(_) => anyhow::bail!("the HTTP/3 server thread panicked"),
            }
        }
        Ok(r?)
    });
    shared.counters.workers.store(0, Relaxed);
    r
}

/// Runs a server until `stop()` returns true, writing one ServerStats JSON line to `out` right
/// after binding (so the caller learns the real port), then its work's calibration
/// ([`config::ServerNote`]), then stats every `stats_interval_ms` (0: only the first and the
/// last line). `controls()` gives the live changes that arrived since it was last asked; each
/// is answered by a note. Returns the final counts.
pub fn serve(
    cfg: ServeConfig,
    stop: &dyn Fn() -> bool,
    controls: &dyn Fn() -> Vec<config::ServerControl>,
    mut out: impl Write,
) -> anyhow::Result<ServerStats> {
    fn emit(out: &mut impl Write, v: &impl serde::Serialize) -> anyhow::Result<()> {
        writeln!(out, "{}", serde_json::to_string(v)?)?;
        out.flush()?;
        Ok(())
    }
    let interval = Duration::from_millis(cfg.stats_interval_ms);
    let server = Server::start(cfg)?;
    emit(&mut out, &server.stats())?;
    emit(
        &mut out,
        &config::ServerNote::Calibration(server.calibration()),
    )?;
    let mut next = Instant::now() + interval;
    while !stop() {
        if server.is_finished() {
            break;
        }
        for backlog in controls().into_iter().filter_map(|c| c.backlog) {
            let error = server
                .set_backlog(backlog as i32)
                .err()
                .map(|e| e.to_string());
            emit(&mut out, &config::ServerNote::Backlog { backlog, error })?;
        }
        std::thread::sleep(Duration::from_millis(10));
        if !interval.is_zero() && Instant::now() >= next {
            next += interval;
            emit(&mut out, &server.stats())?;
        }
    }
    let last = server.stop()?;
    emit(&mut out, &last)?;
    Ok(last)
}
