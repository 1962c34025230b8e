//! The core without root, processes or clocks: inputs in, state and effects out. The helpers
//! here; the tests by subject in the files below.

use super::*;
use crate::lab::knobs::{knobs_of, Refusal};
use crate::load::protocol::Mode;
use crate::metrics::store::EventKind;
use crate::model::col;
use crate::model::knob::PathValue;
use crate::model::load_knob::{LoadKnob, LoadStep};
use crate::model::units::{Dur, Num};
use crate::probe::crosscheck;
use std::collections::HashMap;

const INTERVAL: f64 = 0.2;

/// A core for the default scenario in open mode at 1000/s, with `workers` equal loopback
/// workers and these steps.
fn core(workers: usize, steps: Vec<Step>) -> LabCore {
    let mut knobs = knobs_of(&crate::scenario::default_scenario());
    knobs.mode = Mode::Open;
    knobs.rate = Some(1000.0);
    let mut c = LabCore::new("t", knobs, steps, INTERVAL);
    c.set_slots(vec![
        Slot {
            path: None,
            weight: 1.0 / workers as f64,
        };
        workers
    ]);
    c
}

fn delta(worker: u32, interval_s: f64, attempts: u64, responses: u64) -> Input {
    Input::Worker(
        worker,
        Box::new(StatsDelta {
            worker,
            interval_s,
            counts: Counters {
                attempts,
                established: attempts,
                responses,
                ..Default::default()
            },
            ..Default::default()
        }),
    )
}

fn server(t_s: f64, responses: u64) -> Input {
    Input::Server(ServerStats {
        t_s,
        responses,
        ..Default::default()
    })
}

/// A pcap probe sample saying `syn_per_s`.
fn probe(syn_per_s: f64) -> Input {
    Input::Probe(Box::new(ProbeSample {
        at: std::time::Instant::now(),
        t_s: 0.0,
        seq: 0,
        dt_s: Some(INTERVAL),
        syn_source: crate::probe::SynSource::Pcap,
        m: crate::probe::sample::Metrics {
            syn_in_per_s: Some(syn_per_s),
            syn_in_estimated: Some(0.0),
            ..Default::default()
        },
        per_cpu: Vec::new(),
        listeners: Vec::new(),
        notes: Vec::new(),
        kernel: None,
    }))
}

/// The network lab came up with these paths (20 ms RTT each).
fn lab_up(names: &[&str]) -> Input {
    Input::LabUp {
        backend: super::LabBackend::Shaped {
            backend: crate::net::plan::Backend::Router,
            auto: false,
        },
        lab: "root".into(),
        paths: names
            .iter()
            .map(|n| crate::net::spec::PathSpec {
                name: n.to_string(),
                rtt: Dur::from_secs(0.02),
                ..Default::default()
            })
            .collect(),
    }
}

/// Folds `input` at `t`; its effects.
fn at(c: &mut LabCore, t: f64, input: Input) -> Vec<Effect> {
    let mut fx = Vec::new();
    c.fold(input, t, &mut fx);
    fx
}

/// The row among `fx`: its time and columns.
fn row(fx: &[Effect]) -> Option<(f64, HashMap<Col, Option<f64>>)> {
    fx.iter().find_map(|e| match e {
        Effect::Row { t, cols } => Some((*t, cols.iter().copied().collect())),
        _ => None,
    })
}

fn logs(fx: &[Effect]) -> Vec<&str> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Log(l) => Some(l.as_str()),
            _ => None,
        })
        .collect()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn cmd_rtt(secs: f64) -> Command {
    Command::SetPath {
        path: None,
        value: PathValue::Rtt(Dur::from_secs(secs)),
    }
}

/// A report of worker 0 over 100 ms: `attempts` started of `intended` the schedule aimed at
/// (as target_rate), every one answered in `total_ms`.
fn report(attempts: u64, intended: f64, total_ms: Option<u64>) -> Input {
    let us = total_ms
        .map(|ms| vec![(ms * 1000, attempts)])
        .unwrap_or_default();
    let answered = if total_ms.is_some() { attempts } else { 0 };
    Input::Worker(
        0,
        Box::new(StatsDelta {
            worker: 0,
            interval_s: 0.1,
            target_rate: intended / 0.1,
            counts: Counters {
                attempts,
                scheduled: attempts,
                established: answered,
                responses: answered,
                connect_timeouts: attempts - answered,
                ..Default::default()
            },
            connect_us: crate::metrics::hist::HistDelta(us.clone()),
            total_us: crate::metrics::hist::HistDelta(us),
            ..Default::default()
        }),
    )
}

/// Runs the core from `from` to `to` s with a report every 100 ms made by `r(t)` and a row
/// tick every 200 ms; the run.log lines.
fn drive(c: &mut LabCore, from: f64, to: f64, r: &dyn Fn(f64) -> Input) -> Vec<String> {
    let mut lines = Vec::new();
    let mut k = (from * 10.0).round() as u64 + 1;
    while (k as f64) / 10.0 <= to + 1e-9 {
        let t = k as f64 / 10.0;
        at(c, t - 0.005, r(t));
        lines.extend(logs(&at(c, t, Input::Tick)).into_iter().map(String::from));
        k += 1;
    }
    lines
}

fn client_bound(c: &LabCore) -> bool {
    c.state
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::ClientBound(_)))
}

fn expects(texts: &[&str]) -> Vec<crate::model::expect::Expect> {
    texts
        .iter()
        .map(|t| crate::model::expect::Expect::parse(t).unwrap())
        .collect()
}

mod client_bound;
mod expects;
mod latency_split;
mod notices;
mod paths;
mod rows;
mod steps;
mod stretches;
