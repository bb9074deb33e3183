//! The chapter's tests are a true instrument: the reference passes every group and the skeleton fails
//! every required group, naming the Lab to work on. (Each deliberate bug in
//! `chapters/07-agent-loop/mutants.toml` is a case of its own: `course::cases`.)

use crate::support::*;

#[test]
fn the_reference_passes_and_the_skeleton_fails() {
    let (_tmp, dir) = practice();
    let (code, json) = grade_json(&dir, &[]);
    assert_eq!(
        (code, json["status"].as_str()),
        (1, Some("fail")),
        "{json:#}"
    );
    for slug in REQUIRED {
        assert_eq!(
            group_status(&json, slug),
            "fail",
            "the skeleton passes {slug}: {json:#}"
        );
    }
    // Each failure names the Lab to work on: on the skeleton, every test reaches Lab 7.1's todo!()
    // first, so every message sends the learner to finish Lab 7.1, whichever group the test is in, and
    // says it reached the skeleton's unfinished part.
    for g in json["groups"].as_array().unwrap() {
        for t in g["tests"].as_array().unwrap() {
            let message = t["message"].as_str().unwrap_or("");
            let first = message.lines().next().unwrap_or("");
            assert!(
                first.contains("Lab 7.1") && first.contains("还没写完的部分"),
                "{} fails on the skeleton without sending the learner to Lab 7.1: {message}",
                t["name"]
            );
        }
    }
    write_loop(&dir, &solution());
    let (code, json) = grade_json(&dir, &[]);
    assert_eq!(
        (code, json["status"].as_str()),
        (0, Some("pass")),
        "{json:#}"
    );
    for g in json["groups"].as_array().unwrap() {
        assert_eq!(
            g["status"], "pass",
            "the reference fails {}: {json:#}",
            g["slug"]
        );
    }
}
