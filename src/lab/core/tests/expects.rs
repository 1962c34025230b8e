//! A step's checks judged live, and the busy-machine banner.

use super::*;

#[test]
fn a_check_is_judged_on_the_mean_of_the_latest_second() {
    use checks::Check;
    let mut store = crate::metrics::store::Store::new(100);
    // An old second with a full queue, then the latest second (1.2 to 2.0) half full.
    for (t, q) in [
        (0.2, 128.0),
        (0.4, 128.0),
        (1.2, 60.0),
        (1.4, 68.0),
        (2.0, 64.0),
    ] {
        store.push(
            t,
            &[
                (col::ACCEPT_QUEUE, Some(q)),
                (col::ACCEPT_QUEUE_LIMIT, Some(128.0)),
                (col::FIN_WAIT, Some(90.0)),
                (col::ESTABLISHED_SOCKS, Some(20.0)),
            ],
        );
    }
    let e = expects(&[
        "accept_queue >= accept_queue_limit",
        "accept_queue >= 0.5 * accept_queue_limit",
        "held >= 100",
        "total_p99_ms >= 1000",
    ]);
    let v = checks::judge(&store, &e);
    assert_eq!(
        v[0],
        Check::NotYet {
            expect: e[0],
            value: 64.0,
            bound: 128.0
        }
    );
    assert_eq!(
        v[0].to_string(),
        "… not yet: accept_queue = 64, wants accept_queue >= accept_queue_limit (128)"
    );
    assert_eq!(v[1], Check::Held(e[1]));
    assert_eq!(
        v[1].to_string(),
        "✓ held: accept_queue >= 0.5 * accept_queue_limit"
    );
    assert_eq!(
        v[2],
        Check::Held(e[2]),
        "held = ESTABLISHED + FIN_WAIT = 110"
    );
    assert_eq!(v[3], Check::NotMeasured(e[3]));
    assert!(
        checks::judge(&crate::metrics::store::Store::new(10), &e[..1])
            .iter()
            .all(|c| !c.held())
    );
}

/// The socket states are walked at most every 5 s when the walk is costly (many TIME_WAIT
/// sockets on a busy machine): a check reads the last walk while the panel still shows it,
/// not "not measured" between walks.
#[test]
fn a_check_on_a_paced_figure_reads_its_last_walk_while_it_is_current() {
    use checks::Check;
    let mut store = crate::metrics::store::Store::new(100);
    store.push(1.0, &[(col::ESTABLISHED_SOCKS, Some(3.0))]);
    for i in 1..=15 {
        // Samples every 200 ms with no walk (the accept queue is read every sample).
        store.push(
            1.0 + 0.2 * f64::from(i),
            &[
                (col::ACCEPT_QUEUE, Some(0.0)),
                (col::ESTABLISHED_SOCKS, None),
            ],
        );
    }
    let e = expects(&["held < 20"]);
    assert_eq!(
        checks::judge(&store, &e),
        vec![Check::Held(e[0])],
        "3 s old"
    );
    for i in 16..=31 {
        store.push(1.0 + 0.2 * f64::from(i), &[(col::ACCEPT_QUEUE, Some(0.0))]);
    }
    assert_eq!(
        checks::judge(&store, &e),
        vec![Check::NotMeasured(e[0])],
        "6.2 s old: not current, as the panel shows -"
    );
}

#[test]
fn a_caption_brings_its_checks_and_a_later_caption_without_any_clears_them() {
    let steps = vec![
        Step {
            at: Dur::from_secs(1.0),
            caption: Some("the queue fills".into()),
            expect: expects(&["accept_queue >= accept_queue_limit"]),
            ..Default::default()
        },
        Step {
            at: Dur::from_secs(2.0),
            rate: Some(Num(2000.0)),
            ..Default::default()
        },
        Step {
            at: Dur::from_secs(3.0),
            caption: Some("recovery".into()),
            ..Default::default()
        },
    ];
    let mut c = core(1, steps);
    at(&mut c, 0.0, lab_up(&[]));
    at(&mut c, 1.0, Input::Tick);
    assert_eq!(c.state.expect.len(), 1);
    at(&mut c, 2.0, Input::Tick);
    assert_eq!(
        c.state.expect.len(),
        1,
        "a step without a caption keeps the claim"
    );
    at(&mut c, 3.0, Input::Tick);
    assert!(c.state.expect.is_empty());
}

#[test]
fn other_work_above_the_share_on_the_servers_cpus_puts_the_banner_up() {
    let mut c = core(1, Vec::new());
    let st = &mut c.state;
    assert_eq!(checks::busy(st), None, "no rows, no split");
    st.cpus.server = vec![2, 3];
    st.cpus.load = vec![0, 1];
    // The server's two CPUs 60 % busy (120 % of one core), the server used 100 %: other
    // work took 20 % of one core = 10 % of the two: under the share.
    let row = |server_busy: f64, server_used: f64| {
        [
            (col::SERVER_CORES_USER, Some(server_busy / 2.0)),
            (col::SERVER_CORES_SYSTEM, Some(server_busy / 2.0)),
            (col::SERVER_CORES_IDLE, Some(100.0 - server_busy)),
            (col::SERVER_CPU_USER_PCT, Some(server_used * 0.8)),
            (col::SERVER_CPU_SYS_PCT, Some(server_used * 0.2)),
        ]
    };
    st.store.push(1.0, &row(60.0, 100.0));
    assert_eq!(checks::busy(st), None);
    // 96 % busy: other work 92 % of one core = 46 % of the server's two, no idle left.
    st.store.push(2.5, &row(96.0, 100.0));
    let b = checks::busy(st).expect("busy");
    assert_eq!((b.whose, b.pct.round()), ("server's", 46.0));
    assert_eq!(
        b.to_string(),
        "⚠ the machine is busy: other work took 46 % of the server's CPUs and left none idle: figures not the server's alone"
    );
    const { assert!(checks::BUSY_SHARE_PCT < 46.0) };
}

#[test]
fn other_work_in_idle_time_the_server_did_not_want_puts_no_banner_up() {
    let mut c = core(1, Vec::new());
    let st = &mut c.state;
    st.cpus.server = vec![1];
    // The server wants 10 % of its CPU; a build took 40 % beside it; half the CPU idle.
    st.store.push(
        1.0,
        &[
            (col::SERVER_CORES_USER, Some(40.0)),
            (col::SERVER_CORES_SYSTEM, Some(10.0)),
            (col::SERVER_CORES_IDLE, Some(50.0)),
            (col::SERVER_CPU_USER_PCT, Some(6.0)),
            (col::SERVER_CPU_SYS_PCT, Some(4.0)),
        ],
    );
    assert_eq!(checks::busy(st), None, "the server got all it wanted");
}
