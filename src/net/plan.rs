//! Topology as a plan: a pure function from the `[network]` section to the list of operations
//! that build the lab (namespaces, veth pairs, addresses, routes, offloads, sysctls, qdiscs,
//! the router), so the topology is reviewed and snapshot-tested without root.
//!
//! Shape: one client netns per path, a router netns, a server netns. Each client netns has one
//! veth to the router; the router has one veth to the server. The router is a bump in the wire
//! (the delay router relays frames at layer 2; the netem/none backends bridge its ports), so
//! its ports carry no addresses and its kernel neither forwards nor answers. Clients and server
//! share 198.18.0.0/15 (RFC 2544): the server is 198.18.0.1, path i's clients are
//! 198.18.(i+1).1..n. Client namespaces have no default route, only one to the server subnet
//! over their link to the router: nothing they send can leave the lab.

use crate::net::router::{RouterConfig, RouterPort};
use crate::net::spec::{LossModel, NetworkSpec, PathSpec};
use serde::Serialize;
use std::net::Ipv4Addr;

pub use crate::sys::netns::{Op, PREFIX};
/// Longest run id: `synlab-` + id + `-r9` must fit the kernel's 15-char link names.
pub const MAX_RUN_ID: usize = 5;

/// The backend a plan is built for (`auto` already resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Netem,
    Router,
    None,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Netem => "netem",
            Backend::Router => "router",
            Backend::None => "none",
        })
    }
}

/// One step of the plan: a kernel operation (`sys::netns` applies it) or the start of the delay
/// router (a child process, started by `net::lab`). Serialized as the op it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Step {
    Kernel(Op),
    StartRouter(StartRouter),
}

/// The delay router to start in `netns` once the links exist.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op")]
pub struct StartRouter {
    pub netns: String,
    pub config: RouterConfig,
}

/// The server's place in the lab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostPlan {
    pub netns: String,
    pub dev: String,
    pub addr: Ipv4Addr,
}

/// One path's client netns, addresses and router port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathPlan {
    pub name: String,
    pub share: f64,
    pub netns: String,
    pub dev: String,
    pub addrs: Vec<Ipv4Addr>,
    pub router_port: String,
    pub spec: PathSpec,
}

/// Where the lab steers receive processing (RPS): the server's namespace to the server's
/// CPUs (what it receives costs its own CPUs, as a NIC's interrupts would), and the router's,
/// the far side of the server's link, to the load's (what the server sends is received by
/// another host).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RxSteering {
    pub server: Vec<usize>,
    pub load: Vec<usize>,
}

/// The lab to build: what exists when it is up, and the operations that build it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub run_id: String,
    pub backend: Backend,
    /// Every netns the plan creates (deleting them undoes the whole plan).
    pub namespaces: Vec<String>,
    pub router_netns: String,
    /// The router's port on the server's link.
    pub router_server_port: String,
    pub server: HostPlan,
    pub paths: Vec<PathPlan>,
    /// The receive steering the plan sets up (None: unsteered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steering: Option<RxSteering>,
    pub ops: Vec<Step>,
}

impl Plan {
    /// The kernel operations, in order (what `sys::netns::apply` carries out).
    pub fn kernel_ops(&self) -> impl Iterator<Item = &Op> {
        self.ops.iter().filter_map(|s| match s {
            Step::Kernel(op) => Some(op),
            Step::StartRouter(_) => None,
        })
    }

    /// The delay router to start, with the router backend.
    pub fn router(&self) -> Option<&StartRouter> {
        self.ops.iter().find_map(|s| match s {
            Step::StartRouter(r) => Some(r),
            Step::Kernel(_) => None,
        })
    }
}

/// Why a plan cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("run id `{0}`: use 1 to {MAX_RUN_ID} lowercase letters or digits (it goes into 15-char link names)")]
    RunId(String),
    #[error("invalid [network] section: {}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Spec(Vec<crate::net::spec::SpecError>),
}

/// Checks a run id for use in names.
pub fn check_run_id(id: &str) -> Result<(), PlanError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_RUN_ID
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(PlanError::RunId(id.to_string()))
    }
}

/// A fresh 5-character run id (base36 of time and pid).
pub fn new_run_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = t ^ ((std::process::id() as u64) << 20);
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut s = String::new();
    for _ in 0..MAX_RUN_ID {
        let d = (x % 36) as u32;
        s.push(std::char::from_digit(d, 36).unwrap());
        x /= 36;
    }
    s
}

/// The server's address.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);

/// Client address `k` (0-based) of path `i`.
pub fn client_addr(path: usize, k: u32) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, path as u8 + 1, k as u8 + 1)
}

/// netem arguments for one direction of a path: delay, jitter, loss, rate and a `limit`
/// sized to the queue plus the frames in flight at rate x delay.
pub fn netem_args(p: &PathSpec) -> Vec<String> {
    let one_way_us = p.rtt.0.as_micros() / 2;
    let mut a = vec!["delay".to_string(), format!("{one_way_us}us")];
    if !p.jitter.0.is_zero() {
        a.push(format!("{}us", p.jitter.0.as_micros()));
    }
    match (p.loss_model, p.gilbert) {
        (LossModel::Gilbert, Some(g)) => a.extend([
            "loss".into(),
            "gemodel".into(),
            format!("{}%", g.p.0),
            format!("{}%", g.r.0),
            format!("{}%", 100.0 - g.loss_bad.0),
            format!("{}%", 100.0 - g.loss_good.0),
        ]),
        _ if p.loss.0 > 0.0 => a.extend(["loss".into(), "random".into(), format!("{}%", p.loss.0)]),
        _ => {}
    }
    // Frames in flight: rate x one-way delay in 1500-byte frames (10 Gbit/s when unlimited).
    let rate = p.bandwidth.map(|b| b.0).unwrap_or(10_000_000_000) as u128;
    let in_flight = rate * one_way_us / 1_000_000 / (8 * 1500);
    if let Some(b) = p.bandwidth {
        a.extend(["rate".into(), format!("{}bit", b.0)]);
    }
    a.extend(["limit".into(), (p.queue as u128 + in_flight).to_string()]);
    a
}

/// Whether netem's queue must go when a path's bandwidth rises from `was` to `now`: netem
/// times each packet as it is queued (after the last one queued) and `tc qdisc change` leaves
/// those times alone, so `backlog_bytes` queued at the old rate would hold the raised path
/// for as long as they take at the old rate (at 28 kbit/s, 1000 packets are tens of seconds
/// to minutes). True when the rate rises and, at the old rate, the backlog outlasts the path's
/// one-way delay (what its delay line holds anyway) by more than 100 ms.
pub fn netem_queue_is_stale(
    was: Option<u64>,
    now: Option<u64>,
    backlog_bytes: u64,
    one_way: std::time::Duration,
) -> bool {
    match was {
        Some(bps) if crate::net::shaper::bandwidth_raised(was, now) => {
            let drain_us = backlog_bytes as u128 * 8 * 1_000_000 / bps.max(1) as u128;
            drain_us > one_way.as_micros() + 100_000
        }
        _ => false,
    }
}

/// Turns the `[network]` section into the plan for `backend`: namespaces, links, addresses
/// and routes, sysctls, shaping, then the router.
pub fn plan(spec: &NetworkSpec, run_id: &str, backend: Backend) -> Result<Plan, PlanError> {
    plan_steered(spec, run_id, backend, None)
}

/// [`plan`], with the receive steering set before any link is made (a namespace's default
/// RPS mask applies to the links made in it afterwards).
pub fn plan_steered(
    spec: &NetworkSpec,
    run_id: &str,
    backend: Backend,
    steering: Option<RxSteering>,
) -> Result<Plan, PlanError> {
    check_run_id(run_id)?;
    spec.validate().map_err(PlanError::Spec)?;
    let prefix = crate::sys::netns::lab_prefix(run_id);
    let name = |s: &str| format!("{prefix}{s}");
    let server = HostPlan {
        netns: name("srv"),
        dev: name("s"),
        addr: SERVER_ADDR,
    };
    let paths: Vec<PathPlan> = spec
        .effective_paths()
        .into_iter()
        .enumerate()
        .map(|(i, p)| PathPlan {
            name: p.name.clone(),
            share: p.weight(),
            netns: name(&format!("c{i}-{}", p.name)),
            dev: name(&format!("c{i}")),
            addrs: (0..spec.client_addrs).map(|k| client_addr(i, k)).collect(),
            router_port: name(&format!("r{i}")),
            spec: p,
        })
        .collect();
    let t = Topology {
        router: name("rtr"),
        router_server_port: name("rs"),
        bridge: name("br"),
        server,
        paths,
    };
    let mut namespaces = vec![t.server.netns.clone(), t.router.clone()];
    namespaces.extend(t.paths.iter().map(|p| p.netns.clone()));

    let mut ops = namespace_ops(&namespaces, &t.router);
    if let Some(st) = &steering {
        ops.push(Op::RpsDefaultMask {
            netns: t.server.netns.clone(),
            mask: crate::model::cpus::cpu_mask_hex(&st.server),
        });
        ops.push(Op::RpsDefaultMask {
            netns: t.router.clone(),
            mask: crate::model::cpus::cpu_mask_hex(&st.load),
        });
    }
    t.link_ops(backend, &mut ops);
    t.address_ops(&mut ops);
    t.sysctl_ops(spec, &mut ops);
    if backend == Backend::Netem {
        t.netem_ops(&mut ops);
    }
    let mut ops: Vec<Step> = ops.into_iter().map(Step::Kernel).collect();
    // The router starts last, once every port it relays between exists.
    if backend == Backend::Router {
        ops.push(Step::StartRouter(t.router_start()));
    }
    Ok(Plan {
        run_id: run_id.to_string(),
        backend,
        namespaces,
        router_netns: t.router,
        router_server_port: t.router_server_port,
        server: t.server,
        paths: t.paths,
        steering,
        ops,
    })
}

fn sysctl(ns: &str, k: &str, v: &str) -> Op {
    Op::Sysctl {
        netns: ns.into(),
        key: k.into(),
        value: v.into(),
    }
}

/// Every namespace, its loopback up and IPv6 off; the router netns does not forward.
fn namespace_ops(namespaces: &[String], router: &str) -> Vec<Op> {
    let mut ops = Vec::new();
    for ns in namespaces {
        ops.push(Op::AddNetns { name: ns.clone() });
        ops.push(Op::LinkUp {
            netns: ns.clone(),
            dev: "lo".into(),
        });
        // No IPv6: no router solicitations or DAD frames on the paths, nothing to relay but ours.
        ops.push(sysctl(ns, "net/ipv6/conf/all/disable_ipv6", "1"));
        ops.push(sysctl(ns, "net/ipv6/conf/default/disable_ipv6", "1"));
    }
    ops.push(sysctl(router, "net/ipv4/ip_forward", "0"));
    ops
}

/// The lab's names, once chosen: what the plan's phases are built from.
struct Topology {
    router: String,
    router_server_port: String,
    bridge: String,
    server: HostPlan,
    paths: Vec<PathPlan>,
}

impl Topology {
    /// Both ends of every veth: (netns, dev).
    fn link_ends(&self) -> Vec<(String, String)> {
        let mut ends = vec![
            (self.server.netns.clone(), self.server.dev.clone()),
            (self.router.clone(), self.router_server_port.clone()),
        ];
        for p in &self.paths {
            ends.push((p.netns.clone(), p.dev.clone()));
            ends.push((self.router.clone(), p.router_port.clone()));
        }
        ends
    }

    /// Links: server <-> router, then each client netns <-> router; offloads off; the router
    /// netns's bridge (netem/none: the delay router relays itself); every end up.
    fn link_ops(&self, backend: Backend, ops: &mut Vec<Op>) {
        let router = &self.router;
        ops.push(Op::AddVethPair {
            a: self.server.dev.clone(),
            a_netns: self.server.netns.clone(),
            b: self.router_server_port.clone(),
            b_netns: router.clone(),
        });
        for p in &self.paths {
            ops.push(Op::AddVethPair {
                a: p.dev.clone(),
                a_netns: p.netns.clone(),
                b: p.router_port.clone(),
                b_netns: router.clone(),
            });
        }
        let ends = self.link_ends();
        for (ns, dev) in &ends {
            ops.push(Op::OffloadsOff {
                netns: ns.clone(),
                dev: dev.clone(),
            });
        }
        if backend != Backend::Router {
            ops.push(Op::AddBridge {
                netns: router.clone(),
                name: self.bridge.clone(),
            });
            let ports = std::iter::once(&self.router_server_port)
                .chain(self.paths.iter().map(|p| &p.router_port));
            for dev in ports {
                ops.push(Op::SetMaster {
                    netns: router.clone(),
                    dev: dev.clone(),
                    master: self.bridge.clone(),
                });
            }
            ops.push(Op::LinkUp {
                netns: router.clone(),
                dev: self.bridge.clone(),
            });
        }
        for (ns, dev) in ends {
            ops.push(Op::LinkUp { netns: ns, dev });
        }
    }

    /// The server's address and its route to the clients; each path's addresses and its route
    /// to the server.
    fn address_ops(&self, ops: &mut Vec<Op>) {
        let server = &self.server;
        ops.push(Op::AddAddr {
            netns: server.netns.clone(),
            dev: server.dev.clone(),
            cidr: format!("{}/24", server.addr),
        });
        ops.push(Op::Route {
            netns: server.netns.clone(),
            dst: "198.18.0.0/15".into(),
            dev: server.dev.clone(),
        });
        for p in &self.paths {
            for a in &p.addrs {
                ops.push(Op::AddAddr {
                    netns: p.netns.clone(),
                    dev: p.dev.clone(),
                    cidr: format!("{a}/24"),
                });
            }
            ops.push(Op::Route {
                netns: p.netns.clone(),
                dst: "198.18.0.0/24".into(),
                dev: p.dev.clone(),
            });
        }
    }

    /// The scenario's per-netns sysctls; clients get the wide port range by default.
    fn sysctl_ops(&self, spec: &NetworkSpec, ops: &mut Vec<Op>) {
        for (k, v) in spec.sysctl.server.entries() {
            ops.push(sysctl(&self.server.netns, k, &v));
        }
        for p in &self.paths {
            let mut client = spec.sysctl.client.clone();
            client.ip_local_port_range.get_or_insert(spec.port_range);
            for (k, v) in client.entries() {
                ops.push(sysctl(&p.netns, k, &v));
            }
        }
    }

    /// Server -> client on the router's port; client -> server on the client's own veth (the
    /// router's server port is shared by all paths, so it cannot tell them apart).
    fn netem_ops(&self, ops: &mut Vec<Op>) {
        for p in &self.paths {
            let args = netem_args(&p.spec);
            ops.push(Op::Netem {
                netns: self.router.clone(),
                dev: p.router_port.clone(),
                args: args.clone(),
            });
            ops.push(Op::Netem {
                netns: p.netns.clone(),
                dev: p.dev.clone(),
                args,
            });
        }
    }

    fn router_start(&self) -> StartRouter {
        StartRouter {
            netns: self.router.clone(),
            config: RouterConfig {
                server_port: self.router_server_port.clone(),
                ports: self
                    .paths
                    .iter()
                    .map(|p| RouterPort {
                        dev: p.router_port.clone(),
                        path: p.spec.clone(),
                    })
                    .collect(),
                stats_interval_ms: 500,
                detached: false,
            },
        }
    }
}

/// The per-namespace TCP settings a private loopback copies from the host's namespace, so a
/// lesson behaves there as it would on the host's loopback (a fresh namespace starts from the
/// kernel's defaults, not the machine's tuning).
pub const LOOPBACK_SYSCTLS: &[&str] = &[
    "net/core/somaxconn",
    "net/ipv4/tcp_max_syn_backlog",
    "net/ipv4/ip_local_port_range",
    "net/ipv4/tcp_tw_reuse",
    "net/ipv4/tcp_fin_timeout",
    "net/ipv4/tcp_syncookies",
    "net/ipv4/tcp_max_tw_buckets",
    "net/ipv4/tcp_abort_on_overflow",
];

/// A loopback of the lab's own (issue 45 item 3): one namespace with only `lo`, where a plain
/// user's scenario without `[network]` runs, so its counters, sockstat and capture are the
/// run's alone. The same operations as a `[network]` lab's namespaces, without links.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopbackPlan {
    pub run_id: String,
    pub netns: String,
    pub ops: Vec<Op>,
}

/// The plan of a private loopback for `run_id`, with the host's values of
/// [`LOOPBACK_SYSCTLS`] (`host`: key and value; a key missing there keeps the kernel's default).
pub fn loopback_plan(run_id: &str, host: &[(String, String)]) -> Result<LoopbackPlan, PlanError> {
    check_run_id(run_id)?;
    let netns = format!("{}lo", crate::sys::netns::lab_prefix(run_id));
    let mut ops = vec![
        Op::AddNetns {
            name: netns.clone(),
        },
        Op::LinkUp {
            netns: netns.clone(),
            dev: "lo".into(),
        },
    ];
    ops.extend(host.iter().map(|(k, v)| sysctl(&netns, k, v)));
    Ok(LoopbackPlan {
        run_id: run_id.to_string(),
        netns,
        ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::units::{Bandwidth, Dur, Percent};
    use std::time::Duration;

    fn two_paths() -> NetworkSpec {
        NetworkSpec {
            client_addrs: 2,
            paths: vec![
                PathSpec {
                    name: "lan".into(),
                    share: Some(0.75),
                    ..Default::default()
                },
                PathSpec {
                    name: "dsl".into(),
                    share: Some(0.25),
                    rtt: Dur(Duration::from_millis(100)),
                    jitter: Dur(Duration::from_millis(2)),
                    loss: Percent(1.0),
                    bandwidth: Some(Bandwidth(10_000_000)),
                    queue: 50,
                    ..Default::default()
                },
            ],
            sysctl: crate::net::spec::SysctlSpec {
                server: crate::net::spec::SysctlSet {
                    somaxconn: Some(128),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn router_plan_one_path() {
        let p = plan(&NetworkSpec::default(), "ab12", Backend::Router).unwrap();
        insta::assert_yaml_snapshot!(p);
    }

    #[test]
    fn steering_is_set_before_any_link_is_made() {
        let st = RxSteering {
            server: vec![1],
            load: vec![0],
        };
        let p = plan_steered(&NetworkSpec::default(), "ab12", Backend::Router, Some(st)).unwrap();
        let ops: Vec<&Op> = p.kernel_ops().collect();
        let first_link = ops
            .iter()
            .position(|o| matches!(o, Op::AddVethPair { .. }))
            .unwrap();
        let masks: Vec<(usize, &Op)> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o, Op::RpsDefaultMask { .. }))
            .map(|(i, o)| (i, *o))
            .collect();
        assert_eq!(masks.len(), 2);
        assert!(masks.iter().all(|(i, _)| *i < first_link));
        assert_eq!(
            masks[0].1,
            &Op::RpsDefaultMask {
                netns: "synlab-ab12-srv".into(),
                mask: "2".into()
            }
        );
        assert_eq!(
            masks[1].1,
            &Op::RpsDefaultMask {
                netns: "synlab-ab12-rtr".into(),
                mask: "1".into()
            }
        );
        assert!(plan(&NetworkSpec::default(), "ab12", Backend::Router)
            .unwrap()
            .kernel_ops()
            .all(|o| !matches!(o, Op::RpsDefaultMask { .. })));
    }

    #[test]
    fn router_plan_two_paths() {
        insta::assert_yaml_snapshot!(plan(&two_paths(), "ab12", Backend::Router).unwrap());
    }

    #[test]
    fn netem_plan_one_path() {
        let spec = NetworkSpec {
            paths: vec![PathSpec {
                name: "wan".into(),
                rtt: Dur(Duration::from_millis(40)),
                ..Default::default()
            }],
            ..Default::default()
        };
        insta::assert_yaml_snapshot!(plan(&spec, "ab12", Backend::Netem).unwrap().ops);
    }

    #[test]
    fn netem_plan_two_paths() {
        insta::assert_yaml_snapshot!(plan(&two_paths(), "ab12", Backend::Netem).unwrap().ops);
    }

    #[test]
    fn link_names_fit_the_kernel_limit_and_clients_have_no_default_route() {
        let mut spec = two_paths();
        for i in 2..10 {
            spec.paths.push(PathSpec {
                name: format!("p{i}"),
                ..Default::default()
            });
        }
        for p in &mut spec.paths {
            p.share = Some(0.1);
        }
        let p = plan(&spec, "zzzzz", Backend::Netem).unwrap();
        for op in p.kernel_ops() {
            if let Op::AddVethPair { a, b, .. } = op {
                assert!(a.len() <= 15 && b.len() <= 15, "{a} {b}");
            }
            if let Op::Route { dst, .. } = op {
                assert_ne!(dst, "0.0.0.0/0");
                assert!(dst.starts_with("198.18."));
            }
        }
        assert!(p.namespaces.iter().all(|n| n.starts_with(PREFIX)));
    }

    #[test]
    fn bad_run_id_and_bad_spec_are_refused() {
        assert!(matches!(
            plan(&NetworkSpec::default(), "toolong", Backend::Router),
            Err(PlanError::RunId(_))
        ));
        let mut spec = two_paths();
        spec.paths[1].share = Some(-1.0);
        let e = plan(&spec, "a", Backend::Router).unwrap_err().to_string();
        assert!(e.contains("network.path[1].share"), "{e}");
        assert_eq!(new_run_id().len(), MAX_RUN_ID);
        check_run_id(&new_run_id()).unwrap();
    }

    #[test]
    fn netem_limit_covers_rate_times_delay() {
        let spec = two_paths();
        // 10 Mbit/s x 50 ms = 62 500 bytes ~ 41 full frames, + queue 50.
        let a = netem_args(&spec.paths[1]);
        assert_eq!(a.last().unwrap(), "91");
        assert!(a
            .windows(2)
            .any(|w| w[0] == "rate" && w[1] == "10000000bit"));
    }

    #[test]
    fn netem_queue_is_stale_only_when_a_raise_leaves_a_slow_backlog() {
        let ms = Duration::from_millis;
        // 20 SYNs (1480 bytes) at 28 kbit/s: 423 ms, past 10 ms + 100 ms.
        assert!(netem_queue_is_stale(
            Some(28_000),
            Some(200_000_000),
            1480,
            ms(10)
        ));
        assert!(netem_queue_is_stale(Some(28_000), None, 1480, ms(10)));
        // Not a raise, or nothing (or only the delay line) queued: `tc qdisc change` will do.
        assert!(!netem_queue_is_stale(
            Some(200_000_000),
            Some(28_000),
            1480,
            ms(10)
        ));
        assert!(!netem_queue_is_stale(None, Some(28_000), 1480, ms(10)));
        assert!(!netem_queue_is_stale(Some(28_000), Some(56_000), 0, ms(10)));
        // 10 Mbit/s x 50 ms in flight (62 500 bytes) is the delay line, not a stale queue.
        assert!(!netem_queue_is_stale(
            Some(10_000_000),
            Some(20_000_000),
            62_500,
            ms(50)
        ));
        assert!(netem_queue_is_stale(
            Some(10_000_000),
            Some(20_000_000),
            250_000,
            ms(50)
        ));
    }

    #[test]
    fn a_private_loopback_is_one_namespace_with_lo_up_and_the_hosts_tcp_settings() {
        let host = vec![("net/core/somaxconn".to_string(), "4096".to_string())];
        let p = loopback_plan("ab12", &host).unwrap();
        assert_eq!(p.netns, "synlab-ab12-lo");
        assert_eq!(
            p.ops,
            vec![
                Op::AddNetns {
                    name: "synlab-ab12-lo".into()
                },
                Op::LinkUp {
                    netns: "synlab-ab12-lo".into(),
                    dev: "lo".into()
                },
                sysctl("synlab-ab12-lo", "net/core/somaxconn", "4096"),
            ]
        );
        assert!(loopback_plan("TOO-LONG", &host).is_err());
    }
}
