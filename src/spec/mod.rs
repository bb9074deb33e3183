//! The chapters' executable specifications (docs/JUDGE.md): from a seed, fresh instances of every
//! scenario and the trace each must produce. Only the grader has this code; a practice directory gets
//! the instances of one fixed seed with their expected traces already computed.

pub mod ch07;
mod rng;

use serde_json::Value;

pub use rng::Rng;

/// One test of one grade: a scenario drawn into an instance, with its expected trace.
#[derive(Debug, Clone)]
pub struct Case {
    /// The scenario's name (snake case); each track names its test from it and the group.
    pub name: String,
    /// The group's slug.
    pub group: String,
    /// What the scenario checks, in a line.
    pub about: String,
    /// What the driver is given (docs/JUDGE.md, "The instance").
    pub instance: Value,
    /// The expected graph, with the rules it names.
    pub expected: Value,
}

/// The seed of the fixed instances every practice directory holds for hand runs.
pub const HAND_SEED: u64 = 7;

/// The cases of `chapter` drawn with `seed`; `None` for a chapter without a specification.
pub fn cases(chapter: &str, seed: u64) -> Option<Vec<Case>> {
    match chapter {
        "07" => Some(ch07::cases(seed)),
        _ => None,
    }
}
