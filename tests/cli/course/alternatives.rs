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

/// The shapes the guard must cover are all there. Each alternative is graded as a case of its own
/// (`course::cases::ch07::rust::alternative::*`), where it must pass every group.
#[test]
fn every_shape_the_guard_must_cover_has_an_alternative() {
    let loops = alternatives();
    for shape in SHAPES {
        assert!(loops.contains_key(shape), "no alternatives/{shape}.rs");
    }
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
