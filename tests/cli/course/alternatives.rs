//! A guard against over-constraint: correct loops of shapes unlike the reference
//! (`chapters/07-agent-loop/alternatives/*.rs`) pass every group through the real practice-and-grade
//! path. They stay in this repository: none is embedded in the binary or written into a practice
//! directory.

use std::collections::BTreeMap;
use std::fs;

use crate::support::*;

/// Every alternative loop, by file stem.
fn alternatives() -> BTreeMap<String, String> {
    let dir = chapter_dir().join("alternatives");
    let mut found = BTreeMap::new();
    for entry in fs::read_dir(&dir).expect("the alternatives directory") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            found.insert(stem, fs::read_to_string(&path).unwrap());
        }
    }
    found
}

/// The shapes the guard must always cover, whatever else is added.
const SHAPES: [&str; 10] = [
    "os_threads",
    "spawn_blocking",
    "join_all",
    "joinset_slots",
    "sorted_afterwards",
    "spawn_per_call",
    "recursive",
    "mpsc_relay",
    "state_machine",
    "flat",
];

#[test]
fn every_alternative_loop_passes_every_group() {
    let loops = alternatives();
    for shape in SHAPES {
        assert!(loops.contains_key(shape), "no alternatives/{shape}.rs");
    }
    let (_tmp, dir) = practice();
    let mut failed = Vec::new();
    for (name, code) in &loops {
        write_loop(&dir, code);
        let (exit, json) = grade_json(&dir, &[]);
        for g in json["groups"].as_array().unwrap() {
            if g["status"] == "pass" {
                continue;
            }
            let failing: Vec<String> = g["tests"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["status"] != "pass")
                .map(|t| format!("    {} ({}): {}", t["name"], t["status"], t["message"]))
                .collect();
            failed.push(format!(
                "{name}: {} is {}\n{}",
                g["slug"],
                g["status"],
                failing.join("\n")
            ));
        }
        if exit != 0 || json["status"] != "pass" {
            failed.push(format!("{name}: exit {exit}, status {}", json["status"]));
        }
        for slug in REQUIRED {
            assert!(
                json["groups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|g| g["slug"] == slug),
                "{name}: no group {slug} in {json:#}"
            );
        }
    }
    assert!(
        failed.is_empty(),
        "correct loops the chapter's tests reject:\n{}",
        failed.join("\n")
    );
}

#[test]
fn no_alternative_is_written_into_a_practice_directory() {
    let (_tmp, dir) = practice();
    let written = files(&dir);
    let loops = alternatives();
    assert!(!loops.is_empty());
    for (name, code) in &loops {
        for (path, bytes) in &written {
            assert!(
                bytes.as_slice() != code.as_bytes(),
                "{} is the alternative loop {name}",
                path.display()
            );
        }
    }
    for path in written.keys() {
        assert!(
            !path.starts_with("alternatives"),
            "{} was written into a practice directory",
            path.display()
        );
    }
}
