//! Privilege as a value: what this process may do, so "needs CAP_NET_ADMIN" is a testable error.

/// Capabilities synlab cares about, read once from /proc/self/status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privileges {
    pub net_admin: bool,
    pub net_raw: bool,
    pub sys_admin: bool,
    /// May raise hard resource limits (RLIMIT_NOFILE past its hard limit).
    pub sys_resource: bool,
}

const CAP_SYS_RESOURCE: u32 = 24;
const CAP_NET_ADMIN: u32 = 12;
const CAP_NET_RAW: u32 = 13;
const CAP_SYS_ADMIN: u32 = 21;

impl Privileges {
    /// Reads the effective capability set of this process.
    /// Capabilities in a user namespace other than the host's act only on what that namespace
    /// owns; raising a hard resource limit is not among those.
    pub fn current() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mut p = Self::from_status(&status);
        p.sys_resource &= crate::sys::userns::initial_userns();
        p
    }

    /// Parses the `CapEff:` line of a /proc/<pid>/status text.
    pub fn from_status(status: &str) -> Self {
        let eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0);
        let has = |bit: u32| eff & (1u64 << bit) != 0;
        Privileges {
            net_admin: has(CAP_NET_ADMIN),
            net_raw: has(CAP_NET_RAW),
            sys_admin: has(CAP_SYS_ADMIN),
            sys_resource: has(CAP_SYS_RESOURCE),
        }
    }

    /// Namespaces need CAP_SYS_ADMIN (to create/enter) and CAP_NET_ADMIN (to configure).
    pub fn can_build_lab(&self) -> bool {
        self.net_admin && self.sys_admin
    }

    /// What is missing for the network lab, as a sentence that says what to do; None if nothing.
    pub fn lab_missing(&self) -> Option<String> {
        let mut missing = Vec::new();
        if !self.sys_admin {
            missing.push("CAP_SYS_ADMIN (to create and enter network namespaces)");
        }
        if !self.net_admin {
            missing.push("CAP_NET_ADMIN (to create veth links, addresses and qdiscs)");
        }
        if missing.is_empty() {
            None
        } else {
            Some(format!(
                "the network lab needs {}; run synlab as root (sudo synlab ...) or remove the [network] section to use loopback",
                missing.join(" and ")
            ))
        }
    }
}

/// Why a load may run short of descriptors after the limit was raised as far as it goes:
/// `soft` is what the process got, `hard` its hard limit, `want` what the load could need,
/// `nr_open` the kernel's ceiling (fs.nr_open), `host_root` whether this is the host's root.
/// Names the cause that applies: without CAP_SYS_RESOURCE (also root in a container that drops
/// it) the hard limit stands; with it, only fs.nr_open bounds the limit. A plain user (also
/// root in synlab's rootless user namespace) is told what a plain user can do.
pub fn nofile_note(
    p: &Privileges,
    soft: u64,
    hard: u64,
    want: u64,
    nr_open: u64,
    host_root: bool,
) -> String {
    let why = if p.sys_resource && soft >= nr_open {
        format!("the kernel's ceiling fs.nr_open is {nr_open} (sysctl fs.nr_open to raise it)")
    } else if p.sys_resource {
        format!("hard limit {hard}")
    } else if !host_root {
        format!(
            "hard limit {hard}, which a plain user cannot raise: an administrator raises it (`nofile` in /etc/security/limits.conf, or LimitNOFILE= of your session's service), or run synlab as root"
        )
    } else {
        format!(
            "hard limit {hard}, and raising it needs CAP_SYS_RESOURCE, which this process lacks (root in a container may lack it: `ulimit -Hn`, LimitNOFILE= or docker's --ulimit nofile= raise it from outside)"
        )
    };
    format!(
        "RLIMIT_NOFILE is {soft} ({why}) and this load could need up to {want} descriptors if every connection waited its full response timeout; if out_of_fds errors appear, raise the limit or lower load.sockets, the rate or load.response_timeout"
    )
}

/// True when the tests must fail instead of skipping for a missing privilege.
pub fn require_privileged() -> bool {
    std::env::var("SYNLAB_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}

/// This process's effective uid (whose files it may clean up).
pub fn effective_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Says why a test skips, on the process's stderr itself: libtest keeps what `eprintln!`
/// prints in a test that passes, so a skip printed that way would never show.
pub fn say_skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{why}");
}

/// A test that cannot run here: a failure naming `why` when CI requires every test
/// (`SYNLAB_REQUIRE_PRIVILEGED=1`), else a skip that says `why`.
pub fn skip_unless_required(why: &str) {
    if require_privileged() {
        panic!("SYNLAB_REQUIRE_PRIVILEGED=1 but {why}");
    }
    say_skipped(&format!("skipped: {why}"));
}

/// Whether this process runs as uid 0 (the host's root, or root inside synlab's user
/// namespace).
pub fn effective_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A user that exists here, with the name of its primary group (the user's name when the
/// group has none).
pub fn user_and_group(name: &str) -> Option<(String, String)> {
    let u = nix::unistd::User::from_name(name).ok().flatten()?;
    let group = nix::unistd::Group::from_gid(u.gid)
        .ok()
        .flatten()
        .map(|g| g.name)
        .unwrap_or_else(|| name.to_string());
    Some((name.to_string(), group))
}

/// The name of the user with this uid, if it has one here.
pub fn user_name(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(uid.into())
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// This process's hard limit on open files (RLIMIT_NOFILE), if it can be read.
pub fn nofile_hard_limit() -> Option<u64> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(_, hard)| hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_status_has_everything() {
        let p = Privileges::from_status("Name:\tx\nCapEff:\t000001ffffffffff\n");
        assert!(p.net_admin && p.net_raw && p.sys_admin);
        assert!(p.lab_missing().is_none());
    }

    #[test]
    fn unprivileged_status_names_what_is_missing() {
        let p = Privileges::from_status("CapEff:\t0000000000000000\n");
        let msg = p.lab_missing().unwrap();
        assert!(
            msg.contains("CAP_SYS_ADMIN") && msg.contains("CAP_NET_ADMIN"),
            "{msg}"
        );
        assert!(msg.contains("sudo"));
    }

    #[test]
    fn the_nofile_note_names_the_cause_that_applies() {
        let root = Privileges::from_status("CapEff:\t000001ffffffffff\n");
        let container_root = Privileges::from_status("CapEff:\t000001fffeffffff\n");
        assert!(root.sys_resource && !container_root.sys_resource);
        let n = nofile_note(&container_root, 20000, 20000, 40000, 1 << 20, true);
        assert!(n.contains("lacks") && n.contains("CAP_SYS_RESOURCE"), "{n}");
        let n = nofile_note(&root, 1 << 20, 1 << 20, 2 << 20, 1 << 20, true);
        assert!(n.contains("fs.nr_open") && !n.contains("lacks"), "{n}");
        // A plain user gets a plain user's advice, not root's (no docker, no capabilities).
        let plain = Privileges::from_status("CapEff:\t0000000000000000\n");
        let n = nofile_note(&plain, 1024, 4096, 40000, 1 << 20, false);
        assert!(
            n.contains("plain user") && n.contains("limits.conf") && !n.contains("docker"),
            "{n}"
        );
    }

    #[test]
    fn net_raw_alone_is_not_enough_for_the_lab() {
        let p = Privileges::from_status("CapEff:\t0000000000002000\n");
        assert!(p.net_raw && !p.net_admin && !p.can_build_lab());
    }
}
