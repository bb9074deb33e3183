//! The harness that runs a chapter's tests.
//!
//! Run by hand (`cargo test --test ch07 plain_stop`), it behaves like Rust's own test runner: the same
//! filters and flags, the same `test name ... ok` lines. Run by `pi-course grade`, it takes its orders and
//! reports each verdict over a channel that only the grader and this harness hold (see [`protocol`]):
//! whatever the code under test prints, or however its process ends, it cannot turn a test into a pass.
//!
//! Each test runs on a thread of its own, named after the test, so a failing test can tell which Lab it
//! belongs to; a panic on that thread is the test's failure, with its message and where it happened.

#[path = "protocol.rs"]
pub mod protocol;

use std::cell::Cell;
use std::fs::File;
use std::io::{Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::thread;

use protocol::Record;

/// One test: its full name (`plain_stop::a_plain_stop_ends_the_run`) and the function that runs it.
#[derive(Clone)]
pub struct Test {
    pub name: String,
    pub run: fn(),
}

impl Test {
    pub fn new(name: impl Into<String>, run: fn()) -> Test {
        Test {
            name: name.into(),
            run,
        }
    }
}

/// Runs `tests` as the command line (or the grader) asks; the test target's `main` returns this.
pub fn run(tests: Vec<Test>) -> ExitCode {
    install_panic_hook();
    if std::env::var_os(protocol::ENV).is_some() {
        graded(tests)
    } else {
        by_hand(tests)
    }
}

fn by_hand(tests: Vec<Test>) -> ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let trials = tests
        .into_iter()
        .map(|test| {
            let name = test.name.clone();
            libtest_mimic::Trial::test(name, move || run_one(&test).map_err(Into::into))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

fn graded(tests: Vec<Test>) -> ExitCode {
    std::env::remove_var(protocol::ENV);
    // SAFETY: the grader opened both descriptors for this process, and nothing else here uses them. The
    // orders are read to their end and closed before any test runs.
    let (mut orders, verdicts) = unsafe {
        use std::os::fd::FromRawFd;
        (
            File::from_raw_fd(protocol::ORDERS_FD),
            File::from_raw_fd(protocol::VERDICTS_FD),
        )
    };
    let mut text = String::new();
    let read = orders.read_to_string(&mut text);
    drop(orders);
    if read.is_err() {
        return ExitCode::FAILURE;
    }
    let mut lines = text.lines();
    let (Some(key), Some(mode)) = (lines.next(), lines.next()) else {
        return ExitCode::FAILURE;
    };
    let key = key.to_string();
    let mut channel = Channel { key, verdicts };
    match mode {
        protocol::LIST => {
            for test in &tests {
                channel.send(Record::Listed {
                    test: test.name.clone(),
                });
            }
        }
        protocol::RUN => {
            for name in lines {
                let Some(test) = tests.iter().find(|t| t.name == name) else {
                    continue;
                };
                channel.send(Record::Started {
                    test: test.name.clone(),
                });
                let record = match run_one(test) {
                    Ok(()) => Record::Passed {
                        test: test.name.clone(),
                    },
                    Err(message) => Record::Failed {
                        test: test.name.clone(),
                        message,
                    },
                };
                channel.send(record);
            }
        }
        _ => return ExitCode::FAILURE,
    }
    ExitCode::SUCCESS
}

struct Channel {
    key: String,
    verdicts: File,
}

impl Channel {
    fn send(&mut self, record: Record) {
        // A grader that stopped listening has no use for the rest.
        if self
            .verdicts
            .write_all(record.encode(&self.key).as_bytes())
            .is_err()
        {
            std::process::exit(1);
        }
    }
}

thread_local! {
    /// Set on a test's own thread: its panics are the test's failure, reported with the verdict.
    static IN_TEST: Cell<bool> = const { Cell::new(false) };
    /// Where the test's thread last panicked.
    static LOCATION: Cell<Option<String>> = const { Cell::new(None) };
}

/// Runs one test on a thread named after it. `Err` holds the failure message.
fn run_one(test: &Test) -> Result<(), String> {
    let run = test.run;
    let body = move || {
        IN_TEST.set(true);
        panic::catch_unwind(AssertUnwindSafe(run)).map_err(|payload| {
            let text = payload_text(payload.as_ref());
            // A test's own assertion explains itself; a panic elsewhere (a `todo!()` in the loop) says
            // where it is.
            match LOCATION.take() {
                Some(at) if !at.starts_with("tests/") => format!("{text} ({at})"),
                _ => text,
            }
        })
    };
    let spawned = thread::Builder::new().name(test.name.clone()).spawn(body);
    match spawned.map(|handle| handle.join()) {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err("the test's thread ended without a verdict".to_string()),
        Err(e) => Err(format!("the test's thread could not start: {e}")),
    }
}

/// A panic on a test's thread is reported with its verdict, so the hook only keeps where it happened;
/// panics on other threads are printed as usual.
fn install_panic_hook() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if IN_TEST.get() {
            LOCATION.set(info.location().map(|l| l.to_string()));
        } else {
            previous(info);
        }
    }));
}

/// The text a panic was raised with: `panic!` carries a `String` or a `&str`.
pub fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a text message)".to_string()
    }
}
