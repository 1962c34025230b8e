//! The machine a report describes: host name, kernel, CPU count and model, and its load
//! average (how busy others kept it: our machines are shared), from live /proc.

/// Facts about this host, for captions and report.md.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Machine {
    pub hostname: String,
    pub kernel: String,
    pub cpus: usize,
    pub cpu_model: String,
    /// /proc/loadavg's 1, 5 and 15-minute averages when read (None: not recorded).
    pub loadavg: Option<[f64; 3]>,
}

impl Machine {
    /// Reads /proc now; a fact that cannot be read is left empty (0 CPUs).
    pub fn read() -> Machine {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let cpuinfo = read("/proc/cpuinfo");
        Machine {
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            // The machine's, not the calling thread's affinity (the controller's thread is kept
            // off the server's CPUs).
            cpus: online_cpus().len(),
            cpu_model: cpuinfo
                .lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default(),
            loadavg: parse_loadavg(&read("/proc/loadavg")),
        }
    }

    /// The same facts as summary.json's `meta.machine` object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "hostname": self.hostname,
            "kernel": self.kernel,
            "cpus": self.cpus,
            "cpu_model": self.cpu_model,
            "loadavg": self.loadavg,
        })
    }

    /// Reads `meta.machine` as written by `to_json`; None if absent.
    pub fn from_json(v: &serde_json::Value) -> Option<Machine> {
        let o = v.as_object()?;
        let s = |k: &str| o.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        Some(Machine {
            hostname: s("hostname"),
            kernel: s("kernel"),
            cpus: o.get("cpus").and_then(|v| v.as_u64()).unwrap_or(0) as usize,
            cpu_model: s("cpu_model"),
            loadavg: o
                .get("loadavg")
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
        })
    }

    /// One line: "host, Linux 6.1.0, 2 CPUs (model)".
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}, Linux {}, {} CPUs",
            if self.hostname.is_empty() {
                "?"
            } else {
                &self.hostname
            },
            if self.kernel.is_empty() {
                "?"
            } else {
                &self.kernel
            },
            self.cpus
        );
        if !self.cpu_model.is_empty() {
            s.push_str(&format!(" ({})", self.cpu_model));
        }
        if let Some([one, five, fifteen]) = self.loadavg {
            s.push_str(&format!(", load {one:.1}/{five:.1}/{fifteen:.1}"));
        }
        s
    }
}

/// The CPUs this machine has online (/sys/devices/system/cpu/online, `0-1,4`), what a
/// scenario's `cpus` may name; 0..available_parallelism when that cannot be read.
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| parse_cpu_list(t.trim()))
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

/// A kernel CPU list (`0-3,6`); None if it is not one.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The 1, 5 and 15-minute load averages of /proc/loadavg's line.
fn parse_loadavg(line: &str) -> Option<[f64; 3]> {
    let mut it = line.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-1,4"), Some(vec![0, 1, 4]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("x"), None);
        assert!(online_cpus().contains(&0));
    }

    #[test]
    fn reads_this_host_and_round_trips() {
        let m = Machine::read();
        assert!(m.cpus >= 1);
        assert!(
            !m.kernel.is_empty(),
            "/proc/sys/kernel/osrelease unreadable"
        );
        assert_eq!(Machine::from_json(&m.to_json()), Some(m));
    }

    #[test]
    fn the_load_average_is_read_and_said() {
        let l = parse_loadavg("2.95 5.59 6.17 3/812 40211");
        assert_eq!(l, Some([2.95, 5.59, 6.17]));
        assert_eq!(parse_loadavg("garbage"), None);
        let m = Machine {
            cpus: 2,
            loadavg: l,
            ..Default::default()
        };
        assert!(
            m.describe().ends_with(", load 3.0/5.6/6.2"),
            "{}",
            m.describe()
        );
        assert_eq!(Machine::from_json(&m.to_json()), Some(m));
    }
}
