//! Whose each probe figure is: the server port's (pcap with a port filter, sock_diag of the
//! port), the server's network namespace's (its kernel counters and sockstat: every port), the
//! machine's (CPU, and the few TCP counts the kernel keeps only machine-wide), the server
//! process family's, or the probes' own. `synlab probe` groups its table columns and its JSON
//! keys by it, so a namespace-wide count never passes for the port's.

use super::sample::{ProbeSample, SynSource};
use crate::model::{col, Col};
use serde_json::{Map, Value};

pub use crate::model::Scope;

/// Each figure of a sample but the SYN rate (whose key depends on its source: [`syn_rate`]),
/// its key in its scope's JSON group (the scope is the column's: `Col::scope`).
const KEYS: &[(Col, &str)] = &[
    (col::SYNACK_OUT_PER_S, "synack_out_per_s"),
    (col::RST_IN_PER_S, "rst_in_per_s"),
    (col::RST_OUT_PER_S, "rst_out_per_s"),
    (col::SYN_RETRANS_PER_S, "syn_retrans_per_s"),
    (col::ACCEPT_QUEUE, "accept_queue"),
    (col::ACCEPT_QUEUE_LIMIT, "accept_queue_limit"),
    (col::ACCEPT_QUEUE_WAIT_OLDEST, "accept_queue_wait_oldest_ms"),
    (col::ACCEPT_QUEUE_WAIT_MEAN, "accept_queue_wait_mean_ms"),
    (col::SYN_RECV, "syn_recv"),
    (col::ESTABLISHED_SOCKS, "established"),
    (col::CONN_RECVQ_MEAN, "conn_recvq_bytes_mean"),
    (col::CONN_RECVQ_MAX, "conn_recvq_bytes_max"),
    (col::CONN_SENDQ_MEAN, "conn_sendq_bytes_mean"),
    (col::CONN_SENDQ_MAX, "conn_sendq_bytes_max"),
    (col::CONN_RETRANS, "conn_retrans"),
    (col::FIN_WAIT, "fin_wait"),
    (col::CLOSE_WAIT, "close_wait"),
    (col::LAST_ACK, "last_ack"),
    (col::CLOSING, "closing"),
    (col::PORT_TIME_WAIT, "time_wait"),
    (col::PORT_LISTEN_DROPS, "listen_drops"),
    (col::PORT_LISTEN_DROPS_PER_S, "listen_drops_per_s"),
    (col::SYN_IN_TOTAL, "syn_in_total"),
    (col::SYN_RETRANS_TOTAL, "syn_retrans_total"),
    (col::SYNACK_OUT_TOTAL, "synack_out_total"),
    (col::RST_IN_TOTAL, "rst_in_total"),
    (col::RST_OUT_TOTAL, "rst_out_total"),
    (col::TIME_WAIT, "time_wait"),
    (col::TCP_INUSE, "tcp_inuse"),
    (col::LISTEN_OVERFLOWS, "listen_overflows_per_s"),
    (col::LISTEN_DROPS_PER_S, "listen_drops_per_s"),
    (col::PASSIVE_OPENS_PER_S, "passive_opens_per_s"),
    (col::ACTIVE_OPENS_PER_S, "active_opens_per_s"),
    (col::ATTEMPT_FAILS_PER_S, "attempt_fails_per_s"),
    (col::ESTAB_RESETS_PER_S, "estab_resets_per_s"),
    (col::RETRANS_SEGS_PER_S, "retrans_segs_per_s"),
    (col::OUT_RSTS_PER_S, "out_rsts_per_s"),
    (col::TCP_TIMEOUTS_PER_S, "tcp_timeouts_per_s"),
    (col::SYNCOOKIES_SENT_PER_S, "syncookies_sent_per_s"),
    (col::REQQ_FULL_DROPS_PER_S, "reqq_full_drops_per_s"),
    (col::REQQ_FULL_COOKIES_PER_S, "reqq_full_cookies_per_s"),
    (col::SYNCOOKIES_RECV_PER_S, "syncookies_recv_per_s"),
    (col::SYNCOOKIES_FAILED_PER_S, "syncookies_failed_per_s"),
    (col::BACKLOG_DROPS_PER_S, "backlog_drops_per_s"),
    (col::RCVQ_DROPS_PER_S, "rcvq_drops_per_s"),
    (col::ZERO_WINDOW_DROPS_PER_S, "zero_window_drops_per_s"),
    (col::TIME_WAIT_OVERFLOWS_PER_S, "time_wait_overflows_per_s"),
    (col::ABORT_ON_MEMORY_PER_S, "abort_on_memory_per_s"),
    (col::UDP_RCVBUF_ERRORS_PER_S, "udp_rcvbuf_errors_per_s"),
    (col::UDP_IN_ERRORS_PER_S, "udp_in_errors_per_s"),
    (col::UDP_NO_PORTS_PER_S, "udp_no_ports_per_s"),
    (col::UDP_IN_DATAGRAMS_PER_S, "udp_in_datagrams_per_s"),
    (col::UDP_RCV_QUEUE, "udp_rcv_queue_bytes"),
    (col::UDP_RCVBUF, "udp_rcvbuf_bytes"),
    (col::PORT_UDP_DROPS, "udp_drops"),
    (col::PORT_UDP_DROPS_PER_S, "udp_drops_per_s"),
    (col::QUIC_INITIAL_IN_PER_S, "quic_initial_in_per_s"),
    (col::QUIC_FIRST_INITIAL_PER_S, "quic_first_initial_per_s"),
    (col::QUIC_INITIAL_IN_TOTAL, "quic_initial_in_total"),
    (col::QUIC_FIRST_INITIAL_TOTAL, "quic_first_initial_total"),
    (col::RMEM_MAX, "rmem_max_bytes"),
    (col::PASSIVE_OPENS_TOTAL, "passive_opens_total"),
    (col::LISTEN_DROPS_TOTAL, "listen_drops_total"),
    (col::LISTEN_OVERFLOWS_TOTAL, "listen_overflows_total"),
    (col::UDP_RCVBUF_ERRORS_TOTAL, "udp_rcvbuf_errors_total"),
    (col::ACTIVE_OPENS_TOTAL, "active_opens_total"),
    (col::TCP_ORPHAN, "tcp_orphan"),
    (col::TCP_MEM_PAGES, "tcp_mem_pages"),
    (col::CPU_USER, "cpu_user_pct"),
    (col::CPU_NICE_PCT, "cpu_nice_pct"),
    (col::CPU_SYSTEM, "cpu_system_pct"),
    (col::CPU_IRQ, "cpu_irq_pct"),
    (col::CPU_SOFTIRQ, "cpu_softirq_pct"),
    (col::CPU_IOWAIT_PCT, "cpu_iowait_pct"),
    (col::CPU_IDLE, "cpu_idle_pct"),
    (col::CPU_STEAL_PCT, "cpu_steal_pct"),
    (col::CTXT_PER_S, "ctxt_per_s"),
    (col::INTR_PER_S, "intr_per_s"),
    (col::NET_RX_SOFTIRQ_PER_S, "net_rx_softirq_per_s"),
    (col::NET_TX_SOFTIRQ_PER_S, "net_tx_softirq_per_s"),
    (col::PROCS_RUNNING, "procs_running"),
    (col::PROCS_BLOCKED, "procs_blocked"),
    (col::SERVER_PROCS, "procs"),
    (col::SERVER_THREADS, "threads"),
    (col::SERVER_CPU_USER_PCT, "cpu_user_pct"),
    (col::SERVER_CPU_SYS_PCT, "cpu_sys_pct"),
    (col::SERVER_RSS_MB, "rss_mb"),
    (col::PROBE_CPU, "cpu_pct"),
    (col::CONTROLLER_CPU, "process_cpu_pct"),
    (col::SERVER_CORES_USER, "server_cores_user_pct"),
    (col::SERVER_CORES_SYSTEM, "server_cores_system_pct"),
    (col::SERVER_CORES_IRQ, "server_cores_irq_pct"),
    (col::SERVER_CORES_SOFTIRQ, "server_cores_softirq_pct"),
    (col::SERVER_CORES_STEAL, "server_cores_steal_pct"),
    (col::SERVER_CORES_IDLE, "server_cores_idle_pct"),
    (col::SERVER_CORES_NET_RX, "server_cores_net_rx_per_s"),
    (col::LOAD_CORES_USER, "load_cores_user_pct"),
    (col::LOAD_CORES_SYSTEM, "load_cores_system_pct"),
    (col::LOAD_CORES_IRQ, "load_cores_irq_pct"),
    (col::LOAD_CORES_SOFTIRQ, "load_cores_softirq_pct"),
    (col::LOAD_CORES_IDLE, "load_cores_idle_pct"),
    (col::PCAP_DROPS, "pcap_drops"),
    (col::PCAP_IF_DROPS, "pcap_if_drops"),
];

/// The SYN rate's scope and key: counted on the port's packets by pcap, or estimated from the
/// namespace's counters (PassiveOpens + ListenDrops of every port).
pub fn syn_rate(source: SynSource) -> (Scope, &'static str) {
    let estimated = source == SynSource::Estimated;
    let key = if estimated {
        "syn_in_estimate_per_s"
    } else {
        "syn_in_per_s"
    };
    (Scope::of_syn_rate(estimated), key)
}

/// A figure's scope and key (None for the flag that says the SYN rate's source, said by
/// `syn_source` instead).
pub fn of(c: Col, source: SynSource) -> Option<(Scope, &'static str)> {
    if c == col::SYN_IN {
        return Some(syn_rate(source));
    }
    let key = KEYS.iter().find(|(x, _)| *x == c)?.1;
    Some((c.scope()?, key))
}

/// What the probe was pointed at: said in the JSON beside each group.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub port: u16,
    /// The namespace, as the person named it (`pid 4711's`, `named lab-srv`, `this process's`).
    pub netns: String,
    pub server_pid: Option<u32>,
}

/// A sample as JSON grouped by whose each figure is:
/// `{"t_s", "seq", "dt_s", "syn_source", "port": {"port": P, ...}, "netns": {...},
/// "machine": {..., "per_cpu"}, "server": {"pid", ...}, "probe": {...}, "notes"}`.
pub fn to_json(s: &ProbeSample, t: &Target) -> Value {
    let mut groups: Vec<(Scope, Map<String, Value>)> = [
        Scope::Port,
        Scope::Netns,
        Scope::Machine,
        Scope::Server,
        Scope::Probe,
    ]
    .into_iter()
    .map(|g| (g, Map::new()))
    .collect();
    let group = |groups: &mut Vec<(Scope, Map<String, Value>)>, sc: Scope| -> usize {
        groups.iter().position(|(g, _)| *g == sc).unwrap_or(0)
    };
    let i = group(&mut groups, Scope::Port);
    groups[i].1.insert("port".into(), t.port.into());
    let i = group(&mut groups, Scope::Netns);
    groups[i].1.insert("netns".into(), t.netns.clone().into());
    let i = group(&mut groups, Scope::Server);
    groups[i].1.insert("pid".into(), t.server_pid.into());
    for (c, v) in s.columns() {
        let Some((sc, key)) = of(c, s.syn_source) else {
            continue;
        };
        let i = group(&mut groups, sc);
        groups[i].1.insert(key.into(), v.into());
    }
    let i = group(&mut groups, Scope::Port);
    groups[i].1.insert(
        "listeners".into(),
        serde_json::to_value(&s.listeners).unwrap_or_default(),
    );
    // The drops group, by reason in words-as-keys (`accept_queue_full`), inside the netns
    // group whose counters they are.
    let drops: Map<String, Value> = crate::model::drops::DROP_REASONS
        .iter()
        .map(|r| (r.short.to_string(), s.m.get(r.col).into()))
        .collect();
    let i = group(&mut groups, Scope::Netns);
    groups[i].1.insert("drops".into(), drops.into());
    let i = group(&mut groups, Scope::Machine);
    groups[i].1.insert(
        "per_cpu".into(),
        serde_json::to_value(&s.per_cpu).unwrap_or_default(),
    );
    // The kernel's own drop reasons are machine-wide (skb:kfree_skb of every namespace).
    if let Some(k) = &s.kernel {
        groups[i].1.insert(
            "kernel_drop_reasons".into(),
            serde_json::to_value(k).unwrap_or_default(),
        );
    }
    let mut out = Map::new();
    out.insert("t_s".into(), s.t_s.into());
    out.insert("seq".into(), s.seq.into());
    out.insert("dt_s".into(), s.dt_s.into());
    out.insert(
        "syn_source".into(),
        serde_json::to_value(s.syn_source).unwrap_or_default(),
    );
    for (g, m) in groups {
        out.insert(g.key().into(), Value::Object(m));
    }
    out.insert("notes".into(), s.notes.clone().into());
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Metrics;

    #[test]
    fn every_figure_has_one_scope() {
        for c in Metrics::COLUMNS {
            let keyed = KEYS.iter().filter(|(x, _)| x == c).count();
            let special = *c == col::SYN_IN || *c == col::SYN_IN_ESTIMATED;
            assert_eq!(keyed, usize::from(!special), "{c}: give it one key");
            assert_eq!(c.scope().is_some(), !special, "{c}: give it one scope");
        }
        // Keys are unique within a group.
        for (c, k) in KEYS {
            let s = c.scope();
            let same = KEYS
                .iter()
                .filter(|(c2, k2)| c2.scope() == s && k2 == k)
                .count();
            assert_eq!(same, 1, "{c}: key {k} twice in {s:?}");
        }
        assert_eq!(
            of(col::TIME_WAIT, SynSource::Pcap),
            Some((Scope::Netns, "time_wait"))
        );
        assert_eq!(
            of(col::PORT_TIME_WAIT, SynSource::Pcap),
            Some((Scope::Port, "time_wait"))
        );
        assert_eq!(
            of(col::TCP_ORPHAN, SynSource::Pcap).unwrap().0,
            Scope::Machine
        );
        assert_eq!(
            of(col::SYN_IN, SynSource::Pcap),
            Some((Scope::Port, "syn_in_per_s"))
        );
        assert_eq!(
            of(col::SYN_IN, SynSource::Estimated),
            Some((Scope::Netns, "syn_in_estimate_per_s"))
        );
    }

    #[test]
    fn the_json_groups_each_figure_under_its_owner() {
        let m = Metrics {
            time_wait: Some(31737.0),
            port_time_wait: Some(0.0),
            tcp_orphan: Some(12.0),
            syn_in_per_s: Some(600.0),
            listen_overflows_per_s: Some(725.0),
            passive_opens_per_s: Some(600.0),
            ..Default::default()
        };
        let s = ProbeSample {
            at: std::time::Instant::now(),
            t_s: 1.0,
            seq: 5,
            dt_s: Some(0.2),
            syn_source: SynSource::Estimated,
            m,
            per_cpu: Vec::new(),
            listeners: Vec::new(),
            notes: Vec::new(),
            kernel: None,
        };
        let t = Target {
            port: 18080,
            netns: "this process's".into(),
            server_pid: None,
        };
        let j = to_json(&s, &t);
        assert_eq!(j["port"]["port"], 18080);
        assert_eq!(j["port"]["time_wait"], 0.0);
        assert_eq!(j["netns"]["time_wait"], 31737.0);
        assert_eq!(j["netns"]["drops"]["accept_queue_full"], 725.0);
        assert_eq!(j["netns"]["drops"]["syn_queue_full_dropped"], Value::Null);
        assert_eq!(j["machine"]["tcp_orphan"], 12.0);
        assert!(j["port"].get("syn_in_per_s").is_none());
        assert_eq!(j["netns"]["syn_in_estimate_per_s"], 600.0);
        assert_eq!(j["server"]["pid"], Value::Null);
        assert_eq!(j["syn_source"], "estimated");
    }
}
