//! `pi-course grade` on real practice directories: the skeleton, the reference, every way a learner's loop
//! can go wrong (hang, busy loop, abort, exit, compile error), tampering, bad input and Ctrl-C.
//!
//! Every grade shares one build cache (see `support::cache`), so the dependencies compile once per machine
//! and each test costs about one incremental rebuild of the learner's crate.

use std::collections::BTreeSet;
use std::fs;
use std::process::Stdio;
use std::time::Duration;

use crate::support::*;
use serde_json::Value;

fn groups(json: &Value) -> &Vec<Value> {
    json["groups"].as_array().unwrap()
}

#[test]
fn the_skeleton_fails_every_group() {
    let (tmp, dir) = practice();
    let junit = tmp.path().join("skeleton.xml");
    let (code, json) = grade_json(&dir, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(code, 1, "{json:#}");
    let xml = fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    for (suite, g) in doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .zip(groups(&json))
    {
        let failures = suite
            .descendants()
            .filter(|n| n.has_tag_name("failure"))
            .count();
        assert_eq!(
            suite.attribute("failures"),
            Some(failures.to_string().as_str())
        );
        assert_eq!(failures as u64, g["total"].as_u64().unwrap(), "{xml}");
    }
    assert_eq!(json["status"], "fail", "{json:#}");
    assert_eq!(
        (json["score"].as_f64(), json["max"].as_f64()),
        (Some(0.0), Some(100.0)),
        "{json:#}"
    );
    for slug in REQUIRED {
        assert_eq!(group_status(&json, slug), "fail", "{slug}: {json:#}");
    }
    assert_eq!(json["warnings"].as_array().unwrap().len(), 0, "{json:#}");
    for g in groups(&json) {
        assert!(g["total"].as_u64().unwrap() > 0, "{g:#}");
        for t in g["tests"].as_array().unwrap() {
            assert!(!t["message"].as_str().unwrap().is_empty(), "{t:#}");
        }
    }

    // The same verdict for a person, in English: one line per group, failing tests with their message,
    // a closing summary; no spinner or color when not on a terminal.
    let out = grade(&dir, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let text = stdout(&out);
    assert!(!text.contains('\x1b'), "{text}");
    // Nothing on stderr but, maybe, that another grade held the build directory.
    let err = stderr(&out);
    assert!(
        err.lines()
            .all(|l| l.starts_with("waiting for another grade")),
        "{}",
        describe(&out)
    );
    for slug in REQUIRED {
        let line = text
            .lines()
            .find(|l| l.contains(slug))
            .unwrap_or_else(|| panic!("{slug}:\n{text}"));
        assert!(line.starts_with('✗'), "{line}");
    }
    assert!(text.contains("0 of 5 groups passed"), "{text}");
    assert!(text.contains("score 0/100"), "{text}");
    assert!(text.contains("0/20 pts"), "{text}");
    assert!(text.contains("plain-text stop"), "{text}");
    // To fit a screen: the Lab to work on now, 7.1, with its failing tests (the first one's message in
    // full), every other group as its verdict line alone, the next step named and how to see the rest.
    // `--group` (and `--all`) gives every chosen group's failing tests and messages in full.
    // The lines under the single-tool group's row (indented tests and their messages).
    let single_tool_lines = |text: &str| {
        text.lines()
            .skip_while(|l| !l.contains("single-tool"))
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .count()
    };
    assert!(text.contains("✗ plain_stop::"), "{text}");
    assert!(text.contains("Next: Lab 7.1"), "{text}");
    let brief = single_tool_lines(&text);
    assert_eq!(brief, 0, "another group is its verdict line alone:\n{text}");
    assert!(
        text.contains("The rest: pi-course grade --all shows every failing test's message"),
        "{text}"
    );
    let out = grade(&dir, &["--lang", "en", "--group", "7.2"]);
    let text = stdout(&out);
    let single_tool = groups(&json)
        .iter()
        .find(|g| g["slug"] == "single-tool")
        .unwrap();
    assert_eq!(
        text.matches("✗ single_tool::").count() as u64,
        single_tool["total"].as_u64().unwrap(),
        "every failing test of the chosen group:\n{text}"
    );
    assert!(
        single_tool_lines(&text) > brief,
        "a chosen group's messages are shown in full:\n{text}"
    );

    // Chinese by default.
    let out = grade(&dir, &[]);
    assert!(stdout(&out).contains("纯文本 stop"), "{}", describe(&out));
    assert!(stdout(&out).contains("通过 0/5 组"), "{}", describe(&out));
}

#[test]
fn the_reference_passes_every_group_with_json_junit_and_a_record_per_lab() {
    let (tmp, dir) = practice();
    write_loop(&dir, &solution());
    let junit = tmp.path().join("report.xml");
    // Once the dependencies are cached, grading needs no network.
    let out = pi_course(&dir)
        .env("CARGO_NET_OFFLINE", "true")
        .args(["grade", "--format", "json", "--junit"])
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_schema(&json);
    assert_eq!(json["status"], "pass", "{json:#}");
    assert_eq!(
        groups(&json).len(),
        6,
        "five groups and the optional one: {json:#}"
    );
    for g in groups(&json) {
        assert_eq!(g["status"], "pass", "{g:#}");
        assert_eq!(g["passed"], g["total"], "{g:#}");
    }
    let bonus = groups(&json)
        .iter()
        .find(|g| g["slug"] == "duplicate-call-ids")
        .unwrap();
    assert_eq!(bonus["optional"], true);
    // Full marks; the bonus group is worth points of its own, but the total stops at the maximum.
    assert_eq!(
        (json["score"].as_f64(), json["max"].as_f64()),
        (Some(100.0), Some(100.0)),
        "{json:#}"
    );
    assert_eq!(bonus["score"].as_f64(), Some(10.0), "{bonus:#}");
    assert_eq!(groups(&json)[0]["name"], "纯文本 stop");
    assert_eq!(groups(&json)[0]["lab"], "7.1");

    // JUnit: well-formed, one suite per group with the right counts.
    let xml = fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 6);
    for (suite, g) in suites.iter().zip(groups(&json)) {
        assert_eq!(suite.attribute("name"), g["slug"].as_str());
        let cases = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .count();
        assert_eq!(cases as u64, g["total"].as_u64().unwrap());
        assert_eq!(suite.attribute("tests"), Some(cases.to_string().as_str()));
        assert_eq!(suite.attribute("failures"), Some("0"));
        assert_eq!(suite.attribute("errors"), Some("0"));
        let property = |name: &str| {
            suite
                .descendants()
                .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
                .and_then(|n| n.attribute("value"))
                .map(str::to_string)
        };
        let points = group_points(g["slug"].as_str().unwrap()).to_string();
        assert_eq!(property("score").as_deref(), Some(points.as_str()));
        assert_eq!(property("max").as_deref(), Some(points.as_str()));
        assert_eq!(property("grade.score").as_deref(), Some("100"));
        assert_eq!(property("grade.max").as_deref(), Some("100"));
    }
    assert!(!xml.contains("<failure"), "{xml}");
    assert!(fs::read_dir(tmp.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));

    // The verdict per Lab is recorded in the practice directory.
    let last: Value =
        serde_json::from_str(&fs::read_to_string(dir.join(".pi-course/last-grade.json")).unwrap())
            .unwrap();
    assert_eq!(last["labs"]["7.1"]["status"], "pass", "{last:#}");
    assert_eq!(
        last["labs"]["7.6"]["slug"], "duplicate-call-ids",
        "{last:#}"
    );

    // --group by slug, Chinese name and Lab number: exactly those, in chapter order.
    let (code, json) = grade_json(
        &dir,
        &["--group", "7.3", "-g", "单工具往返", "-g", "plain-stop"],
    );
    assert_eq!(code, 0);
    let slugs: Vec<&str> = groups(&json)
        .iter()
        .map(|g| g["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["plain-stop", "single-tool", "non-executing"]);

    // Human output on success.
    let out = grade(&dir, &["--lang", "en", "-g", "7.1"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).contains("The one group chosen passed"),
        "{}",
        describe(&out)
    );
    // One group chosen: its points are the maximum.
    assert!(stdout(&out).contains("score 20/20"), "{}", describe(&out));
    assert!(stdout(&out).contains("20/20 pts"), "{}", describe(&out));
}

#[test]
fn an_async_hang_does_not_pass() {
    let (_tmp, dir) = practice();
    write_loop(
        &dir,
        &solution_starting_with("std::future::pending::<()>().await;"),
    );
    let (code, json) = grade_json(&dir, &["-g", "7.1"]);
    assert_eq!(code, 1, "{json:#}");
    assert_ne!(group_status(&json, "plain-stop"), "pass", "{json:#}");
}

#[test]
fn a_busy_loop_times_out_and_leaves_no_process() {
    let (_tmp, dir) = practice();
    write_loop(
        &dir,
        &solution_starting_with("loop { std::hint::spin_loop(); }"),
    );
    let mut child = pi_course(&dir)
        .args([
            "grade",
            "--format",
            "json",
            "--timeout",
            "1",
            "-g",
            "plain-stop",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch_children(&mut child, Duration::from_secs(600), |_| false);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&json);
    assert_eq!(group_status(&json, "plain-stop"), "timeout", "{json:#}");
    for t in groups(&json)[0]["tests"].as_array().unwrap() {
        assert_eq!(t["status"], "timeout", "{t:#}");
    }
    let tests: BTreeSet<i32> = seen
        .iter()
        .filter(|p| p.args.contains("/deps/ch07-"))
        .map(|p| p.pgid)
        .collect();
    assert!(!tests.is_empty(), "saw no test process: {seen:#?}");
    assert_groups_gone(&tests);
}

#[test]
fn an_abort_and_an_early_exit_fail() {
    let (_tmp, dir) = practice();
    write_loop(&dir, &solution_starting_with("std::process::abort();"));
    let (code, json) = grade_json(&dir, &["-g", "7.1", "--lang", "en"]);
    assert_eq!(code, 1);
    assert_eq!(group_status(&json, "plain-stop"), "fail", "{json:#}");
    let first = &groups(&json)[0]["tests"][0];
    assert!(
        first["message"].as_str().unwrap().contains("SIGABRT"),
        "{first:#}"
    );

    write_loop(&dir, &solution_starting_with("std::process::exit(0);"));
    let (code, json) = grade_json(&dir, &["-g", "7.1", "--lang", "en"]);
    assert_eq!(code, 1);
    assert_eq!(group_status(&json, "plain-stop"), "fail", "{json:#}");
    let first = &groups(&json)[0]["tests"][0];
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 0"),
        "{first:#}"
    );
}

#[test]
fn a_compile_error_points_at_the_learners_file() {
    let (_tmp, dir) = practice();
    let code = solution_starting_with("let broken: u32 = \"not a number\";");
    let line = code.lines().position(|l| l.contains("let broken")).unwrap() + 1;
    write_loop(&dir, &code);

    // From inside the practice directory: the plain path.
    let out = pi_course(&dir)
        .args(["grade", "--format", "json", "--junit", "build.xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let xml = fs::read_to_string(dir.join("build.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let errors: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("error"))
        .collect();
    assert_eq!(errors.len(), 6, "one build error per group: {xml}");
    assert!(
        errors.iter().all(|e| e.attribute("type") == Some("build")),
        "{xml}"
    );
    assert!(
        errors[0]
            .text()
            .unwrap_or_default()
            .contains("src/agent_loop.rs:"),
        "{xml}"
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&json);
    assert_eq!(json["status"], "error");
    let message = json["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("src/agent_loop.rs:{line}:")),
        "{message}"
    );
    assert!(!message.contains('\x1b'), "{message}");
    assert!(
        groups(&json).iter().all(|g| g["status"] == "error"),
        "{json:#}"
    );

    // From elsewhere: the path as the learner named the directory.
    let parent = dir.parent().unwrap();
    let out = pi_course(parent).args(["grade", "p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("--> p/src/agent_loop.rs:{line}:")),
        "{text}"
    );
    assert!(text.contains("error[E0308]"), "{text}");
}

#[test]
fn tampered_given_files_are_graded_pristine_with_a_warning() {
    let (_tmp, dir) = practice();
    // Tests that pass whatever the loop does, and a changed course file.
    let trivial: String = REQUIRED
        .iter()
        .map(|s| format!("mod {} {{ #[test] fn ok() {{}} }}\n", s.replace('-', "_")))
        .collect();
    fs::write(dir.join("tests/ch07/lib.rs"), trivial).unwrap();
    fs::write(dir.join("tests/ch07/run.rs"), "").unwrap();
    let message_rs = dir.join("course/src/message.rs");
    let mut course = fs::read_to_string(&message_rs).unwrap();
    course.push_str("\n// changed\n");
    fs::write(&message_rs, course).unwrap();

    let (code, json) = grade_json(&dir, &[]);
    assert_eq!(code, 1, "{json:#}");
    assert_eq!(json["status"], "fail");
    for slug in REQUIRED {
        assert_eq!(group_status(&json, slug), "fail", "{slug}: {json:#}");
    }
    let warnings = json["warnings"].to_string();
    for f in [
        "tests/ch07/lib.rs",
        "tests/ch07/run.rs",
        "course/src/message.rs",
    ] {
        assert!(warnings.contains(f), "{f} not in {warnings}");
    }
    // The learner's files are left as they are.
    assert_eq!(
        fs::read_to_string(dir.join("tests/ch07/run.rs")).unwrap(),
        ""
    );
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    for (args, wanted) in [
        (vec!["grade", "empty"], "empty 不是练习目录"),
        (vec!["grade", "missing"], "missing 不存在"),
    ] {
        let out = pi_course(tmp.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(stderr(&out).contains(wanted), "{}", describe(&out));
        assert!(out.stdout.is_empty(), "{}", describe(&out));
    }
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);

    let (_tmp, dir) = practice();
    let before = files(&dir);
    for (args, wanted) in [
        (vec!["-g", "7.9"], "7.9"),
        (
            vec!["-g", "plain-stop", "-g", "no-such-group"],
            "no-such-group",
        ),
        (vec!["--timeout", "0"], "--timeout"),
        (vec!["--junit", "/nonexistent/dir/report.xml"], "report.xml"),
    ] {
        let out = grade(&dir, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{}", describe(&out));
        assert!(stderr(&out).contains(wanted), "{}", describe(&out));
        assert!(out.stdout.is_empty(), "{}", describe(&out));
    }
    // An unknown group lists the valid ones.
    let out = grade(&dir, &["--lang", "en", "-g", "7.9"]);
    for valid in ["7.1", "plain-stop", "plain-text stop", "cancel-and-limits"] {
        assert!(stderr(&out).contains(valid), "{}", describe(&out));
    }
    assert_eq!(
        files(&dir),
        before,
        "a refused grade changed the practice directory"
    );
}

#[test]
fn ctrl_c_leaves_no_process_behind() {
    let (_tmp, dir) = practice();
    write_loop(
        &dir,
        &solution_starting_with("loop { std::hint::spin_loop(); }"),
    );
    // Warm the build first, so the interrupt lands while tests run.
    let _ = grade(&dir, &["-g", "7.1", "--timeout", "1"]);

    let mut child = pi_course(&dir)
        .args(["grade", "-g", "7.1", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch_children(&mut child, Duration::from_secs(600), |seen| {
        seen.iter()
            .filter(|p| p.args.contains("/deps/ch07-"))
            .count()
            >= 2
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    let groups: BTreeSet<i32> = seen.iter().map(|p| p.pgid).collect();
    assert!(
        seen.iter().any(|p| p.args.contains("/deps/ch07-")),
        "saw no test process: {seen:#?}"
    );
    assert_groups_gone(&groups);
}

#[test]
fn ctrl_c_during_the_build_stops_cargo_too() {
    let (_tmp, dir) = practice();
    // A loop no grade has built before, so cargo has work to do.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    write_loop(
        &dir,
        &solution_starting_with(&format!("let _interrupted_build = {nanos}u128;")),
    );
    let mut child = pi_course(&dir)
        .args(["grade", "-g", "7.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch_children(&mut child, Duration::from_secs(600), |seen| {
        seen.iter()
            .any(|p| p.args.contains("cargo") || p.args.contains("/deps/ch07-"))
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(
        matches!(out.status.code(), Some(143) | Some(0) | Some(1)),
        "{}",
        describe(&out)
    );
    let groups: BTreeSet<i32> = seen.iter().map(|p| p.pgid).collect();
    assert!(!groups.is_empty(), "saw no child");
    assert_groups_gone(&groups);
}

/// Ctrl-C (SIGINT) of a grade whose loop hangs: the tests' scratch directories go with it, and nothing is
/// left in the temporary directory.
#[test]
fn ctrl_c_leaves_nothing_in_the_temporary_directory() {
    let (_tmp, dir) = practice();
    write_loop(
        &dir,
        &solution_starting_with("loop { std::hint::spin_loop(); }"),
    );
    // Warm the build first, so the interrupt lands while tests run.
    let _ = grade(&dir, &["-g", "7.1", "--timeout", "1"]);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (out, left, tests) =
            interrupt_grade(&dir, &["-g", "7.1", "--timeout", "60"], signal, |p| {
                p.args.contains("/deps/ch07-")
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

/// A time limit of 0 is refused with a plain sentence in the language asked for, not clap's range.
#[test]
fn a_zero_time_limit_is_refused_plainly() {
    let (_tmp, dir) = practice();
    for flag in ["--timeout", "--build-timeout"] {
        for (lang, wanted) in [
            ("zh", "时间限制至少为 1 秒"),
            ("en", "a time limit is at least 1 second"),
        ] {
            let out = grade(&dir, &["--lang", lang, flag, "0"]);
            assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
            let err = stderr(&out);
            assert!(err.contains(wanted) && err.contains(flag), "{err}");
            assert!(!err.contains("18446744073709551615"), "{err}");
        }
    }
}

/// The optional Lab's line says how its points count: a bonus that decides nothing, the total capped.
#[test]
fn the_optional_lab_reads_as_a_bonus() {
    let (_tmp, dir) = practice();
    for (lang, wanted) in [
        (
            "zh",
            "可选 Lab 7.6：未通过（不决定整体是否通过；它的 10 分是加分，总分最多 100 分）",
        ),
        (
            "en",
            "Optional Lab 7.6: failed (it does not decide whether the grade passes; its 10 points are a bonus, and the total stays at most 100)",
        ),
    ] {
        let out = grade(&dir, &["--lang", lang]);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(stdout(&out).contains(wanted), "{}", describe(&out));
    }
}
