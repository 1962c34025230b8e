//! What the lab is doing now, from the last few seconds of the workers' reports: whether the
//! client is the limit (judged over a window long enough not to flicker), the latency of the
//! last second with what it is over, and the warnings that hold while their condition holds
//! and then go, each raising and clearing said in run.log and events.csv.

use super::{Effect, LabCore};
use crate::lab::client_agg::{ClientTotals, LoadShape};
use crate::lab::state::{LiveLatency, Warning};
use crate::load::protocol::StatsDelta;
use crate::metrics::hist::HistDelta;
use crate::metrics::store::EventKind;
use crate::model::col;
use crate::model::Counters;
use crate::probe::accesslog::{self, LogIssue};
use std::collections::VecDeque;
use std::mem::Discriminant;

/// The window the client-bound judgement looks back over: a few seconds, so a rate change or
/// one late 100 ms report does not raise it, and it goes within seconds of its cause.
pub const JUDGE_S: f64 = 3.0;
/// The window the live latency covers.
pub const LATENCY_S: f64 = 1.0;
/// How long before an access-log sample the clients' count it must hold is taken: the log
/// is read every 100 ms and the workers report every 100 ms, so a response received this long
/// before the read was logged by then (a server logs a response once it has sent it).
pub const LOG_GRACE_S: f64 = 0.5;
/// A warning whose condition stopped holding goes after this long without it (no flicker at
/// the edge of a condition).
pub const CLEAR_AFTER_S: f64 = 2.0;

/// When each live warning (by its variant) last held, and when run.log last said it.
#[derive(Default)]
pub(super) struct WarnTimes {
    held: Vec<(Discriminant<Warning>, f64)>,
    logged: Vec<(Discriminant<Warning>, f64)>,
}

/// A warning that holds is said again in run.log with its figures of the time, at most this
/// often (its first and last lines alone would hide how it grew).
pub const RESAY_AFTER_S: f64 = 10.0;

/// The workers' reports of the last `JUDGE_S` seconds, stamped with when they came.
#[derive(Default)]
pub(super) struct Recent {
    reports: VecDeque<(f64, Box<StatsDelta>)>,
    /// The sums the judgement is made over, reset and refilled at each row (their
    /// histograms are not allocated anew each time).
    judged: ClientTotals,
}

impl Recent {
    pub(super) fn push(&mut self, t: f64, d: Box<StatsDelta>) {
        self.reports.push_back((t, d));
        while self.reports.front().is_some_and(|r| r.0 < t - JUDGE_S) {
            self.reports.pop_front();
        }
    }

    fn since<'a>(
        &'a self,
        t0: f64,
        keep: &'a dyn Fn(u32) -> bool,
    ) -> impl Iterator<Item = &'a StatsDelta> + 'a {
        self.reports
            .iter()
            .filter(move |(t, d)| *t > t0 && keep(d.worker))
            .map(|(_, d)| d.as_ref())
    }

    /// The counts (no latencies) of the reports since `t0`.
    fn totals(&mut self, t0: f64) -> &ClientTotals {
        self.judged.reset();
        for (_, d) in self.reports.iter().filter(|(t, _)| *t > t0) {
            self.judged.add_counts(d);
        }
        &self.judged
    }

    /// The responses the reports since `t0` count.
    fn responses(&self, t0: f64) -> u64 {
        self.since(t0, &|_| true).map(|d| d.counts.responses).sum()
    }

    /// The latency of the reports since `t0` of the workers `keep` picks.
    fn latency(&self, t0: f64, now: f64, keep: &dyn Fn(u32) -> bool) -> LiveLatency {
        let shares = self
            .since(t0, keep)
            .map(|d| (&d.counts, &d.connect_us, Some(&d.handshake_us), &d.total_us));
        live_latency(shares, (now - t0).max(0.0))
    }

    /// The latency of request class `name` in the reports since `t0`.
    fn class_latency(&self, t0: f64, now: f64, name: &str) -> LiveLatency {
        let shares = self
            .since(t0, &|_| true)
            .flat_map(|d| d.classes.iter().filter(|c| c.name == name))
            .map(|c| (&c.counts, &c.connect_us, None, &c.total_us));
        live_latency(shares, (now - t0).max(0.0))
    }
}

/// One report's (or class share's) counts with its connect, handshake and total latencies.
type Share<'a> = (
    &'a Counters,
    &'a HistDelta,
    Option<&'a HistDelta>,
    &'a HistDelta,
);

/// The latency of reports (or class shares of them) over `window_s`, with what it is over.
fn live_latency<'a>(shares: impl Iterator<Item = Share<'a>>, window_s: f64) -> LiveLatency {
    let shares: Vec<_> = shares.collect();
    // Sized once: the pairs of a second of reports at 40,000 connections/s grew these by
    // doubling every row, a third of the controller's time on the load's CPU (issue 44).
    let sized = |n: usize| HistDelta(Vec::with_capacity(n));
    let mut connect = sized(shares.iter().map(|s| s.1 .0.len()).sum());
    let mut handshake = sized(shares.iter().map(|s| s.2.map_or(0, |h| h.0.len())).sum());
    let mut total = sized(shares.iter().map(|s| s.3 .0.len()).sum());
    let mut live = LiveLatency {
        window_s,
        ..Default::default()
    };
    for (c, connect_us, handshake_us, total_us) in shares {
        connect.0.extend_from_slice(&connect_us.0);
        if let Some(h) = handshake_us {
            handshake.0.extend_from_slice(&h.0);
        }
        total.0.extend_from_slice(&total_us.0);
        live.connects += c.established;
        live.responses += c.responses;
        live.connect_timeouts += c.connect_timeouts;
        live.other_errors += c.errors() - c.connect_timeouts;
    }
    let ms = |h: &mut HistDelta| {
        h.quantiles([0.5, 0.9, 0.99])
            .map(|qs| qs.map(|us| us as f64 / 1000.0))
    };
    live.connect = ms(&mut connect);
    live.total = ms(&mut total);
    live.handshake = ms(&mut handshake);
    live
}

/// TLS handshakes that failed in `c` (the reports of the last `JUDGE_S`), by kind, with why:
/// the clients' words, else (`run.log says why`) those logged. Over HTTP/3 (`quic`: what the
/// probes saw of the server's socket meanwhile) they are QUIC handshakes, and a timeout's why
/// is the socket's drops when it dropped datagrams, or else what to look at.
fn tls_failing(c: &Counters, why: Option<&str>, quic: Option<SocketDrops>) -> Option<Warning> {
    let kinds: Vec<String> = [
        (c.bad_certificates, "bad certificates"),
        (c.tls_alerts, "alerts"),
        (c.tls_protocol_errors, "protocol errors"),
        (c.handshake_timeouts, "timeouts"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, k)| format!("{n} {k}"))
    .collect();
    if kinds.is_empty() {
        return None;
    }
    let only_timeouts = kinds.len() == 1 && c.handshake_timeouts > 0;
    let (what, kinds) = match quic {
        Some(_) if only_timeouts => (
            "QUIC handshakes timing out",
            c.handshake_timeouts.to_string(),
        ),
        Some(_) => ("QUIC handshakes failing", kinds.join(", ")),
        None => ("TLS handshakes failing", kinds.join(", ")),
    };
    let why = match (quic, why) {
        (Some(d), w) if c.handshake_timeouts > 0 && (d.dropping() || w.is_none()) => d.why(),
        (_, Some(why)) => why.to_string(),
        (_, None) => "run.log says why".to_string(),
    };
    Some(Warning::TlsFailing {
        what,
        kinds: format!("{kinds} in the last {JUDGE_S} s"),
        why,
    })
}

/// Resumption asked (`asked`, a share) while connections of the last seconds (`recent`)
/// started before any session ticket had come, and so went full: said, or the resumed share
/// reads 0 for as long as handshakes time out (a flood) with no word of why.
fn resume_short(asked: Option<f64>, recent: &ClientTotals) -> Option<Warning> {
    let asked = asked.filter(|&a| a > 0.0)?;
    let q = recent.quic.as_ref()?;
    (q.before_first_ticket > 0).then_some(Warning::ResumeShort {
        asked_pct: asked * 100.0,
        window_s: JUDGE_S,
        resumed: recent.counts.handshakes_resumed,
        full: recent.counts.handshakes_full,
        before_ticket: q.before_first_ticket,
    })
}

/// What the probes saw of the server's UDP socket over the recent rows (per s): the
/// namespace's Udp RcvbufErrors and the port's socket drops (sock_diag); None: not measured.
#[derive(Debug, Clone, Copy, Default)]
struct SocketDrops {
    rcvbuf_errors: Option<f64>,
    port_drops: Option<f64>,
}

impl SocketDrops {
    fn dropping(&self) -> bool {
        [self.rcvbuf_errors, self.port_drops]
            .into_iter()
            .flatten()
            .any(|v| v >= 0.5)
    }

    /// Why QUIC handshakes time out, as far as the socket says.
    fn why(&self) -> String {
        let n = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        if self.dropping() {
            format!(
                "the server's socket is dropping datagrams at its full receive buffer (Udp RcvbufErrors {}/s, the socket's drops {}/s), Initials and Finished flights among them",
                n(self.rcvbuf_errors),
                n(self.port_drops)
            )
        } else if self.rcvbuf_errors.or(self.port_drops).is_some() {
            format!("the server's socket dropped no datagram in the last {JUDGE_S} s: look at the server's CPU, the paths' loss and load.timeout")
        } else {
            "no probe says whether the server's socket drops datagrams: look at udp_rcvbuf_errors_per_s, the server's CPU and the paths' loss".into()
        }
    }
}

/// A warning's kind (its variant, whatever it carries).
pub(super) fn kind(w: &Warning) -> Discriminant<Warning> {
    std::mem::discriminant(w)
}

impl LabCore {
    /// At each row: the live latency and the warnings judged over the recent reports.
    pub(super) fn judge_live(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        let t0 = now_s - LATENCY_S;
        let (recent, slots) = (&self.recent, &self.slots);
        self.state.live.all = recent.latency(t0, now_s, &|_| true);
        self.state.live.paths = self
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let on_path = |w: u32| slots.get(w as usize).and_then(|s| s.path) == Some(i);
                (p.name.clone(), recent.latency(t0, now_s, &on_path))
            })
            .collect();
        self.state.live.classes = self
            .classes
            .iter()
            .map(|k| (k.name.clone(), recent.class_latency(t0, now_s, &k.name)))
            .collect();
        let recent = self.recent.totals(now_s - JUDGE_S);
        let load = LoadShape {
            mode: self.state.knobs.mode,
            timeout_s: self.state.knobs.timeout.as_secs_f64(),
        };
        let why = recent.client_bound(&load);
        let (ports, fds) = (
            recent.counts.addr_not_avail > 0,
            recent.counts.out_of_fds > 0,
        );
        let store = &self.state.store;
        let drops = self.quic.then(|| SocketDrops {
            rcvbuf_errors: store.mean_since(col::UDP_RCVBUF_ERRORS_PER_S, now_s - JUDGE_S),
            port_drops: store.mean_since(col::PORT_UDP_DROPS_PER_S, now_s - JUDGE_S),
        });
        let tls = tls_failing(&recent.counts, self.tls_failure.as_deref(), drops);
        let short = resume_short(self.state.knobs.resumed, recent);
        let bound = (!why.is_empty()).then_some(Warning::ClientBound(why));
        self.hold_warning_of(kind(&Warning::ClientBound(Vec::new())), bound, now_s, fx);
        let ports = ports.then_some(Warning::PortsRunningOut);
        self.hold_warning_of(kind(&Warning::PortsRunningOut), ports, now_s, fx);
        let fds = fds.then_some(Warning::OutOfFds);
        self.hold_warning_of(kind(&Warning::OutOfFds), fds, now_s, fx);
        let tls_kind = kind(&Warning::TlsFailing {
            what: "",
            kinds: String::new(),
            why: String::new(),
        });
        self.hold_warning_of(tls_kind, tls, now_s, fx);
        let short_kind = kind(&Warning::ResumeShort {
            asked_pct: 0.0,
            window_s: 0.0,
            resumed: 0,
            full: 0,
            before_ticket: 0,
        });
        self.hold_warning_of(short_kind, short, now_s, fx);
        if self.access.last.is_some() {
            let issue = self.access_log_issue().map(Warning::AccessLog);
            let k = kind(&Warning::AccessLog(LogIssue::Unparsed {
                unparsed: 0,
                lines: 0,
            }));
            self.hold_warning_of(k, issue, now_s, fx);
        }
    }

    /// Why the access log's count is not to be trusted now, if it is not: its lines unparsed
    /// or the server's own, or behind what the clients had received `LOG_GRACE_S` before it
    /// was read by more than the requests in flight.
    pub(super) fn access_log_issue(&self) -> Option<LogIssue> {
        let c = self.access.last?;
        if let Some(i) = c.issue() {
            return Some(i);
        }
        let since = self.recent.responses(self.access.last_at_s - LOG_GRACE_S);
        let before = self.run.responses.saturating_sub(since);
        let in_flight = self.run_unfinished.values().map(|p| p.requests).sum();
        accesslog::lag_issue(before, c.lines, in_flight)
    }

    /// A warning of `w`'s kind holds while `w` is Some (its text follows the latest reason),
    /// and goes once it has been None for `CLEAR_AFTER_S`. Raising and clearing are logged
    /// and kept as events (events.csv, not the charts); `kind` is `w`'s variant.
    pub(super) fn hold_warning_of(
        &mut self,
        kind: Discriminant<Warning>,
        w: Option<Warning>,
        now_s: f64,
        fx: &mut Vec<Effect>,
    ) {
        let at = self
            .state
            .warnings
            .iter()
            .position(|o| std::mem::discriminant(o) == kind);
        match (w, at) {
            (Some(w), Some(i)) => {
                let said = self.warned.logged.iter().find(|(k, _)| *k == kind);
                let due = said.is_none_or(|(_, t)| now_s - t >= RESAY_AFTER_S);
                if due && w.to_string() != self.state.warnings[i].to_string() {
                    fx.push(Effect::Log(format!("[{now_s:.1}s] warning still: {w}")));
                    self.warned.logged.retain(|(k, _)| *k != kind);
                    self.warned.logged.push((kind, now_s));
                }
                self.state.warnings[i] = w;
                self.warned.held.retain(|(k, _)| *k != kind);
                self.warned.held.push((kind, now_s));
            }
            (Some(w), None) => {
                fx.push(Effect::Log(format!("[{now_s:.1}s] warning: {w}")));
                self.warned.logged.retain(|(k, _)| *k != kind);
                self.warned.logged.push((kind, now_s));
                self.state
                    .store
                    .event(now_s, EventKind::Warning, format!("warning: {w}"));
                self.state.warnings.push(w);
                self.warned.held.retain(|(k, _)| *k != kind);
                self.warned.held.push((kind, now_s));
            }
            (None, Some(i)) => {
                let last = self
                    .warned
                    .held
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map_or(f64::NEG_INFINITY, |x| x.1);
                if now_s - last >= CLEAR_AFTER_S {
                    let w = self.state.warnings.remove(i);
                    fx.push(Effect::Log(format!("[{now_s:.1}s] warning cleared: {w}")));
                    self.state
                        .store
                        .event(now_s, EventKind::Warning, format!("cleared: {w}"));
                }
            }
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Input, LabCore};
    use crate::lab::state::Warning;
    use crate::load::protocol::StatsDelta;
    use crate::model::Counters;
    use crate::probe::accesslog::{LogIssue, StatusCounts};

    fn core() -> LabCore {
        let knobs = crate::lab::knobs::knobs_of(&crate::scenario::default_scenario());
        LabCore::new("t", knobs, Vec::new(), 0.2)
    }

    fn responses(n: u64) -> Input {
        Input::Worker(
            0,
            Box::new(StatsDelta {
                interval_s: 0.1,
                counts: Counters {
                    attempts: n,
                    established: n,
                    requests: n,
                    responses: n,
                    ..Default::default()
                },
                ..Default::default()
            }),
        )
    }

    /// Folds `inputs` at their times, then a row at `row_s`: the warnings and run.log's lines.
    fn judged(inputs: Vec<(f64, Input)>, row_s: f64) -> (Vec<Warning>, Vec<String>) {
        let mut c = core();
        let mut fx = Vec::new();
        for (t, i) in inputs {
            c.fold(i, t, &mut fx);
        }
        c.fold(Input::Tick, row_s, &mut fx);
        let logs = fx
            .into_iter()
            .filter_map(|e| match e {
                super::Effect::Log(l) => Some(l),
                _ => None,
            })
            .collect();
        (c.state().warnings.clone(), logs)
    }

    /// `U` to 100 % during a QUIC flood: no ticket comes while handshakes time out, so the
    /// resumed share reads 0; the note says why (before: nothing for ~30 s).
    #[test]
    fn resumption_without_tickets_yet_is_said() {
        let mut c = core();
        c.state.knobs.resumed = Some(1.0);
        let quic = crate::quic::stats::QuicDelta {
            before_first_ticket: 40,
            ..Default::default()
        };
        let d = Input::Worker(
            0,
            Box::new(StatsDelta {
                interval_s: 0.1,
                counts: Counters {
                    attempts: 50,
                    established: 10,
                    handshakes_full: 10,
                    ..Default::default()
                },
                quic: Some(quic),
                ..Default::default()
            }),
        );
        let mut fx = Vec::new();
        c.fold(d, 0.1, &mut fx);
        c.fold(Input::Tick, 0.2, &mut fx);
        let w = c.state().warnings.clone();
        assert!(
            w.iter().any(|w| matches!(
                w,
                Warning::ResumeShort {
                    resumed: 0,
                    full: 10,
                    before_ticket: 40,
                    ..
                }
            )),
            "{w:?}"
        );
        assert!(w.iter().any(|w| w.to_string().starts_with(
            "resumption asked for 100 %: 0 of 10 QUIC handshakes in the last 3 s resumed; 40 connections"
        )));
    }

    /// A warning that holds is said again with its new figures, at most every
    /// `RESAY_AFTER_S`, and not when its text stands still.
    #[test]
    fn a_held_warning_is_said_again_with_its_figures_every_ten_seconds() {
        let mut c = core();
        let w = |n: u64| {
            Warning::AccessLog(LogIssue::Internal {
                internal: n,
                lines: n,
            })
        };
        let kind = std::mem::discriminant(&w(0));
        let mut lines = Vec::new();
        for (t, n) in [
            (1.0, 10),
            (5.0, 20),
            (11.0, 30),
            (12.0, 40),
            (21.0, 40),
            (22.0, 50),
        ] {
            let mut fx = Vec::new();
            c.hold_warning_of(kind, Some(w(n)), t, &mut fx);
            lines.extend(fx.into_iter().filter_map(|e| match e {
                super::Effect::Log(l) => Some(l),
                _ => None,
            }));
        }
        let said: Vec<&str> = lines.iter().map(|l| &l[..l.find(':').unwrap()]).collect();
        assert_eq!(
            said,
            [
                "[1.0s] warning",
                "[11.0s] warning still",
                "[22.0s] warning still"
            ],
            "{lines:?}"
        );
        assert!(lines[1].contains("30 of 30"), "{lines:?}");
    }

    #[test]
    fn a_log_the_server_count_cannot_trust_is_warned_of_live_in_the_tui_and_run_log() {
        // Every line taken for the server's own (as a plain listener's tls:- once was).
        let own = StatusCounts {
            internal: 1000,
            ..Default::default()
        };
        let (w, logs) = judged(
            vec![(0.1, responses(1000)), (0.15, Input::AccessLog(0.15, own))],
            0.2,
        );
        assert!(
            w.iter().any(|w| matches!(
                w,
                Warning::AccessLog(LogIssue::Internal { internal: 1000, .. })
            )),
            "{w:?}"
        );
        assert!(
            logs.iter()
                .any(|l| l.contains("warning: access log: 1000 of 1000 lines are the server's own")),
            "{logs:?}"
        );
        // Lines behind what the clients had received half a second before the read.
        let behind = StatusCounts {
            lines: 100,
            s2xx: 100,
            ..Default::default()
        };
        let (w, _) = judged(
            vec![(0.1, responses(1000)), (0.9, Input::AccessLog(0.9, behind))],
            1.0,
        );
        assert!(
            w.iter().any(|w| matches!(
                w,
                Warning::AccessLog(LogIssue::Lagging {
                    client: 1000,
                    server: 100,
                    ..
                })
            )),
            "{w:?}"
        );
        // A log that holds every response: no warning.
        let all = StatusCounts {
            lines: 1000,
            s2xx: 1000,
            ..Default::default()
        };
        let (w, _) = judged(
            vec![(0.1, responses(1000)), (0.9, Input::AccessLog(0.9, all))],
            1.0,
        );
        assert!(
            !w.iter().any(|w| matches!(w, Warning::AccessLog(_))),
            "{w:?}"
        );
    }
}
