//! Lab 8.5, `bash`, where its result follows from the command alone (docs/chapters/08-coding-tools.md,
//! R8.5): the guard that refuses a command before anything starts, and how output past the budget is
//! cut. What a process does over time (exit codes, the timeout, an abort) is the driver's to observe.

/// What the guard must do with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// An absolute path, `../` or `~/` appears in it as a word of its own: refused, nothing started.
    Refuse,
    /// No path appears in it at all: it runs.
    Run,
    /// A path may be hidden in it (`a/../b`, a quoted `"/etc"`, `>../x`): the chapter calls the guard a
    /// limited string check and does not say which of these it must see, so either is right.
    Either,
}

/// The marker that ends cut output.
pub const CUT: &str = "… [输出已截断]";

/// What the chapter's guard does with `command`. A word that starts with `/`, `~/` or `../` (at the
/// start, or after a space or one of `;`, `&`, `|`) is a path it must see. A path that starts inside a
/// word (`a/../b`, `"/etc"`, `>../x`, `x=~/y`) it may see or not. A command with neither (`./x`,
/// `src/lib.rs`, `~user`) names no absolute path, `../` or `~/`, and must run.
pub fn guard(command: &str) -> Guard {
    let mut previous: Option<char> = None;
    let mut hidden = false;
    for (i, c) in command.char_indices() {
        let rest = &command[i..];
        let marker = rest.starts_with('/') || rest.starts_with("~/") || rest.starts_with("../");
        let word_start = previous.is_none_or(|p| p.is_whitespace() || matches!(p, ';' | '&' | '|'));
        if marker && word_start {
            return Guard::Refuse;
        }
        // Inside a word, `../` and `~/` are paths wherever they are; a `/` begins one unless it goes on
        // a relative path (`a/b`, `./x`, `a-b/c`).
        let relative =
            previous.is_some_and(|p| p.is_alphanumeric() || matches!(p, '.' | '_' | '-'));
        if rest.starts_with("../") || rest.starts_with("~/") || (c == '/' && !relative) {
            hidden = true;
        }
        previous = Some(c);
    }
    if hidden {
        Guard::Either
    } else {
        Guard::Run
    }
}

/// Every content the chapter allows for `output` (stdout and stderr together, as they arrived) under a
/// budget of `budget` bytes, and whether it was cut. Output that fits is returned whole; output that does
/// not ends with [`CUT`], after the longest prefix of whole characters that leaves room for it (with or
/// without a line break before the marker: the chapter shows none and fixes none).
pub fn cut(output: &str, budget: usize) -> (Vec<String>, bool) {
    if output.len() <= budget {
        return (vec![output.to_string()], false);
    }
    let mut contents = Vec::new();
    for marker in [format!("\n{CUT}"), CUT.to_string()] {
        let Some(room) = budget.checked_sub(marker.len()) else {
            continue;
        };
        let mut end = room.min(output.len());
        while !output.is_char_boundary(end) {
            end -= 1;
        }
        contents.push(format!("{}{marker}", &output[..end]));
    }
    (contents, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_sees_a_path_that_is_a_word_of_its_own() {
        for refused in [
            "printf escaped > ../name",
            "printf escaped > /abs/name",
            "/bin/ls",
            "cat ~/notes",
            "ls;/bin/ls",
            "x&&/y",
            "a|../b",
            "echo\t/tmp",
        ] {
            assert_eq!(guard(refused), Guard::Refuse, "{refused}");
        }
        for runs in [
            "printf 'ok\\n'; pwd",
            "echo verified",
            "printf 'bad\\n' >&2; exit 7",
            "ls -la .",
            "cat ./notes.txt src/lib.rs",
            "echo ~user",
            "",
        ] {
            assert_eq!(guard(runs), Guard::Run, "{runs}");
        }
        for either in [
            "cat a/../b",
            "cat \"/etc/passwd\"",
            "cat >../x",
            "x=~/y",
            "curl https://example.com",
        ] {
            assert_eq!(guard(either), Guard::Either, "{either}");
        }
    }

    #[test]
    fn output_past_the_budget_is_cut_to_whole_characters_and_the_marker() {
        assert_eq!(CUT.len(), 21);
        let (whole, cut_) = cut("ok\n", 64);
        assert_eq!((whole, cut_), (vec!["ok\n".to_string()], false));
        // Exactly the budget is not cut.
        let exact = "x".repeat(64);
        assert_eq!(cut(&exact, 64), (vec![exact.clone()], false));
        let (contents, was_cut) = cut(&"x".repeat(65), 64);
        assert!(was_cut);
        assert_eq!(
            contents,
            [
                format!("{}\n{CUT}", "x".repeat(42)),
                format!("{}{CUT}", "x".repeat(43))
            ]
        );
        for content in &contents {
            assert_eq!(content.len(), 64);
        }
        // A character is never split: 3-byte characters fill what whole ones can.
        let (contents, _) = cut(&"界".repeat(40), 64);
        assert_eq!(contents[0], format!("{}\n{CUT}", "界".repeat(14)));
        assert_eq!(contents[1], format!("{}{CUT}", "界".repeat(14)));
        assert!(contents.iter().all(|c| c.len() <= 64));
    }
}
