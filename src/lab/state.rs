//! The lab's state, owned by the lab's core (`lab::core`) and read by the TUI and the headless
//! writers: knob values, the time-series store, warnings, captions; the commands that change
//! the knobs and what became of them. The knob arithmetic itself is `lab::knobs`.

use super::knobs::{Knobs, Reply};
use crate::metrics::store::EventKind;
use crate::metrics::store::Store;

/// A warning shown in the status line and recorded in the results.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// Why the client limited the open window, as of now.
    ClientBound(Vec<super::client_agg::ClientBound>),
    CrossCheck(String),
    NoPcap,
    /// The scenario's network lab could not be built (why, in short).
    NoLab(String),
    PortsRunningOut,
    OutOfFds,
    /// A child the run depends on died: who and how ("the delay router (pid 7) was killed by
    /// signal 9 (SIGKILL)").
    ChildDied(crate::model::death::Death),
    /// The delay router could not keep up: its receive rings overflowed (loss nobody asked for).
    RouterBehind,
    /// The router's departures were late past its goal (p99, microseconds).
    RouterLate(u64),
    /// The server's access log is not a count synlab can trust (unparsed, internal, lagging).
    AccessLog(crate::probe::accesslog::LogIssue),
    /// TLS handshakes failing in the last seconds: what fails ("TLS handshakes failing",
    /// over HTTP/3 "QUIC handshakes timing out"), by kind with the window counted ("500 bad
    /// certificates in the last 3 s"), and why (the clients' words, the server socket's drops).
    TlsFailing {
        what: &'static str,
        kinds: String,
        why: String,
    },
    /// What a load worker said (one of each kind), for the rest of the run.
    Worker(crate::load::protocol::WorkerNotice),
    /// Resumption asked, but connections started before any session ticket had come went
    /// full (over HTTP/3 a ticket comes only with a handshake that completes): the asked
    /// share in %, and the last `window_s` seconds' resumed, full and ticketless handshakes.
    ResumeShort {
        asked_pct: f64,
        window_s: f64,
        resumed: u64,
        full: u64,
        before_ticket: u64,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::ClientBound(why) => write!(
                f,
                "CLIENT-BOUND: {}",
                super::client_agg::client_bound_line(why)
            ),
            Warning::CrossCheck(what) => write!(f, "cross-check: {what}"),
            Warning::NoPcap => write!(f, "no pcap: SYN/s estimated"),
            Warning::NoLab(what) => write!(f, "network lab off: {what}"),
            Warning::PortsRunningOut => write!(f, "ephemeral ports exhausted"),
            Warning::OutOfFds => write!(f, "out of file descriptors"),
            Warning::ChildDied(what) => write!(f, "{what}"),
            Warning::RouterBehind => write!(f, "delay router overloaded: frames dropped"),
            Warning::AccessLog(why) => write!(f, "{why}"),
            Warning::Worker(n) => write!(f, "load: {n}"),
            Warning::ResumeShort {
                asked_pct,
                window_s,
                resumed,
                full,
                before_ticket,
            } => write!(
                f,
                "resumption asked for {asked_pct:.0} %: {resumed} of {} QUIC handshakes in the last {window_s} s resumed; {before_ticket} connections started before any session ticket had come and went full (a ticket comes only with a handshake that completes)",
                resumed + full,
            ),
            Warning::TlsFailing { what, kinds, why } => write!(f, "{what} ({kinds}): {why}"),
            Warning::RouterLate(p99) => write!(
                f,
                "delay router late: p99 {p99} us (goal < {} us)",
                crate::net::router::LATE_GOAL_US
            ),
        }
    }
}

/// Where the server and the load run, and where the server's receive processing is done: the
/// status line's and run.log's account of the CPU split.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuView {
    /// The server's CPUs and the load's (empty: not pinned; both empty: no split).
    pub server: Vec<usize>,
    pub load: Vec<usize>,
    /// Who runs where and what the CPU figures then are (`Placement::describe`).
    pub line: String,
    /// The steering now (None: no lab split to steer by).
    pub steer: Option<crate::model::Steer>,
    /// Why the kernel would not steer as asked (the lab then runs as `sender`).
    pub steer_refused: Option<String>,
}

impl CpuView {
    /// The status line's short form: `server cpu1 · load cpu0 · rx on server`.
    pub fn short(&self) -> String {
        use crate::model::cpus::cpu_list;
        if self.server.is_empty() {
            return "no split".into();
        }
        let mut s = format!(
            "server cpu{} · load cpu{}",
            cpu_list(&self.server),
            if self.load.is_empty() {
                "*".to_string()
            } else {
                cpu_list(&self.load)
            }
        );
        match (self.steer, &self.steer_refused) {
            (Some(_), Some(_)) => s.push_str(" · rx on sender (refused)"),
            (Some(st), None) => s.push_str(&format!(" · rx on {st}")),
            (None, _) => {}
        }
        s
    }
}

/// The whole state the front ends read.
#[derive(Debug, Clone)]
pub struct LabState {
    pub scenario_name: String,
    /// "built-in event server on 127.0.0.1:41234" etc.
    pub target: String,
    /// "loopback (no shaping)", "router", "netem"...
    pub backend: String,
    /// Where the network lab runs ("root", "rootless (user namespace)"); empty without one.
    pub lab: String,
    /// Over TLS, what the clients speak ("TLS 1.3 X25519, tickets"); empty without TLS (the
    /// resumed share, a knob, is in `knobs`).
    pub tls: String,
    pub knobs: Knobs,
    pub store: Store,
    /// The scenario's thresholds judged on the session so far (TUI; empty without any).
    pub verdicts: Vec<crate::report::thresholds::Verdict>,
    /// Connect and total latency since the start, in fixed buckets (for `--metrics`).
    pub latency: Vec<(&'static str, crate::metrics::hist::Buckets)>,
    /// Seconds since the run started (of the latest sample).
    pub elapsed_s: f64,
    pub interval_s: f64,
    pub warnings: Vec<Warning>,
    /// The scenario's current caption (lessons).
    pub caption: Option<String>,
    /// The current step's checks of its caption's claims (`lab::core::checks` judges them).
    pub expect: Vec<crate::model::expect::Expect>,
    /// The last change made or refused, for the caption bar ("rate 1000 -> 1100/s").
    pub last_action: Option<Reply>,
    /// Step i of n, if the scenario has steps.
    pub step: Option<(usize, usize)>,
    /// Per-core CPU of the latest sample: (user, system, irq+softirq, idle) %.
    pub cpu_cores: Vec<[f64; 4]>,
    /// The server's CPUs apart from the load's, and the steering.
    pub cpus: CpuView,
    pub finished: bool,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run; the drivers stop and exit 130.
    pub interrupted: bool,
    /// The TUI's terminal went away (with `interrupted`): nothing more is drawn.
    pub terminal_gone: bool,
    /// The load runs again past the scenario's duration (`p` after it ended).
    pub free_play: bool,
    /// The latency of the last second, overall and per network path.
    pub live: Live,
    /// The kernel's own drop reasons (issue 48 item 2): counted as root, or why not, with the
    /// overflow cross-check; None before the probes say.
    pub kernel_reasons: Option<crate::model::kreasons::KernelView>,
}

/// Latency over the last second of the workers' reports, and what it is over. A percentile
/// of nothing is None (shown "-"), never the last value seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveLatency {
    /// Seconds it covers.
    pub window_s: f64,
    /// p50, p90, p99 in ms of the connects completed and the requests answered in the window.
    pub connect: Option<[f64; 3]>,
    pub total: Option<[f64; 3]>,
    /// Over TLS, the handshakes completed in the window (their own duration).
    pub handshake: Option<[f64; 3]>,
    /// What they are over (connects established, responses) and what they leave out (connects
    /// timed out; every other failure of a connect or a request).
    pub connects: u64,
    pub responses: u64,
    pub connect_timeouts: u64,
    pub other_errors: u64,
}

/// What the lab is doing now: the live latency, overall and per network path (name, figures).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    pub all: LiveLatency,
    pub paths: Vec<(String, LiveLatency)>,
    /// Each request class's, when the mix has two or more.
    pub classes: Vec<(String, LiveLatency)>,
}

impl LabState {
    pub fn new(scenario_name: &str, knobs: Knobs, interval_s: f64) -> Self {
        LabState {
            scenario_name: scenario_name.to_string(),
            target: String::new(),
            backend: "loopback (no shaping)".into(),
            lab: String::new(),
            tls: String::new(),
            knobs,
            store: Store::new(200_000),
            latency: Vec::new(),
            verdicts: Vec::new(),
            elapsed_s: 0.0,
            interval_s,
            warnings: Vec::new(),
            caption: None,
            expect: Vec::new(),
            last_action: None,
            step: None,
            cpu_cores: Vec::new(),
            cpus: CpuView::default(),
            finished: false,
            interrupted: false,
            terminal_gone: false,
            free_play: false,
            live: Live::default(),
            kernel_reasons: None,
        }
    }

    /// Adds a warning that holds for the rest of the run (no pcap, no lab, a child's death),
    /// once. The core raises and clears the others as their conditions come and go.
    pub fn warn(&mut self, w: Warning) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Records what became of a command: the caption bar's last action and, for a change, an
    /// event on the charts (at the latest sample's time).
    pub fn record(&mut self, reply: &Reply) {
        if let Reply::Applied(c) = reply {
            let t = self.elapsed_s;
            self.store.event(t, EventKind::Change, c.to_string());
        }
        self.last_action = Some(reply.clone());
    }
}
