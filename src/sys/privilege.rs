//! Privilege as a value: what this process may do, so "needs CAP_NET_ADMIN" is a testable error.

/// Capabilities synlab cares about, read once from /proc/self/status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privileges {
    pub net_admin: bool,
    pub net_raw: bool,
    pub sys_admin: bool,
}

const CAP_NET_ADMIN: u32 = 12;
const CAP_NET_RAW: u32 = 13;
const CAP_SYS_ADMIN: u32 = 21;

impl Privileges {
    /// Reads the effective capability set of this process.
    pub fn current() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        Self::from_status(&status)
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
        assert!(msg.contains("CAP_SYS_ADMIN") && msg.contains("CAP_NET_ADMIN"), "{msg}");
        assert!(msg.contains("sudo"));
    }

    #[test]
    fn net_raw_alone_is_not_enough_for_the_lab() {
        let p = Privileges::from_status("CapEff:\t0000000000002000\n");
        assert!(p.net_raw && !p.net_admin && !p.can_build_lab());
    }
}

/// True when the tests must fail instead of skipping for a missing privilege.
pub fn require_privileged() -> bool {
    std::env::var("SYNLAB_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}
