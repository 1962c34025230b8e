//! The controller's decisions on a fake machine (`fakes.rs`): the start-up order, a child's
//! death, the drain and the finish. No root, no process, no socket.

use super::fakes::Machine;
use super::*;
use crate::model::death::{Death, Exit};

fn opts() -> RunOptions {
    RunOptions {
        out_parent: None,
        interrupted: Arc::default(),
        network_fallback: false,
        metrics: None,
    }
}

/// The default scenario with `workers` load workers, over a lab of one path or on loopback.
fn scenario(workers: u32, lab: bool) -> Scenario {
    let mut sc = crate::scenario::default_scenario();
    sc.load.workers = workers;
    sc.network = lab.then(crate::net::spec::NetworkSpec::default);
    sc
}

/// Where in the journal the first line starting with `prefix` is.
fn at(journal: &[String], prefix: &str) -> usize {
    journal
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {journal:#?}"))
}

#[test]
fn start_up_brings_the_network_then_the_server_then_the_probes_then_the_load() {
    let m = Machine::new();
    let c = Controller::start_on(scenario(2, true), opts(), m.runtime()).unwrap();
    let j = m.journal();
    let lab = at(&j, "lab up");
    let server = at(&j, "spawn server");
    let probes = at(&j, "probes start");
    let w0 = at(&j, "spawn worker 0");
    let w1 = at(&j, "spawn worker 1");
    assert!(
        lab < server && server < probes && probes < w0 && w0 < w1,
        "{j:#?}"
    );
    // Each where the lab put it: the server and its probes in the server's namespace, the
    // workers in the client's.
    let ns = c.net.as_ref().unwrap().layout().clone();
    assert_eq!(j[server], format!("spawn server in {}", ns.server_netns));
    assert_eq!(
        j[probes],
        format!("probes start on {} port 8080", ns.server_netns)
    );
    assert_eq!(j[w0], format!("spawn worker 0 in {}", ns.paths[0].netns));
    assert_eq!(c.target_addr, "198.18.0.1:8080".parse().unwrap());
    assert_eq!(c.worker_count(), 2);
    assert!(c.core().probes_on(), "the core knows the probes run");
    let target = &c.state().target;
    assert!(
        target.starts_with("built-in") && target.contains(" on 198.18.0.1:8080 "),
        "{target}"
    );
}

#[test]
fn without_a_lab_the_server_gets_a_free_host_port_and_probes_watch_the_host() {
    let m = Machine::new();
    let c = Controller::start_on(scenario(1, false), opts(), m.runtime()).unwrap();
    let j = m.journal();
    assert_eq!(j[at(&j, "spawn server")], "spawn server");
    assert_eq!(
        j[at(&j, "probes start")],
        "probes start on the host port 18080"
    );
    assert!(!j.iter().any(|l| l.starts_with("lab")), "{j:#?}");
    assert_eq!(c.target_addr, "127.0.0.1:18080".parse().unwrap());
}

/// With port 0 the port is ours to pick: one taken between the pick and the check (another
/// run picked it too) is dropped for the next, not reported as the user's port in use.
#[test]
fn a_picked_port_taken_meanwhile_is_picked_again() {
    let m = Machine::new();
    m.take_after_pick(18080);
    let c = Controller::start_on(scenario(1, false), opts(), m.runtime()).unwrap();
    assert_eq!(c.target_addr, "127.0.0.1:18081".parse().unwrap());
}

#[test]
fn a_server_that_cannot_start_leaves_nothing_running_and_starts_no_load() {
    let m = Machine::new();
    m.refuse("server");
    let err = Controller::start_on(scenario(2, true), opts(), m.runtime())
        .err()
        .expect("the start fails");
    assert!(
        format!("{err:#}").contains("server could not start"),
        "{err:#}"
    );
    let j = m.journal();
    assert!(!j.iter().any(|l| l.starts_with("spawn worker")), "{j:#?}");
    assert!(!j.iter().any(|l| l.starts_with("probes start")), "{j:#?}");
    assert!(at(&j, "spawn server refused") < at(&j, "lab down"));
    assert_eq!(m.still_running(), Vec::<String>::new());
}

#[test]
fn a_worker_that_cannot_start_stops_what_started_before_it() {
    let m = Machine::new();
    m.refuse("worker 1");
    assert!(Controller::start_on(scenario(2, true), opts(), m.runtime()).is_err());
    let j = m.journal();
    // worker 0, the server, the probes and the lab were up: all of them are gone.
    assert!(at(&j, "spawn worker 0") < at(&j, "spawn worker 1 refused"));
    for gone in ["stop worker 0", "stop server", "probes stop", "lab down"] {
        assert!(at(&j, gone) > at(&j, "spawn worker 1 refused"), "{gone}");
    }
    assert_eq!(m.still_running(), Vec::<String>::new());
}

#[test]
fn probes_that_cannot_start_are_a_notice_and_the_load_still_runs() {
    let m = Machine::new();
    m.refuse("probes");
    let c = Controller::start_on(scenario(1, false), opts(), m.runtime()).unwrap();
    assert_eq!(c.worker_count(), 1);
    assert!(!c.core().probes_on());
    let notice = "probes could not start: no permission for the fake probes";
    assert!(
        c.core().notices().iter().any(|n| n == notice),
        "{:?}",
        c.core().notices()
    );
}

#[test]
fn a_worker_that_dies_stops_the_load_and_the_user_sees_who_and_how() {
    let m = Machine::new();
    let mut c = Controller::start_on(scenario(2, false), opts(), m.runtime()).unwrap();
    m.end("worker 1", Exit::Signal(9, "SIGKILL".into()));
    c.pump().unwrap();
    let died = Death {
        who: "load worker 1".into(),
        pid: c.workers[1].pid(),
        how: Exit::Signal(9, "SIGKILL".into()),
    };
    // The core: the run is over and failed by the death.
    assert_eq!(c.child_died(), Some(died.clone()));
    assert!(c.state().finished);
    // The user: the status line and the notices say who died and how.
    assert_eq!(
        c.state().caption.as_deref(),
        Some(format!("{died}: run stopped (press q to quit)").as_str())
    );
    assert!(c.core().notices().contains(&died.to_string()));
    // The load: the surviving worker is paused; the dead one is not written to.
    let j = m.journal();
    let paused = j
        .iter()
        .filter(|l| l.starts_with("worker 0 <- ") && l.contains("\"paused\":true"))
        .count();
    assert_eq!(paused, 1, "{j:#?}");
    assert!(!j.iter().any(|l| l.starts_with("worker 1 <- ")), "{j:#?}");
    // A second look finds the same death, said once.
    c.pump().unwrap();
    assert_eq!(
        c.core()
            .notices()
            .iter()
            .filter(|n| **n == died.to_string())
            .count(),
        1
    );
    // The end cleans up everything, the dead worker included.
    drop(c);
    assert_eq!(m.still_running(), Vec::<String>::new());
}

#[test]
fn the_server_and_the_delay_router_are_watched_too() {
    let m = Machine::new();
    let mut c = Controller::start_on(scenario(1, true), opts(), m.runtime()).unwrap();
    m.end("server", Exit::Code(1));
    c.pump().unwrap();
    let died = c.child_died().expect("the server's death is seen");
    assert_eq!(died.who, "the target server");
    assert_eq!(died.how, Exit::Code(1));

    let m = Machine::new();
    let mut c = Controller::start_on(scenario(1, true), opts(), m.runtime()).unwrap();
    m.router_dies(Exit::Signal(11, "SIGSEGV".into()));
    c.pump().unwrap();
    assert_eq!(c.child_died().unwrap().who, "the delay router");
    assert!(c.state().finished);
}

#[test]
fn the_finish_drains_then_stops_probes_workers_server_and_lab_in_that_order() {
    let m = Machine::new();
    let mut c = Controller::start_on(scenario(2, true), opts(), m.runtime()).unwrap();
    let started = m.journal().len();
    c.shutdown().unwrap();
    let j = m.journal()[started..].to_vec();
    let drain0 = at(&j, "worker 0 <- {\"cmd\":\"drain\"}");
    let drain1 = at(&j, "worker 1 <- {\"cmd\":\"drain\"}");
    let probes = at(&j, "probes stop");
    let w0 = at(&j, "stop worker 0");
    let w1 = at(&j, "stop worker 1");
    let server = at(&j, "stop server");
    let lab = at(&j, "lab down");
    assert!(drain0 < probes && drain1 < probes, "{j:#?}");
    assert!(
        probes < w0 && w0 < w1 && w1 < server && server < lab,
        "{j:#?}"
    );
    // The workers finished their drain: no Stop was needed for them, and the drain took no
    // time of its bound.
    assert!(
        !j.iter()
            .any(|l| l.starts_with("worker") && l.contains("\"stop\"")),
        "{j:#?}"
    );
    assert_eq!(m.still_running(), Vec::<String>::new());
    assert_eq!(c.worker_count(), 0);
    // A second finish (the drop's) finds nothing left to stop.
    let n = m.journal().len();
    drop(c);
    assert_eq!(m.journal().len(), n, "{:#?}", &m.journal()[n..]);
}

#[test]
fn a_drain_that_does_not_finish_is_bounded_by_the_timeouts_then_the_workers_are_stopped() {
    let m = Machine::new();
    m.workers_hold_on_drain();
    let mut c = Controller::start_on(scenario(2, false), opts(), m.runtime()).unwrap();
    let bound = c.state().knobs.timeout.as_secs_f64() + c.scenario().load.response_timeout.secs();
    let before = m.moved();
    c.shutdown().unwrap();
    // The clock moved by the drain's bound (plus its margin and the probes' last wait).
    let waited = (m.moved() - before).as_secs_f64();
    let drain = bound.min(MAX_DRAIN_S) + 0.2;
    assert!(
        waited >= drain,
        "waited {waited} s, the drain's bound is {drain} s"
    );
    let j = m.journal();
    // Still running after the drain: told to stop, then stopped.
    for w in ["worker 0", "worker 1"] {
        assert!(
            at(&j, &format!("{w} <- {{\"cmd\":\"drain\"}}"))
                < at(&j, &format!("{w} <- {{\"cmd\":\"stop\"}}"))
        );
        assert!(at(&j, &format!("{w} <- {{\"cmd\":\"stop\"}}")) < at(&j, &format!("stop {w}")));
    }
    assert_eq!(m.still_running(), Vec::<String>::new());
}

#[test]
fn a_live_path_change_reaches_the_lab_and_the_knobs() {
    let m = Machine::new();
    let mut c = Controller::start_on(scenario(1, true), opts(), m.runtime()).unwrap();
    let reply = c.apply(Command::SetPath {
        path: Some("lan".into()),
        value: crate::model::knob::PathKnob::Rtt.parse("40ms").unwrap(),
    });
    assert!(matches!(reply, Reply::Applied(_)), "{reply:?}");
    assert!(
        m.journal().iter().any(|l| l == "path lan rtt 40ms"),
        "{:#?}",
        m.journal()
    );
    assert_eq!(c.state().knobs.paths[0].rtt.to_string(), "40ms");
}

#[test]
fn a_snapshot_says_where_it_went_in_run_log() {
    let m = Machine::new();
    let dir = tempfile::tempdir().unwrap();
    let o = RunOptions {
        out_parent: Some(dir.path().to_path_buf()),
        ..opts()
    };
    let mut c = Controller::start_on(scenario(1, false), o, m.runtime()).unwrap();
    let written = c.write_snapshot("screen").unwrap();
    let run = c.recorder.dir().unwrap().to_path_buf();
    c.shutdown().unwrap();
    let log = std::fs::read_to_string(run.join("run.log")).unwrap();
    let line = format!("snapshot written: {}", written.display());
    assert!(log.contains(&line), "{log}");
}
