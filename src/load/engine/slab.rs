//! The slab of connection states: slots reused through a free list, the epoll keys that name a
//! slot and its generation, and the timer heap (lazily deleted) that ends connects and responses.

use super::conn::{Conn, Phase};
use super::Engine;
use std::cmp::Reverse;

impl Engine {
    pub(super) fn alloc(&mut self) -> usize {
        if let Some(i) = self.free.pop() {
            return i as usize;
        }
        self.slab.push(Conn::FREE);
        self.slab.len() - 1
    }

    pub(super) fn release(&mut self, idx: usize) {
        let c = &mut self.slab[idx];
        c.gen = c.gen.wrapping_add(1) % (u32::MAX - 1);
        c.fd = -1;
        self.free.push(idx as u32);
    }

    pub(super) fn key(&self, idx: usize) -> u64 {
        (self.slab[idx].gen as u64) << 32 | idx as u64
    }

    pub(super) fn arm(&mut self, idx: usize, deadline: u64) {
        let c = &mut self.slab[idx];
        c.deadline_ns = deadline;
        self.timers.push(Reverse((deadline, idx as u32, c.gen)));
    }

    pub(super) fn expire_timers(&mut self, now: u64) {
        while let Some(&Reverse((at, idx, gen))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let idx = idx as usize;
            let c = &self.slab[idx];
            // Stale entries (connection gone or re-armed) are skipped: lazy deletion.
            if c.gen != gen || c.deadline_ns != at || c.phase == Phase::Free {
                continue;
            }
            match c.phase {
                Phase::Connecting => {
                    self.stats.counts.connect_timeouts += 1;
                    self.finish(idx, now);
                }
                Phase::Sending | Phase::Receiving => {
                    self.stats.counts.response_timeouts += 1;
                    self.finish(idx, now);
                }
                Phase::Draining => self.finish(idx, now),
                Phase::Idle => {
                    self.slab[idx].sched_ns = now;
                    self.begin_request(idx, now);
                }
                Phase::Free => {}
            }
        }
    }
}
