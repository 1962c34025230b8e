//! The periodic stats line: the counts since the last one, the histograms drained, CPU time and
//! the offered rate, as one JSON line on stdout.

use super::Engine;
use crate::load::protocol::Mode;
use crate::load::rates::offered_rate;
use crate::metrics::hist::HistDelta;
use crate::sys::client_io as io;
use std::io::Write;

impl Engine {
    /// Adds what the schedule, as it is now, intended from the last bank to `t`.
    pub(super) fn bank_intended(&mut self, t: f64) {
        let t0 = self.intended_from;
        if t <= t0 {
            return;
        }
        let cfg = &self.cfg;
        // A pool still opening has not started its schedule.
        self.intended += if self.paused || self.pool_warming() {
            0.0
        } else if self.schedule.rate().is_some() && cfg.mode != Mode::Closed {
            self.schedule.expected_arrivals(t0, t)
        } else {
            offered_rate(
                cfg.mode,
                None,
                cfg.sockets,
                cfg.timeout_s,
                cfg.clients,
                cfg.think_s,
            ) * (t - t0)
        };
        self.intended_from = t;
    }

    /// Writes one stats line; false when stdout is gone (the controller died).
    pub(super) fn emit_stats(&mut self, now: u64, last: bool) -> bool {
        let interval_ns = self.cfg.stats_interval_ms * 1_000_000;
        let t0 = self.last_stats_ns as f64 / 1e9;
        let t1 = now as f64 / 1e9;
        let cpu = io::cpu_times();
        self.bank_intended(t1);
        // The interval's intended arrivals as a rate: each part of it at the schedule it had.
        let target_rate = if t1 > t0 {
            self.intended / (t1 - t0)
        } else {
            0.0
        };
        self.intended = 0.0;
        let mut s = std::mem::take(&mut self.stats);
        self.stats.worker = s.worker;
        self.stats.seq = s.seq + 1;
        s.t_s = t1;
        s.interval_s = t1 - t0;
        s.target_rate = target_rate;
        // Not established yet: connecting, or (TLS) handshaking.
        let connecting = self.connecting + self.handshaking;
        s.connecting = connecting;
        s.handshaking = self.handshaking;
        s.active = self.active;
        s.requests_in_flight = self.requests_in_flight;
        (s.connecting_at_start, s.requests_in_flight_at_start) = self.reported_in_progress;
        self.reported_in_progress = (connecting, self.requests_in_flight);
        s.pool = self.pool_size();
        s.pool_service_min_us = self.pool.service_min_us;
        s.cpu_user_s = (cpu.0 - self.last_cpu.0).max(0.0);
        s.cpu_sys_s = (cpu.1 - self.last_cpu.1).max(0.0);
        s.connect_us = HistDelta::drain(&mut self.hists.connect);
        s.handshake_us = HistDelta::drain(&mut self.hists.handshake);
        s.ttfb_us = HistDelta::drain(&mut self.hists.ttfb);
        s.total_us = HistDelta::drain(&mut self.hists.total);
        s.classes = self.class_deltas();
        s.last = last;
        s.tls_failure = self.tls_failure.take();
        if !self.notices.is_empty() {
            s.notice = Some(self.notices.join("; "));
            self.notices.clear();
        }
        self.last_cpu = cpu;
        self.last_stats_ns = now;
        while self.next_stats_ns <= now {
            self.next_stats_ns += interval_ns;
        }
        self.out.clear();
        if serde_json::to_writer(&mut self.out, &s).is_err() {
            return true;
        }
        self.out.push(b'\n');
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&self.out).is_ok() && stdout.flush().is_ok()
    }
}
