//! The Rust toolchain a build runs, and the cargo home it sees: only what the build needs, found from
//! what the toolchain itself reports.
//!
//! Why not "the directory the `cargo` on PATH is in": with rustup, that `cargo` is a link to `rustup` in
//! `~/.cargo/bin`, and the directory above it is the cargo home, where `credentials.toml` keeps registry
//! tokens. So:
//!
//! - **The toolchain** is what `rustc --print sysroot` names (asked once per process, from `/` like the
//!   build, so rustup picks the same toolchain). The build runs that sysroot's own `cargo` and `rustc`,
//!   not rustup's proxies, and may read and run that directory and the system's, nothing of rustup's.
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

use super::outcome::Problem;

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

/// The question, when [`start`] has asked it and no one has waited for the answer yet.
static ASKED: Mutex<Option<Child>> = Mutex::new(None);

/// Starts asking for the toolchain, so that [`find`] later only waits for the answer: rustc (through
/// rustup's proxy) answers in about the time the grade takes to read and prepare the files meanwhile.
pub fn start() {
    if FOUND.initialized() {
        return;
    }
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    if asked.is_none() {
        *asked = ask().ok();
    }
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

/// The answer to [`ask`], then the tools in that sysroot.
async fn answer() -> Result<Toolchain, String> {
    let rustc = rustc();
    let named = || Path::new(&rustc).display().to_string();
    let asked = ASKED.lock().unwrap_or_else(|e| e.into_inner()).take();
    let child = match asked {
        Some(child) => child,
        None => ask().map_err(|e| format!("{}: {e}", named()))?,
    };
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("{}: {e}", named()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim_end().to_string());
    }
    let reported = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let sysroot = std::fs::canonicalize(&reported)
        .map_err(|e| format!("`rustc --print sysroot` named {reported:?}: {e}"))?;
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
