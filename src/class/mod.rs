//! `pi-course grade-class SUBMISSIONS --out RESULTS`: grade every learner of a class, in parallel.
//!
//! Each entry of SUBMISSIONS is one learner (see [`entries`]). A practice directory is graded as it is,
//! read only; a submitted file is put, as the editable file, into a practice directory made for it in a
//! temporary place, exactly as `pi-course practice` makes one. Each learner is graded by
//! [`grade::grade`], the pipeline `grade` runs, so each gets what every grade gets: a build slot of its
//! own, the sandbox, a fresh verdict key, its own timeouts.
//!
//! **Tasks, not processes.** The grades run as tasks on this process's one runtime thread, `--jobs` at
//! once. Learner code never runs in this process: every build and every test is already a sandboxed
//! process group of its own, so a grader process per learner would add no boundary that learner code
//! could cross. One process keeps every child in one registry, so Ctrl-C stops them all at once, and it
//! spawns every child from the thread that lives as long as the class (children die with it). A grade
//! that panicked is caught as its task's failure: that learner's row says so, the others go on.
//!
//! **Results** (see [`summary`]): `learners/<name>.json` (the grade's JSON report), `.xml` (JUnit) and
//! `.html` (the learner's page) as each learner finishes, then `summary.json` and `summary.csv` again;
//! `index.html` when the class is done. Every file is written to a temporary sibling and renamed, on the
//! runtime thread between two awaits, so an interrupt (handled on that same thread) never finds one half
//! written: Ctrl-C keeps every finished learner and leaves no partial file.
//!
//! **Resuming.** A learner whose file has the sha256 of their row in the earlier summary, graded by this
//! pi-course version for the same chapter and language, keeps that row (`--force` grades everyone again).
//!
//! **Parts** (see [`shard`], [`merge`]): `--shard K/N` grades only part K of the class, dealt by expected
//! cost the same way on every machine, and records the whole class in `part.json`; `merge-class` joins
//! the parts. `--seed N` is the class's secret seed (without it, one is drawn for the run): each
//! learner's instances are drawn from it, their name and their submission's sha256, so whole and sharded
//! runs agree on the same files and a changed file draws new instances (see [`shard`]).
//!
//! **Exit status**: 0 when every learner got a verdict (pass or fail, a compile error included); 1 when
//! some could not be graded (an entry that is not a submission, an unreadable file, the build cache or
//! cargo failing); 2 for bad input; 130 when interrupted.

mod entries;
mod html;
pub mod merge;
mod progress;
pub mod shard;
pub mod summary;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::catalog::{Catalog, Chapter};
use crate::error::{Result, UserError};
use crate::grade::{self, GradeOptions};
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::outcome::GradeResult;
use crate::outcome::MAX_EDITABLE_BYTES;
use crate::outcome::{format_points, Problem};
use crate::report;
use crate::report::Format;
use crate::{atomic_file, cache, practice, regular_file};

use entries::{Entry, Shape};
use shard::{ClassEntry, ClassSeed, PartFile, Seeds, Shard};
use summary::{LearnerFiles, Row, Summary};

/// What to do for one learner.
enum Work {
    /// Unchanged since the earlier run: keep its row.
    Keep(Box<Row>),
    Grade(Source),
}

/// Where a learner's code comes from.
enum Source {
    Practice(PathBuf),
    /// A learner's file, graded in a practice directory of its track made for it.
    File(PathBuf, entries::Read, crate::catalog::Track),
    /// Nothing that can be graded: why.
    Not(String),
}

struct Plan {
    name: String,
    sha256: String,
    /// The expected cost of the grade (see [`shard::cost`]).
    cost: u64,
    work: Work,
}

/// What every learner's grade shares.
struct Class {
    catalog: Catalog,
    chapter: Chapter,
    opts: GradeOptions,
    /// The instructor's language: the summaries, the class page, the progress lines.
    lang: Lang,
    /// `--lang` or `PI_COURSE_LANG`, when given: every learner's page speaks it too. Otherwise each
    /// practice directory's page speaks the language the learner made it in.
    chosen_lang: Option<Lang>,
    out: PathBuf,
    /// Practice directories made for submitted files live here while graded.
    scratch: PathBuf,
    /// How each learner's instances are drawn.
    seed: ClassSeed,
}

/// What the grades report back as they finish.
struct Progress {
    summary: Summary,
    rows: BTreeMap<String, Row>,
    bar: progress::Bar,
    /// Results that could not be written: (file, error).
    unwritten: Vec<(String, String)>,
}

/// What `pi-course grade-class` was asked to do.
#[derive(Debug, Clone)]
pub struct ClassRequest {
    /// The folder of submissions, one entry per learner.
    pub submissions: PathBuf,
    /// Where the results go (an earlier run's results are resumed).
    pub out: PathBuf,
    /// Learners graded at once; `None`: the number of cores.
    pub jobs: Option<usize>,
    /// Grade every learner again, also those whose file is unchanged since the last run.
    pub force: bool,
    pub chapter: String,
    pub format: Format,
    pub limits: grade::Limits,
    /// `--shard K/N`: grade only part K of N (see [`shard`]).
    pub shard: Option<Shard>,
    /// Start over: remove the earlier results in `out` first, whichever submissions they came from.
    pub fresh: bool,
}

/// `submissions.json` in a class's results: the submissions folder they came from (its absolute path), so
/// that a run on another folder is refused rather than mixed in with them (`--fresh` starts over).
pub const SOURCE: &str = "submissions.json";

/// The submissions folder `out`'s results came from, when they record one (results written before it
/// was recorded, or merged from parts graded in different places, do not).
pub fn recorded_source(out: &Path) -> Option<String> {
    let text = fs::read_to_string(out.join(SOURCE)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["submissions"].as_str().map(str::to_string)
}

/// The text of `submissions.json` for the folder at `submissions` (absolute).
pub fn source_json(submissions: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"format": "pi-course grade-class submissions", "submissions": submissions})
    )
}

/// The results of an earlier run in `out`, whatever class they were: what grade-class writes there.
fn remove_results(out: &Path) -> std::io::Result<()> {
    crate::remove_tree::remove_tree(&out.join(LearnerFiles::DIR))?;
    for file in [
        summary::JSON,
        summary::CSV,
        "index.html",
        shard::FILE,
        SOURCE,
    ] {
        match fs::remove_file(out.join(file)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// What grading a class came to: the summary as written, and what the run itself did.
pub struct Graded {
    pub summary: Summary,
    /// Learners whose earlier rows were kept (their submission had not changed).
    pub skipped: usize,
    /// Learners graded by this run.
    pub graded_now: usize,
    /// Result files that could not be written: (file, error).
    pub unwritten: Vec<(String, String)>,
}

/// Grades the class `args` names and writes its results under `args.out`; `pi-course grade-class`
/// (`crate::commands::grade_class`) renders what it came to.
pub fn grade_class(
    catalog: &Catalog,
    lang: Lang,
    chosen_lang: Option<Lang>,
    args: ClassRequest,
) -> Result<Graded> {
    if args.format == Format::Gradescope {
        return Err(UserError::new(lang.t("class-bad-format", &[]))
            .with_fix(lang.t("class-bad-format-fix", &[])));
    }
    let chapter = catalog.chapter(&args.chapter).cloned().ok_or_else(|| {
        UserError::new(lang.t("class-unknown-chapter", &[("chapter", &args.chapter)])).with_fix(
            lang.t(
                "fix-practice-known-chapters",
                &[("chapters", &chapter_list(catalog, lang))],
            ),
        )
    })?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let jobs = args.jobs.unwrap_or(cores);
    if jobs == 0 {
        return Err(UserError::new(lang.t("class-bad-jobs", &[])));
    }
    if !args.submissions.is_dir() {
        return Err(UserError::new(
            lang.t("class-not-a-dir", &[("dir", &args.submissions.display())]),
        )
        .with_fix(lang.t("class-submissions-fix", &[])));
    }
    check_out(&args.out, &args.submissions, lang)?;
    let source = fs::canonicalize(&args.submissions)
        .unwrap_or_else(|_| args.submissions.clone())
        .display()
        .to_string();
    match recorded_source(&args.out) {
        Some(earlier) if earlier != source && !args.fresh => {
            return Err(UserError::new(lang.t(
                "class-out-other-class",
                &[
                    ("out", &args.out.display()),
                    ("earlier", &earlier),
                    ("dir", &args.submissions.display()),
                ],
            ))
            .with_fix(lang.t("class-out-other-class-fix", &[("out", &args.out.display())])))
        }
        _ => {}
    }
    let entries = entries::scan(&args.submissions, &chapter, lang)?;
    let mut opts = GradeOptions::from_args(&args.limits, lang)?;
    opts.record_last_grade = false;
    opts.slots = jobs.max(cache::SLOTS);
    opts.grades_at_once = jobs;
    opts.jobs = cores;

    let fresh = Summary::new(&chapter, lang);
    let seed = ClassSeed::of(args.limits.seed).map_err(|e| {
        UserError::new(lang.t(
            "grade-io-failed",
            &[("what", &"/dev/urandom"), ("error", &e)],
        ))
    })?;
    let seeds = seed.policy.clone();
    // An earlier part's rows are kept only if it drew its instances the same way. (A whole class's
    // results record no policy: they are kept as before.)
    let earlier_part = PartFile::load(&args.out).filter(|_| !args.fresh);
    let same_seeds = earlier_part
        .as_ref()
        .map_or(args.shard.is_none(), |p| p.seeds == seeds);
    let earlier = Summary::load(&args.out)
        .filter(|s| !args.force && !args.fresh && same_seeds && s.reusable_by(&fresh));
    let plans: Vec<Plan> = entries
        .into_iter()
        .map(|e| {
            plan(
                e,
                &args.submissions,
                &chapter,
                lang,
                earlier.as_ref(),
                &args.out,
            )
        })
        .collect();
    let (plans, part) = take_part(plans, args.shard, &fresh, seeds);

    let unwritable = |e: std::io::Error| {
        UserError::new(lang.t(
            "class-out-unwritable",
            &[("out", &args.out.display()), ("error", &e)],
        ))
    };
    // Starting over removes the earlier results only now, once the input is known to be good.
    if args.fresh && args.out.is_dir() {
        remove_results(&args.out).map_err(unwritable)?;
    }
    fs::create_dir_all(args.out.join(LearnerFiles::DIR)).map_err(unwritable)?;
    atomic_file::write(&args.out.join(SOURCE), source_json(&source).as_bytes())
        .map_err(unwritable)?;
    // A part says what it is before it grades anyone; results that are no longer a part say nothing.
    match &part {
        Some(part) => atomic_file::write(&args.out.join(shard::FILE), part.to_json().as_bytes())
            .map_err(unwritable)?,
        None if earlier_part.is_some() => {
            fs::remove_file(args.out.join(shard::FILE)).map_err(unwritable)?
        }
        None => {}
    }
    let scratch = tempfile::Builder::new()
        .prefix("pi-course-class-")
        .tempdir()
        .map_err(|e| {
            UserError::new(lang.t("grade-io-failed", &[("what", &"TMPDIR"), ("error", &e)]))
        })?;
    // Everything temporary of this run goes in one place, which an interrupt removes whole: the practice
    // directories made for submitted files and each test process's scratch directory. Set while this
    // process has one thread, before the runtime starts.
    std::env::set_var("TMPDIR", scratch.path());

    let mut kept = BTreeMap::new();
    let mut to_grade = Vec::new();
    for plan in plans {
        match plan.work {
            Work::Keep(row) => {
                kept.insert(plan.name, *row);
            }
            Work::Grade(source) => to_grade.push((plan.name, plan.sha256, source)),
        }
    }
    let to_grade = in_build_order(to_grade, &chapter, lang);
    let skipped = kept.len();
    let graded_now = to_grade.len();
    let live = std::io::stderr().is_terminal();
    let state = Rc::new(RefCell::new(Progress {
        summary: fresh,
        rows: kept,
        bar: progress::Bar::new(lang, live, graded_now),
        unwritten: Vec::new(),
    }));
    save_summary(&args.out, &mut state.borrow_mut());

    let class = Rc::new(Class {
        catalog: catalog.clone(),
        chapter: chapter.clone(),
        opts,
        lang,
        chosen_lang,
        out: args.out.clone(),
        scratch: scratch.path().to_path_buf(),
        seed,
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UserError::new(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    runtime.block_on(local.run_until(grade_all(
        class.clone(),
        state.clone(),
        to_grade,
        jobs,
        live,
    )));
    // Whatever a test left in it (the tests' own scratch directories are removed as each ends).
    let _ = crate::remove_tree::remove_tree(&scratch.keep());

    let mut state = state.borrow_mut();
    state.bar.clear();
    let summary = state.summary.clone();
    let reports: BTreeMap<String, serde_json::Value> = summary
        .learners
        .iter()
        .filter_map(|r| {
            let text = fs::read_to_string(args.out.join(&r.report)).ok()?;
            Some((r.name.clone(), serde_json::from_str(&text).ok()?))
        })
        .collect();
    match html::index(&summary, &reports, lang, chapter.title.get(lang)) {
        Ok(page) => write_result(
            &args.out,
            "index.html",
            page.as_bytes(),
            &mut state.unwritten,
        ),
        Err(e) => state.unwritten.push(("index.html".into(), e)),
    }
    Ok(Graded {
        summary,
        skipped,
        graded_now,
        unwritten: std::mem::take(&mut state.unwritten),
    })
}

fn chapter_list(catalog: &Catalog, lang: Lang) -> String {
    catalog
        .chapters
        .iter()
        .map(|c| format!("  {}  {}", c.id, c.title.get(lang)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `--out` must be outside SUBMISSIONS (and not hold it), and be new, empty, or an earlier run's results.
fn check_out(out: &Path, submissions: &Path, lang: Lang) -> Result<()> {
    let shown = out.display();
    let subs = fs::canonicalize(submissions).unwrap_or_else(|_| submissions.to_path_buf());
    let absolute = match fs::canonicalize(out) {
        Ok(path) => path,
        Err(_) => {
            let parent = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let Ok(parent) = fs::canonicalize(&parent).and_then(|p| {
                if p.is_dir() {
                    Ok(p)
                } else {
                    Err(std::io::ErrorKind::NotADirectory.into())
                }
            }) else {
                return Err(UserError::new(
                    lang.t("class-out-parent-missing", &[("parent", &parent.display())]),
                )
                .with_fix(lang.t(
                    "fix-practice-parent-missing",
                    &[("parent", &parent.display())],
                )));
            };
            parent.join(out.file_name().unwrap_or_default())
        }
    };
    let suggestion = || {
        let name = subs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "submissions".into());
        subs.parent()
            .unwrap_or(Path::new("."))
            .join(format!("{name}-results"))
            .display()
            .to_string()
    };
    if absolute.starts_with(&subs) {
        return Err(UserError::new(lang.t(
            "class-out-inside",
            &[("out", &shown), ("dir", &submissions.display())],
        ))
        .with_fix(lang.t("class-out-fix", &[("suggestion", &suggestion())])));
    }
    if subs.starts_with(&absolute) {
        return Err(UserError::new(lang.t(
            "class-out-contains",
            &[("out", &shown), ("dir", &submissions.display())],
        ))
        .with_fix(lang.t("class-out-fix", &[("suggestion", &suggestion())])));
    }
    match fs::metadata(out) {
        Err(_) => Ok(()),
        Ok(meta) if !meta.is_dir() => Err(UserError::new(
            lang.t("class-out-not-dir", &[("out", &shown)]),
        )
        .with_fix(lang.t("class-out-new-fix", &[]))),
        Ok(_) => {
            let empty = fs::read_dir(out)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if empty || Summary::load(out).is_some() {
                Ok(())
            } else {
                Err(
                    UserError::new(lang.t("class-out-not-results", &[("out", &shown)]))
                        .with_fix(lang.t("class-out-new-fix", &[])),
                )
            }
        }
    }
}

/// The plans of this run's part, and what the part records; every plan, and no record, without `--shard`.
/// Every part plans the whole class (each entry's sha256 and cost), so that each records the same class.
fn take_part(
    plans: Vec<Plan>,
    shard: Option<Shard>,
    summary: &Summary,
    seeds: Seeds,
) -> (Vec<Plan>, Option<PartFile>) {
    let Some(shard) = shard else {
        return (plans, None);
    };
    let costs: Vec<(String, u64)> = plans.iter().map(|p| (p.name.clone(), p.cost)).collect();
    let parts = shard::partition(&costs, shard.n);
    let class = plans
        .iter()
        .zip(&parts)
        .map(|(p, &part)| ClassEntry {
            name: p.name.clone(),
            sha256: p.sha256.clone(),
            cost: p.cost,
            part,
        })
        .collect();
    let record = PartFile {
        format: shard::FORMAT.to_string(),
        version: 1,
        pi_course: summary.pi_course.clone(),
        chapter: summary.chapter.clone(),
        lang: summary.lang.clone(),
        seeds,
        part: shard.k,
        parts: shard.n,
        class,
    };
    let mine = plans
        .into_iter()
        .zip(parts)
        .filter(|(_, part)| *part == shard.k)
        .map(|(plan, _)| plan)
        .collect();
    (mine, Some(record))
}

/// Reads a learner's file and decides whether their earlier result still holds.
fn plan(
    entry: Entry,
    submissions: &Path,
    chapter: &Chapter,
    lang: Lang,
    earlier: Option<&Summary>,
    out: &Path,
) -> Plan {
    let (sha256, gradable, source) = match entry.shape {
        Shape::Practice => (
            entries::practice_sha256(&entry.path, chapter),
            entries::practice_size(&entry.path, chapter),
            Source::Practice(entry.path),
        ),
        Shape::File(path, track) => match entries::read_file(submissions, &path, lang) {
            Ok(read) => (
                read.sha256.clone(),
                Some((track, read.bytes.len() as u64)),
                Source::File(path, read, track),
            ),
            Err(reason) => (String::new(), None, Source::Not(reason)),
        },
        Shape::Malformed(reason) => (String::new(), None, Source::Not(reason)),
    };
    let kept = earlier
        .and_then(|s| s.learners.iter().find(|r| r.name == entry.name))
        .filter(|r| {
            r.graded && !sha256.is_empty() && r.sha256 == sha256 && out.join(&r.report).is_file()
        });
    Plan {
        name: entry.name,
        sha256,
        cost: shard::cost(gradable),
        work: match kept {
            Some(row) => Work::Keep(Box::new(row.clone())),
            None => Work::Grade(source),
        },
    }
}

/// Orders the learners so that similar files are graded one after another: by how much of each file is
/// still the skeleton, then by name. A build slot then mostly builds a file close to the one it built last,
/// and an incremental build of a close file costs a fraction of one of a different file (the build is most
/// of a learner's time).
fn in_build_order(
    learners: Vec<(String, String, Source)>,
    chapter: &Chapter,
    lang: Lang,
) -> Vec<(String, String, Source)> {
    let skeleton: Vec<u8> = chapter
        .skeleton_files_in(lang)
        .first()
        .map(|f| f.bytes.to_vec())
        .unwrap_or_default();
    let share = |source: &Source| -> usize {
        let bytes = match source {
            Source::File(_, read, _) => read.bytes.clone(),
            Source::Practice(dir) => {
                match regular_file::read(dir, &chapter.editable[0], MAX_EDITABLE_BYTES) {
                    Ok(regular_file::Contents::Bytes(bytes)) => bytes,
                    _ => Vec::new(),
                }
            }
            Source::Not(_) => return 0,
        };
        let lines = bytes.split(|&c| c == b'\n').count().max(1);
        cache::shared_lines(&skeleton, &bytes) * 1000 / lines
    };
    // Learners of the same track build in the same slots: they go together.
    let track = |source: &Source| match source {
        Source::File(_, _, track) => *track,
        _ => crate::catalog::Track::Rust,
    };
    let mut keyed: Vec<(usize, (String, String, Source))> =
        learners.into_iter().map(|l| (share(&l.2), l)).collect();
    keyed.sort_by(|a, b| {
        track(&a.1 .2)
            .cmp(&track(&b.1 .2))
            .then_with(|| b.0.cmp(&a.0))
            .then_with(|| a.1 .0.cmp(&b.1 .0))
    });
    keyed.into_iter().map(|(_, l)| l).collect()
}

/// Grades every learner, `jobs` at once, in build order (see [`in_build_order`]). On a cold cache the first learner is graded
/// alone (it compiles the dependencies); then every slot the class uses is seeded from a built one, so
/// no two grades compile the dependencies at once.
async fn grade_all(
    class: Rc<Class>,
    state: Rc<RefCell<Progress>>,
    learners: Vec<(String, String, Source)>,
    jobs: usize,
    live: bool,
) {
    let scratch = class.scratch.clone();
    let out = class.out.clone();
    let interrupted = class
        .lang
        .t("class-interrupted", &[("out", &out.display())]);
    if let Err(e) = crate::process::install_signal_handlers(move || {
        if live {
            eprint!("\r\x1b[2K");
        }
        let _ = crate::remove_tree::remove_tree(&scratch);
        eprintln!("{interrupted}");
    }) {
        eprintln!("pi-course: cannot watch for Ctrl-C: {e}");
    }
    let ticker = live.then(|| {
        let state = state.clone();
        tokio::task::spawn_local(async move {
            let mut interval = tokio::time::interval(std::time::Duration::from_millis(500));
            loop {
                interval.tick().await;
                state.borrow().bar.tick();
            }
        })
    });

    let key = cache::build_key(&class.chapter);
    let built = cache::ensure_built(&class.opts.cache, &key, class.opts.slots).unwrap_or(0);
    let mut queue = learners.into_iter().enumerate();
    if built == 0 && queue.len() > 1 {
        if let Some((i, (name, sha, source))) = queue.next() {
            if !live {
                eprintln!("{}", class.lang.t("class-warming", &[]));
            }
            // A task of its own, as every other grade: whatever happens in it is this learner's row.
            let task = tokio::task::spawn_local({
                let (class, name, sha) = (class.clone(), name.clone(), sha.clone());
                async move { grade_one(&class, i, &name, &sha, source).await }
            });
            let (result, learner_lang) = match task.await {
                Ok(graded) => graded,
                Err(e) => (crashed(&class, &e.to_string()), class.lang),
            };
            finish(&class, &state, &name, &sha, result, learner_lang);
            let _ = cache::ensure_built(&class.opts.cache, &key, class.opts.slots);
        }
    }
    let permits = Rc::new(tokio::sync::Semaphore::new(jobs));
    let mut tasks = Vec::new();
    for (i, (name, sha, source)) in queue {
        let (class, state, permits) = (class.clone(), state.clone(), permits.clone());
        let task = tokio::task::spawn_local({
            let class = class.clone();
            let (name, sha) = (name.clone(), sha.clone());
            async move {
                let _permit = permits.acquire().await.expect("never closed");
                grade_one(&class, i, &name, &sha, source).await
            }
        });
        tasks.push(async move {
            let (result, learner_lang) = match task.await {
                Ok(graded) => graded,
                Err(e) => (crashed(&class, &e.to_string()), class.lang),
            };
            finish(&class, &state, &name, &sha, result, learner_lang);
        });
    }
    futures_join(tasks).await;
    if let Some(ticker) = ticker {
        ticker.abort();
    }
}

/// Awaits every future, each making progress as its task does.
async fn futures_join(tasks: Vec<impl std::future::Future<Output = ()> + 'static>) {
    let handles: Vec<_> = tasks.into_iter().map(tokio::task::spawn_local).collect();
    for handle in handles {
        let _ = handle.await;
    }
}

/// A grade whose task failed (a bug): no verdict, and the row says so.
fn crashed(class: &Class, error: &str) -> GradeResult {
    grade::not_graded(
        &class.chapter,
        &class.chapter.groups,
        &class.opts,
        Problem::NotASubmission {
            reason: class.lang.t("class-grade-crashed", &[("error", &error)]),
        },
    )
}

/// Grades one learner, in the language of their page (see [`Class::chosen_lang`]). Never fails: whatever
/// goes wrong is in the result.
async fn grade_one(
    class: &Class,
    index: usize,
    name: &str,
    sha256: &str,
    source: Source,
) -> (GradeResult, Lang) {
    let lang = class.lang;
    let chapter = &class.chapter;
    // The seed of this learner's submission (see [`shard::learner_seed`]): the same whichever part grades
    // it, another for any other file.
    let opts = &GradeOptions {
        seed: Some(class.seed.for_learner(name, sha256)),
        ..class.opts.clone()
    };
    let not = |reason: String| {
        grade::not_graded(
            chapter,
            &chapter.groups,
            &class.opts,
            Problem::NotASubmission { reason },
        )
    };
    match source {
        Source::Not(reason) => (not(reason), lang),
        Source::Practice(dir) => {
            let practice = match Practice::open(&class.catalog, lang, &dir) {
                Ok(p) => p,
                Err(e) => {
                    let reason = lang.t("class-entry-not-practice", &[("error", &e.problem)]);
                    return (not(reason), lang);
                }
            };
            if practice.chapter.id != chapter.id {
                let reason = lang.t(
                    "class-entry-wrong-chapter",
                    &[("found", &practice.chapter.id), ("chapter", &chapter.id)],
                );
                return (not(reason), lang);
            }
            // The learner's language for their page and their tests' messages; words only, the
            // verdicts are the same in every language.
            let learner_lang = class.chosen_lang.or(practice.metadata.lang).unwrap_or(lang);
            let mut opts = opts.clone();
            opts.lang = learner_lang;
            // The directory's own track: its groups carry that track's hints.
            let groups = practice.chapter.groups.clone();
            let submission = grade::Submission::read(practice);
            let result = grade::grade(&submission, &groups, &opts, &|_| {}).await;
            (result, learner_lang)
        }
        Source::File(path, read, track) => {
            let Some(chapter) = &chapter.with_track(track) else {
                let reason = lang.t("class-entry-not-practice", &[("error", &track.name())]);
                return (not(reason), lang);
            };
            let dir = class.scratch.join(index.to_string());
            let made = practice::write_files(&dir, chapter, lang, &[])
                .and_then(|()| fs::write(dir.join(&chapter.editable[0]), &read.bytes));
            let practice = made
                .map_err(|e| e.to_string())
                .and_then(|()| Practice::open(&class.catalog, lang, &dir).map_err(|e| e.problem));
            let result = match practice {
                Ok(mut practice) => {
                    practice
                        .shown_as
                        .insert(chapter.editable[0].clone(), path.display().to_string());
                    let submission = grade::Submission::read(practice);
                    grade::grade(&submission, &chapter.groups, opts, &|_| {}).await
                }
                Err(error) => grade::not_graded(
                    chapter,
                    &chapter.groups,
                    &class.opts,
                    Problem::Io {
                        what: dir.display().to_string(),
                        error,
                    },
                ),
            };
            let _ = fs::remove_dir_all(&dir);
            (result, lang)
        }
    }
}

/// A learner's row and files, rendered, before any is written.
struct Rendered {
    row: Row,
    json: String,
    junit: String,
    page: std::result::Result<String, String>,
}

/// Writes a learner's reports and page, then the summaries with their row. Synchronous: nothing else runs
/// on this thread meanwhile, the interrupt handler included. A rendering that panics (a bug) is caught
/// here: the learner's row then says so, and the class goes on.
fn finish(
    class: &Class,
    state: &Rc<RefCell<Progress>>,
    name: &str,
    sha256: &str,
    result: GradeResult,
    learner_lang: Lang,
) {
    let lang = class.lang;
    let render = |result: &GradeResult| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            render_learner(class, name, sha256, result, learner_lang)
        }))
    };
    let rendered = match render(&result) {
        Ok(rendered) => rendered,
        Err(panic) => {
            let error = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let crashed = crashed(class, &error);
            match render(&crashed) {
                Ok(rendered) => rendered,
                Err(_) => return,
            }
        }
    };
    let Rendered {
        row,
        json,
        junit,
        page,
    } = rendered;
    let mut state = state.borrow_mut();
    // The learner's own files (report, JUnit, page) in the learner's language; the row and the
    // summaries in the instructor's.
    write_result(
        &class.out,
        &row.report,
        json.as_bytes(),
        &mut state.unwritten,
    );
    write_result(
        &class.out,
        &row.junit,
        junit.as_bytes(),
        &mut state.unwritten,
    );
    match page {
        Ok(page) => write_result(&class.out, &row.page, page.as_bytes(), &mut state.unwritten),
        Err(e) => state.unwritten.push((row.page.clone(), e)),
    }
    let line = lang.t(
        "class-progress-line",
        &[
            ("name", &name),
            ("status", &row.verdict_text(lang)),
            ("score", &format_points(row.total)),
            ("max", &format_points(row.max)),
        ],
    );
    let passed = row.status == "pass";
    state.rows.insert(name.to_string(), row);
    save_summary(&class.out, &mut state);
    state.bar.finished(passed, &line);
}

/// Renders a learner's row (in the instructor's language) and files (in the learner's).
fn render_learner(
    class: &Class,
    name: &str,
    sha256: &str,
    result: &GradeResult,
    learner_lang: Lang,
) -> Rendered {
    let row = summary::row(name, result, sha256, class.lang);
    let json = report::json::render(result, learner_lang);
    let junit = report::junit::render(result, learner_lang);
    // Each failing test's expected and actual timelines, as `pi-course explain` shows them.
    let timelines: BTreeMap<String, String> = crate::grade::last::traces_of(result, learner_lang)
        .tests
        .iter()
        .map(|t| {
            let rows = pi_course_judge::compare::timeline(&t.evidence.expected, &t.evidence.trace);
            let text = report::explain::table(&rows, learner_lang, crate::ui::Paint(false));
            (t.name.clone(), text)
        })
        .collect();
    let page = serde_json::from_str(&json)
        .map_err(|e| e.to_string())
        .and_then(|report| {
            html::learner(
                &row,
                &report,
                &timelines,
                learner_lang,
                class.chapter.title.get(learner_lang),
                &class.chapter.id,
            )
        });
    Rendered {
        row,
        json,
        junit,
        page,
    }
}

fn write_result(out: &Path, rel: &str, bytes: &[u8], unwritten: &mut Vec<(String, String)>) {
    if let Err(e) = atomic_file::write(&out.join(rel), bytes) {
        unwritten.push((out.join(rel).display().to_string(), e.to_string()));
    }
}

fn save_summary(out: &Path, state: &mut Progress) {
    state.summary.learners = state.rows.values().cloned().collect();
    let json = state.summary.to_json();
    let csv = state.summary.to_csv();
    write_result(out, summary::JSON, json.as_bytes(), &mut state.unwritten);
    write_result(out, summary::CSV, csv.as_bytes(), &mut state.unwritten);
}

/// The class's summary for a person: counts, the average, where the results are.
pub fn human_summary(
    summary: &Summary,
    lang: Lang,
    skipped: usize,
    graded: usize,
    out: &Path,
) -> String {
    let rows = &summary.learners;
    let count = |verdict: &str| rows.iter().filter(|r| r.verdict() == verdict).count();
    let average = if rows.is_empty() {
        0.0
    } else {
        rows.iter().map(|r| r.total).sum::<f64>() / rows.len() as f64
    };
    let mut text = lang.t(
        "class-summary",
        &[
            ("chapter", &summary.chapter),
            ("learners", &rows.len()),
            ("pass", &count("pass")),
            ("fail", &count("fail")),
            ("unbuilt", &count("unbuilt")),
            ("ungraded", &count("ungraded")),
            ("average", &format_points(average)),
            ("max", &format_points(summary.max)),
        ],
    );
    text.push('\n');
    if skipped > 0 {
        text.push_str(&lang.t(
            "class-summary-skipped",
            &[("graded", &graded), ("skipped", &skipped)],
        ));
        text.push('\n');
    }
    let not_graded: Vec<&Row> = rows.iter().filter(|r| !r.graded).collect();
    if !not_graded.is_empty() {
        text.push_str(&lang.t("class-summary-not-graded", &[]));
        text.push('\n');
        for r in not_graded {
            text.push_str(&format!("  {}: {}\n", r.name, r.message));
        }
    }
    text.push_str(&lang.t(
        "class-summary-files",
        &[("index", &out.join("index.html").display())],
    ));
    text.push('\n');
    text
}
