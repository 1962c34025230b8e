//! Folding the workers' reports and the probes' samples into rows, per-path figures, the rolling cross-check and measurement windows.

use super::*;
use crate::metrics::hist::Buckets;
use crate::metrics::store::EventKind;
use crate::model::{col, Col};

impl Controller {
    /// Keeps a notice for summary.json unless the run has it already; true when it is new.
    pub(super) fn notice_once(&mut self, notice: &str) -> bool {
        let new = !self.notices.iter().any(|n| n == notice);
        if new {
            self.notices.push(notice.to_string());
        }
        new
    }

    pub(super) fn pump_messages(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            self.fold_msg(m);
        }
    }

    /// Folds one message from the inbox into the state.
    pub(super) fn fold_msg(&mut self, m: Msg) {
        {
            match m {
                Msg::Worker(_, d) => {
                    if let Some(n) = &d.notice {
                        if self.notice_once(n) {
                            let line = format!("worker {}: {n}", d.worker);
                            self.log(&line);
                        }
                    }
                    if d.counts.addr_not_avail > 0 {
                        self.state.warn(Warning::PortsRunningOut);
                    }
                    if d.counts.out_of_fds > 0 {
                        self.state.warn(Warning::OutOfFds);
                    }
                    self.run.add(&d.counts);
                    d.connect_us.merge_into(&mut self.run_latency[0]);
                    d.total_us.merge_into(&mut self.run_latency[1]);
                    self.tick.add(&d);
                    if let Some((_, p, _, _)) = &mut self.point {
                        p.add(&d);
                    }
                    let path = self.slots.get(d.worker as usize).and_then(|s| s.path);
                    if let Some(pt) = path.and_then(|i| self.paths.get_mut(i)) {
                        pt.tick.add(&d);
                        if self.point.is_some() {
                            pt.window.add(&d);
                        }
                    }
                }
                Msg::WorkerText(id, line) => self.log(&format!("worker {id}: {line}")),
                Msg::Server(s) => self.server_last = Some(s),
                // Its lines are the server's responses, for the same checks as the built-in's.
                Msg::AccessLog(t_s, c) => {
                    self.server_last = Some(ServerStats {
                        t_s,
                        responses: c.lines,
                        ..Default::default()
                    });
                    self.access.last = Some(c);
                }
                Msg::Probe(p) => {
                    for n in &p.notes {
                        if self.notice_once(n) {
                            let line = format!("probe: {n}");
                            self.log(&line);
                        }
                    }
                    if p.syn_source == crate::probe::SynSource::Estimated {
                        self.state.warn(Warning::NoPcap);
                    }
                    self.probe_latest = Some(*p);
                }
            }
        }
    }

    pub(super) fn sample_row(&mut self, dt: f64) -> anyhow::Result<()> {
        let t = self.elapsed();
        self.state.elapsed_s = t;
        let mut cols = std::mem::take(&mut self.tick).columns(dt);
        let server_rate = match (&self.server_at_tick, &self.server_last) {
            (Some(a), Some(b)) => b.responses_since(a).map(|(_, rate)| rate),
            _ => None,
        };
        if self.server_last.is_some() {
            self.server_at_tick = self.server_last.clone();
        }
        cols.push((col::SERVER_RESPONSES, server_rate));
        for p in &mut self.paths {
            let tot = std::mem::take(&mut p.tick);
            cols.extend(tot.path_columns(dt, p.id));
        }
        self.router_columns(&mut cols);
        if let Some(p) = self.probe_latest.take() {
            cols.extend(p.columns());
            self.state.cpu_cores = p
                .per_cpu
                .iter()
                .flatten()
                .map(|c| {
                    [
                        c.user + c.nice,
                        c.system,
                        c.irq + c.softirq,
                        c.idle + c.iowait,
                    ]
                })
                .collect();
        }
        let load = LoadShape {
            mode: self.state.knobs.mode,
            timeout_s: self.state.knobs.timeout.as_secs_f64(),
        };
        if let Some(why) = self.point.as_ref().and_then(|p| p.1.client_bound(&load)) {
            self.state.warn(Warning::ClientBound(why));
        }
        self.state.store.push(t, &cols);
        if let Some((_, _, _, rows)) = &mut self.point {
            rows.feed(t, &cols);
        }
        self.state.latency = vec![
            ("connect_latency", Buckets::of(&self.run_latency[0])),
            ("total_latency", Buckets::of(&self.run_latency[1])),
        ];
        self.rolling_crosscheck(t);
        if let Some(f) = &mut self.folder {
            let vals: Vec<(std::borrow::Cow<'static, str>, f64)> = cols
                .iter()
                .map(|(c, v)| (c.name(), v.unwrap_or(f64::NAN)))
                .collect();
            f.row(t, &vals)?;
        }
        Ok(())
    }

    /// Every 5 s: pcap SYNs vs client attempts over the last 10 s (Webmonitor's validation); a
    /// disagreement over 2 % (more at low rates: `syn_check_tolerance_pct`) is a warning on
    /// screen and in run.log.
    pub(super) fn rolling_crosscheck(&mut self, t: f64) {
        const WINDOW: f64 = 10.0;
        let rows = (5.0 / self.interval.as_secs_f64()).round() as usize;
        if !self.state.store.len().is_multiple_of(rows.max(1)) || t < WINDOW + 1.0 {
            return;
        }
        // A knob change inside the window makes the two sources' timing differences count.
        let from = t - WINDOW;
        if self
            .state
            .store
            .events
            .iter()
            .any(|e| e.kind == EventKind::Change && e.t_s >= from - 1.0)
        {
            return;
        }
        let store = &self.state.store;
        let (Some((a, _)), Some((s, _))) = (
            store.mean_max(col::ATTEMPTS, from, t + 1e-9),
            store.mean_max(col::SYN_IN, from, t + 1e-9),
        ) else {
            return;
        };
        if a < 20.0 || self.state.warnings.contains(&Warning::NoPcap) {
            return;
        }
        let tol = crate::probe::crosscheck::syn_check_tolerance_pct(
            a,
            WINDOW,
            self.interval.as_secs_f64(),
        );
        let check = crate::probe::crosscheck::compare("pcap SYNs", s, "client attempts", a, tol);
        self.state
            .warnings
            .retain(|w| !matches!(w, Warning::CrossCheck(_)));
        if check.disagrees {
            let line = format!(
                "SYN/s {s:.0} vs attempts/s {a:.0} ({:+.1}%)",
                check.diff_pct
            );
            self.log(&format!("[{t:.1}s] cross-check disagrees: {line}"));
            self.state.warn(Warning::CrossCheck(line));
        }
    }

    /// The delay router's figures as rates over the last sample (cumulative counters diffed).
    pub(super) fn router_columns(&mut self, cols: &mut Vec<(Col, Option<f64>)>) {
        let Some(now) = self.net.as_ref().and_then(|n| n.router_stats()) else {
            return;
        };
        let sum = |s: &crate::net::router::RouterStats,
                   f: &dyn Fn(&crate::net::router::DirStats) -> u64| {
            s.paths.iter().map(|p| f(&p.up) + f(&p.down)).sum::<u64>()
        };
        let mut behind = 0;
        if let Some((_, prev)) = &self.router_last {
            let dt = (now.t_ms.saturating_sub(prev.t_ms)) as f64 / 1000.0;
            if dt > 0.0 {
                let rate = |f: &dyn Fn(&crate::net::router::DirStats) -> u64| {
                    Some(sum(&now, f).saturating_sub(sum(prev, f)) as f64 / dt)
                };
                cols.push((col::ROUTER_FRAMES_PER_S, rate(&|d| d.relayed)));
                cols.push((col::ROUTER_LOST_PER_S, rate(&|d| d.lost)));
                cols.push((col::ROUTER_QUEUE_DROPS_PER_S, rate(&|d| d.queue_drops)));
                behind = now.ring_drops.saturating_sub(prev.ring_drops);
                cols.push((col::ROUTER_RING_DROPS_PER_S, Some(behind as f64 / dt)));
                cols.push((
                    col::ROUTER_CPU_PCT,
                    Some(now.cpu_us.saturating_sub(prev.cpu_us) as f64 / 1e4 / dt),
                ));
            }
        }
        cols.push((col::ROUTER_QUEUE, Some(sum(&now, &|d| d.queue) as f64)));
        self.router_late_columns(&now, cols);
        self.router_last = Some((Instant::now(), now));
        if behind > 0 && !self.state.warnings.contains(&Warning::RouterBehind) {
            self.log(&format!(
                "[{:.1}s] the delay router fell behind: {behind} frames dropped at its ports \
                 (router CPU-bound; this loss is not the path's). Lower the rate or give the router a core.",
                self.elapsed()
            ));
            self.state.warn(Warning::RouterBehind);
        }
    }

    /// The router's departure error (send time minus scheduled departure) over its latest
    /// stats line; warns once when its p99 passes the goal (rootless routers run without
    /// SCHED_FIFO, and a busy machine wakes them late).
    fn router_late_columns(
        &mut self,
        now: &crate::net::router::RouterStats,
        cols: &mut Vec<(Col, Option<f64>)>,
    ) {
        if now.late_us.is_empty() {
            return;
        }
        let q = |x| now.late_us.quantile(x).map(|v| v as f64);
        cols.push((col::ROUTER_LATE_P50_US, q(0.5)));
        cols.push((col::ROUTER_LATE_P99_US, q(0.99)));
        let goal = crate::net::router::LATE_GOAL_US;
        let warned = self
            .state
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::RouterLate(_)));
        // The verdict is over the lab's life and a thousand departures at least, so a slow
        // start-up second is not one.
        let Some((p99, departures)) = self.net.as_ref().map(|n| n.router_late_life()) else {
            return;
        };
        if departures >= 1000 && p99 > goal && !warned {
            let line = format!(
                "[{:.1}s] the delay router's departures are late by up to {p99} us (p99; goal < {goal} us){}: delays are shaped less exactly than configured",
                self.elapsed(),
                if now.realtime { "" } else { ", it runs without SCHED_FIFO (rootless, or the priority was refused)" }
            );
            self.log(&line);
            self.notices.push(line);
            self.state.warn(Warning::RouterLate(p99));
        }
    }

    /// The clients' kernels' count of connects: `Tcp: ActiveOpens` of /proc/net/snmp summed
    /// over the lab's client namespaces (read from a thread inside each). None without a lab
    /// or when one cannot be read (said in run.log).
    pub(super) fn client_active_opens(&mut self) -> Option<u64> {
        let netns: Vec<String> = self
            .net
            .as_ref()?
            .paths
            .iter()
            .map(|p| p.netns.clone())
            .collect();
        let mut sum = 0;
        for ns in netns {
            let read = crate::sys::netns::in_netns(&ns, || {
                let text = std::fs::read_to_string("/proc/thread-self/net/snmp")?;
                let mut c = crate::probe::procnet::NetCounters::default();
                c.parse_into("/proc/net/snmp", &text)?;
                c.counter("Tcp.ActiveOpens")
                    .ok_or_else(|| anyhow::anyhow!("no Tcp ActiveOpens"))
            });
            match read.and_then(|r| r) {
                Ok(n) => sum += n,
                Err(e) => {
                    self.log(&format!(
                        "client TcpActiveOpens in netns {ns} unreadable: {e:#}"
                    ));
                    return None;
                }
            }
        }
        Some(sum)
    }

    /// Starts counting a measurement window (a sweep point's hold).
    pub fn begin_point(&mut self) {
        self.pump_messages();
        for p in &mut self.paths {
            p.window = ClientTotals::default();
        }
        self.access.at_point = self.access.last;
        let t0 = self.elapsed();
        self.point = Some((
            t0,
            ClientTotals::default(),
            self.server_last.clone(),
            SampleWindow::open(t0, &self.state.store),
        ));
    }

    /// Ends the window and returns it: its start and end, the client totals, and the server's
    /// responses in it. The server's rate is taken between its own reports (every 100 ms), over
    /// the time they say passed, so it does not depend on where the window's edges fell.
    pub fn end_point(&mut self) -> Option<Window> {
        self.pump_messages();
        let (t0, client, s0, rows) = self.point.take()?;
        self.access.point = self
            .access
            .last
            .map(|b| b.since(&self.access.at_point.unwrap_or_default()));
        let paths = self
            .paths
            .iter_mut()
            .map(|p| (p.name.clone(), std::mem::take(&mut p.window)))
            .collect();
        Some(self.window(t0, client, s0, paths, rows))
    }

    /// The open window as it stands now, left open (the TUI's live threshold verdicts).
    pub fn peek_point(&self) -> Option<Window> {
        let (t0, client, s0, rows) = self.point.clone()?;
        let paths = self
            .paths
            .iter()
            .map(|p| (p.name.clone(), p.window.clone()))
            .collect();
        Some(self.window(t0, client, s0, paths, rows))
    }

    fn window(
        &self,
        t0: f64,
        client: ClientTotals,
        s0: Option<ServerStats>,
        paths: Vec<(String, ClientTotals)>,
        rows: SampleWindow,
    ) -> Window {
        let t1 = self.elapsed();
        let since = match (s0, &self.server_last) {
            (Some(a), Some(b)) => b.responses_since(&a),
            _ => None,
        };
        let (server_responses, server_rate) = since.unzip();
        Window {
            t0,
            t1,
            client,
            paths,
            server_rate,
            server_responses,
            rows,
        }
    }

    /// Every 2 s in the TUI: the scenario's thresholds judged on the session so far, for the
    /// status line (the final verdicts are taken when the session ends).
    pub(super) fn live_verdicts(&mut self) {
        if self.next_verdicts.is_some_and(|t| t > Instant::now()) {
            return;
        }
        self.next_verdicts = Some(Instant::now() + Duration::from_secs(2));
        let gate = crate::report::thresholds::Gate::of(&self.scenario);
        if gate.is_empty() {
            return;
        }
        if let Some(w) = self.peek_point() {
            // This stretch of settings as a point, the session's earlier stretches with it for
            // the thresholds over the whole run.
            let mut rows = self
                .folder
                .as_ref()
                .map_or_else(Vec::new, |f| f.summary.clone());
            let row = crate::lab::run::summary_row(self, rows.len() + 1, w);
            let mut v = gate.judge_point(&row);
            rows.push(row);
            v.extend(gate.judge_run(&rows));
            self.state.verdicts = v;
        }
    }
}
