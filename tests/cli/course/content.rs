//! The chapter content as a learner gets it: the skeleton and the reference compile without a warning
//! (clippy included), and the given course crate's own tests pass, in a real practice directory.

use std::path::Path;
use std::process::Command;

use crate::support::*;

/// cargo in `dir` with its own target under the test scratch space (shared by runs of this test).
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(args)
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("content-target"),
        )
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("cargo runs")
}

#[test]
fn skeleton_and_reference_are_warning_free_and_the_given_crate_passes_its_tests() {
    // One directory, edited in place, so the target is never shared between two directories: cargo
    // would judge one's artifacts fresh for the other.
    let (_tmp, dir) = practice();
    let clippy = [
        "clippy",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ];

    let out = cargo(&dir, &clippy);
    assert!(
        out.status.success(),
        "the skeleton has warnings\n{}",
        describe(&out)
    );

    let english =
        std::fs::read_to_string(chapter_dir().join("skeleton.en/src/agent_loop.rs")).unwrap();
    write_loop(&dir, &english);
    let out = cargo(&dir, &clippy);
    assert!(
        out.status.success(),
        "the English skeleton has warnings\n{}",
        describe(&out)
    );

    write_loop(&dir, &solution());
    let out = cargo(&dir, &clippy);
    assert!(
        out.status.success(),
        "the reference has warnings\n{}",
        describe(&out)
    );

    let out = cargo(&dir, &["test", "--locked", "-p", "pi-course-harness"]);
    assert!(
        out.status.success(),
        "the harness's own tests fail\n{}",
        describe(&out)
    );
    // The directory's copy of the judge crate: its tests pass there as in this repository.
    let out = cargo(&dir, &["test", "--locked", "-p", "pi-course-judge"]);
    assert!(
        out.status.success(),
        "the judge crate's tests fail in a practice directory\n{}",
        describe(&out)
    );
    let out = cargo(&dir, &["test", "--locked", "-p", "pi-course-base"]);
    assert!(
        out.status.success(),
        "the given course crate's tests fail\n{}",
        describe(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("test ") && l.ends_with(" ... ok")),
        "no course crate test ran\n{text}"
    );
}

/// The surface marker, in either language: the public surface ends where the first of them is.
const SURFACE_MARKERS: [&str; 2] = [
    "// 以上是公共表面：保持不变。",
    "// Above is the public surface: keep it as it is.",
];

/// Where the public surface of a loop ends: at its surface marker, in whichever language it has.
fn surface_end(code: &str) -> usize {
    SURFACE_MARKERS
        .iter()
        .filter_map(|marker| code.find(marker))
        .min()
        .expect("the surface ends with the marker comment")
}

/// A surface's code: its lines without the comments, which each language writes in its own words.
fn surface_code(code: &str) -> Vec<&str> {
    code[..surface_end(code)]
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect()
}

/// The skeletons (Chinese and English), the reference and every alternative loop start with the same
/// public surface, up to the marker that ends it: byte for byte where they share a language, the same
/// code line for line in the English skeleton, whose comments are English. The tests compile against
/// that surface: identical code keeps a learner's edits (and a fresh directory after a finished one)
/// from recompiling the whole test crate, and it proves the reference declares exactly what the
/// skeleton promises.
#[test]
fn skeleton_and_reference_share_the_public_surface() {
    let chapter = chapter_dir();
    let read = |p: &str| std::fs::read_to_string(chapter.join(p)).unwrap();
    let (skeleton, reference) = (
        read("skeleton/src/agent_loop.rs"),
        read("solution/src/agent_loop.rs"),
    );
    let end = surface_end;
    assert_eq!(
        &skeleton[..end(&skeleton)],
        &reference[..end(&reference)],
        "the skeleton and the reference declare different public surfaces"
    );
    let mut others = Vec::new();
    for entry in std::fs::read_dir(chapter.join("alternatives")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        others.push(format!("alternatives/{name}"));
    }
    assert!(!others.is_empty(), "no alternative loop");
    for other in others {
        let text = read(&other);
        assert_eq!(
            &text[..end(&text)],
            &skeleton[..end(&skeleton)],
            "{other} declares another public surface than the skeleton"
        );
    }
    let english = read("skeleton.en/src/agent_loop.rs");
    assert!(
        english.contains(SURFACE_MARKERS[1]) && !english.contains(SURFACE_MARKERS[0]),
        "the English skeleton's surface ends with the English marker"
    );
    assert_eq!(
        surface_code(&english),
        surface_code(&skeleton),
        "the English skeleton declares another public surface than the Chinese one"
    );
}

/// `practice --lang en` (or `PI_COURSE_LANG=en`) writes the English skeleton: its comments, marker and
/// `todo!()` texts are English only. Chinese stays the default. Grading does not care which
/// skeleton a directory was made with: both get the same verdict for every test, each failure naming
/// its Lab.
#[test]
fn the_english_skeleton_is_written_on_request_and_graded_like_the_chinese_one() {
    let chapter = chapter_dir();
    let english = std::fs::read(chapter.join("skeleton.en/src/agent_loop.rs")).unwrap();
    let chinese = std::fs::read(chapter.join("skeleton/src/agent_loop.rs")).unwrap();
    assert!(
        !String::from_utf8_lossy(&english).chars().any(is_cjk),
        "the English skeleton holds Chinese"
    );

    let tmp = tempfile::Builder::new()
        .prefix("content-lang-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let made = |name: &str, args: &[&str], env: Option<&str>| {
        let mut command = pi_course(tmp.path());
        command.args(["practice", "07", name]).args(args);
        if let Some(lang) = env {
            command.env("PI_COURSE_LANG", lang);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        let dir = tmp.path().join(name);
        let written = std::fs::read(dir.join("src/agent_loop.rs")).unwrap();
        (dir, written)
    };
    let (en_dir, written) = made("en", &["--lang", "en"], None);
    assert!(written == english, "--lang en wrote another skeleton");
    let (_, written) = made("en-env", &[], Some("en"));
    assert!(
        written == english,
        "PI_COURSE_LANG=en wrote another skeleton"
    );
    let (zh_dir, written) = made("zh", &[], None);
    assert!(
        written == chinese,
        "the default skeleton is not the Chinese one"
    );

    let verdicts = |dir: &Path| {
        let (code, json) = grade_json(dir, &[]);
        let mut tests = Vec::new();
        for g in json["groups"].as_array().unwrap() {
            for t in g["tests"].as_array().unwrap() {
                // Every test of the skeleton reaches Lab 7.1's todo!() first, and says so (quoting it,
                // in either language).
                let message = t["message"].as_str().unwrap_or("");
                assert!(
                    message.contains("Lab 7.1") && message.contains("not yet implemented: Lab 7.1"),
                    "{} names no unfinished Lab 7.1: {message}",
                    t["name"]
                );
                tests.push((t["name"].to_string(), t["status"].to_string()));
            }
        }
        (code, json["status"].to_string(), tests)
    };
    assert_eq!(
        verdicts(&en_dir),
        verdicts(&zh_dir),
        "the English skeleton is graded differently"
    );
}

/// Three English words in a row (std's own `not yet implemented` left out).
fn has_english(text: &str) -> bool {
    let text = text.replace("not yet implemented", "");
    let word = |w: &str| {
        let w = w.trim_end_matches([',', ':', ';', '.', ')', '?']);
        !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic() || c == '\'')
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(3).any(|w| w.iter().all(|x| word(x)))
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303f}' | '\u{4e00}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

/// The message of every failed test in `output`, as the harness prints it, without an assertion's values.
fn test_messages(output: &str) -> Vec<String> {
    // The harness prints each failure as `---- <test> ----` and its message, up to a blank line; an
    // assertion's `left:`/`right:` values are data, not text, and are left out.
    let mut messages = Vec::new();
    let mut lines = output.lines();
    while let Some(line) = lines.next() {
        if !(line.starts_with("---- ") && line.ends_with(" ----")) {
            continue;
        }
        let message: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.is_empty())
            .take_while(|l| !l.starts_with("  left:") && !l.starts_with(" left:"))
            .collect();
        messages.push(message.join("\n"));
    }
    messages
}

/// The chapter's tests speak the grade's language: `pi-course grade` sets `PI_COURSE_LANG`, and with
/// `en` no Chinese appears, with `zh` no English sentence; unset (a bare `cargo test`) gives both.
/// Checked on the skeleton (a todo!()), a hang, a driver's wait that never ends, and failed
/// assertions of several groups.
#[test]
fn failure_messages_speak_the_learners_language() {
    let (_tmp, dir) = practice();
    let hang = solution_starting_with("std::future::pending::<()>().await;");
    let skeleton = |path: &str| std::fs::read_to_string(chapter_dir().join(path)).unwrap();
    // A learner's own text (a todo!() of the skeleton) is quoted as it is: each language gets its own
    // skeleton here.
    let (english_skeleton, chinese_skeleton) = (
        skeleton("skeleton.en/src/agent_loop.rs"),
        skeleton("skeleton/src/agent_loop.rs"),
    );
    let same = |code: String| (code.clone(), code);
    let variants = [
        (
            "skeleton",
            (english_skeleton, chinese_skeleton),
            "plain_stop",
        ),
        ("hang", same(hang), "plain_stop"),
        (
            "tools-run-sequentially",
            same(mutant("tools-run-sequentially")),
            "concurrent_tools::both",
        ),
        (
            "signal-child-token",
            same(mutant("signal-child-token")),
            "single_tool",
        ),
        (
            "final-from-last-partial",
            same(mutant("final-from-last-partial")),
            "plain_stop",
        ),
        (
            "abort-repeats-assistant-message",
            same(mutant("abort-repeats-assistant-message")),
            "cancel_and_limits",
        ),
    ];
    for (name, (english_code, chinese_code), filter) in variants {
        let run = |code: &str, lang: Option<&str>| {
            write_loop(&dir, code);
            let mut command =
                Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
            command
                .args(["test", "--locked", "--test", "ch07", filter])
                .current_dir(&dir)
                .env(
                    "CARGO_TARGET_DIR",
                    Path::new(env!("CARGO_TARGET_TMPDIR")).join("content-target"),
                )
                .env("RUST_BACKTRACE", "0")
                .env_remove("PI_COURSE_LANG");
            if let Some(lang) = lang {
                command.env("PI_COURSE_LANG", lang);
            }
            let out = command.output().unwrap();
            assert!(!out.status.success(), "{name} passes {filter}");
            format!("{}{}", stdout(&out), stderr(&out))
        };

        let english = run(&english_code, Some("en"));
        let messages = test_messages(&english);
        assert!(
            !messages.is_empty(),
            "{name}: no test failed
{english}"
        );
        for message in &messages {
            assert!(
                !message.chars().any(is_cjk) && has_english(message),
                "{name}, PI_COURSE_LANG=en: {message}"
            );
        }
        let chinese = run(&chinese_code, Some("zh"));
        let messages = test_messages(&chinese);
        assert!(
            !messages.is_empty(),
            "{name}: no test failed
{chinese}"
        );
        for message in &messages {
            assert!(
                message.chars().any(is_cjk) && !has_english(message),
                "{name}, PI_COURSE_LANG=zh: {message}"
            );
        }
        let both = test_messages(&run(&chinese_code, None));
        assert!(
            both.iter().all(|m| m.chars().any(is_cjk) && has_english(m)),
            "{name}, PI_COURSE_LANG unset: {both:#?}"
        );
    }
}

/// In a fresh practice directory, rust-analyzer resolves every type the chapter names, from where the
/// learner sees it (the skeleton's re-export), to its declaration in the given `api/` crate: what
/// jump-to-definition in an editor does. Read from rust-analyzer's LSIF dump of the directory.
#[test]
fn jump_to_definition_reaches_every_type_the_chapter_names() {
    const OPT_OUT: &str = "PI_COURSE_TESTS_WITHOUT_RUST_ANALYZER";
    let version = Command::new("rust-analyzer").arg("--version").output();
    if !version.is_ok_and(|v| v.status.success()) {
        if std::env::var_os(OPT_OUT).is_some_and(|v| v == "1") {
            eprintln!("skipped: rust-analyzer is not installed ({OPT_OUT}=1)");
            return;
        }
        panic!(
            "rust-analyzer is not installed: run the tests with scripts/test.sh, which adds it \
             (`rustup component add rust-analyzer`), or set {OPT_OUT}=1 to skip this test"
        );
    }
    let (_tmp, dir) = practice();
    let out = Command::new("rust-analyzer")
        .arg("lsif")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let dump: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let by_id: std::collections::HashMap<u64, &serde_json::Value> = dump
        .iter()
        .map(|v| (v["id"].as_u64().unwrap(), v))
        .collect();
    let edges = |label: &str| {
        dump.iter()
            .filter(move |v| v["type"] == "edge" && v["label"] == label)
            .collect::<Vec<_>>()
    };
    let out_of = |label: &str, from: u64| -> Vec<u64> {
        edges(label)
            .into_iter()
            .filter(|e| e["outV"].as_u64() == Some(from))
            .flat_map(|e| match e["inV"].as_u64() {
                Some(one) => vec![one],
                None => e["inVs"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
                    .unwrap_or_default(),
            })
            .collect()
    };
    let document = |suffix: &str| {
        dump.iter()
            .find(|v| v["label"] == "document" && v["uri"].as_str().unwrap().ends_with(suffix))
            .map(|v| v["id"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("rust-analyzer saw no {suffix}"))
    };
    let skeleton = document("/src/agent_loop.rs");
    let api = document("/api/src/lib.rs");
    let ranges = out_of("contains", skeleton);
    let text = std::fs::read_to_string(dir.join("src/agent_loop.rs")).unwrap();
    let surface = &text[..text.find("Above is the public surface").unwrap()];
    for name in [
        "LoopEvent",
        "RunReason",
        "AgentRunResult",
        "AgentLoopOptions",
        "AgentContext",
        "SharedContext",
        "EventSink",
        "ToolExecutor",
        "DEFAULT_MAX_STEPS",
    ] {
        // Where the skeleton names it in its re-export.
        let at = surface
            .find(&format!(" {name},"))
            .or_else(|| surface.find(&format!(" {name}\n")))
            .unwrap_or_else(|| panic!("the skeleton does not re-export {name}"))
            + 1;
        let line = surface[..at].matches('\n').count() as u64;
        let column = (at - surface[..at].rfind('\n').map_or(0, |i| i + 1)) as u64;
        let range = ranges
            .iter()
            .find(|r| {
                let start = &by_id[r]["start"];
                start["line"].as_u64() == Some(line) && start["character"].as_u64() == Some(column)
            })
            .unwrap_or_else(|| panic!("rust-analyzer has no reference at {name}"));
        let mut targets = Vec::new();
        for set in out_of("next", *range).into_iter().chain([*range]) {
            for result in out_of("textDocument/definition", set) {
                for item in edges("item")
                    .into_iter()
                    .filter(|e| e["outV"].as_u64() == Some(result))
                {
                    targets.push(item["document"].as_u64().unwrap());
                }
            }
        }
        assert!(
            targets.contains(&api),
            "jump to definition of {name} does not reach api/src/lib.rs (targets: {targets:?})"
        );
    }
}
