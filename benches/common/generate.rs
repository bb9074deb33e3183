//! A generated class, as the class benchmarks grade it: correct loops (the reference and the other correct
//! loops of `alternatives/`), untouched skeletons (Chinese and English), mutants (every deliberate bug of
//! `mutants.toml` in turn) and loops that do not compile; as single files, folders and practice
//! directories; every file unique, as a class's are.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{BIN, REPO};

pub fn chapter(rel: &str) -> PathBuf {
    Path::new(REPO).join("chapters/07-agent-loop").join(rel)
}

pub fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every mutant of `mutants.toml`, applied to the reference.
pub fn mutants(reference: &str) -> Vec<String> {
    let table: toml::Table = toml::from_str(&read(&chapter("mutants.toml"))).unwrap();
    table["mutant"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut code = reference.to_string();
            for edit in m["edit"].as_array().unwrap() {
                code = code.replacen(
                    edit["find"].as_str().unwrap(),
                    edit["replace"].as_str().unwrap(),
                    1,
                );
            }
            code
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Correct,
    Skeleton,
    Mutant,
    CompileError,
}

/// Writes the class into `subs` and returns each learner's kind.
pub fn generate(subs: &Path, size: usize) -> BTreeMap<String, Kind> {
    let reference = read(&chapter("solution/src/agent_loop.rs"));
    let mut correct = vec![reference.clone()];
    let mut alternatives: Vec<PathBuf> = fs::read_dir(chapter("alternatives"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    alternatives.sort();
    correct.extend(alternatives.iter().map(|p| read(p)));
    let skeletons = [
        read(&chapter("skeleton/src/agent_loop.rs")),
        read(&chapter("skeleton.en/src/agent_loop.rs")),
    ];
    let mutants = mutants(&reference);
    let mut kinds = BTreeMap::new();
    for i in 0..size {
        // A quarter correct, a quarter skeletons, a third mutants, the rest do not compile.
        let (kind, code) = match i % 12 {
            0..=2 => (Kind::Correct, correct[i % correct.len()].clone()),
            3..=5 => (Kind::Skeleton, skeletons[i % 2].clone()),
            6..=9 => (Kind::Mutant, mutants[i % mutants.len()].clone()),
            _ => (
                Kind::CompileError,
                format!("{}\nfn unfinished( {{\n", correct[i % correct.len()]),
            ),
        };
        // Unique, as every learner's file is.
        let code = format!("{code}\n// learner {i}\n");
        let name = format!("learner-{i:03}");
        match i % 10 {
            0 => {
                let status = Command::new(BIN)
                    .args(["practice", "07"])
                    .arg(subs.join(&name))
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                assert!(status.success());
                fs::write(subs.join(&name).join("src/agent_loop.rs"), code).unwrap();
            }
            1..=3 => {
                fs::create_dir_all(subs.join(&name)).unwrap();
                fs::write(subs.join(&name).join("agent_loop.rs"), code).unwrap();
            }
            _ => fs::write(subs.join(format!("{name}.rs")), code).unwrap(),
        }
        kinds.insert(name, kind);
    }
    kinds
}
