//! The end of a run: snapshots, the TUI's summary rows (one per stretch of settings),
//! stopping everything and the run folder's last files.

use super::*;

impl Controller {
    /// Writes the time series in memory (the last `store::KEEP_S` seconds; timeseries.csv has
    /// every row) and a text screenshot into the run folder.
    pub fn write_snapshot(&mut self, screen: &str) -> anyhow::Result<PathBuf> {
        let t = self.elapsed();
        let written = self
            .recorder
            .snapshot(t, screen, &self.core.state().store)?;
        self.mark("snapshot");
        self.log(&format!(
            "[{t:.1}s] snapshot written: {}",
            written.display()
        ));
        Ok(written)
    }

    /// Ends the TUI's run: the last stretch of settings as its summary row, then shutdown.
    pub fn finish_interactive(&mut self) -> anyhow::Result<()> {
        self.pump_messages();
        let mut fx = Vec::new();
        let now = self.elapsed();
        self.core.end_stretch_now(now, &mut fx);
        self.carry_out(fx)?;
        let gate = &self.gate;
        let points = self.recorder.points();
        let mut verdicts: Vec<_> = points.iter().flat_map(|r| gate.judge_point(r)).collect();
        verdicts.extend(gate.judge_run(points));
        // A session's points are the stretches the person chose, not the scenario's plan.
        self.recorder
            .meta(crate::report::whole::SESSION_KEY, "tui".into());
        self.recorder.write_summary(&verdicts)?;
        self.shutdown()
    }

    /// Stops the workers and the target, then writes the events file and the run's totals.
    /// Everything is stopped and removed whatever happens; the error is a last file that could
    /// not be written.
    pub fn shutdown(&mut self) -> anyhow::Result<()> {
        self.drain_workers();
        // Read once nothing connects any more, before the lab (and its namespaces) goes.
        let opens_end = self.client_active_opens();
        let last_probe = self.probe_after_drain();
        self.probe.take();
        self.core.set_probes_on(false);
        self.stop_children();
        self.pump_messages();
        // Over HTTP/3 with the built-in server: the kernel's drops against the datagrams sent
        // and not read (issue 47); the QUIC handshakes' cross-check is judged by them.
        let udp = self.core.udp_drops(last_probe.as_ref(), self.paths_lose());
        // Once per run (a second shutdown finds nothing new to count).
        if let Some(line) = self.core.final_crosscheck() {
            self.log(&line);
            let tls = self.core.tls_crosscheck();
            let quic = self.core.quic_handshakes(udp).map(|h| h.to_string());
            for line in tls.into_iter().chain(quic) {
                self.log(&line);
            }
        }
        if let Some(d) = udp {
            self.log(&d.to_string());
            let mut v = serde_json::json!(d);
            v["missing"] = d.missing().into();
            v["initials_dropped"] = serde_json::json!(d.initials_dropped());
            v["verdict"] = serde_json::json!(d.verdict());
            self.recorder.meta("udp_drops", v);
        }
        self.record_router_timing();
        if let Some(net) = self.net.take() {
            let line = match net.down() {
                Ok(()) => "network lab removed".to_string(),
                Err(e) => format!("network lab teardown: {e:#} (run `synlab net down`)"),
            };
            self.log(&line);
        }
        let client_opens = opens_end
            .zip(self.client_opens_at_load_start)
            .map(|(end, start)| end.saturating_sub(start));
        self.record_run_end(last_probe.as_ref(), client_opens)
    }

    /// Stops the workers (they send their last report), the target and the access log.
    fn stop_children(&mut self) {
        self.send_all(&Control::Stop);
        let deadline = self.rt.clock.now() + Duration::from_secs(3);
        for w in &mut self.workers {
            let left = deadline.saturating_duration_since(self.rt.clock.now());
            w.stop(left);
        }
        self.pump_messages();
        self.workers.clear();
        if let Some(mut s) = self.server.take() {
            if self.real.is_some() {
                crate::lab::real_server::ask_to_stop(self.server_pid.unwrap_or(s.pid()));
            }
            s.stop(Duration::from_secs(2));
        }
        if let Some(mut f) = self.access.follower.take() {
            f.stop();
        }
        if let Some(mut p) = self.scoreboard.take() {
            p.stop();
        }
    }

    /// Whether the paths lose packets as configured (loss, a bottleneck's drop-tail queue), at
    /// any time of the run: what they lose never reaches the server's socket.
    fn paths_lose(&self) -> bool {
        let sc = &self.scenario;
        let paths = sc.network.as_ref().map_or(&[][..], |n| &n.paths[..]);
        paths
            .iter()
            .any(|p| p.loss.0 > 0.0 || p.gilbert.is_some() || p.bandwidth.is_some())
            || sc
                .steps
                .iter()
                .any(|s| s.loss.is_some_and(|l| l.0 > 0.0) || s.bandwidth.is_some())
            || sc
                .sweep
                .as_ref()
                .is_some_and(|w| matches!(w.param.as_str(), "network.loss" | "network.bandwidth"))
    }

    /// The router's departure error over the lab's life, next to its goal, for summary.json.
    fn record_router_timing(&mut self) {
        let Some(net) = &self.net else {
            return;
        };
        let v = net.router_view();
        if let Some(s) = v.latest {
            self.recorder.meta(
                "router_timing",
                serde_json::json!({
                    "late_p50_us": v.late_us.value_at_quantile(0.5),
                    "late_p99_us": v.late_us.value_at_quantile(0.99),
                    "departures": v.late_us.len(),
                    "realtime": s.realtime,
                    "goal_p99_us": crate::net::router::LATE_GOAL_US,
                }),
            );
        }
    }

    /// The run folder's last files: events, what ran where, the notices, the final check and
    /// the run's totals.
    fn record_run_end(
        &mut self,
        last_probe: Option<&crate::probe::ProbeSample>,
        client_opens: Option<u64>,
    ) -> anyhow::Result<()> {
        let totals = self.core.run_totals(last_probe, client_opens);
        let access = self.access_summary();
        if self.recorder.dir().is_none() {
            return Ok(());
        }
        let (core, rec) = (&self.core, &mut self.recorder);
        let st = core.state();
        if let Some(a) = access {
            rec.meta("access_log", a);
        }
        rec.meta("backend", st.backend.clone().into());
        rec.meta("target", st.target.clone().into());
        rec.meta("notices", core.notices().to_vec().into());
        // The built-in server's exact accept-queue waits over its life (issue 48 item 3).
        let exact = core.server_stats().map(|s| s.accept_wait_ms.as_slice());
        if let Some(w) = exact.and_then(crate::model::acceptq::ExactWait::of) {
            rec.log(&w.to_string());
            rec.meta("accept_queue_wait_exact", serde_json::json!(w));
        }
        if !st.lab.is_empty() {
            rec.meta("lab", st.lab.clone().into());
        }
        rec.meta("machine", crate::sys::machine::Machine::read().to_json());
        rec.run_classes(core.run_class_totals());
        if let (Some((c, sv, d)), Some(v)) = (core.final_check(), core.final_verdict()) {
            rec.meta(
                "check_responses",
                serde_json::json!({"client": c, "server": sv, "diff_pct": d, "agree": v.passes(),
                    "verdict": v.to_string(), "trusted": v.trusted()}),
            );
        }
        let broken = totals.identities_broken();
        rec.finish(&st.store.events, totals)?;
        // A run whose counts do not add up never ends looking valid.
        match broken {
            Some(why) => anyhow::bail!("the run's counts do not add up (run_totals): {why}"),
            None => Ok(()),
        }
    }

    /// A probe sample taken after the drain, so the run's SYN totals include the last
    /// connections'. pcap's counts lag the wire by a block timeout (50 ms) plus however long
    /// the capture thread waits for a CPU on a busy machine; nothing sends a SYN after the
    /// drain, so the count is final once two samples agree. The last one that came if they
    /// never do within four intervals; None without probes.
    fn probe_after_drain(&mut self) -> Option<crate::probe::ProbeSample> {
        self.probe.as_ref()?;
        let after = self.rt.clock.now() + Duration::from_millis(60);
        let deadline = after + self.interval * 4 + Duration::from_millis(500);
        let mut last: Option<crate::probe::ProbeSample> = None;
        while let Some(m) = self.rt.clock.recv_until(&self.rx, deadline) {
            // The other producers' messages are folded as they come.
            let Input::Probe(p) = m else {
                self.fold_msg(m);
                continue;
            };
            // Not folded (the run's figures are taken), but what it notes reaches run.log and
            // summary.json's notices, as a folded sample's notes do.
            let mut fx = Vec::new();
            self.core.probe_notes(&p, &mut fx);
            if let Err(e) = self.carry_out(fx) {
                self.log(&format!("{e:#}"));
            }
            if p.at < after {
                continue;
            }
            if last
                .as_ref()
                .is_some_and(|l| l.m.syn_in_total == p.m.syn_in_total)
            {
                return Some(*p);
            }
            last = Some(*p);
        }
        last
    }
}
