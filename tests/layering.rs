//! Dependencies point down (DESIGN.md, layout): a module may import only from the layers below
//! it (or its own). A lower layer importing a higher one fails here, naming file and line.
//! Code under `#[cfg(test)]` is left out: tests may use fixtures from anywhere.

use std::path::Path;

/// Layers, lowest first; modules in one layer may use each other.
const LAYERS: &[&[&str]] = &[
    &["model"],
    &["sys", "metrics"],
    &["load", "target", "net", "probe"],
    &["scenario"],
    &["report"],
    &["lab"],
    &["ui"],
    &["cli"],
];

/// Imports that break the order today, each with why it is still there. Remove a line once its
/// import is gone (the test fails on a stale entry too, so the list only shrinks).
const KNOWN: &[(&str, &str)] = &[
    // The capture loop classifies frames with probe's pure parsers; to invert (a frame callback).
    ("src/sys/pcap.rs", "probe"),
    // The sock_diag requests and replies are built and parsed by probe; to invert likewise.
    ("src/sys/sockdiag.rs", "probe"),
    // The topology executor applies net's plan operations; `Op` should live in sys.
    ("src/sys/netns.rs", "net"),
    // The gate checks threshold metrics against the summary row's columns, which report
    // defines; the row should live in model.
    ("src/scenario/gate.rs", "report"),
    // The gate counts a scenario's points with the run's planner; it should live in scenario.
    ("src/scenario/gate.rs", "lab"),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The source without its `#[cfg(test)]` items (the attribute and the item after it).
fn without_tests(src: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i64> = None;
    let mut pending = false;
    let mut depth: i64 = 0;
    for line in src.lines() {
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        // Skipped lines stay as empty lines, so line numbers hold.
        if skip_depth.is_none() && line.trim_start().starts_with("#[cfg(test)]") {
            pending = true;
            out.push('\n');
            continue;
        }
        if pending {
            pending = false;
            if opens > closes {
                skip_depth = Some(depth);
            }
            depth += opens - closes;
            out.push('\n');
            continue;
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn lower_layers_import_nothing_from_higher_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rs_files(&root.join("src"), &mut files);
    let mut bad = Vec::new();
    let mut seen_known = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let module = rel
            .trim_start_matches("src/")
            .split(['/', '.'])
            .next()
            .unwrap()
            .to_string();
        // A module's `cli.rs` is its command-line front end: the top layer, like src/cli.rs.
        let module = if rel.ends_with("/cli.rs") {
            "cli".to_string()
        } else {
            module
        };
        let Some(own) = layer_of(&module) else {
            continue; // lib.rs, main.rs: the top
        };
        let src = without_tests(&std::fs::read_to_string(f).unwrap());
        for (n, line) in src.lines().enumerate() {
            for (i, _) in line.match_indices("crate::") {
                let used: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let Some(theirs) = layer_of(&used) else {
                    continue;
                };
                if theirs > own {
                    if KNOWN.contains(&(rel.as_str(), used.as_str())) {
                        seen_known.push((rel.clone(), used.clone()));
                    } else {
                        bad.push(format!(
                            "{rel}:{}: `{module}` imports `{used}`, a higher layer: {}",
                            n + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "dependencies must point down:\n{}",
        bad.join("\n")
    );
    for (f, m) in KNOWN {
        assert!(
            seen_known.iter().any(|(a, b)| a == f && b == m),
            "{f} no longer imports `{m}`: remove it from KNOWN"
        );
    }
}

#[test]
fn the_model_is_a_leaf() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rs_files(&root.join("src/model"), &mut files);
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap();
        assert!(
            !src.contains("crate::")
                || src
                    .lines()
                    .all(|l| !l.contains("crate::") || l.contains("crate::model")),
            "{} imports from synlab outside model",
            f.display()
        );
    }
}
