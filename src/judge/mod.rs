//! Judging a recorded trace: the comparison (shared with every Rust practice directory) and the verdict.

// `Lang::Both` is for hand runs in a practice directory; the grader always knows the learner's language.
#[allow(dead_code)]
#[path = "../../harness/src/judge.rs"]
pub mod compare;
