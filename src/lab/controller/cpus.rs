//! The server's CPUs apart from the load's: where each runs (the placement, settled once the
//! lab is up or not), the controller's own threads kept off the server's CPUs, and the server
//! settings a sweep changes live (receive steering, SYN cookies, the listen backlog).

use super::*;
use crate::lab::state::CpuView;
use crate::model::{Placement, Steer};

impl Controller {
    /// Settles where the server and the load run (the lab may have fallen back to loopback),
    /// moves the controller's thread off the server's CPUs (its readers and probes, started
    /// from it, follow), and says so in run.log, the state and summary.json's meta.
    pub(super) fn place_on_cpus(&mut self) {
        let in_lab = self.net.is_some();
        let sc = &self.scenario;
        self.placement = Placement::resolve(
            &sc.target.cpus,
            &sc.load.cpus,
            in_lab,
            &crate::sys::machine::online_cpus(),
        );
        crate::sys::process::thread_avoid_cpus(&self.probe_avoid_cpus());
        let line = format!("cpus: {}", self.placement.describe());
        self.log(&line);
        let (steer, refused) = match &self.net {
            Some(n) => (n.steer(), n.layout().steer_refused.clone()),
            None => (None, None),
        };
        if let Some(why) = &refused {
            let line = format!("receive steering refused, running as steer = \"sender\": {why}");
            self.log(&line);
            self.core.notice(line);
        } else if let Some(s) = steer {
            self.log(&format!("receive steering: {}", steer_line(s)));
        }
        self.set_cpu_view(steer, refused);
    }

    fn set_cpu_view(&mut self, steer: Option<Steer>, steer_refused: Option<String>) {
        let p = &self.placement;
        let view = CpuView {
            server: p.server.clone(),
            load: p.load.clone(),
            line: p.describe(),
            steer,
            steer_refused,
        };
        self.recorder.meta(
            "cpus",
            serde_json::json!({
                "server": view.server,
                "load": view.load,
                "split": view.line,
                "steer": view.steer.map(|s| s.name()),
                "steer_refused": view.steer_refused,
            }),
        );
        self.fold_msg(Input::Cpus(view));
    }

    /// The CPUs the controller's threads (probes included) keep off
    /// (`Placement::measuring_avoids`).
    pub(super) fn probe_avoid_cpus(&self) -> Vec<usize> {
        self.placement
            .measuring_avoids(&crate::sys::machine::online_cpus())
    }

    /// The server's and the load's CPUs for the probes' per-set figures (none: no split).
    pub(super) fn probe_cores(&self) -> crate::probe::Cores {
        if !self.placement.is_split() {
            return Default::default();
        }
        crate::probe::Cores {
            server: self.placement.server.clone(),
            load: self.placement.load.clone(),
        }
    }

    /// A sweep point's steering, changed live (root only: the kernel refuses it rootless).
    pub fn set_steer(&mut self, steer: Steer) -> anyhow::Result<()> {
        let net = self
            .net
            .as_mut()
            .context("receive steering needs the network lab ([network])")?;
        if net.steer() == Some(steer) {
            return Ok(());
        }
        net.set_steer(steer)?;
        self.log(&format!("receive steering: {}", steer_line(steer)));
        self.set_cpu_view(Some(steer), None);
        Ok(())
    }

    /// A sweep point's `net.ipv4.tcp_syncookies` in the server's namespace.
    pub fn set_syncookies(&mut self, value: u8) -> anyhow::Result<()> {
        self.net
            .as_mut()
            .context("tcp_syncookies is set in the lab's server namespace ([network])")?
            .set_syncookies(value)?;
        self.log(&format!(
            "server namespace: net.ipv4.tcp_syncookies = {value}"
        ));
        Ok(())
    }

    /// A sweep point's listen backlog: the built-in server listens again with it.
    pub fn set_backlog(&mut self, backlog: u32) -> anyhow::Result<()> {
        if self.scenario.target.kind != TargetKind::Builtin {
            bail!("only the built-in server changes its listen backlog live");
        }
        let line = serde_json::to_string(&crate::target::config::ServerControl {
            backlog: Some(backlog),
        })?;
        self.server
            .as_mut()
            .context("the server is not running")?
            .send_line(&line)
            .context("sending the backlog to the server (has it exited?)")?;
        Ok(())
    }
}

fn steer_line(s: Steer) -> &'static str {
    match s {
        Steer::Server => "server (RPS: the server's namespace receives on the server's CPUs, the router's end of its link on the load's)",
        Steer::Sender => "sender (no RPS: each packet is received on the CPU that sent it)",
    }
}
