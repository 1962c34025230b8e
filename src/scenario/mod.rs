//! Scenario files: the serde model, units, validation with file/line/column/key errors, and the
//! embedded default scenario.

pub mod diag;
pub mod gate;
pub mod model;
pub mod points;
pub use crate::model::units;
pub mod validate;
pub mod workloads;

pub use diag::{Diagnostic, ScenarioError};
pub use model::*;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use units::Dur;

/// The default scenario, embedded in the binary (scenarios/default.toml).
pub const DEFAULT_TOML: &str = include_str!("../../scenarios/default.toml");

/// The embedded default scenario.
pub fn default_scenario() -> Scenario {
    parse("default.toml (embedded)", DEFAULT_TOML).expect("the embedded default scenario is valid")
}

/// Reads and validates a scenario file; `default` names the embedded one.
pub fn load(path: &Path) -> anyhow::Result<Scenario> {
    load_with_warnings(path).map(|(s, _)| s)
}

/// A run folder's resolved `scenario.toml`: the files it names were checked when it ran and
/// need not be there now (the folder may have moved to another machine).
pub fn load_resolved(path: &Path) -> anyhow::Result<Scenario> {
    read(path, false).map(|(s, _)| s)
}

/// [`load`], with what the file says that no point does (see [`validate::warnings`]).
pub fn load_with_warnings(path: &Path) -> anyhow::Result<(Scenario, Vec<Diagnostic>)> {
    read(path, true)
}

/// Reads and validates a scenario file; with `files`, the files it names are resolved from its
/// folder and must exist.
fn read(path: &Path, files: bool) -> anyhow::Result<(Scenario, Vec<Diagnostic>)> {
    if path.as_os_str() == "default" {
        return Ok((default_scenario(), Vec::new()));
    }
    let src = std::fs::read_to_string(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read scenario {}: {e}{}",
            path.display(),
            if e.kind() == std::io::ErrorKind::NotFound {
                " (see scenarios/ for examples, or use `default`)"
            } else {
                ""
            }
        )
    })?;
    // A file of nothing (or comments only) would run the defaults as if they were meant.
    if src.parse::<toml::Table>().is_ok_and(|t| t.is_empty()) {
        anyhow::bail!(
            "{}: the scenario is empty (no key set): write at least a [target] or [load] \
             section (see scenarios/ for examples), or run `default`, the embedded scenario",
            path.display()
        );
    }
    // Files the scenario names are read from its folder.
    let dir = files.then(|| path.parent().unwrap_or(Path::new("")));
    let (mut s, warnings) = parse_in(&path.display().to_string(), &src, dir)?;
    if s.name.is_empty() {
        s.name = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into());
    }
    Ok((s, warnings))
}

/// Parses and validates scenario text; `file` is used in error messages.
pub fn parse(file: &str, src: &str) -> Result<Scenario, ScenarioError> {
    parse_with_warnings(file, src).map(|(s, _)| s)
}

/// [`parse`], with the warnings of [`validate::warnings`] at their lines.
pub fn parse_with_warnings(
    file: &str,
    src: &str,
) -> Result<(Scenario, Vec<Diagnostic>), ScenarioError> {
    parse_in(file, src, None)
}

/// [`parse_with_warnings`]; with `dir`, the files the scenario names are resolved from that
/// folder and must exist.
fn parse_in(
    file: &str,
    src: &str,
    dir: Option<&Path>,
) -> Result<(Scenario, Vec<Diagnostic>), ScenarioError> {
    let mut s: Scenario = deserialize(file, src)?;
    if s.name.is_empty() {
        // The file's stem: the name becomes part of the run folder's name.
        let label = file.trim_end_matches(" (embedded)");
        s.name = Path::new(label)
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into());
    }
    // The keys written under [target] and [load]: the struct cannot tell a default from a
    // written value.
    let raw = src.parse::<toml::Table>().ok();
    let target_keys = written_keys(raw.as_ref(), "target");
    infer_target_kind(&mut s.target, &target_keys);
    infer_workload(&mut s.load, &written_keys(raw.as_ref(), "load"));
    let mut problems = validate::validate(&s);
    problems.extend(validate::check_cpus(
        &s,
        &crate::sys::machine::online_cpus(),
    ));
    problems.extend(validate::gate_problems(&s));
    if let Some(dir) = dir {
        problems.extend(validate::resolve_files(&mut s, dir));
    }
    problems.extend(foreign_target_keys(s.target.kind, &target_keys));
    let doc = toml_edit::ImDocument::parse(src.to_string()).ok();
    let at_lines = |problems: Vec<validate::Problem>| -> Vec<Diagnostic> {
        problems
            .into_iter()
            .map(|mut p| {
                let span = doc.as_ref().and_then(|d| span_of(d, &p.key));
                p.line = span.as_ref().map(|r| src[..r.start].lines().count().max(1));
                Diagnostic::new(file, src, span, &p.key, &p.kind.to_string())
            })
            .collect()
    };
    if problems.is_empty() {
        let top: Vec<String> = raw.map(|t| t.keys().cloned().collect()).unwrap_or_default();
        let warnings = validate::warnings(&s, &top);
        return Ok((s, at_lines(warnings)));
    }
    Err(ScenarioError(at_lines(problems)))
}

/// The file read into a Scenario; else every unknown key at its line (serde stops at the
/// first: each is blanked out, lines kept, and the rest read again), or the one other error.
fn deserialize(file: &str, src: &str) -> Result<Scenario, ScenarioError> {
    let mut text = src.to_string();
    let mut unknown = Vec::new();
    loop {
        let de = toml::Deserializer::new(&text);
        let e = match serde_path_to_error::deserialize(de) {
            Ok(s) if unknown.is_empty() => return Ok(s),
            Ok(_) => return Err(ScenarioError(unknown)),
            Err(e) => e,
        };
        let key = display_path(e.path());
        let inner = e.into_inner();
        // The root path (syntax errors: serde never got that far) names no key.
        let key = if key == "." { String::new() } else { key };
        let d = Diagnostic::new(file, src, inner.span(), &key, inner.message());
        let blank = inner
            .message()
            .starts_with("unknown field")
            .then(|| blank_key(&text, &key, inner.span()?))
            .flatten();
        match blank {
            // Another key's error after unknown ones may stem from their blanking: those
            // are said alone.
            Some(next) if unknown.len() < 20 => {
                unknown.push(d);
                text = next;
            }
            _ if unknown.is_empty() => return Err(ScenarioError(vec![d])),
            _ => {
                if inner.message().starts_with("unknown field") {
                    unknown.push(d);
                }
                return Err(ScenarioError(unknown));
            }
        }
    }
}

/// `text` with the key at `key_span` and its value (found by `key`'s path) replaced by
/// spaces, newlines kept so every later line stays where it was; None when the value is
/// not found after the key or what is left does not parse.
fn blank_key(text: &str, key: &str, key_span: std::ops::Range<usize>) -> Option<String> {
    let doc = toml_edit::ImDocument::parse(text.to_string()).ok()?;
    let value = span_of(&doc, key)?;
    if value.end <= key_span.start || value.start < key_span.start {
        return None;
    }
    let mut out = text.as_bytes().to_vec();
    for b in &mut out[key_span.start..value.end] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
    let out = String::from_utf8(out).ok()?;
    out.parse::<toml::Table>().is_ok().then_some(out)
}

/// The keys written in the file's table `name` (none if it has none).
fn written_keys(raw: Option<&toml::Table>, name: &str) -> Vec<String> {
    raw.and_then(|t| Some(t.get(name)?.as_table()?.keys().cloned().collect()))
        .unwrap_or_default()
}

/// `[[load.mix]]` entries without a `workload` mean those requests alone: the default workload
/// (`single`, the built-in server's 1294-byte file) would add a path another server lacks.
fn infer_workload(l: &mut model::LoadSpec, written: &[String]) {
    if !l.mix.is_empty() && !written.iter().any(|k| k == "workload") {
        l.workload = model::Workload::Custom;
    }
}

/// `[target]` with an `address` or a `command` but no `kind` means that kind: a person who
/// wrote `address = "127.0.0.1:8080"` wants that server measured, not the built-in one.
fn infer_target_kind(t: &mut model::TargetSpec, written: &[String]) {
    if written.iter().any(|k| k == "kind") {
        return;
    }
    match (t.address.is_empty(), t.command.is_empty()) {
        (false, true) => t.kind = model::TargetKind::Address,
        (true, false) => t.kind = model::TargetKind::Command,
        _ => {}
    }
}

/// `[target]` keys that configure only the built-in server: with a command or an address they
/// would be silently ignored.
const BUILTIN_ONLY_KEYS: &[&str] = &[
    // The first three: the built-in server's model alone (nginx and Apache read the rest).
    "arch",
    "service_time",
    "service",
    "workers",
    "max_workers",
    "lingering_close",
    "linger_timeout",
    "backlog",
    "files",
    "sizes",
    "pareto_alpha",
    "pareto_min",
    "pareto_count",
    "keepalive",
    "max_streams",
];

/// The built-in server's keys Caddy does not read either: it has no worker count, backlog or
/// keep-alive switch of its own (Go's runtime decides), only the file set.
const CADDY_UNREAD_KEYS: &[&str] = &[
    "arch",
    "service_time",
    "service",
    "workers",
    "max_workers",
    "lingering_close",
    "linger_timeout",
    "backlog",
    "keepalive",
];

/// The built-in server's keys a target of `kind` does not read: for nginx and Apache, whose
/// config the lab writes from the others, only the built-in server's own model.
fn unread_target_keys(kind: model::TargetKind) -> &'static [&'static str] {
    match kind {
        model::TargetKind::Builtin => &[],
        model::TargetKind::Caddy => CADDY_UNREAD_KEYS,
        k if k.is_real_server() => &BUILTIN_ONLY_KEYS[..3],
        _ => BUILTIN_ONLY_KEYS,
    }
}

/// Problems for built-in-server keys written under another kind of target.
fn foreign_target_keys(kind: model::TargetKind, written: &[String]) -> Vec<validate::Problem> {
    unread_target_keys(kind)
        .iter()
        .filter(|k| written.iter().any(|w| w == *k))
        .map(|k| {
            validate::Problem::new(
                format!("target.{k}"),
                validate::ProblemKind::not_here(validate::NotHere::BuiltinOnly, kind),
            )
        })
        .collect()
}

fn display_path(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { variant } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(variant);
            }
            Segment::Unknown => {}
        }
    }
    if out.is_empty() {
        ".".into()
    } else {
        // Arrays of tables are written [[step]] but modelled as `steps`.
        out
    }
}

/// The source span of a key path such as `load.burst.ratio` or `step[1].at`: the value's span,
/// else the key's, else the nearest enclosing table's.
fn span_of(doc: &toml_edit::ImDocument<String>, path: &str) -> Option<std::ops::Range<usize>> {
    let parts: Vec<&str> = path.split('.').collect();
    span_in(doc.as_table(), &parts, None)
}

fn span_in(
    table: &dyn toml_edit::TableLike,
    parts: &[&str],
    best: Option<std::ops::Range<usize>>,
) -> Option<std::ops::Range<usize>> {
    let Some((part, rest)) = parts.split_first() else {
        return best;
    };
    let (name, index) = match part.split_once('[') {
        Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
        None => (*part, None),
    };
    let Some((key, item)) = table.get_key_value(name) else {
        return best;
    };
    let here = item.span().or_else(|| key.span()).or(best);
    match (item, index) {
        (toml_edit::Item::ArrayOfTables(a), Some(i)) => match a.get(i) {
            Some(t) => span_in(t, rest, t.span().or(here)),
            None => here,
        },
        (toml_edit::Item::Value(toml_edit::Value::Array(a)), Some(i)) => match a.get(i) {
            Some(toml_edit::Value::InlineTable(t)) => span_in(t, rest, t.span().or(here)),
            Some(v) => v.span().or(here),
            None => here,
        },
        (toml_edit::Item::Table(t), None) => span_in(t, rest, here),
        (toml_edit::Item::Value(toml_edit::Value::InlineTable(t)), None) => span_in(t, rest, here),
        _ => here,
    }
}

pub use crate::model::sweep::{SweepPoint, SweepValue, SweepValueError};

impl Scenario {
    /// The scenario as TOML (the run folder's resolved `scenario.toml`).
    pub fn to_toml(&self) -> String {
        let mut v = match toml::Value::try_from(self) {
            Ok(v) => v,
            Err(e) => return format!("# could not serialize: {e}\n"),
        };
        // Only the built-in server reads these; written out for another kind, the resolved
        // file would not pass its own check.
        if self.target.kind != TargetKind::Builtin {
            if let Some(t) = v.get_mut("target").and_then(|t| t.as_table_mut()) {
                for k in unread_target_keys(self.target.kind) {
                    t.remove(*k);
                }
            }
        }
        toml::to_string_pretty(&v).unwrap_or_else(|e| format!("# could not serialize: {e}\n"))
    }

    /// Whether any point keeps its connections (HTTP/1.1 keep-alive or HTTP/2: `load.http`, or a sweep or its curves
    /// over it): the server then keeps connections the clients keep.
    pub fn uses_keepalive(&self) -> bool {
        let swept = self.sweep.iter().flat_map(|sw| {
            let curves = sw.curves.iter().map(|c| (c.kind(), &c.values));
            std::iter::once((sw.kind(), &sw.values)).chain(curves)
        });
        // HTTP/2's connections carry every request of their client: kept open as 1.1's.
        matches!(
            self.load.http,
            HttpVersion::Http11 | HttpVersion::Http2 | HttpVersion::Http3
        ) || swept
            .filter(|(k, _)| *k == Some(SweepParam::Http))
            .flat_map(|(_, vals)| vals.iter())
            .any(|v| {
                SweepValue::parse(SweepParam::Http, v) == Ok(SweepValue::Http { keepalive: true })
            })
    }

    /// Scales durations by `f` (0 < f <= 1) for `--quick` runs: run length, steps, warm-up and
    /// hold (at least 1 s of hold, 0.5 s of warm-up).
    pub fn scaled(mut self, f: f64) -> Self {
        let sc = |d: Dur, min: f64| Dur::from_secs((d.secs() * f).max(min.min(d.secs())));
        self.duration = sc(self.duration, 2.0);
        for st in &mut self.steps {
            st.at = sc(st.at, 0.0);
        }
        if let Some(sw) = &mut self.sweep {
            sw.warmup = sc(sw.warmup, 0.5);
            sw.hold = sc(sw.hold, 1.0);
            sw.cooldown = sc(sw.cooldown, 0.0);
        }
        if let Some(b) = &mut self.load.burst {
            b.period = sc(b.period, 1.0);
        }
        self
    }
}

/// `synlab check FILE...`: validates each file, prints every problem and warning (with file
/// and line) and how long a run of it lasts; exit 2 (bad input, as `synlab run` exits on the
/// same file) if any failed. Warnings alone pass.
pub fn check_main(files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut failed = 0;
    for f in files {
        match load_with_warnings(f) {
            Ok((s, warnings)) => {
                for w in &warnings {
                    eprintln!("warning: {w}");
                }
                if let Some(w) = host_warning(&s) {
                    eprintln!("warning: {}: {w}", f.display());
                }
                let length = validate::about(validate::run_length_s(&s));
                println!(
                    "{}: ok ({}{}{})",
                    f.display(),
                    s.name,
                    match &s.sweep {
                        Some(sw) => format!(
                            ", sweep of {} over {} points, ~{length} plus the lab's set-up",
                            sw.param,
                            points::plan_points(&s).len()
                        ),
                        None => format!(", {} run", s.duration),
                    },
                    match warnings.len() {
                        0 => String::new(),
                        n => format!(", {n} warning(s)"),
                    }
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("{e:#}");
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("{failed} of {} scenario file(s) have errors", files.len());
        ExitCode::from(2)
    })
}

/// Why a scenario that changes the receive steering during its run (`[sweep] steer`, a
/// `network.steer` sweep) cannot do so rootless; None when it does not change it.
pub fn steers_live(s: &Scenario) -> Option<String> {
    let live = s.sweep.as_ref().is_some_and(|sw| {
        !sw.steer.is_empty() || sw.kind() == Some(crate::model::SweepParam::Steer)
    });
    live.then(|| {
        "the scenario's `[sweep] steer` (or `param = \"network.steer\"`) changes the receive \
         steering during the run, and a rootless lab cannot change its receive steering during a \
         run: the kernel lets only CAP_NET_ADMIN in the initial user namespace write rps_cpus \
         (net/core/net-sysfs.c), and the namespace's net.core.rps_default_mask steers only the \
         links made after it; remove it and set `[network] steer = \"server\"` (or \"sender\"), \
         one run each, and overlay them with `synlab report A B`, or run as root"
            .to_string()
    })
}

/// What this host keeps a scenario from doing as this user, said before any lab is built:
/// nginx or Apache in a rootless lab need subordinate ids (/etc/subuid, /etc/subgid).
pub fn host_warning(s: &Scenario) -> Option<String> {
    if s.network.is_none() || crate::sys::userns::host_root() {
        return None;
    }
    if let Some(why) = steers_live(s) {
        return Some(format!("run as this user: {why}"));
    }
    if !s.target.kind.switches_user() {
        return None;
    }
    let lacks = crate::sys::userns::wide_mapping_would_lack()?;
    Some(format!(
        "run as this user, {} cannot run in its rootless lab: {lacks}",
        s.target.kind.name()
    ))
}
