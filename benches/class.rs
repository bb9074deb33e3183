//! A class graded whole, measured: `cargo bench --bench class`.
//!
//! Generates a class of 200 submissions (`BENCH_CLASS_SIZE`): correct loops (the reference and the
//! other correct loops of `alternatives/`), untouched skeletons (Chinese and English), mutants (every
//! deliberate bug of `mutants.toml` in turn) and loops that do not compile; as single files, folders and
//! practice directories. Every file is made unique, as a class's are, so each one is built. Then grades
//! it with `pi-course grade-class` at `--jobs 1`, 2 and the number of cores, each into fresh results (so
//! nothing is skipped) over one warm cache, and prints submissions per minute (ratios from this one run),
//! the cache's size on disk, and where the time goes: seconds per learner by kind, and the stages of one
//! grade. With `BENCH_BASELINE` (an earlier commit's binary), also the class graded by each binary in
//! turn, and the ratio of their throughputs. Not a test: nothing here asserts a time.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::generate::{chapter, generate, read, Kind};
use common::{baseline, cache, BIN};

/// Grades the class at `jobs`; returns the wall time and the summary.
fn grade_class(subs: &Path, out: &Path, jobs: usize) -> (Duration, serde_json::Value) {
    grade_class_by(Path::new(BIN), &cache(), subs, out, jobs)
}

/// [`grade_class`] by the binary `bin`, in `cache`.
fn grade_class_by(
    bin: &Path,
    cache: &Path,
    subs: &Path,
    out: &Path,
    jobs: usize,
) -> (Duration, serde_json::Value) {
    let started = Instant::now();
    let output = Command::new(bin)
        .arg("grade-class")
        .arg(subs)
        .arg("--out")
        .arg(out)
        .args(["--jobs", &jobs.to_string(), "--lang", "en"])
        .env("PI_COURSE_CACHE", cache)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("run grade-class");
    let took = started.elapsed();
    assert!(
        output.status.code() == Some(0),
        "grade-class --jobs {jobs} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    let summary = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    (took, summary)
}

/// The bytes `dir` takes on disk (allocated blocks, so sparse and shared files count as they are stored).
fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1 << 20) as f64)
}

fn main() {
    let size: usize = std::env::var("BENCH_CLASS_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(200);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let tmp = tempfile::Builder::new()
        .prefix("bench-class-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let subs = tmp.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    let kinds = generate(&subs, size);
    let count = |k: Kind| kinds.values().filter(|&&v| v == k).count();
    println!(
        "class: {size} submissions ({} correct, {} skeletons, {} mutants, {} compile errors), {cores} cores",
        count(Kind::Correct),
        count(Kind::Skeleton),
        count(Kind::Mutant),
        count(Kind::CompileError)
    );

    // Warm the cache: the dependencies compile once per machine, not per class.
    let warm = tmp.path().join("warm");
    let status = Command::new(BIN)
        .args(["practice", "07"])
        .arg(&warm)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let _ = Command::new(BIN)
        .args(["grade", "--format", "json"])
        .arg(&warm)
        .env("PI_COURSE_CACHE", cache())
        .output();

    let mut jobs_list = vec![1, 2, cores];
    jobs_list.dedup();
    let mut per_minute = Vec::new();
    let mut first_summary = None;
    for &jobs in &jobs_list {
        let out = tmp.path().join(format!("results-{jobs}"));
        let (took, summary) = grade_class(&subs, &out, jobs);
        let rate = size as f64 / took.as_secs_f64() * 60.0;
        println!(
            "--jobs {jobs}: {size} submissions in {:.1} s = {rate:.1} submissions/minute",
            took.as_secs_f64()
        );
        per_minute.push((jobs, rate));
        first_summary.get_or_insert(summary);
    }
    if let [(_, one), rest @ ..] = per_minute.as_slice() {
        for (jobs, rate) in rest {
            println!("  --jobs {jobs} / --jobs 1: {:.2}x", rate / one);
        }
    }
    // Side by side with an earlier binary (BENCH_BASELINE): the whole class at --jobs {cores} by each in
    // turn, twice, into fresh results; the baseline's cache is warmed by its first round.
    if let Some((base, base_cache)) = baseline() {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        grade_class_by(
            &base,
            &base_cache,
            &subs,
            &tmp.path().join("warm-base"),
            cores,
        );
        for round in 0..2 {
            let out = tmp.path().join(format!("ours-{round}"));
            ours.push(grade_class(&subs, &out, cores).0.as_secs_f64());
            let out = tmp.path().join(format!("theirs-{round}"));
            theirs.push(
                grade_class_by(&base, &base_cache, &subs, &out, cores)
                    .0
                    .as_secs_f64(),
            );
        }
        let rate = |t: &[f64]| size as f64 / (t.iter().sum::<f64>() / t.len() as f64) * 60.0;
        println!(
            "--jobs {cores}, alternating with {}: {:.1} submissions/minute, the baseline {:.1}: {:.2}x",
            base.display(),
            rate(&ours),
            rate(&theirs),
            rate(&ours) / rate(&theirs)
        );
    }
    println!(
        "cache on disk: {} in all; --jobs {cores} uses {} build slots, each:",
        mib(disk_usage(&cache())),
        cores.max(2)
    );
    for key in fs::read_dir(cache().join("target")).unwrap().flatten() {
        let mut slots: Vec<PathBuf> = fs::read_dir(key.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        slots.sort();
        for slot in slots {
            println!(
                "  {}: {}",
                slot.strip_prefix(cache()).unwrap().display(),
                mib(disk_usage(&slot))
            );
        }
    }

    // Where the time goes: a learner's seconds by kind (at --jobs 1, one grade at a time)...
    let summary = first_summary.unwrap();
    let mut by_kind: BTreeMap<Kind, Vec<f64>> = BTreeMap::new();
    for row in summary["learners"].as_array().unwrap() {
        let kind = kinds[row["name"].as_str().unwrap()];
        by_kind
            .entry(kind)
            .or_default()
            .push(row["seconds"].as_f64().unwrap());
    }
    println!("seconds per learner at --jobs 1 (mean, max):");
    for (kind, secs) in &by_kind {
        let mean = secs.iter().sum::<f64>() / secs.len() as f64;
        let max = secs.iter().cloned().fold(0.0, f64::max);
        println!(
            "  {kind:?}: {mean:.2} s, {max:.2} s ({} learners)",
            secs.len()
        );
    }
    // ...and the stages of one grade of a fresh file (PI_COURSE_TRACE prints when each stage starts).
    let reference = read(&chapter("solution/src/agent_loop.rs"));
    fs::write(
        warm.join("src/agent_loop.rs"),
        format!("{reference}\n// traced\n"),
    )
    .unwrap();
    let traced = Command::new(BIN)
        .args(["grade", "--format", "json"])
        .arg(&warm)
        .env("PI_COURSE_CACHE", cache())
        .env("PI_COURSE_TRACE", "1")
        .output()
        .unwrap();
    println!("one grade of a new file, stage by stage (the time each starts):");
    for line in String::from_utf8_lossy(&traced.stderr).lines() {
        println!("  {line}");
    }
}
