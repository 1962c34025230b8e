//! Applies a topology plan with iproute2 (`ip`, `tc`), the ethtool ioctl and /proc/sys writes
//! inside each namespace, and returns a guard that deletes the lab's namespaces on drop (their
//! veths and qdiscs go with them). A plan that fails half-way is rolled back before the error
//! is returned. Also finds and removes leftovers of crashed runs by the `synlab-` prefix.

use crate::net::plan::{Op, Plan, PREFIX};
use anyhow::{bail, Context};
use std::process::Command;

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
            Ok(())
        } else {
            bail!("tearing the lab down: {}", errs.join("; "))
        }
    }

    /// Keeps the lab up after the guard is gone (`synlab net up`).
    pub fn leak(mut self) -> Vec<String> {
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

/// Applies one operation (StartRouter is the caller's: it needs a child process).
fn apply_op(op: &Op, guard: &mut TopologyGuard) -> anyhow::Result<()> {
    match op {
        Op::AddNetns { name } => {
            ip(&["netns", "add", name])?;
            guard.namespaces.push(name.clone());
        }
        Op::AddVethPair {
            a,
            a_netns,
            b,
            b_netns,
        } => ip(&[
            "link", "add", a, "netns", a_netns, "type", "veth", "peer", "name", b, "netns", b_netns,
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
        Op::StartRouter { .. } => {}
    }
    Ok(())
}

/// Applies every operation of `plan` but StartRouter; on failure, deletes what was created.
pub fn apply(plan: &Plan) -> anyhow::Result<TopologyGuard> {
    let mut guard = TopologyGuard::default();
    let trace = std::env::var_os("SYNLAB_NET_TRACE").is_some();
    for op in &plan.ops {
        if trace {
            eprintln!("synlab net: {op:?}");
        }
        if let Err(e) = apply_op(op, &mut guard) {
            let rollback = guard.teardown();
            let e = e.context(format!("building lab {}", plan.run_id));
            return Err(match rollback {
                Ok(()) => e,
                Err(r) => e.context(format!("and the rollback failed too: {r:#}")),
            });
        }
    }
    Ok(guard)
}

/// Changes (replaces) a netem qdisc live.
pub fn netem_change(netns: &str, dev: &str, args: &[String]) -> anyhow::Result<()> {
    let mut a = vec!["-n", netns, "qdisc", "change", "dev", dev, "root", "netem"];
    a.extend(args.iter().map(String::as_str));
    run_tool("tc", &a)
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
            Ok(()) => removed.push(format!("netns {ns}")),
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
    if errs.is_empty() {
        Ok(removed)
    } else {
        bail!("removed {} item(s) but: {}", removed.len(), errs.join("; "))
    }
}

/// Whether the kernel can run netem: tries a netem qdisc on the loopback of a scratch netns.
pub fn netem_available() -> bool {
    let ns = format!("{PREFIX}probe-{}", std::process::id());
    if ip(&["netns", "add", &ns]).is_err() {
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
