//! HdrHistogram interval logs in the run folder: `connect.hlog`, `ttfb.hlog`, `total.hlog` and
//! over TLS `handshake.hlog`, one interval histogram per point (tagged `point-N`, timed from the
//! run's start), followed by one per request class of the point when its mix has several
//! (tagged `point-N.class-<class>`, the class as its columns spell it), in the standard `.hlog`
//! format HdrHistogram's own log readers and processors take, so distributions from several runs
//! or workers can be merged and re-plotted. Values are microseconds.

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::time::{Duration, SystemTime};

/// The latency files, with what they hold, in [`PointLatencies`]' order.
const FILES: [(&str, &str); 4] = [
    (
        "connect.hlog",
        "connect latency (scheduled start to TCP connection established)",
    ),
    (
        "handshake.hlog",
        "TLS handshake duration (TCP connection established to handshake done)",
    ),
    (
        "ttfb.hlog",
        "time to first byte (scheduled start to the response's first byte)",
    ),
    (
        "total.hlog",
        "total latency (scheduled start to the response's last byte)",
    ),
];

/// One point's latency distributions (microseconds), one per file.
#[derive(Clone)]
pub struct PointLatencies<'a> {
    pub connect: &'a Histogram<u64>,
    /// Empty without TLS (then `handshake.hlog` is not written).
    pub handshake: &'a Histogram<u64>,
    pub ttfb: &'a Histogram<u64>,
    pub total: &'a Histogram<u64>,
}

struct Interval {
    /// `point-N`, or `point-N.class-<class>`.
    tag: String,
    start_s: f64,
    dur_s: f64,
    hists: [Histogram<u64>; 4],
}

/// The tag of a point's interval, and of one of its classes'.
pub fn tag(point: usize, class: Option<&str>) -> String {
    match class {
        None => format!("point-{point}"),
        Some(c) => format!(
            "point-{point}.class-{}",
            crate::model::ClassName::new(c).as_str()
        ),
    }
}

/// The points measured so far; `encode` gives both files whole (the recorder rewrites them as
/// it does summary.json), so an interrupted run leaves valid logs.
pub struct Latencies {
    base: SystemTime,
    scenario: String,
    intervals: Vec<Interval>,
}

impl Latencies {
    /// `base`: the wall-clock time of the run's t = 0.
    pub fn new(scenario: &str, base: SystemTime) -> Self {
        Latencies {
            base,
            scenario: scenario.to_string(),
            intervals: Vec::new(),
        }
    }

    /// Sets the wall-clock time of the run's t = 0.
    pub fn set_base(&mut self, base: SystemTime) {
        self.base = base;
    }

    /// How many intervals it holds (points and their classes).
    pub fn points(&self) -> usize {
        self.intervals.len()
    }

    /// Adds one interval's histograms (microseconds), measured from `start_s` for `dur_s`,
    /// tagged `tag` (see [`tag`]).
    pub fn push(&mut self, tag: String, (start_s, dur_s): (f64, f64), h: PointLatencies<'_>) {
        self.intervals.push(Interval {
            tag,
            start_s,
            dur_s,
            hists: [
                h.connect.clone(),
                h.handshake.clone(),
                h.ttfb.clone(),
                h.total.clone(),
            ],
        });
    }

    /// The logs with every point so far: (file name, bytes), for the recorder to write;
    /// `handshake.hlog` only when a point did TLS handshakes.
    pub fn encode(&self) -> anyhow::Result<Vec<(&'static str, Vec<u8>)>> {
        let mut out = Vec::new();
        let tls = self.intervals.iter().any(|iv| !iv.hists[1].is_empty());
        for (i, (file, what)) in FILES.iter().enumerate() {
            if i == 1 && !tls {
                continue;
            }
            let mut buf = Vec::new();
            let mut ser = V2DeflateSerializer::new();
            let mut b = IntervalLogWriterBuilder::new();
            b.add_comment(&format!(
                "synlab {}: {what}, one interval per point (tag point-N) and per request class \
                 of a point (tag point-N.class-NAME); values in microseconds, max column in \
                 milliseconds",
                self.scenario
            ))
            .with_start_time(self.base)
            .with_base_time(self.base)
            .with_max_value_divisor(1000.0);
            let mut w = b.begin_log_with(&mut buf, &mut ser)?;
            for iv in &self.intervals {
                let h = &iv.hists[i];
                w.write_histogram(
                    h,
                    Duration::from_secs_f64(iv.start_s.max(0.0)),
                    Duration::from_secs_f64(iv.dur_s.max(0.0)),
                    Tag::new(&iv.tag),
                )
                .map_err(|e| anyhow::anyhow!("encoding the {file} histogram: {e:?}"))?;
            }
            out.push((*file, buf));
        }
        Ok(out)
    }
}
