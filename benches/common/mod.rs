//! What the benchmarks share: the binary under test, the cache, the number of runs, timing and medians.
#![allow(dead_code)] // each bench uses its own subset

pub mod generate;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_pi-course");
pub const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// `PI_COURSE_CACHE`, else the test suite's cache (so dependencies are usually built already).
pub fn cache() -> PathBuf {
    std::env::var_os("PI_COURSE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("pi-course-cache"))
}

/// `BENCH_BASELINE`: another pi-course binary (an earlier commit's, built by hand) that a bench measures
/// side by side with this one, alternating, each with a cache of its own; with it, the figures it
/// prints.
pub fn baseline() -> Option<(PathBuf, PathBuf)> {
    let bin = PathBuf::from(std::env::var_os("BENCH_BASELINE")?);
    assert!(bin.is_file(), "BENCH_BASELINE={} is no file", bin.display());
    let mut cache = cache().into_os_string();
    cache.push("-baseline");
    Some((bin, cache.into()))
}

/// `BENCH_RUNS`, default 7.
pub fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(7)
}

/// Runs `cmd` with `cache` to completion and returns its wall time; panics with its output if it fails
/// when it should not.
pub fn timed_with(cmd: &mut Command, cache: &Path, expect_success: bool) -> Duration {
    let start = Instant::now();
    let out = cmd
        .env("PI_COURSE_CACHE", cache)
        .stdin(Stdio::null())
        .output()
        .expect("spawn");
    let took = start.elapsed();
    if expect_success && !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    took
}

/// [`timed_with`] the usual cache.
pub fn timed(cmd: &mut Command, expect_success: bool) -> Duration {
    timed_with(cmd, &cache(), expect_success)
}

pub fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

pub fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}
