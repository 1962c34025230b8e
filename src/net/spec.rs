//! The scenario's `[network]` section: backend, client addressing, per-netns sysctls and the
//! `[[network.path]]` profiles (rtt, jitter, loss model, bandwidth, queue), with validation
//! errors that name the key path (`network.path[1].loss`).

use crate::model::knob::{PathKnob, PathValue};
use crate::model::units::{Bandwidth, Dur, Percent};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Most paths a lab carries (link names keep a one-digit path index to stay within 15 chars).
pub const MAX_PATHS: usize = 10;

/// Which shaping backend runs the paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// netem when the kernel has sch_netem, else the user-space router.
    #[default]
    Auto,
    Netem,
    Router,
    /// Plain veths, no shaping.
    None,
}

/// The `[network]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkSpec {
    pub backend: BackendChoice,
    /// Addresses per client netns (more addresses = more ephemeral ports for TIME_WAIT-heavy load).
    pub client_addrs: u32,
    /// ip_local_port_range of the client namespaces (unless `sysctl.client` sets it).
    pub port_range: PortRange,
    pub sysctl: SysctlSpec,
    /// Where the server's receive processing runs: its own CPUs (`server`, as a real host's
    /// NIC interrupts) or the CPU that sent each packet (`sender`, a veth's own behaviour).
    pub steer: crate::model::Steer,
    #[serde(rename = "path")]
    pub paths: Vec<PathSpec>,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            backend: BackendChoice::Auto,
            client_addrs: 4,
            port_range: PortRange(1024, 65535),
            sysctl: SysctlSpec::default(),
            steer: crate::model::Steer::Server,
            paths: Vec::new(),
        }
    }
}

/// Per-netns sysctls: `[network.sysctl.server]` and `[network.sysctl.client]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SysctlSpec {
    pub server: SysctlSet,
    pub client: SysctlSet,
}

/// The sysctls the lab sets in a namespace; None = the kernel's default for a new netns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SysctlSet {
    pub somaxconn: Option<u32>,
    pub tcp_max_syn_backlog: Option<u32>,
    pub ip_local_port_range: Option<PortRange>,
    pub tcp_syncookies: Option<u8>,
    pub tcp_fin_timeout: Option<u32>,
    pub tcp_tw_reuse: Option<u8>,
    pub tcp_max_tw_buckets: Option<u32>,
    /// net.core.rmem_max: read and refused (see [`RMEM_MAX_REFUSED`]); kept as a key so the
    /// error says why instead of "unknown key".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rmem_max: Option<u64>,
}

/// Why `network.sysctl.*.rmem_max` is refused (issue 47): measured on kernel 6.18, a new
/// network namespace shows net.core.rmem_max read-only (mode 0444, the first namespace's value;
/// a write fails with EACCES even as root), so the only place to set it is the whole machine,
/// which the lab never changes. tests/quic_lab.rs holds the measurement.
pub const RMEM_MAX_REFUSED: &str = "net.core.rmem_max is one value for the whole machine (a \
     network namespace shows it read-only), and the lab changes nothing outside its \
     namespaces; set target.rcvbuf instead (the built-in server forces its UDP socket's buffer \
     past rmem_max with SO_RCVBUFFORCE), or raise rmem_max on the host yourself";

impl SysctlSet {
    /// (key under /proc/sys, value) pairs, in a stable order.
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        let mut put = |k: &'static str, val: Option<String>| {
            if let Some(val) = val {
                v.push((k, val));
            }
        };
        put("net/core/somaxconn", self.somaxconn.map(|x| x.to_string()));
        put(
            "net/ipv4/tcp_max_syn_backlog",
            self.tcp_max_syn_backlog.map(|x| x.to_string()),
        );
        put(
            "net/ipv4/ip_local_port_range",
            self.ip_local_port_range.map(|r| format!("{} {}", r.0, r.1)),
        );
        put(
            "net/ipv4/tcp_syncookies",
            self.tcp_syncookies.map(|x| x.to_string()),
        );
        put(
            "net/ipv4/tcp_fin_timeout",
            self.tcp_fin_timeout.map(|x| x.to_string()),
        );
        put(
            "net/ipv4/tcp_tw_reuse",
            self.tcp_tw_reuse.map(|x| x.to_string()),
        );
        put(
            "net/ipv4/tcp_max_tw_buckets",
            self.tcp_max_tw_buckets.map(|x| x.to_string()),
        );
        v
    }
}

/// Why a port range cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PortRangeError {
    #[error("`{0}` is not a port range; write e.g. \"1024-65535\"")]
    NotARange(String),
    #[error("`{port}` in `{range}` is not a port (1-65535)")]
    NotAPort { port: String, range: String },
}

/// A port range written `"1024-65535"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange(pub u16, pub u16);

impl PortRange {
    pub fn parse(s: &str) -> Result<Self, PortRangeError> {
        let (a, b) = s
            .split_once('-')
            .ok_or_else(|| PortRangeError::NotARange(s.into()))?;
        let p = |x: &str| {
            x.trim()
                .parse::<u16>()
                .map_err(|_| PortRangeError::NotAPort {
                    port: x.into(),
                    range: s.into(),
                })
        };
        Ok(PortRange(p(a)?, p(b)?))
    }
    /// Ports in the range.
    pub fn len(&self) -> u32 {
        (self.1 as u32 + 1).saturating_sub(self.0 as u32)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

impl Serialize for PortRange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for PortRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        PortRange::parse(&s).map_err(de::Error::custom)
    }
}

/// How frames are lost on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LossModel {
    /// Each frame is lost independently with probability `loss`.
    #[default]
    Bernoulli,
    /// Gilbert-Elliott: a two-state chain (`[network.path.gilbert]`) for bursty loss.
    Gilbert,
}

/// Gilbert-Elliott parameters, per frame: p = P(good -> bad), r = P(bad -> good), and the loss
/// probability in each state (netem's `loss gemodel p r 1-h 1-k`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gilbert {
    pub p: Percent,
    pub r: Percent,
    #[serde(default = "hundred")]
    pub loss_bad: Percent,
    #[serde(default)]
    pub loss_good: Percent,
}

fn hundred() -> Percent {
    Percent(100.0)
}

impl Gilbert {
    /// Long-run loss rate of the chain.
    pub fn mean_loss(&self) -> f64 {
        let (p, r) = (self.p.fraction(), self.r.fraction());
        if p + r == 0.0 {
            return self.loss_good.fraction();
        }
        let bad = p / (p + r);
        bad * self.loss_bad.fraction() + (1.0 - bad) * self.loss_good.fraction()
    }
}

/// The client populations of seed 000 §4.4 as named path profiles: "clients connected to the
/// server via fast networks, such as a LAN ... home users, connected via modems ... moderate
/// latency and high-bandwidth cross-country backbone networks ... lossy networks, such as
/// wireless networks". The paper gives no figures: these are the era's (a switched 100 Mbit
/// LAN, a 56k modem with its ~150 ms round trip, a T3 across the US, a 2 Mbit WaveLAN with 2 %
/// loss). A path's own keys override its profile's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// rtt 1 ms, 100 mbit.
    Lan,
    /// rtt 150 ms, 56 kbit, a modem's short queue (20 frames).
    Modem,
    /// rtt 70 ms, 45 mbit (T3).
    Backbone,
    /// rtt 50 ms, 2 mbit, 2 % loss.
    Wireless,
}

impl Profile {
    pub const ALL: [Profile; 4] = [
        Profile::Lan,
        Profile::Modem,
        Profile::Backbone,
        Profile::Wireless,
    ];

    /// (rtt, bandwidth, loss, queue) of the profile.
    fn values(self) -> (Dur, Bandwidth, Percent, u32) {
        let ms = |v: f64| Dur::from_secs(v / 1000.0);
        let bw = |bits: u64| Bandwidth(bits);
        match self {
            Profile::Lan => (ms(1.0), bw(100_000_000), Percent(0.0), 1000),
            Profile::Modem => (ms(150.0), bw(56_000), Percent(0.0), 20),
            Profile::Backbone => (ms(70.0), bw(45_000_000), Percent(0.0), 1000),
            Profile::Wireless => (ms(50.0), bw(2_000_000), Percent(2.0), 100),
        }
    }
}

/// One `[[network.path]]` as written: every key optional, so a profile fills in only what the
/// path does not say.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathSpecFile {
    #[serde(default)]
    name: String,
    profile: Option<Profile>,
    #[serde(
        default,
        deserialize_with = "crate::model::units::deserialize_opt_share"
    )]
    share: Option<f64>,
    rtt: Option<Dur>,
    jitter: Option<Dur>,
    reorder: Option<bool>,
    loss: Option<Percent>,
    loss_model: Option<LossModel>,
    gilbert: Option<Gilbert>,
    bandwidth: Option<Bandwidth>,
    queue: Option<u32>,
}

impl From<PathSpecFile> for PathSpec {
    fn from(f: PathSpecFile) -> Self {
        let d = PathSpec::default();
        let (rtt, bw, loss, queue) = match f.profile.map(Profile::values) {
            Some((r, b, l, q)) => (r, Some(b), l, q),
            None => (d.rtt, d.bandwidth, d.loss, d.queue),
        };
        PathSpec {
            name: f.name,
            profile: f.profile,
            share: f.share,
            rtt: f.rtt.unwrap_or(rtt),
            jitter: f.jitter.unwrap_or(d.jitter),
            reorder: f.reorder.unwrap_or(d.reorder),
            loss: f.loss.unwrap_or(loss),
            loss_model: f.loss_model.unwrap_or(d.loss_model),
            gilbert: f.gilbert,
            bandwidth: f.bandwidth.or(bw),
            queue: f.queue.unwrap_or(queue),
        }
    }
}

/// One `[[network.path]]`: a class of clients and the WAN between them and the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "PathSpecFile")]
pub struct PathSpec {
    pub name: String,
    /// The client population it starts from (seed 000 §4.4); its own keys override it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// Its share of the offered load (`0.7` or `"70%"`; the paths' shares add up to 1); None
    /// on every path: equal shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Added round-trip delay, half in each direction.
    pub rtt: Dur,
    /// Uniform +-jitter added to each direction's delay.
    pub jitter: Dur,
    /// Let jitter reorder frames (netem does; real paths mostly don't).
    pub reorder: bool,
    /// Loss in each direction (Bernoulli model).
    pub loss: Percent,
    pub loss_model: LossModel,
    pub gilbert: Option<Gilbert>,
    /// Bottleneck rate in each direction; None = unlimited.
    pub bandwidth: Option<Bandwidth>,
    /// Drop-tail limit of the bottleneck queue, in frames.
    pub queue: u32,
}

impl Default for PathSpec {
    fn default() -> Self {
        PathSpec {
            name: String::new(),
            profile: None,
            share: None,
            rtt: Dur::default(),
            jitter: Dur::default(),
            reorder: false,
            loss: Percent(0.0),
            loss_model: LossModel::Bernoulli,
            gilbert: None,
            bandwidth: None,
            queue: 1000,
        }
    }
}

impl PathSpec {
    /// Its weight in the offered load: its share, or 1 (equal shares) when no path has one.
    pub fn weight(&self) -> f64 {
        self.share.unwrap_or(1.0)
    }

    /// The value of one of its live knobs.
    pub fn get(&self, k: PathKnob) -> PathValue {
        match k {
            PathKnob::Rtt => PathValue::Rtt(self.rtt),
            PathKnob::Jitter => PathValue::Jitter(self.jitter),
            PathKnob::Loss => PathValue::Loss(self.loss),
            PathKnob::Bandwidth => PathValue::Bandwidth(self.bandwidth),
        }
    }

    /// Sets one of its live knobs. A loss set live is Bernoulli loss (a Gilbert model ends).
    pub fn set(&mut self, v: PathValue) {
        match v {
            PathValue::Rtt(d) => self.rtt = d,
            PathValue::Jitter(d) => self.jitter = d,
            PathValue::Loss(p) => {
                self.loss = p;
                self.loss_model = LossModel::Bernoulli;
                self.gilbert = None;
            }
            PathValue::Bandwidth(b) => self.bandwidth = b,
        }
    }
}

/// A validation error: the key path and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {rule}")]
pub struct SpecError {
    pub key: String,
    pub rule: SpecRule,
}

/// The `[network]` section's own rules, one variant each; the Display is the line a person
/// reads after the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecRule {
    #[error("{0} is out of range; use 1 to 250")]
    ClientAddrs(u32),
    #[error("`{0}` must be low-high with 0 < low < high")]
    PortRange(PortRange),
    #[error("`{0}` must be low-high")]
    LocalPortRange(PortRange),
    #[error("{0} is not 0, 1 or 2")]
    NotZeroOneTwo(u8),
    #[error("{}", RMEM_MAX_REFUSED)]
    RmemMax,
    #[error("0 refuses every connection; use >= 1")]
    SomaxconnZero,
    #[error("{0} paths; at most {max} are supported", max = MAX_PATHS)]
    TooManyPaths(usize),
    #[error("every path needs a name (e.g. name = \"dsl\")")]
    NoName,
    #[error("`{0}`: use up to 32 letters, digits, - or _")]
    BadName(String),
    #[error("`{0}` is used by an earlier path")]
    NameTaken(String),
    #[error("{0} must be > 0")]
    Share(f64),
    #[error(transparent)]
    Knob(#[from] crate::model::knob::KnobError),
    #[error("{0} frames; use 1 to 1000000")]
    Queue(u32),
    #[error("loss_model = \"gilbert\" needs [network.path.gilbert] with p and r")]
    GilbertMissing,
    #[error("with loss_model = \"gilbert\" the loss rate comes from gilbert.p/r; remove `loss`")]
    GilbertLoss,
    #[error("0% means the bad state never ends; use r > 0")]
    GilbertNeverEnds,
    #[error("only used with loss_model = \"gilbert\"")]
    GilbertUnused,
    #[error("`{path}` has no share while path `{first}` has one: give every path its share (they add up to 1), or none for equal shares")]
    ShareMissing { path: String, first: String },
    #[error("the paths' shares add up to {} ({}), not 1: each is its share of the load; make them add up to 1, or remove them for equal shares", (.sum * 1e6).round() / 1e6, .terms.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" + "))]
    SharesSum { sum: f64, terms: Vec<f64> },
}

fn err(key: impl Into<String>, rule: SpecRule) -> SpecError {
    SpecError {
        key: key.into(),
        rule,
    }
}

impl NetworkSpec {
    /// The paths the lab builds: the configured ones, or one unshaped path `lan`.
    pub fn effective_paths(&self) -> Vec<PathSpec> {
        if self.paths.is_empty() {
            vec![PathSpec {
                name: "lan".into(),
                ..PathSpec::default()
            }]
        } else {
            self.paths.clone()
        }
    }

    /// Checks values serde cannot: ranges, unique names, model parameters.
    pub fn validate(&self) -> Result<(), Vec<SpecError>> {
        let mut errs = Vec::new();
        if !(1..=250).contains(&self.client_addrs) {
            errs.push(err(
                "network.client_addrs",
                SpecRule::ClientAddrs(self.client_addrs),
            ));
        }
        if self.port_range.0 == 0 || self.port_range.0 >= self.port_range.1 {
            errs.push(err(
                "network.port_range",
                SpecRule::PortRange(self.port_range),
            ));
        }
        for (who, set) in [
            ("server", &self.sysctl.server),
            ("client", &self.sysctl.client),
        ] {
            let key = |k: &str| format!("network.sysctl.{who}.{k}");
            if let Some(r) = set.ip_local_port_range {
                if r.0 == 0 || r.0 >= r.1 {
                    errs.push(err(key("ip_local_port_range"), SpecRule::LocalPortRange(r)));
                }
            }
            for (k, v) in [
                ("tcp_syncookies", set.tcp_syncookies),
                ("tcp_tw_reuse", set.tcp_tw_reuse),
            ] {
                if let Some(v) = v.filter(|v| *v > 2) {
                    errs.push(err(key(k), SpecRule::NotZeroOneTwo(v)));
                }
            }
            if set.rmem_max.is_some() {
                errs.push(err(key("rmem_max"), SpecRule::RmemMax));
            }
            if set.somaxconn == Some(0) {
                errs.push(err(key("somaxconn"), SpecRule::SomaxconnZero));
            }
        }
        if self.paths.len() > MAX_PATHS {
            errs.push(err(
                "network.path",
                SpecRule::TooManyPaths(self.paths.len()),
            ));
        }
        for (i, p) in self.paths.iter().enumerate() {
            let key = |k: &str| format!("network.path[{i}].{k}");
            if p.name.is_empty() {
                errs.push(err(key("name"), SpecRule::NoName));
            } else if !p
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                || p.name.len() > 32
            {
                errs.push(err(key("name"), SpecRule::BadName(p.name.clone())));
            } else if self.paths[..i].iter().any(|q| q.name == p.name) {
                errs.push(err(key("name"), SpecRule::NameTaken(p.name.clone())));
            }
            if let Some(s) = p.share.filter(|s| !(s.is_finite() && *s > 0.0)) {
                errs.push(err(key("share"), SpecRule::Share(s)));
            }
            for &k in PathKnob::ALL {
                if let Err(e) = p.get(k).checked() {
                    errs.push(err(key(k.key()), e.into()));
                }
            }
            if p.queue == 0 || p.queue > 1_000_000 {
                errs.push(err(key("queue"), SpecRule::Queue(p.queue)));
            }
            match (p.loss_model, &p.gilbert) {
                (LossModel::Gilbert, None) => {
                    errs.push(err(key("gilbert"), SpecRule::GilbertMissing))
                }
                (LossModel::Gilbert, Some(g)) => {
                    if p.loss.0 != 0.0 {
                        errs.push(err(key("loss"), SpecRule::GilbertLoss));
                    }
                    if g.p.0 > 0.0 && g.r.0 == 0.0 {
                        errs.push(err(
                            format!("network.path[{i}].gilbert.r"),
                            SpecRule::GilbertNeverEnds,
                        ));
                    }
                }
                (LossModel::Bernoulli, Some(_)) => {
                    errs.push(err(key("gilbert"), SpecRule::GilbertUnused))
                }
                (LossModel::Bernoulli, None) => {}
            }
        }
        errs.extend(self.shares_problem());
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs)
        }
    }

    /// Shares that do not add up to 1, or given on some paths only: refused (they used to be
    /// normalized without a word, so 0.7 + 0.7 silently meant half each).
    fn shares_problem(&self) -> Option<SpecError> {
        let given: Vec<(usize, f64)> = self
            .paths
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.share.map(|s| (i, s)))
            .collect();
        let first = given.first()?.0;
        if given.iter().any(|g| !(g.1.is_finite() && g.1 > 0.0)) {
            return None; // said per path
        }
        if let Some(i) = (0..self.paths.len()).find(|i| self.paths[*i].share.is_none()) {
            return Some(err(
                format!("network.path[{i}].share"),
                SpecRule::ShareMissing {
                    path: self.paths[i].name.clone(),
                    first: self.paths[first].name.clone(),
                },
            ));
        }
        let sum: f64 = given.iter().map(|g| g.1).sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Some(err(
                format!("network.path[{first}].share"),
                SpecRule::SharesSum {
                    sum,
                    terms: given.iter().map(|g| g.1).collect(),
                },
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Wrap {
        network: NetworkSpec,
    }

    fn parse(s: &str) -> Result<NetworkSpec, toml::de::Error> {
        toml::from_str::<Wrap>(s).map(|w| w.network)
    }

    #[test]
    fn full_section_parses_with_units() {
        let n = parse(
            r#"
            [network]
            backend = "router"
            client_addrs = 8
            port_range = "2000-60000"
            [network.sysctl.server]
            somaxconn = 128
            tcp_syncookies = 0
            [[network.path]]
            name = "lan"
            share = 0.5
            [[network.path]]
            name = "dsl"
            share = 0.25
            rtt = "100ms"
            jitter = "2ms"
            loss = "1%"
            bandwidth = "10mbit"
            queue = 50
            [[network.path]]
            name = "wifi"
            share = "25%"
            loss_model = "gilbert"
            gilbert = { p = "1%", r = "30%" }
            "#,
        )
        .unwrap();
        assert_eq!(n.backend, BackendChoice::Router);
        // issue 28: a share written as a percentage is that fraction.
        assert_eq!(
            (n.paths[0].share, n.paths[2].share),
            (Some(0.5), Some(0.25))
        );
        assert_eq!(n.paths.len(), 3);
        assert_eq!(n.paths[1].rtt.0.as_millis(), 100);
        assert_eq!(n.paths[1].bandwidth.unwrap().0, 10_000_000);
        assert_eq!(n.paths[2].gilbert.unwrap().loss_bad.0, 100.0);
        assert_eq!(n.sysctl.server.somaxconn, Some(128));
        n.validate().unwrap();
    }

    #[test]
    fn defaults_give_one_lan_path_and_wide_ports() {
        let n = parse("[network]\n").unwrap();
        assert_eq!(n.client_addrs, 4);
        assert_eq!(n.port_range, PortRange(1024, 65535));
        assert_eq!(n.effective_paths()[0].name, "lan");
        n.validate().unwrap();
    }

    #[test]
    fn unknown_key_is_rejected() {
        let e =
            parse("[network]\n[[network.path]]\nname = \"a\"\nlatency = \"1ms\"\n").unwrap_err();
        assert!(e.to_string().contains("latency"), "{e}");
    }

    #[test]
    fn errors_name_the_key_path() {
        let n = parse(
            r#"
            [network]
            client_addrs = 0
            [[network.path]]
            name = "a"
            share = 1
            [[network.path]]
            name = "a"
            share = 0
            loss_model = "gilbert"
            loss = "5%"
            gilbert = { p = "1%", r = "0%" }
            "#,
        )
        .unwrap();
        let keys: Vec<String> = n
            .validate()
            .unwrap_err()
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(
            keys,
            [
                "network.client_addrs",
                "network.path[1].name",
                "network.path[1].share",
                "network.path[1].loss",
                "network.path[1].gilbert.r"
            ]
        );
    }

    /// issue 47: rmem_max is machine-wide, so it is refused with the reason and what to do.
    #[test]
    fn rmem_max_is_refused_with_its_reason() {
        let n = parse(
            r#"
            [network.sysctl.server]
            rmem_max = 26214400
            "#,
        )
        .unwrap();
        let errs = n.validate().unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].key, "network.sysctl.server.rmem_max");
        assert_eq!(errs[0].rule, SpecRule::RmemMax);
        assert_eq!(errs[0].rule.to_string(), RMEM_MAX_REFUSED);
        assert!(RMEM_MAX_REFUSED.contains("target.rcvbuf"));
    }

    #[test]
    fn gilbert_mean_loss() {
        let g = Gilbert {
            p: Percent(1.0),
            r: Percent(19.0),
            loss_bad: Percent(100.0),
            loss_good: Percent(0.0),
        };
        assert!((g.mean_loss() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn a_live_loss_replaces_a_gilbert_model() {
        let mut p = PathSpec {
            loss_model: LossModel::Gilbert,
            gilbert: Some(Gilbert {
                p: Percent(1.0),
                r: Percent(19.0),
                loss_bad: Percent(100.0),
                loss_good: Percent(0.0),
            }),
            ..PathSpec::default()
        };
        p.set(PathValue::Loss(Percent(2.0)));
        assert_eq!(p.get(PathKnob::Loss), PathValue::Loss(Percent(2.0)));
        assert_eq!((p.loss_model, p.gilbert), (LossModel::Bernoulli, None));
    }
}
