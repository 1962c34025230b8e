//! The delay router (`synlab router`, run by the lab in the router netns): relays frames
//! between each client-side port and the server-side port at layer 2 (ARP included), holding
//! each frame until the departure time its path's shaper gives it, and reports counters and
//! realised delays as JSON lines on stdout. Live changes arrive as JSON lines on stdin, and
//! each is answered on stdout (`{"answer":{"applied":..}}` or `{"answer":{"refused":..}}`,
//! between the stats lines), so the lab holds a change only once the router has it; stdin EOF
//! stops it. The router writes nothing else: the lab starts it with its stderr on the same
//! pipe, so even its last error reaches run.log, never the TUI's terminal.
//!
//! Frames from a client port go to the server port through that path's `up` shaper. Frames
//! from the server port go to the client port whose source MAC matched their destination
//! (learned from client frames) through that path's `down` shaper; broadcasts and unknown
//! destinations are flooded to every client port. Client ports never reach each other.

use crate::metrics::hist::{self, HistDelta};
use crate::net::shaper::{DirParams, Shaper, Verdict};
use crate::net::spec::PathSpec;
use crate::net::wake::{may_defer_rx, next_step, Next, WakeStats, MAX_BATCH};
use crate::sys::packet::{self, PacketPort, Poller, Timer};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// A client-side port and its path profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterPort {
    pub dev: String,
    pub path: PathSpec,
}

/// What the lab passes to `synlab router --config-json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    pub server_port: String,
    pub ports: Vec<RouterPort>,
    pub stats_interval_ms: u64,
    /// Left running by `synlab net up`: no stdin to watch; stops when its ports disappear.
    #[serde(default)]
    pub detached: bool,
}

/// A live change on stdin: the path's whole new profile, named by its `name`, and the number
/// the answer carries back (`{"id":3,"path":{"name":"dsl","rtt":"20ms",...}}`; 0: none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlMsg {
    #[serde(default)]
    pub id: u64,
    pub path: PathSpec,
}

/// Why the router did not take a control line: the line run.log and the TUI show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum ControlRefusal {
    /// Not a control line this router reads (a controller of another build?).
    #[error("the delay router could not read the change `{line}` ({error}); are the controller and the router the same build (SYNLAB_EXE)?")]
    Unreadable { line: String, error: String },
    /// A path the router does not relay.
    #[error("the delay router has no path `{path}` (its paths: {}); it was started for another lab", .known.join(", "))]
    NoPath { path: String, known: Vec<String> },
    /// A profile the lab could not have been built with (the `[[network.path]]` rules).
    #[error("the delay router will not put path `{path}` under that profile: {}", .problems.join("; "))]
    Profile { path: String, problems: Vec<String> },
}

/// The router's answer to one control line, by the line's `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The path's shapers have the new profile: frames arriving from now on get it.
    Applied { id: u64, path: String },
    /// Nothing changed, and why.
    Refused { id: u64, why: ControlRefusal },
}

impl Answer {
    pub fn id(&self) -> u64 {
        match self {
            Answer::Applied { id, .. } | Answer::Refused { id, .. } => *id,
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Applied { id, path } => write!(f, "change {id}: path `{path}` applied"),
            Answer::Refused { id, why } => write!(f, "change {id} refused: {why}"),
        }
    }
}

/// An answer as the router writes it on stdout: `{"answer":{...}}` (a stats line has no
/// `answer`, an answer line nothing else).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerLine {
    pub answer: Answer,
}

/// Counters of one direction of a path. Counters are totals since start; `delay_us` holds
/// the realised delays (arrival to send) recorded since the previous stats line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirStats {
    pub relayed: u64,
    pub bytes: u64,
    pub lost: u64,
    pub queue_drops: u64,
    pub send_errors: u64,
    /// Frames in the bottleneck queue now.
    pub queue: u64,
    /// Frames held by the router now (queue plus delay line).
    pub in_flight: u64,
    pub delay_us: HistDelta,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathStats {
    pub name: String,
    /// Client -> server.
    pub up: DirStats,
    /// Server -> client.
    pub down: DirStats,
}

/// One stats line of the router.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouterStats {
    /// Milliseconds since the router started.
    pub t_ms: u64,
    pub paths: Vec<PathStats>,
    /// How far each send time was from its scheduled departure, late or early (frames of one
    /// wake-up's window leave up to half the window ahead), since the previous line.
    pub late_us: HistDelta,
    /// Router CPU time (user + system) since start, in microseconds.
    pub cpu_us: u64,
    /// Whether the router got SCHED_FIFO (timing holds on a busy host).
    #[serde(default)]
    pub realtime: bool,
    /// Frames the kernel dropped because a port's receive ring was full (the router fell
    /// behind), since start.
    #[serde(default)]
    pub ring_drops: u64,
}

/// The departure error (send time minus scheduled departure, p99) the router aims to stay
/// under; past it, the run says its delays are shaped less exactly than configured.
pub const LATE_GOAL_US: u64 = 200;

/// Hard cap on frames held per direction (delay line included), so memory stays bounded
/// whatever the configured delay and input rate.
const MAX_HELD: u64 = 200_000;
/// Frames taken from one port's receive ring per wake-up, so one busy port cannot starve
/// departures or the other ports.
const RX_PER_WAKE: usize = 256;
const UP: usize = 0;
const DOWN: usize = 1;

struct Held {
    depart: u64,
    arrived: u64,
    path: usize,
    dir: usize,
    frame: Vec<u8>,
}

/// The relay's state apart from sockets: shapers, held frames, MAC table, counters.
struct Relay {
    names: Vec<String>,
    shapers: Vec<[Shaper; 2]>,
    /// By (departure, arrival order).
    held: BTreeMap<(u64, u64), Held>,
    seq: u64,
    mac_path: HashMap<[u8; 6], usize>,
    stats: Vec<[DirStats; 2]>,
    delay: Vec<[hdrhistogram::Histogram<u64>; 2]>,
    late: hdrhistogram::Histogram<u64>,
    pool: Vec<Vec<u8>>,
}

impl Relay {
    fn new(cfg: &RouterConfig, seed: u64) -> Self {
        let n = cfg.ports.len();
        Relay {
            names: cfg.ports.iter().map(|p| p.path.name.clone()).collect(),
            shapers: cfg
                .ports
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let d = DirParams::from_path(&p.path);
                    let s = seed.wrapping_add(i as u64 * 2);
                    [Shaper::new(d, s), Shaper::new(d, s + 1)]
                })
                .collect(),
            held: BTreeMap::new(),
            seq: 0,
            mac_path: HashMap::new(),
            stats: vec![Default::default(); n],
            delay: (0..n)
                .map(|_| [hist::new_hist(), hist::new_hist()])
                .collect(),
            late: hist::new_hist(),
            pool: Vec::new(),
        }
    }

    fn admit(&mut self, now: u64, path: usize, dir: usize, frame: &[u8]) {
        let st = &mut self.stats[path][dir];
        if st.in_flight >= MAX_HELD {
            st.queue_drops += 1;
            return;
        }
        // Tagged with its key's sequence number, so a re-timing can find it.
        let seq = self.seq + 1;
        match self.shapers[path][dir].on_frame_tagged(now, frame.len(), seq) {
            Verdict::Lost => st.lost += 1,
            Verdict::QueueFull => st.queue_drops += 1,
            Verdict::Forward { depart_ns } => {
                st.in_flight += 1;
                let mut buf = self.pool.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(frame);
                self.seq = seq;
                self.held.insert(
                    (depart_ns, seq),
                    Held {
                        depart: depart_ns,
                        arrived: now,
                        path,
                        dir,
                        frame: buf,
                    },
                );
            }
        }
    }

    /// Puts path `path` under `params` at `now`. A bandwidth raise re-times the frames still
    /// queued at the bottleneck: they move to their new departures here (else frames timed at
    /// 28 kbit/s would hold a path raised to 200 Mbit/s for their whole drain time at 28 kbit/s).
    fn change_path(&mut self, now: u64, path: usize, params: DirParams) {
        for dir in [UP, DOWN] {
            for r in self.shapers[path][dir].change(now, params) {
                // Gone already when it was sent ahead of its time (within half a window).
                if let Some(mut h) = self.held.remove(&(r.was, r.tag)) {
                    h.depart = r.depart;
                    self.held.insert((r.depart, r.tag), h);
                }
            }
        }
    }

    /// A frame arrived on client port `path`.
    fn on_client_frame(&mut self, now: u64, path: usize, frame: &[u8]) {
        if frame.len() >= 12 {
            let mut src = [0u8; 6];
            src.copy_from_slice(&frame[6..12]);
            if src[0] & 1 == 0 {
                self.mac_path.insert(src, path);
            }
        }
        self.admit(now, path, UP, frame);
    }

    /// A frame arrived on the server port.
    fn on_server_frame(&mut self, now: u64, frame: &[u8]) {
        if frame.len() < 14 {
            return;
        }
        let mut dst = [0u8; 6];
        dst.copy_from_slice(&frame[..6]);
        match self.mac_path.get(&dst) {
            Some(&p) if dst[0] & 1 == 0 => self.admit(now, p, DOWN, frame),
            _ => {
                for p in 0..self.shapers.len() {
                    self.admit(now, p, DOWN, frame);
                }
            }
        }
    }

    /// The shortest delay a frame arriving at `now` can get on any path (latency less
    /// jitter; queueing only adds).
    fn min_latency_ns(&self, now: u64) -> u64 {
        self.shapers
            .iter()
            .flatten()
            .map(|s| s.latency_at(now).saturating_sub(s.params().jitter_ns))
            .min()
            .unwrap_or(0)
    }

    fn next_departure(&self) -> Option<u64> {
        self.held.first_key_value().map(|(&(d, _), _)| d)
    }

    /// The last departure at or before `until` among the first `MAX_BATCH` (held frames
    /// must not be empty), and how many that is.
    fn last_departure_by(&self, until: u64) -> (u64, usize) {
        let mut n = 0;
        let mut last = 0;
        for (&(d, _), _) in self.held.range(..=(until, u64::MAX)).take(MAX_BATCH) {
            (last, n) = (d, n + 1);
        }
        (last, n)
    }

    fn snapshot(&mut self, now: u64, t_ms: u64) -> RouterStats {
        let paths = (0..self.names.len())
            .map(|p| {
                let mut dirs: [DirStats; 2] = Default::default();
                for (d, out) in dirs.iter_mut().enumerate() {
                    let st = &mut self.stats[p][d];
                    st.queue = self.shapers[p][d].queue_depth(now) as u64;
                    *out = DirStats {
                        delay_us: HistDelta::drain(&mut self.delay[p][d]),
                        ..st.clone()
                    };
                }
                let [up, down] = dirs;
                PathStats {
                    name: self.names[p].clone(),
                    up,
                    down,
                }
            })
            .collect();
        RouterStats {
            t_ms,
            paths,
            late_us: HistDelta::drain(&mut self.late),
            cpu_us: packet::cpu_us(),
            realtime: false,
            ring_drops: 0,
        }
    }
}

/// Runs the router until stdin closes or one of its interfaces disappears.
pub fn run(cfg: &RouterConfig) -> anyhow::Result<()> {
    let mut server = PacketPort::open(&cfg.server_port)
        .with_context(|| format!("opening server port {}", cfg.server_port))?;
    let mut clients: Vec<PacketPort> = cfg
        .ports
        .iter()
        .map(|p| PacketPort::open(&p.dev).with_context(|| format!("opening port {}", p.dev)))
        .collect::<anyhow::Result<_>>()?;
    crate::sys::process::set_timer_slack_ns(1);
    let realtime = !no_realtime_asked() && packet::set_realtime(10).is_ok();
    let mut relay = Relay::new(cfg, packet::mono_ns());
    let mut timer = Timer::new()?;
    // Two interest sets: `poller` wakes on arrivals too; `quiet` (stdin and the timer only) is
    // for sleeping while arrivals wait in the rings (see `wake::may_defer_rx`).
    let mut poller = Poller::new()?;
    let mut quiet = Poller::new()?;
    const SERVER: u64 = 1000;
    const STDIN: u64 = 1001;
    const TIMER: u64 = 1002;
    for (i, c) in clients.iter().enumerate() {
        poller.add(c.raw_fd(), i as u64)?;
    }
    poller.add(server.raw_fd(), SERVER)?;
    for p in [&poller, &quiet] {
        if !cfg.detached {
            p.add(0, STDIN)?;
        }
        p.add(timer.raw_fd(), TIMER)?;
    }
    if !cfg.detached {
        packet::set_nonblocking(0)?;
    }

    let start = packet::mono_ns();
    let interval = cfg.stats_interval_ms.max(10) * 1_000_000;
    let mut next_stats = start + interval;
    let mut buf = vec![0u8; 4096];
    let mut ring_drops = 0u64;
    let mut wakes = WakeStats::default();
    let mut line = Vec::<u8>::new();
    let mut ready = Vec::new();
    let mut due: Vec<Held> = Vec::new();
    // Whether a ring may hold more than the last pass took.
    let mut rx_more = false;
    let out = std::io::stdout();
    loop {
        let now = packet::mono_ns();
        let half = wakes.half_window_ns();
        // A full window is a dense stream: wake a p99 lateness before its first frame and
        // poll, rather than have all of its frames wait for a late wake-up.
        let mut comp = wakes.comp_ns();
        let mut dense = false;
        let window = relay.next_departure().map(|first| {
            let (last, n) = relay.last_departure_by(first + 2 * half);
            if n >= MAX_BATCH {
                (comp, dense) = (wakes.dense_lead_ns(), true);
                (first, first)
            } else {
                (first, last)
            }
        });
        // Frames go ahead of their time only on the wake-up planned for their window; an
        // awake router sends each on its time.
        let mut ahead = 0;
        match next_step(now, window, comp) {
            _ if rx_more => poller.wait(0, &mut ready)?,
            Next::Send | Next::Poll => poller.wait(0, &mut ready)?,
            Next::Sleep(t) => {
                let wake = t.min(next_stats);
                timer.arm_at(Some(wake))?;
                if may_defer_rx(relay.min_latency_ns(now), wake.saturating_sub(now)) {
                    quiet.wait(-1, &mut ready)?;
                } else {
                    poller.wait(-1, &mut ready)?;
                }
                if wake == t && ready.contains(&TIMER) && !dense {
                    ahead = half;
                }
            }
        }
        for &tok in &ready {
            match tok {
                TIMER => {
                    if let Some(armed) = timer.armed_at() {
                        wakes.record(armed, packet::mono_ns());
                    }
                    timer.clear();
                }
                STDIN => loop {
                    match packet::read_nonblocking(0, &mut buf)? {
                        None => break,
                        Some(0) => return Ok(()),
                        Some(k) => {
                            line.extend_from_slice(&buf[..k]);
                            while let Some(pos) = line.iter().position(|&b| b == b'\n') {
                                let l: Vec<u8> = line.drain(..=pos).collect();
                                let now = packet::mono_ns();
                                if let Some(a) = apply_control(&mut relay, &cfg.ports, &l, now) {
                                    let mut o = out.lock();
                                    serde_json::to_writer(&mut o, &AnswerLine { answer: a })?;
                                    o.write_all(b"\n")?;
                                    o.flush()?;
                                }
                            }
                        }
                    }
                },
                _ => {}
            }
        }
        // Every ring is read on every pass (a ring with nothing waiting costs one load), so
        // frames left there while the router slept are taken now.
        rx_more = false;
        let got = server.recv_each(RX_PER_WAKE, |f, at| relay.on_server_frame(at, f));
        if got == 0 && ready.contains(&SERVER) {
            // Readable with nothing in the ring: an error is pending.
            stop_if_gone(&server)?;
        }
        rx_more |= got == RX_PER_WAKE;
        for (path, port) in clients.iter_mut().enumerate() {
            let got = port.recv_each(RX_PER_WAKE, |f, at| relay.on_client_frame(at, path, f));
            if got == 0 && ready.contains(&(path as u64)) {
                stop_if_gone(port)?;
            }
            rx_more |= got == RX_PER_WAKE;
        }
        depart(&mut relay, &server, &clients, &mut due, ahead);
        let now = packet::mono_ns();
        if now >= next_stats {
            // The lab's interfaces went with its namespaces (`net down`, a crashed controller):
            // nothing is left to relay, and a detached router has no stdin to end it.
            stop_if_gone(&server)?;
            for c in &clients {
                stop_if_gone(c)?;
            }
            let mut s = relay.snapshot(now, (now - start) / 1_000_000);
            s.realtime = realtime;
            ring_drops += server.take_drops();
            ring_drops += clients.iter().map(|c| c.take_drops()).sum::<u64>();
            s.ring_drops = ring_drops;
            let mut o = out.lock();
            serde_json::to_writer(&mut o, &s)?;
            o.write_all(b"\n")?;
            o.flush()?;
            while next_stats <= now {
                next_stats += interval;
            }
        }
    }
}

/// `SYNLAB_ROUTER_NO_RT=1`: run at normal priority even where SCHED_FIFO is allowed (to
/// measure the rootless case as root).
fn no_realtime_asked() -> bool {
    std::env::var("SYNLAB_ROUTER_NO_RT").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Ends the router with an error when a port's interface has disappeared.
fn stop_if_gone(port: &PacketPort) -> anyhow::Result<()> {
    match port.gone() {
        Some(why) => anyhow::bail!("synlab router: {why}; stopping (the lab is gone)"),
        None => Ok(()),
    }
}

/// Sends every frame whose departure time has come, and up to `MAX_BATCH` in all of those
/// due within `half` of now, one sendmmsg per port, in departure order within each port;
/// records the realised delays.
fn depart(
    relay: &mut Relay,
    server: &PacketPort,
    clients: &[PacketPort],
    due: &mut Vec<Held>,
    half: u64,
) {
    let now = packet::mono_ns();
    while relay
        .next_departure()
        .is_some_and(|d| d <= now || (d <= now + half && due.len() < MAX_BATCH))
    {
        let (_, h) = relay.held.pop_first().expect("peeked");
        due.push(h);
    }
    if due.is_empty() {
        return;
    }
    // Port index: clients 0..n, the server n. Stable sort keeps departure order per port.
    let n = clients.len();
    let port_of = |h: &Held| if h.dir == UP { n } else { h.path };
    due.sort_by_key(port_of);
    let mut i = 0;
    while i < due.len() {
        let p = port_of(&due[i]);
        let j = i + due[i..].iter().take_while(|h| port_of(h) == p).count();
        let frames: Vec<&[u8]> = due[i..j].iter().map(|h| h.frame.as_slice()).collect();
        let port = if p == n { server } else { &clients[p] };
        let sent = port.send_batch(&frames);
        let done = packet::mono_ns();
        for (k, h) in due[i..j].iter().enumerate() {
            let st = &mut relay.stats[h.path][h.dir];
            st.in_flight -= 1;
            if k < sent {
                st.relayed += 1;
                st.bytes += h.frame.len() as u64;
                hist::record(&mut relay.delay[h.path][h.dir], (done - h.arrived) / 1000);
                hist::record(&mut relay.late, done.abs_diff(h.depart) / 1000);
            } else {
                st.send_errors += 1;
            }
        }
        i = j;
    }
    relay.pool.extend(due.drain(..).map(|h| h.frame));
}

/// Takes one control line: the path's shapers get its profile, or nothing changes and the
/// answer says why. None for a blank line (nothing to answer).
fn apply_control(relay: &mut Relay, ports: &[RouterPort], line: &[u8], now: u64) -> Option<Answer> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let msg = match serde_json::from_str::<ControlMsg>(text) {
        Ok(m) => m,
        Err(e) => {
            let why = ControlRefusal::Unreadable {
                line: text.chars().take(200).collect(),
                error: e.to_string(),
            };
            return Some(Answer::Refused { id: 0, why });
        }
    };
    let (id, path) = (msg.id, msg.path.name.clone());
    let refused = |why| Some(Answer::Refused { id, why });
    let Some(i) = ports.iter().position(|p| p.path.name == path) else {
        let known = ports.iter().map(|p| p.path.name.clone()).collect();
        return refused(ControlRefusal::NoPath { path, known });
    };
    // The rules a `[[network.path]]` is built under, one definition (the spec's): the
    // controller's knobs keep within them, a line from anywhere else may not. The share is
    // the controller's business (it splits the load), not the router's.
    let alone = crate::net::spec::NetworkSpec {
        paths: vec![PathSpec {
            share: None,
            ..msg.path.clone()
        }],
        ..Default::default()
    };
    if let Err(errs) = alone.validate() {
        let problems = errs
            .iter()
            .map(|e| {
                let key = e.key.strip_prefix("network.path[0].").unwrap_or(&e.key);
                format!("{key}: {}", e.rule)
            })
            .collect();
        return refused(ControlRefusal::Profile { path, problems });
    }
    relay.change_path(now, i, DirParams::from_path(&msg.path));
    Some(Answer::Applied { id, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> RouterConfig {
        RouterConfig {
            server_port: "s".into(),
            ports: ["a", "b"]
                .iter()
                .map(|n| RouterPort {
                    dev: format!("r{n}"),
                    path: PathSpec {
                        name: n.to_string(),
                        ..Default::default()
                    },
                })
                .collect(),
            stats_interval_ms: 100,
            detached: false,
        }
    }

    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    #[test]
    fn server_frames_follow_learned_macs_and_broadcasts_flood() {
        let mut r = Relay::new(&cfg(), 1);
        let (a, b, srv) = (
            [2, 0, 0, 0, 0, 0xa],
            [2, 0, 0, 0, 0, 0xb],
            [2, 0, 0, 0, 0, 1],
        );
        r.on_client_frame(0, 0, &frame(srv, a));
        r.on_client_frame(0, 1, &frame(srv, b));
        r.on_server_frame(0, &frame(b, srv));
        r.on_server_frame(0, &frame([0xff; 6], srv));
        let held: Vec<(usize, usize)> = r.held.values().map(|h| (h.path, h.dir)).collect();
        let down_a = held.iter().filter(|&&x| x == (0, DOWN)).count();
        let down_b = held.iter().filter(|&&x| x == (1, DOWN)).count();
        assert_eq!((down_a, down_b), (1, 2));
        assert_eq!(held.iter().filter(|x| x.1 == UP).count(), 2);
    }

    #[test]
    fn control_line_changes_only_its_path_and_is_answered() {
        let c = cfg();
        let mut r = Relay::new(&c, 1);
        let a = apply_control(
            &mut r,
            &c.ports,
            br#"{"id":7,"path":{"name":"b","rtt":"40ms","share":0.5}}"#,
            0,
        );
        assert_eq!(
            a,
            Some(Answer::Applied {
                id: 7,
                path: "b".into()
            })
        );
        assert_eq!(r.shapers[0][UP].params().latency_ns, 0);
        assert_eq!(r.shapers[1][DOWN].params().latency_ns, 20_000_000);
        assert_eq!(apply_control(&mut r, &c.ports, b"  \n", 0), None);
    }

    /// Every line the router cannot take is refused with why, and changes nothing.
    #[test]
    fn control_lines_it_cannot_take_are_refused_with_why() {
        let c = cfg();
        let mut r = Relay::new(&c, 1);
        let mut answer = |line: &[u8]| match apply_control(&mut r, &c.ports, line, 0) {
            Some(Answer::Refused { id, why }) => (id, why.to_string()),
            other => panic!("{other:?}"),
        };
        let (id, why) = answer(br#"{"id":2,"path":{"name":"c","rtt":"40ms"}}"#);
        assert_eq!(id, 2);
        assert_eq!(
            why,
            "the delay router has no path `c` (its paths: a, b); it was started for another lab"
        );
        let (id, why) = answer(br#"{"id":3,"path":{"name":"a","loss":"80%","queue":0}}"#);
        assert_eq!(id, 3);
        assert_eq!(
            why,
            "the delay router will not put path `a` under that profile: loss: loss must be 0..50%; queue: 0 frames; use 1 to 1000000"
        );
        let (id, why) = answer(b"rtt=40ms");
        assert_eq!(id, 0);
        assert!(
            why.starts_with("the delay router could not read the change `rtt=40ms` ("),
            "{why}"
        );
        assert!(r
            .shapers
            .iter()
            .flatten()
            .all(|s| s.params().latency_ns == 0));
        assert!(r
            .shapers
            .iter()
            .flatten()
            .all(|s| s.params().loss == crate::net::shaper::Loss::None));
    }

    #[test]
    fn an_answer_line_is_not_a_stats_line_nor_the_reverse() {
        let a = AnswerLine {
            answer: Answer::Refused {
                id: 4,
                why: ControlRefusal::NoPath {
                    path: "x".into(),
                    known: vec!["a".into()],
                },
            },
        };
        let line = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<AnswerLine>(&line).unwrap(), a);
        assert!(serde_json::from_str::<RouterStats>(&line).is_err());
        let stats = serde_json::to_string(&Relay::new(&cfg(), 1).snapshot(0, 1)).unwrap();
        assert!(serde_json::from_str::<AnswerLine>(&stats).is_err());
    }

    #[test]
    fn a_bandwidth_raise_moves_the_queued_frames_to_the_new_rate() {
        let c = cfg();
        let mut r = Relay::new(&c, 1);
        let line = |bw: &str| {
            format!(r#"{{"id":1,"path":{{"name":"a","rtt":"20ms","bandwidth":"{bw}"}}}}"#)
        };
        apply_control(&mut r, &c.ports, line("28kbit").as_bytes(), 0);
        // 60-byte frames every ms, 17 ms each at 28 kbit/s: 95 of 100 still queued (well
        // within the 1000-frame queue), the last due 1.6 s on.
        let ms = 1_000_000;
        for i in 0..100 {
            r.on_client_frame(i * ms, 0, &frame([0xff; 6], [2, 0, 0, 0, 0, 9]));
        }
        assert_eq!(r.shapers[0][UP].queue_depth(100 * ms), 95);
        assert!(r.next_departure().unwrap() < 100 * ms);
        let last = |r: &Relay| r.held.last_key_value().map(|(k, _)| k.0).unwrap();
        assert!(last(&r) > 400 * ms, "{}", last(&r));
        apply_control(&mut r, &c.ports, line("200mbit").as_bytes(), 100 * ms);
        // All leave within their 10 ms latency of the raise, plus the 95 frames' 0.23 ms at
        // 200 Mbit/s.
        assert!(last(&r) < 110 * ms + ms / 2, "{}", last(&r));
        assert!(r.held.iter().all(|(k, h)| k.0 == h.depart));
    }

    #[test]
    fn stats_line_round_trips() {
        let mut r = Relay::new(&cfg(), 1);
        r.on_client_frame(0, 0, &frame([0xff; 6], [2, 0, 0, 0, 0, 9]));
        let s = r.snapshot(0, 5);
        assert_eq!(s.paths[0].up.in_flight, 1);
        let back: RouterStats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
