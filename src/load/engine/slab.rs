//! The slab of connection states: slots reused through a free list, the epoll keys that name a
//! slot and its generation, and the timer heap that ends connects, responses and think times.
//!
//! A connection has at most one entry in the heap. Re-arming for a later deadline (every
//! request on a kept-alive connection moves its response deadline) only writes the new
//! deadline; the old entry, when it comes due, finds the deadline moved and goes back in at
//! it. So the heap holds one entry per live connection, not one per request.

use super::conn::{Conn, Failure, Phase, Role, NO_DEADLINE};
use super::layers::{Http, HttpLayer};
use super::Engine;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::{Index, IndexMut};

/// The connections: their slots (indexed by the epoll key's low word), the free list and
/// the timer heap.
#[derive(Default)]
pub(super) struct Slab {
    pub(super) conns: Vec<Conn>,
    pub(super) free: Vec<u32>,
    pub(super) timers: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

impl Slab {
    pub(super) fn len(&self) -> usize {
        self.conns.len()
    }
}

impl Index<usize> for Slab {
    type Output = Conn;
    fn index(&self, i: usize) -> &Conn {
        &self.conns[i]
    }
}

impl IndexMut<usize> for Slab {
    fn index_mut(&mut self, i: usize) -> &mut Conn {
        &mut self.conns[i]
    }
}

impl Engine {
    pub(super) fn alloc(&mut self) -> usize {
        if let Some(i) = self.slab.free.pop() {
            return i as usize;
        }
        self.slab.conns.push(Conn::free());
        self.slab.len() - 1
    }

    pub(super) fn release(&mut self, idx: usize) {
        let c = &mut self.slab[idx];
        c.gen = c.gen.wrapping_add(1) % (u32::MAX - 1);
        c.timer_at = 0;
        c.deadline_ns = NO_DEADLINE;
        self.slab.free.push(idx as u32);
    }

    pub(super) fn key(&self, idx: usize) -> u64 {
        (self.slab[idx].gen as u64) << 32 | idx as u64
    }

    /// Sets the connection's deadline; a heap entry is added only when none is due before it.
    pub(super) fn arm(&mut self, idx: usize, deadline: u64) {
        let c = &mut self.slab.conns[idx];
        c.deadline_ns = deadline;
        if c.timer_at == 0 || c.timer_at > deadline {
            c.timer_at = deadline;
            self.slab
                .timers
                .push(Reverse((deadline, idx as u32, c.gen)));
        }
    }

    /// Makes sure the connection's heap entry is due by its layer's next timer.
    pub(super) fn arm_layer_timer(&mut self, idx: usize) {
        let c = &mut self.slab.conns[idx];
        if let Some(t) = c.http.next_timer_ns() {
            if c.timer_at == 0 || c.timer_at > t {
                c.timer_at = t;
                self.slab.timers.push(Reverse((t, idx as u32, c.gen)));
            }
        }
    }

    /// No deadline until the next `arm` (its heap entry, if any, lapses when due).
    pub(super) fn disarm(&mut self, idx: usize) {
        self.slab[idx].deadline_ns = NO_DEADLINE;
    }

    /// When the earliest heap entry is due (it may find its deadline moved).
    pub(super) fn next_timer_ns(&self) -> Option<u64> {
        self.slab.timers.peek().map(|Reverse((at, _, _))| *at)
    }

    pub(super) fn expire_timers(&mut self, now: u64) {
        while let Some(&Reverse((at, idx, gen))) = self.slab.timers.peek() {
            if at > now {
                break;
            }
            self.slab.timers.pop();
            let idx = idx as usize;
            let c = &mut self.slab.conns[idx];
            // Entries of an ended connection, or superseded by an earlier one, are skipped.
            if c.gen != gen || c.timer_at != at || c.phase == Phase::Free {
                continue;
            }
            c.timer_at = 0;
            // A layer's own timer (an HTTP/1.x layer has none: the hot path skips this).
            if let Http::Other(l) = &c.http {
                if l.next_timer_ns().is_some_and(|t| t <= now) {
                    self.layer_timer(idx, now);
                    let c = &self.slab.conns[idx];
                    if c.gen != gen || c.phase == Phase::Free {
                        continue;
                    }
                }
            }
            let c = &mut self.slab.conns[idx];
            if c.deadline_ns > now {
                // The deadline moved on (or went): follow it (or the layer's timer).
                let next = c.next_wake_ns();
                if next != NO_DEADLINE {
                    c.timer_at = next;
                    self.slab.timers.push(Reverse((next, idx as u32, gen)));
                }
                continue;
            }
            let (phase, role) = (c.phase, c.role);
            match phase {
                // No socket of its own: a QUIC connection, whose connect is its handshake.
                Phase::Connecting if c.sock.is_none() => {
                    self.fail(idx, Failure::HandshakeTimeout, now)
                }
                Phase::Connecting => self.fail(idx, Failure::ConnectTimeout, now),
                Phase::Handshaking => self.fail(idx, Failure::HandshakeTimeout, now),
                Phase::Sending | Phase::Receiving => self.fail(idx, Failure::ResponseTimeout, now),
                Phase::Streams => self.mux_deadline(idx, now),
                Phase::Draining => self.finish(idx, now),
                // A client that thought past a pause, a drain or a smaller N retires.
                Phase::Idle
                    if role == Role::Client && self.sched.clients_alive > self.closed_target() =>
                {
                    self.finish(idx, now)
                }
                Phase::Idle if role == Role::Client => {
                    self.slab[idx].sched_ns = now;
                    self.begin_request(idx, now);
                }
                Phase::Idle | Phase::Pooled | Phase::Free => {}
            }
        }
    }
}
