//! The controller's commands applied to the running loop: the load's settings (rate, burst,
//! mode, D, clients, T, resumed share, pause), drain and stop.

use super::Engine;
use crate::load::notice::Refusal;
use crate::load::protocol::{Control, LoadSettings, WorkerNotice};

impl Engine {
    pub(super) fn apply_controls(&mut self) {
        while let Ok(msg) = self.control_rx.try_recv() {
            let now = self.now_ns();
            let t = now as f64 / 1e9;
            match msg {
                Err(bad) => self.report.notices.push(WorkerNotice::BadControl {
                    line: bad.line,
                    error: bad.error.to_string(),
                }),
                Ok(c) => {
                    if let Err(why) = self.apply(c, now, t) {
                        self.report
                            .notices
                            .push(WorkerNotice::ControlRefused { why });
                    }
                }
            }
        }
    }

    pub(super) fn apply(&mut self, c: Control, now: u64, t: f64) -> Result<(), Refusal> {
        // What the schedule intended up to this change counts at its old settings.
        self.bank_intended(t);
        match c {
            Control::Load(s) => self.apply_load(s, now, t)?,
            Control::Drain => {
                // As a pause that never resumes: in-flight attempts run to their end.
                self.sched.paused = true;
                self.sched.draining = true;
                self.retire_idle_clients(now);
                self.trim_pool(now);
            }
            Control::Stop => self.stop = true,
        }
        Ok(())
    }

    /// The load's settings: checked first (a refused message changes nothing), then
    /// what differs from what runs is applied; the same settings again change nothing.
    fn apply_load(&mut self, s: LoadSettings, now: u64, t: f64) -> Result<(), Refusal> {
        if s.sockets < 1 {
            return Err(Refusal::NoSockets);
        }
        if !(s.timeout_s.is_finite() && s.timeout_s > 0.0) {
            return Err(Refusal::Timeout { got: s.timeout_s });
        }
        if s.requests_per_conn == Some(0) {
            return Err(Refusal::NoRequestsPerConn);
        }
        if let Some(share) = s.resumed {
            if !(0.0..=1.0).contains(&share) {
                return Err(Refusal::ResumedShare { got: share });
            }
            if !self.layers.secure() {
                return Err(Refusal::NotTls);
            }
        }
        match (s.streams, self.layers.streams) {
            (Some(0), _) => return Err(Refusal::NoStreams),
            (Some(_), None) => return Err(Refusal::StreamsOverHttp1),
            (None, Some(_)) => return Err(Refusal::StreamsMissing),
            _ => {}
        }
        let schedule = |e: crate::load::arrival::ScheduleError| Refusal::Schedule {
            words: e.to_string(),
        };
        if s.rate != self.cfg.rate {
            self.sched.schedule.set_rate(s.rate, t).map_err(schedule)?;
            self.cfg.rate = s.rate;
        }
        if s.burst != self.cfg.burst {
            self.sched
                .schedule
                .set_burst(s.burst.as_ref(), t)
                .map_err(schedule)?;
            self.cfg.burst = s.burst;
        }
        if let (Some(share), true) = (s.resumed, self.layers.secure()) {
            self.layers.set_resumed(share);
            if let Some(c) = self.cfg.tls.as_mut() {
                c.resumed = share;
            }
        }
        if let Some(m) = s.streams.filter(|&m| Some(m) != self.layers.streams) {
            self.cfg.streams = Some(m);
            self.set_streams(m, now);
        }
        if let Some(n) = s.requests_per_conn {
            // Read at each response: a connection past the new count closes after its next.
            self.cfg.requests_per_conn = n;
        }
        self.cfg.sockets = s.sockets;
        self.cfg.timeout_s = s.timeout_s;
        let mode = s.mode != self.cfg.mode;
        let clients = s.clients != self.cfg.clients;
        self.cfg.mode = s.mode;
        self.cfg.clients = s.clients;
        if mode {
            self.timer_slack_for_mode();
        }
        // A draining worker stays paused: it never starts anything new.
        let paused = s.paused || self.sched.draining;
        if paused && !self.sched.paused {
            self.sched.paused = true;
            self.retire_idle_clients(now);
            self.trim_pool(now);
        } else if !paused && (self.sched.paused || mode) {
            // Resumed or switched: continue from now (the paused time is not caught up).
            self.sched.paused = false;
            self.sched.schedule.restart(t);
            self.pool_warm_up(now);
            self.spawn_clients(now);
            self.retire_idle_clients(now);
            self.trim_pool(now);
        } else if clients && !paused {
            self.spawn_clients(now);
            self.retire_idle_clients(now);
        }
        Ok(())
    }
}
