//! The worker's event loop: one thread, one epoll set, a slab of connection states indexed by the
//! epoll data word, a timer heap for connect (T) and response timeouts, and batched stats.
//!
//! The S-Client of seed 000 §4.2 is the `connecting < D` invariant: a slot whose connect completes
//! sends its request and hands the connection to response handling (the same loop, another slab
//! entry state), and a new connect starts at once; a connect older than T is closed (no packet
//! leaves) and replaced. Open mode starts connections at scheduled arrivals, closed mode runs N
//! clients that each wait for their response. Latency is measured from the scheduled start.

use super::arrival::Schedule;
use super::http::{self, Progress, ResponseParser};
use super::protocol::{Control, Mode, StatsDelta, WorkerConfig};
use super::rates::offered_rate;
use crate::metrics::hist::{new_hist, record, HistDelta};
use crate::sys::client_io::{self as io, ConnectStart, Epoll, EventFd, RawAddr};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Epoll data word of the control eventfd (slab keys never reach it: gen < u32::MAX).
const CONTROL_KEY: u64 = u64::MAX;
const EVENT_BATCH: usize = 1024;
const READ_BUF: usize = 64 * 1024;
/// Most arrivals started per loop pass, so a late worker still services its sockets.
const STARTS_PER_PASS: usize = 512;
/// Pause before retrying after the kernel refused a socket or a port (EMFILE, EADDRNOTAVAIL).
const RESOURCE_BACKOFF_NS: u64 = 1_000_000;

pub const PORTS_NOTICE: &str =
    "ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or add client addresses";
pub const FDS_NOTICE: &str =
    "out of file descriptors: raise the hard RLIMIT_NOFILE (ulimit -Hn) or lower sockets/clients";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Free,
    Connecting,
    Sending,
    Receiving,
    /// HTTP/1.0 response complete; waiting for the server's FIN so TIME_WAIT stays on its side.
    Draining,
    /// Keep-alive closed client thinking before its next request on this connection.
    Idle,
}

/// Readiness a connection waits for once its request is out; `EV_OUT` is added while a request
/// still has bytes to send.
const EV_RESPONSE: u32 = io::EV_IN | io::EV_RDHUP | io::EV_ET;

/// Whether to send the request right after connect(): kept up while it works (loopback), and
/// on a path where handshakes take a round trip (the lab's), tried only every 64th attempt,
/// so a send that finds SYN_SENT costs almost nothing.
#[derive(Debug)]
struct EarlySend {
    score: i32,
    attempts: u32,
}

impl Default for EarlySend {
    fn default() -> Self {
        EarlySend {
            score: 4,
            attempts: 0,
        }
    }
}

impl EarlySend {
    fn try_now(&mut self) -> bool {
        self.attempts = self.attempts.wrapping_add(1);
        self.score > 0 || self.attempts.is_multiple_of(64)
    }
    fn hit(&mut self) {
        self.score = (self.score + 1).min(16);
    }
    fn missed(&mut self) {
        self.score = (self.score - 4).max(0);
    }
}

#[derive(Clone, Copy)]
struct Conn {
    fd: RawFd,
    gen: u32,
    phase: Phase,
    /// Belongs to a closed-mode client (which wakes again when this connection ends).
    client: bool,
    saw_first_byte: bool,
    /// Scheduled start of the current request (the attempt's for the first one), ns.
    sched_ns: u64,
    deadline_ns: u64,
    req: u16,
    sent: u32,
    requests: u32,
    /// Registered for EPOLLOUT (not when the request went out with the connect).
    out_armed: bool,
    parser: ResponseParser,
}

impl Conn {
    const FREE: Conn = Conn {
        fd: -1,
        gen: 0,
        phase: Phase::Free,
        client: false,
        saw_first_byte: false,
        sched_ns: 0,
        deadline_ns: 0,
        req: 0,
        sent: 0,
        requests: 0,
        out_armed: false,
        parser: ResponseParser::DEFAULT,
    };
}

struct Hists {
    connect: Histogram<u64>,
    ttfb: Histogram<u64>,
    total: Histogram<u64>,
}

/// Where attempts come from, by mode (see [`Engine::starts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Starts {
    /// Closed: each client's next request, at its wake time (`wakes`); no cap.
    Clients,
    /// Sclient flat out: D slots, each reconnecting when it is freed (`slots_due`).
    FreeSlots,
    /// Sclient with a rate: scheduled arrivals; one beyond D connecting waits for a free slot.
    ArrivalsIntoSlots,
    /// Open: scheduled arrivals; one beyond D connecting is dropped (a client-cap drop).
    Arrivals,
}

/// The running worker.
pub struct Engine {
    cfg: WorkerConfig,
    target: RawAddr,
    start: Instant,
    end_ns: u64,
    epoll: Epoll,
    control_fd: EventFd,
    control_rx: crossbeam_channel::Receiver<Result<Control, String>>,
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
    requests: Vec<Vec<u8>>,
    mix_cum: Vec<f64>,
    rng: SmallRng,
    bind_next: usize,
    early: EarlySend,
    connecting: u64,
    active: u64,
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
    next_stats_ns: u64,
    last_cpu: (f64, f64),
    notices: Vec<String>,
    told_ports: bool,
    told_fds: bool,
    told_bind: bool,
    out: Vec<u8>,
}

impl Engine {
    /// Builds the loop; `control_rx` carries parsed control lines, `control_fd` wakes the loop.
    pub fn new(
        cfg: WorkerConfig,
        control_rx: crossbeam_channel::Receiver<Result<Control, String>>,
        control_fd: EventFd,
        notices: Vec<String>,
    ) -> anyhow::Result<Self> {
        let epoll = Epoll::new()?;
        epoll
            .add(control_fd.fd, io::EV_IN, CONTROL_KEY)
            .map_err(std::io::Error::from_raw_os_error)?;
        let schedule = Schedule::new(cfg.rate, cfg.arrivals, cfg.burst.as_ref(), cfg.seed, 0.0)?;
        let host = if cfg.host_header.is_empty() {
            cfg.target.to_string()
        } else {
            cfg.host_header.clone()
        };
        let (requests, mix_cum) = if cfg.mix.is_empty() {
            (vec![http::request("/", &host, cfg.keepalive)], vec![1.0])
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
            let reqs = cfg
                .mix
                .iter()
                .map(|m| http::request(&m.path, &host, cfg.keepalive))
                .collect();
            (reqs, cum)
        };
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
            rng: SmallRng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15),
            bind_next: 0,
            early: EarlySend::default(),
            connecting: 0,
            active: 0,
            clients_alive: 0,
            paused: cfg.paused,
            draining: false,
            stop: false,
            backoff_until_ns: 0,
            stats,
            hists: Hists {
                connect: new_hist(),
                ttfb: new_hist(),
                total: new_hist(),
            },
            last_stats_ns: 0,
            next_stats_ns: interval_ns,
            last_cpu: io::cpu_times(),
            notices,
            told_ports: false,
            told_fds: false,
            told_bind: false,
            out: Vec::with_capacity(4096),
            cfg,
        };
        e.spawn_clients(0);
        Ok(e)
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Runs until Stop, stdin EOF, the duration bound or a closed stdout.
    pub fn run(mut self) -> anyhow::Result<()> {
        let mut events = io::empty_events(EVENT_BATCH);
        let mut buf = vec![0u8; READ_BUF];
        loop {
            let now = self.now_ns();
            if self.stop || now >= self.end_ns {
                break;
            }
            if self.draining && self.connecting + self.active == 0 {
                break;
            }
            self.expire_timers(now);
            self.start_attempts(now);
            if now >= self.next_stats_ns && !self.emit_stats(now, false) {
                self.stop = true;
                continue;
            }
            let timeout = self
                .next_wake_ns(now)
                .map(|t| Duration::from_nanos(t.saturating_sub(now)));
            let n = self.epoll.wait(&mut events, timeout)?;
            for ev in &events[..n] {
                let (bits, key) = (ev.events, ev.u64);
                if key == CONTROL_KEY {
                    self.control_fd.drain();
                    self.apply_controls();
                } else {
                    self.on_event(key, bits, &mut buf);
                }
            }
        }
        // Connections still open now never finish: counted apart, so the totals add up.
        self.stats.counts.in_flight_at_end += self.connecting + self.active;
        self.close_all();
        let now = self.now_ns();
        self.emit_stats(now, true);
        Ok(())
    }

    /// The earliest moment the loop has something to do.
    fn next_wake_ns(&self, now: u64) -> Option<u64> {
        let mut t = self.end_ns.min(self.next_stats_ns);
        if let Some(Reverse((at, _, _))) = self.timers.peek() {
            t = t.min(*at);
        }
        if !self.paused {
            let starts = self.starts();
            if !self.waits_for_slot(starts) {
                // Free slots without a due time are started (spread over T) at once.
                let due = if starts == Starts::FreeSlots && self.slots_missing() > 0 {
                    Some(now)
                } else {
                    self.queued_start(starts)
                };
                if let Some(due) = due {
                    t = t.min(due.max(self.backoff_until_ns.max(now)));
                }
            }
        }
        Some(t)
    }

    // ---- starting attempts ---------------------------------------------------------------

    /// Where this worker's attempts come from now (its mode, and for sclient whether it has a
    /// rate): the one statement of the per-mode policy.
    fn starts(&self) -> Starts {
        match self.cfg.mode {
            Mode::Closed => Starts::Clients,
            Mode::Sclient if self.schedule.rate().is_none() => Starts::FreeSlots,
            Mode::Sclient => Starts::ArrivalsIntoSlots,
            Mode::Open => Starts::Arrivals,
        }
    }

    /// All D sockets are connecting and this mode's next start waits for one to free up.
    fn waits_for_slot(&self, starts: Starts) -> bool {
        matches!(starts, Starts::FreeSlots | Starts::ArrivalsIntoSlots)
            && self.connecting >= self.cfg.sockets as u64
    }

    /// The scheduled start (ns) of the next attempt queued in this mode.
    fn queued_start(&self, starts: Starts) -> Option<u64> {
        match starts {
            Starts::Clients => self.wakes.peek().map(|&Reverse(at)| at),
            Starts::FreeSlots => self.slots_due.peek().map(|&Reverse(at)| at),
            Starts::ArrivalsIntoSlots | Starts::Arrivals => {
                self.schedule.next_due().map(|due| (due * 1e9) as u64)
            }
        }
    }

    /// Takes the start [`Self::queued_start`] returned off its queue.
    fn pop_start(&mut self, starts: Starts) {
        match starts {
            Starts::Clients => {
                self.wakes.pop();
            }
            Starts::FreeSlots => {
                self.slots_due.pop();
            }
            Starts::ArrivalsIntoSlots | Starts::Arrivals => {
                self.schedule.pop();
            }
        }
    }

    /// Sclient flat out: free slots with no due time yet.
    fn slots_missing(&self) -> u64 {
        (self.cfg.sockets as u64).saturating_sub(self.connecting + self.slots_due.len() as u64)
    }

    fn start_attempts(&mut self, now: u64) {
        if self.paused || now < self.backoff_until_ns {
            return;
        }
        let starts = self.starts();
        if starts == Starts::FreeSlots {
            self.queue_missing_slots(now);
        }
        let mut n = 0;
        while n < STARTS_PER_PASS && now >= self.backoff_until_ns && !self.waits_for_slot(starts) {
            let due = match self.queued_start(starts) {
                Some(due) if due <= now => due,
                _ => break,
            };
            self.pop_start(starts);
            n += 1;
            self.note_lag(now, due);
            if starts == Starts::Arrivals && self.connecting >= self.cfg.sockets as u64 {
                self.stats.counts.client_cap_drops += 1;
            } else {
                self.start_attempt(due, now, starts == Starts::Clients);
            }
        }
        if starts == Starts::FreeSlots {
            self.drop_surplus_slots();
        }
    }

    /// Slots with no due time yet (start, Resume, a larger D) start spread over T.
    fn queue_missing_slots(&mut self, now: u64) {
        let missing = self.slots_missing();
        if let Some(step) = ((self.cfg.timeout_s * 1e9) as u64).checked_div(missing) {
            for k in 0..missing {
                self.slots_due.push(Reverse(now + k * step));
            }
        }
    }

    /// A smaller D: drop the latest due times beyond the free slots.
    fn drop_surplus_slots(&mut self) {
        let d = self.cfg.sockets as u64;
        let keep = (d - self.connecting.min(d)) as usize;
        if self.slots_due.len() > keep {
            let mut v = std::mem::take(&mut self.slots_due).into_sorted_vec();
            // Sorted by Reverse: the latest times come first.
            v.drain(..v.len() - keep);
            self.slots_due = v.into_iter().collect();
        }
    }

    fn note_lag(&mut self, now: u64, due: u64) {
        let lag_us = now.saturating_sub(due) / 1000;
        self.stats.counts.scheduled += 1;
        self.stats.counts.lag_us_sum += lag_us;
        self.stats.lag_us_max = self.stats.lag_us_max.max(lag_us);
    }

    /// Opens a socket and starts a non-blocking connect whose scheduled start was `sched`.
    fn start_attempt(&mut self, sched: u64, now: u64, client: bool) {
        self.stats.counts.attempts += 1;
        let fd = match io::tcp_socket(self.target.family()) {
            Ok(fd) => fd,
            Err(e) => return self.attempt_failed(e, now, client),
        };
        if !self.cfg.bind_addrs.is_empty() {
            let ip = self.cfg.bind_addrs[self.bind_next % self.cfg.bind_addrs.len()];
            self.bind_next = self.bind_next.wrapping_add(1);
            if let Err(e) = io::bind_source(fd, ip) {
                io::close(fd);
                if e == libc::EADDRNOTAVAIL {
                    // Not a port shortage: the source address is not on this host.
                    self.stats.counts.other_errors += 1;
                    if !self.told_bind {
                        self.told_bind = true;
                        self.notices.push(format!(
                            "cannot bind source address {ip}: it is not configured on this host (check bind_addrs)"
                        ));
                    }
                    return self.attempt_failed(0, now, client);
                }
                return self.attempt_failed(e, now, client);
            }
        }
        let started = match io::connect(fd, &self.target) {
            Ok(s) => s,
            Err(e) => {
                io::close(fd);
                return self.attempt_failed(e, now, client);
            }
        };
        let idx = self.alloc();
        let key = self.key(idx);
        let c = &mut self.slab[idx];
        c.fd = fd;
        c.client = client;
        c.sched_ns = sched;
        c.deadline_ns = now;
        c.saw_first_byte = false;
        c.requests = 0;
        c.phase = Phase::Connecting;
        self.connecting += 1;
        if started == ConnectStart::InProgress
            && self.early.try_now()
            && self.send_with_connect(idx, now)
        {
            return;
        }
        // Edge-triggered and registered once: no epoll_ctl MOD between connect, send and receive.
        if let Err(e) = self.epoll.add(fd, EV_RESPONSE | io::EV_OUT, key) {
            io::close(fd);
            self.connecting -= 1;
            self.slab[idx].phase = Phase::Free;
            self.release(idx);
            return self.attempt_failed(e, now, client);
        }
        self.slab[idx].out_armed = true;
        if started == ConnectStart::Connected {
            self.on_established(idx, now);
        } else {
            // A simple client (seed 000 §3) has no short timeout T: it waits out the kernel's
            // own SYN retransmissions (exponential backoff), bounded by the response timeout.
            // That is why closed-loop load cannot push past the server's capacity.
            let wait = if client {
                self.cfg.response_timeout_s
            } else {
                self.cfg.timeout_s
            };
            let deadline = now + (wait * 1e9) as u64;
            self.arm(idx, deadline);
        }
    }

    /// A socket, bind or connect call failed before the connection existed.
    /// `e` = 0: already counted by the caller.
    fn attempt_failed(&mut self, e: io::Errno, now: u64, client: bool) {
        if e != 0 {
            self.count_error(e);
        }
        if matches!(
            e,
            libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS | libc::ENOMEM
        ) {
            self.backoff_until_ns = now + RESOURCE_BACKOFF_NS;
        }
        if client {
            self.client_done(now.max(self.backoff_until_ns));
        }
    }

    fn count_error(&mut self, e: io::Errno) {
        let s = &mut self.stats.counts;
        match e {
            libc::ECONNREFUSED => s.refused += 1,
            libc::ECONNRESET | libc::EPIPE => s.resets += 1,
            libc::EADDRNOTAVAIL => {
                s.addr_not_avail += 1;
                if !self.told_ports {
                    self.told_ports = true;
                    self.notices.push(PORTS_NOTICE.into());
                }
            }
            libc::EMFILE | libc::ENFILE => {
                s.out_of_fds += 1;
                if !self.told_fds {
                    self.told_fds = true;
                    self.notices.push(FDS_NOTICE.into());
                }
            }
            libc::ETIMEDOUT => s.connect_timeouts += 1,
            _ => s.other_errors += 1,
        }
    }

    // ---- slab and timers -----------------------------------------------------------------

    fn alloc(&mut self) -> usize {
        if let Some(i) = self.free.pop() {
            return i as usize;
        }
        self.slab.push(Conn::FREE);
        self.slab.len() - 1
    }

    fn release(&mut self, idx: usize) {
        let c = &mut self.slab[idx];
        c.gen = c.gen.wrapping_add(1) % (u32::MAX - 1);
        c.fd = -1;
        self.free.push(idx as u32);
    }

    fn key(&self, idx: usize) -> u64 {
        (self.slab[idx].gen as u64) << 32 | idx as u64
    }

    fn arm(&mut self, idx: usize, deadline: u64) {
        let c = &mut self.slab[idx];
        c.deadline_ns = deadline;
        self.timers.push(Reverse((deadline, idx as u32, c.gen)));
    }

    fn expire_timers(&mut self, now: u64) {
        while let Some(&Reverse((at, idx, gen))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let idx = idx as usize;
            let c = &self.slab[idx];
            // Stale entries (connection gone or re-armed) are skipped: lazy deletion.
            if c.gen != gen || c.deadline_ns != at || c.phase == Phase::Free {
                continue;
            }
            match c.phase {
                Phase::Connecting => {
                    self.stats.counts.connect_timeouts += 1;
                    self.finish(idx, now);
                }
                Phase::Sending | Phase::Receiving => {
                    self.stats.counts.response_timeouts += 1;
                    self.finish(idx, now);
                }
                Phase::Draining => self.finish(idx, now),
                Phase::Idle => {
                    self.slab[idx].sched_ns = now;
                    self.begin_request(idx, now);
                }
                Phase::Free => {}
            }
        }
    }

    // ---- connection events ---------------------------------------------------------------

    fn on_event(&mut self, key: u64, bits: u32, buf: &mut [u8]) {
        let idx = (key & 0xffff_ffff) as usize;
        if idx >= self.slab.len() || self.slab[idx].gen as u64 != key >> 32 {
            return; // the connection ended earlier in this batch
        }
        let now = self.now_ns();
        if self.slab[idx].phase == Phase::Connecting {
            if bits & (io::EV_ERR | io::EV_HUP) != 0 {
                let fd = self.slab[idx].fd;
                let e = io::socket_error(fd);
                self.count_error(if e == 0 { libc::ECONNRESET } else { e });
                self.finish(idx, now);
                return;
            }
            if bits & io::EV_OUT == 0 {
                return;
            }
            self.on_established(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        } else if self.slab[idx].phase == Phase::Sending && bits & (io::EV_OUT | io::EV_ERR) != 0 {
            self.send_more(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        }
        let phase = self.slab[idx].phase;
        if matches!(phase, Phase::Receiving | Phase::Draining | Phase::Idle)
            && bits & (io::EV_IN | io::EV_RDHUP | io::EV_HUP | io::EV_ERR) != 0
        {
            self.read_ready(idx, bits, now, buf);
        }
    }

    fn on_established(&mut self, idx: usize, now: u64) {
        self.count_established(idx, now);
        self.begin_request(idx, now);
    }

    fn count_established(&mut self, idx: usize, now: u64) {
        self.connecting -= 1;
        self.slot_freed(idx, now);
        self.active += 1;
        self.stats.counts.established += 1;
        let sched = self.slab[idx].sched_ns;
        record(&mut self.hists.connect, now.saturating_sub(sched) / 1000);
    }

    /// Where the handshake completes inside connect() (loopback: the SYN-ACK is processed
    /// before connect returns), sends the first request at once and registers the socket
    /// without EPOLLOUT: one readiness event and its wake-up less per connection. A socket
    /// still in SYN_SENT answers EAGAIN and takes the usual path (false); true when the
    /// connection was dealt with here (its request sent, or it failed and is finished).
    fn send_with_connect(&mut self, idx: usize, now: u64) -> bool {
        let req = self.pick_request();
        let fd = self.slab[idx].fd;
        let n = match io::send(fd, &self.requests[req]) {
            Ok(n) => n,
            Err(libc::EAGAIN) => {
                self.early.missed();
                return false;
            }
            Err(e) => {
                // Refused or reset during the handshake: the same count as from an epoll error.
                self.count_error(e);
                self.finish(idx, now);
                return true;
            }
        };
        self.early.hit();
        let whole = n == self.requests[req].len();
        let mask = if whole {
            EV_RESPONSE
        } else {
            EV_RESPONSE | io::EV_OUT
        };
        if let Err(e) = self.epoll.add(fd, mask, self.key(idx)) {
            self.count_error(e);
            self.finish(idx, now);
            return true;
        }
        self.slab[idx].out_armed = !whole;
        // Established when connect() returned, which is after `now` (taken before socket()).
        let t = self.now_ns();
        self.count_established(idx, t);
        self.setup_request(idx, req, t);
        self.request_bytes_sent(idx, n);
        true
    }

    /// The next request of the mix.
    fn pick_request(&mut self) -> usize {
        if self.requests.len() == 1 {
            0
        } else {
            let total = *self.mix_cum.last().unwrap_or(&1.0);
            let x = self.rng.gen::<f64>() * total;
            self.mix_cum
                .partition_point(|&c| c <= x)
                .min(self.requests.len() - 1)
        }
    }

    /// Picks the next request of the mix and starts sending it.
    fn begin_request(&mut self, idx: usize, now: u64) {
        let req = self.pick_request();
        self.setup_request(idx, req, now);
        self.send_more(idx, now);
    }

    /// A connection's next request, nothing of it sent yet; its response timeout armed.
    fn setup_request(&mut self, idx: usize, req: usize, now: u64) {
        let c = &mut self.slab[idx];
        c.req = req as u16;
        c.sent = 0;
        c.saw_first_byte = false;
        c.parser.reset();
        c.phase = Phase::Sending;
        let deadline = now + (self.cfg.response_timeout_s * 1e9) as u64;
        self.arm(idx, deadline);
    }

    fn send_more(&mut self, idx: usize, now: u64) {
        let (fd, req, sent) = {
            let c = &self.slab[idx];
            (c.fd, c.req as usize, c.sent as usize)
        };
        let blocked = match io::send(fd, &self.requests[req][sent..]) {
            Ok(n) => {
                self.request_bytes_sent(idx, n);
                self.slab[idx].phase == Phase::Sending
            }
            Err(libc::EAGAIN) => true,
            Err(e) => {
                self.count_error(e);
                return self.finish(idx, now);
            }
        };
        // The rest goes out when the socket is writable: make sure that is reported.
        if blocked && !self.slab[idx].out_armed {
            if let Err(e) = self
                .epoll
                .modify(fd, EV_RESPONSE | io::EV_OUT, self.key(idx))
            {
                self.count_error(e);
                return self.finish(idx, now);
            }
            self.slab[idx].out_armed = true;
        }
    }

    /// Accounts `n` more bytes of the current request as sent.
    fn request_bytes_sent(&mut self, idx: usize, n: usize) {
        self.stats.counts.bytes_out += n as u64;
        let c = &mut self.slab[idx];
        c.sent += n as u32;
        if c.sent as usize == self.requests[c.req as usize].len() {
            c.phase = Phase::Receiving;
            c.requests += 1;
            self.stats.counts.requests += 1;
        }
    }

    fn read_ready(&mut self, idx: usize, bits: u32, now: u64, buf: &mut [u8]) {
        let fd = self.slab[idx].fd;
        loop {
            match io::recv(fd, buf) {
                Ok(0) => {
                    let phase = self.slab[idx].phase;
                    if phase == Phase::Draining || phase == Phase::Idle {
                        return self.finish(idx, now);
                    }
                    return match self.slab[idx].parser.eof() {
                        Progress::Done(r) => self.response_done(idx, r, true, now),
                        _ => {
                            self.stats.counts.bad_responses += 1;
                            self.finish(idx, now)
                        }
                    };
                }
                Ok(n) => {
                    self.stats.counts.bytes_in += n as u64;
                    let c = &mut self.slab[idx];
                    if c.phase != Phase::Receiving {
                        continue; // unsolicited bytes after a response: drain them
                    }
                    if !c.saw_first_byte {
                        c.saw_first_byte = true;
                        let sched = c.sched_ns;
                        record(&mut self.hists.ttfb, now.saturating_sub(sched) / 1000);
                    }
                    match self.slab[idx].parser.feed(&buf[..n]) {
                        Progress::NeedMore => {}
                        Progress::Done(r) => {
                            // Peer's FIN already queued: the read that would see it is saved.
                            let fin = bits & (io::EV_RDHUP | io::EV_HUP) != 0;
                            self.response_done(idx, r, fin, now);
                            if self.slab[idx].phase != Phase::Draining {
                                return;
                            }
                        }
                        Progress::Invalid(_) => {
                            self.stats.counts.bad_responses += 1;
                            return self.finish(idx, now);
                        }
                    }
                }
                Err(libc::EAGAIN) => return,
                Err(e) => {
                    self.count_error(e);
                    return self.finish(idx, now);
                }
            }
        }
    }

    fn response_done(&mut self, idx: usize, r: http::Response, fin: bool, now: u64) {
        self.stats.counts.responses += 1;
        if (200..300).contains(&r.status) {
            self.stats.counts.responses_2xx += 1;
        } else {
            self.stats.counts.responses_non2xx += 1;
        }
        let c = &self.slab[idx];
        record(&mut self.hists.total, now.saturating_sub(c.sched_ns) / 1000);
        let retiring = c.client && self.clients_alive > self.closed_target();
        let more = self.cfg.keepalive
            && !r.close
            && !fin
            && c.requests < self.cfg.requests_per_conn
            && !self.paused
            && !retiring;
        if more {
            if c.client && self.cfg.think_s > 0.0 {
                self.slab[idx].phase = Phase::Idle;
                let at = now + (self.cfg.think_s * 1e9) as u64;
                self.arm(idx, at);
            } else {
                self.slab[idx].sched_ns = now;
                self.begin_request(idx, now);
            }
        } else if fin || self.cfg.keepalive || !r.close {
            // The FIN is in, or the server means to keep the connection (we end it, our FIN
            // first): close now. Otherwise wait for the server's FIN.
            self.finish(idx, now);
        } else {
            self.slab[idx].phase = Phase::Draining;
            let at = now + (self.cfg.response_timeout_s * 1e9) as u64;
            self.arm(idx, at);
        }
    }

    /// Closes a connection and frees its slot; a closed client then thinks and goes again.
    fn finish(&mut self, idx: usize, now: u64) {
        let c = self.slab[idx];
        match c.phase {
            Phase::Connecting => {
                self.connecting -= 1;
                // A timed-out slot was due to reconnect at its deadline, not when we noticed.
                self.slot_freed(idx, c.deadline_ns.min(now));
            }
            Phase::Free => return,
            _ => self.active -= 1,
        }
        io::close(c.fd);
        self.slab[idx].phase = Phase::Free;
        self.release(idx);
        if c.client {
            let at = now + (self.cfg.think_s * 1e9) as u64;
            self.client_done(at);
        }
    }

    /// Records when an sclient slot became free (flat out only; scheduled modes have arrivals).
    fn slot_freed(&mut self, idx: usize, due: u64) {
        if self.starts() == Starts::FreeSlots && !self.slab[idx].client {
            self.slots_due.push(Reverse(due));
        }
    }

    // ---- closed clients ------------------------------------------------------------------

    fn closed_target(&self) -> u32 {
        if self.cfg.mode == Mode::Closed && !self.paused {
            self.cfg.clients
        } else {
            0
        }
    }

    /// A client's request ended: it goes again at `at`, or retires if there are too many.
    fn client_done(&mut self, at: u64) {
        if self.clients_alive > self.closed_target() {
            self.clients_alive -= 1;
        } else {
            self.wakes.push(Reverse(at));
        }
    }

    /// Starts clients up to the target, all at `now`.
    fn spawn_clients(&mut self, now: u64) {
        while self.clients_alive < self.closed_target() {
            self.clients_alive += 1;
            self.wakes.push(Reverse(now));
        }
    }

    // ---- control -------------------------------------------------------------------------

    fn apply_controls(&mut self) {
        while let Ok(msg) = self.control_rx.try_recv() {
            let now = self.now_ns();
            let t = now as f64 / 1e9;
            match msg {
                Err(line) => self.notices.push(line),
                Ok(c) => {
                    if let Err(e) = self.apply(c, now, t) {
                        self.notices.push(format!("control refused: {e}"));
                    }
                }
            }
        }
    }

    fn apply(&mut self, c: Control, now: u64, t: f64) -> anyhow::Result<()> {
        match c {
            Control::SetRate { rate } => {
                self.schedule.set_rate(rate, t)?;
                self.cfg.rate = rate;
            }
            Control::SetBurst { burst } => {
                self.schedule.set_burst(burst.as_ref(), t)?;
                self.cfg.burst = burst;
            }
            Control::SetMode { mode } => {
                self.cfg.mode = mode;
                self.schedule.restart(t);
                self.spawn_clients(now);
            }
            Control::SetSockets { sockets } => {
                anyhow::ensure!(sockets >= 1, "sockets must be >= 1, got 0");
                self.cfg.sockets = sockets;
            }
            Control::SetClients { clients } => {
                self.cfg.clients = clients;
                self.spawn_clients(now);
                self.retire_idle_clients();
            }
            Control::SetTimeout { timeout_s } => {
                anyhow::ensure!(
                    timeout_s.is_finite() && timeout_s > 0.0,
                    "timeout_s must be > 0, got {timeout_s}"
                );
                self.cfg.timeout_s = timeout_s;
            }
            Control::Pause => {
                self.paused = true;
                self.retire_idle_clients();
            }
            Control::Resume => {
                self.paused = false;
                // Continue from now: the paused time is not caught up.
                self.schedule.restart(t);
                self.spawn_clients(now);
            }
            Control::Drain => {
                // As a pause that never resumes: in-flight attempts run to their end.
                self.paused = true;
                self.draining = true;
                self.retire_idle_clients();
            }
            Control::Stop => self.stop = true,
        }
        Ok(())
    }

    /// Thinking clients beyond the target retire at once; busy ones when their request ends.
    fn retire_idle_clients(&mut self) {
        while self.clients_alive > self.closed_target() && self.wakes.pop().is_some() {
            self.clients_alive -= 1;
        }
    }

    fn close_all(&mut self) {
        for c in &mut self.slab {
            if c.phase != Phase::Free {
                io::close(c.fd);
                c.phase = Phase::Free;
            }
        }
        self.connecting = 0;
        self.active = 0;
    }

    // ---- stats ---------------------------------------------------------------------------

    /// Writes one stats line; false when stdout is gone (the controller died).
    fn emit_stats(&mut self, now: u64, last: bool) -> bool {
        let interval_ns = self.cfg.stats_interval_ms * 1_000_000;
        let t0 = self.last_stats_ns as f64 / 1e9;
        let t1 = now as f64 / 1e9;
        let cpu = io::cpu_times();
        let cfg = &self.cfg;
        let target_rate = if self.paused {
            0.0
        } else if self.schedule.rate().is_some() && cfg.mode != Mode::Closed && t1 > t0 {
            self.schedule.expected_arrivals(t0, t1) / (t1 - t0)
        } else {
            offered_rate(
                cfg.mode,
                None,
                cfg.sockets,
                cfg.timeout_s,
                cfg.clients,
                cfg.think_s,
            )
        };
        let mut s = std::mem::take(&mut self.stats);
        self.stats.worker = s.worker;
        self.stats.seq = s.seq + 1;
        s.t_s = t1;
        s.interval_s = t1 - t0;
        s.target_rate = target_rate;
        s.connecting = self.connecting;
        s.active = self.active;
        s.cpu_user_s = (cpu.0 - self.last_cpu.0).max(0.0);
        s.cpu_sys_s = (cpu.1 - self.last_cpu.1).max(0.0);
        s.connect_us = HistDelta::drain(&mut self.hists.connect);
        s.ttfb_us = HistDelta::drain(&mut self.hists.ttfb);
        s.total_us = HistDelta::drain(&mut self.hists.total);
        s.last = last;
        if !self.notices.is_empty() {
            s.notice = Some(self.notices.join("; "));
            self.notices.clear();
        }
        self.last_cpu = cpu;
        self.last_stats_ns = now;
        while self.next_stats_ns <= now {
            self.next_stats_ns += interval_ns;
        }
        self.out.clear();
        if serde_json::to_writer(&mut self.out, &s).is_err() {
            return true;
        }
        self.out.push(b'\n');
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&self.out).is_ok() && stdout.flush().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::EarlySend;

    #[test]
    fn early_send_stays_on_while_it_works_and_backs_off_to_one_try_in_64() {
        let mut e = EarlySend::default();
        for _ in 0..100 {
            assert!(e.try_now());
            e.hit();
        }
        // A path with a real round trip: every try misses.
        let mut tries = 0;
        for _ in 0..640 {
            if e.try_now() {
                tries += 1;
                e.missed();
            }
        }
        assert!(tries <= 4 + 10, "{tries} tries in 640 attempts");
        // Back on a fast path, the periodic try finds it working again.
        for _ in 0..64 {
            if e.try_now() {
                e.hit();
            }
        }
        assert!(e.try_now());
    }
}
