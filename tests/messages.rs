//! Every typed result a person reads, once: the wording of each variant of the lab's replies,
//! refusals, reasons and errors in one snapshot (tests elsewhere match the variants, not the
//! words). A new variant shows here as a new line to review.

use synlab::lab::client_agg::{ClientBound, NothingMeasured};
use synlab::lab::knobs::{Change, Refusal, Reply};
use synlab::lab::run::PointFailure;
use synlab::lab::state::Warning;
use synlab::load::protocol::{Burst, Mode};
use synlab::model::cpus::{CpuError, Placement};
use synlab::model::death::{Death, Exit};
use synlab::model::knob::{KnobError, PathKnob, PathValue};
use synlab::model::kreasons::NotCounted;
use synlab::model::load_knob::{LoadKnob, LoadKnobError};
use synlab::model::summary::SummaryCol;
use synlab::model::sweep::{SweepParam, SweepValueError};
use synlab::model::units::{Bandwidth, Dur, Percent, UnitError};
use synlab::net::spec::PortRangeError;
use synlab::scenario::gate::GateError;
use synlab::target::cli::FileSetError;
use synlab::target::files::FileSetInvalid;

fn lines<T: std::fmt::Display>(out: &mut String, title: &str, items: &[T]) {
    out.push_str(&format!("## {title}\n"));
    for i in items {
        out.push_str(&format!("{i}\n"));
    }
}

#[test]
fn every_message_a_person_reads() {
    let mut out = String::new();
    let s = |t: &str| t.to_string();
    let burst = Burst {
        ratio: 4.0,
        fraction: 0.1,
        period_s: 10.0,
    };
    let jitter = PathValue::Jitter(Dur::from_secs(0.005));
    lines(
        &mut out,
        "replies: applied",
        &[
            Change::Load {
                knob: LoadKnob::Rate,
                from: None,
                to: 1000.0,
            },
            Change::Mode {
                to: Mode::Closed,
                skipped: None,
            },
            Change::Mode {
                to: Mode::Closed,
                skipped: Some(Mode::Open),
            },
            Change::Load {
                knob: LoadKnob::Sockets,
                from: Some(100.0),
                to: 200.0,
            },
            Change::Load {
                knob: LoadKnob::Clients,
                from: Some(8.0),
                to: 16.0,
            },
            Change::Paused(true),
            Change::Paused(false),
            Change::Burst(burst, false),
            Change::Bursts(true),
            Change::Path {
                path: Some(s("dsl")),
                value: PathValue::Rtt(Dur::from_secs(0.1)),
            },
            Change::Path {
                path: None,
                value: jitter,
            },
            Change::Path {
                path: None,
                value: PathValue::Loss(Percent(1.5)),
            },
            Change::Path {
                path: None,
                value: PathValue::Bandwidth(None),
            },
            Change::Selected(s("dsl")),
            Change::Load {
                knob: LoadKnob::Resumed,
                from: Some(0.5),
                to: 0.3,
            },
        ]
        .map(Reply::Applied),
    );
    lines(
        &mut out,
        "replies: refused",
        &[
            Refusal::FlatOut,
            Refusal::Load(LoadKnobError::AtLimit(LoadKnob::Rate)),
            Refusal::Unchanged(Change::Load {
                knob: LoadKnob::Rate,
                from: Some(1.0),
                to: 1.0,
            }),
            Refusal::Unchanged(Change::Selected(s("wan"))),
            Refusal::Unchanged(Change::Path {
                path: Some(s("wan")),
                value: PathValue::Rtt(Dur::from_secs(0.02)),
            }),
            Refusal::RunStopped(s(
                "the delay router (pid 7) was killed by signal 9 (SIGKILL)",
            )),
            Refusal::OpenNeedsRate,
            Refusal::Load(LoadKnobError::BurstOver {
                ratio: 12.0,
                fraction: 0.1,
            }),
            Refusal::BurstsNeedRate,
            Refusal::Loopback,
            Refusal::LabOff(s("user namespaces are switched off")),
            Refusal::NoPath(s("wifi")),
            Refusal::Knob(KnobError::OutOfRange(PathKnob::Jitter)),
            Refusal::NotApplied {
                path: s("dsl"),
                why: s("the delay router is not running"),
            },
            Refusal::NoTls,
        ]
        .map(Reply::Refused),
    );
    let out_of_range = |knob, value| LoadKnobError::OutOfRange { knob, value };
    lines(
        &mut out,
        "load knobs",
        &[
            out_of_range(LoadKnob::Rate, 0.5),
            out_of_range(LoadKnob::Sockets, 0.0),
            out_of_range(LoadKnob::Clients, 50_000.0),
            out_of_range(LoadKnob::BurstRatio, 25.0),
            out_of_range(LoadKnob::BurstFraction, 0.005),
            out_of_range(LoadKnob::Resumed, 1.5),
            LoadKnobError::AtLimit(LoadKnob::Clients),
        ],
    );
    lines(
        &mut out,
        "path knobs",
        &[
            KnobError::OutOfRange(PathKnob::Rtt),
            KnobError::OutOfRange(PathKnob::Jitter),
            KnobError::OutOfRange(PathKnob::Loss),
            KnobError::OutOfRange(PathKnob::Bandwidth),
            KnobError::AlreadyUnlimited,
        ],
    );
    let status: Vec<String> = [
        PathValue::Rtt(Dur::from_secs(0.1)),
        jitter,
        PathValue::Loss(Percent(1.0)),
        PathValue::Bandwidth(Some(Bandwidth(10_000_000))),
    ]
    .iter()
    .map(|v| {
        format!(
            "{} | {} | {}",
            v.status().unwrap_or_default(),
            v.assignment(),
            v
        )
    })
    .collect();
    lines(
        &mut out,
        "path values: status line | reply | as written",
        &status,
    );
    lines(
        &mut out,
        "client-bound reasons",
        &[
            ClientBound::PortsOut,
            ClientBound::FdsOut,
            ClientBound::SocketsBusy {
                busy: 300,
                arrivals: 20000,
            },
            ClientBound::Shortfall {
                started: 800.0,
                unit: "attempts",
                done: 790,
                intended: 1000.0,
            },
            ClientBound::Shortfall {
                started: 800.0,
                unit: "requests",
                done: 800,
                intended: 1000.0,
            },
            ClientBound::NoIdleConnection {
                waits: 100,
                scheduled: 1000,
                pool: 16,
                mean_wait_ms: 2.5,
                service_ms: 21.3,
                service_min_ms: 20.4,
            },
            ClientBound::LateForT {
                unit: "attempts",
                lag_s: 0.2,
                of_t: 0.4,
            },
            ClientBound::LateForGap {
                unit: "requests",
                lag_s: 0.015,
                gap_s: 0.01,
            },
            ClientBound::WorkerCpu { cpu: 0.97 },
        ],
    );
    let died = Death {
        who: s("the delay router"),
        pid: 7,
        how: Exit::Signal(9, s("SIGKILL")),
    };
    lines(
        &mut out,
        "point failures",
        &[
            PointFailure::Refused(Refusal::OpenNeedsRate),
            PointFailure::Restart(s("starting worker 1: no such file")),
            PointFailure::Server(s("the server has no CPUs of its own in this lab (no CPU split), so there is nothing to steer to")),
            PointFailure::ChildDied(died.clone()),
            NothingMeasured::NoAttempt { window_s: 5.0 }.into(),
            NothingMeasured::Silent {
                silent: 1,
                workers: 2,
                window_s: 5.0,
            }
            .into(),
            NothingMeasured::Stopped {
                worker: 1,
                span_s: 0.1,
                window_s: 5.0,
            }
            .into(),
        ],
    );
    lines(
        &mut out,
        "deaths",
        &[
            died.clone(),
            Death {
                who: s("load worker 0"),
                pid: 8,
                how: Exit::Code(1),
            },
        ],
    );
    lines(
        &mut out,
        "warnings",
        &[
            Warning::ClientBound(vec![
                ClientBound::PortsOut,
                ClientBound::WorkerCpu { cpu: 1.0 },
            ]),
            Warning::CrossCheck(s("SYNs 2.4 % below attempts")),
            Warning::NoPcap,
            Warning::NoLab(s("loopback only")),
            Warning::PortsRunningOut,
            Warning::OutOfFds,
            Warning::ChildDied(died),
            Warning::RouterBehind,
            Warning::RouterLate(350),
        ],
    );
    lines(
        &mut out,
        "units",
        &[
            UnitError::NotADuration(s("fast")),
            UnitError::NoTimeUnit(s("5")),
            UnitError::UnknownTimeUnit {
                unit: s("d"),
                text: s("2d"),
            },
            UnitError::NegativeDuration(s("-1s")),
            UnitError::BareDuration(5.0),
            UnitError::NotANumber(s("lots")),
            UnitError::AmbiguousM(s("2m")),
            UnitError::UnknownSuffix {
                unit: s("x"),
                text: s("3x"),
            },
            UnitError::NotABandwidth(s("fast")),
            UnitError::NoBandwidthUnit(s("10")),
            UnitError::UnknownBandwidthUnit {
                unit: s("mb"),
                text: s("10mb"),
            },
            UnitError::BandwidthNotPositive(s("0mbit")),
            UnitError::BareBandwidth(10.0),
            UnitError::NotASize(s("big")),
            UnitError::UnknownSizeUnit {
                unit: s("t"),
                text: s("1t"),
            },
            UnitError::NegativeSize(s("-1k")),
            UnitError::NotAPercentage(s("half")),
            UnitError::PercentOutOfRange(101.0),
        ],
    );
    lines(
        &mut out,
        "sweep values",
        &[
            SweepValueError::NotAValue {
                param: SweepParam::Path(PathKnob::Jitter),
                text: s("true"),
            },
            SweepValueError::NotACount {
                param: SweepParam::Concurrency,
                n: 1.5,
            },
            SweepValueError::NotABurstPair,
            SweepValueError::BurstRatioNotANumber,
            SweepValueError::NotAWorkload(s("\"nope\"")),
            SweepValueError::NotASteer(s("nic")),
            SweepValueError::NotASyncookies(s("3")),
        ],
    );
    lines(
        &mut out,
        "cpus",
        &[
            CpuError::Absent {
                cpu: 99,
                machine: vec![0, 1],
            },
            CpuError::Overlap {
                both: vec![1],
                machine: vec![0, 1, 2, 3],
            },
        ],
    );
    lines(
        &mut out,
        "cpu placements",
        &[
            Placement::resolve(&[], &[], true, &[0, 1]).describe(),
            Placement::resolve(&[2], &[0, 1], true, &[0, 1, 2, 3]).describe(),
            Placement::resolve(&[], &[], true, &[0]).describe(),
            Placement::resolve(&[], &[], false, &[0, 1]).describe(),
        ],
    );
    lines(
        &mut out,
        "thresholds",
        &[
            GateError::TextColumn { name: s("backend") },
            GateError::UnknownMetric { name: s("latency") },
            GateError::UnknownMetricNear {
                name: s("throughput_per_sec"),
                nearest: s("throughput_per_s"),
            },
            GateError::Factor {
                bound: s("x x offered_rate"),
                unit: UnitError::NotANumber(s("x")),
            },
            GateError::Bound {
                unit: UnitError::NoTimeUnit(s("50")),
                metric: SummaryCol::TotalP99Ms,
            },
        ],
    );
    lines(
        &mut out,
        "files and ports",
        &[
            FileSetError::NotANumber {
                name: "alpha",
                value: s("x"),
                item: s("pareto:x"),
            }
            .to_string(),
            FileSetError::Unknown(s("spec")).to_string(),
            FileSetInvalid::Alpha(0.0).to_string(),
            FileSetInvalid::Count(0).to_string(),
            FileSetInvalid::MinBytes(1 << 40).to_string(),
            FileSetInvalid::TooBig(1 << 40).to_string(),
            FileSetInvalid::NoSizes.to_string(),
            PortRangeError::NotARange(s("1024")).to_string(),
            PortRangeError::NotAPort {
                port: s("x"),
                range: s("x-2000"),
            }
            .to_string(),
        ],
    );
    // The kernel's own reasons not counted: a run's notice (no view, nothing above it), then
    // the TUI's drops view's words.
    let not_counted = [
        NotCounted::Off,
        NotCounted::NotRoot,
        NotCounted::Refused(s("tracefs: Permission denied (os error 13)")),
    ];
    lines(&mut out, "the kernel's reasons: notices", &not_counted);
    let in_view: Vec<String> = not_counted.iter().map(NotCounted::in_view).collect();
    lines(&mut out, "the kernel's reasons: the drops view", &in_view);
    insta::assert_snapshot!(out);
}
