//! Synthetic lab states and a fake `LabControl` for the TUI's tests and its render benchmark:
//! a store filled with rows from a simple saturating-server model (deterministic, no clock),
//! and a lab whose commands go through `lab::knobs::apply_knobs` like the core's.

use crate::lab::client_agg::ClientBound;
use crate::lab::control::LabControl;
use crate::lab::knobs::{apply_knobs, Change, Command, Knobs, Reply};
use crate::lab::state::{LabState, LiveLatency, Warning};
use crate::load::protocol::{Burst, Mode};
use crate::metrics::store::EventKind;
use crate::model::col as c;
use crate::model::units::{Bandwidth, Dur};
use crate::net::spec::PathSpec;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

/// Knobs of a two-path open-loop run at 1000/s.
pub fn knobs() -> Knobs {
    Knobs {
        mode: Mode::Open,
        rate: Some(1000.0),
        sockets: 1000,
        clients: 16,
        timeout: Duration::from_millis(500),
        burst: Burst {
            ratio: 4.0,
            fraction: 0.1,
            period_s: 10.0,
        },
        burst_on: false,
        paused: false,
        paths: vec![
            PathSpec {
                name: "near".into(),
                ..PathSpec::default()
            },
            PathSpec {
                name: "far".into(),
                rtt: Dur(Duration::from_millis(100)),
                bandwidth: Some(Bandwidth(10_000_000)),
                ..PathSpec::default()
            },
        ],
        selected_path: 0,
        lab_off: None,
        // The rest as a default scenario's (no TLS, HTTP/1.0): a new knob needs no line here.
        ..crate::lab::knobs::knobs_of(&crate::scenario::default_scenario())
    }
}

/// The model behind the synthetic rows.
#[derive(Debug, Clone)]
pub struct Synth {
    /// Seconds of rows to generate (at `interval_s`).
    pub secs: f64,
    pub interval_s: f64,
    /// Offered rate at time t (attempts/s the client manages to make).
    pub offered: fn(f64) -> f64,
    /// Target rate (the knob) at time t.
    pub target: fn(f64) -> f64,
    /// Server capacity, responses/s.
    pub capacity: f64,
    pub queue_limit: f64,
    pub cores: usize,
    /// Without pcap there is no SYN/s column (drawn "n/a").
    pub pcap: bool,
    /// Client schedule lag and worker CPU (client-bound runs).
    pub lag_ms: f64,
    pub worker_cpu: f64,
}

impl Default for Synth {
    fn default() -> Self {
        Synth {
            secs: 90.0,
            interval_s: 0.2,
            offered: |_| 1000.0,
            target: |_| 1000.0,
            capacity: 5000.0,
            queue_limit: 128.0,
            cores: 4,
            pcap: true,
            lag_ms: 0.5,
            worker_cpu: 12.0,
        }
    }
}

/// Fills `st.store` with rows from `m` and sets elapsed time and per-core CPU.
pub fn fill(st: &mut LabState, m: &Synth) {
    let n = (m.secs / m.interval_s).round() as usize;
    let mut cores = Vec::new();
    for i in 1..=n {
        let t = i as f64 * m.interval_s;
        // A small deterministic wobble so lines look measured, not drawn with a ruler.
        let wob = 1.0 + 0.03 * (t * 1.7).sin();
        let o = (m.offered)(t);
        let load = (o / m.capacity).min(1.0);
        let over = (o - m.capacity).max(0.0);
        let done = o.min(m.capacity) * wob;
        let queue = if over > 0.0 {
            m.queue_limit
        } else {
            (m.queue_limit * load.powi(4) * 0.3 * wob).round()
        };
        let user = 5.0 + 45.0 * load * wob;
        let system = 3.0 + 22.0 * load;
        let (irq, softirq) = (0.5 + load, 2.0 + 12.0 * load);
        let idle = (100.0 - user - system - irq - softirq).max(0.0);
        let row = vec![
            (c::TARGET_RATE, Some((m.target)(t))),
            (
                c::SYN_IN,
                m.pcap
                    .then_some(o * wob * (1.0 + 0.1 * (over > 0.0) as u8 as f64)),
            ),
            (c::ATTEMPTS, Some(o * wob)),
            (c::ESTABLISHED, Some(done)),
            (c::RESPONSES, Some(done * 0.99)),
            (c::SERVER_RESPONSES, Some(done * 0.99)),
            (c::ERRORS, Some(over * 0.02)),
            (c::CONNECT_TIMEOUTS, Some(over * 0.9)),
            (c::REFUSED, Some(0.0)),
            (c::RESETS, Some(0.0)),
            // One request per connection, as the rows above; errors of each apart.
            (c::REQUESTS, Some(done)),
            (c::CONNECTION_ERRORS, Some(over * 0.9)),
            (c::REQUEST_ERRORS, Some(over * 0.02)),
            (c::CONNECT_P50, Some(0.08 + 0.4 * load.powi(3))),
            (c::CONNECT_P90, Some(0.2 + 2.0 * load.powi(3))),
            // Dropped SYNs are retransmitted after 1 s: the p99 jumps to ~1000 ms.
            (
                c::CONNECT_P99,
                Some(if over > 0.0 { 1003.0 } else { 0.6 + 5.0 * load }),
            ),
            (c::TOTAL_P50, Some(0.3 + 1.5 * load.powi(3))),
            (c::TOTAL_P90, Some(0.9 + 6.0 * load.powi(3))),
            (
                c::TOTAL_P99,
                Some(if over > 0.0 {
                    1012.0
                } else {
                    2.5 + 20.0 * load
                }),
            ),
            (c::IN_FLIGHT, Some(o * 0.001 + over * 0.5)),
            (c::LAG_MAX, Some(m.lag_ms * wob)),
            (c::WORKER_CPU, Some(m.worker_cpu * wob)),
            (c::ACCEPT_QUEUE, Some(queue)),
            (c::ACCEPT_QUEUE_LIMIT, Some(m.queue_limit)),
            (
                c::SYN_RECV,
                Some(if over > 0.0 {
                    256.0
                } else {
                    (2.0 * load * wob).round()
                }),
            ),
            (c::LISTEN_OVERFLOWS, Some(over * wob)),
            (c::ESTABLISHED_SOCKS, Some((done * 0.02 + queue).round())),
            // A lingering close holds most closing connections in FIN_WAIT.
            (c::FIN_WAIT, Some((done * 0.1).round())),
            (c::CLOSE_WAIT, Some(0.0)),
            (c::LAST_ACK, Some((done * 0.002).round())),
            (c::TIME_WAIT, Some((done * t.min(60.0)).round())),
            (c::CPU_USER, Some(user)),
            (c::CPU_SYSTEM, Some(system)),
            (c::CPU_IRQ, Some(irq)),
            (c::CPU_SOFTIRQ, Some(softirq)),
            (c::CPU_IDLE, Some(idle)),
            (c::PROBE_CPU, Some(0.4)),
            // The server's own CPU (the lab's split): its work in user mode, the packets it
            // receives in softirq; the load's CPU apart.
            (c::SERVER_CORES_USER, Some(70.0 * load * wob)),
            (c::SERVER_CORES_SYSTEM, Some(6.0 * load)),
            (c::SERVER_CORES_IRQ, Some(0.5 * load)),
            (
                c::SERVER_CORES_SOFTIRQ,
                Some(2.0 + 20.0 * load + over * 0.002),
            ),
            (c::SERVER_CORES_NET_RX, Some(o * 2.5 * wob)),
            (c::LOAD_CORES_USER, Some(10.0 + 20.0 * load)),
            (c::LOAD_CORES_SYSTEM, Some(20.0 + 25.0 * load)),
            (c::LOAD_CORES_IRQ, Some(0.5)),
            (c::LOAD_CORES_SOFTIRQ, Some(3.0 + 8.0 * load)),
            (c::SERVER_CPU_USER_PCT, Some(70.0 * load * wob)),
            (c::SERVER_CPU_SYS_PCT, Some(5.0 * load)),
            (c::LOAD_CPU, Some(m.worker_cpu * wob + 20.0 * load + 2.0)),
        ];
        st.store.push(t, &row);
        cores = (0..m.cores)
            .map(|k| {
                let skew = 1.0 + 0.15 * (k as f64 - m.cores as f64 / 2.0) / m.cores as f64;
                let (u, s, i) = (user * skew, system * skew, (irq + softirq) * skew);
                [u, s, i, (100.0 - u - s - i).max(0.0)]
            })
            .collect();
        st.elapsed_s = t;
    }
    st.cpu_cores = cores;
    st.interval_s = m.interval_s;
    // The last second, as the core keeps it: the model's figures at the end.
    let last = |col| st.store.last(col).unwrap_or(f64::NAN);
    let (o, done) = ((m.offered)(m.secs), (m.offered)(m.secs).min(m.capacity));
    let over = (o - m.capacity).max(0.0);
    let three = |a, b, c| [last(a), last(b), last(c)];
    st.live.all = LiveLatency {
        window_s: 1.0,
        connect: (done > 0.0).then(|| three(c::CONNECT_P50, c::CONNECT_P90, c::CONNECT_P99)),
        total: (done > 0.0).then(|| three(c::TOTAL_P50, c::TOTAL_P90, c::TOTAL_P99)),
        handshake: None,
        connects: done.round() as u64,
        responses: (done * 0.99).round() as u64,
        connect_timeouts: (over * 0.9).round() as u64,
        other_errors: (over * 0.02).round() as u64,
    };
}

fn base(name: &str) -> LabState {
    let mut st = LabState::new(name, knobs(), 0.2);
    st.target = "built-in event server 198.18.1.2:80".into();
    st.backend = "router (user space)".into();
    st.lab = "rootless (user namespace)".into();
    st.cpus = crate::lab::state::CpuView {
        server: vec![1],
        load: vec![0],
        line:
            "server on CPU 1, load (workers, router, controller) on CPU 0 (the lab's default split)"
                .into(),
        steer: Some(crate::model::Steer::Server),
        steer_refused: None,
    };
    st
}

/// A run where the load is paused: rates at zero, no pcap (SYN/s "n/a").
pub fn idle() -> LabState {
    let mut st = base("default");
    st.knobs.paused = true;
    fill(
        &mut st,
        &Synth {
            secs: 30.0,
            offered: |_| 0.0,
            target: |_| 0.0,
            pcap: false,
            worker_cpu: 0.0,
            ..Synth::default()
        },
    );
    st.warn(Warning::NoPcap);
    st.last_action = Some(Reply::Applied(Change::Paused(true)));
    st
}

/// 2000/s offered to a 5000/s server: achieved = offered, short queue.
pub fn under_load() -> LabState {
    let mut st = base("default");
    st.knobs.rate = Some(2000.0);
    fill(
        &mut st,
        &Synth {
            offered: |t| if t < 30.0 { 1000.0 } else { 2000.0 },
            target: |t| if t < 30.0 { 1000.0 } else { 2000.0 },
            ..Synth::default()
        },
    );
    st.store
        .event(30.0, EventKind::Change, "rate 1000/s -> 2000/s");
    st.last_action = Some(Reply::Applied(Change::Load {
        knob: crate::model::LoadKnob::Rate,
        from: Some(1000.0),
        to: 2000.0,
    }));
    st
}

/// 12000/s offered to a 5000/s server: queue full, overflows, SYN retransmits at 1 s.
pub fn overloaded() -> LabState {
    let mut st = base("overload");
    st.knobs.rate = Some(12000.0);
    st.knobs.selected_path = 1;
    fill(
        &mut st,
        &Synth {
            offered: |t| if t < 50.0 { 3000.0 } else { 12000.0 },
            target: |t| if t < 50.0 { 3000.0 } else { 12000.0 },
            ..Synth::default()
        },
    );
    st.store.event(50.0, EventKind::Change, "step 3: 12000/s");
    st.store.event(70.0, EventKind::Mark, "mark 1");
    st.step = Some((3, 5));
    st.caption = Some("the accept queue is full: SYNs are now dropped".into());
    st.last_action = Some(Reply::Applied(Change::Load {
        knob: crate::model::LoadKnob::Rate,
        from: Some(3000.0),
        to: 12000.0,
    }));
    let verdict = |check: &str, measured: f64, limit: f64| crate::report::thresholds::Verdict {
        check: check.into(),
        source: "threshold[0]".into(),
        point: Some(1),
        value: String::new(),
        measured: Some(measured),
        limit: Some(limit),
        passed: measured <= limit,
        message: String::new(),
    };
    st.verdicts = vec![
        verdict("errors_per_s <= 100", 0.0, 100.0),
        verdict("total_p99_ms <= 50", 180.0, 50.0),
    ];
    st
}

/// 50000/s asked, the client manages 20000/s: lagging, workers at 100 % CPU.
pub fn client_bound() -> LabState {
    let mut st = base("default");
    st.knobs.rate = Some(50000.0);
    st.knobs.mode = Mode::Sclient;
    fill(
        &mut st,
        &Synth {
            offered: |t| if t < 40.0 { 4000.0 } else { 20000.0 },
            target: |t| if t < 40.0 { 4000.0 } else { 50000.0 },
            capacity: 60000.0,
            lag_ms: 800.0,
            worker_cpu: 99.0,
            ..Synth::default()
        },
    );
    st.warn(Warning::ClientBound(vec![
        ClientBound::LateForT {
            unit: "attempts",
            lag_s: 0.8,
            of_t: 1.6,
        },
        ClientBound::WorkerCpu { cpu: 0.99 },
    ]));
    st.warn(Warning::PortsRunningOut);
    st
}

/// A lesson in the lab: 800/s through a 50 ms path, a three-line caption at 80 columns, the
/// delay router late (a steady note) and no pcap (another).
pub fn lesson() -> LabState {
    let mut st = base("lesson-wan");
    st.knobs.rate = Some(800.0);
    st.knobs.paths.truncate(1);
    st.knobs.paths[0].name = "wan".into();
    st.knobs.paths[0].rtt = Dur(Duration::from_millis(50));
    fill(
        &mut st,
        &Synth {
            offered: |_| 800.0,
            target: |_| 800.0,
            capacity: 1200.0,
            pcap: false,
            ..Synth::default()
        },
    );
    st.step = Some((2, 8));
    st.caption = Some(
        "50 ms round trip: ~800/s x ~0.15 s = over 100 connections are held at once, most of \
         them closing (FIN_WAIT). Same rate, many more connections: see held and FIN_WAIT."
            .into(),
    );
    st.store.event(25.0, EventKind::Mark, "50 ms");
    st.warn(Warning::NoPcap);
    st.warn(Warning::RouterLate(2055));
    st
}

/// A Retry flood over HTTP/3 (quic-handshake-flood-retry.toml): an S-Client offering 4000
/// handshakes/s to a server that completes 3000, each first Initial answered by a Retry; the
/// server's UDP socket buffer full and dropping. The rows carry the workers' QUIC counts (the
/// load speaks HTTP/3) and the port's UDP figures.
pub fn quic_retry_flood() -> LabState {
    let mut st = base("quic-handshake-flood-retry");
    st.tls = "TLS 1.3 X25519, tickets".into();
    let k = &mut st.knobs;
    (k.mode, k.rate, k.sockets) = (Mode::Sclient, Some(4000.0), 20000);
    (k.resumed, k.streams, k.requests_per_conn) = (Some(0.0), Some(1), Some(1));
    k.paths.clear();
    fill(
        &mut st,
        &Synth {
            offered: |t| if t < 40.0 { 2000.0 } else { 4000.0 },
            target: |t| if t < 40.0 { 2000.0 } else { 4000.0 },
            capacity: 3000.0,
            pcap: false,
            ..Synth::default()
        },
    );
    // The same rows with the QUIC columns: Initials twice an attempt (its first and the one
    // after the Retry), what the server cannot take dropped from its buffer.
    let cols = st.store.columns().to_vec();
    let mut store = crate::metrics::store::Store::new(1000);
    for (i, &t) in st.store.times().iter().enumerate() {
        let v = |c| st.store.col(c).map(|x| x[i]).unwrap_or(0.0);
        let first = v(c::ATTEMPTS);
        let drops = (first - 3000.0).max(0.0);
        // No TCP listener to overflow: the drops are the UDP socket's.
        let mut row: Vec<_> = cols
            .iter()
            .map(|&c| (c, Some(v(c)).filter(|x| !x.is_nan())))
            .map(|(c, x)| {
                (
                    c,
                    if c == c::LISTEN_OVERFLOWS {
                        Some(0.0)
                    } else {
                        x
                    },
                )
            })
            .collect();
        row.extend([
            (c::QUIC_PACKETS_SENT, Some(3.0 * first)),
            // QUIC's handshakes count in the TLS columns too (all full here).
            (c::QUIC_HANDSHAKES_FULL, Some(v(c::ESTABLISHED))),
            (c::FULL_HANDSHAKES, Some(v(c::ESTABLISHED))),
            (c::RESUMED_HANDSHAKES, Some(0.0)),
            (c::QUIC_RETRY, Some(first * 0.99)),
            (c::SERVER_QUIC_RETRIES, Some(first)),
            (c::QUIC_INITIAL_IN_PER_S, Some(2.0 * first)),
            (c::QUIC_FIRST_INITIAL_PER_S, Some(first)),
            (c::PORT_UDP_DROPS_PER_S, Some(drops)),
            (c::UDP_RCVBUF_ERRORS_PER_S, Some(drops)),
            (
                c::UDP_RCV_QUEUE,
                Some(if drops > 0.0 { 213_000.0 } else { 0.0 }),
            ),
            (c::UDP_RCVBUF, Some(212_992.0)),
            (c::RMEM_MAX, Some(212_992.0)),
        ]);
        store.push(t, &row);
    }
    st.store = store;
    st
}

/// The flood step of `lesson-quic.toml` (step 3 of 4) as a real run showed it at 80x24: 20,000
/// full handshakes/s asked of an S-Client that starts ~3,000, the server completing a few
/// hundred; its UDP socket dropping 9,000 datagrams/s while the queue the samples find is a
/// fifth of its buffer; the caption's four lines, both checks held, other work on the
/// server's CPU (the busy banner), CLIENT-BOUND and two more alarms.
pub fn quic_lesson_flood() -> LabState {
    let mut st = base("lesson-quic");
    st.tls = "TLS 1.3 X25519, tickets".into();
    // Over loopback: no steering said.
    st.cpus.steer = None;
    let k = &mut st.knobs;
    (k.mode, k.rate, k.sockets) = (Mode::Sclient, Some(20000.0), 20000);
    k.timeout = Duration::from_secs(1);
    (k.resumed, k.streams, k.requests_per_conn) = (Some(0.0), Some(1), Some(1));
    k.paths.clear();
    st.step = Some((3, 4));
    st.caption = Some(
        "20,000 full handshakes/s offered, past what the server's core can do: the Initials \
         keep arriving, its UDP socket's receive buffer fills and the kernel drops what it \
         cannot hold (Udp RcvbufErrors), so handshakes time out at the clients instead of \
         queueing as SYNs would."
            .into(),
    );
    st.expect = [
        "quic_handshakes_full_per_s < 0.9 * target_rate",
        "quic_handshake_timeouts_per_s > 0",
    ]
    .iter()
    .map(|t| crate::model::expect::Expect::parse(t).expect("a check"))
    .collect();
    let mut store = crate::metrics::store::Store::new(1000);
    for i in 1..=300 {
        let t = f64::from(i) * 0.2;
        let flood = t >= 25.0;
        let wob = 1.0 + 0.03 * (t * 1.7).sin();
        let (target, first) = if flood {
            (20000.0, 3000.0 * wob)
        } else {
            (200.0, 200.0 * wob)
        };
        let (full, drops, timeouts) = if flood {
            (365.0 * wob, 9000.0 * wob, 2600.0 * wob)
        } else {
            (200.0 * wob, 0.0, 0.0)
        };
        let responses = if flood { 108.0 } else { full };
        store.push(
            t,
            &[
                (c::TARGET_RATE, Some(target)),
                (c::ATTEMPTS, Some(first)),
                (c::ESTABLISHED, Some(full)),
                (c::REQUESTS, Some(full)),
                (c::RESPONSES, Some(responses)),
                (c::SERVER_RESPONSES, Some(responses)),
                (c::CONNECTION_ERRORS, Some(if flood { 4000.0 } else { 0.0 })),
                (c::REQUEST_ERRORS, Some(0.0)),
                (c::ERRORS, Some(if flood { 4000.0 } else { 0.0 })),
                (c::CONNECT_TIMEOUTS, Some(timeouts)),
                (c::TOTAL_P50, Some(if flood { 3774.0 } else { 3.4 })),
                (c::TOTAL_P90, Some(if flood { 4100.0 } else { 6.0 })),
                (c::TOTAL_P99, Some(if flood { 4243.0 } else { 10.7 })),
                (c::QUIC_PACKETS_SENT, Some(3.0 * first)),
                (c::QUIC_HANDSHAKES_FULL, Some(full)),
                (c::QUIC_HANDSHAKES_RESUMED, Some(0.0)),
                (c::QUIC_HANDSHAKE_TIMEOUTS, Some(timeouts)),
                (c::FULL_HANDSHAKES, Some(full)),
                (c::RESUMED_HANDSHAKES, Some(0.0)),
                (c::QUIC_RETRY, Some(0.0)),
                (c::SERVER_QUIC_RETRIES, Some(0.0)),
                (
                    c::QUIC_INITIAL_IN_PER_S,
                    Some(if flood { 7100.0 } else { 311.0 }),
                ),
                (c::QUIC_FIRST_INITIAL_PER_S, Some(first)),
                (c::PORT_UDP_DROPS_PER_S, Some(drops)),
                (c::UDP_RCVBUF_ERRORS_PER_S, Some(drops)),
                // The samples find the queue a fifth full: the drops came at its peaks.
                (c::UDP_RCV_QUEUE, Some(if flood { 43541.0 } else { 384.0 })),
                (c::UDP_RCVBUF, Some(212_992.0)),
                (c::RMEM_MAX, Some(4_194_304.0)),
                (c::CPU_USER, Some(60.0)),
                (c::CPU_SYSTEM, Some(30.0)),
                (c::CPU_IRQ, Some(1.0)),
                (c::CPU_SOFTIRQ, Some(9.0)),
                (c::CPU_IDLE, Some(0.0)),
                // The server's one CPU busy, 86 % of it other work's.
                (c::SERVER_CORES_USER, Some(80.0)),
                (c::SERVER_CORES_SYSTEM, Some(18.0)),
                (c::SERVER_CORES_IDLE, Some(2.0)),
                (c::SERVER_CPU_USER_PCT, Some(10.0)),
                (c::SERVER_CPU_SYS_PCT, Some(2.0)),
                (c::LOAD_CPU, Some(97.0)),
            ],
        );
        st.elapsed_s = t;
    }
    st.store = store;
    st.store
        .event(25.0, EventKind::Change, "step 3: rate 200/s -> 20000/s");
    st.cpu_cores = vec![[60.0, 30.0, 10.0, 0.0], [60.0, 30.0, 10.0, 0.0]];
    st.live.all = LiveLatency {
        window_s: 1.0,
        total: Some([3774.0, 4100.0, 4243.0]),
        connects: 365,
        responses: 108,
        connect_timeouts: 2600,
        ..Default::default()
    };
    st.warn(Warning::ClientBound(vec![ClientBound::Shortfall {
        started: 10752.0,
        unit: "attempts",
        done: 10752,
        intended: 61417.0,
    }]));
    st.warn(Warning::TlsFailing {
        what: "QUIC handshakes timing out",
        kinds: "9485 in the last 3 s".into(),
        why: "the server's socket is dropping datagrams at its full receive buffer (Udp \
              RcvbufErrors 8829/s, the socket's drops 8829/s), Initials and Finished flights \
              among them"
            .into(),
    });
    st.warn(Warning::CrossCheck(
        "first Initial/s 3683 (repeats left out) vs attempts/s 3861 (-4.6%)".into(),
    ));
    st
}

/// A `LabControl` over a fixed state: commands go through `apply_knobs` (the same limits as the
/// core, every change held at once); marks, steps, snapshots and stop are recorded.
#[derive(Debug)]
pub struct FakeLab {
    pub state: LabState,
    pub pumps: usize,
    pub marks: Vec<String>,
    pub snapshots: Vec<String>,
    pub steps: VecDeque<String>,
    pub commands: Vec<Command>,
    pub stopped: bool,
    /// The folder snapshots are said to be written to.
    pub snapshot_dir: PathBuf,
}

impl FakeLab {
    pub fn new(state: LabState) -> Self {
        FakeLab {
            state,
            pumps: 0,
            marks: Vec::new(),
            snapshots: Vec::new(),
            steps: VecDeque::new(),
            commands: Vec::new(),
            stopped: false,
            snapshot_dir: PathBuf::from("results"),
        }
    }
}

impl LabControl for FakeLab {
    fn state(&self) -> &LabState {
        &self.state
    }
    fn pump(&mut self) -> anyhow::Result<()> {
        self.pumps += 1;
        Ok(())
    }
    fn command(&mut self, cmd: Command) -> Reply {
        self.commands.push(cmd.clone());
        // A fake lab applies every change at once (no network lab to refuse a path change).
        let reply = Reply::from(apply_knobs(&mut self.state.knobs, cmd).map(|(_, c)| c));
        self.state.record(&reply);
        reply
    }
    fn mark(&mut self, label: &str) {
        self.marks.push(label.to_string());
        let t = self.state.elapsed_s;
        self.state.store.event(t, EventKind::Mark, label);
    }
    fn next_step(&mut self) -> Option<String> {
        let caption = self.steps.pop_front()?;
        let (i, n) = self.state.step.unwrap_or((0, self.steps.len() + 1));
        self.state.step = Some((i + 1, n));
        self.state.caption = Some(caption.clone());
        Some(caption)
    }
    fn snapshot(&mut self, screen: &str) -> anyhow::Result<PathBuf> {
        self.snapshots.push(screen.to_string());
        Ok(self
            .snapshot_dir
            .join(format!("snapshot-{}.txt", self.snapshots.len())))
    }
    fn terminal_gone(&mut self) {
        self.state.terminal_gone = true;
        self.state.interrupted = true;
        self.state.finished = true;
    }
    fn stop(&mut self) -> anyhow::Result<()> {
        self.stopped = true;
        Ok(())
    }
}
