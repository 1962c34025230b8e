//! Checks on a worker configuration before any socket opens: where load may go (loopback and the
//! lab's benchmarking range 198.18.0.0/15, RFC 2544, and nothing else: synlab is a lab for one
//! host, not a tool for loading other people's servers) and the ranges of its numbers. Pure, so the rules themselves are tested.

use super::protocol::{Mode, WorkerConfig};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("refusing to send load to {0}: synlab loads only servers on this host, at 127.0.0.0/8, ::1 or the lab's 198.18.0.0/15; run the server here (target kind = \"command\" starts it for you)")]
pub struct RemoteTarget(pub SocketAddr);

/// True for the addresses load may be sent to.
pub fn is_lab_address(ip: IpAddr) -> bool {
    let loopback = match ip {
        IpAddr::V4(a) => a.is_loopback(),
        IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|a| a.is_loopback()),
    };
    loopback || is_lab_range(ip)
}

/// Refuses a target outside the lab.
pub fn check_target(target: SocketAddr) -> Result<(), RemoteTarget> {
    if is_lab_address(target.ip()) {
        Ok(())
    } else {
        Err(RemoteTarget(target))
    }
}

/// The lab's own range (RFC 2544's 198.18.0.0/15): it exists only inside a run's namespaces.
pub fn is_lab_range(ip: IpAddr) -> bool {
    let v4 = |a: Ipv4Addr| a.octets()[0] == 198 && a.octets()[1] & 0xfe == 18;
    match ip {
        IpAddr::V4(a) => v4(a),
        IpAddr::V6(a) => a.to_ipv4_mapped().is_some_and(v4),
    }
}

/// A lab address this namespace would route off the host (no lab here: the host's default
/// route takes 198.18.0.0/15 to whatever network the machine is on).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("refusing to send load to {target}: it is in the lab's 198.18.0.0/15, but no lab namespace holds it here (the kernel would send it from {from}, off this host); the lab's addresses exist only while a run with a [network] section has its lab up")]
pub struct OffHost {
    pub target: SocketAddr,
    pub from: IpAddr,
}

/// Refuses a lab-range target the kernel would reach from outside the lab (its route's
/// source address, `source`, neither loopback nor the lab's): it would leave the host.
pub fn check_route(target: SocketAddr, source: IpAddr) -> Result<(), OffHost> {
    if is_lab_range(target.ip()) && !is_lab_address(source) {
        return Err(OffHost {
            target,
            from: source,
        });
    }
    Ok(())
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("worker config: {key} = {value} is out of range ({want})")]
pub struct BadConfig {
    pub key: &'static str,
    pub value: String,
    pub want: &'static str,
}

fn positive(key: &'static str, v: f64) -> Result<(), BadConfig> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(BadConfig {
            key,
            value: v.to_string(),
            want: "a positive number",
        })
    }
}

/// Range checks on the numbers of a worker configuration (the schedule checks rate and burst).
pub fn check_config(cfg: &WorkerConfig) -> Result<(), BadConfig> {
    positive("timeout_s", cfg.timeout_s)?;
    positive("response_timeout_s", cfg.response_timeout_s)?;
    positive("duration_s", cfg.duration_s)?;
    if !(cfg.think_s.is_finite() && cfg.think_s >= 0.0) {
        return Err(BadConfig {
            key: "think_s",
            value: cfg.think_s.to_string(),
            want: ">= 0",
        });
    }
    if cfg.mode != Mode::Closed && cfg.sockets == 0 {
        return Err(BadConfig {
            key: "sockets",
            value: "0".into(),
            want: ">= 1 for sclient and open modes",
        });
    }
    if cfg.stats_interval_ms == 0 {
        return Err(BadConfig {
            key: "stats_interval_ms",
            value: "0".into(),
            want: ">= 1",
        });
    }
    if cfg.keepalive && cfg.requests_per_conn == 0 {
        return Err(BadConfig {
            key: "requests_per_conn",
            value: "0".into(),
            want: ">= 1 with keepalive",
        });
    }
    if let Some(m) = cfg
        .mix
        .iter()
        .find(|m| !(m.weight.is_finite() && m.weight >= 0.0))
    {
        return Err(BadConfig {
            key: "mix.weight",
            value: format!("{} ({})", m.weight, m.class),
            want: ">= 0",
        });
    }
    if !cfg.mix.is_empty() && cfg.mix.iter().all(|m| m.weight == 0.0) {
        return Err(BadConfig {
            key: "mix.weight",
            value: "all 0".into(),
            want: "at least one positive weight",
        });
    }
    // HTTP/2's connections are persistent without HTTP/1.1's keep-alive.
    if cfg.connections > 0 && !cfg.keepalive && cfg.streams.is_none() {
        return Err(BadConfig {
            key: "connections",
            value: cfg.connections.to_string(),
            want: "0 without keepalive (a pool of persistent connections needs HTTP/1.1 or HTTP/2)",
        });
    }
    if cfg.streams == Some(0) {
        return Err(BadConfig {
            key: "streams",
            value: "0".into(),
            want: "1 or more streams per connection (HTTP/2), or none (HTTP/1.x)",
        });
    }
    if let Some(ip) = cfg
        .bind_addrs
        .iter()
        .find(|ip| ip.is_ipv4() != cfg.target.is_ipv4())
    {
        return Err(BadConfig {
            key: "bind_addrs",
            value: ip.to_string(),
            want: "the same address family as the target",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> bool {
        check_target(s.parse().unwrap()).is_ok()
    }

    #[test]
    fn a_lab_address_routed_from_outside_the_lab_is_refused() {
        let t = |s: &str| s.parse::<SocketAddr>().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // In a client namespace the route leaves from the path's own lab address.
        assert!(check_route(t("198.18.0.1:80"), ip("198.18.1.1")).is_ok());
        // On the host the default route takes it to the machine's network.
        let e = check_route(t("198.18.0.1:8080"), ip("192.0.2.10")).unwrap_err();
        assert!(e.to_string().contains("off this host"), "{e}");
        // Loopback targets are not the lab's range: their route is the host's own.
        assert!(check_route(t("127.0.0.1:80"), ip("127.0.0.1")).is_ok());
    }

    #[test]
    fn lab_and_loopback_are_allowed() {
        assert!(ok("127.0.0.1:80"));
        assert!(ok("127.255.0.9:8080"));
        assert!(ok("[::1]:80"));
        assert!(ok("198.18.0.1:80"));
        assert!(ok("198.19.255.254:80"));
        assert!(ok("[::ffff:127.0.0.1]:80"));
    }

    #[test]
    fn everything_else_is_refused_with_a_way_out() {
        for a in [
            "198.20.0.1:80",
            "198.17.255.255:80",
            "10.0.0.1:80",
            "8.8.8.8:53",
            "0.0.0.0:80",
            "[2001:db8::1]:80",
            "[::]:80",
        ] {
            assert!(!ok(a), "{a} must be refused");
        }
        let e = check_target("8.8.8.8:53".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("8.8.8.8:53") && e.to_string().contains("this host"));
    }
}
