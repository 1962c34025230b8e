//! Capture of the server's TCP control packets with libpcap: a BPF filter on SYN/RST for the
//! port (and QUIC Initials to it), a small snaplen, block-wise delivery; counts kept in atomics that the sampler reads,
//! together with libpcap's own statistics (packets the kernel dropped are reported, not hidden).

use super::control_packets::{
    bpf_filter, classify, parse_frame, syn_key, Control, SynTracker, SYN_BATCH,
};
use super::quic_packets::{self, parse_initial, InitialTracker};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

fn wait_readable(fd: i32, timeout_ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout_ms) };
}

/// Enough for Ethernet/cooked + IPv6 + the fixed TCP header, and for a QUIC Initial's header
/// with both connection IDs at their longest (20 bytes each: 115 bytes on cooked v2 + IPv6):
/// a source ID cut short differently in an attempt's first and later Initials (whose
/// destination IDs differ in length) would make a repeat look like a new attempt.
pub const SNAPLEN: i32 = 128;

/// Running totals of the capture thread.
#[derive(Debug, Default)]
pub struct CaptureCounters {
    pub syn_in: AtomicU64,
    pub syn_retrans: AtomicU64,
    pub synack_out: AtomicU64,
    pub rst_in: AtomicU64,
    pub rst_out: AtomicU64,
    /// QUIC Initials arriving at the port (UDP), and of those the ones whose connection
    /// attempt was seen before (not its first Initial).
    pub initial_in: AtomicU64,
    pub initial_repeat: AtomicU64,
    /// libpcap's ps_recv / ps_drop / ps_ifdrop.
    pub received: AtomicU64,
    pub dropped: AtomicU64,
    pub if_dropped: AtomicU64,
    /// The capture thread's own CPU time (RUSAGE_THREAD), µs.
    pub cpu_us: AtomicU64,
    /// Set when the capture loop stopped on an error.
    pub failed: AtomicBool,
}

/// An opened, filtered capture, not yet running.
pub struct Capture {
    cap: pcap::Capture<pcap::Active>,
    port: u16,
    /// Something the person should know about this capture (its cost), said once.
    pub note: Option<String>,
}

/// Opens `iface` in the calling thread's netns with the control-packet filter for `port`.
pub fn open(iface: &str, port: u16) -> Result<Capture, pcap::Error> {
    let mut cap = pcap::Capture::from_device(iface)?
        .promisc(false)
        .snaplen(SNAPLEN)
        // Not immediate: libpcap then uses TPACKET_V3, where the kernel wakes the capture
        // thread once per block (full, or 50 ms old) instead of once per packet. The counts
        // lag by at most 50 ms, and the per-packet wake-ups, paid on the CPU that sends the
        // packet (the load generator's, on loopback), are gone.
        .timeout(50)
        .buffer_size(8 << 20)
        .open()?
        .setnonblock()?;
    // The TCP control segments, and QUIC long-header packets to the port (UDP), whose
    // Initials count as a TCP server's SYNs do.
    let filter = format!("{} or {}", bpf_filter(port), quic_packets::bpf_filter(port));
    cap.filter(&filter, true)?;
    let note =
        (is_loopback(cap.as_raw_fd(), iface) && !ignore_outgoing(cap.as_raw_fd())).then(|| {
            format!(
                "pcap on {iface}: the kernel cannot skip the transmit side (PACKET_IGNORE_OUTGOING \
                 needs Linux 4.20): every packet is filtered twice, at a cost to the sending CPU"
            )
        });
    Ok(Capture { cap, port, note })
}

/// On loopback every packet passes the interface twice, once sent and once received. libpcap
/// drops the sent copy, but only after the kernel has cloned it and run the filter, which
/// costs the sending CPU (the load generator's) about 6 % at 36,000 connections/s. Asking the
/// kernel to skip the transmit side removes that; every packet is still seen on receive. On
/// other interfaces the sent side is what carries the server's SYN-ACKs and RSTs, so it stays.
/// False when the kernel does not have the option (before Linux 4.20): the capture still
/// counts right, at the old cost.
fn ignore_outgoing(fd: i32) -> bool {
    let one: libc::c_int = 1;
    // SAFETY: a valid socket fd and a c_int option value of the right size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Whether `iface` (in the socket's netns) is a loopback interface.
fn is_loopback(fd: i32, iface: &str) -> bool {
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    if iface.len() >= req.ifr_name.len() {
        return false;
    }
    for (d, s) in req.ifr_name.iter_mut().zip(iface.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads ifr_name and writes ifr_ifru.ifru_flags of a valid ifreq.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req) };
    // SAFETY: on success the kernel filled the flags member of the union.
    rc == 0 && unsafe { req.ifr_ifru.ifru_flags } & libc::IFF_LOOPBACK as libc::c_short != 0
}

/// SYNs read from the ring and not yet looked up: looked up together when the batch is full
/// or the ring drained (their retransmission count lags their SYN count by at most a batch,
/// until the ring is drained).
#[derive(Default)]
struct SynBatch {
    syns: [(u64, u32); SYN_BATCH],
    n: usize,
}

impl SynBatch {
    /// Adds a SYN's key and ISN; true when the batch is full.
    fn push(&mut self, syn: (u64, u32)) -> bool {
        self.syns[self.n] = syn;
        self.n += 1;
        self.n == SYN_BATCH
    }

    fn flush(&mut self, syns: &mut SynTracker, counters: &CaptureCounters) {
        if self.n > 0 {
            let r = syns.retransmissions(&self.syns[..self.n]);
            counters.syn_retrans.fetch_add(u64::from(r), Relaxed);
            self.n = 0;
        }
    }
}

impl Capture {
    /// Counts packets until `stop` is set; runs in its own thread.
    pub fn run(mut self, counters: Arc<CaptureCounters>, stop: Arc<AtomicBool>) {
        let linktype = self.cap.get_datalink().0;
        let port = self.port;
        let mut syns = SynTracker::default();
        let mut initials = InitialTracker::default();
        let mut last_stats = std::time::Instant::now();
        let mut batch = SynBatch::default();
        while !stop.load(Relaxed) {
            // A block of the ring at a time, each packet where the kernel put it (next_packet
            // copied every one out first: a fifth of this thread's time).
            let got = self.cap.dispatch(None, |p| {
                if let Some(h) = parse_frame(linktype, p.data) {
                    match classify(&h, port) {
                        Control::SynIn => {
                            counters.syn_in.fetch_add(1, Relaxed);
                            if batch.push((syn_key(&h), h.seq)) {
                                batch.flush(&mut syns, &counters);
                            }
                        }
                        Control::SynAckOut => _ = counters.synack_out.fetch_add(1, Relaxed),
                        Control::RstIn => _ = counters.rst_in.fetch_add(1, Relaxed),
                        Control::RstOut => _ = counters.rst_out.fetch_add(1, Relaxed),
                        Control::Other => {}
                    }
                } else if let Some(i) = parse_initial(linktype, p.data, port) {
                    counters.initial_in.fetch_add(1, Relaxed);
                    if initials.is_repeat(&i) {
                        counters.initial_repeat.fetch_add(1, Relaxed);
                    }
                }
            });
            match got {
                // Non-blocking and nothing queued: wait on the fd ourselves (libpcap's own
                // timeout does not return on TPACKET_V3), so `stop` is seen within 50 ms.
                Ok(0) => {
                    batch.flush(&mut syns, &counters);
                    wait_readable(self.cap.as_raw_fd(), 50);
                }
                Ok(_) => {}
                Err(_) => {
                    counters.failed.store(true, Relaxed);
                    break;
                }
            }
            // The clock is read once a block or a wait, not per packet (a tenth of this
            // thread's time at 40,000 SYN/s, on the load's CPU).
            if last_stats.elapsed().as_millis() >= 50 {
                self.publish_stats(&counters);
                last_stats = std::time::Instant::now();
            }
        }
        batch.flush(&mut syns, &counters);
        self.publish_stats(&counters);
    }

    fn publish_stats(&mut self, c: &CaptureCounters) {
        if let Ok(s) = self.cap.stats() {
            c.received.store(s.received as u64, Relaxed);
            c.dropped.store(s.dropped as u64, Relaxed);
            c.if_dropped.store(s.if_dropped as u64, Relaxed);
        }
        c.cpu_us.store(super::procfs::thread_cpu_us(), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{is_loopback, CaptureCounters, SynBatch, SynTracker, SYN_BATCH};
    use std::os::fd::AsRawFd;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn a_batch_is_looked_up_when_full_or_flushed_and_counted_once() {
        let (mut batch, mut syns, c) = (
            SynBatch::default(),
            SynTracker::default(),
            CaptureCounters::default(),
        );
        // Eight SYNs, each sent twice, then one more: the 16th push fills the batch.
        let stream: Vec<(u64, u32)> = (10..18u64)
            .flat_map(|k| [(k, 100), (k, 100)])
            .chain([(99, 1)])
            .collect();
        for (n, &syn) in stream.iter().enumerate() {
            if batch.push(syn) {
                assert_eq!(n + 1, SYN_BATCH, "full at the 16th");
                batch.flush(&mut syns, &c);
            }
            let want = if n + 1 >= SYN_BATCH { 8 } else { 0 };
            assert_eq!(c.syn_retrans.load(Relaxed), want, "after SYN {n}");
        }
        // The 17th waits in the next batch until the ring is drained.
        batch.push((13, 100));
        assert_eq!(c.syn_retrans.load(Relaxed), 8);
        batch.flush(&mut syns, &c);
        assert_eq!(c.syn_retrans.load(Relaxed), 9);
        batch.flush(&mut syns, &c);
        assert_eq!(
            c.syn_retrans.load(Relaxed),
            9,
            "an empty batch adds nothing"
        );
    }

    #[test]
    fn loopback_is_told_from_other_interfaces() {
        // Any socket answers SIOCGIFFLAGS for its netns; no privilege needed.
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let fd = s.as_raw_fd();
        assert!(is_loopback(fd, "lo"));
        assert!(!is_loopback(fd, "synlab-no-such-if"));
        assert!(!is_loopback(fd, "a-name-longer-than-ifnamsiz"));
    }
}
