//! The judge: what the grader and every Rust practice directory's harness share.
//!
//! - [`compare`]: a recorded trace against the expected trace of its instance, and the message that
//!   shows where it diverged;
//! - [`protocol`]: the channel between `pi-course grade` and a graded test process.
//!
//! It knows no chapter and needs only `serde_json`. The grader depends on this crate; a practice
//! directory gets a copy of it beside its harness (`harness/judge/`), so a hand run judges exactly as a
//! grade does.

pub mod compare;
pub mod protocol;
