//! The seam between the controller's decisions and the machine: its children, the network
//! lab, the probes and the clock behind one bundle of narrow traits (`Runtime`), the real
//! ones in production (`Runtime::real`) and fakes in the tests (`fakes.rs`), so the start-up
//! order, supervision, the drain and the finish are tested without root or sockets.

use super::Input;
use crate::lab::core::NoLab;
use crate::model::death::{Death, Exit};
use crate::model::{Placement, Steer};
use crate::net::lab::{LabNet, LabPath, RouterView};
use crate::net::plan::Backend;
use crate::net::router::RouterStats;
use crate::net::spec::{NetworkSpec, PathSpec};
use crate::probe::{ProbeConfig, ProbeSample};
use crate::sys::process::{ChildProc, Spawn};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Everything the controller asks of the machine, as one value it owns.
pub(crate) struct Runtime {
    pub clock: Box<dyn Clock>,
    pub children: Box<dyn Children>,
    pub network: Box<dyn Network>,
    pub probes: Box<dyn Probes>,
}

impl Runtime {
    /// The machine itself: processes, namespaces, the kernel's probes, the wall clock.
    pub fn real() -> Self {
        Runtime {
            clock: Box::new(RealClock),
            children: Box::new(RealChildren),
            network: Box::new(RealNetwork),
            probes: Box::new(RealProbes),
        }
    }
}

/// Time, and waiting for it: a fake clock moves only when the controller waits.
pub(crate) trait Clock: Send {
    fn now(&self) -> Instant;
    fn sleep(&self, d: Duration);
    /// The next message of `rx` that comes before `deadline` (None: none came).
    fn recv_until(&self, rx: &Receiver<Input>, deadline: Instant) -> Option<Input>;
}

/// A child process the run depends on (a load worker, the server).
pub(crate) trait Child: Send {
    fn name(&self) -> &str;
    fn pid(&self) -> u32;
    /// One line on its stdin; an error means it is gone.
    fn send_line(&mut self, line: &str) -> std::io::Result<()>;
    /// How it ended, once it has (None: still running).
    fn ended(&mut self) -> Option<Exit>;
    /// Asks it to stop (stdin closed), waits up to `grace`, then kills it.
    fn stop(&mut self, grace: Duration);

    /// Who it is, its pid and how it ended, once it has.
    fn death(&mut self) -> Option<Death> {
        let how = self.ended()?;
        Some(Death {
            who: self.name().to_string(),
            pid: self.pid(),
            how,
        })
    }
}

/// What a child writes, line by line, from its reader thread.
pub(crate) type OnLine = Box<dyn FnMut(&str) + Send>;

/// Starts children (`synlab worker`, `synlab serve`, a target command).
pub(crate) trait Children: Send {
    fn spawn(&self, name: &str, spawn: &Spawn, on_line: OnLine) -> anyhow::Result<Box<dyn Child>>;
}

/// The host's network as the controller uses it: the lab's namespaces and whether a server
/// answers.
pub(crate) trait Network: Send {
    /// Why the lab cannot be built here (None: it can).
    fn blocker(&self) -> Option<NoLab>;
    /// Where the lab runs, for the status line and run.log: "root", "rootless (user namespace)".
    fn label(&self) -> String;
    /// Other synlab runs on this machine, as a notice.
    fn others_running(&self) -> Option<String>;
    /// Builds the lab of `spec` with the CPUs of `placement`.
    fn up(
        &self,
        spec: &NetworkSpec,
        run_id: &str,
        placement: &Placement,
    ) -> anyhow::Result<Box<dyn Lab>>;
    /// A connect to `addr`, from the namespace `netns` (None: this one).
    fn connect(&self, addr: SocketAddr, netns: Option<&str>) -> Result<(), std::io::ErrorKind>;
    /// Whether a server could listen at `addr` (as the servers bind).
    fn port_free(&self, addr: SocketAddr) -> std::io::Result<()>;
    /// Whether a server could bind UDP `addr` (as Caddy's and the built-in server's QUIC
    /// listeners do: no SO_REUSEADDR, so any socket bound there counts).
    fn udp_port_free(&self, addr: SocketAddr) -> std::io::Result<()>;
    /// A free port on the host for a server we start.
    fn free_port(&self) -> anyhow::Result<u16>;
}

/// Names and addresses of a running lab, as built.
#[derive(Debug, Clone)]
pub(crate) struct LabLayout {
    pub run_id: String,
    pub backend: Backend,
    pub server_netns: String,
    pub server_addr: Ipv4Addr,
    /// The server's interface in its namespace (the probes' default).
    pub server_dev: String,
    pub paths: Vec<LabPath>,
    /// What was removed of crashed earlier runs before this lab was built.
    pub leftovers_removed: Vec<String>,
    /// Why the kernel would not steer as `[network] steer` asked.
    pub steer_refused: Option<String>,
}

/// A running lab: its paths changed live, its delay router watched, taken down at the end.
pub(crate) trait Lab: Send {
    fn layout(&self) -> &LabLayout;
    /// Where the server's receive processing runs now.
    fn steer(&self) -> Option<Steer>;
    fn set_steer(&mut self, steer: Steer) -> anyhow::Result<()>;
    /// Puts one path under `profile` (applied once the router answered it).
    fn set_path(&mut self, profile: &PathSpec) -> anyhow::Result<()>;
    /// `net.ipv4.tcp_syncookies` in the server's namespace.
    fn set_syncookies(&mut self, value: u8) -> anyhow::Result<()>;
    /// `Tcp: ActiveOpens` summed over the client namespaces.
    fn client_active_opens(&self) -> anyhow::Result<u64>;
    fn router_stats(&self) -> Option<RouterStats>;
    fn router_late_life(&self) -> (u64, u64);
    fn router_view(&self) -> RouterView;
    /// What the router said besides its stats and answers, since the last call.
    fn take_router_said(&self) -> Vec<String>;
    /// The router, once it has died.
    fn router_death(&mut self) -> Option<Death>;
    /// The prefix of every namespace of this lab.
    fn netns_prefix(&self) -> String;
    /// Stops the router and removes every namespace.
    fn down(self: Box<Self>) -> anyhow::Result<()>;
}

/// A running set of probes: dropping it stops them.
pub(crate) type ProbesRunning = Box<dyn Send>;

/// The sink probe samples go to (false: nobody listens any more).
pub(crate) type ProbeSink = Box<dyn FnMut(ProbeSample) -> bool + Send>;

/// Starts the kernel probes.
pub(crate) trait Probes: Send {
    fn start(&self, cfg: ProbeConfig, sink: ProbeSink) -> anyhow::Result<ProbesRunning>;
}

struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
    fn recv_until(&self, rx: &Receiver<Input>, deadline: Instant) -> Option<Input> {
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .ok()
    }
}

struct RealChildren;

impl Child for ChildProc {
    fn name(&self) -> &str {
        &self.name
    }
    fn pid(&self) -> u32 {
        ChildProc::pid(self)
    }
    fn send_line(&mut self, line: &str) -> std::io::Result<()> {
        ChildProc::send_line(self, line)
    }
    fn ended(&mut self) -> Option<Exit> {
        self.try_wait().map(|st| crate::sys::process::exit_of(&st))
    }
    fn stop(&mut self, grace: Duration) {
        ChildProc::stop(self, grace);
    }
}

impl Children for RealChildren {
    fn spawn(&self, name: &str, spawn: &Spawn, on_line: OnLine) -> anyhow::Result<Box<dyn Child>> {
        Ok(Box::new(ChildProc::spawn(name, spawn, on_line)?))
    }
}

struct RealNetwork;

impl Network for RealNetwork {
    fn blocker(&self) -> Option<NoLab> {
        match crate::sys::userns::mode() {
            Some(crate::sys::userns::LabMode::Refused(why)) => Some(NoLab::UserNs(why.to_string())),
            _ => crate::sys::privilege::Privileges::current()
                .lab_missing()
                .map(NoLab::Privileges),
        }
    }
    fn label(&self) -> String {
        match crate::sys::userns::mode() {
            Some(m) => m.label().to_string(),
            None if crate::sys::userns::host_root() => "root".into(),
            None => "rootless (user namespace)".into(),
        }
    }
    fn others_running(&self) -> Option<String> {
        crate::sys::netns::others_running_notice()
    }
    fn up(
        &self,
        spec: &NetworkSpec,
        run_id: &str,
        placement: &Placement,
    ) -> anyhow::Result<Box<dyn Lab>> {
        let net = crate::net::lab::Lab::up_placed(spec, run_id, placement)?;
        let layout = LabLayout {
            run_id: net.run_id.clone(),
            backend: net.backend,
            server_netns: net.server_netns.clone(),
            server_addr: net.server_addr,
            server_dev: net.plan().server.dev.clone(),
            paths: net.paths.clone(),
            leftovers_removed: net.leftovers_removed.clone(),
            steer_refused: net.steer_refused.clone(),
        };
        Ok(Box::new(RealLab { net, layout }))
    }
    fn connect(&self, addr: SocketAddr, netns: Option<&str>) -> Result<(), std::io::ErrorKind> {
        let connect = move || {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500))
                .map(drop)
                .map_err(|e| e.kind())
        };
        match netns {
            Some(ns) => {
                crate::sys::netns::in_netns(ns, connect).unwrap_or(Err(std::io::ErrorKind::Other))
            }
            None => connect(),
        }
    }
    fn port_free(&self, addr: SocketAddr) -> std::io::Result<()> {
        crate::sys::server_io::bind_listener(addr, 1).map(drop)
    }
    fn udp_port_free(&self, addr: SocketAddr) -> std::io::Result<()> {
        std::net::UdpSocket::bind(addr).map(drop)
    }
    fn free_port(&self) -> anyhow::Result<u16> {
        super::target::free_port()
    }
}

struct RealLab {
    net: LabNet,
    layout: LabLayout,
}

impl Lab for RealLab {
    fn layout(&self) -> &LabLayout {
        &self.layout
    }
    fn steer(&self) -> Option<Steer> {
        self.net.steer
    }
    fn set_steer(&mut self, steer: Steer) -> anyhow::Result<()> {
        self.net.set_steer(steer)
    }
    fn set_path(&mut self, profile: &PathSpec) -> anyhow::Result<()> {
        self.net.set_path(profile)
    }
    fn set_syncookies(&mut self, value: u8) -> anyhow::Result<()> {
        crate::sys::netns::in_netns(&self.layout.server_netns, || {
            crate::sys::sysctl::write("net/ipv4/tcp_syncookies", &value.to_string())
        })??;
        Ok(())
    }
    fn client_active_opens(&self) -> anyhow::Result<u64> {
        let mut sum = 0;
        for p in &self.layout.paths {
            let read = crate::sys::netns::in_netns(&p.netns, || {
                use crate::sys::procfs;
                let text = std::fs::read_to_string(procfs::net_dir().join("snmp"))?;
                let mut c = crate::probe::procnet::NetCounters::default();
                c.parse_into(procfs::NET_SNMP, &text)?;
                c.counter("Tcp.ActiveOpens")
                    .ok_or_else(|| anyhow::anyhow!("no Tcp ActiveOpens"))
            });
            let n = read
                .and_then(|r| r)
                .map_err(|e| anyhow::anyhow!("in netns {}: {e:#}", p.netns))?;
            sum += n;
        }
        Ok(sum)
    }
    fn router_stats(&self) -> Option<RouterStats> {
        self.net.router_stats()
    }
    fn router_late_life(&self) -> (u64, u64) {
        self.net.router_late_life()
    }
    fn router_view(&self) -> RouterView {
        self.net.router_view()
    }
    fn take_router_said(&self) -> Vec<String> {
        self.net.take_router_said()
    }
    fn router_death(&mut self) -> Option<Death> {
        self.net.router_death()
    }
    fn netns_prefix(&self) -> String {
        self.net.netns_prefix()
    }
    fn down(self: Box<Self>) -> anyhow::Result<()> {
        self.net.down()
    }
}

struct RealProbes;

impl Probes for RealProbes {
    fn start(&self, cfg: ProbeConfig, sink: ProbeSink) -> anyhow::Result<ProbesRunning> {
        Ok(Box::new(crate::probe::spawn(cfg, sink)?))
    }
}
