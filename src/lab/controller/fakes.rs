//! Fakes of the runtime's traits for the controller's tests: every call lands in one journal,
//! in order, and a test kills a child, refuses a start or reads what is still running through
//! the shared `Machine`. No process, namespace, socket or probe is made.

use super::runtime::{
    Child, Children, Clock, Lab, LabLayout, Network, OnLine, ProbeSink, Probes, ProbesRunning,
    Runtime,
};
use super::Input;
use crate::load::protocol::Control;
use crate::model::death::{Death, Exit};
use crate::model::{Placement, Steer};
use crate::net::lab::{LabPath, RouterView};
use crate::net::router::RouterStats;
use crate::net::spec::{NetworkSpec, PathSpec};
use crate::probe::ProbeConfig;
use crate::sys::process::Spawn;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The fake machine the fakes share with the test.
#[derive(Clone, Default)]
pub(super) struct Machine(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    journal: Vec<String>,
    /// Every child started, by name: how it ended (None: running).
    children: BTreeMap<String, Option<Exit>>,
    /// What refuses to start (a child's name, "probes", "lab").
    refused: Vec<String>,
    /// Workers end by themselves once told to drain (as real ones do when nothing is in flight).
    drain_ends_workers: bool,
    /// How far the fake clock has moved.
    moved: Duration,
    lab_up: bool,
    probes_on: bool,
    router_died: Option<Exit>,
    /// Host ports another process takes between our pick and our check of them.
    taken_after_pick: Vec<u16>,
    /// Picks made so far: the fake picks 18080, 18081, ...
    picks: u16,
    /// Host ports whose UDP side another process holds.
    udp_taken: Vec<u16>,
}

impl Machine {
    /// A machine whose workers finish their drain at once.
    pub fn new() -> Self {
        let m = Machine::default();
        m.lock().drain_ends_workers = true;
        m
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().expect("the fake machine's lock")
    }

    fn note(&self, line: String) {
        self.lock().journal.push(line);
    }

    /// The runtime on this machine.
    pub fn runtime(&self) -> Runtime {
        Runtime {
            clock: Box::new(FakeClock {
                base: Instant::now(),
                m: self.clone(),
            }),
            children: Box::new(FakeChildren(self.clone())),
            network: Box::new(FakeNetwork(self.clone())),
            probes: Box::new(FakeProbes(self.clone())),
        }
    }

    /// `port`, once picked as free, is found taken when checked (another run took it).
    pub fn take_after_pick(&self, port: u16) {
        self.lock().taken_after_pick.push(port);
    }

    /// `port`'s UDP side is held by another process.
    pub fn take_udp(&self, port: u16) {
        self.lock().udp_taken.push(port);
    }

    /// Everything the controller did, in order.
    pub fn journal(&self) -> Vec<String> {
        self.lock().journal.clone()
    }

    /// Ends a running child (a crash, a kill).
    pub fn end(&self, name: &str, how: Exit) {
        self.note(format!("{name} ends: {how}"));
        *self
            .lock()
            .children
            .get_mut(name)
            .expect("a child that was started") = Some(how);
    }

    /// The delay router dies.
    pub fn router_dies(&self, how: Exit) {
        self.lock().router_died = Some(how);
    }

    /// `what` refuses to start from now on.
    pub fn refuse(&self, what: &str) {
        self.lock().refused.push(what.to_string());
    }

    /// Workers ignore the drain (something stays in flight) until they are stopped.
    pub fn workers_hold_on_drain(&self) {
        self.lock().drain_ends_workers = false;
    }

    /// How far the fake clock has moved since the start.
    pub fn moved(&self) -> Duration {
        self.lock().moved
    }

    /// What still runs: children, the lab, the probes.
    pub fn still_running(&self) -> Vec<String> {
        let g = self.lock();
        let mut left: Vec<String> = g
            .children
            .iter()
            .filter(|(_, ended)| ended.is_none())
            .map(|(n, _)| n.clone())
            .collect();
        if g.lab_up {
            left.push("lab".into());
        }
        if g.probes_on {
            left.push("probes".into());
        }
        left
    }

    fn refuses(&self, what: &str) -> bool {
        self.lock().refused.iter().any(|r| r == what)
    }
}

struct FakeClock {
    base: Instant,
    m: Machine,
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.base + self.m.moved()
    }
    fn sleep(&self, d: Duration) {
        self.m.lock().moved += d;
    }
    fn recv_until(&self, rx: &Receiver<Input>, deadline: Instant) -> Option<Input> {
        if let Ok(m) = rx.try_recv() {
            return Some(m);
        }
        // Nothing will come: the wait lasts to the deadline.
        let left = deadline.saturating_duration_since(self.now());
        self.sleep(left);
        None
    }
}

struct FakeChildren(Machine);

impl Children for FakeChildren {
    fn spawn(&self, name: &str, spawn: &Spawn, _on_line: OnLine) -> anyhow::Result<Box<dyn Child>> {
        let m = &self.0;
        if m.refuses(name) {
            m.note(format!("spawn {name} refused"));
            anyhow::bail!("{name} could not start (the fake refused it)");
        }
        let place = spawn
            .netns
            .as_ref()
            .map(|ns| format!(" in {ns}"))
            .unwrap_or_default();
        m.note(format!("spawn {name}{place}"));
        let mut g = m.lock();
        g.children.insert(name.to_string(), None);
        let pid = 1000 + g.children.len() as u32;
        Ok(Box::new(FakeChild {
            name: name.to_string(),
            pid,
            m: m.clone(),
        }))
    }
}

struct FakeChild {
    name: String,
    pid: u32,
    m: Machine,
}

impl Child for FakeChild {
    fn name(&self) -> &str {
        &self.name
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn send_line(&mut self, line: &str) -> std::io::Result<()> {
        if self.ended().is_some() {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        self.m.note(format!("{} <- {line}", self.name));
        let ends = match serde_json::from_str::<Control>(line) {
            Ok(Control::Drain) => self.m.lock().drain_ends_workers,
            Ok(Control::Stop) => true,
            _ => false,
        };
        if ends {
            self.m.end(&self.name, Exit::Code(0));
        }
        Ok(())
    }
    fn ended(&mut self) -> Option<Exit> {
        self.m.lock().children.get(&self.name).cloned().flatten()
    }
    fn stop(&mut self, _grace: Duration) {
        self.m.note(format!("stop {}", self.name));
        if self.ended().is_none() {
            self.m.end(&self.name, Exit::Signal(9, "SIGKILL".into()));
        }
    }
}

impl Drop for FakeChild {
    fn drop(&mut self) {
        // As a real child: one dropped while it runs is killed.
        if self.ended().is_none() {
            self.m.note(format!("kill {} (dropped)", self.name));
            self.m.end(&self.name, Exit::Signal(9, "SIGKILL".into()));
        }
    }
}

struct FakeNetwork(Machine);

impl Network for FakeNetwork {
    fn blocker(&self) -> Option<crate::lab::core::NoLab> {
        None
    }
    fn label(&self) -> String {
        "root".into()
    }
    fn others_running(&self) -> Option<String> {
        None
    }
    fn up(
        &self,
        spec: &NetworkSpec,
        run_id: &str,
        _placement: &Placement,
    ) -> anyhow::Result<Box<dyn Lab>> {
        let m = &self.0;
        if m.refuses("lab") {
            m.note("lab refused".into());
            anyhow::bail!("the fake lab could not come up");
        }
        let paths: Vec<LabPath> = spec
            .effective_paths()
            .iter()
            .enumerate()
            .map(|(i, p)| LabPath {
                name: p.name.clone(),
                share: p.share.unwrap_or(1.0),
                netns: format!("fake-{run_id}-c{i}"),
                addrs: vec![Ipv4Addr::new(198, 18, 1 + i as u8, 2)],
            })
            .collect();
        m.note(format!("lab up ({} path(s))", paths.len()));
        m.lock().lab_up = true;
        let layout = LabLayout {
            run_id: run_id.to_string(),
            backend: crate::net::plan::Backend::Router,
            server_netns: format!("fake-{run_id}-srv"),
            server_addr: Ipv4Addr::new(198, 18, 0, 1),
            server_dev: "veth-srv".into(),
            paths,
            leftovers_removed: Vec::new(),
            steer_refused: None,
        };
        Ok(Box::new(FakeLab {
            m: m.clone(),
            layout,
        }))
    }
    fn connect(&self, _addr: SocketAddr, _netns: Option<&str>) -> Result<(), std::io::ErrorKind> {
        Ok(())
    }
    fn port_free(&self, addr: SocketAddr) -> std::io::Result<()> {
        if self.0.lock().taken_after_pick.contains(&addr.port()) {
            return Err(std::io::ErrorKind::AddrInUse.into());
        }
        Ok(())
    }
    fn udp_port_free(&self, addr: SocketAddr) -> std::io::Result<()> {
        if self.0.lock().udp_taken.contains(&addr.port()) {
            return Err(std::io::ErrorKind::AddrInUse.into());
        }
        Ok(())
    }
    fn free_port(&self) -> anyhow::Result<u16> {
        let mut m = self.0.lock();
        m.picks += 1;
        Ok(18079 + m.picks)
    }
}

struct FakeLab {
    m: Machine,
    layout: LabLayout,
}

impl Lab for FakeLab {
    fn layout(&self) -> &LabLayout {
        &self.layout
    }
    fn steer(&self) -> Option<Steer> {
        None
    }
    fn set_steer(&mut self, steer: Steer) -> anyhow::Result<()> {
        self.m.note(format!("steer {}", steer.name()));
        Ok(())
    }
    fn set_path(&mut self, profile: &PathSpec) -> anyhow::Result<()> {
        self.m
            .note(format!("path {} rtt {}", profile.name, profile.rtt));
        Ok(())
    }
    fn set_syncookies(&mut self, value: u8) -> anyhow::Result<()> {
        self.m.note(format!("syncookies {value}"));
        Ok(())
    }
    fn client_active_opens(&self) -> anyhow::Result<u64> {
        Ok(0)
    }
    fn router_stats(&self) -> Option<RouterStats> {
        None
    }
    fn router_late_life(&self) -> (u64, u64) {
        (0, 0)
    }
    fn router_view(&self) -> RouterView {
        RouterView {
            latest: None,
            delay_us: Vec::new(),
            late_us: crate::metrics::hist::new_hist(),
        }
    }
    fn take_router_said(&self) -> Vec<String> {
        Vec::new()
    }
    fn router_death(&mut self) -> Option<Death> {
        let how = self.m.lock().router_died.clone()?;
        Some(Death {
            who: "the delay router".into(),
            pid: 999,
            how,
        })
    }
    fn netns_prefix(&self) -> String {
        format!("fake-{}-", self.layout.run_id)
    }
    fn down(self: Box<Self>) -> anyhow::Result<()> {
        // Dropping takes it down, as the real lab's drop does.
        Ok(())
    }
}

impl Drop for FakeLab {
    fn drop(&mut self) {
        self.m.note("lab down".into());
        self.m.lock().lab_up = false;
    }
}

struct FakeProbes(Machine);

impl Probes for FakeProbes {
    fn start(&self, cfg: ProbeConfig, _sink: ProbeSink) -> anyhow::Result<ProbesRunning> {
        let m = &self.0;
        if m.refuses("probes") {
            m.note("probes refused".into());
            anyhow::bail!("no permission for the fake probes");
        }
        let ns = cfg.netns.as_deref().unwrap_or("the host");
        m.note(format!("probes start on {ns} port {}", cfg.port));
        m.lock().probes_on = true;
        Ok(Box::new(ProbesGuard(m.clone())))
    }
}

struct ProbesGuard(Machine);

impl Drop for ProbesGuard {
    fn drop(&mut self) {
        self.0.note("probes stop".into());
        self.0.lock().probes_on = false;
    }
}
