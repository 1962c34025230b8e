//! The load workers: where each runs and what share it carries, their configs, starting, knob changes, and the drain at the end.

use super::*;
use crate::lab::core::split_count;
use crate::net::spec::PathSpec;

impl Controller {
    pub(super) fn worker_config(&self, id: u32) -> anyhow::Result<WorkerConfig> {
        let k = &self.core.state().knobs;
        let slot = &self.slots[id as usize];
        let weights: Vec<f64> = self.slots.iter().map(|s| s.share.weight).collect();
        let share = |total: u32| split_count(total, &weights)[id as usize];
        let load = k.worker_share(slot.share.weight, share(k.sockets), share(k.clients));
        let mut cfg = WorkerConfig {
            id,
            target: self.target_addr,
            bind_addrs: slot.bind_addrs.clone(),
            mode: k.mode,
            rate: None,
            arrivals: self.scenario.load.arrivals,
            sockets: 0,
            clients: 0,
            think_s: self.scenario.load.think.secs(),
            timeout_s: 0.0,
            response_timeout_s: self.scenario.load.response_timeout.secs(),
            burst: None,
            mix: crate::scenario::workloads::mix_for(&self.scenario, self.workload),
            keepalive: self.keepalive,
            requests_per_conn: self.scenario.load.requests_per_conn,
            connections: (self.scenario.load.connections).map_or(0, share),
            host_header: self.target_addr.to_string(),
            duration_s: self.max_run_secs(),
            stats_interval_ms: crate::load::protocol::REPORT_INTERVAL_MS,
            seed: 0x5eed + id as u64,
            paused: false,
            tls: self.client_tls()?,
            good_statuses: crate::model::counters::GoodStatuses(
                self.scenario.gate.good_statuses.clone(),
            ),
            streams: k.streams,
            http3: self.scenario.load.http == crate::scenario::HttpVersion::Http3,
        };
        // The live knobs as they are now, by the one mapping the Load message uses.
        load.apply_to(&mut cfg);
        Ok(cfg)
    }

    /// Hard bound on the children's lifetime: the planned run plus a margin (the TUI's own
    /// runs are bounded by the scenario's duration too).
    pub(super) fn max_run_secs(&self) -> f64 {
        // Every point of a sweep (modes, values, steerings, curves), or the duration.
        let sweep = self
            .scenario
            .sweep
            .is_some()
            .then(|| crate::scenario::validate::run_length_s(&self.scenario));
        sweep.unwrap_or(0.0).max(self.scenario.duration.secs()) + 60.0
    }

    /// Decides where each worker runs: spread over the lab's paths by share, or on loopback.
    pub(super) fn plan_slots(&mut self) {
        self.slots = match &self.net {
            Some(net) => {
                let paths = &net.layout().paths;
                let shares: Vec<f64> = paths.iter().map(|p| p.share).collect();
                let total: f64 = shares.iter().sum::<f64>().max(1e-9);
                split_workers(self.n_workers, &shares)
                    .into_iter()
                    .flat_map(|(i, n)| {
                        let p = &paths[i];
                        let slot = WorkerSlot {
                            share: Slot {
                                path: Some(i),
                                weight: p.share / total / n as f64,
                            },
                            netns: Some(p.netns.clone()),
                            bind_addrs: p.addrs.iter().map(|a| IpAddr::V4(*a)).collect(),
                        };
                        std::iter::repeat_n(slot, n as usize)
                    })
                    .collect()
            }
            None => {
                let l = &self.scenario.load;
                let open_sockets = match l.mode {
                    Mode::Closed => l.clients,
                    _ => l.sockets,
                };
                let bind_addrs = loopback_sources(self.target_addr.ip(), open_sockets);
                (0..self.n_workers)
                    .map(|_| WorkerSlot {
                        share: Slot {
                            path: None,
                            weight: 1.0 / self.n_workers.max(1) as f64,
                        },
                        netns: None,
                        bind_addrs: bind_addrs.clone(),
                    })
                    .collect()
            }
        };
    }

    pub(super) fn start_workers(&mut self) -> anyhow::Result<()> {
        self.plan_slots();
        self.core
            .set_slots(self.slots.iter().map(|s| s.share).collect());
        if self.client_opens_at_load_start.is_none() {
            self.client_opens_at_load_start = self.client_active_opens();
        }
        for id in 0..self.slots.len() as u32 {
            let cfg = self.worker_config(id)?;
            let tx = self.tx.clone();
            let spawn = Spawn {
                args: vec![
                    "worker".into(),
                    "--config-json".into(),
                    serde_json::to_string(&cfg)?,
                ],
                cpus: self.placement.load.clone(),
                netns: self.slots[id as usize].netns.clone(),
                ..Default::default()
            };
            let on_line =
                Box::new(
                    move |line: &str| match serde_json::from_str::<StatsDelta>(line) {
                        Ok(d) => {
                            let _ = tx.send(Input::Worker(id, Box::new(d)));
                        }
                        Err(_) => {
                            let _ = tx.send(Input::WorkerText(id, line.to_string()));
                        }
                    },
                );
            let child = self
                .rt
                .children
                .spawn(&format!("worker {id}"), &spawn, on_line)?;
            self.workers.push(child);
        }
        let n = self.slots.len();
        self.log(&format!("started {n} worker(s)"));
        Ok(())
    }

    /// Stops and restarts the workers (after a change of worker count).
    /// Restarts the workers with the request mix of `workload` (a workload sweep's point).
    pub fn restart_workers_with(
        &mut self,
        workload: crate::scenario::Workload,
    ) -> anyhow::Result<()> {
        self.workload = workload;
        self.restart_workers(self.n_workers)
    }

    /// Restarts the workers speaking HTTP/1.1 keep-alive (or HTTP/1.0).
    pub fn restart_workers_http(&mut self, keepalive: bool) -> anyhow::Result<()> {
        self.keepalive = keepalive;
        self.restart_workers(self.n_workers)
    }

    pub fn restart_workers(&mut self, n: u32) -> anyhow::Result<()> {
        for mut w in self.workers.drain(..) {
            w.stop(Duration::from_secs(2));
        }
        self.pump_messages();
        self.n_workers = n.max(1);
        self.start_workers()
    }

    pub(super) fn send_all(&mut self, msg: &Control) {
        let line = serde_json::to_string(msg).expect("control messages serialize");
        for w in &mut self.workers {
            let _ = w.send_line(&line);
        }
    }

    /// Puts the network lab's paths under `profiles`, all or none: when one cannot be
    /// applied, those changed before it go back to the profiles the core still holds.
    pub(super) fn apply_paths(&mut self, profiles: &[PathSpec]) -> Result<(), PathFailure> {
        let failure = |path: &PathSpec, why: PathRefusal| PathFailure {
            path: path.name.clone(),
            why,
        };
        let Some(net) = self.net.as_mut() else {
            return Err(failure(&profiles[0], PathRefusal::NoLab));
        };
        for (j, p) in profiles.iter().enumerate() {
            if let Err(e) = net.set_path(p) {
                let held = &self.core.state().knobs.paths;
                for done in &profiles[..j] {
                    if let Some(old) = held.iter().find(|h| h.name == done.name) {
                        let _ = net.set_path(old);
                    }
                }
                return Err(failure(p, PathRefusal::Lab(format!("{e:#}"))));
            }
        }
        Ok(())
    }

    /// The end of the run: the workers start nothing new and finish what is in flight, bounded
    /// by the timeouts, so the run's totals hold every attempt's outcome (what is still open
    /// at the bound is counted in `in_flight_at_end`).
    /// How long a drain may take now ([`super::drain_bound_s`] of T and the response timeout).
    pub fn drain_bound_s(&self) -> f64 {
        super::drain_bound_s(
            self.core.state().knobs.timeout.as_secs_f64(),
            self.scenario.load.response_timeout.secs(),
        )
    }

    pub(super) fn drain_workers(&mut self) {
        if self.workers.is_empty() {
            return;
        }
        self.send_all(&Control::Drain);
        let wait = self.drain_bound_s() + DRAIN_MARGIN_S;
        let deadline = self.rt.clock.now() + Duration::from_secs_f64(wait);
        while self.rt.clock.now() < deadline {
            self.pump_messages();
            if self.workers.iter_mut().all(|w| w.ended().is_some()) {
                break;
            }
            self.rt.clock.sleep(Duration::from_millis(10));
        }
        self.pump_messages();
        let in_flight = self.core.run_counts().in_flight_at_end();
        self.log(&format!(
            "drained: the workers finished what was in flight ({in_flight} still open at the bound)"
        ));
    }

    /// Pauses the load and pumps until the workers report nothing in progress (no connect,
    /// no request), for at most T + the response timeout, leaving it paused (the next point
    /// resumes it in its own settings): what one point started must not finish inside the
    /// next one's window (closed clients wait out SYN retransmissions, seconds after an
    /// overloaded point). Returns how long it waited and what was still in progress at the
    /// bound.
    pub fn settle(&mut self) -> anyhow::Result<(f64, u64)> {
        self.apply(Command::Pause(true));
        let t0 = self.rt.clock.now();
        let deadline = t0 + Duration::from_secs_f64(self.drain_bound_s() + DRAIN_MARGIN_S);
        // Rows after the pause: the store's latest reflects the workers' reports since.
        let fresh = t0 + self.interval * 2;
        let in_progress = |c: &Self| {
            let st = &c.core.state().store;
            st.last(crate::model::col::CONNECTING).unwrap_or(0.0)
                + st.last(crate::model::col::REQUESTS_IN_FLIGHT)
                    .unwrap_or(0.0)
        };
        loop {
            self.pump()?;
            let now = self.rt.clock.now();
            if now >= deadline || (now >= fresh && in_progress(self) == 0.0) {
                break;
            }
            self.rt.clock.sleep(Duration::from_millis(10));
        }
        let waited = self.rt.clock.now().saturating_duration_since(t0);
        Ok((waited.as_secs_f64(), in_progress(self) as u64))
    }

    /// How many load workers run now.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }
}

/// Splits `n` workers over paths by share (each path with a share gets at least one).
pub(super) fn split_workers(n: u32, shares: &[f64]) -> Vec<(usize, u32)> {
    let total: f64 = shares.iter().sum::<f64>().max(1e-9);
    shares
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, s)| (i, ((n as f64 * s / total).round() as u32).max(1)))
        .collect()
}

/// Source addresses for a load on IPv4 loopback: 127.0.0.1-4, as the lab gives each client
/// namespace several addresses. connect() hands out only half the ephemeral range (even ports)
/// before it searches the rest, and with one source address and thousands of sockets in
/// SYN-SENT that search took ~70 % of the generator's core (perf: __inet_hash_connect,
/// __inet_check_established); with four, each port serves four 4-tuples. Binding costs two
/// system calls per connection (~2 % of the core), so only loads that can hold more than
/// 1,000 sockets open at once get it.
pub(super) fn loopback_sources(target: IpAddr, open_sockets: u32) -> Vec<IpAddr> {
    match target {
        IpAddr::V4(a) if a.is_loopback() && open_sockets > 1000 => (1..=4)
            .map(|i| IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, i)))
            .collect(),
        _ => Vec::new(),
    }
}
