//! The summary row (one line of summary.csv / summary.json), its parts that are more than
//! one number, and a typed id for each of its columns ([`SummaryCol`], [`SummaryText`]), so a
//! reader names a column the compiler checks instead of a string that silently reads NaN.

use super::column::Unit;
use serde::{Deserialize, Serialize};

/// The share of responses (%) that were not 2xx, when it is over 1 %: past that the throughput
/// counts error pages (a wrong request path gives a server's fast 404s) and is flagged.
pub fn non2xx_flag_pct(non2xx_per_s: f64, throughput_per_s: f64) -> Option<f64> {
    (throughput_per_s > 0.0 && non2xx_per_s > 0.01 * throughput_per_s)
        .then(|| 100.0 * non2xx_per_s / throughput_per_s)
}

/// The error share, %: failures (failed responses, connection and request errors) over every
/// request that ended (responses and errors). NaN when nothing ended. The one definition a
/// threshold, `compare` and the run table use.
pub fn error_share_pct(responses: f64, failed_responses: f64, errors: f64) -> f64 {
    let ended = responses + errors;
    if ended > 0.0 {
        100.0 * (failed_responses + errors) / ended
    } else {
        f64::NAN
    }
}

/// One `[[network.path]]`'s figures in a point (seed 000 §4.4: client classes sharing a
/// server). Latencies cover completed requests; `connect_timeouts` says how many did not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathSummary {
    pub name: String,
    pub attempts_per_s: f64,
    pub throughput_per_s: f64,
    pub errors_per_s: f64,
    pub connect_timeouts: u64,
    pub connect_p50_ms: f64,
    pub connect_p99_ms: f64,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub total_p99_ms: f64,
    /// The profile the path ran under in this point: added round-trip delay, jitter (each
    /// direction), loss (each direction), bandwidth (NaN: unlimited or not recorded).
    #[serde(default = "nan")]
    pub rtt_ms: f64,
    #[serde(default = "nan")]
    pub jitter_ms: f64,
    #[serde(default = "nan")]
    pub loss_pct: f64,
    #[serde(default = "nan")]
    pub bandwidth_mbit: f64,
}

fn nan() -> f64 {
    f64::NAN
}

/// One request class's figures in a point (seed 002 Table 5: static vs CGI, small vs large
/// files apart). Its `totals` state both identities; the classes' responses add up to the
/// point's. A connection counts in the class of the request it was opened for (a pool's
/// connections, opened for none, in no class). Latencies cover completed requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    /// The mix's `class` label (its path when it has none).
    pub name: String,
    pub totals: super::Totals,
    pub requests_per_s: f64,
    pub responses_per_s: f64,
    /// Response bytes (heads and bodies) received per second.
    pub bytes_per_s: f64,
    pub errors_per_s: f64,
    pub connect_p50_ms: f64,
    pub connect_p90_ms: f64,
    pub connect_p99_ms: f64,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub total_p99_ms: f64,
    /// Little's Load Factor of the class's requests: their response times summed / the time.
    pub little_load_factor: f64,
    /// The class's mean response time split (issue 48 item 4, as the point's `split_*`): its
    /// own connects and response times; the server's wait per connection and service per
    /// request are the point's (the server does not know the mix's classes).
    #[serde(default = "nan")]
    pub split_connect_ms: f64,
    #[serde(default = "nan")]
    pub split_queue_ms: f64,
    #[serde(default = "nan")]
    pub split_service_ms: f64,
    #[serde(default = "nan")]
    pub split_transfer_ms: f64,
    /// Its connects that waited for a SYN retransmission (1 s or more), %.
    #[serde(default = "nan")]
    pub connect_retrans_pct: f64,
}

impl ClassSummary {
    /// Its figures as summary.csv's `class_<name>_*` columns write them, in order.
    pub fn csv_figures(&self) -> [(&'static str, f64); 16] {
        [
            ("requests_per_s", self.requests_per_s),
            ("responses_per_s", self.responses_per_s),
            ("bytes_per_s", self.bytes_per_s),
            ("errors_per_s", self.errors_per_s),
            ("connect_p50_ms", self.connect_p50_ms),
            ("connect_p90_ms", self.connect_p90_ms),
            ("connect_p99_ms", self.connect_p99_ms),
            ("total_p50_ms", self.total_p50_ms),
            ("total_p90_ms", self.total_p90_ms),
            ("total_p99_ms", self.total_p99_ms),
            ("little_load_factor", self.little_load_factor),
            ("split_connect_ms", self.split_connect_ms),
            ("split_queue_ms", self.split_queue_ms),
            ("split_service_ms", self.split_service_ms),
            ("split_transfer_ms", self.split_transfer_ms),
            ("connect_retrans_pct", self.connect_retrans_pct),
        ]
    }
}

/// One row of summary.csv / summary.json: one sweep point (or the whole run).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SummaryRow {
    pub point: usize,
    pub mode: String,
    /// The sweep's parameter and value at this point (None without a sweep): the `param` and
    /// `value` columns, as the scenario writes them.
    #[serde(flatten, with = "super::sweep::columns")]
    pub sweep: Option<super::sweep::SweepPoint>,
    /// The curve it belongs to (`[sweep.curves]`: the sweep run once per value, seed 000
    /// Fig. 8's burst shapes): the `curve_param` and `curve_value` columns.
    #[serde(flatten, with = "super::sweep::curve_columns")]
    pub curve: Option<super::sweep::SweepPoint>,
    pub failed: bool,
    pub error: String,
    pub hold_s: f64,
    /// The rate the schedule aimed at (attempts/s), NaN when flat out / closed.
    pub offered_rate: f64,
    pub attempts_per_s: f64,
    pub established_per_s: f64,
    /// Client-counted responses/s: the throughput (every complete response, whatever its status).
    pub throughput_per_s: f64,
    /// Of those, responses whose status was not 2xx (a 404 from a wrong path, a 503 ...).
    #[serde(default)]
    pub non2xx_per_s: f64,
    /// Of those, good responses/s: 2xx, or the statuses `[gate] good_statuses` names. The
    /// throughput a gate judges.
    #[serde(default = "nan")]
    pub good_responses_per_s: f64,
    /// Responses/s whose status is a failure: 5xx, and 4xx not named good.
    #[serde(default = "nan")]
    pub failed_responses_per_s: f64,
    /// Failures in % of the requests that ended ([`error_share_pct`]): failed responses and
    /// connection and request errors over responses and errors.
    #[serde(default = "nan")]
    pub error_share_pct: f64,
    pub server_responses_per_s: f64,
    /// The server's access log over the hold by status class, lines/s (NaN without one).
    #[serde(default)]
    pub server_2xx_per_s: f64,
    #[serde(default)]
    pub server_3xx_per_s: f64,
    #[serde(default)]
    pub server_4xx_per_s: f64,
    #[serde(default)]
    pub server_5xx_per_s: f64,
    pub bytes_in_per_s: f64,
    pub errors_per_s: f64,
    pub connect_timeouts_per_s: f64,
    pub refused_per_s: f64,
    pub connect_p50_ms: f64,
    pub connect_p99_ms: f64,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub total_p98_ms: f64,
    pub total_p99_ms: f64,
    /// Little's Load Factor (seed 004): sum of response times / test time.
    pub little_load_factor: f64,
    pub syn_in_per_s: f64,
    pub accept_queue_mean: f64,
    pub accept_queue_max: f64,
    pub listen_overflows_per_s: f64,
    pub established_mean: f64,
    /// The server port's established connections (sock_diag): bytes waiting in their receive
    /// and send queues (each sample's mean per connection, then its mean over the window; the
    /// largest of any connection), and their retransmissions (tcp_info, the most seen).
    pub conn_recvq_bytes_mean: f64,
    pub conn_recvq_bytes_max: f64,
    pub conn_sendq_bytes_mean: f64,
    pub conn_sendq_bytes_max: f64,
    pub conn_retrans_max: f64,
    /// TCP sockets in use in the server's netns (sockstat `inuse`: every state but TIME_WAIT,
    /// closed-but-unacknowledged ones included): the server kernel's open connections in the
    /// lab; on loopback the client's sockets count too.
    #[serde(default)]
    pub server_sockets_mean: f64,
    /// Connections open at the clients (connecting or waiting for the response).
    #[serde(default)]
    pub client_open_mean: f64,
    pub time_wait_mean: f64,
    pub time_wait_max: f64,
    pub server_procs_mean: f64,
    /// Server processes or threads busy with a connection (seed 000 Fig. 10): the built-in
    /// server's count, Apache's scoreboard; NaN for servers that do not say.
    #[serde(default = "nan")]
    pub server_busy_mean: f64,
    #[serde(default = "nan")]
    pub server_busy_max: f64,
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_irq_pct: f64,
    pub cpu_softirq_pct: f64,
    pub cpu_idle_pct: f64,
    /// The rest of the split, so the columns add up to 100 % (nice: other niced work on the
    /// machine; steal: the hypervisor's).
    #[serde(default)]
    pub cpu_nice_pct: f64,
    #[serde(default)]
    pub cpu_iowait_pct: f64,
    #[serde(default)]
    pub cpu_steal_pct: f64,
    pub worker_cpu_pct: f64,
    /// Cross-checks in % difference (NaN when not measurable).
    pub check_syn_vs_attempts_pct: f64,
    /// The difference SYNs vs attempts may show from counting noise alone (see
    /// `probe::crosscheck::syn_check_tolerance_pct`); a larger one is flagged.
    #[serde(default)]
    pub check_syn_tolerance_pct: f64,
    pub check_server_vs_client_pct: f64,
    pub client_bound: bool,
    pub client_bound_reason: String,
    pub backend: String,
    /// The point's counts (summary.json only: the CSV has the rates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<super::Totals>,
    /// Each network path's figures (summary.json only; timeseries.csv has `path_<name>_*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathSummary>,
    /// Each request class's figures (a mix of two or more classes; summary.csv has them as
    /// `class_<name>_*` columns, timeseries.csv too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassSummary>,
    /// How many samples of the port's socket states `established_mean` is over: the state walk
    /// is paced to keep the probes' cost low, so a short hold may have one or two.
    #[serde(default)]
    pub states_samples: f64,
    /// The server port's own figures (issue 42), where `listen_overflows_per_s` and
    /// `time_wait_*` are the namespace's (every port: the host's against a server on the
    /// host): its listening sockets' drops per second (sock_diag's SK_MEMINFO_DROPS), and its
    /// TIME_WAIT sockets (sock_diag; walked only where the namespace is shared, NaN in the lab,
    /// whose server namespace holds only the server).
    #[serde(default = "nan")]
    pub port_listen_drops_per_s: f64,
    #[serde(default = "nan")]
    pub port_time_wait_mean: f64,
    #[serde(default = "nan")]
    pub port_time_wait_max: f64,
    /// 1 when `syn_in_per_s` is the namespace's estimate (no capture: PassiveOpens +
    /// ListenDrops of every port), 0 when pcap counted the port's SYNs (a mean over the hold).
    #[serde(default = "nan")]
    pub syn_in_estimated: f64,
    /// Requests apart from connections (keep-alive carries many on one): requests begun/s,
    /// and the errors of each (`errors_per_s` is their sum).
    #[serde(default)]
    pub requests_per_s: f64,
    #[serde(default)]
    pub connection_errors_per_s: f64,
    #[serde(default)]
    pub request_errors_per_s: f64,
    // The server's own CPUs apart from the load's (issue 26): NaN without a CPU split.
    /// The server's CPUs' time by state, % (adds up to 100), and their NET_RX softirqs/s.
    #[serde(default)]
    pub server_cores_user_pct: f64,
    #[serde(default)]
    pub server_cores_system_pct: f64,
    #[serde(default)]
    pub server_cores_irq_pct: f64,
    #[serde(default)]
    pub server_cores_softirq_pct: f64,
    #[serde(default)]
    pub server_cores_steal_pct: f64,
    #[serde(default)]
    pub server_cores_idle_pct: f64,
    #[serde(default)]
    pub server_cores_net_rx_per_s: f64,
    /// The server's processes' own CPU (summed, as `ps` would), % of one core.
    #[serde(default)]
    pub server_cpu_user_pct: f64,
    #[serde(default)]
    pub server_cpu_sys_pct: f64,
    /// The server's processes' CPU per response (the server's own count when it has one), µs.
    #[serde(default)]
    pub server_cpu_us_per_response: f64,
    /// The server's CPUs' busy time (user, system, irq, softirq) per response, µs: what a
    /// response costs the server's host, packets included.
    #[serde(default)]
    pub server_cores_us_per_response: f64,
    /// The server's CPUs' softirq time per SYN that arrived (pcap), µs: under overload, mostly
    /// the SYNs the kernel then drops.
    #[serde(default)]
    pub server_softirq_us_per_syn: f64,
    /// User and system time on the server's CPUs that its processes did not spend (other
    /// programs on a shared machine, kernel threads), % of one core: what else the server's
    /// CPUs carried.
    #[serde(default)]
    pub server_cores_other_pct: f64,
    /// The load side's processes together (workers, delay router, controller), % of one core,
    /// and how busy the load's CPUs were, %.
    #[serde(default)]
    pub load_cpu_pct: f64,
    #[serde(default)]
    pub load_cores_busy_pct: f64,
    /// Busy time on the load's CPUs (steal in) that the lab's load-side processes did not
    /// spend (other programs on a shared machine, the hypervisor), % of one core: what else the
    /// load's CPUs carried (`report::disturbed` leaves a trial out of compare past 5 % of them).
    #[serde(default)]
    pub load_cores_other_pct: f64,
    /// Where the server's receive processing ran (`server`, `sender`; "" without a CPU split).
    #[serde(default)]
    pub steer: String,
    /// The response time (ms) at the capacity target's percentile (`[analysis] capacity`,
    /// default p98), over the point's completed requests: what its capacity is judged by.
    #[serde(default = "nan")]
    pub capacity_latency_ms: f64,
    /// TLS (null without): handshakes completed per second, full and resumed; the resumed
    /// share of them as the clients and as the server counted it (%); failed handshakes per
    /// second; the handshake's own duration; time to first byte (from the scheduled start);
    /// the server's own count of its handshakes per second.
    #[serde(default)]
    pub handshakes_per_s: f64,
    #[serde(default)]
    pub full_handshakes_per_s: f64,
    #[serde(default)]
    pub resumed_handshakes_per_s: f64,
    #[serde(default)]
    pub resumed_share_pct: f64,
    #[serde(default)]
    pub server_resumed_share_pct: f64,
    #[serde(default)]
    pub handshake_errors_per_s: f64,
    /// Of those, by kind: the server's certificate did not verify, the server sent an alert,
    /// anything else the peer got wrong, no handshake within its timeout (per second; NaN
    /// without TLS).
    #[serde(default)]
    pub bad_certificates_per_s: f64,
    #[serde(default)]
    pub tls_alerts_per_s: f64,
    #[serde(default)]
    pub tls_protocol_errors_per_s: f64,
    #[serde(default)]
    pub handshake_timeouts_per_s: f64,
    #[serde(default)]
    pub tls_handshake_p50_ms: f64,
    #[serde(default)]
    pub tls_handshake_p90_ms: f64,
    #[serde(default)]
    pub tls_handshake_p99_ms: f64,
    #[serde(default)]
    pub ttfb_p50_ms: f64,
    #[serde(default)]
    pub ttfb_p99_ms: f64,
    #[serde(default)]
    pub server_full_handshakes_per_s: f64,
    #[serde(default)]
    pub server_resumed_handshakes_per_s: f64,
    /// The drops group (`model::drops::DROP_REASONS`) but ListenOverflows (above): each
    /// reason's mean rate over the point, whole server namespace.
    #[serde(default = "nan")]
    pub reqq_full_drops_per_s: f64,
    #[serde(default = "nan")]
    pub reqq_full_cookies_per_s: f64,
    #[serde(default = "nan")]
    pub syncookies_sent_per_s: f64,
    #[serde(default = "nan")]
    pub syncookies_recv_per_s: f64,
    #[serde(default = "nan")]
    pub syncookies_failed_per_s: f64,
    #[serde(default = "nan")]
    pub backlog_drops_per_s: f64,
    #[serde(default = "nan")]
    pub rcvq_drops_per_s: f64,
    #[serde(default = "nan")]
    pub zero_window_drops_per_s: f64,
    #[serde(default = "nan")]
    pub time_wait_overflows_per_s: f64,
    #[serde(default = "nan")]
    pub abort_on_memory_per_s: f64,
    #[serde(default = "nan")]
    pub udp_rcvbuf_errors_per_s: f64,
    #[serde(default = "nan")]
    pub udp_in_errors_per_s: f64,
    /// The connections waiting in the accept queue (sock_diag, issue 48 item 3): the mean of
    /// each sample's mean age, and the largest age of the oldest, ms.
    #[serde(default = "nan")]
    pub accept_queue_wait_mean_ms: f64,
    #[serde(default = "nan")]
    pub accept_queue_wait_oldest_max_ms: f64,
    /// Where the point's requests' time went (issue 48 item 4, `latency_split`): the mean
    /// response time (`split_total_ms`) as connect + accept queue + service + transfer, ms
    /// (queue and service NaN where the server does not measure them: their time is in the
    /// transfer).
    #[serde(default = "nan")]
    pub split_connect_ms: f64,
    #[serde(default = "nan")]
    pub split_queue_ms: f64,
    #[serde(default = "nan")]
    pub split_service_ms: f64,
    #[serde(default = "nan")]
    pub split_transfer_ms: f64,
    #[serde(default = "nan")]
    pub split_total_ms: f64,
    /// The connects that waited for a SYN retransmission (1 s or more), and of them those near
    /// 1 s (one retransmission, 1 to 3 s) and near 3 s (two, 3 to 7 s): % of the connects, and
    /// each mode's median connect, ms.
    #[serde(default = "nan")]
    pub connect_retrans_pct: f64,
    #[serde(default = "nan")]
    pub connect_retrans_once_pct: f64,
    #[serde(default = "nan")]
    pub connect_retrans_twice_pct: f64,
    #[serde(default = "nan")]
    pub connect_retrans_once_ms: f64,
    #[serde(default = "nan")]
    pub connect_retrans_twice_ms: f64,
    #[serde(default = "nan")]
    pub udp_no_ports_per_s: f64,
    /// The UDP side (issue 47): the namespace's datagrams delivered, the server port's UDP
    /// sockets' own drops, their receive queue's peak and buffer against rmem_max, and the
    /// QUIC Initials (all, and first ones: connection attempts) arriving at the port.
    #[serde(default = "nan")]
    pub udp_in_datagrams_per_s: f64,
    #[serde(default = "nan")]
    pub port_udp_drops_per_s: f64,
    #[serde(default = "nan")]
    pub udp_rcv_queue_max_bytes: f64,
    #[serde(default = "nan")]
    pub udp_rcvbuf_bytes: f64,
    #[serde(default = "nan")]
    pub rmem_max_bytes: f64,
    #[serde(default = "nan")]
    pub quic_initial_in_per_s: f64,
    #[serde(default = "nan")]
    pub quic_first_initial_per_s: f64,
    /// HTTP/3 (NaN over TCP): the load clients' QUIC handshakes by kind and their mean time,
    /// Retry packets received, datagrams and bytes both ways, the packets their stack declared
    /// lost, and connection errors by kind.
    #[serde(default = "nan")]
    pub quic_handshakes_full_per_s: f64,
    #[serde(default = "nan")]
    pub quic_handshakes_resumed_per_s: f64,
    #[serde(default = "nan")]
    pub quic_handshakes_0rtt_per_s: f64,
    #[serde(default = "nan")]
    pub quic_handshake_ms_mean: f64,
    #[serde(default = "nan")]
    pub quic_retry_per_s: f64,
    #[serde(default = "nan")]
    pub quic_packets_sent_per_s: f64,
    #[serde(default = "nan")]
    pub quic_packets_recv_per_s: f64,
    #[serde(default = "nan")]
    pub quic_bytes_sent_per_s: f64,
    #[serde(default = "nan")]
    pub quic_bytes_recv_per_s: f64,
    #[serde(default = "nan")]
    pub quic_lost_packets_per_s: f64,
    #[serde(default = "nan")]
    pub quic_handshake_timeouts_per_s: f64,
    #[serde(default = "nan")]
    pub quic_idle_timeouts_per_s: f64,
    #[serde(default = "nan")]
    pub quic_refused_per_s: f64,
    #[serde(default = "nan")]
    pub quic_closed_by_server_per_s: f64,
    #[serde(default = "nan")]
    pub quic_other_errors_per_s: f64,
    /// The built-in server's own count of its QUIC handshakes (full and resumed together) and
    /// of the Retry packets it sent, per second (NaN over TCP or without its count).
    #[serde(default = "nan")]
    pub server_quic_handshakes_per_s: f64,
    #[serde(default = "nan")]
    pub server_quic_retries_per_s: f64,
    /// HTTP/2 (NaN over HTTP/1.x): streams in flight (mean over all connections, the most on
    /// one, the server's advertised limit), refused and reset streams, GOAWAYs, ALPN
    /// refusals, the connections' setup, header bytes and HPACK's saving, flow-control stalls.
    #[serde(default = "nan")]
    pub h2_streams_in_flight_mean: f64,
    #[serde(default = "nan")]
    pub h2_streams_max: f64,
    #[serde(default = "nan")]
    pub h2_streams_limit: f64,
    #[serde(default = "nan")]
    pub h2_refused_streams_per_s: f64,
    #[serde(default = "nan")]
    pub h2_stream_resets_per_s: f64,
    #[serde(default = "nan")]
    pub h2_goaways_per_s: f64,
    #[serde(default = "nan")]
    pub h2_alpn_refused_per_s: f64,
    #[serde(default = "nan")]
    pub h2_setup_ms_mean: f64,
    #[serde(default = "nan")]
    pub h2_header_bytes_per_response: f64,
    #[serde(default = "nan")]
    pub h2_hpack_saving_pct: f64,
    #[serde(default = "nan")]
    pub h2_flow_stall_ms_per_s: f64,
    /// HTTP/2 stream resets by error code (`model::h2_resets::ResetCode`), per second; they
    /// add up to `h2_stream_resets_per_s`.
    #[serde(default = "nan")]
    pub h2_resets_no_error_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_protocol_error_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_internal_error_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_flow_control_error_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_stream_closed_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_cancel_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_enhance_your_calm_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_http_1_1_required_per_s: f64,
    #[serde(default = "nan")]
    pub h2_resets_other_per_s: f64,
    /// When the point's window opened and closed, seconds since the run started (a sweep
    /// point's hold; a TUI stretch of settings).
    #[serde(default = "nan")]
    pub start_s: f64,
    #[serde(default = "nan")]
    pub end_s: f64,
}

impl SummaryRow {
    /// Whether its hold measured anything: under one workers' report (100 ms) nothing was (a
    /// point interrupted at once), and its zeros are not figures.
    pub fn measured(&self) -> bool {
        self.hold_s >= 0.1
    }

    /// Measured over HTTP/3 ([`SummaryCol::QUIC_MEASURED`] is a figure).
    pub fn quic(&self) -> bool {
        !self.quic_handshakes_full_per_s.is_nan()
    }

    /// The sweep value as the `value` column writes it ("" without a sweep).
    pub fn value_text(&self) -> String {
        self.sweep.map(|s| s.value.to_string()).unwrap_or_default()
    }

    /// The curve value as the `curve_value` column writes it ("" without curves).
    pub fn curve_text(&self) -> String {
        self.curve.map(|s| s.value.to_string()).unwrap_or_default()
    }
}

/// A summary value as a number: flags are 0/1.
trait AsF64 {
    fn as_f64(&self) -> f64;
}
impl AsF64 for f64 {
    fn as_f64(&self) -> f64 {
        *self
    }
}
impl AsF64 for usize {
    fn as_f64(&self) -> f64 {
        *self as f64
    }
}
impl AsF64 for bool {
    fn as_f64(&self) -> f64 {
        f64::from(u8::from(*self))
    }
}

/// Declares [`SummaryCol`] from `Variant = field: Unit` (the field of [`SummaryRow`] it reads,
/// its unit), so a column's name is its field's name and cannot drift from it.
macro_rules! summary_cols {
    ($($var:ident = $field:ident: $unit:ident,)*) => {
        /// One numeric column of summary.csv / summary.json (flags read as 0/1): what a
        /// threshold, a report table or a plot may name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum SummaryCol {
            $($var,)*
        }

        impl SummaryCol {
            /// Every numeric column, in the file's order.
            pub const ALL: &'static [SummaryCol] = &[$(SummaryCol::$var,)*];

            /// Its name in summary.csv / summary.json.
            pub fn name(self) -> &'static str {
                match self {
                    $(SummaryCol::$var => stringify!($field),)*
                }
            }

            pub fn unit(self) -> Unit {
                match self {
                    $(SummaryCol::$var => Unit::$unit,)*
                }
            }
        }

        impl SummaryRow {
            /// The value of one column; NaN where it was not measured.
            pub fn get(&self, c: SummaryCol) -> f64 {
                match c {
                    $(SummaryCol::$var => self.$field.as_f64(),)*
                }
            }
        }
    };
}

summary_cols! {
    Point = point: Count,
    Failed = failed: Flag,
    HoldS = hold_s: Seconds,
    OfferedRate = offered_rate: PerSecond,
    AttemptsPerS = attempts_per_s: PerSecond,
    EstablishedPerS = established_per_s: PerSecond,
    ThroughputPerS = throughput_per_s: PerSecond,
    Non2xxPerS = non2xx_per_s: PerSecond,
    GoodResponsesPerS = good_responses_per_s: PerSecond,
    FailedResponsesPerS = failed_responses_per_s: PerSecond,
    ErrorSharePct = error_share_pct: Percent,
    ServerResponsesPerS = server_responses_per_s: PerSecond,
    Server2xxPerS = server_2xx_per_s: PerSecond,
    Server3xxPerS = server_3xx_per_s: PerSecond,
    Server4xxPerS = server_4xx_per_s: PerSecond,
    Server5xxPerS = server_5xx_per_s: PerSecond,
    BytesInPerS = bytes_in_per_s: PerSecond,
    ErrorsPerS = errors_per_s: PerSecond,
    ConnectTimeoutsPerS = connect_timeouts_per_s: PerSecond,
    RefusedPerS = refused_per_s: PerSecond,
    ConnectP50Ms = connect_p50_ms: Milliseconds,
    ConnectP99Ms = connect_p99_ms: Milliseconds,
    TotalP50Ms = total_p50_ms: Milliseconds,
    TotalP90Ms = total_p90_ms: Milliseconds,
    TotalP98Ms = total_p98_ms: Milliseconds,
    TotalP99Ms = total_p99_ms: Milliseconds,
    LittleLoadFactor = little_load_factor: Count,
    SynInPerS = syn_in_per_s: PerSecond,
    AcceptQueueMean = accept_queue_mean: Count,
    AcceptQueueMax = accept_queue_max: Count,
    ListenOverflowsPerS = listen_overflows_per_s: PerSecond,
    EstablishedMean = established_mean: Count,
    ConnRecvqBytesMean = conn_recvq_bytes_mean: Count,
    ConnRecvqBytesMax = conn_recvq_bytes_max: Count,
    ConnSendqBytesMean = conn_sendq_bytes_mean: Count,
    ConnSendqBytesMax = conn_sendq_bytes_max: Count,
    ConnRetransMax = conn_retrans_max: Count,
    ServerSocketsMean = server_sockets_mean: Count,
    ClientOpenMean = client_open_mean: Count,
    TimeWaitMean = time_wait_mean: Count,
    TimeWaitMax = time_wait_max: Count,
    ServerProcsMean = server_procs_mean: Count,
    ServerBusyMean = server_busy_mean: Count,
    ServerBusyMax = server_busy_max: Count,
    CpuUserPct = cpu_user_pct: Percent,
    CpuSystemPct = cpu_system_pct: Percent,
    CpuIrqPct = cpu_irq_pct: Percent,
    CpuSoftirqPct = cpu_softirq_pct: Percent,
    CpuIdlePct = cpu_idle_pct: Percent,
    CpuNicePct = cpu_nice_pct: Percent,
    CpuIowaitPct = cpu_iowait_pct: Percent,
    CpuStealPct = cpu_steal_pct: Percent,
    WorkerCpuPct = worker_cpu_pct: Percent,
    CheckSynVsAttemptsPct = check_syn_vs_attempts_pct: Percent,
    CheckSynTolerancePct = check_syn_tolerance_pct: Percent,
    CheckServerVsClientPct = check_server_vs_client_pct: Percent,
    ClientBound = client_bound: Flag,
    StatesSamples = states_samples: Count,
    PortListenDropsPerS = port_listen_drops_per_s: PerSecond,
    PortTimeWaitMean = port_time_wait_mean: Count,
    PortTimeWaitMax = port_time_wait_max: Count,
    SynInEstimated = syn_in_estimated: Flag,
    RequestsPerS = requests_per_s: PerSecond,
    ConnectionErrorsPerS = connection_errors_per_s: PerSecond,
    RequestErrorsPerS = request_errors_per_s: PerSecond,
    ServerCoresUserPct = server_cores_user_pct: Percent,
    ServerCoresSystemPct = server_cores_system_pct: Percent,
    ServerCoresIrqPct = server_cores_irq_pct: Percent,
    ServerCoresSoftirqPct = server_cores_softirq_pct: Percent,
    ServerCoresStealPct = server_cores_steal_pct: Percent,
    ServerCoresIdlePct = server_cores_idle_pct: Percent,
    ServerCoresNetRxPerS = server_cores_net_rx_per_s: PerSecond,
    ServerCpuUserPct = server_cpu_user_pct: Percent,
    ServerCpuSysPct = server_cpu_sys_pct: Percent,
    ServerCpuUsPerResponse = server_cpu_us_per_response: Microseconds,
    ServerCoresUsPerResponse = server_cores_us_per_response: Microseconds,
    ServerSoftirqUsPerSyn = server_softirq_us_per_syn: Microseconds,
    ServerCoresOtherPct = server_cores_other_pct: Percent,
    LoadCpuPct = load_cpu_pct: Percent,
    LoadCoresBusyPct = load_cores_busy_pct: Percent,
    LoadCoresOtherPct = load_cores_other_pct: Percent,
    CapacityLatencyMs = capacity_latency_ms: Milliseconds,
    HandshakesPerS = handshakes_per_s: PerSecond,
    FullHandshakesPerS = full_handshakes_per_s: PerSecond,
    ResumedHandshakesPerS = resumed_handshakes_per_s: PerSecond,
    ResumedSharePct = resumed_share_pct: Percent,
    ServerResumedSharePct = server_resumed_share_pct: Percent,
    HandshakeErrorsPerS = handshake_errors_per_s: PerSecond,
    BadCertificatesPerS = bad_certificates_per_s: PerSecond,
    TlsAlertsPerS = tls_alerts_per_s: PerSecond,
    TlsProtocolErrorsPerS = tls_protocol_errors_per_s: PerSecond,
    HandshakeTimeoutsPerS = handshake_timeouts_per_s: PerSecond,
    TlsHandshakeP50Ms = tls_handshake_p50_ms: Milliseconds,
    TlsHandshakeP90Ms = tls_handshake_p90_ms: Milliseconds,
    TlsHandshakeP99Ms = tls_handshake_p99_ms: Milliseconds,
    TtfbP50Ms = ttfb_p50_ms: Milliseconds,
    TtfbP99Ms = ttfb_p99_ms: Milliseconds,
    ServerFullHandshakesPerS = server_full_handshakes_per_s: PerSecond,
    ServerResumedHandshakesPerS = server_resumed_handshakes_per_s: PerSecond,
    ReqqFullDropsPerS = reqq_full_drops_per_s: PerSecond,
    ReqqFullCookiesPerS = reqq_full_cookies_per_s: PerSecond,
    SyncookiesSentPerS = syncookies_sent_per_s: PerSecond,
    SyncookiesRecvPerS = syncookies_recv_per_s: PerSecond,
    SyncookiesFailedPerS = syncookies_failed_per_s: PerSecond,
    BacklogDropsPerS = backlog_drops_per_s: PerSecond,
    RcvqDropsPerS = rcvq_drops_per_s: PerSecond,
    ZeroWindowDropsPerS = zero_window_drops_per_s: PerSecond,
    TimeWaitOverflowsPerS = time_wait_overflows_per_s: PerSecond,
    AbortOnMemoryPerS = abort_on_memory_per_s: PerSecond,
    UdpRcvbufErrorsPerS = udp_rcvbuf_errors_per_s: PerSecond,
    UdpInErrorsPerS = udp_in_errors_per_s: PerSecond,
    AcceptQueueWaitMeanMs = accept_queue_wait_mean_ms: Milliseconds,
    AcceptQueueWaitOldestMaxMs = accept_queue_wait_oldest_max_ms: Milliseconds,
    SplitConnectMs = split_connect_ms: Milliseconds,
    SplitQueueMs = split_queue_ms: Milliseconds,
    SplitServiceMs = split_service_ms: Milliseconds,
    SplitTransferMs = split_transfer_ms: Milliseconds,
    SplitTotalMs = split_total_ms: Milliseconds,
    ConnectRetransPct = connect_retrans_pct: Percent,
    ConnectRetransOncePct = connect_retrans_once_pct: Percent,
    ConnectRetransTwicePct = connect_retrans_twice_pct: Percent,
    ConnectRetransOnceMs = connect_retrans_once_ms: Milliseconds,
    ConnectRetransTwiceMs = connect_retrans_twice_ms: Milliseconds,
    UdpNoPortsPerS = udp_no_ports_per_s: PerSecond,
    UdpInDatagramsPerS = udp_in_datagrams_per_s: PerSecond,
    PortUdpDropsPerS = port_udp_drops_per_s: PerSecond,
    UdpRcvQueueMaxBytes = udp_rcv_queue_max_bytes: Bytes,
    UdpRcvbufBytes = udp_rcvbuf_bytes: Bytes,
    RmemMaxBytes = rmem_max_bytes: Bytes,
    QuicInitialInPerS = quic_initial_in_per_s: PerSecond,
    QuicFirstInitialPerS = quic_first_initial_per_s: PerSecond,
    QuicHandshakesFullPerS = quic_handshakes_full_per_s: PerSecond,
    QuicHandshakesResumedPerS = quic_handshakes_resumed_per_s: PerSecond,
    QuicHandshakes0rttPerS = quic_handshakes_0rtt_per_s: PerSecond,
    QuicHandshakeMsMean = quic_handshake_ms_mean: Milliseconds,
    QuicRetryPerS = quic_retry_per_s: PerSecond,
    QuicPacketsSentPerS = quic_packets_sent_per_s: PerSecond,
    QuicPacketsRecvPerS = quic_packets_recv_per_s: PerSecond,
    QuicBytesSentPerS = quic_bytes_sent_per_s: PerSecond,
    QuicBytesRecvPerS = quic_bytes_recv_per_s: PerSecond,
    QuicLostPacketsPerS = quic_lost_packets_per_s: PerSecond,
    QuicHandshakeTimeoutsPerS = quic_handshake_timeouts_per_s: PerSecond,
    QuicIdleTimeoutsPerS = quic_idle_timeouts_per_s: PerSecond,
    QuicRefusedPerS = quic_refused_per_s: PerSecond,
    QuicClosedByServerPerS = quic_closed_by_server_per_s: PerSecond,
    QuicOtherErrorsPerS = quic_other_errors_per_s: PerSecond,
    ServerQuicHandshakesPerS = server_quic_handshakes_per_s: PerSecond,
    ServerQuicRetriesPerS = server_quic_retries_per_s: PerSecond,
    H2StreamsInFlightMean = h2_streams_in_flight_mean: Count,
    H2StreamsMax = h2_streams_max: Count,
    H2StreamsLimit = h2_streams_limit: Count,
    H2RefusedStreamsPerS = h2_refused_streams_per_s: PerSecond,
    H2StreamResetsPerS = h2_stream_resets_per_s: PerSecond,
    H2GoawaysPerS = h2_goaways_per_s: PerSecond,
    H2AlpnRefusedPerS = h2_alpn_refused_per_s: PerSecond,
    H2SetupMsMean = h2_setup_ms_mean: Milliseconds,
    H2HeaderBytesPerResponse = h2_header_bytes_per_response: Bytes,
    H2HpackSavingPct = h2_hpack_saving_pct: Percent,
    H2FlowStallMsPerS = h2_flow_stall_ms_per_s: PerSecond,
    H2ResetsNoErrorPerS = h2_resets_no_error_per_s: PerSecond,
    H2ResetsProtocolErrorPerS = h2_resets_protocol_error_per_s: PerSecond,
    H2ResetsInternalErrorPerS = h2_resets_internal_error_per_s: PerSecond,
    H2ResetsFlowControlErrorPerS = h2_resets_flow_control_error_per_s: PerSecond,
    H2ResetsStreamClosedPerS = h2_resets_stream_closed_per_s: PerSecond,
    H2ResetsCancelPerS = h2_resets_cancel_per_s: PerSecond,
    H2ResetsEnhanceYourCalmPerS = h2_resets_enhance_your_calm_per_s: PerSecond,
    H2ResetsHttp11RequiredPerS = h2_resets_http_1_1_required_per_s: PerSecond,
    H2ResetsOtherPerS = h2_resets_other_per_s: PerSecond,
    StartS = start_s: Seconds,
    EndS = end_s: Seconds,
}

/// Which way a column's change is worse: what `compare` calls a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// Less is worse (throughput, capacity).
    Lower,
    /// More is worse (latency, errors, queues, CPU per response).
    Higher,
    /// Either way is a change to flag (counts and settings with no better side).
    Either,
}

impl SummaryCol {
    /// The figure that says a point was measured over HTTP/3 when it is measured (not NaN):
    /// its clients' QUIC handshakes. The one rule of "this row is QUIC" for report.md, the
    /// gate and the end-of-run table.
    pub const QUIC_MEASURED: SummaryCol = SummaryCol::QuicHandshakesFullPerS;

    /// The column called `name` in summary.csv / summary.json (a threshold's `metric`, a
    /// `compare --on` metric).
    pub fn parse(name: &str) -> Option<SummaryCol> {
        SummaryCol::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// Which way a change of this column is a regression.
    pub fn worse(self) -> Worse {
        use SummaryCol as C;
        match self {
            C::ThroughputPerS
            | C::GoodResponsesPerS
            | C::EstablishedPerS
            | C::ServerResponsesPerS
            | C::Server2xxPerS
            | C::BytesInPerS
            | C::RequestsPerS
            | C::HandshakesPerS
            | C::FullHandshakesPerS
            | C::ResumedHandshakesPerS
            | C::ResumedSharePct
            | C::ServerResumedSharePct
            | C::ServerFullHandshakesPerS
            | C::ServerResumedHandshakesPerS
            | C::CpuIdlePct
            | C::ServerCoresIdlePct => Worse::Lower,
            C::Non2xxPerS
            | C::FailedResponsesPerS
            | C::ErrorSharePct
            | C::Server4xxPerS
            | C::Server5xxPerS
            | C::ErrorsPerS
            | C::ConnectTimeoutsPerS
            | C::RefusedPerS
            | C::ConnectP50Ms
            | C::ConnectP99Ms
            | C::TotalP50Ms
            | C::TotalP90Ms
            | C::TotalP98Ms
            | C::TotalP99Ms
            | C::LittleLoadFactor
            | C::AcceptQueueMean
            | C::AcceptQueueWaitMeanMs
            | C::AcceptQueueWaitOldestMaxMs
            | C::SplitConnectMs
            | C::SplitQueueMs
            | C::SplitServiceMs
            | C::SplitTransferMs
            | C::SplitTotalMs
            | C::ConnectRetransPct
            | C::AcceptQueueMax
            | C::ListenOverflowsPerS
            | C::TimeWaitMean
            | C::TimeWaitMax
            | C::Failed
            | C::ClientBound
            | C::CapacityLatencyMs
            | C::HandshakeErrorsPerS
            | C::TlsHandshakeP50Ms
            | C::TlsHandshakeP90Ms
            | C::TlsHandshakeP99Ms
            | C::TtfbP50Ms
            | C::TtfbP99Ms
            | C::ConnectionErrorsPerS
            | C::RequestErrorsPerS
            | C::ServerCpuUsPerResponse
            | C::ServerCoresUsPerResponse
            | C::ServerSoftirqUsPerSyn
            | C::CpuUserPct
            | C::CpuSystemPct
            | C::CpuIrqPct
            | C::CpuSoftirqPct
            | C::ServerCpuUserPct
            | C::ServerCpuSysPct
            | C::ServerCoresUserPct
            | C::ServerCoresSystemPct
            | C::ServerCoresIrqPct
            | C::ServerCoresSoftirqPct
            | C::WorkerCpuPct
            | C::LoadCpuPct
            | C::LoadCoresBusyPct
            | C::LoadCoresOtherPct
            | C::H2RefusedStreamsPerS
            | C::H2StreamResetsPerS
            | C::H2AlpnRefusedPerS
            | C::H2SetupMsMean
            | C::H2FlowStallMsPerS
            | C::H2ResetsNoErrorPerS
            | C::H2ResetsProtocolErrorPerS
            | C::H2ResetsInternalErrorPerS
            | C::H2ResetsFlowControlErrorPerS
            | C::H2ResetsStreamClosedPerS
            | C::H2ResetsCancelPerS
            | C::H2ResetsEnhanceYourCalmPerS
            | C::H2ResetsHttp11RequiredPerS
            | C::H2ResetsOtherPerS => Worse::Higher,
            // Anything else (settings, samples, clocks, cross-checks, columns added later):
            // a change either way is flagged.
            _ => Worse::Either,
        }
    }

    /// The smallest change of this column that can be a regression, in its unit: under it a
    /// change is noise however large in % (p50 0.26 -> 0.34 ms is not a 30 % regression).
    /// Percent columns change in points, judged against the limit in points already.
    pub fn floor(self) -> f64 {
        match self.unit() {
            Unit::Milliseconds => 1.0,
            Unit::Seconds => 0.001,
            Unit::Microseconds => 1.0,
            Unit::PerSecond => 1.0,
            Unit::Count => 1.0,
            Unit::Percent | Unit::Flag | Unit::Megabytes | Unit::Pages => 0.0,
            Unit::Bytes => 1.0,
        }
    }
}

/// A column of summary.json that is not a number: text, or (`totals`, `paths`, `classes`) a
/// nested object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SummaryText {
    Mode,
    Param,
    Value,
    CurveParam,
    CurveValue,
    Error,
    ClientBoundReason,
    Backend,
    Totals,
    Paths,
    Steer,
    Classes,
}

impl SummaryText {
    pub const ALL: &'static [SummaryText] = &[
        SummaryText::Mode,
        SummaryText::Param,
        SummaryText::Value,
        SummaryText::CurveParam,
        SummaryText::CurveValue,
        SummaryText::Error,
        SummaryText::ClientBoundReason,
        SummaryText::Backend,
        SummaryText::Totals,
        SummaryText::Paths,
        SummaryText::Steer,
        SummaryText::Classes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SummaryText::Mode => "mode",
            SummaryText::Param => "param",
            SummaryText::Value => "value",
            SummaryText::CurveParam => "curve_param",
            SummaryText::CurveValue => "curve_value",
            SummaryText::Error => "error",
            SummaryText::ClientBoundReason => "client_bound_reason",
            SummaryText::Backend => "backend",
            SummaryText::Totals => "totals",
            SummaryText::Paths => "paths",
            SummaryText::Steer => "steer",
            SummaryText::Classes => "classes",
        }
    }
}

// Here, not in h2_resets: the summary reads the counters, which hold the resets by code.
impl super::h2_resets::ResetCode {
    /// Its summary column (resets per second over the point).
    pub fn summary_col(self) -> SummaryCol {
        match self {
            Self::NoError => SummaryCol::H2ResetsNoErrorPerS,
            Self::ProtocolError => SummaryCol::H2ResetsProtocolErrorPerS,
            Self::InternalError => SummaryCol::H2ResetsInternalErrorPerS,
            Self::FlowControlError => SummaryCol::H2ResetsFlowControlErrorPerS,
            Self::StreamClosed => SummaryCol::H2ResetsStreamClosedPerS,
            Self::Cancel => SummaryCol::H2ResetsCancelPerS,
            Self::EnhanceYourCalm => SummaryCol::H2ResetsEnhanceYourCalmPerS,
            Self::Http11Required => SummaryCol::H2ResetsHttp11RequiredPerS,
            Self::Other => SummaryCol::H2ResetsOtherPerS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key summary.json writes is exactly one typed column, numbers as [`SummaryCol`] in
    /// the file's order, the rest as [`SummaryText`].
    #[test]
    fn every_summary_key_is_one_typed_column() {
        let row = SummaryRow {
            mode: "m".into(),
            sweep: Some(crate::model::SweepPoint {
                param: crate::model::SweepParam::Load(crate::model::LoadKnob::Rate),
                value: crate::model::SweepValue::Load(crate::model::LoadKnob::Rate, 100.0),
            }),
            error: "e".into(),
            client_bound_reason: "r".into(),
            backend: "b".into(),
            steer: "server".into(),
            totals: Some(Default::default()),
            paths: vec![PathSummary::default()],
            classes: vec![ClassSummary::default()],
            ..Default::default()
        };
        let json = serde_json::to_value(&row).unwrap();
        let obj = json.as_object().unwrap();
        let numeric: Vec<&str> = obj
            .iter()
            .filter(|(_, v)| v.is_number() || v.is_boolean())
            .map(|(k, _)| k.as_str())
            .collect();
        let typed: Vec<&str> = SummaryCol::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(numeric, typed);
        let mut text: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| !numeric.contains(k))
            .collect();
        let mut typed_text: Vec<&str> = SummaryText::ALL.iter().map(|c| c.name()).collect();
        text.sort();
        typed_text.sort();
        assert_eq!(text, typed_text);
    }

    #[test]
    fn a_column_reads_its_field() {
        let row = SummaryRow {
            point: 3,
            client_bound: true,
            total_p99_ms: 12.5,
            offered_rate: f64::NAN,
            ..Default::default()
        };
        assert_eq!(row.get(SummaryCol::Point), 3.0);
        assert_eq!(row.get(SummaryCol::ClientBound), 1.0);
        assert_eq!(row.get(SummaryCol::Failed), 0.0);
        assert_eq!(row.get(SummaryCol::TotalP99Ms), 12.5);
        assert!(row.get(SummaryCol::OfferedRate).is_nan());
        assert_eq!(
            SummaryCol::parse("total_p99_ms"),
            Some(SummaryCol::TotalP99Ms)
        );
        assert_eq!(SummaryCol::parse("mode"), None);
    }
}
