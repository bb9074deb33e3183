//! The report for a person: warnings, one line per group, the failing tests under their group, a summary.
//!
//! ```text
//! ✓ Lab 7.1  纯文本 stop     plain-stop      3/3  20/20 分
//! ✗ Lab 7.2  单工具往返      single-tool     1/4   0/20 分
//!     ✗ single_tool::feeds_the_result_back
//!       assertion `left == right` failed: the tool result must follow the assistant message
//!
//! 通过 1/2 组，未通过 1 组 · 得分 20/40（用时 0.8 秒）
//! ```

use std::fmt::Write as _;

use super::Style;
use crate::i18n::Lang;
use crate::outcome::GradeResult;
use crate::outcome::{format_points, GroupStatus, Problem, TestStatus};
use crate::ui::{cut, pad, Paint};

/// Lines of a failure message shown (a judge's message: what happened, the rule, expected, actual, the
/// steps so far).
const MESSAGE_LINES: usize = 6;
/// Columns of a message shown again.
const REPEAT_COLUMNS: usize = 72;
/// Characters of one message line shown.
const LINE_CHARS: usize = 200;
/// How much of the failing tests to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every failing test with its (trimmed) message, in every group: the learner chose the groups
    /// (`--group`) or asked for everything (`--all`).
    All,
    /// What fits a screen: the Lab to work on now (the first required group that does not pass) with
    /// its first failing test's message in full and one line per other failing test; one line per
    /// other group (its verdict line); then the next step and how to see the rest. A skeleton fails
    /// sixty-odd tests, most the same way; one Lab at a time is what helps.
    Focus,
}

pub fn print(result: &GradeResult, lang: Lang, style: &Style, detail: Detail) {
    super::emit(&render(result, lang, style, detail));
}

/// The report for a person. `style.columns`, the terminal's width, is what message lines are cut to;
/// `None` (not a terminal): the fixed limits, [`REPEAT_COLUMNS`] and [`LINE_CHARS`].
pub fn render(result: &GradeResult, lang: Lang, style: &Style, detail: Detail) -> String {
    let mut out = render_verdicts(result, lang, style, detail);
    let paint = Paint(style.color);
    let line = protection_line(&result.protection, lang);
    match result.protection.active {
        true => writeln!(out, "{}", paint.dim(&line)).unwrap(),
        false => writeln!(out, "{} {line}", paint.yellow("⚠")).unwrap(),
    }
    out
}

/// One line on what protected the grade: the sandbox's layers, or why learner code ran unconfined.
pub fn protection_line(protection: &crate::sandbox::Protection, lang: Lang) -> String {
    let layers = protection.layers.join(", ");
    match &protection.reason {
        None => lang.t("grade-sandbox-on", &[("layers", &layers)]),
        Some(reason) => lang.t(
            "grade-sandbox-off",
            &[("reason", reason), ("layers", &layers)],
        ),
    }
}

fn render_verdicts(result: &GradeResult, lang: Lang, style: &Style, detail: Detail) -> String {
    let paint = Paint(style.color);
    // Message lines are indented by six columns.
    let message_columns = style.columns.map(|c| c.saturating_sub(6).max(20));
    let mut out = String::new();
    for w in &result.warnings {
        writeln!(out, "{} {}", paint.yellow("⚠"), w.message(lang)).unwrap();
    }
    if !result.warnings.is_empty() {
        out.push('\n');
    }

    if let Some(problem) = &result.problem {
        let text = problem.message(lang);
        let text = if style.color {
            text
        } else {
            crate::ui::strip_ansi(&text)
        };
        writeln!(out, "{}", text.trim_end()).unwrap();
        if matches!(problem, Problem::Compile { .. }) {
            out.push('\n');
        }
        let summary = paint.bold(&result.summary(lang));
        writeln!(
            out,
            "{} {summary}{}",
            paint.red("✗"),
            score_text(result, lang)
        )
        .unwrap();
        return out;
    }

    let name_width = super::title_width(result.groups.iter().map(|g| &g.group), lang);
    let slug_width = result
        .groups
        .iter()
        .map(|g| g.group.slug.len())
        .max()
        .unwrap_or(0);
    let count_width = result
        .groups
        .iter()
        .map(|g| format!("{}/{}", g.passed(), g.total()).len())
        .max()
        .unwrap_or(0);
    let points_width = result
        .groups
        .iter()
        .map(|g| format_points(g.max()).len())
        .max()
        .unwrap_or(0);
    let mut any_failure = false;
    // Failing tests whose message this report leaves out (Focus): the last line says how to see them.
    let mut hidden = false;
    // The Lab to work on now: the first required group that does not pass, else the first that does not.
    let focus = crate::catalog::lab_to_work_on(
        &result.groups,
        |g| !g.decides,
        |g| g.status() == GroupStatus::Pass,
    )
    .map(|g| g.group.slug.clone());
    // A message already shown is cut to its first line (a `todo!()` fails many tests the same way).
    let mut shown = std::collections::HashSet::new();
    for g in &result.groups {
        let status = g.status();
        let mark = crate::ui::verdict_mark(status, paint);
        let count = pad(&format!("{}/{}", g.passed(), g.total()), count_width);
        let lab = format!("Lab {:<4}", g.group.lab);
        let points = lang.t(
            "grade-points",
            &[
                (
                    "score",
                    &format!(
                        "{:>points_width$}",
                        format_points(g.score(result.partial_credit))
                    ),
                ),
                ("max", &format_points(g.max())),
            ],
        );
        writeln!(
            out,
            "{mark} {} {} {} {}  {}",
            paint.dim(&lab),
            pad(&g.group.title(lang), name_width),
            paint.dim(&pad(&g.group.slug, slug_width)),
            if status == GroupStatus::Pass {
                paint.green(&count)
            } else {
                paint.bold(&count)
            },
            paint.dim(&points),
        )
        .unwrap();
        if status == GroupStatus::Error {
            writeln!(
                out,
                "    {}",
                lang.t(
                    "grade-group-no-tests",
                    &[("prefix", &result.track.test_prefix(&g.group))],
                )
            )
            .unwrap();
            continue;
        }
        let failing: Vec<_> = g
            .tests
            .iter()
            .filter(|t| t.status() != TestStatus::Pass)
            .collect();
        any_failure |= !failing.is_empty();
        let in_focus = focus.as_deref() == Some(g.group.slug.as_str());
        if detail == Detail::Focus && !in_focus {
            // One line per other group: its verdict line above.
            hidden |= !failing.is_empty();
            continue;
        }
        for (i, t) in failing.iter().enumerate() {
            let mark = if t.status() == TestStatus::Timeout {
                paint.yellow("⏱")
            } else {
                paint.red("✗")
            };
            writeln!(out, "    {mark} {}", paint.bold(&t.name)).unwrap();
            let Some(message) = t.message(lang) else {
                continue;
            };
            if detail == Detail::Focus && i > 0 {
                // One line per other failing test of the Lab at hand.
                hidden = true;
                continue;
            }
            if shown.contains(&message) {
                let first = message.lines().next().unwrap_or_default();
                let width = message_columns.unwrap_or(REPEAT_COLUMNS);
                writeln!(out, "      {}", paint.dim(&cut(first, width))).unwrap();
                continue;
            }
            // The whole message: `explain` by Lab for the Lab at hand's first failing test, else by name.
            let whole = match detail {
                Detail::Focus => format!("pi-course explain {}", g.group.lab),
                Detail::All => format!("pi-course explain {}", t.name),
            };
            for line in trim_message(&message, lang, &whole) {
                let line = match message_columns {
                    Some(width) => cut(&line, width),
                    None => line,
                };
                writeln!(out, "      {line}").unwrap();
            }
            shown.insert(message);
        }
    }
    out.push('\n');
    let elapsed = format!("{:.1}", result.elapsed.as_secs_f64());
    let elapsed = lang.t("grade-elapsed", &[("secs", &elapsed)]);
    let summary = result.summary(lang);
    let mark = crate::ui::overall_mark(result.status() == crate::outcome::Status::Pass, paint);
    let summary = format!("{mark} {}", paint.bold(&summary));
    writeln!(
        out,
        "{summary}{}{}",
        score_text(result, lang),
        paint.dim(&elapsed)
    )
    .unwrap();
    for g in result.groups.iter().filter(|g| !g.decides) {
        let status = crate::ui::verdict_word(g.status(), lang);
        let line = lang.t(
            "grade-summary-optional",
            &[
                ("lab", &g.group.lab),
                ("status", &status),
                ("points", &format_points(g.max())),
                ("max", &format_points(result.max())),
            ],
        );
        writeln!(out, "  {}", paint.dim(&line)).unwrap();
    }
    if let (Detail::Focus, Some(slug)) = (detail, &focus) {
        if let Some(g) = result.groups.iter().find(|g| &g.group.slug == slug) {
            let next = lang.t(
                "grade-next-lab",
                &[("lab", &g.group.lab), ("name", &g.group.name.get(lang))],
            );
            writeln!(out, "  {}", paint.bold(&next)).unwrap();
        }
    }
    if hidden {
        writeln!(out, "  {}", paint.dim(&lang.t("grade-see-the-rest", &[]))).unwrap();
    }
    if any_failure {
        let key = match result.track {
            crate::catalog::Track::Rust => "grade-run-one",
            crate::catalog::Track::TypeScript => "grade-run-one-typescript",
        };
        let hint = lang.t(key, &[("target", &result.test_target)]);
        writeln!(out, "  {}", paint.dim(&hint)).unwrap();
    }
    out
}

/// ` · 得分 80/100`: the grade's points, to follow the summary.
fn score_text(result: &GradeResult, lang: Lang) -> String {
    lang.t(
        "grade-score",
        &[
            ("score", &format_points(result.score())),
            ("max", &format_points(result.max())),
        ],
    )
}

/// The first lines of a failure message, each cut to a readable length; when lines are left out, a last
/// line says how many and which command (`whole`) shows them.
fn trim_message(message: &str, lang: Lang, whole: &str) -> Vec<String> {
    let lines: Vec<&str> = message.trim().lines().collect();
    let mut shown: Vec<String> = lines
        .iter()
        .take(MESSAGE_LINES)
        .map(|l| {
            if l.chars().count() > LINE_CHARS {
                format!("{}…", l.chars().take(LINE_CHARS).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    if lines.len() > MESSAGE_LINES {
        shown.push(lang.t(
            "grade-more-lines",
            &[("n", &(lines.len() - MESSAGE_LINES)), ("command", &whole)],
        ));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_trimmed() {
        let msg = (0..10)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let t = trim_message(&msg, Lang::En, "pi-course explain 7.1");
        assert_eq!(t.len(), MESSAGE_LINES + 1);
        assert_eq!(
            t.last().unwrap(),
            &format!(
                "… ({} more lines: pi-course explain 7.1 shows them all)",
                10 - MESSAGE_LINES
            )
        );
        let zh = trim_message(&msg, Lang::Zh, "pi-course explain 7.1");
        assert_eq!(
            zh.last().unwrap(),
            &format!(
                "…（还有 {} 行：pi-course explain 7.1 显示全部）",
                10 - MESSAGE_LINES
            )
        );
        let long = "x".repeat(500);
        assert_eq!(
            trim_message(&long, Lang::En, "x")[0].chars().count(),
            LINE_CHARS + 1
        );
    }

    #[test]
    fn a_repeated_message_is_cut_by_columns_with_wide_and_zero_width_characters() {
        let message = "循环在工具结果前停止 🦀 e\u{301}\u{200b}x ".repeat(20);
        let shown = cut(&message, REPEAT_COLUMNS);
        let width = crate::ui::display_width(&shown);
        assert!(width <= REPEAT_COLUMNS, "{width}: {shown}");
        assert!(width >= REPEAT_COLUMNS - 2, "{width}: {shown}");
        assert!(shown.ends_with('…'), "{shown}");
        // Zero-width characters take no column: a line of them and three letters is three wide.
        assert_eq!(
            cut("a\u{200b}\u{301}b\u{200d}c", 3),
            "a\u{200b}\u{301}b\u{200d}c"
        );
    }
}
