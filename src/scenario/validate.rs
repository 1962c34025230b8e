//! Range and consistency checks on a parsed scenario. Each problem names its key path so the
//! loader can point at the line.

mod http3;

use super::gate::{check_metric, parse_bound, Aggregate, Over, RunMetric};
use super::model::*;
use crate::model::load_knob::{self, LoadKnob, LoadKnobError};
use std::path::Path;
use std::time::Duration;

mod problem;
pub use problem::{
    char_name, Got, Limit, Need, NotHere, SweepServer, Threshold, Timing, Unused, Written,
};

/// One problem: the key path it is at, its line once the file is read (None until then, or
/// for a key the file does not write), and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub key: String,
    pub line: Option<usize>,
    pub kind: ProblemKind,
}

/// What is wrong, typed where a lower layer's rule says it; its Display is the sentence a
/// person reads after the key (what is wrong, with what to do).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProblemKind {
    /// A load knob's limits, the ones its live key keeps.
    #[error(transparent)]
    Load(#[from] LoadKnobError),
    /// A network path knob's limits.
    #[error(transparent)]
    Path(#[from] crate::model::knob::KnobError),
    /// A `[sweep]` value that is not one of its parameter's.
    #[error(transparent)]
    SweepValue(#[from] crate::model::sweep::SweepValueError),
    /// A CPU list the machine cannot take.
    #[error(transparent)]
    Cpus(#[from] crate::model::cpus::CpuError),
    /// A step or sweep of requests per connection where no connection is kept.
    #[error("{what} needs keep-alive: set http = \"1.1\" (or \"2\") in [load]; with HTTP/1.0 each connection carries one request")]
    NeedsKeepAlive { what: &'static str },
    /// A threshold's metric or bound that cannot be read.
    #[error(transparent)]
    Gate(#[from] super::gate::GateError),
    /// A value outside its key's limits (`note`: why, or an example, with its punctuation).
    #[error("must be {limit}{got}{note}")]
    Limit {
        limit: Limit,
        got: Got,
        note: &'static str,
    },
    /// A key that needs another key, section or setting.
    #[error(transparent)]
    Needs(#[from] Need),
    /// A key another kind of target reads (or TLS on): it would be ignored here.
    #[error("{why} (this target is kind = \"{kind}\"): remove the key")]
    NotHere { why: NotHere, kind: &'static str },
    /// A value not written as its key takes it.
    #[error(transparent)]
    Written(#[from] Written),
    /// Times that do not fit together.
    #[error(transparent)]
    Timing(#[from] Timing),
    /// A sweep of the server that this server cannot follow.
    #[error(transparent)]
    SweepServer(#[from] SweepServer),
    /// A `[[threshold]]` rule of its own.
    #[error(transparent)]
    Threshold(#[from] Threshold),
    /// A key no point uses (a warning).
    #[error(transparent)]
    Unused(#[from] Unused),
    /// The `[network]` section's own rules (`net::spec`).
    #[error(transparent)]
    Network(#[from] crate::net::spec::SpecRule),
    /// A `[gate] good_statuses` entry that is not an HTTP status.
    #[error(transparent)]
    Status(#[from] super::gate::NotAStatus),
}

impl ProblemKind {
    /// A value outside `limit`: the value said when `got` is Some, `note` after.
    pub fn limit(limit: Limit, got: Got, note: &'static str) -> ProblemKind {
        ProblemKind::Limit { limit, got, note }
    }

    /// A key of another kind of target than `kind`.
    pub fn not_here(why: NotHere, kind: TargetKind) -> ProblemKind {
        ProblemKind::NotHere {
            why,
            kind: kind.name(),
        }
    }
}

impl Problem {
    pub fn new(key: impl Into<String>, kind: impl Into<ProblemKind>) -> Problem {
        Problem {
            key: key.into(),
            line: None,
            kind: kind.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.kind)
    }
}

/// The problems found so far.
#[derive(Debug, Default)]
pub struct Problems(Vec<Problem>);

impl Problems {
    /// A problem at `key`.
    fn add(&mut self, key: &str, kind: impl Into<ProblemKind>) {
        self.0.push(Problem::new(key, kind));
    }
}

/// "must be > 0".
fn positive() -> ProblemKind {
    ProblemKind::limit(Limit::Positive, Got::default(), "")
}

pub fn validate(s: &Scenario) -> Vec<Problem> {
    let mut bad = Problems::default();
    check_duration(s, &mut bad);
    check_target_limits(s, &mut bad);
    check_target_kind(s, &mut bad);
    check_target_foreign_keys(s, &mut bad);
    check_target_serves_workload(s, &mut bad);
    check_target_files(s, &mut bad);
    check_network(s, &mut bad);
    check_load(s, &mut bad);
    check_tls(s, &mut bad);
    http3::check_http3(s, &mut bad);
    check_probe(s, &mut bad);
    check_steps(s, &mut bad);
    check_sweep(s, &mut bad);
    check_analysis(s, &mut bad);
    if let Some(n) = s.output.repeat.filter(|n| !(1..=1000).contains(n)) {
        bad.add(
            "output.repeat",
            ProblemKind::limit(
                Limit::Range("1".into(), "1000".into()),
                Got::of(n),
                ": the trials of a repeated run (5 to 10 is usual)",
            ),
        );
    }
    bad.0
}

/// `[analysis] capacity`: a percentile and a time that can be met.
fn check_analysis(s: &Scenario, bad: &mut Problems) {
    let c = &s.analysis.capacity;
    if !(c.percentile > 0.0 && c.percentile < 100.0) {
        bad.add(
            "analysis.capacity.percentile",
            ProblemKind::limit(
                Limit::Between("0".into(), "100".into()),
                Got::of(c.percentile),
                ": a percentile (seed 004: 98)",
            ),
        );
    }
    if c.under.secs() <= 0.0 {
        bad.add(
            "analysis.capacity.under",
            ProblemKind::limit(Limit::Positive, Got::default(), ", e.g. \"100ms\""),
        );
    }
}

/// A measuring time under one sample of the probes: its window would hold no sample, and
/// every point would fail as measuring nothing.
fn shorter_than_a_sample(
    d: crate::model::units::Dur,
    sample: crate::model::units::Dur,
) -> ProblemKind {
    ProblemKind::limit(
        Limit::AtLeast(sample.to_string()),
        Got::of(d),
        ": one sample of the probes (probe.interval); anything shorter measures nothing",
    )
}

/// The run's length: positive and bounded.
fn check_duration(s: &Scenario, bad: &mut Problems) {
    if s.duration.secs() <= 0.0 {
        bad.add(
            "duration",
            ProblemKind::limit(Limit::Positive, Got::default(), ", e.g. \"60s\""),
        );
    }
    let sample = s.probe.interval;
    if s.duration.secs() > 0.0 && s.duration.secs() < sample.secs() {
        bad.add("duration", shorter_than_a_sample(s.duration, sample));
    }
    if s.duration.secs() > 24.0 * 3600.0 {
        bad.add(
            "duration",
            ProblemKind::limit(
                Limit::AtMost("24h".into()),
                Got::of(s.duration),
                ": every load loop is bounded in time",
            ),
        );
    }
}

/// The built-in server's sizes and times.
fn check_target_limits(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    let at_least_one = || ProblemKind::limit(Limit::AtLeast("1".into()), Got::default(), "");
    if t.backlog == 0 {
        bad.add("target.backlog", at_least_one());
    }
    if t.workers == 0 {
        bad.add("target.workers", at_least_one());
    }
    if t.max_workers < t.workers {
        bad.add(
            "target.max_workers",
            ProblemKind::limit(
                Limit::AtLeast(format!("target.workers ({})", t.workers)),
                Got::of(t.max_workers),
                "",
            ),
        );
    }
    if t.max_workers as usize > crate::target::core::MAX_WORKERS {
        bad.add(
            "target.max_workers",
            ProblemKind::limit(
                Limit::AtMost(crate::target::core::MAX_WORKERS.to_string()),
                Got::of(t.max_workers),
                "",
            ),
        );
    }
    // issue 47: the built-in server's HTTP/3.
    if t.http3 && (t.kind != TargetKind::Builtin || t.arch != crate::target::Arch::Event || !t.tls)
    {
        bad.add("target.http3", Need::Http3Server);
    }
    for (key, on) in [
        ("target.quic_retry", t.quic_retry),
        ("target.quic_early_data", t.quic_early_data),
        ("target.rcvbuf", t.rcvbuf.is_some()),
    ] {
        if on && !t.http3 {
            bad.add(key, Need::Http3Only);
        }
    }
    if t.quic_early_data && !t.tls_session_cache {
        bad.add("target.quic_early_data", Need::EarlyDataCache);
    }
    if let Some(b) = t.rcvbuf {
        if b.0 < 4096 || b.0 > i32::MAX as u64 / 2 {
            bad.add(
                "target.rcvbuf",
                ProblemKind::limit(
                    Limit::Range("4 KiB".into(), "1 GiB".into()),
                    Got::of(b.0),
                    "",
                ),
            );
        }
    }
    // issue 46: the built-in server's HTTP/2 stream limit.
    if t.max_streams == 0 || t.max_streams > crate::target::MAX_STREAMS {
        bad.add(
            "target.max_streams",
            ProblemKind::limit(
                Limit::Range("1".into(), crate::target::MAX_STREAMS.to_string()),
                Got::of(t.max_streams),
                ": the streams served at once per HTTP/2 connection",
            ),
        );
    }
    let linger_max = crate::target::linger::MAX_SECS_TO_LINGER;
    if t.lingering_close
        && (t.linger_timeout.0 < Duration::from_millis(1) || t.linger_timeout.0 > linger_max)
    {
        bad.add(
            "target.linger_timeout",
            ProblemKind::limit(
                Limit::Between("1ms".into(), "30s".into()),
                Got::of(t.linger_timeout),
                " (Apache waits 2s); or set lingering_close = false",
            ),
        );
    }
    if t.service_time.secs() > 10.0 {
        bad.add(
            "target.service_time",
            ProblemKind::limit(Limit::AtMost("10s".into()), Got::of(t.service_time), ""),
        );
    }
}

/// What the target's kind needs.
fn check_target_kind(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    match t.kind {
        TargetKind::Command if t.command.trim().is_empty() => {
            bad.add("target.command", Need::Command)
        }
        // synlab would wait for the server on a port of its own choosing while it listens on
        // its own, then say the server does not accept connections.
        TargetKind::Command if !t.command.contains("{port}") && t.port == 0 => {
            bad.add("target.command", Need::CommandPort)
        }
        TargetKind::Address => match t.address.parse::<std::net::SocketAddr>() {
            Err(_) => bad.add("target.address", Written::NotAddress(t.address.clone())),
            Ok(a) if !crate::load::validate::is_lab_address(a.ip()) => {
                bad.add("target.address", Written::NotHere(a))
            }
            Ok(a) if crate::load::validate::is_lab_range(a.ip()) => {
                bad.add("target.address", Written::LabRange(a))
            }
            Ok(_) => {}
        },
        _ => {}
    }
}

/// A key of another kind would be silently ignored: say so instead.
fn check_target_foreign_keys(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    if t.kind != TargetKind::Address && !t.address.is_empty() {
        bad.add(
            "target.address",
            ProblemKind::not_here(NotHere::OnlyKind("address"), t.kind),
        );
    }
    if t.kind != TargetKind::Command && !t.command.is_empty() {
        bad.add(
            "target.command",
            ProblemKind::not_here(NotHere::OnlyKind("command"), t.kind),
        );
    }
    for (key, used_by) in [
        ("access_log", !t.access_log.is_empty()),
        ("pid", t.pid.is_some()),
        ("mpm", t.mpm.is_some()),
        ("extra_config", !t.extra_config.is_empty()),
        ("extra_events", !t.extra_events.is_empty()),
    ] {
        let allowed = match key {
            "access_log" => matches!(t.kind, TargetKind::Command | TargetKind::Address),
            "pid" => t.kind == TargetKind::Address,
            "mpm" => t.kind == TargetKind::Apache,
            "extra_events" => t.kind == TargetKind::Nginx,
            _ => t.kind.is_real_server(),
        };
        if used_by && !allowed {
            let why = match (key, t.kind) {
                ("access_log", TargetKind::Builtin) => NotHere::BuiltinCounts,
                ("access_log", _) => NotHere::SynlabLogs,
                ("pid", _) => NotHere::SynlabStarts,
                ("mpm", _) => NotHere::OnlyKind("apache"),
                ("extra_events", _) => NotHere::NginxEvents,
                _ => NotHere::OnlyRealServer,
            };
            bad.add(&format!("target.{key}"), ProblemKind::not_here(why, t.kind));
        }
    }
}

/// A real server (nginx, Apache) serves only static files.
fn check_target_serves_workload(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    if t.kind.is_real_server() {
        if let Some(path) = dynamic_paths(s).first() {
            bad.add(
                "load.workload",
                Written::DynamicPath {
                    path: path.clone(),
                    kind: t.kind.name(),
                },
            );
        }
    }
}

/// The served files.
fn check_target_files(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    if t.files == FilesPreset::Explicit && t.sizes.is_empty() {
        bad.add("target.sizes", Need::ExplicitSizes);
    }
    if t.pareto_alpha <= 0.0 {
        bad.add(
            "target.pareto_alpha",
            ProblemKind::limit(
                Limit::Positive,
                Got::of(t.pareto_alpha),
                " (1.1-1.5 gives a heavy tail)",
            ),
        );
    }
}

/// The lab network, and the load's timeout against its slowest path.
fn check_network(s: &Scenario, bad: &mut Problems) {
    if let Some(net) = &s.network {
        if let Err(errs) = net.validate() {
            for e in errs {
                bad.add(&e.key, e.rule);
            }
        }
        let max_rtt = net.paths.iter().map(|p| p.rtt.secs()).fold(0.0, f64::max);
        if s.load.timeout.secs() <= max_rtt {
            bad.add(
                "load.timeout",
                Timing::TimeoutUnderRtt {
                    t: s.load.timeout.to_string(),
                    rtt_s: max_rtt,
                },
            );
        }
    }
}

/// `connections`: a pool of persistent connections a request rate is sent over.
fn check_pool(l: &super::model::LoadSpec, bad: &mut Problems) {
    let Some(n) = l.connections else {
        return;
    };
    let max = crate::model::limits::SOCKETS_MAX;
    if n == 0 || n > max {
        bad.add(
            "load.connections",
            ProblemKind::limit(
                Limit::Range("1".into(), max.to_string()),
                Got::of(n),
                ": the pool's persistent connections",
            ),
        );
    }
    if l.mode != Mode::Open {
        bad.add(
            "load.connections",
            Need::PoolOpen {
                mode: format!("{:?}", l.mode).to_lowercase(),
            },
        );
    }
    if l.http == HttpVersion::Http10 {
        bad.add("load.connections", Need::PoolKeepAlive);
    }
}

/// Requests per connection change live only where connections are kept (the rule the live key
/// follows, `Scenario::uses_keepalive`); `load.requests_per_conn` itself is read only then.
fn check_keepalive(s: &Scenario, bad: &mut Problems) {
    if s.uses_keepalive() {
        return;
    }
    let why = |what| ProblemKind::NeedsKeepAlive { what };
    for (i, st) in s.steps.iter().enumerate() {
        if st.requests_per_conn.is_some() {
            bad.add(
                &format!("step[{i}].requests_per_conn"),
                why("requests_per_conn"),
            );
        }
    }
    let rpc = Some(SweepParam::Load(LoadKnob::RequestsPerConn));
    if let Some(sw) = &s.sweep {
        if sw.kind() == rpc {
            bad.add("sweep.param", why("load.requests_per_conn"));
        }
        if sw.curves.iter().any(|c| c.kind() == rpc) {
            bad.add("sweep.curves.param", why("load.requests_per_conn"));
        }
    }
}

/// HTTP/2: streams per connection only over HTTP/2 (the limits are the knob's, above), and an
/// Apache that can speak it (mod_http2 refuses the prefork MPM).
fn check_http2(s: &Scenario, bad: &mut Problems) {
    // HTTP/3's streams per connection are the same knob (issue 47).
    let h2 = matches!(s.load.http, HttpVersion::Http2 | HttpVersion::Http3);
    let needs_h2 = |what: &'static str| Need::Http2 {
        what,
        http: if s.load.http == HttpVersion::Http11 {
            "1.1"
        } else {
            "1.0"
        },
    };
    if s.load.streams.is_some() && !h2 {
        bad.add("load.streams", needs_h2("streams"));
    }
    for (i, st) in s.steps.iter().enumerate() {
        if st.streams.is_some() && !h2 {
            bad.add(&format!("step[{i}].streams"), needs_h2("streams"));
        }
    }
    if let Some(sw) = s.sweep.as_ref().filter(|_| !h2) {
        let streams = Some(SweepParam::Load(LoadKnob::Streams));
        if sw.kind() == streams {
            bad.add("sweep.param", needs_h2("load.streams"));
        }
        if sw.curves.iter().any(|c| c.kind() == streams) {
            bad.add("sweep.curves.param", needs_h2("load.streams"));
        }
    }
    let mpm = s.target.mpm.unwrap_or_default();
    if h2 && s.target.kind == TargetKind::Apache && mpm == crate::scenario::ApacheMpm::Prefork {
        let key = if s.target.mpm.is_some() {
            "target.mpm"
        } else {
            "target.kind"
        };
        bad.add(key, Need::ThreadedMpm);
    }
}

/// The load generator's mode, sizes, workload mix and burst.
fn check_load(s: &Scenario, bad: &mut Problems) {
    let l = &s.load;
    // The live knobs' own limits: a scenario sets what a key could (the burst's two as a pair
    // below).
    for (k, v) in l.load_values() {
        if !matches!(k, LoadKnob::BurstRatio | LoadKnob::BurstFraction) {
            knob(k, v, k.key(), bad);
        }
    }
    if l.rate.is_none() && l.mode == Mode::Open {
        bad.add("load.rate", Need::OpenRate);
    }
    if l.timeout.secs() <= 0.0 {
        bad.add(
            "load.timeout",
            ProblemKind::limit(Limit::Positive, Got::default(), ", e.g. \"500ms\""),
        );
    }
    if l.workers == 0 || l.workers > 64 {
        bad.add(
            "load.workers",
            ProblemKind::limit(
                Limit::Range("1".into(), "64".into()),
                Got::of(l.workers),
                "",
            ),
        );
    }
    if l.response_timeout.secs() <= 0.0 {
        bad.add("load.response_timeout", positive());
    }
    check_pool(l, bad);
    check_keepalive(s, bad);
    check_http2(s, bad);
    if l.workload == Workload::Custom && l.mix.is_empty() {
        bad.add("load.mix", Need::CustomMix);
    }
    for (i, m) in l.mix.iter().enumerate() {
        if !m.path.starts_with('/') {
            bad.add(
                &format!("load.mix[{i}].path"),
                Written::NoSlash(m.path.clone()),
            );
        }
        // The path goes into the request line as written: a CR or LF would end it early,
        // a space split it.
        if let Some(c) = m.path.chars().find(|c| c.is_control() || c.is_whitespace()) {
            bad.add(
                &format!("load.mix[{i}].path"),
                Written::RequestLine {
                    path: m.path.clone(),
                    ch: c,
                },
            );
        }
        // A class names a column of the results (CSV, report): one line of visible text.
        if let Some(c) = m.class.chars().find(|c| c.is_control()) {
            bad.add(
                &format!("load.mix[{i}].class"),
                Written::ClassLine {
                    class: m.class.clone(),
                    ch: c,
                },
            );
        } else if !m.class.is_empty() && m.class.trim().is_empty() {
            bad.add(&format!("load.mix[{i}].class"), Written::ClassBlank);
        }
        if m.weight <= 0.0 || !m.weight.is_finite() {
            bad.add(&format!("load.mix[{i}].weight"), positive());
        }
    }
    if let Some(b) = &l.burst {
        check_burst(
            b.ratio,
            b.fraction.fraction(),
            "load.burst",
            ["ratio", "fraction"],
            bad,
        );
        if b.period.secs() <= 0.0 {
            bad.add(
                "load.burst.period",
                ProblemKind::limit(Limit::Positive, Got::default(), ", e.g. \"10s\""),
            );
        }
    }
}

/// TLS: the clients' `[load.tls]` against what the target serves.
fn check_tls(s: &Scenario, bad: &mut Problems) {
    use crate::tls::{KxGroup, ResumeBy, TlsVersion};
    let t = &s.target;
    let lab_cert = t.kind == TargetKind::Builtin || t.kind.is_real_server();
    if !t.tls || !lab_cert {
        let defaults = TargetSpec::default();
        for (key, set) in [
            ("tls_key", t.tls_key != defaults.tls_key),
            (
                "tls_session_cache",
                t.tls_session_cache != defaults.tls_session_cache,
            ),
            ("tls_tickets", t.tls_tickets != defaults.tls_tickets),
        ] {
            if set {
                let why = if t.tls {
                    NotHere::LabCert
                } else {
                    NotHere::OnlyTls
                };
                bad.add(&format!("target.{key}"), ProblemKind::not_here(why, t.kind));
            }
        }
    }
    let Some(l) = &s.load.tls else {
        return;
    };
    if !t.tls {
        bad.add(
            "load.tls",
            Need::TargetTls {
                kind: t.kind.name(),
            },
        );
    }
    // The name rustls sends and verifies: a DNS name or an IP address ("" sends none).
    if !l.sni.is_empty() && rustls::pki_types::ServerName::try_from(l.sni.as_str()).is_err() {
        bad.add("load.tls.sni", Written::ServerName(l.sni.clone()));
    }
    let hs = l.handshake_timeout.secs();
    if hs <= 0.0 || hs > 60.0 {
        bad.add(
            "load.tls.handshake_timeout",
            ProblemKind::limit(
                Limit::PositiveAtMost("60s"),
                Got::of(l.handshake_timeout),
                ", e.g. \"5s\"",
            ),
        );
    }
    if l.version == TlsVersion::V12 && l.group == KxGroup::X25519Mlkem768 {
        bad.add("load.tls.group", Need::Tls13Group);
    }
    if l.verify && !lab_cert && l.ca.is_empty() {
        bad.add(
            "load.tls.ca",
            Need::Ca {
                kind: t.kind.name(),
            },
        );
    }
    if t.tls && lab_cert && l.resumed > 0.0 {
        match l.resumption {
            ResumeBy::Ids if !t.tls_session_cache => {
                bad.add("load.tls.resumption", Need::SessionCache)
            }
            ResumeBy::Tickets if !t.tls_tickets && l.version == TlsVersion::V12 => {
                bad.add("load.tls.resumption", Need::Tickets)
            }
            _ if !t.tls_tickets && !t.tls_session_cache => {
                bad.add("load.tls.resumed", Need::Sessions)
            }
            _ => {}
        }
    }
}

/// The probe's sampling interval.
fn check_probe(s: &Scenario, bad: &mut Problems) {
    if s.probe.interval.secs() < 0.01 || s.probe.interval.secs() > 60.0 {
        bad.add(
            "probe.interval",
            ProblemKind::limit(
                Limit::Between("10ms".into(), "60s".into()),
                Got::of(s.probe.interval),
                "",
            ),
        );
    }
}

/// Steps: in time order, within the run, each change valid.
fn check_steps(s: &Scenario, bad: &mut Problems) {
    let mut last = -1.0;
    for (i, st) in s.steps.iter().enumerate() {
        let k = format!("step[{i}]");
        if st.at.secs() < last {
            bad.add(&format!("{k}.at"), Timing::StepsOrder);
        }
        last = st.at.secs();
        if s.sweep.is_none() && st.at.secs() > s.duration.secs() {
            bad.add(
                &format!("{k}.at"),
                Timing::StepAfterEnd {
                    at: st.at.to_string(),
                    duration: s.duration.to_string(),
                },
            );
        }
        // The live knobs' own limits: a step sets what a key could.
        let mut within = true;
        for (knob, v) in st.load_values() {
            let key = knob.step_key().expect("a step's load knob has a step key");
            within &= knob.check(v).is_ok();
            self::knob(knob, v, &format!("{k}.{key}"), bad);
        }
        if st.tls_resumed.is_some() && s.load.tls.is_none() {
            bad.add(&format!("{k}.tls_resumed"), Need::LoadTls);
        }
        if let (Some(r), Some(f), true) = (st.burst_ratio, st.burst_fraction, within) {
            check_burst(r, f.fraction(), &k, ["burst_ratio", "burst_fraction"], bad);
        }
        // The step's tcp_syncookies: a value the sweep parameter takes, in the lab's server
        // namespace.
        if let Some(n) = st.syncookies {
            let key = format!("{k}.syncookies");
            if let Err(e) =
                crate::model::SweepValue::parse_text(SweepParam::Syncookies, &n.to_string())
            {
                bad.add(&key, e);
            }
            if s.network.is_none() {
                bad.add(
                    &key,
                    Need::StepNetwork {
                        keys: "net.ipv4.tcp_syncookies in the lab's server namespace".into(),
                    },
                );
            }
        }
        let path_values = st.path_values();
        for v in &path_values {
            if let Err(e) = v.checked() {
                bad.add(&format!("{k}.{}", v.knob().key()), e);
            }
        }
        if !path_values.is_empty() && s.network.is_none() {
            let keys: Vec<&str> = path_values.iter().map(|v| v.knob().key()).collect();
            bad.add(
                &k,
                Need::StepNetwork {
                    keys: keys.join("/"),
                },
            );
        }
    }
}

/// What is wrong with a sweep parameter's name that names none: the nearest and the valid.
fn unknown_param(name: &str) -> Written {
    let names: Vec<String> = SweepParam::all().map(|p| p.name().to_string()).collect();
    Written::UnknownParam {
        name: name.to_string(),
        nearest: super::diag::nearest(name, &names).map(|n| n.to_string()),
        valid: names.join(", "),
    }
}

/// The sweep: a known parameter with at least one valid value.
fn check_sweep(s: &Scenario, bad: &mut Problems) {
    if let Some(sw) = &s.sweep {
        match sw.kind() {
            None => bad.add("sweep.param", unknown_param(&sw.param)),
            Some(k) if k.needs_network() && s.network.is_none() => bad.add(
                "sweep.param",
                Need::Network {
                    param: sw.param.clone(),
                },
            ),
            Some(SweepParam::Load(LoadKnob::Resumed)) if !s.target.tls => bad.add(
                "sweep.param",
                Need::SweepTls {
                    param: sw.param.clone(),
                },
            ),
            Some(_) => {}
        }
        if sw.values.is_empty() {
            bad.add("sweep.values", Need::Values);
        }
        if let Some(k) = sw.kind() {
            for (i, v) in sw.values.iter().enumerate() {
                match super::SweepValue::parse(k, v) {
                    Err(e) => bad.add(&format!("sweep.values[{i}]"), e),
                    Ok(super::SweepValue::Count(n)) if k == SweepParam::Concurrency => {
                        concurrency(s, sw, n, &format!("sweep.values[{i}]"), bad)
                    }
                    Ok(_) => {}
                }
            }
        }
        if sw.hold.secs() <= 0.0 {
            bad.add("sweep.hold", positive());
        } else if sw.hold.secs() < s.probe.interval.secs() {
            bad.add(
                "sweep.hold",
                shorter_than_a_sample(sw.hold, s.probe.interval),
            );
        }
        check_sweep_server(s, sw, bad);
        if let Some(c) = &sw.curves {
            check_curves(s, c, sw.kind(), bad);
        }
    }
}

/// A `load.concurrency` value within the live knob it sets in each of the sweep's modes:
/// clients in closed mode, D in the others.
fn concurrency(s: &Scenario, sw: &Sweep, n: u32, key: &str, bad: &mut Problems) {
    let modes = if sw.modes.is_empty() {
        std::slice::from_ref(&s.load.mode)
    } else {
        &sw.modes[..]
    };
    let knobs = modes.iter().map(|&m| match m {
        Mode::Closed => LoadKnob::Clients,
        _ => LoadKnob::Sockets,
    });
    if let Some(e) = knobs.filter_map(|k| k.check(n as f64).err()).next() {
        bad.add(key, e);
    }
}

/// `[sweep.curves]`: another known parameter than the sweep's, with valid values.
fn check_curves(s: &Scenario, c: &Curves, swept: Option<SweepParam>, bad: &mut Problems) {
    let Some(k) = c.kind() else {
        bad.add("sweep.curves.param", unknown_param(&c.param));
        return;
    };
    if Some(k) == swept {
        bad.add(
            "sweep.curves.param",
            Written::CurvesSweptParam(c.param.clone()),
        );
    }
    if k.needs_network() && s.network.is_none() {
        bad.add(
            "sweep.curves.param",
            Need::Network {
                param: c.param.clone(),
            },
        );
    }
    if c.values.is_empty() {
        bad.add("sweep.curves.values", Need::Values);
    }
    for (i, v) in c.values.iter().enumerate() {
        if let Err(e) = super::SweepValue::parse(k, v) {
            bad.add(&format!("sweep.curves.values[{i}]"), e);
        }
    }
}

/// The sweeps that change the server or its kernel: steering needs the lab (and not twice),
/// the backlog a server that can change it live.
fn check_sweep_server(s: &Scenario, sw: &Sweep, bad: &mut Problems) {
    if !sw.steer.is_empty() {
        if s.network.is_none() {
            bad.add("sweep.steer", Need::SteerNetwork);
        }
        if sw.kind() == Some(SweepParam::Steer) {
            bad.add("sweep.steer", SweepServer::SteerTwice);
        }
    }
    if sw.kind() == Some(SweepParam::Backlog) && s.target.kind != TargetKind::Builtin {
        bad.add(
            "sweep.param",
            SweepServer::BacklogLive {
                kind: s.target.kind.name(),
            },
        );
    }
}

/// `target.cpus` and `load.cpus` against the CPUs of the machine the scenario is checked on.
pub fn check_cpus(s: &Scenario, machine: &[usize]) -> Vec<Problem> {
    crate::model::cpus::check_cpus(&s.target.cpus, &s.load.cpus, machine)
        .into_iter()
        .map(|(key, e)| Problem::new(key, e))
        .collect()
}

/// Request paths of the scenario's workloads (swept ones too) that only the built-in server
/// answers.
pub fn dynamic_paths(s: &Scenario) -> Vec<String> {
    let mut scenarios = vec![s.clone()];
    if let Some(sw) = s
        .sweep
        .as_ref()
        .filter(|sw| sw.kind() == Some(SweepParam::Workload))
    {
        for v in &sw.values {
            if let Ok(w) = v.clone().try_into::<Workload>() {
                let mut o = s.clone();
                o.load.workload = w;
                scenarios.push(o);
            }
        }
    }
    let mut out: Vec<String> = scenarios
        .iter()
        .flat_map(super::workloads::mix_of)
        .map(|m| m.path)
        .filter(|p| {
            ["/cgi/", "/inproc/", "/db/"]
                .iter()
                .any(|d| p.starts_with(d))
        })
        .collect();
    out.dedup();
    out
}

/// A load knob's value at `key`, within the limits its live key keeps (`LoadKnob::check`).
fn knob(knob: LoadKnob, v: f64, key: &str, bad: &mut Problems) {
    if let Err(e) = knob.check(v) {
        bad.add(key, e);
    }
}

/// A burst shape under `table`, its two keys named `keys` (ratio, fraction): the live knobs'
/// limits and ratio x fraction <= 1.
fn check_burst(ratio: f64, fraction: f64, table: &str, keys: [&str; 2], bad: &mut Problems) {
    let key = match load_knob::check_burst(ratio, fraction) {
        Ok(_) => return,
        Err(
            e @ LoadKnobError::OutOfRange {
                knob: LoadKnob::BurstFraction,
                ..
            },
        ) => (keys[1], e),
        Err(e) => (keys[0], e),
    };
    bad.add(&format!("{table}.{}", key.0), key.1);
}

/// The files a scenario names (`load.tls.ca`), read from the scenario file's folder `dir` as
/// the run reads them: each relative path is made `dir`'s, and one that is not a file is a
/// problem.
pub fn resolve_files(s: &mut Scenario, dir: &Path) -> Vec<Problem> {
    let mut p = Vec::new();
    if let Some(t) = s.load.tls.as_mut().filter(|t| !t.ca.is_empty()) {
        let path = dir.join(&t.ca);
        if !path.is_file() {
            p.push(Problem::new(
                "load.tls.ca",
                Written::CaFile(path.display().to_string()),
            ));
        }
        t.ca = path.display().to_string();
    }
    p
}

/// What a scenario says that no point of it does: a key nothing reads, a sweep that replaces
/// per-path values. Warnings, not errors (the run is what it would be without them);
/// `written_top` are the keys written at the file's top level.
pub fn warnings(s: &Scenario, written_top: &[String]) -> Vec<Problem> {
    let mut w: Vec<Problem> = Vec::new();
    let sweep_kind = s.sweep.as_ref().and_then(|sw| sw.kind());
    let modes: Vec<Mode> = match &s.sweep {
        Some(sw) if !sw.modes.is_empty() => sw.modes.clone(),
        _ => vec![s.load.mode],
    };
    if s.load.rate.is_some()
        && modes.iter().all(|m| *m == Mode::Closed)
        && sweep_kind != Some(SweepParam::Load(LoadKnob::Rate))
    {
        w.push(Problem::new("load.rate", Unused::ClosedRate));
    }
    // Over HTTP/2 and /3 a connection of its own per attempt (open without a pool, sclient)
    // closes after requests_per_conn requests: more streams than that are never used.
    let multiplexed = matches!(s.load.http, HttpVersion::Http2 | HttpVersion::Http3);
    let rpc = s.load.requests_per_conn;
    if let Some(streams) = s.load.streams.filter(|&m| multiplexed && m > rpc.max(1)) {
        if s.load.connections.is_none() && modes.iter().all(|m| *m != Mode::Closed) {
            w.push(Problem::new(
                "load.streams",
                Unused::StreamsUnreached { streams, rpc },
            ));
        }
    }
    if let Some(sw) = &s.sweep {
        if written_top.iter().any(|k| k == "duration") {
            w.push(Problem::new(
                "duration",
                Unused::SweepDuration {
                    about: about(run_length_s(s)),
                },
            ));
        }
        let paths = s.network.as_ref().map_or(&[][..], |n| &n.paths[..]);
        // The path knob a sweep sets on every path, as each path's own value reads.
        let per_path = |p: &crate::net::spec::PathSpec| match sweep_kind {
            Some(SweepParam::Path(k)) => Some(p.get(k).to_string()),
            _ => None,
        };
        if paths.len() > 1 && paths.first().and_then(per_path).is_some() {
            let own: Vec<String> = paths
                .iter()
                .map(|p| format!("`{}` {}", p.name, per_path(p).unwrap_or_default()))
                .collect();
            w.push(Problem::new(
                "sweep.param",
                Unused::PathsReplaced {
                    param: sw.param.clone(),
                    paths: paths.len(),
                    own: own.join(", "),
                },
            ));
        }
    }
    w
}

/// How long a run of `s` lasts, in seconds: its points' warmup + hold + cooldown (the lab's
/// set-up and drain come on top).
pub fn run_length_s(s: &Scenario) -> f64 {
    super::points::plan_points(s)
        .iter()
        .map(|p| p.warmup + p.hold + p.cooldown)
        .sum()
}

/// A length as a person reads it: `45 s`, `67 minutes`, `3.5 hours`.
pub fn about(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 2.0 * 3600.0 {
        format!("{:.0} minutes", secs / 60.0)
    } else {
        format!("{:.1} hours", secs / 3600.0)
    }
}

/// A threshold on the run's capacity: judged once per series at the end, so it needs a sweep
/// and takes no `points`, `values` or `aggregate`; its bounds are rates.
fn run_metric_problems(
    s: &Scenario,
    i: usize,
    t: &super::gate::ThresholdSpec,
    m: RunMetric,
) -> Vec<Problem> {
    let k = |key: &str| format!("threshold[{i}].{key}");
    let mut p = Vec::new();
    if s.sweep.is_none() {
        p.push(Problem::new(
            k("metric"),
            Threshold::CapacityNeedsSweep {
                metric: m.name().to_string(),
            },
        ));
    }
    if t.max.is_none() && t.min.is_none() {
        p.push(Problem::new(
            k("metric"),
            Threshold::NoBound {
                example: "min = 900",
            },
        ));
    }
    for (key, b) in [("max", &t.max), ("min", &t.min)] {
        if let Some(b) = b {
            if let Err(e) = m.parse_bound(b) {
                p.push(Problem::new(k(key), e));
            }
        }
    }
    if !t.points.is_empty() || !t.values.is_empty() || t.aggregate != Aggregate::default() {
        p.push(Problem::new(
            k("metric"),
            Threshold::OncePerSeries {
                metric: m.name().to_string(),
            },
        ));
    }
    p
}

/// Problems in `[[threshold]]` and `[gate]`, keyed `threshold[i].key`.
pub fn gate_problems(s: &Scenario) -> Vec<Problem> {
    let mut p = Vec::new();
    let n_points = super::points::plan_points(s).len();
    for (i, t) in s.thresholds.iter().enumerate() {
        let k = |key: &str| format!("threshold[{i}].{key}");
        if let Some(run_metric) = RunMetric::parse(&t.metric) {
            p.extend(run_metric_problems(s, i, t, run_metric));
            continue;
        }
        let metric = check_metric(&t.metric);
        if let Err(e) = &metric {
            p.push(Problem::new(k("metric"), e.clone()));
        }
        if t.max.is_none() && t.min.is_none() {
            p.push(Problem::new(
                k("metric"),
                Threshold::NoBound {
                    example: "max = \"50ms\"",
                },
            ));
        }
        for (key, b) in [("max", &t.max), ("min", &t.min)] {
            if let (Some(b), Ok(metric)) = (b, &metric) {
                if let Err(e) = parse_bound(b, *metric) {
                    p.push(Problem::new(k(key), e));
                }
            }
        }
        if t.over == Over::Run && !(t.points.is_empty() && t.values.is_empty()) {
            p.push(Problem::new(k("over"), Threshold::RunTakesNoPoints));
        }
        if t.over == Over::Points && t.aggregate != Aggregate::default() {
            p.push(Problem::new(k("aggregate"), Threshold::AggregateOverRun));
        }
        for (j, n) in t.points.iter().enumerate() {
            if *n == 0 || *n > n_points {
                p.push(Problem::new(
                    format!("threshold[{i}].points[{j}]"),
                    Threshold::NoSuchPoint {
                        n: *n,
                        points: n_points,
                    },
                ));
            }
        }
        match &s.sweep {
            None if !t.values.is_empty() => {
                p.push(Problem::new(k("values"), Threshold::ValuesNeedSweep))
            }
            // An unknown sweep parameter is reported by the sweep's own validation.
            Some(sw) if sw.kind().is_some() => {
                let kind = sw.kind().expect("checked");
                let swept: Vec<String> = sw
                    .values
                    .iter()
                    .filter_map(|v| crate::model::SweepValue::parse(kind, v).ok())
                    .map(|v| v.to_string())
                    .collect();
                for (j, v) in t.values.iter().enumerate() {
                    let key = format!("threshold[{i}].values[{j}]");
                    match crate::model::SweepValue::parse(kind, v) {
                        Err(e) => p.push(Problem::new(key, e)),
                        Ok(v) if !swept.contains(&v.to_string()) => p.push(Problem::new(
                            key,
                            Threshold::NotSwept {
                                value: v.to_string(),
                                swept: swept.join(", "),
                            },
                        )),
                        Ok(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
    for (j, why) in s.gate.status_problems() {
        p.push(Problem::new(format!("gate.good_statuses[{j}]"), why));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More HTTP/2 or /3 streams than a connection of its own per attempt ever carries.
    #[test]
    fn streams_no_connection_reaches_are_warned_of() {
        let mut s = crate::scenario::default_scenario();
        s.load.http = HttpVersion::Http2;
        s.load.mode = Mode::Open;
        s.load.streams = Some(4);
        let said = |s: &Scenario| warnings(s, &[]).iter().any(|p| p.key == "load.streams");
        assert!(said(&s));
        s.load.connections = Some(8);
        assert!(!said(&s), "a pool's connections carry many requests");
        s.load.connections = None;
        s.load.mode = Mode::Closed;
        assert!(!said(&s), "closed clients use every stream");
        s.load.mode = Mode::Open;
        s.load.requests_per_conn = 4;
        assert!(!said(&s));
    }

    #[test]
    fn problems_are_typed_and_read_as_before() {
        let mut s = crate::scenario::default_scenario();
        s.load.rate = Some(crate::model::units::Num(0.5));
        s.steps.push(Step {
            requests_per_conn: Some(10),
            ..Step::default()
        });
        let p = validate(&s);
        let rate = p.iter().find(|p| p.key == "load.rate").unwrap();
        assert_eq!(
            rate.kind,
            ProblemKind::Load(LoadKnobError::OutOfRange {
                knob: LoadKnob::Rate,
                value: 0.5
            })
        );
        assert_eq!(rate.line, None, "lines come with the file");
        assert_eq!(
            rate.to_string(),
            "`load.rate`: rate must be 1/s..1000000/s (got 0.5/s)"
        );
        let step = p.iter().find(|p| p.key == "step[0].requests_per_conn");
        assert_eq!(
            step.map(|p| &p.kind),
            Some(&ProblemKind::NeedsKeepAlive {
                what: "requests_per_conn"
            })
        );
        let linger = ProblemKind::limit(
            Limit::Between("1ms".into(), "30s".into()),
            Got::of("45s"),
            " (Apache waits 2s); or set lingering_close = false",
        );
        assert_eq!(
            linger.to_string(),
            "must be between 1ms and 30s (got 45s) (Apache waits 2s); or set lingering_close = false"
        );
    }

    /// Every rule is typed, the lower layers' too (the network section, `[gate]
    /// good_statuses`): none of them is said only in words, and each reads as it always did.
    #[test]
    fn hand_written_rules_have_kinds_of_their_own() {
        let mut s = crate::scenario::default_scenario();
        s.duration = crate::model::units::Dur(Duration::ZERO);
        s.target.backlog = 0;
        s.target.pareto_alpha = 0.0;
        s.load.workers = 0;
        s.probe.interval = crate::model::units::Dur(Duration::from_millis(1));
        s.load.mix.push(MixSpec {
            class: " ".into(),
            path: "no-slash".into(),
            weight: 0.0,
        });
        s.steps.push(Step {
            at: crate::model::units::Dur(Duration::from_secs(5)),
            ..Step::default()
        });
        s.steps.push(Step::default());
        s.thresholds.push(super::super::gate::ThresholdSpec {
            metric: "total_p99_ms".into(),
            points: vec![9],
            ..Default::default()
        });
        s.gate.good_statuses = vec![200, 42];
        s.network = Some(crate::net::spec::NetworkSpec {
            client_addrs: 0,
            paths: vec![
                crate::net::spec::PathSpec {
                    name: "a".into(),
                    share: Some(0.7),
                    queue: 0,
                    ..Default::default()
                },
                crate::net::spec::PathSpec {
                    name: "b".into(),
                    share: Some(0.7),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        let mut p = validate(&s);
        p.extend(gate_problems(&s));
        assert!(p.len() >= 14, "{p:#?}");
        let kind = |key: &str| {
            p.iter()
                .find(|p| p.key == key)
                .map(|p| p.kind.clone())
                .unwrap_or_else(|| panic!("no problem at {key}: {p:#?}"))
        };
        assert_eq!(
            kind("load.workers"),
            ProblemKind::limit(Limit::Range("1".into(), "64".into()), Got::of(0), "")
        );
        assert_eq!(
            kind("load.mix[0].path"),
            Written::NoSlash("no-slash".into()).into()
        );
        assert_eq!(kind("load.mix[0].class"), Written::ClassBlank.into());
        assert_eq!(kind("step[1].at"), Timing::StepsOrder.into());
        assert_eq!(
            kind("threshold[0].points[0]"),
            Threshold::NoSuchPoint { n: 9, points: 1 }.into()
        );
        assert_eq!(
            kind("probe.interval").to_string(),
            "must be between 10ms and 60s (got 1ms)"
        );
        assert_eq!(
            kind("target.pareto_alpha").to_string(),
            "must be > 0 (got 0) (1.1-1.5 gives a heavy tail)"
        );
        use crate::net::spec::SpecRule;
        assert_eq!(
            kind("network.client_addrs"),
            SpecRule::ClientAddrs(0).into()
        );
        assert_eq!(
            kind("network.client_addrs").to_string(),
            "0 is out of range; use 1 to 250"
        );
        assert_eq!(kind("network.path[0].queue"), SpecRule::Queue(0).into());
        assert_eq!(
            kind("network.path[0].queue").to_string(),
            "0 frames; use 1 to 1000000"
        );
        assert_eq!(
            kind("network.path[0].share").to_string(),
            "the paths' shares add up to 1.4 (0.7 + 0.7), not 1: each is its share of the load; make them add up to 1, or remove them for equal shares"
        );
        assert_eq!(
            kind("gate.good_statuses[1]"),
            super::super::gate::NotAStatus(42).into()
        );
        assert_eq!(
            kind("gate.good_statuses[1]").to_string(),
            "42 is not an HTTP status: name statuses from 100 to 599, e.g. [200, 304]"
        );
    }
}
