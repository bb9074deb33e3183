//! Stage 3, build: `cargo test --no-run` in the build directory, with the shared target directory.
//!
//! cargo's JSON messages give the rendered compiler diagnostics (with or without colors) and the path of
//! the test executable. Diagnostics name files relative to the build directory; each editable file is
//! renamed to where the learner has it.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::toolchain::{self, Toolchain};
use crate::outcome::Problem;
use crate::process;
use crate::sandbox::BuildPaths;
use crate::track::{spawn_confined, BuildRequest};

/// The built test executable.
#[derive(Debug)]
pub struct Built {
    pub exe: PathBuf,
}

#[derive(Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    target: Option<Target>,
    #[serde(default)]
    executable: Option<PathBuf>,
    #[serde(default)]
    message: Option<Diagnostic>,
    #[serde(default)]
    success: Option<bool>,
    #[serde(default)]
    package_id: Option<String>,
    #[serde(default)]
    fresh: Option<bool>,
}

/// The package name in a cargo package id: `registry+https://…#serde@1.0.229` or the older
/// `serde 1.0.229 (registry+https://…)`; `None` when the id does not say it.
fn package_name(id: &str) -> Option<&str> {
    match id.split_once('#') {
        Some((_, rest)) => rest.split_once('@').map(|(name, _)| name),
        None => id.split_once(' ').map(|(name, _)| name),
    }
}

#[derive(Deserialize)]
struct Target {
    name: String,
    kind: Vec<String>,
}

#[derive(Deserialize)]
struct Diagnostic {
    level: String,
    rendered: Option<String>,
    #[serde(default)]
    spans: Vec<serde_json::Value>,
}

/// `CARGO SUBCOMMAND --manifest-path <build dir>/Cargo.toml`, started in `/`.
///
/// Why `/`: cargo reads `.cargo/config.toml` from its working directory and every directory above it.
/// Started in the build directory, it would read any configuration planted in the cache or above it (a
/// `rustc-wrapper` that runs in every later build). From `/`, it reads only `/` and the cargo home's.
fn cargo(cargo: &Path, subcommand: &str, build_dir: &Path) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.arg(subcommand)
        .arg("--manifest-path")
        .arg(build_dir.join("Cargo.toml"))
        .current_dir("/");
    cmd
}

/// Builds the test target. `on_crate` is called with each crate name as cargo finishes it (for progress).
///
/// The packages the build needs are fetched first, outside the sandbox (the manifest and lock file are
/// the pristine given ones); the build itself runs confined and offline, and is stopped at the timeout.
pub async fn build(req: &BuildRequest<'_>, on_crate: &dyn Fn(&str)) -> Result<Built, Problem> {
    let toolchain = toolchain::find().await?;
    fetch(req, &toolchain).await?;
    let deadline = tokio::time::Instant::now() + req.timeout;
    let paths = build_paths(req, &toolchain)?;
    let mut built = compile(req, &toolchain, &paths, on_crate, deadline).await?;
    match verify(&built, req.target_dir) {
        Ok(()) => Ok(Built { exe: built.exe }),
        Err(_) => {
            // Tampered with since it was built: build it again from scratch, once.
            let _ = std::fs::remove_file(&built.exe);
            built = compile(req, &toolchain, &paths, on_crate, deadline).await?;
            verify(&built, req.target_dir).map_err(|_| Problem::TamperedExecutable {
                path: built.exe.display().to_string(),
            })?;
            Ok(Built { exe: built.exe })
        }
    }
}

/// What the confined build may touch (see [`toolchain`]): the toolchain, the cache's cargo home and
/// the packages it links to, the slot and its target directory.
fn build_paths(req: &BuildRequest<'_>, toolchain: &Toolchain) -> Result<BuildPaths, Problem> {
    let (cargo_home, packages) = toolchain::cargo_home(req.cache).map_err(|e| Problem::Io {
        what: req.cache.join("cargo-home").display().to_string(),
        error: e.to_string(),
    })?;
    Ok(BuildPaths {
        package: req.build_dir.to_path_buf(),
        target: req.target_dir.to_path_buf(),
        toolchain: toolchain.granted(),
        read: std::iter::once(cargo_home.clone())
            .chain(packages)
            .collect(),
        env: toolchain.env(&cargo_home),
    })
}

/// `cargo fetch --locked`, once per target directory: the build after it runs offline. It runs with the
/// grader's own environment and cargo home (it downloads into it), outside the sandbox, and compiles
/// nothing.
async fn fetch(req: &BuildRequest<'_>, toolchain: &Toolchain) -> Result<(), Problem> {
    let marker = req.target_dir.join(".pi-course-fetched");
    if marker.is_file() {
        return Ok(());
    }
    let mut cmd = cargo(&toolchain.cargo, "fetch", req.build_dir);
    cmd.arg("--locked")
        .env("CARGO_TERM_PROGRESS_WHEN", "never")
        .env("CARGO_TERM_COLOR", "never")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (child, _group) = process::spawn(&mut cmd).map_err(|e| Problem::Io {
        what: "cargo fetch".into(),
        error: e.to_string(),
    })?;
    let out = child.wait_with_output().await.map_err(|e| Problem::Io {
        what: "cargo fetch".into(),
        error: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(Problem::Cargo {
            output: cargo_output(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    std::fs::create_dir_all(req.target_dir)
        .and_then(|()| std::fs::write(&marker, b""))
        .map_err(|e| Problem::Io {
            what: marker.display().to_string(),
            error: e.to_string(),
        })
}

/// Removes what the last build made of the practice crate (see [`crate::grade::occupant`]): `cargo clean -p`
/// knows where cargo keeps each of its outputs (the library, the test executable, incremental data,
/// fingerprints, dependency files), whatever its version; the dependencies' outputs stay. Confined like
/// the build.
pub async fn clear_learner_outputs(req: &BuildRequest<'_>) -> Result<(), Problem> {
    if !crate::cache::is_built(req.target_dir) {
        return Ok(());
    }
    let toolchain = toolchain::find().await?;
    let package = manifest_package(req.build_dir)?;
    let paths = build_paths(req, &toolchain)?;
    let mut cmd = cargo(&toolchain.cargo, "clean", req.build_dir);
    cmd.args(["--offline", "--locked", "--quiet", "-p", &package])
        .arg("--target-dir")
        .arg(req.target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let (child, _group) = spawn_confined(req, &mut cmd, &paths, "cargo clean")?;
    let out = child.wait_with_output().await.map_err(|e| Problem::Io {
        what: "cargo clean".into(),
        error: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(Problem::Cargo {
            output: cargo_output(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(())
}

/// The name of the package in `build_dir` (its given manifest's `[package] name`).
fn manifest_package(build_dir: &Path) -> Result<String, Problem> {
    let path = build_dir.join("Cargo.toml");
    let problem = |error: String| Problem::Io {
        what: path.display().to_string(),
        error,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| problem(e.to_string()))?;
    let manifest: toml::Table = toml::from_str(&text).map_err(|e| problem(e.to_string()))?;
    manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .ok_or_else(|| problem("no [package] name".into()))
}

/// What one confined `cargo test --no-run` produced.
struct Compiled {
    exe: PathBuf,
    /// cargo reused the executable of an earlier build.
    fresh: bool,
}

async fn compile(
    req: &BuildRequest<'_>,
    toolchain: &Toolchain,
    paths: &BuildPaths,
    on_crate: &dyn Fn(&str),
    deadline: tokio::time::Instant,
) -> Result<Compiled, Problem> {
    let format = if req.color {
        "json-diagnostic-rendered-ansi"
    } else {
        "json"
    };
    let mut cmd = cargo(&toolchain.cargo, "test", req.build_dir);
    cmd.args([
        "--no-run",
        "--locked",
        "--offline",
        "--test",
        req.test_target,
    ])
    // An argument, not CARGO_TARGET_DIR: rustc inherits cargo's environment, and `env!` would show it.
    .arg("--target-dir")
    .arg(req.target_dir)
    .arg(format!("--message-format={format}"))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let (mut child, group) = spawn_confined(req, &mut cmd, paths, "cargo")?;
    let stderr = tokio::spawn(process::capture(child.stderr.take().expect("piped stderr")));
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();

    let mut exe = None;
    let mut fresh = false;
    let mut errors = Vec::new();
    let mut kept = 0;
    let mut error_count = 0;
    let mut success = false;
    // Reading cargo's messages and waiting for it to exit share one deadline.
    let finished = tokio::time::timeout_at(deadline, async {
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Message>(&line) else {
                continue;
            };
            match msg.reason.as_str() {
                "compiler-artifact" => {
                    if let Some(target) = &msg.target {
                        let package = msg.package_id.as_deref().and_then(package_name);
                        on_crate(package.unwrap_or(&target.name));
                        let is_test = target.kind.iter().any(|k| k == "test");
                        if is_test && target.name == req.test_target {
                            if let Some(built) = msg.executable {
                                exe = Some(built);
                            }
                            fresh = msg.fresh.unwrap_or(false);
                        }
                    }
                }
                "compiler-message" => {
                    let Some(d) = msg.message else { continue };
                    match d.level.as_str() {
                        "error" | "error: internal compiler error" => {
                            if !d.spans.is_empty() {
                                error_count += 1;
                            }
                            // A report shows only so much of it (`bounds::PROBLEM_BYTES`): the rest
                            // is counted, not kept.
                            if kept < crate::outcome::bounds::PROBLEM_BYTES {
                                kept += d.rendered.as_ref().map_or(0, String::len);
                                errors.extend(d.rendered);
                            }
                        }
                        _ => {}
                    }
                }
                "build-finished" => success = msg.success.unwrap_or(false),
                _ => {}
            }
        }
        child.wait().await
    })
    .await;
    let Ok(status) = finished else {
        group.kill();
        let _ = child.wait().await;
        return Err(Problem::BuildTimeout {
            secs: req.timeout.as_secs(),
        });
    };
    let stderr = stderr.await.map(|c| c.text()).unwrap_or_default();
    let exited_ok = status.as_ref().is_ok_and(|s| s.success());

    if !errors.is_empty() {
        let rendered = rename_paths(&errors.concat(), &req.renames);
        return Err(Problem::Compile {
            rendered,
            errors: error_count.max(1),
        });
    }
    match exe {
        Some(exe) if success && exited_ok => Ok(Compiled { exe, fresh }),
        _ => Err(Problem::Cargo {
            output: cargo_output(&stderr),
        }),
    }
}

/// The file beside the target directory's executables that records the identity of the last one built.
fn identity_record(target_dir: &Path) -> PathBuf {
    target_dir.join(".pi-course-test-exe")
}

/// Records the identity of a freshly built executable, or checks a reused one against the record: an
/// executable changed since its build (by anything but cargo) is never run.
fn verify(built: &Compiled, target_dir: &Path) -> std::io::Result<()> {
    let identity = crate::file_identity::of(&built.exe)?;
    let record = identity_record(target_dir);
    if built.fresh {
        match std::fs::read_to_string(&record) {
            Ok(recorded) if recorded.trim() == identity => Ok(()),
            _ => Err(std::io::Error::other(
                "the executable changed since its build",
            )),
        }
    } else {
        std::fs::write(&record, &identity)
    }
}

/// cargo's stderr without its progress lines.
fn cargo_output(stderr: &str) -> String {
    const PROGRESS: [&str; 6] = [
        "Compiling ",
        "Blocking ",
        "Finished ",
        "Downloaded ",
        "Downloading ",
        "Locking ",
    ];
    stderr
        .lines()
        .filter(|l| !PROGRESS.iter().any(|p| l.trim_start().starts_with(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Replaces each `from` path in rustc's rendered text with `to` where it appears as a location
/// (`--> src/agent_loop.rs:3:5`, `::: src/agent_loop.rs:1:1`), also between ANSI color codes.
pub fn rename_paths(text: &str, renames: &[(String, String)]) -> String {
    let mut text = text.to_string();
    for (from, to) in renames {
        if from == to {
            continue;
        }
        let needle = format!("{from}:");
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(&needle) {
            let before = &rest[..i];
            out.push_str(before);
            let at_location = rest[i + needle.len()..].starts_with(|c: char| c.is_ascii_digit())
                && strip_trailing_ansi(&out).ends_with([' ', '\n', '\t']);
            out.push_str(if at_location { to } else { from });
            out.push(':');
            rest = &rest[i + needle.len()..];
        }
        out.push_str(rest);
        text = out;
    }
    text
}

fn strip_trailing_ansi(mut s: &str) -> &str {
    while s.ends_with('m') {
        match s.rfind("\x1b[") {
            Some(p)
                if s[p + 2..s.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b';') =>
            {
                s = &s[..p]
            }
            _ => break,
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renames(to: &str) -> Vec<(String, String)> {
        vec![("src/agent_loop.rs".to_string(), to.to_string())]
    }

    #[test]
    fn renames_locations_plain_and_colored() {
        let plain = "error[E0308]: mismatched types\n --> src/agent_loop.rs:12:5\n  |\n";
        assert_eq!(
            rename_paths(plain, &renames("p/src/agent_loop.rs")),
            "error[E0308]: mismatched types\n --> p/src/agent_loop.rs:12:5\n  |\n"
        );
        let colored = "\x1b[0m\x1b[1m\x1b[38;5;12m--> \x1b[0msrc/agent_loop.rs:3:5\x1b[0m";
        assert_eq!(
            rename_paths(colored, &renames("/tmp/x y/src/agent_loop.rs")),
            "\x1b[0m\x1b[1m\x1b[38;5;12m--> \x1b[0m/tmp/x y/src/agent_loop.rs:3:5\x1b[0m"
        );
        // Not a location: left alone.
        let prose = "note: see course/src/agent_loop.rs:3 and `src/agent_loop.rs: x`";
        assert_eq!(rename_paths(prose, &renames("p/src/agent_loop.rs")), prose);
    }

    #[test]
    fn names_packages() {
        let id = "registry+https://github.com/rust-lang/crates.io-index#serde@1.0.229";
        assert_eq!(package_name(id), Some("serde"));
        assert_eq!(
            package_name("serde 1.0.229 (registry+https://x)"),
            Some("serde")
        );
        assert_eq!(package_name("path+file:///tmp/pi-course-07#0.7.0"), None);
    }

    #[test]
    fn strips_ansi() {
        assert_eq!(
            crate::ui::strip_ansi("\x1b[0m\x1b[1m\x1b[38;5;9merror\x1b[0m: x"),
            "error: x"
        );
    }

    #[test]
    fn drops_cargo_progress() {
        let s = "   Compiling a v0.1.0\nerror: the lock file needs to be updated\n    Finished dev";
        assert_eq!(cargo_output(s), "error: the lock file needs to be updated");
    }
}
