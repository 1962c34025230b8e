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
use super::protocol::{BadControl, Control, StatsDelta, WorkerConfig, WorkerNotice};
use crate::metrics::hist::new_hist;
use crate::sys::client_io::{self as io, Epoll, EventFd, RawAddr};
use rand::rngs::SmallRng;
use rand::SeedableRng;
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
mod stream_split;
mod streams;

use conn::EarlySend;
use layers::{HttpEvent, Layers, Request};
use pool::Pool;

/// Epoll data word of the control eventfd (slab keys never reach it: gen < u32::MAX).
const CONTROL_KEY: u64 = u64::MAX;
const EVENT_BATCH: usize = 1024;
const READ_BUF: usize = 64 * 1024;

/// The running worker: the scheduler (`sched`: where attempts and requests come from), the
/// connections (`slab`, driven through their `layers`), and the stats reporter (`report`),
/// composed by the event loop below.
pub struct Engine {
    cfg: WorkerConfig,
    target: RawAddr,
    start: Instant,
    end_ns: u64,
    epoll: Epoll,
    control_fd: Arc<EventFd>,
    control_rx: crossbeam_channel::Receiver<Result<Control, BadControl>>,
    /// The scheduler's state: arrivals, S-Client slots, closed clients, the pool.
    sched: policy::Sched,
    /// The connections: their slots and timers.
    slab: slab::Slab,
    /// The stats reporter's state: counts, gauges, histograms, notices.
    report: stats::Report,
    /// What the connections are made of (transport, security, HTTP).
    layers: Layers,
    /// The mix's requests, in the forms the HTTP layers take, and their cumulative weights.
    requests: Vec<Request>,
    mix_cum: Vec<f64>,
    rng: SmallRng,
    bind_next: usize,
    early: EarlySend,
    /// The HTTP layers' events being acted on (kept for its allocation).
    events: Vec<HttpEvent>,
    stop: bool,
}

impl Engine {
    /// Builds the loop; `control_rx` carries parsed control lines, `control_fd` wakes the loop.
    pub fn new(
        cfg: WorkerConfig,
        control_rx: crossbeam_channel::Receiver<Result<Control, BadControl>>,
        control_fd: Arc<EventFd>,
        notices: Vec<WorkerNotice>,
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
            secure: cfg.tls.is_some(),
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
            sched: policy::Sched {
                wakes: BinaryHeap::new(),
                slots_due: BinaryHeap::new(),
                schedule,
                clients_alive: 0,
                pool: Pool::default(),
                paused: cfg.paused,
                draining: false,
                backoff_until_ns: 0,
                batching: batching::ReadBatching::default(),
                retries: Default::default(),
            },
            slab: slab::Slab::default(),
            report: stats::Report {
                class_of,
                classes: class_tallies,
                connecting: 0,
                handshaking: 0,
                early: 0,
                active: 0,
                requests_in_flight: 0,
                reported_in_progress: (0, 0),
                stats,
                hists: stats::Hists {
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
                told_alpn: false,
                told_bad: 0,
                told_resets: Vec::new(),
                streams_max: 0,
                streams_limit: None,
                tls_failure: None,
                out: Vec::with_capacity(4096),
                sink: Box::new(std::io::stdout()),
            },
            layers: Layers::of(&cfg)?,
            requests,
            mix_cum,
            rng: SmallRng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15),
            bind_next: 0,
            early: EarlySend::default(),
            events: Vec::new(),
            stop: false,
            cfg,
        };
        if let Some(ep) = &e.layers.quic {
            // Edge-triggered: a turn reads until the socket is empty.
            let ep = ep.borrow();
            e.epoll
                .add(
                    ep.client.socket().as_fd(),
                    io::EV_IN | io::EV_OUT | io::EV_ET,
                    layers::quic::QUIC_KEY,
                )
                .map_err(|err| anyhow::anyhow!("registering the QUIC socket with epoll: {err}"))?;
        }
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
        self.timer_slack_for_mode();
        loop {
            let now = self.now_ns();
            if self.stop || now >= self.end_ns {
                break;
            }
            if self.sched.draining
                && self.report.connecting + self.report.handshaking + self.report.active == 0
            {
                break;
            }
            self.expire_timers(now);
            self.quic_timers();
            self.start_attempts(now);
            if now >= self.report.next_stats_ns && !self.emit_stats(now, false) {
                self.stop = true;
                continue;
            }
            // Over HTTP/3, the packets this turn made leave before the loop sleeps.
            self.quic_flush();
            let n = self.wait_for_events(&mut events, now)?;
            for ev in &events[..n] {
                let (bits, key) = (ev.bits(), ev.key());
                if key == CONTROL_KEY {
                    self.control_fd.drain();
                    self.apply_controls();
                } else if key == layers::quic::QUIC_KEY {
                    self.quic_readable();
                } else {
                    self.on_event(key, bits, &mut buf);
                }
            }
        }
        // What is still in progress now never finishes: counted apart, so the totals add up.
        self.report.stats.counts.connecting_at_end += self.report.unestablished();
        self.report.stats.counts.requests_at_end += self.report.requests_in_flight;
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
        if let Some(b) = self.batching() {
            let until_due = due.map_or(u64::MAX, |t| t.saturating_sub(now));
            if let Some(nap) = b.nap_ns(self.report.requests_in_flight, until_due) {
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
        let mut t = self.end_ns.min(self.report.next_stats_ns);
        if let Some(at) = self.next_timer_ns() {
            t = t.min(at);
        }
        if let Some(at) = self.quic_next_ns() {
            t = t.min(at);
        }
        if let Some(start) = self.next_start_ns(now) {
            t = t.min(start);
        }
        Some(t)
    }

    fn close_all(&mut self) {
        self.quic_ending();
        for c in self.slab.conns.iter_mut() {
            c.clear();
        }
        // Over HTTP/3 the closes go out (the server frees the connections at once).
        self.quic_flush();
        self.report.connecting = 0;
        self.report.handshaking = 0;
        self.report.early = 0;
        self.report.active = 0;
        self.report.requests_in_flight = 0;
        self.sched.pool = Pool::default();
    }
}
