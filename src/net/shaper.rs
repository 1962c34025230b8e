//! The delay router's timing model for one path and direction (seed 000 §4.4), pure and driven
//! by the caller's clock (nanoseconds): a frame leaves at
//! `arrival + queueing + size/bandwidth + latency (+ jitter)`, where queueing is the time the
//! bottleneck still needs for the frames ahead of it; drop-tail past the queue limit; Bernoulli
//! or Gilbert-Elliott loss.
//!
//! Live changes apply to frames arriving after the change; frames already accepted keep their
//! departure times (they are "on the wire"), except on a bandwidth *raise*: the frames still
//! waiting at the bottleneck are serialised at the new rate from then on, as a real link drains
//! its buffer at its current rate (else a queue timed at 28 kbit/s would hold a path raised to
//! 200 Mbit/s for as long as it takes at 28 kbit/s: a minute or more). A lower rate leaves them
//! as timed (they leave sooner than at the new rate). A latency *increase* applies at once (a gap, never
//! a burst). A latency *decrease* glides down at half real-time speed: if it applied at once,
//! every frame arriving in the next (old - new) latency would have to wait for the last frame
//! already queued (no reordering) and all would leave together, a burst. Gliding keeps
//! departures in order with their spacing shrunk by at most 2x, so 100 ms -> 20 ms takes 160 ms.

use crate::net::spec::{LossModel, PathSpec};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

const NS: u64 = 1_000_000_000;

/// How frames are lost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    None,
    Bernoulli(f64),
    /// Probabilities per frame: p (good->bad), r (bad->good), loss in bad and in good state.
    Gilbert {
        p: f64,
        r: f64,
        loss_bad: f64,
        loss_good: f64,
    },
}

/// The parameters of one direction of a path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DirParams {
    /// One-way propagation delay.
    pub latency_ns: u64,
    /// Uniform +-jitter on the latency.
    pub jitter_ns: u64,
    /// Whether jitter may reorder frames.
    pub reorder: bool,
    pub loss: Loss,
    /// Bottleneck rate in bits/s; None = unlimited.
    pub bandwidth_bps: Option<u64>,
    /// Drop-tail limit of the bottleneck queue, in frames.
    pub queue: u32,
}

impl DirParams {
    /// One direction of a path profile: half the rtt, the path's loss, rate and queue.
    pub fn from_path(p: &PathSpec) -> Self {
        let loss = match (p.loss_model, p.gilbert) {
            (LossModel::Gilbert, Some(g)) => Loss::Gilbert {
                p: g.p.fraction(),
                r: g.r.fraction(),
                loss_bad: g.loss_bad.fraction(),
                loss_good: g.loss_good.fraction(),
            },
            _ if p.loss.0 > 0.0 => Loss::Bernoulli(p.loss.fraction()),
            _ => Loss::None,
        };
        DirParams {
            latency_ns: p.rtt.0.as_nanos() as u64 / 2,
            jitter_ns: p.jitter.0.as_nanos() as u64,
            reorder: p.reorder,
            loss,
            bandwidth_bps: p.bandwidth.map(|b| b.0),
            queue: p.queue.max(1),
        }
    }

    /// Time to serialise `bytes` at the bottleneck rate.
    pub fn tx_ns(&self, bytes: usize) -> u64 {
        match self.bandwidth_bps {
            Some(bps) if bps > 0 => (bytes as u128 * 8 * NS as u128 / bps as u128) as u64,
            _ => 0,
        }
    }
}

/// Whether a bandwidth change from `was` to `now` (bits/s, None: unlimited) raises the rate.
pub fn bandwidth_raised(was: Option<u64>, now: Option<u64>) -> bool {
    match (was, now) {
        (Some(was), Some(now)) => now > was,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// What happens to an arriving frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send at this time (same clock as the arrival time).
    Forward {
        depart_ns: u64,
    },
    Lost,
    QueueFull,
}

/// A frame re-timed by a bandwidth raise: the caller's tag for it, its old departure and its
/// new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retimed {
    pub tag: u64,
    pub was: u64,
    pub depart: u64,
}

/// A frame in the bottleneck queue.
#[derive(Debug, Clone, Copy)]
struct Queued {
    /// When the bottleneck finishes serialising it.
    tx_end: u64,
    bytes: usize,
    /// Its latency (with jitter) after serialisation.
    delay: u64,
    /// The latest departure of the frames ahead of it (it may not leave before, unless
    /// reordering).
    floor: u64,
    depart: u64,
    tag: u64,
}

/// The timing and loss state of one direction of one path.
#[derive(Debug)]
pub struct Shaper {
    params: DirParams,
    rng: SmallRng,
    /// When the bottleneck finishes the last accepted frame.
    link_free_at: u64,
    /// Frames still in the bottleneck queue (for drop-tail, and re-timing on a raise).
    in_queue: VecDeque<Queued>,
    last_depart: u64,
    ge_bad: bool,
    /// Latency glide after a decrease: latency was `glide_from_ns` at `glide_at_ns`.
    glide_from_ns: u64,
    glide_at_ns: u64,
}

impl Shaper {
    pub fn new(params: DirParams, seed: u64) -> Self {
        Shaper {
            params,
            rng: SmallRng::seed_from_u64(seed),
            link_free_at: 0,
            in_queue: VecDeque::new(),
            last_depart: 0,
            ge_bad: false,
            glide_from_ns: params.latency_ns,
            glide_at_ns: 0,
        }
    }

    pub fn params(&self) -> &DirParams {
        &self.params
    }

    /// The latency a frame arriving at `now` gets (the target, or on its way down to it).
    pub fn latency_at(&self, now: u64) -> u64 {
        let target = self.params.latency_ns;
        if self.glide_from_ns <= target {
            return target;
        }
        let fallen = now.saturating_sub(self.glide_at_ns) / 2;
        self.glide_from_ns.saturating_sub(fallen).max(target)
    }

    /// Frames in the bottleneck queue at `now` (including the one being serialised).
    pub fn queue_depth(&mut self, now: u64) -> usize {
        while self.in_queue.front().is_some_and(|q| q.tx_end <= now) {
            self.in_queue.pop_front();
        }
        self.in_queue.len()
    }

    fn lost(&mut self) -> bool {
        match self.params.loss {
            Loss::None => false,
            Loss::Bernoulli(p) => self.rng.gen::<f64>() < p,
            Loss::Gilbert {
                p,
                r,
                loss_bad,
                loss_good,
            } => {
                // Transition first, then lose with the new state's probability (netem's order).
                let flip = if self.ge_bad { r } else { p };
                if self.rng.gen::<f64>() < flip {
                    self.ge_bad = !self.ge_bad;
                }
                let l = if self.ge_bad { loss_bad } else { loss_good };
                self.rng.gen::<f64>() < l
            }
        }
    }

    /// Decides the fate of a frame of `bytes` arriving at `now`.
    pub fn on_frame(&mut self, now: u64, bytes: usize) -> Verdict {
        self.on_frame_tagged(now, bytes, 0)
    }

    /// [`Shaper::on_frame`], with the caller's `tag` for the frame (what [`Shaper::change`]
    /// names it by if it re-times it).
    pub fn on_frame_tagged(&mut self, now: u64, bytes: usize, tag: u64) -> Verdict {
        if self.lost() {
            return Verdict::Lost;
        }
        if self.queue_depth(now) >= self.params.queue as usize {
            return Verdict::QueueFull;
        }
        let tx_end = self.link_free_at.max(now) + self.params.tx_ns(bytes);
        let mut delay = self.latency_at(now) as i64;
        let j = self.params.jitter_ns as i64;
        if j > 0 {
            delay += self.rng.gen_range(-j..=j);
        }
        let delay = delay.max(0) as u64;
        let mut depart = tx_end + delay;
        if !self.params.reorder {
            depart = depart.max(self.last_depart);
        }
        if self.params.bandwidth_bps.is_some() {
            self.link_free_at = tx_end;
            self.in_queue.push_back(Queued {
                tx_end,
                bytes,
                delay,
                floor: self.last_depart,
                depart,
                tag,
            });
        }
        self.last_depart = self.last_depart.max(depart);
        Verdict::Forward { depart_ns: depart }
    }

    /// Takes a path's new parameters at `now` (see the module doc for what happens to queued
    /// frames); the loss chain and the queue's contents carry on. Returns the frames a
    /// bandwidth raise re-timed (the caller moves them to their new departures).
    pub fn change(&mut self, now: u64, params: DirParams) -> Vec<Retimed> {
        let current_latency = self.latency_at(now);
        let old = self.params;
        self.params = DirParams {
            queue: params.queue.max(1),
            ..params
        };
        self.glide_from_ns = current_latency;
        self.glide_at_ns = now;
        if bandwidth_raised(old.bandwidth_bps, params.bandwidth_bps) {
            self.retime(now, &old)
        } else {
            Vec::new()
        }
    }

    /// Serialises the frames still in the bottleneck queue at the (raised) rate from `now`:
    /// the rest of the frame on the wire, then each after the one ahead of it; each keeps its
    /// own latency and, unless reordering, leaves no earlier than the frames ahead of it.
    fn retime(&mut self, now: u64, old: &DirParams) -> Vec<Retimed> {
        self.queue_depth(now);
        let Some(head) = self.in_queue.front() else {
            return Vec::new();
        };
        let mut floor = head.floor;
        let mut link = now;
        let mut moved = Vec::with_capacity(self.in_queue.len());
        for (i, q) in self.in_queue.iter_mut().enumerate() {
            let tx = self.params.tx_ns(q.bytes);
            link += if i == 0 {
                let left = (q.tx_end - now) as u128;
                (left * tx as u128 / old.tx_ns(q.bytes).max(1) as u128).min(tx as u128) as u64
            } else {
                tx
            };
            q.tx_end = link;
            q.floor = floor;
            let mut depart = link + q.delay;
            if !self.params.reorder {
                depart = depart.max(floor);
            }
            floor = floor.max(depart);
            moved.push(Retimed {
                tag: q.tag,
                was: q.depart,
                depart,
            });
            q.depart = depart;
        }
        self.link_free_at = link;
        self.last_depart = floor;
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn params(latency_ms: u64) -> DirParams {
        DirParams {
            latency_ns: latency_ms * MS,
            jitter_ns: 0,
            reorder: false,
            loss: Loss::None,
            bandwidth_bps: None,
            queue: 1000,
        }
    }

    fn depart(v: Verdict) -> u64 {
        match v {
            Verdict::Forward { depart_ns } => depart_ns,
            other => panic!("expected Forward, got {other:?}"),
        }
    }

    #[test]
    fn delay_is_latency_plus_transmission_plus_queueing() {
        // 8 Mbit/s = 1 byte/us: a 1000-byte frame takes 1 ms to serialise.
        let mut s = Shaper::new(
            DirParams {
                bandwidth_bps: Some(8_000_000),
                ..params(50)
            },
            1,
        );
        let d: Vec<u64> = (0..3).map(|_| depart(s.on_frame(0, 1000))).collect();
        // Frame i waits for the i frames ahead of it (seed 000 §4.4).
        assert_eq!(d, [51 * MS, 52 * MS, 53 * MS]);
        assert_eq!(s.queue_depth(0), 3);
        assert_eq!(s.queue_depth(2 * MS), 1);
    }

    #[test]
    fn spacing_scales_with_the_bandwidth_ratio() {
        // Frames arrive every 250 us and each takes 1 ms at the bottleneck: spacing becomes 1 ms.
        let mut s = Shaper::new(
            DirParams {
                bandwidth_bps: Some(8_000_000),
                ..params(10)
            },
            1,
        );
        let d: Vec<u64> = (0..5)
            .map(|i| depart(s.on_frame(i * 250 * US, 1000)))
            .collect();
        for w in d.windows(2) {
            assert_eq!(w[1] - w[0], MS);
        }
        // An unshaped path keeps the input spacing exactly.
        let mut s = Shaper::new(params(10), 1);
        let d: Vec<u64> = (0..5)
            .map(|i| depart(s.on_frame(i * 250 * US, 1000)))
            .collect();
        assert_eq!(d[1] - d[0], 250 * US);
    }

    #[test]
    fn drop_tail_past_the_queue_limit_then_recovers() {
        let mut s = Shaper::new(
            DirParams {
                bandwidth_bps: Some(8_000_000),
                queue: 5,
                ..params(0)
            },
            1,
        );
        let v: Vec<Verdict> = (0..10).map(|_| s.on_frame(0, 1000)).collect();
        assert_eq!(
            v.iter()
                .filter(|v| matches!(v, Verdict::Forward { .. }))
                .count(),
            5
        );
        assert!(v[5..].iter().all(|v| *v == Verdict::QueueFull));
        // After 1 ms one frame has left the bottleneck: room for exactly one more.
        assert!(matches!(s.on_frame(MS, 1000), Verdict::Forward { .. }));
        assert_eq!(s.on_frame(MS, 1000), Verdict::QueueFull);
    }

    #[test]
    fn bernoulli_loss_rate() {
        let mut s = Shaper::new(
            DirParams {
                loss: Loss::Bernoulli(0.05),
                ..params(0)
            },
            7,
        );
        let n = 200_000;
        let lost = (0..n)
            .filter(|&i| s.on_frame(i, 100) == Verdict::Lost)
            .count();
        let rate = lost as f64 / n as f64;
        assert!((0.048..0.052).contains(&rate), "{rate}");
    }

    #[test]
    fn gilbert_loss_is_bursty_with_the_chain_mean() {
        let mut s = Shaper::new(
            DirParams {
                loss: Loss::Gilbert {
                    p: 0.01,
                    r: 0.19,
                    loss_bad: 1.0,
                    loss_good: 0.0,
                },
                ..params(0)
            },
            11,
        );
        let n = 400_000u64;
        let lost: Vec<bool> = (0..n)
            .map(|i| s.on_frame(i, 100) == Verdict::Lost)
            .collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / n as f64;
        assert!((0.045..0.055).contains(&rate), "mean loss {rate}");
        // Mean burst length 1/r ~ 5.3 frames (Bernoulli at 5 % would give ~1.05).
        let bursts = lost.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_burst = lost.iter().filter(|&&l| l).count() as f64 / bursts;
        assert!((4.5..6.0).contains(&mean_burst), "mean burst {mean_burst}");
    }

    #[test]
    fn jitter_spreads_delay_without_reordering() {
        let mk = || {
            Shaper::new(
                DirParams {
                    jitter_ns: 5 * MS,
                    ..params(20)
                },
                3,
            )
        };
        // Frames 10 ms apart: jitter (+-5 ms) spreads the delay over 15..25 ms.
        let mut s = mk();
        let d: Vec<u64> = (0..2000)
            .map(|i| depart(s.on_frame(i * 10 * MS, 100)))
            .collect();
        let delays: Vec<u64> = d
            .iter()
            .enumerate()
            .map(|(i, &t)| t - i as u64 * 10 * MS)
            .collect();
        let (lo, hi) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
        assert!(*lo < 16 * MS && *hi > 24 * MS, "{lo} {hi}");
        assert!(delays.iter().all(|&x| (15 * MS..=25 * MS).contains(&x)));
        // Frames 100 us apart: a frame never overtakes an earlier one.
        let mut s = mk();
        let d: Vec<u64> = (0..10_000)
            .map(|i| depart(s.on_frame(i * 100 * US, 100)))
            .collect();
        assert!(d.windows(2).all(|w| w[1] >= w[0]), "reordered");
    }

    #[test]
    fn jitter_may_reorder_when_asked() {
        let mut s = Shaper::new(
            DirParams {
                jitter_ns: 5 * MS,
                reorder: true,
                ..params(20)
            },
            3,
        );
        let d: Vec<u64> = (0..1000)
            .map(|i| depart(s.on_frame(i * 100 * US, 100)))
            .collect();
        assert!(d.windows(2).any(|w| w[1] < w[0]));
    }

    #[test]
    fn latency_decrease_glides_without_a_burst() {
        let mut s = Shaper::new(params(50), 1);
        let mut d = Vec::new();
        // One frame per ms; at t = 100 ms the rtt drops from 100 ms to 20 ms (one-way 50 -> 10).
        for i in 0..400u64 {
            let now = i * MS;
            if i == 100 {
                s.change(now, params(10));
            }
            d.push(depart(s.on_frame(now, 100)));
        }
        assert!(d.windows(2).all(|w| w[1] >= w[0]), "reordered");
        let min_gap = d.windows(2).map(|w| w[1] - w[0]).min().unwrap();
        assert!(
            min_gap >= MS / 2,
            "spacing collapsed to {min_gap} ns: a burst"
        );
        // Glide takes 2 x 40 ms; afterwards frames see the new latency exactly.
        assert_eq!(d[399] - 399 * MS, 10 * MS);
        assert_eq!(d[99] - 99 * MS, 50 * MS);
    }

    #[test]
    fn latency_increase_applies_at_once() {
        let mut s = Shaper::new(params(10), 1);
        s.on_frame(0, 100);
        s.change(MS, params(100));
        assert_eq!(depart(s.on_frame(MS, 100)), 101 * MS);
    }

    #[test]
    fn a_bandwidth_raise_drains_the_queue_at_the_new_rate() {
        let bw = |bps| DirParams {
            bandwidth_bps: Some(bps),
            ..params(0)
        };
        let mut s = Shaper::new(bw(8_000_000), 1);
        let a = depart(s.on_frame_tagged(0, 1000, 1));
        let b = depart(s.on_frame_tagged(0, 1000, 2));
        assert_eq!((a, b), (MS, 2 * MS));
        // Half of a is on the wire at 0.5 ms; the rest of it and b go at 80 Mbit/s.
        let moved = s.change(MS / 2, bw(80_000_000));
        let ends = [MS / 2 + 50 * US, MS / 2 + 150 * US];
        assert_eq!(
            moved,
            [
                Retimed {
                    tag: 1,
                    was: MS,
                    depart: ends[0]
                },
                Retimed {
                    tag: 2,
                    was: 2 * MS,
                    depart: ends[1]
                },
            ]
        );
        // A new frame waits for the re-timed queue only.
        assert_eq!(depart(s.on_frame(MS / 2, 1000)), ends[1] + 100 * US);
    }

    #[test]
    fn a_bandwidth_cut_keeps_queued_frames() {
        let bw = |bps| DirParams {
            bandwidth_bps: Some(bps),
            ..params(0)
        };
        let mut s = Shaper::new(bw(80_000_000), 1);
        let a = depart(s.on_frame(0, 1000));
        assert!(s.change(0, bw(8_000_000)).is_empty());
        // The slower rate starts after the frames already in the bottleneck.
        let b = depart(s.on_frame(0, 1000));
        assert_eq!((a, b), (100 * US, 100 * US + MS));
    }

    /// The repro of the 28 kbit/s -> 200 Mbit/s outage: a full queue timed at 28 kbit/s held
    /// the path for its whole drain time at 28 kbit/s after the raise.
    #[test]
    fn a_queue_timed_at_28_kbit_does_not_hold_the_path_after_raises() {
        let bw = |bps| DirParams {
            bandwidth_bps: Some(bps),
            queue: 1000,
            ..params(10)
        };
        let mut s = Shaper::new(bw(28_000), 1);
        // SYNs (74 bytes) arrive far faster than 28 kbit/s carries them: the queue fills.
        let mut held = std::collections::BTreeMap::new();
        for i in 0..3000u64 {
            if let Verdict::Forward { depart_ns } = s.on_frame_tagged(i * MS, 74, i) {
                held.insert(i, depart_ns);
            }
        }
        let now = 3000 * MS;
        assert_eq!(s.queue_depth(now), 1000);
        let latest = *held.values().max().unwrap();
        assert!(latest > now + 400 * MS, "{latest}");
        // Raised step by step (each raise re-times what is still queued) to 200 Mbit/s.
        let mut t = now;
        for bps in [50_000, 100_000, 1_000_000, 200_000_000] {
            for r in s.change(t, bw(bps)) {
                assert_eq!(held.insert(r.tag, r.depart), Some(r.was));
            }
            t += 10 * MS;
        }
        // Everything queued has left within a few ms of the last raise, and a new frame
        // leaves after its latency and a few microseconds of serialisation.
        let latest = *held.values().max().unwrap();
        assert!(
            latest < t + 10 * MS,
            "{} ms after the raise",
            (latest - t) / MS
        );
        let d = depart(s.on_frame(t, 74));
        assert!(d - t < 10 * MS + 10 * US, "{}", d - t);
    }
}
