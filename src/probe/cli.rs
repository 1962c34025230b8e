//! `synlab probe`: the probes alone against any server on this host, chosen by port or pid,
//! printing one vmstat-like line per interval (header every 20 lines) or JSON lines.

use super::sample::{ProbeSample, SynSource};
use super::sampler::{spawn, ProbeConfig};
use super::sockdiag::{state, states_mask};
use crate::model::units::Dur;
use crate::sys::procfs::{self, NetnsTarget};
use crate::sys::sockdiag::SockDiag;
use anyhow::{bail, Context};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Flags of `synlab probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The server's listening port.
    #[arg(long, required_unless_present = "pid")]
    pub port: Option<u16>,
    /// The server's pid: its netns, its process family's CPU and RSS (and its port if --port is not given).
    #[arg(long)]
    pub pid: Option<u32>,
    /// Sampling interval.
    #[arg(long, default_value = "200ms", value_parser = parse_interval)]
    pub interval: Duration,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Stop after N samples (default: until Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,
    /// Server-side interface to capture on.
    #[arg(long, default_value = "lo")]
    pub iface: String,
    /// Probe a named network namespace (/run/netns/NAME).
    #[arg(long)]
    pub netns: Option<String>,
    /// Do not capture: estimate the SYN rate from kernel counters.
    #[arg(long)]
    pub no_pcap: bool,
    /// Serve the samples as OpenMetrics at http://ADDR/metrics for an existing Prometheus (a
    /// bare port binds 127.0.0.1): an exporter of the server's accept queue, SYN rate,
    /// overflows and TIME_WAIT.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
}

/// Why `--interval` cannot be used.
#[derive(Debug, thiserror::Error)]
enum IntervalError {
    #[error(transparent)]
    Unit(#[from] crate::model::units::UnitError),
    #[error("interval `{0}` is below 10ms")]
    TooShort(String),
}

fn parse_interval(s: &str) -> Result<Duration, IntervalError> {
    let d = Dur::parse(s)?.0;
    if d < Duration::from_millis(10) {
        return Err(IntervalError::TooShort(s.into()));
    }
    Ok(d)
}

/// Listening sockets (port, inode) in `target`'s netns, any port: a LISTEN-only dump is cheap.
fn listeners_in(target: Option<NetnsTarget>) -> anyhow::Result<Vec<(u16, u64)>> {
    std::thread::spawn(move || -> anyhow::Result<Vec<(u16, u64)>> {
        if let Some(t) = &target {
            procfs::enter_netns(t)
                .with_context(|| format!("cannot enter netns {}", t.path().display()))?;
        }
        let socks = SockDiag::open()?.dump(states_mask(&[state::LISTEN]), 0)?;
        Ok(socks.iter().map(|s| (s.sport, s.inode as u64)).collect())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("listener lookup thread panicked"))?
}

/// Fills in the port from a pid, or the pid from a port (best effort: none is fine).
fn resolve(args: &ProbeArgs) -> anyhow::Result<(u16, Option<u32>)> {
    let target = match (&args.netns, args.pid) {
        (Some(n), _) => Some(NetnsTarget::Named(n.clone())),
        (None, Some(p)) => Some(NetnsTarget::OfPid(p)),
        _ => None,
    };
    match (args.port, args.pid) {
        (Some(port), Some(pid)) => Ok((port, Some(pid))),
        (None, Some(pid)) => {
            let inodes = procfs::socket_inodes(pid);
            let mut ports: Vec<u16> = listeners_in(target)?
                .into_iter()
                .filter(|(_, i)| inodes.contains(i))
                .map(|(p, _)| p)
                .collect();
            ports.sort_unstable();
            ports.dedup();
            match ports.as_slice() {
                [] => bail!("pid {pid} has no listening TCP socket (or it is not visible to us); pass --port"),
                [p] => Ok((*p, Some(pid))),
                [p, ..] => {
                    eprintln!("synlab probe: pid {pid} listens on ports {ports:?}; probing {p} (use --port to choose)");
                    Ok((*p, Some(pid)))
                }
            }
        }
        (Some(port), None) => {
            let inodes: Vec<u64> = listeners_in(target)?
                .into_iter()
                .filter(|(p, _)| *p == port)
                .map(|(_, i)| i)
                .collect();
            // Nothing listening yet is fine (the sampler notes it once): probe anyway.
            Ok((port, procfs::pids_holding(&inodes).first().copied()))
        }
        (None, None) => bail!("give --port PORT or --pid PID"),
    }
}

const HEADER: &str = "    time   syn/s synack/s  rst/s retr/s  acceptq  synrcv   estab  timewt  ovfl/s  drop/s popen/s  us  sy  si  id srv%cpu procs probe%";

fn cell(v: Option<f64>, width: usize) -> String {
    match v {
        None => format!("{:>width$}", "-"),
        Some(x) if x.abs() >= 100_000.0 => format!("{:>width$.0}k", x / 1000.0, width = width - 1),
        Some(x) => format!("{x:>width$.0}"),
    }
}

fn cell1(v: Option<f64>, width: usize) -> String {
    v.map_or(format!("{:>width$}", "-"), |x| format!("{x:>width$.1}"))
}

/// One table line for a sample.
pub fn format_line(s: &ProbeSample) -> String {
    let m = &s.m;
    let syn = match s.syn_source {
        SynSource::Pcap => cell(m.syn_in_per_s, 7),
        SynSource::Estimated => format!("{}*", cell(m.syn_in_per_s, 6)),
    };
    let rst = match (m.rst_in_per_s, m.rst_out_per_s) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
    let aq = match (m.accept_queue, m.accept_queue_limit) {
        (Some(q), Some(l)) => format!("{:>8}", format!("{q:.0}/{l:.0}")),
        _ => format!("{:>8}", "-"),
    };
    let srv = match (m.server_cpu_user_pct, m.server_cpu_sys_pct) {
        (Some(u), Some(y)) => Some(u + y),
        _ => None,
    };
    format!(
        "{:>8.1} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        s.t_s,
        syn,
        cell(m.synack_out_per_s, 8),
        cell(rst, 6),
        cell(m.syn_retrans_per_s, 6),
        aq,
        cell(m.syn_recv, 7),
        cell(m.established, 7),
        cell(m.time_wait, 7),
        cell(m.listen_overflows_per_s, 7),
        cell(m.listen_drops_per_s, 7),
        cell(m.passive_opens_per_s, 7),
        cell(m.cpu_user_pct, 3),
        cell(m.cpu_system_pct, 3),
        cell(m.cpu_softirq_pct, 3),
        cell(m.cpu_idle_pct, 3),
        cell1(srv, 7),
        cell(m.server_procs, 5),
        cell1(m.probe_cpu_pct, 6),
    )
}

/// What a probe without CAP_NET_RAW gives and what it does not.
pub const UNPRIVILEGED_FIGURES: &str = "not root: given are the accept queue and SYN-RCVD (sock_diag), listen overflows and drops, TCP states, TIME_WAIT, the CPU split and the server's processes; \
not given are SYN/s counted from packets (estimated from kernel counters instead, marked *) and SYN-ACK, RST and retransmitted-SYN counts, which need a packet capture: \
run the probe as root, or probe the server inside `synlab tui`/`synlab run`, whose rootless lab captures without root";

pub fn probe_main(args: ProbeArgs) -> anyhow::Result<()> {
    let (port, server_pid) = resolve(&args)?;
    let cfg = ProbeConfig {
        interval: args.interval,
        port,
        server_pid,
        netns: args.netns.clone(),
        iface: args.iface.clone(),
        pcap: !args.no_pcap,
        avoid_cpus: Vec::new(),
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, interrupted.clone())?;
    let (tx, rx) = crossbeam_channel::bounded(64);
    let exporter = crate::metrics::openmetrics::Exporter::start_at(args.metrics.as_deref())?;
    let handle = spawn(cfg, tx)?;
    if !args.json {
        let who = server_pid.map_or(String::new(), |p| format!(" pid {p}"));
        eprintln!("synlab probe: port {port}{who}, every {:?} (rates per second; * = estimated from kernel counters)", args.interval);
        if !crate::sys::privilege::Privileges::current().net_raw {
            eprintln!("synlab probe: {}", UNPRIVILEGED_FIGURES);
        }
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut printed = 0u64;
    while !interrupted.load(Ordering::Relaxed) && args.count.is_none_or(|c| printed < c) {
        let Ok(sample) = rx.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        for n in &sample.notes {
            eprintln!("synlab probe: note: {n}");
        }
        if let Some(e) = &exporter {
            let series: Vec<(crate::model::Col, f64)> = sample
                .columns()
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
                .collect();
            e.publish(&series, &[]);
        }
        let res = if args.json {
            writeln!(out, "{}", serde_json::to_string(&sample)?)
        } else if printed.is_multiple_of(20) {
            writeln!(out, "{HEADER}\n{}", format_line(&sample))
        } else {
            writeln!(out, "{}", format_line(&sample))
        };
        match res.and_then(|_| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(e.into()),
        }
        printed += 1;
    }
    drop(handle);
    Ok(())
}
