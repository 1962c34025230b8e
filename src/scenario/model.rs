//! The scenario file's model: what a person writes in scenarios/*.toml. Unknown keys are
//! rejected everywhere; defaults make a short file a complete experiment.

use super::units::{Bytes, Dur, Num, Percent, TimeShare};
use crate::model::load_knob::LoadKnob;
use crate::target::config::{Arch, ServiceKind};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name (defaults to the file name).
    #[serde(default)]
    pub name: String,
    /// What the experiment shows.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The paper and figure it reproduces.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reproduces: String,
    /// What a person should expect to see.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expect: String,
    /// Run length without a sweep (the TUI keeps going until quit).
    #[serde(default = "default_duration")]
    pub duration: Dur,
    #[serde(default)]
    pub target: TargetSpec,
    #[serde(default)]
    pub load: LoadSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::net::spec::NetworkSpec>,
    #[serde(default)]
    pub probe: ProbeSpec,
    #[serde(default, rename = "step", skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    #[serde(default)]
    pub output: OutputSpec,
    /// `[[threshold]]`: bounds on summary metrics that fail a headless run (exit 3).
    #[serde(default, rename = "threshold", skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<super::gate::ThresholdSpec>,
    /// `[gate]`: run-wide fail conditions (client-bound points, cross-checks).
    #[serde(default, skip_serializing_if = "super::gate::GateSpec::is_empty")]
    pub gate: super::gate::GateSpec,
    /// `[analysis]`: how the results are read (the capacity target).
    #[serde(default)]
    pub analysis: AnalysisSpec,
}

/// `[analysis]`: how a run's results are read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AnalysisSpec {
    /// The response-time target capacity is judged by (seed 004): `{ percentile = 98, under =
    /// "100ms" }` by default.
    pub capacity: crate::model::capacity::CapacityTarget,
}

fn default_duration() -> Dur {
    Dur::from_secs(60.0)
}

/// Which server the lab drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// synlab's own server (`synlab serve`), started by the lab.
    #[default]
    Builtin,
    /// A command the lab starts (nginx, apache2, your app); `{port}` in it is replaced.
    Command,
    /// A server that is already running at `address` (loopback or the lab's subnet).
    Address,
    /// nginx, configured and started by the lab (config from the `[target]` keys).
    Nginx,
    /// Apache httpd 2.4 (`apache2`), configured and started by the lab.
    Apache,
    /// Caddy 2 (`caddy`), configured and started by the lab: HTTP/1.1, and over TLS HTTP/2
    /// and HTTP/3 (QUIC on the same port, UDP) too.
    Caddy,
}

impl TargetKind {
    /// The name a scenario file uses.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Builtin => "builtin",
            TargetKind::Command => "command",
            TargetKind::Address => "address",
            TargetKind::Nginx => "nginx",
            TargetKind::Apache => "apache",
            TargetKind::Caddy => "caddy",
        }
    }

    /// nginx, Apache or Caddy: a real server whose config the lab writes.
    pub fn is_real_server(self) -> bool {
        matches!(
            self,
            TargetKind::Nginx | TargetKind::Apache | TargetKind::Caddy
        )
    }

    /// A real server whose workers, started as root, become another user (nginx, Apache):
    /// in a rootless lab that needs a subordinate uid range. Caddy stays who started it.
    pub fn switches_user(self) -> bool {
        matches!(self, TargetKind::Nginx | TargetKind::Apache)
    }
}

/// Apache's multi-processing module (kind = "apache").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApacheMpm {
    /// A process per connection (MaxRequestWorkers processes): seed 000's Apache.
    #[default]
    Prefork,
    /// Processes of 25 threads each.
    Worker,
    /// Threads, with keep-alive and lingering connections handed to a listener thread.
    Event,
}

/// How the built-in server's files are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FilesPreset {
    /// SPECweb96 classes (seed 001 Table 2).
    #[default]
    Specweb96,
    /// Pareto-distributed sizes (heavy tail).
    Pareto,
    /// Exactly the sizes in `sizes`.
    Explicit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TargetSpec {
    pub kind: TargetKind,
    pub arch: Arch,
    /// Prefork processes / threads at start.
    pub workers: u32,
    /// Hard cap on prefork processes / threads (Apache's MaxRequestWorkers, 150 as Apache
    /// ships it): past it, connections wait in the accept queue.
    pub max_workers: u32,
    /// Prefork/threaded: after the last response, shut down writing and read until the
    /// client's FIN before freeing the worker (Apache's lingering close; on by default).
    pub lingering_close: bool,
    /// Longest silence waited for in a lingering close (Apache: 2s).
    pub linger_timeout: Dur,
    /// listen() backlog (the kernel caps it at net.core.somaxconn).
    pub backlog: u32,
    /// Per-request service time; sets the capacity (event + cpu: 1 / service_time).
    pub service_time: Dur,
    pub service: ServiceKind,
    pub files: FilesPreset,
    /// Explicit file sizes (files = "explicit"), e.g. ["1294", "10k"].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<Bytes>,
    /// Pareto shape and minimum size (files = "pareto").
    pub pareto_alpha: f64,
    pub pareto_min: Bytes,
    pub pareto_count: u32,
    pub keepalive: bool,
    /// Port to listen on (0 = pick a free one).
    pub port: u16,
    /// kind = "command": the command line; `{port}` is replaced by the port.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// kind = "address": where the server listens.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub address: String,
    /// kind = "address": the server's process (its CPU, processes and CPU per response);
    /// without it, the process holding the port's listening socket, where we may see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Pin the server to these CPUs (empty = no pinning).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// kind = "command" / "address": the server's access log (common or combined format);
    /// its lines count as the server's responses for the server-vs-client check.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub access_log: String,
    /// kind = "apache": the MPM (default prefork).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpm: Option<ApacheMpm>,
    /// kind = "nginx" / "apache": lines added to the generated config (nginx: inside `http {}`;
    /// Apache: at the end of the server config).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_config: Vec<String>,
    /// kind = "nginx": lines added inside the generated config's `events {}` block
    /// (`worker_connections`, `multi_accept`, `use epoll`, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_events: Vec<String>,
    /// The server speaks TLS (HTTPS): the built-in server, nginx and Apache with a certificate
    /// the lab makes at start; a command or address target says so of itself.
    #[serde(skip_serializing_if = "is_false")]
    pub tls: bool,
    /// The certificate's key (built-in, nginx, Apache): "ecdsa-p256" (default) or "rsa-2048".
    pub tls_key: crate::tls::KeyKind,
    /// Keep TLS sessions in a cache (resumption by session id; TLS 1.3 tickets that are ids).
    pub tls_session_cache: bool,
    /// Issue stateless session tickets.
    pub tls_tickets: bool,
    // issue 46 (HTTP/2 target)
    /// Built-in server over HTTP/2 (event arch: h2 by ALPN, h2c): streams served at once per
    /// connection, its SETTINGS_MAX_CONCURRENT_STREAMS (nginx's default: 128).
    pub max_streams: u32,
    // issue 47 (HTTP/3 target)
    /// Built-in server over TLS (event arch): also serve HTTP/3 on UDP, same port.
    #[serde(skip_serializing_if = "is_false")]
    pub http3: bool,
    /// HTTP/3: answer each first Initial with a Retry (address validation).
    #[serde(skip_serializing_if = "is_false")]
    pub quic_retry: bool,
    /// HTTP/3: accept 0-RTT data on resumptions from the session cache.
    #[serde(skip_serializing_if = "is_false")]
    pub quic_early_data: bool,
    /// HTTP/3: the UDP socket's receive buffer (SO_RCVBUF; unset: rmem_default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<Bytes>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for TargetSpec {
    fn default() -> Self {
        TargetSpec {
            kind: TargetKind::Builtin,
            arch: Arch::Event,
            workers: 4,
            max_workers: crate::target::config::DEFAULT_MAX_WORKERS,
            lingering_close: true,
            linger_timeout: Dur(crate::target::linger::SECONDS_TO_LINGER),
            backlog: 128,
            service_time: Dur::from_secs(0.001),
            service: ServiceKind::Cpu,
            files: FilesPreset::Specweb96,
            sizes: Vec::new(),
            pareto_alpha: 1.2,
            pareto_min: Bytes(1024),
            pareto_count: 100,
            keepalive: false,
            port: 0,
            command: String::new(),
            address: String::new(),
            pid: None,
            cpus: Vec::new(),
            access_log: String::new(),
            mpm: None,
            extra_config: Vec::new(),
            extra_events: Vec::new(),
            tls: false,
            tls_key: crate::tls::KeyKind::EcdsaP256,
            tls_session_cache: true,
            tls_tickets: true,
            max_streams: crate::http2::server::DEFAULT_MAX_STREAMS,
            http3: false,
            quic_retry: false,
            quic_early_data: false,
            rcvbuf: None,
        }
    }
}

pub use crate::load::protocol::{Arrivals, Mode};

/// HTTP version the clients speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum HttpVersion {
    /// A new connection per request (seed 000 models only HTTP/1.0).
    #[default]
    #[serde(rename = "1.0")]
    Http10,
    /// Keep-alive, `requests_per_conn` requests per connection.
    #[serde(rename = "1.1")]
    Http11,
    /// HTTP/2: `streams` concurrent requests per connection (h2 by ALPN over TLS, h2c with
    /// prior knowledge over plain TCP).
    #[serde(rename = "2")]
    Http2,
    /// HTTP/3 over QUIC (UDP, always TLS 1.3): `streams` concurrent requests per connection
    /// (issue 47; the target serves HTTP/3: the built-in server with `http3`, or Caddy).
    #[serde(rename = "3")]
    Http3,
}

pub use crate::model::workload::Workload;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadSpec {
    pub mode: Mode,
    /// Attempts/s (open; sclient when set). Omit in sclient mode to run D slots flat out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Num>,
    pub arrivals: Arrivals,
    /// D: sclient slots / cap on concurrent attempts (open), over all workers.
    pub sockets: u32,
    /// T: connect timeout (must exceed the path RTT).
    pub timeout: Dur,
    /// N: closed-loop clients, over all workers.
    pub clients: u32,
    /// Closed-loop think time between a response and the next request.
    pub think: Dur,
    pub response_timeout: Dur,
    /// Worker processes sharing the load.
    pub workers: u32,
    pub http: HttpVersion,
    /// M: over HTTP/2, the concurrent streams per connection (h2load's `-m`); only with
    /// http = "2" (default 1 there, as h2load's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    pub requests_per_conn: u32,
    pub workload: Workload,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mix: Vec<MixSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<BurstSpec>,
    /// Pin workers to these CPUs (empty = no pinning).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// Open mode with http = "1.1": a pool of this many persistent connections over all
    /// workers; `rate` is then requests/s, each request sent on an idle connection of the pool
    /// and timed from its scheduled time. None: `rate` is connections/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    /// `[load.tls]`: how the clients speak TLS to a `tls = true` target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
}

/// `[load.tls]`: the clients' TLS (the target needs `tls = true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSpec {
    /// "1.3" (default) or "1.2".
    pub version: crate::tls::TlsVersion,
    /// The share of handshakes that resume a session, 0 to 1, by schedule (exact over the run).
    pub resumed: f64,
    /// Over HTTP/3: the share of the resumed handshakes that send their first requests as
    /// 0-RTT early data, 0 to 1 (the server must accept it: `target.quic_early_data`).
    pub early_data: f64,
    /// How a session is resumed: "tickets" (default) or "ids" (the server's session cache).
    pub resumption: crate::tls::ResumeBy,
    /// Key exchange: "x25519" (default), "p256", or the hybrid "x25519mlkem768".
    pub group: crate::tls::KxGroup,
    /// The server name sent (SNI) and verified; "" sends none. Default: the lab
    /// certificate's name.
    pub sni: String,
    /// Verify the server's certificate (against the lab's CA, or `ca`); off by default.
    pub verify: bool,
    /// A PEM file of CA certificates to verify against instead of the lab's.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ca: String,
    /// A handshake not done after this long fails (a handshake timeout).
    pub handshake_timeout: Dur,
}

impl Default for TlsSpec {
    fn default() -> Self {
        TlsSpec {
            version: Default::default(),
            resumed: 0.0,
            early_data: 0.0,
            resumption: Default::default(),
            group: Default::default(),
            sni: crate::tls::settings::LAB_NAME.to_string(),
            verify: false,
            ca: String::new(),
            handshake_timeout: Dur::from_secs(5.0),
        }
    }
}

impl LoadSpec {
    /// The live knobs' values it sets (the burst's two when it has a burst, the resumed share
    /// when it has `[load.tls]`).
    pub fn load_values(&self) -> Vec<(LoadKnob, f64)> {
        let burst = self.burst.as_ref();
        [
            self.rate.map(|r| (LoadKnob::Rate, r.0)),
            Some((LoadKnob::Sockets, self.sockets as f64)),
            Some((LoadKnob::Clients, self.clients as f64)),
            burst.map(|b| (LoadKnob::BurstRatio, b.ratio)),
            burst.map(|b| (LoadKnob::BurstFraction, b.fraction.fraction())),
            self.tls.as_ref().map(|t| (LoadKnob::Resumed, t.resumed)),
            self.streams.map(|m| (LoadKnob::Streams, m as f64)),
            Some((LoadKnob::RequestsPerConn, self.requests_per_conn as f64)),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Streams per connection over HTTP/2 when `load.streams` is not written (h2load's `-m`).
pub const DEFAULT_STREAMS: u32 = 1;

impl LoadSpec {
    /// Over HTTP/2, the streams per connection (M, written or the default); None over HTTP/1.x.
    pub fn streams_per_connection(&self) -> Option<u32> {
        matches!(self.http, HttpVersion::Http2 | HttpVersion::Http3)
            .then(|| self.streams.unwrap_or(DEFAULT_STREAMS))
    }
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            mode: Mode::Sclient,
            rate: None,
            arrivals: Arrivals::Poisson,
            sockets: 100,
            timeout: Dur::from_secs(0.5),
            clients: 16,
            think: Dur::default(),
            response_timeout: Dur::from_secs(10.0),
            workers: 1,
            http: HttpVersion::Http10,
            streams: None,
            requests_per_conn: 1,
            workload: Workload::Single,
            mix: Vec::new(),
            burst: None,
            cpus: Vec::new(),
            connections: None,
            tls: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    /// Empty: the class is named by the path (a written `class = ""` is refused).
    #[serde(
        default,
        deserialize_with = "class_name",
        skip_serializing_if = "String::is_empty"
    )]
    pub class: String,
    pub path: String,
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

/// A written class name: not empty (omitting `class` names the class by its path).
fn class_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let name = String::deserialize(d)?;
    if name.is_empty() {
        return Err(serde::de::Error::custom(
            "a class name cannot be empty: name the class, or omit `class` to name it by its path",
        ));
    }
    Ok(name)
}

/// Burst modulation (seed 000 Fig. 8): `ratio` = peak / average, `fraction` = share of time at
/// peak, `period` = length of one on/off cycle; the average stays the configured rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstSpec {
    pub ratio: f64,
    /// A percentage (`"10%"`); a bare number is refused as ambiguous.
    pub fraction: TimeShare,
    #[serde(default = "default_period")]
    pub period: Dur,
    /// Start with bursts off (the TUI's burst key turns them on).
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn default_period() -> Dur {
    Dur::from_secs(10.0)
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProbeSpec {
    pub interval: Dur,
    /// Count SYNs with pcap (needs CAP_NET_RAW; else estimated from kernel counters).
    pub pcap: bool,
    /// Interface to capture on (default: `lo` on loopback, the server's port in the lab).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub iface: String,
    /// Count the kernel's own drop reasons (skb:kfree_skb per reason; root). Off by default:
    /// it costs the kernel CPU on every drop (model::kreasons::OFF_COST).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kernel_reasons: bool,
}

impl Default for ProbeSpec {
    fn default() -> Self {
        ProbeSpec {
            interval: Dur::from_secs(0.2),
            pcap: true,
            iface: String::new(),
            kernel_reasons: false,
        }
    }
}

/// A timed change during a run (and a caption for a lesson).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// When, from the start of the run.
    pub at: Dur,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sockets: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// M: HTTP/2 streams per connection (the scenario needs http = "2").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// The requests a kept-alive connection carries (the scenario needs keep-alive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_conn: Option<u32>,
    /// Turn bursts on/off (uses [load.burst] or ratio/fraction given here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_fraction: Option<TimeShare>,
    /// Network path the rtt/jitter/loss/bandwidth below apply to (default: all paths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<Percent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<super::units::Bandwidth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<bool>,
    /// The share of TLS handshakes that resume a session (needs `[load.tls]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<f64>,
    /// `net.ipv4.tcp_syncookies` in the server's namespace from this step on (0 off, 1 when a
    /// SYN queue overflows, 2 always; needs the lab: `[network]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncookies: Option<u8>,
    /// Put a named mark on the charts and in the results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// The caption's claims as checks the TUI judges live on the latest second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<crate::model::expect::Expect>,
}

impl Step {
    /// The load knobs it sets (the burst's two as written), in the order they are applied.
    pub fn load_values(&self) -> Vec<(LoadKnob, f64)> {
        [
            self.rate.map(|r| (LoadKnob::Rate, r.0)),
            self.sockets.map(|n| (LoadKnob::Sockets, n as f64)),
            self.clients.map(|n| (LoadKnob::Clients, n as f64)),
            self.streams.map(|m| (LoadKnob::Streams, m as f64)),
            self.requests_per_conn
                .map(|n| (LoadKnob::RequestsPerConn, n as f64)),
            self.burst_ratio.map(|r| (LoadKnob::BurstRatio, r)),
            self.burst_fraction
                .map(|f| (LoadKnob::BurstFraction, f.fraction())),
            self.tls_resumed.map(|r| (LoadKnob::Resumed, r)),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The path knobs it sets, in the order they are applied.
    pub fn path_values(&self) -> Vec<crate::model::knob::PathValue> {
        use crate::model::knob::PathValue as V;
        [
            self.rtt.map(V::Rtt),
            self.jitter.map(V::Jitter),
            self.loss.map(V::Loss),
            self.bandwidth.map(|b| V::Bandwidth(Some(b))),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

pub use crate::model::sweep::SweepParam;

impl Sweep {
    /// The swept parameter; None only in a scenario that failed validation.
    pub fn kind(&self) -> Option<SweepParam> {
        SweepParam::from_name(&self.param)
    }

    /// The `[sweep.curves]` parameter, if the sweep has curves.
    pub fn curve_kind(&self) -> Option<SweepParam> {
        self.curves.as_ref().and_then(|c| c.kind())
    }
}

/// One parameter over a list of values, each point run for warmup + hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub param: String,
    /// Values of the parameter (numbers or strings with units; for load.burst,
    /// [ratio, fraction %] pairs).
    pub values: Vec<toml::Value>,
    #[serde(default = "default_warmup")]
    pub warmup: Dur,
    #[serde(default = "default_hold")]
    pub hold: Dur,
    /// Pause between points so TIME_WAIT and queues drain.
    #[serde(default)]
    pub cooldown: Dur,
    /// Run the whole sweep once per mode (e.g. ["closed", "sclient"] for seed 000 Fig. 5 vs 6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<Mode>,
    /// Run each value once per receive steering, back to back (`["server", "sender"]`: the
    /// server's receive processing on its own CPUs, then on the sending CPU, at every value),
    /// a second dimension that changes live (root only: see `[network] steer`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steer: Vec<crate::model::Steer>,
    /// `[sweep.curves]`: run the whole sweep once per value of a second parameter, one curve
    /// each (seed 000 Fig. 8: throughput vs average rate, one curve per burst shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curves: Option<Curves>,
}

/// `[sweep.curves]`: a second parameter, one curve per value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Curves {
    pub param: String,
    pub values: Vec<toml::Value>,
}

impl Curves {
    /// The curves' parameter; None only in a scenario that failed validation.
    pub fn kind(&self) -> Option<SweepParam> {
        SweepParam::from_name(&self.param)
    }
}

fn default_warmup() -> Dur {
    Dur::from_secs(2.0)
}
fn default_hold() -> Dur {
    Dur::from_secs(5.0)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSpec {
    /// Parent folder of run folders (default ./results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Trials of a repeated run (`synlab run --repeat N` overrides it; default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<usize>,
}
