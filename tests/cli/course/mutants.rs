//! The chapter's tests are a true instrument: the reference passes every group, the skeleton fails every
//! required group, and each deliberate bug in `chapters/07-agent-loop/mutants.toml` is caught by the group
//! it names.

use crate::support::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Mutants {
    mutant: Vec<Mutant>,
}

#[derive(Deserialize)]
struct Mutant {
    name: String,
    group: String,
    description: String,
    edit: Vec<Edit>,
}

#[derive(Deserialize)]
struct Edit {
    find: String,
    replace: String,
}

fn mutants() -> Vec<Mutant> {
    let text = std::fs::read_to_string(chapter_dir().join("mutants.toml")).unwrap();
    toml::from_str::<Mutants>(&text)
        .expect("mutants.toml parses")
        .mutant
}

/// The reference with the mutant's edits applied in order; each `find` must occur exactly once.
fn mutate(reference: &str, m: &Mutant) -> String {
    let mut code = reference.to_string();
    for (i, e) in m.edit.iter().enumerate() {
        let n = code.matches(&e.find).count();
        assert_eq!(
            n,
            1,
            "mutant {}: edit {} must match exactly once, matches {n} times",
            m.name,
            i + 1
        );
        code = code.replacen(&e.find, &e.replace, 1);
    }
    assert_ne!(code, reference, "mutant {} changes nothing", m.name);
    code
}

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
    // first, so every message sends the learner to finish Lab 7.1, whichever group the test is in.
    for g in json["groups"].as_array().unwrap() {
        for t in g["tests"].as_array().unwrap() {
            let message = t["message"].as_str().unwrap_or("");
            let first = message.lines().next().unwrap_or("");
            assert!(
                first.contains("Lab 7.1") && first.contains("todo!()"),
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

/// Every mutant names a group of the chapter and a distinct name. Each is graded as a case of its own
/// (`course::cases::ch07::rust::mutant::*`), where its group must catch it; its edits apply there.
#[test]
fn every_mutant_names_a_group_and_a_name_of_its_own() {
    let mutants = mutants();
    assert!(!mutants.is_empty());
    let mut names = std::collections::BTreeSet::new();
    for m in &mutants {
        assert!(
            REQUIRED.contains(&m.group.as_str()) || m.group == "duplicate-call-ids",
            "{}: group {}",
            m.name,
            m.group
        );
        assert!(
            names.insert(m.name.as_str()),
            "two mutants are named {}",
            m.name
        );
        assert!(!m.description.is_empty(), "{}: a description", m.name);
        // Its edits apply to today's reference, each exactly once.
        mutate(&solution(), m);
    }
}
