//! The generated file set: which paths exist and how big they are. Bodies are synthetic (a
//! 64-byte pattern repeated), written from one shared in-memory buffer: no disk, nothing to
//! clean up after a crash, and no page-cache or disk effects mixed into what the lab measures
//! (the file set of seed 001 is cached in RAM anyway). A file costs only a map entry, so a
//! 1 MB class-3 file and a 100 B class-0 file differ only in the bytes written.

use super::config::FileSet;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

/// `/bytes/{n}` and generated files are capped at this size.
pub const MAX_BODY: u64 = 64 * 1024 * 1024;

/// The repeating body pattern; PATTERN_BUF is a whole number of periods, so a body's byte at
/// offset p is always PATTERN[p % 64] whatever chunk it is written in.
pub const PATTERN: &[u8; 64] = b"synlab-body-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN.\n";
pub const PATTERN_BUF_LEN: usize = 64 * 1024;

/// A buffer of PATTERN repeated to PATTERN_BUF_LEN bytes.
pub fn pattern_buf() -> Vec<u8> {
    PATTERN
        .iter()
        .copied()
        .cycle()
        .take(PATTERN_BUF_LEN)
        .collect()
}

/// SPECweb96 access frequency per class (seed 001 Table 2): class0 0-1 KB 35 %, class1
/// 1-10 KB 50 %, class2 10-100 KB 14 %, class3 100 KB-1 MB 1 %.
pub const SPECWEB96_CLASS_WEIGHTS: [(&str, f64); 4] = [
    ("class0", 0.35),
    ("class1", 0.50),
    ("class2", 0.14),
    ("class3", 0.01),
];

/// Size of SPECweb96 file `class{c}_{i}`: i tenths of the class's upper bound (1 KB x 10^c),
/// i.e. round(i x 102.4 x 10^c) bytes (class0_1 = 102 B ... class3_9 = 921,600 B), as in
/// SPECweb96's file set where the nine files of a class step evenly through it.
pub fn specweb96_size(class: u32, i: u32) -> u64 {
    (i as f64 * 102.4 * 10f64.powi(class as i32)).round() as u64
}

/// Every path of a file set with its class label and size, in a stable order. The load side
/// builds its request mixes from this (class labels: `class0`..`class3`, `pareto`, `file`).
pub fn fileset_paths(set: &FileSet) -> Vec<(String, String, u64)> {
    match set {
        FileSet::Specweb96 => (0..=3)
            .flat_map(|c| {
                (1..=9).map(move |i| {
                    (
                        format!("class{c}"),
                        format!("/specweb96/class{c}_{i}"),
                        specweb96_size(c, i),
                    )
                })
            })
            .collect(),
        FileSet::Pareto {
            alpha,
            min_bytes,
            count,
            seed,
        } => {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(*seed);
            (0..*count)
                .map(|i| {
                    // Inverse CDF: x = xm / U^(1/alpha), U in (0, 1].
                    let u: f64 = 1.0 - rng.gen::<f64>();
                    let x = (*min_bytes as f64) / u.powf(1.0 / alpha.max(1e-3));
                    let size = if x.is_finite() {
                        (x.round() as u64).min(MAX_BODY)
                    } else {
                        MAX_BODY
                    };
                    ("pareto".to_string(), format!("/pareto/{i}"), size)
                })
                .collect()
        }
        FileSet::Explicit { sizes } => {
            let mut s = sizes.clone();
            s.sort_unstable();
            s.dedup();
            s.into_iter()
                .map(|n| ("file".to_string(), format!("/file/{n}"), n.min(MAX_BODY)))
                .collect()
        }
    }
}

/// What is wrong with a file set, and what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileSetInvalid {
    #[error("pareto alpha {0} must be > 0 (typical: 1.1-1.5)")]
    Alpha(f64),
    #[error("pareto count {0} must be in 1..=1000000")]
    Count(u32),
    #[error("pareto min_bytes {0} exceeds {MAX_BODY}")]
    MinBytes(u64),
    #[error("file size {0} exceeds the {MAX_BODY}-byte cap")]
    TooBig(u64),
    #[error("explicit file set has no sizes")]
    NoSizes,
}

/// Checks a file set before the server starts.
pub fn validate(set: &FileSet) -> Result<(), FileSetInvalid> {
    match set {
        FileSet::Pareto {
            alpha,
            count,
            min_bytes,
            ..
        } => {
            if !(alpha.is_finite() && *alpha > 0.0) {
                return Err(FileSetInvalid::Alpha(*alpha));
            }
            if *count == 0 || *count > 1_000_000 {
                return Err(FileSetInvalid::Count(*count));
            }
            if *min_bytes > MAX_BODY {
                return Err(FileSetInvalid::MinBytes(*min_bytes));
            }
            Ok(())
        }
        FileSet::Explicit { sizes } => match sizes.iter().find(|&&s| s > MAX_BODY) {
            Some(s) => Err(FileSetInvalid::TooBig(*s)),
            None if sizes.is_empty() => Err(FileSetInvalid::NoSizes),
            None => Ok(()),
        },
        FileSet::Specweb96 => Ok(()),
    }
}

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// A body of this many pattern bytes.
    Pattern(u64),
    /// The small index page.
    Index,
    NotFound,
}

/// Path -> size lookup for the server.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    files: HashMap<String, u64>,
    index: Vec<u8>,
}

impl Catalog {
    pub fn new(sets: &[FileSet]) -> Self {
        let mut files = HashMap::new();
        let mut index = String::from("synlab built-in target server\npaths:\n");
        for set in sets {
            let paths = fileset_paths(set);
            index.push_str(&format!(
                "  {} files like {}\n",
                paths.len(),
                paths.first().map(|p| p.1.as_str()).unwrap_or("-")
            ));
            for (_, p, n) in paths {
                files.insert(p, n);
            }
        }
        index.push_str(&format!("  /bytes/{{n}} for n <= {MAX_BODY}\n"));
        index.push_str(
            "  /cgi/{us} (fork+exec), /inproc/{us} (in-server handler): us of CPU work\n  \
             /db/{rows}: a join and aggregate over rows <= 20000 of an SQLite table\n",
        );
        Catalog {
            files,
            index: index.into_bytes(),
        }
    }

    pub fn index(&self) -> &[u8] {
        &self.index
    }

    pub fn resolve(&self, path: &str) -> Resource {
        if path == "/" {
            return Resource::Index;
        }
        if let Some(&n) = self.files.get(path) {
            return Resource::Pattern(n);
        }
        if let Some(n) = path.strip_prefix("/bytes/") {
            // Digits only: `+5`, `-1`, `1e3` are not sizes here.
            if !n.is_empty() && n.len() <= 20 && n.bytes().all(|c| c.is_ascii_digit()) {
                if let Ok(n) = n.parse::<u64>() {
                    if n <= MAX_BODY {
                        return Resource::Pattern(n);
                    }
                }
            }
        }
        Resource::NotFound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specweb96_has_36_files_in_their_classes() {
        let p = fileset_paths(&FileSet::Specweb96);
        assert_eq!(p.len(), 36);
        assert_eq!(p[0], ("class0".into(), "/specweb96/class0_1".into(), 102));
        assert_eq!(
            p[35],
            ("class3".into(), "/specweb96/class3_9".into(), 921_600)
        );
        let bounds = [
            (0, 1024),
            (1024, 10_240),
            (10_240, 102_400),
            (102_400, 1_024_000),
        ];
        for (class, path, size) in &p {
            let c: usize = class[5..].parse().unwrap();
            assert!(*size >= bounds[c].0 && *size < bounds[c].1, "{path} {size}");
        }
    }

    #[test]
    fn pareto_is_seeded_and_bounded() {
        let set = FileSet::Pareto {
            alpha: 1.2,
            min_bytes: 1000,
            count: 500,
            seed: 7,
        };
        let a = fileset_paths(&set);
        assert_eq!(a, fileset_paths(&set));
        assert_eq!(a.len(), 500);
        assert!(a.iter().all(|(_, _, n)| *n >= 1000 && *n <= MAX_BODY));
        // Heavy tail: the median sits near xm * 2^(1/alpha) ~ 1782, the max far above.
        let mut sizes: Vec<u64> = a.iter().map(|x| x.2).collect();
        sizes.sort_unstable();
        assert!((1300..2500).contains(&sizes[250]), "median {}", sizes[250]);
        assert!(sizes[499] > 50_000);
    }

    #[test]
    fn catalog_resolves_files_bytes_index_and_404() {
        let c = Catalog::new(&[
            FileSet::Specweb96,
            FileSet::Explicit {
                sizes: vec![1294, 0],
            },
        ]);
        assert_eq!(c.resolve("/specweb96/class2_5"), Resource::Pattern(51_200));
        assert_eq!(c.resolve("/file/1294"), Resource::Pattern(1294));
        assert_eq!(c.resolve("/file/0"), Resource::Pattern(0));
        assert_eq!(c.resolve("/bytes/17"), Resource::Pattern(17));
        assert_eq!(c.resolve("/"), Resource::Index);
        for p in [
            "/bytes/",
            "/bytes/-1",
            "/bytes/1e3",
            "/bytes/99999999999",
            "/file/1",
            "/x",
        ] {
            assert_eq!(c.resolve(p), Resource::NotFound, "{p}");
        }
    }

    #[test]
    fn validate_says_what_is_wrong() {
        let too_big = FileSet::Explicit {
            sizes: vec![MAX_BODY + 1],
        };
        assert_eq!(
            validate(&too_big),
            Err(FileSetInvalid::TooBig(MAX_BODY + 1))
        );
        let flat = FileSet::Pareto {
            alpha: 0.0,
            min_bytes: 1,
            count: 1,
            seed: 0,
        };
        assert_eq!(validate(&flat), Err(FileSetInvalid::Alpha(0.0)));
    }

    #[test]
    fn pattern_buf_is_whole_periods() {
        let b = pattern_buf();
        assert_eq!(b.len() % 64, 0);
        assert_eq!(&b[64..128], PATTERN);
    }
}
