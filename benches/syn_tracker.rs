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
use synlab::sys::control_packets::{syn_key, SynTracker, TcpHead, SYN_BATCH};

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

/// The SYNs of the minute in the order they come: each new one, and every 50th from half a
/// second on followed by a retransmission of the one sent half a second before it.
fn stream(rate: u32, syns: u32) -> (Vec<(u32, TcpHead)>, u32) {
    let mut all = Vec::with_capacity(syns as usize * 51 / 50);
    let mut again = 0;
    for i in 0..syns {
        all.push((i, syn(i)));
        if i >= rate / 2 && i % 50 == 0 {
            again += 1;
            all.push((i, syn(i - rate / 2)));
        }
    }
    (all, again)
}

fn main() {
    const RATE: u32 = 40_000;
    const SYNS: u32 = 60 * RATE;
    const BLOCK: usize = 512;
    let mut other = vec![0u64; 1 << 20];
    let mut flush = || {
        for (k, w) in other.iter_mut().enumerate() {
            *w = w.wrapping_add(k as u64);
        }
        black_box(&other);
    };
    let t0 = Instant::now();
    let at = |i: u32| t0 + Duration::from_micros(u64::from(i) * 1_000_000 / u64::from(RATE));
    let (all, sent_again) = stream(RATE, SYNS);
    for round in 0..3 {
        for batched in [false, true] {
            let mut t = SynTracker::default();
            let (mut retrans, mut held) = (0u32, 0usize);
            let mut spent = Duration::ZERO;
            let mut keys = Vec::with_capacity(SYN_BATCH);
            for block in all.chunks(BLOCK) {
                flush();
                let start = Instant::now();
                if batched {
                    // As the capture thread does: the keys of a batch, then one lookup of all.
                    for part in block.chunks(SYN_BATCH) {
                        keys.clear();
                        keys.extend(part.iter().map(|(_, h)| (syn_key(black_box(h)), h.seq)));
                        retrans += t.retransmissions(&keys);
                    }
                } else {
                    for (i, h) in block {
                        retrans += u32::from(t.is_retransmission_at(black_box(h), at(*i)));
                    }
                }
                spent += start.elapsed();
                held = held.max(t.len());
            }
            let ns = spent.as_nanos() as f64 / all.len() as f64;
            assert_eq!(retrans, sent_again, "every retransmission is told");
            let how = if batched { "batched" } else { "one by one" };
            println!(
                "round {round}: {ns:>6.1} ns per SYN, {how:>10} ({SYNS} new, {retrans} retransmitted, {held} held at most)"
            );
        }
    }
}
