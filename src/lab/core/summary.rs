//! A measurement window as a summary row (summary.csv/json, the gate's input): the client's,
//! the paths', the server's and the probes' figures over it.

use super::{LabCore, Window};
use crate::lab::client_agg::{ClientTotals, LoadShape};
use crate::model::SummaryRow;
use crate::model::{col, Col, PathSummary, Totals};

fn nan_or(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

impl LabCore {
    /// A measurement window as summary row `point`.
    pub fn summary_row(&self, point: usize, w: Window) -> SummaryRow {
        summary_row(self, point, w)
    }
}

fn summary_row(ctrl: &LabCore, point: usize, w: Window) -> SummaryRow {
    let (t0, t1, tot, server_rate) = (w.t0, w.t1, &w.client, w.server_rate);
    // Client rates over the time the workers' reports cover (not the controller's wall
    // window, whose edges fall between reports), as the time series does.
    let dt = tot.covered_s().unwrap_or(t1 - t0).max(1e-3);
    // The sample rows' figures come from the window's running sums (the store keeps minutes).
    let mean = |c: Col| nan_or(w.rows.mean(c));
    let max = |c: Col| nan_or(w.rows.max(c));
    let q = |h: &hdrhistogram::Histogram<u64>, x: f64| nan_or(ClientTotals::q_ms(h, x));
    // HTTP/2's figures, NaN over HTTP/1.x (a setup or an ALPN refusal says HTTP/2 ran, or
    // streams in flight: a pool's or a closed client's connections set up before the window
    // carry a sweep point's requests with no setup in it).
    let spoke_h2 =
        tot.counts.setups + tot.counts.alpn_refused > 0 || max(col::H2_STREAMS_MAX).is_finite();
    let h2 = |v: f64| {
        if spoke_h2 && v.is_finite() {
            v
        } else {
            f64::NAN
        }
    };
    let resets = &tot.counts.stream_resets_by_code;
    use crate::model::h2_resets::ResetCode;
    let reset_rate = |c: ResetCode| h2(resets.get(c) as f64 / dt);
    let little = tot.total.mean() * tot.total.len() as f64 / 1e6 / dt;
    // `b` against the reference `a`, NaN where there is nothing to compare.
    let cross =
        |a: f64, b: f64| crate::probe::crosscheck::signed_diff_pct(b, a).unwrap_or(f64::NAN);
    let bound = tot.client_bound(&LoadShape {
        mode: ctrl.state().knobs.mode,
        timeout_s: ctrl.state().knobs.timeout.as_secs_f64(),
    });
    // The server's status split from a log it trusts only (as the window's server count).
    let access = ctrl
        .point_access_counts()
        .filter(|_| ctrl.access_log_issue().is_none());
    // The classes over the span the server's total is over (the log reader's own), so the
    // total is their sum; the clients' time where the server's count has no span.
    let server_dt = match (w.server_responses, server_rate) {
        (Some(n), Some(r)) if n > 0 && r > 0.0 => n as f64 / r,
        _ => dt,
    };
    // TLS figures, NaN where the load does not speak TLS.
    let tls = ctrl.state().knobs.resumed.is_some();
    let tls_rate = |n: u64| if tls { n as f64 / dt } else { f64::NAN };
    let server_tls = w.server_tls.filter(|_| tls);
    let split = super::latency_split::split(tot, w.server_times.as_ref());
    let retrans = crate::model::latency_split::SynRetrans::of(&tot.connect, ctrl.syn_linear);
    SummaryRow {
        point,
        mode: crate::scenario::points::mode_name(ctrl.state().knobs.mode),
        hold_s: dt,
        // A closed loop has no schedule: whatever rate the knob keeps, nothing was offered at it.
        offered_rate: match ctrl.state().knobs.mode {
            crate::load::protocol::Mode::Closed => f64::NAN,
            _ => nan_or(ctrl.state().knobs.rate),
        },
        start_s: t0,
        end_s: t1,
        attempts_per_s: tot.counts.attempts as f64 / dt,
        established_per_s: tot.counts.established as f64 / dt,
        throughput_per_s: tot.counts.responses as f64 / dt,
        non2xx_per_s: tot.counts.responses_non2xx as f64 / dt,
        good_responses_per_s: tot.counts.responses_good as f64 / dt,
        failed_responses_per_s: tot.counts.responses_failed as f64 / dt,
        error_share_pct: crate::model::summary::error_share_pct(
            tot.counts.responses as f64,
            tot.counts.responses_failed as f64,
            tot.errors() as f64,
        ),
        server_responses_per_s: nan_or(server_rate),
        server_2xx_per_s: nan_or(access.map(|c| c.s2xx as f64 / server_dt)),
        server_3xx_per_s: nan_or(access.map(|c| c.s3xx as f64 / server_dt)),
        server_4xx_per_s: nan_or(access.map(|c| c.s4xx as f64 / server_dt)),
        server_5xx_per_s: nan_or(access.map(|c| c.s5xx as f64 / server_dt)),
        bytes_in_per_s: tot.counts.bytes_in as f64 / dt,
        errors_per_s: tot.errors() as f64 / dt,
        connect_timeouts_per_s: tot.counts.connect_timeouts as f64 / dt,
        refused_per_s: tot.counts.refused as f64 / dt,
        connect_p50_ms: q(&tot.connect, 0.5),
        connect_p99_ms: q(&tot.connect, 0.99),
        total_p50_ms: q(&tot.total, 0.5),
        total_p90_ms: q(&tot.total, 0.9),
        total_p98_ms: q(&tot.total, 0.98),
        total_p99_ms: q(&tot.total, 0.99),
        little_load_factor: little,
        syn_in_per_s: mean(col::SYN_IN),
        accept_queue_mean: mean(col::ACCEPT_QUEUE),
        accept_queue_max: max(col::ACCEPT_QUEUE),
        listen_overflows_per_s: mean(col::LISTEN_OVERFLOWS),
        reqq_full_drops_per_s: mean(col::REQQ_FULL_DROPS_PER_S),
        reqq_full_cookies_per_s: mean(col::REQQ_FULL_COOKIES_PER_S),
        syncookies_sent_per_s: mean(col::SYNCOOKIES_SENT_PER_S),
        syncookies_recv_per_s: mean(col::SYNCOOKIES_RECV_PER_S),
        syncookies_failed_per_s: mean(col::SYNCOOKIES_FAILED_PER_S),
        backlog_drops_per_s: mean(col::BACKLOG_DROPS_PER_S),
        rcvq_drops_per_s: mean(col::RCVQ_DROPS_PER_S),
        zero_window_drops_per_s: mean(col::ZERO_WINDOW_DROPS_PER_S),
        time_wait_overflows_per_s: mean(col::TIME_WAIT_OVERFLOWS_PER_S),
        abort_on_memory_per_s: mean(col::ABORT_ON_MEMORY_PER_S),
        udp_rcvbuf_errors_per_s: mean(col::UDP_RCVBUF_ERRORS_PER_S),
        udp_in_errors_per_s: mean(col::UDP_IN_ERRORS_PER_S),
        accept_queue_wait_mean_ms: mean(col::ACCEPT_QUEUE_WAIT_MEAN),
        accept_queue_wait_oldest_max_ms: max(col::ACCEPT_QUEUE_WAIT_OLDEST),
        split_connect_ms: nan_or(split.map(|s| s.connect_ms)),
        split_queue_ms: nan_or(split.and_then(|s| s.queue_ms)),
        split_service_ms: nan_or(split.and_then(|s| s.service_ms)),
        split_transfer_ms: nan_or(split.map(|s| s.transfer_ms)),
        split_total_ms: nan_or(split.map(|s| s.total_ms())),
        connect_retrans_pct: nan_or(retrans.map(|r| r.retrans_pct)),
        connect_retrans_once_pct: nan_or(retrans.map(|r| r.once_pct)),
        connect_retrans_twice_pct: nan_or(retrans.map(|r| r.twice_pct)),
        connect_retrans_once_ms: nan_or(retrans.map(|r| r.once_ms)),
        connect_retrans_twice_ms: nan_or(retrans.map(|r| r.twice_ms)),
        udp_no_ports_per_s: mean(col::UDP_NO_PORTS_PER_S),
        udp_in_datagrams_per_s: mean(col::UDP_IN_DATAGRAMS_PER_S),
        port_udp_drops_per_s: mean(col::PORT_UDP_DROPS_PER_S),
        udp_rcv_queue_max_bytes: max(col::UDP_RCV_QUEUE),
        udp_rcvbuf_bytes: max(col::UDP_RCVBUF),
        rmem_max_bytes: mean(col::RMEM_MAX),
        quic_initial_in_per_s: mean(col::QUIC_INITIAL_IN_PER_S),
        quic_first_initial_per_s: mean(col::QUIC_FIRST_INITIAL_PER_S),
        // HTTP/3's figures: NaN over TCP (no worker sent QUIC counts).
        quic_handshakes_full_per_s: nan_or(tot.quic.map(|q| (q.handshakes_full) as f64 / dt)),
        quic_handshakes_resumed_per_s: nan_or(tot.quic.map(|q| (q.handshakes_resumed) as f64 / dt)),
        quic_handshakes_0rtt_per_s: nan_or(tot.quic.map(|q| (q.handshakes_0rtt) as f64 / dt)),
        quic_handshake_ms_mean: nan_or(tot.quic.and_then(|q| {
            (q.handshakes() > 0).then(|| q.handshake_us_sum as f64 / q.handshakes() as f64 / 1000.0)
        })),
        quic_retry_per_s: nan_or(tot.quic.map(|q| (q.retry_received) as f64 / dt)),
        quic_packets_sent_per_s: nan_or(tot.quic.map(|q| (q.datagrams_sent) as f64 / dt)),
        quic_packets_recv_per_s: nan_or(tot.quic.map(|q| (q.datagrams_received) as f64 / dt)),
        quic_bytes_sent_per_s: nan_or(tot.quic.map(|q| (q.bytes_sent) as f64 / dt)),
        quic_bytes_recv_per_s: nan_or(tot.quic.map(|q| (q.bytes_received) as f64 / dt)),
        quic_lost_packets_per_s: nan_or(tot.quic.map(|q| (q.lost_packets) as f64 / dt)),
        quic_handshake_timeouts_per_s: nan_or(
            tot.quic.map(|q| (q.err_handshake_timeout) as f64 / dt),
        ),
        quic_idle_timeouts_per_s: nan_or(tot.quic.map(|q| (q.err_idle_timeout) as f64 / dt)),
        quic_refused_per_s: nan_or(tot.quic.map(|q| (q.err_refused) as f64 / dt)),
        quic_closed_by_server_per_s: nan_or(
            tot.quic
                .map(|q| (q.err_transport + q.err_application) as f64 / dt),
        ),
        quic_other_errors_per_s: nan_or(tot.quic.map(|q| (q.err_other) as f64 / dt)),
        server_quic_handshakes_per_s: nan_or(w.server_quic.map(|(h, _)| h as f64 / dt)),
        server_quic_retries_per_s: nan_or(w.server_quic.map(|(_, r)| r as f64 / dt)),
        // HTTP/2's figures: NaN over HTTP/1.x (no setup, no ALPN refusal).
        h2_streams_in_flight_mean: h2(mean(col::REQUESTS_IN_FLIGHT)),
        h2_streams_max: h2(max(col::H2_STREAMS_MAX)),
        h2_streams_limit: h2(mean(col::H2_STREAMS_LIMIT)),
        h2_refused_streams_per_s: h2(
            (tot.counts.streams_refused + tot.counts.streams_unprocessed) as f64 / dt,
        ),
        h2_stream_resets_per_s: h2(tot.counts.stream_resets as f64 / dt),
        h2_goaways_per_s: h2(tot.counts.goaways as f64 / dt),
        h2_alpn_refused_per_s: h2(tot.counts.alpn_refused as f64 / dt),
        h2_setup_ms_mean: h2(tot.counts.setup_us_sum as f64 / tot.counts.setups as f64 / 1000.0),
        h2_header_bytes_per_response: h2(
            tot.counts.header_bytes_wire as f64 / tot.counts.responses as f64
        ),
        h2_hpack_saving_pct: h2((1.0
            - tot.counts.header_bytes_wire as f64 / tot.counts.header_bytes_plain as f64)
            * 100.0),
        h2_flow_stall_ms_per_s: h2(tot.counts.flow_stall_us as f64 / 1000.0 / dt),
        h2_resets_no_error_per_s: reset_rate(ResetCode::NoError),
        h2_resets_protocol_error_per_s: reset_rate(ResetCode::ProtocolError),
        h2_resets_internal_error_per_s: reset_rate(ResetCode::InternalError),
        h2_resets_flow_control_error_per_s: reset_rate(ResetCode::FlowControlError),
        h2_resets_stream_closed_per_s: reset_rate(ResetCode::StreamClosed),
        h2_resets_cancel_per_s: reset_rate(ResetCode::Cancel),
        h2_resets_enhance_your_calm_per_s: reset_rate(ResetCode::EnhanceYourCalm),
        h2_resets_http_1_1_required_per_s: reset_rate(ResetCode::Http11Required),
        h2_resets_other_per_s: reset_rate(ResetCode::Other),
        established_mean: mean(col::ESTABLISHED_SOCKS),
        conn_recvq_bytes_mean: mean(col::CONN_RECVQ_MEAN),
        conn_recvq_bytes_max: max(col::CONN_RECVQ_MAX),
        conn_sendq_bytes_mean: mean(col::CONN_SENDQ_MEAN),
        conn_sendq_bytes_max: max(col::CONN_SENDQ_MAX),
        conn_retrans_max: max(col::CONN_RETRANS),
        server_sockets_mean: mean(col::TCP_INUSE),
        client_open_mean: mean(col::IN_FLIGHT),
        time_wait_mean: mean(col::TIME_WAIT),
        time_wait_max: max(col::TIME_WAIT),
        server_procs_mean: mean(col::SERVER_PROCS),
        server_busy_mean: mean(col::SERVER_BUSY),
        server_busy_max: max(col::SERVER_BUSY),
        cpu_user_pct: mean(col::CPU_USER),
        cpu_system_pct: mean(col::CPU_SYSTEM),
        cpu_irq_pct: mean(col::CPU_IRQ),
        cpu_softirq_pct: mean(col::CPU_SOFTIRQ),
        cpu_idle_pct: mean(col::CPU_IDLE),
        cpu_nice_pct: mean(col::CPU_NICE_PCT),
        cpu_iowait_pct: mean(col::CPU_IOWAIT_PCT),
        cpu_steal_pct: mean(col::CPU_STEAL_PCT),
        worker_cpu_pct: tot.cpu_s / dt * 100.0,
        // Over HTTP/3 an attempt's first packet is its first QUIC Initial, not a SYN.
        check_syn_vs_attempts_pct: if tot.quic.is_some() {
            Some(mean(col::QUIC_FIRST_INITIAL_PER_S)).filter(|i| i.is_finite())
        } else {
            crate::probe::crosscheck::port_first_syns(
                mean(col::SYN_IN),
                mean(col::SYN_RETRANS_PER_S),
                mean(col::SYN_IN_ESTIMATED),
            )
        }
        .map_or(f64::NAN, |first| {
            cross(tot.counts.attempts as f64 / dt, first)
        }),
        check_syn_tolerance_pct: crate::probe::crosscheck::syn_check_tolerance_pct(
            tot.counts.attempts as f64 / dt,
            dt,
            ctrl.state().interval_s,
        ),
        check_server_vs_client_pct: match server_rate {
            Some(s) => cross(tot.counts.responses as f64 / dt, s),
            None => f64::NAN,
        },
        client_bound: !bound.is_empty(),
        client_bound_reason: crate::lab::client_agg::client_bound_line(&bound),
        backend: ctrl.state().backend.clone(),
        totals: Some(window_totals(ctrl, &w)),
        paths: w
            .paths
            .iter()
            .map(|(name, p)| {
                let spec = ctrl.state().knobs.paths.iter().find(|s| &s.name == name);
                path_summary(name, p, dt, spec)
            })
            .collect(),
        classes: w
            .classes
            .iter()
            .map(|(name, k)| {
                super::classes::class_summary(name, k, dt, w.server_times.as_ref(), ctrl.syn_linear)
            })
            .collect(),
        states_samples: w.rows.count(col::ESTABLISHED_SOCKS) as f64,
        port_listen_drops_per_s: mean(col::PORT_LISTEN_DROPS_PER_S),
        port_time_wait_mean: mean(col::PORT_TIME_WAIT),
        port_time_wait_max: max(col::PORT_TIME_WAIT),
        syn_in_estimated: mean(col::SYN_IN_ESTIMATED),
        requests_per_s: tot.counts.requests as f64 / dt,
        connection_errors_per_s: tot.counts.connection_errors() as f64 / dt,
        request_errors_per_s: tot.counts.request_errors() as f64 / dt,
        handshakes_per_s: tls_rate(tot.counts.handshakes()),
        full_handshakes_per_s: tls_rate(tot.counts.handshakes_full),
        resumed_handshakes_per_s: tls_rate(tot.counts.handshakes_resumed),
        resumed_share_pct: nan_or(tot.resumed_share_pct().filter(|_| tls)),
        server_resumed_share_pct: nan_or(
            server_tls
                .and_then(|(f, r)| crate::model::HandshakeTotals::share(f, r))
                .map(|s| s * 100.0),
        ),
        handshake_errors_per_s: tls_rate(tot.counts.handshake_errors()),
        bad_certificates_per_s: tls_rate(tot.counts.bad_certificates),
        tls_alerts_per_s: tls_rate(tot.counts.tls_alerts),
        tls_protocol_errors_per_s: tls_rate(tot.counts.tls_protocol_errors),
        handshake_timeouts_per_s: tls_rate(tot.counts.handshake_timeouts),
        tls_handshake_p50_ms: q(&tot.handshake, 0.5),
        tls_handshake_p90_ms: q(&tot.handshake, 0.9),
        tls_handshake_p99_ms: q(&tot.handshake, 0.99),
        ttfb_p50_ms: q(&tot.ttfb, 0.5),
        ttfb_p99_ms: q(&tot.ttfb, 0.99),
        server_full_handshakes_per_s: nan_or(server_tls.map(|(f, _)| f as f64 / dt)),
        server_resumed_handshakes_per_s: nan_or(server_tls.map(|(_, r)| r as f64 / dt)),
        capacity_latency_ms: q(&tot.total, ctrl.capacity_q),
        ..server_cpu(ctrl, &w, tot.counts.responses as f64 / dt)
    }
}

/// The server's CPU over a window: its CPUs' split and NET_RX, its processes' CPU, and each
/// per response and per SYN; the load's CPU apart. `client_rate` is the clients' responses/s,
/// used where the server has no count of its own.
fn server_cpu(ctrl: &LabCore, w: &Window, client_rate: f64) -> SummaryRow {
    // Shares and rates of tick and softirq counters: weighted by the time each row covers, so
    // that a window's figure is its counters' change (a late sampler made a plain mean read
    // the server's CPU per response 19 % above /proc/PID/stat's).
    let mean = |c: Col| nan_or(w.rows.time_mean(c));
    let responses = w.server_rate.unwrap_or(client_rate);
    // `share` % of `cpus` CPUs, spread over `per_s` events a second, in µs each.
    let per = |share: f64, cpus: usize, per_s: f64| {
        if per_s > 0.0 && cpus > 0 {
            share / 100.0 * cpus as f64 * 1e6 / per_s
        } else {
            f64::NAN
        }
    };
    let cpus = &ctrl.state().cpus;
    let n_server = cpus.server.len();
    let busy = [
        col::SERVER_CORES_USER,
        col::SERVER_CORES_SYSTEM,
        col::SERVER_CORES_IRQ,
        col::SERVER_CORES_SOFTIRQ,
    ]
    .map(mean)
    .iter()
    .sum::<f64>();
    let load_busy = 100.0 - mean(col::LOAD_CORES_IDLE);
    SummaryRow {
        server_cores_user_pct: mean(col::SERVER_CORES_USER),
        server_cores_system_pct: mean(col::SERVER_CORES_SYSTEM),
        server_cores_irq_pct: mean(col::SERVER_CORES_IRQ),
        server_cores_softirq_pct: mean(col::SERVER_CORES_SOFTIRQ),
        server_cores_steal_pct: mean(col::SERVER_CORES_STEAL),
        server_cores_idle_pct: mean(col::SERVER_CORES_IDLE),
        server_cores_net_rx_per_s: mean(col::SERVER_CORES_NET_RX),
        server_cpu_user_pct: mean(col::SERVER_CPU_USER_PCT),
        server_cpu_sys_pct: mean(col::SERVER_CPU_SYS_PCT),
        server_cpu_us_per_response: per(
            mean(col::SERVER_CPU_USER_PCT) + mean(col::SERVER_CPU_SYS_PCT),
            1,
            responses,
        ),
        server_cores_us_per_response: per(busy, n_server, responses),
        server_softirq_us_per_syn: per(
            mean(col::SERVER_CORES_SOFTIRQ),
            n_server,
            mean(col::SYN_IN),
        ),
        server_cores_other_pct: other_work(
            mean(col::SERVER_CORES_USER) + mean(col::SERVER_CORES_SYSTEM),
            n_server,
            mean(col::SERVER_CPU_USER_PCT) + mean(col::SERVER_CPU_SYS_PCT),
        ),
        load_cpu_pct: mean(col::LOAD_CPU),
        load_cores_busy_pct: load_busy,
        // All of the load's CPUs' busy time (steal and softirq in), not user+system as for
        // the server: on a kernel without IRQ time accounting (this one) the workers' own time
        // holds the softirq ticks that landed on them, so user+system less it hides others.
        load_cores_other_pct: other_work(load_busy, cpus.load.len(), mean(col::LOAD_CPU)),
        steer: cpus.steer.map(|s| s.name().to_string()).unwrap_or_default(),
        ..Default::default()
    }
}

/// Other work on a set of `n` CPUs whose user+system share is `busy` % of their time, less
/// `own` (the lab's processes on them, % of one core): in % of one core. NaN (no split) stays
/// NaN: f64::max would make it 0.
pub(super) fn other_work(busy: f64, n: usize, own: f64) -> f64 {
    match busy * n as f64 - own {
        o if o.is_nan() => o,
        o => o.max(0.0),
    }
}

/// One network path's figures over a window of `dt` seconds (its workers' covered time), and
/// the profile it ran under.
fn path_summary(
    name: &str,
    p: &ClientTotals,
    dt: f64,
    spec: Option<&crate::net::spec::PathSpec>,
) -> PathSummary {
    let dt = p.covered_s().unwrap_or(dt).max(1e-3);
    let q = |h: &hdrhistogram::Histogram<u64>, x: f64| nan_or(ClientTotals::q_ms(h, x));
    PathSummary {
        name: name.to_string(),
        attempts_per_s: p.counts.attempts as f64 / dt,
        throughput_per_s: p.counts.responses as f64 / dt,
        errors_per_s: p.errors() as f64 / dt,
        connect_timeouts: p.counts.connect_timeouts,
        connect_p50_ms: q(&p.connect, 0.5),
        connect_p99_ms: q(&p.connect, 0.99),
        total_p50_ms: q(&p.total, 0.5),
        total_p90_ms: q(&p.total, 0.9),
        total_p99_ms: q(&p.total, 0.99),
        rtt_ms: spec.map_or(f64::NAN, |s| s.rtt.secs() * 1000.0),
        jitter_ms: spec.map_or(f64::NAN, |s| s.jitter.secs() * 1000.0),
        loss_pct: spec.map_or(f64::NAN, |s| s.loss.0),
        bandwidth_mbit: spec
            .and_then(|s| s.bandwidth)
            .map_or(f64::NAN, |b| b.bits_per_sec() as f64 / 1e6),
    }
}

/// A window's counts: the client's, the SYNs pcap saw between the samples at its edges, and
/// the server's own count.
fn window_totals(ctrl: &LabCore, w: &Window) -> Totals {
    let mut t = w.client.totals();
    let pcap = ctrl.state().store.last(col::SYN_IN_ESTIMATED) == Some(0.0);
    if pcap {
        // The pcap total of the last sample at or before each edge.
        let (a, b) = (
            w.rows.at_open(col::SYN_IN_TOTAL),
            w.rows.latest(col::SYN_IN_TOTAL),
        );
        if let (Some(a), Some(b)) = (a, b) {
            t.syn_in = Some((b - a).max(0.0) as u64);
        }
    }
    t.server_responses = w.server_responses;
    if let (Some(tls), Some((full, resumed))) = (t.tls.as_mut(), w.server_tls) {
        tls.server_full = Some(full);
        tls.server_resumed = Some(resumed);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::other_work;

    #[test]
    fn other_work_is_the_cpus_busy_time_less_the_labs_own() {
        // One load CPU 70 % busy, the workers and controller 55 % of a core: 15 % other work.
        assert_eq!(other_work(70.0, 1, 55.0), 15.0);
        // Two CPUs 50 % busy are one core; own 120 % (clock skew between the two counters)
        // is no negative work.
        assert_eq!(other_work(50.0, 2, 120.0), 0.0);
        // Without a split the cores' share is unknown, and so is other work.
        assert!(other_work(f64::NAN, 0, 30.0).is_nan());
    }
}
