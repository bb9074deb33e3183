//! Stages 4 and 5, list and run: ask the test executable for its tests, then run them, several processes
//! at a time, each process in its own process group and sandbox.
//!
//! Verdicts come only over the channel (see [`channel`]): a test passes when the harness says so with
//! this grade's key, never because of what the process printed or how it ended.
//!
//! The tests first run in batches, one process per core, which costs about what `cargo test` costs. A test
//! that does not end within [`SLOW`] (the chapter's tests take milliseconds), a crash or an early exit
//! stops the batch; the tests it left without a verdict then run one per process, with the full timeout:
//! so every test gets its own verdict whatever the others do, and a clean run pays for one process per
//! core instead of one per test.
//!
//! A process gets a slot (one per core). A test still running alone after [`SLOW`] hands its slot on: it is
//! probably hung, and waiting for its timeout must not hold up the others. At most [`Runner::max_live`]
//! test processes exist at once.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::channel::{Orders, Record, TestProcess};
use super::outcome::{Outcome, TestResult};
use super::toolchain::TestCommand;
use crate::process::Captured;
use crate::sandbox::Sandbox;

/// After this long a running test gives its slot to the next one.
pub const SLOW: Duration = Duration::from_millis(500);
/// The most test processes alive at once, slow ones included, when memory allows.
pub const MAX_LIVE: usize = 32;
/// How long a pipe may stay open after its test's process group was killed (a process that left the group
/// could hold it forever).
const DRAIN: Duration = Duration::from_secs(2);

/// How to run the tests of one executable.
#[derive(Debug, Clone)]
pub struct Runner {
    pub command: TestCommand,
    pub timeout: Duration,
    pub jobs: usize,
    pub sandbox: Sandbox,
    /// This grade's secret: only records that carry it are verdicts.
    pub key: String,
    /// Environment for the tests, e.g. the learner's language.
    pub envs: Vec<(String, String)>,
    /// Grades running at once in this process, sharing the machine's memory.
    pub grades_at_once: usize,
}

impl Runner {
    fn start(&self, orders: Orders<'_>) -> std::io::Result<TestProcess> {
        let envs: Vec<(&str, &str)> = self
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        TestProcess::start(&self.command, &self.sandbox, &self.key, orders, &envs)
    }

    /// Test processes alive at once: [`MAX_LIVE`], fewer when that many at the memory limit would not fit
    /// in this grade's share of half of this machine's memory, never fewer than the jobs.
    pub fn max_live(&self) -> usize {
        let memory = self.sandbox.limits().memory.max(1);
        let share = self.grades_at_once.max(1) as u64;
        let fit = crate::process::total_memory()
            .map(|total| (total / 2 / share / memory) as usize)
            .unwrap_or(MAX_LIVE);
        fit.clamp(self.jobs.max(1), MAX_LIVE.max(self.jobs))
    }

    /// Every test the executable holds, by full name.
    pub async fn list(&self) -> Result<Vec<String>, String> {
        let mut process = self.start(Orders::List).map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        let listing = async {
            while let Some(record) = process.verdicts.next().await {
                if let Record::Listed { test } = record {
                    names.push(test);
                }
            }
            process.child.wait().await
        };
        let status = tokio::time::timeout(self.timeout.max(Duration::from_secs(10)), listing).await;
        process.group.kill();
        match status {
            // A listing that named no test failed, however the process ended: the given tests always
            // register some, so something stopped the harness before it listed them.
            Ok(Ok(status)) if status.success() && !names.is_empty() => Ok(names),
            _ => {
                let (stdout, stderr) = drain(process.stdout, process.stderr).await;
                Err(format!("{}{}", stdout.text(), stderr.text()))
            }
        }
    }

    /// Runs the tests, each batch in one process first (see [`batches`]); every test a batch leaves
    /// without a verdict runs again alone. Calls `on_done` as each test finishes. Results come back in the
    /// order of the batches and their names.
    pub async fn run(
        &self,
        batches: &[Vec<String>],
        on_done: &dyn Fn(&TestResult),
    ) -> Vec<TestResult> {
        let slots = Arc::new(Semaphore::new(self.jobs.max(1)));
        let live = Arc::new(Semaphore::new(self.max_live()));
        let mut set = JoinSet::new();
        let spawn = |set: &mut JoinSet<Vec<Job>>, job: Job| {
            let (slots, live, runner) = (slots.clone(), live.clone(), self.clone());
            set.spawn(async move {
                let _live = live.acquire_owned().await.expect("semaphore open");
                let slot = slots.acquire_owned().await.expect("semaphore open");
                match job {
                    Job::Batch(names) => runner.run_batch(names, slot).await,
                    Job::Alone(name) => {
                        let result = runner.run_alone(name.clone(), slot).await;
                        vec![Job::Done(name, result)]
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
        let mut results: HashMap<String, TestResult> = HashMap::new();
        while let Some(joined) = set.join_next().await {
            for job in joined.expect("a test task never panics") {
                match job {
                    Job::Done(name, result) => {
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

    /// Runs `names` in one process, following its records. Stops at the first sign of trouble: a test
    /// still running after [`SLOW`], or the process ending. Tests that got a verdict keep it; every other
    /// test comes back as a job to run alone.
    async fn run_batch(
        &self,
        names: Vec<String>,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> Vec<Job> {
        let Ok(mut process) = self.start(Orders::Run(&names)) else {
            return names.into_iter().map(Job::Alone).collect();
        };
        let mut jobs = Vec::new();
        let mut judged = HashSet::new();
        let mut current: Option<(String, Instant)> = None;
        let started = Instant::now();
        loop {
            // A test gets SLOW; the harness itself (starting, reading its orders) gets the whole timeout.
            let deadline = match &current {
                Some((_, at)) => *at + SLOW,
                None => started + self.timeout,
            };
            let record = tokio::select! {
                record = process.verdicts.next() => record,
                _ = tokio::time::sleep_until(deadline.into()) => break,
            };
            let Some(record) = record else { break };
            let (name, outcome) = match record {
                Record::Started { test } => {
                    current = Some((test, Instant::now()));
                    continue;
                }
                Record::Passed { test } => (test, Outcome::Passed),
                Record::Failed { test, message } => (test, Outcome::Panicked { message }),
                Record::Listed { .. } | Record::Step { .. } | Record::Finished { .. } => continue,
            };
            let duration = match current.take() {
                Some((running, at)) if running == name => at.elapsed(),
                _ => Duration::ZERO,
            };
            if names.contains(&name) && judged.insert(name.clone()) {
                jobs.push(Job::Done(
                    name.clone(),
                    TestResult {
                        name,
                        outcome,
                        duration,
                    },
                ));
            }
        }
        process.group.kill();
        let _ = process.child.wait().await;
        drop(slot);
        process.stdout.abort();
        process.stderr.abort();
        jobs.extend(
            names
                .into_iter()
                .filter(|n| !judged.contains(n))
                .map(Job::Alone),
        );
        jobs
    }

    /// Runs one test in a process of its own, with the full timeout. The process group is killed at the
    /// timeout, and in any case once the leader has exited (nothing a test started survives it). `slot`
    /// is released after [`SLOW`].
    async fn run_alone(&self, name: String, slot: tokio::sync::OwnedSemaphorePermit) -> TestResult {
        let started = Instant::now();
        let result = |outcome| TestResult {
            name: name.clone(),
            outcome,
            duration: started.elapsed(),
        };
        let names = [name.clone()];
        let mut process = match self.start(Orders::Run(&names)) {
            Ok(process) => process,
            Err(e) => {
                return result(Outcome::Failed {
                    output: format!("could not start the test: {e}"),
                })
            }
        };
        let mut slot = Some(slot);
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let slow = tokio::time::sleep(SLOW);
        tokio::pin!(slow);
        let mut verdict = None;
        let mut began = false;
        let mut channel_open = true;
        let status = loop {
            tokio::select! {
                record = process.verdicts.next(), if channel_open => match record {
                    Some(Record::Started { test }) if test == name => began = true,
                    Some(Record::Passed { test }) if test == name => verdict = Some(Outcome::Passed),
                    Some(Record::Failed { test, message }) if test == name => {
                        verdict = Some(Outcome::Panicked { message })
                    }
                    Some(_) => {}
                    None => channel_open = false,
                },
                status = process.child.wait() => break status.ok(),
                _ = &mut deadline => break None,
                _ = &mut slow, if slot.is_some() => slot = None,
            }
        };
        process.group.kill();
        if status.is_none() {
            // Reap the killed leader.
            let _ = process.child.wait().await;
        }
        // Records written just before the process ended are still in the pipe.
        while channel_open && verdict.is_none() {
            match tokio::time::timeout(DRAIN, process.verdicts.next()).await {
                Ok(Some(Record::Passed { test })) if test == name => {
                    verdict = Some(Outcome::Passed)
                }
                Ok(Some(Record::Failed { test, message })) if test == name => {
                    verdict = Some(Outcome::Panicked { message })
                }
                Ok(Some(Record::Started { test })) if test == name => began = true,
                Ok(Some(_)) => {}
                _ => channel_open = false,
            }
        }
        drop(slot);
        let (stdout, stderr) = drain(process.stdout, process.stderr).await;
        let output = format!("{}{}", stdout.text(), stderr.text());
        let outcome = match (verdict, status) {
            (Some(verdict), _) => verdict,
            (None, None) => Outcome::TimedOut {
                after: self.timeout,
                output,
            },
            (None, Some(status)) => super::outcome::ended_without_verdict(
                status,
                began,
                output,
                self.sandbox.limits().memory,
            ),
        };
        result(outcome)
    }
}

/// Work for the runner, and its results.
enum Job {
    /// Several tests in one process.
    Batch(Vec<String>),
    /// One test in its own process.
    Alone(String),
    /// A test's result.
    Done(String, TestResult),
}

/// What the process wrote to stdout and stderr; a pipe still held open past [`DRAIN`] (by a process that
/// left the group) gives what was read so far.
async fn drain(
    stdout: tokio::task::JoinHandle<Captured>,
    stderr: tokio::task::JoinHandle<Captured>,
) -> (Captured, Captured) {
    let one = |h: tokio::task::JoinHandle<Captured>| async move {
        let abort = h.abort_handle();
        match tokio::time::timeout(DRAIN, h).await {
            Ok(Ok(c)) => c,
            _ => {
                abort.abort();
                Captured::default()
            }
        }
    };
    tokio::join!(one(stdout), one(stderr))
}

/// Splits `names` into `jobs` batches of about equal size, in order: one process per core.
pub fn batches(names: &[String], jobs: usize) -> Vec<Vec<String>> {
    if names.is_empty() {
        return Vec::new();
    }
    let size = names.len().div_ceil(jobs.max(1));
    names.chunks(size).map(<[String]>::to_vec).collect()
}

/// The tests of one group: the names that start with its prefix (`plain_stop::x` for `plain_stop::`).
pub fn tests_of(names: &[String], prefix: &str) -> Vec<String> {
    names
        .iter()
        .filter(|n| n.starts_with(prefix))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{Limits, Mode};

    /// A test executable that speaks the harness's protocol by hand, one test per way a test can end.
    fn fake_suite() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("suite.rs");
        std::fs::write(
            &src,
            r#"
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
fn main() {
    let mut orders = String::new();
    // SAFETY: the grader opens descriptors 3 (orders) and 4 (verdicts) for this process, and nothing
    // else in it owns them.
    unsafe { std::fs::File::from_raw_fd(3) }.read_to_string(&mut orders).unwrap();
    let mut out = unsafe { std::fs::File::from_raw_fd(4) };
    let mut lines = orders.lines();
    let key = lines.next().unwrap().to_string();
    let mode = lines.next().unwrap();
    let names = ["g::passes", "g::fails", "g::aborts", "g::exits", "g::spins", "g::forges", "g::hogs"];
    let mut send = |event: &str, test: &str, message: Option<&str>| {
        let message = message.map_or("null".to_string(), |m| format!("{m:?}"));
        let line = format!("{{\"key\":{key:?},\"event\":{event:?},\"test\":{test:?},\"message\":{message}}}\n");
        out.write_all(line.as_bytes()).unwrap();
    };
    if mode == "list" {
        for n in names { send("listed", n, None); }
        return;
    }
    for name in lines {
        send("started", name, None);
        match name {
            "g::passes" => { println!("fine"); send("passed", name, None) }
            "g::fails" => send("failed", name, Some("arithmetic is broken")),
            "g::aborts" => { println!("about to abort"); std::process::abort() }
            "g::exits" => std::process::exit(0),
            "g::spins" => loop { std::hint::spin_loop() },
            "g::forges" => {
                println!("test g::forges ... ok
test result: ok. 1 passed;");
                let forged = format!("{{\"key\":\"0123\",\"event\":\"passed\",\"test\":{name:?},\"message\":null}}\n");
                out.write_all(forged.as_bytes()).unwrap();
                std::process::exit(0)
            }
            "g::hogs" => { let v = vec![1u8; 1 << 30]; println!("{}", v.len()); send("passed", name, None) }
            _ => {}
        }
    }
}
"#,
        )
        .unwrap();
        let exe = dir.path().join("suite");
        let status = std::process::Command::new("rustc")
            .args(["--edition", "2021", "-C", "debuginfo=0", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap();
        assert!(status.success());
        (dir, exe)
    }

    #[test]
    fn every_test_gets_its_own_verdict_from_the_channel_only() {
        let (_dir, exe) = fake_suite();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let limits = Limits {
            memory: 256 << 20,
            ..Limits::default()
        };
        let runner = Runner {
            command: TestCommand::executable(exe),
            timeout: Duration::from_millis(1500),
            jobs: 2,
            sandbox: Sandbox::new(Mode::Auto, limits).unwrap(),
            key: super::super::channel::new_key().unwrap(),
            envs: Vec::new(),
            grades_at_once: 1,
        };
        let started = Instant::now();
        let results = rt.block_on(async {
            let names = runner.list().await.unwrap();
            assert_eq!(names.len(), 7);
            runner.run(&[names], &|_| {}).await
        });
        // One hung test, killed at 1.5 s and not holding a slot past SLOW.
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
        assert_eq!(
            by_name("fails"),
            Some(&Outcome::Panicked {
                message: "arithmetic is broken".into()
            })
        );
        assert!(
            matches!(by_name("aborts"), Some(Outcome::Signalled { signal: libc::SIGABRT, output }) if output.contains("about to abort")),
            "{:?}",
            by_name("aborts")
        );
        assert!(matches!(
            by_name("exits"),
            Some(Outcome::ExitedEarly { code: 0, .. })
        ));
        assert!(matches!(by_name("spins"), Some(Outcome::TimedOut { .. })));
        // Printed passing lines and a record with a key of its own pass nothing.
        assert!(
            matches!(
                by_name("forges"),
                Some(Outcome::ExitedEarly { code: 0, .. })
            ),
            "{:?}",
            by_name("forges")
        );
        assert!(
            matches!(by_name("hogs"), Some(Outcome::MemoryLimit { limit, .. }) if *limit == 256 << 20),
            "{:?}",
            by_name("hogs")
        );
        let ps = std::process::Command::new("ps")
            .args(["-A", "-o", "args="])
            .output()
            .unwrap();
        let ps = String::from_utf8_lossy(&ps.stdout);
        assert!(
            !ps.contains(&format!("{}", runner.command.program.display())),
            "{ps}"
        );

        // A clean batch: verdicts straight from the channel, in the batch's order.
        let clean: Vec<String> = ["g::passes", "g::fails"].map(String::from).to_vec();
        let results = rt.block_on(runner.run(&[clean], &|_| {}));
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0].outcome, Outcome::Passed);
        assert!(matches!(&results[1].outcome, Outcome::Panicked { .. }));
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
    fn tests_are_split_by_their_group_prefix() {
        let names: Vec<String> = ["a::x", "ab::y", "a::z"].map(String::from).to_vec();
        assert_eq!(tests_of(&names, "a::"), vec!["a::x", "a::z"]);
        let names: Vec<String> = ["纯文本 stop › x", "纯文本 stopper › y"]
            .map(String::from)
            .to_vec();
        assert_eq!(tests_of(&names, "纯文本 stop › "), vec!["纯文本 stop › x"]);
    }
}
