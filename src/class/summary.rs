//! A class's results in one table: `summary.json` and `summary.csv`, one row per learner.
//!
//! ```json
//! {"format": "pi-course grade-class", "version": 1, "pi_course": "0.1.0", "chapter": "07", "lang": "zh",
//!  "max": 100.0,
//!  "groups": [{"slug": "plain-stop", "lab": "7.1", "name": "纯文本 stop", "points": 20, "optional": false}],
//!  "learners": [{"name": "alice", "status": "pass" | "fail" | "error", "graded": true,
//!                "groups": [{"slug": "plain-stop", "status": "pass", "score": 20.0, "max": 20.0}],
//!                "total": 100.0, "max": 100.0, "build": "ok" | "error" | "timeout" | "none",
//!                "sandbox": "on" | "off", "track": "rust" | "typescript", "warnings": ["…"], "seconds": 1.2, "sha256": "…",
//!                "message": "…", "report": "learners/alice.json", "junit": "learners/alice.xml",
//!                "page": "learners/alice.html"}]}
//! ```
//!
//! `status`, `total`, `max` and each group's `status` and `score` are those of the learner's JSON report.
//! `graded` is false when the learner got no verdict on their code (nothing to grade, or the grader
//! failed); a compile error is a verdict. `build` says how far the build got: `ok`, `error` (it failed),
//! `timeout` (stopped at `--build-timeout`), `none` (nothing was built). `sha256` is the graded file's.
//!
//! The CSV has the same rows: `name`, `status`, then per group `<slug>` (its status) and
//! `<slug> points`, then `total`, `max`, `build`, `sandbox`, `track`, `warnings` (joined with ` | `),
//! `seconds`, `sha256`, `graded`, `message`. Any field a spreadsheet could read as a formula is written
//! with a `'` in front (see [`defuse`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::Chapter;
use crate::i18n::Lang;
use crate::outcome::GradeResult;
use crate::outcome::{format_points, Problem};

pub const JSON: &str = "summary.json";
pub const CSV: &str = "summary.csv";
/// What `format` says in every summary.json this program writes: how an earlier run's results are told
/// from a directory of something else.
pub const FORMAT: &str = "pi-course grade-class";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub format: String,
    pub version: u32,
    pub pi_course: String,
    pub chapter: String,
    pub lang: String,
    pub max: f64,
    pub groups: Vec<GroupInfo>,
    pub learners: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupInfo {
    pub slug: String,
    pub lab: String,
    pub name: String,
    pub points: u32,
    pub optional: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub name: String,
    pub status: String,
    pub graded: bool,
    pub groups: Vec<GroupCell>,
    pub total: f64,
    pub max: f64,
    pub build: String,
    pub sandbox: String,
    /// The track the learner was graded in; summaries written before tracks were all Rust.
    #[serde(default = "rust")]
    pub track: String,
    pub warnings: Vec<String>,
    pub seconds: f64,
    pub sha256: String,
    pub message: String,
    pub report: String,
    pub junit: String,
    pub page: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupCell {
    pub slug: String,
    pub status: String,
    pub score: f64,
    pub max: f64,
}

impl Summary {
    pub fn new(chapter: &Chapter, lang: Lang) -> Summary {
        let max = chapter
            .groups
            .iter()
            .filter(|g| !g.optional)
            .map(|g| f64::from(g.points))
            .sum();
        Summary {
            format: FORMAT.to_string(),
            version: 1,
            pi_course: env!("CARGO_PKG_VERSION").to_string(),
            chapter: chapter.id.clone(),
            lang: lang.code().to_string(),
            max,
            groups: chapter
                .groups
                .iter()
                .map(|g| GroupInfo {
                    slug: g.slug.clone(),
                    lab: g.lab.clone(),
                    name: g.name.get(lang).to_string(),
                    points: g.points,
                    optional: g.optional,
                })
                .collect(),
            learners: Vec::new(),
        }
    }

    /// The summary an earlier run left in `dir`, if any and readable.
    pub fn load(dir: &Path) -> Option<Summary> {
        let text = std::fs::read_to_string(dir.join(JSON)).ok()?;
        let summary: Summary = serde_json::from_str(&text).ok()?;
        (summary.format == FORMAT).then_some(summary)
    }

    /// Were this summary's results made the way this run makes them (this pi-course, chapter and
    /// language)? Only then can a learner's result be kept.
    pub fn reusable_by(&self, fresh: &Summary) -> bool {
        self.version == fresh.version
            && self.pi_course == fresh.pi_course
            && self.chapter == fresh.chapter
            && self.lang == fresh.lang
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the summary serializes")
    }

    pub fn to_csv(&self) -> String {
        let mut header: Vec<String> = vec!["name".into(), "status".into()];
        for g in &self.groups {
            header.push(g.slug.clone());
            header.push(format!("{} points", g.slug));
        }
        header.extend(
            [
                "total", "max", "build", "sandbox", "track", "warnings", "seconds", "sha256",
                "graded", "message",
            ]
            .map(String::from),
        );
        let mut out = csv_line(&header);
        for row in &self.learners {
            let mut fields = vec![row.name.clone(), row.status.clone()];
            for g in &self.groups {
                match row.groups.iter().find(|c| c.slug == g.slug) {
                    Some(cell) => {
                        fields.push(cell.status.clone());
                        fields.push(format_points(cell.score));
                    }
                    None => fields.extend([String::new(), String::new()]),
                }
            }
            fields.extend([
                format_points(row.total),
                format_points(row.max),
                row.build.clone(),
                row.sandbox.clone(),
                row.track.clone(),
                row.warnings.join(" | "),
                format!("{:.2}", row.seconds),
                row.sha256.clone(),
                row.graded.to_string(),
                row.message.clone(),
            ]);
            out.push_str(&csv_line(&fields));
        }
        out
    }
}

impl Row {
    /// How the learner did, in one word for people: `pass`, `fail`, `unbuilt` (their code did not
    /// build: a verdict too) or `ungraded` (no verdict).
    pub fn verdict(&self) -> &'static str {
        match (self.graded, self.status.as_str()) {
            (false, _) => "ungraded",
            (true, "pass") => "pass",
            (true, "fail") => "fail",
            (true, _) => "unbuilt",
        }
    }

    /// [`Row::verdict`] in words.
    pub fn verdict_text(&self, lang: Lang) -> String {
        lang.t(&format!("class-verdict-{}", self.verdict()), &[])
    }
}

/// The files a learner's results go to, relative to the results directory.
pub struct LearnerFiles {
    pub report: String,
    pub junit: String,
    pub page: String,
}

impl LearnerFiles {
    pub const DIR: &'static str = "learners";

    pub fn of(name: &str) -> LearnerFiles {
        LearnerFiles {
            report: format!("{}/{name}.json", Self::DIR),
            junit: format!("{}/{name}.xml", Self::DIR),
            page: format!("{}/{name}.html", Self::DIR),
        }
    }
}

/// A learner's row, from their grade.
pub fn row(name: &str, result: &GradeResult, sha256: &str, lang: Lang) -> Row {
    let files = LearnerFiles::of(name);
    let build = match &result.problem {
        None => "ok",
        Some(Problem::Compile { .. } | Problem::Cargo { .. } | Problem::Toolchain { .. }) => {
            "error"
        }
        Some(Problem::BuildTimeout { .. }) => "timeout",
        Some(_) => "none",
    };
    let message = match &result.problem {
        // What the learner has to fix: the reason, not the summary above it.
        Some(problem) if !matches!(problem, Problem::Compile { .. }) => {
            crate::ui::strip_ansi(&problem.message(lang))
        }
        _ => result.summary(lang),
    };
    Row {
        name: name.to_string(),
        status: status_word(result),
        graded: result.has_verdict(),
        groups: result
            .groups
            .iter()
            .map(|g| GroupCell {
                slug: g.group.slug.clone(),
                status: serde_json::to_value(g.status())
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                score: g.score(result.partial_credit),
                max: g.max(),
            })
            .collect(),
        total: result.score(),
        max: result.max(),
        build: build.to_string(),
        sandbox: if result.protection.active {
            "on"
        } else {
            "off"
        }
        .to_string(),
        track: result.track.name().to_string(),
        warnings: result.warnings.iter().map(|w| w.message(lang)).collect(),
        seconds: (result.elapsed.as_secs_f64() * 100.0).round() / 100.0,
        sha256: sha256.to_string(),
        message: first_line(&message),
        report: files.report,
        junit: files.junit,
        page: files.page,
    }
}

fn rust() -> String {
    crate::catalog::Track::Rust.name().to_string()
}

fn status_word(result: &GradeResult) -> String {
    serde_json::to_value(result.status())
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn first_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// One CSV record (RFC 4180): fields with a comma, quote or line break are quoted; every field goes
/// through [`defuse`] first.
fn csv_line(fields: &[String]) -> String {
    let mut line = fields
        .iter()
        .map(|f| {
            let f = defuse(f);
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    line.push_str("\r\n");
    line
}

/// What a spreadsheet may read as the start of a formula: `=`, `+`, `-`, `@`, and their full-width forms
/// (some spreadsheets read `＝` as `=`).
const FORMULA: &[char] = &['=', '+', '-', '@', '＝', '＋', '－', '＠'];

/// `field` with a `'` (a spreadsheet's "this is text") in front of every cell a spreadsheet could read as
/// a formula, following the usual CSV injection advice: a field that starts with a tab or a carriage
/// return, or whose first character after any white space is one of [`FORMULA`]. A spreadsheet that
/// splits on `;` or tabs, or ignores the quotes, sees a new cell after each `;`, tab or line break
/// inside the field, so each of those gets the same treatment. A plain number (`-3`) is left alone:
/// it is no formula.
pub fn defuse(field: &str) -> String {
    if field.trim().parse::<f64>().is_ok() && field.trim() == field {
        return field.to_string();
    }
    let mut out = String::with_capacity(field.len() + 1);
    let mut rest = field;
    loop {
        let cell_end = rest.find([';', '\t', '\r', '\n']).unwrap_or(rest.len());
        let (cell, after) = rest.split_at(cell_end);
        let starts_badly = cell.trim_start().starts_with(FORMULA)
            // The field itself starts with a tab or a carriage return.
            || (out.is_empty() && cell.is_empty() && after.starts_with(['\t', '\r']));
        if starts_badly {
            out.push('\'');
        }
        out.push_str(cell);
        let Some(separator) = after.chars().next() else {
            return out;
        };
        out.push(separator);
        rest = &after[separator.len_utf8()..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it_and_defuses_formulas() {
        let line = csv_line(&[
            "plain".into(),
            "a,b".into(),
            "say \"hi\"".into(),
            "two\nlines".into(),
            "=HYPERLINK(\"x\")".into(),
            "-3".into(),
        ]);
        assert_eq!(
            line,
            "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"'=HYPERLINK(\"\"x\"\")\",-3\r\n"
        );
    }

    #[test]
    fn every_cell_a_spreadsheet_could_run_is_defused() {
        for (field, defused) in [
            ("\t=1+1", "'\t'=1+1"),
            ("\rcmd", "'\rcmd"),
            ("  =1+1", "'  =1+1"),
            ("\u{a0}@SUM(A1)", "'\u{a0}@SUM(A1)"),
            ("＝1+1", "'＝1+1"),
            ("ann;=1+1", "ann;'=1+1"),
            ("ann\t+1", "ann\t'+1"),
            ("ann\n-1+2", "ann\n'-1+2"),
            ("-1+2", "'-1+2"),
            (" -3", "' -3"),
            ("-3", "-3"),
            ("1.5", "1.5"),
            ("ann-bob", "ann-bob"),
            ("a = b", "a = b"),
        ] {
            assert_eq!(defuse(field), defused, "{field:?}");
        }
    }
}
