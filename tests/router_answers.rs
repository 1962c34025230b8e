//! The delay router answers each live change (root): a change it refuses leaves the knobs as
//! they were and shows, with the router's reason, in the TUI's message line and in run.log.
//!
//! The controller's knobs never propose a change the router refuses, so the test makes one:
//! the router is started through a wrapper that renames path `far` in its configuration (as a
//! router of another lab would have it), and a change of `far` that the core lets through is
//! then one the router cannot take.

mod lab_support;

use lab_support::{opts, privileged, run_for};
use std::os::unix::fs::PermissionsExt;
use synlab::lab::controller::Controller;
use synlab::lab::knobs::Command;
use synlab::model::knob::PathKnob;

const SCENARIO: &str = r#"
name = "answers"
duration = "30s"
[target]
arch = "event"
service_time = "100us"
[load]
mode = "open"
rate = 50
timeout = "1s"
workers = 1
[network]
backend = "router"
[[network.path]]
name = "near"
share = 0.5
rtt = "2ms"
[[network.path]]
name = "far"
share = 0.5
rtt = "40ms"
"#;

/// `synlab` for every child, except that the router's configuration calls path `far` `other`.
fn wrapper(dir: &std::path::Path) -> std::path::PathBuf {
    let real = env!("CARGO_BIN_EXE_synlab");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = router ] && [ \"$2\" = --config-json ]; then\n  \
         cfg=$(printf '%s' \"$3\" | sed 's/\"name\":\"far\"/\"name\":\"other\"/')\n  \
         exec '{real}' router --config-json \"$cfg\"\nfi\nexec '{real}' \"$@\"\n"
    );
    let path = dir.join("synlab-renaming-far");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn run_log(dir: &std::path::Path) -> String {
    for e in walk(dir) {
        if e.file_name().is_some_and(|n| n == "run.log") {
            return std::fs::read_to_string(e).unwrap();
        }
    }
    panic!("no run.log under {}", dir.display())
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_change_the_router_refuses_shows_in_the_message_line_and_run_log() {
    if !privileged() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("SYNLAB_EXE", wrapper(tmp.path()));
    let out = tmp.path().join("runs");
    std::fs::create_dir(&out).unwrap();
    let sc = synlab::scenario::parse("answers.toml", SCENARIO).unwrap();
    let mut c = Controller::start(sc, opts(Some(&out))).unwrap();
    run_for(&mut c, 0.5);

    // The router has `near`: a change of it is answered and held.
    let reply = c.apply(Command::SetPath {
        path: Some("near".into()),
        value: PathKnob::Rtt.parse("4ms").unwrap(),
    });
    assert!(!reply.is_refused(), "{reply}");

    // It has no `far`: refused with its reason, and the knob keeps its value.
    let reply = c.apply(Command::SetPath {
        path: Some("far".into()),
        value: PathKnob::Rtt.parse("20ms").unwrap(),
    });
    let why = "path far unchanged: the delay router has no path `far` (its paths: near, other); \
               it was started for another lab";
    assert_eq!(reply.to_string(), format!("refused: {why}"));
    assert!(reply.is_refused());
    let far = |c: &Controller| {
        c.state()
            .knobs
            .paths
            .iter()
            .find(|p| p.name == "far")
            .unwrap()
            .rtt
    };
    assert_eq!(far(&c).0, std::time::Duration::from_millis(40));
    // The TUI's message line: what the lab last did, as the caption bar shows it.
    let app = synlab::ui::app::App::new(synlab::ui::theme::Theme { color: false }, 60.0);
    let (line, warning) = app.message_for(c.state().last_action.as_ref()).unwrap();
    assert_eq!((line.as_ref(), warning), (reply.to_string().as_str(), true));

    run_for(&mut c, 0.3);
    c.shutdown().unwrap();
    drop(c);
    let log = run_log(&out);
    assert!(log.contains(why), "run.log:\n{log}");
}

/// What the router writes on stderr (here its last error, a configuration it cannot read)
/// arrives as a line from its stdout pipe, as the lab starts it: never on the terminal.
#[test]
fn the_routers_last_words_come_through_its_pipe_not_the_terminal() {
    use synlab::sys::process::{ChildProc, Spawn};
    let (tx, rx) = std::sync::mpsc::channel();
    let spawn = Spawn {
        program: Some(env!("CARGO_BIN_EXE_synlab").into()),
        args: vec!["router".into(), "--config-json".into(), "{".into()],
        stderr_to_stdout: true,
        ..Default::default()
    };
    let mut router = ChildProc::spawn("the delay router", &spawn, move |l| {
        let _ = tx.send(l.to_string());
    })
    .unwrap();
    let st = router.stop(std::time::Duration::from_secs(10)).unwrap();
    assert!(!st.success());
    let said: Vec<String> = rx.try_iter().collect();
    assert!(
        said.iter()
            .any(|l| l.contains("parsing the router's --config-json")),
        "{said:?}"
    );
}
