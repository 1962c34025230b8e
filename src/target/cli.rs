//! `synlab serve`: the built-in server on its own (flags, a human stats line per second on
//! stderr, Ctrl-C / SIGTERM / --duration to stop), or started by the lab with `--config-json`
//! (JSON stats lines on stdout, stops when stdin reaches EOF).

use super::config::{Arch, FileSet, ServeConfig, ServerStats, ServiceKind};
use crate::model::units::{Bytes, Dur, UnitError};
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Flags of `synlab serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Full configuration as JSON (used by the lab; overrides the other flags). Prints one
    /// ServerStats JSON line per stats interval on stdout and exits when stdin reaches EOF.
    #[arg(long, hide = true)]
    pub config_json: Option<String>,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Server architecture.
    #[arg(long, value_enum, default_value = "event")]
    pub arch: Arch,
    /// listen(2) backlog (the kernel caps it at net.core.somaxconn).
    #[arg(long, default_value_t = 128)]
    pub backlog: i32,
    /// Per-request service time, e.g. `1ms`, `250us` (0s: none).
    #[arg(long, default_value = "0s", value_parser = parse_dur)]
    pub service_time: Duration,
    /// What the service time is spent on: busy CPU or sleeping.
    #[arg(long, value_enum, default_value = "cpu")]
    pub service: ServiceKind,
    /// Processes (prefork) or threads (threaded) at start.
    #[arg(long, default_value_t = 4)]
    pub workers: u32,
    /// Hard cap on prefork processes / threads (Apache's MaxRequestWorkers): the pool grows up
    /// to it while all are busy; past it, connections wait in the accept queue.
    #[arg(long, default_value_t = super::config::DEFAULT_MAX_WORKERS)]
    pub max_workers: u32,
    /// Prefork/threaded: after the last response, shut down writing and read until the
    /// client's FIN before freeing the worker (Apache's lingering close).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub lingering_close: bool,
    /// Longest silence waited for in a lingering close (Apache: 2s; at most 30s).
    #[arg(long, default_value = "2s", value_parser = parse_dur)]
    pub linger_timeout: Duration,
    /// File sets, comma-separated: `specweb96`, `pareto[:ALPHA[:MIN_BYTES[:COUNT[:SEED]]]]`, `none`.
    #[arg(long, value_delimiter = ',', default_value = "specweb96")]
    pub files: Vec<String>,
    /// Extra files `/file/{size}` of these sizes, comma-separated (`1294,4k,1M`).
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes)]
    pub sizes: Vec<u64>,
    /// Honour HTTP keep-alive when the client asks (else close after every response).
    #[arg(long)]
    pub keepalive: bool,
    /// Stop after this long (e.g. `60s`); default: until Ctrl-C.
    #[arg(long, value_parser = parse_dur)]
    pub duration: Option<Duration>,
    /// Event arch, HTTP/2 (h2 by ALPN, h2c): streams served at once per connection
    /// (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, default_value_t = crate::http2::server::DEFAULT_MAX_STREAMS)]
    pub max_streams: u32,
    /// Event arch: connections accepted per loop iteration (1 like nginx; 0 = all pending).
    #[arg(long, default_value_t = 1)]
    pub accept_batch: u32,
    /// Period of the stats line.
    #[arg(long, default_value = "1s", value_parser = parse_dur)]
    pub stats_interval: Duration,
    /// Serve HTTPS with this certificate chain (PEM; needs --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// HTTPS: keep sessions in a cache (resumption by session id).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub tls_session_cache: bool,
    /// HTTPS: issue session tickets.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub tls_tickets: bool,
    /// Event arch over TLS: also serve HTTP/3 (QUIC) on the same port, UDP (issue 47).
    #[arg(long, requires = "tls_cert")]
    pub http3: bool,
}

fn parse_dur(s: &str) -> Result<Duration, UnitError> {
    Dur::parse(s).map(|d| d.0)
}

fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    Bytes::parse(s).map(|b| b.0)
}

/// Why a `--files` item cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileSetError {
    #[error("pareto {name} `{value}` is not a number in `{item}`")]
    NotANumber {
        name: &'static str,
        value: String,
        item: String,
    },
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error("unknown file set `{0}`; use specweb96, pareto[:ALPHA[:MIN[:COUNT[:SEED]]]] or none (explicit sizes go in --sizes)")]
    Unknown(String),
}

/// Parses one `--files` item.
pub fn parse_fileset(s: &str) -> Result<Option<FileSet>, FileSetError> {
    let mut it = s.split(':');
    match it.next().unwrap_or("") {
        "specweb96" => Ok(Some(FileSet::Specweb96)),
        "none" => Ok(None),
        "pareto" => {
            let f = |v: Option<&str>, name: &'static str, dflt: f64| {
                v.map_or(Ok(dflt), |v| {
                    v.parse::<f64>().map_err(|_| FileSetError::NotANumber {
                        name,
                        value: v.into(),
                        item: s.into(),
                    })
                })
            };
            let alpha = f(it.next(), "alpha", 1.2)?;
            let min_bytes = match it.next() {
                Some(v) => Bytes::parse(v)?.0,
                None => 1024,
            };
            let count = f(it.next(), "count", 1000.0)? as u32;
            let seed = f(it.next(), "seed", 1.0)? as u64;
            Ok(Some(FileSet::Pareto {
                alpha,
                min_bytes,
                count,
                seed,
            }))
        }
        other => Err(FileSetError::Unknown(other.into())),
    }
}

impl ServeArgs {
    /// The configuration these flags describe.
    pub fn to_config(&self) -> anyhow::Result<ServeConfig> {
        let mut files = Vec::new();
        for f in &self.files {
            if let Some(set) = parse_fileset(f)? {
                files.push(set);
            }
        }
        if !self.sizes.is_empty() {
            files.push(FileSet::Explicit {
                sizes: self.sizes.clone(),
            });
        }
        let cfg = ServeConfig {
            listen: self.listen,
            arch: self.arch,
            workers: self.workers,
            max_workers: self.max_workers,
            backlog: self.backlog,
            service_time_us: self.service_time.as_micros() as u64,
            service: self.service,
            files,
            keepalive: self.keepalive,
            stats_interval_ms: self.stats_interval.as_millis() as u64,
            accept_batch: self.accept_batch,
            max_streams: self.max_streams,
            http3: self
                .http3
                .then(crate::target::config::Http3Options::default),
            lingering_close: self.lingering_close,
            linger_timeout_ms: self.linger_timeout.as_millis() as u64,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => Some(crate::tls::ServerTls {
                    cert: cert.clone(),
                    key: key.clone(),
                    session_cache: self.tls_session_cache,
                    tickets: self.tls_tickets,
                }),
                _ => None,
            },
        };
        super::validate(&cfg)?;
        Ok(cfg)
    }
}

fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone()).context("installing a signal handler")?;
    }
    Ok(flag)
}

pub fn serve_main(args: ServeArgs) -> anyhow::Result<()> {
    let signalled = stop_on_signals()?;
    let nofile = crate::sys::server_io::raise_nofile();
    if let Some(json) = &args.config_json {
        let cfg: ServeConfig = serde_json::from_str(json)
            .with_context(|| format!("--config-json is not a valid ServeConfig: {json}"))?;
        // The controller sends live changes as lines on our stdin and closes it to stop us.
        let eof = Arc::new(AtomicBool::new(false));
        let e2 = eof.clone();
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("stdin-lines".into())
            .spawn(move || {
                use std::io::BufRead;
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    match serde_json::from_str::<super::config::ServerControl>(&line) {
                        Ok(c) => _ = tx.send(c),
                        Err(e) => eprintln!("synlab serve: ignoring control line {line:?}: {e}"),
                    }
                }
                e2.store(true, Relaxed);
            })?;
        super::serve(
            cfg,
            &|| eof.load(Relaxed) || signalled.load(Relaxed),
            &|| rx.try_iter().collect(),
            std::io::stdout().lock(),
        )?;
        return Ok(());
    }
    let cfg = args.to_config()?;
    match nofile {
        Ok((old, new)) if new > old => {
            eprintln!("synlab serve: raised the open-file limit from {old} to {new}")
        }
        Ok(_) => {}
        Err(e) => eprintln!("synlab serve: could not raise the open-file limit: {e}"),
    }
    let server = super::Server::start(cfg.clone())?;
    eprintln!(
        "synlab serve: listening on http://{} (arch {}, backlog {}, service time {}, keep-alive {}, lingering close {}, pid {}); Ctrl-C stops",
        server.local_addr(),
        format!("{:?}", cfg.arch).to_lowercase(),
        cfg.backlog,
        if cfg.service_time_us == 0 {
            "none".to_string()
        } else {
            format!(
                "{} us of {}",
                cfg.service_time_us,
                format!("{:?}", cfg.service).to_lowercase()
            )
        },
        if cfg.keepalive { "on" } else { "off" },
        if cfg.arch == Arch::Event {
            "n/a".to_string()
        } else if cfg.lingering_close {
            format!("up to {} ms of silence", cfg.linger_timeout_ms)
        } else {
            "off".to_string()
        },
        std::process::id()
    );
    eprintln!("synlab serve: {}", server.calibration().describe());
    let start = Instant::now();
    let interval = args.stats_interval.max(Duration::from_millis(100));
    let mut next = start + interval;
    let mut prev = server.stats();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if signalled.load(Relaxed) || args.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        if server.is_finished() {
            break;
        }
        if Instant::now() >= next {
            next += interval;
            let s = server.stats();
            eprintln!("{}", human_line(&prev, &s));
            prev = s;
        }
    }
    let last = server.stop()?;
    eprintln!(
        "synlab serve: stopped after {:.1} s: {} accepted, {} responses ({} 404, {} bad), {} bytes out",
        last.t_s, last.accepted, last.responses, last.responses_404, last.bad_requests, last.bytes_out
    );
    Ok(())
}

/// One human stats line from two cumulative snapshots.
pub fn human_line(prev: &ServerStats, now: &ServerStats) -> String {
    let dt = (now.t_s - prev.t_s).max(1e-9);
    let rate = |a: u64, b: u64| b.saturating_sub(a) as f64 / dt;
    format!(
        "t={:>6.1}s  conn/s {:>8.0}  resp/s {:>8.0}  MB/s {:>7.2}  404/s {:>6.0}  open {:>5}  workers {:>3} (busy {})",
        now.t_s,
        rate(prev.accepted, now.accepted),
        rate(prev.responses, now.responses),
        rate(prev.bytes_out, now.bytes_out) / 1e6,
        rate(prev.responses_404, now.responses_404),
        now.open_conns,
        now.workers,
        now.busy
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sets_parse_with_defaults_and_errors_say_what_to_use() {
        assert_eq!(parse_fileset("specweb96"), Ok(Some(FileSet::Specweb96)));
        assert_eq!(parse_fileset("none"), Ok(None));
        assert_eq!(
            parse_fileset("pareto:1.5:2k:10:9"),
            Ok(Some(FileSet::Pareto {
                alpha: 1.5,
                min_bytes: 2048,
                count: 10,
                seed: 9
            }))
        );
        assert_eq!(
            parse_fileset("spec"),
            Err(FileSetError::Unknown("spec".into()))
        );
        assert!(matches!(
            parse_fileset("pareto:x"),
            Err(FileSetError::NotANumber { name: "alpha", .. })
        ));
    }

    #[test]
    fn human_line_shows_rates() {
        let a = ServerStats {
            t_s: 1.0,
            responses: 100,
            ..Default::default()
        };
        let b = ServerStats {
            t_s: 2.0,
            responses: 600,
            ..Default::default()
        };
        assert!(
            human_line(&a, &b).contains("resp/s      500"),
            "{}",
            human_line(&a, &b)
        );
    }
}
