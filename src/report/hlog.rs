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
            let mut h: Histogram<u64> = de
                .deserialize(&mut raw.as_slice())
                .map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))?;
            // Each was written at the range its values needed (`metrics::hist::new_hist`):
            // one read back grows to take a wider one added to it.
            h.auto(true);
            out.push((
                iv.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                h,
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::{Duration, SystemTime};

    #[test]
    fn intervals_of_different_ranges_read_back_merge() {
        let (mut short, mut long) = (
            crate::metrics::hist::new_hist(),
            crate::metrics::hist::new_hist(),
        );
        short.record(120).unwrap();
        long.record(3_000_000).unwrap();
        let mut buf = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        let mut w = IntervalLogWriterBuilder::new()
            .with_base_time(SystemTime::UNIX_EPOCH)
            .begin_log_with(&mut buf, &mut ser)
            .unwrap();
        for (h, t) in [(&short, "a"), (&long, "b")] {
            w.write_histogram(h, Duration::ZERO, Duration::from_secs(1), Tag::new(t))
                .unwrap();
        }
        drop(w);
        let path = std::env::temp_dir().join(format!("synlab-hlog-{}.hlog", std::process::id()));
        std::fs::write(&path, &buf).unwrap();
        let read = super::read(&path);
        std::fs::remove_file(&path).unwrap();
        let mut hs = read.unwrap().into_iter().map(|(_, h)| h);
        let mut merged = hs.next().unwrap();
        merged.add(hs.next().unwrap()).unwrap();
        assert_eq!(merged.len(), 2);
        assert!(merged.max() >= 2_990_000, "{}", merged.max());
    }
}
