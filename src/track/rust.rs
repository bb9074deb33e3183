//! The Rust track: cargo builds the slot ([`build`], with the toolchain it finds in [`toolchain`]), the
//! test executable runs; constructs that run code before `main` are refused first ([`refuse`]).

pub mod build;
pub mod refuse;
pub mod toolchain;

use std::path::Path;

use super::{Adapter, BuildRequest, Editable, Shown, Step, TestCommand};
use crate::cache::{self, BuildDir};
use crate::i18n::Lang;
use crate::outcome::{Problem, Unreadable};

pub struct Rust;

impl Adapter for Rust {
    fn start(&self, cache: &Path) {
        toolchain::start(cache);
    }

    fn refused(&self, editable: &Editable, shown: Shown, lang: Lang) -> Option<Problem> {
        let mut refused: Vec<(&String, Vec<refuse::Refused>)> = Vec::new();
        for (path, bytes) in editable.iter().filter(|(path, _)| path.ends_with(".rs")) {
            let Ok(source) = std::str::from_utf8(bytes) else {
                continue;
            };
            match refuse::check(source) {
                Ok(found) if found.is_empty() => {}
                Ok(found) => refused.push((path, found)),
                // Read before the grade as bad input ([`crate::grade::Submission`]); here too, so that
                // nothing nested past the bounds is ever parsed.
                Err(deep) => return Some(Problem::Unreadable(too_deep(&shown(path), deep))),
            }
        }
        if refused.is_empty() {
            return None;
        }
        let rendered = refused
            .iter()
            .map(|(path, found)| refuse::render(found, &shown(path), lang))
            .collect();
        let errors = refused.iter().map(|(_, found)| found.len()).sum();
        Some(Problem::Compile { rendered, errors })
    }

    fn dependencies_to_compile(&self, slot: &BuildDir) -> Option<usize> {
        if cache::is_built(&slot.target) {
            return None;
        }
        // One crate per package in the lock file: close to the count cargo reports (a build script adds
        // one), so the count is capped at it.
        let lock = std::fs::read_to_string(slot.path.join("Cargo.lock")).unwrap_or_default();
        Some(lock.matches("[[package]]").count().max(1))
    }

    fn clear_learner_outputs<'a>(&'a self, req: &'a BuildRequest<'a>) -> Step<'a, ()> {
        Box::pin(build::clear_learner_outputs(req))
    }

    fn build<'a>(
        &'a self,
        req: &'a BuildRequest<'a>,
        on_step: &'a dyn Fn(&str),
    ) -> Step<'a, TestCommand> {
        Box::pin(async move {
            let built = build::build(req, on_step).await?;
            Ok(TestCommand::executable(built.exe))
        })
    }

    fn manifest(&self) -> &'static str {
        "Cargo.toml"
    }
}

/// A file nested past the bounds of [`refuse`], as bad input naming `path` as the learner knows it.
pub fn too_deep(path: &str, deep: refuse::TooDeep) -> Unreadable {
    Unreadable::TooDeep {
        path: path.to_string(),
        line: deep.line,
        depth: deep.depth,
        max: deep.max,
    }
}
