//! The last verdict per Lab, kept in `<practice>/.pi-course/last-grade.json` for `status` and `watch`.
//!
//! Grading some groups updates their Labs and keeps the others' earlier verdicts. A grade that did not
//! build changes no Lab: it is recorded as `unbuilt` (its time), so `status` and `hint` still know how far
//! the learner got.
//!
//! ```json
//! {"version": 1, "labs": {"7.1": {"slug": "plain-stop", "status": "pass", "passed": 3, "total": 3,
//!                                  "time": 1767225600}}}
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalog::{Chapter, Group};
use crate::outcome::{Explained, GradeResult, GroupStatus};
use crate::{atomic_file, metadata, regular_file};

pub const FILE: &str = "last-grade.json";
/// What the last grade expected and got for each test that did not pass (`pi-course explain`).
pub const TRACES: &str = "last-traces.json";
/// The most bytes of evidence kept: a failing test beyond it is left out (its verdict is still kept).
const MAX_TRACES_BYTES: usize = 16 << 20;

/// `.pi-course/last-traces.json`: the last grade's failing tests, each with its expected and actual trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastTraces {
    pub version: u32,
    /// The seed the grade drew its instances with.
    pub seed: Option<u64>,
    pub tests: Vec<Explained>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastGrade {
    pub version: u32,
    /// By Lab number, e.g. "7.1".
    pub labs: BTreeMap<String, LabVerdict>,
    /// When the latest grade did not build (seconds since the Unix epoch); `None` once one builds again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unbuilt: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabVerdict {
    pub slug: String,
    pub status: GroupStatus,
    pub passed: usize,
    pub total: usize,
    /// Seconds since the Unix epoch.
    pub time: u64,
}

impl LastGrade {
    /// The first Lab, in chapter order, whose last verdict is not a pass (or that was never graded):
    /// the one to work on.
    pub fn first_not_passing<'a>(&self, chapter: &'a Chapter) -> Option<&'a Group> {
        crate::catalog::lab_to_work_on(
            &chapter.groups,
            |g| g.optional,
            |g| {
                self.labs
                    .get(&g.lab)
                    .is_some_and(|v| v.status == GroupStatus::Pass)
            },
        )
    }
}

/// Can a grade keep its record in `practice_dir`? Not in a read-only directory, where `hint`, `explain`
/// and `status` say why they see no grade rather than asking for one again.
pub fn can_record(practice_dir: &Path) -> bool {
    rustix::fs::access(
        practice_dir.join(metadata::DIR),
        rustix::fs::Access::WRITE_OK,
    )
    .is_ok()
}

/// Why there is no grade to show in a read-only practice directory, and what to do: for `hint`,
/// `explain` and `status`.
pub fn read_only_note(practice_dir: &Path, lang: crate::i18n::Lang) -> String {
    let practice = practice_dir.display().to_string();
    format!(
        "{}\n{}",
        lang.t(
            "last-grade-read-only",
            &[("dir", &practice_dir.join(metadata::DIR).display())]
        ),
        lang.t(
            "last-grade-read-only-fix",
            &[("practice", &crate::practice::shell_quote(&practice))]
        )
    )
}

pub fn path(practice_dir: &Path) -> PathBuf {
    practice_dir.join(metadata::DIR).join(FILE)
}

/// The last verdicts of a practice directory; `None` when it was never graded (or the file is damaged).
/// Read from inside the directory through no link, like everything a grade reads there.
pub fn load(practice_dir: &Path) -> Option<LastGrade> {
    let rel = Path::new(metadata::DIR).join(FILE);
    match regular_file::read(practice_dir, rel, LIMIT).ok()? {
        regular_file::Contents::Bytes(bytes) => serde_json::from_slice(&bytes).ok(),
        _ => None,
    }
}

/// Far more than the record of every Lab takes.
const LIMIT: u64 = 256 << 10;

/// The evidence of the last grade's failing tests; `None` when there is none (or the file is damaged).
/// Read through no link, like the record.
pub fn load_traces(practice_dir: &Path) -> Option<LastTraces> {
    let rel = Path::new(metadata::DIR).join(TRACES);
    match regular_file::read(practice_dir, rel, MAX_TRACES_BYTES as u64 + (1 << 20)).ok()? {
        regular_file::Contents::Bytes(bytes) => serde_json::from_slice(&bytes).ok(),
        _ => None,
    }
}

/// The evidence of `result`'s failing tests, in the learner's language, as `explain` reads it.
pub fn traces_of(result: &GradeResult, lang: crate::i18n::Lang) -> LastTraces {
    let mut size = 0;
    let mut tests = Vec::new();
    for g in &result.groups {
        for t in &g.tests {
            let Some(evidence) = &t.evidence else {
                continue;
            };
            let messages: BTreeMap<String, String> = [crate::i18n::Lang::Zh, crate::i18n::Lang::En]
                .into_iter()
                .map(|l| (l.code().to_string(), t.message(l).unwrap_or_default()))
                .collect();
            let message = t.message(lang).unwrap_or_default();
            // Messages count too: each is bounded, but there are three per test.
            let bytes = serde_json::to_string(evidence.as_ref()).map_or(usize::MAX, |s| s.len())
                + message.len()
                + messages.values().map(String::len).sum::<usize>();
            if size + bytes > MAX_TRACES_BYTES {
                continue;
            }
            size += bytes;
            tests.push(Explained {
                name: t.name.clone(),
                lab: g.group.lab.clone(),
                message,
                messages,
                evidence: evidence.as_ref().clone(),
            });
        }
    }
    LastTraces {
        version: 1,
        seed: result.seed,
        tests,
    }
}

/// Records the verdict of each graded group, keeping the other Labs' `earlier` verdicts (the record as
/// the grade found it), and the evidence of the failing tests.
pub fn record(
    practice_dir: &Path,
    earlier: Option<LastGrade>,
    result: &GradeResult,
    lang: crate::i18n::Lang,
) -> std::io::Result<()> {
    // The record goes into `.pi-course` itself, never where a link there points.
    if regular_file::is_link(&practice_dir.join(metadata::DIR)) {
        return Err(std::io::Error::other(format!(
            "{} is a symbolic link",
            metadata::DIR
        )));
    }
    let time = crate::time::now();
    let mut last = earlier.unwrap_or(LastGrade {
        version: 1,
        labs: BTreeMap::new(),
        unbuilt: None,
    });
    if result.problem.is_some() {
        last.unbuilt = Some(time);
        let json = serde_json::to_string_pretty(&last).map_err(std::io::Error::other)?;
        return atomic_file::write(&path(practice_dir), json.as_bytes());
    }
    last.unbuilt = None;
    for g in &result.groups {
        let verdict = LabVerdict {
            slug: g.group.slug.clone(),
            status: g.status(),
            passed: g.passed(),
            total: g.total(),
            time,
        };
        last.labs.insert(g.group.lab.clone(), verdict);
    }
    let traces = serde_json::to_string(&traces_of(result, lang)).map_err(std::io::Error::other)?;
    atomic_file::write(
        &practice_dir.join(metadata::DIR).join(TRACES),
        traces.as_bytes(),
    )?;
    let json = serde_json::to_string_pretty(&last).map_err(std::io::Error::other)?;
    atomic_file::write(&path(practice_dir), json.as_bytes())
}

impl<'de> Deserialize<'de> for GroupStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match String::deserialize(d)?.as_str() {
            "pass" => GroupStatus::Pass,
            "fail" => GroupStatus::Fail,
            "timeout" => GroupStatus::Timeout,
            _ => GroupStatus::Error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::outcome::{GroupResult, Outcome, Problem, TestResult};
    use std::time::Duration;

    fn graded(problem: Option<Problem>, passed: bool) -> GradeResult {
        let group = Catalog::chapter_07().groups[0].clone();
        let outcome = if passed {
            Outcome::Passed
        } else {
            Outcome::Diverged {
                message: "no".into(),
            }
        };
        GradeResult {
            protection: Default::default(),
            chapter: "07".into(),
            test_target: "ch07".into(),
            track: crate::catalog::Track::Rust,
            warnings: Vec::new(),
            groups: vec![GroupResult {
                group,
                decides: true,
                tests: vec![TestResult {
                    name: "plain_stop::t".into(),
                    outcome,
                    duration: Duration::ZERO,
                    evidence: None,
                }],
                error: None,
            }],
            problem,
            elapsed: Duration::ZERO,
            partial_credit: false,
            seed: None,
            timings: Vec::new(),
        }
    }

    #[test]
    fn a_grade_that_did_not_build_keeps_how_far_the_learner_got() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(metadata::DIR)).unwrap();
        // Each grade records over the record it found.
        let record_over_last = |result: &GradeResult| {
            record(dir.path(), load(dir.path()), result, crate::i18n::Lang::En).unwrap()
        };
        record_over_last(&graded(None, true));
        let passed = load(dir.path()).unwrap();
        assert_eq!(passed.labs["7.1"].status, GroupStatus::Pass);
        assert_eq!(passed.unbuilt, None);

        let broken = Problem::Compile {
            rendered: "error[E0308]".into(),
            errors: 1,
        };
        record_over_last(&graded(Some(broken), false));
        let after = load(dir.path()).unwrap();
        assert_eq!(
            after.labs, passed.labs,
            "the Labs as of the last grade that built"
        );
        assert!(after.unbuilt.is_some());

        record_over_last(&graded(None, false));
        let rebuilt = load(dir.path()).unwrap();
        assert_eq!(rebuilt.labs["7.1"].status, GroupStatus::Fail);
        assert_eq!(rebuilt.unbuilt, None);
    }

    fn last(verdicts: &[(&str, GroupStatus)]) -> LastGrade {
        LastGrade {
            version: 1,
            labs: verdicts
                .iter()
                .map(|(lab, status)| {
                    let v = LabVerdict {
                        slug: String::new(),
                        status: *status,
                        passed: 0,
                        total: 1,
                        time: 0,
                    };
                    (lab.to_string(), v)
                })
                .collect::<BTreeMap<_, _>>(),
            unbuilt: None,
        }
    }

    #[test]
    fn the_first_lab_not_passing_required_ones_first() {
        let ch = &Catalog::chapter_07();
        let pass = GroupStatus::Pass;
        let lab = |l: &LastGrade| l.first_not_passing(ch).map(|g| g.lab.clone());
        assert_eq!(lab(&last(&[])).as_deref(), Some("7.1"));
        assert_eq!(
            lab(&last(&[("7.1", pass), ("7.2", GroupStatus::Fail)])).as_deref(),
            Some("7.2")
        );
        // A Lab never graded (only some groups were) counts as not passing.
        assert_eq!(
            lab(&last(&[("7.1", pass), ("7.3", pass)])).as_deref(),
            Some("7.2")
        );
        let required: Vec<(&str, GroupStatus)> = ch
            .groups
            .iter()
            .filter(|g| !g.optional)
            .map(|g| (g.lab.as_str(), pass))
            .collect();
        assert_eq!(lab(&last(&required)).as_deref(), Some("7.6"));
        let mut all = required.clone();
        all.push(("7.6", pass));
        assert_eq!(lab(&last(&all)), None);
    }
}
