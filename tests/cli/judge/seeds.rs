//! A correct loop passes whatever the seed: the reference of each track, on the instances of 200 seeds,
//! judged by the same comparison the grader uses (each track's own hand run: the Rust driver with
//! `PI_COURSE_FIXTURE`, the TypeScript driver in one node process). A failure names the seed, so
//! `pi-course grade --seed N` replays it.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::*;
use pi_course::spec;
use serde_json::json;

const SEEDS: u64 = 200;

/// The practice fixture of `seed`, as `pi-course practice` writes the hand seed's.
fn fixture(seed: u64) -> String {
    let tests: Vec<serde_json::Value> = spec::cases("07", seed)
        .expect("chapter 07 has a specification")
        .into_iter()
        .map(|c| json!({"name": c.name, "group": c.group, "about": c.about, "instance": c.instance, "expected": c.expected}))
        .collect();
    json!({"version": 1, "seed": seed, "tests": tests}).to_string()
}

#[test]
fn the_rust_reference_passes_under_two_hundred_seeds() {
    let (tmp, dir) = practice();
    write_loop(&dir, &solution());
    let target = cache().join("seeds-rust-target");
    let build = Command::new("cargo")
        .args(["test", "-q", "--no-run", "--test", "ch07"])
        .args(["--message-format", "json"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", describe(&build));
    // The test executable itself, run once per seed (cargo's own start-up would double the sweep).
    let exe = stdout(&build)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|m| m["executable"].as_str().map(std::path::PathBuf::from))
        .expect("cargo names the test executable");
    let mut failed = Vec::new();
    for seed in fresh_seeds(SEEDS) {
        let file = tmp.path().join(format!("seed-{seed}.json"));
        fs::write(&file, fixture(seed)).unwrap();
        let out = Command::new(&exe)
            .current_dir(&dir)
            .env("PI_COURSE_FIXTURE", &file)
            .env("PI_COURSE_LANG", "en")
            .output()
            .unwrap();
        if !out.status.success() {
            failed.push(format!("seed {seed}:\n{}", stdout(&out)));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {SEEDS} seeds failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn the_typescript_reference_passes_under_two_hundred_seeds() {
    let (tmp, dir) = practice_ts();
    fs::write(dir.join("src/agent-loop.ts"), ts_solution()).unwrap();
    build_typescript(&dir);
    let mut files = Vec::new();
    for seed in fresh_seeds(SEEDS) {
        let file = tmp.path().join(format!("seed-{seed}.json"));
        fs::write(&file, fixture(seed)).unwrap();
        files.push(file);
    }
    // One node process runs every seed's tests through the driver and judges each as a hand run does.
    let sweep = dir.join("sweep.mjs");
    fs::write(
        &sweep,
        r#"import { readFileSync } from "node:fs";
import { drive } from "./dist/test/run.js";
import { withDefaults } from "./dist/test/instance.js";
import { judge } from "./dist/test/judge.js";
let failed = 0;
for (const file of process.argv.slice(2)) {
  const fixture = JSON.parse(readFileSync(file, "utf8"));
  for (const t of fixture.tests) {
    // A test of several instances: each one's steps after its mark, as the harness writes them.
    const trace = [];
    for (const [index, instance] of (t.instance.runs ?? [t.instance]).entries()) {
      if (t.instance.runs !== undefined) trace.push({ kind: "instance", index });
      trace.push(...(await drive(withDefaults(instance), () => import("./dist/src/agent-loop.js"))));
    }
    const message = judge(t.expected, trace.map((s) => JSON.parse(JSON.stringify(s))), "en");
    if (message !== undefined) {
      failed += 1;
      console.log(`seed ${fixture.seed} ${t.group} ${t.name}\n${message}`);
    }
  }
}
process.exit(failed === 0 ? 0 : 1);
"#,
    )
    .unwrap();
    let out = Command::new("node")
        .arg(&sweep)
        .args(&files)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

/// The dependencies a grade installed into the shared cache (or `npm ci`), then `tsc -p`.
fn build_typescript(dir: &Path) {
    let lock = fs::read(dir.join("package-lock.json")).unwrap();
    let installed = fs::read_dir(cache().join("node"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|d| {
            d.join(".pi-course-installed").is_file()
                && fs::read(d.join("package-lock.json")).is_ok_and(|l| l == lock)
        });
    match installed {
        Some(deps) => {
            std::os::unix::fs::symlink(deps.join("node_modules"), dir.join("node_modules")).unwrap()
        }
        None => {
            let out = Command::new("npm")
                .args([
                    "ci",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                ])
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "npm ci\n{}", describe(&out));
        }
    }
    let out = Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "tsc\n{}", describe(&out));
}
