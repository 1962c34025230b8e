//! The worker's event loop: one thread, one epoll set, a slab of connection states indexed by the
//! epoll data word, a timer heap for connect (T) and response timeouts, and batched stats.
//!
//! The S-Client of seed 000 §4.2 is the `connecting < D` invariant: a slot whose connect completes
//! sends its request and hands the connection to response handling (the same loop, another slab
//! entry state), and a new connect starts at once; a connect older than T is closed (no packet
//! leaves) and replaced. Open mode starts connections at scheduled arrivals, closed mode runs N
//! clients that each wait for their response. Latency is measured from the scheduled start.
//!
//! Open mode with a pool of `connections` sends scheduled requests, not connections, over
//! persistent connections (wrk2's constant throughput), each timed from its scheduled time.
//!
//! Connections and requests are counted apart, with gauges of what is in progress, so each
//! report states two identities (see `model::counters`).
//!
//! The parts: `policy` (where each mode's attempts come from, and closed clients), `pool` (the
//! persistent connections a request rate is sent over), `conn` (one connection's states, from
//! connect to close), `exchange` (its request out, its response in), `batching` (a closed
//! keep-alive loop's naps between reads), `slab` (connection slots, their keys and timers),
//! `control` (the controller's commands), `stats` (the periodic report).

use super::arrival::Schedule;
use super::http;
use super::protocol::{BadControl, Control, Mode, StatsDelta, WorkerConfig};
use crate::metrics::hist::new_hist;
use crate::sys::client_io::{self as io, Epoll, EventFd, RawAddr};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod batching;
mod classes;
mod conn;
mod control;
mod exchange;
pub mod layers;
mod policy;
mod pool;
mod slab;
mod stats;

use conn::{Conn, EarlySend};
pub use conn::{FDS_NOTICE, PORTS_NOTICE};
use layers::{HttpEvent, Layers, Request};
use pool::Pool;

/// Epoll data word of the control eventfd (slab keys never reach it: gen < u32::MAX).
const CONTROL_KEY: u64 = u64::MAX;
const EVENT_BATCH: usize = 1024;
const READ_BUF: usize = 64 * 1024;

struct Hists {
    connect: Histogram<u64>,
    handshake: Histogram<u64>,
    ttfb: Histogram<u64>,
    total: Histogram<u64>,
}

/// The running worker.
pub struct Engine {
    cfg: WorkerConfig,
    target: RawAddr,
    start: Instant,
    end_ns: u64,
    epoll: Epoll,
    control_fd: Arc<EventFd>,
    control_rx: crossbeam_channel::Receiver<Result<Control, BadControl>>,
    slab: Vec<Conn>,
    free: Vec<u32>,
    timers: BinaryHeap<Reverse<(u64, u32, u32)>>,
    wakes: BinaryHeap<Reverse<u64>>,
    /// Sclient flat out: when each free slot (re)connects, earliest first. A freed slot is due
    /// at once (its T deadline, or the moment its connect completed or failed), so a late
    /// reconnect shows as lag; slots that start fresh are spread over T (seed 000 §4.2: "these
    /// D connection requests are spaced out over T"), else they stay in lockstep: all time out
    /// together, all retry together, and the server idles between the bursts.
    slots_due: BinaryHeap<Reverse<u64>>,
    schedule: Schedule,
    requests: Vec<Request>,
    mix_cum: Vec<f64>,
    /// Each mix entry's class (empty with fewer than two classes), and the classes' counts.
    class_of: Vec<u16>,
    classes: Vec<classes::ClassTally>,
    rng: SmallRng,
    bind_next: usize,
    early: EarlySend,
    /// Connects in progress (what the S-Client's D bounds).
    connecting: u64,
    /// TLS handshakes in progress (their connects are done; not established yet).
    handshaking: u64,
    active: u64,
    /// What its connections are made of (transport, security, HTTP).
    layers: Layers,
    /// The HTTP layers' events being acted on (kept for its allocation).
    events: Vec<HttpEvent>,
    /// Requests begun and not yet answered or failed.
    requests_in_flight: u64,
    /// A closed keep-alive loop's read batching (None in every other mode).
    batching: Option<batching::ReadBatching>,
    /// `connecting` and `requests_in_flight` as of the last report (the next one's start).
    reported_in_progress: (u64, u64),
    pool: Pool,
    /// Closed clients alive (connected, connecting or thinking).
    clients_alive: u32,
    paused: bool,
    /// Drain: no new attempts; the worker exits once nothing is in flight.
    draining: bool,
    stop: bool,
    backoff_until_ns: u64,
    stats: StatsDelta,
    hists: Hists,
    last_stats_ns: u64,
    /// Arrivals the schedule intended since the last report, banked at each change of the
    /// schedule (rate, burst, mode, pause) so a report that spans a change states what each
    /// part intended, not the new rate for all of it.
    intended: f64,
    /// From when (seconds) the schedule as it is now has not been banked yet.
    intended_from: f64,
    next_stats_ns: u64,
    last_cpu: (f64, f64),
    notices: Vec<String>,
    told_ports: bool,
    told_fds: bool,
    told_bind: bool,
    /// The TLS failure kinds already said in a notice (a bit each).
    told_tls: u8,
    /// A handshake failure's words not yet reported (the first of each kind).
    tls_failure: Option<String>,
    out: Vec<u8>,
}

impl Engine {
    /// Builds the loop; `control_rx` carries parsed control lines, `control_fd` wakes the loop.
    pub fn new(
        cfg: WorkerConfig,
        control_rx: crossbeam_channel::Receiver<Result<Control, BadControl>>,
        control_fd: Arc<EventFd>,
        notices: Vec<String>,
    ) -> anyhow::Result<Self> {
        let epoll = Epoll::new()?;
        epoll
            .add(control_fd.as_fd(), io::EV_IN, CONTROL_KEY)
            .map_err(|e| anyhow::anyhow!("registering the control eventfd with epoll: {e}"))?;
        let schedule = Schedule::new(cfg.rate, cfg.arrivals, cfg.burst.as_ref(), cfg.seed, 0.0)?;
        let host = if cfg.host_header.is_empty() {
            cfg.target.to_string()
        } else {
            cfg.host_header.clone()
        };
        let request = |path: &str| Request {
            path: path.to_string(),
            authority: host.clone(),
            h1: http::request(path, &host, cfg.keepalive).into(),
        };
        let (requests, mix_cum) = if cfg.mix.is_empty() {
            (vec![request("/")], vec![1.0])
        } else {
            let mut acc = 0.0;
            let cum = cfg
                .mix
                .iter()
                .map(|m| {
                    acc += m.weight;
                    acc
                })
                .collect();
            let reqs = cfg.mix.iter().map(|m| request(&m.path)).collect();
            (reqs, cum)
        };
        let (class_of, class_tallies) = classes::classes_of(&cfg.mix);
        let end_ns = (cfg.duration_s * 1e9) as u64;
        let interval_ns = cfg.stats_interval_ms * 1_000_000;
        let stats = StatsDelta {
            worker: cfg.id,
            ..StatsDelta::default()
        };
        let mut e = Engine {
            target: RawAddr::new(cfg.target),
            start: Instant::now(),
            end_ns,
            epoll,
            control_fd,
            control_rx,
            slab: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            wakes: BinaryHeap::new(),
            slots_due: BinaryHeap::new(),
            schedule,
            requests,
            mix_cum,
            class_of,
            classes: class_tallies,
            rng: SmallRng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15),
            bind_next: 0,
            early: EarlySend::default(),
            connecting: 0,
            handshaking: 0,
            active: 0,
            layers: Layers::of(&cfg)?,
            events: Vec::new(),
            requests_in_flight: 0,
            batching: (cfg.mode == Mode::Closed && cfg.keepalive)
                .then(batching::ReadBatching::default),
            reported_in_progress: (0, 0),
            pool: Pool::default(),
            clients_alive: 0,
            paused: cfg.paused,
            draining: false,
            stop: false,
            backoff_until_ns: 0,
            stats,
            hists: Hists {
                connect: new_hist(),
                handshake: new_hist(),
                ttfb: new_hist(),
                total: new_hist(),
            },
            last_stats_ns: 0,
            intended: 0.0,
            intended_from: 0.0,
            next_stats_ns: interval_ns,
            last_cpu: io::cpu_times(),
            notices,
            told_ports: false,
            told_fds: false,
            told_bind: false,
            told_tls: 0,
            tls_failure: None,
            out: Vec::with_capacity(4096),
            cfg,
        };
        e.spawn_clients(0);
        e.pool_warm_up(0);
        Ok(e)
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Runs until Stop, stdin EOF, the duration bound or a closed stdout.
    pub fn run(mut self) -> anyhow::Result<()> {
        let mut events = io::empty_events(EVENT_BATCH);
        let mut buf = vec![0u8; READ_BUF];
        if self.batching.is_some() {
            // The naps are 5-30 us: the default 50 us slack would stretch each to ~80 us.
            crate::sys::process::set_timer_slack_ns(1_000);
        }
        loop {
            let now = self.now_ns();
            if self.stop || now >= self.end_ns {
                break;
            }
            if self.draining && self.connecting + self.handshaking + self.active == 0 {
                break;
            }
            self.expire_timers(now);
            self.start_attempts(now);
            if now >= self.next_stats_ns && !self.emit_stats(now, false) {
                self.stop = true;
                continue;
            }
            let n = self.wait_for_events(&mut events, now)?;
            for ev in &events[..n] {
                let (bits, key) = (ev.bits(), ev.key());
                if key == CONTROL_KEY {
                    self.control_fd.drain();
                    self.apply_controls();
                } else {
                    self.on_event(key, bits, &mut buf);
                }
            }
        }
        // What is still in progress now never finishes: counted apart, so the totals add up.
        self.stats.counts.connecting_at_end += self.connecting + self.handshaking;
        self.stats.counts.requests_at_end += self.requests_in_flight;
        self.classes_left_at_end();
        self.close_all();
        let now = self.now_ns();
        self.emit_stats(now, true);
        Ok(())
    }

    /// Waits for events until the loop has something else to do; a closed keep-alive loop whose
    /// responses stream in first naps and reads a batch instead of blocking (see `batching`).
    fn wait_for_events(&mut self, events: &mut [io::Event], mut now: u64) -> anyhow::Result<usize> {
        let due = self.next_wake_ns(now);
        if let Some(b) = self.batching {
            let until_due = due.map_or(u64::MAX, |t| t.saturating_sub(now));
            if let Some(nap) = b.nap_ns(self.requests_in_flight, until_due) {
                let n = self.epoll.wait(events, Some(Duration::ZERO))?;
                if n > 0 {
                    return Ok(n);
                }
                std::thread::sleep(Duration::from_nanos(nap));
                now = self.now_ns();
            }
        }
        let timeout = due.map(|t| Duration::from_nanos(t.saturating_sub(now)));
        Ok(self.epoll.wait(events, timeout)?)
    }

    /// The earliest moment the loop has something to do.
    fn next_wake_ns(&self, now: u64) -> Option<u64> {
        let mut t = self.end_ns.min(self.next_stats_ns);
        if let Some(at) = self.next_timer_ns() {
            t = t.min(at);
        }
        if let Some(start) = self.next_start_ns(now) {
            t = t.min(start);
        }
        Some(t)
    }

    fn close_all(&mut self) {
        for c in &mut self.slab {
            c.clear();
        }
        self.connecting = 0;
        self.handshaking = 0;
        self.active = 0;
        self.requests_in_flight = 0;
        self.pool = Pool::default();
    }
}
