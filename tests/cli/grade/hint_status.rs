//! `pi-course hint`, `status` and `list` through the real binary, in both languages, before and after a
//! grade; and what an editor needs from a practice directory.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::support;
use crate::support::{chapter_manifest, describe, pi_course, practice, practice_ts, run, stdout};

/// The stdout of a run that must succeed.
fn ok(cwd: &Path, args: &[&str]) -> String {
    let out = run(cwd, args);
    assert!(out.status.success(), "{args:?}\n{}", describe(&out));
    assert!(out.stderr.is_empty(), "{args:?}\n{}", describe(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The stderr of a run that must fail with exit status 2 (bad input), printing nothing on stdout.
fn bad_input(cwd: &Path, args: &[&str]) -> String {
    let out = run(cwd, args);
    assert_eq!(out.status.code(), Some(2), "{args:?}\n{}", describe(&out));
    assert!(out.stdout.is_empty(), "{args:?}\n{}", describe(&out));
    String::from_utf8(out.stderr).unwrap()
}

struct Lab {
    lab: String,
    slug: String,
    name_zh: String,
    name_en: String,
    hint_zh: String,
    hint_en: String,
}

/// The chapter's title and Labs, from the manifest.
fn chapter() -> (String, String, Vec<Lab>) {
    let m = chapter_manifest();
    let s = |v: &toml::Value| v.as_str().unwrap().trim().to_string();
    let labs = m["group"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| Lab {
            lab: s(&g["lab"]),
            slug: s(&g["slug"]),
            name_zh: s(&g["name"]["zh"]),
            name_en: s(&g["name"]["en"]),
            hint_zh: s(&g["hint"]["zh"]),
            hint_en: s(&g["hint"]["en"]),
        })
        .collect();
    (s(&m["title"]["zh"]), s(&m["title"]["en"]), labs)
}

fn lab<'a>(labs: &'a [Lab], number: &str) -> &'a Lab {
    labs.iter().find(|l| l.lab == number).unwrap()
}

/// The line of `text` about Lab `number` (`✗ Lab 7.2  单工具往返 ...`).
fn line_of<'a>(text: &'a str, number: &str) -> &'a str {
    let needle = format!("Lab {number} ");
    text.lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no line for Lab {number} in\n{text}"))
}

#[test]
fn without_a_grade_hint_shows_the_first_lab_and_says_to_grade() {
    let (_guard, dir) = practice();
    let (_, _, labs) = chapter();
    let first = &labs[0];
    let d = dir.to_str().unwrap();

    let zh = ok(&dir, &["hint"]);
    assert!(zh.contains("还没有评分"), "{zh}");
    assert!(zh.contains("pi-course grade"), "{zh}");
    assert!(zh.contains(&first.hint_zh), "{zh}");
    assert!(
        zh.contains(&format!("Lab {} {}", first.lab, first.name_zh)),
        "{zh}"
    );
    // The hint points at the guide, not at code.
    assert!(zh.contains("GUIDE.md"), "{zh}");

    let en = ok(dir.parent().unwrap(), &["hint", d, "--lang", "en"]);
    assert!(en.contains("no grade yet"), "{en}");
    assert!(en.contains(&first.hint_en), "{en}");
    assert!(
        en.contains(&format!("Lab {} {}", first.lab, first.name_en)),
        "{en}"
    );
    assert!(en.contains("GUIDE.en.md"), "{en}");
    assert!(!en.contains(&first.hint_zh), "{en}");

    // PI_COURSE_LANG works as --lang does.
    let out = pi_course(dir.parent().unwrap())
        .args(["hint", d])
        .env("PI_COURSE_LANG", "en")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), en);
}

#[test]
fn without_a_grade_status_shows_the_chapter_and_how_to_start_over() {
    let (_guard, dir) = practice();
    let (title_zh, title_en, _) = chapter();

    let zh = ok(&dir, &["status"]);
    assert!(zh.contains(&format!("第 07 章：{title_zh}")), "{zh}");
    assert!(zh.contains("还没有评分"), "{zh}");
    assert!(zh.contains("给定文件都和发下来时一样"), "{zh}");
    assert!(zh.contains("不会被原地重置"), "{zh}");
    assert!(zh.contains("pi-course practice 07 ../p-2"), "{zh}");

    let en = ok(dir.parent().unwrap(), &["status", "p", "--lang", "en"]);
    assert!(en.contains(&format!("Chapter 07: {title_en}")), "{en}");
    assert!(en.contains("Not graded yet"), "{en}");
    assert!(
        en.contains("Every given file is as it was handed out"),
        "{en}"
    );
    assert!(en.contains("never reset in place"), "{en}");
    assert!(en.contains("pi-course practice 07 p-2"), "{en}");
}

#[test]
fn after_a_grade_hint_and_status_show_each_labs_verdict() {
    let (_guard, dir) = practice();
    let (_, _, labs) = chapter();
    let out = run(&dir, &["grade"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the skeleton fails\n{}",
        describe(&out)
    );

    // hint: the first failing Lab, with its last verdict.
    let zh = ok(&dir, &["hint"]);
    let first = &labs[0];
    assert!(!zh.contains("还没有评分记录"), "{zh}");
    assert!(zh.contains(&first.hint_zh), "{zh}");
    assert!(zh.contains("上次评分：✗ 0/"), "{zh}");
    assert!(zh.contains("未通过（刚刚）"), "{zh}");
    assert!(zh.contains("pi-course grade --group 7.1"), "{zh}");
    let en = ok(&dir, &["hint", "--lang", "en"]);
    assert!(en.contains(&first.hint_en), "{en}");
    assert!(en.contains("last grade: ✗ 0/"), "{en}");
    assert!(en.contains("failed (just now)"), "{en}");

    // status: every Lab failed just now, and the next step is the first one.
    let zh = ok(&dir, &["status"]);
    assert!(zh.contains("每个 Lab 上次评分的结果"), "{zh}");
    for l in &labs {
        let line = line_of(&zh, &l.lab);
        assert!(line.contains('✗') && line.contains(&l.name_zh), "{line}");
        assert!(line.contains("未通过") && line.contains("刚刚"), "{line}");
    }
    assert!(
        zh.contains(&format!("下一步：Lab {} {}", first.lab, first.name_zh)),
        "{zh}"
    );
    assert!(!zh.contains("上次评分之后改过"), "{zh}");
    let en = ok(&dir, &["status", "--lang", "en"]);
    for l in &labs {
        let line = line_of(&en, &l.lab);
        assert!(line.contains('✗') && line.contains(&l.name_en), "{line}");
        assert!(
            line.contains("failed") && line.contains("just now"),
            "{line}"
        );
    }
    assert!(
        en.contains(&format!("Next: Lab {} {}", first.lab, first.name_en)),
        "{en}"
    );

    // Saving the learner's file after the grade makes the verdicts out of date, and status says so.
    let file = fs::File::options()
        .append(true)
        .open(dir.join("src/agent_loop.rs"))
        .unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(120))
        .unwrap();
    let zh = ok(&dir, &["status"]);
    assert!(zh.contains("src/agent_loop.rs 在上次评分之后改过"), "{zh}");
    let en = ok(&dir, &["status", "--lang", "en"]);
    assert!(
        en.contains("src/agent_loop.rs changed after the last grade"),
        "{en}"
    );

    // Grading one Lab keeps the others' verdicts; a Lab never graded reads so.
    let last = dir.join(".pi-course/last-grade.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&last).unwrap()).unwrap();
    json["labs"].as_object_mut().unwrap().remove("7.3");
    fs::write(&last, json.to_string()).unwrap();
    let zh = ok(&dir, &["status"]);
    assert!(line_of(&zh, "7.3").contains("还没有评分"), "{zh}");
    let en = ok(&dir, &["status", "--lang", "en"]);
    assert!(line_of(&en, "7.3").contains("not graded yet"), "{en}");
}

#[test]
fn a_named_lab_gets_its_hint_by_number_slug_or_name() {
    let (_guard, dir) = practice();
    let (_, _, labs) = chapter();
    let third = lab(&labs, "7.3");
    let d = dir.to_str().unwrap();
    let parent = dir.parent().unwrap();

    for query in [
        "7.3",
        "Lab 7.3",
        third.slug.as_str(),
        third.name_zh.as_str(),
    ] {
        let zh = ok(parent, &["hint", d, query]);
        assert!(zh.contains(&third.hint_zh), "{query}: {zh}");
        assert!(!zh.contains("还没有评分记录"), "{query}: {zh}");
    }
    let en = ok(parent, &["hint", d, &third.name_en, "--lang", "en"]);
    assert!(en.contains(&third.hint_en), "{en}");
    assert!(en.contains("Hint for Lab 7.3"), "{en}");

    // Inside the practice directory, a single argument that names a Lab is the Lab.
    let zh = ok(&dir, &["hint", "7.3"]);
    assert!(zh.contains(&third.hint_zh), "{zh}");
    let en = ok(&dir, &["--lang", "en", "hint", &third.slug]);
    assert!(en.contains(&third.hint_en), "{en}");

    // The optional Lab says it is optional.
    let bonus = labs.iter().find(|l| l.lab == "7.6").unwrap();
    let zh = ok(&dir, &["hint", "7.6"]);
    assert!(zh.contains(&bonus.hint_zh) && zh.contains("可选"), "{zh}");
}

#[test]
fn an_unknown_lab_is_bad_input_listing_the_labs() {
    let (_guard, dir) = practice();
    let (_, _, labs) = chapter();
    let d = dir.to_str().unwrap();
    let parent = dir.parent().unwrap();

    let zh = bad_input(parent, &["hint", d, "7.9"]);
    assert!(zh.contains("本章没有 Lab “7.9”"), "{zh}");
    for l in &labs {
        assert!(
            zh.contains(&l.lab) && zh.contains(&l.slug) && zh.contains(&l.name_zh),
            "{zh}"
        );
    }
    let en = bad_input(parent, &["hint", d, "nope", "--lang", "en"]);
    assert!(en.contains("no Lab \"nope\""), "{en}");
    for l in &labs {
        assert!(en.contains(&l.slug) && en.contains(&l.name_en), "{en}");
    }

    // Inside the practice directory: neither a directory nor a Lab.
    let zh = bad_input(&dir, &["hint", "7.9"]);
    assert!(zh.contains("既不是目录，也不是本章的 Lab"), "{zh}");
    assert!(zh.contains("plain-stop"), "{zh}");
}

#[test]
fn outside_a_practice_directory_hint_and_status_are_bad_input() {
    let empty = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let e = empty.path().to_str().unwrap();
    for args in [vec!["hint"], vec!["status"], vec!["hint", "7.3"]] {
        let zh = bad_input(empty.path(), &args);
        assert!(zh.contains("不是练习目录"), "{args:?}: {zh}");
        assert!(zh.contains("pi-course practice 07"), "{args:?}: {zh}");
    }
    for cmd in ["hint", "status"] {
        let zh = bad_input(empty.path(), &[cmd, e]);
        assert!(zh.contains("不是练习目录"), "{zh}");
        let en = bad_input(empty.path(), &[cmd, e, "--lang", "en"]);
        assert!(en.contains("is not a practice directory"), "{en}");
        let en = bad_input(empty.path(), &[cmd, "missing", "--lang", "en"]);
        assert!(en.contains("missing does not exist"), "{en}");
    }
}

#[test]
fn status_lists_changed_given_files_which_grading_ignores() {
    let (_guard, dir) = practice();
    let test_file = dir.join("tests/ch07/run.rs");
    let mut text = fs::read_to_string(&test_file).unwrap();
    text.push_str("\n// a learner's edit\n");
    fs::write(&test_file, text).unwrap();
    fs::remove_file(dir.join("GUIDE.en.md")).unwrap();

    let zh = ok(&dir, &["status"]);
    assert!(zh.contains("这些给定文件和原始版本不同"), "{zh}");
    assert!(zh.contains("评分时会忽略"), "{zh}");
    assert!(zh.contains("    tests/ch07/run.rs\n"), "{zh}");
    assert!(zh.contains("    GUIDE.en.md（已删除）"), "{zh}");
    assert!(
        !zh.contains("src/agent_loop.rs\n"),
        "the learner's file is not a given one\n{zh}"
    );

    let en = ok(&dir, &["status", "--lang", "en"]);
    assert!(
        en.contains("These given files differ from the originals"),
        "{en}"
    );
    assert!(en.contains("Grading ignores the changes"), "{en}");
    assert!(en.contains("    tests/ch07/run.rs\n"), "{en}");
    assert!(en.contains("    GUIDE.en.md (deleted)"), "{en}");
}

/// What rust-analyzer needs to open a practice directory cleanly: a package of its own (even inside
/// another workspace), a lock file that pins every dependency, build output kept out of version control,
/// and (tests/cli/course/content.rs) a skeleton that checks without warnings.
#[test]
fn a_practice_directory_opens_cleanly_in_an_editor() {
    let (_guard, dir) = practice();
    let manifest: toml::Table =
        toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    assert!(
        manifest.contains_key("workspace"),
        "Cargo.toml declares its own [workspace]"
    );
    assert!(dir.join("Cargo.lock").is_file(), "a Cargo.lock");
    let ignore = fs::read_to_string(dir.join(".gitignore")).unwrap();
    assert!(
        ignore
            .lines()
            .any(|l| ["target", "target/", "/target", "/target/"].contains(&l.trim())),
        ".gitignore ignores target:\n{ignore}"
    );

    // That the skeleton checks without warnings (clippy included, with the lock file as pinned) is
    // proved once, in tests/cli/course/content.rs.
}

/// `list` names every chapter and, under it, each group with its Lab number, slug and name (in the
/// learner's language), from anywhere: the catalog is inside the binary.
#[test]
fn list_shows_each_chapter_with_its_groups_in_both_languages() {
    let (title_zh, title_en, labs) = chapter();
    let anywhere = std::env::temp_dir();
    let zh = ok(&anywhere, &["list"]);
    let en = ok(&anywhere, &["--lang", "en", "list"]);
    assert!(zh.contains(&format!("07  {title_zh}")), "{zh}");
    assert!(en.contains(&format!("07  {title_en}")), "{en}");
    for l in &labs {
        let row = |text: &str| -> String {
            text.lines()
                .find(|line| line.trim_start().starts_with(&format!("{} ", l.lab)))
                .unwrap_or_else(|| panic!("no row for {} in\n{text}", l.lab))
                .to_string()
        };
        let (row_zh, row_en) = (row(&zh), row(&en));
        assert!(
            row_zh.contains(&l.slug) && row_zh.contains(&l.name_zh),
            "{row_zh}"
        );
        assert!(
            row_en.contains(&l.slug) && row_en.contains(&l.name_en),
            "{row_en}"
        );
    }
    assert!(
        zh.contains("（可选）") && en.contains("(optional)"),
        "{zh}\n{en}"
    );
}

/// Every command run in a folder inside a practice directory works on that directory, as cargo and git
/// look upward: grade, status, hint and explain, in both tracks and both languages (the directory's
/// language is found the same way). A directory named on the command line keeps its meaning.
#[test]
fn from_a_folder_inside_a_practice_directory_every_command_finds_it() {
    let (_rust_tmp, rust) = practice();
    let (_ts_tmp, ts) = practice_ts();
    let en_parent = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = run(en_parent.path(), &["practice", "07", "en", "--lang", "en"]);
    assert!(out.status.success(), "{}", describe(&out));
    let english = en_parent.path().join("en");
    for (dir, english) in [(&rust, false), (&ts, false), (&english, true)] {
        let deep = dir.join("src/deeper/still");
        fs::create_dir_all(&deep).unwrap();
        for cwd in [dir.join("src"), deep.clone()] {
            let out = run(&cwd, &["grade", "-g", "7.1", "--format", "json"]);
            assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(json["groups"][0]["lab"], "7.1", "{json:#}");
            let human = run(&cwd, &["grade", "-g", "7.1"]);
            assert_eq!(human.status.code(), Some(1), "{}", describe(&human));
            let text = stdout(&human);
            assert!(text.contains("Lab 7.1"), "{text}");
            assert_eq!(
                text.contains("did not pass"),
                english,
                "in the directory's language:\n{text}"
            );

            let status = ok(&cwd, &["status"]);
            let absolute = dir.canonicalize().unwrap();
            assert!(status.contains(&absolute.display().to_string()), "{status}");
            assert!(status.contains("Lab 7.1"), "{status}");
            let hint = ok(&cwd, &["hint", "--lang", "en"]);
            assert!(hint.starts_with("Hint for Lab 7.1"), "{hint}");
            let hint = ok(&cwd, &["hint", "7.3", "--lang", "zh"]);
            assert!(hint.contains("Lab 7.3"), "{hint}");
            for lang in ["zh", "en"] {
                let explained = ok(&cwd, &["explain", "7.1", "--lang", lang]);
                assert!(explained.contains("(Lab 7.1)"), "{explained}");
            }
        }
        // Named explicitly, a folder inside is not the practice directory.
        for args in [
            vec!["grade", "."],
            vec!["status", "."],
            vec!["grade", "src"],
        ] {
            let cwd = if args[1] == "src" {
                dir.clone()
            } else {
                dir.join("src")
            };
            let err = bad_input(&cwd, &args);
            assert!(
                err.contains("不是练习目录") || err.contains("not a practice directory"),
                "{err}"
            );
        }
    }
    // Nowhere inside one: it says that it looked above too.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let zh = bad_input(outside.path(), &["grade"]);
    assert!(zh.contains("它上面的目录也都不是"), "{zh}");
    let en = bad_input(outside.path(), &["status", "--lang", "en"]);
    assert!(en.contains("nor is any directory above it"), "{en}");
}

/// Runs `pi-course ARGS` in `cwd` as a user who cannot write there: this user when not root (permission
/// bits stop it), else `nobody`, through setpriv (root's writes are not stopped by permission bits).
fn run_unprivileged(cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut command = if support::is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_pi-course"));
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_pi-course"))
    };
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("PI_COURSE_LANG")
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

/// Makes every directory under `dir` (and `dir`) read-only (0555), or writable again (0755).
fn set_writable(dir: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if writable { 0o755 } else { 0o555 };
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.unwrap();
        if entry.file_type().is_dir() {
            fs::set_permissions(entry.path(), fs::Permissions::from_mode(mode)).unwrap();
        }
    }
}

/// In a read-only practice directory no grade can be kept: hint, explain and status say so and what to
/// do, in both languages, instead of asking for a grade that would change nothing.
#[test]
fn a_read_only_practice_directory_says_why_no_grade_is_kept_not_to_grade_again() {
    let (_tmp, dir) = practice();
    set_writable(&dir, false);
    let outputs: Vec<(String, std::process::Output)> = [
        vec!["hint"],
        vec!["explain"],
        vec!["status"],
        vec!["hint", "--lang", "en"],
        vec!["explain", "--lang", "en"],
        vec!["status", "--lang", "en"],
    ]
    .into_iter()
    .map(|args| (args.join(" "), run_unprivileged(&dir, &args)))
    .collect();
    set_writable(&dir, true);
    for (args, out) in outputs {
        assert_eq!(out.status.code(), Some(0), "{args}: {}", describe(&out));
        let text = stdout(&out);
        if args.contains("en") {
            assert!(
                text.contains("This practice directory is read-only"),
                "{args}: {text}"
            );
            assert!(text.contains("chmod -R u+w"), "{args}: {text}");
            for circle in ["No grade yet", "There is no grade yet", "Not graded yet"] {
                assert!(!text.contains(circle), "{args}: {text}");
            }
        } else {
            assert!(text.contains("这个练习目录是只读的"), "{args}: {text}");
            assert!(text.contains("chmod -R u+w"), "{args}: {text}");
            for circle in ["还没有评分记录", "还没有评分。"] {
                assert!(!text.contains(circle), "{args}: {text}");
            }
        }
    }
}

/// The command `status` suggests for starting over can be pasted into a shell as it is, also when the
/// directory's name has a space or a quote.
#[test]
fn status_quotes_the_new_directory_it_suggests() {
    let parent = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = run(parent.path(), &["practice", "07", "我的 练习"]);
    assert!(out.status.success(), "{}", describe(&out));
    let dir = parent.path().join("我的 练习");
    let text = ok(&dir, &["status"]);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("pi-course practice 07"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        line.trim(),
        "pi-course practice 07 '../我的 练习-2'",
        "{text}"
    );
    let text = ok(parent.path(), &["status", "我的 练习", "--lang", "en"]);
    assert!(
        text.contains("pi-course practice 07 '我的 练习-2' --lang en"),
        "{text}"
    );
}
