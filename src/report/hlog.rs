//! Reading back the HdrHistogram interval logs a headless run leaves (`connect.hlog`,
//! `total.hlog`; written by `lab::recorder`), with the hdrhistogram crate's own log reader.

use anyhow::Context;
use hdrhistogram::Histogram;
use std::path::Path;

/// Reads one `.hlog` back: (tag, histogram) per interval, with the crate's log reader.
pub fn read(path: &Path) -> anyhow::Result<Vec<(String, Histogram<u64>)>> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))?;
        if let LogEntry::Interval(iv) = entry {
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(iv.encoded_histogram())
                .with_context(|| format!("{}: an interval's base64", path.display()))?;
            let h: Histogram<u64> = de
                .deserialize(&mut raw.as_slice())
                .map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))?;
            out.push((
                iv.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                h,
            ));
        }
    }
    Ok(out)
}
