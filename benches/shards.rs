//! A class graded whole and as parts, measured: `cargo bench --bench shards`.
//!
//! Generates a class of 1,000 submissions (`BENCH_CLASS_SIZE`; the class benchmark's mix: correct loops,
//! skeletons, mutants, compile errors, every file unique), then over one warm cache grades it whole with
//! `grade-class --jobs 2`, and as 4 parts (`BENCH_PARTS`), `--shard K/4 --jobs 2` one after another on
//! this machine, and merges them with `merge-class`. Prints each time, the per-submission rate, what the
//! parts would take on 4 machines (the slowest part, then the merge), and checks that the merge equals the
//! whole run but for the timing. Not a test: nothing here asserts a time.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::generate::generate;
use common::{cache, BIN};

/// Runs pi-course with `args` and the bench's cache; returns its wall time. Exit 0 or 1 (a learner
/// without a verdict) is a finished run; anything else fails the bench.
fn timed(args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = Command::new(BIN)
        .args(args)
        .env("PI_COURSE_CACHE", cache())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("run pi-course");
    let took = started.elapsed();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "pi-course {args:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    took
}

/// A summary's rows without their timing.
fn rows_without_timing(dir: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    summary["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let mut row = row.clone();
            row["seconds"] = serde_json::Value::Null;
            row
        })
        .collect()
}

fn rate(size: usize, took: Duration) -> String {
    format!(
        "{:.2} s per submission, {:.1} submissions/minute",
        took.as_secs_f64() / size as f64,
        size as f64 / took.as_secs_f64() * 60.0
    )
}

fn main() {
    let env_number = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or(default)
    };
    let size = env_number("BENCH_CLASS_SIZE", 1000);
    let parts = env_number("BENCH_PARTS", 4);
    let tmp = tempfile::Builder::new()
        .prefix("bench-shards-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let root = tmp.path();
    let subs = root.join("submissions");
    fs::create_dir(&subs).unwrap();
    generate(&subs, size);
    println!(
        "class: {size} submissions, {} cores",
        std::thread::available_parallelism().map_or(2, |n| n.get())
    );

    // Warm the cache: the dependencies compile once per machine, not per class.
    let warm = root.join("warm");
    timed(&["practice", "07", warm.to_str().unwrap()]);
    timed(&["grade", "--format", "json", warm.to_str().unwrap()]);

    let subs = subs.to_str().unwrap();
    let class = ["--jobs", "2", "--seed", "1", "--lang", "en"];
    let whole_out = root.join("whole");
    let mut args = vec!["grade-class", subs, "--out", whole_out.to_str().unwrap()];
    args.extend_from_slice(&class);
    let whole = timed(&args);
    println!(
        "whole, --jobs 2: {:.1} s ({})",
        whole.as_secs_f64(),
        rate(size, whole)
    );

    let mut part_dirs = Vec::new();
    let mut slowest = Duration::ZERO;
    let mut all = Duration::ZERO;
    for k in 0..parts {
        let out = root.join(format!("part-{k}"));
        let shard = format!("{k}/{parts}");
        let mut args = vec!["grade-class", subs, "--out", out.to_str().unwrap()];
        args.extend_from_slice(&["--shard", &shard]);
        args.extend_from_slice(&class);
        let took = timed(&args);
        let held = rows_without_timing(&out).len();
        println!(
            "part {shard}: {held} submissions in {:.1} s",
            took.as_secs_f64()
        );
        slowest = slowest.max(took);
        all += took;
        part_dirs.push(out.to_str().unwrap().to_string());
    }
    println!(
        "{parts} parts one after another: {:.1} s ({})",
        all.as_secs_f64(),
        rate(size, all)
    );
    let merged_out = root.join("merged");
    let mut args = vec!["merge-class"];
    args.extend(part_dirs.iter().map(String::as_str));
    args.extend_from_slice(&["--out", merged_out.to_str().unwrap()]);
    let merge = timed(&args);
    println!("merge-class: {:.2} s", merge.as_secs_f64());
    println!(
        "on {parts} machines: about {:.1} s (the slowest part, then the merge), {:.1} times the whole run",
        (slowest + merge).as_secs_f64(),
        whole.as_secs_f64() / (slowest + merge).as_secs_f64()
    );
    let same = rows_without_timing(&whole_out) == rows_without_timing(&merged_out);
    println!("merged summary equals the whole run's but for seconds: {same}");
    assert!(same, "the merge differs from the whole run");
}
