//! One build-and-run adapter per toolchain, behind the one interface the grade pipeline calls: build the
//! slot, then say how to start a test process. Everything else (slots, the runner, the verdict channel,
//! reports) is the same for every track.
//!
//! - Rust: `cargo test --no-run` ([`super::build`]), then the test executable itself.
//! - TypeScript: `tsc` ([`super::node`]), then node running the course's harness.

use crate::cache::{self, BuildDir};

use super::build::BuildRequest;
use super::outcome::Problem;
use super::test_command::TestCommand;
use crate::catalog::Track;

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

/// Builds the slot of `req` with `track`'s toolchain. `on_step` is called with each unit of the build as
/// it finishes (a crate, `npm ci`, `tsc`), for progress.
pub async fn build(
    track: Track,
    req: &BuildRequest<'_>,
    on_step: &dyn Fn(&str),
) -> Result<TestCommand, Problem> {
    match track {
        Track::Rust => super::build::build(req, on_step)
            .await
            .map(|built| TestCommand::executable(built.exe)),
        Track::TypeScript => super::node::build(req, on_step).await,
    }
}
