//! Real servers as targets (`kind = "nginx"`, `kind = "apache"`): the lab writes the server's
//! config from the `[target]` keys, a document root holding the built-in server's file set (the
//! same paths, so a static workload runs unchanged on every server), and starts the server in
//! the foreground as a child of its own (the server namespace's, in the lab). The config, the
//! server's error and access logs stay in `<run folder>/<kind>/`; the document root is a
//! world-readable temporary folder (a root server's workers run as another user), removed when
//! the server is dropped. A run killed outright (SIGKILL) cannot remove it: its temp folders are
//! named by its pid (`synlab-docroot-<pid>-<n>`, `sys::netns::TEMP_DIR_KINDS`), and the next
//! run removes this user's whose pid has exited (`sys::netns::remove_dead_temp_dirs`, when its
//! network lab comes up, and here before a server's are made). With CAP_SYS_ADMIN the server
//! runs as the first process of its own PID namespace (util-linux `unshare --pid --fork
//! --kill-child`): if synlab is killed outright, the kernel kills every process of that
//! namespace, so no nginx worker or Apache child outlives it.

use crate::scenario::{Scenario, TargetKind};
use crate::sys::process::{ChildProc, Spawn};
use crate::target::config::FileSet;
use anyhow::{bail, Context};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod caddy;
mod conf;
pub mod status;
pub use conf::{apache_conf, nginx_conf, ConfigParams, TlsParams};

/// A prepared (and then started) nginx or Apache.
pub struct RealServer {
    pub kind: TargetKind,
    /// Config, logs and runtime files.
    pub dir: PathBuf,
    pub conf: PathBuf,
    pub access_log: PathBuf,
    pub error_log: PathBuf,
    pub docroot: PathBuf,
    /// The command line, for run.log.
    pub command: String,
    spawn: Spawn,
    /// Started under `unshare` (the server is its child).
    in_pid_ns: bool,
    /// Folders this run made for itself alone (removed on drop).
    owned: Vec<PathBuf>,
    /// Temp folders of exited (crashed) earlier runs removed before this one's were made, as
    /// `sys::netns::remove_dead_temp_dirs` says them, for run.log.
    pub leftovers_removed: Vec<String>,
}

/// The binary's names and the Debian package that installs it.
fn binary_of(kind: TargetKind) -> (&'static [&'static str], &'static str) {
    match kind {
        TargetKind::Apache => (&["apache2", "httpd"], "apache2"),
        TargetKind::Caddy => (&["caddy"], "caddy"),
        _ => (&["nginx"], "nginx"),
    }
}

/// An executable called `name` on PATH or in the usual bin and sbin folders.
fn find_in_path(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in [
        "/usr/sbin",
        "/usr/local/sbin",
        "/sbin",
        "/usr/bin",
        "/bin",
        "/usr/local/nginx/sbin",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Finds the server's binary on PATH and in the sbin folders (not on a user's PATH); a clear
/// error naming the package when it is not installed.
pub fn find_binary(kind: TargetKind) -> anyhow::Result<PathBuf> {
    let (names, package) = binary_of(kind);
    if let Some(p) = names.iter().find_map(|n| find_in_path(n)) {
        return Ok(p);
    }
    bail!(
        "target.kind = \"{}\" needs {}, which is not installed (looked on PATH and in /usr/sbin, /usr/local/sbin): install the `{package}` package (apt-get install {package})",
        kind.name(),
        names.join(" or ")
    )
}

/// Where Apache's loadable modules are (Debian, then Red Hat and source-build layouts).
fn apache_modules_dir() -> anyhow::Result<PathBuf> {
    for d in [
        "/usr/lib/apache2/modules",
        "/usr/lib64/httpd/modules",
        "/usr/lib/httpd/modules",
        "/usr/local/apache2/modules",
    ] {
        if Path::new(d).join("mod_mpm_prefork.so").exists() {
            return Ok(PathBuf::from(d));
        }
    }
    bail!("Apache's modules (mod_mpm_prefork.so) are not in /usr/lib/apache2/modules or the other usual folders: install the `apache2` package")
}

/// The user a root-started server's workers become: one that can read a world-readable
/// document root (www-data where it exists, else nobody), with its primary group.
fn worker_user() -> Option<(String, String)> {
    use crate::sys::privilege::{effective_root, user_and_group};
    if !effective_root() {
        return None;
    }
    ["www-data", "nobody"].into_iter().find_map(user_and_group)
}

/// The `/bytes/N` sizes the scenario's workloads request (the built-in server makes any N on
/// the fly; a real server needs each as a file).
fn bytes_sizes(sc: &Scenario) -> Vec<u64> {
    let mut scenarios = vec![sc.clone()];
    if let Some(sw) = sc
        .sweep
        .as_ref()
        .filter(|s| s.kind() == Some(crate::scenario::SweepParam::Workload))
    {
        for v in &sw.values {
            if let Ok(w) = v.clone().try_into() {
                let mut o = sc.clone();
                o.load.workload = w;
                scenarios.push(o);
            }
        }
    }
    let mut sizes: Vec<u64> = scenarios
        .iter()
        .flat_map(super::controller::mix_of)
        .filter_map(|m| m.path.strip_prefix("/bytes/")?.parse().ok())
        .filter(|n| *n <= crate::target::files::MAX_BODY)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The built-in server's file sets for the scenario's `files` keys.
pub fn file_sets(sc: &Scenario) -> Vec<FileSet> {
    let t = &sc.target;
    let mut files = vec![FileSet::Specweb96];
    match t.files {
        crate::scenario::FilesPreset::Specweb96 => {}
        crate::scenario::FilesPreset::Pareto => files.push(FileSet::Pareto {
            alpha: t.pareto_alpha,
            min_bytes: t.pareto_min.0,
            count: t.pareto_count,
            seed: 1,
        }),
        crate::scenario::FilesPreset::Explicit => files.push(FileSet::Explicit {
            sizes: t.sizes.iter().map(|b| b.0).collect(),
        }),
    }
    files
}

/// Writes the file set into `root`: every path of `sets`, `/bytes/N` for `bytes`, and the index
/// page, bodies the built-in server's pattern; folders 0755 and files 0644.
pub fn write_docroot(root: &Path, sets: &[FileSet], bytes: &[u64]) -> anyhow::Result<()> {
    let pattern = crate::target::files::pattern_buf();
    let mut paths: Vec<(String, u64)> = sets
        .iter()
        .flat_map(crate::target::fileset_paths)
        .map(|(_, p, n)| (p, n))
        .collect();
    paths.extend(bytes.iter().map(|n| (format!("/bytes/{n}"), *n)));
    for (path, size) in paths {
        let file = root.join(path.trim_start_matches('/'));
        if let Some(parent) = file.parent() {
            make_dir(parent)?;
        }
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(&file).with_context(|| format!("writing {}", file.display()))?,
        );
        let mut left = size;
        while left > 0 {
            let n = left.min(pattern.len() as u64) as usize;
            f.write_all(&pattern[..n])?;
            left -= n as u64;
        }
        f.flush()?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))?;
    }
    let index = crate::target::files::Catalog::new(sets);
    let file = root.join("index.html");
    std::fs::write(&file, index.index())?;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}

fn make_dir(d: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} readable", d.display()))
}

/// A fresh folder under the temp dir, readable by everyone, named by this process's pid so a
/// later run can tell it is a leftover once this one has exited (`what`: one of
/// `sys::netns::TEMP_DIR_KINDS`).
fn temp_dir(what: &str) -> anyhow::Result<PathBuf> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    debug_assert!(
        crate::sys::netns::TEMP_DIR_KINDS.contains(&what),
        "temp folder kind {what} is not in TEMP_DIR_KINDS: a crashed run would leak it"
    );
    let d = std::env::temp_dir().join(format!(
        "synlab-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    if d.exists() {
        std::fs::remove_dir_all(&d).with_context(|| format!("clearing {}", d.display()))?;
    }
    make_dir(&d)?;
    Ok(d)
}

/// Whether a target of `kind` can run in a lab of `mode`: nginx and Apache switch their workers
/// to another user, which a rootless lab without subordinate ids cannot map (Caddy does not).
pub fn fits_lab(kind: TargetKind, mode: &crate::sys::userns::LabMode) -> anyhow::Result<()> {
    if kind.switches_user() && *mode == (crate::sys::userns::LabMode::Rootless { wide: false }) {
        bail!(
            "{} cannot run in this rootless lab: {}",
            kind.name(),
            crate::sys::userns::wide_mapping_missing()
        );
    }
    Ok(())
}

impl RealServer {
    /// Writes the config and the document root for the scenario's nginx or Apache listening on
    /// `listen`, into `dir` (None: a temporary folder). Fails, naming the package, when the
    /// binary is missing.
    pub fn prepare(
        sc: &Scenario,
        listen: SocketAddr,
        dir: Option<PathBuf>,
        tls: Option<crate::tls::cert::CertFiles>,
    ) -> anyhow::Result<Self> {
        let kind = sc.target.kind;
        let bin = find_binary(kind)?;
        if let Some(mode) = crate::sys::userns::mode() {
            fits_lab(kind, mode)?;
        }
        let modules = match kind {
            TargetKind::Apache => Some(apache_modules_dir()?),
            _ => None,
        };
        // Those a killed earlier run left (without a network lab nothing else removes them).
        let leftovers_removed = crate::sys::netns::remove_dead_temp_dirs(&std::env::temp_dir());
        let mut owned = Vec::new();
        let dir = match dir {
            // Absolute: the server resolves relative paths against its own prefix (-p, -d).
            Some(d) => {
                make_dir(&d)?;
                d.canonicalize()
                    .with_context(|| format!("resolving {}", d.display()))?
            }
            None => {
                let d = temp_dir(kind.name())?;
                owned.push(d.clone());
                d
            }
        };
        let docroot = temp_dir("docroot")?;
        owned.push(docroot.clone());
        let mut server = RealServer {
            kind,
            conf: dir.join(format!("{}.conf", kind.name())),
            access_log: dir.join("access.log"),
            error_log: dir.join("error.log"),
            dir,
            docroot,
            command: String::new(),
            spawn: Spawn::default(),
            in_pid_ns: false,
            owned,
            leftovers_removed,
        };
        write_docroot(&server.docroot, &file_sets(sc), &bytes_sizes(sc))?;
        let t = &sc.target;
        let params = ConfigParams {
            listen,
            workers: t.workers,
            max_workers: t.max_workers,
            backlog: t.backlog,
            keepalive: t.keepalive || sc.uses_keepalive(),
            dir: server.dir.clone(),
            docroot: server.docroot.clone(),
            user: worker_user(),
            nofile: crate::sys::privilege::nofile_hard_limit()
                .map(|hard| hard.min(65536))
                .unwrap_or(1024),
            extra: t.extra_config.clone(),
            extra_events: t.extra_events.clone(),
            tls: tls.map(|f| conf::TlsParams {
                cert: f.cert,
                key: f.key,
                session_cache: t.tls_session_cache,
                tickets: t.tls_tickets,
            }),
            http2: sc.load.http == crate::scenario::HttpVersion::Http2,
        };
        let d = server.dir.display().to_string();
        let conf = server.conf.display().to_string();
        let mut program = bin.clone();
        let (text, args) = match (kind, &modules) {
            (TargetKind::Caddy, _) => {
                // Started through `env`, which sets Caddy's homes and execs it (same pid).
                program = find_in_path("env").context("env (coreutils) is not on PATH")?;
                (
                    caddy::caddyfile(&params),
                    caddy::caddy_args(&bin, &server.conf, &server.dir),
                )
            }
            (TargetKind::Apache, Some(m)) => {
                make_dir(&server.dir.join("run"))?;
                std::fs::write(
                    server.dir.join("mime.types"),
                    "text/html html\ntext/plain txt\n",
                )?;
                (
                    apache_conf(&params, t.mpm.unwrap_or_default(), m),
                    vec!["-d".into(), d, "-f".into(), conf, "-DFOREGROUND".into()],
                )
            }
            _ => {
                make_dir(&server.dir.join("tmp"))?;
                (
                    nginx_conf(&params),
                    vec![
                        "-p".into(),
                        format!("{d}/"),
                        "-c".into(),
                        conf,
                        "-e".into(),
                        server.error_log.display().to_string(),
                        "-g".into(),
                        "daemon off;".into(),
                    ],
                )
            }
        };
        std::fs::write(&server.conf, text)
            .with_context(|| format!("writing {}", server.conf.display()))?;
        // The log exists before the server starts, so the follower can open it at once.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&server.access_log)?;
        let (program, args) = match find_in_path("unshare") {
            Some(u) if crate::sys::privilege::Privileges::current().sys_admin => {
                server.in_pid_ns = true;
                let mut a: Vec<String> = ["--pid", "--fork", "--kill-child=SIGKILL"]
                    .map(String::from)
                    .to_vec();
                a.push(program.display().to_string());
                a.extend(args);
                (u, a)
            }
            _ => (program, args),
        };
        server.command = format!("{} {}", program.display(), args.join(" "));
        server.spawn = Spawn {
            program: Some(program.display().to_string()),
            args,
            output: Some(server.dir.join("output.log")),
            ..Default::default()
        };
        Ok(server)
    }

    /// Starts the server in `netns` (None: here), pinned to `cpus`.
    pub fn start(&self, netns: Option<String>, cpus: Vec<usize>) -> anyhow::Result<ChildProc> {
        let spawn = Spawn {
            netns,
            cpus,
            ..self.spawn.clone()
        };
        ChildProc::spawn(self.kind.name(), &spawn, |_| {})
            .with_context(|| format!("starting `{}`", self.command))
    }

    /// The server's own pid (nginx's master, Apache's parent) given the pid of what `start`
    /// started: under `unshare`, its one child.
    pub fn main_pid(&self, started: u32) -> u32 {
        if !self.in_pid_ns {
            return started;
        }
        // unshare forks at once; the server is up by the time the caller asks.
        for _ in 0..100 {
            if let Some(&pid) = crate::sys::procfs::children(started).first() {
                return pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        started
    }

    /// Why the server did not come up, in its own words: its start-up errors (nginx's
    /// `[emerg]` lines, Apache's `AH...` lines) from its output and error log, and where to
    /// read more, naming only files that exist. The folder is kept (also a temporary one), so
    /// the paths named stay readable after the run stops.
    pub fn start_failure(&mut self) -> String {
        self.owned.retain(|d| *d != self.dir);
        let output = self.dir.join("output.log");
        let files = [&output, &self.error_log];
        let mut said: Vec<String> = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            for (i, l) in lines.iter().enumerate().filter(|(_, l)| is_start_error(l)) {
                // Apache says what is wrong on the line after "Syntax error on line N".
                let next = lines.get(i + 1).filter(|_| l.contains("Syntax error"));
                for l in std::iter::once(l).chain(next) {
                    if !l.is_empty() && !said.iter().any(|s| same_error(s, l)) {
                        said.push(l.to_string());
                    }
                }
            }
        }
        // Nothing recognised: the output's last lines, whatever they say.
        if said.is_empty() {
            said = crate::sys::files::last_lines(&output, 3)
                .iter()
                .map(|l| l.trim().to_string())
                .collect();
        }
        let mut look: Vec<String> = vec![format!("its config {}", self.conf.display())];
        look.extend(
            files
                .iter()
                .filter(|f| f.metadata().is_ok_and(|m| m.len() > 0))
                .map(|f| f.display().to_string()),
        );
        let said = if said.is_empty() {
            "it said nothing".to_string()
        } else {
            format!("it said:\n  {}", said.join("\n  "))
        };
        format!(
            "{} did not start; {said}\nsee {}",
            self.kind.name(),
            look.join(", ")
        )
    }
}

/// The same error said twice: nginx writes each to its output ("nginx: [emerg] X") and to its
/// error log ("2026/11/28 01:03:28 [emerg] 1#1: X").
fn same_error(a: &str, b: &str) -> bool {
    let what = |l: &str| -> String {
        let Some((_, rest)) = l.split_once("] ") else {
            return l.to_string();
        };
        match rest.split_once(": ") {
            Some((pid, x))
                if pid
                    .split('#')
                    .all(|n| n.bytes().all(|b| b.is_ascii_digit())) =>
            {
                x.to_string()
            }
            _ => rest.to_string(),
        }
    };
    a == b || what(a) == what(b)
}

/// A line of a server's start-up error: nginx's `[emerg]`/`[alert]`/`[crit]`, Apache's
/// `AH01234: ...` and its "Syntax error on line N", Caddy's `Error: ...`.
fn is_start_error(l: &str) -> bool {
    ["[emerg]", "[alert]", "[crit]", "Syntax error"]
        .iter()
        .any(|m| l.contains(m))
        // Caddy's last word before it exits.
        || l.starts_with("Error: ")
        || l.split_whitespace().any(|w| {
            w.len() == 8
                && w.starts_with("AH")
                && w.ends_with(':')
                && w[2..7].bytes().all(|b| b.is_ascii_digit())
        })
}

/// Asks a server we started (by its pid) to stop: nginx's fast shutdown and Apache's stop
/// both answer SIGTERM, closing their workers and logs.
pub fn ask_to_stop(pid: u32) {
    crate::sys::server_io::kill_pid(pid as i32, crate::sys::Signal::SIGTERM);
}

impl Drop for RealServer {
    fn drop(&mut self) {
        for d in &self.owned {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docroot_holds_the_built_in_servers_paths() {
        let dir = tempfile::tempdir().unwrap();
        let sets = [FileSet::Specweb96, FileSet::Explicit { sizes: vec![10] }];
        write_docroot(dir.path(), &sets, &[1294, 0]).unwrap();
        let size = |p: &str| std::fs::metadata(dir.path().join(p)).unwrap().len();
        assert_eq!(size("bytes/1294"), 1294);
        assert_eq!(size("bytes/0"), 0);
        assert_eq!(size("file/10"), 10);
        assert_eq!(size("specweb96/class3_9"), 921_600);
        let body = std::fs::read(dir.path().join("specweb96/class0_1")).unwrap();
        assert_eq!(&body[..64], crate::target::files::PATTERN);
        assert!(size("index.html") > 0);
    }

    #[test]
    fn a_dynamic_workload_on_a_real_server_is_refused_by_check() {
        let e = crate::scenario::parse(
            "x.toml",
            "[target]\nkind = \"nginx\"\n[load]\nworkload = \"heavy_cgi\"\n",
        )
        .unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("/cgi/") && msg.contains("built-in"), "{msg}");
        crate::scenario::parse("x.toml", "[target]\nkind = \"apache\"\nmpm = \"event\"\nworkers = 2\nmax_workers = 150\n[load]\nworkload = \"specweb96\"\n").unwrap();
        for (toml, key) in [
            ("[target]\nkind = \"nginx\"\nmpm = \"prefork\"\n", "mpm"),
            (
                "[target]\nkind = \"nginx\"\naccess_log = \"/x\"\n",
                "access_log",
            ),
            ("[target]\naccess_log = \"/x\"\n", "access_log"),
            (
                "[target]\nkind = \"apache\"\nservice_time = \"1ms\"\n",
                "service_time",
            ),
            ("[target]\nextra_config = [\"x\"]\n", "extra_config"),
            (
                "[target]\nkind = \"apache\"\nextra_events = [\"x\"]\n",
                "extra_events",
            ),
        ] {
            let msg = format!("{:#}", crate::scenario::parse("x.toml", toml).unwrap_err());
            assert!(msg.contains(key), "{toml}: {msg}");
        }
    }

    #[test]
    fn start_errors_are_the_servers_own_lines() {
        for l in [
            "nginx: [emerg] unknown directive \"bogus\" in /r/nginx/nginx.conf:30",
            "2026/11/28 00:20:01 [emerg] 7#7: unknown directive \"bogus\"",
            "AH00526: Syntax error on line 40 of /r/apache/apache.conf:",
            "[Sat Nov 28 00:20:01 2026] [core:error] [pid 9] AH00015: Unable to open logs",
            "Error: adapting config using caddyfile: Caddyfile:4: unrecognized global option: x",
        ] {
            assert!(is_start_error(l), "{l}");
        }
        assert!(same_error(
            "nginx: [emerg] unknown directive \"x\" in /c:2",
            "2026/11/28 01:03:28 [emerg] 1#1: unknown directive \"x\" in /c:2"
        ));
        assert!(!same_error(
            "nginx: [emerg] unknown directive \"x\" in /c:2",
            "nginx: [emerg] unknown directive \"y\" in /c:3"
        ));
        for l in [
            "nginx: the configuration file syntax is ok",
            "AHEAD: fine",
            "",
        ] {
            assert!(!is_start_error(l), "{l}");
        }
    }

    #[test]
    fn default_workload_needs_bytes_1294() {
        let sc = crate::scenario::default_scenario();
        assert_eq!(bytes_sizes(&sc), vec![1294]);
    }
}
