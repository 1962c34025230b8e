//! The typed values the runtime hands the core at its boundary (`Input`): each one's
//! `Display` is the line a user reads in the status line and run.log, made in one place.

use crate::model::units::Dur;
use crate::net::plan::Backend;
use crate::scenario::TargetKind;
use crate::target::config::{Arch, ServiceKind};
use crate::tls::settings::{KxGroup, ResumeBy, TlsVersion};
use std::fmt;
// A socket address is a value here: `core::net`, as the core does no I/O.
use ::core::net::SocketAddr;

/// What carries the run's packets: the network lab's backend as built, and whether synlab
/// chose it (`backend = "auto"`); or, without `[network]`, a loopback of the run's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabBackend {
    Shaped {
        backend: Backend,
        auto: bool,
    },
    /// A plain user's run without `[network]` in a namespace holding only `lo` (issue 45).
    OwnLoopback,
}

impl fmt::Display for LabBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabBackend::Shaped { backend, auto } => {
                write!(f, "{backend}")?;
                if *auto {
                    f.write_str(" (auto)")?;
                }
                Ok(())
            }
            LabBackend::OwnLoopback => f.write_str("loopback (own netns)"),
        }
    }
}

/// Why the scenario's network lab could not be built here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoLab {
    /// The kernel refused the user namespace the rootless lab runs in: its diagnosis.
    #[error("{0}")]
    UserNs(String),
    /// The privileges the lab needs and this process lacks, as `sys::privilege` says them.
    #[error("{0}")]
    Privileges(String),
}

/// The target as it answers, for the status line and run.log.
#[derive(Debug, Clone)]
pub enum TargetUp {
    /// synlab's own server.
    Builtin {
        arch: Arch,
        listen: SocketAddr,
        service_time: Dur,
        service: ServiceKind,
        backlog: u32,
        tls: bool,
    },
    /// `target.command`, started by synlab.
    Command { cmdline: String, addr: SocketAddr },
    /// A server synlab did not start.
    Address(SocketAddr),
    /// nginx or Apache, configured and started by synlab.
    Managed { kind: TargetKind, addr: SocketAddr },
}

impl fmt::Display for TargetUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetUp::Builtin {
                arch,
                listen,
                service_time,
                service,
                backlog,
                tls,
            } => {
                let https = if *tls { ", https" } else { "" };
                let line = format!(
                    "built-in {arch:?} server on {listen} ({service_time} of {service:?} per request, backlog {backlog}{https})"
                );
                f.write_str(&line.to_lowercase())
            }
            TargetUp::Command { cmdline, addr } => write!(f, "`{cmdline}` on {addr}"),
            TargetUp::Address(addr) => write!(f, "server at {addr}"),
            TargetUp::Managed { kind, addr } => write!(f, "{} on {addr}", kind.name()),
        }
    }
}

/// Over TLS, what the clients speak.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsSpoken {
    pub version: TlsVersion,
    pub group: KxGroup,
    pub resume_by: ResumeBy,
    /// The workers verify the server's certificate.
    pub verify: bool,
}

impl fmt::Display for TlsSpoken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}, {}", self.version, self.group, self.resume_by)?;
        if self.verify {
            f.write_str(", verify")?;
        }
        Ok(())
    }
}

/// Why the network lab did not put a path under its new profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    #[error("no network lab in this run (add a [network] section)")]
    NoLab,
    /// The lab's own error (a refused `tc`, the delay router's answer), its chain as words.
    #[error("{0}")]
    Lab(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_boundary_value_reads_as_the_line_the_user_saw_before() {
        let auto = LabBackend::Shaped {
            backend: Backend::Router,
            auto: true,
        };
        assert_eq!(auto.to_string(), "router (auto)");
        let netem = LabBackend::Shaped {
            backend: Backend::Netem,
            auto: false,
        };
        assert_eq!(netem.to_string(), "netem");
        assert_eq!(LabBackend::OwnLoopback.to_string(), "loopback (own netns)");
        let target = TargetUp::Builtin {
            arch: Arch::Event,
            listen: "127.0.0.1:8080".parse().unwrap(),
            service_time: Dur(std::time::Duration::from_micros(100)),
            service: ServiceKind::Sleep,
            backlog: 511,
            tls: true,
        };
        assert_eq!(
            target.to_string(),
            "built-in event server on 127.0.0.1:8080 (100us of sleep per request, backlog 511, https)"
        );
        let addr: SocketAddr = "198.18.0.1:443".parse().unwrap();
        assert_eq!(
            TargetUp::Address(addr).to_string(),
            "server at 198.18.0.1:443"
        );
        let nginx = TargetUp::Managed {
            kind: TargetKind::Nginx,
            addr,
        };
        assert_eq!(nginx.to_string(), "nginx on 198.18.0.1:443");
        assert_eq!(
            PathRefusal::NoLab.to_string(),
            "no network lab in this run (add a [network] section)"
        );
        let missing = NoLab::Privileges("CAP_NET_ADMIN is missing".into());
        assert_eq!(missing.to_string(), "CAP_NET_ADMIN is missing");
    }
}
