//! Where the lab's processes run and where the server's receive processing is done: the server's
//! CPUs apart from the load's (workers, delay router, controller), the default split, the
//! checks a scenario's `cpus` get, and `[network] steer`. The machine's CPUs come in as a list:
//! nothing here reads the machine.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where the server namespace's receive processing (NET_RX softirq) runs (`[network] steer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Steer {
    /// On the server's CPUs, and the receive of what the server sends on the load's, as a
    /// real host's NIC interrupts would land (RPS on both ends of the server's link).
    #[default]
    Server,
    /// On the CPU that sent each packet: a veth's own behaviour, where the router's or a
    /// worker's CPU pays for what the server receives.
    Sender,
}

impl Steer {
    pub const ALL: [Steer; 2] = [Steer::Server, Steer::Sender];

    /// Its name in scenario files and results.
    pub fn name(self) -> &'static str {
        match self {
            Steer::Server => "server",
            Steer::Sender => "sender",
        }
    }

    pub fn parse(text: &str) -> Option<Steer> {
        Steer::ALL.into_iter().find(|s| s.name() == text.trim())
    }
}

impl fmt::Display for Steer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// CPUs as the kernel's lists write them: `0-3,6`.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// CPUs as a kernel cpumask in hex, 32-bit groups separated by commas, most significant first
/// (what `rps_cpus` and `net.core.rps_default_mask` read); `0` for none.
pub fn cpu_mask_hex(cpus: &[usize]) -> String {
    let Some(&top) = cpus.iter().max() else {
        return "0".into();
    };
    let mut groups = vec![0u32; top / 32 + 1];
    for &c in cpus {
        groups[c / 32] |= 1 << (c % 32);
    }
    let mut out: Vec<String> = Vec::new();
    for (i, g) in groups.iter().enumerate().rev() {
        out.push(if i + 1 == groups.len() {
            format!("{g:x}")
        } else {
            format!("{g:08x}")
        });
    }
    out.join(",")
}

/// Why the server has no CPUs of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSplit {
    /// The machine has one CPU: server, load and the lab's kernel work share it.
    OneCpu,
    /// On loopback without `cpus`: client and server are one kernel's sockets.
    Loopback,
}

/// How the CPU sets were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The lab's default: the upper half of the machine's CPUs for the server.
    Default,
    /// `[target] cpus` and/or `[load] cpus` (the other side gets the rest).
    Scenario,
    /// No split.
    None(NoSplit),
}

/// The server's CPUs and the load's (workers, the delay router, the controller and its
/// probes). An empty set is not pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub server: Vec<usize>,
    pub load: Vec<usize>,
    pub split: Split,
}

impl Placement {
    /// The placement of a run: the scenario's sets when it gives any (the other side gets the
    /// machine's other CPUs), else in the lab with at least 2 CPUs the default split (the
    /// server the upper half, at least one), else none. `machine` lists the CPUs synlab may use.
    pub fn resolve(target: &[usize], load: &[usize], in_lab: bool, machine: &[usize]) -> Self {
        let rest = |taken: &[usize]| -> Vec<usize> {
            machine
                .iter()
                .copied()
                .filter(|c| !taken.contains(c))
                .collect()
        };
        if !target.is_empty() || !load.is_empty() {
            let server = if target.is_empty() {
                rest(load)
            } else {
                target.to_vec()
            };
            let load = if load.is_empty() {
                rest(&server)
            } else {
                load.to_vec()
            };
            return Placement {
                server,
                load,
                split: Split::Scenario,
            };
        }
        let none = |why| Placement {
            server: Vec::new(),
            load: Vec::new(),
            split: Split::None(why),
        };
        if !in_lab {
            return none(NoSplit::Loopback);
        }
        if machine.len() < 2 {
            return none(NoSplit::OneCpu);
        }
        let mut all = machine.to_vec();
        all.sort_unstable();
        let server = all.split_off(all.len() - all.len() / 2);
        Placement {
            server,
            load: all,
            split: Split::Default,
        }
    }

    /// Whether the server has CPUs of its own (so its cores' figures are its own).
    pub fn is_split(&self) -> bool {
        !self.server.is_empty() && !matches!(self.split, Split::None(_))
    }

    /// The CPUs the controller's own threads (its probes included) keep off: a CPU outside
    /// both sets when the machine has one (measuring takes time from neither side), else the
    /// server's (they run with the load, as a real client host's tools do: the server's CPU
    /// figures and its capacity stay its own). With no split, none.
    pub fn measuring_avoids(&self, machine: &[usize]) -> Vec<usize> {
        if !self.is_split() {
            return Vec::new();
        }
        let both: Vec<usize> = self.server.iter().chain(&self.load).copied().collect();
        if machine.iter().any(|c| !both.contains(c)) {
            both
        } else {
            self.server.clone()
        }
    }

    /// One line for the status line and run.log: who runs where, and what the CPU figures
    /// then are.
    pub fn describe(&self) -> String {
        let cpus = |v: &[usize]| match v.len() {
            0 => "any CPU".to_string(),
            1 => format!("CPU {}", cpu_list(v)),
            _ => format!("CPUs {}", cpu_list(v)),
        };
        match self.split {
            Split::None(NoSplit::OneCpu) => "one CPU: no split can be made; server, load and the lab's packet \
                 processing share it, so the CPU figures are the whole machine's (server_cores_* stay empty)"
                .into(),
            Split::None(NoSplit::Loopback) => "no CPU split on loopback (set [target] cpus / [load] cpus for one): \
                 the CPU figures are the whole machine's"
                .into(),
            split => format!(
                "server on {}, load (workers, router, controller) on {} ({})",
                cpus(&self.server),
                cpus(&self.load),
                if split == Split::Default {
                    "the lab's default split"
                } else {
                    "the scenario's cpus"
                }
            ),
        }
    }
}

/// Why a scenario's `cpus` cannot be used on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuError {
    #[error("CPU {cpu} does not exist here: this machine has {n} CPU(s) synlab may use ({list})", n = .machine.len(), list = cpu_list(.machine))]
    Absent { cpu: usize, machine: Vec<usize> },
    #[error("CPU(s) {} are in both target.cpus and load.cpus: the server and the load need CPUs of their own (this machine has {n}: {list})", cpu_list(.both), n = .machine.len(), list = cpu_list(.machine))]
    Overlap {
        both: Vec<usize>,
        machine: Vec<usize>,
    },
}

/// The problems of `target.cpus` / `load.cpus` on a machine whose usable CPUs are `machine`,
/// keyed by the key they belong to.
pub fn check_cpus(
    target: &[usize],
    load: &[usize],
    machine: &[usize],
) -> Vec<(&'static str, CpuError)> {
    let mut out = Vec::new();
    for (key, set) in [("target.cpus", target), ("load.cpus", load)] {
        for &cpu in set {
            if !machine.contains(&cpu) {
                out.push((
                    key,
                    CpuError::Absent {
                        cpu,
                        machine: machine.to_vec(),
                    },
                ));
            }
        }
    }
    let both: Vec<usize> = target
        .iter()
        .copied()
        .filter(|c| load.contains(c))
        .collect();
    if !both.is_empty() {
        out.push((
            "load.cpus",
            CpuError::Overlap {
                both,
                machine: machine.to_vec(),
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_masks_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_list(&[3, 0, 1, 2, 6]), "0-3,6");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_mask_hex(&[1]), "2");
        assert_eq!(cpu_mask_hex(&[0, 1]), "3");
        assert_eq!(cpu_mask_hex(&[]), "0");
        assert_eq!(cpu_mask_hex(&[0, 33]), "2,00000001");
    }

    #[test]
    fn the_lab_splits_two_cpus_one_each_and_the_scenario_wins() {
        let p = Placement::resolve(&[], &[], true, &[0, 1]);
        assert_eq!(
            (p.server, p.load, p.split),
            (vec![1], vec![0], Split::Default)
        );
        let p = Placement::resolve(&[], &[], true, &[0, 1, 2, 3, 4]);
        assert_eq!((p.server, p.load), (vec![3, 4], vec![0, 1, 2]));
        let p = Placement::resolve(&[0], &[], true, &[0, 1, 2]);
        assert_eq!(
            (p.server, p.load, p.split),
            (vec![0], vec![1, 2], Split::Scenario)
        );
        let p = Placement::resolve(&[], &[2], false, &[0, 1, 2]);
        assert_eq!((p.server, p.load), (vec![0, 1], vec![2]));
        let one = Placement::resolve(&[], &[], true, &[0]);
        assert_eq!(one.split, Split::None(NoSplit::OneCpu));
        assert!(!one.is_split());
        assert!(one.describe().contains("no split"), "{}", one.describe());
        let lo = Placement::resolve(&[], &[], false, &[0, 1]);
        assert_eq!(lo.split, Split::None(NoSplit::Loopback));
        assert_eq!(
            Placement::resolve(&[], &[], true, &[0, 1]).describe(),
            "server on CPU 1, load (workers, router, controller) on CPU 0 (the lab's default split)"
        );
    }

    #[test]
    fn measuring_keeps_off_the_servers_cpus() {
        // The keep-alive bench's shape: only the load's CPU named, the server (an address) on
        // the rest: the controller goes with the load, not onto the server's CPU.
        let p = Placement::resolve(&[], &[1], false, &[0, 1]);
        assert_eq!(p.measuring_avoids(&[0, 1]), vec![0]);
        let p = Placement::resolve(&[], &[], true, &[0, 1]);
        assert_eq!(p.measuring_avoids(&[0, 1]), vec![1]);
        // A CPU neither side has: measuring goes there.
        let p = Placement::resolve(&[2], &[0], true, &[0, 1, 2]);
        assert_eq!(p.measuring_avoids(&[0, 1, 2]), vec![2, 0]);
        let lo = Placement::resolve(&[], &[], false, &[0, 1]);
        assert!(lo.measuring_avoids(&[0, 1]).is_empty());
    }

    #[test]
    fn an_absent_cpu_and_an_overlap_are_refused() {
        let p = check_cpus(&[99], &[0], &[0, 1]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, "target.cpus");
        assert_eq!(
            p[0].1.to_string(),
            "CPU 99 does not exist here: this machine has 2 CPU(s) synlab may use (0-1)"
        );
        let p = check_cpus(&[1], &[0, 1], &[0, 1]);
        assert_eq!(p[0].0, "load.cpus");
        assert!(p[0].1.to_string().starts_with("CPU(s) 1 are in both"));
        assert!(check_cpus(&[1], &[0], &[0, 1]).is_empty());
    }

    #[test]
    fn steer_names_round_trip() {
        for s in Steer::ALL {
            assert_eq!(Steer::parse(s.name()), Some(s));
        }
        assert_eq!(Steer::parse("nic"), None);
    }
}
