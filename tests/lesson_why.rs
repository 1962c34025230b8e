//! lesson-why (issue 48 item 5) as written: it parses, it overloads a small backlog, and each
//! step that checks a drop reason names that reason in its caption in the words the drops
//! view shows (model::drops), so what the class reads is what the screen says; SYN cookies go
//! off and on again by a step's `syncookies` key.

use std::path::Path;
use synlab::model::drops::DropReason;
use synlab::model::expect::{Figure, Op};

#[test]
fn lesson_why_parses_and_its_captions_name_the_reasons_it_checks() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lesson-why.toml");
    let sc = synlab::scenario::load(&path).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(sc.target.backlog, 16, "a small backlog");
    let net = sc
        .network
        .as_ref()
        .expect("[network]: the round-trip step needs the lab");
    assert_eq!(net.sysctl.server.tcp_syncookies, Some(1));
    assert!(sc.steps.iter().all(|s| s.caption.is_some()));
    let mut named = Vec::new();
    for st in &sc.steps {
        let caption = st.caption.as_deref().unwrap();
        for e in &st.expect {
            let Figure::Col(c) = e.figure else { continue };
            // A reason checked to be present (> or >=) is one the screen shows.
            let present = matches!(e.op, Op::Gt | Op::Ge);
            if let (Some(r), true) = (DropReason::of_col(c), present) {
                assert!(
                    caption.contains(r.words),
                    "step at {}: checks {} but its caption does not say '{}'",
                    st.at,
                    c.name(),
                    r.words
                );
                named.push(r.counter);
            }
        }
    }
    // SYN cookies off, then on again, by a step's key, in that order.
    let cookies: Vec<u8> = sc.steps.iter().filter_map(|s| s.syncookies).collect();
    assert_eq!(cookies, [0, 1], "cookies off, then on");
    // Overload (the accept queue), the SYN queue without cookies and with them.
    for want in [
        "TcpExt.ListenOverflows",
        "TcpExt.TCPReqQFullDrop",
        "TcpExt.TCPReqQFullDoCookies",
        "TcpExt.SyncookiesRecv",
    ] {
        assert!(named.contains(&want), "{want} not checked: {named:?}");
    }
}
