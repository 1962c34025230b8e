//! `synlab probe`: the probes alone against any server on this host, chosen by port or pid,
//! printing one vmstat-like line per interval (header every 20 lines) or JSON lines.

use super::sample::{ProbeSample, SynSource};
use super::sampler::{spawn, ProbeConfig};
use super::scope::{self, Scope};
use super::sockdiag::{self, Listener, ListenersError, PortOwner};
use crate::model::units::Dur;
use crate::sys::procfs::{self, NetnsTarget};
use anyhow::bail;
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
    /// Count the kernel's own drop reasons (skb:kfree_skb per reason, machine-wide; root). Off
    /// by default: it costs the kernel CPU on every drop (bench/kreasons-cost.sh).
    #[arg(long)]
    pub kernel_reasons: bool,
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

/// Why a namespace cannot be entered, and what to do instead.
fn cannot_enter(t: &NetnsTarget, e: impl std::fmt::Display) -> anyhow::Error {
    match t {
        NetnsTarget::OfPid(pid) => anyhow::anyhow!(
            "cannot enter the network namespace of pid {pid} ({}: {e}): entering another \
             process's namespace needs root (CAP_SYS_ADMIN), and another user's process cannot \
             even be looked at; if the server listens in this namespace, probe it by its port \
             instead: `synlab probe --port PORT` (without --pid)",
            t.path().display()
        ),
        NetnsTarget::Named(n) => anyhow::anyhow!(
            "cannot enter netns {n} ({}: {e}): entering another namespace needs root \
             (CAP_SYS_ADMIN); is the name right? (`ip netns list`)",
            t.path().display()
        ),
    }
}

/// Listening sockets in `target`'s netns, any port; a namespace that cannot be entered said
/// with what to do instead.
fn listeners_in(target: Option<NetnsTarget>) -> anyhow::Result<Vec<Listener>> {
    sockdiag::listeners_in(target).map_err(|e| match e {
        ListenersError::Enter(t, e) => cannot_enter(&t, e),
        e => e.into(),
    })
}

/// What `synlab probe` was pointed at, resolved.
struct Resolved {
    port: u16,
    server_pid: Option<u32>,
    /// Why there is no server process to follow (srv%cpu and procs are then "-").
    no_server: Option<String>,
}

/// Fills in the port from a pid, or the pid from a port (best effort: none is fine, and said).
fn resolve(args: &ProbeArgs) -> anyhow::Result<Resolved> {
    let target = match (&args.netns, args.pid) {
        (Some(n), _) => Some(NetnsTarget::Named(n.clone())),
        (None, Some(p)) => Some(NetnsTarget::OfPid(p)),
        _ => None,
    };
    // Also when both are given: a namespace that cannot be entered is said here, once.
    let listeners = listeners_in(target)?;
    let found = |port, pid| Resolved {
        port,
        server_pid: Some(pid),
        no_server: None,
    };
    match (args.port, args.pid) {
        (Some(port), Some(pid)) => Ok(found(port, pid)),
        (None, Some(pid)) => {
            let inodes = procfs::socket_inodes(pid);
            let mut ports: Vec<u16> = listeners
                .iter()
                .filter(|l| inodes.contains(&l.inode))
                .map(|l| l.port)
                .collect();
            ports.sort_unstable();
            ports.dedup();
            match ports.as_slice() {
                [] => bail!("pid {pid} has no listening TCP socket (or it is not visible to us); pass --port"),
                [p] => Ok(found(*p, pid)),
                [p, ..] => {
                    eprintln!("synlab probe: pid {pid} listens on ports {ports:?}; probing {p} (use --port to choose)");
                    Ok(found(*p, pid))
                }
            }
        }
        (Some(port), None) => {
            // Nothing listening yet is fine (the sampler notes it once): probe anyway.
            let owner = sockdiag::port_owner(&listeners, port);
            let (server_pid, no_server) = match owner {
                PortOwner::Pid(pid) => (Some(pid), None),
                PortOwner::NothingListens(_) => (
                    None,
                    Some(format!(
                        "srv%cpu and procs are \"-\": {owner} yet; pass --pid PID to follow one"
                    )),
                ),
                PortOwner::NotVisible { .. } => (
                    None,
                    Some(format!(
                        "srv%cpu and procs are \"-\": {owner}; run the probe as root to see the server's CPU and processes"
                    )),
                ),
            };
            Ok(Resolved {
                port,
                server_pid,
                no_server,
            })
        }
        (None, None) => bail!("give --port PORT or --pid PID"),
    }
}

/// One column of the table: whose figure it is, its heading, and its cell (right-aligned to
/// the heading's width or `width`).
struct Field {
    scope: Scope,
    head: &'static str,
    width: usize,
    cell: fn(&ProbeSample, usize) -> String,
}

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

fn sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// The table's columns, grouped by whose they are. With pcap the SYN rate is the port's; its
/// kernel-counter estimate is the namespace's (every port) and sits there, marked `*`. With
/// `udp` (the port has UDP sockets: a QUIC server) the port's UDP columns follow its TCP ones.
fn fields(source: SynSource, udp: bool) -> Vec<Field> {
    let f = |scope, head, width, cell| Field {
        scope,
        head,
        width,
        cell,
    };
    let mut v = vec![
        f(Scope::Port, "syn/s", 7, |s, w| match s.syn_source {
            SynSource::Pcap => cell(s.m.syn_in_per_s, w),
            SynSource::Estimated => cell(None, w),
        }),
        f(Scope::Port, "synack/s", 8, |s, w| {
            cell(s.m.synack_out_per_s, w)
        }),
        f(Scope::Port, "rst/s", 6, |s, w| {
            cell(sum(s.m.rst_in_per_s, s.m.rst_out_per_s), w)
        }),
        f(Scope::Port, "retr/s", 6, |s, w| {
            cell(s.m.syn_retrans_per_s, w)
        }),
        f(Scope::Port, "acceptq", 8, |s, w| {
            match (s.m.accept_queue, s.m.accept_queue_limit) {
                (Some(q), Some(l)) => format!("{:>w$}", format!("{q:.0}/{l:.0}")),
                _ => cell(None, w),
            }
        }),
        f(Scope::Port, "drop/s", 7, |s, w| {
            cell(s.m.port_listen_drops_per_s, w)
        }),
        f(Scope::Port, "synrcv", 7, |s, w| cell(s.m.syn_recv, w)),
        f(Scope::Port, "estab", 7, |s, w| cell(s.m.established, w)),
        f(Scope::Port, "timewt", 7, |s, w| cell(s.m.port_time_wait, w)),
    ];
    if udp {
        v.extend([
            f(Scope::Port, "init/s", 7, |s, w| {
                cell(s.m.quic_initial_in_per_s, w)
            }),
            f(Scope::Port, "udpq B", 8, |s, w| {
                cell(s.m.udp_rcv_queue_bytes, w)
            }),
            f(Scope::Port, "rcvbuf", 8, |s, w| {
                cell(s.m.udp_rcvbuf_bytes, w)
            }),
            f(Scope::Port, "udpdrop/s", 9, |s, w| {
                cell(s.m.port_udp_drops_per_s, w)
            }),
        ]);
    }
    // First of the namespace's columns: the drops group's largest reason of the sample ("-"
    // when nothing was dropped).
    v.push(f(Scope::Netns, "top drop/s", 26, |s, w| {
        let top = crate::model::drops::top(|c| s.m.get(c));
        match top.first() {
            Some((r, v)) => format!("{:>w$}", format!("{} {v:.0}", r.short)),
            None => cell(None, w),
        }
    }));
    if source == SynSource::Estimated {
        v.push(f(Scope::Netns, "syn/s*", 7, |s, w| {
            cell(s.m.syn_in_per_s, w)
        }));
    }
    v.extend([
        f(Scope::Netns, "ovfl/s", 7, |s, w| {
            cell(s.m.listen_overflows_per_s, w)
        }),
        f(Scope::Netns, "drop/s", 7, |s, w| {
            cell(s.m.listen_drops_per_s, w)
        }),
        f(Scope::Netns, "popen/s", 7, |s, w| {
            cell(s.m.passive_opens_per_s, w)
        }),
        f(Scope::Netns, "timewt", 7, |s, w| cell(s.m.time_wait, w)),
        f(Scope::Machine, "us", 3, |s, w| cell(s.m.cpu_user_pct, w)),
        f(Scope::Machine, "sy", 3, |s, w| cell(s.m.cpu_system_pct, w)),
        f(Scope::Machine, "si", 3, |s, w| cell(s.m.cpu_softirq_pct, w)),
        f(Scope::Machine, "id", 3, |s, w| cell(s.m.cpu_idle_pct, w)),
        f(Scope::Server, "srv%cpu", 7, |s, w| {
            cell1(sum(s.m.server_cpu_user_pct, s.m.server_cpu_sys_pct), w)
        }),
        f(Scope::Server, "procs", 5, |s, w| cell(s.m.server_procs, w)),
        f(Scope::Probe, "probe%", 7, |s, w| {
            cell1(s.m.probe_cpu_pct, w)
        }),
    ]);
    v
}

/// The two header lines: whose each group of columns is, then the columns.
fn header(fields: &[Field], port: u16, pid: Option<u32>) -> String {
    let label = |sc: Scope| match sc {
        Scope::Port => format!("port {port}"),
        Scope::Netns => "netns: all ports".to_string(),
        Scope::Machine => "machine".to_string(),
        Scope::Server => pid.map_or("server".to_string(), |p| format!("pid {p}")),
        Scope::Probe => "probe".to_string(),
    };
    let mut groups = format!("{:>8}", "");
    let mut heads = format!("{:>8}", "time");
    let mut i = 0;
    while i < fields.len() {
        let sc = fields[i].scope;
        let n = fields[i..].iter().take_while(|f| f.scope == sc).count();
        let span: usize = fields[i..i + n].iter().map(|f| f.width + 1).sum::<usize>() - 1;
        // The label between dashes over its columns, as much of it as fits.
        let l = label(sc);
        let l = if l.len() + 2 <= span {
            format!(" {l} ")
        } else if l.len() <= span {
            l
        } else {
            String::new()
        };
        let dashes = span - l.len();
        groups.push_str(&format!(
            " {}{l}{}",
            "-".repeat(dashes / 2),
            "-".repeat(dashes - dashes / 2)
        ));
        for f in &fields[i..i + n] {
            heads.push_str(&format!(" {:>w$}", f.head, w = f.width));
        }
        i += n;
    }
    format!("{groups}\n{heads}")
}

/// One table line for a sample.
fn format_line(s: &ProbeSample, fields: &[Field]) -> String {
    let mut line = format!("{:>8.1}", s.t_s);
    for f in fields {
        line.push(' ');
        line.push_str(&(f.cell)(s, f.width));
    }
    line
}

/// What a probe without CAP_NET_RAW gives and what it does not.
pub const UNPRIVILEGED_FIGURES: &str = "not root: given are the port's accept queue, listen drops (drop/s), SYN-RCVD, socket states and TIME_WAIT (sock_diag), the namespace's listen overflows, drops and TIME_WAIT, the CPU split and the server's processes; \
not given are the port's SYN/s counted from packets (the namespace's kernel counters estimate it instead, for every port: syn/s*) and its SYN-ACK, RST and retransmitted-SYN counts, which need a packet capture: \
run the probe as root, or probe the server inside `synlab tui`/`synlab run`, whose rootless lab captures without root";

/// Whose the figures are, said once at the start.
fn legend(port: u16, pid: Option<u32>, netns: &str) -> String {
    format!(
        "figures by owner: port {port} = its packets (pcap) and its sockets (sock_diag); \
         netns = {netns} network namespace, every port (kernel counters, sockstat); \
         machine = every CPU; {}; rates per second",
        match pid {
            Some(p) => format!("pid {p} = the server process and its children"),
            None => "no server process known".to_string(),
        }
    )
}

pub fn probe_main(args: ProbeArgs) -> anyhow::Result<()> {
    let r = resolve(&args)?;
    let (port, server_pid) = (r.port, r.server_pid);
    let netns = match (&args.netns, args.pid) {
        (Some(n), _) => format!("netns {n}'s"),
        (None, Some(p)) => format!("pid {p}'s"),
        (None, None) => "this process's".to_string(),
    };
    let cfg = ProbeConfig {
        interval: args.interval,
        port,
        server_pid,
        netns: args.netns.clone(),
        iface: args.iface.clone(),
        pcap: !args.no_pcap,
        avoid_cpus: Vec::new(),
        cores: Default::default(),
        port_time_wait: true,
        kernel_reasons: crate::probe::kreasons::Switch::new(args.kernel_reasons),
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, interrupted.clone())?;
    let (tx, rx) = crossbeam_channel::bounded(64);
    let exporter = crate::metrics::openmetrics::Exporter::start_at(args.metrics.as_deref())?;
    let handle = spawn(cfg, tx)?;
    let target = scope::Target {
        port,
        netns: netns.clone(),
        server_pid,
    };
    if !args.json {
        let who = server_pid.map_or(String::new(), |p| format!(" pid {p}"));
        eprintln!("synlab probe: port {port}{who}, every {:?}", args.interval);
        eprintln!("synlab probe: {}", legend(port, server_pid, &netns));
        if !crate::sys::privilege::Privileges::current().net_raw {
            eprintln!("synlab probe: {}", UNPRIVILEGED_FIGURES);
        }
    }
    if let Some(why) = &r.no_server {
        eprintln!("synlab probe: note: {why}");
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut printed = 0u64;
    let mut layout: Option<Vec<Field>> = None;
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
        let fields = layout
            .get_or_insert_with(|| fields(sample.syn_source, sample.m.udp_rcvbuf_bytes.is_some()));
        let res = if args.json {
            writeln!(out, "{}", scope::to_json(&sample, &target))
        } else if printed.is_multiple_of(20) {
            writeln!(
                out,
                "{}\n{}",
                header(fields, port, server_pid),
                format_line(&sample, fields)
            )
        } else {
            writeln!(out, "{}", format_line(&sample, fields))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_says_whose_each_column_is() {
        let f = fields(SynSource::Pcap, false);
        let h = header(&f, 18080, Some(4711));
        let (groups, heads) = h.split_once('\n').unwrap();
        assert_eq!(groups.len(), heads.len(), "{h}");
        for label in ["port 18080", "netns: all ports", "machine", "pid 4711"] {
            assert!(groups.contains(label), "{label} in\n{h}");
        }
        // The port's TIME_WAIT sits under the port's dashes, the namespace's under netns'.
        let netns_at = groups.find(" netns").unwrap();
        let group_start = groups[..netns_at].rfind(' ').unwrap();
        let first_tw = heads.find("timewt").unwrap();
        assert!(first_tw < group_start, "{h}");
        assert!(heads[group_start..].contains("timewt"), "{h}");
        assert!(groups.contains(" probe "), "{h}");
        // Estimated SYNs are the namespace's, marked *.
        let e = header(&fields(SynSource::Estimated, false), 18080, None);
        let (g, hd) = e.split_once('\n').unwrap();
        let start = g[..g.find(" netns").unwrap()].rfind(' ').unwrap();
        assert!(hd[start..].contains("syn/s*"), "{e}");
    }

    #[test]
    fn a_line_names_the_samples_largest_drop_reason() {
        let f = fields(SynSource::Pcap, false);
        let mut s = ProbeSample {
            at: std::time::Instant::now(),
            t_s: 1.0,
            seq: 5,
            dt_s: Some(0.2),
            syn_source: SynSource::Pcap,
            m: Default::default(),
            per_cpu: Vec::new(),
            listeners: Vec::new(),
            notes: Vec::new(),
            kernel: None,
        };
        s.m.listen_overflows_per_s = Some(725.0);
        s.m.reqq_full_drops_per_s = Some(30.0);
        let line = format_line(&s, &f);
        assert!(line.contains(" accept_queue_full 725 "), "{line}");
        s.m.listen_overflows_per_s = Some(0.0);
        s.m.reqq_full_drops_per_s = Some(0.0);
        assert!(!format_line(&s, &f).contains("accept_queue_full"));
    }
}
