//! The scenario's own rules, typed by what they hold a key to: a limit, another key it needs,
//! a target kind it belongs to, how it is written, the threshold rules, and the keys no point
//! uses. Each Display is the sentence a person reads after the key.

/// The limit a value is held to, as the sentence says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    /// > 0
    Positive,
    /// > 0 and at most this
    PositiveAtMost(&'static str),
    /// >= this
    AtLeast(String),
    AtMost(String),
    /// lo to hi, both included
    Range(String, String),
    /// between lo and hi
    Between(String, String),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Positive => f.write_str("> 0"),
            Limit::PositiveAtMost(hi) => write!(f, "> 0 and at most {hi}"),
            Limit::AtLeast(lo) => write!(f, ">= {lo}"),
            Limit::AtMost(hi) => write!(f, "at most {hi}"),
            Limit::Range(lo, hi) => write!(f, "{lo} to {hi}"),
            Limit::Between(lo, hi) => write!(f, "between {lo} and {hi}"),
        }
    }
}

/// The value a limit refused, said as " (got X)" when it helps (empty when None).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Got(pub Option<String>);

impl Got {
    pub fn of(v: impl std::fmt::Display) -> Got {
        Got(Some(v.to_string()))
    }
}

impl std::fmt::Display for Got {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => write!(f, " (got {v})"),
            None => Ok(()),
        }
    }
}

/// A key that needs another key, section or setting to mean anything (or to work).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Need {
    #[error("is the built-in server's HTTP/3: it needs arch = \"event\" and tls = true (kind = \"caddy\" serves HTTP/3 of itself)")]
    Http3Server,
    #[error("applies to HTTP/3 only: set target.http3 = true")]
    Http3Only,
    #[error("is HTTP/3's 0-RTT share: it needs http = \"3\" in [load]")]
    Http3Load,
    #[error("load.http = \"3\": {0}")]
    Http3Target(&'static str),
    #[error("HTTP/3 runs over QUIC, which is TLS 1.3 only: use version = \"1.3\"")]
    QuicTls13,
    #[error("0-RTT data is sent on resumed handshakes only, and resumed = 0: set load.tls.resumed above 0, or early_data = 0")]
    EarlyDataResumed,
    #[error("the built-in server declines 0-RTT unless asked: set target.quic_early_data = true (with tls_session_cache = true)")]
    EarlyDataServer,
    #[error("needs target.tls_session_cache = true: the server takes 0-RTT only on a resumption from its cache, never from a ticket")]
    EarlyDataCache,
    #[error("kind = \"command\" needs a command, e.g. \"nginx -g 'daemon off;' -c /path/nginx.conf\" with {{port}}")]
    Command,
    #[error("does not say which port its server listens on: write {{port}} where the port goes (synlab puts a free one there, 8080 in the lab), or set target.port to the port the command listens on")]
    CommandPort,
    #[error("mode = \"open\" needs a rate, e.g. rate = \"2k\"")]
    OpenRate,
    #[error("files = \"explicit\" needs sizes, e.g. [\"1294\", \"10k\"]")]
    ExplicitSizes,
    #[error("workload = \"custom\" needs [[load.mix]] entries with path and weight")]
    CustomMix,
    #[error("a pool of persistent connections carries an open-loop request rate: it needs mode = \"open\" (got \"{mode}\"); closed clients keep their connections with http = \"1.1\" alone")]
    PoolOpen { mode: String },
    #[error("persistent connections need keep-alive: add http = \"1.1\" (or \"2\")")]
    PoolKeepAlive,
    #[error("{what} is HTTP/2's (and HTTP/3's) streams per connection: it needs http = \"2\" or \"3\" in [load] (the load speaks HTTP/{http})")]
    Http2 {
        what: &'static str,
        http: &'static str,
    },
    #[error("Apache's prefork MPM (the default) refuses HTTP/2: mod_http2 needs a threaded MPM; set mpm = \"event\" in [target]")]
    ThreadedMpm,
    #[error("needs [load.tls] (the clients speak TLS to a `target.tls = true` server)")]
    LoadTls,
    #[error("the target does not speak TLS (kind = \"{kind}\" without tls = true): add tls = true to [target], or remove [load.tls]")]
    TargetTls { kind: &'static str },
    #[error(
        "x25519mlkem768 exists only in TLS 1.3: use version = \"1.3\", or group x25519 or p256"
    )]
    Tls13Group,
    #[error("verify = true against a kind = \"{kind}\" target needs the CA its certificate is signed by: ca = \"path/to/ca.pem\"")]
    Ca { kind: &'static str },
    #[error("resuming by session ids needs the server's session cache: set target.tls_session_cache = true, or resumption = \"tickets\"")]
    SessionCache,
    #[error("resuming TLS 1.2 by tickets needs the server's tickets: set target.tls_tickets = true, or resumption = \"ids\"")]
    Tickets,
    #[error("the server keeps no sessions (tls_session_cache and tls_tickets are off): nothing can resume; set resumed = 0 or turn one on")]
    Sessions,
    #[error("`{param}` needs a [network] section")]
    Network { param: String },
    #[error("changes {keys} but the scenario has no [network] section")]
    StepNetwork { keys: String },
    #[error("steers the server's receive processing in the network lab: add a [network] section")]
    SteerNetwork,
    #[error("`{param}` needs a target that speaks TLS: add tls = true to [target]")]
    SweepTls { param: String },
    #[error("needs at least one value")]
    Values,
}

/// Why a key does not belong to this target (it would be silently ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotHere {
    #[error("is used only with kind = \"{0}\"")]
    OnlyKind(&'static str),
    #[error("is used only with kind = \"nginx\" or \"apache\"")]
    OnlyRealServer,
    #[error(
        "is used only with kind = \"nginx\" (lines of its events {{}} block; Apache has none)"
    )]
    NginxEvents,
    #[error("the built-in server reports its own count")]
    BuiltinCounts,
    #[error("synlab writes and counts this server's access log itself")]
    SynlabLogs,
    #[error("synlab starts this server and follows the process it started")]
    SynlabStarts,
    #[error(
        "configures the built-in server only; its server is configured by its own command or files"
    )]
    BuiltinOnly,
    #[error("is used only with tls = true")]
    OnlyTls,
    #[error("the lab makes the certificate and TLS config only of the built-in server, nginx, Apache and Caddy")]
    LabCert,
}

/// A value not written as its key takes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Written {
    #[error("`{0}` is not an address:port, e.g. \"127.0.0.1:8080\"")]
    NotAddress(String),
    #[error("`{0}` is not on this host: a server already running is loaded only on this host's loopback (127.0.0.0/8, ::1); run the server here, or let synlab start it with kind = \"command\"")]
    NotHere(std::net::SocketAddr),
    #[error("`{0}` is in the lab's 198.18.0.0/15, which exists only inside a run's own namespaces, where a server already running cannot be (from this host's namespace the address leaves the machine): give the server's loopback address, e.g. \"127.0.0.1:{port}\", or let synlab start the server (kind = \"command\", \"nginx\", ...)", port = .0.port())]
    LabRange(std::net::SocketAddr),
    #[error("`{0}` must start with /")]
    NoSlash(String),
    #[error("{path:?} holds {}, which would break the request line: write it percent-encoded (e.g. %20 for a space, %0D%0A for CR LF)", char_name(*.ch))]
    RequestLine { path: String, ch: char },
    #[error("{class:?} holds {}: a class name is one line of text", char_name(*.ch))]
    ClassLine { class: String, ch: char },
    #[error("is blank: name the class, or omit `class` to name it by its path")]
    ClassBlank,
    #[error("{0:?} is neither a DNS name nor an IP address: write the server's name (e.g. \"www.example.com\"), or \"\" to send none")]
    ServerName(String),
    #[error("{0} is not a file (a relative path is read from the scenario's folder): name the PEM file of the CA that signed the server's certificate")]
    CaFile(String),
    #[error("unknown parameter `{name}`{} (valid: {valid})", .nearest.as_ref().map(|n| format!("; did you mean `{n}`?")).unwrap_or_default())]
    UnknownParam {
        name: String,
        nearest: Option<String>,
        valid: String,
    },
    #[error("`{0}` is what the sweep varies along each curve: the curves take another parameter (e.g. load.burst over a load.rate sweep)")]
    CurvesSweptParam(String),
    #[error("requests {path}, a dynamic endpoint (/cgi, /inproc, /db) only the built-in server has; kind = \"{kind}\" serves the static files (/bytes/N, /specweb96/..., /pareto/..., /file/N): use a static workload (single, specweb96, static) or kind = \"builtin\"")]
    DynamicPath { path: String, kind: &'static str },
}

/// Times that do not fit together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Timing {
    #[error("steps must be in time order")]
    StepsOrder,
    #[error("({at}) is after the end of the run (duration = {duration})")]
    StepAfterEnd { at: String, duration: String },
    #[error("T ({t}) must exceed the largest path RTT ({rtt_s:.3}s): a slot would abort connections whose SYN-ACK is still on its way (seed 000 §4.2)")]
    TimeoutUnderRtt { t: String, rtt_s: f64 },
}

/// The sweeps that change the server: what they need of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SweepServer {
    #[error("the sweep's parameter is network.steer already: remove one of the two")]
    SteerTwice,
    #[error("target.backlog changes live only in the built-in server (it listens again with the new backlog); kind = \"{kind}\" reads its backlog at start: run one scenario per backlog and overlay them with `synlab report A B`")]
    BacklogLive { kind: &'static str },
}

/// `[[threshold]]` rules of their own (a metric or bound that cannot be read is a
/// [`super::super::gate::GateError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Threshold {
    #[error("`{metric}` is the capacity a sweep finds ([analysis] capacity): this scenario has no [sweep]")]
    CapacityNeedsSweep { metric: String },
    #[error("a threshold needs `max` or `min` (or both), e.g. {example}")]
    NoBound { example: &'static str },
    #[error("`{metric}` is judged once per series of the sweep: remove `points`, `values` and `aggregate`")]
    OncePerSeries { metric: String },
    #[error("over = \"run\" judges the whole run: remove `points` / `values`, or judge points one by one (over = \"points\")")]
    RunTakesNoPoints,
    #[error("aggregate applies only with over = \"run\"")]
    AggregateOverRun,
    #[error("point {n} does not exist: this scenario runs points 1 to {points}")]
    NoSuchPoint { n: usize, points: usize },
    #[error("this scenario has no [sweep]: choose points by number (`points = [1]`)")]
    ValuesNeedSweep,
    #[error("{value} is not one of the sweep's values ({swept})")]
    NotSwept { value: String, swept: String },
}

/// What a scenario says that no point of it uses (warnings).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unused {
    #[error("is not used: every point runs mode = \"closed\", whose clients each wait for their response (in the TUI it is the rate `c` switches to open or sclient with); remove it, or measure open or sclient points (sweep.modes)")]
    ClosedRate,
    #[error("is not used with a [sweep]: the run lasts its points' warmup + hold + cooldown (~{about}); remove it")]
    SweepDuration { about: String },
    #[error("`{param}` sets all {paths} paths at once: each value replaces every path's own ({own}), which no point uses")]
    PathsReplaced {
        param: String,
        paths: usize,
        own: String,
    },
    #[error("{streams} streams per connection, but each connection of this mode carries only requests_per_conn = {rpc} request(s) and closes: at most {rpc} stream(s) are ever open at once; set load.connections (a pool of connections that each carry many requests), mode = \"closed\", or requests_per_conn >= {streams}")]
    StreamsUnreached { streams: u32, rpc: u32 },
}

/// A character as a message names it: "a line feed (LF)", "a space".
pub fn char_name(c: char) -> String {
    match c {
        '\r' => "a carriage return (CR)".to_string(),
        '\n' => "a line feed (LF)".to_string(),
        '\t' => "a tab".to_string(),
        ' ' => "a space".to_string(),
        c => format!("the control character U+{:04X}", c as u32),
    }
}
