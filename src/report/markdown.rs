//! report.md: the scenario's story, the summary table with client-bound and failed points
//! marked, the plots, the cross-checks (flagged beyond 2 %), seed 004's capacity, and the
//! backend and machine the numbers came from.

use super::read::{Point, RunData};
use crate::model::summary::{non2xx_flag_pct, SummaryCol, SummaryText};
use crate::model::sweep::SweepParam;
use crate::model::{ProbeScope, Scope};
use crate::probe::crosscheck::{disagrees, syn_tolerance_of, TOLERANCE_PCT};
use std::fmt::Write;

/// Where the machine line came from.
pub struct MachineLine {
    pub text: String,
    /// True when summary.json recorded it; false when read at report time.
    pub recorded: bool,
}

/// One rendered figure: title and paths relative to report.md.
pub struct PlotRef {
    pub title: String,
    pub png: String,
    pub svg: String,
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Numbers in the table: 3 significant figures where it matters, "–" when not measured.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(v: f64) -> String {
    pct_within(v, TOLERANCE_PCT)
}

/// A signed % difference, flagged when it is over `tolerance`.
fn pct_within(v: f64, tolerance: f64) -> String {
    if v.is_finite() {
        let flag = if disagrees(v, tolerance) { " ⚠" } else { "" };
        format!("{v:+.1} %{flag}")
    } else {
        "–".into()
    }
}

/// The whole report.md for one run (`runs.len() == 1`) or an overlay of several.
pub fn report(
    runs: &[RunData],
    plots: &[PlotRef],
    plot_errors: &[String],
    missing: &[String],
    machine: &MachineLine,
    written_at: &str,
) -> String {
    let mut md = String::new();
    let single = runs.len() == 1;
    heading(&mut md, runs);
    facts(&mut md, runs, machine, written_at);
    // A run that is not whole says so before any figure (its details stay in the notices).
    for r in runs {
        let why = super::whole::incomplete(r);
        if !why.is_empty() {
            let _ = writeln!(
                md,
                "> **`{}` is not whole**: {}. Its figures are what was measured before it \
                 ended; `synlab compare` refuses it (exit 4).\n",
                r.name,
                esc(&why.join("; "))
            );
        }
    }
    for r in runs {
        let _ = writeln!(
            md,
            "## Summary{}\n",
            if single {
                String::new()
            } else {
                format!(": `{}`", r.name)
            }
        );
        summary_table(&mut md, r);
        thresholds_section(&mut md, r);
    }
    plot_section(&mut md, plots, plot_errors, missing);
    for r in runs {
        let suffix = if single {
            String::new()
        } else {
            format!(": `{}`", r.name)
        };
        md.push_str(&super::phases::section(r, &suffix));
        let _ = writeln!(md, "## Cross-checks{suffix}\n");
        cross_checks(&mut md, r);
        let drops = drops_table(&r.points);
        if !drops.is_empty() {
            let _ = writeln!(md, "## What the kernel dropped, and why{suffix}\n\n{drops}");
        }
        let split = super::latency_split::table(&r.points, num, r.http3());
        if !split.is_empty() {
            let _ = writeln!(md, "## Where the requests' time went{suffix}\n\n{split}");
        }
        let udp = udp_table(&r.points);
        if !udp.is_empty() {
            let _ = writeln!(md, "## The UDP side (QUIC){suffix}\n\n{udp}");
        }
        let h2 = http2_table(&r.points, r.http3());
        if !h2.is_empty() {
            let over = if r.http3() {
                "HTTP/3 (over QUIC)"
            } else {
                "HTTP/2"
            };
            let _ = writeln!(md, "## {over} streams{suffix}\n\n{h2}");
        }
        let _ = writeln!(md, "## Client-bound points{suffix}\n");
        client_bound(&mut md, r);
        if !r.capacity.is_empty() {
            let _ = writeln!(md, "## Capacity (seed 004 method){suffix}\n");
            capacity_section(&mut md, r);
        }
        notices(&mut md, r);
    }
    md
}

/// The title: one run's scenario and its story, or the runs compared.
fn heading(md: &mut String, runs: &[RunData]) {
    if let [r] = runs {
        let name = r
            .scenario
            .as_ref()
            .map(|s| s.name.clone())
            .unwrap_or_else(|| r.name.clone());
        let _ = writeln!(md, "# synlab report: {name}\n");
        scenario_story(md, r);
    } else {
        let names: Vec<String> = runs.iter().map(|r| format!("`{}`", r.name)).collect();
        let _ = writeln!(md, "# synlab comparison: {}\n", names.join(" vs "));
        let _ = writeln!(
            md,
            "The plots overlay the runs' summary curves; each legend entry starts with its run.\n"
        );
    }
}

/// Each run's folder, backend, target and sweep; the machine; when; which runs were cut short.
fn facts(md: &mut String, runs: &[RunData], machine: &MachineLine, written_at: &str) {
    for r in runs {
        let _ = writeln!(md, "- **Run folder:** `{}`", r.name);
        let _ = writeln!(md, "  - **Backend:** {}", esc(&r.backend()));
        let target = r.meta_str("target");
        if !target.is_empty() {
            let _ = writeln!(md, "  - **Target:** {}", esc(&target));
        }
        if let Some(sw) = r.scenario.as_ref().and_then(|s| s.sweep.as_ref()) {
            let modes = r.modes().join(", ");
            let curves = sw
                .curves
                .as_ref()
                .map(|c| format!(", one curve per `{}` ({} values)", c.param, c.values.len()))
                .unwrap_or_default();
            let _ = writeln!(
                md,
                "  - **Sweep:** `{}` over {} values{}{curves}; warm-up {}, hold {} per point",
                sw.param,
                sw.values.len(),
                if modes.is_empty() {
                    String::new()
                } else {
                    format!(", mode {modes}")
                },
                sw.warmup,
                sw.hold
            );
        }
    }
    let _ = writeln!(
        md,
        "- **Machine:** {} ({})",
        esc(&machine.text),
        if machine.recorded {
            "recorded by the run"
        } else {
            "read when this report was written; the run did not record it"
        }
    );
    let _ = writeln!(md, "- **Report written:** {written_at}\n");
    for r in runs {
        if r.meta.get("interrupted").and_then(|v| v.as_bool()) == Some(true) {
            let _ = writeln!(
                md,
                "> **Interrupted:** `{}` was stopped before its end; the tables hold what was \
                 measured up to then.\n",
                r.name
            );
        }
    }
}

/// The plots, what could not be drawn, and the values missing from the curves.
fn plot_section(md: &mut String, plots: &[PlotRef], plot_errors: &[String], missing: &[String]) {
    let _ = writeln!(md, "## Plots\n");
    if plots.is_empty() {
        let _ = writeln!(md, "No plots: the run has no measured points yet.\n");
    }
    for p in plots {
        let _ = writeln!(md, "### {}\n", p.title);
        let _ = writeln!(md, "![{}]({})\n", esc(&p.title), p.png);
        let _ = writeln!(md, "[SVG]({}) · [PNG]({})\n", p.svg, p.png);
    }
    for e in plot_errors {
        let _ = writeln!(md, "- ⚠ {}", esc(e));
    }
    if !missing.is_empty() {
        let _ = writeln!(
            md,
            "Values missing from the curves (each is a gap: the curve breaks, or ends early, \
             there):\n"
        );
        for m in missing {
            let _ = writeln!(md, "- {}", esc(m));
        }
        let _ = writeln!(md);
    }
}

fn scenario_story(md: &mut String, r: &RunData) {
    let Some(s) = &r.scenario else {
        let _ = writeln!(md, "(scenario.toml could not be read.)\n");
        return;
    };
    if !s.description.is_empty() {
        let _ = writeln!(md, "{}\n", s.description);
    }
    if !s.reproduces.is_empty() {
        let _ = writeln!(md, "- **Reproduces:** {}", s.reproduces);
    }
    if !s.expect.is_empty() {
        let _ = writeln!(md, "- **Expect:** {}", s.expect);
    }
}

struct Column {
    head: &'static str,
    key: SummaryCol,
}

/// A column of the table as this run heads it.
struct Headed {
    head: String,
    key: SummaryCol,
}

const COLS: &[Column] = &[
    Column {
        head: "offered/s",
        key: SummaryCol::OfferedRate,
    },
    Column {
        head: "attempts/s",
        key: SummaryCol::AttemptsPerS,
    },
    Column {
        head: "requests/s",
        key: SummaryCol::RequestsPerS,
    },
    Column {
        head: "SYN/s (server)",
        key: SummaryCol::SynInPerS,
    },
    Column {
        head: "responses/s",
        key: SummaryCol::ThroughputPerS,
    },
    Column {
        head: "p50 ms",
        key: SummaryCol::TotalP50Ms,
    },
    Column {
        head: "p98 ms",
        key: SummaryCol::TotalP98Ms,
    },
    Column {
        head: "p99 ms",
        key: SummaryCol::TotalP99Ms,
    },
    Column {
        head: "accept q max",
        key: SummaryCol::AcceptQueueMax,
    },
    Column {
        head: "overflows/s",
        key: SummaryCol::ListenOverflowsPerS,
    },
    Column {
        head: "timeouts/s",
        key: SummaryCol::ConnectTimeoutsPerS,
    },
    Column {
        head: "ESTAB",
        key: SummaryCol::EstablishedMean,
    },
    Column {
        head: "ESTAB samples",
        key: SummaryCol::StatesSamples,
    },
    Column {
        head: "TIME_WAIT",
        key: SummaryCol::TimeWaitMean,
    },
    Column {
        head: "server processes",
        key: SummaryCol::ServerProcsMean,
    },
    Column {
        head: "server busy max",
        key: SummaryCol::ServerBusyMax,
    },
    Column {
        head: "CPU usr %",
        key: SummaryCol::CpuUserPct,
    },
    Column {
        head: "CPU sys %",
        key: SummaryCol::CpuSystemPct,
    },
    Column {
        head: "CPU softirq %",
        key: SummaryCol::CpuSoftirqPct,
    },
    Column {
        head: "Little LF",
        key: SummaryCol::LittleLoadFactor,
    },
];

/// What the run's probes measured (summary.json's `meta.probe_scope`; None for runs written
/// before it was recorded).
fn probe_scope(r: &RunData) -> Option<ProbeScope> {
    serde_json::from_value(r.meta.get("probe_scope")?.clone()).ok()
}

/// The table's columns as this run heads them. Where the probed namespace held other servers'
/// sockets (a server on the host), the port's own figures lead, each head says whose it is
/// (the port's, or the namespace's: every port), and the namespace's overflows and TIME_WAIT
/// follow, labelled; in the lab (the namespace holds only the server) the heads stay plain.
fn columns(r: &RunData) -> Vec<Headed> {
    let scope = probe_scope(r);
    let label = |sc: Scope| scope.and_then(|p| p.label(sc));
    let estimated = r
        .points
        .iter()
        .any(|p| p.num(SummaryCol::SynInEstimated) > 0.0);
    let http3 = r.http3();
    let mut out = Vec::new();
    for c in COLS {
        let plain = |head: &str| Headed {
            head: head.to_string(),
            key: c.key,
        };
        let of = |head: &str, sc: Scope, key: SummaryCol| Headed {
            head: match label(sc) {
                Some(l) => format!("{head} ({l})"),
                None => head.to_string(),
            },
            key,
        };
        match c.key {
            // Over HTTP/3 no SYN arrives (a 0 would read as "none came"): a connection's
            // first packet is its first QUIC Initial, the attempts pcap saw.
            SummaryCol::SynInPerS if http3 => out.push(Headed {
                head: match label(Scope::Port) {
                    Some(port) => format!("first Initials/s ({port}, pcap)"),
                    None => "first Initials/s (server)".into(),
                },
                key: SummaryCol::QuicFirstInitialPerS,
            }),
            // A QUIC connection's connect is its handshake: the load counts its timeout as a
            // handshake timeout, never a connect timeout (which stays 0), so that count is the
            // connection timeouts here (errors_by_kind.handshake_timeouts / hold).
            SummaryCol::ConnectTimeoutsPerS if http3 => out.push(Headed {
                head: "timeouts/s (QUIC handshakes)".into(),
                key: SummaryCol::HandshakeTimeoutsPerS,
            }),
            // Over HTTP/3 no TCP socket listens: the accept queue, listen drops, overflows
            // and TCP states read 0 without measuring the server. Its queue is its UDP
            // socket's receive queue, its drops the datagrams the kernel dropped there.
            SummaryCol::AcceptQueueMax if http3 => out.push(of(
                "UDP queue peak B",
                Scope::Port,
                SummaryCol::UdpRcvQueueMaxBytes,
            )),
            SummaryCol::ListenOverflowsPerS if http3 => {
                out.push(of("UDP drops/s", Scope::Port, SummaryCol::PortUdpDropsPerS));
                out.push(of(
                    "RcvbufErrors/s",
                    Scope::Netns,
                    SummaryCol::UdpRcvbufErrorsPerS,
                ));
            }
            SummaryCol::EstablishedMean | SummaryCol::StatesSamples | SummaryCol::TimeWaitMean
                if http3 => {}
            SummaryCol::SynInPerS => out.push(match (label(Scope::Port), estimated) {
                (None, _) => plain(c.head),
                (Some(port), false) => plain(&format!("SYN/s ({port}, pcap)")),
                (Some(_), true) => plain("SYN/s (netns: all ports, estimated)"),
            }),
            SummaryCol::ListenOverflowsPerS if label(Scope::Port).is_some() => {
                out.push(of(
                    "listen drops/s",
                    Scope::Port,
                    SummaryCol::PortListenDropsPerS,
                ));
                out.push(of("overflows/s", Scope::Netns, c.key));
            }
            SummaryCol::TimeWaitMean if label(Scope::Port).is_some() => {
                out.push(of("TIME_WAIT", Scope::Port, SummaryCol::PortTimeWaitMean));
                out.push(of("TIME_WAIT", Scope::Netns, c.key));
            }
            SummaryCol::AcceptQueueMax | SummaryCol::EstablishedMean => {
                out.push(of(c.head, Scope::Port, c.key))
            }
            SummaryCol::CpuUserPct | SummaryCol::CpuSystemPct | SummaryCol::CpuSoftirqPct => {
                out.push(of(c.head, Scope::Machine, c.key))
            }
            _ => out.push(plain(c.head)),
        }
    }
    out
}

/// Every flag a point has (a client-bound point can also be counting error pages).
fn status(p: &Point) -> String {
    if p.failed() {
        return format!("**FAILED**: {}", esc(&p.text(SummaryText::Error)));
    }
    let mut flags = Vec::new();
    if p.client_bound() {
        flags.push(format!(
            "⚠ **CLIENT-BOUND**: {}",
            esc(&p.text(SummaryText::ClientBoundReason))
        ));
    }
    if let Some(pct) = non2xx_flag_pct(
        p.num(SummaryCol::Non2xxPerS),
        p.num(SummaryCol::ThroughputPerS),
    ) {
        flags.push(format!(
            "⚠ **NOT 2xx**: {pct:.0} % of responses (check the request paths: `load.mix`, \
             `workload`)"
        ));
    }
    if flags.is_empty() {
        "ok".into()
    } else {
        flags.join("; ")
    }
}

/// The column of the swept value: its parameter, or what a run without a sweep has instead.
fn param_head(param: Option<SweepParam>) -> String {
    match param {
        None => "window".into(),
        Some(p) => format!("`{}`", esc(p.name())),
    }
}

/// The point's sweep value, after its curve's when the sweep has curves (`(4, 10%), 800`);
/// without a sweep, the point's window ("12–45 s": a TUI stretch of settings, or the run's
/// measured part), "whole run" when the file does not say.
fn value_cell(p: &Point) -> String {
    let v = p.text(SummaryText::Value);
    if v.is_empty() {
        let (a, b) = (p.num(SummaryCol::StartS), p.num(SummaryCol::EndS));
        return if a.is_finite() && b.is_finite() {
            format!("{a:.0}–{b:.0} s")
        } else {
            "whole run".into()
        };
    }
    let curve = p.text(SummaryText::CurveValue);
    if curve.is_empty() {
        esc(&v)
    } else {
        esc(&format!("{}, {v}", super::figures::category_label(&curve)))
    }
}

/// A sweep with `[sweep.curves]`: throughput per curve at each sweep value, and what each
/// curve lost against the first (seed 000 Fig. 8: the smooth curve first), as a table.
fn curves_table(md: &mut String, r: &RunData) {
    let curves: Vec<String> = {
        let mut c: Vec<String> = Vec::new();
        for p in &r.points {
            let v = p.text(SummaryText::CurveValue);
            if !v.is_empty() && !c.contains(&v) {
                c.push(v);
            }
        }
        c
    };
    if curves.len() < 2 {
        return;
    }
    let mut values: Vec<String> = Vec::new();
    for p in &r.points {
        let v = p.text(SummaryText::Value);
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let label = |c: &str| super::figures::category_label(c);
    let _ = writeln!(
        md,
        "**Throughput per curve** (responses/s; in brackets the change against {}):\n",
        label(&curves[0])
    );
    let _ = write!(md, "| {} |", param_head(r.param()));
    for c in &curves {
        let _ = write!(md, " {} |", esc(&label(c)));
    }
    let _ = writeln!(md, "\n|---|{}", "---:|".repeat(curves.len()));
    for v in &values {
        let at = |c: &str| {
            r.points
                .iter()
                .find(|p| p.text(SummaryText::Value) == *v && p.text(SummaryText::CurveValue) == c)
        };
        let base = at(&curves[0]).map(|p| p.num(SummaryCol::ThroughputPerS));
        let _ = write!(md, "| {} |", esc(v));
        for c in &curves {
            let cell = match at(c) {
                Some(p) if p.failed() => "FAILED".to_string(),
                Some(p) => {
                    let t = p.num(SummaryCol::ThroughputPerS);
                    let mark = if p.client_bound() {
                        " (CLIENT-BOUND)"
                    } else {
                        ""
                    };
                    match base.filter(|b| *b > 0.0 && c != &curves[0]) {
                        Some(b) => format!("{} ({:+.0} %){mark}", num(t), 100.0 * (t - b) / b),
                        None => format!("{}{mark}", num(t)),
                    }
                }
                None => "–".into(),
            };
            let _ = write!(md, " {cell} |");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md);
}

/// What each network path ran under in a point ("wan: rtt 20 ms, loss 0.0 %, bw 10 Mbit/s"),
/// None when the point has no paths or did not record their profiles.
fn network_cell(p: &Point) -> Option<String> {
    let Ok(serde_json::Value::Array(paths)) = serde_json::from_str(&p.text(SummaryText::Paths))
    else {
        return None;
    };
    let cells: Vec<String> = paths
        .iter()
        .filter_map(|x| {
            let g = |k: &str| x[k].as_f64().unwrap_or(f64::NAN);
            let rtt = g("rtt_ms");
            if !rtt.is_finite() {
                return None;
            }
            let mut c = format!("{}: rtt {rtt:.0} ms", x["name"].as_str().unwrap_or("?"));
            if g("jitter_ms") > 0.0 {
                let _ = write!(c, " ±{:.0} ms", g("jitter_ms"));
            }
            let _ = write!(c, ", loss {:.1} %", g("loss_pct"));
            let bw = g("bandwidth_mbit");
            let _ = if bw.is_finite() {
                write!(
                    c,
                    ", bw {}",
                    crate::model::units::Bandwidth((bw * 1e6).round() as u64).human()
                )
            } else {
                write!(c, ", bw ∞")
            };
            Some(esc(&c))
        })
        .collect();
    (!cells.is_empty()).then(|| cells.join("; "))
}

fn summary_table(md: &mut String, r: &RunData) {
    if r.points.is_empty() {
        let _ = writeln!(md, "No sweep point finished (an interrupted run?).\n");
        return;
    }
    let param = r.param();
    let all = columns(r);
    let cols: Vec<&Headed> = all
        .iter()
        .filter(|c| r.points.iter().any(|p| p.has(c.key)))
        .collect();
    let covered = r.points.iter().any(|p| point_totals(p).is_some());
    // Rows of path changes differ in their paths' profiles: those are a column of their own.
    let network = r.points.iter().any(|p| network_cell(p).is_some());
    let mut head = vec!["#".to_string(), "mode".into(), param_head(param)];
    if network {
        head.push("network".into());
    }
    head.extend(cols.iter().map(|c| esc(&c.head)));
    if covered {
        head.push("latencies over".into());
    }
    head.push("status".into());
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let _ = writeln!(
        md,
        "|{}",
        head.iter()
            .enumerate()
            .map(
                |(i, _)| if i < 3 + usize::from(network) || i + 1 == head.len() {
                    "---|"
                } else {
                    "---:|"
                }
            )
            .collect::<String>()
    );
    for p in &r.points {
        let mark = if p.client_bound() { " ⚠" } else { "" };
        let mut cells = vec![
            format!("{}{mark}", p.number()),
            esc(&p.mode()),
            value_cell(p),
        ];
        if network {
            cells.push(network_cell(p).unwrap_or_else(|| "–".into()));
        }
        cells.extend(cols.iter().map(|c| {
            let v = num(p.num(c.key));
            if p.client_bound() && v != "–" {
                format!("*{v}*")
            } else {
                v
            }
        }));
        if covered {
            cells.push(point_totals(p).map_or("–".into(), |t| latency_cover(&t, p.quic())));
        }
        cells.push(status(p));
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    let _ = writeln!(
        md,
        "\nValues are means over each point's hold{}. A point marked ⚠ (values in italics) was \
         client-bound: the load generator, not the server, set its numbers, so it is not a \
         server measurement. Failed points are gaps in the plots.{}{}{}\n",
        if r.http3() {
            ""
        } else {
            "; ESTAB is the mean of the hold's samples of the port's socket states (ESTAB \
             samples: the walk of the kernel's socket table is paced to cost at most 0.5 % of a \
             core, so it runs less often than the other probes when the machine holds many \
             sockets)"
        },
        scope_note(r),
        if r.http3() {
            " Over HTTP/3 no SYN arrives: first Initials/s are the connection attempts' first \
             QUIC Initials pcap saw at the port (repeated Initials left out), and timeouts/s \
             the QUIC handshakes the clients gave up on (a QUIC connection's connect is its \
             handshake). No TCP socket listens, so there is no accept queue, listen drop or TCP \
             state to count: the server's queue is its UDP socket's receive queue (UDP queue \
             peak B, the most bytes waiting in the port's UDP sockets), its drops the datagrams \
             those sockets dropped (UDP drops/s) and the namespace's Udp RcvbufErrors/s."
        } else {
            ""
        },
        if covered {
            " Latency percentiles cover completed requests only: \"latencies over\" says how \
             many, and how many attempts timed out (or failed otherwise) and are not in them."
        } else {
            ""
        }
    );
    counts_table(md, r);
    curves_table(md, r);
    path_tables(md, r);
    class_tables(md, r);
}

/// Whose the figures are, where the probed namespace held other servers' sockets.
fn scope_note(r: &RunData) -> String {
    // What pcap counts of a connection's first packets: Initials over HTTP/3.
    let firsts = if r.http3() { "QUIC Initials" } else { "SYNs" };
    let sockets = if r.http3() {
        "its UDP sockets' receive queue and drops"
    } else {
        "its listening sockets' accept queue and drops, its sockets' states"
    };
    match probe_scope(r) {
        Some(p) if p.netns_shared => format!(
            " The probes read the host's network namespace, which holds other servers' \
             sockets too: figures marked (port {port}) are the target's own ({sockets}, by \
             sock_diag; its {firsts} by pcap on port {port}), those marked (netns: all ports) \
             count every port of the namespace (the kernel's counters and sockstat), (machine) \
             every CPU.",
            port = p.port
        ),
        Some(ProbeScope {
            netns: Some(crate::model::ProbedNetns::OwnLoopback),
            ..
        }) => format!(
            " The probes read the run's own loopback namespace (a user and network namespace \
             of synlab's, as a plain user's run without [network] gets): its counters{tw} \
             and captured {firsts} are this run's alone, not the host's.",
            tw = if r.http3() { "" } else { ", TIME_WAIT" }
        ),
        _ => String::new(),
    }
}

/// Each point's connections and requests counted apart (keep-alive carries many requests on a
/// connection), with what was in progress at its start and end, so each row's two identities
/// can be checked by hand. Only for runs that recorded the split.
fn counts_table(md: &mut String, r: &RunData) {
    let rows: Vec<(&Point, crate::model::Totals)> = r
        .points
        .iter()
        .filter_map(|p| point_totals(p).map(|t| (p, t)))
        .filter(|(_, t)| t.requests.sent + t.requests.in_flight_at_start > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "| # | connection attempts | established | connection errors | connecting at start / end \
         | requests | responses | request errors | requests in flight at start / end |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (p, t) in &rows {
        let (c, q) = (&t.connections, &t.requests);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} / {} | {} | {} | {} | {} / {} |",
            p.number(),
            c.attempts,
            c.established,
            c.errors,
            c.connecting_at_start,
            c.connecting_at_end,
            q.sent,
            q.responses,
            q.errors,
            q.in_flight_at_start,
            q.in_flight_at_end
        );
    }
    let _ = writeln!(
        md,
        "\nCounts over each point's hold: attempts + connecting at the start = established + \
         connection errors + connecting at the end, and requests + in flight at the start = \
         responses + request errors + in flight at the end.\n"
    );
}

/// Per point, the reasons the server namespace's kernel dropped for (its TcpExt/Udp
/// counters), each with its mean rate, the largest first, only those above zero; "" when no
/// point dropped anything.
pub fn drops_table(points: &[Point]) -> String {
    let rows: Vec<(&Point, String)> = points
        .iter()
        .filter_map(|p| {
            let top = crate::model::drops::top(|c| {
                crate::model::drops::DropReason::of_col(c).map(|r| p.num(r.summary_col()))
            });
            let cells: Vec<String> = top
                .iter()
                .map(|(r, v)| format!("{} {}/s", r.words, num(*v)))
                .collect();
            (!cells.is_empty()).then(|| (p, cells.join("; ")))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut md = String::from("| # | reasons, per second, the largest first |\n|---|---|\n");
    for (p, cells) in rows {
        let _ = writeln!(md, "| {} | {} |", p.number(), esc(&cells));
    }
    md.push_str(
        "\nWhole server namespace, every port, from its TcpExt/Udp counters (readable by any \
         user); points without a drop are left out.\n",
    );
    md
}

/// Per point, the server port's UDP side (issue 47): QUIC Initials in (all, first), the
/// port's sockets' drops and the namespace's RcvbufErrors per second, the receive queue's peak
/// against the buffer and rmem_max; "" when no point's port had a UDP socket.
pub fn udp_table(points: &[Point]) -> String {
    use SummaryCol as S;
    let rows: Vec<&Point> = points
        .iter()
        .filter(|p| p.num(S::UdpRcvbufBytes).is_finite())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "| # | Initials in/s | first Initials/s | port drops/s | RcvbufErrors/s | queue peak B | buffer B | rmem_max B |\n|---|---|---|---|---|---|---|---|\n",
    );
    for p in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            p.number(),
            num(p.num(S::QuicInitialInPerS)),
            num(p.num(S::QuicFirstInitialPerS)),
            num(p.num(S::PortUdpDropsPerS)),
            num(p.num(S::UdpRcvbufErrorsPerS)),
            num(p.num(S::UdpRcvQueueMaxBytes)),
            num(p.num(S::UdpRcvbufBytes)),
            num(p.num(S::RmemMaxBytes)),
        );
    }
    md.push_str(
        "\nThe server port's UDP sockets (sock_diag: their drops, queue and buffer), its QUIC \
         Initials (pcap: a connection attempt's first apart), the namespace's Udp RcvbufErrors; \
         points whose port had no UDP socket are left out.\n",
    );
    md
}

/// Per point over HTTP/2 (issue 46): requests/s apart from connection setups/s, streams in
/// flight (mean over all connections, the most on one) against the server's advertised limit,
/// refused and reset streams, GOAWAYs, setup time, TTFB, header bytes and HPACK's saving,
/// flow-control stalls; "" when no point spoke HTTP/2 or HTTP/3. Over HTTP/3 (`http3`) only
/// the figures its QUIC client measures: streams over QUIC, with no SETTINGS limit,
/// REFUSED_STREAM, GOAWAY, header compression or flow stall counted, its setup the QUIC
/// handshake.
pub fn http2_table(points: &[Point], http3: bool) -> String {
    use SummaryCol as S;
    let rows: Vec<&Point> = points
        .iter()
        .filter(|p| {
            p.num(S::H2StreamsMax).is_finite()
                || p.num(S::H2SetupMsMean).is_finite()
                || p.num(S::H2AlpnRefusedPerS).is_finite()
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    // (head, column, measured over HTTP/3 too): the QUIC layer reports no limit, refusal or
    // GOAWAY (those read 0 unmeasured) and no header bytes or flow stalls of its own.
    let cols: Vec<(&str, S)> = [
        ("requests/s", S::RequestsPerS, true),
        ("conns/s", S::EstablishedPerS, true),
        ("streams mean", S::H2StreamsInFlightMean, true),
        ("streams max", S::H2StreamsMax, true),
        ("server limit", S::H2StreamsLimit, false),
        ("refused/s", S::H2RefusedStreamsPerS, false),
        ("resets/s", S::H2StreamResetsPerS, true),
        ("GOAWAYs/s", S::H2GoawaysPerS, false),
        ("setup ms", S::H2SetupMsMean, false),
        ("handshake ms", S::QuicHandshakeMsMean, true),
        ("TTFB p50 ms", S::TtfbP50Ms, true),
        ("total p99 ms", S::TotalP99Ms, true),
        ("header B/resp", S::H2HeaderBytesPerResponse, false),
        ("HPACK saving %", S::H2HpackSavingPct, false),
        ("flow stall ms/s", S::H2FlowStallMsPerS, false),
    ]
    .into_iter()
    // A QUIC connection's setup is its handshake (HTTP/2's ends at the server's SETTINGS).
    .filter(|(_, c, quic)| {
        if http3 {
            *quic
        } else {
            *c != S::QuicHandshakeMsMean
        }
    })
    .map(|(head, c, _)| (head, c))
    .collect();
    let mut md = format!(
        "| # | {} |\n|---|{}\n",
        cols.iter().map(|(h, _)| *h).collect::<Vec<_>>().join(" | "),
        "---|".repeat(cols.len())
    );
    for p in rows {
        let cells: Vec<String> = cols.iter().map(|(_, c)| num(p.num(*c))).collect();
        let _ = writeln!(md, "| {} | {} |", p.number(), cells.join(" | "));
    }
    // The resets by their error code, for the points that had any (HTTP/3's are not told
    // apart: each would read as NO_ERROR).
    for p in points.iter().filter(|_| !http3) {
        let codes: Vec<String> = crate::model::h2_resets::ResetCode::ALL
            .iter()
            .map(|c| (c.name(), p.num(c.summary_col())))
            .filter(|(_, v)| *v > 0.0)
            .map(|(n, v)| format!("{n} {}/s", num(v)))
            .collect();
        if !codes.is_empty() {
            let _ = writeln!(
                md,
                "\nPoint {}: streams reset by {}.",
                p.number(),
                codes.join(", ")
            );
        }
    }
    md.push_str(if http3 {
        "\nThe clients' HTTP/3: a request is a stream of its QUIC connection, many on one \
         connection, so requests/s and connections/s part; streams in flight (over all \
         connections, the most on one), streams that ended without their response (resets/s: \
         the server's or the connection's, their codes not told apart) and the mean QUIC \
         handshake. HTTP/2's server limit (SETTINGS_MAX_CONCURRENT_STREAMS), refused streams, \
         GOAWAYs, header compression and flow-control stalls are not measured over QUIC and \
         are left out.\n"
    } else {
        "\nThe clients' HTTP/2: a request is a stream, many on one connection, so requests/s \
         and connections/s part; streams in flight against the limit the server advertised \
         (SETTINGS_MAX_CONCURRENT_STREAMS): a request that finds no free stream waits (counted \
         in pool_waits), one the server refuses goes again on another connection.\n"
    });
    md
}

/// A point's counts (summary.json `points[i].totals`), when the run recorded them.
fn point_totals(p: &Point) -> Option<crate::model::Totals> {
    serde_json::from_str(&p.text(SummaryText::Totals)).ok()
}

/// What a point's latency percentiles cover: "N completed, M timed out", and the attempts
/// that failed otherwise (refused, reset, ...) when there were any. Timed-out attempts have no
/// latency, so at overload the percentiles alone look better than the service was.
/// Over QUIC (`quic`) a connection's connect is its handshake, whose timeouts the load counts
/// as handshake timeouts: timeouts too.
pub fn latency_cover(t: &crate::model::Totals, quic: bool) -> String {
    let k = &t.errors_by_kind;
    let handshakes = if quic { k.tls.handshake_timeouts } else { 0 };
    let timed_out = k.connect_timeouts + handshakes + k.response_timeouts;
    let other = t.errors.saturating_sub(timed_out);
    let mut s = format!("{} completed, {timed_out} timed out", t.responses);
    if other > 0 {
        let _ = write!(s, ", {other} failed otherwise");
    }
    s
}

/// One table per point that has per-path figures (`points[i].paths`, a network lab's paths).
fn path_tables(md: &mut String, r: &RunData) {
    let param = r.param();
    for p in &r.points {
        // Percentiles of a path with nothing completed are null: read by name, not as
        // PathSummary (whose f64s do not take null).
        let Ok(serde_json::Value::Array(paths)) = serde_json::from_str(&p.text(SummaryText::Paths))
        else {
            continue;
        };
        if paths.is_empty() {
            continue;
        }
        let at = if param.is_none() {
            value_cell(p)
        } else {
            format!("{} = {}", param_head(param), value_cell(p))
        };
        let _ = writeln!(md, "**Point {} per path** ({at}):\n", p.number());
        let _ = writeln!(
            md,
            "| path | attempts/s | responses/s | errors/s | connect p50 ms | connect p99 ms | \
             total p50 ms | total p99 ms | connect timeouts |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for x in &paths {
            // A path's figures are named as the summary's columns of the same figure.
            let f = |k: SummaryCol| num(x[k.name()].as_f64().unwrap_or(f64::NAN));
            let name = x["name"].as_str().unwrap_or("?");
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                esc(name),
                f(SummaryCol::AttemptsPerS),
                f(SummaryCol::ThroughputPerS),
                f(SummaryCol::ErrorsPerS),
                f(SummaryCol::ConnectP50Ms),
                f(SummaryCol::ConnectP99Ms),
                f(SummaryCol::TotalP50Ms),
                f(SummaryCol::TotalP99Ms),
                num(x["connect_timeouts"].as_f64().unwrap_or(f64::NAN))
            );
        }
        let _ = writeln!(md);
    }
}

/// One table per point whose mix has several request classes (`points[i].classes`): each
/// class's share of the responses, its bytes, errors and latencies (seed 002 Table 5), and
/// the counts a server's log per path can be held against.
fn class_tables(md: &mut String, r: &RunData) {
    let param = r.param();
    for p in &r.points {
        let classes = super::figures::point_classes(p);
        if classes.is_empty() {
            continue;
        }
        let at = if param.is_none() {
            "whole run".to_string()
        } else {
            format!("{} = {}", param_head(param), value_cell(p))
        };
        let _ = writeln!(md, "**Point {} per request class** ({at}):\n", p.number());
        let _ = writeln!(
            md,
            "| class | responses | share | responses/s | KB/s | errors/s | connect p50 ms | \
             total p50 ms | total p90 ms | total p99 ms | load factor |"
        );
        let _ = writeln!(
            md,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        let whole: f64 = classes
            .iter()
            .map(|k| k["totals"]["responses"].as_f64().unwrap_or(0.0))
            .sum();
        for k in &classes {
            let f = |key: &str| k[key].as_f64().unwrap_or(f64::NAN);
            let n = k["totals"]["responses"].as_f64().unwrap_or(f64::NAN);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                esc(k["name"].as_str().unwrap_or("?")),
                num(n),
                pct_share(n, whole),
                num(f("responses_per_s")),
                num(f("bytes_per_s") / 1000.0),
                num(f("errors_per_s")),
                num(f("connect_p50_ms")),
                num(f("total_p50_ms")),
                num(f("total_p90_ms")),
                num(f("total_p99_ms")),
                num(f("little_load_factor")),
            );
        }
        let _ = writeln!(md);
    }
}

/// `part` as a share of `whole`, "12.5 %".
fn pct_share(part: f64, whole: f64) -> String {
    if whole > 0.0 && part.is_finite() {
        format!("{:.1} %", 100.0 * part / whole)
    } else {
        "–".into()
    }
}

fn cross_checks(md: &mut String, r: &RunData) {
    if r.points.is_empty() {
        let _ = writeln!(md, "No point was measured: nothing to check.\n");
        return;
    }
    match r.meta.get("check_responses").and_then(|v| v.as_object()) {
        // A server above its clients by what it answered in recovery: that phase, no fault.
        Some(c)
            if c.get("agree") == Some(&serde_json::Value::Bool(false))
                && recovery_explains(r, c).is_some() =>
        {
            let _ = writeln!(
                md,
                "- Responses over the whole run, client count vs server count: {}",
                recovery_explains(r, c).unwrap_or_default()
            );
        }
        // Runs that judged it say which count they trusted and why.
        Some(c) if c.get("verdict").and_then(|v| v.as_str()).is_some() => {
            let _ = writeln!(
                md,
                "- Responses over the whole run, client count vs server count: {}",
                c["verdict"].as_str().unwrap_or_default()
            );
        }
        Some(c) => {
            let g = |k: &str| c.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
            let d = g("diff_pct");
            let ok = d.is_finite() && !disagrees(d, TOLERANCE_PCT);
            let _ = writeln!(
                md,
                "- Responses over the whole run, client count vs server count: {} vs {} ({}): {}",
                num(g("client")),
                num(g("server")),
                pct(d),
                if ok {
                    "agree".to_string()
                } else {
                    format!(
                        "**disagree by more than {TOLERANCE_PCT} %**: distrust the throughput figures"
                    )
                }
            );
        }
        None => {
            let _ = writeln!(
                md,
                "- Responses over the whole run, client count vs server count: not measured (the server's own count comes from the built-in server, kind = \"nginx\" / \"apache\", or a target's `access_log`)."
            );
        }
    }
    // Over HTTP/3 the summary checks the attempts against their first QUIC Initials.
    let http3 = r.http3();
    let keys = [
        (
            SummaryCol::CheckSynVsAttemptsPct,
            if http3 {
                "first QUIC Initials at the server (repeated Initials left out) vs client attempts"
            } else {
                "first SYNs at the server (retransmitted SYNs left out) vs client attempts"
            },
        ),
        (
            SummaryCol::CheckServerVsClientPct,
            "server responses vs client responses",
        ),
    ];
    let checked: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| keys.iter().any(|(k, _)| p.has(*k)))
        .collect();
    if checked.is_empty() {
        let _ = writeln!(md, "- Per point: no cross-check columns were measured.\n");
        return;
    }
    let mut any_noisy = false;
    for (k, what) in keys {
        let measured = checked.iter().filter(|p| p.has(k)).count();
        // Points whose SYN rate was the namespace's estimate have no SYN check: said so.
        let unchecked_syns = r
            .points
            .iter()
            .filter(|p| !p.has(k) && p.num(SummaryCol::SynInEstimated) > 0.0)
            .count();
        if k == SummaryCol::CheckSynVsAttemptsPct && unchecked_syns > 0 {
            let _ = writeln!(
                md,
                "- Per point, {what}: {} at {unchecked_syns} point(s)",
                crate::probe::crosscheck::NO_PORT_SYNS
            );
        }
        if measured == 0 {
            if k != SummaryCol::CheckSynVsAttemptsPct || unchecked_syns == 0 {
                let _ = writeln!(md, "- Per point, {what}: not measured");
            }
            continue;
        }
        let bad = checked
            .iter()
            .filter(|p| disagrees(p.num(k), tolerance(p, k)))
            .count();
        let noisy = checked
            .iter()
            .any(|p| p.has(k) && tolerance(p, k) > TOLERANCE_PCT);
        any_noisy |= noisy;
        let _ = writeln!(
            md,
            "- Per point, {what}: {bad} of {measured} points differ by more than {}{}",
            if noisy {
                format!("{TOLERANCE_PCT} % or their counting noise, whichever is larger")
            } else {
                format!("{TOLERANCE_PCT} %")
            },
            if bad > 0 { " ⚠" } else { "" }
        );
    }
    let _ = writeln!(
        md,
        "\n| # | mode | {} | first {} vs attempts | server vs client |",
        param_head(r.param()),
        if http3 { "Initials" } else { "SYNs" }
    );
    let _ = writeln!(md, "|---|---|---|---:|---:|");
    for p in checked {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            p.number(),
            esc(&p.mode()),
            value_cell(p),
            pct_within(p.num(keys[0].0), tolerance(p, keys[0].0)),
            pct(p.num(keys[1].0))
        );
    }
    let firsts = if http3 { "Initials" } else { "SYNs" };
    let noise = if any_noisy {
        format!(
            " (for {firsts} vs attempts, over their counting noise where that is larger, as in \
             short holds at low rates: 3 standard deviations of the attempts in one probe \
             interval at each end of the hold)"
        )
    } else {
        String::new()
    };
    // Only where pcap counted the port's SYNs is there anything pcap saw to explain.
    if !r.points.iter().any(|p| p.has(keys[0].0)) {
        let _ = writeln!(md);
        return;
    }
    if http3 {
        let _ = writeln!(
            md,
            "\nInitials vs attempts counts each connection's first QUIC Initial: the Initials \
             pcap saw at the port less the repeated ones (a client whose Initial went unanswered \
             sends it again at its probe timeout), which are no new attempts. What difference \
             remains comes from counting windows that do not line up exactly (Initials are \
             counted on the wire, attempts in the client); ⚠ marks a difference over \
             {TOLERANCE_PCT} %{noise}.\n"
        );
        return;
    }
    let _ = writeln!(
        md,
        "\nSYNs vs attempts counts each connection's first SYN: the SYNs pcap saw less the \
         retransmitted ones (a lost SYN or SYN-ACK makes the client send its SYN again), which \
         are no new attempts. What difference remains comes from counting windows that do not \
         line up exactly (SYNs are counted on the wire, attempts in the client), or from \
         attempts whose every SYN was lost before their timeout; ⚠ marks a difference over \
         {TOLERANCE_PCT} %{noise}.\n"
    );
}

/// The whole run's check said as its recovery after overload, where that explains it.
fn recovery_explains(
    r: &RunData,
    c: &serde_json::Map<String, serde_json::Value>,
) -> Option<String> {
    let g = |k: &str| c.get(k).and_then(|v| v.as_f64());
    super::phases::explains(r, g("client")?, g("server")?)
}

/// The largest difference of check `key` at point `p` that is not flagged.
fn tolerance(p: &Point, key: SummaryCol) -> f64 {
    if key == SummaryCol::CheckSynVsAttemptsPct && p.has(SummaryCol::CheckSynTolerancePct) {
        syn_tolerance_of(p.num(SummaryCol::CheckSynTolerancePct))
    } else {
        TOLERANCE_PCT
    }
}

fn client_bound(md: &mut String, r: &RunData) {
    let bound: Vec<&Point> = r.points.iter().filter(|p| p.client_bound()).collect();
    if r.points.is_empty() {
        let _ = writeln!(md, "No point was measured.\n");
        return;
    }
    if bound.is_empty() {
        let _ = writeln!(
            md,
            "None: at every point the load generator kept up with its schedule.\n"
        );
        return;
    }
    let _ = writeln!(
        md,
        "{} point(s) were limited by the load generator, not the server; they are marked ⚠ in \
         the table and with a black ✕ on the plots:\n",
        bound.len()
    );
    for p in bound {
        let at = if p.text(SummaryText::Param).is_empty() {
            format!("{}, whole run", esc(&p.mode()))
        } else {
            format!(
                "{} {} = {}",
                esc(&p.mode()),
                esc(&p.text(SummaryText::Param)),
                esc(&p.text(SummaryText::Value))
            )
        };
        let _ = writeln!(
            md,
            "- point {} ({at}): {}",
            p.number(),
            esc(&p.text(SummaryText::ClientBoundReason))
        );
    }
    let _ = writeln!(md);
}

/// The largest throughput whose response time meets the target (seed 004), per series:
/// interpolated between the points that bracket it, from their `capacity_latency_ms`.
fn capacity_section(md: &mut String, r: &RunData) {
    if let Some(c) = r.capacity.first() {
        let _ = writeln!(
            md,
            "Target: {} % of requests under {} ms (`[analysis] capacity`); each point's \
             response time at that percentile is its `capacity_latency_ms`. Failed and \
             CLIENT-BOUND points are left out.\n",
            c.percentile, c.under_ms
        );
    }
    for c in &r.capacity {
        let _ = writeln!(md, "- {}", esc(&c.line()));
    }
    let _ = writeln!(md);
}

fn notices(md: &mut String, r: &RunData) {
    let mut lines: Vec<String> = r
        .meta
        .get("notices")
        .and_then(|n| n.as_array())
        .map(|a| {
            a.iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    lines.extend(
        r.warnings
            .iter()
            .map(|w| format!("incomplete run folder: {w}")),
    );
    if let Some(d) = super::disturbed::of(r) {
        lines.insert(0, format!("{d}: {}", super::disturbed::MEANING));
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Notices\n");
    for l in lines {
        let _ = writeln!(md, "- {}", esc(&l));
    }
    let _ = writeln!(md);
}

/// report.md's threshold section (nothing when the scenario had no thresholds or gate).
fn thresholds_section(md: &mut String, r: &RunData) {
    if r.thresholds.is_empty() {
        return;
    }
    let failed = r.thresholds.iter().filter(|v| !v.passed).count();
    let _ = writeln!(
        md,
        "### Thresholds: {}\n\n{} of {} checks passed.\n\n| check | point | measured | limit | verdict |\n|---|---|---:|---:|---|",
        if failed == 0 { "pass" } else { "**FAIL**" },
        r.thresholds.len() - failed,
        r.thresholds.len()
    );
    let n = |v: Option<f64>| v.map(num).unwrap_or_else(|| "–".into());
    for v in &r.thresholds {
        let point = match (v.point, v.value.is_empty()) {
            (None, _) => "run".to_string(),
            (Some(p), true) => p.to_string(),
            (Some(p), false) => format!("{p} ({})", v.value),
        };
        // The check's ID as JUnit names it, and over HTTP/3 what it compares there.
        let meaning = super::thresholds::check_meaning(&v.check, r.http3())
            .map_or(String::new(), |m| format!(" ({m})"));
        let _ = writeln!(
            md,
            "| `{}`{meaning} | {point} | {} | {} | {} |",
            v.check.replace('|', "\\|"),
            n(v.measured),
            n(v.limit),
            if v.passed { "pass" } else { "**FAIL**" }
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// report.md's summary table: the first point's cell under the head that starts with
    /// `head` ("absent" when no head does).
    fn summary_cell(md: &str, head: &str) -> String {
        let rows: Vec<Vec<&str>> = md
            .lines()
            .skip_while(|l| !l.starts_with("| # | mode |"))
            .take(3)
            .map(|l| l.split(" | ").collect())
            .collect();
        let i = rows[0].iter().position(|h| h.starts_with(head));
        i.map_or_else(|| "absent".into(), |i| rows[2][i].to_string())
    }

    /// issue 28: a TUI session's rows say their window and what each path ran under, so rows
    /// of path changes differ; a closed-loop row offers no rate.
    #[test]
    fn tui_stretch_rows_say_their_window_paths_and_no_offered_rate_when_closed() {
        let path = |rtt: f64, bw: Option<f64>| {
            serde_json::json!([{"name": "wan", "attempts_per_s": 500.0, "throughput_per_s": 500.0,
                "errors_per_s": 0.0, "connect_timeouts": 0, "connect_p50_ms": 20.0,
                "connect_p99_ms": 21.0, "total_p50_ms": 41.0, "total_p90_ms": 42.0,
                "total_p99_ms": 45.0, "rtt_ms": rtt, "jitter_ms": 0.0, "loss_pct": 0.0,
                "bandwidth_mbit": bw}])
        };
        let row = |i: usize, mode: &str, offered: Option<f64>, t: (f64, f64), p| {
            serde_json::json!({"point": i, "mode": mode, "failed": false, "hold_s": t.1 - t.0,
                "offered_rate": offered, "attempts_per_s": 500.0, "throughput_per_s": 500.0,
                "client_bound": false, "start_s": t.0, "end_s": t.1, "paths": p})
        };
        let json = serde_json::json!({"meta": {}, "points": [
            row(1, "open", Some(500.0), (0.0, 13.3), path(20.0, None)),
            row(2, "open", Some(500.0), (13.3, 40.0), path(20.0, Some(50.0))),
            row(3, "closed", None, (40.0, 61.0), path(70.0, Some(50.0))),
        ]});
        let (meta, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
        let run = RunData {
            dir: "x".into(),
            name: "x".into(),
            scenario: None,
            meta,
            points,
            timeseries: Default::default(),
            events: Vec::new(),
            warnings: Vec::new(),
            thresholds: Vec::new(),
            capacity: Vec::new(),
        };
        let mut md = String::new();
        summary_table(&mut md, &run);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert!(rows[0].contains("| window | network | offered/s |"), "{md}");
        assert!(
            rows[1].contains("| 0–13 s | wan: rtt 20 ms, loss 0.0 %, bw ∞ | 500 |"),
            "{md}"
        );
        assert!(
            rows[2].contains("| 13–40 s | wan: rtt 20 ms, loss 0.0 %, bw 50 Mbit/s | 500 |"),
            "{md}"
        );
        assert!(
            rows[3].contains("| closed | 40–61 s | wan: rtt 70 ms, loss 0.0 %, bw 50 Mbit/s | – |"),
            "{md}"
        );
    }

    /// An HTTP/3 handshake flood's report (as `scenarios/quic-handshake-flood.toml` writes):
    /// its timeouts are the QUIC handshakes', its first packets Initials, and no figure or
    /// check says SYN; a TCP run's report keeps its SYNs and connect timeouts.
    #[test]
    fn an_http3_run_reads_initials_and_handshake_timeouts_not_syns() {
        let row = |quic: bool| {
            let mut p = serde_json::json!({"point": 1, "mode": "sclient", "failed": false,
                "hold_s": 7.0, "offered_rate": 3000.0, "attempts_per_s": 2990.0,
                "throughput_per_s": 356.0, "client_bound": false, "start_s": 16.0,
                "end_s": 23.0, "syn_in_per_s": if quic { 0.0 } else { 3010.0 },
                "syn_in_estimated": 0.0, "connect_timeouts_per_s": if quic { 0.0 } else { 12.0 },
                "handshake_timeouts_per_s": 1641.0, "check_syn_vs_attempts_pct": -1.6,
                "check_syn_tolerance_pct": 2.0, "check_server_vs_client_pct": 0.6,
                "split_connect_ms": 900.0, "split_transfer_ms": 100.0,
                "connect_retrans_pct": 83.1, "connect_retrans_once_pct": 60.0,
                "connect_retrans_once_ms": 1001.0});
            let mut t = crate::model::Totals {
                responses: 2513,
                errors: 11573,
                ..Default::default()
            };
            t.errors_by_kind.tls.handshake_timeouts = 11573;
            p["totals"] = serde_json::to_value(&t).unwrap();
            if quic {
                for (k, v) in [
                    ("quic_handshakes_full_per_s", 1122.0),
                    ("quic_handshake_timeouts_per_s", 1641.0),
                    ("quic_initial_in_per_s", 5271.0),
                    ("quic_first_initial_per_s", 2943.0),
                ] {
                    p[k] = v.into();
                }
            }
            p
        };
        let report_of = |quic: bool| {
            let json = serde_json::json!({"meta": {"probe_scope":
                {"port": 28092, "netns_shared": true, "netns": "host"}}, "points": [row(quic)]});
            let (meta, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
            let run = RunData {
                name: "x".into(),
                meta,
                points,
                ..Default::default()
            };
            let machine = MachineLine {
                text: "m".into(),
                recorded: true,
            };
            report(&[run], &[], &[], &[], &machine, "now")
        };
        let cell = summary_cell;
        let md = report_of(true);
        // 1: the connection timeouts are the QUIC handshakes' (errors_by_kind / hold).
        assert_eq!(cell(&md, "timeouts/s (QUIC handshakes)"), "1641", "{md}");
        assert!(md.contains("| 2513 completed, 11573 timed out |"), "{md}");
        // 2: Initials, not a 0 under SYN/s.
        assert_eq!(
            cell(&md, "first Initials/s (port 28092, pcap)"),
            "2943",
            "{md}"
        );
        assert_eq!(cell(&md, "SYN/s"), "absent", "{md}");
        // 3: the check is named by what it counts.
        assert!(md.contains("| first Initials vs attempts |"), "{md}");
        assert!(
            md.contains("first QUIC Initials at the server (repeated Initials left out)"),
            "{md}"
        );
        // 4: a QUIC connect of 1 s or more repeated its Initial; TCP's modes are not its.
        assert!(
            md.contains("| connects of 1 s or more (Initial repeated) |"),
            "{md}"
        );
        assert!(md.contains("` | 83.1 % |"), "{md}");
        assert!(!md.contains("SYN retransmission"), "{md}");
        assert!(!md.contains("first SYN"), "{md}");
        assert!(!md.contains("SYNs"), "{md}");

        let md = report_of(false);
        assert_eq!(cell(&md, "timeouts/s"), "12.0", "{md}");
        // Over TCP a handshake timeout is TLS's, after the connect: failed otherwise.
        assert!(
            md.contains("| 2513 completed, 0 timed out, 11573 failed otherwise |"),
            "{md}"
        );
        assert_eq!(cell(&md, "SYN/s (port 28092, pcap)"), "3010", "{md}");
        assert!(md.contains("| first SYNs vs attempts |"), "{md}");
        assert!(md.contains("83.1 % (once: 60.0 % at 1.00 s)"), "{md}");
        assert!(!md.contains("Initial"), "{md}");
    }

    /// Over HTTP/3 (the flood's figures, as `scenarios/quic-handshake-flood.toml` writes them)
    /// no TCP socket listens: the summary's queue and drops are the UDP socket's, not an accept
    /// queue, listen drops, overflows and TCP states that read 0; its streams are HTTP/3's,
    /// with only what QUIC measures; the first-packet gate check says Initials beside its ID.
    /// A TCP run over HTTP/2 keeps them all.
    #[test]
    fn an_http3_run_reads_its_udp_socket_and_streams_over_quic_not_tcp_zeros() {
        let row = |quic: bool| {
            let mut p = serde_json::json!({"point": 1, "mode": "sclient", "failed": false,
                "hold_s": 7.0, "offered_rate": 3000.0, "attempts_per_s": 3007.0,
                "requests_per_s": 1140.0, "established_per_s": 1140.0, "ttfb_p50_ms": 367.0,
                "total_p99_ms": 2226.0, "accept_queue_max": 0.0, "port_listen_drops_per_s": 0.0,
                "listen_overflows_per_s": 0.0, "established_mean": 0.0, "states_samples": 6.0,
                "time_wait_mean": 1.0, "port_time_wait_mean": 0.0,
                "h2_streams_in_flight_mean": 1345.0, "h2_streams_max": 1.0,
                "h2_refused_streams_per_s": 0.0, "h2_stream_resets_per_s": 3.0,
                "h2_goaways_per_s": 0.0, "h2_header_bytes_per_response": 0.0,
                "h2_flow_stall_ms_per_s": 0.0, "h2_resets_no_error_per_s": 3.0});
            if quic {
                for (k, v) in [
                    ("quic_handshakes_full_per_s", 1140.0),
                    ("quic_handshake_ms_mean", 60.1),
                    ("udp_rcv_queue_max_bytes", 212992.0),
                    ("port_udp_drops_per_s", 8632.0),
                    ("udp_rcvbuf_errors_per_s", 8631.0),
                ] {
                    p[k] = v.into();
                }
            } else {
                p["h2_streams_limit"] = 100.0.into();
                p["h2_setup_ms_mean"] = 1.5.into();
            }
            p
        };
        let report_of = |quic: bool| {
            let json = serde_json::json!({"meta": {"probe_scope":
                {"port": 28092, "netns_shared": true, "netns": "host"}}, "points": [row(quic)]});
            let (meta, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
            let check = "gate: cross-check first SYNs vs client attempts within 2.0 %";
            let run = RunData {
                name: "x".into(),
                meta,
                points,
                thresholds: vec![super::super::thresholds::Verdict {
                    check: check.into(),
                    source: "gate".into(),
                    point: Some(1),
                    value: String::new(),
                    measured: Some(-2.7),
                    limit: Some(2.0),
                    passed: false,
                    message: String::new(),
                }],
                ..Default::default()
            };
            let machine = MachineLine {
                text: "m".into(),
                recorded: true,
            };
            report(&[run], &[], &[], &[], &machine, "now")
        };
        let cell = summary_cell;
        // The streams section's header row.
        let streams_head = |md: &str| -> String {
            md.lines()
                .skip_while(|l| !l.ends_with(" streams"))
                .nth(2)
                .unwrap_or("")
                .to_string()
        };
        let md = report_of(true);
        // 1: the UDP socket's queue and drops, no TCP figure reading 0.
        assert_eq!(cell(&md, "UDP queue peak B (port 28092)"), "212992", "{md}");
        assert_eq!(cell(&md, "UDP drops/s (port 28092)"), "8632", "{md}");
        assert_eq!(
            cell(&md, "RcvbufErrors/s (netns: all ports)"),
            "8631",
            "{md}"
        );
        for tcp in [
            "accept q",
            "listen drops",
            "overflows",
            "ESTAB",
            "TIME_WAIT",
        ] {
            assert_eq!(cell(&md, tcp), "absent", "{tcp}: {md}");
        }
        assert!(!md.contains("ESTAB") && !md.contains("TIME_WAIT"), "{md}");
        assert!(!md.contains("accept queue and drops"), "{md}");
        // 2: streams over QUIC, with only what QUIC measures.
        assert!(md.contains("\n## HTTP/3 (over QUIC) streams\n"), "{md}");
        assert!(!md.contains("HTTP/2 streams"), "{md}");
        assert_eq!(
            streams_head(&md),
            "| # | requests/s | conns/s | streams mean | streams max | resets/s | handshake ms \
             | TTFB p50 ms | total p99 ms |",
            "{md}"
        );
        assert!(md.contains("| 1 | 1140 | 1140 | 1345 | 1.00 | 3.00 | 60.1 | 367 | 2226 |"));
        assert!(!md.contains("NO_ERROR"), "{md}");
        // 3: the gate's check keeps its ID and says what it compares over HTTP/3.
        assert!(
            md.contains(
                "| `gate: cross-check first SYNs vs client attempts within 2.0 %` (first QUIC \
                 Initials vs client attempts) | 1 |"
            ),
            "{md}"
        );

        let md = report_of(false);
        assert_eq!(cell(&md, "accept q max (port 28092)"), "0", "{md}");
        assert_eq!(cell(&md, "listen drops/s (port 28092)"), "0", "{md}");
        assert_eq!(cell(&md, "ESTAB (port 28092)"), "0", "{md}");
        assert_eq!(cell(&md, "TIME_WAIT (netns: all ports)"), "1.00", "{md}");
        assert_eq!(cell(&md, "UDP"), "absent", "{md}");
        assert!(md.contains("\n## HTTP/2 streams\n"), "{md}");
        assert_eq!(
            streams_head(&md),
            "| # | requests/s | conns/s | streams mean | streams max | server limit | refused/s \
             | resets/s | GOAWAYs/s | setup ms | TTFB p50 ms | total p99 ms | header B/resp \
             | HPACK saving % | flow stall ms/s |",
            "{md}"
        );
        assert!(
            md.contains("Point 1: streams reset by NO_ERROR 3.00/s."),
            "{md}"
        );
        assert!(
            md.contains("| `gate: cross-check first SYNs vs client attempts within 2.0 %` | 1 |"),
            "{md}"
        );
    }

    #[test]
    fn udp_table_shows_points_whose_port_had_a_udp_socket() {
        use super::super::read::Cell;
        let point = |n: f64, buf: f64| {
            let mut row = std::collections::BTreeMap::new();
            row.insert("point".to_string(), Cell::Num(n));
            for (k, v) in [
                ("udp_rcvbuf_bytes", buf),
                ("quic_initial_in_per_s", 1200.0),
                ("quic_first_initial_per_s", 1000.0),
                ("port_udp_drops_per_s", 300.0),
                ("udp_rcvbuf_errors_per_s", 300.0),
                ("udp_rcv_queue_max_bytes", 65000.0),
                ("rmem_max_bytes", 4194304.0),
            ] {
                row.insert(k.to_string(), Cell::Num(v));
            }
            Point(row)
        };
        let md = udp_table(&[point(1.0, 65536.0), point(2.0, f64::NAN)]);
        assert!(md.contains("| 1 | 1200 | 1000 | 300 | 300 |"), "{md}");
        assert!(!md.contains("| 2 |"), "{md}");
        assert_eq!(udp_table(&[point(2.0, f64::NAN)]), "");
    }

    #[test]
    fn drops_table_lists_each_points_reasons_largest_first() {
        let json = serde_json::json!({"meta": {}, "points": [
            {"point": 1, "listen_overflows_per_s": 0.0, "reqq_full_drops_per_s": 0.0},
            {"point": 2, "listen_overflows_per_s": 725.0, "reqq_full_drops_per_s": 12.5,
             "backlog_drops_per_s": null},
        ]});
        let (_, points) = super::super::read::parse_summary_json(&json.to_string()).unwrap();
        let md = drops_table(&points);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 2, "{md}");
        assert_eq!(
            rows[1],
            "| 2 | accept queue full: SYN or handshake's final ACK dropped 725/s; SYN queue full: SYN \
             dropped 12.5/s |",
            "{md}"
        );
        assert_eq!(drops_table(&points[..1]), "");
    }
}
