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
