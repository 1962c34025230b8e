//! The probe threads: a sampler that reads every cheap source each interval and builds samples,
//! and (when privileged) a capture thread. Both live in the server's network namespace (they
//! setns themselves only). Dropping the [`ProbeHandle`] stops and joins them.

use super::sample::{build, CaptureTotals, HostConsts, ProbeSample, Snapshot};
use super::sockdiag::{state, states_mask, DiagSummary, SERVER_STATES};
use super::{cpustat, procnet};
use crate::sys::pcap::CaptureCounters;
use crate::sys::pidstat;
use crate::sys::privilege::Privileges;
use crate::sys::procfs::{self, NetnsTarget, ProcFile};
use crate::sys::sockdiag::SockDiag;
use anyhow::{bail, Context};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What to probe and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    pub interval: Duration,
    /// The server's listening port (sock_diag and pcap filter on it).
    pub port: u16,
    /// The server process: its netns, /proc/PID/net, and its process family's CPU/RSS.
    pub server_pid: Option<u32>,
    /// A named netns (/run/netns/NAME) to probe; wins over the pid's netns.
    pub netns: Option<String>,
    /// The server-side interface to capture on (`lo` in loopback mode).
    pub iface: String,
    /// Capture control packets with pcap (needs CAP_NET_RAW); false forces the kernel estimate.
    pub pcap: bool,
    /// CPUs the probe threads keep off: the load workers' (`load.cpus`), so measuring does not
    /// take time from the load. The capture thread alone took ~1 % of the generator's core at
    /// 40,000 connections/s on loopback, ~9 % at 500,000 SYN/s.
    pub avoid_cpus: Vec<usize>,
    /// Count the port's own TIME_WAIT sockets in the state walk (`synlab probe`, where the
    /// namespace holds other ports' too). Each one crosses to user space (~0.7 µs apiece), so
    /// the lab, whose server namespace holds only the server, reads the namespace's count.
    pub port_time_wait: bool,
    /// The server's CPUs and the load's, whose splits the samples give apart (the lab's
    /// placement; empty: no split).
    pub cores: super::sample::Cores,
    /// Count the kernel's own drop reasons (root; off by default for their cost).
    pub kernel_reasons: super::kreasons::Switch,
}

impl ProbeConfig {
    /// Defaults: 200 ms, loopback, pcap on.
    pub fn new(port: u16) -> Self {
        ProbeConfig {
            interval: Duration::from_millis(200),
            port,
            server_pid: None,
            netns: None,
            iface: "lo".into(),
            pcap: true,
            avoid_cpus: Vec::new(),
            port_time_wait: false,
            cores: Default::default(),
            kernel_reasons: Default::default(),
        }
    }

    fn netns_target(&self) -> Option<NetnsTarget> {
        match (&self.netns, self.server_pid) {
            (Some(n), _) => Some(NetnsTarget::Named(n.clone())),
            (None, Some(p)) => Some(NetnsTarget::OfPid(p)),
            (None, None) => None,
        }
    }
}

/// The running probes; dropping it stops the threads and waits for them.
#[derive(Debug)]
pub struct ProbeHandle {
    /// The capture thread's stop (it checks between blocks of packets).
    stop: Arc<AtomicBool>,
    /// The sampler's: dropped to stop it, so it sleeps until its next sample instead of
    /// waking every 50 ms to look at a flag (it runs beside the load it measures). std's
    /// channel: crossbeam's blocking receive yields the CPU four times before it sleeps.
    sampler_stop: Option<std::sync::mpsc::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl ProbeHandle {
    /// Stops and joins now (same as dropping).
    pub fn stop(self) {}
}

impl Drop for ProbeHandle {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        self.sampler_stop = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// How often the server's process family is re-listed (listing walks task/*/children).
const FAMILY_REFRESH: Duration = Duration::from_secs(2);

/// The socket-state walk (any state but LISTEN) makes the kernel scan the whole established
/// hash, shared by all namespaces and TIME_WAIT included: measured 5-30 ms on our machines
/// even with no sockets in the probed netns, depending on what the rest of the machine holds
/// (one walk covers both families: `SockDiag::dump`). It runs at most once per this share of
/// time (cost / budget), so it stays under 0.5 % of a core; samples between walks leave the
/// state counts empty, and a point's summary says how many walks its means are over
/// (`states_samples`). The LISTEN query (accept queue) is cheap and runs every sample.
const STATE_WALK_BUDGET: f64 = 0.005;
const STATE_WALK_MAX_GAP: Duration = Duration::from_secs(5);

/// How long after a walk that took `took` the next one is due: its cost over the budget, at
/// least one sample interval, at most [`STATE_WALK_MAX_GAP`], in whole samples (walks fall on
/// samples, so this is the pace the note states and the sampler keeps).
fn walk_gap(took: Duration, interval: Duration) -> Duration {
    let want = took
        .div_f64(STATE_WALK_BUDGET)
        .clamp(interval, STATE_WALK_MAX_GAP.max(interval));
    let samples = (want.as_secs_f64() / interval.as_secs_f64() - 1e-9).ceil();
    interval.mul_f64(samples)
}

/// The port's socket states are walked less often than the samples are taken: most samples
/// leave those figures empty, and the probe says so (once) rather than leaving `-` unexplained.
#[derive(Debug, Clone, PartialEq)]
pub struct PacedOut {
    pub port: u16,
    /// What one walk took.
    pub took: Duration,
    /// How often the walk runs.
    pub every: Duration,
    pub interval: Duration,
    /// The port's TIME_WAIT is among the states walked.
    pub time_wait: bool,
}

impl PacedOut {
    /// The note for a walk that took `took`, None when the walk keeps up with the samples.
    pub fn of(port: u16, took: Duration, interval: Duration, time_wait: bool) -> Option<Self> {
        let every = walk_gap(took, interval);
        (every > interval).then_some(PacedOut {
            port,
            took,
            every,
            interval,
            time_wait,
        })
    }
}

impl std::fmt::Display for PacedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "port {}'s socket states (SYN-RCVD, ESTABLISHED, the closing states{}) are counted \
             every {:.1} s, not every {} ms sample: one walk of the kernel's socket table took \
             {:.1} ms (it walks every socket of the machine), and walks are spaced to cost at \
             most {} % of a core, so about {} in {} samples leave them empty (-); the accept \
             queue and the listen drops are read every sample",
            self.port,
            if self.time_wait { ", TIME_WAIT" } else { "" },
            self.every.as_secs_f64(),
            self.interval.as_millis(),
            self.took.as_secs_f64() * 1000.0,
            STATE_WALK_BUDGET * 100.0,
            (self.every.as_secs_f64() / self.interval.as_secs_f64()).round() as u64 - 1,
            (self.every.as_secs_f64() / self.interval.as_secs_f64()).round() as u64,
        )
    }
}

/// Where the sampler delivers its samples: a channel, or a closure (the lab wraps them into
/// its one inbox). False means nobody listens any more: the sampler stops.
pub trait SampleSink: Send + 'static {
    fn deliver(&mut self, sample: ProbeSample) -> bool;
}

impl SampleSink for crossbeam_channel::Sender<ProbeSample> {
    fn deliver(&mut self, sample: ProbeSample) -> bool {
        self.send(sample).is_ok()
    }
}

impl<F: FnMut(ProbeSample) -> bool + Send + 'static> SampleSink for F {
    fn deliver(&mut self, sample: ProbeSample) -> bool {
        self(sample)
    }
}

/// Starts the probes with this process's privileges. The first sample sets the baselines.
pub fn spawn(cfg: ProbeConfig, sink: impl SampleSink) -> anyhow::Result<ProbeHandle> {
    spawn_with(cfg, Privileges::current(), sink)
}

/// Like [`spawn`] with given privileges (tests use it to take the no-pcap path).
pub fn spawn_with(
    cfg: ProbeConfig,
    privs: Privileges,
    mut sink: impl SampleSink,
) -> anyhow::Result<ProbeHandle> {
    if cfg.interval < Duration::from_millis(10) {
        bail!(
            "probe interval {:?} is too short; use at least 10ms (default 200ms)",
            cfg.interval
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (sampler_stop, stopped) = std::sync::mpsc::channel::<()>();
    let mut handle = ProbeHandle {
        stop: stop.clone(),
        sampler_stop: Some(sampler_stop),
        threads: Vec::new(),
    };
    let mut notes = Vec::new();
    let target = cfg.netns_target();

    let capture = if !cfg.pcap {
        notes.push(
            "pcap off: SYN rate estimated from kernel counters (PassiveOpens + ListenDrops)"
                .to_string(),
        );
        None
    } else if !privs.net_raw {
        notes.push("no pcap (needs CAP_NET_RAW): SYN rate estimated from kernel counters (PassiveOpens + ListenDrops); SYN-ACK/RST/retransmitted-SYN counts unavailable".to_string());
        None
    } else {
        let counters = Arc::new(CaptureCounters::default());
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let (c, s, t, iface, port, avoid) = (
            counters.clone(),
            stop.clone(),
            target.clone(),
            cfg.iface.clone(),
            cfg.port,
            cfg.avoid_cpus.clone(),
        );
        let th = std::thread::Builder::new()
            .name("probe-pcap".into())
            .spawn(move || {
                crate::sys::process::thread_avoid_cpus(&avoid);
                let opened = t
                    .as_ref()
                    .map_or(Ok(()), procfs::enter_netns)
                    .map_err(|e| format!("cannot enter the server's netns: {e}"))
                    .and_then(|_| crate::sys::pcap::open(&iface, port).map_err(|e| e.to_string()));
                match opened {
                    Ok(mut cap) => {
                        let _ = ready_tx.send(Ok(cap.note.take()));
                        cap.run(c, s);
                    }
                    Err(e) => _ = ready_tx.send(Err(e)),
                }
            })?;
        handle.threads.push(th);
        match ready_rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(note)) => {
                notes.extend(note);
                Some(counters)
            }
            Ok(Err(e)) => {
                notes.push(format!(
                    "no pcap on {} ({e}): SYN rate estimated from kernel counters",
                    cfg.iface
                ));
                None
            }
            Err(_) => {
                notes.push(format!(
                    "no pcap on {}: capture did not start within 5 s; SYN rate estimated",
                    cfg.iface
                ));
                None
            }
        }
    };

    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let th = std::thread::Builder::new()
        .name("probe-sampler".into())
        .spawn(move || {
            crate::sys::process::thread_avoid_cpus(&cfg.avoid_cpus);
            let (mut sampler, base) = match Sampler::open(target.as_ref(), capture) {
                Ok((mut s, mut open_notes)) => {
                    notes.append(&mut open_notes);
                    // The base of every total is read before `spawn` returns: a caller that
                    // starts load right after (the lab starts its workers) has every SYN of
                    // it counted, however late this thread is scheduled afterwards.
                    let base = (Instant::now(), s.snapshot(&cfg));
                    let _ = ready_tx.send(Ok(()));
                    (s, base)
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            sampler.run(&cfg, base, &mut sink, stopped, notes);
        })?;
    handle.threads.push(th);
    match ready_rx.recv_timeout(Duration::from_secs(5)) {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => Err(e),
        Err(_) => bail!("the probe sampler did not start within 5 s"),
    }
}

/// The sources the sampler thread holds open.
struct Sampler {
    snmp: Option<ProcFile>,
    netstat: Option<ProcFile>,
    sockstat: Option<ProcFile>,
    stat: Option<ProcFile>,
    softirqs: Option<ProcFile>,
    diag: Option<SockDiag>,
    rmem_max: Option<ProcFile>,
    capture: Option<Arc<CaptureCounters>>,
    family: Vec<u32>,
    /// The family's /proc/<pid>/stat files, open from one refresh to the next.
    family_stat: Vec<ProcFile>,
    /// This process's /proc/self/stat (the probes' own CPU), open for the run.
    self_stat: Option<ProcFile>,
    family_at: Option<Instant>,
    /// When the next walk of the socket states is due.
    states_due: Option<Instant>,
    notes: OnceNotes,
}

/// Problems said once each (by key), held until the next sample carries them.
#[derive(Default)]
struct OnceNotes {
    said: std::collections::HashSet<&'static str>,
    pending: Vec<String>,
}

impl OnceNotes {
    fn warn(&mut self, key: &'static str, msg: impl FnOnce() -> String) {
        if self.said.insert(key) {
            self.pending.push(msg());
        }
    }
}

/// Reads a /proc file (when it is open) and parses it; a failure leaves the value missing and is
/// noted once under `key` as "`what` unavailable: the error".
fn read_parsed<T>(
    file: Option<&mut ProcFile>,
    notes: &mut OnceNotes,
    key: &'static str,
    what: &str,
    parse: impl FnOnce(&str) -> anyhow::Result<T>,
) -> Option<T> {
    match file?.read().map_err(anyhow::Error::from).and_then(parse) {
        Ok(v) => Some(v),
        Err(e) => {
            notes.warn(key, || format!("{what} unavailable: {e:#}"));
            None
        }
    }
}

impl Sampler {
    fn open(
        target: Option<&NetnsTarget>,
        capture: Option<Arc<CaptureCounters>>,
    ) -> anyhow::Result<(Self, Vec<String>)> {
        let mut notes = Vec::new();
        if let Some(t) = target {
            procfs::enter_netns(t).with_context(|| {
                format!("cannot enter netns {} (entering another namespace needs CAP_SYS_ADMIN; is the name/pid right?)", t.path().display())
            })?;
        }
        // The namespace this thread is in now (the target's): /proc/PID/net would be the
        // namespace of the pid's main thread, which need not be the probed one (a process
        // found by its socket, as `synlab probe --netns N --port P` does, can live elsewhere).
        let net = procfs::net_dir();
        let mut open = |p: std::path::PathBuf| match ProcFile::open(&p) {
            Ok(f) => Some(f),
            Err(e) => {
                notes.push(format!(
                    "{} unreadable ({e}): its metrics are missing",
                    p.display()
                ));
                None
            }
        };
        let snmp = open(net.join("snmp"));
        let netstat = open(net.join("netstat"));
        let sockstat = open(net.join("sockstat"));
        let stat = open(procfs::STAT.into());
        let softirqs = open(procfs::SOFTIRQS.into());
        let self_stat = open(procfs::pid_stat_path(None));
        let rmem_max = open(crate::sys::udpdiag::RMEM_MAX.into());
        let diag = match SockDiag::open() {
            Ok(d) => Some(d),
            Err(e) => {
                notes.push(format!(
                    "no sock_diag ({e}): accept queue and socket states are missing"
                ));
                None
            }
        };
        let s = Sampler {
            rmem_max,
            snmp,
            netstat,
            sockstat,
            stat,
            softirqs,
            self_stat,
            family_stat: Vec::new(),
            diag,
            capture,
            family: Vec::new(),
            family_at: None,
            states_due: None,
            notes: OnceNotes::default(),
        };
        Ok((s, notes))
    }

    fn snapshot(&mut self, cfg: &ProbeConfig) -> Snapshot {
        let mut s = Snapshot::empty(Instant::now());
        // The counters rates are made of first, next to the time stamp: the socket walk
        // below takes milliseconds, and a thread that shares its CPU with the load may be
        // preempted for tens, which read after the stamp would put into the wrong interval.
        s.capture = self.capture_totals();
        let notes = &mut self.notes;
        if let Some(netstat) = self.netstat.as_mut() {
            s.net = read_parsed(self.snmp.as_mut(), notes, "net", "TCP counters", |snmp| {
                Ok(procnet::NetCounters::parse(snmp, netstat.read()?)?)
            });
        }
        s.sockstat = read_parsed(self.sockstat.as_mut(), notes, "sockstat", "sockstat", |t| {
            Ok(procnet::SockStat::parse(t)?)
        });
        s.stat = read_parsed(self.stat.as_mut(), notes, "stat", procfs::STAT, |t| {
            Ok(cpustat::ProcStat::parse(t)?)
        });
        s.softirqs = read_parsed(
            self.softirqs.as_mut(),
            notes,
            "softirqs",
            procfs::SOFTIRQS,
            |t| Ok(cpustat::SoftIrqs::parse(t)?),
        );
        if let Some(pid) = cfg.server_pid {
            s.server = self.server_procs(pid);
        }
        if cfg.port != 0 {
            s.diag = self.diag_summary(cfg, s.at);
            s.udp = self.udp_port(cfg.port);
        }
        s.rmem_max = self
            .rmem_max
            .as_mut()
            .and_then(|f| f.read().ok()?.trim().parse().ok());
        let pcap_cpu = self.capture.as_ref().map_or(0, |c| c.cpu_us.load(Relaxed));
        s.probe_cpu_us = procfs::thread_cpu_us() + pcap_cpu;
        s.self_ticks = self
            .self_stat
            .as_mut()
            .and_then(|f| pidstat::PidStat::parse(f.read().ok()?).ok())
            .map(|p| p.utime + p.stime);
        s
    }

    /// The server port's UDP sockets (sock_diag), None when it has none (a TCP-only server).
    fn udp_port(&mut self, port: u16) -> Option<super::sample::UdpPort> {
        match self.diag.as_mut()?.udp_sockets(port) {
            Ok(socks) => super::sample::UdpPort::of(&socks),
            Err(e) => {
                self.notes.warn("udpdiag", || {
                    format!("sock_diag of UDP sockets failed: {e}")
                });
                None
            }
        }
    }

    /// The server port's sockets from sock_diag: the listeners every time, all server states
    /// when a walk is due (walks are spaced so they take at most their budget of the time).
    fn diag_summary(&mut self, cfg: &ProbeConfig, sampled_at: Instant) -> Option<DiagSummary> {
        let d = self.diag.as_mut()?;
        let walk_states = self.states_due.is_none_or(|t| Instant::now() >= t);
        let mask = match (walk_states, cfg.port_time_wait) {
            (true, true) => states_mask(&SERVER_STATES) | states_mask(&[state::TIME_WAIT]),
            (true, false) => states_mask(&SERVER_STATES),
            (false, _) => states_mask(&[state::LISTEN]),
        };
        let t0 = Instant::now();
        // A walk asks each socket's tcp_info too: the connections' queues and the accept
        // queue's ages come from the same walk of the kernel's hash (one, not four).
        let socks = if walk_states {
            d.dump_with_info(mask, cfg.port)
        } else {
            d.dump(mask, cfg.port)
        };
        match socks {
            Ok(socks) => {
                // Without a walk only the listeners are in: the state counts stay
                // unreported (not the last walk's, repeated).
                let mut sum = DiagSummary {
                    states_fresh: walk_states,
                    time_wait_walked: walk_states && cfg.port_time_wait,
                    ..Default::default()
                };
                sum.add(&socks);
                if walk_states {
                    // The established connections' queues and retransmissions (tcp_info), and
                    // the ages of the connections waiting to be accepted (issue 48 item 3).
                    sum.conns = Some(crate::sys::conn_queues::ConnQueues::of(&socks));
                    let ages = crate::sys::acceptq::waiting_ages(&socks);
                    sum.waiting = Some(crate::model::acceptq::QueueAges::of(&ages));
                    let took = t0.elapsed();
                    let gap = walk_gap(took, cfg.interval);
                    // Due from the sample's own instant, a quarter interval early: the walk
                    // starts after the /proc reads, whose time varies, and a due time a
                    // millisecond past the next sample's walk would skip a sample the budget
                    // allows (a walk every interval read `-` in one sample of two).
                    // Walks fall on samples: the first sample at least `gap` on, so the
                    // budget holds.
                    let samples = (gap.as_secs_f64() / cfg.interval.as_secs_f64()).round();
                    self.states_due =
                        Some(sampled_at + cfg.interval.mul_f64(samples) - cfg.interval / 4);
                    if let Some(p) = PacedOut::of(cfg.port, took, cfg.interval, cfg.port_time_wait)
                    {
                        self.notes.warn("paced", || p.to_string());
                    }
                }
                if sum.listeners.is_empty() {
                    self.notes.warn("nolisten", || {
                        format!(
                            "no listening TCP socket on port {} in the probed netns",
                            cfg.port
                        )
                    });
                }
                Some(sum)
            }
            Err(e) => {
                self.notes
                    .warn("diag", || format!("sock_diag query failed: {e}"));
                None
            }
        }
    }

    /// The server's process family (refreshed every [`FAMILY_REFRESH`]) as read now; none
    /// when every process is gone.
    fn server_procs(&mut self, pid: u32) -> Option<Vec<pidstat::PidStat>> {
        if self.family_at.is_none_or(|t| t.elapsed() >= FAMILY_REFRESH) {
            self.family = procfs::process_family(pid);
            self.family_at = Some(Instant::now());
            // Kept open until the next refresh: one read per process per sample, no open.
            self.family_stat = self
                .family
                .iter()
                .filter_map(|&p| ProcFile::open(procfs::pid_stat_path(Some(p))).ok())
                .collect();
        }
        let procs: Vec<_> = self
            .family_stat
            .iter_mut()
            .filter_map(|f| pidstat::PidStat::parse(f.read().ok()?).ok())
            .collect();
        if procs.is_empty() {
            self.notes.warn("server", || {
                format!("server pid {pid} is gone: its CPU and memory are missing")
            });
            None
        } else {
            Some(procs)
        }
    }

    /// The capture thread's counts so far.
    fn capture_totals(&mut self) -> Option<CaptureTotals> {
        let c = self.capture.as_ref()?;
        if c.failed.load(Relaxed) {
            self.notes.warn("pcapfail", || {
                "pcap capture stopped on an error: SYN counts freeze".into()
            });
        }
        Some(CaptureTotals {
            syn_in: c.syn_in.load(Relaxed),
            syn_retrans: c.syn_retrans.load(Relaxed),
            synack_out: c.synack_out.load(Relaxed),
            rst_in: c.rst_in.load(Relaxed),
            rst_out: c.rst_out.load(Relaxed),
            initial_in: c.initial_in.load(Relaxed),
            initial_repeat: c.initial_repeat.load(Relaxed),
            received: c.received.load(Relaxed),
            dropped: c.dropped.load(Relaxed),
            if_dropped: c.if_dropped.load(Relaxed),
        })
    }

    /// Samples from `(start, base)`, the first snapshot, until `stopped` disconnects or the
    /// sink is gone.
    fn run(
        &mut self,
        cfg: &ProbeConfig,
        (start, base): (Instant, Snapshot),
        sink: &mut dyn SampleSink,
        stopped: std::sync::mpsc::Receiver<()>,
        mut notes: Vec<String>,
    ) {
        let k = HostConsts {
            clk_tck: procfs::clock_ticks(),
            page_size: procfs::page_size(),
        };
        let mut prev: Option<Snapshot> = None;
        let mut seq = 0u64;
        let mut cur = base.clone();
        // The kernel's own drop reasons (issue 48 item 2), counted as root while the switch
        // is on: said off in the notes at the start, else opened at the first sample.
        let mut reasons = super::kreasons::Counting::off();
        let overflows = |s: &Snapshot| s.net.as_ref()?.counter(super::kreasons::LISTEN_OVERFLOWS);
        if !cfg.kernel_reasons.on() {
            notes.push(crate::model::kreasons::NotCounted::Off.to_string());
        }
        // Root in synlab's own user namespace (rootless) cannot open machine-wide perf
        // events nor mount tracefs: only the host's root counts the kernel's reasons.
        let root = crate::sys::userns::host_root();
        loop {
            if let Some(line) = reasons.follow(
                cfg.kernel_reasons.on(),
                || super::kreasons::ReasonCounters::start(root),
                overflows(&cur),
            ) {
                notes.push(line);
            }
            let mut sample = build(&base, prev.as_ref(), &cur, start, seq, k, &cfg.cores);
            sample.kernel = Some(super::kreasons::view(
                &reasons.counters,
                reasons.overflows_base,
                overflows(&cur),
            ));
            notes.append(&mut self.notes.pending);
            sample.notes = std::mem::take(&mut notes);
            if !sink.deliver(sample) {
                return;
            }
            seq += 1;
            // Absolute schedule: a slow sample does not shift the following ones.
            let due = start + cfg.interval * seq as u32;
            let wait = due.saturating_duration_since(Instant::now());
            if let Err(std::sync::mpsc::RecvTimeoutError::Disconnected) = stopped.recv_timeout(wait)
            {
                return;
            }
            prev = Some(cur);
            cur = self.snapshot(cfg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sampler sleeps until its next sample (no 50 ms look at a flag): dropping the probes
    /// must still stop it then, not at its next sample an hour on. No privilege needed: no
    /// capture, this process's own namespace.
    #[test]
    fn dropping_the_probes_stops_the_sampler_between_samples() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut cfg = ProbeConfig::new(listener.local_addr().unwrap().port());
        cfg.interval = Duration::from_secs(3600);
        cfg.pcap = false;
        let (tx, rx) = crossbeam_channel::unbounded();
        let handle = spawn_with(cfg, Privileges::current(), tx).unwrap();
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the first sample comes at once");
        // Dropped on another thread, so a sampler that did wait an hour fails the test
        // instead of hanging it.
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(handle);
            let _ = done_tx.send(());
        });
        done.recv_timeout(Duration::from_secs(60))
            .expect("dropping the probes stops the sampler before its next sample");
        assert!(rx.try_recv().is_err(), "no sample after the stop");
    }

    #[test]
    fn a_paced_out_walk_is_said_with_its_cost_and_pace() {
        let ms = Duration::from_millis;
        // 0.5 ms a walk: 100 ms of budget, every 200 ms sample walks; nothing to say.
        assert_eq!(
            PacedOut::of(80, Duration::from_micros(500), ms(200), true),
            None
        );
        // 10 ms a walk: every 2 s, so 9 in 10 samples have no state counts.
        let p = PacedOut::of(8080, ms(10), ms(200), true).unwrap();
        assert_eq!(p.every, ms(2000));
        let t = p.to_string();
        for want in [
            "port 8080",
            "TIME_WAIT",
            "every 2.0 s",
            "took 10.0 ms",
            "0.5 %",
            "9 in 10",
        ] {
            assert!(t.contains(want), "{want} in {t}");
        }
        // 1.1 ms a walk wants 220 ms: every second sample, said so (not "every 0.2 s").
        let p = PacedOut::of(8080, Duration::from_micros(1100), ms(200), false).unwrap();
        assert_eq!(p.every, ms(400));
        assert!(p.to_string().contains("every 0.4 s"), "{p}");
        assert!(p.to_string().contains("1 in 2 samples"), "{p}");
        // Never rarer than every 5 s.
        assert_eq!(
            PacedOut::of(1, ms(500), ms(200), false).unwrap().every,
            ms(5000)
        );
    }
}
