//! The TypeScript track of chapter 07 (`pi-course practice 07 DIR --track typescript`), driven through the
//! real binary: what a practice directory holds, that the chapter's TypeScript tests are a true
//! instrument (the reference passes, the skeleton and every mutant fail, every alternative loop passes),
//! messages in the learner's language, compile errors, and a class mixing both tracks.
//!
//! Every grade compiles with the pinned tsc and runs node under the sandbox; one grade takes a few
//! seconds, so each test reuses one practice directory and rewrites `src/agent-loop.ts` between grades.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::support::*;
use serde_json::Value;

const METADATA: &str = ".pi-course/practice.toml";

/// Every group of the chapter, required and optional, by slug.
fn all_slugs() -> Vec<String> {
    chapter_manifest()["group"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["slug"].as_str().unwrap().to_string())
        .collect()
}

/// The track's `track.toml`, parsed.
fn track_manifest() -> toml::Table {
    let text = fs::read_to_string(ts_dir().join("track.toml")).expect("typescript/track.toml");
    toml::from_str(&text).expect("track.toml parses")
}

/// The given files of a TypeScript practice directory: the node harness under `harness/`, the
/// TypeScript snapshot, overridden by the track's own files, without the editable ones.
fn expected_given() -> BTreeMap<String, Vec<u8>> {
    let track = track_manifest();
    let mut files = files_under(&repo().join("harness-node"));
    let snapshot = track["snapshot"].as_str().expect("a snapshot");
    files.extend(files_under(&repo().join("snapshots").join(snapshot)));
    files.extend(files_under(&ts_dir().join("files")));
    for editable in track["editable"].as_array().unwrap() {
        files.remove(editable.as_str().unwrap());
    }
    files
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303f}' | '\u{4e00}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

// ---------------------------------------------------------------------------------------------------
// 1. The practice directory and the commands around it
// ---------------------------------------------------------------------------------------------------

#[test]
fn practice_lays_out_a_typescript_directory_and_nothing_the_learner_must_not_see() {
    let (_tmp, dir) = practice_ts();
    let written = files_under(&dir);

    // The layout a learner runs `npm ci && npm run build && node --test` in.
    for path in [
        "package.json",
        "package-lock.json",
        "tsconfig.json",
        TS_LOOP,
        "harness/run.mjs",
        METADATA,
    ] {
        assert!(
            written.contains_key(path),
            "no {path} in {:?}",
            written.keys()
        );
    }
    let sources: Vec<&String> = written
        .keys()
        .filter(|p| p.starts_with("src/") && p.ends_with(".ts"))
        .collect();
    assert!(sources.len() > 1, "the course code is missing: {sources:?}");
    let tests: Vec<&String> = written
        .keys()
        .filter(|p| p.starts_with("test/07-") && p.ends_with(".test.ts"))
        .collect();
    assert!(
        tests.len() >= all_slugs().len(),
        "a test file per group: {tests:?}"
    );

    // Exactly the given files, byte for byte, the skeleton, and the metadata.
    let mut expected = expected_given();
    expected.insert(TS_LOOP.to_string(), ts_skeleton().into_bytes());
    let mut actual = written.clone();
    actual.remove(METADATA);
    let expected_paths: BTreeSet<&String> = expected.keys().collect();
    let actual_paths: BTreeSet<&String> = actual.keys().collect();
    assert_eq!(
        actual_paths, expected_paths,
        "the practice directory's files"
    );
    for (path, bytes) in &expected {
        assert!(actual[path] == *bytes, "{path} differs from the repository");
    }
    assert_eq!(
        written[TS_LOOP],
        ts_skeleton().into_bytes(),
        "src/agent-loop.ts is the skeleton"
    );

    // The metadata names the track.
    let metadata: toml::Table =
        toml::from_str(&String::from_utf8(written[METADATA].clone()).unwrap()).unwrap();
    assert_eq!(metadata["chapter"].as_str(), Some("07"), "{metadata:#?}");
    assert_eq!(
        metadata["track"].as_str(),
        Some("typescript"),
        "{metadata:#?}"
    );

    // Nothing of the reference, the mutants or the alternatives.
    let solution = ts_solution();
    let mut secret: Vec<(String, String)> = vec![("the reference".into(), solution.clone())];
    if let Ok(mutants) = fs::read_to_string(ts_dir().join("mutants.toml")) {
        secret.push(("mutants.toml".into(), mutants));
    }
    for (name, code) in alternatives() {
        secret.push((format!("alternatives/{name}"), code));
    }
    for (path, bytes) in &written {
        for (what, text) in &secret {
            assert!(bytes.as_slice() != text.as_bytes(), "{path} is {what}");
        }
        for folder in ["solution", "mutants", "alternatives", "skeleton"] {
            assert!(
                !path.split('/').any(|part| part.starts_with(folder)),
                "{path} was written into a practice directory"
            );
        }
    }
    // The reference's own code, below the public surface, appears nowhere.
    let own = "function repeatsAnId(calls: ToolCall[]): boolean {";
    assert!(
        solution.contains(own),
        "the reference changed: update this test"
    );
    for (path, bytes) in &written {
        assert!(
            !String::from_utf8_lossy(bytes).contains(own),
            "{path} holds the reference's code"
        );
    }
}

#[test]
fn the_english_practice_directory_holds_the_english_skeleton() {
    let tmp = tempfile::Builder::new()
        .prefix("typescript-en-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let out = run(
        tmp.path(),
        &[
            "practice",
            "07",
            "en",
            "--track",
            "typescript",
            "--lang",
            "en",
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        stdout(&out).contains("node --test"),
        "the next steps say how to run the tests by hand: {}",
        describe(&out)
    );
    let written = fs::read(tmp.path().join("en").join(TS_LOOP)).unwrap();
    let english = fs::read(ts_dir().join("skeleton.en").join(TS_LOOP)).unwrap();
    assert!(written == english, "--lang en wrote another skeleton");
}

#[test]
fn the_guide_practice_points_to_is_in_the_directory() {
    let track = track_manifest();
    let (_tmp, dir) = practice_ts();
    for lang in ["zh", "en"] {
        let guide = track["guide"][lang].as_str().unwrap();
        assert!(
            dir.join(guide).is_file(),
            "{guide} ({lang}) is not in the practice directory"
        );
    }
}

#[test]
fn an_unknown_track_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["practice", "07", "p", "--track", "python"][..],
        &["skeleton", "07", "--track", "python"][..],
    ] {
        let out = run(tmp.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", describe(&out));
        let err = stderr(&out);
        assert!(
            err.contains("python") && err.contains("typescript") && err.contains("rust"),
            "{args:?}: the error names the value and the tracks: {err}"
        );
    }
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing was made"
    );
}

#[test]
fn list_shows_both_tracks_and_skeleton_prints_the_typescript_one() {
    let tmp = tempfile::tempdir().unwrap();
    for lang in ["zh", "en"] {
        let out = run(tmp.path(), &["list", "--lang", lang]);
        assert!(out.status.success(), "{}", describe(&out));
        let text = stdout(&out);
        let line = text
            .lines()
            .find(|l| l.starts_with("07"))
            .unwrap_or_else(|| panic!("no line for chapter 07: {text}"));
        assert!(
            line.contains("rust") && line.contains("typescript"),
            "{lang}: {line}"
        );
    }

    let zh = run(tmp.path(), &["skeleton", "07", "--track", "typescript"]);
    assert!(zh.status.success(), "{}", describe(&zh));
    assert!(
        zh.stdout == ts_skeleton().into_bytes(),
        "skeleton --track typescript printed another file:\n{}",
        stdout(&zh)
    );
    let en = run(
        tmp.path(),
        &["skeleton", "07", "--track", "typescript", "--lang", "en"],
    );
    assert!(en.status.success(), "{}", describe(&en));
    assert!(
        en.stdout == fs::read(ts_dir().join("skeleton.en").join(TS_LOOP)).unwrap(),
        "skeleton --track typescript --lang en printed another file"
    );
    // The Rust skeleton is still the default.
    let rust = run(tmp.path(), &["skeleton", "07"]);
    assert!(rust.stdout == skeleton().into_bytes());
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "it writes nothing"
    );
}

// ---------------------------------------------------------------------------------------------------
// 2. The reference passes, the skeleton fails
// ---------------------------------------------------------------------------------------------------

#[test]
fn the_reference_passes_every_group_and_the_skeleton_fails_every_required_one() {
    let (_tmp, dir) = practice_ts();
    let (code, json) = grade_json(&dir, &[]);
    assert_eq!(
        (code, json["status"].as_str()),
        (1, Some("fail")),
        "{json:#}"
    );
    assert_eq!(json["sandbox"]["active"], true, "{json:#}");
    for slug in REQUIRED {
        assert_eq!(
            group_status(&json, slug),
            "fail",
            "the skeleton passes {slug}: {json:#}"
        );
    }
    // Each failure names its own group's Lab, and each test is named after its group.
    for g in json["groups"].as_array().unwrap() {
        let lab = format!("Lab {}", g["lab"].as_str().unwrap());
        let prefix = format!("{} › ", g["name"].as_str().unwrap());
        let tests = g["tests"].as_array().unwrap();
        assert!(!tests.is_empty(), "{} has no tests: {g:#}", g["slug"]);
        for t in tests {
            let name = t["name"].as_str().unwrap();
            assert!(name.starts_with(&prefix), "{name} is not named {prefix}…");
            assert_eq!(t["status"], "fail", "{name} passes on the skeleton");
            let message = t["message"].as_str().unwrap_or("");
            assert!(
                message.contains(&lab),
                "{name} fails on the skeleton without naming {lab}: {message}"
            );
        }
    }

    write_ts_loop(&dir, &ts_solution());
    let (code, json) = grade_json(&dir, &[]);
    assert_eq!(
        (code, json["status"].as_str()),
        (0, Some("pass")),
        "{json:#}"
    );
    for slug in all_slugs() {
        assert_eq!(
            group_status(&json, &slug),
            "pass",
            "the reference fails {slug}: {json:#}"
        );
    }
    assert_eq!(json["score"], json["max"], "{json:#}");
}

// ---------------------------------------------------------------------------------------------------
// 3. Every mutant is caught by its group
// ---------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------
// 4. Every alternative loop passes
// ---------------------------------------------------------------------------------------------------

/// Every alternative TypeScript loop, by file stem.
fn alternatives() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let Ok(entries) = fs::read_dir(ts_dir().join("alternatives")) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ts") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            found.insert(stem, fs::read_to_string(&path).unwrap());
        }
    }
    found
}

/// The shapes the guard must always cover, whatever else is added (a stem may spell `-` as `_`).
const SHAPES: [&str; 5] = [
    "all-settled",
    "manual-counter",
    "async-generator",
    "recursive",
    "state-machine",
];

#[test]
fn every_shape_the_typescript_guard_must_cover_has_an_alternative() {
    let loops = alternatives();
    let stems: BTreeSet<String> = loops.keys().map(|s| s.replace('_', "-")).collect();
    for shape in SHAPES {
        assert!(
            stems.contains(shape),
            "no typescript/alternatives/{shape}.ts (found {stems:?})"
        );
    }
    // Each is graded as a case of its own (`course::cases::ch07::typescript::alternative::*`), where it
    // must pass every group.
}

// ---------------------------------------------------------------------------------------------------
// 5. Messages in the learner's language
// ---------------------------------------------------------------------------------------------------

/// The reference sending a wrong system prompt: one plain-stop test fails through a deep comparison.
fn wrong_system_prompt() -> String {
    let line = "systemPrompt: options.context.systemPrompt,";
    let s = ts_solution();
    assert_eq!(
        s.matches(line).count(),
        1,
        "the reference copies the prompt once"
    );
    s.replacen(line, "systemPrompt: \"a prompt of its own\",", 1)
}

/// Every failure message of a report.
fn messages(json: &Value) -> Vec<(String, String)> {
    report_tests(json)
        .into_iter()
        .filter_map(|(_, t)| {
            Some((
                t["name"].as_str().unwrap().to_string(),
                t["message"].as_str()?.to_string(),
            ))
        })
        .collect()
}

#[test]
fn failure_messages_follow_the_learners_language() {
    let tmp = tempfile::Builder::new()
        .prefix("typescript-lang-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let made = run(
        tmp.path(),
        &[
            "practice",
            "07",
            "en",
            "--track",
            "typescript",
            "--lang",
            "en",
        ],
    );
    assert!(made.status.success(), "{}", describe(&made));
    let en = tmp.path().join("en");

    // English: the English skeleton's every failure is English only, names its group's Lab and says
    // which Lab's unfinished part it reached. The group's Chinese name may appear in the test's name,
    // never in its message.
    let (_, json) = grade_json(&en, &["--lang", "en"]);
    let all = messages(&json);
    assert!(!all.is_empty(), "{json:#}");
    for g in json["groups"].as_array().unwrap() {
        let lab = format!("Lab {}", g["lab"].as_str().unwrap());
        assert!(
            g["tests"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["message"].as_str().is_some_and(|m| m.contains(&lab))),
            "{g:#}"
        );
    }
    for (name, message) in &all {
        assert!(
            !message.chars().any(is_cjk),
            "{name}: Chinese in an English message:\n{message}"
        );
        assert!(
            message.contains("reached Lab 7.1's unfinished part"),
            "{name}: {message}"
        );
        assert_no_rust_words(name, message);
    }
    // A later Lab's test says whose it is, by the group's English name, and which Lab comes first.
    assert!(
        all.iter().any(|(_, m)| m
            .contains("this test belongs to Lab 7.2 (single tool round trip)")
            && m.contains("finish Lab 7.1 first")),
        "{all:#?}"
    );
    // A failed comparison too.
    write_ts_loop(&en, &wrong_system_prompt());
    let (_, json) = grade_json(&en, &["--lang", "en", "--group", "7.1"]);
    // Every test of the group sends a request, so each fails there, leading with the prompt it got.
    let failed = messages(&json);
    assert!(!failed.is_empty(), "{json:#}");
    for (name, message) in &failed {
        assert!(
            message.contains("expected")
                && message.contains("got")
                && message.contains("a prompt of its own"),
            "{name}: {message}"
        );
        assert!(!message.chars().any(is_cjk), "{name}: {message}");
    }

    // Chinese by default: the Chinese skeleton's every failure names its Lab in Chinese.
    let zh = practice_ts_at(tmp.path(), "zh");
    let (_, json) = grade_json(&zh, &[]);
    let all = messages(&json);
    assert!(!all.is_empty(), "{json:#}");
    for (name, message) in &all {
        assert!(
            message.contains("到达了 Lab 7.1 还没写完的部分"),
            "{name}: {message}"
        );
        assert!(
            !message.contains("unfinished part"),
            "{name}: English in a Chinese message:\n{message}"
        );
        assert_no_rust_words(name, message);
    }
    assert!(
        all.iter()
            .any(|(_, m)| m.contains("这个测试属于 Lab 7.2（单工具往返）")
                && m.contains("先完成 Lab 7.1")),
        "{all:#?}"
    );
    write_ts_loop(&zh, &wrong_system_prompt());
    let (_, json) = grade_json(&zh, &["--group", "7.1"]);
    let failed = messages(&json);
    assert!(!failed.is_empty(), "{json:#}");
    for (name, message) in &failed {
        assert!(
            message.contains("应为")
                && message.contains("实际")
                && message.contains("a prompt of its own"),
            "{name}: {message}"
        );
        assert!(
            !message.contains("expected"),
            "{name}: English in a Chinese message: {message}"
        );
    }
}

/// A TypeScript learner reads no Rust: no `todo!()` for the skeleton's placeholder, no `panic` for a
/// thrown error.
fn assert_no_rust_words(name: &str, message: &str) {
    for word in ["todo!", "panic"] {
        assert!(
            !message.contains(word),
            "{name}: Rust's {word:?} in a TypeScript message:\n{message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// 6. Compile errors
// ---------------------------------------------------------------------------------------------------

#[test]
fn a_compile_error_is_reported_at_the_learners_file_and_runs_no_test() {
    let (_tmp, dir) = practice_ts();
    let good = "export const DEFAULT_MAX_STEPS = 32;";
    let bad = "export const DEFAULT_MAX_STEPS: number = \"thirty-two\";";
    let reference = ts_solution();
    assert_eq!(reference.matches(good).count(), 1);
    let code = reference.replacen(good, bad, 1);
    let line = code.lines().position(|l| l == bad).unwrap() + 1;
    write_ts_loop(&dir, &code);

    // From inside the practice directory: the plain path.
    let out = pi_course(&dir)
        .args(["grade", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&json);
    assert_eq!(json["status"], "error", "{json:#}");
    let message = json["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("src/agent-loop.ts({line},")),
        "the error names the learner's file and line: {message}"
    );
    assert!(message.contains("error TS2322"), "{message}");
    assert!(!message.contains('\x1b'), "{message}");
    assert!(
        !message.contains("slot-") && !message.contains(cache().to_str().unwrap()),
        "the build slot leaks into the message: {message}"
    );
    for g in json["groups"].as_array().unwrap() {
        assert_eq!(g["status"], "error", "{g:#}");
        assert_eq!(g["total"], 0, "no test ran: {g:#}");
    }
    assert_eq!(json["score"], 0.0, "{json:#}");

    // From elsewhere: the path as the learner named the directory.
    let parent = dir.parent().unwrap();
    let out = pi_course(parent).args(["grade", "p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("p/src/agent-loop.ts({line},")),
        "{text}"
    );
    assert!(text.contains("error TS2322"), "{text}");
}

// ---------------------------------------------------------------------------------------------------
// 8. A class mixing both tracks
// ---------------------------------------------------------------------------------------------------

/// Every learner's report, by name, each checked against the grade's JSON schema.
fn class_reports(results: &Path) -> BTreeMap<String, Value> {
    let summary = class_summary(results);
    summary["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let path = results.join(row["report"].as_str().unwrap());
            let report: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_schema(&report);
            (row["name"].as_str().unwrap().to_string(), report)
        })
        .collect()
}

#[test]
fn a_class_grades_each_practice_directory_by_its_own_track() {
    let tmp = tempfile::Builder::new()
        .prefix("typescript-class-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let subs = tmp.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    // The Rust reference, the TypeScript reference, and an untouched TypeScript directory.
    let rusty = practice_at(&subs, "rusty");
    write_loop(&rusty, &solution());
    let tessa = practice_ts_at(&subs, "tessa");
    write_ts_loop(&tessa, &ts_solution());
    practice_ts_at(&subs, "tom");

    let results = tmp.path().join("results");
    let out = grade_class(tmp.path(), &subs, &results, &["--lang", "en"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "everyone was graded\n{}",
        describe(&out)
    );
    let summary = class_summary(&results);
    let reports = class_reports(&results);
    assert_eq!(
        reports.keys().cloned().collect::<Vec<_>>(),
        ["rusty", "tessa", "tom"],
        "{summary:#}"
    );
    for (name, status) in [("rusty", "pass"), ("tessa", "pass"), ("tom", "fail")] {
        assert_eq!(
            learner_row(&summary, name)["status"],
            status,
            "{name}: {summary:#}"
        );
        assert_eq!(
            reports[name]["status"], status,
            "{name}: {:#}",
            reports[name]
        );
    }
    // Each graded by its own track: Rust test names are module paths, TypeScript ones start with the
    // group's name.
    for (name, report) in &reports {
        let typescript = name != "rusty";
        for (slug, t) in report_tests(report) {
            let test = t["name"].as_str().unwrap();
            assert_eq!(
                test.contains(" › "),
                typescript,
                "{name}: {slug} test {test} is not of its track"
            );
            assert_eq!(test.contains("::"), !typescript, "{name}: {test}");
        }
    }
    for slug in REQUIRED {
        assert_eq!(group_status(&reports["tom"], slug), "fail");
    }
}

#[test]
fn a_class_grades_typescript_single_files() {
    let tmp = tempfile::Builder::new()
        .prefix("typescript-class-files-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let subs = tmp.path().join("submissions");
    fs::create_dir_all(subs.join("bob/src")).unwrap();
    fs::write(subs.join("alice.ts"), ts_solution()).unwrap();
    fs::write(subs.join("bob").join(TS_LOOP), ts_solution()).unwrap();
    let results = tmp.path().join("results");
    let out = grade_class(tmp.path(), &subs, &results, &["--lang", "en"]);
    let summary = class_summary(&results);
    for name in ["alice", "bob"] {
        assert_eq!(
            learner_row(&summary, name)["status"],
            "pass",
            "{name}: {summary:#}\n{}",
            describe(&out)
        );
    }
}

/// The guarantee the graded harness rests on: the test files never load the learner's module as they
/// load (only `import type`, which compiles to nothing; the test kit imports it lazily, inside test
/// bodies), so every test is registered and sealed before any learner code runs.
#[test]
fn the_test_files_load_the_learners_module_only_lazily() {
    let dir = chapter_dir().join("typescript/files/test");
    let mut checked = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        let mut statement = String::new();
        for line in text.lines() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            statement.push_str(line);
            statement.push('\n');
            if !line.trim_end().ends_with(';') {
                continue;
            }
            let is_static_import = statement.trim_start().starts_with("import ")
                || statement.trim_start().starts_with("export ");
            if is_static_import && statement.contains("agent-loop.js\"") {
                let kept = statement.trim_start();
                assert!(
                    kept.starts_with("import type ") || kept.starts_with("export type "),
                    "{} loads the learner's module as it loads:\n{statement}",
                    path.display()
                );
            }
            statement.clear();
        }
        checked += 1;
    }
    assert!(checked >= 7, "the test files and the kit");
    let kit = fs::read_to_string(dir.join("support.ts")).unwrap();
    assert!(
        kit.contains("import(\"../src/agent-loop.js\")"),
        "the kit imports the loop lazily"
    );
}

/// `hint` and `status` read a TypeScript directory as such: the track's own hints (its code and commands,
/// not the Rust track's), and its editable file.
#[test]
fn hint_and_status_speak_of_the_typescript_track() {
    let (_tmp, dir) = practice_ts();
    let (code, _) = grade_json(&dir, &[]);
    assert_eq!(code, 1, "the skeleton fails");
    let hint = run(&dir, &["hint"]);
    assert!(hint.status.success(), "{}", describe(&hint));
    let text = stdout(&hint);
    assert!(
        text.contains("7.1") && text.contains("structuredClone"),
        "{text}"
    );
    assert!(
        !text.contains("todo!") && !text.contains("result().await"),
        "{text}"
    );
    let hint = run(&dir, &["hint", "7.4", "--lang", "en"]);
    assert!(stdout(&hint).contains("Promise.all"), "{}", describe(&hint));
    let status = run(&dir, &["status"]);
    assert!(status.status.success(), "{}", describe(&status));
    let text = stdout(&status);
    assert!(
        text.contains("src/agent-loop.ts") && !text.contains("agent_loop.rs"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------------
// Bounded traces
// ---------------------------------------------------------------------------------------------------

/// As in the Rust track (`tests/cli/attacks/rust.rs`): a loop that emits a million progress events, and one that
/// emits a 50 MB payload, before anything else. The driver records every one; the grader still comes to
/// a clear verdict within its bounds (4,000 steps, 4 MiB, 64 KiB per string).
#[test]
fn a_million_events_or_a_50_mb_payload_get_a_clear_verdict_and_a_small_grader() {
    let (_tmp, dir) = practice_ts();
    for (attack, statement) in [
        (
            "MILLION-EVENTS",
            r#"for (let i = 0; i < 1_000_000; i++) options.onEvent?.({ type: "tool_progress", toolCallId: "MILLION-EVENTS", content: [] });"#,
        ),
        (
            "HUGE-PAYLOAD",
            r#"options.onEvent?.({ type: "tool_progress", toolCallId: "HUGE-PAYLOAD" + "x".repeat(50_000_000), content: [] });"#,
        ),
    ] {
        write_ts_loop(&dir, &ts_starting_with(&ts_solution(), statement));
        let mut command = pi_course(&dir);
        command.args([
            "grade",
            ".",
            "--format",
            "json",
            "--lang",
            "en",
            "--group",
            "7.1",
            "--timeout",
            "60",
        ]);
        let (out, peak_kib) = output_and_peak_kib(command);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{attack}: one JSON document ({e}): {}", describe(&out)));
        assert_schema(&report);
        assert_eq!(report["status"], "fail", "{attack}: {report:#}");
        // The attack ran: its first event is the step where every test with an event sink left the
        // rules (a run without one drops the events, as the chapter's default sink does, and passes).
        let tests = report_tests(&report);
        let failed: Vec<&Value> = tests
            .iter()
            .map(|(_, t)| *t)
            .filter(|t| t["status"] != "pass")
            .collect();
        assert!(failed.len() * 2 > tests.len(), "{attack}: {report:#}");
        assert_eq!(report["status"], "fail", "{attack}: {report:#}");
        for test in failed {
            assert_eq!(test["status"], "fail", "{attack}: {test:.600}");
            let message = test["message"].as_str().unwrap_or_default();
            // A driver may record a step past its own bound as the trace's overflow, or judge a loop
            // that spends a second building one event hung (said in one plain sentence). The reference
            // passes every test, so any failure at step 1 is the attack's.
            let left = message.starts_with("step 1 left the chapter's rules");
            assert!(
                (left && message.contains(&format!("happened: tool_progress({attack}")))
                    || (attack == "HUGE-PAYLOAD"
                        && ((left && message.contains("happened: overflow"))
                            || message.starts_with("step 1: your loop did not return"))),
                "{attack}: {message:.600}"
            );
        }
        eprintln!("{attack}: grader peak ≥ {peak_kib} KiB");
        assert!(
            peak_kib < 150 << 10,
            "{attack}: the grader reached {peak_kib} KiB"
        );
    }
}

/// Ctrl-C (SIGINT) or SIGTERM of a TypeScript grade whose loop hangs leaves nothing in the temporary
/// directory.
#[test]
fn an_interrupted_grade_leaves_nothing_in_the_temporary_directory() {
    let (_tmp, dir) = practice_ts();
    write_ts_loop(&dir, &ts_starting_with(&ts_solution(), "for (;;) {}"));
    // Warm the build (and the dependencies) first, so the interrupt lands while tests run.
    let _ = grade(&dir, &["-g", "7.1", "--timeout", "1"]);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (out, left, tests) =
            interrupt_grade(&dir, &["-g", "7.1", "--timeout", "60"], signal, |p| {
                p.args.contains("node") && p.args.contains("run.mjs")
            });
        assert_eq!(out.status.code(), Some(128 + signal), "{}", describe(&out));
        assert_eq!(
            left,
            Vec::<String>::new(),
            "left in TMPDIR after signal {signal}"
        );
        assert_groups_gone(&tests.iter().map(|p| p.pgid).collect());
    }
}

/// The first TypeScript grade in a cache installs TypeScript with npm once and says so, in the learner's
/// language; npm's downloads and logs stay in the cache, not in the home directory; the next grade says
/// nothing of a first grade.
#[test]
fn the_first_grade_says_it_installs_typescript_and_npm_keeps_to_the_cache() {
    let (tmp, dir) = practice_ts();
    let home = tmp.path().join("home");
    fs::create_dir(&home).unwrap();
    let first = tmp.path().join("first-cache");
    for (lang, notice, cache) in [
        ("zh", "首次评分：用 npm 安装 TypeScript", first.clone()),
        (
            "en",
            "first grade: installing TypeScript with npm",
            tmp.path().join("second-cache"),
        ),
    ] {
        if cache != first {
            // The second cache's npm reads the first one's downloads: one download for the test.
            fs::create_dir_all(cache.join("node")).unwrap();
            std::os::unix::fs::symlink(first.join("node/npm-cache"), cache.join("node/npm-cache"))
                .unwrap();
        }
        let grade = |dir: &Path| {
            pi_course(dir)
                .env("PI_COURSE_CACHE", &cache)
                .env("HOME", &home)
                .args(["grade", "--lang", lang])
                .output()
                .unwrap()
        };
        let out = grade(&dir);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(stderr(&out).contains(notice), "{}", describe(&out));
        let again = grade(&dir);
        assert_eq!(again.status.code(), Some(1), "{}", describe(&again));
        for said in ["首次评分", "first grade"] {
            assert!(!stderr(&again).contains(said), "{}", describe(&again));
        }
    }
    assert!(
        fs::read_dir(first.join("node/npm-cache")).unwrap().count() > 0,
        "npm kept nothing in the cache's node/npm-cache"
    );
    assert_eq!(
        names(&home),
        Vec::<String>::new(),
        "npm wrote into the home directory"
    );
}
