//! The report for CI: JUnit XML, one `<testsuite>` per group (named by its slug, with the Lab number and
//! the group's name as properties), one `<testcase>` per test. A failed test has a `<failure>`, a timed out
//! one an `<error type="timeout">`; when the code did not build, each group holds one `build` test case
//! with an `<error type="build">` carrying the compiler's output. Points are properties of each suite:
//! `score` and `max` for the group, `grade.score` and `grade.max` for the whole grade.

use std::fmt::Write as _;

use crate::grade::outcome::{format_points, GroupResult, TestStatus};
use crate::grade::GradeResult;
use crate::i18n::Lang;
use crate::ui::strip_ansi;

pub fn render(result: &GradeResult, lang: Lang) -> String {
    let count =
        |pred: &dyn Fn(&GroupResult) -> usize| result.groups.iter().map(pred).sum::<usize>();
    let built = result.problem.is_none();
    let tests = if built {
        count(&|g| g.total())
    } else {
        result.groups.len()
    };
    let failures = count(&|g| {
        g.tests
            .iter()
            .filter(|t| t.status() == TestStatus::Fail)
            .count()
    });
    let errors = if built {
        count(&|g| {
            g.tests
                .iter()
                .filter(|t| t.status() == TestStatus::Timeout)
                .count()
        })
    } else {
        result.groups.len()
    };
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    writeln!(
        x,
        "<testsuites name=\"pi-course {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">",
        esc(&result.chapter),
        result.elapsed.as_secs_f64()
    )
    .unwrap();
    for g in &result.groups {
        let failures = g
            .tests
            .iter()
            .filter(|t| t.status() == TestStatus::Fail)
            .count();
        let timeouts = g
            .tests
            .iter()
            .filter(|t| t.status() == TestStatus::Timeout)
            .count();
        let time: f64 = g.tests.iter().map(|t| t.duration.as_secs_f64()).sum();
        let (tests, errors) = if built { (g.total(), timeouts) } else { (1, 1) };
        writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{time:.3}\">",
            esc(&g.group.slug)
        )
        .unwrap();
        x.push_str("    <properties>\n");
        let protection = &result.protection;
        let layers = protection.layers.join(",");
        let score = format_points(g.score(result.partial_credit));
        let max = format_points(g.max());
        let grade_score = format_points(result.score());
        let grade_max = format_points(result.max());
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
            writeln!(
                x,
                "      <property name=\"{name}\" value=\"{}\"/>",
                esc(value)
            )
            .unwrap();
        }
        x.push_str("    </properties>\n");
        let classname = format!("{}.{}", result.test_target, g.group.slug);
        if !built {
            let message = strip_ansi(&result.message(lang));
            writeln!(
                x,
                "    <testcase name=\"build\" classname=\"{}\" time=\"0\">\n      <error type=\"build\" message=\"{}\">{}</error>\n    </testcase>",
                esc(&classname),
                esc(&result.summary(lang)),
                esc(&message)
            )
            .unwrap();
        }
        for t in &g.tests {
            write!(
                x,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                esc(&t.name),
                esc(&classname),
                t.duration.as_secs_f64()
            )
            .unwrap();
            let message = t.message(lang).map(|m| strip_ansi(&m)).unwrap_or_default();
            let first = message.lines().next().unwrap_or_default();
            match t.status() {
                TestStatus::Pass => x.push_str("/>\n"),
                TestStatus::Fail => writeln!(
                    x,
                    ">\n      <failure type=\"failure\" message=\"{}\">{}</failure>\n    </testcase>",
                    esc(first),
                    esc(&message)
                )
                .unwrap(),
                TestStatus::Timeout => writeln!(
                    x,
                    ">\n      <error type=\"timeout\" message=\"{}\">{}</error>\n    </testcase>",
                    esc(first),
                    esc(&message)
                )
                .unwrap(),
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

/// Escapes text for an XML attribute or element, dropping characters XML 1.0 cannot hold.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            esc("a<b>&\"c'\x1b\x07"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}\u{FFFD}"
        );
        assert_eq!(esc("1\n2"), "1&#10;2");
    }
}
