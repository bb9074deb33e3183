//! A newcomer's rough edges: a way back to the skeleton, metadata and cache errors that say what is wrong
//! and what to do, and the first grade saying why it takes a while. Every message in both languages.

mod support;

use std::fs;

use support::*;

fn skeleton_file(folder: &str) -> Vec<u8> {
    fs::read(chapter_dir().join(folder).join("src/agent_loop.rs")).unwrap()
}

#[test]
fn skeleton_prints_the_pristine_file_in_the_learners_language() {
    let here = tempfile::tempdir().unwrap();
    let zh = run(here.path(), &["skeleton", "07"]);
    assert!(zh.status.success(), "{}", describe(&zh));
    assert_eq!(zh.stdout, skeleton_file("skeleton"));
    let en = run(here.path(), &["skeleton", "07", "--lang", "en"]);
    assert!(en.status.success(), "{}", describe(&en));
    assert_eq!(en.stdout, skeleton_file("skeleton.en"));
    let en_env = pi_course(here.path())
        .env("PI_COURSE_LANG", "en")
        .args(["skeleton", "07"])
        .output()
        .unwrap();
    assert_eq!(en_env.stdout, skeleton_file("skeleton.en"));
    // It writes nothing.
    assert_eq!(fs::read_dir(here.path()).unwrap().count(), 0);
}

#[test]
fn skeleton_of_an_unknown_chapter_is_bad_input() {
    let here = tempfile::tempdir().unwrap();
    for (lang, word) in [("zh", "07"), ("en", "07")] {
        let out = run(here.path(), &["skeleton", "99", "--lang", lang]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(out.stdout.is_empty(), "{}", describe(&out));
        assert!(stderr(&out).contains(word), "{}", describe(&out));
    }
}

#[test]
fn a_deleted_loop_names_the_way_back_in_both_languages() {
    let (_guard, dir) = practice();
    fs::remove_file(dir.join("src/agent_loop.rs")).unwrap();
    let zh = grade(&dir, &[]);
    let all = format!("{}{}", stdout(&zh), stderr(&zh));
    assert!(
        all.contains("`pi-course skeleton 07 > ")
            && all.contains("src/agent_loop.rs` 取回")
            && all.contains("找不到"),
        "{}",
        describe(&zh)
    );
    assert!(!all.contains("GUIDE.md 里的骨架"), "{}", describe(&zh));
    let en = grade(&dir, &["--lang", "en"]);
    let all = format!("{}{}", stdout(&en), stderr(&en));
    assert!(
        all.contains("`pi-course skeleton 07 --lang en > ") && all.contains("is missing"),
        "{}",
        describe(&en)
    );
    // Following the advice brings the file back as it was made.
    let back = run(&dir, &["skeleton", "07"]);
    fs::write(dir.join("src/agent_loop.rs"), &back.stdout).unwrap();
    assert_eq!(
        fs::read(dir.join("src/agent_loop.rs")).unwrap(),
        skeleton_file("skeleton")
    );
    let status = run(&dir, &["status"]);
    assert!(status.status.success(), "{}", describe(&status));
}

/// Grades `dir` in both languages; each must be bad input (exit 2) whose stderr holds the given words.
fn bad_input_in_both_languages(dir: &std::path::Path, zh: &[&str], en: &[&str]) {
    for (lang, words) in [("zh", zh), ("en", en)] {
        let out = grade(dir, &["--lang", lang]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        for word in words {
            assert!(stderr(&out).contains(word), "{word:?}\n{}", describe(&out));
        }
    }
}

#[test]
fn binary_metadata_is_damaged_not_missing() {
    let (_guard, dir) = practice();
    let file = dir.join(".pi-course/practice.toml");
    fs::write(&file, [0xff_u8, 0xfe, 0x00, 0x9c, 0x80, 0x01]).unwrap();
    bad_input_in_both_languages(
        &dir,
        &["已损坏", "不是文本", "pi-course practice 07"],
        &["is damaged", "not text", "pi-course practice 07"],
    );
    for lang in ["zh", "en"] {
        let out = grade(&dir, &["--lang", lang]);
        assert!(!stderr(&out).contains("缺少"), "{}", describe(&out));
        assert!(
            !stderr(&out).contains("no .pi-course"),
            "{}",
            describe(&out)
        );
    }
    // Nothing was rewritten.
    assert_eq!(
        fs::read(&file).unwrap(),
        [0xff_u8, 0xfe, 0x00, 0x9c, 0x80, 0x01]
    );
}

#[test]
fn unreadable_metadata_says_so() {
    let (_guard, dir) = practice();
    let file = dir.join(".pi-course/practice.toml");
    // A directory where the file should be: reading it fails with something other than "not found", as
    // an unreadable file does (and this holds even when the tests run as root).
    fs::remove_file(&file).unwrap();
    fs::create_dir(&file).unwrap();
    bad_input_in_both_languages(&dir, &["无法读取", "chmod"], &["Cannot read", "chmod"]);
}
