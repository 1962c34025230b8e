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
                    bad.push(format!(
                        "{rel}:{}: `{module}` imports `{used}`, a higher layer: {}",
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "dependencies must point down:\n{}",
        bad.join("\n")
    );
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

/// The TUI's fake lab and synthetic states (`ui::fixture`) are for tests and benches only: the
/// module is declared behind `cfg(test)` or the `test-support` feature (which only the
/// dev-dependency on this crate turns on), and no code outside tests names it.
#[test]
fn test_fakes_stay_out_of_the_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ui = std::fs::read_to_string(root.join("src/ui/mod.rs")).unwrap();
    let lines: Vec<&str> = ui.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "pub mod fixture;")
        .expect("src/ui/mod.rs declares `pub mod fixture;`");
    assert_eq!(
        lines[at - 1].trim(),
        r#"#[cfg(any(test, feature = "test-support"))]"#,
        "src/ui/mod.rs:{}: `pub mod fixture` must be behind cfg(test) or the test-support feature",
        at + 1
    );
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let features: toml::Table = manifest.parse::<toml::Table>().unwrap()["features"]
        .as_table()
        .expect("Cargo.toml has a [features] table")
        .clone();
    let default = features.get("default").and_then(|d| d.as_array());
    assert!(
        default.is_none_or(|d| !d.iter().any(|f| f.as_str() == Some("test-support"))),
        "Cargo.toml: `test-support` must not be a default feature"
    );
    let mut files = Vec::new();
    rs_files(&root.join("src"), &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().to_string();
        if rel.ends_with("ui/fixture.rs") {
            continue;
        }
        let src = without_tests(&std::fs::read_to_string(f).unwrap());
        for (n, line) in src.lines().enumerate() {
            if line.contains("fixture::") {
                bad.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "non-test code uses the test fixture:\n{}",
        bad.join("\n")
    );
}

/// The lab's core is pure (issue 13): it reads no clock and touches no channel, process, file,
/// socket or namespace; time comes in as seconds and I/O goes out as effects. So are the parts
/// of the lab it is made of: the state, the knobs, the client aggregation, the summary rows.
#[test]
fn the_lab_core_does_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rs_files(&root.join("src/lab/core"), &mut files);
    assert!(
        !files.is_empty(),
        "src/lab/core/ is where the lab's core lives"
    );
    for pure in ["state.rs", "knobs.rs", "client_agg.rs", "summary.rs"] {
        let f = root.join("src/lab").join(pure);
        assert!(f.is_file(), "{} is gone: update this list", f.display());
        files.push(f);
    }
    const IO: &[&str] = &[
        "Instant",
        "SystemTime",
        "crossbeam",
        "std::fs",
        "std::process",
        "std::thread",
        "std::net",
        "crate::sys",
        "crate::net::lab",
        "Recorder",
    ];
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let src = without_tests(&std::fs::read_to_string(f).unwrap());
        for (n, line) in src.lines().enumerate() {
            if let Some(io) = IO.iter().find(|io| line.contains(*io)) {
                bad.push(format!(
                    "{}:{}: `{io}`: {}",
                    f.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "the lab core does I/O:\n{}", bad.join("\n"));
}
