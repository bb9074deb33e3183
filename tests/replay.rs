//! What the judge gives a learner and an instructor beside the verdicts: `--seed N` replays a grade's
//! instances, and `pi-course explain` shows a failing test's expected and actual timelines.

mod support;

use serde_json::Value;
use support::*;

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
