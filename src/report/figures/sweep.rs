//! The sweep figures: the ones a sweep parameter's kind calls for, then those every sweep gets
//! (latency, capacity, accept queue, connection states, CPU).

use super::{param_kind, Ctx, ParamKind};
use crate::model::summary::SummaryCol;
use crate::model::sweep::SweepParam;
use crate::report::plots::{Figure, LineKind, Panel, Series};
use crate::report::read::RunData;

const RESP: (SummaryCol, &str, LineKind) = (
    SummaryCol::ThroughputPerS,
    "responses/s (throughput)",
    LineKind::Solid,
);
const ATT: (SummaryCol, &str, LineKind) = (
    SummaryCol::AttemptsPerS,
    "connection attempts/s",
    LineKind::Dashed,
);

/// The sweep figures for these runs (one run, or several overlaid): the figures chosen by the
/// sweep parameter's kind, then those every sweep gets; figures without data are left out.
pub fn sweep_figures(ctx: &Ctx) -> Vec<Figure> {
    let kind = param_kind(ctx.param);
    let mut figs = kind_figures(ctx, kind);
    figs.push(latency_figure(ctx));
    figs.extend(super::classes::classes_figure(ctx));
    if ctx.has(SummaryCol::CapacityLatencyMs) {
        figs.push(capacity_figure(ctx));
    }
    figs.push(accept_queue_figure(ctx));
    // Path sweeps already drew their connections figure among the kind's own.
    if !matches!(kind, ParamKind::Path(_)) {
        figs.push(connection_states_figure(ctx));
    }
    figs.push(cpu_figure(ctx));
    figs.retain(|f| f.has_data());
    figs
}

fn panel(y_label: &str, series: Vec<Series>) -> Panel {
    Panel {
        y_label: y_label.into(),
        series,
    }
}

/// The figures that only a sweep of this kind of parameter gets (its throughput view first).
fn kind_figures(ctx: &Ctx, kind: ParamKind) -> Vec<Figure> {
    match kind {
        ParamKind::Rate if ctx.burst_curves() => {
            let mut s = ctx.series(&[RESP]);
            s.push(ctx.identity("served = average offered (y = x)"));
            vec![ctx.figure(
                "throughput",
                "Throughput under bursty load vs average rate, one curve per (peak/average, % of time at peak) (cf. seed 000 Fig. 8)",
                vec![panel("responses/s", s)],
            )]
        }
        ParamKind::Rate => {
            // Offered far past what is served (Fig. 7's 20x), the attempts and y = x lines
            // would squash the throughput to the axis: they are the x axis again, left out.
            let far_past = ctx.max(SummaryCol::AttemptsPerS)
                > 4.0 * ctx.max(SummaryCol::ThroughputPerS).max(1.0);
            let s = if far_past {
                ctx.series(&[RESP])
            } else {
                let mut s = ctx.series(&[RESP, ATT]);
                s.push(ctx.identity("offered = served (y = x)"));
                s
            };
            let mut panels = vec![panel("rate (1/s)", s)];
            // Fig. 7's mechanism: what the server's CPUs spend on receiving, below its output.
            if ctx.has(SummaryCol::ServerCoresSoftirqPct) {
                panels.push(panel(
                    "server's CPUs in softirq (% of their time)",
                    ctx.series(&[(
                        SummaryCol::ServerCoresSoftirqPct,
                        "softirq % (packet receive)",
                        LineKind::Solid,
                    )]),
                ));
            }
            vec![ctx.figure(
                "throughput",
                "Throughput vs offered rate (cf. seed 000 Fig. 7)",
                panels,
            )]
        }
        ParamKind::Count => count_figures(ctx),
        ParamKind::Path(knob) => {
            let (what, seed) = knob.what();
            let cf = seed.map(|s| format!(" (cf. {s})")).unwrap_or_default();
            vec![
                ctx.figure(
                    "throughput",
                    &format!("Server throughput vs {what}{cf}"),
                    vec![panel("rate (1/s)", ctx.series(&[RESP, ATT]))],
                ),
                ctx.figure(
                    "connections",
                    &format!("Active connections and server processes vs {what}{cf}"),
                    vec![panel(
                        "count",
                        ctx.series(&[
                            (
                                SummaryCol::ClientOpenMean,
                                "connections open at the clients (mean)",
                                LineKind::Solid,
                            ),
                            (
                                SummaryCol::ServerSocketsMean,
                                "open server sockets (mean)",
                                LineKind::Solid,
                            ),
                            (
                                SummaryCol::EstablishedMean,
                                "server ESTABLISHED (mean)",
                                LineKind::Dashed,
                            ),
                            (
                                SummaryCol::ServerProcsMean,
                                "server processes (mean)",
                                LineKind::Dashed,
                            ),
                            (
                                SummaryCol::ServerBusyMean,
                                "server processes busy (mean)",
                                LineKind::Solid,
                            ),
                        ]),
                    )],
                ),
            ]
        }
        ParamKind::Burst => vec![ctx.figure(
            "throughput",
            "Throughput under bursty load (cf. seed 000 Fig. 8)",
            vec![panel(
                "rate (1/s)",
                ctx.series(&[
                    RESP,
                    ATT,
                    (
                        SummaryCol::OfferedRate,
                        "average offered rate",
                        LineKind::Reference,
                    ),
                ]),
            )],
        )],
        ParamKind::Resumed => vec![ctx.figure(
            "handshakes",
            "TLS handshakes vs the share resumed",
            vec![panel(
                "rate (1/s)",
                ctx.series(&[
                    (SummaryCol::HandshakesPerS, "handshakes/s", LineKind::Solid),
                    (
                        SummaryCol::FullHandshakesPerS,
                        "full handshakes/s",
                        LineKind::Dashed,
                    ),
                    (
                        SummaryCol::ResumedHandshakesPerS,
                        "resumed handshakes/s",
                        LineKind::Dashed,
                    ),
                    RESP,
                ]),
            )],
        )],
        ParamKind::Other => vec![ctx.figure(
            "throughput",
            &format!("Throughput vs {}", short_param(ctx.param)),
            vec![panel("rate (1/s)", ctx.series(&[RESP, ATT]))],
        )],
    }
}

/// A count sweep (clients, descriptors, workers): request rate, and Little's Load Factor when
/// the runs measured it.
fn count_figures(ctx: &Ctx) -> Vec<Figure> {
    let title = if ctx.param == Some(SweepParam::Workers) {
        "Request rate vs load-generator workers (the client check of seed 000 §4.3)"
    } else {
        "Request rate vs clients / descriptors (cf. seed 000 Figs. 5 and 6)"
    };
    let mut figs = vec![ctx.figure(
        "request_rate",
        title,
        vec![panel(
            "rate (1/s)",
            ctx.series(&[
                (
                    SummaryCol::AttemptsPerS,
                    "connection attempts/s",
                    LineKind::Solid,
                ),
                (
                    SummaryCol::ThroughputPerS,
                    "responses/s (throughput)",
                    LineKind::Dashed,
                ),
            ]),
        )],
    )];
    if ctx.has(SummaryCol::LittleLoadFactor) {
        let mut s = ctx.series(&[(
            SummaryCol::LittleLoadFactor,
            "Little's Load Factor",
            LineKind::Solid,
        )]);
        s.push(ctx.identity("identity (factor = clients)"));
        figs.push(ctx.figure(
            "little_load_factor",
            "Little's Load Factor vs clients (cf. seed 004 Fig. 3)",
            vec![panel(
                "Little's Load Factor (requests in service, Σ response time / test time)",
                s,
            )],
        ));
    }
    figs
}

fn latency_figure(ctx: &Ctx) -> Figure {
    ctx.figure(
        "latency",
        &format!("Response time vs {}", short_param(ctx.param)),
        vec![panel(
            "response time, connect to last byte (ms)",
            ctx.series(&[
                (SummaryCol::TotalP50Ms, "p50", LineKind::Solid),
                (SummaryCol::TotalP99Ms, "p99", LineKind::Dashed),
            ]),
        )],
    )
}

/// Seed 004's capacity method: the response time at the target's percentile against the
/// target, over the sweep (the first run's `[analysis] capacity`).
fn capacity_figure(ctx: &Ctx) -> Figure {
    let t = ctx
        .runs
        .first()
        .and_then(|r| r.scenario.as_ref())
        .map(|s| s.analysis.capacity)
        .unwrap_or_default();
    let pct = format!("p{}", t.percentile);
    let mut s = ctx.series(&[(
        SummaryCol::CapacityLatencyMs,
        &format!("{pct} response time"),
        LineKind::Solid,
    )]);
    s.push(ctx.horizontal(
        &format!("target: {pct} < {} ms (seed 004)", t.under_ms()),
        t.under_ms(),
    ));
    ctx.figure(
        "capacity",
        &format!(
            "Capacity: {pct} response time vs {} (seed 004 method)",
            short_param(ctx.param)
        ),
        vec![panel(&format!("{pct} response time (ms)"), s)],
    )
}

/// The accept queue against the first run's listen backlog, above the drops it leads to; an
/// HTTP/3 run's UDP socket in its place (its receive queue, the datagrams dropped there).
fn accept_queue_figure(ctx: &Ctx) -> Figure {
    // Over HTTP/3 no TCP socket listens: its accept queue and listen overflows read 0
    // without measuring anything. A QUIC server's queue is its UDP socket's receive queue.
    let tcp = |r: &RunData| !r.http3();
    let http3 = ctx.runs.iter().filter(|r| r.http3()).count();
    let mut panels = Vec::new();
    if http3 < ctx.runs.len() {
        let mut queue = ctx.series_for(
            &[
                (
                    SummaryCol::AcceptQueueMax,
                    "accept queue max",
                    LineKind::Solid,
                ),
                (
                    SummaryCol::AcceptQueueMean,
                    "accept queue mean",
                    LineKind::Dashed,
                ),
            ],
            tcp,
        );
        if let Some(b) = ctx
            .runs
            .iter()
            .find(|r| tcp(r))
            .and_then(|r| r.scenario.as_ref())
            .map(|s| s.target.backlog)
        {
            queue.push(ctx.horizontal(&format!("listen backlog ({b})"), b as f64));
        }
        panels.push(panel("accept queue (connections)", queue));
    }
    if http3 > 0 {
        let udp = ctx.series_for(
            &[
                (
                    SummaryCol::UdpRcvQueueMaxBytes,
                    "UDP receive queue peak",
                    LineKind::Solid,
                ),
                (
                    SummaryCol::UdpRcvbufBytes,
                    "UDP receive buffer",
                    LineKind::Dashed,
                ),
            ],
            RunData::http3,
        );
        panels.push(panel("server's UDP socket (bytes)", udp));
    }
    // A QUIC connection's connect is its handshake: its timeouts are counted as handshake
    // timeouts, its connect timeouts stay 0.
    let mut drops = ctx.series_for(
        &[
            (
                SummaryCol::ListenOverflowsPerS,
                "listen overflows/s",
                LineKind::Solid,
            ),
            (
                SummaryCol::ConnectTimeoutsPerS,
                "connect timeouts/s",
                LineKind::Dashed,
            ),
        ],
        tcp,
    );
    drops.extend(ctx.series_for(
        &[
            (
                SummaryCol::PortUdpDropsPerS,
                "UDP datagrams dropped/s (port)",
                LineKind::Solid,
            ),
            (
                SummaryCol::HandshakeTimeoutsPerS,
                "QUIC handshake timeouts/s",
                LineKind::Dashed,
            ),
        ],
        RunData::http3,
    ));
    panels.push(panel("drops and failures (1/s)", drops));
    let title = match (http3, ctx.runs.len()) {
        (0, _) => "Accept queue and overflows",
        (h, n) if h == n => "UDP receive queue and drops",
        _ => "Accept queue or UDP receive queue, and drops",
    };
    ctx.figure(
        "accept_queue",
        &format!("{title} vs {}", short_param(ctx.param)),
        panels,
    )
}

/// The TCP sockets' states (none over HTTP/3: its runs are left out, a lone one's figure
/// with them).
fn connection_states_figure(ctx: &Ctx) -> Figure {
    ctx.figure(
        "connections",
        &format!("Connection states vs {}", short_param(ctx.param)),
        vec![panel(
            "count",
            ctx.series_for(
                &[
                    (
                        SummaryCol::EstablishedMean,
                        "ESTABLISHED (mean)",
                        LineKind::Solid,
                    ),
                    (
                        SummaryCol::TimeWaitMean,
                        "TIME_WAIT (mean)",
                        LineKind::Dashed,
                    ),
                ],
                |r| !r.http3(),
            ),
        )],
    )
}

/// The CPU split: the server's own CPUs when the run had a split (their user, system,
/// softirq and irq shares), then the whole machine's; softirq and irq in colors of their own.
fn cpu_figure(ctx: &Ctx) -> Figure {
    let split = |cols: [SummaryCol; 4], y_label: &str| {
        let user_system = ctx.series(&[
            (cols[0], "user %", LineKind::Solid),
            (cols[1], "system %", LineKind::Dashed),
        ]);
        let interrupts = ctx
            .series(&[
                (cols[2], "softirq %", LineKind::Solid),
                (cols[3], "irq %", LineKind::Dashed),
            ])
            .into_iter()
            .map(|mut s| {
                s.color += 5;
                s
            });
        panel(y_label, user_system.into_iter().chain(interrupts).collect())
    };
    let split_run = ctx.has(SummaryCol::ServerCoresUserPct);
    let machine = split(
        [
            SummaryCol::CpuUserPct,
            SummaryCol::CpuSystemPct,
            SummaryCol::CpuSoftirqPct,
            SummaryCol::CpuIrqPct,
        ],
        if split_run {
            "whole machine (% of all CPUs)"
        } else {
            "CPU time (% of all CPUs)"
        },
    );
    if !split_run {
        return ctx.figure(
            "cpu",
            &format!("CPU split vs {} (whole machine)", short_param(ctx.param)),
            vec![machine],
        );
    }
    let server = split(
        [
            SummaryCol::ServerCoresUserPct,
            SummaryCol::ServerCoresSystemPct,
            SummaryCol::ServerCoresSoftirqPct,
            SummaryCol::ServerCoresIrqPct,
        ],
        "the server's CPUs (% of their time)",
    );
    ctx.figure(
        "cpu",
        &format!(
            "CPU split vs {}: the server's own CPUs, and the whole machine",
            short_param(ctx.param)
        ),
        vec![server, machine],
    )
}

fn short_param(param: Option<SweepParam>) -> &'static str {
    match param_kind(param) {
        ParamKind::Rate => "offered rate",
        ParamKind::Count => "clients / descriptors",
        ParamKind::Path(k) => k.label(),
        ParamKind::Burst => "burst",
        ParamKind::Resumed => "resumed share",
        ParamKind::Other => match param {
            None => "sweep point",
            Some(SweepParam::Steer) => "receive steering",
            Some(SweepParam::Syncookies) => "SYN cookies",
            Some(SweepParam::Backlog) => "listen backlog",
            Some(_) => "workload",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over HTTP/3 no TCP socket listens: the figure draws the server's UDP socket (its
    /// receive queue against its buffer, the datagrams dropped there) and the QUIC handshake
    /// timeouts (a QUIC connection's connect timeouts), not an accept queue, listen overflows
    /// and connect timeouts that stay 0; nor TCP socket states. An overlay draws each run's own.
    #[test]
    fn an_http3_runs_queue_is_its_udp_socket_and_its_failures_its_handshake_timeouts() {
        let run = |name: &str, quic: bool| {
            let mut p = serde_json::json!({"point": 1, "mode": "sclient", "param": "load.rate",
                "value": "3000", "offered_rate": 3000.0, "connect_timeouts_per_s": 0.0,
                "handshake_timeouts_per_s": 1641.0, "listen_overflows_per_s": 0.0,
                "accept_queue_max": 0.0, "accept_queue_mean": 0.0, "established_mean": 0.0,
                "time_wait_mean": 1.0});
            if quic {
                for (k, v) in [
                    ("quic_handshakes_full_per_s", 1122.0),
                    ("udp_rcv_queue_max_bytes", 212992.0),
                    ("udp_rcvbuf_bytes", 212992.0),
                    ("port_udp_drops_per_s", 8632.0),
                ] {
                    p[k] = v.into();
                }
            }
            let json = serde_json::json!({"meta": {}, "points": [p]});
            let (meta, points) =
                crate::report::read::parse_summary_json(&json.to_string()).unwrap();
            RunData {
                name: name.into(),
                meta,
                points,
                ..Default::default()
            }
        };
        let names = |f: &Figure, i: usize| -> Vec<String> {
            f.panels[i].series.iter().map(|s| s.name.clone()).collect()
        };
        let h3 = [run("h3", true)];
        let f = accept_queue_figure(&Ctx::new(&h3, String::new()));
        assert_eq!(f.title, "UDP receive queue and drops vs offered rate");
        assert_eq!(f.panels.len(), 2);
        assert_eq!(f.panels[0].y_label, "server's UDP socket (bytes)");
        assert_eq!(
            names(&f, 0),
            ["UDP receive queue peak", "UDP receive buffer"]
        );
        assert_eq!(
            names(&f, 1),
            [
                "UDP datagrams dropped/s (port)",
                "QUIC handshake timeouts/s"
            ]
        );
        assert_eq!(f.panels[1].series[0].points[0].y, Some(8632.0));
        assert_eq!(f.panels[1].series[1].points[0].y, Some(1641.0));
        assert!(!connection_states_figure(&Ctx::new(&h3, String::new())).has_data());

        let tcp = [run("tcp", false)];
        let f = accept_queue_figure(&Ctx::new(&tcp, String::new()));
        assert_eq!(f.title, "Accept queue and overflows vs offered rate");
        assert_eq!(names(&f, 0), ["accept queue max", "accept queue mean"]);
        assert_eq!(names(&f, 1), ["listen overflows/s", "connect timeouts/s"]);
        assert!(connection_states_figure(&Ctx::new(&tcp, String::new())).has_data());

        // Overlaid, each run draws its own queue and failures, none the other's zeros.
        let both = [run("tcp", false), run("h3", true)];
        let f = accept_queue_figure(&Ctx::new(&both, String::new()));
        assert_eq!(f.panels.len(), 3);
        let of = |i: usize| -> Vec<String> {
            names(&f, i)
                .iter()
                .map(|n| n.split('\n').next().unwrap().to_string())
                .collect()
        };
        assert_eq!(of(0), ["tcp", "tcp"]);
        assert_eq!(of(1), ["h3", "h3"]);
        assert_eq!(of(2), ["tcp", "tcp", "h3", "h3"]);
        let s = connection_states_figure(&Ctx::new(&both, String::new()));
        assert!(s.panels[0].series.iter().all(|s| s.name.starts_with("tcp")));
    }
}
