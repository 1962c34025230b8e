//! Applies a topology plan with iproute2 (`ip`, `tc`), the ethtool ioctl and /proc/sys writes
//! inside each namespace, and returns a guard that deletes the lab's namespaces on drop (their
//! veths and qdiscs go with them). A plan that fails half-way is rolled back before the error
//! is returned. Also finds and removes leftovers of crashed runs by the `synlab-` prefix: their
//! namespaces and links, and their temp folders (`synlab-<kind>-<pid>-<n>`).

use anyhow::{bail, Context};
use serde::Serialize;
use std::process::Command;

use super::pidstat::PidStat;

/// Every name the lab creates starts with this (leftovers are found by it).
pub const PREFIX: &str = "synlab-";

/// The start of every name (namespace, link) of lab `run_id`.
pub fn lab_prefix(run_id: &str) -> String {
    format!("{PREFIX}{run_id}-")
}

/// One kernel operation of building the lab (`net::plan` lists them). Undo is by namespace:
/// deleting a netns deletes its links.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op")]
pub enum Op {
    AddNetns {
        name: String,
    },
    /// A veth pair created with each end directly in its netns (nothing appears in the root netns).
    AddVethPair {
        a: String,
        a_netns: String,
        b: String,
        b_netns: String,
    },
    AddBridge {
        netns: String,
        name: String,
    },
    SetMaster {
        netns: String,
        dev: String,
        master: String,
    },
    AddAddr {
        netns: String,
        dev: String,
        cidr: String,
    },
    LinkUp {
        netns: String,
        dev: String,
    },
    /// An on-link route (no gateway).
    Route {
        netns: String,
        dst: String,
        dev: String,
    },
    /// GSO/TSO/GRO, scatter-gather and tx checksum offload off, so frames seen by AF_PACKET
    /// are wire-sized with finished checksums.
    OffloadsOff {
        netns: String,
        dev: String,
    },
    /// Writes /proc/sys/<key> inside the netns.
    Sysctl {
        netns: String,
        key: String,
        value: String,
    },
    /// `net.core.rps_default_mask` of the netns (a hex cpumask): links made in it afterwards
    /// steer their receive processing (RPS) to those CPUs. The one way a rootless lab can
    /// steer: `rps_cpus` itself needs CAP_NET_ADMIN in the initial user namespace, the
    /// per-namespace default (Linux >= 6.3) only the namespace's owner. Not fatal: where the
    /// kernel refuses it the lab runs unsteered and says why ([`TopologyGuard::steer_refused`]).
    RpsDefaultMask {
        netns: String,
        mask: String,
    },
    /// `tc qdisc replace dev DEV root netem ARGS...` in the netns.
    Netem {
        netns: String,
        dev: String,
        args: Vec<String>,
    },
}

/// Runs `f` on a thread that has entered the named netns (setns affects only that thread).
pub fn in_netns<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::sys::netns_enter_raw(name)
                .with_context(|| format!("entering netns {name} (/run/netns/{name})"))?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("thread in netns {name} panicked"))?
    })
}

/// Enters the named netns in the calling thread for good (for test and worker threads).
pub fn enter(name: &str) -> anyhow::Result<()> {
    crate::sys::netns_enter_raw(name).with_context(|| format!("entering netns {name}"))
}

/// Runs an iproute2 tool, with an error that quotes the command and its stderr.
fn run_tool(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(tool).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!(
                "`{tool}` is not installed (or not on PATH); the network lab needs iproute2: apt install iproute2"
            )
        } else {
            anyhow::anyhow!("running {tool}: {e}")
        }
    })?;
    if !out.status.success() {
        bail!(
            "`{tool} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    run_tool("ip", args)
}

/// The namespaces a plan created; dropping it deletes them (and everything in them).
#[derive(Debug, Default)]
pub struct TopologyGuard {
    namespaces: Vec<String>,
    /// The lab's run id, whose owner record goes with the namespaces.
    run_id: Option<String>,
    /// Why the kernel refused to steer a namespace's receive processing (None: steered, or
    /// not asked).
    pub steer_refused: Option<String>,
}

impl TopologyGuard {
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Deletes the namespaces now; errors are collected, every namespace is tried.
    pub fn teardown(&mut self) -> anyhow::Result<()> {
        let mut errs = Vec::new();
        while let Some(ns) = self.namespaces.pop() {
            if let Err(e) = delete_netns(&ns) {
                errs.push(e.to_string());
            }
        }
        if errs.is_empty() {
            if let Some(id) = self.run_id.take() {
                remove_owner(&id);
            }
            Ok(())
        } else {
            bail!("tearing the lab down: {}", errs.join("; "))
        }
    }

    /// Keeps the lab up after the guard is gone (`synlab net up`).
    pub fn leak(mut self) -> Vec<String> {
        if let Some(id) = self.run_id.take() {
            write_owner(&id, true);
        }
        std::mem::take(&mut self.namespaces)
    }
}

impl Drop for TopologyGuard {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("synlab: {e:#}");
        }
    }
}

fn delete_netns(ns: &str) -> anyhow::Result<()> {
    if std::path::Path::new("/run/netns").join(ns).exists() {
        ip(&["netns", "del", ns])?;
    }
    Ok(())
}

/// Creates the named netns under /run/netns. Root uses `ip netns add`; in synlab's user
/// namespace `ip` cannot return to the host's namespace afterwards, so a scratch thread makes
/// the namespace and bind-mounts it in place (the mount lives in synlab's mount namespace).
fn add_netns(name: &str) -> anyhow::Result<()> {
    if !crate::sys::userns::rootless() {
        return ip(&["netns", "add", name]);
    }
    let path = std::path::Path::new("/run/netns").join(name);
    std::fs::File::create_new(&path).with_context(|| format!("creating {}", path.display()))?;
    let made = std::thread::scope(|s| {
        s.spawn(|| -> anyhow::Result<()> {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)?;
            nix::mount::mount(
                Some("/proc/thread-self/ns/net"),
                &path,
                None::<&str>,
                nix::mount::MsFlags::MS_BIND,
                None::<&str>,
            )?;
            Ok(())
        })
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the thread making netns {name} panicked")))
    });
    if made.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    made.with_context(|| format!("creating netns {name} in synlab's user namespace"))
}

/// Applies one operation.
fn apply_op(op: &Op, guard: &mut TopologyGuard) -> anyhow::Result<()> {
    match op {
        Op::AddNetns { name } => {
            add_netns(name)?;
            guard.namespaces.push(name.clone());
        }
        // Made inside the first namespace, not here: a rootless lab may not add links to
        // the host's namespace.
        Op::AddVethPair {
            a,
            a_netns,
            b,
            b_netns,
        } => ip(&[
            "-n", a_netns, "link", "add", a, "type", "veth", "peer", "name", b, "netns", b_netns,
        ])?,
        Op::AddBridge { netns, name } => ip(&["-n", netns, "link", "add", name, "type", "bridge"])?,
        Op::SetMaster { netns, dev, master } => {
            ip(&["-n", netns, "link", "set", "dev", dev, "master", master])?
        }
        Op::AddAddr { netns, dev, cidr } => ip(&["-n", netns, "addr", "add", cidr, "dev", dev])?,
        Op::LinkUp { netns, dev } => ip(&["-n", netns, "link", "set", "dev", dev, "up"])?,
        Op::Route { netns, dst, dev } => ip(&["-n", netns, "route", "add", dst, "dev", dev])?,
        Op::OffloadsOff { netns, dev } => {
            in_netns(netns, || crate::sys::ethtool::offloads_off(dev))?
                .with_context(|| format!("in netns {netns}"))?
        }
        Op::Sysctl { netns, key, value } => {
            in_netns(netns, || crate::sys::sysctl::write(key, value))?
                .with_context(|| format!("in netns {netns}"))?
        }
        Op::RpsDefaultMask { netns, mask } => {
            let wrote = in_netns(netns, || {
                crate::sys::sysctl::write("net/core/rps_default_mask", mask)
            })?;
            if let Err(e) = wrote {
                guard.steer_refused.get_or_insert_with(|| {
                    format!("{} (in netns {netns})", rps_default_mask_refusal(&e))
                });
            }
        }
        Op::Netem { netns, dev, args } => {
            let mut a = vec![
                "-n",
                netns.as_str(),
                "qdisc",
                "replace",
                "dev",
                dev,
                "root",
                "netem",
            ];
            a.extend(args.iter().map(String::as_str));
            run_tool("tc", &a)?
        }
    }
    Ok(())
}

/// Applies the operations of lab `run_id` in order; on failure, deletes what was created.
pub fn apply<'a>(
    run_id: &str,
    ops: impl IntoIterator<Item = &'a Op>,
) -> anyhow::Result<TopologyGuard> {
    // The owner first, so no other run takes the half-built lab for a crashed run's.
    write_owner(run_id, false);
    let mut guard = TopologyGuard {
        namespaces: Vec::new(),
        run_id: Some(run_id.to_string()),
        steer_refused: None,
    };
    let trace = std::env::var_os("SYNLAB_NET_TRACE").is_some();
    for op in ops {
        if trace {
            eprintln!("synlab net: {op:?}");
        }
        if let Err(e) = apply_op(op, &mut guard) {
            let rollback = guard.teardown();
            let e = e.context(format!("building lab {run_id}"));
            return Err(match rollback {
                Ok(()) => e,
                Err(r) => e.context(format!("and the rollback failed too: {r:#}")),
            });
        }
    }
    Ok(guard)
}

/// Why writing `net.core.rps_default_mask` in a lab namespace failed, in the kernel's terms.
fn rps_default_mask_refusal(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            "this kernel has no net.core.rps_default_mask in a network \
             namespace (per namespace since Linux 6.3, with CONFIG_RPS), so the lab cannot steer \
             the server's receive processing"
                .into()
        }
        _ => format!("the kernel refused net.core.rps_default_mask: {e}"),
    }
}

/// Sets a link's receive steering live: `/sys/class/net/DEV/queues/rx-0/rps_cpus` in `netns`
/// (a hex cpumask, `0` for none). Sysfs shows the links of the namespace it was mounted in,
/// so a scratch thread enters the netns, takes a mount namespace of its own and mounts sysfs
/// there (both go when the thread ends). The kernel lets only CAP_NET_ADMIN in the initial
/// user namespace write it (net/core/net-sysfs.c, `store_rps_map`: `capable()`): a rootless
/// lab is refused, and says so.
pub fn set_rps_cpus(netns: &str, dev: &str, mask: &str) -> anyhow::Result<()> {
    use nix::mount::{mount, MsFlags};
    let file = format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus");
    let made = std::thread::scope(|s| {
        s.spawn(|| -> anyhow::Result<()> {
            crate::sys::netns_enter_raw(netns)
                .with_context(|| format!("entering netns {netns}"))?;
            nix::sched::unshare(
                nix::sched::CloneFlags::CLONE_NEWNS | nix::sched::CloneFlags::CLONE_FS,
            )
            .context("a mount namespace for the netns's sysfs")?;
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )
            .context("making the scratch mounts private")?;
            mount(
                Some("sysfs"),
                "/sys",
                Some("sysfs"),
                MsFlags::empty(),
                None::<&str>,
            )
            .context("mounting the netns's sysfs")?;
            std::fs::write(&file, mask).map_err(|e| {
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    anyhow::anyhow!(
                        "the kernel lets only CAP_NET_ADMIN in the initial user namespace write \
                         rps_cpus (net/core/net-sysfs.c checks capable()), which a rootless lab \
                         does not have: its steering is set once, when its links are made \
                         (net.core.rps_default_mask)"
                    )
                } else {
                    anyhow::anyhow!("writing {mask} to {file}: {e}")
                }
            })
        })
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the thread steering {dev} panicked")))
    });
    made.with_context(|| format!("steering {dev}'s receive processing in netns {netns}"))
}

/// Changes (replaces) a netem qdisc live.
pub fn netem_change(netns: &str, dev: &str, args: &[String]) -> anyhow::Result<()> {
    let mut a = vec!["-n", netns, "qdisc", "change", "dev", dev, "root", "netem"];
    a.extend(args.iter().map(String::as_str));
    run_tool("tc", &a)
}

/// Replaces `dev`'s root qdisc with a new netem under `handle` (its queue dropped at once).
pub fn netem_replace(netns: &str, dev: &str, handle: &str, args: &[String]) -> anyhow::Result<()> {
    let mut a = vec![
        "-n", netns, "qdisc", "replace", "dev", dev, "root", "handle", handle, "netem",
    ];
    a.extend(args.iter().map(String::as_str));
    run_tool("tc", &a)
}

/// `tc -s -j qdisc show dev DEV root` in `netns`: the root qdisc's statistics as JSON (None
/// when tc cannot say).
pub fn root_qdisc_json(netns: &str, dev: &str) -> Option<String> {
    let out = Command::new("tc")
        .args(["-n", netns, "-s", "-j", "qdisc", "show", "dev", dev, "root"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// synlab's namespaces (under /run/netns) and root-netns links on this machine.
pub fn list_leftovers() -> (Vec<String>, Vec<String>) {
    let names = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(PREFIX))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    (names("/run/netns"), names("/sys/class/net"))
}

/// Removes every synlab namespace and root-netns link (leftovers of crashed runs, or a lab
/// left up by `synlab net up`). Returns what it removed.
pub fn cleanup_all() -> anyhow::Result<Vec<String>> {
    cleanup_matching(PREFIX)
}

/// Removes the namespaces and root links whose names start with `prefix` (a run's, e.g.
/// `synlab-ab12-`).
pub fn cleanup_matching(prefix: &str) -> anyhow::Result<Vec<String>> {
    let (nss, links) = list_leftovers();
    let mut removed = Vec::new();
    let mut errs = Vec::new();
    for ns in nss.into_iter().filter(|n| n.starts_with(prefix)) {
        match ip(&["netns", "del", &ns]) {
            Ok(()) => {
                if let Some(id) = run_id_of(&ns) {
                    remove_owner(id);
                }
                removed.push(format!("netns {ns}"))
            }
            Err(e) => errs.push(e.to_string()),
        }
    }
    for l in links.into_iter().filter(|n| n.starts_with(prefix)) {
        // A veth whose peer went with a netns may already be gone.
        if std::path::Path::new("/sys/class/net").join(&l).exists() {
            match ip(&["link", "del", &l]) {
                Ok(()) => removed.push(format!("link {l}")),
                Err(e) => errs.push(e.to_string()),
            }
        }
    }
    // Owner records of labs that have no namespace left (removed by hand, or above).
    let (left, _) = list_leftovers();
    if let Ok(dir) = std::fs::read_dir(OWNERS) {
        for e in dir.filter_map(|e| e.ok()) {
            let id = e.file_name().to_string_lossy().into_owned();
            let mine = lab_prefix(&id);
            if (mine.starts_with(prefix) || prefix.starts_with(&mine))
                && !left.iter().any(|n| n.starts_with(&mine))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if errs.is_empty() {
        Ok(removed)
    } else {
        bail!("removed {} item(s) but: {}", removed.len(), errs.join("; "))
    }
}

/// Whether the kernel can run netem: tries a netem qdisc on the loopback of a scratch netns.
pub fn netem_available() -> bool {
    let ns = format!("{PREFIX}probe-{}", std::process::id());
    if add_netns(&ns).is_err() {
        return false;
    }
    let ok = run_tool(
        "tc",
        &[
            "-n", &ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
        ],
    )
    .is_ok();
    let _ = ip(&["netns", "del", &ns]);
    ok
}

/// Starts `self_exe() args...` in `netns`, detached (own session, stdio to /dev/null, no
/// parent-death signal) so it outlives this process; returns its pid.
pub fn spawn_detached(netns: &str, args: &[String]) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let ns = netns.to_string();
    let mut cmd = Command::new(crate::sys::process::self_exe());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only async-signal-safe calls (setsid, open, setns, close) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            crate::sys::netns_enter_raw(&ns)
        });
    }
    let child = cmd.spawn().context("starting a detached process")?;
    Ok(child.id())
}

/// A synlab process found on this machine (other than the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynlabProc {
    pub pid: u32,
    pub ppid: u32,
    /// `synlab run x.toml`, `synlab router` (long JSON arguments left out).
    pub command: String,
    /// The synlab namespace it runs in; None in the caller's namespace.
    pub netns: Option<String>,
    /// Runs in a namespace other than the caller's that has no name under /run/netns any more
    /// (deleted while the process held it).
    pub in_deleted_netns: bool,
    /// The whole command line (to tell which lab a router serves: its ports are named).
    pub cmdline: String,
    /// Runs in a user namespace other than the caller's: a rootless lab's process.
    pub rootless: bool,
}

impl std::fmt::Display for SynlabProc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} `{}`", self.pid, self.command)?;
        match (&self.netns, self.in_deleted_netns) {
            (Some(ns), _) => write!(f, " in netns {ns}"),
            (None, true) => write!(f, " in a deleted netns"),
            (None, false) => Ok(()),
        }
    }
}

/// (device, inode) of a namespace file: equal for two paths naming the same namespace.
fn ns_id(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// `synlab run x.toml` from a NUL-separated /proc cmdline: the program's file name and its
/// arguments, JSON arguments (`--config-json {...}`) left out.
pub fn short_command(cmdline: &str) -> String {
    let mut words = cmdline.split('\0').filter(|w| !w.is_empty());
    let prog = words
        .next()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .unwrap_or_default();
    let mut out = vec![prog];
    let mut skip = false;
    for w in words {
        if skip || w.starts_with('{') {
            skip = false;
            continue;
        }
        if w == "--config-json" {
            skip = true;
            continue;
        }
        out.push(w.to_string());
    }
    out.join(" ")
}

/// Every synlab process on this machine but the caller: the binary named `synlab` (children
/// are started from it, also by the test harness through SYNLAB_EXE), with the synlab
/// namespace each runs in.
pub fn synlab_processes() -> Vec<SynlabProc> {
    let me = std::process::id();
    let own_ns = ns_id(std::path::Path::new("/proc/self/ns/net"));
    let own_userns = ns_id(std::path::Path::new("/proc/self/ns/user"));
    let (names, _) = list_leftovers();
    let named: Vec<((u64, u64), String)> = names
        .into_iter()
        .filter_map(|n| ns_id(&std::path::Path::new("/run/netns").join(&n)).map(|id| (id, n)))
        .collect();
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let base = e.path();
        let Ok(exe) = std::fs::read_link(base.join("exe")) else {
            continue;
        };
        let name = exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name != "synlab" && name != "synlab (deleted)" {
            continue;
        }
        let cmdline = std::fs::read_to_string(base.join("cmdline")).unwrap_or_default();
        let ppid = PidStat::read(pid).map_or(0, |s| s.ppid);
        let ns = ns_id(&base.join("ns/net"));
        let netns = named
            .iter()
            .find(|(id, _)| Some(*id) == ns)
            .map(|(_, n)| n.clone());
        out.push(SynlabProc {
            pid,
            ppid,
            command: short_command(&cmdline),
            in_deleted_netns: netns.is_none() && ns.is_some() && ns != own_ns,
            netns,
            cmdline: cmdline.replace('\0', " "),
            rootless: ns_id(&base.join("ns/user")) != own_userns,
        });
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// Stops the synlab processes of the labs whose names start with `prefix`: those running in
/// their namespaces, and routers of those labs left in deleted namespaces (their command
/// lines name the lab's ports). SIGTERM, then SIGKILL after `grace`. Returns what it stopped.
pub fn stop_lab_processes(prefix: &str, grace: std::time::Duration) -> Vec<String> {
    let victims: Vec<SynlabProc> = synlab_processes()
        .into_iter()
        // A rootless lab's names live in its own namespace: a same-named lab there is not ours.
        .filter(|p| !p.rootless)
        .filter(|p| match &p.netns {
            Some(ns) => ns.starts_with(prefix),
            None => p.in_deleted_netns && p.cmdline.contains(prefix),
        })
        .collect();
    for p in &victims {
        // SAFETY: kill(2) on a pid just found running synlab in this lab.
        unsafe {
            libc::kill(p.pid as i32, libc::SIGTERM);
        }
    }
    let deadline = std::time::Instant::now() + grace;
    let alive = crate::sys::process::running;
    while victims.iter().any(|p| alive(p.pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for p in victims.iter().filter(|p| alive(p.pid)) {
        // SAFETY: as above; it ignored SIGTERM.
        unsafe {
            libc::kill(p.pid as i32, libc::SIGKILL);
        }
    }
    victims.iter().map(|p| p.to_string()).collect()
}

/// Where a lab's owner is recorded: `/run/synlab/<run id>` holds "<pid> <start time>" of the
/// process that built it, or "kept" for a lab `synlab net up` left up on purpose.
const OWNERS: &str = "/run/synlab";

fn owner_path(run_id: &str) -> std::path::PathBuf {
    std::path::Path::new(OWNERS).join(run_id)
}

/// Start time (clock ticks since boot) of a process, to tell it from a later one with its pid.
fn start_time(pid: u32) -> Option<u64> {
    PidStat::read(pid).map(|s| s.starttime)
}

/// Records this process as the owner of lab `run_id` (`kept`: left up by `net up`).
pub fn write_owner(run_id: &str, kept: bool) {
    let me = std::process::id();
    let text = if kept {
        "kept\n".to_string()
    } else {
        format!("{me} {}\n", start_time(me).unwrap_or(0))
    };
    let _ = std::fs::create_dir_all(OWNERS);
    let _ = std::fs::write(owner_path(run_id), text);
}

fn remove_owner(run_id: &str) {
    let _ = std::fs::remove_file(owner_path(run_id));
}

/// Whether the owner recorded for lab `run_id` is gone: Some(true) when its process has
/// exited, Some(false) while it runs or for a kept lab, None when nothing was recorded.
pub fn owner_gone(run_id: &str) -> Option<bool> {
    let text = std::fs::read_to_string(owner_path(run_id)).ok()?;
    let mut w = text.split_whitespace();
    let first = w.next()?;
    if first == "kept" {
        return Some(false);
    }
    let pid: u32 = first.parse().ok()?;
    let started: u64 = w.next()?.parse().ok()?;
    Some(start_time(pid) != Some(started) || !crate::sys::process::running(pid))
}

/// The run id of a synlab namespace or link name (`synlab-ab12-srv` -> `ab12`).
pub fn run_id_of(name: &str) -> Option<&str> {
    name.strip_prefix(PREFIX)?.split('-').next()
}

/// Removes the labs whose recorded owner has exited (crashed runs), with their processes,
/// and this user's temp folders of runs that have exited ([`remove_dead_temp_dirs`] in the
/// temp dir). Labs with a live owner, kept by `net up`, or with no record (an older synlab's,
/// or one being built by it) are left alone. Returns what it removed.
pub fn remove_dead_labs() -> Vec<String> {
    let (nss, _) = list_leftovers();
    let mut ids: Vec<String> = nss
        .iter()
        .filter_map(|n| run_id_of(n).map(str::to_string))
        .collect();
    ids.dedup();
    let mut removed = Vec::new();
    for id in ids {
        if owner_gone(&id) == Some(true) {
            let prefix = format!("{PREFIX}{id}-");
            removed.extend(stop_lab_processes(
                &prefix,
                std::time::Duration::from_millis(500),
            ));
            match cleanup_matching(&prefix) {
                Ok(r) => removed.extend(r),
                Err(e) => removed.push(format!("(lab {id} only in part: {e:#})")),
            }
        }
    }
    removed.extend(remove_dead_temp_dirs(&std::env::temp_dir()));
    removed
}

/// The kinds of temp folder a run makes for itself alone, each named
/// `synlab-<kind>-<pid>-<n>` in the temp dir (`<pid>`: the run's process): a real server's
/// document root (`docroot`), its config and log folder when the run keeps no folder (`nginx`,
/// `apache`, `caddy`), the lab's TLS certificate then (`tls`). The run removes them when it
/// ends; a run killed outright leaves them, and [`remove_dead_temp_dirs`] finds them by these
/// names. A new kind of temp folder must be added here.
pub const TEMP_DIR_KINDS: &[&str] = &["docroot", "nginx", "apache", "caddy", "tls"];

/// A temp folder of a synlab run ([`TEMP_DIR_KINDS`]) owned by this user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTempDir {
    pub path: std::path::PathBuf,
    /// Its kind, one of [`TEMP_DIR_KINDS`].
    pub kind: String,
    /// The process of the run that made it.
    pub pid: u32,
    /// That process has exited (the run crashed or was killed): a leftover.
    pub gone: bool,
}

impl std::fmt::Display for RunTempDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} folder {}", self.kind, self.path.display())
    }
}

/// The kind and pid of a temp folder's name (`synlab-docroot-1234-0` -> `docroot`, 1234).
fn temp_dir_name(name: &str) -> Option<(&str, u32)> {
    let (kind, rest) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let (pid, n) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !TEMP_DIR_KINDS.contains(&kind) || !digits(pid) || !digits(n) {
        return None;
    }
    Some((kind, pid.parse().ok().filter(|p| *p > 0)?))
}

/// This user's synlab temp folders directly in `base` (the temp dir; a test passes its own),
/// by name: real folders (not symbolic links, not mount points) owned by the effective user
/// (in the rootless lab, the user who started synlab), whether or not their run still runs.
pub fn temp_dirs(base: &std::path::Path) -> Vec<RunTempDir> {
    use std::os::unix::fs::MetadataExt;
    let (Ok(entries), Ok(base_meta)) = (std::fs::read_dir(base), base.metadata()) else {
        return Vec::new();
    };
    let me = crate::sys::privilege::effective_uid();
    let mut out: Vec<RunTempDir> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let (kind, pid) = temp_dir_name(name.to_str()?)?;
            let m = std::fs::symlink_metadata(e.path()).ok()?;
            (m.is_dir() && m.uid() == me && m.dev() == base_meta.dev()).then(|| RunTempDir {
                path: e.path(),
                kind: kind.to_string(),
                pid,
                gone: !crate::sys::process::running(pid),
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Removes this user's synlab temp folders in `base` whose run's process has exited
/// ([`temp_dirs`]); a live run's folders (the caller's too) and other users' are left alone.
/// A pid reused since keeps its folder until that process is gone too. Returns what it
/// removed, as [`remove_dead_labs`] does.
pub fn remove_dead_temp_dirs(base: &std::path::Path) -> Vec<String> {
    let mut removed = Vec::new();
    for d in temp_dirs(base) {
        // Asked again just before: the pid may have been given to a new run since.
        if !d.gone || crate::sys::process::running(d.pid) {
            continue;
        }
        match std::fs::remove_dir_all(&d.path) {
            Ok(()) => removed.push(d.to_string()),
            Err(e) => removed.push(format!("({d} only in part: {e})")),
        }
    }
    removed
}

/// A notice naming the other synlab runs on this machine (controllers and their children,
/// servers, routers left up), or None: their traffic and CPU use show in the kernel counters
/// and CPU figures this run reads.
pub fn others_running_notice() -> Option<String> {
    let all = synlab_processes();
    // Name the top of each tree: a process whose parent is not a synlab process.
    let tops: Vec<String> = all
        .iter()
        .filter(|p| !all.iter().any(|q| q.pid == p.ppid))
        .map(|p| p.to_string())
        .collect();
    if tops.is_empty() {
        return None;
    }
    Some(format!(
        "another synlab is running on this machine ({} process(es): {}): its load shares the CPUs and, on loopback, the kernel counters (SYN/s, listen overflows, TCP states) of this run",
        all.len(),
        tops.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shortened_and_json_left_out() {
        assert_eq!(
            short_command("/x/target/debug/synlab\0router\0--config-json\0{\"a\":1}\0"),
            "synlab router"
        );
        assert_eq!(
            short_command("synlab\0run\0s.toml\0--quick\0"),
            "synlab run s.toml --quick"
        );
    }

    #[test]
    fn run_ids_come_from_names() {
        assert_eq!(run_id_of("synlab-ab12-srv"), Some("ab12"));
        assert_eq!(run_id_of("synlab-ab12-c0-lan"), Some("ab12"));
        assert_eq!(run_id_of("other-ab12"), None);
    }

    #[test]
    fn a_lab_whose_owner_exited_is_gone_and_ours_is_not() {
        let id = format!("u{}", std::process::id() % 10_000);
        let writable = std::fs::create_dir_all(OWNERS)
            .and_then(|_| std::fs::write(owner_path(&id), ""))
            .is_ok();
        if !writable {
            assert!(
                !crate::sys::privilege::require_privileged(),
                "SYNLAB_REQUIRE_PRIVILEGED=1 but {OWNERS} is not writable (run as root)"
            );
            eprintln!("skipping: {OWNERS} is not writable (needs root)");
            return;
        }
        write_owner(&id, false);
        assert_eq!(owner_gone(&id), Some(false));
        // A pid that cannot be running: above the kernel's pid_max limit.
        std::fs::write(owner_path(&id), "4194305 1\n").unwrap();
        assert_eq!(owner_gone(&id), Some(true));
        write_owner(&id, true);
        assert_eq!(owner_gone(&id), Some(false), "kept by net up");
        remove_owner(&id);
        assert_eq!(owner_gone(&id), None);
    }

    #[test]
    fn temp_dir_names_give_kind_and_pid() {
        assert_eq!(
            temp_dir_name("synlab-docroot-1234-0"),
            Some(("docroot", 1234))
        );
        assert_eq!(temp_dir_name("synlab-nginx-77-12"), Some(("nginx", 77)));
        assert_eq!(temp_dir_name("synlab-tls-5-1"), Some(("tls", 5)));
        for n in [
            "synlab-tracefs-1234",
            "synlab-db-1234-0.sqlite",
            "synlab-docroot-1234",
            "synlab-docroot-x-0",
            "synlab-docroot-0-0",
            "synlab-docroot-12-0-1",
            "synlab-ab12-srv",
            "other-docroot-1234-0",
        ] {
            assert_eq!(temp_dir_name(n), None, "{n}");
        }
    }

    /// Every temp folder the lab makes is one a later run can find (a real server's config
    /// folder is named by its kind, `lab::real_server` asserts the rest).
    #[test]
    fn every_temp_folder_kind_is_one_a_later_run_finds() {
        use crate::scenario::TargetKind;
        for kind in [TargetKind::Nginx, TargetKind::Apache, TargetKind::Caddy] {
            assert!(TEMP_DIR_KINDS.contains(&kind.name()), "{}", kind.name());
        }
        for kind in ["docroot", "tls"] {
            assert!(TEMP_DIR_KINDS.contains(&kind), "{kind}");
        }
    }

    /// A run killed with SIGKILL leaves its temp folders (nginx's 5 MB document root): the
    /// next run removes those of exited runs, and leaves a live run's alone.
    #[test]
    fn temp_dirs_of_exited_runs_are_removed_and_a_live_runs_stay() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path();
        // A pid that has exited: a child of ours, waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        assert!(!crate::sys::process::running(dead));
        let live = std::process::id();
        let make = |name: String| {
            let d = base.join(name);
            std::fs::create_dir_all(d.join("specweb96")).unwrap();
            std::fs::write(d.join("specweb96/class0_1"), b"x").unwrap();
            d
        };
        let dead_docroot = make(format!("synlab-docroot-{dead}-0"));
        let dead_conf = make(format!("synlab-nginx-{dead}-1"));
        let dead_tls = make(format!("synlab-tls-{dead}-0"));
        let live_docroot = make(format!("synlab-docroot-{live}-0"));
        // Not ours by name, or not a folder: left alone whatever their pid.
        let unknown = make(format!("synlab-tracefs-{dead}"));
        let other_kind = make(format!("synlab-other-{dead}-0"));
        let file = base.join(format!("synlab-docroot-{dead}-3"));
        std::fs::write(&file, b"x").unwrap();
        let outside = make("elsewhere".into());
        let link = base.join(format!("synlab-docroot-{dead}-2"));
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        // Another user's (only root can make one).
        let foreign = make(format!("synlab-docroot-{dead}-4"));
        let chowned = crate::sys::privilege::effective_root()
            && std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).is_ok();

        let listed = temp_dirs(base);
        let names: Vec<(String, bool)> = listed
            .iter()
            .map(|d| (d.path.file_name().unwrap().to_string_lossy().into(), d.gone))
            .collect();
        assert!(
            names.contains(&(format!("synlab-docroot-{dead}-0"), true)),
            "{names:?}"
        );
        assert!(
            names.contains(&(format!("synlab-docroot-{live}-0"), false)),
            "{names:?}"
        );
        assert_eq!(names.len(), if chowned { 4 } else { 5 }, "{names:?}");

        let removed = remove_dead_temp_dirs(base);
        for d in [&dead_docroot, &dead_conf, &dead_tls] {
            assert!(!d.exists(), "{} should be gone", d.display());
        }
        assert!(
            removed.contains(&format!("docroot folder {}", dead_docroot.display())),
            "{removed:?}"
        );
        assert_eq!(removed.len(), if chowned { 3 } else { 4 }, "{removed:?}");
        for d in [&live_docroot, &unknown, &other_kind, &file, &outside] {
            assert!(d.exists(), "{} should stay", d.display());
        }
        assert!(outside.join("specweb96/class0_1").exists());
        assert!(std::fs::symlink_metadata(&link).is_ok(), "the link stays");
        assert_eq!(foreign.exists(), chowned, "another user's folder stays");
        // Nothing of an exited run is left: a second pass removes nothing.
        assert!(remove_dead_temp_dirs(base).is_empty());
    }
}
