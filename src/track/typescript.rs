//! The TypeScript track's toolchain: the pinned TypeScript compiler, then node running the course's
//! harness (`harness/run.mjs`), which speaks the same verdict channel as the Rust track's.
//!
//! - **Dependencies** (TypeScript, `@types/node`) are installed once per version of the given
//!   `package.json` and lock file, into `<cache>/node/<hash>/`, by `npm ci --ignore-scripts`: outside the
//!   sandbox, since it needs the package registry, but from the pristine files only, and no package's
//!   install script ever runs. Every build slot links `node_modules` to that directory; after the first
//!   grade nothing needs the network.
//! - **The build** is `tsc -p` in the slot, confined like cargo: it reads the system and the
//!   dependencies, and writes only the slot's `dist/`. tsc never runs the code it compiles, and any
//!   diagnostic is a compile error, as `npm run build` would report it. The compiler is the one the lock
//!   file names: TypeScript 7's native executable, started directly, or, in a directory of layout 1,
//!   TypeScript 5.9's `tsc` script on node (see [`Compiler`]).
//! - **The tests** run in one node per batch, under node's permission model (no child processes,
//!   workers, inspector or addons; reads of the compiled code and the scenarios only), with frozen
//!   intrinsics and no code built from strings, inside the grader's sandbox. Why each matters: `harness-node/harness/run.mjs`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use tokio::process::Command;

use super::test_command::TestCommand;
use super::{Adapter, BuildRequest, Step};
use crate::outcome::Problem;
use crate::process;
use crate::sandbox::BuildPaths;

mod built;

pub struct TypeScript;

impl Adapter for TypeScript {
    fn installs_dependencies(&self, cache: &Path, build_dir: &Path) -> bool {
        dependencies_dir(cache, build_dir).is_ok_and(|(dir, ..)| !dir.join(INSTALLED).is_file())
    }

    fn clear_learner_outputs<'a>(&'a self, req: &'a BuildRequest<'a>) -> Step<'a, ()> {
        Box::pin(std::future::ready(clear_learner_outputs(req)))
    }

    fn build<'a>(
        &'a self,
        req: &'a BuildRequest<'a>,
        on_step: &'a dyn Fn(&str),
    ) -> Step<'a, TestCommand> {
        Box::pin(build(req, on_step))
    }

    fn manifest(&self) -> &'static str {
        "package.json"
    }
}

/// System files node reads at every start: OpenSSL's configuration (refused, node does not start).
const NODE_READS: &[&str] = &["/etc/ssl/openssl.cnf"];

fn node_reads() -> impl Iterator<Item = PathBuf> {
    NODE_READS.iter().map(PathBuf::from).filter(|p| p.exists())
}

/// Where the compiled code goes (`outDir` of the given `tsconfig.json`).
const DIST: &str = "dist";

/// The node on `PATH`, resolved, and its version.
#[derive(Debug, Clone)]
struct Node {
    path: PathBuf,
    major: u32,
    minor: u32,
}

/// The oldest node the track supports: the permission model came with 20.
const MIN_MAJOR: u32 = 20;

fn toolchain_problem(tool: &str, output: impl Into<String>) -> Problem {
    Problem::Toolchain {
        tool: tool.to_string(),
        output: output.into(),
    }
}

/// Finds node once per process.
async fn node() -> Result<Node, Problem> {
    static NODE: OnceLock<Node> = OnceLock::new();
    if let Some(node) = NODE.get() {
        return Ok(node.clone());
    }
    let missing = || {
        toolchain_problem(
            "node",
            "node was not found on PATH: the TypeScript track needs Node.js 20 or newer (with npm)",
        )
    };
    let path = crate::sandbox::find_on_path("node").ok_or_else(missing)?;
    let path = std::fs::canonicalize(&path).map_err(|_| missing())?;
    let out = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| toolchain_problem("node", e.to_string()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut parts = version.trim_start_matches('v').split('.');
    let mut number = || parts.next().and_then(|p| p.parse::<u32>().ok());
    let (Some(major), Some(minor)) = (number(), number()) else {
        return Err(toolchain_problem(
            "node",
            format!("`node --version` printed {version:?}, not a version"),
        ));
    };
    if major < MIN_MAJOR {
        return Err(toolchain_problem(
            "node",
            format!("node {version} is too old: the TypeScript track needs Node.js {MIN_MAJOR} or newer"),
        ));
    }
    Ok(NODE.get_or_init(|| Node { path, major, minor }).clone())
}

/// Builds the slot and says how to run its tests.
pub async fn build(req: &BuildRequest<'_>, on_step: &dyn Fn(&str)) -> Result<TestCommand, Problem> {
    let deadline = tokio::time::Instant::now() + req.timeout;
    let node = node().await?;
    let deps = install_dependencies(req, on_step).await?;
    link_dependencies(req.build_dir, &deps)?;
    let io = |e: std::io::Error| Problem::Io {
        what: req.build_dir.display().to_string(),
        error: e.to_string(),
    };
    // The same files as the last successful compile of this slot: its output is today's (see `built`).
    let inputs = built::fingerprint(req.build_dir).map_err(io)?;
    if !built::is_current(req.build_dir, &inputs) {
        built::forget(req.build_dir).map_err(io)?;
        on_step("tsc");
        compile(req, &node, &deps, deadline).await?;
        built::record(req.build_dir, &inputs).map_err(io)?;
    }
    Ok(test_command(req, &node))
}

/// Removes what the last build compiled (see [`crate::grade::occupant`]): `dist/`, where tsc also keeps its
/// incremental record, and any such record beside it.
pub fn clear_learner_outputs(req: &BuildRequest<'_>) -> Result<(), Problem> {
    let io = |path: &Path, e: std::io::Error| Problem::Io {
        what: path.display().to_string(),
        error: e.to_string(),
    };
    let dist = req.build_dir.join(DIST);
    match std::fs::remove_dir_all(&dist) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&dist, e)),
        _ => {}
    }
    let entries = std::fs::read_dir(req.build_dir).map_err(|e| io(req.build_dir, e))?;
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .ends_with(".tsbuildinfo")
        {
            std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
        }
    }
    Ok(())
}

/// `<cache>/node/<hash of package.json and its lock>/`, holding `node_modules/`.
fn dependencies_dir(
    cache: &Path,
    build_dir: &Path,
) -> Result<(PathBuf, Vec<u8>, Vec<u8>), Problem> {
    let read = |name: &str| {
        std::fs::read(build_dir.join(name)).map_err(|e| Problem::Io {
            what: build_dir.join(name).display().to_string(),
            error: e.to_string(),
        })
    };
    let (manifest, lock) = (read("package.json")?, read("package-lock.json")?);
    let both = [&(manifest.len() as u64).to_le_bytes()[..], &manifest, &lock].concat();
    let hex = &crate::metadata::fingerprint(&both)[..16];
    Ok((cache.join("node").join(hex), manifest, lock))
}

/// The marker of a finished install: written last, so a half-made directory is never used.
const INSTALLED: &str = ".pi-course-installed";

/// Installs the dependencies once (see the module docs); grades running at once wait for one install.
async fn install_dependencies(
    req: &BuildRequest<'_>,
    on_step: &dyn Fn(&str),
) -> Result<PathBuf, Problem> {
    let (dir, manifest, lock) = dependencies_dir(req.cache, req.build_dir)?;
    if dir.join(INSTALLED).is_file() {
        return Ok(dir);
    }
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e: std::io::Error| Problem::Io {
            what: what.clone(),
            error: e.to_string(),
        }
    };
    let parent = dir.parent().expect("under the cache");
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let lock_path = dir.with_extension("lock");
    let lock_file = std::fs::File::create(&lock_path).map_err(io(&lock_path))?;
    let lock_file = tokio::task::spawn_blocking(move || lock_file.lock().map(|()| lock_file))
        .await
        .expect("the lock task does not panic")
        .map_err(io(&lock_path))?;
    if dir.join(INSTALLED).is_file() {
        return Ok(dir);
    }
    on_step("npm ci");
    let staging = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(parent)
        .map_err(io(parent))?;
    std::fs::write(staging.path().join("package.json"), manifest).map_err(io(staging.path()))?;
    std::fs::write(staging.path().join("package-lock.json"), lock).map_err(io(staging.path()))?;
    let npm = crate::sandbox::find_on_path("npm").ok_or_else(|| {
        toolchain_problem(
            "npm",
            "npm was not found on PATH: the TypeScript track installs TypeScript with npm (it comes with Node.js)",
        )
    })?;
    let mut cmd = Command::new(npm);
    cmd.args([
        "ci",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ])
    // npm's own cache (downloads, logs) stays in ours, not in the learner's home.
    .env("npm_config_cache", parent.join("npm-cache"))
    .env("npm_config_update_notifier", "false")
    .current_dir(staging.path())
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let (child, _group) = process::spawn(&mut cmd).map_err(io(Path::new("npm")))?;
    let out = child
        .wait_with_output()
        .await
        .map_err(io(Path::new("npm")))?;
    if !out.status.success() {
        return Err(toolchain_problem(
            "npm ci",
            String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
        ));
    }
    std::fs::write(staging.path().join(INSTALLED), b"").map_err(io(staging.path()))?;
    // A directory left by an install that was stopped half-way is replaced.
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &dir).map_err(io(&dir))?;
    drop(lock_file);
    Ok(dir)
}

/// `<slot>/node_modules` → the installed dependencies.
fn link_dependencies(slot: &Path, deps: &Path) -> Result<(), Problem> {
    let link = slot.join("node_modules");
    let wanted = deps.join("node_modules");
    if std::fs::read_link(&link).is_ok_and(|to| to == wanted) {
        return Ok(());
    }
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_dir_all(&link);
    std::os::unix::fs::symlink(&wanted, &link).map_err(|e| Problem::Io {
        what: link.display().to_string(),
        error: e.to_string(),
    })
}

/// The compiler the installed dependencies hold: what `npm run build` (`tsc -p .`) runs in the practice
/// directory, started directly.
#[derive(Debug, Clone, PartialEq)]
enum Compiler {
    /// TypeScript 7 and later: a native executable, in the package for this platform that npm installed
    /// beside `typescript` (`@typescript/typescript-linux-x64/lib/tsc`). Started without node: node's
    /// start-up was most of a grade's type check.
    Native(PathBuf),
    /// TypeScript 5 (the lock file of a layout-1 directory): `tsc` is a script that node runs.
    OnNode { node: PathBuf, script: PathBuf },
}

impl Compiler {
    fn installed(deps: &Path, node: &Node) -> Compiler {
        let scoped = deps.join("node_modules/@typescript");
        let native = std::fs::read_dir(&scoped)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("typescript-"))
            .map(|e| e.path().join("lib/tsc"))
            .find(|exe| exe.is_file());
        match native {
            Some(exe) => Compiler::Native(exe),
            None => Compiler::OnNode {
                node: node.path.clone(),
                script: deps.join("node_modules/typescript/bin/tsc"),
            },
        }
    }

    fn program(&self) -> &Path {
        match self {
            Compiler::Native(exe) => exe,
            Compiler::OnNode { node, .. } => node,
        }
    }

    fn script(&self) -> Option<&Path> {
        match self {
            Compiler::Native(_) => None,
            Compiler::OnNode { script, .. } => Some(script),
        }
    }
}

/// `tsc -p` in the slot, confined; any diagnostic is a compile error.
async fn compile(
    req: &BuildRequest<'_>,
    node: &Node,
    deps: &Path,
    deadline: tokio::time::Instant,
) -> Result<(), Problem> {
    let compiler = Compiler::installed(deps, node);
    let mut cmd = Command::new(compiler.program());
    cmd.args(compiler.script())
        .args(["-p", "tsconfig.json", "--pretty"])
        .arg(if req.color { "true" } else { "false" })
        .current_dir(req.build_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let dist = req.build_dir.join(DIST);
    std::fs::create_dir_all(&dist).map_err(|e| Problem::Io {
        what: dist.display().to_string(),
        error: e.to_string(),
    })?;
    let paths = BuildPaths {
        package: req.build_dir.to_path_buf(),
        target: dist,
        toolchain: vec![compiler.program().to_path_buf()],
        read: match compiler {
            Compiler::Native(_) => vec![deps.to_path_buf()],
            Compiler::OnNode { .. } => std::iter::once(deps.to_path_buf())
                .chain(node_reads())
                .collect(),
        },
        env: Vec::new(),
    };
    let io_problem = |e: std::io::Error| Problem::Io {
        what: "tsc".into(),
        error: e.to_string(),
    };
    let (child, group) = super::spawn_confined(req, &mut cmd, &paths, "tsc")?;
    let out = match tokio::time::timeout_at(deadline, child.wait_with_output()).await {
        Ok(out) => out.map_err(io_problem)?,
        Err(_) => {
            group.kill();
            return Err(Problem::BuildTimeout {
                secs: req.timeout.as_secs(),
            });
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let errors = stdout
        .lines()
        .filter(|l| crate::ui::strip_ansi(l).contains("error TS"))
        .count();
    if errors == 0 {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(toolchain_problem(
            "tsc",
            format!("{stdout}{stderr}").trim_end().to_string(),
        ));
    }
    Err(Problem::Compile {
        rendered: rename_locations(&stdout, &req.renames),
        errors,
    })
}

/// tsc names files relative to the slot, at the start of a diagnostic: `src/agent-loop.ts(3,5): error`
/// plain, `src/agent-loop.ts:3:5 - error` pretty (after colour codes). Each editable file is renamed to
/// where the learner has it; other mentions are left alone.
fn rename_locations(text: &str, renames: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut line = line.to_string();
        for (from, to) in renames {
            let plain = crate::ui::strip_ansi(&line);
            let at_start = plain
                .strip_prefix(from.as_str())
                .is_some_and(|rest| rest.starts_with(['(', ':']));
            if at_start {
                line = line.replacen(from.as_str(), to, 1);
            }
        }
        out.push_str(&line);
    }
    out
}

/// The permission model's flag: `--permission` from node 22.13, `--experimental-permission` before.
fn permission_flag(node: &Node) -> &'static str {
    if node.major > 22 || (node.major == 22 && node.minor >= 13) {
        "--permission"
    } else {
        "--experimental-permission"
    }
}

/// How to start a test process of this slot (see the module docs).
fn test_command(req: &BuildRequest<'_>, node: &Node) -> TestCommand {
    let dist = req.build_dir.join(DIST);
    let harness = req.build_dir.join("harness");
    let memory_mib = req.sandbox.limits().memory >> 20;
    let mut allow_read = OsString::from("--allow-fs-read=");
    allow_read.push(dist.join("*"));
    let mut allow_harness = OsString::from("--allow-fs-read=");
    allow_harness.push(harness.join("*"));
    // The test files register their tests from the chapter's scenarios (a given file, never the
    // learner's): the names only; graded, each instance comes from the orders.
    let scenarios = req
        .build_dir
        .join("test")
        .join(format!("{}-expected.json", req.test_target));
    let mut allow_scenarios = OsString::from("--allow-fs-read=");
    allow_scenarios.push(&scenarios);
    let editable: Vec<&str> = req.renames.iter().map(|(path, _)| path.as_str()).collect();
    TestCommand {
        program: node.path.clone(),
        args: vec![
            permission_flag(node).into(),
            allow_read,
            allow_harness,
            allow_scenarios,
            "--frozen-intrinsics".into(),
            "--no-addons".into(),
            "--disallow-code-generation-from-strings".into(),
            // Stack traces in failure messages name the learner's TypeScript lines, not the compiled ones.
            "--enable-source-maps".into(),
            // V8 gives up with "JavaScript heap out of memory" before the process limit is reached.
            format!("--max-old-space-size={}", (memory_mib * 3 / 4).max(64)).into(),
            harness.join("run.mjs").into(),
        ],
        read: [dist, harness, scenarios]
            .into_iter()
            .chain(node_reads())
            .collect(),
        envs: vec![
            ("PI_COURSE_EDITABLE".into(), editable.join(",")),
            // The permission model and frozen intrinsics announce themselves as experimental on every start.
            ("NODE_NO_WARNINGS".into(), "1".into()),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_the_editable_file_where_a_diagnostic_starts() {
        let renames = vec![(
            "src/agent-loop.ts".to_string(),
            "/home/a/p/src/agent-loop.ts".to_string(),
        )];
        let plain = "src/agent-loop.ts(3,5): error TS2322: x\ntest/support.ts(1,1): error TS1: src/agent-loop.ts(2,2)\n";
        assert_eq!(
            rename_locations(plain, &renames),
            "/home/a/p/src/agent-loop.ts(3,5): error TS2322: x\ntest/support.ts(1,1): error TS1: src/agent-loop.ts(2,2)\n"
        );
        let pretty = "\x1b[96msrc/agent-loop.ts\x1b[0m:\x1b[93m3\x1b[0m:\x1b[93m5\x1b[0m - \x1b[91merror\x1b[0m";
        assert!(rename_locations(pretty, &renames)
            .starts_with("\x1b[96m/home/a/p/src/agent-loop.ts\x1b[0m"));
    }

    #[test]
    fn the_permission_flag_follows_the_version() {
        let node = |major, minor| Node {
            path: PathBuf::from("/usr/bin/node"),
            major,
            minor,
        };
        assert_eq!(permission_flag(&node(20, 20)), "--experimental-permission");
        assert_eq!(permission_flag(&node(22, 12)), "--experimental-permission");
        assert_eq!(permission_flag(&node(22, 13)), "--permission");
        assert_eq!(permission_flag(&node(24, 0)), "--permission");
    }
}
