//! Capture of the server's TCP control packets with libpcap: a BPF filter on SYN/RST for the
//! port, a small snaplen, block-wise delivery; counts kept in atomics that the sampler reads,
//! together with libpcap's own statistics (packets the kernel dropped are reported, not hidden).

use crate::probe::packets::{bpf_filter, classify, parse_frame, Control, SynTracker};
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

/// Enough for Ethernet/cooked + IPv6 + the fixed TCP header.
pub const SNAPLEN: i32 = 96;

/// Running totals of the capture thread.
#[derive(Debug, Default)]
pub struct CaptureCounters {
    pub syn_in: AtomicU64,
    pub syn_retrans: AtomicU64,
    pub synack_out: AtomicU64,
    pub rst_in: AtomicU64,
    pub rst_out: AtomicU64,
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
    cap.filter(&bpf_filter(port), true)?;
    Ok(Capture { cap, port })
}

impl Capture {
    /// Counts packets until `stop` is set; runs in its own thread.
    pub fn run(mut self, counters: Arc<CaptureCounters>, stop: Arc<AtomicBool>) {
        let linktype = self.cap.get_datalink().0;
        let mut syns = SynTracker::default();
        let mut last_stats = std::time::Instant::now();
        while !stop.load(Relaxed) {
            match self.cap.next_packet() {
                Ok(p) => {
                    if let Some(h) = parse_frame(linktype, p.data) {
                        match classify(&h, self.port) {
                            Control::SynIn => {
                                counters.syn_in.fetch_add(1, Relaxed);
                                if syns.is_retransmission(&h) {
                                    counters.syn_retrans.fetch_add(1, Relaxed);
                                }
                            }
                            Control::SynAckOut => _ = counters.synack_out.fetch_add(1, Relaxed),
                            Control::RstIn => _ = counters.rst_in.fetch_add(1, Relaxed),
                            Control::RstOut => _ = counters.rst_out.fetch_add(1, Relaxed),
                            Control::Other => {}
                        }
                    }
                }
                // Non-blocking and nothing queued: wait on the fd ourselves (libpcap's own
                // timeout does not return on TPACKET_V3), so `stop` is seen within 50 ms.
                Err(pcap::Error::TimeoutExpired) => wait_readable(self.cap.as_raw_fd(), 50),
                Err(_) => {
                    counters.failed.store(true, Relaxed);
                    break;
                }
            }
            if last_stats.elapsed().as_millis() >= 50 {
                self.publish_stats(&counters);
                last_stats = std::time::Instant::now();
            }
        }
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
