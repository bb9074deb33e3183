//! The report for a program: exactly one JSON document.
//!
//! ```json
//! {"version": 1, "chapter": "07", "status": "pass" | "fail" | "error", "message": "…", "warnings": ["…"],
//!  "score": 80.0, "max": 100.0,
//!  "sandbox": {"active": true, "layers": ["landlock-fs", "no-network", …], "reason": null},
//!  "instances": {"seed": 1234},
//!  "groups": [{"slug": "plain-stop", "name": "纯文本 stop", "lab": "7.1", "optional": true,
//!              "status": "pass" | "fail" | "timeout" | "error", "passed": 3, "total": 3,
//!              "score": 20.0, "max": 20.0, "message": "…",
//!              "tests": [{"name": "plain_stop::…", "status": "pass" | "fail" | "timeout", "message": null}]}]}
//! ```
//!
//! `score` / `max` are points (see `chapter.toml`): a group's `max` is what it is worth, its `score` what it
//! earned; the top-level `max` counts the groups that decide the verdict, and `score` never exceeds it
//! (an optional group is a bonus). `message` (top level) is a one-line summary; when `status` is `error` it goes on with the reason in full
//! (for a compile error: rustc's diagnostics, plain text). `optional` appears, as `true`, only on optional
//! groups, which never decide `status`. A group's `message` appears only when its status is `error`. A
//! test's `message` is `null` when it passed. Names and messages are in the chosen language. `sandbox` says
//! what protected the grade; when `active` is false, `reason` says why learner code ran unconfined.
//! `instances.seed` is the seed the grade drew its tests' instances with (`null` when no test ran):
//! `pi-course grade --seed N` replays the grade exactly.

use serde::Serialize;

use crate::i18n::Lang;
use crate::outcome::GradeResult;
use crate::outcome::{GroupError, GroupStatus, Status, TestStatus};
use crate::ui::strip_ansi;

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    chapter: &'a str,
    status: Status,
    message: String,
    warnings: Vec<String>,
    score: f64,
    max: f64,
    sandbox: &'a crate::sandbox::Protection,
    instances: Instances,
    groups: Vec<Group<'a>>,
}

#[derive(Serialize)]
struct Instances {
    seed: Option<u64>,
}

#[derive(Serialize)]
struct Group<'a> {
    slug: &'a str,
    name: &'a str,
    lab: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    optional: bool,
    status: GroupStatus,
    passed: usize,
    total: usize,
    score: f64,
    max: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    tests: Vec<Test<'a>>,
}

#[derive(Serialize)]
struct Test<'a> {
    name: &'a str,
    status: TestStatus,
    message: Option<String>,
}

pub fn render(result: &GradeResult, lang: Lang) -> String {
    let messages = result.test_messages(lang);
    let report = Report {
        version: 1,
        chapter: &result.chapter,
        status: result.status(),
        message: strip_ansi(&result.message(lang)),
        warnings: result.warnings.iter().map(|w| w.message(lang)).collect(),
        score: result.score(),
        max: result.max(),
        sandbox: &result.protection,
        instances: Instances { seed: result.seed },
        groups: result
            .groups
            .iter()
            .zip(messages)
            .map(|(g, messages)| Group {
                slug: &g.group.slug,
                name: g.group.name.get(lang),
                lab: &g.group.lab,
                optional: g.group.optional,
                status: g.status(),
                passed: g.passed(),
                total: g.total(),
                score: g.score(result.partial_credit),
                max: g.max(),
                message: match (&g.error, g.status()) {
                    (Some(GroupError::NotBuilt), _) => Some(result.summary(lang)),
                    (_, GroupStatus::Error) => Some(lang.t(
                        "grade-group-no-tests",
                        &[("prefix", &result.track.test_prefix(&g.group))],
                    )),
                    _ => None,
                },
                tests: g
                    .tests
                    .iter()
                    .zip(messages)
                    .map(|(t, message)| Test {
                        name: &t.name,
                        status: t.status(),
                        message: message.map(|m| strip_ansi(&m)),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&report).expect("the report serializes")
}

/// Bad input as one JSON document: `{"version": 1, "status": "error", "message": "…", "fix": "…"}`
/// (`fix` is `null` when there is nothing to suggest). Exit status 2 goes with it.
#[derive(Serialize)]
pub struct ErrorDocument<'a> {
    version: u32,
    status: &'static str,
    message: &'a str,
    fix: Option<&'a str>,
}

impl<'a> ErrorDocument<'a> {
    pub fn new(error: &'a crate::error::UserError) -> ErrorDocument<'a> {
        ErrorDocument {
            version: 1,
            status: "error",
            message: &error.problem,
            fix: error.fix.as_deref(),
        }
    }

    pub fn render(&self) -> String {
        serde_json::to_string_pretty(self).expect("the error serializes")
    }
}
