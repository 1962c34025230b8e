//! The docs are checked: every scenario snippet (a ```toml block) in README.md and docs/ passes
//! `synlab check`, and every key of the scenario format is in the scenario reference. The keys
//! come from the scenario model itself (serde's list of each table's fields, as its "unknown
//! field" error names them), so a key added to the model without a line in the reference fails
//! here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use synlab::scenario::Scenario;

const REFERENCE: &str = "docs/04-scenario-reference.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut v = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

/// The ```toml blocks of a page, each with the line its fence opens on.
fn toml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match &mut open {
            None if fence.starts_with("```toml") => open = Some((i + 1, String::new())),
            Some(_) if fence.starts_with("```") => blocks.push(open.take().unwrap()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(open.is_none(), "a ```toml block is never closed");
    blocks
}

#[test]
fn every_scenario_snippet_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let rel = page.strip_prefix(root()).unwrap().display().to_string();
        for (line, body) in toml_blocks(&text) {
            let name = format!("{}-line-{line}.toml", rel.replace('/', "_"));
            let f = dir.path().join(name);
            std::fs::write(&f, body).unwrap();
            files.push(f);
        }
    }
    assert!(
        files.len() >= 10,
        "only {} scenario snippets found in README.md and docs/",
        files.len()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .arg("check")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "a scenario snippet fails `synlab check` (files are named PAGE-line-N, N the fence's line):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where a key sits: its table path, each step a key and whether it is an array of tables.
type KeyPath = Vec<(String, bool)>;

const PROBE: &str = "__probe__";

/// A scenario whose only content is `inner` at `path` (arrays of tables as one-element arrays).
fn nest(path: &[(String, bool)], inner: toml::Table) -> toml::Table {
    let mut value = inner;
    for (key, array) in path.iter().rev() {
        let v = toml::Value::Table(value);
        let v = if *array {
            toml::Value::Array(vec![v])
        } else {
            v
        };
        value = toml::Table::from_iter([(key.clone(), v)]);
    }
    value
}

/// The fields of the table at `path`, as the model's "unknown field" error lists them; None
/// when no table of the model sits there.
fn fields_at(path: &[(String, bool)]) -> Option<Vec<String>> {
    let probe = toml::Table::from_iter([(PROBE.to_string(), toml::Value::Integer(1))]);
    let text = toml::to_string(&nest(path, probe)).unwrap();
    let err = toml::from_str::<Scenario>(&text).err()?.to_string();
    let rest = err.split(&format!("unknown field `{PROBE}`, ")).nth(1)?;
    let list = rest.lines().next().unwrap();
    Some(
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// Every key of the scenario format, dotted (`network.path.rtt`), found by walking the model's
/// tables from the top.
fn model_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut tables: Vec<KeyPath> = vec![vec![]];
    while let Some(path) = tables.pop() {
        let fields = fields_at(&path).expect("the table's fields");
        for f in fields {
            let mut sub = path.clone();
            sub.push((f.clone(), false));
            let dotted = sub
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(".");
            keys.insert(dotted);
            if fields_at(&sub).is_some() {
                tables.push(sub);
            } else {
                sub.last_mut().unwrap().1 = true;
                if fields_at(&sub).is_some() {
                    tables.push(sub);
                }
            }
        }
    }
    keys
}

/// The keys the reference documents: the backticked names in the first cell of its table rows.
fn documented_keys(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_model_walk_finds_nested_tables_and_arrays() {
    let keys = model_keys();
    for k in [
        "name",
        "target.kind",
        "load.burst.ratio",
        "load.mix.path",
        "network.path.rtt",
        "network.path.gilbert.loss_bad",
        "network.sysctl.server.somaxconn",
        "step.at",
        "sweep.values",
        "threshold.metric",
        "gate.fail_on_crosscheck",
        "output.dir",
    ] {
        assert!(keys.contains(k), "{k} not found in {keys:?}");
    }
}

#[test]
fn every_scenario_key_is_in_the_reference() {
    let text = std::fs::read_to_string(root().join(REFERENCE)).unwrap();
    let documented = documented_keys(&text);
    let missing: Vec<_> = model_keys()
        .into_iter()
        .filter(|k| !documented.contains(k))
        .collect();
    assert!(
        missing.is_empty(),
        "keys of the scenario format that {REFERENCE} does not document (add a table row whose \
         first cell names each, e.g. | `{}` | unit | default | limits and meaning |): {missing:?}",
        missing.first().map(String::as_str).unwrap_or("")
    );
}

#[test]
fn docs_links_lead_somewhere() {
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for target in text.split("](").skip(1).filter_map(|s| s.split(')').next()) {
            let target = target.split('#').next().unwrap();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            assert!(
                Path::new(dir).join(target).exists(),
                "{}: link to `{target}`, which does not exist",
                page.display()
            );
        }
    }
}

#[test]
fn readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.len() <= 14_000,
        "README.md is {} bytes; keep it under 14,000 and move detail into docs/",
        readme.len()
    );
}

/// The series names the OpenMetrics endpoint serves: every column and both latency histograms,
/// as the encoder writes them (`# TYPE NAME KIND` lines, plus a histogram's `_bucket`, `_sum`,
/// `_count` and a counter's `_total`).
fn served_series() -> BTreeSet<String> {
    use synlab::metrics::hist::Buckets;
    use synlab::model::column::col;
    let series: Vec<_> = col::ALL.iter().map(|&c| (c, 1.0)).collect();
    let b = Buckets::of(&hdrhistogram::Histogram::<u64>::new(3).unwrap());
    let text = synlab::metrics::openmetrics::encode(
        &series,
        &[("connect_latency", b.clone()), ("total_latency", b)],
    );
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let mut w = line.split_whitespace().skip(2);
        let (name, kind) = (w.next().unwrap(), w.next().unwrap());
        names.insert(name.to_string());
        let suffixes: &[&str] = match kind {
            "histogram" => &["_bucket", "_sum", "_count"],
            "counter" => &["_total"],
            _ => &[],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

#[test]
fn the_grafana_dashboard_queries_series_synlab_serves() {
    let path = root().join("docs/grafana/synlab.json");
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .expect("docs/grafana/synlab.json is JSON");
    let served = served_series();
    let mut queried = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            for name in expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("synlab_"))
            {
                queried += 1;
                assert!(
                    served.contains(name),
                    "panel `{}` queries {name}, which synlab does not serve; served: {served:?}",
                    panel["title"]
                );
            }
        }
    }
    assert!(queried >= 10, "the dashboard queries only {queried} series");
}

/// issue 45: every scenario's description (the head of its report.md) that names a `synlab ...`
/// command names one that runs: the subcommand and flags parse, the file it names exists.
#[test]
fn scenario_descriptions_name_commands_that_work() {
    use clap::Parser;
    let mut lessons = 0;
    for e in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let sc: toml::Table = toml::from_str(&text).unwrap();
        let Some(desc) = sc.get("description").and_then(|d| d.as_str()) else {
            continue;
        };
        let commands: Vec<&str> = desc
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|c| c.starts_with("synlab "))
            .collect();
        let lesson = p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("lesson-");
        if lesson {
            lessons += 1;
            assert!(!commands.is_empty(), "{}: names no command", p.display());
        }
        for c in commands {
            let words: Vec<&str> = c.split_whitespace().collect();
            // A command named in passing (`synlab report`) may leave out its arguments; a
            // subcommand or flag that does not exist is the defect.
            match synlab::cli::Cli::try_parse_from(&words) {
                Ok(_) => {}
                Err(e)
                    if !lesson && e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {}
                Err(e) => panic!("{}: `{c}` does not run: {}", p.display(), e.kind()),
            }
            for w in words.iter().filter(|w| w.ends_with(".toml")) {
                assert!(
                    root().join(w).is_file(),
                    "{}: `{c}` names no file",
                    p.display()
                );
            }
        }
    }
    assert!(lessons >= 3, "{lessons} lessons");
}
