//! Stage 4, run: run the tests, several processes at a time, each process in its own process group and
//! sandbox, and judge each test's trace.
//!
//! A test process is a driver (docs/JUDGE.md): it gets each test's instance in its orders and sends back,
//! over the channel (see [`channel`]), the steps it observed. The runner judges every test here, outside
//! the process, by comparing its steps with the expected trace the process never saw. What the process
//! printed, or how it ended, never makes a pass.
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
//!
//! **Judged again, alone.** A verdict that time decided (the grader's timeout, the driver's hang watch, or
//! the driver giving up a wait) can be the machine's doing rather than the loop's: a classmate's tests
//! spinning on every core, a build beside the grade, a page the loop's code waited for on a busy disk.
//! The driver already discounts the time its own thread was kept from running, but not what kept
//! another thread of the loop. So every test judged by time runs once more, alone, and with more
//! patience ([`PATIENCE`]): every test process of this grader, of every grade in a class, takes a share of
//! [`MACHINE`] while it lives, and the retry takes all of it, so it starts once the processes running have
//! ended and none starts beside it. Its verdict is the test's. Patience never turns a wrong loop right:
//! the driver holds the stream and the tools' gates, so a loop that waits for the stream's end, or runs
//! one tool before starting the next, waits in vain however long the driver waits.
//!
//! The retries of one grade run one at a time, and once one of them is judged by time again (the loop
//! itself hangs, spins or waits in vain) the rest keep their first verdict: a wrong loop costs the others
//! one retry, never one per test. [`MAX_AGAIN`] bounds them in any case.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::channel::{Orders, Received, Record, TestProcess};
use crate::outcome::{Evidence, Outcome, TestResult};
use crate::process::Captured;
use crate::sandbox::{Policy, Sandbox};
use crate::track::test_command::TestCommand;
use pi_course_judge::compare;

/// The machine's test processes, shared: every test process holds a share while it lives; a test judged
/// again alone holds it whole (see the module's documentation). Fair: once a retry waits, new processes
/// wait behind it.
#[derive(Debug)]
pub struct Machine {
    lock: tokio::sync::RwLock<()>,
    /// How many tests wait to hold it whole.
    waiting: tokio::sync::watch::Sender<usize>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            lock: tokio::sync::RwLock::new(()),
            waiting: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl Machine {
    /// A share, for one test process's life.
    pub async fn share(&self) -> tokio::sync::RwLockReadGuard<'_, ()> {
        self.lock.read().await
    }

    /// All of it: once every process holding a share has ended.
    pub async fn whole(&self) -> tokio::sync::RwLockWriteGuard<'_, ()> {
        self.waiting.send_modify(|n| *n += 1);
        let whole = self.lock.write().await;
        self.waiting.send_modify(|n| *n -= 1);
        whole
    }

    /// How many tests wait to hold it whole, as it changes.
    #[cfg(test)]
    pub fn waiting(&self) -> tokio::sync::watch::Receiver<usize> {
        self.waiting.subscribe()
    }
}

/// The one [`Machine`] of this grader process: every grade's runner, a class's included, shares it.
pub static MACHINE: std::sync::LazyLock<Arc<Machine>> = std::sync::LazyLock::new(Arc::default);

/// How many times longer the driver waits for the loop (its quiet times, and its hang watch's) when a
/// test is judged again: the test process gets it as `PI_COURSE_PATIENCE` (read by each track's harness).
pub const PATIENCE: u32 = 3;

/// The most tests of one grade judged again alone (see the module's documentation).
pub const MAX_AGAIN: usize = 16;

/// After this long a running test gives its slot to the next one.
pub const SLOW: Duration = Duration::from_millis(500);
/// The most test processes alive at once, slow ones included, when memory allows.
pub const MAX_LIVE: usize = 32;
/// How long a pipe may stay open after its test's process group was killed (a process that left the group
/// could hold it forever).
const DRAIN: Duration = Duration::from_secs(2);
/// The most steps one test's trace may hold; a loop that runs on past it gets an `overflow` step.
/// (The harnesses stop running a test's instances at the same bounds, of steps and of bytes:
/// `harness/src/lib.rs`, `run.mjs`.)
pub const MAX_STEPS: usize = 4_000;
/// The most bytes of steps one test's trace may hold.
pub const MAX_TRACE_BYTES: usize = 4 << 20;

/// One test as the grade planned it: the instance its driver gets and the trace the judge expects.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The instance, as one line of JSON.
    pub instance: String,
    pub expected: Value,
}

/// A test's steps as they arrive, bounded by [`MAX_STEPS`] and [`MAX_TRACE_BYTES`].
#[derive(Debug, Default)]
struct Trace {
    steps: Vec<Value>,
    bytes: usize,
    full: bool,
}

impl Trace {
    fn push(&mut self, step: Value) {
        if self.full {
            return;
        }
        let size = step.to_string().len();
        if self.steps.len() >= MAX_STEPS || self.bytes + size > MAX_TRACE_BYTES {
            self.overflow();
            return;
        }
        self.bytes += size;
        self.steps.push(step);
    }

    fn overflow(&mut self) {
        if !self.full {
            self.full = true;
            self.steps.push(json!({ "kind": "overflow" }));
        }
    }
}

/// How to run the tests of one executable.
#[derive(Debug, Clone)]
pub struct Runner {
    pub command: TestCommand,
    pub timeout: Duration,
    pub jobs: usize,
    pub sandbox: Sandbox,
    /// What the chapter lets its tests do.
    pub policy: Policy,
    /// This grade's secret: only records that carry it are verdicts.
    pub key: String,
    /// Environment for the tests, e.g. the learner's language.
    pub envs: Vec<(String, String)>,
    /// Grades running at once in this process, sharing the machine's memory.
    pub grades_at_once: usize,
    /// Every test this grade may run, by full name.
    pub cases: Arc<BTreeMap<String, Planned>>,
    /// The language of the judge's messages.
    pub lang: compare::Lang,
    /// What the test processes share with every other grade's: [`MACHINE`], unless a test says otherwise.
    pub machine: Arc<Machine>,
    /// The time spent judging traces so far, over every task of the run (see [`Runner::judging`]).
    pub judging: Arc<std::sync::Mutex<Duration>>,
}

impl Runner {
    fn start(&self, names: &[String], again: bool) -> std::io::Result<TestProcess> {
        let patience = PATIENCE.to_string();
        let mut envs: Vec<(&str, &str)> = self
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if again {
            envs.push(("PI_COURSE_PATIENCE", &patience));
        }
        let tests: Vec<(String, String)> = names
            .iter()
            .filter_map(|n| self.cases.get(n).map(|c| (n.clone(), c.instance.clone())))
            .collect();
        TestProcess::start(
            &self.command,
            &self.sandbox,
            self.policy,
            &self.key,
            Orders(&tests),
            &envs,
        )
    }

    /// The verdict on `name`'s trace: a pass when it is one the chapter allows, else the first
    /// divergence, explained.
    fn judge(&self, name: &str, trace: &[Value]) -> Outcome {
        let Some(case) = self.cases.get(name) else {
            return Outcome::Failed {
                output: format!("no such test: {name}"),
            };
        };
        let started = Instant::now();
        let verdict = compare::judge(&case.expected, trace, self.lang);
        *self.judging.lock().unwrap_or_else(|e| e.into_inner()) += started.elapsed();
        match verdict {
            None => Outcome::Passed,
            Some(message) => Outcome::Diverged { message },
        }
    }

    /// How long judging the traces has taken so far.
    pub fn judging(&self) -> Duration {
        *self.judging.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What a test that did not pass expected and got, for `pi-course explain`.
    fn evidence(&self, name: &str, outcome: &Outcome, trace: Vec<Value>) -> Option<Arc<Evidence>> {
        let case = self.cases.get(name)?;
        (*outcome != Outcome::Passed).then(|| {
            Arc::new(Evidence {
                expected: case.expected.clone(),
                trace,
            })
        })
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
                    Job::Batch(names) => {
                        let _share = runner.machine.share().await;
                        runner.run_batch(names, slot).await
                    }
                    Job::Alone(name) => {
                        let _share = runner.machine.share().await;
                        vec![Job::Done(
                            name.clone(),
                            runner.run_alone(name, slot, false).await,
                        )]
                    }
                    Job::Again(name) => {
                        let _whole = runner.machine.whole().await;
                        vec![Job::Retried(
                            name.clone(),
                            runner.run_alone(name, slot, true).await,
                        )]
                    }
                    Job::Done(..) | Job::Retried(..) => {
                        unreachable!("only batches and single tests are spawned")
                    }
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
        // Verdicts of time waiting for their retry, one retry at a time; once a retry was judged by time
        // again the loop itself hangs or waits in vain, and the rest keep their verdicts.
        let mut waiting: std::collections::VecDeque<(String, TestResult)> = Default::default();
        let mut retrying = false;
        let mut retries = 0;
        let mut its_own_doing = false;
        let finish = |name: String, result: TestResult, results: &mut HashMap<_, _>| {
            on_done(&result);
            results.insert(name, result);
        };
        while let Some(joined) = set.join_next().await {
            for job in joined.expect("a test task never panics") {
                match job {
                    Job::Done(name, result) if judged_by_time(&result) => {
                        waiting.push_back((name, result))
                    }
                    Job::Done(name, result) => finish(name, result, &mut results),
                    Job::Retried(name, result) => {
                        retrying = false;
                        its_own_doing |= judged_by_time(&result);
                        finish(name, result, &mut results);
                    }
                    more => spawn(&mut set, more),
                }
            }
            if its_own_doing || retries >= MAX_AGAIN {
                for (name, result) in waiting.drain(..) {
                    finish(name, result, &mut results);
                }
            } else if !retrying {
                if let Some((name, _)) = waiting.pop_front() {
                    retrying = true;
                    retries += 1;
                    spawn(&mut set, Job::Again(name));
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
    /// still running after [`SLOW`], or the process ending. Tests whose trace was finished are judged;
    /// every other test comes back as a job to run alone.
    async fn run_batch(
        &self,
        names: Vec<String>,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> Vec<Job> {
        let Ok(mut process) = self.start(&names, false) else {
            return names.into_iter().map(Job::Alone).collect();
        };
        let mut jobs = Vec::new();
        let mut judged = HashSet::new();
        let mut current: Option<(String, Instant, Trace)> = None;
        let started = Instant::now();
        loop {
            // A test gets SLOW; the harness itself (starting, reading its orders) gets the whole timeout.
            let deadline = match &current {
                Some((_, at, _)) => *at + SLOW,
                None => started + self.timeout,
            };
            let received = tokio::select! {
                received = process.verdicts.next() => received,
                _ = tokio::time::sleep_until(deadline.into()) => break,
            };
            let Some(received) = received else { break };
            let done = match (received, &mut current) {
                (Received::Record(Record::Started { test }), _) => {
                    let fresh = names.contains(&test) && !judged.contains(&test);
                    current = fresh.then(|| (test, Instant::now(), Trace::default()));
                    false
                }
                (Received::Record(Record::Step { test, step }), Some((running, _, trace)))
                    if *running == test =>
                {
                    trace.push(step);
                    // What a loop does past the trace's bounds is noise: judge it now.
                    trace.full
                }
                (Received::Oversized, Some((_, _, trace))) => {
                    trace.overflow();
                    true
                }
                (Received::Record(Record::Finished { test }), Some((running, _, _))) => {
                    *running == test
                }
                _ => false,
            };
            if done {
                let Some((running, at, trace)) = current.take() else {
                    continue;
                };
                let outcome = self.judge(&running, &trace.steps);
                judged.insert(running.clone());
                let duration = at.elapsed();
                let evidence = self.evidence(&running, &outcome, trace.steps);
                jobs.push(Job::Done(
                    running.clone(),
                    TestResult {
                        name: running,
                        outcome,
                        duration,
                        evidence,
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
    /// timeout, once the trace is finished, and in any case once the leader has exited (nothing a test
    /// started survives it). `slot` is released after [`SLOW`]. `again`: the test is judged again, with
    /// [`PATIENCE`].
    async fn run_alone(
        &self,
        name: String,
        slot: tokio::sync::OwnedSemaphorePermit,
        again: bool,
    ) -> TestResult {
        let started = Instant::now();
        let result = |outcome, trace: Vec<Value>| TestResult {
            name: name.clone(),
            evidence: self.evidence(&name, &outcome, trace),
            outcome,
            duration: started.elapsed(),
        };
        let mut process = match self.start(std::slice::from_ref(&name), again) {
            Ok(process) => process,
            Err(e) => {
                let output = format!("could not start the test: {e}");
                return result(Outcome::Failed { output }, Vec::new());
            }
        };
        let mut slot = Some(slot);
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let slow = tokio::time::sleep(SLOW);
        tokio::pin!(slow);
        let mut trace = Trace::default();
        let mut began = false;
        let mut finished = false;
        let mut channel_open = true;
        let status = loop {
            tokio::select! {
                // The deadline first (a flood of records never holds it off), the records before the
                // process's end.
                biased;
                _ = &mut deadline => break None,
                received = process.verdicts.next(), if channel_open => {
                    match receive(&name, received, &mut trace, &mut began) {
                        Some(true) => { finished = true; break None; }
                        Some(false) => channel_open = false,
                        None if trace.full => { finished = true; break None; }
                        None => {}
                    }
                }
                status = process.child.wait() => break status.ok(),
                _ = &mut slow, if slot.is_some() => slot = None,
            }
        };
        process.group.kill();
        if status.is_none() {
            // Reap the killed leader.
            let _ = process.child.wait().await;
        }
        // Records written just before the process ended are still in the pipe.
        while channel_open && !finished {
            match tokio::time::timeout(DRAIN, process.verdicts.next()).await {
                Ok(received) => match receive(&name, received, &mut trace, &mut began) {
                    Some(true) => finished = true,
                    Some(false) => channel_open = false,
                    None => {}
                },
                Err(_) => channel_open = false,
            }
        }
        drop(slot);
        if finished {
            process.stdout.abort();
            process.stderr.abort();
            return result(self.judge(&name, &trace.steps), trace.steps);
        }
        let (stdout, stderr) = drain(process.stdout, process.stderr).await;
        let printed = format!("{}{}", stdout.text(), stderr.text());
        let mut steps = trace.steps;
        let outcome = match status {
            None => {
                steps.push(json!({ "kind": "timeout" }));
                Outcome::TimedOut {
                    after: self.timeout,
                    output: printed,
                }
            }
            Some(status) => {
                steps.push(json!({ "kind": "exit", "detail": format!("{status}") }));
                crate::outcome::ended_without_verdict(
                    status,
                    began,
                    printed,
                    self.sandbox.limits().memory,
                )
            }
        };
        result(outcome, steps)
    }
}

/// Whether time decided `result`: the grader's timeout, or the driver's hang watch (a trace that ends
/// with `hang`).
fn judged_by_time(result: &TestResult) -> bool {
    let decided_by_a_wait = result
        .evidence
        .as_ref()
        .is_some_and(|e| waited_in_vain(&e.trace));
    matches!(result.outcome, Outcome::TimedOut { .. }) || decided_by_a_wait
}

/// Whether a trace holds a verdict a driver's patience decided: it ends with the hang watch's step, or
/// the driver gave up waiting for the loop (a `gave_up` step: the next model event never forwarded, a
/// call that never started). Both only mean "not within the quiet time", which a classmate's spinning
/// threads can make true of a correct loop.
fn waited_in_vain(trace: &[Value]) -> bool {
    trace.last().is_some_and(|step| step["kind"] == "hang") || trace.iter().any(gave_up)
}

/// A driver's step that says it waited for the loop in vain.
fn gave_up(step: &Value) -> bool {
    step["kind"] == "driver" && step["action"] == "gave_up"
}

/// Follows one record of `name`'s process: `Some(true)` once its trace is finished, `Some(false)` once
/// the channel closed.
fn receive(
    name: &str,
    received: Option<Received>,
    trace: &mut Trace,
    began: &mut bool,
) -> Option<bool> {
    match received {
        // The steps between `started` and the next `started` are the trace (docs/JUDGE.md).
        Some(Received::Record(Record::Started { test })) if test == name => {
            *began = true;
            *trace = Trace::default();
        }
        Some(Received::Record(Record::Step { test, step })) if test == name && *began => {
            trace.push(step)
        }
        Some(Received::Record(Record::Finished { test })) if test == name && *began => {
            return Some(true)
        }
        Some(Received::Oversized) if *began => trace.overflow(),
        Some(_) => {}
        None => return Some(false),
    }
    None
}

/// Work for the runner, and its results.
enum Job {
    /// Several tests in one process.
    Batch(Vec<String>),
    /// One test in its own process.
    Alone(String),
    /// A test judged by time, again, in its own process, with no other test process of this grader
    /// beside it and with [`PATIENCE`].
    Again(String),
    /// That retry's result, the test's.
    Retried(String, TestResult),
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

/// Splits `names` into at most `jobs` batches, one process per core, of about equal cost: the run ends
/// when its slowest process does, and one long test (a run of a thousand steps) beside many short ones
/// would leave the other cores idle. Each test goes, the costliest first, to the batch that costs least
/// so far; a batch keeps the order of `names`.
pub fn batches(names: &[String], jobs: usize, cost: impl Fn(&str) -> usize) -> Vec<Vec<String>> {
    let count = jobs.max(1).min(names.len());
    let mut by_cost: Vec<(usize, usize)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (cost(name), i))
        .collect();
    by_cost.sort_by_key(|&(cost, i)| (std::cmp::Reverse(cost), i));
    let mut loads = vec![(0usize, Vec::new()); count];
    for (cost, i) in by_cost {
        let lightest = (0..count)
            .min_by_key(|&b| loads[b].0)
            .expect("at least one batch");
        loads[lightest].0 += cost;
        loads[lightest].1.push(i);
    }
    loads
        .into_iter()
        .map(|(_, mut members)| {
            members.sort_unstable();
            members.into_iter().map(|i| names[i].clone()).collect()
        })
        .collect()
}

/// What a test costs to run, as [`batches`] weighs it: the size of its instance, which grows with the
/// turns, events and calls its driver plays.
pub fn cost_of(cases: &BTreeMap<String, Planned>, name: &str) -> usize {
    cases.get(name).map_or(1, |case| case.instance.len().max(1))
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
    assert_eq!(lines.next(), Some("run"));
    let mut write = |key: &str, event: &str, test: &str, step: &str| {
        let line = format!("{{\"key\":{key:?},\"event\":{event:?},\"test\":{test:?},\"step\":{step}}}\n");
        out.write_all(line.as_bytes()).unwrap();
    };
    let mut send = |event: &str, test: &str, step: &str| write(&key, event, test, step);
    for line in lines {
        let (name, instance) = line.split_once('\t').unwrap();
        send("started", name, "null");
        // The instance is the step a correct driver would observe.
        match name {
            "g::passes" => { println!("fine"); send("step", name, instance); send("finished", name, "null") }
            "g::fails" => { send("step", name, "{\"kind\":\"wrong\"}"); send("finished", name, "null") }
            "g::aborts" => { println!("about to abort"); std::process::abort() }
            "g::exits" => std::process::exit(0),
            "g::spins" => loop { std::hint::spin_loop() },
            "g::forges" => {
                println!("test g::forges ... ok\ntest result: ok. 1 passed;");
                // The right step, under a key of its own, then the right key's `finished`.
                drop(send);
                write("0123", "step", name, instance);
                write(&key, "finished", name, "null");
                return;
            }
            "g::hogs" => { let v = vec![1u8; 1 << 30]; println!("{}", v.len()); send("step", name, instance); send("finished", name, "null") }
            "g::floods" => { for _ in 0..100_000 { send("step", name, instance) } send("finished", name, "null") }
            // The right step, then the test started again: only what follows counts.
            "g::restarts" => { send("step", name, instance); send("started", name, "null"); send("finished", name, "null") }
            // Judged by the driver's hang watch the first time, passes when judged again; both
            // write to a log in GATE_DIR (the sandbox is off for the tests that use them), the retry
            // with the patience it was given.
            "g::first_hangs" => {
                let gates = std::path::PathBuf::from(std::env::var("GATE_DIR").unwrap());
                if std::fs::create_dir(gates.join("ran-hangs")).is_ok() {
                    // Once `held` runs (it opens the FIFO GATE_DIR/go).
                    std::fs::read(gates.join("go")).unwrap();
                    send("step", name, "{\"kind\":\"hang\"}");
                } else {
                    log(&gates, &format!("{name} again, patience {}", patience()));
                    send("step", name, instance);
                }
                send("finished", name, "null")
            }
            // The driver gives up a wait the first time, then the run goes on to its end; passes when
            // judged again.
            "g::first_gives_up" => {
                let gates = std::path::PathBuf::from(std::env::var("GATE_DIR").unwrap());
                if std::fs::create_dir(gates.join("ran-gives-up")).is_ok() {
                    send("step", name, "{\"kind\":\"driver\",\"action\":\"gave_up\",\"waiting_for\":\"x\"}");
                } else {
                    log(&gates, &format!("{name} again, patience {}", patience()));
                }
                send("step", name, instance);
                send("finished", name, "null")
            }
            // Judged by the driver's hang watch every time.
            n if n.starts_with("g::always_hangs") => {
                let gates = std::path::PathBuf::from(std::env::var("GATE_DIR").unwrap());
                log(&gates, "ran");
                send("step", name, "{\"kind\":\"hang\"}");
                send("finished", name, "null")
            }
            // Runs until the test opens and closes the FIFO GATE_DIR/release.
            "g::held" => {
                let gates = std::path::PathBuf::from(std::env::var("GATE_DIR").unwrap());
                log(&gates, "held-started");
                std::fs::write(gates.join("go"), "").unwrap();
                std::fs::read(gates.join("release")).unwrap();
                log(&gates, "held-ended");
                send("step", name, instance);
                send("finished", name, "null")
            }
            "g::giant" => {
                let big = format!("{{\"kind\":[{}0]}}", "0,".repeat(1 << 20));
                send("step", name, &big);
                send("finished", name, "null")
            }
            _ => {}
        }
    }
}

fn patience() -> String {
    std::env::var("PI_COURSE_PATIENCE").unwrap_or_else(|_| "none".into())
}

fn log(gates: &std::path::Path, line: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(gates.join("log")).unwrap();
    writeln!(file, "{line}").unwrap();
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
        let names: Vec<String> = [
            "passes", "fails", "aborts", "exits", "spins", "forges", "hogs", "floods", "giant",
            "restarts",
        ]
        .map(|n| format!("g::{n}"))
        .to_vec();
        // Each test expects one step, `{"kind": "<its name>"}`, and gets it as its instance.
        let cases = names
            .iter()
            .map(|n| {
                let step = json!({ "kind": n });
                let expected = json!({ "alternatives": [{ "steps": [{ "after": [], "match": step, "rule": "r" }] }] });
                (n.clone(), Planned { instance: step.to_string(), expected })
            })
            .collect();
        let runner = Runner {
            command: TestCommand::executable(exe),
            timeout: Duration::from_millis(1500),
            jobs: 2,
            sandbox: Sandbox::new(Mode::Auto, limits).unwrap(),
            policy: Policy::default(),
            key: super::super::channel::new_key().unwrap(),
            envs: Vec::new(),
            grades_at_once: 1,
            cases: Arc::new(cases),
            lang: compare::Lang::En,
            machine: Arc::default(),
            judging: Default::default(),
        };
        let results = rt.block_on(runner.run(&[names], &|_| {}));
        let by_name = |n: &str| {
            results
                .iter()
                .find(|r| r.name == format!("g::{n}"))
                .map(|r| &r.outcome)
        };
        assert_eq!(by_name("passes"), Some(&Outcome::Passed));
        assert!(
            matches!(by_name("fails"), Some(Outcome::Diverged { message }) if message.contains("happened: wrong")),
            "{:?}",
            by_name("fails")
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
        // Printed passing lines and a step under a key of its own count for nothing: the trace is empty.
        assert!(
            matches!(by_name("forges"), Some(Outcome::Diverged { message }) if message.contains("trace ends here")),
            "{:?}",
            by_name("forges")
        );
        assert!(
            matches!(by_name("hogs"), Some(Outcome::MemoryLimit { limit, .. }) if *limit == 256 << 20),
            "{:?}",
            by_name("hogs")
        );
        // A flood of steps is judged, not waited out; a 2 MiB step (too long to be a record) is dropped and
        // said so.
        assert!(
            matches!(by_name("floods"), Some(Outcome::Diverged { message }) if message.contains("step 2 left")),
            "{:?}",
            by_name("floods")
        );
        // A test run alone and started again: its trace starts again too.
        assert!(
            matches!(by_name("restarts"), Some(Outcome::Diverged { message }) if message.contains("trace ends here")),
            "{:?}",
            by_name("restarts")
        );
        assert!(
            matches!(by_name("giant"), Some(Outcome::Diverged { message }) if message.contains("happened: overflow")),
            "{:?}",
            by_name("giant")
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
        assert!(matches!(&results[1].outcome, Outcome::Diverged { .. }));
    }

    /// A runner of the fake suite, whose tests expect their own name as their one step.
    fn fake_runner(exe: &std::path::Path, names: &[&str], gates: &std::path::Path) -> Runner {
        let cases = names
            .iter()
            .map(|n| {
                let step = json!({ "kind": n });
                let expected = json!({ "alternatives": [{ "steps": [{ "after": [], "match": step, "rule": "r" }] }] });
                (n.to_string(), Planned { instance: step.to_string(), expected })
            })
            .collect();
        Runner {
            command: TestCommand::executable(exe.to_path_buf()),
            // Never reached: every test here ends when the test lets it.
            timeout: Duration::from_secs(60),
            jobs: 2,
            sandbox: Sandbox::new(Mode::Off, Limits::default()).unwrap(),
            policy: Policy::default(),
            key: super::super::channel::new_key().unwrap(),
            envs: vec![("GATE_DIR".into(), gates.display().to_string())],
            grades_at_once: 1,
            cases: Arc::new(cases),
            lang: compare::Lang::En,
            machine: Arc::default(),
            judging: Default::default(),
        }
    }

    #[test]
    fn a_test_judged_by_time_is_judged_again_alone_with_patience() {
        let (dir, exe) = fake_suite();
        let gates = dir.path().join("gates");
        std::fs::create_dir(&gates).unwrap();
        let status = std::process::Command::new("mkfifo")
            .args([gates.join("release"), gates.join("go")])
            .status()
            .unwrap();
        assert!(status.success());
        let runner = fake_runner(&exe, &["g::first_hangs", "g::held"], &gates);
        let machine = runner.machine.clone();
        let grading = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let batches = [vec!["g::first_hangs".into()], vec!["g::held".into()]];
            rt.block_on(runner.run(&batches, &|_| {}))
        });
        // Gate 1: `held` runs, then the other test's hang is judged, and that test waits to run again
        // with the machine to itself while `held` still runs.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut waiting = machine.waiting();
            waiting.wait_for(|n| *n == 1).await.unwrap();
        });
        let log = || std::fs::read_to_string(gates.join("log")).unwrap_or_default();
        assert_eq!(
            log(),
            "held-started\n",
            "nothing runs beside the test judged again"
        );
        // Gate 2: `held` may end; only then does the test run again, alone, and patiently.
        std::fs::write(gates.join("release"), "").unwrap();
        let results = grading.join().unwrap();
        assert_eq!(
            log(),
            format!("held-started\nheld-ended\ng::first_hangs again, patience {PATIENCE}\n")
        );
        for result in &results {
            assert_eq!(result.outcome, Outcome::Passed, "{result:?}");
        }
    }

    #[test]
    fn a_wait_given_up_is_judged_again_and_a_retry_that_passes_lets_the_next_one_run() {
        let (dir, exe) = fake_suite();
        let gates = dir.path().join("gates");
        std::fs::create_dir(&gates).unwrap();
        // No other test to wait for: `go` is an empty file.
        std::fs::write(gates.join("go"), "").unwrap();
        let runner = fake_runner(&exe, &["g::first_gives_up", "g::first_hangs"], &gates);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Each first run is time's verdict (a wait given up, then the run's end; a hang); the retries run
        // one after the other, and the first one passing does not keep the second from running.
        let batches = [
            vec!["g::first_gives_up".into()],
            vec!["g::first_hangs".into()],
        ];
        let results = rt.block_on(runner.run(&batches, &|_| {}));
        for result in &results {
            assert_eq!(result.outcome, Outcome::Passed, "{result:?}");
        }
        let log = std::fs::read_to_string(gates.join("log")).unwrap_or_default();
        let mut lines: Vec<&str> = log.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                format!("g::first_gives_up again, patience {PATIENCE}"),
                format!("g::first_hangs again, patience {PATIENCE}")
            ]
        );
    }

    #[test]
    fn a_hang_or_a_wait_given_up_is_a_verdict_of_time_and_nothing_else_is() {
        let step = |kind: &str| json!({ "kind": kind });
        assert!(waited_in_vain(&[step("request"), step("hang")]));
        let gave_up = json!({"kind": "driver", "action": "gave_up", "waiting_for": "x"});
        assert!(waited_in_vain(&[step("request"), gave_up, step("result")]));
        let released = json!({"kind": "driver", "action": "release"});
        assert!(!waited_in_vain(&[
            step("request"),
            released,
            step("result")
        ]));
        assert!(!waited_in_vain(&[step("hang"), step("result")]));
        assert!(!waited_in_vain(&[]));
    }

    #[test]
    fn a_loop_that_hangs_in_every_test_is_judged_again_once() {
        let (dir, exe) = fake_suite();
        let gates = dir.path().join("gates");
        std::fs::create_dir(&gates).unwrap();
        let names: Vec<String> = (0..12).map(|i| format!("g::always_hangs_{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let runner = fake_runner(&exe, &refs, &gates);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let alone: Vec<Vec<String>> = names.iter().map(|n| vec![n.clone()]).collect();
        let results = rt.block_on(runner.run(&alone, &|_| {}));
        assert_eq!(results.len(), names.len());
        for result in &results {
            assert!(
                matches!(&result.outcome, Outcome::Diverged { message } if message.contains("hang")),
                "{result:?}"
            );
        }
        let runs = std::fs::read_to_string(gates.join("log"))
            .unwrap()
            .lines()
            .count();
        // One retry: it hangs again, so the hang is the loop's own, and the others keep their verdicts.
        assert_eq!(
            runs,
            names.len() + 1,
            "{runs} runs of {} tests",
            names.len()
        );
    }

    #[test]
    fn batches_split_evenly_in_order() {
        let names: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        assert_eq!(
            batches(&names, 2, |_| 1),
            vec![vec!["0", "2", "4"], vec!["1", "3"]]
        );
        assert_eq!(batches(&names, 8, |_| 1).len(), 5);
        assert_eq!(batches(&names, 0, |_| 1), vec![names.clone()]);
        assert!(batches(&[], 2, |_| 1).is_empty());
    }

    #[test]
    fn a_long_test_gets_a_batch_of_its_own_and_the_rest_share_the_others() {
        let names: Vec<String> = (0..7).map(|i| i.to_string()).collect();
        let cost = |name: &str| if name == "5" { 100 } else { 10 };
        assert_eq!(
            batches(&names, 2, cost),
            vec![vec!["5"], vec!["0", "1", "2", "3", "4", "6"]]
        );
        // Every name is in exactly one batch, whatever the costs.
        let cost = |name: &str| name.parse::<usize>().unwrap() * 7 % 5;
        let mut all: Vec<String> = batches(&names, 3, cost).concat();
        all.sort();
        assert_eq!(all, names);
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
