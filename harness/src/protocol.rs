//! The channel between `pi-course grade` and a graded test process. Both sides compile this file.
//!
//! The grader starts the test executable with two extra file descriptors:
//!
//! - [`ORDERS_FD`], a pipe the grader filled and closed: a per-grade secret key on the first line, then
//!   [`LIST`] or [`RUN`] and, for a run, one test name per line;
//! - [`VERDICTS_FD`], a socket whose other end the grader reads: one JSON record per line, each carrying
//!   the key.
//!
//! The harness reads its orders and closes that descriptor before any test runs, so the code under test
//! can neither learn the key nor read the verdicts: the learner's crate forbids `unsafe`, the sandbox
//! hides `/proc`, and a socket, unlike a pipe, cannot be opened again through `/proc/self/fd`. A record
//! without the key is not a verdict; nothing on stdout or stderr ever is.

/// Set (to any value) in the environment of a graded test process.
pub const ENV: &str = "PI_COURSE_GRADED";
pub const ORDERS_FD: i32 = 3;
pub const VERDICTS_FD: i32 = 4;
/// Orders: write every test's name as a [`Record::Listed`].
pub const LIST: &str = "list";
/// Orders: run the named tests, in order, one at a time.
pub const RUN: &str = "run";

/// One line on the verdict channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Listed { test: String },
    Started { test: String },
    Passed { test: String },
    Failed { test: String, message: String },
}

impl Record {
    /// The record as one line of JSON, ending in `\n`.
    pub fn encode(&self, key: &str) -> String {
        let (event, test, message) = match self {
            Record::Listed { test } => ("listed", test, None),
            Record::Started { test } => ("started", test, None),
            Record::Passed { test } => ("passed", test, None),
            Record::Failed { test, message } => ("failed", test, Some(message)),
        };
        let value =
            serde_json::json!({ "key": key, "event": event, "test": test, "message": message });
        format!("{value}\n")
    }

    /// The record on `line`, if it is one and carries `key`.
    pub fn decode(line: &str, key: &str) -> Option<Record> {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        if value.get("key")?.as_str()? != key {
            return None;
        }
        let test = value.get("test")?.as_str()?.to_string();
        Some(match value.get("event")?.as_str()? {
            "listed" => Record::Listed { test },
            "started" => Record::Started { test },
            "passed" => Record::Passed { test },
            "failed" => Record::Failed {
                test,
                message: value.get("message")?.as_str()?.to_string(),
            },
            _ => return None,
        })
    }
}
