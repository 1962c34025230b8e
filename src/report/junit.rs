//! `synlab run --junit FILE`: the threshold verdicts as JUnit XML (one test case per threshold
//! per point, and per cross-check when `[gate]` asks for them), so CI systems list them as tests.

use super::thresholds::Verdict;
use anyhow::Context;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::path::Path;

/// The JUnit report of one run: one suite named after the scenario.
pub fn report(scenario: &str, verdicts: &[Verdict]) -> Report {
    let mut suite = TestSuite::new(format!("synlab.{scenario}"));
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
pub fn write(path: &Path, scenario: &str, verdicts: &[Verdict]) -> anyhow::Result<()> {
    let xml = report(scenario, verdicts)
        .to_string()
        .context("serializing the JUnit report")?;
    crate::sys::files::atomic_write(path, xml.as_bytes())
}
