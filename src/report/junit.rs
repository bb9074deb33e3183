//! The report for CI: JUnit XML, one `<testsuite>` per group (named by its slug, with the Lab number and
//! the group's name as properties), one `<testcase>` per test. A failed test has a `<failure>`, a timed out
//! one an `<error type="timeout">`; when the code did not build, each group holds one `build` test case
//! with an `<error type="build">` carrying the compiler's output. Points are properties of each suite:
//! `score` and `max` for the group, `grade.score` and `grade.max` for the whole grade.
//!
//! The XML is written by `quick-junit` (nextest's own), which escapes markup; the counts of each suite and
//! of the whole report follow from its test cases. Every text goes through [`xml_text`] first: a panic
//! message may hold any character, and XML 1.0 cannot hold control characters, U+FFFE or U+FFFF (one
//! such character makes the whole report unreadable to a CI system). Messages are those every report
//! shows, bounded per test and per learner (`outcome::bounds`); a failure's `message` attribute is its
//! first line, cut to [`FIRST_LINE_CHARS`].

use std::borrow::Cow;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::i18n::Lang;
use crate::outcome::GradeResult;
use crate::outcome::{format_points, TestStatus};
use crate::ui::strip_ansi;

/// The most characters of a failure's first line that its `message` attribute holds (the whole message
/// is in its description).
pub const FIRST_LINE_CHARS: usize = 240;

/// `text` with every character XML 1.0 cannot hold replaced by U+FFFD: the controls other than tab,
/// line feed and carriage return, and the non-characters U+FFFE and U+FFFF. (A Rust string holds no
/// surrogate, the only other excluded code points.)
pub fn xml_text(text: &str) -> Cow<'_, str> {
    let allowed = |c: char| match c {
        '\t' | '\n' | '\r' => true,
        '\u{0}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}' => false,
        _ => true,
    };
    if text.chars().all(allowed) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(
            text.chars()
                .map(|c| if allowed(c) { c } else { '\u{FFFD}' })
                .collect(),
        )
    }
}

pub fn render(result: &GradeResult, lang: Lang) -> String {
    let built = result.problem.is_none();
    let messages = result.test_messages(lang);
    let mut report = Report::new(xml_text(&format!("pi-course {}", result.chapter)).as_ref());
    report.set_time(result.elapsed);
    let protection = &result.protection;
    let layers = protection.layers.join(",");
    let grade_score = format_points(result.score());
    let grade_max = format_points(result.max());
    for (g, messages) in result.groups.iter().zip(messages) {
        let mut suite = TestSuite::new(xml_text(&g.group.slug).as_ref());
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
            suite.add_property(Property::new(name, xml_text(value).as_ref()));
        }
        let classname = xml_text(&format!("{}.{}", result.test_target, g.group.slug)).into_owned();
        if !built {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_type("build")
                .set_message(xml_text(&result.summary(lang)).as_ref())
                .set_description(xml_text(&strip_ansi(&result.message(lang))).as_ref());
            let mut case = TestCase::new("build", status);
            case.set_classname(classname.as_str())
                .set_time(std::time::Duration::ZERO);
            suite.add_test_case(case);
        }
        let mut time = std::time::Duration::ZERO;
        for (t, message) in g.tests.iter().zip(messages) {
            time += t.duration;
            let message =
                xml_text(&message.map(|m| strip_ansi(&m)).unwrap_or_default()).into_owned();
            let first: String = message
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(FIRST_LINE_CHARS)
                .collect();
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
            let mut case = TestCase::new(xml_text(&t.name).as_ref(), status);
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
