//! One probe sample: the raw readings of every source at one instant ([`Snapshot`]) and the
//! sample the lab receives ([`ProbeSample`]): rates between two snapshots, gauges, totals since
//! the first snapshot, and stable snake_case column names. Pure: built from snapshots only.

use super::counters::{delta, pct, rate, rate_opt, Width};
use super::cpustat::{CpuPct, ProcStat, SoftIrqs};
use super::procnet::{NetCounters, SockStat};
use super::sockdiag::{DiagSummary, ListenQueue};
use crate::model::drops::DROP_REASONS;
use crate::model::{col, Col};
use crate::sys::pidstat::PidStat;
use std::collections::HashMap;
use std::time::Instant;

/// Totals of the capture thread at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureTotals {
    pub syn_in: u64,
    pub syn_retrans: u64,
    pub synack_out: u64,
    pub rst_in: u64,
    pub rst_out: u64,
    /// QUIC Initials arriving at the port, and of those a connection attempt's later ones.
    pub initial_in: u64,
    pub initial_repeat: u64,
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
}

impl CaptureTotals {
    /// The Initials that began a connection attempt.
    pub fn first_initials(&self) -> u64 {
        self.initial_in.saturating_sub(self.initial_repeat)
    }
}

/// Every source's raw reading at one instant; a source that failed is None.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub net: Option<NetCounters>,
    pub sockstat: Option<SockStat>,
    pub stat: Option<ProcStat>,
    pub softirqs: Option<SoftIrqs>,
    pub diag: Option<DiagSummary>,
    /// The server port's UDP sockets (sock_diag), when it has any.
    pub udp: Option<UdpPort>,
    /// net.core.rmem_max.
    pub rmem_max: Option<u64>,
    /// The server's processes (the pid and its descendants).
    pub server: Option<Vec<PidStat>>,
    pub capture: Option<CaptureTotals>,
    /// CPU time used so far by all probe threads, µs.
    pub probe_cpu_us: u64,
    /// User + system clock ticks of this whole process (the controller, probes included).
    pub self_ticks: Option<u64>,
}

impl Snapshot {
    pub fn empty(at: Instant) -> Self {
        Snapshot {
            at,
            net: None,
            sockstat: None,
            stat: None,
            softirqs: None,
            diag: None,
            udp: None,
            rmem_max: None,
            server: None,
            capture: None,
            probe_cpu_us: 0,
            self_ticks: None,
        }
    }
}

/// The server port's UDP sockets at one instant (sock_diag): bytes waiting in their receive
/// queues and their drops since each was opened (summed), the largest receive buffer, and how
/// many sockets (a new set, as after a restart, starts its drops anew).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpPort {
    pub sockets: u32,
    pub rqueue: u64,
    pub rcvbuf: u64,
    pub drops: u64,
    /// The sockets' inodes folded together: the same set of sockets from one sample to the next.
    pub set: u64,
}

impl UdpPort {
    /// The sum of `socks` (None when the port has no UDP socket).
    pub fn of(socks: &[crate::sys::udpdiag::UdpSock]) -> Option<UdpPort> {
        (!socks.is_empty()).then(|| UdpPort {
            sockets: socks.len() as u32,
            rqueue: socks.iter().map(|s| u64::from(s.rqueue)).sum(),
            rcvbuf: socks.iter().map(|s| u64::from(s.rcvbuf)).max().unwrap_or(0),
            drops: socks.iter().map(|s| u64::from(s.drops)).sum(),
            set: socks.iter().fold(0u64, |a, s| {
                a ^ u64::from(s.inode).rotate_left(s.inode % 64)
            }),
        })
    }
}

/// Host constants needed to turn ticks and pages into seconds and bytes.
#[derive(Debug, Clone, Copy)]
pub struct HostConsts {
    pub clk_tck: u64,
    pub page_size: u64,
}

/// The server's CPUs and the load's, whose split the sample gives apart from the machine's
/// (both empty: no split, the server_cores_* and load_cores_* figures stay empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cores {
    pub server: Vec<usize>,
    pub load: Vec<usize>,
}

/// Where `syn_in_per_s` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SynSource {
    /// Counted on the wire by pcap.
    Pcap,
    /// No capture: PassiveOpens/s + ListenDrops/s from the kernel's counters.
    Estimated,
}

macro_rules! metrics {
    ($($(#[$doc:meta])* $name:ident => $col:ident),* $(,)?) => {
        /// Every scalar of a sample; None where the source is missing or no rate exists yet.
        /// Rates are per second, CPU in percent, `*_total` counted since the first sample.
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
        pub struct Metrics {
            $($(#[$doc])* pub $name: Option<f64>,)*
        }

        impl Metrics {
            /// Each field's time-series column, in a stable order.
            pub const COLUMNS: &'static [Col] = &[$(col::$col),*];
            /// The field names (each its column's name: a test holds them equal).
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($name)),*];

            pub fn columns(&self) -> Vec<(Col, Option<f64>)> {
                vec![$((col::$col, self.$name)),*]
            }

            /// The field of column `c`; None if no field is.
            pub fn get(&self, c: Col) -> Option<f64> {
                $(if c == col::$col { return self.$name; })*
                None
            }

            /// Sets the field of column `c` (a table-driven group: the drops).
            fn set(&mut self, c: Col, v: Option<f64>) {
                $(if c == col::$col { self.$name = v; return; })*
            }
        }
    };
}

metrics! {
    /// All SYNs in (pcap), or PassiveOpens/s + ListenDrops/s when `syn_in_estimated` is 1.
    syn_in_per_s => SYN_IN, syn_in_estimated => SYN_IN_ESTIMATED,
    synack_out_per_s => SYNACK_OUT_PER_S, rst_in_per_s => RST_IN_PER_S,
    rst_out_per_s => RST_OUT_PER_S,
    /// SYNs seen again with the same 4-tuple and ISN (client retries).
    syn_retrans_per_s => SYN_RETRANS_PER_S,
    /// Packets the kernel dropped before libpcap saw them, since the capture started.
    pcap_drops => PCAP_DROPS, pcap_if_drops => PCAP_IF_DROPS,
    /// Accept-queue length and limit summed over the port's listening sockets.
    accept_queue => ACCEPT_QUEUE, accept_queue_limit => ACCEPT_QUEUE_LIMIT, syn_recv => SYN_RECV,
    /// The connections waiting in the accept queues (sock_diag, walked with the states): the
    /// oldest one's and the mean time since its handshake completed, ms (0: none waits).
    accept_queue_wait_oldest_ms => ACCEPT_QUEUE_WAIT_OLDEST,
    accept_queue_wait_mean_ms => ACCEPT_QUEUE_WAIT_MEAN,
    established => ESTABLISHED_SOCKS, fin_wait => FIN_WAIT, close_wait => CLOSE_WAIT,
    /// The port's established connections: bytes waiting in their receive and send queues
    /// (mean and largest over connections) and their retransmissions (tcp_info).
    conn_recvq_bytes_mean => CONN_RECVQ_MEAN, conn_recvq_bytes_max => CONN_RECVQ_MAX,
    conn_sendq_bytes_mean => CONN_SENDQ_MEAN, conn_sendq_bytes_max => CONN_SENDQ_MAX,
    conn_retrans => CONN_RETRANS,
    last_ack => LAST_ACK, closing => CLOSING,
    /// Whole namespace (all ports): /proc/net/sockstat `tw`.
    time_wait => TIME_WAIT, tcp_inuse => TCP_INUSE, tcp_orphan => TCP_ORPHAN,
    tcp_mem_pages => TCP_MEM_PAGES,
    listen_overflows_per_s => LISTEN_OVERFLOWS, listen_drops_per_s => LISTEN_DROPS_PER_S,
    passive_opens_per_s => PASSIVE_OPENS_PER_S, active_opens_per_s => ACTIVE_OPENS_PER_S,
    attempt_fails_per_s => ATTEMPT_FAILS_PER_S, estab_resets_per_s => ESTAB_RESETS_PER_S,
    retrans_segs_per_s => RETRANS_SEGS_PER_S, out_rsts_per_s => OUT_RSTS_PER_S,
    tcp_timeouts_per_s => TCP_TIMEOUTS_PER_S,
    syncookies_sent_per_s => SYNCOOKIES_SENT_PER_S, reqq_full_drops_per_s => REQQ_FULL_DROPS_PER_S,
    /// The rest of the drops group (`model::drops::DROP_REASONS`), set from its table.
    reqq_full_cookies_per_s => REQQ_FULL_COOKIES_PER_S,
    syncookies_recv_per_s => SYNCOOKIES_RECV_PER_S,
    syncookies_failed_per_s => SYNCOOKIES_FAILED_PER_S,
    backlog_drops_per_s => BACKLOG_DROPS_PER_S,
    rcvq_drops_per_s => RCVQ_DROPS_PER_S,
    zero_window_drops_per_s => ZERO_WINDOW_DROPS_PER_S,
    time_wait_overflows_per_s => TIME_WAIT_OVERFLOWS_PER_S,
    abort_on_memory_per_s => ABORT_ON_MEMORY_PER_S,
    udp_rcvbuf_errors_per_s => UDP_RCVBUF_ERRORS_PER_S,
    udp_in_errors_per_s => UDP_IN_ERRORS_PER_S,
    cpu_user_pct => CPU_USER, cpu_nice_pct => CPU_NICE_PCT, cpu_system_pct => CPU_SYSTEM,
    cpu_irq_pct => CPU_IRQ, cpu_softirq_pct => CPU_SOFTIRQ, cpu_iowait_pct => CPU_IOWAIT_PCT,
    cpu_idle_pct => CPU_IDLE, cpu_steal_pct => CPU_STEAL_PCT, ctxt_per_s => CTXT_PER_S,
    intr_per_s => INTR_PER_S, net_rx_softirq_per_s => NET_RX_SOFTIRQ_PER_S,
    net_tx_softirq_per_s => NET_TX_SOFTIRQ_PER_S,
    procs_running => PROCS_RUNNING, procs_blocked => PROCS_BLOCKED,
    /// The server process and its descendants; CPU in % of one core.
    server_procs => SERVER_PROCS, server_threads => SERVER_THREADS,
    server_cpu_user_pct => SERVER_CPU_USER_PCT, server_cpu_sys_pct => SERVER_CPU_SYS_PCT,
    server_rss_mb => SERVER_RSS_MB,
    /// All probe threads together, % of one core.
    probe_cpu_pct => PROBE_CPU,
    /// The server's CPUs (`Cores::server`) as one: shares of their time, adding up to 100
    /// (user includes nice, idle includes iowait), and their NET_RX softirqs per second.
    server_cores_user_pct => SERVER_CORES_USER, server_cores_system_pct => SERVER_CORES_SYSTEM,
    server_cores_irq_pct => SERVER_CORES_IRQ, server_cores_softirq_pct => SERVER_CORES_SOFTIRQ,
    server_cores_steal_pct => SERVER_CORES_STEAL, server_cores_idle_pct => SERVER_CORES_IDLE,
    server_cores_net_rx_per_s => SERVER_CORES_NET_RX,
    /// The load's CPUs as one, likewise.
    load_cores_user_pct => LOAD_CORES_USER, load_cores_system_pct => LOAD_CORES_SYSTEM,
    load_cores_irq_pct => LOAD_CORES_IRQ, load_cores_softirq_pct => LOAD_CORES_SOFTIRQ,
    load_cores_idle_pct => LOAD_CORES_IDLE,
    /// This whole process (the controller with its probes and readers), % of one core.
    controller_cpu_pct => CONTROLLER_CPU,
    syn_in_total => SYN_IN_TOTAL, syn_retrans_total => SYN_RETRANS_TOTAL,
    synack_out_total => SYNACK_OUT_TOTAL, rst_in_total => RST_IN_TOTAL,
    rst_out_total => RST_OUT_TOTAL,
    passive_opens_total => PASSIVE_OPENS_TOTAL, listen_drops_total => LISTEN_DROPS_TOTAL,
    listen_overflows_total => LISTEN_OVERFLOWS_TOTAL, active_opens_total => ACTIVE_OPENS_TOTAL,
    udp_rcvbuf_errors_total => UDP_RCVBUF_ERRORS_TOTAL,
    /// The server port's own TIME_WAIT sockets (sock_diag), when the walk counts them
    /// (`ProbeConfig::port_time_wait`); `time_wait` is the whole namespace's.
    port_time_wait => PORT_TIME_WAIT,
    /// The server port's listen drops: its listening sockets' own drop counts (sock_diag's
    /// SK_MEMINFO_DROPS), since they began listening, and per second; `listen_drops_per_s` is
    /// the whole namespace's.
    port_listen_drops => PORT_LISTEN_DROPS, port_listen_drops_per_s => PORT_LISTEN_DROPS_PER_S,
    /// The server port's UDP sockets (sock_diag): bytes waiting, the receive buffer, their
    /// drops since opened and per second; net.core.rmem_max.
    udp_rcv_queue_bytes => UDP_RCV_QUEUE, udp_rcvbuf_bytes => UDP_RCVBUF,
    port_udp_drops => PORT_UDP_DROPS, port_udp_drops_per_s => PORT_UDP_DROPS_PER_S,
    rmem_max_bytes => RMEM_MAX,
    /// The namespace's Udp InDatagrams (NoPorts is in the drops group above).
    udp_in_datagrams_per_s => UDP_IN_DATAGRAMS_PER_S,
    udp_no_ports_per_s => UDP_NO_PORTS_PER_S,
    /// QUIC Initials arriving at the port (pcap): all, and first ones (connection attempts).
    quic_initial_in_per_s => QUIC_INITIAL_IN_PER_S,
    quic_first_initial_per_s => QUIC_FIRST_INITIAL_PER_S,
    quic_initial_in_total => QUIC_INITIAL_IN_TOTAL,
    quic_first_initial_total => QUIC_FIRST_INITIAL_TOTAL,
}

/// What the probes send each interval.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeSample {
    #[serde(skip)]
    pub at: Instant,
    /// Seconds since the probes started.
    pub t_s: f64,
    pub seq: u64,
    /// Seconds since the previous sample (None for the first, which sets the baselines).
    pub dt_s: Option<f64>,
    pub syn_source: SynSource,
    #[serde(flatten)]
    pub m: Metrics,
    /// Per CPU (index = CPU number; None when offline or no interval yet).
    pub per_cpu: Vec<Option<CpuPct>>,
    pub listeners: Vec<ListenQueue>,
    /// One-time warnings, each sent once (e.g. no pcap).
    pub notes: Vec<String>,
    /// The kernel's own drop reasons for the run so far (root), or why not (issue 48 item 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::model::kreasons::KernelView>,
}

impl ProbeSample {
    /// Stable snake_case column names with their values.
    pub fn columns(&self) -> Vec<(Col, Option<f64>)> {
        self.m.columns()
    }
}

fn net_rate(p: &Snapshot, c: &Snapshot, key: &str, dt: f64) -> Option<f64> {
    rate_opt(
        p.net.as_ref()?.counter(key),
        c.net.as_ref()?.counter(key),
        Width::U64,
        dt,
    )
}

fn net_total(base: &Snapshot, c: &Snapshot, key: &str) -> Option<f64> {
    delta(
        base.net.as_ref()?.counter(key)?,
        c.net.as_ref()?.counter(key)?,
        Width::U64,
    )
    .map(|d| d as f64)
}

/// Server CPU ticks between two readings of the process family. A process present in both
/// (same pid and start time) adds its increase; a process born since adds all its time. Each
/// also adds what its waited-for children used (cutime/cstime: CGI programs forked and reaped
/// between readings, which no reading sees alive), less what a child of the family that
/// vanished since had already been counted for, so a worker reaped by its parent adds only
/// its last slice, not its whole life twice.
fn server_ticks(prev: &[PidStat], cur: &[PidStat]) -> (u64, u64) {
    let key = |p: &PidStat| (p.pid, p.starttime);
    let before: HashMap<(u32, u64), &PidStat> = prev.iter().map(|p| (key(p), p)).collect();
    let alive: std::collections::HashSet<(u32, u64)> = cur.iter().map(key).collect();
    // Per parent: the time already counted for its children of the family that are gone.
    let mut counted: HashMap<u32, (u64, u64)> = HashMap::new();
    for p in prev.iter().filter(|p| !alive.contains(&key(p))) {
        let c = counted.entry(p.ppid).or_default();
        c.0 += p.utime + p.cutime;
        c.1 += p.stime + p.cstime;
    }
    cur.iter().fold((0, 0), |(u, s), p| {
        let (bu, bs, bcu, bcs) = before
            .get(&key(p))
            .map_or((0, 0, 0, 0), |b| (b.utime, b.stime, b.cutime, b.cstime));
        let (cu, cs) = counted.get(&p.pid).copied().unwrap_or_default();
        (
            u + p.utime.saturating_sub(bu) + p.cutime.saturating_sub(bcu).saturating_sub(cu),
            s + p.stime.saturating_sub(bs) + p.cstime.saturating_sub(bcs).saturating_sub(cs),
        )
    })
}

/// Builds the sample for `cur`; `prev` is the previous snapshot (None for the first) and
/// `base` the first one (for totals).
pub fn build(
    base: &Snapshot,
    prev: Option<&Snapshot>,
    cur: &Snapshot,
    start: Instant,
    seq: u64,
    k: HostConsts,
    cores: &Cores,
) -> ProbeSample {
    let mut m = Metrics::default();
    gauges(cur, k, &mut m);
    totals(base, cur, &mut m);
    let dt = prev
        .map(|p| cur.at.duration_since(p.at).as_secs_f64())
        .filter(|d| *d > 0.0);
    let per_cpu = match (prev, dt) {
        (Some(p), Some(dt)) => {
            core_rates(p, cur, dt, cores, &mut m);
            rates(p, cur, dt, k, &mut m)
        }
        _ => Vec::new(),
    };

    let syn_source = if cur.capture.is_some() {
        SynSource::Pcap
    } else {
        m.syn_in_per_s = match (m.passive_opens_per_s, m.listen_drops_per_s) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        SynSource::Estimated
    };
    m.syn_in_estimated = Some(if syn_source == SynSource::Estimated {
        1.0
    } else {
        0.0
    });

    ProbeSample {
        at: cur.at,
        t_s: cur.at.saturating_duration_since(start).as_secs_f64(),
        seq,
        dt_s: dt,
        syn_source,
        m,
        per_cpu,
        listeners: cur
            .diag
            .as_ref()
            .map(|d| d.listeners.clone())
            .unwrap_or_default(),
        notes: Vec::new(),
        kernel: None,
    }
}

/// The levels at `cur`: queues, socket states (only when freshly walked), memory, processes.
fn gauges(cur: &Snapshot, k: HostConsts, m: &mut Metrics) {
    let f = |v: u64| Some(v as f64);
    if let Some(d) = &cur.diag {
        if !d.listeners.is_empty() {
            m.accept_queue = f(d.accept_queue());
            m.accept_queue_limit = f(d.accept_queue_limit());
        }
        m.port_listen_drops = d.listen_drops().map(|v| v as f64);
        // Only a sample that walked the states reports them: a repeated old count would pass
        // for a new one in the time series and in the points' means.
        if d.states_fresh {
            m.syn_recv = f(d.syn_recv);
            m.established = f(d.established);
            m.fin_wait = f(d.fin_wait);
            m.close_wait = f(d.close_wait);
            m.last_ack = f(d.last_ack);
            m.closing = f(d.closing);
            if let Some(q) = d.conns {
                let (rq, sq) = q.means();
                m.conn_recvq_bytes_mean = Some(rq);
                m.conn_recvq_bytes_max = f(q.recvq_max);
                m.conn_sendq_bytes_mean = Some(sq);
                m.conn_sendq_bytes_max = f(q.sendq_max);
                m.conn_retrans = f(q.retrans);
            }
            // No connection waiting: none has waited at all (0 ms).
            if let Some(w) = d.waiting {
                m.accept_queue_wait_oldest_ms = Some(w.map_or(0.0, |q| q.oldest_ms));
                m.accept_queue_wait_mean_ms = Some(w.map_or(0.0, |q| q.mean_ms));
            }
            if d.time_wait_walked {
                m.port_time_wait = f(d.time_wait);
            }
        }
    }
    if let Some(u) = &cur.udp {
        m.udp_rcv_queue_bytes = f(u.rqueue);
        m.udp_rcvbuf_bytes = f(u.rcvbuf);
        m.port_udp_drops = f(u.drops);
    }
    m.rmem_max_bytes = cur.rmem_max.map(|v| v as f64);
    if let Some(s) = &cur.sockstat {
        m.time_wait = f(s.tw);
        m.tcp_inuse = f(s.inuse);
        m.tcp_orphan = f(s.orphan);
        m.tcp_mem_pages = f(s.mem_pages);
    }
    if let Some(s) = &cur.stat {
        m.procs_running = f(s.procs_running);
        m.procs_blocked = f(s.procs_blocked);
    }
    if let Some(procs) = &cur.server {
        m.server_procs = f(procs.len() as u64);
        m.server_threads = f(procs.iter().map(|p| p.num_threads).sum());
        m.server_rss_mb = Some(
            procs.iter().map(|p| p.rss_pages).sum::<u64>() as f64 * k.page_size as f64 / 1048576.0,
        );
    }
    if let Some(c) = &cur.capture {
        m.pcap_drops = f(c.dropped);
        m.pcap_if_drops = f(c.if_dropped);
    }
}

/// The counts since the first sample (`base`).
fn totals(base: &Snapshot, cur: &Snapshot, m: &mut Metrics) {
    m.passive_opens_total = net_total(base, cur, "Tcp.PassiveOpens");
    m.active_opens_total = net_total(base, cur, "Tcp.ActiveOpens");
    m.listen_drops_total = net_total(base, cur, "TcpExt.ListenDrops");
    m.listen_overflows_total = net_total(base, cur, "TcpExt.ListenOverflows");
    m.udp_rcvbuf_errors_total = net_total(base, cur, "Udp.RcvbufErrors");
    if let (Some(b), Some(c)) = (&base.capture, &cur.capture) {
        let t = |x: u64, y: u64| delta(x, y, Width::U64).map(|d| d as f64);
        m.syn_in_total = t(b.syn_in, c.syn_in);
        m.syn_retrans_total = t(b.syn_retrans, c.syn_retrans);
        m.synack_out_total = t(b.synack_out, c.synack_out);
        m.rst_in_total = t(b.rst_in, c.rst_in);
        m.rst_out_total = t(b.rst_out, c.rst_out);
        m.quic_initial_in_total = t(b.initial_in, c.initial_in);
        m.quic_first_initial_total = t(b.first_initials(), c.first_initials());
    }
}

/// The server's and the load's CPUs between two snapshots: each set's split of its time, the
/// server's NET_RX softirqs; and the controller process's own CPU.
fn core_rates(p: &Snapshot, cur: &Snapshot, dt: f64, cores: &Cores, m: &mut Metrics) {
    if let (Some(a), Some(b)) = (&p.stat, &cur.stat) {
        let split = |cpus: &[usize]| {
            (!cpus.is_empty())
                .then(|| CpuPct::between(&a.of_cpus(cpus)?, &b.of_cpus(cpus)?))
                .flatten()
        };
        if let Some(c) = split(&cores.server) {
            m.server_cores_user_pct = Some(c.user + c.nice);
            m.server_cores_system_pct = Some(c.system);
            m.server_cores_irq_pct = Some(c.irq);
            m.server_cores_softirq_pct = Some(c.softirq);
            m.server_cores_steal_pct = Some(c.steal);
            m.server_cores_idle_pct = Some(c.idle + c.iowait);
        }
        if let Some(c) = split(&cores.load) {
            m.load_cores_user_pct = Some(c.user + c.nice);
            m.load_cores_system_pct = Some(c.system);
            m.load_cores_irq_pct = Some(c.irq);
            m.load_cores_softirq_pct = Some(c.softirq);
            m.load_cores_idle_pct = Some(c.idle + c.iowait);
        }
    }
    if let (Some(a), Some(b)) = (&p.softirqs, &cur.softirqs) {
        if !cores.server.is_empty() {
            m.server_cores_net_rx_per_s =
                SoftIrqs::delta_on(a, b, "NET_RX", &cores.server).map(|d| d as f64 / dt);
        }
    }
}

/// The rates and CPU shares between two snapshots `dt` seconds apart; returns each CPU's split.
fn rates(
    p: &Snapshot,
    cur: &Snapshot,
    dt: f64,
    k: HostConsts,
    m: &mut Metrics,
) -> Vec<Option<CpuPct>> {
    let mut per_cpu = Vec::new();
    let r = |key| net_rate(p, cur, key, dt);
    m.listen_drops_per_s = r("TcpExt.ListenDrops");
    m.passive_opens_per_s = r("Tcp.PassiveOpens");
    m.active_opens_per_s = r("Tcp.ActiveOpens");
    m.attempt_fails_per_s = r("Tcp.AttemptFails");
    m.estab_resets_per_s = r("Tcp.EstabResets");
    m.retrans_segs_per_s = r("Tcp.RetransSegs");
    m.out_rsts_per_s = r("Tcp.OutRsts");
    m.tcp_timeouts_per_s = r("TcpExt.TCPTimeouts");
    for reason in DROP_REASONS {
        m.set(reason.col, r(reason.counter));
    }
    m.udp_in_datagrams_per_s = r("Udp.InDatagrams");
    // Another set of sockets (the server restarted) starts its count anew: no rate then.
    let udp_drops = |s: &Snapshot| s.udp.map(|u| (u.set, u.drops));
    m.port_udp_drops_per_s = match (udp_drops(p), udp_drops(cur)) {
        (Some((a, x)), Some((b, y))) if a == b => rate(x, y, Width::U64, dt),
        _ => None,
    };
    // A listener opened again (a new backlog) starts its count anew: no rate for that interval.
    let port_drops = |s: &Snapshot| s.diag.as_ref().and_then(DiagSummary::listen_drops);
    m.port_listen_drops_per_s = rate_opt(port_drops(p), port_drops(cur), Width::U64, dt);

    if let (Some(a), Some(b)) = (&p.capture, &cur.capture) {
        let cr = |x, y| rate(x, y, Width::U64, dt);
        m.syn_in_per_s = cr(a.syn_in, b.syn_in);
        m.synack_out_per_s = cr(a.synack_out, b.synack_out);
        m.rst_in_per_s = cr(a.rst_in, b.rst_in);
        m.rst_out_per_s = cr(a.rst_out, b.rst_out);
        m.syn_retrans_per_s = cr(a.syn_retrans, b.syn_retrans);
        m.quic_initial_in_per_s = cr(a.initial_in, b.initial_in);
        m.quic_first_initial_per_s = cr(a.first_initials(), b.first_initials());
    }

    if let (Some(a), Some(b)) = (&p.stat, &cur.stat) {
        if let Some(c) = CpuPct::between(&a.total, &b.total) {
            m.cpu_user_pct = Some(c.user);
            m.cpu_nice_pct = Some(c.nice);
            m.cpu_system_pct = Some(c.system);
            m.cpu_irq_pct = Some(c.irq);
            m.cpu_softirq_pct = Some(c.softirq);
            m.cpu_iowait_pct = Some(c.iowait);
            m.cpu_idle_pct = Some(c.idle);
            m.cpu_steal_pct = Some(c.steal);
        }
        per_cpu = b
            .per_cpu
            .iter()
            .enumerate()
            .map(|(i, t)| {
                CpuPct::between(a.per_cpu.get(i).copied().flatten().as_ref()?, t.as_ref()?)
            })
            .collect();
        m.ctxt_per_s = rate(a.ctxt, b.ctxt, Width::U64, dt);
        m.intr_per_s = rate(a.intr, b.intr, Width::U64, dt);
    }
    if let (Some(a), Some(b)) = (&p.softirqs, &cur.softirqs) {
        m.net_rx_softirq_per_s = SoftIrqs::delta(a, b, "NET_RX").map(|d| d as f64 / dt);
        m.net_tx_softirq_per_s = SoftIrqs::delta(a, b, "NET_TX").map(|d| d as f64 / dt);
    }
    if let (Some(a), Some(b)) = (&p.server, &cur.server) {
        let (u, s) = server_ticks(a, b);
        let ticks = k.clk_tck as f64 * dt;
        m.server_cpu_user_pct = pct(u as f64, ticks);
        m.server_cpu_sys_pct = pct(s as f64, ticks);
    }
    let used = cur.probe_cpu_us.saturating_sub(p.probe_cpu_us) as f64;
    m.probe_cpu_pct = pct(used, dt * 1e6);
    if let (Some(a), Some(b)) = (p.self_ticks, cur.self_ticks) {
        m.controller_cpu_pct = pct(b.saturating_sub(a) as f64, k.clk_tck as f64 * dt);
    }
    per_cpu
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::cpustat::CpuTimes;
    use std::time::Duration;

    const K: HostConsts = HostConsts {
        clk_tck: 100,
        page_size: 4096,
    };

    fn net(passive: u64, drops: u64, overflows: u64) -> NetCounters {
        let snmp = format!("Tcp: ActiveOpens PassiveOpens\nTcp: 5 {passive}\n");
        let netstat = format!("TcpExt: ListenOverflows ListenDrops\nTcpExt: {overflows} {drops}\n");
        NetCounters::parse(&snmp, &netstat).unwrap()
    }

    fn pid(pid: u32, start: u64, u: u64, s: u64) -> PidStat {
        PidStat {
            pid,
            comm: "srv".into(),
            state: 'S',
            ppid: 1,
            utime: u,
            stime: s,
            cutime: 0,
            cstime: 0,
            num_threads: 2,
            starttime: start,
            rss_pages: 256,
        }
    }

    /// `text` (snmp/netstat-style) with counter `Group.Name` raised by `by`.
    fn bump(text: &str, key: &str, by: i64) -> String {
        let (group, name) = key.split_once('.').unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for i in (0..lines.len().saturating_sub(1)).step_by(2) {
            let (g, names) = lines[i].split_once(':').unwrap();
            let Some(at) = names.split_whitespace().position(|n| n == name) else {
                continue;
            };
            if g != group {
                continue;
            }
            let (g, vals) = lines[i + 1].split_once(':').unwrap();
            let mut vals: Vec<String> = vals.split_whitespace().map(String::from).collect();
            vals[at] = (vals[at].parse::<i64>().unwrap() + by).to_string();
            out[i + 1] = format!("{g}: {}", vals.join(" "));
        }
        out.join("\n")
    }

    #[test]
    fn every_drop_reason_is_a_rate_of_its_counter_from_the_real_files() {
        let snmp = include_str!("../../tests/fixtures/proc_net_snmp.txt");
        let netstat = include_str!("../../tests/fixtures/proc_net_netstat.txt");
        let (mut snmp2, mut netstat2) = (snmp.to_string(), netstat.to_string());
        for (i, r) in DROP_REASONS.iter().enumerate() {
            let by = 10 * (i as i64 + 1);
            if r.counter.starts_with("Udp.") {
                snmp2 = bump(&snmp2, r.counter, by);
            } else {
                netstat2 = bump(&netstat2, r.counter, by);
            }
        }
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        a.net = Some(NetCounters::parse(snmp, netstat).unwrap());
        let mut b = Snapshot::empty(t0 + Duration::from_secs(2));
        b.net = Some(NetCounters::parse(&snmp2, &netstat2).unwrap());
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        for (i, r) in DROP_REASONS.iter().enumerate() {
            assert!(Metrics::COLUMNS.contains(&r.col), "{}", r.col.name());
            assert_eq!(
                s.m.get(r.col),
                Some(5.0 * (i as f64 + 1.0)),
                "{}",
                r.counter
            );
        }
        assert_eq!(s.m.listen_overflows_per_s, Some(30.0));
    }

    #[test]
    fn first_sample_has_gauges_but_no_rates() {
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        a.net = Some(net(10, 0, 0));
        a.sockstat = Some(SockStat {
            tw: 42,
            ..Default::default()
        });
        let s = build(&a, None, &a, t0, 0, K, &Cores::default());
        assert_eq!(s.m.time_wait, Some(42.0));
        assert_eq!(s.m.passive_opens_per_s, None);
        assert_eq!(s.m.passive_opens_total, Some(0.0));
        assert_eq!(s.dt_s, None);
    }

    #[test]
    fn state_counts_only_from_a_sample_that_walked_them() {
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        let walked = DiagSummary {
            listeners: vec![ListenQueue {
                local: "127.0.0.1".into(),
                port: 80,
                queued: 3,
                limit: 128,
                drops: Some(40),
            }],
            established: 7,
            syn_recv: 2,
            states_fresh: true,
            ..Default::default()
        };
        a.diag = Some(walked.clone());
        let s = build(&a, None, &a, t0, 0, K, &Cores::default());
        assert_eq!((s.m.established, s.m.syn_recv), (Some(7.0), Some(2.0)));
        // Walked without ages (the tcp_info walk failed): no wait figures; none waiting: 0.
        assert_eq!(s.m.accept_queue_wait_oldest_ms, None);
        let mut w = walked.clone();
        w.waiting = Some(None);
        a.diag = Some(w.clone());
        let s = build(&a, None, &a, t0, 0, K, &Cores::default());
        assert_eq!(s.m.accept_queue_wait_mean_ms, Some(0.0));
        w.waiting = Some(crate::model::acceptq::QueueAges::of(&[10, 30]));
        a.diag = Some(w);
        let s = build(&a, None, &a, t0, 0, K, &Cores::default());
        assert_eq!(
            (
                s.m.accept_queue_wait_oldest_ms,
                s.m.accept_queue_wait_mean_ms
            ),
            (Some(30.0), Some(20.0))
        );
        // A sample without a walk: the accept queue (queried every sample) is reported, state
        // counts are not, whatever the summary holds.
        a.diag = Some(DiagSummary {
            states_fresh: false,
            ..walked
        });
        let s = build(&a, None, &a, t0, 1, K, &Cores::default());
        assert_eq!((s.m.established, s.m.syn_recv), (None, None));
        assert_eq!(s.m.accept_queue, Some(3.0));
    }

    #[test]
    fn the_ports_listen_drops_are_its_listeners_own() {
        let t0 = Instant::now();
        let listener = |drops| ListenQueue {
            local: "127.0.0.1".into(),
            port: 80,
            queued: 0,
            limit: 128,
            drops,
        };
        let snap = |at, drops: [Option<u32>; 2]| {
            let mut s = Snapshot::empty(at);
            s.diag = Some(DiagSummary {
                listeners: drops.map(listener).to_vec(),
                ..Default::default()
            });
            // The namespace counts other ports' drops too.
            s.net = Some(net(0, 9000, 9000));
            s
        };
        let a = snap(t0, [Some(10), Some(5)]);
        let b = snap(t0 + Duration::from_millis(500), [Some(30), Some(35)]);
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.m.port_listen_drops, Some(65.0));
        assert_eq!(s.m.port_listen_drops_per_s, Some(100.0));
        // A listener that did not say: no figure rather than a part of one.
        let c = snap(t0 + Duration::from_secs(1), [Some(40), None]);
        let s = build(&a, Some(&b), &c, t0, 2, K, &Cores::default());
        assert_eq!(
            (s.m.port_listen_drops, s.m.port_listen_drops_per_s),
            (None, None)
        );
        // Listening again starts the count anew: no rate over that interval.
        let d = snap(t0 + Duration::from_secs(1), [Some(0), Some(0)]);
        let s = build(&a, Some(&b), &d, t0, 2, K, &Cores::default());
        assert_eq!(s.m.port_listen_drops_per_s, None);
    }

    #[test]
    fn rates_totals_and_estimated_syns() {
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        a.net = Some(net(100, 10, 4));
        a.probe_cpu_us = 1000;
        let mut b = Snapshot::empty(t0 + Duration::from_millis(500));
        b.net = Some(net(300, 60, 54));
        b.probe_cpu_us = 2000;
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.m.passive_opens_per_s, Some(400.0));
        assert_eq!(s.m.listen_drops_per_s, Some(100.0));
        assert_eq!(s.m.listen_overflows_total, Some(50.0));
        assert_eq!(s.syn_source, SynSource::Estimated);
        assert_eq!(s.m.syn_in_per_s, Some(500.0));
        assert_eq!(s.m.syn_in_estimated, Some(1.0));
        assert!((s.m.probe_cpu_pct.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(s.t_s, 0.5);
    }

    #[test]
    fn counter_reset_gives_no_rate() {
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        a.net = Some(net(100, 0, 0));
        let mut b = Snapshot::empty(t0 + Duration::from_secs(1));
        b.net = Some(net(3, 0, 0));
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.m.passive_opens_per_s, None);
        assert_eq!(s.m.passive_opens_total, None);
    }

    #[test]
    fn pcap_counts_win_over_the_estimate() {
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        a.capture = Some(CaptureTotals {
            syn_in: 10,
            syn_retrans: 1,
            ..Default::default()
        });
        let mut b = Snapshot::empty(t0 + Duration::from_secs(2));
        b.capture = Some(CaptureTotals {
            syn_in: 210,
            syn_retrans: 5,
            dropped: 3,
            ..Default::default()
        });
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.syn_source, SynSource::Pcap);
        assert_eq!(s.m.syn_in_per_s, Some(100.0));
        assert_eq!(s.m.syn_retrans_per_s, Some(2.0));
        assert_eq!(s.m.syn_in_total, Some(200.0));
        assert_eq!(s.m.pcap_drops, Some(3.0));
        assert_eq!(s.m.syn_in_estimated, Some(0.0));
    }

    #[test]
    fn cpu_split_total_and_per_cpu() {
        let t0 = Instant::now();
        let cpu = |u, i| CpuTimes {
            user: u,
            idle: i,
            ..Default::default()
        };
        let mut a = Snapshot::empty(t0);
        a.stat = Some(ProcStat {
            total: cpu(0, 0),
            per_cpu: vec![Some(cpu(0, 0)), Some(cpu(0, 0))],
            ..Default::default()
        });
        let mut b = Snapshot::empty(t0 + Duration::from_secs(1));
        b.stat = Some(ProcStat {
            total: cpu(100, 100),
            per_cpu: vec![Some(cpu(100, 0)), Some(cpu(0, 100))],
            ..Default::default()
        });
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.m.cpu_user_pct, Some(50.0));
        assert_eq!(s.per_cpu[0].unwrap().user, 100.0);
        assert_eq!(s.per_cpu[1].unwrap().idle, 100.0);
    }

    #[test]
    fn the_server_cores_split_adds_up_and_counts_their_net_rx() {
        let t0 = Instant::now();
        let cpu = |u, s, si, i| CpuTimes {
            user: u,
            system: s,
            softirq: si,
            idle: i,
            ..Default::default()
        };
        let irqs = |a: u64, b: u64| SoftIrqs {
            rows: vec![("NET_RX".into(), vec![a, b])],
        };
        let mut a = Snapshot::empty(t0);
        a.stat = Some(ProcStat {
            per_cpu: vec![Some(cpu(0, 0, 0, 0)), Some(cpu(0, 0, 0, 0))],
            ..Default::default()
        });
        a.softirqs = Some(irqs(0, 0));
        a.self_ticks = Some(10);
        let mut b = Snapshot::empty(t0 + Duration::from_secs(1));
        b.stat = Some(ProcStat {
            per_cpu: vec![Some(cpu(90, 10, 0, 0)), Some(cpu(20, 10, 30, 40))],
            ..Default::default()
        });
        b.softirqs = Some(irqs(50, 4000));
        b.self_ticks = Some(15);
        let cores = Cores {
            server: vec![1],
            load: vec![0],
        };
        let s = build(&a, Some(&a), &b, t0, 1, K, &cores);
        let m = &s.m;
        assert_eq!(m.server_cores_softirq_pct, Some(30.0));
        assert_eq!(m.server_cores_user_pct, Some(20.0));
        assert_eq!(m.server_cores_net_rx_per_s, Some(4000.0));
        assert_eq!(m.load_cores_user_pct, Some(90.0));
        assert_eq!(m.controller_cpu_pct, Some(5.0));
        let sum: f64 = [
            m.server_cores_user_pct,
            m.server_cores_system_pct,
            m.server_cores_irq_pct,
            m.server_cores_softirq_pct,
            m.server_cores_steal_pct,
            m.server_cores_idle_pct,
        ]
        .iter()
        .map(|v| v.unwrap())
        .sum();
        assert_eq!(sum, 100.0);
        let none = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(none.m.server_cores_softirq_pct, None);
    }

    #[test]
    fn server_cpu_follows_processes_that_come_and_go() {
        let t0 = Instant::now();
        let mut a = Snapshot::empty(t0);
        a.server = Some(vec![pid(1, 5, 100, 10), pid(2, 6, 50, 0)]);
        let mut b = Snapshot::empty(t0 + Duration::from_secs(1));
        // pid 2 exited; pid 3 is new; pid 1 used 30 user + 20 sys ticks.
        b.server = Some(vec![pid(1, 5, 130, 30), pid(3, 900, 10, 5)]);
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.m.server_cpu_user_pct, Some(40.0));
        assert_eq!(s.m.server_cpu_sys_pct, Some(25.0));
        assert_eq!(s.m.server_procs, Some(2.0));
        assert_eq!(s.m.server_threads, Some(4.0));
        assert_eq!(s.m.server_rss_mb, Some(2.0));
    }

    #[test]
    fn server_cpu_counts_reaped_children_once() {
        let t0 = Instant::now();
        let with_children = |mut p: PidStat, cu, cs| {
            (p.cutime, p.cstime) = (cu, cs);
            p
        };
        let mut a = Snapshot::empty(t0);
        let mut worker = pid(2, 6, 50, 20);
        worker.ppid = 1;
        a.server = Some(vec![pid(1, 5, 100, 10), worker]);
        let mut b = Snapshot::empty(t0 + Duration::from_secs(1));
        // pid 1 reaped CGI programs that used 30 + 20 ticks between the readings, and the
        // worker pid 2 (50 + 20 counted already, 3 + 1 more in its last slice).
        b.server = Some(vec![with_children(pid(1, 5, 105, 12), 30 + 53, 20 + 21)]);
        let s = build(&a, Some(&a), &b, t0, 1, K, &Cores::default());
        assert_eq!(s.m.server_cpu_user_pct, Some(5.0 + 30.0 + 3.0));
        assert_eq!(s.m.server_cpu_sys_pct, Some(2.0 + 20.0 + 1.0));
    }

    #[test]
    fn column_names_are_unique_snake_case() {
        let names: Vec<String> = Metrics::COLUMNS.iter().map(|c| c.name().into()).collect();
        assert_eq!(names, Metrics::FIELDS, "each field is named as its column");
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let set: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len());
        assert!(names.iter().all(|n| n
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')));
        for want in [
            "syn_in_per_s",
            "accept_queue",
            "time_wait",
            "cpu_softirq_pct",
            "probe_cpu_pct",
            "listen_drops_total",
        ] {
            assert!(names.contains(&want), "{want}");
        }
    }
}
