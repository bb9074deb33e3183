//! The channel between `pi-course grade` and a graded test process (protocol 2, docs/JUDGE.md). Both
//! sides use this module.
//!
//! The grader starts the test executable with two extra file descriptors:
//!
//! - [`ORDERS_FD`], a pipe the grader filled and closed: a per-grade key on the first line, then [`RUN`],
//!   then one test per line: its name, a tab, and its instance (one line of JSON);
//! - [`VERDICTS_FD`], a socket whose other end the grader reads: one JSON record per line, each carrying
//!   the key: a test `started`, each `step` the driver observed, the test `finished`.
//!
//! A test process never sends a verdict: it has none. The grader judges each test's steps against the
//! trace it expects, which no test process ever sees. The key only keeps stray lines apart from records.

/// Set (to any value) in the environment of a graded test process.
pub const ENV: &str = "PI_COURSE_GRADED";
pub const ORDERS_FD: i32 = 3;
pub const VERDICTS_FD: i32 = 4;
/// Orders: run the tests that follow, in order, one at a time.
pub const RUN: &str = "run";

/// One line on the channel.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Started {
        test: String,
    },
    Step {
        test: String,
        step: serde_json::Value,
    },
    Finished {
        test: String,
    },
}

impl Record {
    /// The record as one line of JSON, ending in `\n`.
    pub fn encode(&self, key: &str) -> String {
        let value = match self {
            Record::Started { test } => {
                serde_json::json!({ "key": key, "event": "started", "test": test })
            }
            Record::Step { test, step } => {
                serde_json::json!({ "key": key, "event": "step", "test": test, "step": step })
            }
            Record::Finished { test } => {
                serde_json::json!({ "key": key, "event": "finished", "test": test })
            }
        };
        format!("{value}\n")
    }

    /// The record on `line`, if it is one and carries `key`.
    pub fn decode(line: &str, key: &str) -> Option<Record> {
        let mut value: serde_json::Value = serde_json::from_str(line).ok()?;
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
            _ => return None,
        })
    }
}

/// The orders for `tests` (name and instance JSON on one line each) under `key`.
pub fn orders(key: &str, tests: &[(String, String)]) -> String {
    let mut text = format!("{key}\n{RUN}\n");
    for (name, instance) in tests {
        text.push_str(name);
        text.push('\t');
        text.push_str(instance);
        text.push('\n');
    }
    text
}

/// One test line of the orders: its name and its instance (JSON); `None` for a line that is not one.
pub fn split_order(line: &str) -> Option<(&str, &str)> {
    let (name, instance) = line.split_once('\t')?;
    (!name.is_empty()).then_some((name, instance))
}
