//! What the integration tests share: the real binary run with a shared build cache, practice
//! directories, the chapter's reference and manifest, grades and their JSON reports, directory trees, and
//! the processes a command starts.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The repository root (where `chapters/` and `snapshots/` live).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The chapter every test works on.
pub fn chapter_dir() -> PathBuf {
    repo().join("chapters/07-agent-loop")
}

/// The chapter's `chapter.toml`, parsed.
pub fn chapter_manifest() -> toml::Table {
    let text =
        fs::read_to_string(chapter_dir().join("chapter.toml")).expect("the chapter manifest");
    toml::from_str(&text).expect("chapter.toml parses")
}

/// The one build cache every test shares: dependencies compile once per machine.
pub fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pi-course-cache")
}

/// The real `pi-course` binary, run in `cwd` with the shared cache. `PI_COURSE_LANG` and `NO_COLOR` are
/// removed, so the output is Chinese and colors follow the terminal unless the test asks otherwise.
pub fn pi_course(cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pi-course"));
    command
        .current_dir(cwd)
        .env("PI_COURSE_CACHE", cache())
        .env_remove("PI_COURSE_LANG")
        .env_remove("NO_COLOR");
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

/// Makes a practice directory for chapter 07 at `parent/name` with `pi-course practice`, which must
/// succeed without a word on stderr, and returns its path.
pub fn practice_at(parent: &Path, name: &str) -> PathBuf {
    let output = run(parent, &["practice", "07", name]);
    assert!(
        output.status.success(),
        "practice failed\n{}",
        describe(&output)
    );
    assert!(
        output.stderr.is_empty(),
        "practice wrote to stderr\n{}",
        describe(&output)
    );
    parent.join(name)
}

/// A fresh practice directory `p` for chapter 07, inside a temporary directory (named after the test
/// crate) that lives as long as the returned guard.
pub fn practice() -> (tempfile::TempDir, PathBuf) {
    let parent = tempfile::Builder::new()
        .prefix(concat!(env!("CARGO_CRATE_NAME"), "-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let dir = practice_at(parent.path(), "p");
    (parent, dir)
}

/// The reference loop, read from the repository.
pub fn solution() -> String {
    fs::read_to_string(chapter_dir().join("solution/src/agent_loop.rs")).expect("the reference")
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
        [
            "version",
            "chapter",
            "status",
            "message",
            "warnings",
            "score",
            "max",
            "sandbox",
            "instances",
            "groups",
        ]
        .map(String::from)
        .into(),
        "{}",
        ctx()
    );
    // The seed the tests' instances were drawn with: a number exactly when a test ran.
    assert_eq!(
        keys(&v["instances"]),
        ["seed".to_string()].into(),
        "{}",
        ctx()
    );
    let ran = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["tests"].as_array().is_some_and(|t| !t.is_empty()));
    let seed = &v["instances"]["seed"];
    assert!(seed.is_u64() || seed.is_null(), "{}", ctx());
    if ran {
        assert!(
            seed.is_u64(),
            "a grade whose tests ran names its seed: {}",
            ctx()
        );
    }
    let sandbox = &v["sandbox"];
    assert!(sandbox["active"].is_boolean(), "{}", ctx());
    assert!(
        sandbox["layers"]
            .as_array()
            .is_some_and(|l| l.iter().all(Value::is_string)),
        "{}",
        ctx()
    );
    assert_eq!(
        sandbox["reason"].is_null(),
        sandbox["active"] == Value::Bool(true),
        "a reason exactly when the grade was not sandboxed: {}",
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
        let (score, max) = (g["score"].as_f64().unwrap(), g["max"].as_f64().unwrap());
        assert_eq!(max, group_points(g["slug"].as_str().unwrap()), "{g:#}");
        assert!((0.0..=max).contains(&score), "{g:#}");
        if status == "pass" {
            assert_eq!(score, max, "a passing group earns its points: {g:#}");
        }
        let allowed: BTreeSet<String> = [
            "slug", "name", "lab", "optional", "status", "passed", "total", "score", "max",
            "message", "tests",
        ]
        .map(String::from)
        .into();
        assert!(keys(g).is_subset(&allowed), "{g:#}");
    }
    assert_points(v);
}

/// Checks a report's points: the maximum is the points of the groups that decide it, and the score is
/// what the groups earned (an optional group's as a bonus), never past the maximum; nothing when the
/// code did not build.
fn assert_points(v: &Value) {
    let groups = v["groups"].as_array().unwrap();
    let all_optional = groups.iter().all(|g| g["optional"] == true);
    let deciding = |g: &&Value| all_optional || g["optional"] != true;
    let max: f64 = groups
        .iter()
        .filter(deciding)
        .map(|g| g["max"].as_f64().unwrap())
        .sum();
    assert_eq!(v["max"].as_f64().unwrap(), max, "{v:#}");
    let earned: f64 = groups.iter().map(|g| g["score"].as_f64().unwrap()).sum();
    let score = v["score"].as_f64().unwrap();
    assert!(
        (score - earned.min(max)).abs() < 0.011,
        "score {score} is not the groups' {earned} capped at {max}: {v:#}"
    );
}

/// What group `slug` is worth, from the chapter's manifest.
pub fn group_points(slug: &str) -> f64 {
    chapter_manifest()["group"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["slug"].as_str() == Some(slug))
        .unwrap_or_else(|| panic!("no group {slug} in chapter.toml"))["points"]
        .as_integer()
        .unwrap() as f64
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
///
/// A child caught between its fork and the `setpgid` that gives it a group of its own still shows its
/// parent's group (ours): that sighting is left out, or this test's own group would look left behind.
pub fn watch_children(
    child: &mut Child,
    limit: Duration,
    until: impl Fn(&[Proc]) -> bool,
) -> Vec<Proc> {
    // SAFETY: getpgrp only reads this process's group id.
    let ours = unsafe { libc::getpgrp() };
    let started = Instant::now();
    let mut seen: BTreeSet<Proc> = BTreeSet::new();
    while started.elapsed() < limit {
        let children: Vec<Proc> = processes()
            .into_iter()
            .filter(|p| p.ppid == child.id() as i32 && p.pgid != ours)
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
    assert_none_left(Duration::from_secs(3), || {
        groups.iter().flat_map(|&g| live_in_group(g)).collect()
    });
}

/// Asserts that `left` comes back empty within `limit`, asking again every 50 ms.
pub fn assert_none_left(limit: Duration, left: impl Fn() -> Vec<Proc>) {
    let deadline = Instant::now() + limit;
    loop {
        let alive = left();
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

/// Every regular file under `dir` (build output left out), by `/`-separated path relative to it.
pub fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    if !dir.is_dir() {
        return BTreeMap::new();
    }
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "target"))
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            (rel.join("/"), fs::read(e.path()).unwrap())
        })
        .collect()
}

/// The regular files under `root` and their contents, by path relative to it (directories and symbolic
/// links left out).
pub fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    tree(root)
        .into_iter()
        .filter_map(|(path, entry)| match entry {
            Entry::File(bytes) => Some((path, bytes)),
            Entry::Dir | Entry::Symlink(_) => None,
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

/// The reference with mutant `name` of `mutants.toml` applied (each `find` replaced once, in order).
pub fn mutant(name: &str) -> String {
    let text = fs::read_to_string(chapter_dir().join("mutants.toml")).expect("mutants.toml");
    let table: toml::Table = toml::from_str(&text).expect("mutants.toml parses");
    let m = table["mutant"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no mutant {name}"));
    let mut code = solution();
    for edit in m["edit"].as_array().unwrap() {
        let find = edit["find"].as_str().unwrap();
        assert_eq!(code.matches(find).count(), 1, "mutant {name}");
        code = code.replacen(find, edit["replace"].as_str().unwrap(), 1);
    }
    code
}

/// The skeleton as handed out (Chinese comments).
pub fn skeleton() -> String {
    fs::read_to_string(chapter_dir().join("skeleton/src/agent_loop.rs")).expect("the skeleton")
}

/// `pi-course grade-class SUBMISSIONS --out RESULTS ARGS`, run in `cwd`.
pub fn grade_class(cwd: &Path, submissions: &Path, results: &Path, args: &[&str]) -> Output {
    pi_course(cwd)
        .arg("grade-class")
        .arg(submissions)
        .arg("--out")
        .arg(results)
        .args(args)
        .output()
        .expect("run pi-course grade-class")
}

/// A class's `summary.json`.
pub fn class_summary(results: &Path) -> Value {
    let text = fs::read_to_string(results.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json parses")
}

/// The summary's row for learner `name`.
pub fn learner_row<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["learners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no learner {name} in {summary:#}"))
}

/// Runs `command` with stdout and stderr on a pseudo-terminal of its own; returns all it wrote.
pub fn on_a_terminal(mut command: Command) -> String {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills the two descriptors; null name and settings are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // Other tests start processes concurrently: they must not inherit this terminal.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors are fresh and owned here.
    let (mut master, slave) =
        unsafe { (fs::File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::from(slave));
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut all = Vec::new();
    let mut buf = [0u8; 8192];
    // Ends with EIO once the child has closed the terminal.
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    child.wait().unwrap();
    String::from_utf8_lossy(&all).into_owned()
}

// ---------------------------------------------------------------------------------------------------
// The TypeScript track of chapter 07
// ---------------------------------------------------------------------------------------------------

/// The TypeScript track's folder inside the chapter.
pub fn ts_dir() -> PathBuf {
    chapter_dir().join("typescript")
}

/// The file a learner edits in a TypeScript practice directory.
/// Every subcommand a user types (clap's own `help` aside), as the help tests go through them.
pub const SUBCOMMANDS: [&str; 11] = [
    "practice",
    "grade",
    "grade-class",
    "merge-class",
    "watch",
    "hint",
    "explain",
    "status",
    "list",
    "skeleton",
    "completions",
];

pub const TS_LOOP: &str = "src/agent-loop.ts";

/// The line that opens `runAgentLoop` in the TypeScript skeleton and reference.
pub const TS_RUN_SIGNATURE: &str =
    "export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {\n";

/// Makes a TypeScript practice directory for chapter 07 at `parent/name`, which must succeed without a
/// word on stderr, and returns its path.
pub fn practice_ts_at(parent: &Path, name: &str) -> PathBuf {
    let output = run(parent, &["practice", "07", name, "--track", "typescript"]);
    assert!(
        output.status.success(),
        "practice --track typescript failed\n{}",
        describe(&output)
    );
    assert!(
        output.stderr.is_empty(),
        "practice --track typescript wrote to stderr\n{}",
        describe(&output)
    );
    parent.join(name)
}

/// A fresh TypeScript practice directory `p` for chapter 07, inside a temporary directory (named after
/// the test crate) that lives as long as the returned guard.
pub fn practice_ts() -> (tempfile::TempDir, PathBuf) {
    let parent = tempfile::Builder::new()
        .prefix(concat!(env!("CARGO_CRATE_NAME"), "-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let dir = practice_ts_at(parent.path(), "p");
    (parent, dir)
}

/// The TypeScript reference loop, read from the repository.
pub fn ts_solution() -> String {
    fs::read_to_string(ts_dir().join("solution").join(TS_LOOP)).expect("the TypeScript reference")
}

/// The TypeScript skeleton as handed out (Chinese comments).
pub fn ts_skeleton() -> String {
    fs::read_to_string(ts_dir().join("skeleton").join(TS_LOOP)).expect("the TypeScript skeleton")
}

/// `code` (the TypeScript skeleton or reference) with `statement` run first thing in `runAgentLoop`.
pub fn ts_starting_with(code: &str, statement: &str) -> String {
    assert_eq!(
        code.matches(TS_RUN_SIGNATURE).count(),
        1,
        "the loop declares runAgentLoop once"
    );
    code.replacen(
        TS_RUN_SIGNATURE,
        &format!("{TS_RUN_SIGNATURE}  {statement}\n"),
        1,
    )
}

/// Writes the learner's TypeScript loop.
pub fn write_ts_loop(dir: &Path, code: &str) {
    fs::write(dir.join(TS_LOOP), code).unwrap();
}

/// A build cache of its own, for a test that must know which grade a build slot saw first. Its
/// dependencies (`node/`) are the shared cache's, so nothing is installed again.
pub fn private_cache() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("private-cache-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let shared = cache().join("node");
    fs::create_dir_all(&shared).unwrap();
    std::os::unix::fs::symlink(&shared, dir.path().join("node")).unwrap();
    dir
}

/// `pi-course grade DIR --format json ARGS` with the build cache `cache`: the exit code and the one JSON
/// document on stdout.
pub fn grade_json_in(cache: &Path, dir: &Path, args: &[&str]) -> (i32, Value) {
    let out = pi_course(dir)
        .env("PI_COURSE_CACHE", cache)
        .arg("grade")
        .arg(dir)
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{}", describe(&out)));
    assert_schema(&json);
    (out.status.code().expect("exited"), json)
}

/// Every test of a JSON report: (group slug, test).
pub fn report_tests(json: &Value) -> Vec<(String, &Value)> {
    json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| {
            let slug = g["slug"].as_str().unwrap().to_string();
            g["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |t| (slug.clone(), t))
        })
        .collect()
}

/// The attack tests prove a defence only where the sandbox runs.
pub const ALLOW_UNSANDBOXED: &str = "PI_COURSE_TESTS_ALLOW_UNSANDBOXED";

/// True when the grade's report says learner code ran confined. Without the sandbox, fails the test
/// (naming the reason and the opt-out), or, opted out, says the attack test was skipped.
pub fn sandboxed(report: &Value) -> bool {
    if report["sandbox"]["active"] == Value::Bool(true) {
        return true;
    }
    let reason = report["sandbox"]["reason"].as_str().unwrap_or("unknown");
    if std::env::var_os(ALLOW_UNSANDBOXED).is_some_and(|v| v == "1") {
        eprintln!(
            "attack test skipped: the sandbox is unavailable ({reason}); {ALLOW_UNSANDBOXED}=1"
        );
        return false;
    }
    panic!(
        "the sandbox is unavailable on this machine ({reason}): the attack tests cannot prove anything \
         here. Run them on Linux with Landlock, or set {ALLOW_UNSANDBOXED}=1 to skip them."
    );
}

/// A statement that prints 4 MiB and then panics with a message of 8 MiB starting with `FLOOD-PREFIX`:
/// run first thing in a loop, over 100 MB of output and 250 MB of messages across the chapter's tests.
pub const FLOOD: &str = r#"{ use std::io::Write; let _ = std::io::stdout().write_all(&vec![b'o'; 3 << 20]); let _ = std::io::stderr().write_all(&vec![b'e'; 1 << 20]); panic!("FLOOD-PREFIX {}", "x".repeat(8 << 20)); }"#;

/// A report's groups with each message's "so far" line in a canonical order. Two grades of one loop
/// with one seed run the same instances and reach the same verdicts and the same divergence (step,
/// expected, happened, rule); only steps of concurrent calls may interleave differently in the run
/// that led there, so the steps of that line are compared as a set.
pub fn replayable(groups: &Value) -> Value {
    let mut groups = groups.clone();
    for group in groups.as_array_mut().into_iter().flatten() {
        for test in group["tests"].as_array_mut().into_iter().flatten() {
            if let Some(message) = test["message"].as_str() {
                test["message"] = Value::String(canonical_so_far(message));
            }
        }
    }
    groups
}

/// `message` with the steps of its "so far" line (English or Chinese) sorted.
fn canonical_so_far(message: &str) -> String {
    message
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            for label in ["so far: ", "到此为止："] {
                if let Some(steps) = trimmed.strip_prefix(label) {
                    // A long run shows only its last steps, and which steps fall in that window
                    // depends on the interleaving too: then only their number is compared (the
                    // divergence's step number already pins the run's length).
                    if steps.starts_with("… ") {
                        return format!("  {label}… {} steps", steps.split(" → ").count());
                    }
                    let mut steps: Vec<&str> = steps.split(" → ").collect();
                    steps.sort_unstable();
                    return format!("  {label}{}", steps.join(" → "));
                }
            }
            line.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `command` to its end while sampling its peak memory (`VmHWM`, in KiB, which only grows): the
/// largest value read is a lower bound of the process's peak.
pub fn output_and_peak_kib(mut command: std::process::Command) -> (std::process::Output, u64) {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).unwrap();
        v
    });
    let stderr = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).unwrap();
        v
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let hwm = std::fs::read_to_string(&status_file).unwrap_or_default();
        let kib = hwm
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        peak = peak.max(kib);
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let output = std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    (output, peak)
}

/// Starts `pi-course grade ARGS` in `dir` with `TMPDIR` set to a new, empty directory; waits until a
/// test process (`is_test`) runs and a scratch directory of a test shows in `TMPDIR` (observed, never
/// assumed from time passing); sends `signal`; and returns the grade's output, what it left in `TMPDIR`
/// and the test processes seen. The test processes must hang, so the signal lands while they run.
pub fn interrupt_grade(
    dir: &Path,
    args: &[&str],
    signal: i32,
    is_test: impl Fn(&Proc) -> bool,
) -> (Output, Vec<String>, Vec<Proc>) {
    let tmpdir = tempfile::Builder::new()
        .prefix("tmpdir-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mut child = pi_course(dir)
        .arg("grade")
        .args(args)
        .env("TMPDIR", tmpdir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let scratch_made = || {
        names(tmpdir.path())
            .iter()
            .any(|n| n.starts_with("pi-course-test-"))
    };
    let seen = watch_children(&mut child, Duration::from_secs(600), |seen| {
        seen.iter().any(&is_test) && scratch_made()
    });
    assert!(
        seen.iter().any(&is_test) && scratch_made(),
        "no test process with its scratch directory before the grade ended: {seen:#?}\n{:?}",
        names(tmpdir.path())
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    let left = names(tmpdir.path());
    let tests = seen.into_iter().filter(|p| is_test(p)).collect();
    (out, left, tests)
}

/// `n` seeds spread over the whole range, from a base drawn fresh every run and printed, as property
/// tests do: `PI_COURSE_SEEDS_BASE=N` replays a run, and a failure names its seed, so
/// `pi-course grade --seed N` replays that one grade.
pub fn fresh_seeds(n: u64) -> Vec<u64> {
    let base = std::env::var("PI_COURSE_SEEDS_BASE")
        .ok()
        .and_then(|b| b.parse::<u64>().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            now.as_nanos() as u64 ^ u64::from(std::process::id())
        });
    eprintln!("seeds: PI_COURSE_SEEDS_BASE={base}");
    (1..=n)
        .map(|i| base.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect()
}
