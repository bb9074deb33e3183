//! Helpers shared by the integration tests: run the real binary, and look at directory trees.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (where `chapters/` and `snapshots/` live).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real `pi-course` binary, run in `cwd`. `PI_COURSE_LANG` is removed, so the output is Chinese unless
/// the test asks otherwise.
pub fn pi_course(cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pi-course"));
    command.current_dir(cwd).env_remove("PI_COURSE_LANG");
    command
}

/// Runs `pi-course ARGS` in `cwd` to completion.
pub fn run(cwd: &Path, args: &[&str]) -> Output {
    pi_course(cwd).args(args).output().expect("run pi-course")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Both streams, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        stdout(output),
        stderr(output)
    )
}

/// Makes a practice directory for chapter 07 at `parent/name` and returns its path.
pub fn practice(parent: &Path, name: &str) -> PathBuf {
    let output = run(parent, &["practice", "07", name]);
    assert!(
        output.status.success(),
        "practice failed\n{}",
        describe(&output)
    );
    parent.join(name)
}

/// One entry of a directory tree, as [`tree`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File(Vec<u8>),
    Symlink(PathBuf),
}

/// Everything under `root` (not `root` itself), by path relative to it: the way to prove that a command
/// changed nothing on disk.
pub fn tree(root: &Path) -> BTreeMap<PathBuf, Entry> {
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|entry| {
            let entry = entry.expect("walk the tree");
            let path = entry.path();
            let kind = entry.file_type();
            let recorded = if kind.is_symlink() {
                Entry::Symlink(fs::read_link(path).expect("read link"))
            } else if kind.is_dir() {
                Entry::Dir
            } else {
                Entry::File(fs::read(path).expect("read file"))
            };
            (path.strip_prefix(root).unwrap().to_path_buf(), recorded)
        })
        .collect()
}

/// The names directly inside `dir`, sorted (hidden ones included).
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Running as root, where permission bits do not stop writes.
pub fn is_root() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
    #[cfg(not(unix))]
    {
        false
    }
}
