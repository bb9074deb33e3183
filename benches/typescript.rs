//! The TypeScript track's edit-to-verdict loop, measured: `cargo bench --bench typescript`.
//!
//! Prints medians and ratios measured side by side in one run (this machine is noisy; ratios move less
//! than absolute figures). Not a test: nothing here asserts a time.
//!
//! Figures: `practice --track typescript`; the first grade with an empty cache (installing TypeScript
//! with `npm ci`, then a full compile); a one-line edit of `src/agent-loop.ts` to a five-group verdict,
//! warm, against a bare `tsc -p . && node --test dist/test/07-*.test.js` of the same edits in the same
//! directory (the target: at most 1.1 times); and the Rust track's warm re-grade beside both.
//!
//! Environment: `BENCH_RUNS` (default 7); `PI_COURSE_CACHE` (default: the test suite's cache).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cache, median, runs, secs, timed_with, BIN, REPO};

fn practice(dir: &Path, track: &str) -> Duration {
    timed_with(
        Command::new(BIN)
            .args(["practice", "07", "--track", track])
            .arg(dir)
            .stdout(Stdio::null()),
        &cache(),
        true,
    )
}

fn grade(dir: &Path, cache: &Path, expect_pass: bool) -> Duration {
    timed_with(
        Command::new(BIN)
            .args(["grade", "--format", "json"])
            .arg(dir)
            .stdout(Stdio::null()),
        cache,
        expect_pass,
    )
}

/// The reference loop of `track`, as its editable file holds it.
fn reference(track: &str) -> (String, &'static str) {
    match track {
        "typescript" => (
            read("chapters/07-agent-loop/typescript/solution/src/agent-loop.ts"),
            "src/agent-loop.ts",
        ),
        _ => (
            read("chapters/07-agent-loop/solution/src/agent_loop.rs"),
            "src/agent_loop.rs",
        ),
    }
}

fn read(path: &str) -> String {
    fs::read_to_string(Path::new(REPO).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A one-line edit as a learner makes one: the reference with a comment line added at its top (`add`) or
/// not, numbered so that every build sees a change.
fn edit(dir: &Path, track: &str, n: usize, add: bool) {
    let (code, path) = reference(track);
    let text = if add {
        format!("// edit {n}\n{code}")
    } else {
        code
    };
    fs::write(dir.join(path), text).unwrap();
}

/// `tsc -p . && node --test dist/test/07-*.test.js` in the practice directory: what the chapter's text
/// has a learner run by hand, with the same pinned TypeScript.
fn bare_tsc_and_node_test(dir: &Path) -> Duration {
    let tests: Vec<PathBuf> = fs::read_dir(dir.join("dist/test"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("07-") && n.ends_with(".test.js"))
                })
                .collect()
        })
        .unwrap_or_default();
    let start = Instant::now();
    let tsc = Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "-p", "."])
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("tsc");
    assert!(tsc.success(), "tsc failed in {}", dir.display());
    let test = Command::new("node")
        .arg("--test")
        .args(&tests)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("node --test");
    let took = start.elapsed();
    assert!(test.success(), "node --test failed in {}", dir.display());
    took
}

fn main() {
    let n = runs();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    println!(
        "pi-course TypeScript track benchmark: medians of {n} runs; ratios measured side by side in this run"
    );
    println!("cache: {}", cache().display());

    let practice_times: Vec<Duration> = (0..n.max(15))
        .map(|i| practice(&root.join(format!("p{i}")), "typescript"))
        .collect();

    // The first grade on a machine: an empty cache, so TypeScript is installed and compiled from nothing.
    let first: Vec<Duration> = (0..3)
        .map(|i| {
            let empty = root.join(format!("empty-cache{i}"));
            let dir = root.join(format!("first{i}"));
            practice(&dir, "typescript");
            grade(&dir, &empty, false)
        })
        .collect();

    // The learner's directory with the reference; the bare loop needs the dependencies in it, as a
    // learner's `npm ci` makes them.
    let dir = root.join("loop");
    practice(&dir, "typescript");
    edit(&dir, "typescript", 0, false);
    let npm = Command::new("npm")
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(&dir)
        .status()
        .expect("npm ci");
    assert!(npm.success(), "npm ci failed");
    grade(&dir, &cache(), true);
    bare_tsc_and_node_test(&dir);

    let rust = root.join("rust");
    practice(&rust, "rust");
    edit(&rust, "rust", 0, false);
    grade(&rust, &cache(), true);

    let (mut graded, mut bare, mut rust_graded) = (Vec::new(), Vec::new(), Vec::new());
    for i in 1..=n {
        // Each build sees its own previous state change by one line: the grade's slot and the bare
        // directory's dist/ alternate between the two versions.
        edit(&dir, "typescript", i, i % 2 == 1);
        graded.push(grade(&dir, &cache(), true));
        edit(&dir, "typescript", i, i % 2 == 0);
        bare.push(bare_tsc_and_node_test(&dir));
        edit(&rust, "rust", i, i % 2 == 1);
        rust_graded.push(grade(&rust, &cache(), true));
    }

    let (graded, bare, rust_graded) = (median(graded), median(bare), median(rust_graded));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!();
    println!(
        "practice --track typescript          {:>10}",
        secs(median(practice_times))
    );
    println!(
        "first grade, empty cache (npm ci)    {:>10}",
        secs(median(first))
    );
    println!("edit to verdict (TypeScript)         {:>10}", secs(graded));
    println!("bare tsc && node --test, same edits  {:>10}", secs(bare));
    println!(
        "  ratio grade / bare                 {:>10.2}x   (target: at most 1.10x)",
        ratio(graded, bare)
    );
    println!(
        "edit to verdict (Rust track)         {:>10}",
        secs(rust_graded)
    );
    println!(
        "  ratio TypeScript / Rust            {:>10.2}x",
        ratio(graded, rust_graded)
    );
}
