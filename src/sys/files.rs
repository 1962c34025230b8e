//! Writing a file whole or not at all: the bytes go to a temporary name beside it, then a
//! rename puts them in place, so a reader (or a crash, or a full disk) never sees half a file.
//! Every file of a run folder and its report is written this way, except the streams that grow
//! as the run goes (timeseries.csv, run.log).

use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary name `path` is written under first: `NAME.tmp` beside it (plots/x.svg and
/// plots/x.png each get their own).
pub fn temp_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `bytes` to `path` through a temporary name and a rename. On failure nothing is left
/// (neither the temporary file nor a truncated `path`) and the error names the path, the
/// reason and, for a full disk, what to do.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = temp_name(path);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.flush()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        let hint = if e.raw_os_error() == Some(libc::ENOSPC) {
            " (the disk is full: free space or pass --out on another disk)"
        } else {
            ""
        };
        return Err(e).with_context(|| format!("writing {}{hint}", path.display()));
    }
    Ok(())
}

/// The last `n` lines of `path` that are not blank (none when it cannot be read): what a
/// program that failed said last.
pub fn last_lines(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_a_failure_names_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("report.md");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(temp_name(&p), d.path().join("report.md.tmp"));
        assert!(!temp_name(&p).exists());
        let missing = d.path().join("no-such-dir/x.svg");
        let e = format!("{:#}", atomic_write(&missing, b"x").unwrap_err());
        assert!(
            e.starts_with(&format!("writing {}: ", missing.display())),
            "{e}"
        );
    }
}
