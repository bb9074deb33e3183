//! The report for Gradescope: its autograder's `results.json`.
//!
//! ```json
//! {"score": 80.0, "execution_time": 3, "output": "…", "output_format": "text",
//!  "test_output_format": "text", "visibility": "visible", "stdout_visibility": "hidden",
//!  "extra_data": {"chapter": "07", "status": "fail", "max": 100.0, "sandbox": {…}},
//!  "tests": [{"name": "Lab 7.1 纯文本 stop", "number": "7.1", "score": 20.0, "max_score": 20.0,
//!             "status": "passed" | "failed", "output": "…", "visibility": "visible"}]}
//! ```
//!
//! One entry per group (Gradescope's "test"), or per test with `--per-test`. `score` at the top is the
//! grade's total, which Gradescope takes over the entries' sum: it never exceeds the maximum, so an
//! optional group is a bonus there too. Per test, a test's `max_score` is its group's points shared
//! equally among the group's tests, and its `score` is that share when it counts: when the test passed
//! and the chapter gives partial credit, or when its whole group passed. The entries of a group therefore
//! add up to the group's score. Bad input is a document of this shape too (see [`render_error`]), with a
//! score of 0 and the reason as its output.

use serde::Serialize;

use crate::error::UserError;
use crate::i18n::Lang;
use crate::outcome::GradeResult;
use crate::outcome::{GroupResult, GroupStatus, TestStatus};
use crate::ui::strip_ansi;

#[derive(Serialize)]
struct Results<'a> {
    score: f64,
    execution_time: u64,
    output: String,
    output_format: &'static str,
    test_output_format: &'static str,
    visibility: &'static str,
    stdout_visibility: &'static str,
    extra_data: Extra<'a>,
    tests: Vec<Test>,
}

#[derive(Serialize)]
struct Extra<'a> {
    chapter: &'a str,
    status: crate::outcome::Status,
    max: f64,
    sandbox: &'a crate::sandbox::Protection,
}

#[derive(Serialize)]
struct Test {
    name: String,
    number: String,
    score: f64,
    max_score: f64,
    status: &'static str,
    output: String,
    visibility: &'static str,
}

/// Shown to the learner as soon as the submission is graded (Gradescope's default is the same).
const VISIBLE: &str = "visible";

pub fn render(result: &GradeResult, lang: Lang, per_test: bool) -> String {
    let mut output = strip_ansi(&result.message(lang));
    output.push('\n');
    output.push_str(&super::human::protection_line(&result.protection, lang));
    let messages = result.test_messages(lang);
    let tests = result
        .groups
        .iter()
        .zip(messages)
        .flat_map(|(g, messages)| {
            if per_test && !g.tests.is_empty() {
                test_entries(result, g, messages, lang)
            } else {
                vec![group_entry(result, g, messages, lang)]
            }
        })
        .collect();
    let results = Results {
        score: result.score(),
        execution_time: result.elapsed.as_secs_f64().ceil() as u64,
        output,
        output_format: "text",
        test_output_format: "text",
        visibility: VISIBLE,
        stdout_visibility: "hidden",
        extra_data: Extra {
            chapter: &result.chapter,
            status: result.status(),
            max: result.max(),
            sandbox: &result.protection,
        },
        tests,
    };
    serde_json::to_string_pretty(&results).expect("the results serialize")
}

fn passed_word(pass: bool) -> &'static str {
    if pass {
        "passed"
    } else {
        "failed"
    }
}

/// One entry for a whole group: its points, and every failing test with its message (`messages`, one per
/// test, from [`GradeResult::test_messages`]).
fn group_entry(
    result: &GradeResult,
    g: &GroupResult,
    messages: Vec<Option<String>>,
    lang: Lang,
) -> Test {
    let status = g.status();
    let output = if g.error.is_some() || status == GroupStatus::Error {
        result.summary(lang)
    } else {
        let mut text = lang.t(
            "gradescope-group-tests",
            &[("passed", &g.passed()), ("total", &g.total())],
        );
        let failing = g.tests.iter().zip(messages);
        for (t, message) in failing.filter(|(t, _)| t.status() != TestStatus::Pass) {
            let message = message.map(|m| strip_ansi(&m)).unwrap_or_default();
            text.push_str(&format!("\n\n✗ {}\n{}", t.name, message.trim_end()));
        }
        text
    };
    Test {
        name: format!("Lab {} {}", g.group.lab, g.group.title(lang)),
        number: g.group.lab.clone(),
        score: g.score(result.partial_credit),
        max_score: g.max(),
        status: passed_word(status == GroupStatus::Pass),
        output,
        visibility: VISIBLE,
    }
}

/// One entry per test of a group, sharing the group's points (see the module docs).
fn test_entries(
    result: &GradeResult,
    g: &GroupResult,
    messages: Vec<Option<String>>,
    lang: Lang,
) -> Vec<Test> {
    let share = g.max() / g.tests.len() as f64;
    let group_passed = g.status() == GroupStatus::Pass;
    g.tests
        .iter()
        .zip(messages)
        .enumerate()
        .map(|(i, (t, message))| {
            let passed = t.status() == TestStatus::Pass;
            let counts = group_passed || (passed && result.partial_credit);
            Test {
                name: format!("Lab {} {}: {}", g.group.lab, g.group.title(lang), t.name),
                number: format!("{}.{}", g.group.lab, i + 1),
                score: if counts { share } else { 0.0 },
                max_score: share,
                status: passed_word(passed),
                output: message.map(|m| strip_ansi(&m)).unwrap_or_default(),
                visibility: VISIBLE,
            }
        })
        .collect()
}

/// Bad input as a results document: a score of 0, the reason and what to do as its output, and the error
/// in `extra_data` as `--format json` states it.
pub fn render_error(error: &UserError) -> String {
    #[derive(Serialize)]
    struct Failed<'a> {
        score: f64,
        output: String,
        output_format: &'static str,
        visibility: &'static str,
        stdout_visibility: &'static str,
        extra_data: super::json::ErrorDocument<'a>,
        tests: [Test; 0],
    }
    let mut output = error.problem.clone();
    if let Some(fix) = &error.fix {
        output.push('\n');
        output.push_str(fix);
    }
    let doc = Failed {
        score: 0.0,
        output,
        output_format: "text",
        visibility: VISIBLE,
        stdout_visibility: "hidden",
        extra_data: super::json::ErrorDocument::new(error),
        tests: [],
    };
    serde_json::to_string_pretty(&doc).expect("the error serializes")
}
