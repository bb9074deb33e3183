//! The learner's edit-to-verdict loop, measured: `cargo bench --bench edit_loop`.
//!
//! Prints medians over several runs and ratios measured side by side in the same run (this machine is
//! noisy; absolute figures move, ratios move less). Not a test: nothing here asserts a time.
//!
//! Figures: `practice` wall time; a one-line edit of `src/agent_loop.rs` to a full five-group verdict
//! (warm); the same edit under a bare `cargo build --lib` and a bare `cargo test --test ch07` in the same
//! directory; the first grade of a fresh directory against a warm re-grade; and where an edit's grade
//! goes, by the grader's own stages (`PI_COURSE_TRACE=1`): the refusal check, the slot, the learner's
//! crate, the test target, the draw of fresh instances, the run and the judge, each as a share of the
//! grade's wall time. The judge's share is the grader's measure on the grade's real, fresh instances.
//!
//! Environment: `BENCH_RUNS` (default 7); `BENCH_BASELINE`, an earlier commit's binary whose grade of the
//! same edits is measured side by side; `PI_COURSE_CACHE` (default: the test suite's cache, so
//! dependencies are usually built already).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{baseline, cache, median, ms, runs, secs, timed, timed_with, BIN, REPO};

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

/// A grade of `dir` by the baseline binary (`BENCH_BASELINE`), in its own cache: its wall time, and the
/// tests' own time summed (its chapter may hold other tests than this one's).
fn grade_by((bin, cache): &(PathBuf, PathBuf), dir: &Path) -> (Duration, f64) {
    let junit = dir.with_extension("junit.xml");
    let took = timed_with(
        Command::new(bin)
            .args(["grade", "--format", "json", "--junit"])
            .arg(&junit)
            .arg(dir)
            .stdout(Stdio::null()),
        cache,
        true,
    );
    (took, tests_own_time(&junit))
}

/// [`grade`], with the tests' own time summed.
fn grade_with_tests(dir: &Path) -> (Duration, f64) {
    let junit = dir.with_extension("junit.xml");
    let took = grade_with(
        dir,
        true,
        &["--junit", junit.to_str().expect("a UTF-8 path")],
    );
    (took, tests_own_time(&junit))
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

/// The tests' own time, summed over every test of a JUnit report: what one process would take.
fn tests_own_time(junit: &Path) -> f64 {
    let report = fs::read_to_string(junit).unwrap_or_default();
    let tests: f64 = report
        .split("<testcase ")
        .skip(1)
        .filter_map(|case| {
            let time = case.split("time=\"").nth(1)?;
            time[..time.find('"')?].parse::<f64>().ok()
        })
        .sum();
    assert!(tests > 0.0, "the JUnit report gives the tests' times");
    tests
}

/// The grader's own account of one edit's grade (`PI_COURSE_TRACE=1` prints each stage's time): per
/// stage, its median over `n` edits and its median share of the grade's wall time. Crates that cargo
/// found fresh are summed into one line.
fn stages(dir: &Path, edits: &mut Edits, n: usize) -> Vec<(String, f64, f64)> {
    let mut runs: Vec<(f64, std::collections::BTreeMap<String, f64>)> = Vec::new();
    // The stages in the order a grade passes them.
    let mut order: Vec<String> = Vec::new();
    for _ in 0..n {
        edits.edit(dir, "slot");
        let started = std::time::Instant::now();
        let junit = dir.with_extension("junit.xml");
        let out = Command::new(BIN)
            .args(["grade", "--format", "json", "--junit"])
            .arg(&junit)
            .arg(dir)
            .env("PI_COURSE_CACHE", cache())
            .env("PI_COURSE_TRACE", "1")
            .stdin(Stdio::null())
            .output()
            .expect("grade runs");
        let wall = started.elapsed().as_secs_f64();
        let mut laps = std::collections::BTreeMap::new();
        // The tests' own time, as the report gives each test's: summed over every test process, it says
        // what one process would take, and why the run starts one per core.
        let tests = tests_own_time(&junit);
        let mut in_build = false;
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            let Some((stage, secs)) = line
                .strip_prefix("[timing] ")
                .and_then(|l| l.rsplit_once(' '))
            else {
                continue;
            };
            let secs: f64 = secs.parse().unwrap_or(0.0);
            let first_crate = stage.starts_with("build ") && !in_build;
            in_build |= first_crate;
            let stage = if first_crate {
                // Until cargo names its first crate: its start, the lock file and the fingerprints.
                "build: cargo's start, until its first crate".to_string()
            } else if stage == "build" {
                "build: after the last crate, until cargo exits".to_string()
            } else if stage.starts_with("build pi-course-") {
                // One package: the learner's crate, then the test target and its link.
                "build: the learner's crate and the test target".to_string()
            } else if stage.starts_with("build ") && secs < 0.005 {
                "build: crates cargo found fresh".to_string()
            } else {
                stage.to_string()
            };
            if !order.contains(&stage) {
                order.push(stage.clone());
            }
            *laps.entry(stage).or_insert(0.0) += secs;
        }
        let counted: f64 = laps.values().sum();
        laps.insert(
            "the rest: start, read, report, exit".into(),
            (wall - counted).max(0.0),
        );
        // Not a stage: counted after the stages' sum, it overlaps the run.
        laps.insert("(the tests' own time, summed over processes)".into(), tests);
        runs.push((wall, laps));
    }
    let middle = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    order.extend([
        "the rest: start, read, report, exit".to_string(),
        "(the tests' own time, summed over processes)".to_string(),
    ]);
    order
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
    // The same edits graded by the baseline binary, in a practice directory it made itself.
    let base = baseline().map(|base| {
        let dir = root.join("baseline-loop");
        timed_with(
            Command::new(&base.0).args(["practice", "07"]).arg(&dir),
            &base.1,
            true,
        );
        edit(&dir, 0);
        grade_by(&base, &dir);
        (base, dir)
    });
    let (mut based, mut based_tests, mut ours_tests) = (Vec::new(), Vec::new(), Vec::new());
    for i in 1..=n {
        edits.edit(&dir, "slot");
        if let Some((base, base_dir)) = &base {
            let (took, tests) = grade_with_tests(&dir);
            regrade.push(took);
            ours_tests.push(Duration::from_secs_f64(tests));
            edits.edit(base_dir, "baseline");
            let (took, tests) = grade_by(base, base_dir);
            based.push(took);
            based_tests.push(Duration::from_secs_f64(tests));
        } else {
            regrade.push(grade(&dir, true));
        }
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

    // A grade with nothing to rebuild: cargo's check, then running the tests and judging them.
    let unchanged = median((0..n).map(|_| grade(&dir, true)).collect());
    // Where the time of one edit goes, by the grader's own account; the judge's share is one of them.
    let shares = stages(&dir, &mut edits, n);
    let judged = shares
        .iter()
        .find(|(stage, ..)| stage == "judge")
        .map(|&(_, secs, share)| (secs, share))
        .expect("the grader reports its judge's time");

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
    if let Some(((bin, _), _)) = &base {
        println!(
            "{:<44} {:>10}   ({})",
            "one-line edit -> verdict, the baseline",
            secs(median(based.clone())),
            bin.display()
        );
        println!(
            "{:<44} {:>9.2}x   <= 1.0x",
            "edit-to-verdict / the baseline's",
            ratio(&regrade, &based)
        );
        println!(
            "{:<44} {:>9.2}x",
            "the tests' own time / the baseline's",
            ratio(&ours_tests, &based_tests)
        );
    }
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
        format!("{:.1} ms", judged.0 * 1e3)
    );
    println!(
        "{:<44} {:>9.1}%   <= 5%",
        "judging / edit-to-verdict",
        100.0 * judged.1
    );
    println!(
        "{:<44} {:>10}",
        "re-grade with nothing to rebuild",
        secs(unchanged)
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
        println!("  {:<48} {:>8.3} s {:>6.1}%", stage, secs, 100.0 * share);
    }
}
