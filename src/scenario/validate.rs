//! Range and consistency checks on a parsed scenario. Each problem names its key path so the
//! loader can point at the line.

use super::gate::{check_metric, parse_bound, Aggregate, Over, RunMetric};
use super::model::*;
use crate::model::load_knob::{self, LoadKnob, LoadKnobError};
use std::path::Path;
use std::time::Duration;

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
    /// A scenario rule of its own, said in words.
    #[error("{0}")]
    Said(String),
}

impl From<String> for ProblemKind {
    fn from(s: String) -> Self {
        ProblemKind::Said(s)
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
    check_probe(s, &mut bad);
    check_steps(s, &mut bad);
    check_sweep(s, &mut bad);
    check_analysis(s, &mut bad);
    if let Some(n) = s.output.repeat.filter(|n| !(1..=1000).contains(n)) {
        bad.add(
            "output.repeat",
            format!("{n} trials: a repeated run has 1 to 1000 (5 to 10 is usual)"),
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
            format!(
                "{} is not a percentile between 0 and 100 (seed 004: 98)",
                c.percentile
            ),
        );
    }
    if c.under.secs() <= 0.0 {
        bad.add(
            "analysis.capacity.under",
            "must be > 0, e.g. \"100ms\"".to_string(),
        );
    }
}

/// The run's length: positive and bounded.
fn check_duration(s: &Scenario, bad: &mut Problems) {
    if s.duration.secs() <= 0.0 {
        bad.add("duration", "must be > 0, e.g. \"60s\"".to_string());
    }
    if s.duration.secs() > 24.0 * 3600.0 {
        bad.add(
            "duration",
            "must be at most 24h: every load loop is bounded in time".to_string(),
        );
    }
}

/// The built-in server's sizes and times.
fn check_target_limits(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    if t.backlog == 0 {
        bad.add("target.backlog", "must be >= 1".to_string());
    }
    if t.workers == 0 {
        bad.add("target.workers", "must be >= 1".to_string());
    }
    if t.max_workers < t.workers {
        bad.add(
            "target.max_workers",
            format!(
                "({}) must be >= target.workers ({})",
                t.max_workers, t.workers
            ),
        );
    }
    if t.max_workers as usize > crate::target::core::MAX_WORKERS {
        bad.add(
            "target.max_workers",
            format!(
                "({}) must be at most {}",
                t.max_workers,
                crate::target::core::MAX_WORKERS
            ),
        );
    }
    // issue 47: the built-in server's HTTP/3.
    if t.http3 && (t.kind != TargetKind::Builtin || t.arch != crate::target::Arch::Event || !t.tls)
    {
        bad.add(
            "target.http3",
            "is the built-in server's HTTP/3: it needs arch = \"event\" and tls = true \
             (kind = \"caddy\" serves HTTP/3 of itself)"
                .to_string(),
        );
    }
    for (key, on) in [
        ("target.quic_retry", t.quic_retry),
        ("target.quic_early_data", t.quic_early_data),
        ("target.rcvbuf", t.rcvbuf.is_some()),
    ] {
        if on && !t.http3 {
            bad.add(
                key,
                "applies to HTTP/3 only: set target.http3 = true".to_string(),
            );
        }
    }
    if t.quic_early_data && !t.tls_session_cache {
        bad.add(
            "target.quic_early_data",
            "needs target.tls_session_cache = true: the server takes 0-RTT only on a \
             resumption from its cache, never from a ticket"
                .to_string(),
        );
    }
    if let Some(b) = t.rcvbuf {
        if b.0 < 4096 || b.0 > i32::MAX as u64 / 2 {
            bad.add("target.rcvbuf", format!("({}) must be 4 KiB to 1 GiB", b.0));
        }
    }
    // issue 46: the built-in server's HTTP/2 stream limit.
    if t.max_streams == 0 || t.max_streams > crate::target::MAX_STREAMS {
        bad.add(
            "target.max_streams",
            format!(
                "({}) must be 1 to {} (streams served at once per HTTP/2 connection)",
                t.max_streams,
                crate::target::MAX_STREAMS
            ),
        );
    }
    let linger_max = crate::target::linger::MAX_SECS_TO_LINGER;
    if t.lingering_close
        && (t.linger_timeout.0 < Duration::from_millis(1) || t.linger_timeout.0 > linger_max)
    {
        bad.add(
            "target.linger_timeout",
            format!(
                "({}) must be between 1ms and 30s (Apache waits 2s); or set lingering_close = false",
                t.linger_timeout
            ),
        );
    }
    if t.service_time.secs() > 10.0 {
        bad.add("target.service_time", "must be at most 10s".to_string());
    }
}

/// What the target's kind needs.
fn check_target_kind(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    match t.kind {
        TargetKind::Command if t.command.trim().is_empty() => bad.add(
            "target.command",
            "kind = \"command\" needs a command, e.g. \"nginx -g 'daemon off;' -c /path/nginx.conf\" with {port}".to_string(),
        ),
        // synlab would wait for the server on a port of its own choosing while it listens on
        // its own, then say the server does not accept connections.
        TargetKind::Command if !t.command.contains("{port}") && t.port == 0 => bad.add(
            "target.command",
            "does not say which port its server listens on: write {port} where the port goes (synlab puts a free one there, 8080 in the lab), or set target.port to the port the command listens on".to_string(),
        ),
        TargetKind::Address => match t.address.parse::<std::net::SocketAddr>() {
            Err(_) => bad.add(
                "target.address",
                format!("`{}` is not an address:port, e.g. \"127.0.0.1:8080\"", t.address),
            ),
            Ok(a) if !crate::load::validate::is_lab_address(a.ip()) => bad.add(
                "target.address",
                format!("`{a}` is not on this host: synlab loads only 127.0.0.0/8, ::1 and its lab's 198.18.0.0/15; run the server here, or let synlab start it with kind = \"command\""),
            ),
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
            format!(
                "is used only with kind = \"address\" (this target is kind = \"{}\")",
                t.kind.name()
            ),
        );
    }
    if t.kind != TargetKind::Command && !t.command.is_empty() {
        bad.add(
            "target.command",
            format!(
                "is used only with kind = \"command\" (this target is kind = \"{}\")",
                t.kind.name()
            ),
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
                ("access_log", TargetKind::Builtin) => "the built-in server reports its own count",
                ("access_log", _) => "synlab writes and counts this server's access log itself",
                ("pid", _) => "synlab starts this server and follows the process it started",
                ("mpm", _) => "is used only with kind = \"apache\"",
                ("extra_events", _) => {
                    "is used only with kind = \"nginx\" (lines of its events {} block; Apache has none)"
                }
                _ => "is used only with kind = \"nginx\" or \"apache\"",
            };
            bad.add(
                &format!("target.{key}"),
                format!(
                    "{why} (this target is kind = \"{}\"): remove the key",
                    t.kind.name()
                ),
            );
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
                format!(
                    "requests {path}, a dynamic endpoint (/cgi, /inproc, /db) only the built-in server has; kind = \"{}\" serves the static files (/bytes/N, /specweb96/..., /pareto/..., /file/N): use a static workload (single, specweb96, static) or kind = \"builtin\"",
                    t.kind.name()
                ),
            );
        }
    }
}

/// The served files.
fn check_target_files(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    if t.files == FilesPreset::Explicit && t.sizes.is_empty() {
        bad.add(
            "target.sizes",
            "files = \"explicit\" needs sizes, e.g. [\"1294\", \"10k\"]".to_string(),
        );
    }
    if t.pareto_alpha <= 0.0 {
        bad.add(
            "target.pareto_alpha",
            "must be > 0 (1.1-1.5 gives a heavy tail)".to_string(),
        );
    }
}

/// The lab network, and the load's timeout against its slowest path.
fn check_network(s: &Scenario, bad: &mut Problems) {
    if let Some(net) = &s.network {
        if let Err(errs) = net.validate() {
            for e in errs {
                bad.add(&e.key, e.msg);
            }
        }
        let max_rtt = net.paths.iter().map(|p| p.rtt.secs()).fold(0.0, f64::max);
        if s.load.timeout.secs() <= max_rtt {
            bad.add(
                "load.timeout",
                format!(
                    "T ({}) must exceed the largest path RTT ({max_rtt:.3}s): a slot would abort connections whose SYN-ACK is still on its way (seed 000 §4.2)",
                    s.load.timeout
                ),
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
            format!("must be 1-{max} persistent connections (got {n})"),
        );
    }
    if l.mode != Mode::Open {
        bad.add(
            "load.connections",
            format!(
                "a pool of persistent connections carries an open-loop request rate: it needs mode = \"open\" (got \"{}\"); closed clients keep their connections with http = \"1.1\" alone",
                format!("{:?}", l.mode).to_lowercase()
            ),
        );
    }
    if l.http == HttpVersion::Http10 {
        bad.add(
            "load.connections",
            "persistent connections need keep-alive: add http = \"1.1\" (or \"2\")".to_string(),
        );
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
    let h2 = s.load.http == HttpVersion::Http2;
    let needs_h2 = |what: &str| {
        format!("{what} is HTTP/2's streams per connection: it needs http = \"2\" in [load] (the load speaks HTTP/{})", if s.load.http == HttpVersion::Http11 { "1.1" } else { "1.0" })
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
        bad.add(
            key,
            "Apache's prefork MPM (the default) refuses HTTP/2: mod_http2 needs a threaded MPM; set mpm = \"event\" in [target]".to_string(),
        );
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
        bad.add(
            "load.rate",
            "mode = \"open\" needs a rate, e.g. rate = \"2k\"".to_string(),
        );
    }
    if l.timeout.secs() <= 0.0 {
        bad.add("load.timeout", "T must be > 0, e.g. \"500ms\"".to_string());
    }
    if l.workers == 0 || l.workers > 64 {
        bad.add("load.workers", format!("must be 1-64 (got {})", l.workers));
    }
    if l.response_timeout.secs() <= 0.0 {
        bad.add("load.response_timeout", "must be > 0".to_string());
    }
    check_pool(l, bad);
    check_keepalive(s, bad);
    check_http2(s, bad);
    if l.workload == Workload::Custom && l.mix.is_empty() {
        bad.add(
            "load.mix",
            "workload = \"custom\" needs [[load.mix]] entries with path and weight".to_string(),
        );
    }
    for (i, m) in l.mix.iter().enumerate() {
        if !m.path.starts_with('/') {
            bad.add(
                &format!("load.mix[{i}].path"),
                format!("`{}` must start with /", m.path),
            );
        }
        // The path goes into the request line as written: a CR or LF would end it early,
        // a space split it.
        if let Some(c) = m.path.chars().find(|c| c.is_control() || c.is_whitespace()) {
            bad.add(
                &format!("load.mix[{i}].path"),
                format!(
                    "{:?} holds {}, which would break the request line: write it percent-encoded (e.g. %20 for a space, %0D%0A for CR LF)",
                    m.path,
                    char_name(c)
                ),
            );
        }
        // A class names a column of the results (CSV, report): one line of visible text.
        if let Some(c) = m.class.chars().find(|c| c.is_control()) {
            bad.add(
                &format!("load.mix[{i}].class"),
                format!(
                    "{:?} holds {}: a class name is one line of text",
                    m.class,
                    char_name(c)
                ),
            );
        } else if !m.class.is_empty() && m.class.trim().is_empty() {
            bad.add(
                &format!("load.mix[{i}].class"),
                "is blank: name the class, or omit `class` to name it by its path".to_string(),
            );
        }
        if m.weight <= 0.0 || !m.weight.is_finite() {
            bad.add(&format!("load.mix[{i}].weight"), "must be > 0".to_string());
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
            bad.add("load.burst.period", "must be > 0, e.g. \"10s\"".to_string());
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
                    format!("the lab makes the certificate and TLS config only of the built-in server, nginx, Apache and Caddy (this target is kind = \"{}\")", t.kind.name())
                } else {
                    "is used only with tls = true".to_string()
                };
                bad.add(&format!("target.{key}"), format!("{why}: remove the key"));
            }
        }
    }
    let Some(l) = &s.load.tls else {
        return;
    };
    if !t.tls {
        bad.add(
            "load.tls",
            format!(
                "the target does not speak TLS (kind = \"{}\" without tls = true): add tls = true to [target], or remove [load.tls]",
                t.kind.name()
            ),
        );
    }
    // The name rustls sends and verifies: a DNS name or an IP address ("" sends none).
    if !l.sni.is_empty() && rustls::pki_types::ServerName::try_from(l.sni.as_str()).is_err() {
        bad.add(
            "load.tls.sni",
            format!(
                "{:?} is neither a DNS name nor an IP address: write the server's name (e.g. \"www.example.com\"), or \"\" to send none",
                l.sni
            ),
        );
    }
    let hs = l.handshake_timeout.secs();
    if hs <= 0.0 || hs > 60.0 {
        bad.add(
            "load.tls.handshake_timeout",
            "must be > 0 and at most 60s, e.g. \"5s\"".to_string(),
        );
    }
    if l.version == TlsVersion::V12 && l.group == KxGroup::X25519Mlkem768 {
        bad.add(
            "load.tls.group",
            "x25519mlkem768 exists only in TLS 1.3: use version = \"1.3\", or group x25519 or p256"
                .to_string(),
        );
    }
    if l.verify && !lab_cert && l.ca.is_empty() {
        bad.add(
            "load.tls.ca",
            format!(
                "verify = true against a kind = \"{}\" target needs the CA its certificate is signed by: ca = \"path/to/ca.pem\"",
                t.kind.name()
            ),
        );
    }
    if t.tls && lab_cert && l.resumed > 0.0 {
        match l.resumption {
            ResumeBy::Ids if !t.tls_session_cache => bad.add(
                "load.tls.resumption",
                "resuming by session ids needs the server's session cache: set target.tls_session_cache = true, or resumption = \"tickets\"".to_string(),
            ),
            ResumeBy::Tickets if !t.tls_tickets && l.version == TlsVersion::V12 => bad.add(
                "load.tls.resumption",
                "resuming TLS 1.2 by tickets needs the server's tickets: set target.tls_tickets = true, or resumption = \"ids\"".to_string(),
            ),
            _ if !t.tls_tickets && !t.tls_session_cache => bad.add(
                "load.tls.resumed",
                "the server keeps no sessions (tls_session_cache and tls_tickets are off): nothing can resume; set resumed = 0 or turn one on".to_string(),
            ),
            _ => {}
        }
    }
}

/// The probe's sampling interval.
fn check_probe(s: &Scenario, bad: &mut Problems) {
    if s.probe.interval.secs() < 0.01 || s.probe.interval.secs() > 60.0 {
        bad.add("probe.interval", "must be between 10ms and 60s".to_string());
    }
}

/// Steps: in time order, within the run, each change valid.
fn check_steps(s: &Scenario, bad: &mut Problems) {
    let mut last = -1.0;
    for (i, st) in s.steps.iter().enumerate() {
        let k = format!("step[{i}]");
        if st.at.secs() < last {
            bad.add(
                &format!("{k}.at"),
                "steps must be in time order".to_string(),
            );
        }
        last = st.at.secs();
        if s.sweep.is_none() && st.at.secs() > s.duration.secs() {
            bad.add(
                &format!("{k}.at"),
                format!(
                    "({}) is after the end of the run (duration = {})",
                    st.at, s.duration
                ),
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
            bad.add(
                &format!("{k}.tls_resumed"),
                "needs [load.tls] (the clients speak TLS to a `target.tls = true` server)"
                    .to_string(),
            );
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
                bad.add(&key, e.to_string());
            }
            if s.network.is_none() {
                bad.add(
                    &key,
                    "sets net.ipv4.tcp_syncookies in the lab's server namespace, but the \
                     scenario has no [network] section"
                        .to_string(),
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
                format!(
                    "changes {} but the scenario has no [network] section",
                    keys.join("/")
                ),
            );
        }
    }
}

/// The sweep: a known parameter with at least one valid value.
/// What is wrong with a sweep parameter's name that names none: the nearest and the valid.
fn unknown_param(name: &str) -> String {
    let names: Vec<String> = SweepParam::all().map(|p| p.name().to_string()).collect();
    let hint = super::diag::nearest(name, &names)
        .map(|n| format!("; did you mean `{n}`?"))
        .unwrap_or_default();
    format!(
        "unknown parameter `{name}`{hint} (valid: {})",
        names.join(", ")
    )
}

fn check_sweep(s: &Scenario, bad: &mut Problems) {
    if let Some(sw) = &s.sweep {
        match sw.kind() {
            None => bad.add("sweep.param", unknown_param(&sw.param)),
            Some(k) if k.needs_network() && s.network.is_none() => bad.add(
                "sweep.param",
                format!("`{}` needs a [network] section", sw.param),
            ),
            Some(SweepParam::Load(LoadKnob::Resumed)) if !s.target.tls => bad.add(
                "sweep.param",
                format!(
                    "`{}` needs a target that speaks TLS: add tls = true to [target]",
                    sw.param
                ),
            ),
            Some(_) => {}
        }
        if sw.values.is_empty() {
            bad.add("sweep.values", "needs at least one value".to_string());
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
            bad.add("sweep.hold", "must be > 0".to_string());
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
        bad.add(key, e.to_string());
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
            format!(
                "`{}` is what the sweep varies along each curve: the curves take another parameter (e.g. load.burst over a load.rate sweep)",
                c.param
            ),
        );
    }
    if k.needs_network() && s.network.is_none() {
        bad.add(
            "sweep.curves.param",
            format!("`{}` needs a [network] section", c.param),
        );
    }
    if c.values.is_empty() {
        bad.add(
            "sweep.curves.values",
            "needs at least one value".to_string(),
        );
    }
    for (i, v) in c.values.iter().enumerate() {
        if let Err(e) = super::SweepValue::parse(k, v) {
            bad.add(&format!("sweep.curves.values[{i}]"), e.to_string());
        }
    }
}

/// The sweeps that change the server or its kernel: steering needs the lab (and not twice),
/// the backlog a server that can change it live.
fn check_sweep_server(s: &Scenario, sw: &Sweep, bad: &mut Problems) {
    if !sw.steer.is_empty() {
        if s.network.is_none() {
            bad.add(
                "sweep.steer",
                "steers the server's receive processing in the network lab: add a [network] section".to_string(),
            );
        }
        if sw.kind() == Some(SweepParam::Steer) {
            bad.add(
                "sweep.steer",
                "the sweep's parameter is network.steer already: remove one of the two".to_string(),
            );
        }
    }
    if sw.kind() == Some(SweepParam::Backlog) && s.target.kind != TargetKind::Builtin {
        bad.add(
            "sweep.param",
            format!(
                "target.backlog changes live only in the built-in server (it listens again with the new backlog); kind = \"{}\" reads its backlog at start: run one scenario per backlog and overlay them with `synlab report A B`",
                s.target.kind.name()
            ),
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

/// A character as a message names it: "a line feed (LF)", "a space".
fn char_name(c: char) -> String {
    match c {
        '\r' => "a carriage return (CR)".to_string(),
        '\n' => "a line feed (LF)".to_string(),
        '\t' => "a tab".to_string(),
        ' ' => "a space".to_string(),
        c => format!("the control character U+{:04X}", c as u32),
    }
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
                "load.tls.ca".to_string(),
                format!(
                    "{} is not a file (a relative path is read from the scenario's folder): name the PEM file of the CA that signed the server's certificate",
                    path.display()
                ),
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
        w.push(Problem::new(
            "load.rate".to_string(),
            "is not used: every point runs mode = \"closed\", whose clients each wait for their response (in the TUI it is the rate `c` switches to open or sclient with); remove it, or measure open or sclient points (sweep.modes)".to_string(),
        ));
    }
    if let Some(sw) = &s.sweep {
        if written_top.iter().any(|k| k == "duration") {
            w.push(Problem::new(
                "duration".to_string(),
                format!(
                    "is not used with a [sweep]: the run lasts its points' warmup + hold + cooldown (~{}); remove it",
                    about(run_length_s(s))
                ),
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
                "sweep.param".to_string(),
                format!(
                    "`{}` sets all {} paths at once: each value replaces every path's own ({}), which no point uses",
                    sw.param,
                    paths.len(),
                    own.join(", ")
                ),
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
            format!(
                "`{}` is the capacity a sweep finds ([analysis] capacity): this scenario has no [sweep]",
                m.name()
            ),
        ));
    }
    if t.max.is_none() && t.min.is_none() {
        p.push(Problem::new(
            k("metric"),
            "a threshold needs `max` or `min` (or both), e.g. min = 900".to_string(),
        ));
    }
    for (key, b) in [("max", &t.max), ("min", &t.min)] {
        if let Some(b) = b {
            if let Err(e) = m.parse_bound(b) {
                p.push(Problem::new(k(key), e.to_string()));
            }
        }
    }
    if !t.points.is_empty() || !t.values.is_empty() || t.aggregate != Aggregate::default() {
        p.push(Problem::new(
            k("metric"),
            format!(
                "`{}` is judged once per series of the sweep: remove `points`, `values` and `aggregate`",
                m.name()
            ),
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
            p.push(Problem::new(k("metric"), e.to_string()));
        }
        if t.max.is_none() && t.min.is_none() {
            p.push(Problem::new(
                k("metric"),
                "a threshold needs `max` or `min` (or both), e.g. max = \"50ms\"".to_string(),
            ));
        }
        for (key, b) in [("max", &t.max), ("min", &t.min)] {
            if let (Some(b), Ok(metric)) = (b, &metric) {
                if let Err(e) = parse_bound(b, *metric) {
                    p.push(Problem::new(k(key), e.to_string()));
                }
            }
        }
        if t.over == Over::Run && !(t.points.is_empty() && t.values.is_empty()) {
            p.push(Problem::new(
                k("over"),
                "over = \"run\" judges the whole run: remove `points` / `values`, or judge \
                 points one by one (over = \"points\")"
                    .to_string(),
            ));
        }
        if t.over == Over::Points && t.aggregate != Aggregate::default() {
            p.push(Problem::new(
                k("aggregate"),
                "aggregate applies only with over = \"run\"".to_string(),
            ));
        }
        for (j, n) in t.points.iter().enumerate() {
            if *n == 0 || *n > n_points {
                p.push(Problem::new(
                    format!("threshold[{i}].points[{j}]"),
                    format!("point {n} does not exist: this scenario runs points 1 to {n_points}"),
                ));
            }
        }
        match &s.sweep {
            None if !t.values.is_empty() => p.push(Problem::new(
                k("values"),
                "this scenario has no [sweep]: choose points by number (`points = [1]`)"
                    .to_string(),
            )),
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
                        Err(e) => p.push(Problem::new(key, e.to_string())),
                        Ok(v) if !swept.contains(&v.to_string()) => p.push(Problem::new(
                            key,
                            format!(
                                "{v} is not one of the sweep's values ({})",
                                swept.join(", ")
                            ),
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
        assert_eq!(
            ProblemKind::from("must be >= 1".to_string()).to_string(),
            "must be >= 1"
        );
    }
}
