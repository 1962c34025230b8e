//! issue 45 item 1, over every lesson file (scenarios/lesson-*.toml): it loads, its steps'
//! times start at 0, rise and end before its duration (a step after the end never plays),
//! every step has a caption, every check parses (at load: `Step::expect` is typed), and the
//! classroom's lessons write each step's claim as a check, all but the closing step.

use std::path::PathBuf;
use std::time::Duration;

/// The lessons whose every step but the last makes a claim the TUI judges (issue 45: the
/// classroom's set; the closing step only says what to try).
const CHECKED: [&str; 5] = [
    "lesson-overload",
    "lesson-bursts",
    "lesson-wan",
    "lesson-tls",
    "lesson-keepalive",
];

fn lessons() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("lesson-") && n.ends_with(".toml")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_lessons_steps_and_checks_parse_in_time() {
    let files = lessons();
    assert!(files.len() >= 4, "the lessons: {files:?}");
    for p in files {
        let f = p.display();
        let sc = synlab::scenario::load(&p).unwrap_or_else(|e| panic!("{f}: {e:#}"));
        let duration: Duration = sc.duration.0;
        assert!(duration > Duration::ZERO, "{f}: a lesson has a duration");
        assert!(sc.steps.len() >= 2, "{f}: a lesson has steps");
        assert_eq!(
            sc.steps[0].at.0,
            Duration::ZERO,
            "{f}: the first step at 0 s"
        );
        for (i, w) in sc.steps.windows(2).enumerate() {
            assert!(
                w[1].at.0 > w[0].at.0,
                "{f}: step {} at {:?} is not after step {} at {:?}",
                i + 2,
                w[1].at.0,
                i + 1,
                w[0].at.0
            );
        }
        let last = sc.steps.last().unwrap();
        assert!(
            last.at.0 < duration,
            "{f}: the last step at {:?} would play after the end ({duration:?})",
            last.at.0
        );
        for (i, s) in sc.steps.iter().enumerate() {
            assert!(
                s.caption.as_deref().is_some_and(|c| !c.trim().is_empty()),
                "{f}: step {} has no caption",
                i + 1
            );
            // A check reads like its text and parses back to itself (what the screen shows).
            for e in &s.expect {
                let again = synlab::model::expect::Expect::parse(&e.to_string())
                    .unwrap_or_else(|x| panic!("{f}: step {}: {e}: {x:?}", i + 1));
                assert_eq!(&again, e, "{f}: step {}", i + 1);
            }
        }
        if CHECKED.contains(&sc.name.as_str()) {
            for (i, s) in sc.steps[..sc.steps.len() - 1].iter().enumerate() {
                assert!(
                    !s.expect.is_empty(),
                    "{f}: step {} makes a claim without a check: {:?}",
                    i + 1,
                    s.caption
                );
            }
        }
        // The description names the command that runs it (issue 45 item 5).
        let file = p.file_name().unwrap().to_string_lossy();
        assert!(
            sc.description
                .contains(&format!("synlab tui scenarios/{file}")),
            "{f}: the description does not name `synlab tui scenarios/{file}`"
        );
    }
}
