//! How text meets the terminal: whether to color it. One process-wide choice, made from `--color` once
//! at start, so that every command, the spinner included, follows the same rule.

use std::sync::OnceLock;

/// `--color`: `auto` colors a terminal unless `NO_COLOR` is set (<https://no-color.org>); `always` and
/// `never` do what they say, whatever the terminal and `NO_COLOR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Records the command line's choice; the first call wins.
pub fn set_color_choice(choice: ColorChoice) {
    let _ = CHOICE.set(choice);
}

/// `NO_COLOR` set to anything but the empty string.
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Whether to write ANSI colors to a stream that is (or is not) a terminal.
pub fn color_on(is_terminal: bool) -> bool {
    match CHOICE.get().copied().unwrap_or_default() {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && !no_color_env(),
    }
}

/// The columns of the terminal stdout is, or `None` when stdout is not a terminal.
pub fn terminal_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// The spinner's frames, for `grade` and `watch` alike.
pub const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A tiny ANSI painter that does nothing when colors are off.
#[derive(Debug, Clone, Copy)]
pub struct Paint(pub bool);

impl Paint {
    fn wrap(self, style: anstyle::Style, text: &str) -> String {
        if self.0 {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
    fn fg(color: anstyle::AnsiColor) -> anstyle::Style {
        anstyle::Style::new().fg_color(Some(color.into()))
    }
    pub fn green(self, t: &str) -> String {
        self.wrap(Self::fg(anstyle::AnsiColor::Green), t)
    }
    pub fn red(self, t: &str) -> String {
        self.wrap(Self::fg(anstyle::AnsiColor::Red), t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.wrap(Self::fg(anstyle::AnsiColor::Yellow), t)
    }
    pub fn cyan(self, t: &str) -> String {
        self.wrap(Self::fg(anstyle::AnsiColor::Cyan), t)
    }
    pub fn bold(self, t: &str) -> String {
        self.wrap(anstyle::Style::new().bold(), t)
    }
    pub fn dim(self, t: &str) -> String {
        self.wrap(anstyle::Style::new().dimmed(), t)
    }
}

/// A group's verdict as one mark: ✓ pass, ✗ fail or error, ⏱ timeout.
pub fn verdict_mark(status: crate::outcome::GroupStatus, paint: Paint) -> String {
    use crate::outcome::GroupStatus;
    match status {
        GroupStatus::Pass => paint.green("✓"),
        GroupStatus::Timeout => paint.yellow("⏱"),
        GroupStatus::Fail | GroupStatus::Error => paint.red("✗"),
    }
}

/// A whole grade's verdict as one mark: ✓ every deciding group passed, else ✗.
pub fn overall_mark(passed: bool, paint: Paint) -> String {
    use crate::outcome::GroupStatus;
    verdict_mark(
        if passed {
            GroupStatus::Pass
        } else {
            GroupStatus::Fail
        },
        paint,
    )
}

/// A group's verdict as a word, in the learner's language.
pub fn verdict_word(status: crate::outcome::GroupStatus, lang: crate::i18n::Lang) -> String {
    use crate::outcome::GroupStatus;
    match status {
        GroupStatus::Pass => lang.t("grade-status-pass", &[]),
        GroupStatus::Fail => lang.t("grade-status-fail", &[]),
        GroupStatus::Timeout => lang.t("grade-status-timeout", &[]),
        GroupStatus::Error => lang.t("grade-status-error", &[]),
    }
}

/// Removes ANSI escape sequences (for JSON and JUnit, which want plain text, and to measure a line).
pub fn strip_ansi(text: &str) -> String {
    anstream::adapter::strip_str(text).to_string()
}

/// How many terminal columns `s` takes: wide (East Asian) characters two, zero-width ones none.
pub fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` padded with spaces to `width` columns.
pub fn pad(s: &str, width: usize) -> String {
    let w = display_width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// `line` cut to at most `columns` terminal columns, the last of them an ellipsis, when it is wider.
pub fn cut(line: &str, columns: usize) -> String {
    if display_width(line) <= columns {
        return line.to_string();
    }
    let mut out = String::new();
    let mut width = 0;
    for c in line.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if width + w + 1 > columns {
            break;
        }
        width += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `text` broken into lines of at most `width` columns, where Unicode allows a break (at spaces, between
/// CJK characters, never before closing punctuation); a word longer than a line is cut.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let options = textwrap::Options::new(width.max(1))
        .word_separator(textwrap::WordSeparator::UnicodeBreakProperties)
        .break_words(true);
    let mut lines: Vec<String> = textwrap::wrap(text, options)
        .into_iter()
        .map(|line| line.trim_end().to_string())
        .collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_of_wide_and_zero_width_characters() {
        assert_eq!(display_width("纯文本 stop"), 11);
        assert_eq!(
            display_width("e\u{301}"),
            1,
            "a combining accent takes no column"
        );
        assert_eq!(
            display_width("a\u{200b}b"),
            2,
            "a zero-width space takes none"
        );
        assert_eq!(display_width("🦀"), 2);
        assert_eq!(display_width("ｈｉ"), 4, "full-width Latin");
        assert_eq!(pad("单工具往返", 12), "单工具往返  ");
        assert_eq!(pad("abc", 2), "abc");
    }

    #[test]
    fn cutting_counts_columns_not_characters() {
        assert_eq!(cut("纯文本纯文本", 7), "纯文本…");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert!(display_width(&cut("🦀🦀🦀🦀", 5)) <= 5);
    }

    #[test]
    fn stripping_removes_colors_and_keeps_text() {
        let red = Paint(true).red("错误");
        assert_ne!(red, "错误");
        assert_eq!(strip_ansi(&red), "错误");
        assert_eq!(
            strip_ansi("\x1b[0m\x1b[1m\x1b[38;5;9merror\x1b[0m: x"),
            "error: x"
        );
    }
}
