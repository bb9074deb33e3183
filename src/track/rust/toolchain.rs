//! The Rust toolchain a build runs, and the cargo home it sees: only what the build needs, found from
//! what the toolchain itself reports.
//!
//! Why not "the directory the `cargo` on PATH is in": with rustup, that `cargo` is a link to `rustup` in
//! `~/.cargo/bin`, and the directory above it is the cargo home, where `credentials.toml` keeps registry
//! tokens. So:
//!
//! - **The toolchain** is what `rustc --print sysroot` names (asked from `/` like the build, so rustup
//!   picks the same toolchain; the answer is kept in the cache while nothing it depends on changes). The
//!   build runs that sysroot's own `cargo` and `rustc`, not rustup's proxies, and may read and run that
//!   directory and the system's, nothing of rustup's.
//! - **The cargo home** of every build is the cache's own, `<cache>/cargo-home/`: links to the real
//!   cargo home's `registry/` and `git/` (the packages `cargo fetch` downloaded there, outside the
//!   sandbox) and the `[source]` table of its configuration (a mirror, say), nothing else. The build may
//!   read it and the two directories it links to, never the real cargo home's root, `bin/` or
//!   credentials; and `env!("CARGO_HOME")` names a directory of the cache. One per cache, not per slot:
//!   cargo fingerprints each dependency by the path of its source, so every slot must see the same
//!   paths, or each would compile the dependencies again.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::outcome::Problem;

/// A toolchain, by what it reported.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// Where the compiler and its libraries live (`rustc --print sysroot`).
    pub sysroot: PathBuf,
    /// The `cargo` the build runs.
    pub cargo: PathBuf,
    /// The `rustc` that cargo runs.
    pub rustc: PathBuf,
}

impl Toolchain {
    /// What the build may read and run: the sysroot, and `cargo` and `rustc` themselves where they are
    /// not in it (a toolchain laid out another way).
    pub fn granted(&self) -> Vec<PathBuf> {
        let mut granted = vec![self.sysroot.clone()];
        for tool in [&self.cargo, &self.rustc] {
            if !tool.starts_with(&self.sysroot) {
                granted.push(tool.clone());
            }
        }
        granted
    }

    /// The build's environment of the toolchain's: its `rustc`, and a PATH of its own `bin` and the
    /// system's (the linker).
    pub fn env(&self, cargo_home: &Path) -> Vec<(String, OsString)> {
        let mut path = OsString::from(self.sysroot.join("bin"));
        path.push(":/usr/local/bin:/usr/bin:/bin");
        vec![
            ("PATH".into(), path),
            ("RUSTC".into(), self.rustc.clone().into()),
            ("CARGO_HOME".into(), cargo_home.into()),
        ]
    }
}

/// What the toolchain reported, once per process.
static FOUND: OnceCell<Result<Toolchain, String>> = OnceCell::const_new();

/// Where [`start`] left the question: answered from the cache's record, or asked and not yet waited for.
enum Asked {
    Recalled(PathBuf),
    Asking {
        child: Child,
        record: PathBuf,
        key: String,
    },
}

static ASKED: Mutex<Option<Asked>> = Mutex::new(None);

/// Starts finding the toolchain, so that [`find`] later only waits for the answer. The answer of an
/// earlier grade is kept in the cache (`<cache>/toolchain`), with everything it depends on; while none of
/// that changed, no process is started. Otherwise rustc (through rustup's proxy) answers meanwhile, in
/// about the time the grade takes to read and prepare the files.
pub fn start(cache: &Path) {
    if FOUND.initialized() {
        return;
    }
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    if asked.is_some() {
        return;
    }
    let record = cache.join("toolchain");
    let key = question();
    *asked = match recall(&record, &key) {
        Some(sysroot) => Some(Asked::Recalled(sysroot)),
        None => ask().ok().map(|child| Asked::Asking { child, record, key }),
    };
}

/// The toolchain the grader's environment selects.
pub async fn find() -> Result<Toolchain, Problem> {
    FOUND
        .get_or_init(answer)
        .await
        .clone()
        .map_err(|output| Problem::Toolchain {
            tool: "rustc".into(),
            output,
        })
}

/// The `rustc` the grader names: `RUSTC`, else the one on PATH.
fn rustc() -> OsString {
    std::env::var_os("RUSTC")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "rustc".into())
}

/// `rustc --print sysroot`, from `/` as the build runs.
fn ask() -> io::Result<Child> {
    Command::new(rustc())
        .args(["--print", "sysroot"])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
}

/// Everything the answer of `rustc --print sysroot` in `/` depends on, hashed: which `rustc` (the
/// variables that name it, the file it resolves to and its identity) and, for rustup's proxy, what
/// selects a toolchain (`RUSTUP_*` variables, the home, rustup's settings, toolchain files in `/`).
fn question() -> String {
    let mut text = String::new();
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            ["RUSTC", "PATH", "HOME"].contains(&k.as_ref()) || k.starts_with("RUSTUP_")
        })
        .collect();
    vars.sort();
    for (k, v) in &vars {
        text.push_str(&format!(
            "{}={}\n",
            k.to_string_lossy(),
            v.to_string_lossy()
        ));
    }
    let named = PathBuf::from(rustc());
    let named = if named.components().count() > 1 {
        Some(named)
    } else {
        crate::sandbox::find_on_path("rustc")
    };
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")));
    let files = [
        named.and_then(|n| std::fs::canonicalize(n).ok()),
        rustup_home.map(|h| h.join("settings.toml")),
        Some(PathBuf::from("/rust-toolchain")),
        Some(PathBuf::from("/rust-toolchain.toml")),
    ];
    for file in files.into_iter().flatten() {
        let identity = crate::file_identity::of(&file).unwrap_or_else(|_| "absent".into());
        text.push_str(&format!("{} {identity}\n", file.display()));
    }
    crate::metadata::fingerprint(text.as_bytes())
}

/// The sysroot recorded for `key`, if it is still a toolchain.
fn recall(record: &Path, key: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(record).ok()?;
    let (recorded, sysroot) = text.trim_end().split_once('\n')?;
    let sysroot = PathBuf::from(sysroot);
    (recorded == key && sysroot.join("bin/rustc").is_file()).then_some(sysroot)
}

/// The answer, from [`start`]'s record or question (asked now if it was not), then the tools in that
/// sysroot.
async fn answer() -> Result<Toolchain, String> {
    let rustc = rustc();
    let asked = ASKED.lock().unwrap_or_else(|e| e.into_inner()).take();
    let sysroot = match asked {
        Some(Asked::Recalled(sysroot)) => sysroot,
        Some(Asked::Asking { child, record, key }) => {
            let sysroot = sysroot(child, &rustc).await?;
            // Best effort: without a record, the next grade asks again.
            let text = format!("{key}\n{}\n", sysroot.display());
            let _ = crate::atomic_file::write(&record, text.as_bytes());
            sysroot
        }
        None => {
            let child = ask().map_err(|e| format!("{}: {e}", Path::new(&rustc).display()))?;
            sysroot(child, &rustc).await?
        }
    };
    // The sysroot's own tools; a toolchain without them in its `bin`: those the grader names, resolved.
    let tool = |name: &str, named: Option<OsString>| {
        let own = sysroot.join("bin").join(name);
        if own.is_file() {
            return Ok(own);
        }
        let named = named
            .map(PathBuf::from)
            .or_else(|| crate::sandbox::find_on_path(name))
            .ok_or_else(|| format!("no {name} in {} or on PATH", sysroot.display()))?;
        std::fs::canonicalize(&named).map_err(|e| format!("{}: {e}", named.display()))
    };
    Ok(Toolchain {
        cargo: tool("cargo", std::env::var_os("CARGO"))?,
        rustc: tool("rustc", Some(rustc.clone()))?,
        sysroot,
    })
}

/// What `child` (`rustc --print sysroot`) printed, resolved.
async fn sysroot(child: Child, rustc: &OsString) -> Result<PathBuf, String> {
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("{}: {e}", Path::new(rustc).display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim_end().to_string());
    }
    let reported = String::from_utf8_lossy(&out.stdout).trim().to_string();
    std::fs::canonicalize(&reported)
        .map_err(|e| format!("`rustc --print sysroot` named {reported:?}: {e}"))
}

/// The cargo home the grader's own cargo uses: `CARGO_HOME`, else `~/.cargo`.
pub fn real_cargo_home() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    set("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cargo")))
}

/// The cache's cargo home (see the module docs), brought up to date with the real one. Returns it and
/// the real directories it links to, which the build may read.
pub fn cargo_home(cache: &Path) -> io::Result<(PathBuf, Vec<PathBuf>)> {
    let home = cache.join("cargo-home");
    std::fs::create_dir_all(&home)?;
    let real = real_cargo_home();
    let mut linked = Vec::new();
    for part in ["registry", "git"] {
        let target = real
            .as_ref()
            .and_then(|real| std::fs::canonicalize(real.join(part)).ok());
        match target {
            Some(target) => {
                link(&home.join(part), &target)?;
                linked.push(target);
            }
            None => remove(&home.join(part))?,
        }
    }
    let config = real.as_deref().and_then(source_config);
    let file = home.join("config.toml");
    match config {
        Some(text) if std::fs::read_to_string(&file).ok().as_deref() != Some(&text) => {
            crate::atomic_file::write(&file, text.as_bytes())?;
        }
        Some(_) => {}
        None => remove(&file)?,
    }
    Ok((home, linked))
}

/// `link` made a symbolic link to `target`, replaced at once if it pointed elsewhere (grades running at
/// once may do this together).
fn link(link: &Path, target: &Path) -> io::Result<()> {
    if std::fs::read_link(link).is_ok_and(|to| to == target) {
        return Ok(());
    }
    let dir = link.parent().expect("a link inside the cargo home");
    let staged = tempfile::Builder::new()
        .prefix(".link-")
        .make_in(dir, |path| std::os::unix::fs::symlink(target, path))?;
    staged.persist(link).map_err(|e| e.error)?;
    Ok(())
}

fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The `[source]` table of the real cargo home's configuration (`config.toml`, or `config` as older
/// cargo named it), as a configuration of its own: where packages come from, never a token or anything
/// else. `None` when there is none.
fn source_config(real: &Path) -> Option<String> {
    let text = ["config.toml", "config"]
        .iter()
        .find_map(|name| std::fs::read_to_string(real.join(name)).ok())?;
    let table: toml::Table = toml::from_str(&text).ok()?;
    let source = table.get("source")?.clone();
    let only = toml::Table::from_iter([("source".to_string(), source)]);
    toml::to_string(&only).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_source_table_of_the_configuration_is_kept() {
        let real = tempfile::tempdir().unwrap();
        std::fs::write(
            real.path().join("config.toml"),
            "[registry]\ntoken = \"cio-secret\"\n[registries.x]\ntoken = \"t2\"\n\
             [source.crates-io]\nreplace-with = \"mirror\"\n[source.mirror]\nregistry = \"sparse+https://mirror.example/index/\"\n",
        )
        .unwrap();
        let text = source_config(real.path()).unwrap();
        assert!(!text.contains("secret") && !text.contains("t2"), "{text}");
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table.keys().collect::<Vec<_>>(), ["source"]);
        assert_eq!(
            table["source"]["crates-io"]["replace-with"].as_str(),
            Some("mirror")
        );
        std::fs::write(
            real.path().join("config.toml"),
            "[registry]\ntoken = \"x\"\n",
        )
        .unwrap();
        assert_eq!(source_config(real.path()), None);
    }

    #[test]
    fn a_recorded_answer_is_used_only_for_the_same_question_and_a_toolchain_still_there() {
        let dir = tempfile::tempdir().unwrap();
        let sysroot = dir.path().join("toolchain");
        std::fs::create_dir_all(sysroot.join("bin")).unwrap();
        std::fs::write(sysroot.join("bin/rustc"), b"").unwrap();
        let record = dir.path().join("record");
        std::fs::write(&record, format!("k1\n{}\n", sysroot.display())).unwrap();
        assert_eq!(recall(&record, "k1"), Some(sysroot.clone()));
        assert_eq!(recall(&record, "k2"), None);
        std::fs::remove_file(sysroot.join("bin/rustc")).unwrap();
        assert_eq!(recall(&record, "k1"), None);
        assert_eq!(recall(&dir.path().join("none"), "k1"), None);
        // The question is the same while nothing it depends on changes.
        assert_eq!(question(), question());
    }

    #[test]
    fn links_are_replaced_when_they_point_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let at = dir.path().join("registry");
        link(&at, &a).unwrap();
        link(&at, &a).unwrap();
        assert_eq!(std::fs::read_link(&at).unwrap(), a);
        link(&at, &b).unwrap();
        assert_eq!(std::fs::read_link(&at).unwrap(), b);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no staged link left behind");
    }
}
