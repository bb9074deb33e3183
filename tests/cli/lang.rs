//! A practice directory remembers its language: `practice --lang en` records it, and every command run
//! on the directory speaks it (grade in every format, the tests' messages, status, hint, explain,
//! skeleton, bad input, the class report's page of that learner) unless `--lang` or `PI_COURSE_LANG`
//! says otherwise, in that order. The recorded language is the learner's to edit, so it only ever
//! chooses words: verdicts are the same in every language, and a directory stays gradable after its
//! learner switches language, skeleton and all.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::*;
use serde_json::Value;

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303f}' | '\u{3400}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// Both streams of a command, which must have ended with one of `codes`.
fn said(out: &Output, codes: &[i32]) -> String {
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "{}",
        describe(out)
    );
    format!("{}{}", stdout(out), stderr(out))
}

/// A temporary parent with a practice directory `name` made with `args` after `practice 07 NAME`.
fn made(parent: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let mut all = vec!["practice", "07", name];
    all.extend_from_slice(args);
    let out = run(parent, &all);
    let text = said(&out, &[0]);
    assert!(out.stderr.is_empty(), "{text}");
    parent.join(name)
}

fn temp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("lang-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Everything the learner's commands say in `dir` (run inside it, no `--lang`), with `extra` args and
/// environment: a human grade, a JSON grade (every test message in it), a JUnit report, one group, status,
/// hint (the first Lab, then one by number), explain, the skeleton, and a bad `--group`.
fn everything(dir: &Path, extra: &[&str], env: Option<&str>) -> Vec<(String, String)> {
    let command = |args: &[&str]| {
        let mut c = pi_course(dir);
        c.args(args).args(extra);
        if let Some(lang) = env {
            c.env("PI_COURSE_LANG", lang);
        }
        c.output().unwrap()
    };
    let junit = dir.join("../report.xml");
    let junit_arg = junit.display().to_string();
    let mut said_by = Vec::new();
    let mut keep = |what: &str, out: Output, codes: &[i32]| {
        said_by.push((what.to_string(), said(&out, codes)));
    };
    keep("grade", command(&["grade"]), &[1]);
    let json = command(&["grade", "--format", "json", "--junit", &junit_arg]);
    assert_eq!(json.status.code(), Some(1), "{}", describe(&json));
    said_by.push(("grade --format json".into(), stdout(&json)));
    said_by.push(("grade --format json, stderr".into(), stderr(&json)));
    // The report carries each group's Chinese name as a property in every language (`name.zh`): an
    // identifier for CI systems, like a slug, not a text for the learner.
    let report = fs::read_to_string(&junit).unwrap();
    let report: Vec<&str> = report
        .lines()
        .filter(|l| !l.contains("<property name=\"name.zh\""))
        .collect();
    said_by.push(("the JUnit report".into(), report.join("\n")));
    let mut keep = |what: &str, out: Output, codes: &[i32]| {
        said_by.push((what.to_string(), said(&out, codes)));
    };
    keep(
        "grade --group 7.2",
        command(&["grade", "--group", "7.2"]),
        &[0, 1],
    );
    keep("status", command(&["status"]), &[0]);
    keep("hint", command(&["hint"]), &[0]);
    keep("hint 7.3", command(&["hint", "7.3"]), &[0]);
    keep("explain", command(&["explain"]), &[0]);
    keep("skeleton 07", command(&["skeleton", "07"]), &[0]);
    keep(
        "grade --group 9.9",
        command(&["grade", "--group", "9.9"]),
        &[2],
    );
    said_by
}

/// The test messages of a JSON grade report.
fn test_messages(report: &str) -> Vec<String> {
    let json: Value = serde_json::from_str(report).unwrap_or_else(|e| {
        panic!("not one JSON document ({e}):\n{report}");
    });
    report_tests(&json)
        .into_iter()
        .filter_map(|(_, t)| t["message"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_directory_made_in_english_speaks_english_in_every_command_and_test_message() {
    let tmp = temp();
    let dir = made(tmp.path(), "en", &["--lang", "en"]);
    let metadata = fs::read_to_string(dir.join(".pi-course/practice.toml")).unwrap();
    assert!(metadata.contains("lang = \"en\""), "{metadata}");
    for file in ["src/agent_loop.rs", "GUIDE.en.md"] {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        assert!(
            !has_cjk(&text),
            "{file} of an English directory holds Chinese"
        );
    }

    let all = everything(&dir, &[], None);
    let (_, json) = &all[1];
    let messages = test_messages(json);
    assert!(
        messages.len() > 40,
        "every test fails on the skeleton: {json}"
    );
    assert!(
        messages.iter().all(|m| m.contains("unfinished part")),
        "the skeleton's failures are its placeholders: {messages:#?}"
    );
    for (what, text) in &all {
        assert!(!has_cjk(text), "`{what}` in an English directory:\n{text}");
        assert!(
            !text.trim().is_empty() || what.ends_with("stderr"),
            "`{what}` said nothing"
        );
    }

    // The default is Chinese, in every command.
    let dir = made(tmp.path(), "zh", &[]);
    let metadata = fs::read_to_string(dir.join(".pi-course/practice.toml")).unwrap();
    assert!(metadata.contains("lang = \"zh\""), "{metadata}");
    for (what, text) in everything(&dir, &[], None) {
        if what.ends_with("stderr") {
            continue;
        }
        assert!(has_cjk(&text), "`{what}` in a Chinese directory:\n{text}");
    }
}

#[test]
fn the_command_line_and_the_environment_override_the_directory_in_that_order() {
    let tmp = temp();
    let en = made(tmp.path(), "en", &["--lang", "en"]);
    let zh = made(tmp.path(), "zh", &[]);
    // A loop without todo!()s: a skeleton's todo!() is the learner's own text, quoted as it is, in the
    // language of the skeleton the directory was made with.
    let code = mutant("executor-error-propagated");
    write_loop(&en, &code);
    write_loop(&zh, &code);
    for (dir, extra, env, chinese) in [
        (&en, &["--lang", "zh"][..], None, true),
        (&en, &[][..], Some("zh"), true),
        (&en, &["--lang", "en"][..], Some("zh"), false),
        (&zh, &["--lang", "en"][..], None, false),
        (&zh, &[][..], Some("en"), false),
        (&zh, &["--lang", "zh"][..], Some("en"), true),
    ] {
        for (what, text) in everything(dir, extra, env) {
            if what.ends_with("stderr") {
                assert!(!has_cjk(&text), "{what}: {text}");
                continue;
            }
            assert_eq!(
                has_cjk(&text),
                chinese,
                "`{what}` in {} with {extra:?}, PI_COURSE_LANG={env:?}:\n{text}",
                dir.display()
            );
        }
    }
}

/// Rewrites the `lang` line of `dir`'s metadata: `None` removes it, as a directory of an earlier release
/// has none.
fn set_lang_line(dir: &Path, line: Option<&str>) {
    let file = dir.join(".pi-course/practice.toml");
    let text = fs::read_to_string(&file).unwrap();
    let mut kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("lang =")).collect();
    if let Some(line) = line {
        kept.insert(1, line);
    }
    fs::write(&file, kept.join("\n") + "\n").unwrap();
}

/// Each group's status and each test's, by name: the verdicts, without their words.
fn verdicts(dir: &Path, args: &[&str]) -> Vec<(String, String)> {
    let out = grade(dir, &[&["--format", "json", "--seed", "7"], args].concat());
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not one JSON document ({e})\n{}", describe(&out));
    });
    assert_ne!(json["status"], "error", "{json:#}");
    let mut all: Vec<(String, String)> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["slug"].to_string(), g["status"].to_string()))
        .collect();
    all.extend(
        report_tests(&json)
            .into_iter()
            .map(|(_, t)| (t["name"].to_string(), t["status"].to_string())),
    );
    all
}

#[test]
fn the_language_never_changes_a_verdict_and_any_recorded_value_is_gradable() {
    let tmp = temp();
    let en = made(tmp.path(), "en", &["--lang", "en"]);
    let zh = made(tmp.path(), "zh", &[]);
    // A loop half right: some groups pass, some fail.
    let code = mutant("executor-error-propagated");
    write_loop(&en, &code);
    write_loop(&zh, &code);
    let want = verdicts(&zh, &[]);
    assert!(
        want.iter().any(|(_, s)| s == "\"pass\"") && want.iter().any(|(_, s)| s == "\"fail\""),
        "{want:?}"
    );
    assert_eq!(verdicts(&en, &[]), want, "English verdicts differ");
    assert_eq!(verdicts(&en, &["--lang", "zh"]), want);

    // A directory of an earlier release has no language: Chinese, as before.
    set_lang_line(&en, None);
    let out = run(&en, &["status"]);
    assert!(has_cjk(&said(&out, &[0])), "{}", describe(&out));
    assert_eq!(verdicts(&en, &[]), want);
    // Whatever the learner writes there, the directory is still graded, the same; only a language this
    // pi-course knows is spoken.
    for line in [
        "lang = \"fr\"",
        "lang = 5",
        "lang = [\"en\"]",
        "lang = { code = \"en\" }",
        "lang = \"\"",
    ] {
        set_lang_line(&en, Some(line));
        assert_eq!(verdicts(&en, &[]), want, "{line}");
        let out = run(&en, &["status"]);
        assert!(has_cjk(&said(&out, &[0])), "{line}: {}", describe(&out));
    }
    set_lang_line(&en, Some("lang = \"EN\""));
    let out = run(&en, &["status"]);
    assert!(!has_cjk(&said(&out, &[0])), "{}", describe(&out));
}

#[test]
fn a_directory_stays_gradable_after_its_learner_switches_language() {
    let tmp = temp();
    let en = made(tmp.path(), "en", &["--lang", "en"]);
    let zh = made(tmp.path(), "zh", &[]);
    let want = verdicts(&zh, &[]);
    // The learner of the English directory switches to Chinese: the Chinese skeleton (with its Chinese
    // surface marker) and the recorded language.
    let out = run(&en, &["skeleton", "07", "--lang", "zh"]);
    let chinese = said(&out, &[0]);
    assert!(chinese.contains("以上是公共表面"), "{chinese}");
    write_loop(&en, &chinese);
    set_lang_line(&en, Some("lang = \"zh\""));
    assert_eq!(verdicts(&en, &[]), want);
    assert!(has_cjk(&said(&run(&en, &["status"]), &[0])));
    // And the other way round; `skeleton` inside a directory prints it in the directory's language.
    set_lang_line(&zh, Some("lang = \"en\""));
    let out = run(&zh, &["skeleton", "07"]);
    let english = said(&out, &[0]);
    assert!(english.contains("Above is the public surface") && !has_cjk(&english));
    write_loop(&zh, &english);
    assert_eq!(verdicts(&zh, &[]), want);
    let (_, json) = grade_json_raw(&zh);
    for message in test_messages(&json) {
        assert!(!has_cjk(&message), "{message}");
    }
}

fn grade_json_raw(dir: &Path) -> (i32, String) {
    let out = grade(dir, &["--format", "json"]);
    (out.status.code().unwrap(), stdout(&out))
}

/// The class report: each learner's page (and report) in the language of their directory, unless the
/// instructor chose one; the summary in the instructor's.
#[test]
fn a_class_grades_each_learners_page_in_their_language() {
    let tmp = temp();
    let submissions = tmp.path().join("submissions");
    fs::create_dir(&submissions).unwrap();
    made(&submissions, "alice", &["--lang", "en"]);
    made(&submissions, "bob", &[]);
    let page = |results: &Path, name: &str| {
        fs::read_to_string(results.join(format!("learners/{name}.html"))).unwrap()
    };
    let report = |results: &Path, name: &str| {
        fs::read_to_string(results.join(format!("learners/{name}.json"))).unwrap()
    };

    let results = tmp.path().join("results");
    let out = grade_class(tmp.path(), &submissions, &results, &[]);
    assert!(has_cjk(&said(&out, &[0])), "the instructor's summary");
    assert!(
        !has_cjk(&page(&results, "alice")),
        "{}",
        page(&results, "alice")
    );
    assert!(!has_cjk(&report(&results, "alice")));
    assert!(has_cjk(&page(&results, "bob")));
    let messages = test_messages(&report(&results, "bob"));
    assert!(!messages.is_empty(), "bob's tests all failed");
    for message in &messages {
        assert!(has_cjk(message), "bob's Chinese page: {message}");
    }

    let results = tmp.path().join("results-zh");
    let out = grade_class(tmp.path(), &submissions, &results, &["--lang", "zh"]);
    said(&out, &[0]);
    assert!(has_cjk(&page(&results, "alice")));
    let messages = test_messages(&report(&results, "alice"));
    assert!(!messages.is_empty(), "alice's tests all failed");
    for message in &messages {
        assert!(has_cjk(message), "alice's page, in Chinese: {message}");
    }
}

/// A run of four or more plain English words in `text`: a sentence, where only names may stay English
/// (commands, flags, values, paths and placeholders break a run: they hold `-`, `/`, `.`, `<` or `_`;
/// so does a word that touches Chinese).
fn english_sentence(text: &str) -> Option<String> {
    for line in text.lines() {
        let mut run: Vec<&str> = Vec::new();
        // Only spaces join words into a sentence: a list of names joined with 、 is no sentence.
        for word in line.split_whitespace() {
            let plain = word.trim_matches(|c: char| ",:;()'\"".contains(c));
            if plain.len() >= 2 && plain.chars().all(|c| c.is_ascii_alphabetic()) {
                run.push(plain);
                if run.len() >= 4 {
                    return Some(format!("{:?} in {line:?}", run.join(" ")));
                }
            } else {
                run.clear();
            }
        }
    }
    None
}

/// clap's own English, which a Chinese help or usage error must not show.
const CLAP_WORDS: &[&str] = &[
    "Usage:",
    "Options:",
    "Arguments:",
    "Commands:",
    "[default:",
    "[env:",
    "possible values",
    "Print help",
    "error:",
    "tip:",
    "For more information",
];

/// The help and the usage errors speak the language of the directory they are run in, as every other
/// command does: `--lang`, then `PI_COURSE_LANG`, then the directory's, then Chinese. In Chinese nothing
/// is English but names: every description and argument's help, clap's headings, its notes on defaults
/// and values, and its errors.
#[test]
fn the_help_and_usage_errors_speak_the_directorys_language() {
    let tmp = temp();
    let en = made(tmp.path(), "en", &["--lang", "en"]);
    let zh = made(tmp.path(), "zh", &[]);
    let outside = tmp.path();
    let helps = |dir: &Path, extra: &[&str]| -> Vec<(String, String)> {
        let mut all = vec![vec!["--help"], vec!["-h"], vec!["help", "grade"]];
        all.extend(SUBCOMMANDS.iter().map(|s| vec![*s, "--help"]));
        all.into_iter()
            .map(|line| {
                // The language goes first: `help grade` takes no flags after it.
                let mut args = extra.to_vec();
                args.extend(line);
                let out = run(dir, &args);
                (args.join(" "), said(&out, &[0]))
            })
            .collect()
    };
    let errors = |dir: &Path, extra: &[&str]| -> Vec<(String, String)> {
        let lines: [&[&str]; 8] = [
            &["grade", "--bogus"],
            &["grade", "--timeout", "0"],
            &["grade", "--color", "purple"],
            &["grade", "--memory-limit", "3K"],
            &["frobnicate"],
            &["gradee"],
            &["grade-class", "subs", "--out", "res", "--shard", "4/4"],
            &["merge-class", "--out", "res"],
        ];
        lines
            .iter()
            .map(|line| {
                let mut args = extra.to_vec();
                args.extend_from_slice(line);
                let out = run(dir, &args);
                (args.join(" "), said(&out, &[2]))
            })
            .collect()
    };

    for (dir, extra, chinese) in [
        (zh.as_path(), &[][..], true),
        (outside, &[][..], true),
        (en.as_path(), &["--lang", "zh"][..], true),
        (en.as_path(), &[][..], false),
        (zh.as_path(), &["--lang", "en"][..], false),
    ] {
        let mut said = helps(dir, extra);
        said.extend(errors(dir, extra));
        for (what, text) in said {
            let context = format!("`pi-course {what}` in {}:\n{text}", dir.display());
            if chinese {
                assert!(has_cjk(&text), "{context}");
                for word in CLAP_WORDS {
                    assert!(!text.contains(word), "{word}: {context}");
                }
                if let Some(sentence) = english_sentence(&text) {
                    panic!("English {sentence}: {context}");
                }
            } else {
                assert!(!has_cjk(&text), "{context}");
            }
        }
    }

    // The attack on the detector: it finds an English sentence where there is one.
    assert!(english_sentence("错误：a time limit is at least one second").is_some());
    assert!(english_sentence("用法：pi-course grade [选项] [DIR]").is_none());
}
