//! `synlab net up|down|status` and the hidden `synlab router`.

use crate::model::units::Dur;
use crate::net::lab::Lab;
use crate::net::plan;
use crate::net::router::RouterConfig;
use crate::net::spec::{NetworkSpec, PathSpec};
use crate::sys::netns;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Flags of `synlab net`.
#[derive(Debug, clap::Args)]
pub struct NetArgs {
    #[command(subcommand)]
    pub cmd: NetCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum NetCmd {
    /// Bring a scenario's topology up and leave it up (for debugging with `ip netns exec`).
    /// Without a scenario: two paths, `lan` (no delay) and `wan` (--rtt).
    Up {
        scenario: Option<PathBuf>,
        /// RTT of the `wan` path of the built-in example.
        #[arg(long, default_value = "100ms", value_parser = Dur::parse)]
        rtt: Dur,
        /// Run id (1-5 lowercase letters/digits); a fresh one by default.
        #[arg(long)]
        run_id: Option<String>,
    },
    /// Remove every synlab namespace and link on this machine (leftovers of crashed runs), and
    /// stop the synlab processes in them.
    Down {
        /// Only this run's namespaces and links.
        #[arg(long)]
        run_id: Option<String>,
    },
    /// List synlab's namespaces, links and processes on this machine.
    Status,
}

/// Just the `[network]` section of a scenario file (other sections are the scenario loader's).
#[derive(serde::Deserialize)]
struct NetworkOnly {
    #[serde(default)]
    network: NetworkSpec,
}

/// Reads the `[network]` section of a scenario file.
pub fn load_network(path: &Path) -> anyhow::Result<NetworkSpec> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let w: NetworkOnly =
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if let Err(errs) = w.network.validate() {
        let lines: Vec<String> = errs.iter().map(|e| format!("  {e}")).collect();
        anyhow::bail!(
            "{}: invalid [network]:\n{}",
            path.display(),
            lines.join("\n")
        );
    }
    Ok(w.network)
}

/// The built-in example for `net up` without a scenario.
pub fn example_spec(rtt: Dur) -> NetworkSpec {
    NetworkSpec {
        paths: vec![
            PathSpec {
                name: "lan".into(),
                ..Default::default()
            },
            PathSpec {
                name: "wan".into(),
                rtt,
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

pub fn net_main(args: NetArgs) -> anyhow::Result<()> {
    match args.cmd {
        NetCmd::Up {
            scenario,
            rtt,
            run_id,
        } => {
            let spec = match &scenario {
                Some(p) => load_network(p)?,
                None => example_spec(rtt),
            };
            if !crate::sys::userns::host_root() {
                anyhow::bail!(
                    "`synlab net up` leaves a lab standing after it exits, which needs root (sudo synlab net up). \
                     Without root, `synlab tui` and `synlab run` build the same lab in their own user namespace, \
                     for as long as they run"
                );
            }
            let run_id = run_id.unwrap_or_else(plan::new_run_id);
            let lab = Lab::up(&spec, &run_id)?;
            let backend = lab.backend;
            let router = lab
                .plan()
                .router()
                .map(|r| (r.netns.clone(), r.config.clone()));
            let server = (lab.server_netns.clone(), lab.server_addr);
            let paths = lab.paths.clone();
            let profiles = spec.effective_paths();
            lab.leak();
            if let Some((ns, cfg)) = router {
                let cfg = RouterConfig {
                    detached: true,
                    ..cfg
                };
                let pid = crate::sys::netns::spawn_detached(
                    &ns,
                    &[
                        "router".into(),
                        "--config-json".into(),
                        serde_json::to_string(&cfg)?,
                    ],
                )?;
                println!("delay router: pid {pid} in netns {ns} (stops when the lab goes down)");
            }
            println!("lab {run_id} is up (backend: {backend})");
            println!("server: netns {}  address {}", server.0, server.1);
            for (p, profile) in paths.iter().zip(&profiles) {
                let a: Vec<String> = p.addrs.iter().map(|a| a.to_string()).collect();
                println!(
                    "path {:<8} rtt {:<8} netns {}  addresses {}",
                    p.name,
                    profile.rtt.to_string(),
                    p.netns,
                    a.join(" ")
                );
            }
            if let Some(p) = paths.last() {
                println!(
                    "try:  ip netns exec {} python3 -m http.server 80 --bind {} &\n      ip netns exec {} curl -o /dev/null -w '%{{time_connect}}\\n' http://{}/",
                    server.0, server.1, p.netns, server.1
                );
            }
            println!("remove with: synlab net down");
            Ok(())
        }
        NetCmd::Down { run_id } => {
            let prefix = match run_id {
                Some(id) => {
                    plan::check_run_id(&id)?;
                    format!("{}{id}-", plan::PREFIX)
                }
                None => plan::PREFIX.to_string(),
            };
            // Processes first: a process in a namespace keeps it alive after `ip netns del`.
            let stopped = netns::stop_lab_processes(&prefix, Duration::from_secs(1));
            for p in &stopped {
                println!("stopped {p}");
            }
            let removed = netns::cleanup_matching(&prefix)?;
            if removed.is_empty() && stopped.is_empty() {
                println!("nothing of synlab's on this machine");
            }
            for r in removed {
                println!("removed {r}");
            }
            Ok(())
        }
        NetCmd::Status => {
            let (nss, links) = netns::list_leftovers();
            let procs = netns::synlab_processes();
            let dirs = netns::temp_dirs(&std::env::temp_dir());
            if nss.is_empty() && links.is_empty() && procs.is_empty() && dirs.is_empty() {
                println!("no synlab namespaces, links, folders or processes on this machine");
            }
            for d in dirs {
                let owner = if d.gone {
                    "  (its run has exited: a leftover, removed by the next run)"
                } else {
                    ""
                };
                println!("dir   {}{owner}", d.path.display());
            }
            for n in nss {
                let owner = match netns::run_id_of(&n).and_then(netns::owner_gone) {
                    Some(true) => "  (its run has exited: a leftover)",
                    _ => "",
                };
                println!("netns {n}{owner}");
            }
            for l in links {
                println!("link  {l}");
            }
            let (rootless, procs): (Vec<_>, Vec<_>) = procs.into_iter().partition(|p| p.rootless);
            for top in rootless
                .iter()
                .filter(|p| !rootless.iter().any(|q| q.pid == p.ppid))
            {
                let n = rootless.iter().filter(|q| q.ppid == top.pid).count();
                println!(
                    "rootless lab of pid {} `{}` (+{n} child process(es), in its own user namespace: its namespaces vanish with its processes, nothing to clean up)",
                    top.pid, top.command
                );
            }
            for p in procs {
                let stray = if p.in_deleted_netns || (p.ppid == 1 && p.netns.is_none()) {
                    "  (stray)"
                } else {
                    ""
                };
                println!("proc  {p}{stray}");
            }
            Ok(())
        }
    }
}

/// Runs the delay router (hidden subcommand) from its JSON configuration.
pub fn router_main(config_json: &str) -> anyhow::Result<()> {
    let cfg: RouterConfig =
        serde_json::from_str(config_json).context("parsing the router's --config-json")?;
    crate::net::router::run(&cfg)
}
