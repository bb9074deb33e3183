//! The verdicts: per test, per group, per grade. Plain values, rendered by `report`.

pub mod bounds;

use std::time::Duration;

use serde::Serialize;

use crate::catalog::Group;
use crate::i18n::Lang;
use bounds::Bound;

/// How one test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The trace left the chapter's rules: where and how, as the judge explains it (docs/JUDGE.md).
    Diverged {
        message: String,
    },
    /// The test failed without a panic message we could find: what it printed.
    Failed {
        output: String,
    },
    /// Still running at the timeout; its process group was killed.
    TimedOut {
        after: Duration,
        output: String,
    },
    /// Killed by a signal it raised itself (an abort, a crash).
    Signalled {
        signal: i32,
        output: String,
    },
    /// The process ended before the test finished, e.g. `std::process::exit`.
    ExitedEarly {
        code: i32,
        output: String,
    },
    /// An allocation failed at the memory limit (bytes) and the process aborted.
    MemoryLimit {
        limit: u64,
        output: String,
    },
}

/// What the Rust standard library prints when an allocation fails, just before it aborts.
const ALLOCATION_FAILED: &str = "memory allocation of ";
/// What V8 prints when node's heap reaches its limit, just before it aborts.
const HEAP_EXHAUSTED: &str = "JavaScript heap out of memory";

/// How a test ended whose process exited without sending its verdict: it never started (`began` false),
/// ran out of memory, was killed by a signal, or exited in the middle.
pub fn ended_without_verdict(
    status: std::process::ExitStatus,
    began: bool,
    output: String,
    memory_limit: u64,
) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    if !began {
        return Outcome::Failed { output };
    }
    match status.signal() {
        Some(libc::SIGABRT)
            if output.contains(ALLOCATION_FAILED) || output.contains(HEAP_EXHAUSTED) =>
        {
            Outcome::MemoryLimit {
                limit: memory_limit,
                output,
            }
        }
        Some(signal) => Outcome::Signalled { signal, output },
        None => Outcome::ExitedEarly {
            code: status.code().unwrap_or(-1),
            output,
        },
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    Pass,
    Fail,
    Timeout,
}

#[derive(Debug, Clone)]
pub struct TestResult {
    /// The full test name, e.g. `plain_stop::returns_the_assistant_message`.
    pub name: String,
    pub outcome: Outcome,
    pub duration: Duration,
    /// For a test that did not pass: what was expected and what the loop did (`pi-course explain`).
    pub evidence: Option<std::sync::Arc<Evidence>>,
}

/// A test's expected trace and the trace its driver recorded.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    pub expected: serde_json::Value,
    pub trace: Vec<serde_json::Value>,
}

impl Outcome {
    /// The text this outcome carries (a message or the process's output), to be rewritten in place.
    pub fn text_mut(&mut self) -> Option<&mut String> {
        match self {
            Outcome::Passed => None,
            Outcome::Diverged { message } => Some(message),
            Outcome::Failed { output }
            | Outcome::TimedOut { output, .. }
            | Outcome::Signalled { output, .. }
            | Outcome::ExitedEarly { output, .. }
            | Outcome::MemoryLimit { output, .. } => Some(output),
        }
    }
}

impl TestResult {
    pub fn status(&self) -> TestStatus {
        match self.outcome {
            Outcome::Passed => TestStatus::Pass,
            Outcome::TimedOut { .. } => TestStatus::Timeout,
            _ => TestStatus::Fail,
        }
    }

    /// Why the test did not pass, in the learner's language, cut to [`TEST_MESSAGE_BYTES`] (with a note
    /// saying so); `None` for a pass. A report shows a learner's messages through
    /// [`GradeResult::test_messages`], which bounds them all together too.
    ///
    /// [`TEST_MESSAGE_BYTES`]: bounds::TEST_MESSAGE_BYTES
    pub fn message(&self, lang: Lang) -> Option<String> {
        let message = self.full_message(lang)?;
        Some(bounds::cut(
            message,
            bounds::TEST_MESSAGE_BYTES,
            Bound::Test,
            lang,
        ))
    }

    fn full_message(&self, lang: Lang) -> Option<String> {
        // Where the run stood when its process ended or ran out of time: the judge's reading of the
        // trace so far, which ends in that very step.
        let so_far = self
            .evidence
            .as_ref()
            .and_then(|e| pi_course_judge::compare::judge(&e.expected, &e.trace, lang.judge()));
        let with_output = |head: String, output: &str| {
            let head = match &so_far {
                Some(judged) => format!("{head}\n{judged}"),
                None => head,
            };
            let tail = tail_lines(output, 12);
            if tail.is_empty() {
                head
            } else {
                format!("{head}\n{}\n{tail}", lang.t("grade-test-last-output", &[]))
            }
        };
        Some(match &self.outcome {
            Outcome::Passed => return None,
            // The judge's message again, in the language asked for (the grade judged in its own).
            Outcome::Diverged { message } => so_far.clone().unwrap_or_else(|| message.clone()),
            Outcome::Failed { output } => {
                with_output(lang.t("grade-test-failed-no-panic", &[]), output)
            }
            Outcome::TimedOut { after, output } => with_output(
                lang.t("grade-test-timeout", &[("secs", &format_secs(*after))]),
                output,
            ),
            Outcome::Signalled { signal, output } => with_output(
                lang.t("grade-test-signal", &[("signal", &signal_name(*signal))]),
                output,
            ),
            Outcome::ExitedEarly { code, output } => {
                with_output(lang.t("grade-test-exited", &[("code", code)]), output)
            }
            Outcome::MemoryLimit { limit, output } => with_output(
                lang.t("grade-test-memory", &[("mib", &(limit >> 20))]),
                output,
            ),
        })
    }
}

/// The last `n` non-blank lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn format_secs(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs:.1}")
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGTRAP => "SIGTRAP",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupStatus {
    /// Every test passed.
    Pass,
    /// At least one test failed.
    Fail,
    /// None failed, but at least one timed out.
    Timeout,
    /// Not graded: the code did not build, or the group has no tests.
    Error,
}

#[derive(Debug, Clone)]
pub struct GroupResult {
    pub group: Group,
    /// Does this group decide the overall verdict? Optional groups do not, unless they are all that was
    /// asked for.
    pub decides: bool,
    pub tests: Vec<TestResult>,
    /// Set when the group could not be graded.
    pub error: Option<GroupError>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupError {
    /// The build failed, see [`GradeResult::problem`].
    NotBuilt,
    /// The test binary has no test in this group's module.
    NoTests,
}

impl GroupResult {
    pub fn status(&self) -> GroupStatus {
        if self.error.is_some() || self.tests.is_empty() {
            return GroupStatus::Error;
        }
        let statuses = || self.tests.iter().map(TestResult::status);
        if statuses().any(|s| s == TestStatus::Fail) {
            GroupStatus::Fail
        } else if statuses().any(|s| s == TestStatus::Timeout) {
            GroupStatus::Timeout
        } else {
            GroupStatus::Pass
        }
    }

    pub fn passed(&self) -> usize {
        self.tests
            .iter()
            .filter(|t| t.status() == TestStatus::Pass)
            .count()
    }

    pub fn total(&self) -> usize {
        self.tests.len()
    }

    /// The points this group earned: all of them when it passed; with `partial` credit, the share its
    /// passed tests make up (to two decimals); otherwise none.
    pub fn score(&self, partial: bool) -> f64 {
        let points = f64::from(self.group.points);
        match self.status() {
            GroupStatus::Pass => points,
            GroupStatus::Error => 0.0,
            GroupStatus::Fail | GroupStatus::Timeout if partial && self.total() > 0 => {
                round2(points * self.passed() as f64 / self.total() as f64)
            }
            GroupStatus::Fail | GroupStatus::Timeout => 0.0,
        }
    }

    /// The points this group is worth.
    pub fn max(&self) -> f64 {
        f64::from(self.group.points)
    }
}

/// `x` rounded to two decimals.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Points as people write them: `20`, `17.5`, `16.67`.
pub fn format_points(points: f64) -> String {
    let text = format!("{:.2}", round2(points));
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Error,
}

/// Why a grade could not run the tests at all.
#[derive(Debug, Clone)]
pub enum Problem {
    /// An editable file is missing from the practice directory.
    MissingEditable { path: String },
    /// An editable file is not a regular file of a sensible size.
    Unreadable(Unreadable),
    /// rustc reported errors: its rendered diagnostics, paths pointing into the practice directory.
    Compile { rendered: String, errors: usize },
    /// cargo failed without a compiler error (a lock file mismatch, no network for a first build, ...).
    Cargo { output: String },
    /// A tool of the track's toolchain failed without a compiler error, or is missing (npm, node, tsc).
    Toolchain { tool: String, output: String },
    /// Something around the grade failed: the cache directory, starting a process.
    Io { what: String, error: String },
    /// The build cache was removed while the build ran (the build failed because of it).
    CacheGone { dir: String },
    /// The build ran past its time limit (seconds) and was stopped.
    BuildTimeout { secs: u64 },
    /// The test executable is not the one this grade's build produced.
    TamperedExecutable { path: String },
    /// A class's entry is not something that can be graded (`grade-class`): why, in the chosen language.
    NotASubmission { reason: String },
}

/// Something the learner should know that does not change the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// Given files that differ from the pristine copies (or are missing); the grade used the pristine ones.
    ChangedGiven { files: Vec<String> },
    /// `.pi-course/last-grade.json` could not be written.
    LastGradeNotSaved { error: String },
    /// The `--junit` report could not be written.
    ReportNotWritten { file: String, error: String },
    /// `--seed` named the seed of the practice directories' own instances, whose expected traces every
    /// practice directory holds: such a grade shows the tests run, not that the pass was earned.
    PracticeSeed { seed: u64 },
}

impl Warning {
    pub fn message(&self, lang: Lang) -> String {
        match self {
            Warning::ChangedGiven { files } => lang.t(
                "grade-warning-changed-given",
                &[("files", &files.join(", "))],
            ),
            Warning::LastGradeNotSaved { error } => {
                lang.t("grade-warning-last-grade", &[("error", error)])
            }
            Warning::ReportNotWritten { file, error } => {
                lang.t("grade-warning-report", &[("file", file), ("error", error)])
            }
            Warning::PracticeSeed { seed } => {
                lang.t("grade-warning-practice-seed", &[("seed", seed)])
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct GradeResult {
    pub chapter: String,
    /// The chapter's test target, e.g. `ch07` (for "run one test by hand" hints).
    pub test_target: String,
    /// The track graded: how a test is run by hand differs.
    pub track: crate::catalog::Track,
    pub warnings: Vec<Warning>,
    /// What protected this grade (the sandbox's layers, or why there was none).
    pub protection: crate::sandbox::Protection,
    pub problem: Option<Problem>,
    pub groups: Vec<GroupResult>,
    pub elapsed: Duration,
    /// The chapter gives partial credit within a group (see `Chapter::partial_credit`).
    pub partial_credit: bool,
    /// The seed this grade's instances were drawn with; `None` when no test ran.
    pub seed: Option<u64>,
    /// Where the grade's time went, stage by stage in the order they ran (`PI_COURSE_TRACE=1` prints
    /// them; the edit-loop bench reads them). Not part of any report.
    pub timings: Vec<(String, Duration)>,
}

impl GradeResult {
    /// The points earned: every group's score, the optional ones' as a bonus, never more than [`max`].
    ///
    /// [`max`]: GradeResult::max
    pub fn score(&self) -> f64 {
        if self.problem.is_some() {
            return 0.0;
        }
        let earned: f64 = self
            .groups
            .iter()
            .map(|g| g.score(self.partial_credit))
            .sum();
        round2(earned.min(self.max()))
    }

    /// The points at stake: those of the groups that decide the verdict (a bonus group adds none).
    pub fn max(&self) -> f64 {
        self.groups
            .iter()
            .filter(|g| g.decides)
            .map(GroupResult::max)
            .sum()
    }

    /// Error when the tests could not run or a deciding group could not be graded; else fail when a
    /// deciding group failed or timed out; else pass.
    pub fn status(&self) -> Status {
        let deciding = || self.groups.iter().filter(|g| g.decides);
        if self.problem.is_some() || deciding().any(|g| g.status() == GroupStatus::Error) {
            Status::Error
        } else if deciding().all(|g| g.status() == GroupStatus::Pass) {
            Status::Pass
        } else {
            Status::Fail
        }
    }

    /// Did the learner get a verdict on their code? Yes when the tests ran, and when their code did not
    /// build or ran past the build's time limit; no when there was nothing to grade or the grader itself
    /// failed (the cache, cargo without a compiler error, the test listing).
    pub fn has_verdict(&self) -> bool {
        matches!(
            self.problem,
            None | Some(Problem::Compile { .. }) | Some(Problem::BuildTimeout { .. })
        )
    }

    /// 0 when every deciding group passed, 1 otherwise. (2, bad input, never gets this far.)
    pub fn exit_code(&self) -> u8 {
        match self.status() {
            Status::Pass => 0,
            Status::Fail | Status::Error => 1,
        }
    }

    /// A one-line summary, in the learner's language.
    pub fn summary(&self, lang: Lang) -> String {
        let deciding: Vec<&GroupResult> = self.groups.iter().filter(|g| g.decides).collect();
        let total = deciding.len();
        let passed = deciding
            .iter()
            .filter(|g| g.status() == GroupStatus::Pass)
            .count();
        match (&self.problem, self.status()) {
            (Some(Problem::Compile { errors, .. }), _) => {
                lang.t_count("grade-summary-compile", *errors, &[("errors", errors)])
            }
            (Some(_), _) => lang.t("grade-summary-error", &[]),
            (None, Status::Pass) => lang.t_count("grade-summary-pass", total, &[("total", &total)]),
            (None, _) => lang.t_count(
                "grade-summary-fail",
                total,
                &[
                    ("passed", &passed),
                    ("total", &total),
                    ("failed", &(total - passed)),
                ],
            ),
        }
    }

    /// Every test's message, by group and test (see [`TestResult::message`]), all of them together cut
    /// to [`LEARNER_MESSAGE_BYTES`](bounds::LEARNER_MESSAGE_BYTES): what every report shows.
    pub fn test_messages(&self, lang: Lang) -> Vec<Vec<Option<String>>> {
        let all: Vec<Option<String>> = self
            .groups
            .iter()
            .flat_map(|g| g.tests.iter().map(|t| t.message(lang)))
            .collect();
        let mut shared = bounds::share(all, lang).into_iter();
        self.groups
            .iter()
            .map(|g| shared.by_ref().take(g.tests.len()).collect())
            .collect()
    }

    /// The overall message: the summary, and for an error the reason (cut to
    /// [`PROBLEM_BYTES`](bounds::PROBLEM_BYTES)).
    pub fn message(&self, lang: Lang) -> String {
        match &self.problem {
            None => self.summary(lang),
            Some(problem) => format!("{}\n{}", self.summary(lang), problem.message(lang)),
        }
    }
}

impl Problem {
    /// Why the grade could not run, cut to [`PROBLEM_BYTES`](bounds::PROBLEM_BYTES) with a note.
    pub fn message(&self, lang: Lang) -> String {
        bounds::cut(
            self.full_message(lang),
            bounds::PROBLEM_BYTES,
            Bound::Problem,
            lang,
        )
    }

    fn full_message(&self, lang: Lang) -> String {
        match self {
            Problem::MissingEditable { path } => {
                lang.t("grade-missing-editable", &[("path", path)])
            }
            Problem::Compile { rendered, .. } => rendered.trim_end().to_string(),
            Problem::Cargo { output } => with_output(lang.t("grade-cargo-failed", &[]), output),
            Problem::Toolchain { tool, output } => {
                with_output(lang.t("grade-toolchain-failed", &[("tool", tool)]), output)
            }
            Problem::Io { what, error } => {
                lang.t("grade-io-failed", &[("what", what), ("error", error)])
            }
            Problem::Unreadable(unreadable) => unreadable.message(lang),
            Problem::BuildTimeout { secs } => lang.t("grade-build-timeout", &[("secs", secs)]),
            Problem::CacheGone { dir } => lang.t("grade-cache-gone", &[("dir", dir)]),
            Problem::TamperedExecutable { path } => {
                lang.t("grade-tampered-executable", &[("path", path)])
            }
            Problem::NotASubmission { reason } => reason.clone(),
        }
    }
}

/// A failed tool's heading, then what it printed.
fn with_output(heading: String, output: &str) -> String {
    format!("{heading}\n{}", output.trim_end())
}

/// Which groups decide the verdict: the required ones, or the optional ones when nothing else was chosen.
pub fn deciding(groups: &[Group]) -> Vec<bool> {
    let all_optional = groups.iter().all(|g| g.optional);
    groups.iter().map(|g| !g.optional || all_optional).collect()
}

/// The largest editable file a grade reads: a loop is a few hundred lines; anything near this is not one.
pub const MAX_EDITABLE_BYTES: u64 = 1 << 20;

/// Why an editable file cannot be graded at all (bad input, before anything is built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// A FIFO, a device, a directory, ...: reading it could block forever or never end.
    NotAFile {
        path: String,
        kind: &'static str,
    },
    TooLarge {
        path: String,
        bytes: u64,
    },
    /// A symbolic link, or a file under a linked directory: reading through it could grade anyone's
    /// file (a classmate's loop, a file of the instructor's).
    Link {
        path: String,
    },
    /// Nested deeper than the grader parses (brackets, or a run of operators or types): its line, how
    /// deep, and the bound (see `track::rust::refuse`).
    TooDeep {
        path: String,
        line: usize,
        depth: usize,
        max: usize,
    },
}

impl Unreadable {
    pub fn message(&self, lang: crate::i18n::Lang) -> String {
        match self {
            Unreadable::NotAFile { path, kind } => lang.t(
                "grade-editable-not-a-file",
                &[("path", path), ("kind", kind)],
            ),
            Unreadable::TooLarge { path, bytes } => lang.t(
                "grade-editable-too-large",
                &[
                    ("path", path),
                    ("kib", &(bytes / 1024)),
                    ("max_kib", &(MAX_EDITABLE_BYTES / 1024)),
                ],
            ),
            Unreadable::Link { path } => lang.t("grade-editable-link", &[("path", path)]),
            Unreadable::TooDeep {
                path,
                line,
                depth,
                max,
            } => {
                let depth = if *depth == usize::MAX {
                    "?".to_string()
                } else {
                    depth.to_string()
                };
                lang.t(
                    "grade-editable-too-deep",
                    &[
                        ("path", path),
                        ("line", line),
                        ("depth", &depth),
                        ("max", max),
                    ],
                )
            }
        }
    }
}

/// Where a grade is, for progress displays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Another grade holds the build directory; waiting for it.
    Waiting,
    Preparing,
    /// A first grade installs the track's dependencies once (the TypeScript track's `npm ci`).
    Installing,
    /// cargo is building; the crate it just finished, and how many so far. `first_of` is the number of
    /// crates to compile when this build slot has never built (a first grade compiles the dependencies).
    Building {
        last_crate: Option<String>,
        crates: usize,
        first_of: Option<usize>,
    },
    Listing,
    Running {
        done: usize,
        total: usize,
    },
    Done,
}

/// A test that did not pass, as the last grade kept it for `pi-course explain` (`grade::last`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Explained {
    pub name: String,
    pub lab: String,
    /// In the grade's language.
    pub message: String,
    /// The message in every language, by code (`zh`, `en`): `explain --lang` may ask for another
    /// language than the grade's. Absent from files written before it existed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub messages: std::collections::BTreeMap<String, String>,
    #[serde(flatten)]
    pub evidence: Evidence,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Text;

    fn group(slug: &str, optional: bool) -> Group {
        let text = Text {
            zh: slug.into(),
            en: slug.into(),
        };
        Group {
            slug: slug.into(),
            lab: "7.1".into(),
            name: text.clone(),
            hint: text,
            optional,
            points: if optional { 10 } else { 20 },
        }
    }

    fn test(outcome: Outcome) -> TestResult {
        TestResult {
            name: "a::b".into(),
            outcome,
            duration: Duration::ZERO,
            evidence: None,
        }
    }

    fn result(groups: Vec<GroupResult>) -> GradeResult {
        GradeResult {
            protection: Default::default(),
            chapter: "07".into(),
            test_target: "ch07".into(),
            track: crate::catalog::Track::Rust,
            warnings: vec![],
            problem: None,
            groups,
            elapsed: Duration::ZERO,
            partial_credit: false,
            seed: None,
            timings: Vec::new(),
        }
    }

    fn graded(slug: &str, optional: bool, tests: Vec<TestResult>) -> GroupResult {
        GroupResult {
            group: group(slug, optional),
            decides: !optional,
            tests,
            error: None,
        }
    }

    #[test]
    fn group_status_prefers_fail_over_timeout() {
        let timeout = Outcome::TimedOut {
            after: Duration::from_secs(1),
            output: String::new(),
        };
        let fail = Outcome::Diverged {
            message: "no".into(),
        };
        let g = graded(
            "a",
            false,
            vec![test(Outcome::Passed), test(timeout.clone())],
        );
        assert_eq!(g.status(), GroupStatus::Timeout);
        let g = graded("a", false, vec![test(fail), test(timeout)]);
        assert_eq!(g.status(), GroupStatus::Fail);
        assert_eq!(graded("a", false, vec![]).status(), GroupStatus::Error);
        assert_eq!(
            graded("a", false, vec![test(Outcome::Passed)]).status(),
            GroupStatus::Pass
        );
    }

    #[test]
    fn optional_groups_do_not_decide() {
        let fail = Outcome::Diverged {
            message: "no".into(),
        };
        let r = result(vec![
            graded("a", false, vec![test(Outcome::Passed)]),
            graded("bonus", true, vec![test(fail)]),
        ]);
        assert_eq!(r.status(), Status::Pass);
        assert_eq!(r.exit_code(), 0);
        assert_eq!(
            deciding(&[group("a", false), group("b", true)]),
            vec![true, false]
        );
        assert_eq!(deciding(&[group("b", true)]), vec![true]);
    }

    #[test]
    fn points_are_all_or_nothing_unless_partial_and_a_bonus_never_passes_the_maximum() {
        let fail = || {
            test(Outcome::Diverged {
                message: "no".into(),
            })
        };
        let mut r = result(vec![
            graded("a", false, vec![test(Outcome::Passed)]),
            graded("b", false, vec![test(Outcome::Passed), fail(), fail()]),
            graded("bonus", true, vec![test(Outcome::Passed)]),
        ]);
        assert_eq!(r.max(), 40.0);
        // 20 + 0 + a 10-point bonus.
        assert_eq!(r.score(), 30.0);
        r.partial_credit = true;
        // 20 + 20/3 + 10 = 36.67: a third of b's points for one test of three.
        assert_eq!(r.score(), 36.67);
        assert_eq!(format_points(r.groups[1].score(true)), "6.67");
        // Everything passes: the bonus cannot take the total past the maximum.
        r.groups[1].tests = vec![test(Outcome::Passed)];
        assert_eq!(r.score(), 40.0);
        assert_eq!(format_points(r.score()), "40");
        assert_eq!(format_points(17.5), "17.5");
        // Nothing built: nothing earned.
        r.problem = Some(Problem::Compile {
            rendered: String::new(),
            errors: 1,
        });
        assert_eq!(r.score(), 0.0);
    }

    #[test]
    fn a_problem_is_an_error() {
        let mut r = result(vec![graded("a", false, vec![test(Outcome::Passed)])]);
        r.problem = Some(Problem::Compile {
            rendered: "error[E0308]".into(),
            errors: 1,
        });
        assert_eq!(r.status(), Status::Error);
        assert_eq!(r.exit_code(), 1);
        assert!(r.message(Lang::En).contains("error[E0308]"));
    }

    #[test]
    fn messages_explain_crashes_and_timeouts() {
        let t = test(Outcome::Signalled {
            signal: libc::SIGABRT,
            output: "before\n".into(),
        });
        let m = t.message(Lang::En).unwrap();
        assert!(m.contains("SIGABRT") && m.contains("before"), "{m}");
        let t = test(Outcome::TimedOut {
            after: Duration::from_secs(5),
            output: String::new(),
        });
        assert!(t.message(Lang::En).unwrap().contains('5'));
        assert_eq!(test(Outcome::Passed).message(Lang::Zh), None);
    }
}
