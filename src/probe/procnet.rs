//! Parsers of a network namespace's TCP counters: /proc/net/snmp and /proc/net/netstat (pairs
//! of "Group: names" / "Group: values" lines) and /proc/net/sockstat (gauges such as `tw`).

use crate::sys::procfs;
use std::collections::HashMap;

/// Named counters of /proc/net/snmp + /proc/net/netstat, keyed `Group.Name` (`Tcp.PassiveOpens`,
/// `TcpExt.ListenOverflows`). Values are signed: `Tcp.MaxConn` is -1.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetCounters {
    values: HashMap<String, i64>,
}

/// A malformed counters file, quoting what was wrong.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error("{file}: header line for `{group}` has {names} names but its value line has {values}")]
    Mismatch {
        file: &'static str,
        group: String,
        names: usize,
        values: usize,
    },
    #[error("{file}: value `{value}` of `{key}` is not an integer")]
    NotANumber {
        file: &'static str,
        key: String,
        value: String,
    },
    #[error("{file}: no `{want}` line (is this the right file?)")]
    Missing {
        file: &'static str,
        want: &'static str,
    },
}

impl NetCounters {
    /// Adds the groups of one snmp/netstat-style text (call once per file).
    pub fn parse_into(&mut self, file: &'static str, text: &str) -> Result<(), ParseError> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        while let Some(header) = lines.next() {
            let Some((group, names)) = header.split_once(':') else {
                continue;
            };
            let Some(vals_line) = lines.next() else {
                return Err(ParseError::Mismatch {
                    file,
                    group: group.to_string(),
                    names: names.split_whitespace().count(),
                    values: 0,
                });
            };
            let vals = vals_line.split_once(':').map(|(_, v)| v).unwrap_or("");
            let names: Vec<&str> = names.split_whitespace().collect();
            let vals: Vec<&str> = vals.split_whitespace().collect();
            if names.len() != vals.len() {
                return Err(ParseError::Mismatch {
                    file,
                    group: group.to_string(),
                    names: names.len(),
                    values: vals.len(),
                });
            }
            for (n, v) in names.iter().zip(vals) {
                let key = format!("{group}.{n}");
                let parsed = v
                    .parse::<i64>()
                    .or_else(|_| v.parse::<u64>().map(|u| u as i64));
                let value = parsed.map_err(|_| ParseError::NotANumber {
                    file,
                    key: key.clone(),
                    value: v.to_string(),
                })?;
                self.values.insert(key, value);
            }
        }
        Ok(())
    }

    /// Parses /proc/net/snmp and /proc/net/netstat together.
    pub fn parse(snmp: &str, netstat: &str) -> Result<Self, ParseError> {
        let mut c = NetCounters::default();
        c.parse_into(procfs::NET_SNMP, snmp)?;
        if !c.values.contains_key("Tcp.PassiveOpens") {
            return Err(ParseError::Missing {
                file: procfs::NET_SNMP,
                want: "Tcp:",
            });
        }
        c.parse_into(procfs::NET_NETSTAT, netstat)?;
        if !c.values.contains_key("TcpExt.ListenOverflows") {
            return Err(ParseError::Missing {
                file: procfs::NET_NETSTAT,
                want: "TcpExt:",
            });
        }
        Ok(c)
    }

    /// A counter by `Group.Name`; None if this kernel does not have it.
    pub fn get(&self, key: &str) -> Option<i64> {
        self.values.get(key).copied()
    }

    /// A counter as unsigned (counters never go negative; gauges like MaxConn may).
    pub fn counter(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| u64::try_from(v).ok())
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The TCP line of /proc/net/sockstat (per netns except `mem`, which is host-wide, in pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SockStat {
    pub inuse: u64,
    pub orphan: u64,
    pub tw: u64,
    pub alloc: u64,
    pub mem_pages: u64,
}

impl SockStat {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        const FILE: &str = procfs::NET_SOCKSTAT;
        let line =
            text.lines()
                .find_map(|l| l.strip_prefix("TCP:"))
                .ok_or(ParseError::Missing {
                    file: FILE,
                    want: "TCP:",
                })?;
        let mut s = SockStat::default();
        let toks: Vec<&str> = line.split_whitespace().collect();
        for pair in toks.chunks(2) {
            let [k, v] = pair else { break };
            let n: u64 = v.parse().map_err(|_| ParseError::NotANumber {
                file: FILE,
                key: format!("TCP.{k}"),
                value: v.to_string(),
            })?;
            match *k {
                "inuse" => s.inuse = n,
                "orphan" => s.orphan = n,
                "tw" => s.tw = n,
                "alloc" => s.alloc = n,
                "mem" => s.mem_pages = n,
                _ => {}
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = include_str!("../../tests/fixtures/proc_net_snmp.txt");
    const NETSTAT: &str = include_str!("../../tests/fixtures/proc_net_netstat.txt");
    const SOCKSTAT: &str = include_str!("../../tests/fixtures/proc_net_sockstat.txt");

    #[test]
    fn real_snmp_and_netstat_parse() {
        let c = NetCounters::parse(SNMP, NETSTAT).unwrap();
        assert_eq!(c.get("Tcp.MaxConn"), Some(-1));
        assert_eq!(c.counter("Tcp.MaxConn"), None);
        assert_eq!(c.get("Tcp.ActiveOpens"), Some(18));
        assert_eq!(c.get("Tcp.PassiveOpens"), Some(2));
        assert_eq!(c.get("Tcp.EstabResets"), Some(6));
        assert_eq!(c.get("TcpExt.ListenOverflows"), Some(0));
        assert_eq!(c.get("TcpExt.TW"), Some(10));
        assert_eq!(c.get("IpExt.InOctets"), Some(89784630));
        assert!(c.get("TcpExt.TCPReqQFullDrop").is_some());
        assert!(c.len() > 150, "{}", c.len());
    }

    #[test]
    fn every_drop_reasons_counter_is_in_the_real_files() {
        let c = NetCounters::parse(SNMP, NETSTAT).unwrap();
        for r in crate::model::drops::DROP_REASONS {
            assert!(c.counter(r.counter).is_some(), "{} missing", r.counter);
        }
    }

    #[test]
    fn mismatched_lines_are_an_error_naming_the_group() {
        let e = NetCounters::parse("Tcp: A B\nTcp: 1\n", "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/proc/net/snmp: header line for `Tcp` has 2 names but its value line has 1"
        );
    }

    #[test]
    fn non_numbers_are_quoted() {
        let e = NetCounters::parse("Tcp: PassiveOpens\nTcp: x1\n", "").unwrap_err();
        assert!(e.to_string().contains("`x1`"), "{e}");
    }

    #[test]
    fn netstat_without_tcpext_is_refused() {
        let e = NetCounters::parse(SNMP, "IpExt: A\nIpExt: 1\n").unwrap_err();
        assert!(matches!(
            e,
            ParseError::Missing {
                want: "TcpExt:",
                ..
            }
        ));
    }

    #[test]
    fn real_sockstat_parses() {
        let s = SockStat::parse(SOCKSTAT).unwrap();
        assert_eq!(
            s,
            SockStat {
                inuse: 1,
                orphan: 0,
                tw: 0,
                alloc: 1,
                mem_pages: 173
            }
        );
    }

    #[test]
    fn sockstat_with_time_wait() {
        let t =
            "sockets: used 9\nTCP: inuse 3 orphan 1 tw 50123 alloc 9 mem 4\nUDP: inuse 0 mem 0\n";
        assert_eq!(SockStat::parse(t).unwrap().tw, 50123);
        assert!(SockStat::parse("UDP: inuse 0\n").is_err());
    }
}
