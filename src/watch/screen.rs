//! What `watch` shows: a pure function from the state of the watch to lines of text, so it can be tested
//! without a terminal.
//!
//! ```text
//! pi-course watch · 第 07 章 把 Agent Loop 写成可验证的状态迁移
//! ✗ 通过 1/5 组，未通过 4 组 · 12:03:04 评分，用时 0.8 秒
//!
//!   7.1  纯文本 stop            1/1  ✓
//! > 7.2  单工具往返             0/2  ✗
//!   ...
//!
//! ✗ single_tool::runs_one_call_and_asks_again
//!   not yet implemented: Lab 7.2: ...
//!
//! 下一步：Lab 7.2 单工具往返 — 读 GUIDE.md 的「Lab 7.2」，改好后保存；按 h 看提示。
//!
//! h 提示 · r 重新评分 · q 退出 · 保存 src/agent_loop.rs 时自动重新评分
//! ```
//!
//! Line 2 is the status line: while a grade runs it shows a spinner and the stage, and only that line is
//! rewritten (see [`STATUS_ROW`]), so the rest of the screen does not flicker.

use crate::catalog::{Chapter, Group};
use crate::i18n::Lang;
use crate::outcome::Stage;
use crate::outcome::{GradeResult, Status};
use crate::outcome::{GroupResult, GroupStatus, Problem, TestStatus};
use crate::report::{stage_text, title_width};
use crate::ui::{display_width, pad, strip_ansi, verdict_mark, wrap, Paint, FRAMES};

use super::changes::Mode;

/// The status line's row on the screen (1-based, as the terminal counts).
pub const STATUS_ROW: usize = 2;

/// Lines of a failing test's message shown at most.
const MESSAGE_LINES: usize = 12;
/// Lines of a compile error or other problem shown at most.
const PROBLEM_LINES: usize = 40;

/// Everything the screen shows.
pub struct View<'a> {
    pub lang: Lang,
    pub color: bool,
    pub chapter: &'a Chapter,
    /// The latest finished grade of this watch.
    pub result: Option<&'a GradeResult>,
    /// When `result` finished, as local time of day.
    pub graded_at: Option<&'a str>,
    /// A grade is running.
    pub grading: bool,
    /// Another grade follows the running one (a save came in meanwhile).
    pub queued: bool,
    /// The hint for the current Lab is open.
    pub show_hint: bool,
    /// The first failing test's timelines are open (`e`, as `pi-course explain` shows them).
    pub show_explain: bool,
    /// The slug of the first Lab not passing in the latest grade that ran the tests.
    pub working_on: Option<&'a str>,
    /// Keys are read (stdin is a terminal).
    pub keys: bool,
    pub mode: &'a Mode,
}

/// Where the learner stands after a grade.
#[derive(Debug, Clone, Copy)]
pub enum Standing<'a> {
    /// No grade finished yet.
    Unknown,
    /// The tests could not run: a compile error or another problem.
    Problem(&'a Problem),
    /// The first Lab that does not pass yet; `optional` when every required one passes.
    Lab(&'a GroupResult),
    /// Every Lab passes.
    Done,
}

pub fn standing(result: Option<&GradeResult>) -> Standing<'_> {
    let Some(result) = result else {
        return Standing::Unknown;
    };
    if let Some(problem) = &result.problem {
        return Standing::Problem(problem);
    }
    let on = crate::catalog::lab_to_work_on(
        &result.groups,
        |g| g.group.optional,
        |g| g.status() == GroupStatus::Pass,
    );
    match on {
        Some(g) => Standing::Lab(g),
        None => Standing::Done,
    }
}

/// The Lab whose hint `h` shows: the first one not passing. While the code does not compile (or before
/// any grade), the Lab the learner was last working on (`working_on`, a slug), else the first Lab.
pub fn hint_group<'a>(
    chapter: &'a Chapter,
    result: Option<&'a GradeResult>,
    working_on: Option<&str>,
) -> Option<&'a Group> {
    match standing(result) {
        Standing::Lab(g) => Some(&g.group),
        Standing::Done => None,
        Standing::Unknown | Standing::Problem(_) => working_on
            .and_then(|slug| chapter.groups.iter().find(|g| g.slug == slug))
            .or(chapter.groups.first()),
    }
}

/// The whole screen, one string per line (no line breaks inside), fitted to `width` × `height` cells.
/// The line at [`STATUS_ROW`] is the status line for `stage` (when grading) and spinner `frame`.
pub fn render(
    view: &View<'_>,
    stage: Option<&Stage>,
    frame: usize,
    width: usize,
    height: usize,
) -> Vec<String> {
    let lang = view.lang;
    let paint = Paint(view.color);
    let ch = view.chapter;

    let mut top = Vec::new();
    let title = lang.t(
        "watch-title",
        &[("chapter", &ch.id), ("title", &ch.title.get(lang))],
    );
    top.push(paint.bold(&truncate(&title, width)));
    top.push(status_line(view, stage, frame, width));
    top.push(String::new());
    top.extend(rows(view));
    top.push(String::new());
    if let Some(result) = view.result {
        for w in &result.warnings {
            top.push(format!("{} {}", paint.yellow("⚠"), w.message(lang)));
        }
    }

    let mut bottom = Vec::new();
    bottom.push(next_step(view));
    if view.show_hint {
        bottom.push(String::new());
        match hint_group(ch, view.result, view.working_on) {
            Some(g) => {
                let title = lang.t(
                    "watch-hint-title",
                    &[("lab", &g.lab), ("name", &g.name.get(lang))],
                );
                bottom.push(paint.bold(&title));
                for line in wrap(g.hint.get(lang), width.saturating_sub(2).max(20)) {
                    bottom.push(format!("  {line}"));
                }
            }
            None => bottom.push(lang.t("watch-hint-none", &[])),
        }
    }
    if view.show_explain {
        bottom.push(String::new());
        match view.result.and_then(|r| first_explained(r, lang)) {
            Some(test) => {
                let text = crate::report::explain::render(&test, None, &[], lang, paint);
                bottom.extend(text.lines().map(|l| truncate(l, width)));
            }
            None => bottom.push(lang.t("explain-nothing-failed", &[])),
        }
    }
    bottom.push(String::new());
    bottom.push(paint.dim(&truncate(&footer(view), width)));

    let details = details(view);
    let used: usize = top.iter().chain(&bottom).map(|l| rows_of(l, width)).sum();
    // One row stays free so that the last line never scrolls the screen.
    let mut room = height.saturating_sub(1).saturating_sub(used);
    let mut lines = top;
    if !details.is_empty() && room >= 3 {
        room -= 1; // the blank line after the details
        let mut shown = Vec::new();
        for (i, line) in details.iter().enumerate() {
            let rows = rows_of(line, width);
            let left = details.len() - i;
            // Keep a row for "… N more lines" unless this is the last line.
            let need = if left > 1 { rows + 1 } else { rows };
            if need > room {
                let more = lang.t_count("watch-more-lines", left, &[("count", &left)]);
                shown.push(paint.dim(&truncate(&more, width)));
                break;
            }
            room -= rows;
            shown.push(line.clone());
        }
        lines.extend(shown);
        lines.push(String::new());
    }
    lines.extend(bottom);
    // A terminal too small for even the fixed parts: cut at the bottom rather than scroll.
    let mut rows = 0;
    lines
        .into_iter()
        .take_while(|l| {
            rows += rows_of(l, width);
            rows < height.max(2)
        })
        .collect()
}

/// The status line: a spinner and the stage while grading, else the verdict and when it was reached.
pub fn status_line(view: &View<'_>, stage: Option<&Stage>, frame: usize, width: usize) -> String {
    let lang = view.lang;
    let paint = Paint(view.color);
    let line = if view.grading {
        let spinner = FRAMES[frame % FRAMES.len()];
        let mut text = stage.map(|s| stage_text(s, lang)).unwrap_or_default();
        if text.is_empty() {
            text = lang.t("progress-preparing", &[]);
        }
        if view.queued {
            text.push_str(&lang.t("watch-queued", &[]));
        }
        format!("{} {text}", paint.yellow(spinner))
    } else if let Some(result) = view.result {
        let mark = crate::ui::overall_mark(result.status() == Status::Pass, paint);
        let secs = format!("{:.1}", result.elapsed.as_secs_f64());
        let when = lang.t(
            "watch-graded",
            &[("time", &view.graded_at.unwrap_or("")), ("secs", &secs)],
        );
        format!(
            "{mark} {} {}",
            paint.bold(&result.summary(lang)),
            paint.dim(&format!("· {when}"))
        )
    } else {
        String::new()
    };
    truncate(&line, width)
}

/// One row per Lab, in chapter order: `> 7.2  单工具往返   0/2  ✗`, the current Lab marked.
fn rows(view: &View<'_>) -> Vec<String> {
    let lang = view.lang;
    let paint = Paint(view.color);
    let groups = &view.chapter.groups;
    let name_width = title_width(groups, lang);
    let lab_width = groups.iter().map(|g| g.lab.len()).max().unwrap_or(0);
    let current = match standing(view.result) {
        Standing::Lab(g) => Some(g.group.slug.as_str()),
        _ => None,
    };
    groups
        .iter()
        .map(|g| {
            let graded = view
                .result
                .and_then(|r| r.groups.iter().find(|r| r.group.slug == g.slug));
            let (count, mark) = match graded {
                None => ("…".to_string(), paint.dim("·")),
                Some(r) => {
                    let count = if r.total() == 0 {
                        "–".to_string()
                    } else {
                        format!("{}/{}", r.passed(), r.total())
                    };
                    let mark = verdict_mark(r.status(), paint);
                    (count, mark)
                }
            };
            let is_current = current == Some(g.slug.as_str());
            let row = format!(
                "{} {:<lab_width$}  {}  {count:>5}  {mark}",
                if is_current { ">" } else { " " },
                g.lab,
                pad(&g.title(lang), name_width),
            );
            if is_current {
                paint.bold(&row)
            } else {
                row
            }
        })
        .collect()
}

/// The flexible middle: the reason the tests could not run, or the first failing test of the current Lab.
fn details(view: &View<'_>) -> Vec<String> {
    let lang = view.lang;
    let paint = Paint(view.color);
    match standing(view.result) {
        Standing::Problem(problem) => {
            let text = problem.message(lang);
            let text = if view.color { text } else { strip_ansi(&text) };
            text.trim_end()
                .lines()
                .take(PROBLEM_LINES)
                .map(str::to_string)
                .collect()
        }
        Standing::Lab(g) => {
            let Some(test) = g.tests.iter().find(|t| t.status() != TestStatus::Pass) else {
                if g.status() == GroupStatus::Error {
                    return vec![lang.t(
                        "grade-group-no-tests",
                        &[("prefix", &view.chapter.test_prefix(&g.group))],
                    )];
                }
                return Vec::new();
            };
            let mark = if test.status() == TestStatus::Timeout {
                paint.yellow("⏱")
            } else {
                paint.red("✗")
            };
            let mut lines = vec![format!("{mark} {}", paint.bold(&test.name))];
            if let Some(message) = test.message(lang) {
                lines.extend(
                    message
                        .trim()
                        .lines()
                        .take(MESSAGE_LINES)
                        .map(|l| format!("  {l}")),
                );
            }
            lines
        }
        Standing::Unknown | Standing::Done => Vec::new(),
    }
}

fn next_step(view: &View<'_>) -> String {
    let lang = view.lang;
    let paint = Paint(view.color);
    let guide = view.chapter.guide.get(lang);
    match standing(view.result) {
        Standing::Unknown => lang.t("watch-starting", &[]),
        Standing::Problem(Problem::Compile { .. }) => {
            paint.bold(&lang.t("watch-next-compile", &[]))
        }
        Standing::Problem(_) => paint.bold(&lang.t("watch-next-problem", &[])),
        Standing::Lab(g) => {
            let key = if g.group.optional {
                "watch-next-optional"
            } else {
                "watch-next-lab"
            };
            let args: [(&str, &dyn std::fmt::Display); 3] = [
                ("lab", &g.group.lab),
                ("name", &g.group.name.get(lang)),
                ("guide", &guide),
            ];
            let mut text = lang.t(key, &args);
            if view.keys {
                text.push_str(&lang.t("watch-press-h", &[]));
            }
            paint.bold(&text)
        }
        Standing::Done => {
            let mut text = lang.t("watch-all-passed", &[]);
            if view.keys {
                text.push_str(&lang.t("watch-press-q", &[]));
            }
            paint.green(&text)
        }
    }
}

/// The first test of `result` that did not pass, with what it expected and got.
fn first_explained(result: &GradeResult, lang: Lang) -> Option<crate::outcome::Explained> {
    result.groups.iter().find_map(|g| {
        g.tests.iter().find_map(|t| {
            let evidence = t.evidence.as_ref()?;
            Some(crate::outcome::Explained {
                name: t.name.clone(),
                lab: g.group.lab.clone(),
                message: t.message(lang).unwrap_or_default(),
                messages: Default::default(),
                evidence: evidence.as_ref().clone(),
            })
        })
    })
}

fn footer(view: &View<'_>) -> String {
    let lang = view.lang;
    let files = view.chapter.editable.join(", ");
    let mut parts = Vec::new();
    parts.push(if view.keys {
        lang.t("watch-keys", &[])
    } else {
        lang.t("watch-keys-none", &[])
    });
    parts.push(lang.t("watch-watching", &[("files", &files)]));
    match view.mode {
        Mode::Events => {}
        Mode::Polling => parts.push(lang.t("watch-polling", &[])),
        Mode::PollingFallback(error) => parts.push(lang.t("watch-no-events", &[("error", error)])),
    }
    parts.join(" · ")
}

/// Terminal rows `line` takes at `width` columns (ANSI color codes take none).
pub fn rows_of(line: &str, width: usize) -> usize {
    let w = display_width(&strip_ansi(line));
    w.div_ceil(width.max(1)).max(1)
}

/// `line` cut to `width` columns with `…`. Lines with color codes are left alone when they fit; a line
/// that does not fit loses its colors.
fn truncate(line: &str, width: usize) -> String {
    let plain = strip_ansi(line);
    if display_width(&plain) <= width {
        return line.to_string();
    }
    crate::ui::cut(&plain, width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::outcome::{Outcome, TestResult};
    use std::time::Duration;

    fn result(chapter: &Chapter, passing: &[&str]) -> GradeResult {
        GradeResult {
            protection: Default::default(),
            chapter: chapter.id.clone(),
            test_target: chapter.test_target.clone(),
            track: chapter.track,
            warnings: vec![],
            problem: None,
            groups: chapter
                .groups
                .iter()
                .map(|g| {
                    let outcome = if passing.contains(&g.slug.as_str()) {
                        Outcome::Passed
                    } else {
                        Outcome::Diverged {
                            message: format!("not yet implemented: Lab {}", g.lab),
                        }
                    };
                    GroupResult {
                        group: g.clone(),
                        decides: !g.optional,
                        tests: vec![TestResult {
                            name: format!("{}::first", g.module()),
                            outcome,
                            duration: Duration::ZERO,
                            evidence: None,
                        }],
                        error: None,
                    }
                })
                .collect(),
            elapsed: Duration::from_millis(800),
            partial_credit: false,
            seed: None,
            timings: Vec::new(),
        }
    }

    fn view<'a>(chapter: &'a Chapter, result: Option<&'a GradeResult>, lang: Lang) -> View<'a> {
        View {
            lang,
            color: false,
            chapter,
            result,
            graded_at: Some("12:03:04"),
            grading: false,
            queued: false,
            show_hint: false,
            show_explain: false,
            working_on: None,
            keys: true,
            mode: &Mode::Events,
        }
    }

    fn row<'a>(lines: &'a [String], lab: &str) -> &'a str {
        lines
            .iter()
            .find(|l| l.get(2..).is_some_and(|rest| rest.starts_with(lab)))
            .unwrap_or_else(|| panic!("no row for {lab} in {lines:#?}"))
    }

    #[test]
    fn one_row_per_lab_and_the_next_step() {
        let ch = &Catalog::chapter_07();
        let r = result(ch, &["plain-stop"]);
        let lines = render(&view(ch, Some(&r), Lang::Zh), None, 0, 100, 40);
        assert!(row(&lines, "7.1").ends_with("1/1  ✓"), "{lines:#?}");
        let second = row(&lines, "7.2");
        assert!(
            second.starts_with("> ") && second.ends_with("0/1  ✗"),
            "{lines:#?}"
        );
        let text = lines.join("\n");
        assert!(text.contains("single_tool::first"), "{text}");
        assert!(text.contains("not yet implemented: Lab 7.2"), "{text}");
        assert!(text.contains("下一步：Lab 7.2"), "{text}");
        assert!(text.contains("按 h"), "{text}");
        assert!(lines[1].contains("12:03:04"), "{text}");
    }

    #[test]
    fn e_opens_the_first_failing_tests_timelines() {
        let ch = &Catalog::chapter_07();
        let mut r = result(ch, &["plain-stop"]);
        let expected = serde_json::json!({"alternatives": [{"steps": [
            {"after": [], "match": {"kind": "request", "n": 1}, "rule": "r"},
        ]}], "rules": {}});
        let trace = vec![serde_json::json!({"kind": "hang"})];
        let evidence = crate::outcome::Evidence { expected, trace };
        r.groups[1].tests[0].evidence = Some(std::sync::Arc::new(evidence));
        let mut v = view(ch, Some(&r), Lang::En);
        let closed = render(&v, None, 0, 100, 60).join("\n");
        assert!(!closed.contains("expected (the chapter)"), "{closed}");
        v.show_explain = true;
        let text = render(&v, None, 0, 100, 60).join("\n");
        assert!(
            text.contains("expected (the chapter)") && text.contains("single_tool::first"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with('>') && l.contains("request #1") && l.contains("hang")),
            "{text}"
        );
    }

    #[test]
    fn the_hint_opens_under_the_next_step() {
        let ch = &Catalog::chapter_07();
        let r = result(ch, &["plain-stop", "single-tool"]);
        let mut v = view(ch, Some(&r), Lang::En);
        v.show_hint = true;
        let text = render(&v, None, 0, 100, 60).join("\n");
        assert!(text.contains("Hint · Lab 7.3"), "{text}");
        let first_words: String = ch.groups[2].hint.en.chars().take(20).collect();
        assert!(text.contains(&first_words), "{text}");
    }

    #[test]
    fn while_it_does_not_compile_the_hint_is_for_the_lab_in_progress() {
        let ch = &Catalog::chapter_07();
        let mut r = result(ch, &[]);
        r.problem = Some(Problem::Compile {
            rendered: "error: expected one of".into(),
            errors: 1,
        });
        let lab = |working_on| hint_group(ch, Some(&r), working_on).map(|g| g.lab.as_str());
        assert_eq!(lab(None), Some("7.1"));
        assert_eq!(lab(Some("concurrent-tools")), Some("7.4"));
    }

    #[test]
    fn every_lab_passing_is_the_end() {
        let ch = &Catalog::chapter_07();
        let all: Vec<&str> = ch.groups.iter().map(|g| g.slug.as_str()).collect();
        let r = result(ch, &all);
        let text = render(&view(ch, Some(&r), Lang::En), None, 0, 100, 40).join("\n");
        assert!(!text.contains("> "), "{text}");
        assert!(
            text.contains(&Lang::En.t("watch-all-passed", &[])),
            "{text}"
        );
    }

    #[test]
    fn the_screen_fits_the_terminal() {
        let ch = &Catalog::chapter_07();
        let mut r = result(ch, &[]);
        r.problem = Some(Problem::Compile {
            rendered: (0..200)
                .map(|i| format!("error line {i}"))
                .collect::<Vec<_>>()
                .join("\n"),
            errors: 1,
        });
        for (w, h) in [(80, 24), (40, 12), (120, 50), (20, 5)] {
            let lines = render(&view(ch, Some(&r), Lang::Zh), None, 0, w, h);
            let rows: usize = lines.iter().map(|l| rows_of(l, w)).sum();
            assert!(rows < h, "{w}x{h}: {rows} rows\n{lines:#?}");
        }
        let lines = render(&view(ch, Some(&r), Lang::Zh), None, 0, 80, 24);
        assert!(lines.iter().any(|l| l.contains("error line 0")));
        assert!(lines.iter().any(|l| l.contains("……")), "{lines:#?}");
    }

    #[test]
    fn wide_and_zero_width_characters_fit_the_terminal() {
        let ch = &Catalog::chapter_07();
        let mut r = result(ch, &[]);
        // Wide (CJK, emoji, full-width), zero-width (combining accent, zero-width space, joiner) text.
        let line =
            "错误：循环在「工具结果」前停止 🦀🦀 ｆｕｌｌ e\u{301}\u{200b}x\u{200d}y ".repeat(6);
        r.problem = Some(Problem::Compile {
            rendered: (0..40).map(|_| line.clone()).collect::<Vec<_>>().join("\n"),
            errors: 1,
        });
        for (w, h) in [(80, 24), (41, 12), (23, 9)] {
            let lines = render(&view(ch, Some(&r), Lang::Zh), None, 0, w, h);
            let rows: usize = lines.iter().map(|l| rows_of(l, w)).sum();
            assert!(rows < h, "{w}x{h}: {rows} rows\n{lines:#?}");
            if h >= 12 {
                assert!(lines.iter().any(|l| l.contains("错误")), "{lines:#?}");
            }
        }
    }

    #[test]
    fn the_status_line_shows_the_stage_while_grading() {
        let ch = &Catalog::chapter_07();
        let mut v = view(ch, None, Lang::En);
        v.grading = true;
        v.queued = true;
        let stage = Stage::Running { done: 3, total: 20 };
        let line = status_line(&v, Some(&stage), 1, 100);
        assert!(line.starts_with(FRAMES[1]), "{line}");
        assert!(line.contains("3/20"), "{line}");
        assert!(line.contains(&Lang::En.t("watch-queued", &[])), "{line}");
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_between_wide_characters() {
        assert_eq!(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"]);
        assert_eq!(
            wrap("读 GUIDE.md 的「Lab 7.1」", 12),
            // Unicode line breaking (textwrap): a closing bracket never starts a line.
            ["读 GUIDE.md", "的「Lab", "7.1」"]
        );
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        for line in wrap(&"纯文本".repeat(20), 9) {
            assert!(display_width(&line) <= 9, "{line}");
        }
    }
}
