//! Helpers for the grading tests: practice directories, grades with a shared build cache, and a watch on
//! the process groups a grade starts.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_pi-course");

/// The one build cache every grading test shares: dependencies compile once per machine.
pub fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pi-course-cache")
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The reference loop, read from the repository.
pub fn solution() -> String {
    fs::read_to_string(repo().join("chapters/07-agent-loop/solution/src/agent_loop.rs"))
        .expect("the reference")
}

/// The reference with `statement` run first thing in `run_agent_loop`.
pub fn solution_starting_with(statement: &str) -> String {
    let signature = "pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {\n";
    let s = solution();
    assert_eq!(
        s.matches(signature).count(),
        1,
        "the reference declares run_agent_loop once"
    );
    s.replacen(signature, &format!("{signature}    {statement}\n"), 1)
}

/// `pi-course` with the shared cache, Chinese output, no colors.
pub fn pi_course(cwd: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(cwd)
        .env("PI_COURSE_CACHE", cache())
        .env_remove("PI_COURSE_LANG")
        .env_remove("NO_COLOR");
    cmd
}

pub fn describe(out: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A fresh practice directory for chapter 07 made by `pi-course practice`, inside a temporary directory
/// that lives as long as the returned guard.
pub fn practice() -> (tempfile::TempDir, PathBuf) {
    let parent = tempfile::Builder::new()
        .prefix("grade-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let out = pi_course(parent.path())
        .args(["practice", "07", "p"])
        .output()
        .unwrap();
    assert!(out.status.success(), "practice failed\n{}", describe(&out));
    let dir = parent.path().join("p");
    (parent, dir)
}

/// Writes the learner's loop.
pub fn write_loop(dir: &Path, code: &str) {
    fs::write(dir.join("src/agent_loop.rs"), code).unwrap();
}

/// `pi-course grade DIR ARGS`.
pub fn grade(dir: &Path, args: &[&str]) -> Output {
    pi_course(dir)
        .arg("grade")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
}

/// `pi-course grade DIR --format json ARGS`: the exit code and the one JSON document on stdout.
pub fn grade_json(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let out = grade(dir, &all);
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{}", describe(&out)));
    assert_schema(&json);
    (out.status.code().expect("exited"), json)
}

/// The status of group `slug` in a JSON report.
pub fn group_status<'a>(json: &'a Value, slug: &str) -> &'a str {
    json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["slug"] == slug)
        .unwrap_or_else(|| panic!("no group {slug} in {json:#}"))["status"]
        .as_str()
        .unwrap()
}

/// Checks a JSON report against the documented schema.
pub fn assert_schema(v: &Value) {
    let ctx = || format!("{v:#}");
    assert_eq!(v["version"], 1, "{}", ctx());
    assert_eq!(v["chapter"], "07", "{}", ctx());
    assert!(
        ["pass", "fail", "error"].contains(&v["status"].as_str().unwrap()),
        "{}",
        ctx()
    );
    assert!(v["message"].is_string(), "{}", ctx());
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_string),
        "{}",
        ctx()
    );
    let keys = |o: &Value| {
        o.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        keys(v),
        ["version", "chapter", "status", "message", "warnings", "groups"]
            .map(String::from)
            .into(),
        "{}",
        ctx()
    );
    for g in v["groups"].as_array().unwrap() {
        for k in ["slug", "name", "lab"] {
            assert!(g[k].is_string(), "{k} in {g:#}");
        }
        let status = g["status"].as_str().unwrap();
        assert!(
            ["pass", "fail", "timeout", "error"].contains(&status),
            "{g:#}"
        );
        let (passed, total) = (g["passed"].as_u64().unwrap(), g["total"].as_u64().unwrap());
        let tests = g["tests"].as_array().unwrap();
        assert_eq!(total, tests.len() as u64, "{g:#}");
        assert_eq!(
            passed,
            tests.iter().filter(|t| t["status"] == "pass").count() as u64,
            "{g:#}"
        );
        for t in tests {
            assert!(t["name"].is_string(), "{t:#}");
            assert!(
                ["pass", "fail", "timeout"].contains(&t["status"].as_str().unwrap()),
                "{t:#}"
            );
            assert!(t["message"].is_string() || t["message"].is_null(), "{t:#}");
            assert_eq!(t["message"].is_null(), t["status"] == "pass", "{t:#}");
        }
        if let Some(optional) = g.get("optional") {
            assert_eq!(optional, true, "optional appears only as true: {g:#}");
        }
        let allowed: BTreeSet<String> = [
            "slug", "name", "lab", "optional", "status", "passed", "total", "message", "tests",
        ]
        .map(String::from)
        .into();
        assert!(keys(g).is_subset(&allowed), "{g:#}");
    }
}

/// The five required groups of chapter 07.
pub const REQUIRED: [&str; 5] = [
    "plain-stop",
    "single-tool",
    "non-executing",
    "concurrent-tools",
    "cancel-and-limits",
];

/// A process as `ps` shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub zombie: bool,
    pub args: String,
}

/// Every process on the machine (Linux and macOS `ps`).
pub fn processes() -> Vec<Proc> {
    let out = Command::new("ps")
        .args(["-A", "-o", "pid=,ppid=,pgid=,stat=,args="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let pid = f.next()?.parse().ok()?;
            let ppid = f.next()?.parse().ok()?;
            let pgid = f.next()?.parse().ok()?;
            let zombie = f.next()?.starts_with('Z');
            Some(Proc {
                pid,
                ppid,
                pgid,
                zombie,
                args: f.collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

/// Live (not zombie) processes in process group `pgid`. Zombies are left out: an orphan waits for init to
/// reap it, and some container inits never do.
pub fn live_in_group(pgid: i32) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|p| p.pgid == pgid && !p.zombie)
        .collect()
}

/// Polls the children of `child` until `until` says stop or `limit` passes; returns every child seen.
pub fn watch_children(
    child: &mut Child,
    limit: Duration,
    until: impl Fn(&[Proc]) -> bool,
) -> Vec<Proc> {
    let started = Instant::now();
    let mut seen: BTreeSet<Proc> = BTreeSet::new();
    while started.elapsed() < limit {
        let children: Vec<Proc> = processes()
            .into_iter()
            .filter(|p| p.ppid == child.id() as i32)
            .collect();
        seen.extend(children.iter().cloned());
        if until(&seen.iter().cloned().collect::<Vec<_>>()) || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    seen.into_iter().collect()
}

/// Asserts that no process of any of `groups` is alive, allowing a moment for the kernel to finish.
pub fn assert_groups_gone(groups: &BTreeSet<i32>) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let alive: Vec<Proc> = groups.iter().flat_map(|&g| live_in_group(g)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes left behind: {alive:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
