//! The controller's commands (rate, burst, mode, D, clients, T, resumed share, pause, resume, drain,
//! stop) applied
//! to the running loop.

use super::Engine;
use crate::load::protocol::Control;

impl Engine {
    pub(super) fn apply_controls(&mut self) {
        while let Ok(msg) = self.control_rx.try_recv() {
            let now = self.now_ns();
            let t = now as f64 / 1e9;
            match msg {
                Err(bad) => self.notices.push(bad.to_string()),
                Ok(c) => {
                    if let Err(e) = self.apply(c, now, t) {
                        self.notices.push(format!("control refused: {e}"));
                    }
                }
            }
        }
    }

    pub(super) fn apply(&mut self, c: Control, now: u64, t: f64) -> anyhow::Result<()> {
        // What the schedule intended up to this change counts at its old settings.
        self.bank_intended(t);
        match c {
            Control::SetRate { rate } => {
                self.schedule.set_rate(rate, t)?;
                self.cfg.rate = rate;
            }
            Control::SetBurst { burst } => {
                self.schedule.set_burst(burst.as_ref(), t)?;
                self.cfg.burst = burst;
            }
            // The controller sends every load knob with each change: the same mode again, or a
            // Resume while running, changes nothing (a pool would otherwise wait to reopen).
            Control::SetMode { mode } if mode == self.cfg.mode => {}
            Control::Resume if !self.paused => {}
            Control::SetMode { mode } => {
                self.cfg.mode = mode;
                self.schedule.restart(t);
                self.pool_warm_up(now);
                self.spawn_clients(now);
                self.retire_idle_clients(now);
                self.trim_pool(now);
            }
            Control::SetSockets { sockets } => {
                anyhow::ensure!(sockets >= 1, "sockets must be >= 1, got 0");
                self.cfg.sockets = sockets;
            }
            Control::SetClients { clients } => {
                self.cfg.clients = clients;
                self.spawn_clients(now);
                self.retire_idle_clients(now);
            }
            Control::SetTimeout { timeout_s } => {
                anyhow::ensure!(
                    timeout_s.is_finite() && timeout_s > 0.0,
                    "timeout_s must be > 0, got {timeout_s}"
                );
                self.cfg.timeout_s = timeout_s;
            }
            Control::SetResumed { share } => {
                anyhow::ensure!(
                    (0.0..=1.0).contains(&share),
                    "the resumed share must be 0 to 1, got {share}"
                );
                let tls = self.tls.as_mut();
                let tls = tls.ok_or_else(|| anyhow::anyhow!("this worker does not speak TLS"))?;
                tls.set_resumed(share);
                if let Some(t) = self.cfg.tls.as_mut() {
                    t.resumed = share;
                }
            }
            Control::Pause => {
                self.paused = true;
                self.retire_idle_clients(now);
                self.trim_pool(now);
            }
            Control::Resume => {
                self.paused = false;
                // Continue from now: the paused time is not caught up.
                self.schedule.restart(t);
                self.pool_warm_up(now);
                self.spawn_clients(now);
            }
            Control::Drain => {
                // As a pause that never resumes: in-flight attempts run to their end.
                self.paused = true;
                self.draining = true;
                self.retire_idle_clients(now);
                self.trim_pool(now);
            }
            Control::Stop => self.stop = true,
        }
        Ok(())
    }
}
