//! Judging a recorded trace: the comparison (shared with every Rust practice directory) and the verdict.

#[path = "../../harness/src/judge.rs"]
pub mod compare;
