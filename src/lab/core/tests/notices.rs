//! The workers' notices: typed as they come, kept once per kind whichever worker says it, each
//! a line of run.log and summary.json and a warning on screen (ports and descriptors apart: they
//! have live warnings of their own).

use super::*;
use crate::lab::state::Warning;
use crate::load::protocol::WorkerNotice as N;
use crate::model::BadReason;

fn saying(worker: u32, notices: Vec<N>) -> Input {
    Input::Worker(
        worker,
        Box::new(StatsDelta {
            worker,
            interval_s: 0.1,
            notices,
            ..Default::default()
        }),
    )
}

#[test]
fn a_notice_is_kept_once_per_kind_not_per_wording() {
    let mut c = core(2, Vec::new());
    let raised = |to| N::RaisedNofile {
        from: 1024,
        to,
        needs: to,
    };
    let bad = |reason, words: &str| N::BadResponses {
        reason,
        words: words.into(),
    };
    let fx = at(
        &mut c,
        0.1,
        saying(
            0,
            vec![
                raised(4096),
                bad(BadReason::Framing, "bad Content-Length"),
                N::PortsExhausted,
            ],
        ),
    );
    assert_eq!(
        logs(&fx),
        [
            "worker 0: raised RLIMIT_NOFILE from 1024 to 4096 (this load needs up to 4096)",
            "worker 0: bad responses: bad Content-Length: the responses' bodies are framed wrong (Content-Length or chunked coding) (counted in bad_responses)",
            "worker 0: ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or add client addresses",
        ]
    );
    // Worker 1 says the same kinds in other words (its own limit, another framing error) and
    // one new kind (another reason).
    let fx = at(
        &mut c,
        0.2,
        saying(
            1,
            vec![
                raised(8192),
                bad(BadReason::Framing, "bad chunk size"),
                bad(
                    BadReason::Closed,
                    "connection closed in the middle of a response",
                ),
            ],
        ),
    );
    assert_eq!(
        logs(&fx),
        ["worker 1: bad responses: connection closed in the middle of a response: the server closed connections before the response was complete (counted in bad_responses)"]
    );
    let kinds: Vec<_> = c.worker_notices().iter().map(|n| n.kind()).collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert_eq!(
        c.notices().len(),
        4,
        "summary.json's lines: {:?}",
        c.notices()
    );
    // On screen: each but the ports (held live by their own warning).
    let on_screen: Vec<&N> = c
        .state()
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::Worker(n) => Some(n),
            _ => None,
        })
        .collect();
    assert_eq!(on_screen.len(), 3, "{on_screen:?}");
    assert!(!on_screen.contains(&&N::PortsExhausted));
    assert_eq!(
        Warning::Worker(raised(4096)).to_string(),
        "load: raised RLIMIT_NOFILE from 1024 to 4096 (this load needs up to 4096)"
    );
}

/// A report of worker 0 over 100 ms with `n` handshakes timed out.
fn handshake_timeouts(n: u64) -> Input {
    Input::Worker(
        0,
        Box::new(StatsDelta {
            interval_s: 0.1,
            counts: Counters {
                attempts: n,
                handshake_timeouts: n,
                ..Default::default()
            },
            ..Default::default()
        }),
    )
}

/// Over an HTTP/3 flood the warning read "TLS handshakes failing (27691 timeouts): run.log
/// says why" and run.log only repeated it: it says they are QUIC handshakes timing out, over
/// which window it counted them, and why when the probes saw the server's socket drop
/// datagrams (else what to look at).
#[test]
fn quic_handshakes_timing_out_say_so_and_the_socket_drops_that_made_them() {
    let warned = |quic: bool, drops: Option<f64>| {
        let mut c = core(1, Vec::new());
        c.set_quic(quic);
        let mut lines = Vec::new();
        for k in 1..=20 {
            let t = k as f64 * 0.1;
            at(&mut c, t - 0.01, handshake_timeouts(100));
            if let Some(per_s) = drops {
                let Input::Probe(mut p) = probe(0.0) else {
                    unreachable!()
                };
                p.m.udp_rcvbuf_errors_per_s = Some(per_s);
                p.m.port_udp_drops_per_s = Some(per_s);
                at(&mut c, t - 0.005, Input::Probe(p));
            }
            lines.extend(
                logs(&at(&mut c, t, Input::Tick))
                    .into_iter()
                    .map(String::from),
            );
        }
        let w = c
            .state
            .warnings
            .iter()
            .find(|w| matches!(w, Warning::TlsFailing { .. }));
        (w.map(|w| w.to_string()).unwrap_or_default(), lines)
    };
    let (w, lines) = warned(true, Some(9000.0));
    assert_eq!(
        w,
        "QUIC handshakes timing out (2000 in the last 3 s): the server's socket is dropping datagrams at its full receive buffer (Udp RcvbufErrors 9000/s, the socket's drops 9000/s), Initials and Finished flights among them"
    );
    // run.log has the warning as it was raised, its why included.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("warning: QUIC handshakes timing out (")
                && l.contains("Udp RcvbufErrors 9000/s")),
        "{lines:?}"
    );
    let (w, _) = warned(true, Some(0.0));
    assert!(w.ends_with("the server's socket dropped no datagram in the last 3 s: look at the server's CPU, the paths' loss and load.timeout"), "{w}");
    let (w, _) = warned(true, None);
    assert!(
        w.contains(": no probe says whether the server's socket drops datagrams"),
        "{w}"
    );
    // Over TCP, TLS handshakes as before, with the window.
    let (w, _) = warned(false, None);
    assert_eq!(
        w,
        "TLS handshakes failing (2000 timeouts in the last 3 s): run.log says why"
    );
}
