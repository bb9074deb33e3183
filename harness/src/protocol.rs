//! The channel between `pi-course grade` and a graded test process (protocol 2). Both sides compile
//! this file; docs/JUDGE.md ("Orders and records") is its contract.
//!
//! The grader starts the test executable with two extra file descriptors:
//!
//! - [`ORDERS_FD`], a pipe the grader filled and closed: a per-grade secret key on the first line, then
//!   [`RUN`], then one test per line: its name, a tab, and its instance (JSON on one line);
//! - [`VERDICTS_FD`], a socket whose other end the grader reads: one JSON record per line, each carrying
//!   the key. A graded process writes no verdict: it reports what it observed ([`Record::Step`]), and
//!   the grader judges the steps.
//!
//! The harness reads its orders and closes that descriptor before any test runs, so the code under test
//! can neither learn the key nor read the records: the learner's crate forbids `unsafe`, the sandbox
//! hides `/proc`, and a socket, unlike a pipe, cannot be opened again through `/proc/self/fd`. A record
//! without the key is not a record; nothing on stdout or stderr ever is.

use serde_json::{json, Value};

/// Set (to any value) in the environment of a graded test process.
pub const ENV: &str = "PI_COURSE_GRADED";
pub const ORDERS_FD: i32 = 3;
pub const VERDICTS_FD: i32 = 4;
/// Orders: run the tests that follow, in order, one at a time.
pub const RUN: &str = "run";
/// Protocol 1 orders (the grader asked the executable for its tests). No harness answers them any more:
/// the list of tests is the chapter's data. Kept until the grader speaks protocol 2 only.
pub const LIST: &str = "list";

/// One line on the records channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The driver starts running `test`.
    Started {
        test: String,
    },
    /// One step the driver observed while running `test`, the moment it happened.
    Step {
        test: String,
        step: Value,
    },
    /// The driver is done with `test` (never a verdict).
    Finished {
        test: String,
    },
    /// Protocol 1 records: no harness writes them any more; decoded until the grader speaks protocol 2.
    Listed {
        test: String,
    },
    Passed {
        test: String,
    },
    Failed {
        test: String,
        message: String,
    },
}

impl Record {
    /// The record as one line of JSON, ending in `\n`.
    pub fn encode(&self, key: &str) -> String {
        let value = match self {
            Record::Started { test } => json!({ "key": key, "event": "started", "test": test }),
            Record::Step { test, step } => {
                json!({ "key": key, "event": "step", "test": test, "step": step })
            }
            Record::Finished { test } => json!({ "key": key, "event": "finished", "test": test }),
            Record::Listed { test } => json!({ "key": key, "event": "listed", "test": test }),
            Record::Passed { test } => json!({ "key": key, "event": "passed", "test": test }),
            Record::Failed { test, message } => {
                json!({ "key": key, "event": "failed", "test": test, "message": message })
            }
        };
        format!("{value}\n")
    }

    /// The record on `line`, if it is one and carries `key`.
    pub fn decode(line: &str, key: &str) -> Option<Record> {
        let mut value: Value = serde_json::from_str(line).ok()?;
        if value.get("key")?.as_str()? != key {
            return None;
        }
        let test = value.get("test")?.as_str()?.to_string();
        Some(match value.get("event")?.as_str()? {
            "started" => Record::Started { test },
            "step" => Record::Step {
                test,
                step: value.get_mut("step")?.take(),
            },
            "finished" => Record::Finished { test },
            "listed" => Record::Listed { test },
            "passed" => Record::Passed { test },
            "failed" => Record::Failed {
                test,
                message: value.get("message")?.as_str()?.to_string(),
            },
            _ => return None,
        })
    }
}

/// One test of the orders: `name\tinstance`. `None` for a line that is not one.
pub fn split_order(line: &str) -> Option<(&str, &str)> {
    let (name, instance) = line.split_once('\t')?;
    (!name.is_empty()).then_some((name, instance))
}
