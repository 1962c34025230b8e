//! Starting the target server (built-in, command, nginx/Apache) and following its access log.

use super::*;
use crate::lab::core::TargetUp;

impl Controller {
    pub(super) fn start_target(&mut self) -> anyhow::Result<()> {
        let t = self.scenario.target.clone();
        let server_netns = self.net.as_ref().map(|n| n.layout().server_netns.clone());
        let server_ip: IpAddr = match &self.net {
            Some(n) => IpAddr::V4(n.layout().server_addr),
            None => IpAddr::from([127, 0, 0, 1]),
        };
        let label;
        self.make_certificate(server_ip)?;
        match t.kind {
            TargetKind::Builtin => {
                let listen = self.server_addr(server_ip, t.port)?;
                let files = crate::lab::real_server::file_sets(&self.scenario);
                let cfg = ServeConfig {
                    listen,
                    arch: t.arch,
                    workers: t.workers,
                    max_workers: t.max_workers,
                    backlog: t.backlog as i32,
                    service_time_us: t.service_time.0.as_micros() as u64,
                    service: t.service,
                    files,
                    keepalive: t.keepalive || self.scenario.uses_keepalive(),
                    stats_interval_ms: 100,
                    accept_batch: 1,
                    lingering_close: t.lingering_close,
                    linger_timeout_ms: t.linger_timeout.0.as_millis() as u64,
                    tls: self.server_tls(),
                    max_streams: t.max_streams,
                    http3: t.http3.then(|| crate::target::config::Http3Options {
                        retry: t.quic_retry,
                        early_data: t.quic_early_data,
                        rcvbuf: t.rcvbuf.map(|b| b.0.min(u32::MAX as u64) as u32),
                    }),
                };
                crate::target::validate(&cfg)?;
                let tx = self.tx.clone();
                let spawn = Spawn {
                    args: vec![
                        "serve".into(),
                        "--config-json".into(),
                        serde_json::to_string(&cfg)?,
                    ],
                    cpus: self.placement.server.clone(),
                    netns: server_netns.clone(),
                    ..Default::default()
                };
                let on_line = Box::new(move |line: &str| {
                    if let Ok(s) = serde_json::from_str::<ServerStats>(line) {
                        let _ = tx.send(Input::Server(s));
                    } else if let Ok(n) =
                        serde_json::from_str::<crate::target::config::ServerNote>(line)
                    {
                        let _ = tx.send(Input::ServerNote(n.describe()));
                    }
                });
                let child = self.rt.children.spawn("server", &spawn, on_line)?;
                self.server_pid = Some(child.pid());
                self.server = Some(child);
                self.target_addr = listen;
                label = TargetUp::Builtin {
                    arch: t.arch,
                    listen,
                    service_time: t.service_time,
                    service: t.service,
                    backlog: t.backlog,
                    tls: t.tls,
                };
            }
            TargetKind::Command => {
                let addr = self.server_addr(server_ip, t.port)?;
                let cmdline = t.command.replace("{port}", &addr.port().to_string());
                let spawn = Spawn {
                    program: Some("/bin/sh".into()),
                    args: vec!["-c".into(), format!("exec {cmdline}")],
                    cpus: self.placement.server.clone(),
                    netns: server_netns.clone(),
                    output: self.target_log(),
                    ..Default::default()
                };
                let child = self
                    .rt
                    .children
                    .spawn("target command", &spawn, Box::new(|_| {}))?;
                self.server_pid = Some(child.pid());
                self.server = Some(child);
                self.target_addr = addr;
                label = TargetUp::Command { cmdline, addr };
            }
            TargetKind::Address => {
                self.target_addr = t.address.parse().context("target.address")?;
                // A named server process that is gone is said before any load.
                if let Some(pid) = t.pid {
                    self.server_pid = Some(crate::probe::sockdiag::running(pid)?);
                }
                label = TargetUp::Address(self.target_addr);
            }
            kind => {
                self.target_addr = self.server_addr(server_ip, t.port)?;
                let dir = self.recorder.dir().map(|d| d.join(kind.name()));
                let real = crate::lab::real_server::RealServer::prepare(
                    &self.scenario,
                    self.target_addr,
                    dir,
                    self.tls.as_ref().map(|t| t.files.clone()),
                )?;
                for r in &real.leftovers_removed {
                    let line = format!("removed a leftover of a crashed earlier run: {r}");
                    self.log(&line);
                    self.core.notice(line);
                }
                let child = real.start(server_netns.clone(), self.placement.server.clone())?;
                self.log(&format!("{}: {}", kind.name(), real.command));
                self.server_pid = Some(child.pid());
                self.server = Some(Box::new(child));
                label = TargetUp::Managed {
                    kind,
                    addr: self.target_addr,
                };
                self.access.path = Some(real.access_log.clone());
                self.real = Some(real);
            }
        }
        if !t.access_log.is_empty() {
            self.access.path = Some(PathBuf::from(&t.access_log));
        }
        self.ensure_lab_address()?;
        let up = self.wait_for_target(Duration::from_secs(10));
        if let (Err(e), Some(real)) = (&up, self.real.as_mut()) {
            bail!("{e:#}\n{}", real.start_failure());
        }
        up?;
        if let Err(e) = self.check_target_tls() {
            return Err(self.exited_at_start(e));
        }
        if let (Some(real), Some(pid)) = (&self.real, self.server_pid) {
            self.server_pid = Some(real.main_pid(pid));
        }
        if t.kind == TargetKind::Address {
            self.find_address_server(t.pid.is_some());
        }
        self.log(&format!("target: {label}"));
        self.fold_msg(Input::TargetUp(label));
        if let Some(path) = self.access.path.clone() {
            let tx = self.tx.clone();
            use crate::probe::accesslog::Listener;
            let listener = if t.tls {
                Listener::Https
            } else {
                Listener::Plain
            };
            self.access.follower = Some(crate::probe::accesslog::Follower::spawn(
                &path,
                listener,
                Duration::from_millis(100),
                move |t, c| {
                    let _ = tx.send(Input::AccessLog(t, c));
                },
            )?);
            self.log(&format!("counting the access log {}", path.display()));
            if let Some(issue) = crate::probe::accesslog::start_issue(&path, listener) {
                self.log(&format!("warning: before the run, {issue}"));
            }
        }
        if t.kind == TargetKind::Apache {
            let tx = self.tx.clone();
            let netns = self.net.as_ref().map(|n| n.layout().server_netns.clone());
            self.scoreboard = Some(crate::lab::real_server::status::StatusPoller::spawn(
                self.target_addr,
                netns,
                move |busy| {
                    let _ = tx.send(Input::Scoreboard { busy });
                },
            ));
            self.log("reading Apache's scoreboard (mod_status) for its busy workers");
        }
        Ok(())
    }

    /// A server at an address: its process, named (`target.pid`) or the one holding the
    /// port's listening socket, whose CPU and processes the probes then follow; said in
    /// run.log either way, and why not when it cannot be known.
    fn find_address_server(&mut self, named: bool) {
        use crate::probe::sockdiag::{listeners_in, port_owner, PortOwner};
        let port = self.target_addr.port();
        if named {
            if let Some(pid) = self.server_pid {
                self.log(&format!("target: server process pid {pid} (target.pid)"));
            }
            return;
        }
        let netns = self
            .net
            .as_ref()
            .map(|n| crate::sys::procfs::NetnsTarget::Named(n.layout().server_netns.clone()));
        let line = match listeners_in(netns).map(|l| port_owner(&l, port)) {
            Ok(PortOwner::Pid(pid)) => {
                self.server_pid = Some(pid);
                self.log(&format!(
                    "target: server process pid {pid} (it holds port {port}'s listening socket)"
                ));
                return;
            }
            Ok(owner) => format!(
                "the server's CPU and processes are not measured: {owner}; set target.pid = PID to name the server's process"
            ),
            Err(e) => format!(
                "the server's CPU and processes are not measured: its process could not be found from port {port} ({e}); set target.pid = PID"
            ),
        };
        self.log(&line);
        self.core.notice(line);
    }

    /// Whose the probes' figures are, for summary.json's `meta.probe_scope`: the target's
    /// port, and whether the probed namespace is the host's (shared with other servers) or the
    /// lab's server namespace (only the server).
    pub(super) fn probe_scope(&self, cfg: &crate::probe::ProbeConfig) -> serde_json::Value {
        let netns = self.probed_netns(cfg);
        serde_json::to_value(crate::model::ProbeScope {
            port: cfg.port,
            netns_shared: netns == crate::model::ProbedNetns::Host,
            netns: Some(netns),
        })
        .unwrap_or_default()
    }

    /// Scenario validation refuses an address outside the lab already; this guards every
    /// other path, before any traffic.
    fn ensure_lab_address(&self) -> anyhow::Result<()> {
        if !is_lab_address(self.target_addr.ip()) {
            bail!(
                "target {} is outside loopback and the lab's 198.18.0.0/15; synlab loads only its own host",
                self.target_addr
            );
        }
        Ok(())
    }

    /// Where a server we start listens: `target.port`, or with `port = 0` a free port on the
    /// host (8080 in the lab: a fresh namespace has every port free); checked free first.
    fn server_addr(&self, ip: IpAddr, port: u16) -> anyhow::Result<SocketAddr> {
        let port = match (port, &self.net) {
            (0, None) => return self.pick_free_addr(ip),
            (0, Some(_)) => 8080,
            (p, _) => p,
        };
        let addr = SocketAddr::new(ip, port);
        self.ensure_port_free(addr)?;
        Ok(addr)
    }

    /// The server we start listens on UDP at its port too: HTTP/3 (QUIC) beside TCP (Caddy
    /// over TLS serves h3 always; the built-in server with `http3 = true`).
    fn serves_udp(&self) -> bool {
        let t = &self.scenario.target;
        match t.kind {
            TargetKind::Builtin => t.tls && t.http3,
            TargetKind::Caddy => t.tls,
            _ => false,
        }
    }

    /// With `port = 0` on the host: a port of our own pick that the servers' own bind finds
    /// free. Another process may take a picked port before it is checked (other runs pick in
    /// the same range): that pick is dropped for the next, never reported as the user's port
    /// being in use (a CI run failed so, "target.port 27363 is already in use", with port 0).
    fn pick_free_addr(&self, ip: IpAddr) -> anyhow::Result<SocketAddr> {
        const TRIES: usize = 20;
        for _ in 0..TRIES {
            let addr = SocketAddr::new(ip, self.rt.network.free_port()?);
            let udp = || {
                if self.serves_udp() {
                    self.rt.network.udp_port_free(addr)
                } else {
                    Ok(())
                }
            };
            match self.rt.network.port_free(addr).and_then(|()| udp()) {
                Ok(()) => return Ok(addr),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(e).with_context(|| format!("checking that {addr} is free")),
            }
        }
        bail!("no free TCP port on {ip} for the server after {TRIES} picks: set target.port to one that is free")
    }

    /// A server we start must find its port free: otherwise it fails to listen while the
    /// start-up check connects to whatever holds the port, and the load would measure that.
    /// Over UDP too when it serves HTTP/3 there (Caddy, taking its TCP port first, fails on
    /// the UDP one after the start-up connect succeeded). Only on the host: a fresh server
    /// namespace has every port free.
    fn ensure_port_free(&self, addr: SocketAddr) -> anyhow::Result<()> {
        if self.net.is_some() {
            return Ok(());
        }
        // As the servers bind: SO_REUSEADDR, so TIME_WAIT from an earlier run does not count.
        match self.rt.network.port_free(addr) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => bail!(
                "target.port {} is already in use on {} (see `ss -ltnp 'sport = :{}'`); \
                 stop what listens there, or set `port = 0` to let synlab pick a free one",
                addr.port(),
                addr.ip(),
                addr.port()
            ),
            Err(e) => return Err(e).with_context(|| format!("checking that {addr} is free")),
        }
        if !self.serves_udp() {
            return Ok(());
        }
        match self.rt.network.udp_port_free(addr) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => bail!(
                "target.port {} is already in use on {} for UDP, where {} serves HTTP/3 (QUIC) \
                 beside TCP (see `ss -lunp 'sport = :{}'`); stop what holds it, or set \
                 `port = 0` to let synlab pick a free one",
                addr.port(),
                addr.ip(),
                match self.scenario.target.kind {
                    TargetKind::Builtin => "the built-in server",
                    _ => "Caddy",
                },
                addr.port()
            ),
            Err(e) => Err(e).with_context(|| format!("checking that UDP {addr} is free")),
        }
    }

    /// A start-up check failed against a real server we started (nginx, Apache, Caddy): if the
    /// server exits meanwhile, its own start-up errors are the reason, not the check's. Caddy
    /// listens on TCP before it fails to listen on UDP (`bind: address already in use`), so
    /// the start-up connect succeeds and the TLS or QUIC check then meets a server going away
    /// ("Connection reset by peer"). `e` as it is otherwise (the server runs on).
    pub(super) fn exited_at_start(&mut self, e: anyhow::Error) -> anyhow::Error {
        let (Some(server), Some(real)) = (self.server.as_mut(), self.real.as_mut()) else {
            return e;
        };
        let deadline = self.rt.clock.now() + EXIT_GRACE;
        let how = loop {
            if let Some(how) = server.ended() {
                break how;
            }
            if self.rt.clock.now() > deadline {
                return e;
            }
            self.rt.clock.sleep(Duration::from_millis(20));
        };
        anyhow::anyhow!(
            "the target server exited during start-up ({how}); see its messages below\n{}",
            real.start_failure()
        )
    }

    /// Where a target command's output goes: `target.log` in the run folder (None without
    /// one: then it shares our terminal).
    pub(super) fn target_log(&self) -> Option<std::path::PathBuf> {
        self.recorder.dir().map(|d| d.join("target.log"))
    }

    /// A target command's last lines in target.log, to say beside its start-up failure (as a
    /// real server's own words are): empty for other targets, or with nothing written.
    fn command_said(&self) -> String {
        const LAST: usize = 5;
        let Some(log) = self.target_log().filter(|_| self.real.is_none()) else {
            return String::new();
        };
        let last = crate::sys::files::last_lines(&log, LAST);
        if last.is_empty() {
            return String::new();
        }
        format!("\nits last words:\n  {}", last.join("\n  "))
    }

    /// Waits until the target accepts a connection; a clear error if it never does.
    pub(super) fn wait_for_target(&mut self, limit: Duration) -> anyhow::Result<()> {
        let deadline = self.rt.clock.now() + limit;
        loop {
            if let Some(s) = self.server.as_mut() {
                if let Some(st) = s.ended() {
                    bail!(
                        "the target server exited during start-up ({st}); see its messages {}{}",
                        // nginx and Apache write theirs in their own folder (said below).
                        match self.target_log().filter(|_| self.real.is_none()) {
                            Some(p) => format!("in {}", p.display()),
                            None if self.real.is_some() => "below".into(),
                            None => "above".into(),
                        },
                        self.command_said()
                    );
                }
            }
            let client_netns = self.client_netns();
            let tried = self
                .rt
                .network
                .connect(self.target_addr, client_netns.as_deref());
            match tried {
                Ok(()) => return Ok(()),
                // A server synlab did not start is up already or not at all: nothing listens
                // there, and waiting will not change it.
                Err(std::io::ErrorKind::ConnectionRefused) if self.server.is_none() => bail!(
                    "nothing listens at {} (connection refused): start the server there first, or correct target.address",
                    self.target_addr
                ),
                Err(_) => {}
            }
            if self.rt.clock.now() > deadline {
                bail!(
                    "the target at {} does not accept connections after {}s; is it running and listening there?{}",
                    self.target_addr,
                    limit.as_secs(),
                    self.command_said()
                );
            }
            self.rt.clock.sleep(Duration::from_millis(20));
        }
    }

    /// The namespace the start-up checks connect from: the lab's first client's (None: here).
    pub(super) fn client_netns(&self) -> Option<String> {
        let net = self.net.as_ref()?;
        net.layout().paths.first().map(|p| p.netns.clone())
    }

    /// The access log's path and its counts over the run, for summary.json.
    pub(super) fn access_summary(&self) -> Option<serde_json::Value> {
        let path = self.access.path.as_ref()?;
        let mut v = serde_json::json!({ "path": path.display().to_string() });
        if let Some(c) = self.core.access_counts() {
            v["run"] = serde_json::to_value(c).unwrap_or_default();
        }
        if !self.access.points.is_empty() {
            let points = self.access.points.iter().map(|(n, c)| {
                let mut p = serde_json::to_value(c).unwrap_or_default();
                p["point"] = (*n).into();
                p
            });
            v["points"] = points.collect();
        }
        Some(v)
    }

    /// Keeps summary point `n`'s access-log counts, the window that just ended (with the
    /// log's lines they came from: meta.access_log.points).
    pub(crate) fn keep_point_access(&mut self, n: usize) {
        if let Some(c) = self.core.point_access_counts() {
            self.access.points.push((n, c));
        }
    }
}

/// How long a real server whose start-up check failed has to exit, if it is exiting.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A free port for a server we start, below the kernel's ephemeral range: a port the kernel
/// handed out as ephemeral (bind to port 0) is soon another connection's local port (our own
/// load's, on loopback), and the server's bind then fails with the port in use.
pub(super) fn free_port() -> anyhow::Result<u16> {
    let low = crate::sys::procfs::ephemeral_low().unwrap_or(32768);
    let below = below_ephemeral(low);
    let start = rand::random::<u16>() as usize;
    for i in 0..below.len() {
        let port = below.start + ((start + i) % below.len()) as u16;
        // As the servers bind (SO_REUSEADDR, listening).
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        if crate::sys::server_io::bind_listener(addr, 1).is_ok() {
            return Ok(port);
        }
    }
    // No room below the range (it starts low): the kernel's pick.
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

/// The ports tried for a server: up to 10,000 below the ephemeral range's `low`, above the
/// well-known and common service ports.
fn below_ephemeral(low: u16) -> std::ops::Range<u16> {
    let floor = 10_000u16.max(low.saturating_sub(10_000));
    floor..low.max(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in server over HTTP/3 listens on UDP at its port too: a fixed port whose UDP
    /// side is taken is refused before the server starts (before, the server was started and
    /// the start-up TLS or QUIC check met whatever held the port).
    #[test]
    fn a_fixed_port_taken_on_udp_is_refused_when_the_server_serves_http3() {
        let port = 18443;
        let mut sc = crate::scenario::default_scenario();
        sc.load.workers = 1;
        sc.network = None;
        sc.target.port = port;
        sc.target.tls = true;
        sc.target.arch = crate::target::config::Arch::Event;
        sc.target.http3 = true;
        sc.load.http = HttpVersion::Http3;
        let m = super::super::fakes::Machine::new();
        m.take_udp(port);
        let opts = RunOptions {
            out_parent: None,
            interrupted: Arc::default(),
            network_fallback: false,
            metrics: None,
        };
        let err = Controller::start_on(sc, opts, m.runtime())
            .err()
            .expect("the start is refused");
        let msg = format!("{err:#}");
        assert!(
            msg.contains(&format!(
                "target.port {port} is already in use on 127.0.0.1 for UDP, where the built-in server serves HTTP/3"
            )),
            "{msg}"
        );
        let j = m.journal();
        assert!(!j.iter().any(|l| l.starts_with("spawn")), "{j:#?}");
    }

    #[test]
    fn a_server_port_is_picked_below_the_ephemeral_range() {
        assert_eq!(below_ephemeral(32768), 22768..32768);
        assert_eq!(below_ephemeral(15000), 10000..15000);
        assert!(below_ephemeral(2000).is_empty());
        let p = free_port().unwrap();
        let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(low <= 10_000 || p < low, "port {p}, ephemeral from {low}");
    }
}
