//! A newcomer's rough edges: a way back to the skeleton, metadata and cache errors that say what is wrong
//! and what to do, and the first grade saying why it takes a while. Every message in both languages.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::*;

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
    // Bad input (exit 2), on stderr only, said before anything is built: no sandbox line, no verdict.
    let zh = grade(&dir, &[]);
    assert_eq!(zh.status.code(), Some(2), "{}", describe(&zh));
    assert!(zh.stdout.is_empty(), "{}", describe(&zh));
    let err = stderr(&zh);
    assert!(
        err.contains("`pi-course skeleton 07 > ")
            && err.contains("src/agent_loop.rs` 取回")
            && err.contains("找不到"),
        "{}",
        describe(&zh)
    );
    assert!(
        !err.contains("已隔离") && !err.contains("GUIDE.md 里的骨架"),
        "{err}"
    );
    let en = grade(&dir, &["--lang", "en"]);
    assert_eq!(en.status.code(), Some(2), "{}", describe(&en));
    assert!(en.stdout.is_empty(), "{}", describe(&en));
    let err = stderr(&en);
    assert!(
        err.contains("`pi-course skeleton 07 --lang en > ") && err.contains("is missing"),
        "{}",
        describe(&en)
    );
    assert!(!err.contains("Sandboxed"), "{err}");
    // Following the advice brings the file back as it was made.
    let back = run(&dir, &["skeleton", "07"]);
    fs::write(dir.join("src/agent_loop.rs"), &back.stdout).unwrap();
    assert_eq!(
        fs::read(dir.join("src/agent_loop.rs")).unwrap(),
        skeleton_file("skeleton")
    );
    let status = run(&dir, &["status"]);
    assert!(status.status.success(), "{}", describe(&status));

    // The TypeScript track's way back names its own skeleton.
    let (_ts_guard, ts) = practice_ts();
    fs::remove_file(ts.join("src/agent-loop.ts")).unwrap();
    for (lang, wanted) in [
        ("zh", "`pi-course skeleton 07 --track typescript > "),
        (
            "en",
            "`pi-course skeleton 07 --track typescript --lang en > ",
        ),
    ] {
        let out = grade(&ts, &["--lang", lang]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(out.stdout.is_empty(), "{}", describe(&out));
        let err = stderr(&out);
        assert!(
            err.contains(wanted) && err.contains("src/agent-loop.ts`"),
            "{err}"
        );
    }
    let back = run(&ts, &["skeleton", "07", "--track", "typescript"]);
    assert!(back.status.success(), "{}", describe(&back));
    fs::write(ts.join("src/agent-loop.ts"), &back.stdout).unwrap();
    assert_eq!(
        fs::read_to_string(ts.join("src/agent-loop.ts")).unwrap(),
        ts_skeleton()
    );
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

/// `pi-course grade` in a fresh practice directory with `PI_COURSE_CACHE` set to `cache` (or removed,
/// with `XDG_CACHE_HOME` set to `xdg`), in `lang`.
fn grade_with_cache(
    dir: &std::path::Path,
    cache: Option<&str>,
    xdg: Option<&std::path::Path>,
    lang: &str,
) -> std::process::Output {
    let mut command = pi_course(dir);
    match cache {
        Some(cache) => command.env("PI_COURSE_CACHE", cache),
        None => command.env_remove("PI_COURSE_CACHE"),
    };
    if let Some(xdg) = xdg {
        command.env("XDG_CACHE_HOME", xdg);
    }
    command.args(["grade", "--lang", lang]).output().unwrap()
}

#[test]
fn a_cache_that_is_a_file_names_the_variable_and_the_fix() {
    let (guard, dir) = practice();
    let file = guard.path().join("cache-file");
    fs::write(&file, "not a directory").unwrap();
    let under = file.join("sub");
    for cache in [&file, &under] {
        for (lang, words) in [
            ("zh", ["无法使用构建缓存", "PI_COURSE_CACHE", "取消设置"]),
            (
                "en",
                ["Cannot use the build cache", "PI_COURSE_CACHE", "unset it"],
            ),
        ] {
            let out = grade_with_cache(&dir, Some(cache.to_str().unwrap()), None, lang);
            assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
            for word in words {
                assert!(stderr(&out).contains(word), "{word:?}\n{}", describe(&out));
            }
            assert!(!stderr(&out).contains("os error"), "{}", describe(&out));
        }
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), "not a directory");
    // The default place, under a cache home that is a file, says what to check instead.
    for (lang, word) in [("zh", "检查"), ("en", "Check the permissions")] {
        let out = grade_with_cache(&dir, None, Some(&file), lang);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(stderr(&out).contains(word), "{}", describe(&out));
    }
}

#[test]
fn a_read_only_cache_is_bad_input_with_the_fix() {
    // Root writes in a read-only directory, so the check is only meaningful for other users.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: running as root, where a read-only directory is still writable");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let (guard, dir) = practice();
    let cache = guard.path().join("read-only-cache");
    fs::create_dir(&cache).unwrap();
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o555)).unwrap();
    for (lang, word) in [
        ("zh", "无法使用构建缓存"),
        ("en", "Cannot use the build cache"),
    ] {
        let out = grade_with_cache(&dir, Some(cache.to_str().unwrap()), None, lang);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(stderr(&out).contains(word), "{}", describe(&out));
        assert!(
            stderr(&out).contains("PI_COURSE_CACHE"),
            "{}",
            describe(&out)
        );
    }
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_relative_cache_is_refused() {
    let (_guard, dir) = practice();
    for (lang, words) in [
        ("zh", ["相对路径", "绝对路径"]),
        ("en", ["is a relative path", "absolute path"]),
    ] {
        let out = grade_with_cache(&dir, Some("relative-cache"), None, lang);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        for word in words {
            assert!(stderr(&out).contains(word), "{word:?}\n{}", describe(&out));
        }
    }
    assert!(!dir.join("relative-cache").exists());
}

/// Starts a grade in a cache of its own (empty), waits for the first-grade notice on stderr, deletes the
/// cache while the dependencies compile, and returns the grade's exit code and stderr + stdout.
fn grade_and_delete_the_cache(lang: &str) -> (Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    let (guard, dir) = practice();
    let cache = guard.path().join("own-cache");
    let mut child = pi_course(&dir)
        .env("PI_COURSE_CACHE", &cache)
        .args(["grade", "--lang", lang])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if line.contains("首次评分") || line.contains("first grade") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    for _ in 0..100 {
        if fs::remove_dir_all(&cache).is_ok() || !cache.exists() {
            break;
        }
    }
    err.read_to_string(&mut seen).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    (
        status.code(),
        format!("--- stderr\n{seen}--- stdout\n{out}"),
    )
}

#[test]
fn the_first_grade_says_it_compiles_dependencies_and_a_deleted_cache_says_so() {
    let (code, text) = grade_and_delete_the_cache("zh");
    assert!(text.contains("首次评分：依赖只编译这一次"), "{text}");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("构建缓存") && text.contains("被删除"),
        "{text}"
    );
    assert!(!text.contains("编译失败"), "{text}");
    let (code, text) = grade_and_delete_the_cache("en");
    assert!(
        text.contains("first grade: compiling dependencies once"),
        "{text}"
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("was deleted while this grade was building"),
        "{text}"
    );
    assert!(!text.contains("Does not compile"), "{text}");
}

#[test]
fn a_grade_in_a_built_cache_says_nothing_about_a_first_grade() {
    let (_guard, dir) = practice();
    let _ = grade(&dir, &[]);
    for lang in ["zh", "en"] {
        let out = grade(&dir, &["--lang", lang]);
        assert!(!stderr(&out).contains("首次评分"), "{}", describe(&out));
        assert!(!stderr(&out).contains("first grade"), "{}", describe(&out));
    }
}

#[test]
fn the_first_grade_counts_the_crates_on_a_terminal() {
    let (guard, dir) = practice();
    let mut command = pi_course(&dir);
    command
        .env("PI_COURSE_CACHE", guard.path().join("own-cache"))
        .args(["grade", "--lang", "en"]);
    let text = on_a_terminal(command);
    assert!(
        text.contains("first grade: compiling dependencies once"),
        "{text}"
    );
    // The spinner's line: "first grade: compiling dependencies, N/M crates", N growing.
    let counts: Vec<usize> = text
        .split("compiling dependencies, ")
        .skip(1)
        .filter_map(|rest| rest.split('/').next()?.parse().ok())
        .collect();
    assert!(counts.iter().any(|&n| n > 0), "{text}");
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert!(text.contains(" crates"), "{text}");
}

// ---------------------------------------------------------------------------------------------------
// README.md's "Set up", as written
// ---------------------------------------------------------------------------------------------------

/// The commands of README.md's "Set up" section: its `sh` block, one command a line, without comments.
fn set_up_commands() -> Vec<String> {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let (_, section) = readme
        .split_once("\n## Set up\n")
        .expect("README.md has a \"Set up\" section");
    let section = section.split("\n## ").next().unwrap();
    let (_, block) = section
        .split_once("```sh\n")
        .expect("\"Set up\" shows its commands in a sh block");
    let (block, _) = block.split_once("```").expect("the sh block ends");
    block
        .lines()
        .map(|line| line.split(" #").next().unwrap().trim().to_string())
        .filter(|line| !line.is_empty())
        .collect()
}

/// A newcomer's environment: a home directory of their own, in which `~/.cargo/bin` is on PATH first (as
/// rustup sets it up), and this machine's toolchain (its cargo and rustup homes, so nothing is downloaded
/// again).
fn newcomer(home: &Path, command: &str) -> Command {
    let real_home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    let path = format!(
        "{}:{}",
        home.join(".cargo/bin").display(),
        std::env::var("PATH").unwrap()
    );
    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", command])
        .current_dir(repo())
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        // `cargo install` puts the tool where a newcomer's cargo would: their own ~/.cargo/bin.
        .env("CARGO_INSTALL_ROOT", home.join(".cargo"))
        .env("PI_COURSE_CACHE", cache())
        .stdin(Stdio::null());
    for name in ["RUSTUP_TOOLCHAIN", "LANG", ALLOW_UNSANDBOXED] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd
}

/// This build's target directory (`target/`), the parent of `CARGO_TARGET_TMPDIR`.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The practice directories in `home`.
fn practice_dirs(home: &Path) -> Vec<PathBuf> {
    fs::read_dir(home)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join(".pi-course/practice.toml").is_file())
        .collect()
}

/// README.md's two set-up commands, parsed out of it and run as written in a fresh home directory: the
/// first installs `pi-course` and makes a practice directory, which then grades; the second installs
/// what the tests need (nothing, once this machine has it) and runs `cargo test` with the arguments it
/// is given, here one small test. Bounded: the install builds in a target directory of its own, kept
/// between runs, with the release profile unoptimised (the command is the README's, the build cheaper),
/// and the grade uses the tests' shared build cache.
#[test]
fn the_readmes_set_up_commands_work_in_a_fresh_home() {
    let commands = set_up_commands();
    assert_eq!(
        commands.len(),
        2,
        "\"Set up\" is two commands, the main job and the tests: {commands:?}"
    );
    let (install, tests) = (&commands[0], &commands[1]);
    assert!(
        install.starts_with("cargo install ") && install.contains("pi-course practice 07 "),
        "the first command installs pi-course and makes a practice directory: {install}"
    );
    assert!(
        tests.starts_with("scripts/test.sh"),
        "the second command is the test script: {tests}"
    );

    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = newcomer(home.path(), install)
        .env("CARGO_TARGET_DIR", target_dir().join("newcomer"))
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "true")
        .output()
        .unwrap();
    assert!(out.status.success(), "{install}\n{}", describe(&out));
    let installed = home.path().join(".cargo/bin/pi-course");
    assert!(installed.is_file(), "{install}\n{}", describe(&out));
    let made = practice_dirs(home.path());
    assert_eq!(
        made.len(),
        1,
        "{install}: one practice directory in the home: {made:?}"
    );

    // The installed tool grades it: the skeleton fails every required group.
    let out = newcomer(home.path(), "pi-course grade \"$1\" --format json")
        .arg("grade")
        .arg(&made[0])
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", describe(&out)));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    for slug in REQUIRED {
        assert_eq!(group_status(&report, slug), "fail", "{report:#}");
    }

    // The test script, as written, with one small test of this file as its arguments. It uses this
    // build's own target directory, where that test is built already.
    let one = "skeleton_prints_the_pristine_file_in_the_learners_language";
    let script = format!("{tests} --test cli newcomer::{one}");
    let out = newcomer(home.path(), &script)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{script}\n{}", describe(&out));
    for checked in ["== chromium: ", "== rust-analyzer: ", "== node v"] {
        assert!(text.contains(checked), "{script}: no {checked:?}\n{text}");
    }
    // The script runs the tests with cargo-nextest where it is installed, else with cargo test; either
    // way with the arguments it was given, and this one test passes.
    let nextest = Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let (runner, passed) = if nextest {
        (
            "== cargo nextest run --workspace --no-fail-fast --test cli newcomer::",
            "PASS".to_string(),
        )
    } else {
        (
            "== cargo test --test cli newcomer::",
            format!("test newcomer::{one} ... ok"),
        )
    };
    assert!(text.contains(runner), "{script}: no {runner:?}\n{text}");
    assert!(
        text.contains(&passed)
            && text.contains(&format!("newcomer::{one}"))
            && text.contains("1 passed"),
        "{script}\n{text}"
    );
}

/// Every subcommand's `--help` ends with examples and its exit codes, in the language asked for; `watch`
/// names its `e` key; `grade-class` and `merge-class` offer only the formats they take; SUBMISSIONS
/// names the TypeScript track's files too.
#[test]
fn every_subcommands_help_has_examples_and_exit_codes() {
    let here = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let out = run(here.path(), args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", describe(&out));
        stdout(&out)
    };
    for sub in SUBCOMMANDS {
        let en = help(&[sub, "--help", "--lang", "en"]);
        assert!(
            en.contains("Examples:\n  pi-course ") && en.contains("Exit status:\n  0  "),
            "{sub}:\n{en}"
        );
        let zh = help(&[sub, "--help", "--lang", "zh"]);
        assert!(
            zh.contains("示例：\n  pi-course ") && zh.contains("退出码：\n  0  "),
            "{sub}:\n{zh}"
        );
        let tail = &en[en.find("Examples:").unwrap()..];
        assert!(
            !tail.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
            "{sub}:\n{tail}"
        );
    }
    // The key list in the subcommand's description and in the help's tail.
    let watch = help(&["watch", "--help", "--lang", "en"]);
    assert!(
        watch.contains("e explain the first failing test"),
        "{watch}"
    );
    assert!(
        watch.contains("Keys: h hint · e explain the first failing test"),
        "{watch}"
    );
    let zh_keys = help(&["watch", "--help"]);
    assert!(
        zh_keys.contains("按键：h 提示 · e 对照第一个未通过的测试"),
        "{zh_keys}"
    );
    for sub in ["grade-class", "merge-class"] {
        let text = help(&[sub, "--help", "--lang", "en"]);
        assert!(text.contains("[possible values: human, json]"), "{text}");
        assert!(!text.contains("gradescope"), "{sub}:\n{text}");
        let text = help(&[sub, "--help"]);
        assert!(text.contains("可选：human、json"), "{text}");
        assert!(!text.contains("gradescope"), "{sub}:\n{text}");
        let out = run(
            here.path(),
            &[sub, "x", "--out", "y", "--format", "gradescope"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    }
    let class = help(&["grade-class", "--help"]);
    assert!(
        class.contains("NAME.ts") && class.contains("agent-loop.ts"),
        "{class}"
    );
    // The grade help says what a grade does with the folder it is run in, and Ctrl-C's status.
    let grade = help(&["grade", "--help", "--lang", "en"]);
    assert!(grade.contains("130  interrupted with Ctrl-C"), "{grade}");
}
