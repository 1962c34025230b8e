//! TCP control packets as the capture (`sys::pcap`) sees them on the server's interface: the
//! BPF filter, header parsing (link, IPv4/IPv6, TCP flags), classification relative to the
//! server's port (SYN in, SYN-ACK out, RST in/out), and retransmitted-SYN detection (the same
//! 4-tuple and initial sequence number seen again). Pure, tested on byte frames.

use super::seen_table::SeenTable;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// pcap link types we can decode.
pub const DLT_EN10MB: i32 = 1;
pub const DLT_RAW: i32 = 12;
pub const DLT_RAW_LINUX: i32 = 101;
pub const DLT_LINUX_SLL: i32 = 113;
pub const DLT_LINUX_SLL2: i32 = 276;

const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const ACK: u8 = 0x10;

/// The parts of a TCP header the probe needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpHead {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub flags: u8,
}

/// Decodes link + IP + TCP headers; None for anything that is not a whole TCP header.
pub fn parse_frame(linktype: i32, frame: &[u8]) -> Option<TcpHead> {
    let (src, dst, tcp) = ip_payload(linktype, frame, 6)?;
    if tcp.len() < 14 {
        return None;
    }
    Some(TcpHead {
        src,
        dst,
        sport: u16::from_be_bytes([tcp[0], tcp[1]]),
        dport: u16::from_be_bytes([tcp[2], tcp[3]]),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        flags: tcp[13],
    })
}

/// The addresses and the IP payload of a frame of `linktype` carrying IP protocol `proto`
/// (6 TCP, 17 UDP; IPv6 without extension headers, as the BPF filter passes).
pub(super) fn ip_payload(
    linktype: i32,
    frame: &[u8],
    proto: u8,
) -> Option<(IpAddr, IpAddr, &[u8])> {
    let (ethertype, ip) = match linktype {
        DLT_EN10MB => {
            let mut et = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
            let mut off = 14;
            if et == 0x8100 {
                et = u16::from_be_bytes([*frame.get(16)?, *frame.get(17)?]);
                off = 18;
            }
            (et, frame.get(off..)?)
        }
        DLT_LINUX_SLL => (
            u16::from_be_bytes([*frame.get(14)?, *frame.get(15)?]),
            frame.get(16..)?,
        ),
        DLT_LINUX_SLL2 => (
            u16::from_be_bytes([*frame.first()?, *frame.get(1)?]),
            frame.get(20..)?,
        ),
        DLT_RAW | DLT_RAW_LINUX => match frame.first()? >> 4 {
            4 => (0x0800, frame),
            6 => (0x86dd, frame),
            _ => return None,
        },
        _ => return None,
    };
    Some(match ethertype {
        0x0800 => {
            let ihl = ((*ip.first()? & 0x0f) as usize) * 4;
            if *ip.get(9)? != proto || ihl < 20 {
                return None;
            }
            let s: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
            let d: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
            (s.into(), d.into(), ip.get(ihl..)?)
        }
        0x86dd => {
            if *ip.get(6)? != proto {
                return None; // extension headers: the BPF filter does not pass them either
            }
            let s: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            let d: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
            (s.into(), d.into(), ip.get(40..)?)
        }
        _ => return None,
    })
}

/// What a control packet means to the server on `port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    SynIn,
    SynAckOut,
    RstIn,
    RstOut,
    Other,
}

pub fn classify(h: &TcpHead, port: u16) -> Control {
    let (syn, ack, rst) = (h.flags & SYN != 0, h.flags & ACK != 0, h.flags & RST != 0);
    if rst {
        if h.dport == port {
            Control::RstIn
        } else if h.sport == port {
            Control::RstOut
        } else {
            Control::Other
        }
    } else if syn && !ack && h.dport == port {
        Control::SynIn
    } else if syn && ack && h.sport == port {
        Control::SynAckOut
    } else {
        Control::Other
    }
}

/// The BPF part that passes TCP to/from `port` with SYN or RST set (IPv4 and IPv6 without
/// extension headers), so data segments never reach user space.
pub fn bpf_filter(port: u16) -> String {
    format!(
        "(tcp port {port} and ((ip and tcp[tcpflags] & (tcp-syn|tcp-rst) != 0) or \
         (ip6 and ip6[6] == 6 and ip6[53] & 0x06 != 0)))"
    )
}

/// How long a SYN is remembered at least: Linux's six default retries come 1, 3, 7, 15, 31 and
/// 63 s after the first SYN.
pub const SYN_MEMORY: Duration = Duration::from_secs(64);

/// The clock is read once per this many SYNs (the capture thread's per-packet cost).
const AGE_CHECK_EVERY: usize = 256;

/// SYNs looked up together: their table lines are prefetched first, so their cache misses
/// overlap instead of coming one after another.
pub const SYN_BATCH: usize = 16;

/// Remembers initial SYNs to tell retransmissions (same 4-tuple, same ISN) from new attempts.
/// Two generations, rotated every `generation` SYNs or every `SYN_MEMORY`, whichever comes
/// first, bound the memory: a SYN is remembered for at least one generation. The count covers
/// high rates (the default, the 1-3-7 s retries at up to ~100k SYN/s); the age keeps a long run
/// at a low rate from holding a million SYNs it no longer needs (#15's soak: the controller's
/// RSS grew with this table for half an hour).
#[derive(Debug)]
pub struct SynTracker {
    /// 4-tuple (as a 64-bit hash) -> ISN: 16 bytes a SYN instead of ~48 with the addresses
    /// themselves. A false "retransmission" needs two live 4-tuples with the same hash and
    /// the same ISN: about 2^-96 a pair.
    cur: SeenTable,
    old: SeenTable,
    generation: usize,
    max_age: Duration,
    /// When the current generation began (None: at its first SYN).
    began: Option<Instant>,
    /// SYNs recorded since the clock was last read.
    since_clock: usize,
}

impl SynTracker {
    pub fn new(generation: usize) -> Self {
        Self::with_age(generation, SYN_MEMORY)
    }

    pub fn with_age(generation: usize, max_age: Duration) -> Self {
        SynTracker {
            cur: SeenTable::default(),
            old: SeenTable::default(),
            generation: generation.max(1),
            max_age,
            began: None,
            since_clock: 0,
        }
    }

    /// Records an incoming SYN; true if it is a retransmission of one already seen (tests:
    /// the capture thread looks SYNs up in batches, [`Self::retransmissions`]).
    #[cfg(test)]
    pub fn is_retransmission(&mut self, h: &TcpHead) -> bool {
        self.seen(syn_key(h), h.seq, Instant::now)
    }

    /// Records a batch of SYNs (their [`syn_key`]s and ISNs, in the order they came): how
    /// many were retransmissions. Each SYN's table lines are asked for before the first is
    /// looked at, so the lookups wait for memory once, not once per SYN.
    pub fn retransmissions(&mut self, syns: &[(u64, u32)]) -> u32 {
        for &(key, _) in syns {
            self.cur.prefetch(key);
            self.old.prefetch(key);
        }
        syns.iter()
            .map(|&(key, isn)| u32::from(self.seen(key, isn, Instant::now)))
            .sum()
    }

    /// Records `val` under a key the caller made (a QUIC attempt's 4-tuple with its connection
    /// ID); true if that pair was seen before.
    pub(super) fn is_seen(&mut self, key: u64, val: u32) -> bool {
        self.seen(key, val, Instant::now)
    }

    /// The same, at `now` (tests).
    pub fn is_retransmission_at(&mut self, h: &TcpHead, now: Instant) -> bool {
        self.seen(syn_key(h), h.seq, || now)
    }

    /// SYNs remembered in both generations.
    pub fn len(&self) -> usize {
        self.cur.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn seen(&mut self, key: u64, val: u32, now: impl Fn() -> Instant) -> bool {
        if self.cur.get(key) == Some(val) || self.old.get(key) == Some(val) {
            return true;
        }
        // Counted per SYN, not per table entry: a port that comes round again overwrites its
        // entry, and a table levelled at the ports in use must still age.
        self.since_clock += 1;
        let rotate = self.cur.len() >= self.generation || self.aged(&now);
        if rotate {
            // The old table's slots become the new current one's: no reallocation churn at
            // every generation (its memory stays at the busiest generation's size).
            std::mem::swap(&mut self.cur, &mut self.old);
            self.cur.clear();
            self.began = Some(now());
            self.since_clock = 0;
        }
        self.cur.insert(key, val);
        false
    }

    /// Whether the current generation is past `max_age` (the clock read at its first SYN and
    /// then once per [`AGE_CHECK_EVERY`]).
    fn aged(&mut self, now: &impl Fn() -> Instant) -> bool {
        match self.began {
            None => {
                self.began = Some(now());
                false
            }
            Some(b) if self.since_clock >= AGE_CHECK_EVERY => {
                self.since_clock = 0;
                now().saturating_duration_since(b) >= self.max_age
            }
            Some(_) => false,
        }
    }
}

/// The 4-tuple of a segment as one 64-bit key (SipHash with fixed keys: the same in every
/// run, and good enough spread that the table stays flat).
pub fn syn_key(h: &TcpHead) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut st = std::hash::DefaultHasher::new();
    (h.src, h.sport, h.dst, h.dport).hash(&mut st);
    st.finish()
}

impl Default for SynTracker {
    fn default() -> Self {
        Self::new(1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth_v4(sport: u16, dport: u16, seq: u32, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        let mut ip = vec![
            0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 2, 127, 0, 0, 1,
        ];
        f.append(&mut ip);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        f
    }

    #[test]
    fn ipv4_syn_on_ethernet() {
        let h = parse_frame(DLT_EN10MB, &eth_v4(40000, 8080, 99, SYN)).unwrap();
        assert_eq!(h.src, "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!((h.sport, h.dport, h.seq), (40000, 8080, 99));
        assert_eq!(classify(&h, 8080), Control::SynIn);
        assert_eq!(classify(&h, 9999), Control::Other);
    }

    #[test]
    fn directions_of_synack_and_rst() {
        let sa = parse_frame(DLT_EN10MB, &eth_v4(8080, 40000, 1, SYN | ACK)).unwrap();
        assert_eq!(classify(&sa, 8080), Control::SynAckOut);
        let ri = parse_frame(DLT_EN10MB, &eth_v4(40000, 8080, 1, RST | ACK)).unwrap();
        assert_eq!(classify(&ri, 8080), Control::RstIn);
        let ro = parse_frame(DLT_EN10MB, &eth_v4(8080, 40000, 1, RST)).unwrap();
        assert_eq!(classify(&ro, 8080), Control::RstOut);
    }

    #[test]
    fn ipv6_on_cooked_v2() {
        let mut f = vec![0x86, 0xdd];
        f.resize(20, 0);
        let mut ip = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        ip.extend_from_slice(&[0; 15]);
        ip.push(1);
        ip.extend_from_slice(&[0; 15]);
        ip.push(1);
        f.append(&mut ip);
        f.extend_from_slice(&[0x9c, 0x40, 0x1f, 0x90, 0, 0, 0, 5, 0, 0, 0, 0, 0x50, SYN]);
        let h = parse_frame(DLT_LINUX_SLL2, &f).unwrap();
        assert_eq!(h.dst, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(classify(&h, 8080), Control::SynIn);
    }

    #[test]
    fn short_or_foreign_frames_are_skipped() {
        assert!(parse_frame(DLT_EN10MB, &eth_v4(1, 2, 3, SYN)[..40]).is_none());
        let mut udp = eth_v4(1, 2, 3, SYN);
        udp[14 + 9] = 17;
        assert!(parse_frame(DLT_EN10MB, &udp).is_none());
        assert!(parse_frame(999, &[0; 60]).is_none());
    }

    #[test]
    fn retransmitted_syn_is_same_tuple_same_isn() {
        let mut t = SynTracker::new(2);
        let a = parse_frame(DLT_EN10MB, &eth_v4(40000, 80, 7, SYN)).unwrap();
        let a_new_isn = TcpHead { seq: 8, ..a };
        let b = TcpHead { sport: 40001, ..a };
        let c = TcpHead { sport: 40002, ..a };
        assert!(!t.is_retransmission(&a));
        assert!(t.is_retransmission(&a));
        assert!(
            !t.is_retransmission(&a_new_isn),
            "port reuse with a new ISN is a new attempt"
        );
        assert!(!t.is_retransmission(&b));
        assert!(!t.is_retransmission(&c)); // rotates: a, b move to the old generation
        assert!(t.is_retransmission(&b));
    }

    /// The `i`th new SYN of one lab client, its ports coming round every `ports`.
    fn lab_syn(i: u32, ports: u32) -> TcpHead {
        TcpHead {
            src: "198.18.0.2".parse().unwrap(),
            sport: (i % ports) as u16,
            dst: "198.18.1.1".parse().unwrap(),
            dport: 80,
            seq: i,
            flags: SYN,
        }
    }

    #[test]
    fn a_batch_tells_the_retransmissions_one_by_one_would() {
        // Port reuse with new ISNs, repeats inside one batch and across batches, and rotation.
        let syn = |i: u32| {
            let h = lab_syn(i, 700);
            (syn_key(&h), h.seq)
        };
        // Every 4th SYN is followed by a retransmission of the one 5 or 900 before it.
        let syns: Vec<(u64, u32)> = (0..5000u32)
            .flat_map(|i| {
                let again =
                    (i % 4 == 0 && i >= 900).then(|| syn(i - if i % 8 == 0 { 5 } else { 900 }));
                std::iter::once(syn(i)).chain(again)
            })
            .collect();
        let mut one = SynTracker::new(900);
        let want: u32 = syns
            .iter()
            .map(|&(k, isn)| u32::from(one.is_seen(k, isn)))
            .sum();
        assert!(want > 100, "the stream has retransmissions ({want})");
        let mut batched = SynTracker::new(900);
        let got: u32 = syns
            .chunks(SYN_BATCH)
            .map(|b| batched.retransmissions(b))
            .sum();
        assert_eq!(got, want);
        assert_eq!(batched.len(), one.len());
    }

    #[test]
    fn a_syn_is_remembered_for_its_retries_and_a_slow_run_holds_a_minute_of_syns() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut t = SynTracker::default();
        let syn = |i: u32| lab_syn(i, 60000);
        // From another client address: the others' ports wrap around and reuse tuples.
        let first = TcpHead {
            src: "198.18.0.3".parse().unwrap(),
            ..syn(7)
        };
        assert!(!t.is_retransmission_at(&first, at(0.0)));
        // 500 new SYNs a second for ten minutes, the first one's retries among them.
        let mut most = 0;
        for i in 0..300_000u32 {
            let s = i as f64 / 500.0;
            assert!(!t.is_retransmission_at(&syn(i), at(s)));
            for retry in [1.0, 3.0, 7.0, 15.0, 31.0, 63.0] {
                if s == retry {
                    assert!(t.is_retransmission_at(&first, at(s)), "retry at {s} s");
                }
            }
            most = most.max(t.len());
        }
        let bound = 2 * (SYN_MEMORY.as_secs() as usize * 500 + AGE_CHECK_EVERY);
        assert!(most <= bound, "{most} SYNs held, bound {bound}");
        assert!(
            !t.is_retransmission_at(&first, at(600.0)),
            "ten minutes later the same tuple and ISN is a new attempt"
        );
    }

    #[test]
    fn filter_names_the_port() {
        let f = bpf_filter(8080);
        assert!(f.starts_with("(tcp port 8080 and"), "{f}");
    }
}
