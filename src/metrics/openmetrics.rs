//! `--metrics ADDR`: the lab's time series as OpenMetrics text at `http://ADDR/metrics`, for an
//! existing Prometheus. Each series of the store is its latest sample: a counter for a count
//! since the run started, else a gauge (rates, queue lengths, latency percentiles, CPU), named
//! and scaled to base units from its column's kind and unit (`model::Col`); encoded by
//! prometheus-client, a tiny std HTTP responder thread serves the latest exposition. A bare
//! port binds loopback: another interface only when the user names it.

use crate::metrics::hist::{bucket_bounds_s, Buckets};
use crate::model::{col, Col, Kind, Scope, Unit};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// The OpenMetrics content type Prometheus negotiates.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus text format, for clients that do not ask for OpenMetrics (curl, promtool).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The OpenMetrics exposition in the Prometheus text format 0.0.4: the same samples, with a
/// counter's HELP and TYPE naming its `_total` sample (OpenMetrics names the family without
/// it) and no `# EOF`.
pub fn to_classic(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        // Neither the end marker nor units are part of the text format 0.0.4.
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match meta {
            Some((p, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let name = if counters.contains(&name) {
                    format!("{name}_total")
                } else {
                    name.to_string()
                };
                out.push_str(&format!("{p}{name} {tail}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// `9464` means 127.0.0.1:9464; `ADDR:PORT` is taken as written.
pub fn parse_addr(s: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| {
        anyhow::anyhow!(
            "--metrics `{s}` is not a port or an address:port, e.g. 9464 or 127.0.0.1:9464"
        )
    })
}

/// How a unit is spelt in a column's name, its base unit as Prometheus spells it, and the
/// factor to that base unit; None for a unit that stays as it is (counts, pages, flags).
fn base_unit(unit: Unit) -> Option<(&'static [&'static str], &'static str, f64)> {
    match unit {
        Unit::PerSecond => Some((&["per", "s"], "per_second", 1.0)),
        Unit::Seconds => Some((&["s"], "seconds", 1.0)),
        Unit::Milliseconds => Some((&["ms"], "seconds", 1e-3)),
        Unit::Microseconds => Some((&["us"], "seconds", 1e-6)),
        Unit::Percent => Some((&["pct"], "ratio", 1e-2)),
        Unit::Megabytes => Some((&["mb"], "bytes", 1048576.0)),
        Unit::Pages => Some((&["pages"], "pages", 1.0)),
        Unit::Bytes => Some((&["bytes"], "bytes", 1.0)),
        Unit::Count | Unit::Flag => None,
    }
}

/// A time-series column as Prometheus names it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSeries {
    /// The name without the `synlab_` prefix, its unit, or a counter's `_total`.
    pub stem: String,
    /// The base unit the name ends with, said by a `# UNIT` line; None for counts and flags.
    pub unit: Option<&'static str>,
    /// The value in that unit.
    pub value: f64,
    /// A count since the run or its source started (the encoder adds `_total`).
    pub counter: bool,
}

impl PromSeries {
    /// Its name without the prefix: the stem and the unit.
    pub fn name(&self) -> String {
        match self.unit {
            Some(u) => format!("{}_{u}", self.stem),
            None => self.stem.clone(),
        }
    }
}

/// A time-series column as Prometheus names it, from the column's unit and kind: the unit's
/// word in the name swapped for its base unit at the end (`_ms` -> `_seconds`, `_pct` ->
/// `_ratio`, `_mb` -> `_bytes`, `_per_s` -> `_per_second`), added where the name does not
/// spell it (`target_rate` -> `target_rate_per_second`), and the value scaled to match; a
/// counter (a count since the run or its source started) without its `_total`.
pub fn prom_series(column: Col, v: f64) -> PromSeries {
    let name = column.name();
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut words: Vec<&str> = clean.split('_').filter(|w| !w.is_empty()).collect();
    let counter = column.kind() == Kind::Counter;
    if counter && words.last() == Some(&"total") {
        words.pop();
    }
    let (unit, value) = match base_unit(column.unit()) {
        Some((spelt, base, scale)) if !counter => {
            // The unit is the last word that spells it: a path may be called `ms`.
            if let Some(i) = words.windows(spelt.len()).rposition(|w| w == spelt) {
                words.drain(i..i + spelt.len());
            }
            (Some(base), v * scale)
        }
        _ => (None, v),
    };
    PromSeries {
        stem: words.join("_"),
        unit,
        value,
        counter,
    }
}

/// A latency distribution since the run began, in fixed buckets 1.044x apart
/// ([`bucket_bounds_s`]), as an OpenMetrics histogram: `histogram_quantile` over them is
/// within 5 % of the run's own percentiles.
#[derive(Debug)]
struct FixedHistogram(Buckets);

impl prometheus_client::encoding::EncodeMetric for FixedHistogram {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        let bounds = bucket_bounds_s().iter().copied().chain([f64::INFINITY]);
        let buckets: Vec<(f64, u64)> = bounds.zip(self.0.counts.iter().copied()).collect();
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum_s,
            self.0.count,
            &buckets,
            None,
        )
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Histogram
    }
}

/// What a latency histogram of the run is (its HELP).
fn histogram_help(name: &str) -> String {
    match name {
        "connect_latency" => "Connect time of every connection the load clients completed since the run began, from the scheduled start".into(),
        "total_latency" => "Response time (scheduled start to last byte) of every request the load clients completed since the run began".into(),
        "tls_handshake_latency" => "Duration of every TLS handshake the load clients completed since the run began, from the connect's end".into(),
        other => format!("Latency distribution `{other}` since the run began"),
    }
}

/// Registers one series, with a `# UNIT` when it has a unit.
fn register(
    reg: &mut Registry,
    stem: String,
    help: String,
    unit: Option<&'static str>,
    m: impl prometheus_client::registry::Metric,
) {
    use prometheus_client::registry::Unit as P;
    match unit {
        Some("seconds") => reg.register_with_unit(stem, help, P::Seconds, m),
        Some("bytes") => reg.register_with_unit(stem, help, P::Bytes, m),
        Some(u) => reg.register_with_unit(stem, help, P::Other(u.into()), m),
        None => reg.register(stem, help, m),
    }
}

/// A request class's figure: one family (`synlab_class_<figure>`), a `class` label per class.
type ClassFamily =
    prometheus_client::metrics::family::Family<Vec<(String, String)>, Gauge<f64, AtomicU64>>;

/// A probe figure's counter with its `scope` label.
type ScopedCounter = prometheus_client::metrics::family::Family<
    Vec<(String, String)>,
    prometheus_client::metrics::counter::Counter<f64, AtomicU64>,
>;

/// Whose a series is, for its `scope` label: the probes' figures only (the port's, the
/// namespace's, the machine's, the server process's, the probes' own); the SYN rate's by its
/// source in the same exposition (`syn_in_estimated`).
fn scope_of(column: Col, series: &[(Col, f64)]) -> Option<Scope> {
    if column == col::SYN_IN {
        let estimated = series
            .iter()
            .find(|(c, _)| *c == col::SYN_IN_ESTIMATED)
            .map(|&(_, v)| v)?;
        return estimated
            .is_finite()
            .then(|| Scope::of_syn_rate(estimated == 1.0));
    }
    column.scope()
}

/// Encodes `(column, value)` series as an OpenMetrics exposition (`synlab_` prefixed; NaN
/// series are left out: not measured), each with its column's help and unit, and latency
/// distributions `(name, buckets)` as histograms (`synlab_<name>_seconds`). A request class's
/// columns are one family per figure with a `class` label
/// (`synlab_class_responses_per_second{class="static"}`). A probe figure carries its
/// `scope` label (`synlab_time_wait{scope="netns"}`, `synlab_port_time_wait{scope="port"}`), so
/// a namespace-wide count never passes for the server port's.
pub fn encode(series: &[(Col, f64)], hists: &[(&str, Buckets)]) -> String {
    use prometheus_client::metrics::counter::Counter;
    let mut reg = Registry::with_prefix("synlab");
    let mut families: Vec<(Col, ClassFamily)> = Vec::new();
    for &(column, v) in series {
        if !v.is_finite() {
            continue;
        }
        if let Some(class) = column.class() {
            let fig = column.figure();
            let p = prom_series(fig, v);
            let fam = match families.iter().position(|(f, _)| *f == fig) {
                Some(i) => &families[i].1,
                None => {
                    let fam = ClassFamily::default();
                    register(
                        &mut reg,
                        format!("class_{}", p.stem),
                        format!("{}, per request class (label `class`)", fig.help()),
                        p.unit,
                        fam.clone(),
                    );
                    families.push((fig, fam));
                    &families.last().expect("just pushed").1
                }
            };
            fam.get_or_create(&vec![("class".to_string(), class.as_str().to_string())])
                .set(p.value);
            continue;
        }
        let p = prom_series(column, v);
        let help = column.help().into_owned();
        if let Some(scope) = scope_of(column, series) {
            let label = vec![("scope".to_string(), scope.key().to_string())];
            if p.counter {
                let fam = ScopedCounter::default();
                fam.get_or_create(&label).inc_by(p.value.max(0.0));
                register(&mut reg, p.stem, help, p.unit, fam);
            } else {
                let fam = ClassFamily::default();
                fam.get_or_create(&label).set(p.value);
                register(&mut reg, p.stem, help, p.unit, fam);
            }
            continue;
        }
        if p.counter {
            let c = Counter::<f64, AtomicU64>::default();
            c.inc_by(p.value.max(0.0));
            register(&mut reg, p.stem, help, p.unit, c);
        } else {
            let g = Gauge::<f64, AtomicU64>::default();
            g.set(p.value);
            register(&mut reg, p.stem, help, p.unit, g);
        }
    }
    // The drops group once more as one family, a `reason` label per reason: what a dashboard
    // stacks without knowing the reasons' names.
    let drops = ClassFamily::default();
    let mut drops_unit = None;
    for &(column, v) in series {
        let Some(r) = crate::model::drops::DropReason::of_col(column) else {
            continue;
        };
        if !v.is_finite() {
            continue;
        }
        let p = prom_series(column, v);
        drops_unit = Some(p.unit);
        drops
            .get_or_create(&vec![
                ("reason".to_string(), r.short.to_string()),
                ("scope".to_string(), Scope::Netns.key().to_string()),
            ])
            .set(p.value);
    }
    if let Some(unit) = drops_unit {
        register(
            &mut reg,
            "drops".to_string(),
            "What the server namespace's kernel dropped, and why: each reason's rate (label \
             `reason`), from its TcpExt/Udp counters"
                .to_string(),
            unit,
            drops,
        );
    }
    for (name, b) in hists {
        reg.register_with_unit(
            name.to_string(),
            histogram_help(name),
            prometheus_client::registry::Unit::Seconds,
            FixedHistogram(b.clone()),
        );
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

/// Why `--metrics ADDR` cannot listen, and what to do, from the bind's error.
fn bind_error(addr: SocketAddr, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind as K;
    let why = match e.kind() {
        K::AddrInUse => format!(
            "port {} is in use on {}: pick another port",
            addr.port(),
            addr.ip()
        ),
        K::AddrNotAvailable => format!(
            "{} is not an address of this host: name one of its addresses, 0.0.0.0 for all, \
             or give a bare port for 127.0.0.1",
            addr.ip()
        ),
        K::PermissionDenied => format!(
            "port {} is below 1024, which needs root (CAP_NET_BIND_SERVICE): pick a port \
             from 1024 up",
            addr.port()
        ),
        _ => "see the cause below".to_string(),
    };
    anyhow::Error::new(e).context(format!("--metrics: cannot listen on {addr}: {why}"))
}

/// A running /metrics endpoint; `publish` replaces what it serves.
#[derive(Clone, Debug)]
pub struct Exporter {
    body: Arc<Mutex<String>>,
    pub addr: SocketAddr,
}

impl Exporter {
    /// The `--metrics ADDR` endpoint when one is asked for (and where it is, on stderr).
    pub fn start_at(addr: Option<&str>) -> anyhow::Result<Option<Exporter>> {
        let Some(a) = addr else { return Ok(None) };
        let e = Exporter::start(parse_addr(a)?)?;
        eprintln!("metrics: http://{}/metrics", e.addr);
        Ok(Some(e))
    }

    /// Binds `addr` and serves from a background thread (for the life of the process).
    pub fn start(addr: SocketAddr) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).map_err(|e| bind_error(addr, e))?;
        let addr = listener.local_addr()?;
        let body = Arc::new(Mutex::new(encode(&[], &[])));
        let served = Arc::clone(&body);
        std::thread::Builder::new()
            .name("metrics-http".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                    let mut line = String::new();
                    let mut reader = BufReader::new(&conn);
                    if reader.read_line(&mut line).is_err() {
                        continue;
                    }
                    // Read the headers (some clients wait for that), noting what they accept.
                    let mut h = String::new();
                    let mut openmetrics = false;
                    while reader.read_line(&mut h).is_ok_and(|n| n > 2) {
                        let lower = h.to_ascii_lowercase();
                        openmetrics |= lower.starts_with("accept:")
                            && lower.contains("application/openmetrics-text");
                        h.clear();
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("");
                    let (status, ctype, text) = if path == "/metrics" || path.starts_with("/metrics?") {
                        let b = served.lock().map(|b| b.clone()).unwrap_or_default();
                        if openmetrics {
                            ("200 OK", CONTENT_TYPE, b)
                        } else {
                            ("200 OK", CLASSIC_CONTENT_TYPE, to_classic(&b))
                        }
                    } else {
                        ("404 Not Found", "text/plain", "synlab serves /metrics only\n".into())
                    };
                    let mut w = &conn;
                    let _ = write!(
                        w,
                        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                        text.len()
                    );
                }
            })?;
        Ok(Exporter { body, addr })
    }

    /// Replaces the exposition with these series' latest values and distributions.
    pub fn publish(&self, series: &[(Col, f64)], hists: &[(&str, Buckets)]) {
        let text = encode(series, hists);
        if let Ok(mut b) = self.body.lock() {
            *b = text;
        }
    }
}

/// The latest sample of every series of the store.
pub fn latest(store: &crate::metrics::store::Store) -> Vec<(Col, f64)> {
    store
        .columns()
        .iter()
        .map(|&c| (c, store.last(c).unwrap_or(f64::NAN)))
        .collect()
}

/// An exporter fed from a time-series store, at most twice a second: fresh for a 1 s scrape,
/// and no work per pump or frame.
#[derive(Debug)]
pub struct Publisher {
    exporter: Exporter,
    last: Option<std::time::Instant>,
}

impl Publisher {
    pub fn new(exporter: Exporter) -> Self {
        Publisher {
            exporter,
            last: None,
        }
    }

    /// Publishes the store's latest samples and these distributions, unless it did less than
    /// half a second ago.
    pub fn tick(&mut self, store: &crate::metrics::store::Store, hists: &[(&str, Buckets)]) {
        let due = self
            .last
            .is_none_or(|t| t.elapsed() >= std::time::Duration::from_millis(500));
        if due {
            self.exporter.publish(&latest(store), hists);
            self.last = Some(std::time::Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{col, PathName};

    /// The full name, value and counter flag of a series.
    fn named(p: PromSeries) -> (String, f64, bool) {
        (p.name(), p.value, p.counter)
    }

    #[test]
    fn series_become_prefixed_gauges_and_nan_is_left_out() {
        let t = encode(
            &[
                (col::RESPONSES, 412.5),
                (col::ACCEPT_QUEUE, 3.0),
                (col::TARGET_RATE, f64::NAN),
            ],
            &[],
        );
        assert!(
            t.contains("# TYPE synlab_responses_per_second gauge\n"),
            "{t}"
        );
        assert!(t.contains("synlab_responses_per_second 412.5\n"), "{t}");
        assert_eq!(
            named(prom_series(col::LAG_MAX, 20.0)),
            ("lag_max_seconds".to_string(), 0.02, false)
        );
        assert_eq!(
            named(prom_series(col::CPU_IDLE, 50.0)),
            ("cpu_idle_ratio".to_string(), 0.5, false)
        );
        assert_eq!(
            named(prom_series(col::SYN_IN_TOTAL, 7.0)),
            ("syn_in".to_string(), 7.0, true)
        );
        assert_eq!(
            named(prom_series(col::SERVER_RSS_MB, 2.0)),
            ("server_rss_bytes".to_string(), 2097152.0, false)
        );
        let c = encode(&[(col::SYN_IN_TOTAL, 7.0)], &[]);
        assert!(
            c.contains("# TYPE synlab_syn_in counter\nsynlab_syn_in_total{scope=\"port\"} 7.0\n"),
            "{c}"
        );
        let classic = to_classic(&c);
        assert!(
            classic.contains(
                "# TYPE synlab_syn_in_total counter\nsynlab_syn_in_total{scope=\"port\"} 7.0\n"
            ),
            "{classic}"
        );
        assert!(
            classic.starts_with("# HELP synlab_syn_in_total "),
            "{classic}"
        );
        assert!(!classic.contains("# EOF"));
        assert!(
            t.contains("synlab_accept_queue{scope=\"port\"} 3.0\n"),
            "{t}"
        );
        assert!(!t.contains("offered"), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
        assert_eq!(parse_addr("9464").unwrap().to_string(), "127.0.0.1:9464");
        assert_eq!(parse_addr("0.0.0.0:1").unwrap().to_string(), "0.0.0.0:1");
        assert!(parse_addr("localhost").is_err());
    }

    #[test]
    fn latency_is_a_cumulative_histogram_in_seconds() {
        let mut h = crate::metrics::hist::new_hist();
        for us in [10, 20_000, 20_000, 100_000_000] {
            crate::metrics::hist::record(&mut h, us);
        }
        let t = encode(&[], &[("connect", Buckets::of(&h))]);
        assert!(
            t.contains("# TYPE synlab_connect_seconds histogram\n"),
            "{t}"
        );
        assert!(t.contains("synlab_connect_seconds_count 4\n"), "{t}");
        let b = buckets_of(&t, "synlab_connect_seconds");
        assert_eq!(b.len(), bucket_bounds_s().len() + 1);
        assert_eq!(b[0].1, 1.0, "{t}");
        let at = |s: f64| b.iter().find(|(le, _)| *le >= s).unwrap().1;
        assert_eq!(at(0.019), 1.0);
        assert_eq!(at(0.021), 3.0);
        assert_eq!(at(64.0), 3.0);
        assert_eq!(b.last().unwrap(), &(f64::INFINITY, 4.0));
        assert!(t.contains("synlab_connect_seconds_bucket{le=\"+Inf\"} 4\n"));
    }

    /// `(le, cumulative count)` of a histogram's `_bucket` lines in an exposition, as
    /// Prometheus reads them.
    fn buckets_of(t: &str, name: &str) -> Vec<(f64, f64)> {
        let prefix = format!("{name}_bucket{{le=\"");
        t.lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|l| {
                let (le, n) = l.split_once("\"} ").unwrap();
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                (le, n.trim().parse().unwrap())
            })
            .collect()
    }

    /// Prometheus' `histogram_quantile` (promql/quantile.go, `bucketQuantile`): the bucket
    /// where the rank falls, interpolated linearly between its bounds; in the `+Inf` bucket,
    /// the highest finite bound.
    fn histogram_quantile(q: f64, b: &[(f64, f64)]) -> f64 {
        let total = b.last().unwrap().1;
        let rank = q * total;
        let i = b[..b.len() - 1]
            .iter()
            .position(|(_, c)| *c >= rank)
            .unwrap_or(b.len() - 1);
        if i == b.len() - 1 {
            return b[b.len() - 2].0;
        }
        let (start, below) = if i > 0 { b[i - 1] } else { (0.0, 0.0) };
        start + (b[i].0 - start) * (rank - below) / (b[i].1 - below)
    }

    /// Over the exposed buckets, `histogram_quantile(0.99, ...)` is within 5 % of the run's
    /// own p99 for the distributions a run sees: a 40 ms path with a tail, a spread, a point
    /// mass just past a bound (the worst case of the interpolation), two modes.
    #[test]
    fn histogram_quantile_over_the_buckets_is_within_5_pct_of_the_runs_p99() {
        // A fixed LCG: the same samples every run.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let bound = bucket_bounds_s()[200] * 1e6;
        let cases: Vec<(&str, Vec<u64>)> = vec![
            (
                "40 ms path, exponential tail (mean 12 ms)",
                (0..100_000)
                    .map(|_| (40_000.0 - 12_000.0 * (1.0 - uniform()).ln()) as u64)
                    .collect(),
            ),
            (
                "uniform 40-140 ms",
                (0..50_000)
                    .map(|_| (40_000.0 + 100_000.0 * uniform()) as u64)
                    .collect(),
            ),
            ("every response at 84 ms", vec![84_000; 10_000]),
            (
                "a point mass just past a bound",
                vec![(bound * 1.002) as u64; 10_000],
            ),
            (
                "loopback 0.3 ms with 1.5 % at 200 ms",
                (0..20_000)
                    .map(|i| {
                        if i % 200 < 3 {
                            200_000
                        } else {
                            300 + (i % 50) as u64
                        }
                    })
                    .collect(),
            ),
        ];
        for (what, samples) in cases {
            let mut h = crate::metrics::hist::new_hist();
            for us in samples {
                crate::metrics::hist::record(&mut h, us);
            }
            let own = h.value_at_quantile(0.99) as f64 / 1e6;
            let t = encode(&[], &[("total_latency", Buckets::of(&h))]);
            let b = buckets_of(&t, "synlab_total_latency_seconds");
            let promql = histogram_quantile(0.99, &b);
            let err = (promql - own).abs() / own;
            assert!(
                err < 0.05,
                "{what}: histogram_quantile {promql} vs the run's p99 {own}: {:.1} % off",
                err * 100.0
            );
        }
    }

    #[test]
    fn unit_and_kind_come_from_the_column() {
        let wan = PathName::new("wan");
        assert_eq!(
            named(prom_series(col::TOTAL_P99.of_path(wan), 250.0)),
            ("path_wan_total_p99_seconds".to_string(), 0.25, false)
        );
        assert_eq!(
            named(prom_series(col::ERRORS.of_path(wan), 4.0)),
            ("path_wan_errors_per_second".to_string(), 4.0, false)
        );
        // Microseconds reach seconds like milliseconds do.
        assert_eq!(
            named(prom_series(col::ROUTER_LATE_P99_US, 1500.0)),
            ("router_late_p99_seconds".to_string(), 0.0015, false)
        );
        // A count since the capture started is a counter whatever its name.
        assert_eq!(
            named(prom_series(col::PCAP_DROPS, 3.0)),
            ("pcap_drops".to_string(), 3.0, true)
        );
        assert_eq!(
            named(prom_series(col::TARGET_RATE, 500.0)),
            ("target_rate_per_second".to_string(), 500.0, false)
        );
        assert_eq!(
            named(prom_series(col::TCP_MEM_PAGES, 9.0)),
            ("tcp_mem_pages".to_string(), 9.0, false)
        );
        let t = encode(
            &[
                (col::PCAP_DROPS, 3.0),
                (col::RESPONSES.of_path(wan), f64::NAN),
            ],
            &[],
        );
        assert!(
            t.contains(
                "# TYPE synlab_pcap_drops counter\nsynlab_pcap_drops_total{scope=\"probe\"} 3.0\n"
            ),
            "{t}"
        );
        assert!(!t.contains("path_wan"), "{t}");
        let one = encode(&[(col::TOTAL_P99.of_path(wan), 250.0)], &[]);
        assert!(
            one.contains("synlab_path_wan_total_p99_seconds 0.25\n"),
            "{one}"
        );
        // A path named after a unit keeps its name: the unit is the name's last word.
        let ms = encode(&[(col::TOTAL_P99.of_path(PathName::new("ms")), 250.0)], &[]);
        assert!(
            ms.contains("synlab_path_ms_total_p99_seconds 0.25\n"),
            "{ms}"
        );
    }

    #[test]
    fn a_class_figure_is_one_family_with_a_class_label() {
        use crate::model::ClassName;
        let (st, cgi) = (ClassName::new("static"), ClassName::new("cgi"));
        let t = encode(
            &[
                (col::RESPONSES.of_class(st), 40.0),
                (col::TOTAL_P99.of_class(st), 250.0),
                (col::RESPONSES.of_class(cgi), 2.0),
                (col::TOTAL_P99.of_class(cgi), f64::NAN),
            ],
            &[],
        );
        assert!(
            t.contains("synlab_class_responses_per_second{class=\"static\"} 40.0\n"),
            "{t}"
        );
        assert!(
            t.contains("synlab_class_responses_per_second{class=\"cgi\"} 2.0\n"),
            "{t}"
        );
        assert!(
            t.contains("synlab_class_total_p99_seconds{class=\"static\"} 0.25\n"),
            "{t}"
        );
        assert!(!t.contains("class=\"cgi\"} NaN"), "{t}");
        assert_eq!(
            t.matches("# TYPE synlab_class_responses_per_second gauge")
                .count(),
            1,
            "{t}"
        );
        assert!(t.contains("per request class (label `class`)"), "{t}");
    }

    /// HELP says what a series is, not its name again; each unit has its `# UNIT` line in
    /// OpenMetrics (none in the text format, which has no such line).
    #[test]
    fn help_and_unit_say_what_the_series_is() {
        let t = encode(
            &[
                (col::TARGET_RATE, 500.0),
                (col::TIME_WAIT, 12.0),
                (col::TOTAL_P99, 250.0),
                (col::SYN_IN_TOTAL, 7.0),
            ],
            &[(
                "total_latency",
                Buckets::of(&crate::metrics::hist::new_hist()),
            )],
        );
        for line in t.lines().filter(|l| l.starts_with("# HELP ")) {
            let (name, help) = line[7..].split_once(' ').unwrap();
            assert!(!help.contains("latest sample"), "{line}");
            assert!(help.len() > 30, "{line}");
            assert!(!help.contains(name.trim_start_matches("synlab_")), "{line}");
        }
        assert!(
            t.contains("# UNIT synlab_target_rate_per_second per_second\n"),
            "{t}"
        );
        assert!(
            t.contains("# UNIT synlab_total_p99_seconds seconds\n"),
            "{t}"
        );
        assert!(
            t.contains("# UNIT synlab_total_latency_seconds seconds\n"),
            "{t}"
        );
        assert!(
            t.contains(
                "# HELP synlab_time_wait TIME_WAIT sockets of the whole server network namespace"
            ),
            "{t}"
        );
        assert!(!t.contains("# UNIT synlab_time_wait"), "{t}");
        assert!(!t.contains("# UNIT synlab_syn_in"), "{t}");
        assert!(!to_classic(&t).contains("# UNIT"));
    }

    /// issue 42: whose each figure is, in a label: the port's TIME_WAIT and listen drops apart
    /// from the namespace's; the SYN rate the port's with pcap, the namespace's estimate
    /// without; the clients' figures unlabelled.
    #[test]
    fn probe_figures_carry_their_scope() {
        let t = encode(
            &[
                (col::PORT_TIME_WAIT, 52.0),
                (col::TIME_WAIT, 89.0),
                (col::PORT_LISTEN_DROPS_PER_S, 0.0),
                (col::LISTEN_OVERFLOWS, 725.0),
                (col::CPU_IDLE, 50.0),
                (col::SERVER_CPU_USER_PCT, 20.0),
                (col::SYN_IN, 3519.0),
                (col::SYN_IN_ESTIMATED, 1.0),
                (col::RESPONSES, 10.0),
            ],
            &[],
        );
        for want in [
            "synlab_port_time_wait{scope=\"port\"} 52.0\n",
            "synlab_time_wait{scope=\"netns\"} 89.0\n",
            "synlab_port_listen_drops_per_second{scope=\"port\"} 0.0\n",
            "synlab_listen_overflows_per_second{scope=\"netns\"} 725.0\n",
            "synlab_cpu_idle_ratio{scope=\"machine\"} 0.5\n",
            "synlab_server_cpu_user_ratio{scope=\"server\"} 0.2\n",
            "synlab_syn_in_per_second{scope=\"netns\"} 3519.0\n",
            "synlab_responses_per_second 10.0\n",
        ] {
            assert!(t.contains(want), "{want} in\n{t}");
        }
        assert!(
            t.contains(
                "synlab_drops_per_second{reason=\"accept_queue_full\",scope=\"netns\"} 725.0\n"
            ),
            "{t}"
        );
        let pcap = encode(&[(col::SYN_IN, 10.0), (col::SYN_IN_ESTIMATED, 0.0)], &[]);
        assert!(
            pcap.contains("synlab_syn_in_per_second{scope=\"port\"} 10.0\n"),
            "{pcap}"
        );
        // Without the flag the SYN rate's owner is unknown: no label rather than a wrong one.
        let bare = encode(&[(col::SYN_IN, 10.0)], &[]);
        assert!(bare.contains("synlab_syn_in_per_second 10.0\n"), "{bare}");
    }

    #[test]
    fn an_address_not_on_this_host_is_said_so() {
        let e = Exporter::start("192.0.2.1:9464".parse().unwrap())
            .err()
            .unwrap();
        let m = format!("{e:#}");
        assert!(
            m.contains("192.0.2.1 is not an address of this host"),
            "{m}"
        );
        assert!(!m.contains("in use"), "{m}");
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let e = Exporter::start(held.local_addr().unwrap()).err().unwrap();
        assert!(format!("{e:#}").contains("is in use"), "{e:#}");
    }
}
