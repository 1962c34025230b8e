//! The sweep figures: the ones a sweep parameter's kind calls for, then those every sweep gets
//! (latency, capacity, accept queue, connection states, CPU).

use super::{param_kind, Ctx, ParamKind, P98_TARGET_MS};
use crate::model::summary::SummaryCol;
use crate::model::sweep::SweepParam;
use crate::report::plots::{Figure, LineKind, Panel, Series};

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
    if kind == ParamKind::Rate && ctx.has(SummaryCol::TotalP98Ms) {
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
        ParamKind::Rate => {
            let mut s = ctx.series(&[RESP, ATT]);
            s.push(ctx.identity("offered = served (y = x)"));
            vec![ctx.figure(
                "throughput",
                "Throughput vs offered rate (cf. seed 000 Fig. 7)",
                vec![panel("rate (1/s)", s)],
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

/// Seed 004's capacity method: p98 against its target, over the offered rate.
fn capacity_figure(ctx: &Ctx) -> Figure {
    let mut s = ctx.series(&[(SummaryCol::TotalP98Ms, "p98 response time", LineKind::Solid)]);
    s.push(ctx.horizontal(
        &format!("target: p98 < {P98_TARGET_MS} ms (seed 004)"),
        P98_TARGET_MS,
    ));
    ctx.figure(
        "capacity",
        "Capacity: p98 response time vs offered rate (seed 004 method)",
        vec![panel("p98 response time (ms)", s)],
    )
}

/// The accept queue against the first run's listen backlog, above the drops it leads to.
fn accept_queue_figure(ctx: &Ctx) -> Figure {
    let mut queue = ctx.series(&[
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
    ]);
    if let Some(b) = ctx
        .runs
        .first()
        .and_then(|r| r.scenario.as_ref())
        .map(|s| s.target.backlog)
    {
        queue.push(ctx.horizontal(&format!("listen backlog ({b})"), b as f64));
    }
    let drops = ctx.series(&[
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
    ]);
    ctx.figure(
        "accept_queue",
        &format!("Accept queue and overflows vs {}", short_param(ctx.param)),
        vec![
            panel("accept queue (connections)", queue),
            panel("drops and failures (1/s)", drops),
        ],
    )
}

fn connection_states_figure(ctx: &Ctx) -> Figure {
    ctx.figure(
        "connections",
        &format!("Connection states vs {}", short_param(ctx.param)),
        vec![panel(
            "count",
            ctx.series(&[
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
            ]),
        )],
    )
}

/// The whole machine's CPU split: user and system, then softirq and irq in colors of their own.
fn cpu_figure(ctx: &Ctx) -> Figure {
    let user_system = ctx.series(&[
        (SummaryCol::CpuUserPct, "user %", LineKind::Solid),
        (SummaryCol::CpuSystemPct, "system %", LineKind::Dashed),
    ]);
    let interrupts = ctx
        .series(&[
            (SummaryCol::CpuSoftirqPct, "softirq %", LineKind::Solid),
            (SummaryCol::CpuIrqPct, "irq %", LineKind::Dashed),
        ])
        .into_iter()
        .map(|mut s| {
            s.color += 5;
            s
        });
    ctx.figure(
        "cpu",
        &format!("CPU split vs {} (whole machine)", short_param(ctx.param)),
        vec![panel(
            "CPU time (% of all CPUs)",
            user_system.into_iter().chain(interrupts).collect(),
        )],
    )
}

fn short_param(param: Option<SweepParam>) -> &'static str {
    match param_kind(param) {
        ParamKind::Rate => "offered rate",
        ParamKind::Count => "clients / descriptors",
        ParamKind::Path(k) => k.label(),
        ParamKind::Burst => "burst",
        ParamKind::Resumed => "resumed share",
        ParamKind::Other if param.is_none() => "sweep point",
        ParamKind::Other => "workload",
    }
}
