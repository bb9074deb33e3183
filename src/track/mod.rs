//! One build-and-run adapter per track, behind the one trait the grade pipeline calls ([`Adapter`]):
//! build the slot, then say how to start a test process. Everything else (slots, the runner, the verdict
//! channel, reports) is the same for every track.
//!
//! - Rust ([`rust`]): `cargo test --no-run`, then the test executable itself.
//! - TypeScript ([`typescript`]): `tsc`, then node running the course's harness.

pub mod rust;
pub mod test_command;
pub mod typescript;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use tokio::process::Command;

use crate::cache::BuildDir;
use crate::catalog::Track;
use crate::i18n::Lang;
use crate::outcome::Problem;
use crate::process;
use crate::sandbox::{BuildPaths, Sandbox};
use test_command::TestCommand;

/// What a build is asked to do: the same for every track.
pub struct BuildRequest<'a> {
    /// The cache root (where the TypeScript track installs its dependencies).
    pub cache: &'a Path,
    pub build_dir: &'a Path,
    pub target_dir: &'a Path,
    pub test_target: &'a str,
    /// Render diagnostics with ANSI colors.
    pub color: bool,
    /// `(path in the build directory, path to show)` for each editable file.
    pub renames: Vec<(String, String)>,
    /// Confines the build's tools.
    pub sandbox: &'a Sandbox,
    /// The build is stopped after this long.
    pub timeout: Duration,
}

/// The learner's editable files: (path inside the practice directory, bytes).
pub type Editable = [(String, Vec<u8>)];

/// How a file is named to the learner, from its path inside the practice directory.
pub type Shown<'a> = &'a dyn Fn(&str) -> String;

/// A step of an adapter that runs tools: a future, boxed so that [`Adapter`] can be chosen at run time.
pub type Step<'a, T> = Pin<Box<dyn Future<Output = Result<T, Problem>> + 'a>>;

/// What the grade pipeline asks of a track, in the order it asks.
pub trait Adapter {
    /// Starts what the build will need to know about the toolchain, while the grade prepares; `cache`
    /// is the cache root, where the answer is remembered.
    fn start(&self, _cache: &Path) {}

    /// What of the learner's `editable` files (path, bytes) the track refuses to build, before any
    /// build, as a compile error would say it: the learner fixes their file. `shown` names a file as
    /// the learner knows it.
    fn refused(&self, _editable: &Editable, _shown: Shown, _lang: Lang) -> Option<Problem> {
        None
    }

    /// How many crates a first build of this slot compiles, for the first grade's progress; `None` when
    /// the slot has built before, or when the track has no such count.
    fn dependencies_to_compile(&self, _slot: &BuildDir) -> Option<usize> {
        None
    }

    /// Whether the build of the slot at `build_dir` first installs the track's dependencies into the
    /// cache at `cache` (a first grade's notice says so).
    fn installs_dependencies(&self, _cache: &Path, _build_dir: &Path) -> bool {
        false
    }

    /// Removes what the slot's last build made of the learner's files (see
    /// [`crate::grade::occupant`]), keeping the dependencies' outputs.
    fn clear_learner_outputs<'a>(&'a self, req: &'a BuildRequest<'a>) -> Step<'a, ()>;

    /// Builds the slot of `req`. `on_step` is called with each unit of the build as it finishes (a
    /// crate, `npm ci`, `tsc`), for progress.
    fn build<'a>(
        &'a self,
        req: &'a BuildRequest<'a>,
        on_step: &'a dyn Fn(&str),
    ) -> Step<'a, TestCommand>;

    /// The file that makes a build slot a package of the track's: gone, the cache was removed under
    /// the build.
    fn manifest(&self) -> &'static str;
}

/// The adapter of `track`.
pub fn adapter(track: Track) -> &'static dyn Adapter {
    match track {
        Track::Rust => &rust::Rust,
        Track::TypeScript => &typescript::TypeScript,
    }
}

/// Starts a build command (`what` names it in errors) confined by the sandbox to `paths`, in its own
/// process group.
pub fn spawn_confined(
    req: &BuildRequest<'_>,
    cmd: &mut Command,
    paths: &BuildPaths,
    what: &str,
) -> Result<(tokio::process::Child, process::ProcessGroup), Problem> {
    let io_problem = |e: std::io::Error| Problem::Io {
        what: what.into(),
        error: e.to_string(),
    };
    req.sandbox.confine_build(cmd, paths).map_err(io_problem)?;
    process::spawn(cmd).map_err(io_problem)
}
