//! Rows at their sample times: the grid they keep, their columns (client, server, paths,
//! router, probes), the rolling cross-check, and the final one of the run.

use super::commands::Origin;
use super::live::kind;
use super::{Effect, LabCore};
use crate::lab::knobs::Command;
use crate::lab::state::Warning;
use crate::metrics::hist::Buckets;
use crate::metrics::store::EventKind;
use crate::model::udp_drops::{QuicHandshakes, UdpDrops};
use crate::model::{col, Col, Totals};
use crate::net::router::{DirStats, RouterStats};
use crate::probe::crosscheck;

/// Departures the router's lateness verdict waits for (see `router_late_columns`).
const ROUTER_VERDICT_DEPARTURES: u64 = 20_000;

impl LabCore {
    /// Whether a row is due at `now_s`. The probes sample on their own grid of the same
    /// interval, with a phase of their own: a row waits (up to half an interval) for the
    /// sample of its interval, else rows whose tick lands just before a sample would
    /// alternate between none and two.
    pub fn row_due(&self, now_s: f64) -> bool {
        let probe_pending = self.probes_on
            && self.probe_latest.is_none()
            && now_s < self.next_tick_s + self.interval_s / 2.0;
        now_s >= self.next_tick_s && !probe_pending
    }

    /// The first instant after `now_s` at which a tick would do something no message brings
    /// about: a row due (or, with its probe sample missing, no longer waited for), the next
    /// step, the deadline. A loop that ticks then, and on every message, misses nothing.
    pub fn next_due_s(&self, now_s: f64) -> f64 {
        [self.next_tick_s, self.next_tick_s + self.interval_s / 2.0]
            .into_iter()
            .chain(self.next_step_at())
            .chain(self.deadline)
            .filter(|&t| t > now_s)
            .fold(f64::INFINITY, f64::min)
    }

    pub(super) fn tick(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        self.play_steps(now_s, fx);
        if self.row_due(now_s) {
            let dt = (now_s - self.last_tick_s).max(1e-3);
            self.last_tick_s = now_s;
            // Keep a fixed grid; after a stall skip ahead rather than emit a burst of rows. A
            // row may be up to half an interval late (waiting for its probe sample) plus one
            // pump period: only more than a whole interval behind is a stall.
            self.next_tick_s += self.interval_s;
            if self.next_tick_s + self.interval_s < now_s {
                self.next_tick_s = now_s + self.interval_s;
            }
            self.sample_row(now_s, dt, fx);
        }
        if let Some(d) = self.deadline {
            if now_s >= d && !self.state.finished {
                self.deadline = None;
                self.propose(Command::Pause(true), now_s, Origin::Core, fx);
                self.state.finished = true;
                self.state.caption = Some(format!(
                    "the scenario's {d:.0} s are over: load stopped. p runs it again (free play), q quits"
                ));
                fx.push(Effect::Log("duration reached: load stopped".into()));
            }
        }
    }

    /// The row at `t` over the `dt` seconds since the last one.
    fn sample_row(&mut self, t: f64, dt: f64, fx: &mut Vec<Effect>) {
        self.state.elapsed_s = t;
        // The tick's sums are read and emptied, their histograms kept for the next row.
        let mut cols = self.tick.columns(dt);
        let server = super::latency_split::server_times(
            self.server_at_tick.as_ref(),
            self.server_last.as_ref(),
        );
        cols.extend(super::latency_split::columns(
            &self.tick,
            server.as_ref(),
            self.syn_linear,
        ));
        self.tick.reset();
        let server_rate = match (&self.server_at_tick, &self.server_last) {
            (Some(a), Some(b)) => b.responses_since(a).map(|(_, rate)| rate),
            _ => None,
        };
        // The server's handshakes, over the time its own reports say passed.
        let dt = match (&self.server_at_tick, &self.server_last) {
            (Some(a), Some(b)) => b.t_s - a.t_s,
            _ => 0.0,
        };
        let per_s = |(x, y): (u64, u64)| (x as f64 / dt, y as f64 / dt);
        let (server_tls, server_quic) =
            self.server_handshakes(self.server_at_tick.as_ref(), self.server_last.as_ref());
        let (server_tls, server_quic) = (server_tls.map(per_s), server_quic.map(per_s));
        if self.server_last.is_some() {
            self.server_at_tick = self.server_last.clone();
        }
        cols.push((col::SERVER_RESPONSES, server_rate));
        cols.push((col::SERVER_FULL_HANDSHAKES, server_tls.map(|t| t.0)));
        cols.push((col::SERVER_RESUMED_HANDSHAKES, server_tls.map(|t| t.1)));
        cols.push((col::SERVER_QUIC_HANDSHAKES, server_quic.map(|t| t.0)));
        cols.push((col::SERVER_QUIC_RETRIES, server_quic.map(|t| t.1)));
        for p in &mut self.paths {
            cols.extend(p.tick.path_columns(dt, p.id));
            p.tick.reset();
        }
        let class_cols = self.class_columns(dt);
        cols.extend(class_cols);
        self.router_columns(t, &mut cols, fx);
        if let Some(p) = self.probe_latest.take() {
            let carry = std::mem::take(&mut self.probe_carry);
            cols.extend(p.columns().into_iter().map(|(c, v)| {
                let older = || carry.iter().find(|(k, _)| *k == c).map(|(_, v)| *v);
                (c, v.or_else(older))
            }));
            cols.push((col::LOAD_CPU, load_cpu(&cols, self.router_cpu_pct)));
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
        self.server_columns(&mut cols);
        self.state.store.push(t, &cols);
        // After the row: its probe figures (the server socket's drops) are among those judged.
        self.judge_live(t, fx);
        if let Some(p) = &mut self.point {
            p.rows.feed(t, &cols);
        }
        // The run's latency in fixed buckets, binned again into the same buckets each row.
        let names: &[&'static str] = match self.state.knobs.resumed {
            Some(_) => &["connect_latency", "total_latency", "tls_handshake_latency"],
            None => &["connect_latency", "total_latency"],
        };
        let latency = &mut self.state.latency;
        latency.resize_with(names.len(), || ("", Buckets::default()));
        for ((name, b), (n, h)) in latency.iter_mut().zip(names.iter().zip(&self.run_latency)) {
            *name = n;
            b.refill(h);
        }
        self.rolling_crosscheck(t, fx);
        fx.push(Effect::Row { t, cols });
    }

    /// Every 5 s: pcap SYNs vs client attempts over the last 10 s (Webmonitor's validation); a
    /// disagreement over 2 % (more at low rates: `syn_check_tolerance_pct`) is a warning on
    /// screen and in run.log.
    fn rolling_crosscheck(&mut self, t: f64, fx: &mut Vec<Effect>) {
        const WINDOW: f64 = 10.0;
        let rows = (5.0 / self.interval_s).round() as usize;
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
        let within = |c: Col| store.mean_max(c, from, t + 1e-9).map(|(mean, _)| mean);
        let Some(a) = within(col::ATTEMPTS) else {
            return;
        };
        // Over HTTP/3 there is no SYN: an attempt's first packet is its first Initial (pcap
        // tells it from the attempt's later ones, a Retry's answer among them).
        let quic = within(col::QUIC_PACKETS_SENT).is_some();
        let (s, first) = if quic {
            let Some(i) = within(col::QUIC_FIRST_INITIAL_PER_S) else {
                return;
            };
            (i, FirstPackets::Initials)
        } else {
            let Some(s) = within(col::SYN_IN) else {
                return;
            };
            let retries = within(col::SYN_RETRANS_PER_S).unwrap_or(f64::NAN);
            (crosscheck::first_syns(s, retries), FirstPackets::Syns)
        };
        if a < 20.0 || self.state.warnings.contains(&Warning::NoPcap) {
            return;
        }
        let tol = crosscheck::syn_check_tolerance_pct(a, WINDOW, self.interval_s);
        let check = crosscheck::compare(first.name(), s, "client attempts", a, tol);
        let line = format!(
            "{} {s:.0} ({} left out) vs attempts/s {a:.0} ({:+.1}%)",
            first.per_s(),
            first.repeats(),
            check.diff_pct
        );
        let w = check.disagrees.then_some(Warning::CrossCheck(line));
        self.hold_warning_of(kind(&Warning::CrossCheck(String::new())), w, t, fx);
    }

    /// The server's gauges: its processes or threads busy with a connection (the built-in
    /// server's own report, Apache's scoreboard) and the built-in server's workers. Not from an
    /// access log, which has no such figures.
    fn server_columns(&mut self, cols: &mut Vec<(Col, Option<f64>)>) {
        cols.push((col::SERVER_BUSY, self.busy_latest));
        if let Some(s) = self.server_last.as_ref().filter(|_| self.server_reports) {
            cols.push((col::SERVER_WORKERS, Some(s.workers as f64)));
        }
    }

    /// The delay router's figures as rates over the last sample (cumulative counters diffed).
    fn router_columns(&mut self, t: f64, cols: &mut Vec<(Col, Option<f64>)>, fx: &mut Vec<Effect>) {
        let Some((now, late_life)) = self.router_now.take() else {
            return;
        };
        let sum = |s: &RouterStats, f: &dyn Fn(&DirStats) -> u64| {
            s.paths.iter().map(|p| f(&p.up) + f(&p.down)).sum::<u64>()
        };
        let mut behind = 0;
        if let Some(prev) = &self.router_last {
            let dt = (now.t_ms.saturating_sub(prev.t_ms)) as f64 / 1000.0;
            if dt > 0.0 {
                let rate = |f: &dyn Fn(&DirStats) -> u64| {
                    Some(sum(&now, f).saturating_sub(sum(prev, f)) as f64 / dt)
                };
                cols.push((col::ROUTER_FRAMES_PER_S, rate(&|d| d.relayed)));
                cols.push((col::ROUTER_LOST_PER_S, rate(&|d| d.lost)));
                cols.push((col::ROUTER_QUEUE_DROPS_PER_S, rate(&|d| d.queue_drops)));
                behind = now.ring_drops.saturating_sub(prev.ring_drops);
                cols.push((col::ROUTER_RING_DROPS_PER_S, Some(behind as f64 / dt)));
                let cpu = now.cpu_us.saturating_sub(prev.cpu_us) as f64 / 1e4 / dt;
                self.router_cpu_pct = Some(cpu);
                cols.push((col::ROUTER_CPU_PCT, Some(cpu)));
            }
        }
        cols.push((col::ROUTER_QUEUE, Some(sum(&now, &|d| d.queue) as f64)));
        self.router_late_columns(t, &now, late_life, cols, fx);
        self.router_last = Some(now);
        if behind > 0 && !self.state.warnings.contains(&Warning::RouterBehind) {
            fx.push(Effect::Log(format!(
                "[{t:.1}s] the delay router fell behind: {behind} frames dropped at its ports \
                 (router CPU-bound; this loss is not the path's). Lower the rate or give the router a core."
            )));
        }
        let w = (behind > 0).then_some(Warning::RouterBehind);
        self.hold_warning_of(kind(&Warning::RouterBehind), w, t, fx);
    }

    /// The router's departure error (send time minus scheduled departure) over its latest
    /// stats line; warns once when its p99 over the lab's life passes the goal (rootless
    /// routers run without SCHED_FIFO, and a busy machine wakes them late).
    fn router_late_columns(
        &mut self,
        t: f64,
        now: &RouterStats,
        (p99, departures): (u64, u64),
        cols: &mut Vec<(Col, Option<f64>)>,
        fx: &mut Vec<Effect>,
    ) {
        if now.late_us.is_empty() {
            return;
        }
        let [p50, p99_now] = now
            .late_us
            .clone()
            .quantiles([0.5, 0.99])
            .map_or([None; 2], |q| q.map(|v| Some(v as f64)));
        cols.push((col::ROUTER_LATE_P50_US, p50));
        cols.push((col::ROUTER_LATE_P99_US, p99_now));
        let goal = crate::net::router::LATE_GOAL_US;
        let late_kind = kind(&Warning::RouterLate(0));
        let warned = self.state.warnings.iter().any(|w| kind(w) == late_kind);
        // The verdict is over the lab's life and enough departures that a slow start-up
        // second (a thousand may leave in it) weighs under the 1 % a p99 lets through.
        let late = departures >= ROUTER_VERDICT_DEPARTURES && p99 > goal;
        if late && !warned {
            let line = format!(
                "[{t:.1}s] the delay router's departures are late by up to {p99} us (p99; goal < {goal} us){}: delays are shaped less exactly than configured",
                if now.realtime { "" } else { ", it runs without SCHED_FIFO (rootless, or the priority was refused)" }
            );
            fx.push(Effect::Log(line.clone()));
            self.notices.push(line);
        }
        self.hold_warning_of(late_kind, late.then_some(Warning::RouterLate(p99)), t, fx);
    }

    /// The server's handshakes are its own QUIC count, whole (`ServerStats::quic_since`): the
    /// built-in server over HTTP/3. An access log (Caddy's) says per request whether its
    /// connection resumed, over QUIC as over TCP, and keeps the full/resumed split.
    pub(super) fn server_counts_quic(&self) -> bool {
        self.quic && self.access.last.is_none()
    }

    /// The server's own handshakes between two of its reports: (TLS over TCP full and
    /// resumed, QUIC handshakes and Retries), each None where it does not count them or no
    /// time passed.
    #[allow(clippy::type_complexity)]
    pub(super) fn server_handshakes(
        &self,
        from: Option<&crate::target::config::ServerStats>,
        to: Option<&crate::target::config::ServerStats>,
    ) -> (Option<(u64, u64)>, Option<(u64, u64)>) {
        // An access log counts a full or resumed session per line: per request. Where a
        // connection carries many requests that is no count of handshakes (a caddy HTTP/3
        // run wrote 197 full handshakes/s over 4 connections).
        let k = &self.state.knobs;
        let per_request = self.access.last.is_some()
            && (self.quic || k.streams.is_some() || k.requests_per_conn.is_some_and(|n| n > 1));
        match (from, to) {
            (Some(a), Some(b)) if self.server_counts_quic() => (None, b.quic_since(a)),
            (Some(a), Some(b)) if k.resumed.is_some() && !per_request => {
                (b.handshakes_since(a), None)
            }
            _ => (None, None),
        }
    }

    /// The server's own count of its TLS handshakes over TCP in the run (full, resumed), the
    /// start-up check's left out; None without TLS, over HTTP/3 (`quic_crosscheck`), or
    /// without the server's count.
    fn run_server_tls(&self) -> Option<(u64, u64)> {
        self.state.knobs.resumed?;
        if self.server_counts_quic() {
            return None;
        }
        let last = self.server_last.as_ref()?;
        Some((
            last.tls_full
                .saturating_sub(self.server_handshakes_not_load),
            last.tls_resumed,
        ))
    }

    /// The server's handshakes over the run against the clients': the resumed share each
    /// counted (the server per handshake, or per access-log line: per request), which must
    /// agree within `crosscheck::RESUMED_SHARE_POINTS`. The line for run.log; None without
    /// TLS or the server's count.
    pub fn tls_crosscheck(&self) -> Option<String> {
        let (sf, sr) = self.run_server_tls()?;
        let (cf, cr) = (self.run.handshakes_full, self.run.handshakes_resumed);
        let share = |f: u64, r: u64| crate::model::HandshakeTotals::share(f, r).map(|s| s * 100.0);
        let (cs, ss) = (share(cf, cr)?, share(sf, sr)?);
        let off = (ss - cs).abs() > crosscheck::RESUMED_SHARE_POINTS;
        // An access log has a line per request, not per handshake (over keep-alive and
        // HTTP/2 many a connection): its counts are requests on full and resumed sessions.
        let server = if self.access.last.is_some() {
            format!("the server's access log {sf} + {sr} requests on full + resumed sessions ({ss:.1}%, per request)")
        } else {
            format!("server {sf} + {sr} ({ss:.1}%)")
        };
        Some(format!(
            "cross-check: client counted {cf} full + {cr} resumed handshakes ({cs:.1}% resumed), {server}{}",
            if off {
                format!(" DISAGREE (> {} points)", crosscheck::RESUMED_SHARE_POINTS)
            } else {
                String::new()
            }
        ))
    }

    /// Over HTTP/3, the server's own count of its QUIC handshakes in the run (the start-up
    /// check's left out) against the clients' completed ones, judged only when the run's drops
    /// identity (`drops`) says nothing was dropped (`model::udp_drops::QuicHandshakes`); its
    /// Display is run.log's line. None over TCP or without the built-in server's count.
    pub fn quic_handshakes(&self, drops: Option<UdpDrops>) -> Option<QuicHandshakes> {
        let q = self
            .run_quic
            .as_ref()
            .filter(|_| self.server_counts_quic())?;
        let st = self.server_last.as_ref().filter(|_| self.server_reports)?;
        Some(QuicHandshakes {
            client: q.handshakes(),
            server: st.h3_handshakes.saturating_sub(self.h3_check_handshakes),
            drops,
            tol_pct: crosscheck::TOLERANCE_PCT,
        })
    }

    /// [`LabCore::quic_handshakes`]'s line without the drops identity (not judged); the run's
    /// end judges it with the identity.
    pub fn quic_crosscheck(&self) -> Option<String> {
        self.quic_handshakes(None).map(|h| h.to_string())
    }

    /// Webmonitor's validation (seed 002 Table 9): the server's own count of responses over
    /// the run against the clients'. Once per run (a second call finds nothing new to count);
    /// the line for run.log, None without the server's count.
    pub fn final_crosscheck(&mut self) -> Option<String> {
        if self.final_check.is_some() {
            return None;
        }
        let st = self.server_last.as_ref()?;
        let (c, sv) = (self.run.responses, st.responses);
        let diff = crosscheck::signed_diff_pct(sv as f64, c as f64).unwrap_or(0.0);
        self.final_check = Some((c, sv, diff));
        let verdict = crosscheck::ResponsesVerdict::judge(
            sv,
            c,
            self.run.attempts + self.run.requests,
            self.run.response_timeouts,
            self.access_log_issue().map(|i| i.to_string()),
        );
        let line = format!("cross-check: {verdict}");
        self.final_verdict = Some(verdict);
        Some(line)
    }

    /// The run's totals: every worker report's counts, the server's, the SYNs pcap saw over
    /// the run (from `last_probe`, the sample after the drain; else the last row's, when pcap
    /// counted) and the clients' kernels' connects.
    pub fn run_totals(
        &self,
        last_probe: Option<&crate::probe::ProbeSample>,
        client_active_opens: Option<u64>,
    ) -> Totals {
        let store = &self.state.store;
        let (syn_total, syn_retrans) = match last_probe {
            Some(p) if p.syn_source != crate::probe::SynSource::Estimated => {
                (p.m.syn_in_total, p.m.syn_retrans_total)
            }
            Some(_) => (None, None),
            None => (
                (store.last(col::SYN_IN_ESTIMATED) == Some(0.0))
                    .then(|| store.last(col::SYN_IN_TOTAL))
                    .flatten(),
                None,
            ),
        };
        let unfinished = self.run_unfinished.values().sum();
        let mut totals = Totals::of(&self.run, Default::default(), unfinished);
        totals.server_responses = self.final_check.map(|(_, sv, _)| sv);
        if let (Some(tls), Some((full, resumed))) = (totals.tls.as_mut(), self.run_server_tls()) {
            tls.server_full = Some(full);
            tls.server_resumed = Some(resumed);
        }
        totals.syn_in = syn_total.map(|v| v as u64);
        totals.syn_retrans = syn_retrans.map(|v| v as u64);
        totals.client_active_opens = client_active_opens;
        totals
    }
}

/// The load side's processes together (workers, the delay router's latest figure when there
/// is one: it reports every 500 ms, rows come more often; the controller), % of one core; None
/// when the workers or the controller were not measured in the row.
fn load_cpu(cols: &[(Col, Option<f64>)], router: Option<f64>) -> Option<f64> {
    let get = |c: Col| cols.iter().find(|(k, _)| *k == c).and_then(|(_, v)| *v);
    let (workers, controller) = (get(col::WORKER_CPU)?, get(col::CONTROLLER_CPU)?);
    Some(workers + controller + router.unwrap_or(0.0))
}

/// What the rolling cross-check counts as a connection attempt's first packet at the server.
#[derive(Debug, Clone, Copy)]
enum FirstPackets {
    Syns,
    Initials,
}

impl FirstPackets {
    fn name(self) -> &'static str {
        match self {
            FirstPackets::Syns => "pcap first SYNs",
            FirstPackets::Initials => "pcap first QUIC Initials",
        }
    }

    fn per_s(self) -> &'static str {
        match self {
            FirstPackets::Syns => "first SYN/s",
            FirstPackets::Initials => "first Initial/s",
        }
    }

    fn repeats(self) -> &'static str {
        match self {
            FirstPackets::Syns => "retries",
            FirstPackets::Initials => "repeats",
        }
    }
}
