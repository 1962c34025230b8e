//! Dependencies point down (ARCHITECTURE.md, "Layers"): a module may import only from the
//! layers below it (or its own). A lower layer importing a higher one fails here, naming file
//! and line.
//! Code under `#[cfg(test)]` is left out: tests may use fixtures from anywhere.

use std::path::Path;

/// Layers, lowest first; modules in one layer may use each other.
const LAYERS: &[&[&str]] = &[
    &["model"],
    &["sys", "metrics", "tls", "http2", "quic"],
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

/// Every .rs file under src/ (path, path from the crate root with `/`).
fn src_files() -> Vec<(std::path::PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rs_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (f, rel)
        })
        .collect()
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
    let mut bad = Vec::new();
    for (f, rel) in &src_files() {
        let module = rel
            .trim_start_matches("src/")
            .split(['/', '.'])
            .next()
            .unwrap()
            .to_string();
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
    for pure in ["state.rs", "knobs.rs", "client_agg", "summary.rs"] {
        let f = root.join("src/lab").join(pure);
        if f.is_dir() {
            rs_files(&f, &mut files);
            continue;
        }
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
    // Test files (tests.rs, or under a tests/ folder) may use clocks for their fixtures.
    let is_test =
        |f: &Path| f.ends_with("tests.rs") || f.components().any(|c| c.as_os_str() == "tests");
    for f in files.iter().filter(|f| !is_test(f)) {
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

// ---------------------------------------------------------------------------------------
// Import cycles (issue 32): modules at the depth of `lab::controller` or `report::figures`
// (a directory's files and submodules count as one) must not depend on each other in a
// circle. A reference to a re-exported item counts as one to the module that defines it
// (`crate::scenario::Scenario` is `scenario::model`'s); one to an item of a `mod.rs` counts as
// one to that module itself, so a parent whose own code uses its children is in a cycle with
// any child that uses the parent's items.

use std::collections::{BTreeMap, BTreeSet};

/// Cycles left for another issue's change to remove (the lead removes them at merge).
const CYCLES_ALLOWED: &[&[&str]] = &[
    // target/core.rs holds the serving context (with the dynamic endpoints) and dynamic.rs
    // uses its Counters, Response and burn_cpu: target/core.rs is issue 26's file.
    &["target::core", "target::dynamic"],
];

type ModPath = Vec<String>;

struct Module {
    rel: String,
    src: String,
    /// Names of the items defined here (`pub struct X`, `fn y`, `mod z`, ...).
    items: BTreeSet<String>,
    /// Re-exported name (or "*") -> the path it names.
    reexports: Vec<(String, Vec<String>)>,
    /// Every path used here (its line, the inline module it is written in, its segments):
    /// `use` trees expanded, and paths written in the code.
    paths: Vec<(usize, Vec<String>, Vec<String>)>,
}

fn module_path(rel: &str) -> ModPath {
    let mut segs: Vec<String> = rel
        .trim_start_matches("src/")
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    if segs == ["lib"] || segs == ["main"] {
        segs.clear();
    }
    segs
}

/// Files compiled only for tests: `#[cfg(test)] mod x;` (or a cfg naming `test`) in the parent.
fn test_only_modules(files: &[(String, String)]) -> BTreeSet<ModPath> {
    let mut out = BTreeSet::new();
    for (rel, src) in files {
        let parent = module_path(rel);
        let lines: Vec<&str> = src.lines().collect();
        for w in lines.windows(2) {
            let attr = w[0].trim();
            let decl = w[1]
                .trim()
                .trim_start_matches("pub ")
                .trim_start_matches("pub(crate) ");
            if attr.starts_with("#[cfg(") && attr.contains("test") && decl.starts_with("mod ") {
                let name = decl[4..].trim_end_matches(';').trim();
                let mut p = parent.clone();
                p.push(name.to_string());
                out.insert(p);
            }
        }
    }
    out
}

fn strip_comments(src: &str) -> String {
    src.lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("//") {
                ""
            } else {
                // A trailing comment (a `//` inside a string, e.g. a URL, ends the line early:
                // only paths are read from it).
                l.split(" // ").next().unwrap_or(l)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::{d as e, *}}`) into (name it binds, path) pairs.
fn expand_use(tree: &str, prefix: &[String], out: &mut Vec<(String, Vec<String>)>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::").trim();
        let mut p = prefix.to_vec();
        p.extend(
            head.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        // Split on commas at depth 0.
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..i], &p, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &p, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim())),
        None => (tree, None),
    };
    let mut p = prefix.to_vec();
    p.extend(path.split("::").map(|s| s.trim().to_string()));
    if p.last().is_some_and(|s| s == "self") {
        p.pop();
    }
    let name = alias
        .map(str::to_string)
        .unwrap_or_else(|| p.last().cloned().unwrap_or_default());
    out.push((name, p));
}

fn parse_module(rel: &str, raw: &str) -> Module {
    let src = strip_comments(&without_tests(raw));
    let mut items = BTreeSet::new();
    let mut reexports = Vec::new();
    let mut paths = Vec::new();
    let kinds = [
        "struct", "enum", "fn", "const", "static", "type", "trait", "mod", "union",
    ];
    let lines: Vec<&str> = src.lines().collect();
    // Inline modules (`pub mod col { ... }`): their names and the brace depth they opened at.
    let mut inline: Vec<(String, i64)> = Vec::new();
    let mut depth: i64 = 0;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        let here: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
        depth += t.matches('{').count() as i64 - t.matches('}').count() as i64;
        if let Some(rest) = t
            .strip_prefix("pub mod ")
            .or_else(|| t.strip_prefix("mod "))
        {
            if rest.trim_end().ends_with('{') {
                let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
                inline.push((name, depth - 1));
            }
        }
        while inline.last().is_some_and(|(_, d)| depth <= *d) {
            inline.pop();
        }
        let vis_less = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        let words: Vec<&str> = vis_less.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| kinds.contains(w)) {
            if k <= 2
                && words
                    .iter()
                    .take(k)
                    .all(|w| ["async", "unsafe", "const"].contains(w))
            {
                if let Some(name) = words.get(k + 1) {
                    let name: String = name.chars().take_while(|&c| is_ident(c)).collect();
                    items.insert(name);
                }
            }
        }
        if let Some(tree) = vis_less.strip_prefix("use ") {
            let is_pub = vis_less.len() != t.len();
            let mut stmt = tree.to_string();
            while !stmt.contains(';') && i + 1 < lines.len() {
                i += 1;
                stmt.push_str(lines[i].trim());
            }
            let stmt = stmt.split(';').next().unwrap_or("");
            let mut used = Vec::new();
            expand_use(stmt, &[], &mut used);
            for (name, p) in used {
                if is_pub {
                    reexports.push((name, p.clone()));
                }
                paths.push((i + 1, here.clone(), p));
            }
            i += 1;
            continue;
        }
        // Paths written in the code: `a::b::c` runs of identifiers.
        let line = lines[i];
        let chars: Vec<char> = line.chars().collect();
        let mut j = 0;
        while j < chars.len() {
            if is_ident(chars[j]) && (j == 0 || !(is_ident(chars[j - 1]) || chars[j - 1] == ':')) {
                let mut segs = Vec::new();
                let mut k = j;
                loop {
                    let s = k;
                    while k < chars.len() && is_ident(chars[k]) {
                        k += 1;
                    }
                    segs.push(chars[s..k].iter().collect::<String>());
                    if k + 2 < chars.len()
                        && chars[k] == ':'
                        && chars[k + 1] == ':'
                        && is_ident(chars[k + 2])
                    {
                        k += 2;
                    } else {
                        break;
                    }
                }
                if segs.len() > 1 {
                    paths.push((i + 1, here.clone(), segs));
                }
                j = k.max(j + 1);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    Module {
        rel: rel.to_string(),
        src,
        items,
        reexports,
        paths,
    }
}

/// The module that defines what `segs` names, seen from `cur`; None outside the crate.
fn resolve(
    mods: &BTreeMap<ModPath, Module>,
    cur: &ModPath,
    segs: &[String],
    depth: usize,
) -> Option<ModPath> {
    let (mut base, rest): (ModPath, &[String]) = match segs.first()?.as_str() {
        "crate" => (Vec::new(), &segs[1..]),
        "self" => (cur.clone(), &segs[1..]),
        "super" => {
            let mut b = cur.clone();
            let mut n = 0;
            while segs.get(n).is_some_and(|s| s == "super") {
                b.pop();
                n += 1;
            }
            (b, &segs[n..])
        }
        first => {
            let mut child = cur.clone();
            child.push(first.to_string());
            if !mods.contains_key(&child) {
                return None; // another crate, a local item, a type's associated item
            }
            (cur.clone(), segs)
        }
    };
    for (n, s) in rest.iter().enumerate() {
        let mut next = base.clone();
        next.push(s.clone());
        if mods.contains_key(&next) {
            base = next;
            continue;
        }
        if s == "*" || depth > 6 {
            return Some(base);
        }
        let m = mods.get(&base)?;
        if m.items.contains(s) {
            return Some(base);
        }
        // Re-exported here: the module that defines it.
        for (name, target) in &m.reexports {
            if name == s {
                let mut t = target.clone();
                t.extend(rest[n + 1..].iter().cloned());
                return resolve(mods, &base, &t, depth + 1).or(Some(base));
            }
        }
        for (name, target) in &m.reexports {
            if name == "*" {
                let mut t = target[..target.len() - 1].to_vec();
                t.push(s.clone());
                if let Some(r) = resolve(mods, &base, &t, depth + 1) {
                    if mods.get(&r).is_some_and(|rm| rm.items.contains(s)) {
                        return Some(r);
                    }
                }
            }
        }
        return Some(base);
    }
    Some(base)
}

/// The node a module counts as: its first two path segments.
fn node(p: &ModPath) -> String {
    p.iter().take(2).cloned().collect::<Vec<_>>().join("::")
}

fn crate_modules() -> BTreeMap<ModPath, Module> {
    let sources: Vec<(String, String)> = src_files()
        .into_iter()
        .map(|(f, rel)| (rel, std::fs::read_to_string(f).unwrap()))
        .collect();
    let test_only = test_only_modules(&sources);
    sources
        .iter()
        .map(|(rel, src)| (module_path(rel), rel, src))
        .filter(|(p, _, _)| !test_only.iter().any(|t| p.starts_with(t)))
        .map(|(p, rel, src)| (p, parse_module(rel, src)))
        .collect()
}

/// Strongly connected components of more than one node (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T, v: &str) {
        let i = t.index.len();
        t.index.insert(v.into(), i);
        t.low.insert(v.into(), i);
        t.stack.push(v.into());
        t.on.insert(v.into());
        let next: Vec<String> = t
            .edges
            .get(v)
            .map(|e| e.keys().cloned().collect())
            .unwrap_or_default();
        for w in next {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(&w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let mods = crate_modules();
    // node -> node it uses -> the first place that uses it.
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (p, m) in &mods {
        if p.is_empty() {
            continue;
        }
        for (line, inline, segs) in &m.paths {
            let mut cur = p.clone();
            cur.extend(inline.iter().cloned());
            let Some(target) = resolve(&mods, &cur, segs, 0) else {
                continue;
            };
            let (a, b) = (node(p), node(&target));
            if target.is_empty() || a == b {
                continue;
            }
            edges
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert_with(|| format!("{}:{line}: {}", m.rel, segs.join("::")));
        }
    }
    let found = cycles(&edges);
    let mut bad = Vec::new();
    for c in &found {
        if CYCLES_ALLOWED
            .iter()
            .any(|a| a.iter().map(|s| s.to_string()).collect::<Vec<_>>() == *c)
        {
            continue;
        }
        let mut why = format!("cycle: {}", c.join(" <-> "));
        for a in c {
            for b in c {
                if let Some(at) = edges.get(a).and_then(|e| e.get(b)) {
                    why.push_str(&format!("\n    {a} -> {b}  ({at})"));
                }
            }
        }
        bad.push(why);
    }
    // The allowlist holds only cycles that exist.
    for a in CYCLES_ALLOWED {
        let a: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        assert!(
            found.contains(&a),
            "{a:?} is no longer a cycle: remove it from CYCLES_ALLOWED"
        );
    }
    assert!(bad.is_empty(), "import cycles:\n{}", bad.join("\n"));
    // The checker sees what it must: the lab's modules depend on each other.
    assert!(edges
        .get("lab::run")
        .is_some_and(|e| e.contains_key("lab::controller")));
    let _ = mods.values().map(|m| m.src.len()).sum::<usize>();
}

// ---------------------------------------------------------------------------------------
// The kernel boundary (issue 32): `libc::`, `nix::` and `unsafe` only in src/sys.

/// Whether `line` names libc or nix or holds `unsafe` (as words, outside comments).
fn touches_the_kernel(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    let word_at = |w: &str| {
        code.match_indices(w).any(|(i, _)| {
            let before = code[..i].chars().next_back();
            let after = code[i + w.len()..].chars().next();
            let glued_before = before.is_some_and(is_ident);
            let glued_after = w == "unsafe" && after.is_some_and(is_ident);
            !glued_before && !glued_after
        })
    };
    word_at("libc::") || word_at("nix::") || word_at("unsafe")
}

/// The lines outside src/sys (tests left out) that `pred` holds for, as `file:line: text`.
fn lines_above_sys(pred: fn(&str) -> bool) -> Vec<String> {
    let mut bad = Vec::new();
    for (f, rel) in &src_files() {
        if rel.starts_with("src/sys/") {
            continue;
        }
        let src = without_tests(&std::fs::read_to_string(f).unwrap());
        for (n, line) in src.lines().enumerate() {
            if pred(line) {
                bad.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    bad
}

#[test]
fn only_src_sys_touches_the_kernel() {
    let bad = lines_above_sys(touches_the_kernel);
    assert!(
        bad.is_empty(),
        "libc::, nix:: and unsafe belong in src/sys (behind a small safe function there):\n{}",
        bad.join("\n")
    );
    assert!(touches_the_kernel("let r = unsafe { libc::kill(p, 9) };"));
    assert!(!touches_the_kernel("use std::os::unix::net::UnixStream;"));
    assert!(!touches_the_kernel("// SAFETY: unsafe in a comment"));
}

// ---------------------------------------------------------------------------------------
// /proc behind src/sys (issue 44): its paths are named there, and read there.

/// Whether `line` holds a `"/proc` string (outside a comment).
fn names_a_proc_path(line: &str) -> bool {
    line.split("//").next().unwrap_or("").contains("\"/proc")
}

#[test]
fn only_src_sys_names_a_proc_path() {
    let bad = lines_above_sys(names_a_proc_path);
    assert!(
        bad.is_empty(),
        "/proc is read behind src/sys (sys::procfs: a ProcFile kept open for what is read every \
         sample, a small function for the rest; its paths are constants there):\n{}",
        bad.join("\n")
    );
    assert!(names_a_proc_path(
        r#"let t = std::fs::read_to_string("/proc/stat")?;"#
    ));
    assert!(!names_a_proc_path("// reads \"/proc/stat\" through sys"));
    assert!(!names_a_proc_path("let t = procfs::STAT;"));
}

/// issue 44: the lab's files stay small enough to read whole: none over 600 lines (tests
/// included; a long one is split by subject, as src/lab/core/tests/ is).
#[test]
fn no_file_in_src_lab_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rs_files(&root.join("src/lab"), &mut files);
    assert!(files.len() > 10, "src/lab is where the lab lives");
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > 600)
        .map(|(f, n)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(
        long.is_empty(),
        "split these by subject:\n{}",
        long.join("\n")
    );
}
