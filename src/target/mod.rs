//! The built-in target server: event / prefork / threaded architectures, service time,
//! generated file set, HTTP/1.0 and 1.1 keep-alive, its own request counters.
//!
//! Library use: [`Server::start`] binds and serves on a background thread (prefork forks its
//! workers from there); [`serve`] runs a server until told to stop while printing one
//! [`ServerStats`] JSON line per interval (what `synlab serve --config-json` does for the lab).

pub mod cli;
pub mod config;
pub mod core;
pub mod dynamic;
pub mod event;
pub mod files;
pub mod http;
pub mod pool;

pub use config::{Arch, FileSet, ServeConfig, ServerStats, ServiceKind};
pub use files::{fileset_paths, specweb96_size, SPECWEB96_CLASS_WEIGHTS};

use crate::sys::server_io::{self, SharedMem};
use anyhow::Context;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type SharedCounters = SharedMem<core::Counters>;

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
        if cfg.max_workers > 10_000 {
            anyhow::bail!(
                "max_workers {} is above 10000; pick a smaller pool",
                cfg.max_workers
            );
        }
    }
    if cfg.service_time_us > 10_000_000 {
        anyhow::bail!(
            "service time {} us is above 10 s; use a smaller one",
            cfg.service_time_us
        );
    }
    for f in &cfg.files {
        files::validate(f).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    counters: Arc<SharedCounters>,
    stop: Arc<AtomicBool>,
    pids: pool::Pids,
    runner: Option<JoinHandle<std::io::Result<()>>>,
    started: Instant,
    /// The /db endpoint's SQLite file, removed after the workers stop.
    _db: Option<dynamic::DbFile>,
}

impl Server {
    /// Validates, binds (port 0 picks a free port) and starts serving in the background.
    pub fn start(cfg: ServeConfig) -> anyhow::Result<Server> {
        validate(&cfg)?;
        let listener = server_io::bind_listener(cfg.listen, cfg.backlog).with_context(|| {
            format!(
                "cannot listen on {}; pick a free address or port 0",
                cfg.listen
            )
        })?;
        let addr = listener.local_addr()?;
        // SAFETY: Counters is atomics only, valid when zeroed.
        let counters = Arc::new(unsafe { SharedCounters::new_zeroed() }.context("mmap counters")?);
        let stop = Arc::new(AtomicBool::new(false));
        let pids: pool::Pids = Default::default();
        // Without a database the server still serves; /db answers 500 with the reason.
        let db = dynamic::DbFile::create()
            .map_err(|e| eprintln!("synlab serve: {e:#}; /db/ requests will fail"))
            .ok();
        let ctx = Arc::new(core::Ctx {
            catalog: files::Catalog::new(&cfg.files),
            pattern: files::pattern_buf(),
            dynamic: dynamic::Dynamic {
                exe: crate::sys::process::self_exe(),
                db: db.as_ref().map(|d| d.path.clone()),
            },
            cfg,
        });
        let initial = match ctx.cfg.arch {
            Arch::Event => 1,
            _ => ctx.cfg.workers as u64,
        };
        let (c2, s2, p2) = (counters.clone(), stop.clone(), pids.clone());
        let runner = std::thread::Builder::new()
            .name("serve-main".into())
            .spawn(move || {
                let stop = || s2.load(Relaxed);
                let r = match ctx.cfg.arch {
                    Arch::Event => event::run(&listener, &ctx, &c2, &stop),
                    Arch::Prefork => pool::run_prefork(&listener, &ctx, &c2, &stop, &p2),
                    Arch::Threaded => pool::run_threaded(&listener, &ctx, &c2, &stop),
                };
                c2.workers.store(0, Relaxed);
                r
            })?;
        let mut s = Server {
            addr,
            counters,
            stop,
            pids,
            runner: Some(runner),
            started: Instant::now(),
            _db: db,
        };
        // Return once the initial workers run, so stats at start show them all.
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.counters.workers.load(Relaxed) < initial {
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

    /// Cumulative counts since start.
    pub fn stats(&self) -> ServerStats {
        let mut s = self.counters.snapshot(self.started.elapsed().as_secs_f64());
        s.listen = self.addr.to_string();
        s.pid = std::process::id();
        s
    }

    /// Pids of the prefork worker processes (empty for other architectures).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.pids
            .lock()
            .unwrap()
            .iter()
            .map(|&p| p as u32)
            .collect()
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
                Ok(res) => res.context("the server loop failed")?,
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

/// Runs a server until `stop()` returns true, writing one ServerStats JSON line to `out` right
/// after binding (so the caller learns the real port) and then every `stats_interval_ms`
/// (0: only the first and the last line). Returns the final counts.
pub fn serve(
    cfg: ServeConfig,
    stop: &dyn Fn() -> bool,
    mut out: impl Write,
) -> anyhow::Result<ServerStats> {
    let interval = Duration::from_millis(cfg.stats_interval_ms);
    let server = Server::start(cfg)?;
    let mut emit = |s: &ServerStats| -> anyhow::Result<()> {
        writeln!(out, "{}", serde_json::to_string(s)?)?;
        out.flush()?;
        Ok(())
    };
    emit(&server.stats())?;
    let mut next = Instant::now() + interval;
    while !stop() {
        if server.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        if !interval.is_zero() && Instant::now() >= next {
            next += interval;
            emit(&server.stats())?;
        }
    }
    let last = server.stop()?;
    emit(&last)?;
    Ok(last)
}
