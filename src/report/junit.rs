//! The report for CI: JUnit XML, one `<testsuite>` per group (named by its slug, with the Lab number and
//! the group's name as properties), one `<testcase>` per test. A failed test has a `<failure>`, a timed out
//! one an `<error type="timeout">`; when the code did not build, each group holds one `build` test case
//! with an `<error type="build">` carrying the compiler's output. Points are properties of each suite:
//! `score` and `max` for the group, `grade.score` and `grade.max` for the whole grade.
//!
//! The XML is written by `quick-junit` (nextest's own), which escapes text and drops the characters XML
//! cannot hold; the counts of each suite and of the whole report follow from its test cases.

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::grade::outcome::{format_points, TestStatus};
use crate::grade::GradeResult;
use crate::i18n::Lang;
use crate::ui::strip_ansi;

pub fn render(result: &GradeResult, lang: Lang) -> String {
    let built = result.problem.is_none();
    let mut report = Report::new(format!("pi-course {}", result.chapter));
    report.set_time(result.elapsed);
    let protection = &result.protection;
    let layers = protection.layers.join(",");
    let grade_score = format_points(result.score());
    let grade_max = format_points(result.max());
    for g in &result.groups {
        let mut suite = TestSuite::new(g.group.slug.as_str());
        let score = format_points(g.score(result.partial_credit));
        let max = format_points(g.max());
        for (name, value) in [
            ("lab", g.group.lab.as_str()),
            ("name", g.group.name.get(lang)),
            ("name.zh", g.group.name.zh.as_str()),
            ("optional", if g.group.optional { "true" } else { "false" }),
            ("score", &score),
            ("max", &max),
            ("grade.score", &grade_score),
            ("grade.max", &grade_max),
            (
                "sandbox.active",
                if protection.active { "true" } else { "false" },
            ),
            ("sandbox.layers", &layers),
            ("sandbox.reason", protection.reason.as_deref().unwrap_or("")),
        ] {
            suite.add_property(Property::new(name, value));
        }
        let classname = format!("{}.{}", result.test_target, g.group.slug);
        if !built {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_type("build")
                .set_message(result.summary(lang))
                .set_description(strip_ansi(&result.message(lang)));
            let mut case = TestCase::new("build", status);
            case.set_classname(classname.as_str())
                .set_time(std::time::Duration::ZERO);
            suite.add_test_case(case);
        }
        let mut time = std::time::Duration::ZERO;
        for t in &g.tests {
            time += t.duration;
            let message = t.message(lang).map(|m| strip_ansi(&m)).unwrap_or_default();
            let first = message.lines().next().unwrap_or_default().to_string();
            let status = match t.status() {
                TestStatus::Pass => TestCaseStatus::success(),
                TestStatus::Fail | TestStatus::Timeout => {
                    let (kind, ty) = if t.status() == TestStatus::Fail {
                        (NonSuccessKind::Failure, "failure")
                    } else {
                        (NonSuccessKind::Error, "timeout")
                    };
                    let mut status = TestCaseStatus::non_success(kind);
                    status
                        .set_type(ty)
                        .set_message(first)
                        .set_description(message);
                    status
                }
            };
            let mut case = TestCase::new(t.name.as_str(), status);
            case.set_classname(classname.as_str()).set_time(t.duration);
            suite.add_test_case(case);
        }
        suite.set_time(time);
        report.add_test_suite(suite);
    }
    report
        .to_string()
        .expect("a JUnit report of strings always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_make_valid_xml() {
        let mut suite = TestSuite::new("s");
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status
            .set_message("a<b>&\"c'\x1b\x07")
            .set_description("1\n2 \x1b[31m红\x1b[0m");
        suite.add_test_case(TestCase::new("t<1>", status));
        let mut report = Report::new("r");
        report.add_test_suite(suite);
        let xml = report.to_string().unwrap();
        assert!(xml.contains("a&lt;b&gt;&amp;"), "{xml}");
        assert!(!xml.contains('\x1b') && !xml.contains('\x07'), "{xml}");
        assert!(xml.contains("t&lt;1&gt;"), "{xml}");
        assert!(xml.contains("红"), "{xml}");
    }
}
