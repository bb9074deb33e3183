//! Renders one [`GradeResult`](crate::outcome::GradeResult) three ways: for a person ([`human`]), for a
//! program ([`json`]) and for CI ([`junit`]); plus the progress spinner shown while grading.

pub mod explain;
pub mod gradescope;
pub mod human;
pub mod json;
pub mod junit;

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::catalog::Group;
use crate::i18n::Lang;
use crate::outcome::Stage;

/// The output format on stdout (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    /// Gradescope's results.json
    Gradescope,
}

impl Format {
    /// A format for programs: stdout holds exactly one JSON document, also for bad input.
    pub fn is_machine(self) -> bool {
        matches!(self, Format::Json | Format::Gradescope)
    }
}

/// Writes `text` to stdout. A reader that went away (`pi-course grade | head`) is not an error worth a
/// panic: the verdict is still in the exit status.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Reports bad input: on stderr for a person, and, when the command was asked for a document
/// (`--format json` or `gradescope`), also as exactly one such document on stdout.
pub fn bad_input(error: &crate::error::UserError, lang: Lang, format: Option<Format>) {
    eprintln!("{}{error}", lang.t("error-prefix", &[]));
    match format {
        Some(Format::Json) => emit(&format!("{}\n", json::ErrorDocument::new(error).render())),
        Some(Format::Gradescope) => emit(&format!("{}\n", gradescope::render_error(error))),
        Some(Format::Human) | None => {}
    }
}

/// What the terminal allows.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// ANSI colors on stdout (human output on a terminal, and NO_COLOR not set).
    pub color: bool,
    /// A spinner on stderr (stderr is a terminal).
    pub spinner: bool,
    /// The terminal's width when stdout is one: failure messages are cut to it.
    pub columns: Option<usize>,
}

impl Style {
    pub fn detect(format: Format) -> Style {
        Style {
            color: format == Format::Human && crate::ui::color_on(std::io::stdout().is_terminal()),
            spinner: std::io::stderr().is_terminal(),
            columns: crate::ui::terminal_columns(),
        }
    }
}

use crate::ui::{display_width, Paint};

struct SpinnerState {
    text: String,
    active: bool,
}

/// Progress on stderr: a spinner when stderr is a terminal; otherwise silent, except that waiting for
/// another grade is always said once.
pub struct Progress {
    lang: Lang,
    state: Option<Arc<Mutex<SpinnerState>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    said_waiting: std::cell::Cell<bool>,
    said_first_build: std::cell::Cell<bool>,
    trace: Trace,
}

/// `PI_COURSE_TRACE=1`: the time at which each stage starts, on stderr (for measuring, not for learners).
struct Trace {
    start: Option<std::time::Instant>,
    last: std::cell::Cell<Option<std::mem::Discriminant<Stage>>>,
}

impl Trace {
    fn from_env() -> Trace {
        let on = std::env::var_os("PI_COURSE_TRACE").is_some_and(|v| !v.is_empty() && v != "0");
        Trace {
            start: on.then(std::time::Instant::now),
            last: None.into(),
        }
    }

    fn stage(&self, stage: &Stage) {
        let Some(start) = self.start else { return };
        let kind = std::mem::discriminant(stage);
        if self.last.replace(Some(kind)) != Some(kind) {
            let name = format!("{stage:?}");
            let name = name.split([' ', '{']).next().unwrap_or_default();
            eprintln!("[{:>7.3} s] {name}", start.elapsed().as_secs_f64());
        }
    }
}

/// `PI_COURSE_TRACE=1`: where the grade's time went, one `[timing] <stage> <seconds>` line per stage
/// (`GradeResult::timings`), on stderr after the grade. The edit-loop bench reads these lines.
pub fn trace_timings(result: &crate::outcome::GradeResult) {
    if Trace::from_env().start.is_none() {
        return;
    }
    for (stage, took) in &result.timings {
        eprintln!("[timing] {stage} {:.6}", took.as_secs_f64());
    }
}

/// A grade that is done within this time shows no spinner at all (no flicker on a warm re-grade).
const SPINNER_DELAY: Duration = Duration::from_millis(150);

impl Progress {
    /// Starts the spinner task (on the current tokio runtime) when `spinner` is set.
    pub fn start(lang: Lang, spinner: bool) -> Progress {
        if !spinner {
            return Progress {
                lang,
                state: None,
                task: None,
                said_waiting: false.into(),
                said_first_build: false.into(),
                trace: Trace::from_env(),
            };
        }
        let state = Arc::new(Mutex::new(SpinnerState {
            text: lang.t("progress-preparing", &[]),
            active: true,
        }));
        let shared = state.clone();
        // NO_COLOR and --color never hold for the spinner too: its frame is colored only when allowed.
        let paint = Paint(crate::ui::color_on(true));
        let task = tokio::spawn(async move {
            tokio::time::sleep(SPINNER_DELAY).await;
            let mut interval = tokio::time::interval(Duration::from_millis(80));
            for frame in crate::ui::FRAMES.iter().cycle() {
                interval.tick().await;
                let state = shared.lock().unwrap_or_else(|e| e.into_inner());
                if !state.active {
                    break;
                }
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K{} {}", paint.cyan(frame), state.text);
                let _ = err.flush();
            }
        });
        Progress {
            lang,
            state: Some(state),
            task: Some(task),
            said_waiting: false.into(),
            said_first_build: false.into(),
            trace: Trace::from_env(),
        }
    }

    pub fn update(&self, stage: Stage) {
        self.trace.stage(&stage);
        let lang = self.lang;
        if stage == Stage::Waiting && self.state.is_none() && !self.said_waiting.replace(true) {
            eprintln!("{}", lang.t("progress-waiting", &[]));
        }
        // The first grade in a cache compiles the dependencies (8 s idle, up to a minute when busy), or
        // installs them: said once in a line of its own, so that a grade without a spinner does not look
        // hung either.
        let notice = match stage {
            Stage::Building {
                first_of: Some(_), ..
            } => Some("progress-first-build-notice"),
            Stage::Installing => Some("progress-first-install-notice"),
            _ => None,
        };
        if let Some(notice) = notice {
            if !self.said_first_build.replace(true) {
                if self.state.is_some() {
                    // The notice goes above the spinner's line, which shows the count.
                    eprint!("\r\x1b[2K");
                }
                eprintln!("{}", lang.t(notice, &[]));
            }
        }
        let text = stage_text(&stage, lang);
        if let Some(state) = &self.state {
            state.lock().unwrap_or_else(|e| e.into_inner()).text = text;
        }
    }

    /// A function that stops the spinner and clears its line, for the signal handler.
    pub fn clearer(&self) -> impl Fn() + Send + 'static {
        let state = self.state.clone();
        move || {
            if let Some(state) = &state {
                let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                state.active = false;
                eprint!("\r\x1b[2K");
            }
        }
    }

    /// Stops the spinner and clears its line.
    pub async fn finish(mut self) {
        (self.clearer())();
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

/// What a grade is doing, in words (the spinner's and watch's status line).
pub fn stage_text(stage: &Stage, lang: Lang) -> String {
    match stage {
        Stage::Waiting => lang.t("progress-waiting", &[]),
        Stage::Preparing => lang.t("progress-preparing", &[]),
        Stage::Installing => lang.t("progress-installing", &[]),
        Stage::Building {
            crates,
            first_of: Some(total),
            ..
        } => lang.t(
            "progress-first-build",
            &[("done", &(*crates).min(*total)), ("total", total)],
        ),
        Stage::Building {
            last_crate: None, ..
        } => lang.t("progress-building", &[]),
        Stage::Building {
            last_crate: Some(name),
            ..
        } => lang.t("progress-building-crate", &[("crate", name)]),
        Stage::Listing => lang.t("progress-running", &[("done", &0), ("total", &"…")]),
        Stage::Running { done, total } => {
            lang.t("progress-running", &[("done", done), ("total", total)])
        }
        Stage::Done => String::new(),
    }
}

/// The columns of the widest group title (`Group::title`), to line up a table of groups.
pub fn title_width<'a>(groups: impl IntoIterator<Item = &'a Group>, lang: Lang) -> usize {
    groups
        .into_iter()
        .map(|g| display_width(&g.title(lang)))
        .max()
        .unwrap_or(0)
}
