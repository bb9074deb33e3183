//! `pi-course grade [DIR]`: open the practice directory, choose the groups, read it, grade (the pipeline in
//! `crate::grade`), then render the result in the format asked for. The pipeline returns a result and
//! never renders; this command is where a result meets a renderer.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::atomic_file;
use crate::catalog::Catalog;
use crate::error::{Result, UserError};
use crate::grade::{grade, select_groups, GradeOptions, Limits, Submission};
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::outcome::Warning;
use crate::report::{self, Format};

/// What `pi-course grade` was asked to do.
#[derive(Debug, Clone)]
pub struct GradeRequest {
    pub dir: PathBuf,
    /// `--group` queries: slug, name or Lab number.
    pub groups: Vec<String>,
    /// `--all`: every failing test with its message (the groups chosen show it so too).
    pub all: bool,
    pub format: Format,
    pub junit: Option<PathBuf>,
    /// With Gradescope's format: one entry per test.
    pub per_test: bool,
    pub limits: Limits,
}

/// The `grade` command: open, select, grade, report. Exit 0 pass, 1 fail or error, 2 bad input.
pub fn run(catalog: &Catalog, lang: Lang, args: GradeRequest) -> Result<ExitCode> {
    let practice = Practice::open(catalog, lang, &args.dir)?;
    let groups = select_groups(&practice.chapter, &args.groups, lang)?;
    // The directory is read once, here: every stage after takes what was read.
    let submission = Submission::read(practice);
    if let Some(unreadable) = submission.unreadable() {
        return Err(
            UserError::new(unreadable.message(lang)).with_fix(lang.t("grade-editable-fix", &[]))
        );
    }
    // A deleted file is bad input, said before anything is built: the way back, in this track.
    if let Some(path) = submission.missing() {
        let chapter = &submission.practice.chapter;
        let mut command = format!("pi-course skeleton {}", chapter.id);
        if chapter.track != crate::catalog::Track::Rust {
            command.push_str(&format!(" --track {}", chapter.track.name()));
        }
        if lang != Lang::default() {
            command.push_str(&format!(" --lang {}", lang.code()));
        }
        let path_shown = crate::practice::shell_quote(path);
        return Err(
            UserError::new(lang.t("grade-editable-missing", &[("path", &path)])).with_fix(lang.t(
                "grade-editable-missing-fix",
                &[("command", &command), ("path", &path_shown)],
            )),
        );
    }
    if let Some(junit) = &args.junit {
        let parent = junit.parent().filter(|p| !p.as_os_str().is_empty());
        if parent.is_some_and(|p| !p.is_dir()) || junit.is_dir() {
            return Err(UserError::new(
                lang.t("grade-bad-junit", &[("file", &junit.display())]),
            ));
        }
    }
    let mut opts = GradeOptions::from_args(&args.limits, lang)?;
    let style = report::Style::detect(args.format);
    opts.color = style.color;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UserError::new(e.to_string()))?;
    let result = runtime.block_on(async {
        let progress = report::Progress::start(lang, style.spinner);
        let clear = progress.clearer();
        // Without signal handlers a Ctrl-C would still end pi-course but leave the tests running.
        let interrupted = lang.t("grade-interrupted", &[]);
        process_signals(move || {
            clear();
            eprintln!("{interrupted}");
        });
        let result = grade(&submission, &groups, &opts, &|stage| progress.update(stage)).await;
        progress.finish().await;
        result
    });

    let mut result = result;
    report::trace_timings(&result);
    if let Some(junit) = &args.junit {
        if let Err(e) = atomic_file::write(junit, report::junit::render(&result, lang).as_bytes()) {
            result.warnings.push(Warning::ReportNotWritten {
                file: junit.display().to_string(),
                error: e.to_string(),
            });
        }
    }
    match args.format {
        Format::Human => {
            let detail = if args.groups.is_empty() && !args.all {
                report::human::Detail::Focus
            } else {
                report::human::Detail::All
            };
            report::human::print(&result, lang, &style, detail)
        }
        Format::Json => report::emit(&format!("{}\n", report::json::render(&result, lang))),
        Format::Gradescope => report::emit(&format!(
            "{}\n",
            report::gradescope::render(&result, lang, args.per_test)
        )),
    }
    Ok(ExitCode::from(result.exit_code()))
}

fn process_signals(clear: impl Fn() + Send + 'static) {
    if let Err(e) = crate::process::install_signal_handlers(clear) {
        eprintln!("pi-course: cannot watch for Ctrl-C: {e}");
    }
}
