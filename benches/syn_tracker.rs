//! The capture thread's per-SYN cost: ns per SYN of `SynTracker` (is it a retransmission?)
//! for a minute of new SYNs at 40,000/s from one client address on loopback, its 28,232
//! ephemeral ports coming round again and again (the table levels at that), with one SYN in 50
//! retransmitted half a second later (before its port comes round again); the caches as the
//! capture thread finds them on the load's CPU (issue 44), where the worker runs between two
//! of its wake-ups: every block of SYNs starts after 8 MB of other work.
//! `cargo bench --bench syn_tracker`.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};
use synlab::sys::control_packets::{SynTracker, TcpHead};

fn syn(i: u32) -> TcpHead {
    TcpHead {
        src: IpAddr::V4(Ipv4Addr::LOCALHOST),
        sport: 32768 + (i % 28232) as u16,
        dst: IpAddr::V4(Ipv4Addr::LOCALHOST),
        dport: 8080,
        // Linux's ISNs: a hash of the tuple plus a 4 us clock, so a reused port has a new one.
        seq: i.wrapping_mul(2_654_435_761),
        flags: 0x02,
    }
}

fn main() {
    const RATE: u32 = 40_000;
    const SYNS: u32 = 60 * RATE;
    const BLOCK: u32 = 512;
    let mut other = vec![0u64; 1 << 20];
    let t0 = Instant::now();
    let at = |i: u32| t0 + Duration::from_micros(u64::from(i) * 1_000_000 / u64::from(RATE));
    for round in 0..3 {
        let mut t = SynTracker::default();
        let (mut retrans, mut sent_again, mut held) = (0u32, 0u32, 0usize);
        let start = Instant::now();
        let mut spent = Duration::ZERO;
        for i in 0..SYNS {
            if i % BLOCK == 0 {
                let flush = Instant::now();
                for (k, w) in other.iter_mut().enumerate() {
                    *w = w.wrapping_add(k as u64);
                }
                black_box(&other);
                spent += flush.elapsed();
            }
            retrans += u32::from(t.is_retransmission_at(black_box(&syn(i)), at(i)));
            if i >= RATE / 2 && i % 50 == 0 {
                sent_again += 1;
                retrans += u32::from(t.is_retransmission_at(&syn(i - RATE / 2), at(i)));
            }
            held = held.max(t.len());
        }
        let ns = (start.elapsed() - spent).as_nanos() as f64 / f64::from(SYNS + sent_again);
        assert_eq!(retrans, sent_again, "every retransmission is told");
        println!("round {round}: {ns:>6.1} ns per SYN ({SYNS} new, {retrans} retransmitted, {held} held at most)");
    }
}
