//! The docs' example lesson works as written (issue 45 item 5): the TOML block of
//! docs/04-scenario-reference.md's `[[step]]` section, run briefly (its steps scaled into 9 s):
//! its "rate 3000" step fills the accept queue to its limit and overflows it (the server, not
//! the clients' D, is the limit), and the load returns below capacity afterwards.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use synlab::lab::controller::RunOptions;

/// The reference's example lesson, as written there.
fn docs_lesson() -> String {
    let md = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/04-scenario-reference.md"),
    )
    .unwrap();
    let start = md
        .find("```toml\nname = \"a short lesson\"")
        .expect("the example lesson in docs/04-scenario-reference.md");
    let body = &md[start + "```toml\n".len()..];
    body[..body.find("```").unwrap()].to_string()
}

/// The largest value of a timeseries.csv column.
fn max_of(dir: &Path, column: &str) -> f64 {
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = head.iter().position(|h| *h == column).expect(column);
    lines
        .filter_map(|l| l.split(',').nth(i).and_then(|x| x.parse::<f64>().ok()))
        .fold(0.0, f64::max)
}

#[test]
fn the_docs_example_lesson_fills_the_queue_at_its_overload_step() {
    let sc = synlab::scenario::parse("docs-lesson.toml", &docs_lesson())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(sc.steps.iter().all(|s| s.caption.is_some()));
    let f = 9.0 / sc.duration.secs();
    let mut sc = sc.scaled(f);
    sc.duration = synlab::scenario::units::Dur::from_secs(9.0);
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let tmp = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        out_parent: Some(tmp.path().to_path_buf()),
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
        metrics: None,
    };
    let (dir, _rows, _) = synlab::lab::run::run_scenario(sc, opts, false).unwrap();
    let dir = dir.unwrap();
    let limit = max_of(&dir, "accept_queue_limit");
    assert_eq!(limit, 128.0, "the lesson's backlog");
    let queue = max_of(&dir, "accept_queue");
    assert!(
        queue >= 0.9 * limit,
        "the accept queue reached {queue} of {limit} at 3,000/s"
    );
    assert!(max_of(&dir, "listen_overflows_per_s") > 0.0);
    let events = std::fs::read_to_string(dir.join("events.csv")).unwrap();
    assert!(events.contains("overload"), "{events}");
}
