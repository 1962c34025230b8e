//! The rootless lab: when synlab is not root on the host, it moves itself into a new user
//! namespace (this user mapped to root inside) with a private mount namespace and its own
//! /run, and builds the lab there exactly as root would: network namespaces, veth, addresses,
//! sysctls, AF_PACKET and sock_diag all belong to that user namespace. Its children inherit
//! it; when the last synlab process exits (also by SIGKILL) the namespaces have no holder
//! left and the kernel frees them, so a rootless lab leaves nothing to clean up.
//!
//! `prepare` must run while the process has one thread (the kernel refuses `unshare` of a
//! user namespace to a threaded process). It first tries the whole setup in a forked child,
//! so a refusal is diagnosed with the process untouched, and the lab falls back to loopback.

use std::sync::OnceLock;

/// Where this process builds its lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabMode {
    /// Root on the host: namespaces under the host's /run/netns.
    Root,
    /// In synlab's own user namespace; `wide` when a subordinate uid range is mapped too
    /// (servers that switch to another user, as nginx and Apache do, need one).
    Rootless { wide: bool },
    /// The kernel refused the user namespace: why and what to do.
    Refused(Refused),
}

/// Why synlab could not enter its own user namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the rootless lab is not available: synlab had already started {0} threads (a bug: the user namespace must be entered first)")]
    Threaded(usize),
    /// A setup step failed: the kernel's settings that explain it and what to change
    /// (`diagnose`).
    #[error("{0}")]
    Setup(String),
}

impl LabMode {
    /// The status line's and run.log's words for it.
    pub fn label(&self) -> &'static str {
        match self {
            LabMode::Root => "root",
            LabMode::Rootless { .. } => "rootless (user namespace)",
            LabMode::Refused(_) => "loopback (no user namespace)",
        }
    }
}

static MODE: OnceLock<LabMode> = OnceLock::new();
/// The user's uid on the host (inside the namespace every process is uid 0).
static HOST_UID: OnceLock<u32> = OnceLock::new();

/// The mode `prepare` settled on; None when no lab was asked for in this process.
pub fn mode() -> Option<&'static LabMode> {
    MODE.get()
}

/// Whether this process runs inside synlab's own user namespace (a lab child inherits it).
pub fn rootless() -> bool {
    matches!(mode(), Some(LabMode::Rootless { .. })) || !initial_userns()
}

/// True in the machine's own user namespace (the identity mapping of every uid).
pub fn initial_userns() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").map_or(true, |m| is_identity_map(&m))
}

/// Whether a uid_map text is the initial namespace's `0 0 4294967295`.
pub fn is_identity_map(map: &str) -> bool {
    let f: Vec<&str> = map.split_whitespace().collect();
    f == ["0", "0", "4294967295"]
}

/// Root with the host's powers: uid 0 in the initial user namespace.
pub fn host_root() -> bool {
    nix::unistd::geteuid().is_root() && initial_userns()
}

/// Settles where the lab is built, entering the user namespace unless this is host root (or
/// `force`, to try the rootless lab as root). Call before any thread is started. Idempotent.
pub fn prepare(force: bool) -> &'static LabMode {
    MODE.get_or_init(|| {
        if host_root() && !force {
            return LabMode::Root;
        }
        match enter() {
            Ok(wide) => LabMode::Rootless { wide },
            Err(why) => LabMode::Refused(why),
        }
    })
}

/// The step of the setup that failed, for the diagnosis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Unshare = 1,
    Map = 2,
    Mount = 3,
    Netns = 4,
}

impl Step {
    fn from_u8(b: u8) -> Step {
        match b {
            1 => Step::Unshare,
            2 => Step::Map,
            3 => Step::Mount,
            _ => Step::Netns,
        }
    }
}

/// The kernel settings that decide whether an unprivileged user namespace is allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelView {
    /// kernel.unprivileged_userns_clone (Debian's patch; absent elsewhere).
    pub unprivileged_userns_clone: Option<u64>,
    /// user.max_user_namespaces as this process sees it.
    pub max_user_namespaces: Option<u64>,
    /// kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10 and later).
    pub apparmor_restrict: Option<u64>,
    /// A seccomp filter is installed on this process (containers' default profiles).
    pub seccomp_filter: bool,
}

impl KernelView {
    pub fn read() -> Self {
        let num = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        KernelView {
            unprivileged_userns_clone: num("/proc/sys/kernel/unprivileged_userns_clone"),
            max_user_namespaces: num("/proc/sys/user/max_user_namespaces"),
            apparmor_restrict: num("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
            seccomp_filter: status
                .lines()
                .find_map(|l| l.strip_prefix("Seccomp:"))
                .is_some_and(|v| v.trim() == "2"),
        }
    }
}

/// Why the kernel refused, and what to do, from the failed step, its errno and the settings.
pub fn diagnose(step: Step, errno: i32, k: &KernelView) -> String {
    let denied = errno == libc::EPERM || errno == libc::EACCES;
    let why = if k.unprivileged_userns_clone == Some(0) && step == Step::Unshare {
        "this kernel forbids user namespaces to users who are not root \
         (kernel.unprivileged_userns_clone = 0, as older Debian kernels ship): \
         `sudo sysctl -w kernel.unprivileged_userns_clone=1` (and a line in /etc/sysctl.d/ to keep it)"
            .to_string()
    } else if k.max_user_namespaces == Some(0) {
        "user namespaces are switched off (user.max_user_namespaces = 0): \
         `sudo sysctl -w user.max_user_namespaces=15000`"
            .to_string()
    } else if errno == libc::ENOSPC || errno == libc::EUSERS {
        format!(
            "the limit of user namespaces is reached (user.max_user_namespaces = {}, or 32 levels of nesting): \
             end other sandboxes or raise it with `sudo sysctl -w user.max_user_namespaces=15000`",
            k.max_user_namespaces.map_or("?".into(), |v| v.to_string())
        )
    } else if k.apparmor_restrict == Some(1) && denied {
        "Ubuntu's AppArmor restricts user namespaces to programs with a profile that allows them \
         (kernel.apparmor_restrict_unprivileged_userns = 1): give synlab one, e.g. /etc/apparmor.d/synlab \
         holding `abi <abi/4.0>, include <tunables/global> profile synlab /path/to/synlab flags=(unconfined) { userns, }` \
         then `sudo apparmor_parser -r /etc/apparmor.d/synlab`; or lift it for everyone with \
         `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
            .to_string()
    } else if k.seccomp_filter && denied && step == Step::Unshare {
        "a seccomp filter on this process denies unshare (a container's default profile does): \
         run the container with a profile that allows it (docker: --security-opt seccomp=unconfined) or run synlab as root"
            .to_string()
    } else {
        format!(
            "creating the user namespace failed at its {} step: {}",
            match step {
                Step::Unshare => "unshare",
                Step::Map => "uid/gid mapping",
                Step::Mount => "private /run mount",
                Step::Netns => "network namespace",
            },
            std::io::Error::from_raw_os_error(errno)
        )
    };
    format!("the rootless lab is not available: {why}")
}

/// A subordinate id range (/etc/subuid or /etc/subgid) of this user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubRange {
    pub start: u32,
    pub count: u32,
}

/// The first range of at least 65,536 ids that `/etc/subuid`-style `text` gives the user
/// `name` (or uid `id`).
pub fn sub_range(text: &str, name: &str, id: u32) -> Option<SubRange> {
    text.lines().find_map(|l| {
        let mut f = l.trim().split(':');
        let (who, start, count) = (f.next()?, f.next()?, f.next()?);
        let (start, count) = (start.parse().ok()?, count.parse::<u32>().ok()?);
        ((who == name || who == id.to_string()) && count >= 65_536).then_some(SubRange {
            start,
            count: 65_536,
        })
    })
}

/// What a wider mapping needs: newuidmap/newgidmap and ranges for this user.
struct Wide {
    newuidmap: std::path::PathBuf,
    newgidmap: std::path::PathBuf,
    uids: SubRange,
    gids: SubRange,
}

/// Where the wider mapping's parts are read (tests point them elsewhere).
struct WideSources<'a> {
    bin_dirs: &'a [&'a str],
    subuid: &'a str,
    subgid: &'a str,
}

const HOST_SOURCES: WideSources<'static> = WideSources {
    bin_dirs: &["/usr/bin", "/usr/sbin", "/bin", "/sbin"],
    subuid: "/etc/subuid",
    subgid: "/etc/subgid",
};

/// The wider mapping for user `who` (uid, gid), or each part that is missing, said as what to
/// do: the tools to install, the files that give `who` no range.
fn wide_mapping_of(who: &str, uid: u32, gid: u32, src: &WideSources) -> Result<Wide, Vec<String>> {
    let find = |tool: &str| {
        src.bin_dirs
            .iter()
            .map(|d| std::path::Path::new(d).join(tool))
            .find(|p| p.exists())
    };
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let (newuidmap, newgidmap) = (find("newuidmap"), find("newgidmap"));
    let uids = sub_range(&read(src.subuid), who, uid);
    let gids = sub_range(&read(src.subgid), who, gid);
    let mut lacks = Vec::new();
    if newuidmap.is_none() || newgidmap.is_none() {
        lacks.push("install newuidmap and newgidmap (`sudo apt install uidmap`)".to_string());
    }
    for (file, range, flag) in [
        (src.subuid, uids, "--add-subuids"),
        (src.subgid, gids, "--add-subgids"),
    ] {
        if range.is_none() {
            lacks.push(format!(
                "{file} gives {who} no range of 65,536 ids: add one (`sudo usermod {flag} 100000-165535 {who}`)"
            ));
        }
    }
    match (newuidmap, newgidmap, uids, gids) {
        (Some(newuidmap), Some(newgidmap), Some(uids), Some(gids)) => Ok(Wide {
            newuidmap,
            newgidmap,
            uids,
            gids,
        }),
        _ => Err(lacks),
    }
}

/// This user's name (its uid when it has none).
fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(uid.into())
        .ok()
        .flatten()
        .map_or(uid.to_string(), |u| u.name)
}

fn wide_mapping(uid: u32, gid: u32) -> Result<Wide, Vec<String>> {
    wide_mapping_of(&user_name(uid), uid, gid, &HOST_SOURCES)
}

/// Why the wider mapping was not taken although its parts were there (newuidmap refused it).
static WIDE_REFUSED: OnceLock<String> = OnceLock::new();

/// How the wider mapping is missing, for a server that needs it (nginx, Apache): what to
/// install or configure, only what is missing. Can be asked before any lab is built.
pub fn wide_mapping_missing() -> String {
    let uid = HOST_UID
        .get()
        .copied()
        .unwrap_or_else(|| nix::unistd::getuid().as_raw());
    let gid = nix::unistd::getgid().as_raw();
    let what = match (wide_mapping(uid, gid), WIDE_REFUSED.get()) {
        (Err(lacks), _) => lacks.join("; "),
        (Ok(_), Some(why)) => why.clone(),
        (Ok(_), None) => {
            "the subordinate ids of /etc/subuid and /etc/subgid were not mapped".into()
        }
    };
    format!(
        "it switches its workers to another user, and this rootless lab maps only your own uid: \
         {what}; or run synlab as root"
    )
}

/// Whether a rootless lab of this user would map subordinate ids, asked without building one
/// (`synlab check`): None when it would, else what is missing.
pub fn wide_mapping_would_lack() -> Option<String> {
    let (uid, gid) = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    wide_mapping(uid, gid).err().map(|_| wide_mapping_missing())
}

fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(1)
}

/// Tries the setup in a child, then does it here. Ok(wide mapping) or the diagnosis.
fn enter() -> Result<bool, Refused> {
    if threads() > 1 {
        return Err(Refused::Threaded(threads()));
    }
    let (uid, gid) = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    let _ = HOST_UID.set(uid);
    let trial = |wide: Option<&Wide>| {
        fork_child(None, || setup(uid, gid, wide, true))
            .map_err(|e| (Step::Unshare, e))?
            .wait()
    };
    let mut wide = wide_mapping(uid, gid).ok();
    // A subordinate range that newuidmap refuses (a stale /etc/subuid, a newuidmap without
    // its setuid bit) still leaves the one-id lab, which most targets need.
    if let Some(w) = &wide {
        if let Err((_, errno)) = trial(Some(w)) {
            let _ = WIDE_REFUSED.set(format!(
                "{} refused the range /etc/subuid gives {} ({}: a stale entry, or newuidmap without its setuid bit)",
                w.newuidmap.display(),
                user_name(uid),
                std::io::Error::from_raw_os_error(errno)
            ));
            wide = None;
        }
    }
    let refused = |step, errno| Refused::Setup(diagnose(step, errno, &KernelView::read()));
    if let Err((step, errno)) = trial(wide.as_ref()) {
        return Err(refused(step, errno));
    }
    setup(uid, gid, wide.as_ref(), false).map_err(|(step, errno)| refused(step, errno))?;
    Ok(wide.is_some())
}

type SetupResult = Result<(), (Step, i32)>;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A forked child running a setup step; `wait` gives its outcome.
struct Forked {
    pid: libc::pid_t,
    result: libc::c_int,
}

/// Forks a child that runs `f` (after one byte of 1 arrives on `go`, when given) and reports
/// the outcome through a pipe. The caller is single-threaded, so the child may allocate.
fn fork_child(go: Option<libc::c_int>, f: impl FnOnce() -> SetupResult) -> Result<Forked, i32> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds; fork in a single-threaded process; the child runs `f` and
    // leaves with _exit.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(errno());
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(errno());
        }
        if pid == 0 {
            libc::close(fds[0]);
            let mut byte = [1u8];
            if let Some(go) = go {
                if libc::read(go, byte.as_mut_ptr().cast(), 1) != 1 {
                    byte[0] = 0;
                }
            }
            let code: [u8; 5] = match (byte[0], f) {
                (0, _) => [0; 5],
                (_, f) => match f() {
                    Ok(()) => [0; 5],
                    Err((s, e)) => {
                        let b = e.to_le_bytes();
                        [s as u8, b[0], b[1], b[2], b[3]]
                    }
                },
            };
            libc::write(fds[1], code.as_ptr().cast(), 5);
            libc::_exit(0);
        }
        libc::close(fds[1]);
        Ok(Forked {
            pid,
            result: fds[0],
        })
    }
}

impl Forked {
    fn wait(self) -> SetupResult {
        let mut code = [0u8; 5];
        // SAFETY: reads our pipe end, closes it, reaps our own child by pid.
        let n = unsafe {
            let n = libc::read(self.result, code.as_mut_ptr().cast(), 5);
            libc::close(self.result);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
            n
        };
        match (n, code[0]) {
            (5, 0) => Ok(()),
            (5, s) => Err((
                Step::from_u8(s),
                i32::from_le_bytes([code[1], code[2], code[3], code[4]]),
            )),
            _ => Err((Step::Unshare, libc::ECHILD)),
        }
    }
}

fn write_file(path: &str, text: &str) -> Result<(), i32> {
    std::fs::write(path, text).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

/// Maps this process's own uid and gid to root (the only mapping an unprivileged process may
/// write itself, after giving up setgroups so it cannot drop a group that restricts it).
fn map_own_ids(uid: u32, gid: u32) -> Result<(), i32> {
    write_file("/proc/self/setgroups", "deny")?;
    write_file("/proc/self/uid_map", &format!("0 {uid} 1"))?;
    write_file("/proc/self/gid_map", &format!("0 {gid} 1"))
}

/// Maps process `pid`'s ids with newuidmap/newgidmap (run from outside its namespace): its own
/// id to root, the subordinate range to 1..=65,536.
fn map_wide(pid: u32, uid: u32, gid: u32, w: &Wide) -> Result<(), i32> {
    let pid = pid.to_string();
    let run = |tool: &std::path::Path, id: u32, r: SubRange| {
        std::process::Command::new(tool)
            .args([
                pid.clone(),
                "0".into(),
                id.to_string(),
                "1".into(),
                "1".into(),
            ])
            .args([r.start.to_string(), r.count.to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
            .and_then(|s| {
                if s.success() {
                    Ok(())
                } else {
                    Err(libc::EPERM)
                }
            })
    };
    run(&w.newuidmap, uid, w.uids)?;
    run(&w.newgidmap, gid, w.gids)
}

/// The setup: a user and a mount namespace, the id maps, a private /run with /run/netns;
/// the trial run also checks that a network namespace can be made.
fn setup(uid: u32, gid: u32, wide: Option<&Wide>, trial: bool) -> SetupResult {
    // newuidmap must run outside the new namespace, so with a wide mapping the unshare
    // happens in this process while a helper forked before it writes the maps.
    match wide {
        None => {
            // SAFETY: plain syscall.
            if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
                return Err((Step::Unshare, errno()));
            }
            map_own_ids(uid, gid).map_err(|e| (Step::Map, e))?;
        }
        Some(w) => unshare_with_helper(uid, gid, w)?,
    }
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
    let (root, run, tmpfs, opts) = (c("/"), c("/run"), c("tmpfs"), c("mode=0755"));
    // SAFETY: valid C strings; mounts affect only this process's new mount namespace.
    unsafe {
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
            || libc::mount(
                tmpfs.as_ptr(),
                run.as_ptr(),
                tmpfs.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                opts.as_ptr().cast(),
            ) != 0
        {
            return Err((Step::Mount, errno()));
        }
    }
    std::fs::create_dir_all("/run/netns")
        .map_err(|e| (Step::Mount, e.raw_os_error().unwrap_or(libc::EIO)))?;
    // SAFETY: plain syscall, in the trial child only.
    if trial && unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err((Step::Netns, errno()));
    }
    Ok(())
}

/// Unshares here while a helper forked before it (so still outside) runs newuidmap and
/// newgidmap on this process.
fn unshare_with_helper(uid: u32, gid: u32, w: &Wide) -> SetupResult {
    let mut go = [0; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err((Step::Unshare, errno()));
    }
    let me = std::process::id();
    let helper = fork_child(Some(go[0]), || {
        map_wide(me, uid, gid, w).map_err(|e| (Step::Map, e))
    })
    .map_err(|e| (Step::Unshare, e))?;
    // SAFETY: plain syscalls; one byte tells the helper to map (1) or to stop (0).
    let (r, e) = unsafe {
        let r = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS);
        let e = errno();
        libc::write(go[1], [u8::from(r == 0)].as_ptr().cast(), 1);
        libc::close(go[1]);
        libc::close(go[0]);
        (r, e)
    };
    let mapped = helper.wait();
    if r != 0 {
        return Err((Step::Unshare, e));
    }
    mapped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_mapping_names_only_what_is_missing() {
        let d = tempfile::tempdir().unwrap();
        let (bin, sub) = (d.path().join("bin"), d.path().join("subuid"));
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(&sub, "other:100000:65536\n").unwrap();
        let bins = [bin.to_str().unwrap()];
        let src = WideSources {
            bin_dirs: &bins,
            subuid: sub.to_str().unwrap(),
            subgid: sub.to_str().unwrap(),
        };
        let lacks = wide_mapping_of("ci", 1000, 1000, &src).err().unwrap();
        assert_eq!(lacks.len(), 3, "{lacks:?}");
        assert!(lacks[0].contains("apt install uidmap"));
        assert!(lacks[1].starts_with(&format!("{} gives ci no range", sub.display())));
        // The tools installed: only the ranges are asked for, never the install.
        for t in ["newuidmap", "newgidmap"] {
            std::fs::write(bin.join(t), "").unwrap();
        }
        let lacks = wide_mapping_of("ci", 1000, 1000, &src).err().unwrap();
        assert_eq!(lacks.len(), 2, "{lacks:?}");
        assert!(
            lacks.iter().all(|l| !l.contains("apt install")),
            "{lacks:?}"
        );
        std::fs::write(&sub, "ci:100000:65536\n").unwrap();
        assert!(wide_mapping_of("ci", 1000, 1000, &src).is_ok());
    }

    fn view() -> KernelView {
        KernelView {
            unprivileged_userns_clone: None,
            max_user_namespaces: Some(15_000),
            apparmor_restrict: None,
            seccomp_filter: false,
        }
    }

    #[test]
    fn only_the_full_identity_map_is_the_hosts() {
        assert!(is_identity_map("         0          0 4294967295\n"));
        assert!(!is_identity_map("         0       1000          1\n"));
        assert!(!is_identity_map("0 0 1\n"));
    }

    #[test]
    fn each_refusal_names_its_setting_and_the_command_that_lifts_it() {
        let debian = KernelView {
            unprivileged_userns_clone: Some(0),
            ..view()
        };
        let m = diagnose(Step::Unshare, libc::EPERM, &debian);
        assert!(m.contains("kernel.unprivileged_userns_clone = 0"), "{m}");
        assert!(
            m.contains("sysctl -w kernel.unprivileged_userns_clone=1"),
            "{m}"
        );

        let off = KernelView {
            max_user_namespaces: Some(0),
            ..view()
        };
        let m = diagnose(Step::Unshare, libc::ENOSPC, &off);
        assert!(
            m.contains("user.max_user_namespaces = 0") && m.contains("sysctl -w"),
            "{m}"
        );

        let full = diagnose(Step::Unshare, libc::ENOSPC, &view());
        assert!(full.contains("limit") && full.contains("15000"), "{full}");

        // Ubuntu lets the unshare through and denies what follows.
        let ubuntu = KernelView {
            apparmor_restrict: Some(1),
            ..view()
        };
        let m = diagnose(Step::Mount, libc::EPERM, &ubuntu);
        assert!(
            m.contains("apparmor_restrict_unprivileged_userns = 1"),
            "{m}"
        );
        assert!(
            m.contains("userns,") && m.contains("apparmor_parser"),
            "{m}"
        );

        let container = KernelView {
            seccomp_filter: true,
            ..view()
        };
        let m = diagnose(Step::Unshare, libc::EPERM, &container);
        assert!(m.contains("seccomp"), "{m}");

        let other = diagnose(Step::Map, libc::EINVAL, &view());
        assert!(other.contains("uid/gid mapping"), "{other}");
        assert!(other.starts_with("the rootless lab is not available"));
    }

    #[test]
    fn subordinate_ranges_are_found_by_name_or_uid_and_must_be_wide_enough() {
        let text = "alice:100000:65536\n1001:200000:70000\nbob:300000:1000\n";
        assert_eq!(
            sub_range(text, "alice", 1000),
            Some(SubRange {
                start: 100_000,
                count: 65_536
            })
        );
        assert_eq!(
            sub_range(text, "carol", 1001).map(|r| r.start),
            Some(200_000)
        );
        assert_eq!(sub_range(text, "bob", 1002), None, "too narrow");
        assert_eq!(sub_range(text, "dave", 1003), None);
    }
}
