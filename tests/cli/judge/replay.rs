//! What the judge gives a learner and an instructor beside the verdicts: `--seed N` replays a grade's
//! instances, and `pi-course explain` shows a failing test's expected and actual timelines.

use crate::support::*;
use serde_json::Value;

/// A report without what differs between two runs of one grade (none of it is timing today, but a
/// report may grow a duration): the verdicts, points, messages and seed.
fn verdicts(json: &Value) -> Value {
    let mut json = json.clone();
    json["groups"] = replayable(&json["groups"]);
    json
}

#[test]
fn a_seed_replays_a_grade_and_another_seed_draws_other_instances() {
    let (_tmp, dir) = practice();
    // A mutant: some tests fail, with messages that quote the drawn instances (call ids, tool names).
    write_loop(&dir, &mutant("tool-definitions-not-sent"));
    let (code, first) = grade_json(&dir, &["--seed", "31337", "--lang", "en"]);
    assert_eq!(code, 1, "{first:#}");
    assert_eq!(first["instances"]["seed"], 31337, "{first:#}");
    let (_, again) = grade_json(&dir, &["--seed", "31337", "--lang", "en"]);
    assert_eq!(
        verdicts(&first),
        verdicts(&again),
        "the same seed, another grade"
    );

    // Without a seed, each grade draws its own and names it.
    let (_, fresh) = grade_json(&dir, &["--lang", "en"]);
    let (_, fresh_again) = grade_json(&dir, &["--lang", "en"]);
    let (a, b) = (
        &fresh["instances"]["seed"],
        &fresh_again["instances"]["seed"],
    );
    assert!(a.is_u64() && b.is_u64() && a != b, "{a} {b}");

    // Another seed: the same verdicts for this loop, but other instances in its messages.
    let (_, other) = grade_json(&dir, &["--seed", "31338", "--lang", "en"]);
    assert_eq!(other["instances"]["seed"], 31338);
    let statuses = |json: &Value| -> Vec<(String, String)> {
        report_tests(json)
            .iter()
            .map(|(_, t)| (t["name"].to_string(), t["status"].to_string()))
            .collect()
    };
    assert_eq!(statuses(&first), statuses(&other), "{other:#}");
    let messages = |json: &Value| -> Vec<String> {
        report_tests(json)
            .iter()
            .filter_map(|(_, t)| t["message"].as_str().map(str::to_string))
            .collect()
    };
    assert!(!messages(&first).is_empty());
    assert_ne!(
        messages(&first),
        messages(&other),
        "another seed drew the same instances"
    );

    // A seed that is not a number is bad input, and changes nothing.
    let before = files(&dir);
    let out = grade(&dir, &["--seed", "seven"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(stderr(&out).contains("--seed"), "{}", describe(&out));
    assert_eq!(files(&dir), before);
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303f}' | '\u{4e00}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

#[test]
fn explain_shows_a_failing_tests_two_timelines_and_says_when_there_is_nothing_to_show() {
    let (_tmp, dir) = practice();
    let explain = |args: &[&str]| {
        pi_course(&dir)
            .arg("explain")
            .args(args)
            .output()
            .expect("run pi-course explain")
    };

    // No grade yet: it says so, in each language, and succeeds.
    let out = explain(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).contains("还没有评分记录"),
        "{}",
        describe(&out)
    );
    let out = explain(&["--lang", "en"]);
    assert!(stdout(&out).contains("No grade yet"), "{}", describe(&out));

    // A mutant that leaves the tool definitions out of the request: caught at step 1 of Lab 7.1.
    write_loop(&dir, &mutant("tool-definitions-not-sent"));
    let (code, json) = grade_json(&dir, &["--seed", "5150", "-g", "7.1"]);
    assert_eq!(code, 1, "{json:#}");
    let failing: Vec<String> = report_tests(&json)
        .iter()
        .filter(|(_, t)| t["status"] != "pass")
        .map(|(_, t)| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!failing.is_empty(), "{json:#}");
    let test = &failing[0];

    // Chinese by default: the test, the judge's message, both columns, the divergence marked, the seed.
    let out = explain(&[test]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = stdout(&out);
    for wanted in [
        test.as_str(),
        "应为（本章）",
        "实际（你的 loop）",
        "Lab 7.1",
        "5150",
    ] {
        assert!(text.contains(wanted), "{wanted}:\n{text}");
    }
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with('>')).collect();
    assert_eq!(marked.len(), 1, "one divergence, marked:\n{text}");
    assert!(marked[0].contains("request #1"), "{text}");

    // English: the same timelines, no Chinese at all.
    let out = explain(&["--lang", "en", test]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = stdout(&out);
    for wanted in [
        test.as_str(),
        "expected (the chapter)",
        "happened (your loop)",
        "Lab 7.1",
        "--seed 5150",
    ] {
        assert!(text.contains(wanted), "{wanted}:\n{text}");
    }
    assert_eq!(
        text.lines().filter(|l| l.starts_with('>')).count(),
        1,
        "{text}"
    );
    assert!(!text.chars().any(is_cjk), "Chinese in --lang en:\n{text}");

    // No test named: the first failing one. A directory named first, then the test, works from elsewhere.
    let out = explain(&["--lang", "en"]);
    assert!(stdout(&out).contains(test.as_str()), "{}", describe(&out));
    let out = pi_course(dir.parent().unwrap())
        .args(["explain", "--lang", "en"])
        .arg(&dir)
        .arg(test)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(stdout(&out).contains(test.as_str()), "{}", describe(&out));

    // An unknown test is bad input that lists the failing ones, and writes nothing.
    let before = files(&dir);
    let out = explain(&["--lang", "en", "plain_stop::no_such_test"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = stderr(&out);
    assert!(err.contains("plain_stop::no_such_test"), "{err}");
    for name in &failing {
        assert!(err.contains(name.as_str()), "{name} not listed:\n{err}");
    }
    assert_eq!(files(&dir), before);

    // After an all-pass grade: nothing failed, and it says so.
    write_loop(&dir, &solution());
    let (code, json) = grade_json(&dir, &["-g", "7.1"]);
    assert_eq!(code, 0, "{json:#}");
    let out = explain(&["--lang", "en"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stdout(&out).contains("No test failed in the last grade"),
        "{}",
        describe(&out)
    );
    let out = explain(&[]);
    assert!(
        stdout(&out).contains("上一次评分没有失败的测试"),
        "{}",
        describe(&out)
    );
    // The traces it reads are the last grade's, in the practice directory's own folder.
    assert!(dir.join(".pi-course/last-traces.json").is_file());
}

/// `pi-course explain WHAT` on a fresh skeleton's grade, in both tracks and both languages: a group by
/// Lab number, slug (either spelling) or name is its first failing test; a test's unique part is that
/// test; a part several failing tests share lists exactly those (exit 2); a name that matches nothing
/// lists the groups (exit 2).
#[test]
fn explain_takes_a_group_a_test_or_a_unique_part_of_a_name_on_both_tracks() {
    let (_rust_tmp, rust) = practice();
    let (_ts_tmp, ts) = practice_ts();
    for dir in [&rust, &ts] {
        let (code, json) = grade_json(dir, &["--seed", "4242"]);
        assert_eq!(code, 1, "{json:#}");
        let failing: Vec<(String, String)> = report_tests(&json)
            .iter()
            .filter(|(_, t)| t["status"] != "pass")
            .map(|(slug, t)| (slug.clone(), t["name"].as_str().unwrap().to_string()))
            .collect();
        let first_of = |slug: &str| -> &str { &failing.iter().find(|(s, _)| s == slug).unwrap().1 };
        let explain = |args: &[&str]| pi_course(dir).arg("explain").args(args).output().unwrap();
        // The heading line: the test's name, then its Lab.
        let heading = |out: &std::process::Output| -> String {
            stdout(out).lines().next().unwrap_or_default().to_string()
        };
        for lang in ["zh", "en"] {
            for (query, slug) in [
                ("plain_stop", "plain-stop"),
                ("plain-stop", "plain-stop"),
                ("7.1", "plain-stop"),
                ("Lab 7.1", "plain-stop"),
                ("纯文本 stop", "plain-stop"),
                ("single_tool", "single-tool"),
                ("7.4", "concurrent-tools"),
            ] {
                let out = explain(&["--lang", lang, query]);
                assert_eq!(out.status.code(), Some(0), "{query}: {}", describe(&out));
                let want = format!("{}  (Lab ", first_of(slug));
                assert!(
                    heading(&out).starts_with(&want),
                    "{query}: {}",
                    describe(&out)
                );
            }
            // A part only one failing test has, written with `_` or spaces: that test.
            let unique = failing
                .iter()
                .map(|(_, n)| n)
                .find(|n| n.contains("request_holds") || n.contains("request holds"))
                .unwrap();
            for query in ["the_request_holds", "the request holds"] {
                let out = explain(&["--lang", lang, query]);
                assert_eq!(out.status.code(), Some(0), "{query}: {}", describe(&out));
                assert!(
                    heading(&out).starts_with(unique.as_str()),
                    "{}",
                    describe(&out)
                );
            }
            // Several: exactly those, and no other test.
            let out = explain(&["--lang", lang, "round_trip"]);
            assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
            let err = stderr(&out);
            let shared: Vec<&String> = failing
                .iter()
                .map(|(_, n)| n)
                .filter(|n| n.replace('_', " ").contains("round trip"))
                .collect();
            assert_eq!(shared.len(), 2, "{failing:?}");
            let listed: Vec<&str> = err
                .lines()
                .filter(|l| l.starts_with("  "))
                .map(str::trim)
                .collect();
            assert_eq!(listed, shared, "{err}");
            // Nothing: the groups to name, not 64 tests.
            let out = explain(&["--lang", lang, "no_such_thing"]);
            assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
            let err = stderr(&out);
            assert!(err.lines().count() <= 12, "{err}");
            for slug in ["plain-stop", "cancel-and-limits", "duplicate-call-ids"] {
                assert!(err.contains(slug), "{err}");
            }
            if lang == "en" {
                let without_names = failing
                    .iter()
                    .fold(err.clone(), |e, (_, n)| e.replace(n.as_str(), ""));
                assert!(
                    !without_names.contains("重复") && !without_names.chars().any(is_cjk),
                    "Chinese in --lang en:\n{err}"
                );
                assert!(err.contains("tests failed in the last grade"), "{err}");
            } else {
                assert!(err.contains("个测试失败"), "{err}");
            }
        }
    }
}
