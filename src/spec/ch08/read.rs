//! Lab 8.1, `read`: what a read of a file's text may return, as the chapter fixes it (docs/chapters/
//! 08-coding-tools.md, R8.1). A window of whole, numbered lines from a 1-based `offset`, at most
//! `limit` and `maxReadLines` of them, cut to `maxReadBytes` with the continuation hint counted, never
//! in the middle of a line.
//!
//! Where the chapter is silent, every reading it leaves open is allowed, and [`outcomes`] returns each
//! distinct outcome they give:
//! - what a line is (`line-split`): the text split at every `\n` (so `"x\n"` has two lines, the last
//!   empty, and an empty file one empty line), or lines that a `\n` ends (`"x\n"` has one line, an
//!   empty file none);
//! - the window that ends at the last line (`end-of-file-fit`): it carries no hint, so it may fit where
//!   a shorter one with a hint does not; a read may take it, or stop at the first window that does not
//!   fit.

/// What the learner's `read` is given besides the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The first line to show, 1-based; `None`: 1.
    pub offset: Option<usize>,
    /// The most lines to show; `None`: `max_lines`. Never more than `max_lines`.
    pub limit: Option<usize>,
    /// `maxReadBytes`: the whole text returned, hint included, in UTF-8 bytes.
    pub max_bytes: usize,
    /// `maxReadLines`.
    pub max_lines: usize,
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The window shown, and the details of the same observation.
    Shown { content: String, details: Details },
    /// `offset` lies past the file's last line (the file has `lines`).
    OffsetOutOfRange { offset: usize, lines: usize },
    /// Not even the first line from `start` fits in `max_bytes`, with the hint it needs.
    TooSmall { max_bytes: usize, start: usize },
}

/// `ReadDetails`, as the chapter names its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Details {
    /// UTF-8 bytes of the whole file.
    pub bytes: usize,
    /// Lines of the whole file.
    pub lines: usize,
    pub start_line: usize,
    /// The last line shown.
    pub end_line: usize,
    /// More lines follow the window.
    pub truncated: bool,
}

/// The ways the chapter lets a file be cut into lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lines {
    /// Every `\n` separates two lines.
    Split,
    /// Every `\n` ends a line; text after the last one is a line too.
    Terminated,
}

/// Every outcome the chapter allows for reading `text` with `request`, without repeats; the first is
/// the course's own reading (lines split at every `\n`, the longest window that fits).
pub fn outcomes(text: &str, request: Request) -> Vec<Outcome> {
    let mut all = Vec::new();
    for lines in [Lines::Split, Lines::Terminated] {
        for last_fit in [true, false] {
            let outcome = read(text, request, lines, last_fit);
            if !all.contains(&outcome) {
                all.push(outcome);
            }
        }
    }
    all
}

/// A line as a read shows it: its number right-aligned in four columns, `│`, a space, its text.
pub fn numbered(number: usize, line: &str) -> String {
    format!("{number:>4}│ {line}")
}

/// The hint after a window of lines `start..=end` of a file of `lines` lines that goes on after it.
pub fn hint(start: usize, end: usize, lines: usize) -> String {
    format!(
        "\n\n[已显示第 {start}-{end} 行，共 {lines} 行；继续读取：offset={}]",
        end + 1
    )
}

fn read(text: &str, request: Request, lines: Lines, last_fit: bool) -> Outcome {
    let all: Vec<&str> = match lines {
        Lines::Split => text.split('\n').collect(),
        Lines::Terminated => terminated_lines(text),
    };
    let n = all.len();
    let start = request.offset.unwrap_or(1);
    if start == 0 || start > n {
        return Outcome::OffsetOutOfRange {
            offset: start,
            lines: n,
        };
    }
    let window = request
        .limit
        .unwrap_or(request.max_lines)
        .min(request.max_lines);
    let most = window.min(n - start + 1);
    let mut body = String::new();
    let mut shown = None;
    for k in 1..=most {
        let end = start + k - 1;
        if k > 1 {
            body.push('\n');
        }
        body.push_str(&numbered(end, all[end - 1]));
        let text = match end < n {
            true => format!("{body}{}", hint(start, end, n)),
            false => body.clone(),
        };
        if text.len() <= request.max_bytes {
            shown = Some((end, text));
        } else if !last_fit {
            break;
        }
    }
    match shown {
        None => Outcome::TooSmall {
            max_bytes: request.max_bytes,
            start,
        },
        Some((end, content)) => Outcome::Shown {
            content,
            details: Details {
                bytes: text.len(),
                lines: n,
                start_line: start,
                end_line: end,
                truncated: end < n,
            },
        },
    }
}

/// The lines of a text whose every `\n` ends one (`str::lines` would also take a `\r` off).
fn terminated_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(offset: Option<usize>, max_bytes: usize, max_lines: usize) -> Request {
        Request {
            offset,
            limit: None,
            max_bytes,
            max_lines,
        }
    }

    fn shown(content: &str, bytes: usize, lines: usize, s: usize, e: usize) -> Outcome {
        Outcome::Shown {
            content: content.to_string(),
            details: Details {
                bytes,
                lines,
                start_line: s,
                end_line: e,
                truncated: e < lines,
            },
        }
    }

    const DEFAULT: (usize, usize) = (48_000, 240);

    #[test]
    fn the_chapters_own_reads() {
        let (bytes, lines) = DEFAULT;
        assert_eq!(
            outcomes("status: draft", request(None, bytes, lines)),
            [shown("   1│ status: draft", 13, 1, 1, 1)]
        );
        let two = "status: done\ncheck: pending";
        let first = outcomes(two, request(None, bytes, 1));
        assert_eq!(
            first,
            [shown(
                "   1│ status: done\n\n[已显示第 1-1 行，共 2 行；继续读取：offset=2]",
                27,
                2,
                1,
                1
            )]
        );
        let Outcome::Shown { content, .. } = &first[0] else {
            unreachable!()
        };
        assert_eq!(content.len(), 82);
        assert_eq!(
            outcomes(two, request(Some(2), bytes, 1)),
            [shown("   2│ check: pending", 27, 2, 2, 2)]
        );
    }

    #[test]
    fn a_limit_shortens_the_window_and_never_widens_it() {
        let four = "one\ntwo\nthree\nfour";
        let wide = Request {
            offset: Some(2),
            limit: Some(9),
            max_bytes: 48_000,
            max_lines: 2,
        };
        let want = shown(
            "   2│ two\n   3│ three\n\n[已显示第 2-3 行，共 4 行；继续读取：offset=4]",
            18,
            4,
            2,
            3,
        );
        assert_eq!(outcomes(four, wide), [want]);
        let narrow = Request {
            limit: Some(1),
            max_lines: 240,
            ..wide
        };
        assert_eq!(
            outcomes(four, narrow),
            [shown(
                "   2│ two\n\n[已显示第 2-2 行，共 4 行；继续读取：offset=3]",
                18,
                4,
                2,
                2
            )]
        );
        assert_eq!(
            outcomes(four, request(Some(5), 48_000, 240)),
            [Outcome::OffsetOutOfRange {
                offset: 5,
                lines: 4
            }]
        );
        assert_eq!(
            outcomes(four, request(Some(4), 48_000, 240)),
            [shown("   4│ four", 18, 4, 4, 4)]
        );
    }

    #[test]
    fn the_byte_cap_counts_the_hint_and_never_cuts_a_line() {
        let text = format!("alpha\n{}\ncharlie", "b".repeat(200));
        let first = outcomes(&text, request(None, 120, 240));
        let hint = "\n\n[已显示第 1-1 行，共 3 行；继续读取：offset=2]";
        assert_eq!(hint.len(), 62);
        assert_eq!(first, [shown(&format!("   1│ alpha{hint}"), 214, 3, 1, 1)]);
        let rest = outcomes(&text, request(Some(2), 400, 240));
        let want = format!("   2│ {}\n   3│ charlie", "b".repeat(200));
        assert_eq!(want.len(), 224);
        assert_eq!(rest, [shown(&want, 214, 3, 2, 3)]);
        // One line longer than the cap: no window at all, at that offset, ever.
        let wide = "界".repeat(100);
        assert_eq!(
            outcomes(&wide, request(None, 64, 240)),
            [Outcome::TooSmall {
                max_bytes: 64,
                start: 1
            }]
        );
        // The fit is exact: a cap of the window's own size shows it, one byte less does not.
        assert_eq!(
            outcomes(&text, request(None, 75, 240)),
            [shown(&format!("   1│ alpha{hint}"), 214, 3, 1, 1)]
        );
        assert_eq!(
            outcomes(&text, request(None, 74, 240)),
            [Outcome::TooSmall {
                max_bytes: 74,
                start: 1
            }]
        );
    }

    #[test]
    fn the_window_to_the_end_needs_no_hint_and_the_chapter_lets_a_read_take_it_or_stop_before() {
        let both = outcomes("a\nb", request(None, 30, 240));
        assert_eq!(
            both,
            [
                shown("   1│ a\n   2│ b", 3, 2, 1, 2),
                Outcome::TooSmall {
                    max_bytes: 30,
                    start: 1
                }
            ]
        );
        // With one line a window there is no window to the end to take.
        assert_eq!(
            outcomes("a\nb", request(None, 30, 1)),
            [Outcome::TooSmall {
                max_bytes: 30,
                start: 1
            }]
        );
    }

    #[test]
    fn what_a_line_is_the_chapter_leaves_open() {
        let (bytes, lines) = DEFAULT;
        assert_eq!(
            outcomes("x\n", request(None, bytes, lines)),
            [
                shown("   1│ x\n   2│ ", 2, 2, 1, 2),
                shown("   1│ x", 2, 1, 1, 1)
            ]
        );
        assert_eq!(
            outcomes("", request(None, bytes, lines)),
            [
                shown("   1│ ", 0, 1, 1, 1),
                Outcome::OffsetOutOfRange {
                    offset: 1,
                    lines: 0
                }
            ]
        );
        // No newline at the end: one reading only.
        assert_eq!(outcomes("x\ny", request(None, bytes, lines)).len(), 1);
        // A carriage return is part of its line.
        assert_eq!(
            outcomes("x\r\ny", request(None, bytes, lines)),
            [shown("   1│ x\r\n   2│ y", 4, 2, 1, 2)]
        );
    }

    #[test]
    fn reading_on_from_the_hint_neither_skips_nor_repeats_a_line() {
        // Every file of up to 12 short lines (some wide), every cap from too small to enough, read from
        // line 1 on by the hints: each line shows once, in order, or the read stops at a line too long.
        for n in 1..=12usize {
            let text: Vec<String> = (1..=n)
                .map(|i| "界ab".repeat(i % 4) + &i.to_string())
                .collect();
            let text = text.join("\n");
            for max_bytes in (20..200).step_by(7) {
                for max_lines in 1..=4 {
                    let mut offset = 1;
                    let mut seen = Vec::new();
                    loop {
                        let outcome =
                            outcomes(&text, request(Some(offset), max_bytes, max_lines)).remove(0);
                        let Outcome::Shown { content, details } = outcome else {
                            break;
                        };
                        assert!(content.len() <= max_bytes, "{content:?}");
                        assert_eq!(details.start_line, offset);
                        seen.extend(details.start_line..=details.end_line);
                        if !details.truncated {
                            break;
                        }
                        assert!(content.ends_with(&format!("offset={}]", details.end_line + 1)));
                        offset = details.end_line + 1;
                    }
                    let expected: Vec<usize> = (1..=seen.len()).collect();
                    assert_eq!(seen, expected, "{n} lines, {max_bytes} bytes, {max_lines}");
                }
            }
        }
    }
}
