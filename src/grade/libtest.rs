//! Reading what a libtest binary says: its test list, how a batch of tests ran, and how a single test ran.
//!
//! Tests first run in batches, several in one process (`<exe> --exact <names>... --test-threads=1`):
//! libtest prints `test <name> ... ` when a test starts and `ok` / `FAILED` when it ends, and, at the end,
//! the captured output of each failed test under `---- <name> stdout ----`. A test without a verdict from
//! its batch (the batch crashed, exited or stalled) runs again alone as
//! `<exe> <name> --exact --test-threads=1 --nocapture`, so its own output and panic messages reach our
//! pipes directly (also when the process dies half way), and libtest's closing `test result:` line on
//! stdout tells whether the test really finished.

use std::process::ExitStatus;

use super::outcome::Outcome;

/// The arguments that run exactly one test.
pub fn run_args(name: &str) -> [&str; 6] {
    [
        name,
        "--exact",
        "--test-threads=1",
        "--nocapture",
        "--color",
        "never",
    ]
}

/// The arguments that list every test.
pub const LIST_ARGS: [&str; 3] = ["--list", "--format", "terse"];

/// The arguments that run several tests, one after the other, output captured by libtest.
pub fn batch_args(names: &[String]) -> Vec<&str> {
    let mut args = vec!["--exact", "--test-threads=1", "--color", "never"];
    args.extend(names.iter().map(String::as_str));
    args
}

/// A test's verdict as libtest's pretty output states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Failed,
    Ignored,
}

/// What a batch's stdout says so far.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BatchProgress {
    /// Tests that ended, in order.
    pub finished: Vec<(String, Verdict)>,
    /// The test that started and has not ended yet.
    pub running: Option<String>,
    /// libtest printed its closing `test result:` line.
    pub complete: bool,
}

/// Reads a batch's stdout, complete or not.
pub fn batch_progress(stdout: &str) -> BatchProgress {
    let mut p = BatchProgress::default();
    for line in stdout.split('\n') {
        if line.starts_with("test result: ") {
            p.complete = true;
            continue;
        }
        let Some((name, rest)) = line
            .strip_prefix("test ")
            .and_then(|l| l.split_once(" ... "))
        else {
            continue;
        };
        let verdict = if rest.starts_with("ok") {
            Verdict::Ok
        } else if rest.starts_with("FAILED") {
            Verdict::Failed
        } else if rest.starts_with("ignored") {
            Verdict::Ignored
        } else {
            p.running = Some(name.to_string());
            continue;
        };
        p.running = None;
        p.finished.push((name.to_string(), verdict));
    }
    p
}

/// The captured output of each failed test of a finished batch, by name.
pub fn failure_sections(stdout: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in stdout.lines() {
        let header = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"));
        if header.is_some() || line == "failures:" {
            if let Some((name, lines)) = current.take() {
                sections.push((name, lines.join("\n").trim().to_string()));
            }
            current = header.map(|name| (name.to_string(), Vec::new()));
        } else if let Some((_, lines)) = &mut current {
            lines.push(line);
        }
    }
    if let Some((name, lines)) = current {
        sections.push((name, lines.join("\n").trim().to_string()));
    }
    sections
}

/// The outcome of a test that failed, from what it printed.
pub fn failure(name: &str, printed: &str) -> Outcome {
    match main_panic(name, printed) {
        Some(message) => Outcome::Panicked { message },
        None => Outcome::Failed {
            output: printed.to_string(),
        },
    }
}

/// Test names from `--list --format terse` (`name: test` lines; benchmarks are skipped).
pub fn parse_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

/// One panic as printed by the default panic hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panic {
    pub thread: String,
    /// `file:line:col`
    pub location: String,
    pub message: String,
}

/// Every panic in `text`, in order. Understands the hook's format since Rust 1.73:
/// `thread '<name>' [(<tid>) ]panicked at <file>:<line>:<col>:` then the message up to a `note:` line, the
/// next panic, or the end.
pub fn panics(text: &str) -> Vec<Panic> {
    let mut found: Vec<Panic> = Vec::new();
    let mut current: Option<(Panic, Vec<&str>)> = None;
    let finish = |current: &mut Option<(Panic, Vec<&str>)>, found: &mut Vec<Panic>| {
        if let Some((mut p, lines)) = current.take() {
            p.message = lines.join("\n").trim().to_string();
            found.push(p);
        }
    };
    for line in text.lines() {
        if let Some((thread, location)) = panic_header(line) {
            finish(&mut current, &mut found);
            let panic = Panic {
                thread,
                location,
                message: String::new(),
            };
            current = Some((panic, Vec::new()));
            continue;
        }
        if let Some((_, lines)) = &mut current {
            if line.starts_with("note: ") || line == "stack backtrace:" {
                finish(&mut current, &mut found);
            } else {
                lines.push(line);
            }
        }
    }
    finish(&mut current, &mut found);
    found
}

fn panic_header(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("thread '")?;
    let (thread, rest) = rest.split_once('\'')?;
    let rest = rest.trim_start();
    // Rust 1.88+ prints the OS thread id: `thread 'x' (1234) panicked at`.
    let rest = match rest.strip_prefix('(') {
        Some(r) => r.split_once(')')?.1.trim_start(),
        None => rest,
    };
    let location = rest.strip_prefix("panicked at ")?.strip_suffix(':')?;
    Some((thread.to_string(), location.to_string()))
}

/// libtest's closing line on stdout, e.g. `test result: ok. 1 passed; 0 failed; 0 ignored; ...`.
fn result_line(stdout: &str) -> Option<&str> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("test result: "))
}

/// How the run of one test ended, from its exit status and output. `None` when libtest skipped the test
/// (it is `#[ignore]`d).
pub fn interpret(name: &str, status: ExitStatus, stdout: &str, stderr: &str) -> Option<Outcome> {
    use std::os::unix::process::ExitStatusExt;

    let output = || learner_output(name, stdout, stderr);
    let result = result_line(stdout);
    if let Some(result) = result {
        if result.starts_with("ok. 1 passed;") && status.success() {
            return Some(Outcome::Passed);
        }
        if result.starts_with("ok. 0 passed; 0 failed; 1 ignored") {
            return None;
        }
        if result.starts_with("FAILED.") {
            return Some(match main_panic(name, stderr) {
                Some(message) => Outcome::Panicked { message },
                None => Outcome::Failed { output: output() },
            });
        }
    }
    if let Some(signal) = status.signal() {
        return Some(Outcome::Signalled {
            signal,
            output: output(),
        });
    }
    Some(Outcome::ExitedEarly {
        code: status.code().unwrap_or(-1),
        output: output(),
    })
}

/// The panic that failed the test: the last one on the test's own thread (an earlier one may have been
/// caught on purpose, e.g. a tool that panics), else the last one at all. Prefixed by its location when
/// it is not in a test file, so a `todo!()` in the learner's code says where it is.
fn main_panic(name: &str, stderr: &str) -> Option<String> {
    let all = panics(stderr);
    let panic = all.iter().rev().find(|p| p.thread == name).or(all.last())?;
    Some(if panic.location.starts_with("tests/") {
        panic.message.clone()
    } else {
        format!("{} ({})", panic.message, panic.location)
    })
}

/// What the test printed, without libtest's own lines.
pub fn learner_output(name: &str, stdout: &str, stderr: &str) -> String {
    let start = format!("test {name} ... ");
    let mut out = String::new();
    for line in stdout.lines() {
        let line = line.strip_prefix(start.as_str()).unwrap_or(line);
        if line == "running 1 test" || line.starts_with("test result: ") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    for line in stderr.lines() {
        if line.starts_with("note: run with `RUST_BACKTRACE=1`") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    const FAILED_STDERR: &str = "\nthread '<unnamed>' (6112) panicked at src/agent_loop.rs:4:69:\ninner\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nthread 'plain_stop::fails' (6111) panicked at tests/ch07/plain_stop.rs:3:37:\nassertion `left == right` failed: the loop should stop\nsecond line\n  left: 1\n right: 2\n";

    const BATCH: &str = "\nrunning 3 tests\ntest g::a ... ok\ntest g::b ... FAILED\ntest g::c ... ignored\n\nfailures:\n\n---- g::b stdout ----\nprinted by b\n\nthread 'g::b' (7) panicked at tests/ch07/g.rs:3:5:\nb is wrong\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    g::b\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";

    #[test]
    fn follows_a_batch_as_it_runs() {
        let p = batch_progress("\nrunning 3 tests\ntest g::a ... ok\ntest g::b ... ");
        assert_eq!(p.finished, vec![("g::a".to_string(), Verdict::Ok)]);
        assert_eq!(p.running.as_deref(), Some("g::b"));
        assert!(!p.complete);

        let p = batch_progress(BATCH);
        assert_eq!(p.running, None);
        assert!(p.complete);
        let verdicts: Vec<Verdict> = p.finished.iter().map(|(_, v)| *v).collect();
        assert_eq!(verdicts, [Verdict::Ok, Verdict::Failed, Verdict::Ignored]);

        let sections = failure_sections(BATCH);
        assert_eq!(sections.len(), 1);
        assert_eq!(sections[0].0, "g::b");
        assert!(sections[0].1.starts_with("printed by b"));
        assert_eq!(
            failure("g::b", &sections[0].1),
            Outcome::Panicked {
                message: "b is wrong".into()
            }
        );
    }

    #[test]
    fn parses_the_list() {
        let list = "plain_stop::a: test\nplain_stop::b: test\nx: benchmark\n";
        assert_eq!(parse_list(list), vec!["plain_stop::a", "plain_stop::b"]);
    }

    #[test]
    fn finds_every_panic_with_its_thread() {
        let p = panics(FAILED_STDERR);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].thread, "<unnamed>");
        assert_eq!(p[0].message, "inner");
        assert_eq!(p[1].thread, "plain_stop::fails");
        assert_eq!(p[1].location, "tests/ch07/plain_stop.rs:3:37");
        assert!(p[1]
            .message
            .starts_with("assertion `left == right` failed: the loop should stop\nsecond"));
        assert!(p[1].message.ends_with(" right: 2"));
        // Before Rust 1.88 there was no thread id.
        let old = panics("thread 'a::b' panicked at src/x.rs:1:2:\nboom\n");
        assert_eq!(old[0].thread, "a::b");
        assert_eq!(old[0].message, "boom");
    }

    #[test]
    fn interprets_each_way_a_test_ends() {
        let ok = "\nrunning 1 test\ntest a::b ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 6 filtered out; finished in 0.00s\n";
        let exit = |code: i32| ExitStatus::from_raw(code << 8);
        assert_eq!(interpret("a::b", exit(0), ok, ""), Some(Outcome::Passed));

        let failed = "\nrunning 1 test\ntest plain_stop::fails ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored\n";
        let Some(Outcome::Panicked { message }) =
            interpret("plain_stop::fails", exit(101), failed, FAILED_STDERR)
        else {
            panic!("expected a panic");
        };
        assert!(
            message.starts_with("assertion `left == right` failed"),
            "{message}"
        );

        let todo = "thread 'a::b' (1) panicked at src/agent_loop.rs:40:5:\nnot yet implemented\n";
        let Some(Outcome::Panicked { message }) = interpret("a::b", exit(101), failed, todo) else {
            panic!("expected a panic");
        };
        assert_eq!(message, "not yet implemented (src/agent_loop.rs:40:5)");

        let early = "\nrunning 1 test\ntest a::b ... bye\n";
        let Some(Outcome::ExitedEarly { code: 0, output }) = interpret("a::b", exit(0), early, "")
        else {
            panic!("expected an early exit");
        };
        assert_eq!(output.trim(), "bye");

        let aborted = ExitStatus::from_raw(libc::SIGABRT);
        assert!(matches!(
            interpret("a::b", aborted, "test a::b ... before abort\n", ""),
            Some(Outcome::Signalled {
                signal: libc::SIGABRT,
                ..
            })
        ));

        let ignored = "test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured\n";
        assert_eq!(interpret("a::b", exit(0), ignored, ""), None);
    }
}
