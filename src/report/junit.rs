//! `synlab run --junit FILE`: the threshold verdicts as JUnit XML (one test case per threshold
//! per point, and per cross-check when `[gate]` asks for them), so CI systems list them as tests.

use super::thresholds::Verdict;
use anyhow::Context;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::path::Path;

/// The JUnit report of one run: one suite named after the scenario. A run cut short
/// (`cut_short`: why) adds an errored case, so the suite is never green on what the run did
/// not measure (an interrupted point's verdicts judge part of its hold).
pub fn report(scenario: &str, verdicts: &[Verdict], cut_short: Option<&str>) -> Report {
    let mut suite = TestSuite::new(format!("synlab.{scenario}"));
    if let Some(why) = cut_short {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(format!(
            "the run did not finish: {why}; its verdicts cover only what it measured, the last \
             point's part of its hold"
        ))
        .set_type("incomplete");
        let mut case = TestCase::new("run finished whole", s);
        case.set_classname(format!("synlab.{scenario}.run"));
        suite.add_test_case(case);
    }
    for v in verdicts {
        let at = match (v.point, v.value.is_empty()) {
            (None, _) => "run".to_string(),
            (Some(p), true) => format!("point {p}"),
            (Some(p), false) => format!("point {p} ({})", v.value),
        };
        let status = if v.passed {
            TestCaseStatus::success()
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(v.message.clone()).set_type(v.source.clone());
            s
        };
        let mut case = TestCase::new(format!("{} @ {at}", v.check), status);
        case.set_classname(format!("synlab.{scenario}.{}", v.source));
        if let Some(m) = v.measured {
            case.add_property(("measured", m.to_string().as_str()));
        }
        if let Some(l) = v.limit {
            case.add_property(("limit", l.to_string().as_str()));
        }
        suite.add_test_case(case);
    }
    let mut r = Report::new("synlab");
    r.add_test_suite(suite);
    r
}

/// Writes the report to `path`.
pub fn write(
    path: &Path,
    scenario: &str,
    verdicts: &[Verdict],
    cut_short: Option<&str>,
) -> anyhow::Result<()> {
    let xml = report(scenario, verdicts, cut_short)
        .to_string()
        .context("serializing the JUnit report")?;
    crate::sys::files::atomic_write(path, xml.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passing() -> Verdict {
        Verdict {
            check: "total_p99_ms <= 50".into(),
            source: "threshold[0]".into(),
            point: Some(1),
            value: String::new(),
            measured: Some(10.0),
            limit: Some(50.0),
            passed: true,
            message: "threshold `total_p99_ms <= 50` at point 1: pass".into(),
        }
    }

    #[test]
    fn an_interrupted_run_is_never_green() {
        let whole = report("s", &[passing()], None).to_string().unwrap();
        assert!(
            whole.contains("failures=\"0\"") && whole.contains("errors=\"0\""),
            "{whole}"
        );
        let cut = report("s", &[passing()], Some("it was interrupted (SIGINT)"))
            .to_string()
            .unwrap();
        assert!(cut.contains("errors=\"1\""), "{cut}");
        assert!(
            cut.contains("the run did not finish: it was interrupted"),
            "{cut}"
        );
    }
}
