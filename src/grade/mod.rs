//! `pi-course grade`: build the learner's code against the pristine given files and run the groups.
//!
//! A pipeline of small stages, in one direction, each in its own module:
//! open (`Practice::open`, [`select_groups`]) → read ([`submission`]: the directory, once) → refuse
//! and build (the track's adapter, `crate::track`, in a build slot of the cache that [`prepare`] fills)
//! → list and run ([`runner`]: batches of tests, one process group each, and any test a batch leaves
//! without a verdict alone, with a timeout; each trace judged) → collect (`crate::outcome`) → record
//! ([`last`]: the verdict per Lab). The pipeline returns its result and never renders (the commands do).
//! [`grade`] runs it in-process, so `watch` and `grade-class` call it too.

pub mod bounded_lines;
pub mod channel;
pub mod last;
pub mod occupant;
pub mod prepare;
pub mod runner;
pub mod submission;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cache;
use crate::catalog::{Chapter, Group};
use crate::error::{Result, UserError};
use crate::i18n::Lang;
use crate::sandbox::Sandbox;
use crate::track::{self, BuildRequest};

use crate::outcome::Stage;
use crate::outcome::{self, GradeResult, GroupResult, Problem, Warning};
pub use submission::Submission;

/// Per-test timeout when none is given. The chapter's tests finish in milliseconds and catch a hung loop
/// themselves within about a second (they judge it by the progress it makes), so this only bounds a busy
/// loop or a deadlock, with room for a slow machine's first start of a freshly linked binary. Hung tests
/// give up their slot early (see [`runner::SLOW`]), so even a loop that hangs every test costs about this
/// long plus half a second per test spread over the cores.
pub const DEFAULT_TIMEOUT_SECS: u64 = 5;

/// The build's time limit when none is given.
pub const DEFAULT_BUILD_TIMEOUT_SECS: u64 = 120;

/// How to grade, independent of what to grade.
#[derive(Debug, Clone)]
pub struct GradeOptions {
    /// The cache root (see [`cache::root`]).
    pub cache: PathBuf,
    pub timeout: Duration,
    /// The build is stopped after this long.
    pub build_timeout: Duration,
    /// Confines the build and the tests.
    pub sandbox: Sandbox,
    /// The language of the tests' own messages.
    pub lang: Lang,
    /// Test processes run at once; the number of cores by default.
    pub jobs: usize,
    /// Render compiler diagnostics with ANSI colors.
    pub color: bool,
    /// Record the verdict per Lab in the practice directory (see [`last`]).
    pub record_last_grade: bool,
    /// Build slots to choose from in the cache: [`cache::SLOTS`], or one per grade running at once.
    pub slots: usize,
    /// Grades running at once in this process (`grade-class --jobs`): they share the machine's memory
    /// for test processes (see [`runner::Runner::max_live`]).
    pub grades_at_once: usize,
    /// The seed the instances are drawn with (`--seed`); `None`: a fresh one for every grade.
    pub seed: Option<u64>,
}

impl GradeOptions {
    pub fn new(cache: PathBuf, timeout: Duration, sandbox: Sandbox, lang: Lang) -> GradeOptions {
        GradeOptions {
            cache,
            timeout,
            build_timeout: Duration::from_secs(DEFAULT_BUILD_TIMEOUT_SECS),
            sandbox,
            lang,
            jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            color: false,
            record_last_grade: true,
            slots: cache::SLOTS,
            grades_at_once: 1,
            seed: None,
        }
    }
}

/// How learner code is bounded while graded, as the command line gave it (`grade`, `watch`,
/// `grade-class`); [`GradeOptions::from_args`] checks it.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Per-test timeout in seconds (at least 1).
    pub timeout: u64,
    /// The build's time limit in seconds (at least 1).
    pub build_timeout: u64,
    /// Bytes a test process may use.
    pub memory_limit: u64,
    pub sandbox: crate::sandbox::Mode,
    /// `--cache` or `PI_COURSE_CACHE`; `None`: the platform's cache directory.
    pub cache: Option<PathBuf>,
    /// `--seed`: the instances' seed, to replay a grade; `None`: fresh ones.
    pub seed: Option<u64>,
}

impl GradeOptions {
    /// The options `grade` and `watch` take from the command line. Bad values, a missing cache
    /// directory, or `--sandbox require` where there is no sandbox are bad input.
    pub fn from_args(args: &Limits, lang: Lang) -> Result<GradeOptions> {
        // clap has refused a zero timeout already (`--timeout`, `--build-timeout`: ranges from 1).
        let cache = usable_cache(args.cache.clone(), lang)?;
        let limits = crate::sandbox::Limits {
            memory: args.memory_limit,
            build_cpu_secs: args.build_timeout + 60,
            test_cpu_secs: 2 * args.timeout + 1,
            ..Default::default()
        };
        let sandbox = Sandbox::new(args.sandbox, limits).map_err(|missing| {
            UserError::new(lang.t("grade-sandbox-required", &[("reason", &missing.0)]))
                .with_fix(lang.t("grade-sandbox-required-fix", &[]))
        })?;
        let mut opts = GradeOptions::new(cache, Duration::from_secs(args.timeout), sandbox, lang);
        opts.build_timeout = Duration::from_secs(args.build_timeout);
        opts.seed = args.seed;
        Ok(opts)
    }
}

/// The cache root, checked before any grade starts: absolute, a directory, and one this user can write
/// in. Each way it can fail has its own message that names `PI_COURSE_CACHE` and what to do, instead of
/// an operating-system error in the middle of a grade.
///
/// `chosen` is `--cache` or `PI_COURSE_CACHE` (read by clap). These checks are not a clap value parser:
/// they look at the file system, which parsing `--help` should not, and their messages are the
/// learner's language, not clap's English.
fn usable_cache(chosen: Option<PathBuf>, lang: Lang) -> Result<PathBuf> {
    let from_env = chosen.is_some();
    let cache = chosen.or_else(cache::default_root).ok_or_else(|| {
        UserError::new(lang.t("grade-no-cache", &[])).with_fix(lang.t("grade-no-cache-fix", &[]))
    })?;
    let shown = cache.display();
    let fix = || {
        if from_env {
            lang.t("grade-cache-fix-env", &[("dir", &shown)])
        } else {
            lang.t("grade-cache-fix-default", &[("dir", &shown)])
        }
    };
    // A relative PI_COURSE_CACHE would name a different cache in each directory graded from (and
    // dependencies would compile again in each): refused rather than guessed at.
    if !cache.is_absolute() {
        return Err(
            UserError::new(lang.t("grade-cache-relative", &[("dir", &shown)]))
                .with_fix(lang.t("grade-cache-relative-fix", &[])),
        );
    }
    let unusable = |error: &dyn std::fmt::Display| {
        UserError::new(lang.t("grade-cache-unusable", &[("dir", &shown), ("error", error)]))
            .with_fix(fix())
    };
    if cache.exists() && !cache.is_dir() {
        return Err(unusable(&lang.t("grade-cache-not-a-dir", &[])));
    }
    let os_error = |e: std::io::Error| {
        use std::io::ErrorKind;
        match e.kind() {
            ErrorKind::NotADirectory => unusable(&lang.t("grade-cache-under-a-file", &[])),
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
                unusable(&lang.t("grade-cache-read-only", &[]))
            }
            _ => unusable(&e),
        }
    };
    std::fs::create_dir_all(&cache).map_err(os_error)?;
    tempfile::tempfile_in(&cache).map_err(os_error)?;
    Ok(cache)
}

/// Resolves `--group` queries against the chapter: all groups when none is given, else each named group
/// once, in chapter order. An unknown name is bad input (exit 2) listing the valid ones.
pub fn select_groups(chapter: &Chapter, queries: &[String], lang: Lang) -> Result<Vec<Group>> {
    if queries.is_empty() {
        return Ok(chapter.groups.clone());
    }
    let mut chosen = Vec::new();
    for q in queries {
        match chapter.group(q) {
            Some(g) => chosen.push(g.slug.clone()),
            None => {
                return Err(
                    UserError::new(lang.t("grade-unknown-group", &[("group", q)])).with_fix(
                        format!(
                            "{}\n{}",
                            lang.t("grade-valid-groups", &[]),
                            chapter.group_lines(lang)
                        ),
                    ),
                );
            }
        }
    }
    Ok(chapter
        .groups
        .iter()
        .filter(|g| chosen.contains(&g.slug))
        .cloned()
        .collect())
}

/// Grades `groups` of `submission`: the whole pipeline after `open` and the read. Never fails: whatever
/// goes wrong is part of the result. Must run inside a tokio runtime with IO and time enabled.
pub async fn grade(
    submission: &Submission,
    groups: &[Group],
    opts: &GradeOptions,
    progress: &dyn Fn(Stage),
) -> GradeResult {
    let started = Instant::now();
    let mut result = empty_result(&submission.practice.chapter, groups, opts);
    if !submission.changed_given.is_empty() {
        result.warnings.push(Warning::ChangedGiven {
            files: submission.changed_given.clone(),
        });
    }

    let laps = Laps::new(started);
    let ran = build_and_run(submission, opts, progress, &laps, &mut result).await;
    result.timings = laps.into_inner();
    match ran {
        Ok(()) => {}
        Err(problem) => {
            result.problem = Some(problem);
            for g in &mut result.groups {
                g.tests.clear();
                g.error = Some(outcome::GroupError::NotBuilt);
            }
        }
    }
    result.elapsed = started.elapsed();
    progress(Stage::Done);
    if opts.record_last_grade {
        let earlier = submission.last.clone();
        if let Err(e) = last::record(&submission.practice.dir, earlier, &result, opts.lang) {
            result.warnings.push(Warning::LastGradeNotSaved {
                error: e.to_string(),
            });
        }
    }
    result
}

/// A result with no test run yet: every group without tests.
fn empty_result(chapter: &Chapter, groups: &[Group], opts: &GradeOptions) -> GradeResult {
    GradeResult {
        chapter: chapter.id.clone(),
        test_target: chapter.test_target.clone(),
        track: chapter.track,
        warnings: Vec::new(),
        protection: opts.sandbox.protection(chapter.sandbox),
        problem: None,
        groups: groups
            .iter()
            .zip(outcome::deciding(groups))
            .map(|(g, decides)| GroupResult {
                group: g.clone(),
                decides,
                tests: Vec::new(),
                error: None,
            })
            .collect(),
        elapsed: Duration::ZERO,
        partial_credit: chapter.partial_credit,
        seed: None,
        timings: Vec::new(),
    }
}

/// The result of a grade that could not start: `problem` says why, and no group was graded.
pub fn not_graded(
    chapter: &Chapter,
    groups: &[Group],
    opts: &GradeOptions,
    problem: Problem,
) -> GradeResult {
    let mut result = empty_result(chapter, groups, opts);
    result.problem = Some(problem);
    for g in &mut result.groups {
        g.error = Some(outcome::GroupError::NotBuilt);
    }
    result
}

/// Every test of `chapter` a grade under `seed` may run, by full name: the instance its driver gets and
/// the trace the judge expects; and the names in the chapter's order.
fn plan(
    chapter: &Chapter,
    seed: u64,
) -> (
    std::collections::BTreeMap<String, runner::Planned>,
    Vec<String>,
) {
    let cases = crate::spec::cases(&chapter.id, seed).unwrap_or_default();
    let mut planned = std::collections::BTreeMap::new();
    let mut names = Vec::new();
    for case in cases {
        let Some(group) = chapter.groups.iter().find(|g| g.slug == case.group) else {
            continue;
        };
        let name = chapter.track.test_name(group, &case.name);
        let instance = case.instance.to_string();
        // The test's own Lab, so the judge can say, of a test that reached an earlier Lab's todo!(),
        // which Lab to finish first.
        let mut expected = case.expected;
        expected["test"] = serde_json::json!({"lab": group.lab, "group": group.name});
        planned.insert(name.clone(), runner::Planned { instance, expected });
        names.push(name);
    }
    (planned, names)
}

/// Where a grade's time goes: each stage's share of the wall time, as [`GradeResult::timings`] keeps it.
struct Laps {
    last: std::cell::Cell<Instant>,
    laps: std::cell::RefCell<Vec<(String, Duration)>>,
}

impl Laps {
    fn new(started: Instant) -> Laps {
        Laps {
            last: started.into(),
            laps: Vec::new().into(),
        }
    }

    /// The time since the previous lap (or the start) was spent on `stage`.
    fn lap(&self, stage: &str) {
        let now = Instant::now();
        let took = now - self.last.replace(now);
        self.laps.borrow_mut().push((stage.to_string(), took));
    }

    /// Counts `part` of the last lap as a stage of its own (the judge's share of the run).
    fn split(&self, part: &str, took: Duration) {
        let mut laps = self.laps.borrow_mut();
        if let Some((_, last)) = laps.last_mut() {
            let took = took.min(*last);
            *last -= took;
            laps.push((part.to_string(), took));
        }
    }

    fn into_inner(self) -> Vec<(String, Duration)> {
        self.laps.into_inner()
    }
}

async fn build_and_run(
    submission: &Submission,
    opts: &GradeOptions,
    progress: &dyn Fn(Stage),
    laps: &Laps,
    result: &mut GradeResult,
) -> std::result::Result<(), Problem> {
    let chapter = &submission.practice.chapter;
    let io_problem = |what: &str, e: std::io::Error| Problem::Io {
        what: what.to_string(),
        error: e.to_string(),
    };

    let track = track::adapter(chapter.track);
    track.start(&opts.cache);
    let editable = submission.editable()?;
    let shown = |path: &str| submission.shown(path);
    // Refused constructs fail the build as a compile error would: the learner fixes their file.
    let refused = track.refused(&editable, &|path| shown(path), opts.lang);
    laps.lap("refuse");
    if let Some(refused) = refused {
        return Err(refused);
    }
    // This grade's secret: only the records that carry it are verdicts (`channel`).
    let secret = channel::new_key().map_err(|e| io_problem("/dev/urandom", e))?;
    // Fresh instances for every grade (docs/JUDGE.md): nothing from a practice directory or an earlier
    // grade can answer them. `--seed` replays a grade exactly. They are drawn on a thread of their own
    // while the build runs (it leaves a core idle most of the time), and reach no process before the
    // build is done.
    let seed = match opts.seed {
        Some(seed) => seed,
        None => channel::new_seed().map_err(|e| io_problem("/dev/urandom", e))?,
    };
    let drawing = tokio::task::spawn_blocking({
        let chapter = chapter.clone();
        move || plan(&chapter, seed)
    });
    let key = cache::build_key(chapter);
    let files: Vec<(&str, &[u8])> = editable
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()))
        .collect();
    let build_dir = cache::acquire(&opts.cache, &key, &files, opts.slots, || {
        progress(Stage::Waiting)
    })
    .await
    .map_err(|e| io_problem(&opts.cache.display().to_string(), e))?;
    laps.lap("slot");
    progress(Stage::Preparing);
    prepare::prepare(chapter, &editable, &build_dir.path)?;

    if track.installs_dependencies(&opts.cache, &build_dir.path) {
        progress(Stage::Installing);
    }
    let first_of = track.dependencies_to_compile(&build_dir);
    progress(Stage::Building {
        last_crate: None,
        crates: 0,
        first_of,
    });
    let crates = std::cell::Cell::new(0);
    let request = BuildRequest {
        cache: &opts.cache,
        build_dir: &build_dir.path,
        target_dir: &build_dir.target,
        test_target: &chapter.test_target,
        color: opts.color,
        renames: chapter
            .editable
            .iter()
            .map(|p| (p.clone(), shown(p)))
            .collect(),
        sandbox: &opts.sandbox,
        timeout: opts.build_timeout,
    };
    // The slot's outputs of another learner's file are removed before this build can read them.
    let occupant = occupant::Occupant::of(&submission.identity, &editable);
    let slot_io = |e: std::io::Error| io_problem(&build_dir.path.display().to_string(), e);
    if !occupant.may_reuse(&build_dir) {
        track.clear_learner_outputs(&request).await?;
    }
    occupant.record(&build_dir, false).map_err(slot_io)?;
    laps.lap("prepare");
    let command = track
        .build(&request, &|name| {
            laps.lap(&format!("build {name}"));
            crates.set(crates.get() + 1);
            progress(Stage::Building {
                last_crate: Some(name.to_string()),
                crates: crates.get(),
                first_of,
            });
        })
        .await;
    laps.lap("build");
    if command.is_ok() {
        // Unrecorded, the slot still names this learner, with outputs of no known files: the next
        // learner's grade clears them.
        let _ = occupant.record(&build_dir, true);
    }
    let command = command.map_err(|problem| {
        // A cache removed under a running build makes cargo and rustc fail in ways that look like the
        // learner's errors ("could not write output"): say what really happened.
        let manifest = track.manifest();
        if build_dir.path.join(manifest).exists() && build_dir.target.exists() {
            problem
        } else {
            Problem::CacheGone {
                dir: opts.cache.display().to_string(),
            }
        }
    })?;

    progress(Stage::Listing);
    // A panic of the draw is the grader's own bug, and ends it as it would have in line.
    let (planned, names) = drawing
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    result.seed = Some(seed);
    if seed == crate::spec::HAND_SEED {
        result.warnings.push(Warning::PracticeSeed { seed });
    }
    laps.lap("draw");
    let mut envs = vec![("PI_COURSE_LANG".into(), opts.lang.code().into())];
    envs.extend(command.envs.iter().cloned());
    let runner = runner::Runner {
        command,
        timeout: opts.timeout,
        jobs: opts.jobs,
        sandbox: opts.sandbox.clone(),
        policy: chapter.sandbox,
        key: secret,
        envs,
        grades_at_once: opts.grades_at_once,
        cases: std::sync::Arc::new(planned),
        lang: opts.lang.judge(),
        machine: runner::MACHINE.clone(),
        judging: Default::default(),
    };
    let chosen: Vec<String> = result
        .groups
        .iter()
        .flat_map(|g| runner::tests_of(&names, &chapter.test_prefix(&g.group)))
        .collect();
    let batches = runner::batches(&chosen, opts.jobs, |name| {
        runner::cost_of(&runner.cases, name)
    });

    let total = chosen.len();
    let done = std::cell::Cell::new(0);
    progress(Stage::Running { done: 0, total });
    let results = runner
        .run(&batches, &|_| {
            done.set(done.get() + 1);
            progress(Stage::Running {
                done: done.get(),
                total,
            });
        })
        .await;
    laps.lap("run");
    laps.split("judge", runner.judging());
    // The instances and expected traces are large trees of small allocations: freed on a thread of
    // their own, the verdict does not wait for it.
    std::thread::spawn(move || drop(runner));
    // Stack traces name the build slot (`file:///…/cache/…/slot-0/src/agent-loop.ts:12:5`); the learner
    // knows the file as `src/agent-loop.ts`, relative to their own directory.
    let slot = build_dir.path.display().to_string();
    // Batches are made by cost; a report lists the tests in the chapter's order.
    let order: std::collections::HashMap<&str, usize> = chosen
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i))
        .collect();
    let mut results = results;
    results.sort_by_key(|t| order.get(t.name.as_str()).copied().unwrap_or(usize::MAX));
    let results: Vec<_> = results
        .into_iter()
        .map(|mut t| {
            if let Some(text) = t.outcome.text_mut() {
                *text = text
                    .replace(&format!("file://{slot}/"), "")
                    .replace(&format!("{slot}/"), "");
            }
            t
        })
        .collect();
    for g in &mut result.groups {
        let prefix = chapter.test_prefix(&g.group);
        g.tests = results
            .iter()
            .filter(|t| t.name.starts_with(&prefix))
            .cloned()
            .collect();
        if g.tests.is_empty() {
            g.error = Some(outcome::GroupError::NoTests);
        }
    }
    Ok(())
}
