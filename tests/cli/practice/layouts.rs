//! A practice directory made by an earlier release keeps grading, with the same verdicts: it records the
//! layout it was made with (none recorded means layout 1), and is graded against that layout's files.
//!
//! `fixtures/layout-1/` holds what the release before layout 2 wrote that is the learner's or unique to the
//! directory: its `.pi-course/practice.toml` (no layout recorded, the fingerprints of the files it wrote),
//! its reference loop, which declares the public types itself, and under `written/` the given files only
//! that release had (its test crate, its harness with the `protocol.rs` that today lives in the judge
//! crate, and its lock file): the fingerprints prove they are what it wrote.
//! Such a directory is graded with today's driver (`layouts/1/` in the chapter), never with its own tests.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;

/// A practice directory of layout 1, as that release made it, holding `code` as the loop: every file
/// its `practice.toml` records, with the files unique to that release (`fixtures/layout-1/written/`,
/// which the fingerprints prove are what it wrote) and the others as the repository holds them today.
fn layout_1_directory(parent: &Path, code: &str) -> PathBuf {
    let fixture = repo().join("tests/fixtures/layout-1");
    let metadata = fs::read_to_string(fixture.join("practice.toml")).unwrap();
    let recorded: toml::Table = toml::from_str(&metadata).unwrap();
    assert!(
        recorded.get("layout").is_none(),
        "layout 1 records no layout"
    );
    let recorded = recorded["given"].as_table().unwrap().clone();
    let written = files_under(&fixture.join("written"));
    assert!(!written.is_empty());
    let mut today: BTreeMap<String, Vec<u8>> = files_under(&repo().join("harness"))
        .into_iter()
        .map(|(p, b)| (format!("harness/{p}"), b))
        .collect();
    today.extend(files_under(&repo().join("snapshots/06")));
    today.extend(files_under(&chapter_dir().join("files")));

    let dir = parent.join("made-by-an-earlier-release");
    for (path, fingerprint) in &recorded {
        let bytes = match written.get(path) {
            Some(bytes) => {
                assert_eq!(
                    sha256(bytes),
                    fingerprint.as_str().unwrap(),
                    "fixtures/layout-1/written/{path} is not the file that release wrote"
                );
                bytes
            }
            None => today
                .get(path)
                .unwrap_or_else(|| panic!("{path}: that release wrote it, nothing here holds it")),
        };
        let to = dir.join(path);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::write(to, bytes).unwrap();
    }
    for path in written.keys() {
        assert!(recorded.contains_key(path), "that release wrote no {path}");
    }
    fs::create_dir_all(dir.join(".pi-course")).unwrap();
    fs::write(dir.join(".pi-course/practice.toml"), &metadata).unwrap();
    write_loop(&dir, code);
    dir
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn layout_1_reference() -> String {
    fs::read_to_string(repo().join("tests/fixtures/layout-1/agent_loop.rs")).unwrap()
}

#[test]
fn a_layout_1_directory_with_the_reference_passes_every_group_without_warnings() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = layout_1_directory(tmp.path(), &layout_1_reference());
    let (code, report) = grade_json(&dir, &[]);
    assert_eq!(
        (code, report["status"].as_str()),
        (0, Some("pass")),
        "{report}"
    );
    assert_eq!(report["warnings"], serde_json::json!([]), "{report}");
    for group in report["groups"].as_array().unwrap() {
        assert_eq!(group["status"], "pass", "{group}");
    }
}

#[test]
fn a_layout_1_directory_with_a_mutant_fails_its_group() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The mutant `tool-definitions-not-sent` of mutants.toml, applied to the layout-1 reference.
    let find = "            tools: self.options.tools.definitions(),";
    let reference = layout_1_reference();
    assert_eq!(reference.matches(find).count(), 1);
    let mutant = reference.replacen(find, "            tools: Vec::new(),", 1);
    let dir = layout_1_directory(tmp.path(), &mutant);
    let (code, report) = grade_json(&dir, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(group_status(&report, "plain-stop"), "fail", "{report}");
    // Caught where the request must carry definitions, and only there: a test whose caller registers no
    // tool passes.
    let untouched = "plain_stop::the_final_message_is_appended_once_and_no_partial_ever_is";
    let test = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["tests"].as_array().unwrap())
        .find(|t| t["name"] == untouched)
        .unwrap_or_else(|| panic!("no test {untouched}: {report}"));
    assert_eq!(test["status"], "pass", "{test}");
}

#[test]
fn a_directory_of_an_unknown_layout_is_refused_with_the_fix() {
    let (_tmp, dir) = practice();
    let file = dir.join(".pi-course/practice.toml");
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.contains("layout = 2"), "{text}");
    fs::write(&file, text.replace("layout = 2", "layout = 99")).unwrap();
    let out = grade(&dir, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(stderr(&out).contains("99"), "{}", describe(&out));
}

/// A TypeScript directory of layout 1, as that release made it: today's files, but the package.json and
/// lock file that named TypeScript 5.9 (`typescript/layouts/1/`), and a practice.toml that records them.
fn typescript_layout_1_directory() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = practice_ts();
    let old = chapter_dir().join("typescript/layouts/1");
    let metadata_path = dir.join(".pi-course/practice.toml");
    let mut metadata = fs::read_to_string(&metadata_path).unwrap();
    assert!(metadata.contains("\nlayout = 2\n"), "{metadata}");
    metadata = metadata.replace("\nlayout = 2\n", "\nlayout = 1\n");
    for name in ["package.json", "package-lock.json"] {
        let today = fs::read(dir.join(name)).unwrap();
        let then = fs::read(old.join(name)).unwrap();
        assert!(
            String::from_utf8_lossy(&then).contains("\"typescript\": \"5.9.3\""),
            "layout 1's {name} names TypeScript 5.9"
        );
        metadata = metadata.replace(&sha256(&today), &sha256(&then));
        fs::write(dir.join(name), then).unwrap();
    }
    fs::write(&metadata_path, metadata).unwrap();
    (tmp, dir)
}

/// What compiled in each build slot of `cache`: the TypeScript version its `.tsbuildinfo` records.
fn compilers_in(cache: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for key in fs::read_dir(cache.join("work"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for slot in fs::read_dir(key.path()).into_iter().flatten().flatten() {
            if let Ok(info) = fs::read_to_string(slot.path().join("dist/.tsbuildinfo")) {
                let info: serde_json::Value = serde_json::from_str(&info).unwrap();
                found.push(info["version"].as_str().unwrap_or("?").to_string());
            }
        }
    }
    found
}

/// A TypeScript directory that an earlier release made, whose lock file names TypeScript 5.9, grades with
/// that compiler (run on node), while a directory made today compiles with TypeScript 7's native one:
/// same verdicts, same diagnostics at the learner's file.
#[test]
fn a_typescript_directory_of_layout_1_grades_with_the_compiler_its_lock_file_names() {
    let (_old_tmp, old) = typescript_layout_1_directory();
    let (_new_tmp, new) = practice_ts();
    for (dir, compiler) in [(&old, "5.9.3"), (&new, "7.0.2")] {
        let cache = private_cache();
        write_ts_loop(dir, &ts_solution());
        let (code, json) = grade_json_in(cache.path(), dir, &[]);
        assert_eq!(
            (code, json["status"].as_str()),
            (0, Some("pass")),
            "{json:#}"
        );
        assert_eq!(compilers_in(cache.path()), [compiler], "{}", dir.display());

        write_ts_loop(
            dir,
            &format!("{}\nconst wrong: number = \"a string\";\n", ts_solution()),
        );
        let (code, json) = grade_json_in(cache.path(), dir, &[]);
        let message = json["message"].as_str().unwrap_or_default();
        assert_eq!(
            (code, json["status"].as_str()),
            (1, Some("error")),
            "{json:#}"
        );
        assert!(
            message.contains("src/agent-loop.ts(") && message.contains("error TS2322"),
            "{compiler}: {message}"
        );
    }
}
