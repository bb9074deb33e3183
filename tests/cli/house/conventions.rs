//! The command-line conventions users expect: shell completions, `--color` (and `NO_COLOR`) on every
//! command, help with examples, environment variables and exit codes, and summaries that count right.

use std::path::Path;

use crate::support::*;

#[test]
fn completions_for_each_shell() {
    let here = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef pi-course"),
        ("fish", "complete -c pi-course"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = run(here.path(), &["completions", shell]);
        assert!(out.status.success(), "{}", describe(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}:\n{script}");
        for word in ["grade", "practice", "skeleton", "color"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let out = run(here.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert_eq!(fs_count(here.path()), 0);
}

/// A script offers the course's own words where one is asked: the chapter's id to `practice`,
/// `skeleton` and `grade-class --chapter`, each Lab's number and slug to `grade --group`, `hint` and
/// `explain`; where the shell shows a word's description, it is the name in the learner's language.
#[test]
fn completions_offer_the_chapters_and_their_labs() {
    let here = tempfile::tempdir().unwrap();
    let manifest = chapter_manifest();
    let id = manifest["id"].as_str().unwrap();
    let groups = manifest["group"].as_array().unwrap();
    let words: Vec<&str> = groups
        .iter()
        .flat_map(|g| [g["lab"].as_str().unwrap(), g["slug"].as_str().unwrap()])
        .collect();
    assert!(words.len() >= 10, "{words:?}");
    let zsh = stdout(&run(here.path(), &["completions", "zsh", "--lang", "en"]));
    // The chapter, with its title, where practice, skeleton and grade-class ask for one.
    let title = manifest["title"]["en"].as_str().unwrap();
    let chapter = format!(":(({id}\\:\"{title}\"))");
    assert_eq!(zsh.matches(&chapter).count(), 3, "{zsh}");
    // Every Lab by number and by slug, with its name, where grade --group, hint and explain ask for one.
    for group in groups {
        let name = group["name"]["en"].as_str().unwrap();
        for word in [&group["lab"], &group["slug"]] {
            let offered = format!("{}\\:\"{name}", word.as_str().unwrap());
            assert!(zsh.matches(&offered).count() >= 3, "{offered} in\n{zsh}");
        }
    }
    // Bash and fish offer the same words. (PowerShell's script completes commands and flags only.)
    let bash = stdout(&run(here.path(), &["completions", "bash"]));
    let labs = words.join(" ");
    assert!(bash.matches(&labs).count() >= 3, "{labs} in\n{bash}");
    assert!(bash.contains(&format!("--help {id}\"")), "{bash}");
    let fish = stdout(&run(here.path(), &["completions", "fish"]));
    for word in &words {
        assert!(fish.contains(&format!("{word}\\t")), "fish lacks {word}");
    }
    // In Chinese, the names are the Chinese ones.
    let zh = stdout(&run(here.path(), &["completions", "fish", "--lang", "zh"]));
    for group in groups {
        let name = group["name"]["zh"].as_str().unwrap();
        assert!(zh.contains(name), "{name} in\n{zh}");
    }
    // The words are offered, never required: a group named by its name still grades (the command line
    // parses as before).
    let out = run(
        here.path(),
        &["grade", "--group", "plain-text stop", ".", "--lang", "en"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr(&out).contains("is not a practice directory"),
        "{}",
        describe(&out)
    );
    assert_eq!(fs_count(here.path()), 0);
}

fn fs_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// An escape that sets a color (`ESC [ ... m`), as opposed to moving the cursor.
fn has_color(text: &str) -> bool {
    text.split("\x1b[").skip(1).any(|rest| {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        end.is_some_and(|i| rest[i..].starts_with('m'))
    })
}

#[test]
fn color_always_never_and_auto_with_no_color() {
    let (_guard, dir) = practice();
    // Piped: auto gives no color, always does, never does not.
    let piped = |args: &[&str]| stdout(&pi_course(&dir).args(args).output().unwrap());
    assert!(!has_color(&piped(&["grade"])));
    assert!(has_color(&piped(&["grade", "--color", "always"])));
    assert!(!has_color(&piped(&["grade", "--color", "never"])));
    // --color always wins over NO_COLOR too.
    let out = pi_course(&dir)
        .env("NO_COLOR", "1")
        .args(["grade", "--color=always", "--lang", "en"])
        .output()
        .unwrap();
    assert!(has_color(&stdout(&out)), "{}", describe(&out));
    // On a terminal: auto colors, unless NO_COLOR is set; never does not; spinner included.
    let mut auto = pi_course(&dir);
    auto.arg("grade");
    assert!(has_color(&on_a_terminal(auto)));
    let mut no_color = pi_course(&dir);
    no_color.env("NO_COLOR", "1").arg("grade");
    let text = on_a_terminal(no_color);
    assert!(!has_color(&text), "{text:?}");
    assert!(text.contains("7.1"), "{text}");
    let mut never = pi_course(&dir);
    never.args(["--color", "never", "grade"]);
    assert!(!has_color(&on_a_terminal(never)));
    // Every command takes it.
    for args in [
        &["status", "--color", "never"][..],
        &["hint", "--color", "always"],
        &["list", "--color", "auto"],
        &["skeleton", "07", "--color", "never"],
        &["completions", "bash", "--color", "never"],
    ] {
        let out = pi_course(&dir).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}\n{}", describe(&out));
    }
    let out = run(&dir, &["status", "--color", "sometimes"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
}

#[test]
fn help_gives_examples_environment_and_exit_codes_in_both_languages() {
    let here = tempfile::tempdir().unwrap();
    for (lang, words) in [
        (
            "zh",
            [
                "示例：",
                "环境变量：",
                "PI_COURSE_CACHE",
                "NO_COLOR",
                "退出码：",
            ],
        ),
        (
            "en",
            [
                "Examples:",
                "Environment:",
                "PI_COURSE_CACHE",
                "NO_COLOR",
                "Exit status:",
            ],
        ),
    ] {
        let out = run(here.path(), &["--help", "--lang", lang]);
        assert!(out.status.success(), "{}", describe(&out));
        for word in words {
            assert!(stdout(&out).contains(word), "{word:?}\n{}", describe(&out));
        }
        assert!(
            stdout(&out).contains("pi-course skeleton 07"),
            "{}",
            describe(&out)
        );
    }
    let en = pi_course(here.path())
        .env("PI_COURSE_LANG", "en")
        .arg("--help")
        .output()
        .unwrap();
    assert!(stdout(&en).contains("Exit status:"), "{}", describe(&en));
}

#[test]
fn one_of_a_thing_is_counted_as_one() {
    let (_guard, dir) = practice();
    // One group chosen, failing.
    for (lang, wanted, unwanted) in [
        ("zh", "所选的 1 组未通过", "通过 0/1 组"),
        ("en", "The one group chosen did not pass", "0 of 1 groups"),
    ] {
        let out = grade(&dir, &["--lang", lang, "-g", "7.1"]);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(stdout(&out).contains(wanted), "{}", describe(&out));
        assert!(!stdout(&out).contains(unwanted), "{}", describe(&out));
    }
    // One compile error.
    let skeleton = std::fs::read_to_string(dir.join("src/agent_loop.rs")).unwrap();
    write_loop(
        &dir,
        &format!("{skeleton}\nfn one_error() -> u32 {{ \"not a number\" }}\n"),
    );
    for (lang, wanted, unwanted) in [
        ("zh", "有 1 个错误", "（1 个错误）"),
        ("en", "(1 error)", "1 errors"),
    ] {
        let out = grade(&dir, &["--lang", lang]);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(stdout(&out).contains(wanted), "{}", describe(&out));
        assert!(!stdout(&out).contains(unwanted), "{}", describe(&out));
    }
}

#[test]
fn clap_checks_the_limits_and_reads_the_environment() {
    let (_guard, dir) = practice();
    for flag in ["--timeout", "--build-timeout"] {
        let out = grade(&dir, &[flag, "0"]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(stderr(&out).contains(flag), "{}", describe(&out));
        assert!(out.stdout.is_empty(), "{}", describe(&out));
    }
    // As a document when one was asked for.
    let out = grade(&dir, &["--format", "json", "--timeout", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["status"], "error", "{json:#}");
    assert!(
        json["message"].as_str().unwrap().contains("--timeout"),
        "{json:#}"
    );
    // PI_COURSE_LANG: a locale counts; an empty one is unset; another language is refused.
    let list = |value: &str| {
        pi_course(&dir)
            .env("PI_COURSE_LANG", value)
            .arg("list")
            .output()
            .unwrap()
    };
    assert!(stdout(&list("en_US.UTF-8")).contains("plain-text stop"));
    assert!(stdout(&list("")).contains("纯文本 stop"));
    let out = list("fr");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr(&out).contains("PI_COURSE_LANG"),
        "{}",
        describe(&out)
    );
    // --cache and PI_COURSE_CACHE are the same setting: a relative one is refused either way.
    let out = grade(&dir, &["--cache", "relative", "--lang", "en"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(stderr(&out).contains("relative path"), "{}", describe(&out));
    let help = run(&dir, &["grade", "--help"]);
    assert!(
        stdout(&help).contains("PI_COURSE_CACHE"),
        "{}",
        describe(&help)
    );
}

#[test]
fn failure_messages_fit_the_terminal_and_stay_whole_in_a_pipe() {
    use unicode_width::UnicodeWidthStr;
    let (_guard, dir) = practice();
    // The pseudo-terminal is 100 columns wide.
    let mut command = pi_course(&dir);
    command.args(["grade", "--color", "never"]);
    let text = on_a_terminal(command);
    let messages: Vec<&str> = text
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.starts_with("      ") && !l.contains('\x1b'))
        .collect();
    assert!(!messages.is_empty(), "{text}");
    for line in &messages {
        assert!(line.width() <= 100, "{} columns: {line}", line.width());
    }
    assert!(messages.iter().any(|l| l.ends_with('…')), "{text}");
    // Piped, the same message is whole.
    let piped = stdout(&grade(&dir, &[]));
    assert!(
        piped
            .lines()
            .any(|l| l.starts_with("      ") && l.width() > 100),
        "{piped}"
    );
}
