//! The lab as the controller uses it: `Lab::up` checks privileges, picks the backend, applies
//! the plan, starts the delay router, and returns a `LabNet` that knows every name and address,
//! changes paths live (a router change holds once the router answers it), keeps the router's
//! latest stats and what else it said, and tears everything down on drop.

use crate::metrics::hist::{self, HistDelta};
use crate::net::plan::{self, Backend, Plan};
use crate::net::router::{Answer, AnswerLine, ControlMsg, RouterStats};
use crate::net::spec::{BackendChoice, NetworkSpec, PathSpec};
use crate::sys::netns::{self, TopologyGuard};
use crate::sys::privilege::Privileges;
use crate::sys::process::{ChildProc, Spawn};
use anyhow::{bail, Context};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One path of a running lab.
#[derive(Debug, Clone)]
pub struct LabPath {
    pub name: String,
    /// Relative weight of the path in the offered load (as configured, not normalised).
    pub share: f64,
    pub netns: String,
    pub addrs: Vec<Ipv4Addr>,
}

/// Router stats as the controller sees them: the latest line, plus realised delays merged
/// over the lab's life per path and direction.
#[derive(Debug, Clone)]
pub struct RouterView {
    pub latest: Option<RouterStats>,
    /// Per path: (client->server, server->client) realised delay histograms, microseconds.
    pub delay_us: Vec<(hdrhistogram::Histogram<u64>, hdrhistogram::Histogram<u64>)>,
    pub late_us: hdrhistogram::Histogram<u64>,
}

impl RouterView {
    fn new(n: usize) -> Self {
        RouterView {
            latest: None,
            delay_us: (0..n)
                .map(|_| (hist::new_hist(), hist::new_hist()))
                .collect(),
            late_us: hist::new_hist(),
        }
    }

    fn fold(&mut self, s: RouterStats) {
        for (i, p) in s.paths.iter().enumerate() {
            if let Some((up, down)) = self.delay_us.get_mut(i) {
                p.up.delay_us.merge_into(up);
                p.down.delay_us.merge_into(down);
            }
        }
        s.late_us.merge_into(&mut self.late_us);
        self.latest = Some(s);
    }
}

/// A running lab. Drop (or `down`) stops the router and deletes every namespace.
pub struct LabNet {
    pub run_id: String,
    pub backend: Backend,
    pub server_netns: String,
    pub server_addr: Ipv4Addr,
    pub router_netns: String,
    pub paths: Vec<LabPath>,
    /// What was removed of crashed earlier runs before this lab was built.
    pub leftovers_removed: Vec<String>,
    /// Where the server's receive processing runs now (None: no CPU split to steer by).
    pub steer: Option<crate::model::Steer>,
    /// Why the kernel would not steer it, when `[network] steer = "server"` asked for it.
    pub steer_refused: Option<String>,
    plan: Plan,
    // Field order matters: the router goes before its interfaces.
    router: Option<ChildProc>,
    view: Arc<Mutex<RouterView>>,
    /// The router's answers to control lines, in order.
    answers: crossbeam_channel::Receiver<Answer>,
    /// The id of the last control line sent.
    last_id: u64,
    /// What the router wrote that is neither stats nor an awaited answer (its last error, an
    /// answer that came too late), for run.log.
    said: Arc<Mutex<Vec<String>>>,
    guard: TopologyGuard,
}

/// How long a path change waits for the router's answer (it answers as it reads the line).
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// Entry point for the controller.
pub struct Lab;

static NETEM: OnceLock<bool> = OnceLock::new();

/// Whether the kernel has sch_netem (probed once per process).
pub fn netem_available() -> bool {
    *NETEM.get_or_init(netns::netem_available)
}

/// The backend `choice` means on this machine.
pub fn resolve_backend(choice: BackendChoice) -> Backend {
    match choice {
        BackendChoice::Netem => Backend::Netem,
        BackendChoice::Router => Backend::Router,
        BackendChoice::None => Backend::None,
        BackendChoice::Auto if netem_available() => Backend::Netem,
        BackendChoice::Auto => Backend::Router,
    }
}

impl Lab {
    /// Builds the lab for `spec` under `run_id` (see `plan::new_run_id`), with no CPU split.
    pub fn up(spec: &NetworkSpec, run_id: &str) -> anyhow::Result<LabNet> {
        let unsplit = crate::model::Placement::resolve(&[], &[], false, &[]);
        Lab::up_placed(spec, run_id, &unsplit)
    }

    /// [`Lab::up`] with the run's CPU placement: the delay router runs on the load's CPUs and,
    /// with `steer = "server"`, the server's receive processing is steered to its CPUs.
    pub fn up_placed(
        spec: &NetworkSpec,
        run_id: &str,
        placement: &crate::model::Placement,
    ) -> anyhow::Result<LabNet> {
        if let Some(missing) = Privileges::current().lab_missing() {
            bail!("{missing}");
        }
        plan::check_run_id(run_id)?;
        spec.validate().map_err(plan::PlanError::Spec)?;
        let backend = resolve_backend(spec.backend);
        if backend == Backend::Netem && spec.backend == BackendChoice::Netem && !netem_available() {
            bail!("backend = \"netem\" but this kernel has no sch_netem (modprobe sch_netem, or use backend = \"router\" / \"auto\")");
        }
        let steering =
            (placement.is_split() && !placement.load.is_empty()).then(|| plan::RxSteering {
                server: placement.server.clone(),
                load: placement.load.clone(),
            });
        let asked = steering
            .as_ref()
            .filter(|_| spec.steer == crate::model::Steer::Server)
            .cloned();
        let plan = plan::plan_steered(spec, run_id, backend, asked)?;
        let leftovers_removed = netns::remove_dead_labs();
        let guard = netns::apply(&plan.run_id, plan.kernel_ops())?;
        let steer_refused = guard.steer_refused.clone();
        let steer = steering.as_ref().map(|_| match steer_refused {
            Some(_) => crate::model::Steer::Sender,
            None => spec.steer,
        });
        let view = Arc::new(Mutex::new(RouterView::new(plan.paths.len())));
        let (answer_tx, answers) = crossbeam_channel::unbounded();
        let said = Arc::new(Mutex::new(Vec::new()));
        let mut lab = LabNet {
            run_id: run_id.to_string(),
            backend,
            server_netns: plan.server.netns.clone(),
            server_addr: plan.server.addr,
            router_netns: plan.router_netns.clone(),
            paths: plan
                .paths
                .iter()
                .map(|p| LabPath {
                    name: p.name.clone(),
                    share: p.share,
                    netns: p.netns.clone(),
                    addrs: p.addrs.clone(),
                })
                .collect(),
            leftovers_removed,
            steer,
            steer_refused,
            plan: plan::Plan { steering, ..plan },
            router: None,
            view,
            answers,
            last_id: 0,
            said: said.clone(),
            guard,
        };
        if let Some(plan::StartRouter { netns, config }) = lab.plan.router() {
            let v = lab.view.clone();
            let child = ChildProc::spawn(
                "the delay router",
                &Spawn {
                    program: router_program(),
                    args: vec![
                        "router".into(),
                        "--config-json".into(),
                        serde_json::to_string(config)?,
                    ],
                    netns: Some(netns.clone()),
                    cpus: placement.load.clone(),
                    // Its last error (and a panic) would land on the TUI's terminal.
                    stderr_to_stdout: true,
                    ..Default::default()
                },
                move |line| {
                    if let Ok(a) = serde_json::from_str::<AnswerLine>(line) {
                        let _ = answer_tx.send(a.answer);
                    } else if let Ok(s) = serde_json::from_str::<RouterStats>(line) {
                        v.lock().unwrap().fold(s);
                    } else if !line.trim().is_empty() {
                        said.lock().unwrap().push(line.to_string());
                    }
                },
            )?;
            lab.router = Some(child);
            lab.wait_router_ready()?;
        }
        Ok(lab)
    }
}

/// The program that runs `router`: our own binary, or `SYNLAB_EXE` (integration tests run
/// from a test harness binary and point it at the synlab binary).
fn router_program() -> Option<String> {
    std::env::var("SYNLAB_EXE").ok().filter(|s| !s.is_empty())
}

impl LabNet {
    /// Waits for the router's first stats line (its sockets are open by then).
    fn wait_router_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.view.lock().unwrap().latest.is_some() {
                return Ok(());
            }
            if let Some(st) = self.router.as_mut().and_then(|r| r.try_wait()) {
                // Its reader may still hold the last lines: stop joins it.
                if let Some(mut r) = self.router.take() {
                    r.stop(Duration::from_millis(100));
                }
                let said = self.take_router_said().join(" / ");
                bail!("the delay router exited at start ({st}): {said}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("the delay router did not report within 5 s")
    }

    /// The start of every name of this lab's namespaces (what `synlab net down` matches).
    pub fn netns_prefix(&self) -> String {
        netns::lab_prefix(&self.run_id)
    }

    /// The plan this lab was built from.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The path named `name`.
    pub fn path(&self, name: &str) -> Option<&LabPath> {
        self.paths.iter().find(|p| p.name == name)
    }

    /// Puts path `profile.name` under `profile` live (router: a control line; netem: `tc
    /// qdisc change` on both ends, or a new qdisc when a raise would leave a stale queue: see
    /// [`netem_apply`]). The lab keeps no profile of its own: its caller owns it (the plan's
    /// copy follows the changes, so netem knows the rate its queue was timed at).
    pub fn set_path(&mut self, profile: &PathSpec) -> anyhow::Result<()> {
        let name = &profile.name;
        let i = self
            .paths
            .iter()
            .position(|p| &p.name == name)
            .with_context(|| {
                let names: Vec<&str> = self.paths.iter().map(|p| p.name.as_str()).collect();
                format!("no path `{name}` in the lab (paths: {})", names.join(", "))
            })?;
        match self.backend {
            Backend::Router => {
                self.last_id += 1;
                let msg = ControlMsg {
                    id: self.last_id,
                    path: profile.clone(),
                };
                self.router
                    .as_mut()
                    .context("the delay router is not running")?
                    .send_line(&serde_json::to_string(&msg)?)
                    .context("sending the change to the delay router (has it exited?)")?;
                match self.router_answer(msg.id)? {
                    Answer::Applied { .. } => {}
                    Answer::Refused { why, .. } => return Err(why.into()),
                }
            }
            Backend::Netem => {
                let args = plan::netem_args(profile);
                let p = &self.plan.paths[i];
                for (ns, dev) in [
                    (&self.plan.router_netns, &p.router_port),
                    (&p.netns, &p.dev),
                ] {
                    if let Some(note) = netem_apply(ns, dev, &args, &p.spec, profile)? {
                        self.said.lock().unwrap().push(note);
                    }
                }
                self.plan.paths[i].spec = profile.clone();
            }
            Backend::None => {
                bail!("backend \"none\" does not shape; use backend = \"router\" or \"netem\"")
            }
        }
        Ok(())
    }

    /// Waits for the router's answer to control line `id`; earlier answers (of a change that
    /// timed out) go to what it said.
    fn router_answer(&mut self, id: u64) -> anyhow::Result<Answer> {
        let deadline = Instant::now() + ANSWER_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .answers
                .recv_timeout(left.min(Duration::from_millis(50)))
            {
                Ok(a) if a.id() == id => return Ok(a),
                Ok(a) => self
                    .said
                    .lock()
                    .unwrap()
                    .push(format!("a late answer: {a}")),
                Err(_) if left.is_zero() => bail!(
                    "the delay router did not answer the change within {} s (is it stuck?)",
                    ANSWER_WAIT.as_secs()
                ),
                Err(_) => {
                    if let Some(st) = self.router.as_mut().and_then(|r| r.try_wait()) {
                        bail!("the delay router exited ({st}) before it answered the change");
                    }
                }
            }
        }
    }

    /// What the router wrote besides its stats and awaited answers since the last call (its
    /// last error, late answers), oldest first.
    pub fn take_router_said(&self) -> Vec<String> {
        std::mem::take(&mut *self.said.lock().unwrap())
    }

    /// Steers the server's receive processing live (a sweep's point): RPS on the server's
    /// link, its own end to the server's CPUs and the router's end to the load's (`sender`:
    /// neither). Root only: rootless, the kernel refuses (see [`netns::set_rps_cpus`]).
    pub fn set_steer(&mut self, steer: crate::model::Steer) -> anyhow::Result<()> {
        use crate::model::cpus::cpu_mask_hex;
        let Some(st) = &self.plan.steering else {
            bail!("the server has no CPUs of its own in this lab (no CPU split), so there is nothing to steer to");
        };
        let (server, load) = match steer {
            crate::model::Steer::Server => (cpu_mask_hex(&st.server), cpu_mask_hex(&st.load)),
            crate::model::Steer::Sender => ("0".to_string(), "0".to_string()),
        };
        netns::set_rps_cpus(&self.plan.server.netns, &self.plan.server.dev, &server)?;
        netns::set_rps_cpus(
            &self.plan.router_netns,
            &self.plan.router_server_port,
            &load,
        )?;
        self.steer = Some(steer);
        self.steer_refused = None;
        Ok(())
    }

    /// The router's latest stats line (None for netem/none or before the first line).
    pub fn router_stats(&self) -> Option<RouterStats> {
        self.view.lock().unwrap().latest.clone()
    }

    /// The router's departure error over the lab's life: (p99 in us, departures), read in
    /// place (no copy of the delay histograms).
    pub fn router_late_life(&self) -> (u64, u64) {
        let v = self.view.lock().unwrap();
        (v.late_us.value_at_quantile(0.99), v.late_us.len())
    }

    /// Latest stats plus realised delay histograms merged since the lab came up.
    pub fn router_view(&self) -> RouterView {
        self.view.lock().unwrap().clone()
    }

    /// Clears the merged delay histograms (e.g. between sweep points), in place: their
    /// buckets are kept, not allocated again.
    pub fn reset_router_histograms(&self) {
        let mut v = self.view.lock().unwrap();
        for (up, down) in &mut v.delay_us {
            up.reset();
            down.reset();
        }
        v.late_us.reset();
    }

    /// Router pid (for the controller's process table).
    pub fn router_pid(&self) -> Option<u32> {
        self.router.as_ref().map(|r| r.pid())
    }

    /// If the delay router has died: who and how ("the delay router (pid N) was killed by
    /// signal 9 (SIGKILL)"). None while it runs, and for netem/none.
    pub fn router_death(&mut self) -> Option<crate::model::death::Death> {
        self.router.as_mut().and_then(|r| r.death())
    }

    /// Stops the router and deletes the namespaces, reporting errors.
    pub fn down(mut self) -> anyhow::Result<()> {
        if let Some(mut r) = self.router.take() {
            r.stop(Duration::from_millis(500));
        }
        self.guard.teardown()
    }

    /// Leaves the lab up after this process exits (`synlab net up`); returns the namespaces.
    pub fn leak(mut self) -> Vec<String> {
        // The router would die with us (PDEATHSIG): `net up` only leaves unshaped links up
        // unless the router is run by hand in the router netns.
        if let Some(mut r) = self.router.take() {
            r.stop(Duration::from_millis(200));
        }
        std::mem::take(&mut self.guard).leak()
    }
}

impl Drop for LabNet {
    fn drop(&mut self) {
        if let Some(mut r) = self.router.take() {
            r.stop(Duration::from_millis(200));
        }
        // guard drops after this, deleting the namespaces.
    }
}

/// A root qdisc as `tc -s -j qdisc show` lists it (what [`netem_apply`] reads).
#[derive(Debug, PartialEq, serde::Deserialize)]
struct RootQdisc {
    handle: String,
    #[serde(default)]
    backlog: u64,
    #[serde(default)]
    qlen: u64,
}

fn parse_root_qdisc(json: &str) -> Option<RootQdisc> {
    serde_json::from_str::<Vec<RootQdisc>>(json)
        .ok()?
        .into_iter()
        .next()
}

/// Puts `dev`'s netem under `args` (path `was` -> `now`): `tc qdisc change`, unless the rate
/// rises over a queue netem timed at the old rate ([`plan::netem_queue_is_stale`]). Then a
/// new qdisc replaces it at once (another handle: `replace` with the same one would only
/// change it), so the path carries traffic at the new rate now, as a raised link would, and
/// the old queue's packets are dropped; the note for run.log says how many.
fn netem_apply(
    ns: &str,
    dev: &str,
    args: &[String],
    was: &PathSpec,
    now: &PathSpec,
) -> anyhow::Result<Option<String>> {
    let (old_bps, new_bps) = (was.bandwidth.map(|b| b.0), now.bandwidth.map(|b| b.0));
    let root = crate::net::shaper::bandwidth_raised(old_bps, new_bps)
        .then(|| parse_root_qdisc(&netns::root_qdisc_json(ns, dev)?))
        .flatten();
    let one_way = was.rtt.0 / 2;
    let Some(q) = root.filter(|q| plan::netem_queue_is_stale(old_bps, new_bps, q.backlog, one_way))
    else {
        netns::netem_change(ns, dev, args)?;
        return Ok(None);
    };
    let handle = if q.handle == "1:" { "2:" } else { "1:" };
    netns::netem_replace(ns, dev, handle, args)?;
    let old = was.bandwidth.map_or("unlimited".into(), |b| b.to_string());
    Ok(Some(format!(
        "netem on {dev} ({ns}): bandwidth raised from {old}: a new qdisc replaced the one \
         whose queue was timed at {old} ({} packets, {} bytes, {:.1} s at {old}), so they \
         would not hold the path; they were dropped",
        q.qlen,
        q.backlog,
        q.backlog as f64 * 8.0 / old_bps.unwrap_or(1).max(1) as f64,
    )))
}

/// Merges a stats delta into a histogram (re-exported for callers folding their own lines).
pub fn merge(delta: &HistDelta, into: &mut hdrhistogram::Histogram<u64>) {
    delta.merge_into(into);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_qdisc_is_read_from_tc_json() {
        let json = r#"[{"kind":"netem","handle":"8001:","root":true,"refcnt":2,"options":{"limit":20,"delay":{"delay":0.01},"rate":{"rate":3500}},"bytes":1480,"packets":20,"drops":7,"overlimits":0,"requeues":0,"backlog":1480,"qlen":20}]"#;
        assert_eq!(
            parse_root_qdisc(json),
            Some(RootQdisc {
                handle: "8001:".into(),
                backlog: 1480,
                qlen: 20
            })
        );
        assert_eq!(parse_root_qdisc(""), None);
        assert_eq!(parse_root_qdisc("[]"), None);
    }
}
