//! One build-and-run adapter per toolchain, behind the one interface the grade pipeline calls: build the
//! slot, then say how to start a test process. Everything else (slots, the runner, the verdict channel,
//! reports) is the same for every track.
//!
//! - Rust: `cargo test --no-run` ([`rust::build`]), then the test executable itself.
//! - TypeScript: `tsc` ([`typescript`]), then node running the course's harness.

pub mod rust;
pub mod test_command;
pub mod typescript;

use crate::cache::{self, BuildDir};

use crate::catalog::Track;
use crate::outcome::Problem;
use rust::build::BuildRequest;
use rust::refuse::Refused;
use test_command::TestCommand;

/// The file that makes a build slot a package of `track`'s: gone, the cache was removed under the build.
pub fn manifest(track: Track) -> &'static str {
    match track {
        Track::Rust => "Cargo.toml",
        Track::TypeScript => "package.json",
    }
}

/// How many crates a first build of this slot compiles, for the first grade's progress; `None` when the
/// slot has built before, or for TypeScript, whose one-time `npm ci` shows as a build step of its own.
pub fn dependencies_to_compile(track: Track, slot: &BuildDir) -> Option<usize> {
    if track != Track::Rust || cache::is_built(&slot.target) {
        return None;
    }
    // One crate per package in the lock file: close to the count cargo reports (a build script adds
    // one), so the count is capped at it.
    let lock = std::fs::read_to_string(slot.path.join("Cargo.lock")).unwrap_or_default();
    Some(lock.matches("[[package]]").count().max(1))
}

/// Starts what the build will need to know about `track`'s toolchain, while the grade prepares; `cache`
/// is the cache root, where the answer is remembered.
pub fn start(track: Track, cache: &std::path::Path) {
    if track == Track::Rust {
        rust::toolchain::start(cache);
    }
}

/// What of the learner's `editable` files (path, bytes) `track` refuses to build, before any build:
/// (path, what and where). Only Rust's files are checked; see [`rust::refuse`].
pub fn refused(track: Track, editable: &[(String, Vec<u8>)]) -> Vec<(String, Vec<Refused>)> {
    if track != Track::Rust {
        return Vec::new();
    }
    editable
        .iter()
        .filter(|(path, _)| path.ends_with(".rs"))
        .filter_map(|(path, bytes)| {
            let found = rust::refuse::check(std::str::from_utf8(bytes).ok()?);
            (!found.is_empty()).then(|| (path.clone(), found))
        })
        .collect()
}

/// Removes what the slot's last build made of the learner's files (see [`crate::grade::occupant`]), keeping
/// the dependencies' outputs.
pub async fn clear_learner_outputs(track: Track, req: &BuildRequest<'_>) -> Result<(), Problem> {
    match track {
        Track::Rust => rust::build::clear_learner_outputs(req).await,
        Track::TypeScript => typescript::clear_learner_outputs(req),
    }
}

/// Builds the slot of `req` with `track`'s toolchain. `on_step` is called with each unit of the build as
/// it finishes (a crate, `npm ci`, `tsc`), for progress.
pub async fn build(
    track: Track,
    req: &BuildRequest<'_>,
    on_step: &dyn Fn(&str),
) -> Result<TestCommand, Problem> {
    match track {
        Track::Rust => rust::build::build(req, on_step)
            .await
            .map(|built| TestCommand::executable(built.exe)),
        Track::TypeScript => typescript::build(req, on_step).await,
    }
}
