//! Stages 4 and 5, list and run: ask the test executable for its tests, then run them, several processes
//! at a time, each process in its own process group.
//!
//! The tests first run in batches, one process per core, which costs about what `cargo test` costs. A test
//! that does not end within [`SLOW`] (the chapter's tests take milliseconds), a crash or an early exit
//! stops the batch; the tests it left without a verdict then run one per process, with the full timeout:
//! so every test gets its own verdict whatever the others do, and a clean run pays for one process per
//! core instead of one per test.
//!
//! A process gets a slot (one per core). A test still running alone after [`SLOW`] hands its slot on: it is
//! probably hung, and waiting for its timeout must not hold up the others. At most [`MAX_LIVE`] test
//! processes exist at once.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::process::Command;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::libtest;
use super::outcome::{Outcome, TestResult};
use crate::process;

/// After this long a running test gives its slot to the next one.
pub const SLOW: Duration = Duration::from_millis(500);
/// The most test processes alive at once, slow ones included.
pub const MAX_LIVE: usize = 32;
/// The most stdout a batch may write. libtest captures what tests print, so a batch writes little; past
/// this, something writes straight to the file descriptor and the batch is given up.
const BATCH_OUTPUT_LIMIT: usize = 1 << 20;
/// How long a pipe may stay open after its test's process group was killed (a process that left the group
/// could hold it forever).
const DRAIN: Duration = Duration::from_secs(2);

/// How to run the tests of one executable.
#[derive(Debug, Clone)]
pub struct Runner {
    pub exe: PathBuf,
    /// The working directory of each test (the package root, as under `cargo test`).
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub jobs: usize,
}

impl Runner {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.current_dir(&self.cwd)
            .env("RUST_BACKTRACE", "0")
            .env("CARGO_MANIFEST_DIR", &self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Every test the executable holds, by full name.
    pub async fn list(&self) -> Result<Vec<String>, String> {
        let mut cmd = self.command();
        cmd.args(libtest::LIST_ARGS);
        let out = run_one(cmd, self.timeout.max(Duration::from_secs(10)), None)
            .await
            .map_err(|e| e.to_string())?;
        match out.status {
            Some(status) if status.success() => Ok(libtest::parse_list(&out.stdout)),
            _ => Err(format!("{}{}", out.stdout, out.stderr)),
        }
    }

    /// Runs the tests, each batch in one process first (see [`batches`]); every test a batch leaves
    /// without a verdict runs again alone. Calls `on_done` as each test finishes. Results come back in the
    /// order of the batches and their names. Ignored tests are left out.
    pub async fn run(
        &self,
        batches: &[Vec<String>],
        on_done: &dyn Fn(&TestResult),
    ) -> Vec<TestResult> {
        let slots = Arc::new(Semaphore::new(self.jobs.max(1)));
        let live = Arc::new(Semaphore::new(MAX_LIVE.max(self.jobs)));
        let mut set = JoinSet::new();
        let spawn = |set: &mut JoinSet<Vec<Job>>, job: Job| {
            let (slots, live, runner) = (slots.clone(), live.clone(), self.clone());
            set.spawn(async move {
                let _live = live.acquire_owned().await.expect("semaphore open");
                let slot = slots.acquire_owned().await.expect("semaphore open");
                match job {
                    Job::Batch(names) => runner.run_batch(names, slot).await,
                    Job::Alone(name) => {
                        vec![Job::Done(name.clone(), runner.run_test(name, slot).await)]
                    }
                    Job::Done(..) => unreachable!("only batches and single tests are spawned"),
                }
            });
        };
        for batch in batches.iter().filter(|b| !b.is_empty()) {
            let job = match batch.as_slice() {
                [one] => Job::Alone(one.clone()),
                _ => Job::Batch(batch.clone()),
            };
            spawn(&mut set, job);
        }
        let mut results: std::collections::HashMap<String, TestResult> = Default::default();
        while let Some(joined) = set.join_next().await {
            for job in joined.expect("a test task never panics") {
                match job {
                    Job::Done(_, None) => {}
                    Job::Done(name, Some(result)) => {
                        on_done(&result);
                        results.insert(name, result);
                    }
                    again => spawn(&mut set, again),
                }
            }
        }
        batches
            .iter()
            .flatten()
            .filter_map(|name| results.remove(name))
            .collect()
    }

    /// Runs `names` in one process, following libtest's output. Stops at the first sign of trouble: a test
    /// still running after [`SLOW`], a crash, an early exit. Tests that ended keep their verdicts (a failed
    /// one only once its captured output arrived); every other test comes back as a job to run alone.
    async fn run_batch(
        &self,
        names: Vec<String>,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> Vec<Job> {
        use tokio::io::AsyncReadExt;

        let mut cmd = self.command();
        cmd.args(libtest::batch_args(&names));
        let Ok((mut child, group)) = process::spawn(&mut cmd) else {
            return names.into_iter().map(Job::Alone).collect();
        };
        let stderr = tokio::spawn(process::capture(child.stderr.take().expect("piped stderr")));
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut text = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        // When each test started, and when its verdict was seen.
        let mut started: std::collections::HashMap<String, Instant> = Default::default();
        let mut durations: std::collections::HashMap<String, Duration> = Default::default();
        let mut current: Option<(String, Instant)> = None;
        let mut last_output = Instant::now();
        let stalled = loop {
            // A test gets SLOW; libtest itself (starting, reporting) gets the whole timeout.
            let deadline = match &current {
                Some((_, started)) => *started + SLOW,
                None => last_output + self.timeout,
            };
            tokio::select! {
                read = stdout.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break false,
                    Ok(n) => text.extend_from_slice(&buf[..n]),
                },
                _ = tokio::time::sleep_until(deadline.into()) => break true,
            }
            if text.len() > BATCH_OUTPUT_LIMIT {
                // Something writes around libtest's capture: let each test run alone, with bounded capture.
                break true;
            }
            let progress = libtest::batch_progress(&String::from_utf8_lossy(&text));
            let now = Instant::now();
            last_output = now;
            for (name, _) in &progress.finished {
                if !durations.contains_key(name) {
                    let from = started.get(name).copied().unwrap_or(now);
                    durations.insert(name.clone(), now - from);
                }
            }
            current = progress.running.map(|name| {
                let at = *started.entry(name.clone()).or_insert(now);
                (name, at)
            });
        };
        let status = match stalled {
            true => None,
            false => tokio::time::timeout(self.timeout, child.wait())
                .await
                .ok()
                .and_then(Result::ok),
        };
        group.kill();
        if status.is_none() {
            let _ = child.wait().await;
        }
        drop(group);
        drop(slot);
        stderr.abort();

        let text = String::from_utf8_lossy(&text);
        let progress = libtest::batch_progress(&text);
        let whole =
            progress.complete && status.is_some_and(|s| s.success() || s.code() == Some(101));
        let sections = if whole {
            libtest::failure_sections(&text)
        } else {
            Vec::new()
        };
        let mut jobs = Vec::new();
        let mut judged = std::collections::HashSet::new();
        for (name, verdict) in progress.finished {
            let duration = durations.get(&name).copied().unwrap_or_default();
            let outcome = match verdict {
                libtest::Verdict::Ignored => {
                    judged.insert(name.clone());
                    jobs.push(Job::Done(name, None));
                    continue;
                }
                libtest::Verdict::Ok => Outcome::Passed,
                libtest::Verdict::Failed => {
                    match sections.iter().find(|(n, _)| *n == name) {
                        Some((_, printed)) => libtest::failure(&name, printed),
                        None => continue, // no message: run it alone to get one
                    }
                }
            };
            judged.insert(name.clone());
            jobs.push(Job::Done(
                name.clone(),
                Some(TestResult {
                    name,
                    outcome,
                    duration,
                }),
            ));
        }
        jobs.extend(
            names
                .into_iter()
                .filter(|n| !judged.contains(n))
                .map(Job::Alone),
        );
        jobs
    }

    async fn run_test(
        &self,
        name: String,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> Option<TestResult> {
        let started = Instant::now();
        let mut cmd = self.command();
        cmd.args(libtest::run_args(&name));
        let outcome = match run_one(cmd, self.timeout, Some(slot)).await {
            Err(e) => Some(Outcome::Failed {
                output: format!("could not start the test: {e}"),
            }),
            Ok(Output {
                status: None,
                stdout,
                stderr,
            }) => Some(Outcome::TimedOut {
                after: self.timeout,
                output: libtest::learner_output(&name, &stdout, &stderr),
            }),
            Ok(Output {
                status: Some(status),
                stdout,
                stderr,
            }) => libtest::interpret(&name, status, &stdout, &stderr),
        };
        outcome.map(|outcome| TestResult {
            name,
            outcome,
            duration: started.elapsed(),
        })
    }
}

/// Work for the runner, and its results.
enum Job {
    /// Several tests in one process.
    Batch(Vec<String>),
    /// One test in its own process.
    Alone(String),
    /// A test's result (`None`: ignored).
    Done(String, Option<TestResult>),
}

struct Output {
    /// `None` when the timeout struck.
    status: Option<std::process::ExitStatus>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` in its own process group, killing the whole group at `timeout`, and in any case once the
/// leader has exited (nothing a test started survives it). `slot` is released after [`SLOW`].
async fn run_one(
    mut cmd: Command,
    timeout: Duration,
    mut slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> std::io::Result<Output> {
    let (mut child, group) = process::spawn(&mut cmd)?;
    let stdout = tokio::spawn(process::capture(child.stdout.take().expect("piped stdout")));
    let stderr = tokio::spawn(process::capture(child.stderr.take().expect("piped stderr")));
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let slow = tokio::time::sleep(SLOW);
    tokio::pin!(slow);
    let status = loop {
        tokio::select! {
            status = child.wait() => break Some(status?),
            _ = &mut deadline => break None,
            _ = &mut slow, if slot.is_some() => slot = None,
        }
    };
    group.kill();
    if status.is_none() {
        // Reap the killed leader.
        let _ = child.wait().await;
    }
    drop(group);
    drop(slot);
    let drain = |h: tokio::task::JoinHandle<process::Captured>| async move {
        let abort = h.abort_handle();
        match tokio::time::timeout(DRAIN, h).await {
            Ok(Ok(c)) => c.text(),
            _ => {
                abort.abort();
                String::new()
            }
        }
    };
    let (stdout, stderr) = tokio::join!(drain(stdout), drain(stderr));
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Splits `names` into `jobs` batches of about equal size, in order: one process per core.
pub fn batches(names: &[String], jobs: usize) -> Vec<Vec<String>> {
    if names.is_empty() {
        return Vec::new();
    }
    let size = names.len().div_ceil(jobs.max(1));
    names.chunks(size).map(<[String]>::to_vec).collect()
}

/// The tests of one group: `plain_stop::x` belongs to module `plain_stop`.
pub fn tests_of(names: &[String], module: &str) -> Vec<String> {
    let prefix = format!("{module}::");
    names
        .iter()
        .filter(|n| n.starts_with(&prefix))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A libtest binary compiled from a small test file, one per way a test can end.
    fn fake_suite() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("suite.rs");
        std::fs::write(
            &src,
            r#"
mod g {
    #[test] fn passes() { println!("fine"); }
    #[test] fn fails() { assert_eq!(1 + 1, 3, "arithmetic is broken"); }
    #[test] fn aborts() { println!("about to abort"); std::process::abort(); }
    #[test] fn exits() { std::process::exit(0); }
    #[test] fn spins() { loop { std::hint::spin_loop(); } }
    #[test] fn sleeps() { std::process::Command::new("sleep").arg("30").status().unwrap(); }
    #[test] #[ignore] fn ignored() {}
}
"#,
        )
        .unwrap();
        let exe = dir.path().join("suite");
        let status = std::process::Command::new("rustc")
            .args(["--edition", "2021", "--test", "-C", "debuginfo=0", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap();
        assert!(status.success());
        (dir, exe)
    }

    #[test]
    fn every_test_gets_its_own_verdict() {
        let (dir, exe) = fake_suite();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let runner = Runner {
            exe,
            cwd: dir.path().to_path_buf(),
            timeout: Duration::from_millis(1500),
            jobs: 2,
        };
        let started = Instant::now();
        let results = rt.block_on(async {
            let names = runner.list().await.unwrap();
            assert_eq!(names.len(), 7);
            runner.run(&[names], &|_| {}).await
        });
        // Two hung tests, each killed at 1.5 s, neither holding a slot past SLOW: well under 2 × 1.5 s.
        assert!(
            started.elapsed() < Duration::from_millis(2900),
            "{:?}",
            started.elapsed()
        );
        let by_name = |n: &str| {
            results
                .iter()
                .find(|r| r.name == format!("g::{n}"))
                .map(|r| &r.outcome)
        };
        assert_eq!(by_name("passes"), Some(&Outcome::Passed));
        assert!(
            matches!(by_name("fails"), Some(Outcome::Panicked { message }) if message.contains("arithmetic is broken")),
            "{:?}",
            by_name("fails")
        );
        assert!(
            matches!(by_name("aborts"), Some(Outcome::Signalled { signal: libc::SIGABRT, output }) if output.contains("about to abort"))
        );
        assert!(matches!(
            by_name("exits"),
            Some(Outcome::ExitedEarly { code: 0, .. })
        ));
        assert!(matches!(by_name("spins"), Some(Outcome::TimedOut { .. })));
        assert!(matches!(by_name("sleeps"), Some(Outcome::TimedOut { .. })));
        assert_eq!(by_name("ignored"), None);
        // The `sleep` child of the hung test died with its group.
        let ps = std::process::Command::new("ps")
            .args(["-A", "-o", "args="])
            .output()
            .unwrap();
        let ps = String::from_utf8_lossy(&ps.stdout);
        assert!(!ps.contains(&format!("{}", runner.exe.display())), "{ps}");

        // A clean batch: verdicts and messages straight from libtest's report, in the batch's order.
        let clean: Vec<String> = ["g::passes", "g::fails", "g::ignored"]
            .map(String::from)
            .to_vec();
        let results = rt.block_on(runner.run(&[clean], &|_| {}));
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0].outcome, Outcome::Passed);
        assert!(
            matches!(&results[1].outcome, Outcome::Panicked { message } if message.contains("arithmetic is broken")),
            "{results:?}"
        );
    }

    #[test]
    fn batches_split_evenly_in_order() {
        let names: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        assert_eq!(
            batches(&names, 2),
            vec![vec!["0", "1", "2"], vec!["3", "4"]]
        );
        assert_eq!(batches(&names, 8).len(), 5);
        assert_eq!(batches(&names, 0).len(), 1);
        assert!(batches(&[], 2).is_empty());
    }

    #[test]
    fn tests_are_split_by_module() {
        let names: Vec<String> = ["a::x", "ab::y", "a::z"].map(String::from).to_vec();
        assert_eq!(tests_of(&names, "a"), vec!["a::x", "a::z"]);
    }
}
