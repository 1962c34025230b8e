//! Every time-series figure as a typed id: its column name (the CSV header), unit and kind.
//! The fixed figures are the consts of [`col`]; a network path's own figures are
//! [`Col::of_path`] of one of [`PATH_FIGURES`], a request class's [`Col::of_class`] of one of
//! [`CLASS_FIGURES`]. No other column can be named, so a renamed or misspelt figure is a
//! compile error instead of a column that silently reads NaN.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// What one unit of a figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    PerSecond,
    Count,
    Percent,
    Seconds,
    Milliseconds,
    Microseconds,
    Megabytes,
    /// Memory pages of the kernel.
    Pages,
    /// Bytes (a socket's queue or buffer).
    Bytes,
    /// 0 or 1.
    Flag,
}

impl Unit {
    /// Its short symbol, as a chart's axis says it.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::PerSecond => "/s",
            Unit::Count => "",
            Unit::Percent => "%",
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "us",
            Unit::Megabytes => "MB",
            Unit::Pages => "pages",
            Unit::Bytes => "B",
            Unit::Flag => "",
        }
    }
}

/// How a figure is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Events per second over the sample.
    Rate,
    /// A level at the sample's instant (or its share of the sample, for CPU).
    Gauge,
    /// A count since the run (or the source) started.
    Counter,
    /// A quantile of the latencies recorded in the sample.
    Percentile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Def {
    name: &'static str,
    unit: Unit,
    kind: Kind,
}

/// `name` as a `&'static str`, leaked once per distinct name so the columns naming it stay
/// `Copy` (a lab has a few paths and classes; a process runs a few labs: the set stays small).
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// A network path's name (already checked to be letters, digits, - and _).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathName(&'static str);

impl PathName {
    pub fn new(name: &str) -> Self {
        PathName(intern(name))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

/// A request class's name as its columns spell it: the mix's `class` label with every
/// character other than a letter, digit, - or _ as `_` (a class left unnamed is its path,
/// `/bytes/1294` -> `_bytes_1294`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassName(&'static str);

impl ClassName {
    pub fn new(label: &str) -> Self {
        let safe: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        ClassName(intern(&safe))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Id {
    Fixed(&'static Def),
    Path(PathName, &'static Def),
    Class(ClassName, &'static Def),
}

/// One time-series column. Made only here: a const of [`col`], or a path's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Col(Id);

impl Col {
    fn def(self) -> &'static Def {
        match self.0 {
            Id::Fixed(d) | Id::Path(_, d) | Id::Class(_, d) => d,
        }
    }

    /// Its name in timeseries.csv: the figure's, `path_<path>_<figure>` or
    /// `class_<class>_<figure>`.
    pub fn name(self) -> Cow<'static, str> {
        match self.0 {
            Id::Fixed(d) => Cow::Borrowed(d.name),
            Id::Path(p, d) => Cow::Owned(format!("path_{}_{}", p.0, d.name)),
            Id::Class(c, d) => Cow::Owned(format!("class_{}_{}", c.0, d.name)),
        }
    }

    pub fn unit(self) -> Unit {
        self.def().unit
    }

    pub fn kind(self) -> Kind {
        self.def().kind
    }

    /// This figure for one network path (a path's column is its figure with the path's name).
    pub fn of_path(self, path: PathName) -> Col {
        Col(Id::Path(path, self.def()))
    }

    /// The path a column belongs to, None for a fixed one or a class's.
    pub fn path(self) -> Option<PathName> {
        match self.0 {
            Id::Path(p, _) => Some(p),
            Id::Fixed(_) | Id::Class(..) => None,
        }
    }

    /// This figure for one request class.
    pub fn of_class(self, class: ClassName) -> Col {
        Col(Id::Class(class, self.def()))
    }

    /// The request class a column belongs to, None for a fixed one or a path's.
    pub fn class(self) -> Option<ClassName> {
        match self.0 {
            Id::Class(c, _) => Some(c),
            Id::Fixed(_) | Id::Path(..) => None,
        }
    }

    /// The fixed figure a path's or a class's column is of (a fixed column is its own).
    pub fn figure(self) -> Col {
        Col(Id::Fixed(self.def()))
    }
}

impl std::fmt::Display for Col {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

macro_rules! columns {
    ($($c:ident = $name:literal, $unit:ident, $kind:ident;)*) => {
        /// The fixed figures of the time series, one const each.
        pub mod col {
            use super::{Col, Def, Id, Kind, Unit};
            $(
                pub const $c: Col = Col(Id::Fixed(&Def {
                    name: $name,
                    unit: Unit::$unit,
                    kind: Kind::$kind,
                }));
            )*
            /// Every fixed figure, in declaration order.
            pub const ALL: &[Col] = &[$($c),*];
        }
    };
}

columns! {
    // The clients' figures (the workers' reports folded per sample) and the server's own count.
    ATTEMPTS = "attempts_per_s", PerSecond, Rate;
    ESTABLISHED = "established_per_s", PerSecond, Rate;
    RESPONSES = "responses_per_s", PerSecond, Rate;
    BYTES_IN = "bytes_in_per_s", PerSecond, Rate;
    ERRORS = "errors_per_s", PerSecond, Rate;
    CONNECT_TIMEOUTS = "connect_timeouts_per_s", PerSecond, Rate;
    REFUSED = "refused_per_s", PerSecond, Rate;
    RESETS = "resets_per_s", PerSecond, Rate;
    TARGET_RATE = "target_rate", PerSecond, Rate;
    CONNECT_P50 = "connect_p50_ms", Milliseconds, Percentile;
    CONNECT_P90 = "connect_p90_ms", Milliseconds, Percentile;
    CONNECT_P99 = "connect_p99_ms", Milliseconds, Percentile;
    TOTAL_P50 = "total_p50_ms", Milliseconds, Percentile;
    TOTAL_P90 = "total_p90_ms", Milliseconds, Percentile;
    TOTAL_P99 = "total_p99_ms", Milliseconds, Percentile;
    IN_FLIGHT = "in_flight", Count, Gauge;
    LAG_MAX = "lag_ms_max", Milliseconds, Gauge;
    WORKER_CPU = "worker_cpu_pct", Percent, Gauge;
    SERVER_RESPONSES = "server_responses_per_s", PerSecond, Rate;
    // The clients' requests apart from their connections (keep-alive: many per connection),
    // what failed of each, what is in progress, and the pool a request rate is sent over.
    REQUESTS = "requests_per_s", PerSecond, Rate;
    CONNECTION_ERRORS = "connection_errors_per_s", PerSecond, Rate;
    REQUEST_ERRORS = "request_errors_per_s", PerSecond, Rate;
    RESPONSE_TIMEOUTS = "response_timeouts_per_s", PerSecond, Rate;
    BAD_RESPONSES = "bad_responses_per_s", PerSecond, Rate;
    ADDR_NOT_AVAIL = "addr_not_avail_per_s", PerSecond, Rate;
    OUT_OF_FDS = "out_of_fds_per_s", PerSecond, Rate;
    CONNECT_OTHER_ERRORS = "connect_other_errors_per_s", PerSecond, Rate;
    REQUEST_OTHER_ERRORS = "request_other_errors_per_s", PerSecond, Rate;
    POOL_WAITS = "pool_waits_per_s", PerSecond, Rate;
    CONNECTING = "connecting", Count, Gauge;
    REQUESTS_IN_FLIGHT = "requests_in_flight", Count, Gauge;
    POOL_CONNECTIONS = "pool_connections", Count, Gauge;
    // The probes' figures (`probe::Metrics`, one per field).
    SYN_IN = "syn_in_per_s", PerSecond, Rate;
    SYN_IN_ESTIMATED = "syn_in_estimated", Flag, Gauge;
    SYNACK_OUT_PER_S = "synack_out_per_s", PerSecond, Rate;
    RST_IN_PER_S = "rst_in_per_s", PerSecond, Rate;
    RST_OUT_PER_S = "rst_out_per_s", PerSecond, Rate;
    SYN_RETRANS_PER_S = "syn_retrans_per_s", PerSecond, Rate;
    PCAP_DROPS = "pcap_drops", Count, Counter;
    PCAP_IF_DROPS = "pcap_if_drops", Count, Counter;
    ACCEPT_QUEUE = "accept_queue", Count, Gauge;
    ACCEPT_QUEUE_LIMIT = "accept_queue_limit", Count, Gauge;
    ACCEPT_QUEUE_WAIT_OLDEST = "accept_queue_wait_oldest_ms", Milliseconds, Gauge;
    ACCEPT_QUEUE_WAIT_MEAN = "accept_queue_wait_mean_ms", Milliseconds, Gauge;
    SYN_RECV = "syn_recv", Count, Gauge;
    ESTABLISHED_SOCKS = "established", Count, Gauge;
    CONN_RECVQ_MEAN = "conn_recvq_bytes_mean", Count, Gauge;
    CONN_RECVQ_MAX = "conn_recvq_bytes_max", Count, Gauge;
    CONN_SENDQ_MEAN = "conn_sendq_bytes_mean", Count, Gauge;
    CONN_SENDQ_MAX = "conn_sendq_bytes_max", Count, Gauge;
    CONN_RETRANS = "conn_retrans", Count, Gauge;
    FIN_WAIT = "fin_wait", Count, Gauge;
    CLOSE_WAIT = "close_wait", Count, Gauge;
    LAST_ACK = "last_ack", Count, Gauge;
    CLOSING = "closing", Count, Gauge;
    TIME_WAIT = "time_wait", Count, Gauge;
    TCP_INUSE = "tcp_inuse", Count, Gauge;
    TCP_ORPHAN = "tcp_orphan", Count, Gauge;
    TCP_MEM_PAGES = "tcp_mem_pages", Pages, Gauge;
    LISTEN_OVERFLOWS = "listen_overflows_per_s", PerSecond, Rate;
    LISTEN_DROPS_PER_S = "listen_drops_per_s", PerSecond, Rate;
    PASSIVE_OPENS_PER_S = "passive_opens_per_s", PerSecond, Rate;
    ACTIVE_OPENS_PER_S = "active_opens_per_s", PerSecond, Rate;
    ATTEMPT_FAILS_PER_S = "attempt_fails_per_s", PerSecond, Rate;
    ESTAB_RESETS_PER_S = "estab_resets_per_s", PerSecond, Rate;
    RETRANS_SEGS_PER_S = "retrans_segs_per_s", PerSecond, Rate;
    OUT_RSTS_PER_S = "out_rsts_per_s", PerSecond, Rate;
    TCP_TIMEOUTS_PER_S = "tcp_timeouts_per_s", PerSecond, Rate;
    SYNCOOKIES_SENT_PER_S = "syncookies_sent_per_s", PerSecond, Rate;
    REQQ_FULL_DROPS_PER_S = "reqq_full_drops_per_s", PerSecond, Rate;
    REQQ_FULL_COOKIES_PER_S = "reqq_full_cookies_per_s", PerSecond, Rate;
    SYNCOOKIES_RECV_PER_S = "syncookies_recv_per_s", PerSecond, Rate;
    SYNCOOKIES_FAILED_PER_S = "syncookies_failed_per_s", PerSecond, Rate;
    BACKLOG_DROPS_PER_S = "backlog_drops_per_s", PerSecond, Rate;
    RCVQ_DROPS_PER_S = "rcvq_drops_per_s", PerSecond, Rate;
    ZERO_WINDOW_DROPS_PER_S = "zero_window_drops_per_s", PerSecond, Rate;
    TIME_WAIT_OVERFLOWS_PER_S = "time_wait_overflows_per_s", PerSecond, Rate;
    ABORT_ON_MEMORY_PER_S = "abort_on_memory_per_s", PerSecond, Rate;
    UDP_RCVBUF_ERRORS_PER_S = "udp_rcvbuf_errors_per_s", PerSecond, Rate;
    UDP_IN_ERRORS_PER_S = "udp_in_errors_per_s", PerSecond, Rate;
    CPU_USER = "cpu_user_pct", Percent, Gauge;
    CPU_NICE_PCT = "cpu_nice_pct", Percent, Gauge;
    CPU_SYSTEM = "cpu_system_pct", Percent, Gauge;
    CPU_IRQ = "cpu_irq_pct", Percent, Gauge;
    CPU_SOFTIRQ = "cpu_softirq_pct", Percent, Gauge;
    CPU_IOWAIT_PCT = "cpu_iowait_pct", Percent, Gauge;
    CPU_IDLE = "cpu_idle_pct", Percent, Gauge;
    CPU_STEAL_PCT = "cpu_steal_pct", Percent, Gauge;
    CTXT_PER_S = "ctxt_per_s", PerSecond, Rate;
    INTR_PER_S = "intr_per_s", PerSecond, Rate;
    NET_RX_SOFTIRQ_PER_S = "net_rx_softirq_per_s", PerSecond, Rate;
    NET_TX_SOFTIRQ_PER_S = "net_tx_softirq_per_s", PerSecond, Rate;
    PROCS_RUNNING = "procs_running", Count, Gauge;
    PROCS_BLOCKED = "procs_blocked", Count, Gauge;
    SERVER_PROCS = "server_procs", Count, Gauge;
    SERVER_WORKERS = "server_workers", Count, Gauge;
    SERVER_BUSY = "server_busy", Count, Gauge;
    SERVER_THREADS = "server_threads", Count, Gauge;
    SERVER_CPU_USER_PCT = "server_cpu_user_pct", Percent, Gauge;
    SERVER_CPU_SYS_PCT = "server_cpu_sys_pct", Percent, Gauge;
    SERVER_RSS_MB = "server_rss_mb", Megabytes, Gauge;
    PROBE_CPU = "probe_cpu_pct", Percent, Gauge;
    SYN_IN_TOTAL = "syn_in_total", Count, Counter;
    SYN_RETRANS_TOTAL = "syn_retrans_total", Count, Counter;
    SYNACK_OUT_TOTAL = "synack_out_total", Count, Counter;
    RST_IN_TOTAL = "rst_in_total", Count, Counter;
    RST_OUT_TOTAL = "rst_out_total", Count, Counter;
    PASSIVE_OPENS_TOTAL = "passive_opens_total", Count, Counter;
    LISTEN_DROPS_TOTAL = "listen_drops_total", Count, Counter;
    LISTEN_OVERFLOWS_TOTAL = "listen_overflows_total", Count, Counter;
    ACTIVE_OPENS_TOTAL = "active_opens_total", Count, Counter;
    UDP_RCVBUF_ERRORS_TOTAL = "udp_rcvbuf_errors_total", Count, Counter;
    // The delay router's figures.
    ROUTER_FRAMES_PER_S = "router_frames_per_s", PerSecond, Rate;
    ROUTER_LOST_PER_S = "router_lost_per_s", PerSecond, Rate;
    ROUTER_QUEUE_DROPS_PER_S = "router_queue_drops_per_s", PerSecond, Rate;
    ROUTER_RING_DROPS_PER_S = "router_ring_drops_per_s", PerSecond, Rate;
    ROUTER_CPU_PCT = "router_cpu_pct", Percent, Gauge;
    ROUTER_QUEUE = "router_queue", Count, Gauge;
    ROUTER_LATE_P50_US = "router_late_p50_us", Microseconds, Percentile;
    ROUTER_LATE_P99_US = "router_late_p99_us", Microseconds, Percentile;
    // The probes' per-port TIME_WAIT (sock_diag; `synlab probe` walks it, the lab reads the
    // namespace's from sockstat).
    PORT_TIME_WAIT = "port_time_wait", Count, Gauge;
    // The server's own CPUs apart from the load's (issue 26): each set's split of its time
    // (/proc/stat per CPU), the server's NET_RX softirqs (/proc/softirqs per CPU), the
    // controller process, and the load's processes together.
    SERVER_CORES_USER = "server_cores_user_pct", Percent, Gauge;
    SERVER_CORES_SYSTEM = "server_cores_system_pct", Percent, Gauge;
    SERVER_CORES_IRQ = "server_cores_irq_pct", Percent, Gauge;
    SERVER_CORES_SOFTIRQ = "server_cores_softirq_pct", Percent, Gauge;
    SERVER_CORES_STEAL = "server_cores_steal_pct", Percent, Gauge;
    SERVER_CORES_IDLE = "server_cores_idle_pct", Percent, Gauge;
    SERVER_CORES_NET_RX = "server_cores_net_rx_per_s", PerSecond, Rate;
    LOAD_CORES_USER = "load_cores_user_pct", Percent, Gauge;
    LOAD_CORES_SYSTEM = "load_cores_system_pct", Percent, Gauge;
    LOAD_CORES_IRQ = "load_cores_irq_pct", Percent, Gauge;
    LOAD_CORES_SOFTIRQ = "load_cores_softirq_pct", Percent, Gauge;
    LOAD_CORES_IDLE = "load_cores_idle_pct", Percent, Gauge;
    CONTROLLER_CPU = "controller_cpu_pct", Percent, Gauge;
    LOAD_CPU = "load_cpu_pct", Percent, Gauge;
    // TLS (issue 30): the clients' handshakes, full and resumed, their failures, the resumed
    // share, the handshake's own duration; and the server's own count of its handshakes.
    HANDSHAKES = "handshakes_per_s", PerSecond, Rate;
    FULL_HANDSHAKES = "full_handshakes_per_s", PerSecond, Rate;
    RESUMED_HANDSHAKES = "resumed_handshakes_per_s", PerSecond, Rate;
    HANDSHAKE_ERRORS = "handshake_errors_per_s", PerSecond, Rate;
    RESUMED_SHARE = "resumed_share_pct", Percent, Gauge;
    HANDSHAKING = "handshaking", Count, Gauge;
    HANDSHAKE_P50 = "tls_handshake_p50_ms", Milliseconds, Percentile;
    HANDSHAKE_P90 = "tls_handshake_p90_ms", Milliseconds, Percentile;
    HANDSHAKE_P99 = "tls_handshake_p99_ms", Milliseconds, Percentile;
    SERVER_FULL_HANDSHAKES = "server_full_handshakes_per_s", PerSecond, Rate;
    SERVER_RESUMED_HANDSHAKES = "server_resumed_handshakes_per_s", PerSecond, Rate;
    // The built-in server's own count of its QUIC handshakes and Retry packets (HTTP/3): whole,
    // since its QUIC stack does not say which handshakes resumed.
    SERVER_QUIC_HANDSHAKES = "server_quic_handshakes_per_s", PerSecond, Rate;
    SERVER_QUIC_RETRIES = "server_quic_retries_per_s", PerSecond, Rate;
    // The server port's own listen drops (issue 42): its listening sockets' SK_MEMINFO_DROPS
    // by sock_diag, where `listen_drops_per_s` and `listen_overflows_per_s` count every port
    // of the namespace.
    PORT_LISTEN_DROPS = "port_listen_drops", Count, Counter;
    PORT_LISTEN_DROPS_PER_S = "port_listen_drops_per_s", PerSecond, Rate;
    // The UDP side (issue 47): the server port's UDP sockets by sock_diag (bytes waiting,
    // their buffer, their own drops), the namespace's Udp counters, the machine's
    // net.core.rmem_max, and the QUIC Initials arriving at the port by pcap.
    UDP_RCV_QUEUE = "udp_rcv_queue_bytes", Bytes, Gauge;
    UDP_RCVBUF = "udp_rcvbuf_bytes", Bytes, Gauge;
    RMEM_MAX = "rmem_max_bytes", Bytes, Gauge;
    PORT_UDP_DROPS = "port_udp_drops", Count, Counter;
    PORT_UDP_DROPS_PER_S = "port_udp_drops_per_s", PerSecond, Rate;
    UDP_IN_DATAGRAMS_PER_S = "udp_in_datagrams_per_s", PerSecond, Rate;
    UDP_NO_PORTS_PER_S = "udp_no_ports_per_s", PerSecond, Rate;
    QUIC_INITIAL_IN_PER_S = "quic_initial_in_per_s", PerSecond, Rate;
    QUIC_FIRST_INITIAL_PER_S = "quic_first_initial_per_s", PerSecond, Rate;
    QUIC_INITIAL_IN_TOTAL = "quic_initial_in_total", Count, Counter;
    QUIC_FIRST_INITIAL_TOTAL = "quic_first_initial_total", Count, Counter;
    // HTTP/2 (issue 46): the clients' streams against the server's advertised limit, what
    // the server refused, reset or went away from, the setups, HPACK and flow control.
    H2_STREAMS_MAX = "h2_streams_max", Count, Gauge;
    H2_STREAMS_LIMIT = "h2_streams_limit", Count, Gauge;
    H2_REFUSED_STREAMS = "h2_refused_streams_per_s", PerSecond, Rate;
    H2_STREAM_RESETS = "h2_stream_resets_per_s", PerSecond, Rate;
    H2_GOAWAYS = "h2_goaways_per_s", PerSecond, Rate;
    H2_ALPN_REFUSED = "h2_alpn_refused_per_s", PerSecond, Rate;
    H2_SETUPS = "h2_setups_per_s", PerSecond, Rate;
    H2_FLOW_STALL = "h2_flow_stall_ms_per_s", PerSecond, Rate;
    // HTTP/3 (issue 47): the load clients' QUIC stack: handshakes by kind and their time,
    // Retry received, datagrams and bytes both ways, its own losses, connection errors by kind.
    QUIC_HANDSHAKES_FULL = "quic_handshakes_full_per_s", PerSecond, Rate;
    QUIC_HANDSHAKES_RESUMED = "quic_handshakes_resumed_per_s", PerSecond, Rate;
    QUIC_HANDSHAKES_0RTT = "quic_handshakes_0rtt_per_s", PerSecond, Rate;
    QUIC_HANDSHAKE_MS = "quic_handshake_ms_mean", Milliseconds, Gauge;
    QUIC_RETRY = "quic_retry_per_s", PerSecond, Rate;
    QUIC_PACKETS_SENT = "quic_packets_sent_per_s", PerSecond, Rate;
    QUIC_PACKETS_RECV = "quic_packets_recv_per_s", PerSecond, Rate;
    QUIC_BYTES_SENT = "quic_bytes_sent_per_s", PerSecond, Rate;
    QUIC_BYTES_RECV = "quic_bytes_recv_per_s", PerSecond, Rate;
    QUIC_LOST_PACKETS = "quic_lost_packets_per_s", PerSecond, Rate;
    QUIC_HANDSHAKE_TIMEOUTS = "quic_handshake_timeouts_per_s", PerSecond, Rate;
    QUIC_IDLE_TIMEOUTS = "quic_idle_timeouts_per_s", PerSecond, Rate;
    QUIC_REFUSED = "quic_refused_per_s", PerSecond, Rate;
    QUIC_CLOSED_BY_SERVER = "quic_closed_by_server_per_s", PerSecond, Rate;
    QUIC_OTHER_ERRORS = "quic_other_errors_per_s", PerSecond, Rate;
    // Where the sample's requests' time went (issue 48 item 4, model::latency_split): their
    // mean response time split, and the connects that waited for a SYN retransmission.
    SPLIT_CONNECT = "split_connect_ms", Milliseconds, Gauge;
    SPLIT_QUEUE = "split_queue_ms", Milliseconds, Gauge;
    SPLIT_SERVICE = "split_service_ms", Milliseconds, Gauge;
    SPLIT_TRANSFER = "split_transfer_ms", Milliseconds, Gauge;
    CONNECT_RETRANS = "connect_retrans_pct", Percent, Gauge;
    // The stream resets above by their error code (`model::h2_resets::ResetCode`).
    H2_RESETS_NO_ERROR = "h2_resets_no_error_per_s", PerSecond, Rate;
    H2_RESETS_PROTOCOL_ERROR = "h2_resets_protocol_error_per_s", PerSecond, Rate;
    H2_RESETS_INTERNAL_ERROR = "h2_resets_internal_error_per_s", PerSecond, Rate;
    H2_RESETS_FLOW_CONTROL_ERROR = "h2_resets_flow_control_error_per_s", PerSecond, Rate;
    H2_RESETS_STREAM_CLOSED = "h2_resets_stream_closed_per_s", PerSecond, Rate;
    H2_RESETS_CANCEL = "h2_resets_cancel_per_s", PerSecond, Rate;
    H2_RESETS_ENHANCE_YOUR_CALM = "h2_resets_enhance_your_calm_per_s", PerSecond, Rate;
    H2_RESETS_HTTP_1_1_REQUIRED = "h2_resets_http_1_1_required_per_s", PerSecond, Rate;
    H2_RESETS_OTHER = "h2_resets_other_per_s", PerSecond, Rate;
}

/// Whose a probe figure is: the server's port (pcap with a port filter, sock_diag of the
/// port), the server's network namespace (its kernel counters and sockstat: every port), the
/// machine (CPU, and the few TCP counts the kernel keeps only machine-wide), the server
/// process family, or the probes' own. In the lab the server's namespace holds only the
/// server, so its figures and the port's agree; against a server on the host they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The server's port: pcap's port filter, sock_diag's port.
    Port,
    /// The server's network namespace, every port: /proc/net/{snmp,netstat,sockstat}.
    Netns,
    /// The whole machine: /proc/stat, /proc/softirqs, sockstat's machine-wide counts.
    Machine,
    /// The server process and its descendants.
    Server,
    /// synlab's probe threads and capture.
    Probe,
}

impl Scope {
    /// Its one word: the key of its group in `synlab probe --json`, the `scope` label of
    /// OpenMetrics.
    pub fn key(self) -> &'static str {
        match self {
            Scope::Port => "port",
            Scope::Netns => "netns",
            Scope::Machine => "machine",
            Scope::Server => "server",
            Scope::Probe => "probe",
        }
    }

    /// The SYN rate's scope: the port's when pcap counted it on the port's packets, the
    /// namespace's when it is estimated from the namespace's counters (PassiveOpens +
    /// ListenDrops of every port).
    pub fn of_syn_rate(estimated: bool) -> Scope {
        if estimated {
            Scope::Netns
        } else {
            Scope::Port
        }
    }
}

/// What a run's probes measured, so every place that shows their figures can say whose they
/// are (summary.json's `meta.probe_scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeScope {
    /// The server's port: the port's figures are its sockets' and packets'.
    pub port: u16,
    /// The probed namespace holds other servers' sockets too (the host's, for a server on
    /// the host): its counters and sockstat are not the port's, and the port's lead. False in
    /// the lab, whose server namespace holds only the server.
    pub netns_shared: bool,
    /// Which namespace the counters are from (None in runs written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<ProbedNetns>,
}

/// The network namespace a run's probes read: where its counters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbedNetns {
    /// The host's own, shared with every process on the machine.
    Host,
    /// A `[network]` lab's server namespace: only the server.
    Lab,
    /// A loopback of the run's own (a plain user's scenario without `[network]`).
    OwnLoopback,
}

impl std::fmt::Display for ProbedNetns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProbedNetns::Host => {
                "the host's network namespace (shared: its counters count every process's sockets)"
            }
            ProbedNetns::Lab => "the lab's server namespace (the server's sockets only)",
            ProbedNetns::OwnLoopback => {
                "the run's own loopback namespace (its counters are this run's alone)"
            }
        })
    }
}

impl ProbeScope {
    /// How a figure of `scope` is labelled where the namespace is shared ("port 8080",
    /// "netns: all ports", "machine"); None where no label is needed (in the lab the port's
    /// and the namespace's figures are one).
    pub fn label(&self, scope: Scope) -> Option<String> {
        if !self.netns_shared {
            return None;
        }
        Some(match scope {
            Scope::Port => format!("port {}", self.port),
            Scope::Netns => "netns: all ports".to_string(),
            other => other.key().to_string(),
        })
    }
}

/// Each probe figure but the SYN rate (whose scope depends on its source:
/// [`Scope::of_syn_rate`]) and the flag that says that source, with its scope.
const SCOPES: &[(Col, Scope)] = &[
    (col::SYNACK_OUT_PER_S, Scope::Port),
    (col::RST_IN_PER_S, Scope::Port),
    (col::RST_OUT_PER_S, Scope::Port),
    (col::SYN_RETRANS_PER_S, Scope::Port),
    (col::ACCEPT_QUEUE, Scope::Port),
    (col::ACCEPT_QUEUE_LIMIT, Scope::Port),
    (col::ACCEPT_QUEUE_WAIT_OLDEST, Scope::Port),
    (col::ACCEPT_QUEUE_WAIT_MEAN, Scope::Port),
    (col::SYN_RECV, Scope::Port),
    (col::ESTABLISHED_SOCKS, Scope::Port),
    (col::CONN_RECVQ_MEAN, Scope::Port),
    (col::CONN_RECVQ_MAX, Scope::Port),
    (col::CONN_SENDQ_MEAN, Scope::Port),
    (col::CONN_SENDQ_MAX, Scope::Port),
    (col::CONN_RETRANS, Scope::Port),
    (col::FIN_WAIT, Scope::Port),
    (col::CLOSE_WAIT, Scope::Port),
    (col::LAST_ACK, Scope::Port),
    (col::CLOSING, Scope::Port),
    (col::PORT_TIME_WAIT, Scope::Port),
    (col::PORT_LISTEN_DROPS, Scope::Port),
    (col::PORT_LISTEN_DROPS_PER_S, Scope::Port),
    (col::UDP_RCV_QUEUE, Scope::Port),
    (col::UDP_RCVBUF, Scope::Port),
    (col::PORT_UDP_DROPS, Scope::Port),
    (col::PORT_UDP_DROPS_PER_S, Scope::Port),
    (col::QUIC_INITIAL_IN_PER_S, Scope::Port),
    (col::QUIC_FIRST_INITIAL_PER_S, Scope::Port),
    (col::QUIC_INITIAL_IN_TOTAL, Scope::Port),
    (col::QUIC_FIRST_INITIAL_TOTAL, Scope::Port),
    (col::UDP_IN_DATAGRAMS_PER_S, Scope::Netns),
    (col::UDP_NO_PORTS_PER_S, Scope::Netns),
    (col::RMEM_MAX, Scope::Machine),
    (col::SYN_IN_TOTAL, Scope::Port),
    (col::SYN_RETRANS_TOTAL, Scope::Port),
    (col::SYNACK_OUT_TOTAL, Scope::Port),
    (col::RST_IN_TOTAL, Scope::Port),
    (col::RST_OUT_TOTAL, Scope::Port),
    (col::TIME_WAIT, Scope::Netns),
    (col::TCP_INUSE, Scope::Netns),
    (col::LISTEN_OVERFLOWS, Scope::Netns),
    (col::LISTEN_DROPS_PER_S, Scope::Netns),
    (col::PASSIVE_OPENS_PER_S, Scope::Netns),
    (col::ACTIVE_OPENS_PER_S, Scope::Netns),
    (col::ATTEMPT_FAILS_PER_S, Scope::Netns),
    (col::ESTAB_RESETS_PER_S, Scope::Netns),
    (col::RETRANS_SEGS_PER_S, Scope::Netns),
    (col::OUT_RSTS_PER_S, Scope::Netns),
    (col::TCP_TIMEOUTS_PER_S, Scope::Netns),
    (col::SYNCOOKIES_SENT_PER_S, Scope::Netns),
    (col::REQQ_FULL_DROPS_PER_S, Scope::Netns),
    (col::REQQ_FULL_COOKIES_PER_S, Scope::Netns),
    (col::SYNCOOKIES_RECV_PER_S, Scope::Netns),
    (col::SYNCOOKIES_FAILED_PER_S, Scope::Netns),
    (col::BACKLOG_DROPS_PER_S, Scope::Netns),
    (col::RCVQ_DROPS_PER_S, Scope::Netns),
    (col::ZERO_WINDOW_DROPS_PER_S, Scope::Netns),
    (col::TIME_WAIT_OVERFLOWS_PER_S, Scope::Netns),
    (col::ABORT_ON_MEMORY_PER_S, Scope::Netns),
    (col::UDP_RCVBUF_ERRORS_PER_S, Scope::Netns),
    (col::UDP_IN_ERRORS_PER_S, Scope::Netns),
    (col::PASSIVE_OPENS_TOTAL, Scope::Netns),
    (col::LISTEN_DROPS_TOTAL, Scope::Netns),
    (col::LISTEN_OVERFLOWS_TOTAL, Scope::Netns),
    (col::ACTIVE_OPENS_TOTAL, Scope::Netns),
    (col::UDP_RCVBUF_ERRORS_TOTAL, Scope::Netns),
    (col::TCP_ORPHAN, Scope::Machine),
    (col::TCP_MEM_PAGES, Scope::Machine),
    (col::CPU_USER, Scope::Machine),
    (col::CPU_NICE_PCT, Scope::Machine),
    (col::CPU_SYSTEM, Scope::Machine),
    (col::CPU_IRQ, Scope::Machine),
    (col::CPU_SOFTIRQ, Scope::Machine),
    (col::CPU_IOWAIT_PCT, Scope::Machine),
    (col::CPU_IDLE, Scope::Machine),
    (col::CPU_STEAL_PCT, Scope::Machine),
    (col::CTXT_PER_S, Scope::Machine),
    (col::INTR_PER_S, Scope::Machine),
    (col::NET_RX_SOFTIRQ_PER_S, Scope::Machine),
    (col::NET_TX_SOFTIRQ_PER_S, Scope::Machine),
    (col::PROCS_RUNNING, Scope::Machine),
    (col::PROCS_BLOCKED, Scope::Machine),
    (col::SERVER_PROCS, Scope::Server),
    (col::SERVER_THREADS, Scope::Server),
    (col::SERVER_CPU_USER_PCT, Scope::Server),
    (col::SERVER_CPU_SYS_PCT, Scope::Server),
    (col::SERVER_RSS_MB, Scope::Server),
    (col::PROBE_CPU, Scope::Probe),
    (col::CONTROLLER_CPU, Scope::Probe),
    (col::SERVER_CORES_USER, Scope::Machine),
    (col::SERVER_CORES_SYSTEM, Scope::Machine),
    (col::SERVER_CORES_IRQ, Scope::Machine),
    (col::SERVER_CORES_SOFTIRQ, Scope::Machine),
    (col::SERVER_CORES_STEAL, Scope::Machine),
    (col::SERVER_CORES_IDLE, Scope::Machine),
    (col::SERVER_CORES_NET_RX, Scope::Machine),
    (col::LOAD_CORES_USER, Scope::Machine),
    (col::LOAD_CORES_SYSTEM, Scope::Machine),
    (col::LOAD_CORES_IRQ, Scope::Machine),
    (col::LOAD_CORES_SOFTIRQ, Scope::Machine),
    (col::LOAD_CORES_IDLE, Scope::Machine),
    (col::PCAP_DROPS, Scope::Probe),
    (col::PCAP_IF_DROPS, Scope::Probe),
];

impl Col {
    /// Whose figure this is, for the probes' figures (None for the clients', the router's
    /// and the server's own counts, and for the SYN rate: [`Scope::of_syn_rate`]).
    pub fn scope(self) -> Option<Scope> {
        SCOPES.iter().find(|(c, _)| *c == self).map(|&(_, s)| s)
    }
}

/// The figures a network path gets of its own (its rates and latencies), in their column order.
pub const PATH_FIGURES: [Col; 9] = [
    col::ATTEMPTS,
    col::RESPONSES,
    col::ERRORS,
    col::CONNECT_P50,
    col::CONNECT_P90,
    col::CONNECT_P99,
    col::TOTAL_P50,
    col::TOTAL_P90,
    col::TOTAL_P99,
];

/// The figures a request class gets of its own (seed 002 Table 5: each class's rates,
/// bytes and latencies), in their column order.
pub const CLASS_FIGURES: [Col; 11] = [
    col::ATTEMPTS,
    col::REQUESTS,
    col::RESPONSES,
    col::BYTES_IN,
    col::ERRORS,
    col::CONNECT_P50,
    col::CONNECT_P90,
    col::CONNECT_P99,
    col::TOTAL_P50,
    col::TOTAL_P90,
    col::TOTAL_P99,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_column_carries_its_column_safe_name() {
        let c = col::TOTAL_P99.of_class(ClassName::new("/bytes/1294"));
        assert_eq!(c.name(), "class__bytes_1294_total_p99_ms");
        assert_eq!(c.class(), Some(ClassName::new("_bytes_1294")));
        assert_eq!(c.path(), None);
        assert_eq!(c.figure(), col::TOTAL_P99);
        assert_ne!(
            col::RESPONSES.of_class(ClassName::new("wan")),
            col::RESPONSES.of_path(PathName::new("wan"))
        );
    }

    #[test]
    fn fixed_names_are_unique_and_snake_case() {
        let names: BTreeSet<_> = col::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), col::ALL.len());
        for c in col::ALL {
            let n = c.name();
            assert!(n
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_'));
        }
    }

    #[test]
    fn units_and_kinds_follow_the_names() {
        for c in col::ALL {
            let n = c.name();
            match c.kind() {
                Kind::Rate => assert_eq!(c.unit(), Unit::PerSecond, "{n}"),
                Kind::Percentile => assert!(n.contains("_p"), "{n}"),
                Kind::Counter => assert_eq!(c.unit(), Unit::Count, "{n}"),
                Kind::Gauge => {}
            }
            if n.ends_with("_per_s") {
                assert_eq!(c.kind(), Kind::Rate, "{n}");
            }
        }
        assert_eq!(col::TOTAL_P99.unit(), Unit::Milliseconds);
        assert_eq!(col::SYN_IN_TOTAL.kind(), Kind::Counter);
    }

    #[test]
    fn the_ports_figures_and_the_namespaces_are_told_apart() {
        assert_eq!(col::PORT_TIME_WAIT.scope(), Some(Scope::Port));
        assert_eq!(col::TIME_WAIT.scope(), Some(Scope::Netns));
        assert_eq!(col::PORT_LISTEN_DROPS_PER_S.scope(), Some(Scope::Port));
        assert_eq!(col::LISTEN_OVERFLOWS.scope(), Some(Scope::Netns));
        assert_eq!(col::CPU_IDLE.scope(), Some(Scope::Machine));
        assert_eq!(col::SYN_IN.scope(), None);
        assert_eq!(Scope::of_syn_rate(false), Scope::Port);
        assert_eq!(Scope::of_syn_rate(true), Scope::Netns);
        assert_eq!(col::RESPONSES.scope(), None);
        let once: BTreeSet<_> = SCOPES.iter().map(|(c, _)| c.name()).collect();
        assert_eq!(once.len(), SCOPES.len(), "a figure has one scope");
    }

    #[test]
    fn a_paths_figure_carries_the_path_name() {
        let wan = PathName::new("wan");
        let c = col::RESPONSES.of_path(wan);
        assert_eq!(c.name(), "path_wan_responses_per_s");
        assert_eq!(c.path(), Some(wan));
        assert_eq!(c.kind(), Kind::Rate);
        assert_ne!(c, col::RESPONSES);
        assert_eq!(c, col::RESPONSES.of_path(PathName::new("wan")));
        assert_ne!(c, col::RESPONSES.of_path(PathName::new("lan")));
    }
}
