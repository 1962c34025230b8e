//! Parsers of /proc/stat (CPU time per state, per CPU and total; context switches; interrupts)
//! and /proc/softirqs (NET_RX/NET_TX per CPU), and the percentages between two readings.

use super::counters::{delta, pct, Width};
use super::procnet::ParseError;

/// Jiffies per CPU state, as in a `cpu`/`cpuN` line of /proc/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// The jiffies of both, state by state (a set of CPUs as one).
    pub fn plus(&self, o: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user + o.user,
            nice: self.nice + o.nice,
            system: self.system + o.system,
            idle: self.idle + o.idle,
            iowait: self.iowait + o.iowait,
            irq: self.irq + o.irq,
            softirq: self.softirq + o.softirq,
            steal: self.steal + o.steal,
        }
    }

    /// All jiffies. guest/guest_nice are left out: the kernel already counts them in user/nice.
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// One reading of /proc/stat.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcStat {
    pub total: CpuTimes,
    /// Indexed by CPU number; a CPU offline at read time is None.
    pub per_cpu: Vec<Option<CpuTimes>>,
    pub ctxt: u64,
    pub intr: u64,
    pub procs_running: u64,
    pub procs_blocked: u64,
}

fn num(file: &'static str, key: &str, v: &str) -> Result<u64, ParseError> {
    v.parse().map_err(|_| ParseError::NotANumber {
        file,
        key: key.to_string(),
        value: v.to_string(),
    })
}

impl ProcStat {
    /// The jiffies of the CPUs `cpus` summed; None if one of them is not in this reading.
    pub fn of_cpus(&self, cpus: &[usize]) -> Option<CpuTimes> {
        cpus.iter().try_fold(CpuTimes::default(), |acc, &c| {
            Some(acc.plus(self.per_cpu.get(c).copied().flatten().as_ref()?))
        })
    }

    pub fn parse(text: &str) -> Result<Self, ParseError> {
        const FILE: &str = crate::sys::procfs::STAT;
        let mut s = ProcStat::default();
        let mut saw_total = false;
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let Some(key) = it.next() else { continue };
            if let Some(cpu) = key.strip_prefix("cpu") {
                let mut f = [0u64; 8];
                for (i, v) in it.take(8).enumerate() {
                    f[i] = num(FILE, key, v)?;
                }
                let t = CpuTimes {
                    user: f[0],
                    nice: f[1],
                    system: f[2],
                    idle: f[3],
                    iowait: f[4],
                    irq: f[5],
                    softirq: f[6],
                    steal: f[7],
                };
                if cpu.is_empty() {
                    s.total = t;
                    saw_total = true;
                } else {
                    let n: usize = num(FILE, key, cpu)? as usize;
                    if s.per_cpu.len() <= n {
                        s.per_cpu.resize(n + 1, None);
                    }
                    s.per_cpu[n] = Some(t);
                }
                continue;
            }
            let first = it.next().unwrap_or("");
            match key {
                "ctxt" => s.ctxt = num(FILE, key, first)?,
                "intr" => s.intr = num(FILE, key, first)?,
                "procs_running" => s.procs_running = num(FILE, key, first)?,
                "procs_blocked" => s.procs_blocked = num(FILE, key, first)?,
                _ => {}
            }
        }
        if !saw_total {
            return Err(ParseError::Missing {
                file: FILE,
                want: "cpu",
            });
        }
        Ok(s)
    }
}

/// CPU time split in percent of the interval (of all CPUs for the total line).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

impl CpuPct {
    /// Percentages between two readings; None if no time passed or the counters went back.
    pub fn between(a: &CpuTimes, b: &CpuTimes) -> Option<Self> {
        let d = |x: u64, y: u64| delta(x, y, Width::U64).map(|v| v as f64);
        let total = d(a.total(), b.total())?;
        let p = |x, y| d(x, y).and_then(|v| pct(v, total));
        Some(CpuPct {
            user: p(a.user, b.user)?,
            nice: p(a.nice, b.nice)?,
            system: p(a.system, b.system)?,
            idle: p(a.idle, b.idle)?,
            iowait: p(a.iowait, b.iowait)?,
            irq: p(a.irq, b.irq)?,
            softirq: p(a.softirq, b.softirq)?,
            steal: p(a.steal, b.steal)?,
        })
    }

    /// Everything but idle and iowait.
    pub fn busy(&self) -> f64 {
        100.0 - self.idle - self.iowait
    }
}

/// One reading of /proc/softirqs: per softirq name, counts per CPU (32-bit counters).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SoftIrqs {
    pub rows: Vec<(String, Vec<u64>)>,
}

impl SoftIrqs {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        const FILE: &str = crate::sys::procfs::SOFTIRQS;
        let mut lines = text.lines();
        let ncpu = lines
            .next()
            .filter(|h| h.trim_start().starts_with("CPU"))
            .ok_or(ParseError::Missing {
                file: FILE,
                want: "CPU0 ... header",
            })?
            .split_whitespace()
            .count();
        let mut rows = Vec::new();
        for line in lines {
            let Some((name, vals)) = line.split_once(':') else {
                continue;
            };
            let vals: Vec<u64> = vals
                .split_whitespace()
                .take(ncpu)
                .map(|v| num(FILE, name.trim(), v))
                .collect::<Result<_, _>>()?;
            rows.push((name.trim().to_string(), vals));
        }
        Ok(SoftIrqs { rows })
    }

    /// Per-CPU counts of one softirq (`NET_RX`, `NET_TX`, ...).
    pub fn per_cpu(&self, name: &str) -> Option<&[u64]> {
        self.rows
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// The increase of one softirq summed over CPUs, each CPU's counter wrapping on its own.
    pub fn delta(a: &SoftIrqs, b: &SoftIrqs, name: &str) -> Option<u64> {
        let (x, y) = (a.per_cpu(name)?, b.per_cpu(name)?);
        if x.len() != y.len() {
            return None;
        }
        x.iter()
            .zip(y)
            .map(|(p, c)| delta(*p, *c, Width::U32))
            .sum()
    }

    /// [`SoftIrqs::delta`] on the CPUs `cpus` only.
    pub fn delta_on(a: &SoftIrqs, b: &SoftIrqs, name: &str, cpus: &[usize]) -> Option<u64> {
        let (x, y) = (a.per_cpu(name)?, b.per_cpu(name)?);
        cpus.iter()
            .map(|&c| delta(*x.get(c)?, *y.get(c)?, Width::U32))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = include_str!("../../tests/fixtures/proc_stat.txt");
    const SOFTIRQS: &str = include_str!("../../tests/fixtures/proc_softirqs.txt");

    #[test]
    fn real_proc_stat_parses() {
        let s = ProcStat::parse(STAT).unwrap();
        assert_eq!(s.total.user, 31309);
        assert_eq!(s.total.idle, 441546);
        assert_eq!(s.total.steal, 62);
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.per_cpu[1].unwrap().system, 2872);
        assert!(s.ctxt > 0 && s.intr > 0);
    }

    #[test]
    fn offline_cpu_leaves_a_gap() {
        let t =
            "cpu 2 0 2 4 0 0 0 0 0 0\ncpu0 1 0 1 2 0 0 0 0 0 0\ncpu2 1 0 1 2 0 0 0 0 0 0\nctxt 5\n";
        let s = ProcStat::parse(t).unwrap();
        assert_eq!(s.per_cpu.len(), 3);
        assert!(s.per_cpu[1].is_none());
    }

    #[test]
    fn old_kernels_with_fewer_fields_parse() {
        let s = ProcStat::parse("cpu 1 2 3 4\nintr 9 1 2\n").unwrap();
        assert_eq!(s.total.idle, 4);
        assert_eq!(s.total.steal, 0);
        assert_eq!(s.intr, 9);
    }

    #[test]
    fn percentages_between_readings() {
        let a = CpuTimes {
            user: 100,
            idle: 100,
            ..Default::default()
        };
        let b = CpuTimes {
            user: 150,
            idle: 130,
            system: 20,
            ..Default::default()
        };
        let p = CpuPct::between(&a, &b).unwrap();
        assert_eq!(p.user, 50.0);
        assert_eq!(p.system, 20.0);
        assert_eq!(p.idle, 30.0);
        assert_eq!(p.busy(), 70.0);
        assert!(CpuPct::between(&a, &a).is_none());
    }

    #[test]
    fn real_softirqs_parse() {
        let s = SoftIrqs::parse(SOFTIRQS).unwrap();
        assert_eq!(s.per_cpu("NET_RX"), Some(&[1584, 2152][..]));
        assert_eq!(s.per_cpu("BLOCK"), Some(&[0, 40398][..]));
        assert!(s.per_cpu("NOPE").is_none());
    }

    #[test]
    fn a_set_of_cpus_sums_their_jiffies_and_softirqs() {
        let s = ProcStat::parse(STAT).unwrap();
        let both = s.of_cpus(&[0, 1]).unwrap();
        assert_eq!(both.system, s.per_cpu[0].unwrap().system + 2872);
        assert!(s.of_cpus(&[5]).is_none());
        let a = SoftIrqs {
            rows: vec![("NET_RX".into(), vec![10, 100])],
        };
        let b = SoftIrqs {
            rows: vec![("NET_RX".into(), vec![15, 300])],
        };
        assert_eq!(SoftIrqs::delta_on(&a, &b, "NET_RX", &[1]), Some(200));
        assert_eq!(SoftIrqs::delta_on(&a, &b, "NET_RX", &[2]), None);
    }

    #[test]
    fn softirq_delta_wraps_per_cpu() {
        let a = SoftIrqs {
            rows: vec![("NET_RX".into(), vec![u32::MAX as u64 - 1, 10])],
        };
        let b = SoftIrqs {
            rows: vec![("NET_RX".into(), vec![3, 15])],
        };
        assert_eq!(SoftIrqs::delta(&a, &b, "NET_RX"), Some(5 + 5));
    }
}
