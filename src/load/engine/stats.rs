//! The periodic stats line: the counts since the last one, the histograms drained, CPU time and
//! the offered rate, as one JSON line on stdout.

use super::classes::ClassTally;
use super::Engine;
use crate::load::protocol::{Mode, StatsDelta, WorkerNotice};
use crate::load::rates::offered_rate;
use crate::metrics::hist::HistDelta;
use crate::model::BadReason;
use crate::sys::client_io as io;
use hdrhistogram::Histogram;
use std::io::Write;

pub(super) struct Hists {
    pub(super) connect: Histogram<u64>,
    pub(super) handshake: Histogram<u64>,
    pub(super) ttfb: Histogram<u64>,
    pub(super) total: Histogram<u64>,
}

/// The stats reporter's state: the counts and histograms since the last report, the gauges of
/// what is in progress, the notices not said yet.
pub(super) struct Report {
    /// Each mix entry's class (empty with fewer than two classes), and the classes' counts.
    pub(super) class_of: Vec<u16>,
    pub(super) classes: Vec<ClassTally>,
    /// Connects in progress (what the S-Client's D bounds).
    pub(super) connecting: u64,
    /// Handshakes in progress (their connects are done; not established yet).
    pub(super) handshaking: u64,
    /// 0-RTT connections taking requests before their handshake is done: established in the
    /// counts, still in `connecting` for the S-Client's D until the handshake completes.
    pub(super) early: u64,
    pub(super) active: u64,
    /// Requests begun and not yet answered or failed.
    pub(super) requests_in_flight: u64,
    /// `connecting` and `requests_in_flight` as of the last report (the next one's start).
    pub(super) reported_in_progress: (u64, u64),
    pub(super) stats: StatsDelta,
    pub(super) hists: Hists,
    pub(super) last_stats_ns: u64,
    /// Arrivals the schedule intended since the last report, banked at each change of the
    /// schedule (rate, burst, mode, pause) so a report that spans a change states what each
    /// part intended, not the new rate for all of it.
    pub(super) intended: f64,
    /// From when (seconds) the schedule as it is now has not been banked yet.
    pub(super) intended_from: f64,
    pub(super) next_stats_ns: u64,
    pub(super) last_cpu: (f64, f64),
    pub(super) notices: Vec<WorkerNotice>,
    pub(super) told_ports: bool,
    pub(super) told_fds: bool,
    pub(super) told_bind: bool,
    /// The security failure kinds already said in a notice (a bit each).
    pub(super) told_tls: u8,
    /// An ALPN refusal was said.
    pub(super) told_alpn: bool,
    /// The bad-response reasons already said in a notice (a bit each).
    pub(super) told_bad: u8,
    /// Stream reset codes already said in a notice.
    pub(super) told_resets: Vec<u32>,
    /// Multiplexed: the most requests on one connection since the last report, and the
    /// server's advertised limit as last read.
    pub(super) streams_max: u64,
    pub(super) streams_limit: Option<u32>,
    /// A handshake failure's words not yet reported (the first of each kind).
    pub(super) tls_failure: Option<String>,
    pub(super) out: Vec<u8>,
    /// Where the stats lines go (the worker's stdout).
    pub(super) sink: Box<dyn Write>,
}

impl Report {
    /// Connections begun and not yet established (the counts' "connecting"): the connects
    /// and handshakes in progress less the 0-RTT ones already taking requests.
    pub(super) fn unestablished(&self) -> u64 {
        self.connecting + self.handshaking - self.early
    }

    /// A stream reset by the server with `code`: said once per code (the count is in
    /// `stream_resets`).
    pub(super) fn note_reset_code(&mut self, code: u32) {
        if !self.told_resets.contains(&code) {
            self.told_resets.push(code);
            self.notices.push(WorkerNotice::StreamReset { code });
        }
    }

    /// A bad response for `why` (the parser's `words`): said once per reason, with the first
    /// one's words (the count is in `bad_by_reason`).
    pub(super) fn note_bad_response(&mut self, why: BadReason, words: &'static str) {
        let bit = 1u8 << (why as u8);
        if self.told_bad & bit == 0 {
            self.told_bad |= bit;
            self.notices.push(WorkerNotice::BadResponses {
                reason: why,
                words: words.to_string(),
            });
        }
    }
}

impl Engine {
    /// Adds what the schedule, as it is now, intended from the last bank to `t`.
    pub(super) fn bank_intended(&mut self, t: f64) {
        let t0 = self.report.intended_from;
        if t <= t0 {
            return;
        }
        let cfg = &self.cfg;
        // A pool still opening has not started its schedule.
        self.report.intended += if self.sched.paused || self.pool_warming() {
            0.0
        } else if self.sched.schedule.rate().is_some() && cfg.mode != Mode::Closed {
            self.sched.schedule.expected_arrivals(t0, t)
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
        self.report.intended_from = t;
    }

    /// Writes one stats line; false when stdout is gone (the controller died).
    pub(super) fn emit_stats(&mut self, now: u64, last: bool) -> bool {
        let interval_ns = self.cfg.stats_interval_ms * 1_000_000;
        let t0 = self.report.last_stats_ns as f64 / 1e9;
        let t1 = now as f64 / 1e9;
        let cpu = io::cpu_times();
        self.bank_intended(t1);
        // The interval's intended arrivals as a rate: each part of it at the schedule it had.
        let target_rate = if t1 > t0 {
            self.report.intended / (t1 - t0)
        } else {
            0.0
        };
        self.report.intended = 0.0;
        self.mux_report();
        let quic = self.quic_report();
        let mut s = std::mem::take(&mut self.report.stats);
        s.quic = quic;
        self.report.stats.worker = s.worker;
        self.report.stats.seq = s.seq + 1;
        s.t_s = t1;
        s.interval_s = t1 - t0;
        s.target_rate = target_rate;
        // Not established yet: connecting, or (TLS) handshaking.
        let connecting = self.report.unestablished();
        s.connecting = connecting;
        s.handshaking = self.report.handshaking;
        s.streams_max = std::mem::take(&mut self.report.streams_max);
        s.streams_limit = self.report.streams_limit;
        s.active = self.report.active;
        s.requests_in_flight = self.report.requests_in_flight;
        (s.connecting_at_start, s.requests_in_flight_at_start) = self.report.reported_in_progress;
        self.report.reported_in_progress = (connecting, self.report.requests_in_flight);
        s.pool = self.pool_size();
        s.pool_service_min_us = self.sched.pool.service_min_us;
        s.cpu_user_s = (cpu.0 - self.report.last_cpu.0).max(0.0);
        s.cpu_sys_s = (cpu.1 - self.report.last_cpu.1).max(0.0);
        s.connect_us = HistDelta::drain(&mut self.report.hists.connect);
        s.handshake_us = HistDelta::drain(&mut self.report.hists.handshake);
        s.ttfb_us = HistDelta::drain(&mut self.report.hists.ttfb);
        s.total_us = HistDelta::drain(&mut self.report.hists.total);
        s.classes = self.class_deltas();
        s.last = last;
        s.tls_failure = self.report.tls_failure.take();
        s.notices = std::mem::take(&mut self.report.notices);
        self.report.last_cpu = cpu;
        self.report.last_stats_ns = now;
        while self.report.next_stats_ns <= now {
            self.report.next_stats_ns += interval_ns;
        }
        self.report.out.clear();
        if serde_json::to_writer(&mut self.report.out, &s).is_err() {
            return true;
        }
        self.report.out.push(b'\n');
        let r = &mut self.report;
        r.sink.write_all(&r.out).is_ok() && r.sink.flush().is_ok()
    }
}
