//! The learner's edit-to-verdict loop, measured: `cargo bench --bench edit_loop`.
//!
//! Prints medians over several runs and ratios measured side by side in the same run (this machine is
//! noisy; absolute figures move, ratios move less). Not a test: nothing here asserts a time.
//!
//! Figures: `practice` wall time; a one-line edit of `src/agent_loop.rs` to a full five-group verdict
//! (warm); the same edit under a bare `cargo test --test ch07` in the same directory (the grader's
//! overhead); the first grade of a fresh directory against a warm re-grade; and where an edit's time goes
//! (cargo's own start, rustc of the learner's crate, rustc + link of the test crate, running the tests).
//!
//! Also the judge's own cost: every test's recorded trace (the reference's, on the practice directory's
//! fixed instances) compared with its expected trace, in process, against the edit-to-verdict time.
//!
//! Environment: `BENCH_RUNS` (default 7); `PI_COURSE_CACHE` (default: the test suite's cache, so
//! dependencies are usually built already).

mod common;

// The grader's own comparison.
use pi_course_judge::compare as judge;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{cache, median, ms, runs, secs, timed, BIN, REPO};

fn practice(dir: &Path) -> Duration {
    timed(Command::new(BIN).args(["practice", "07"]).arg(dir), true)
}

fn solution() -> String {
    fs::read_to_string(Path::new(REPO).join("chapters/07-agent-loop/solution/src/agent_loop.rs"))
        .expect("reference solution")
}

/// A one-line edit as a learner makes one: the reference with a statement added to (even `n`), or taken
/// out of (odd `n`), the loop's body, so the lines below it move, holding a different number each time.
/// [`Edits`] picks `n` so that every build sees one line added or taken out since its own previous build.
fn edit(dir: &Path, n: usize) {
    let anchor = "    let reason = loop {\n";
    let reference = solution();
    assert_eq!(
        reference.matches(anchor).count(),
        1,
        "the edit's anchor is in the reference"
    );
    let added = if n.is_multiple_of(2) {
        format!("    let _edit = {n};\n")
    } else {
        String::new()
    };
    let text = reference.replacen(anchor, &format!("{added}{anchor}"), 1);
    fs::write(dir.join("src/agent_loop.rs"), text).unwrap();
}

/// Edits for several builds that each keep their own state (the grader's slot, the bare targets): each
/// build's edit adds the line if its previous one took it out, and the other way round.
struct Edits {
    next: usize,
    added: std::collections::HashMap<&'static str, bool>,
}

impl Edits {
    fn new() -> Edits {
        Edits {
            next: 0,
            added: Default::default(),
        }
    }

    /// Edits `dir` for the next build of `target`.
    fn edit(&mut self, dir: &Path, target: &'static str) {
        let add = !self.added.get(target).copied().unwrap_or(false);
        self.added.insert(target, add);
        // An even number adds the line, an odd one takes it out.
        self.next += 1;
        let n = 2 * self.next + usize::from(!add);
        edit(dir, n);
    }
}

/// A learner's first edit of the skeleton: Lab 7.1's snapshot written in place of its `todo!()`.
fn first_step(dir: &Path) {
    let path = dir.join("src/agent_loop.rs");
    let skeleton = fs::read_to_string(&path).unwrap();
    let start = skeleton
        .find("fn snapshot(")
        .expect("the skeleton's snapshot function");
    let end = start + skeleton[start..].find("\n}\n").expect("its end") + 3;
    let done = format!(
        "{}fn snapshot(options: &AgentLoopOptions) -> AgentContext {{\n    options.context.lock().unwrap().clone()\n}}\n{}",
        &skeleton[..start],
        &skeleton[end..]
    );
    fs::write(path, done).unwrap();
}

fn grade(dir: &Path, expect_pass: bool) -> Duration {
    grade_with(dir, expect_pass, &[])
}

fn grade_with(dir: &Path, expect_pass: bool, args: &[&str]) -> Duration {
    timed(
        Command::new(BIN)
            .args(["grade", "--format", "json"])
            .args(args)
            .arg(dir)
            .stdout(Stdio::null()),
        expect_pass,
    )
}

/// `cargo build --lib` in the practice directory: the learner's crate alone, the floor of any grade.
fn bare_build_lib(dir: &Path, target: &Path) -> Duration {
    timed(
        Command::new("cargo")
            .args(["build", "-q", "--lib"])
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", target),
        true,
    )
}

fn bare_cargo_test(dir: &Path, target: &Path) -> Duration {
    timed(
        Command::new("cargo")
            .args(["test", "-q", "--test", "ch07"])
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", target)
            .env("RUST_BACKTRACE", "0"),
        true,
    )
}

/// The grader's build slot that last built `dir`'s loop (see src/cache.rs).
fn build_dir_of(dir: &Path) -> PathBuf {
    let mine = fs::read(dir.join("src/agent_loop.rs")).unwrap();
    let work = cache().join("work");
    fs::read_dir(&work)
        .expect("cache/work exists after a grade")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("07-"))
        .flat_map(|key| {
            fs::read_dir(key.path())
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
        })
        .map(|slot| slot.path())
        .find(|slot| fs::read(slot.join("src/agent_loop.rs")).is_ok_and(|b| b == mine))
        .expect("a slot that built this directory")
}

/// The CARGO_TARGET_DIR the grader uses for `build` (see src/cache.rs).
fn target_of(build: &Path) -> PathBuf {
    let key = build.parent().unwrap().file_name().unwrap();
    cache()
        .join("target")
        .join(key)
        .join(build.file_name().unwrap())
}

/// The grader's own account of one edit's grade (`PI_COURSE_TRACE=1` prints each stage's time): per
/// stage, its median over `n` edits and its median share of the grade's wall time. Crates that cargo
/// found fresh are summed into one line.
fn stages(dir: &Path, edits: &mut Edits, n: usize) -> Vec<(String, f64, f64)> {
    let mut runs: Vec<(f64, std::collections::BTreeMap<String, f64>)> = Vec::new();
    for _ in 0..n {
        edits.edit(dir, "slot");
        let started = std::time::Instant::now();
        let out = Command::new(BIN)
            .args(["grade", "--format", "json"])
            .arg(dir)
            .env("PI_COURSE_CACHE", cache())
            .env("PI_COURSE_TRACE", "1")
            .stdin(Stdio::null())
            .output()
            .expect("grade runs");
        let wall = started.elapsed().as_secs_f64();
        let mut laps = std::collections::BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            let Some((stage, secs)) = line
                .strip_prefix("[timing] ")
                .and_then(|l| l.rsplit_once(' '))
            else {
                continue;
            };
            let secs: f64 = secs.parse().unwrap_or(0.0);
            let stage = match stage.starts_with("build ") && secs < 0.005 {
                true => "build: crates cargo found fresh".to_string(),
                false => stage.to_string(),
            };
            *laps.entry(stage).or_insert(0.0) += secs;
        }
        let counted: f64 = laps.values().sum();
        laps.insert(
            "the rest: start, read, report, exit".into(),
            (wall - counted).max(0.0),
        );
        runs.push((wall, laps));
    }
    let middle = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let names: Vec<String> = runs[0].1.keys().cloned().collect();
    names
        .into_iter()
        .map(|name| {
            let of = |f: &dyn Fn(f64, f64) -> f64| {
                middle(
                    runs.iter()
                        .map(|(wall, laps)| f(*laps.get(&name).unwrap_or(&0.0), *wall))
                        .collect(),
                )
            };
            let secs = of(&|lap, _| lap);
            let share = of(&|lap, wall| lap / wall);
            (name, secs, share)
        })
        .collect()
}

/// Per-crate compile times of one incremental build, from cargo's `--timings` report.
fn timings(build: &Path) -> Vec<(String, f64)> {
    let target = target_of(build);
    let out = Command::new("cargo")
        .args([
            "test",
            "--no-run",
            "-q",
            "--locked",
            "--test",
            "ch07",
            "--timings",
        ])
        .current_dir(build)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html =
        fs::read_to_string(target.join("cargo-timings/cargo-timing.html")).unwrap_or_default();
    let Some(start) = html.find("const UNIT_DATA = ") else {
        return Vec::new();
    };
    let rest = &html[start + "const UNIT_DATA = ".len()..];
    let json = &rest[..rest.find(";\n").unwrap_or(rest.len())];
    let units: Vec<serde_json::Value> = serde_json::from_str(json).unwrap_or_default();
    units
        .iter()
        // Units cargo found fresh are listed too, with no time: only what was rebuilt matters here.
        .filter(|u| u["duration"].as_f64().unwrap_or(0.0) > 0.0005)
        .map(|u| {
            let name = format!(
                "{}{}",
                u["name"].as_str().unwrap_or("?"),
                u["target"].as_str().unwrap_or("")
            );
            (name, u["duration"].as_f64().unwrap_or(0.0))
        })
        .collect()
}

/// The median time to judge every test of one grade: the reference's traces, recorded by hand on the
/// practice directory's fixed instances (`PI_COURSE_TRACE=1`), compared with their expected traces.
fn judge_cost(dir: &Path, target: &Path, n: usize) -> Duration {
    let out = Command::new("cargo")
        .args(["test", "-q", "--test", "ch07"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("PI_COURSE_TRACE", "1")
        .output()
        .expect("cargo test runs");
    let mut traces: std::collections::BTreeMap<String, Vec<serde_json::Value>> = Default::default();
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        let Some((name, step)) = line.strip_prefix('[').and_then(|l| l.split_once("] ")) else {
            continue;
        };
        if let Ok(step) = serde_json::from_str(step) {
            traces.entry(name.to_string()).or_default().push(step);
        }
    }
    let fixture = fs::read_to_string(dir.join("tests/ch07/expected.json")).unwrap();
    let fixture: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    let cases: Vec<(serde_json::Value, Vec<serde_json::Value>)> = fixture["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| {
            let name = format!(
                "{}::{}",
                t["group"].as_str()?.replace('-', "_"),
                t["name"].as_str()?
            );
            Some((t["expected"].clone(), traces.remove(&name)?))
        })
        .collect();
    assert!(
        cases.len() > 50,
        "traces recorded for {} tests",
        cases.len()
    );
    let rounds = (0..n.max(5))
        .map(|_| {
            let started = std::time::Instant::now();
            for (expected, trace) in &cases {
                assert!(
                    judge::compare(expected, trace).is_ok(),
                    "the reference passes"
                );
            }
            started.elapsed()
        })
        .collect();
    median(rounds)
}

fn main() {
    // `cargo bench` passes --bench; accept and ignore harness arguments.
    let n = runs();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    println!("pi-course edit loop benchmark: medians of {n} runs; ratios measured side by side in this run");
    println!("cache: {}", cache().display());

    // practice: wall time of making a directory.
    let practice_times: Vec<Duration> = (0..n.max(15))
        .map(|i| practice(&root.join(format!("p{i}"))))
        .collect();

    // Warm up: the learner's directory with the reference answer; dependencies, the grader's build
    // directory and the bare `cargo test` target all built once.
    let dir = root.join("loop");
    practice(&dir);
    edit(&dir, 0);
    let bare_target = cache().join("bench-bare-target");
    let lib_target = cache().join("bench-lib-target");
    grade(&dir, true);
    bare_cargo_test(&dir, &bare_target);
    bare_build_lib(&dir, &lib_target);

    let (mut regrade, mut unsandboxed, mut bare, mut lib, mut fresh, mut first_edit) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut edits = Edits::new();
    let mut build = None;
    for i in 1..=n {
        edits.edit(&dir, "slot");
        regrade.push(grade(&dir, true));
        build = Some(build_dir_of(&dir));
        edits.edit(&dir, "lib");
        lib.push(bare_build_lib(&dir, &lib_target));
        edits.edit(&dir, "slot");
        unsandboxed.push(grade_with(&dir, true, &["--sandbox", "off"]));
        edits.edit(&dir, "test");
        bare.push(bare_cargo_test(&dir, &bare_target));
        // A fresh directory (the skeleton, as a learner starts) graded for the first time. The skeleton
        // fails every group, which is the expected verdict here.
        let fresh_dir = root.join(format!("fresh{i}"));
        practice(&fresh_dir);
        fresh.push(grade(&fresh_dir, false));
        // And the learner's first edit there: one `todo!()` of Lab 7.1 filled in.
        first_step(&fresh_dir);
        first_edit.push(grade(&fresh_dir, false));
    }

    // The judge's share: the traces of one whole grade compared with their expected traces.
    let judging = judge_cost(&dir, &bare_target, n);

    // Where the time of one edit goes, measured in the grader's own build directory.
    // A grade with nothing to rebuild: cargo's check, then listing and running the tests.
    let unchanged = median((0..n).map(|_| grade(&dir, true)).collect());
    let shares = stages(&dir, &mut edits, n);
    let build = build.expect("at least one run");
    edits.edit(&build, "slot");
    let units = timings(&build);
    let noop = median(
        (0..n)
            .map(|_| {
                timed(
                    Command::new("cargo")
                        .args(["test", "--no-run", "-q", "--locked", "--test", "ch07"])
                        .current_dir(&build)
                        .env("CARGO_TARGET_DIR", target_of(&build)),
                    true,
                )
            })
            .collect(),
    );

    let (p, r, b, f) = (
        median(practice_times),
        median(regrade.clone()),
        median(bare.clone()),
        median(fresh.clone()),
    );
    let ratio = |a: &[Duration], b: &[Duration]| {
        // Pairwise ratios of runs taken side by side, then their median: robust to drift in load.
        let mut rs: Vec<f64> = a
            .iter()
            .zip(b)
            .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64())
            .collect();
        rs.sort_by(|x, y| x.partial_cmp(y).unwrap());
        rs[rs.len() / 2]
    };
    println!();
    println!("{:<44} {:>10}   target", "figure", "median");
    println!("{:<44} {:>10}   < 30 ms", "practice 07 (wall)", ms(p));
    println!(
        "{:<44} {:>10}   <= 1.0 s",
        "one-line edit -> five-group verdict (grade)",
        secs(r)
    );
    println!(
        "{:<44} {:>10}",
        "one-line edit -> bare cargo test --test ch07",
        secs(b)
    );
    println!(
        "{:<44} {:>10}",
        "one-line edit -> bare cargo build --lib",
        secs(median(lib.clone()))
    );
    println!(
        "{:<44} {:>9.2}x   <= 1.6x",
        "edit-to-verdict / bare cargo build --lib",
        ratio(&regrade, &lib)
    );
    println!(
        "{:<44} {:>9.2}x   < 1.10x",
        "grader overhead (grade / bare cargo test)",
        ratio(&regrade, &bare)
    );
    println!(
        "{:<44} {:>10}",
        "one-line edit -> verdict, --sandbox off",
        secs(median(unsandboxed.clone()))
    );
    println!(
        "{:<44} {:>9.2}x   <= 1.10x",
        "sandbox cost (grade / grade --sandbox off)",
        ratio(&regrade, &unsandboxed)
    );
    println!(
        "{:<44} {:>10}",
        "judging every test of one grade",
        format!("{:.1} ms", judging.as_secs_f64() * 1e3)
    );
    println!(
        "{:<44} {:>9.1}%   <= 5%",
        "judging / edit-to-verdict",
        100.0 * judging.as_secs_f64() / r.as_secs_f64()
    );
    println!("{:<44} {:>10}", "fresh directory, first grade", secs(f));
    println!(
        "{:<44} {:>9.2}x   <= 1.5x",
        "fresh first grade / warm re-grade",
        ratio(&fresh, &regrade)
    );
    println!(
        "{:<44} {:>10}",
        "fresh directory, first edit's grade",
        secs(median(first_edit.clone()))
    );
    println!(
        "{:<44} {:>9.2}x",
        "fresh first edit / warm re-grade",
        ratio(&first_edit, &regrade)
    );
    println!();
    println!("where one edit's grade goes (the grader's own stages, PI_COURSE_TRACE=1; medians):");
    for (stage, secs, share) in &shares {
        println!("  {:<42} {:>8.3} s {:>6.1}%", stage, secs, 100.0 * share);
    }
    println!();
    println!("where one edit's time goes (cargo --timings in the grader's build directory):");
    println!(
        "  {:<42} {:>10}",
        "cargo start + fingerprints (no-op build)",
        secs(noop)
    );
    for (name, d) in &units {
        let what = if name.contains("(test)") {
            format!("test target {name} (rustc + link)")
        } else {
            format!("learner crate {name}")
        };
        println!("  {:<42} {:>10}", what, format!("{d:.3} s"));
    }
    println!(
        "  {:<42} {:>10}",
        "running the tests (grade with nothing to build", ""
    );
    println!(
        "  {:<42} {:>10}",
        "   minus a no-op cargo)",
        secs(unchanged.saturating_sub(noop))
    );
}
