//! A practice directory made by an earlier release keeps grading, with the same verdicts: it records the
//! layout it was made with (none recorded means layout 1), and is graded against that layout's files.
//!
//! `fixtures/layout-1/` holds what the release before layout 2 wrote that is the learner's or unique to the
//! directory: its `.pi-course/practice.toml` (no layout recorded, the fingerprints of the files it wrote),
//! and its reference loop, which declares the public types itself. The given files are laid out from the
//! repository as layout 1 describes them (`chapter.toml`), and they must be exactly what that release
//! wrote: the fingerprints say so.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use support::*;

/// A practice directory of layout 1, as that release made it, holding `code` as the loop.
fn layout_1_directory(parent: &Path, code: &str) -> PathBuf {
    let manifest = chapter_manifest();
    let old = manifest["old_layout"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["layout"].as_integer() == Some(1))
        .expect("chapter.toml describes layout 1");
    let without: Vec<&str> = old["without"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let dropped = |path: &str| {
        without.iter().any(|w| match w.strip_suffix('/') {
            Some(dir) => path.starts_with(&format!("{dir}/")),
            None => path == *w,
        })
    };
    let mut given: Vec<(String, Vec<u8>)> = files_under(&repo().join("harness"))
        .into_iter()
        .map(|(p, b)| (format!("harness/{p}"), b))
        .collect();
    given.extend(files_under(&repo().join("snapshots/06")));
    given.extend(
        files_under(&chapter_dir().join("files"))
            .into_iter()
            .filter(|(p, _)| !dropped(p)),
    );
    given.extend(files_under(&chapter_dir().join("layouts/1")));

    let dir = parent.join("made-by-an-earlier-release");
    for (path, bytes) in &given {
        let to = dir.join(path);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::write(to, bytes).unwrap();
    }
    let fixture = repo().join("tests/fixtures/layout-1");
    fs::create_dir_all(dir.join(".pi-course")).unwrap();
    let metadata = fs::read_to_string(fixture.join("practice.toml")).unwrap();
    fs::write(dir.join(".pi-course/practice.toml"), &metadata).unwrap();
    write_loop(&dir, code);

    // Every file that release wrote is laid out, and the files layout 1 keeps as its own (layouts/1/)
    // are exactly the ones it wrote. (Files it shares with the current layout may have changed since,
    // like a guide's wording; a directory still as it was made is not a learner's change either way.)
    let metadata: toml::Table = toml::from_str(&metadata).unwrap();
    assert!(
        metadata.get("layout").is_none(),
        "layout 1 records no layout"
    );
    let recorded = metadata["given"].as_table().unwrap();
    let own: Vec<String> = files_under(&chapter_dir().join("layouts/1"))
        .into_keys()
        .collect();
    assert!(!own.is_empty());
    for (path, fingerprint) in recorded {
        let bytes = fs::read(dir.join(path)).unwrap_or_else(|_| panic!("{path} is laid out"));
        if own.contains(path) {
            assert_eq!(
                sha256(&bytes),
                fingerprint.as_str().unwrap(),
                "layouts/1/{path} is not the file that release wrote"
            );
        }
    }
    for path in &own {
        assert!(recorded.contains_key(path), "that release wrote no {path}");
    }
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
    assert_eq!(
        group_status(&report, "duplicate-call-ids"),
        "pass",
        "{report}"
    );
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
