//! The integration tests: one binary, a module per concern, as the tool's users meet it. Each drives the
//! real `pi-course` binary on real practice directories, with `support` shared by all of them.
//!
//! Run one concern with `scripts/test.sh --test cli attacks::`, one test by its whole path
//! (`scripts/test.sh --test cli grade::rust::the_reference_passes -- --exact`); CONTRIBUTING.md has more.

mod support;

mod attacks;
mod class;
mod course;
mod formats;
mod grade;
mod house;
mod judge;
mod lang;
mod newcomer;
mod practice;
mod watch;
