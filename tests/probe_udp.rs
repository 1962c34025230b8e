//! The UDP side of the probes (issue 47 item 3) on the real kernel, in a private netns: a UDP
//! socket with a small receive buffer flooded with QUIC Initials faster than it reads. The
//! kernel's own counters are the reference: the namespace's Udp RcvbufErrors change and the
//! socket's drops (sock_diag) both equal the datagrams sent less those the socket received,
//! and the probes' rates summed over their samples equal that change; pcap counts every
//! Initial that arrived and, apart, each connection attempt's first.

mod probe_support;

use probe_support::{privileged, Netns};
use std::net::UdpSocket;
use std::time::Duration;
use synlab::probe::procnet::NetCounters;
use synlab::probe::{spawn, ProbeConfig, ProbeSample};

/// The namespace's Udp counters, read by a thread inside it.
fn udp(ns: &Netns) -> NetCounters {
    ns.run(|| {
        let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
        NetCounters::parse(&snmp, &netstat).unwrap()
    })
}

/// A QUIC v1 Initial of 1,200 bytes (as a client pads it) from connection `conn`.
fn initial(conn: u32) -> Vec<u8> {
    let mut q = vec![0xc3];
    q.extend_from_slice(&1u32.to_be_bytes());
    q.push(8);
    q.extend_from_slice(&[0xdc; 4]);
    q.extend_from_slice(&conn.to_be_bytes());
    q.push(8);
    q.extend_from_slice(&[0x5c; 4]);
    q.extend_from_slice(&conn.to_be_bytes());
    q.resize(1200, 0);
    q
}

#[test]
fn a_udp_flood_past_the_buffer_is_dropped_as_the_kernel_and_pcap_count_it() {
    if !privileged("UDP flood test") {
        return;
    }
    let ns = Netns::new();
    let rx = ns.run(|| {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        synlab::sys::udpdiag::set_rcvbuf(&s, 32 * 1024).unwrap();
        s
    });
    let port = rx.local_addr().unwrap().port();
    let (tx, samples_rx) = crossbeam_channel::unbounded();
    let mut cfg = ProbeConfig::new(port);
    cfg.netns = Some(ns.0.clone());
    cfg.interval = Duration::from_millis(100);
    let handle = spawn(cfg, tx).expect("probes start");
    let first: ProbeSample = samples_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        first.notes.iter().all(|n| !n.contains("pcap")),
        "the test needs the capture: {:?}",
        first.notes
    );
    let before = udp(&ns);

    // 4,000 connection attempts, every tenth sent twice (a retransmitted Initial), in bursts
    // far faster than the socket is read (not at all until the end).
    let (conns, sent) = ns.run(move || {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut sent = 0u64;
        for c in 0..4000u32 {
            let d = initial(c);
            let times = if c % 10 == 0 { 2 } else { 1 };
            for _ in 0..times {
                tx.send_to(&d, ("127.0.0.1", port)).unwrap();
                sent += 1;
            }
        }
        (4000u64, sent)
    });
    // The socket holds what its buffer took until it is read: a sample sees the queue full.
    let mut samples = vec![first];
    while !samples
        .last()
        .and_then(|s| s.m.udp_rcv_queue_bytes)
        .is_some_and(|q| q > 0.0)
    {
        samples.push(samples_rx.recv_timeout(Duration::from_secs(5)).unwrap());
        assert!(samples.len() < 50, "no sample saw the queue");
    }
    let mut received = 0u64;
    rx.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    while rx.recv(&mut buf).is_ok() {
        received += 1;
    }
    // Samples until the counters have stopped moving and the capture has seen every Initial.
    let mut settled = 0;
    while settled < 3 {
        let s: ProbeSample = samples_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let quiet = s.m.udp_rcvbuf_errors_per_s == Some(0.0)
            && s.m.quic_initial_in_per_s == Some(0.0)
            && s.m.quic_initial_in_total.is_some_and(|t| t >= sent as f64);
        settled = if quiet { settled + 1 } else { 0 };
        samples.push(s);
        assert!(samples.len() < 300, "the counters never settled");
    }
    let after = udp(&ns);
    drop(handle);

    let kernel = |k: &str| after.counter(k).unwrap() - before.counter(k).unwrap();
    let rcvbuf_errors = kernel("Udp.RcvbufErrors");
    let lost = sent - received;
    let last = samples.last().unwrap();
    let summed = |f: fn(&ProbeSample) -> Option<f64>| -> f64 {
        samples.iter().filter_map(|s| Some(f(s)? * s.dt_s?)).sum()
    };
    let rcvbuf_summed = summed(|s| s.m.udp_rcvbuf_errors_per_s);
    let port_summed = summed(|s| s.m.port_udp_drops_per_s);
    let queue_max = samples
        .iter()
        .filter_map(|s| s.m.udp_rcv_queue_bytes)
        .fold(0.0, f64::max);
    eprintln!(
        "sent {sent}, received {received}: RcvbufErrors +{rcvbuf_errors}, InDatagrams +{}, \
         the socket's drops {:?} (summed rate {port_summed:.1}), probes' RcvbufErrors summed \
         {rcvbuf_summed:.1}; rcvbuf {:?}, queue max {queue_max}, rmem_max {:?}; pcap Initials \
         {:?}, first {:?} (attempts {conns})",
        kernel("Udp.InDatagrams"),
        last.m.port_udp_drops,
        last.m.udp_rcvbuf_bytes,
        last.m.rmem_max_bytes,
        last.m.quic_initial_in_total,
        last.m.quic_first_initial_total,
    );
    assert!(lost > 1000, "the flood overflowed the buffer: lost {lost}");
    // The kernel's two counts of the same drops, and the truth (sent - received).
    assert_eq!(rcvbuf_errors, lost, "Udp RcvbufErrors vs sent - received");
    assert_eq!(
        last.m.port_udp_drops,
        Some(lost as f64),
        "the socket's drops (sock_diag) vs sent - received"
    );
    assert_eq!(kernel("Udp.InDatagrams"), received);
    // The probes' rates over their samples add up to the same (within rounding).
    assert!((rcvbuf_summed - lost as f64).abs() < 0.5, "{rcvbuf_summed}");
    assert!((port_summed - lost as f64).abs() < 0.5, "{port_summed}");
    // The buffer as the kernel keeps it (doubled) and the queue that filled it.
    assert_eq!(last.m.udp_rcvbuf_bytes, Some(65536.0));
    assert!(queue_max > 0.0, "the queue was seen holding datagrams");
    let rmem: f64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(last.m.rmem_max_bytes, Some(rmem));
    // pcap saw every Initial arrive (before the socket's buffer), and told the first ones.
    assert_eq!(last.m.quic_initial_in_total, Some(sent as f64));
    assert_eq!(last.m.quic_first_initial_total, Some(conns as f64));
}
