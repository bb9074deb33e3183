//! `pi-course watch [DIR] [--poll]`: grade now, then again each time an editable file is saved.
//!
//! One loop on a single-threaded runtime owns everything: the grade in flight (at most one; a save or an
//! `r` while it runs queues exactly one more), the change detector ([`changes`]), the keys ([`term`]) and
//! the signals. Saves are debounced, so an editor that writes a file in several steps starts one grade.
//! Each finished grade redraws the whole screen ([`screen`]); while a grade runs only the status line
//! changes.
//!
//! Every way out (`q`, Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, a panic) drops the grade in flight, which kills
//! the process groups it started, and gives the terminal back as it was.

mod changes;
mod screen;
mod term;

use std::cell::RefCell;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::time::{Instant, MissedTickBehavior};

use crate::grade::{self, GradeOptions};
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::outcome::GradeResult;
use crate::outcome::Stage;
use crate::process;

use changes::Changes;
use screen::View;
use term::{Key, RawMode};

/// Quiet time after the last change before a grade starts: editors often write a file in several steps.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// How often the spinner moves.
const SPIN: Duration = Duration::from_millis(100);

type Grading<'a> = Pin<Box<dyn Future<Output = GradeResult> + 'a>>;

/// A signal stream, or one that never fires when it cannot be installed.
struct Signals {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
    hangup: Option<Signal>,
    quit: Option<Signal>,
    resize: Option<Signal>,
    resume: Option<Signal>,
}

async fn next(signal: &mut Option<Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

impl Signals {
    fn install() -> Signals {
        let on = |kind: SignalKind| signal(kind).ok();
        Signals {
            interrupt: on(SignalKind::interrupt()),
            terminate: on(SignalKind::terminate()),
            hangup: on(SignalKind::hangup()),
            quit: on(SignalKind::quit()),
            resize: on(SignalKind::window_change()),
            resume: on(SignalKind::from_raw(libc::SIGCONT)),
        }
    }
}

/// The state the screen shows, besides the grade in flight.
struct State {
    result: Option<GradeResult>,
    graded_at: Option<String>,
    queued: bool,
    show_hint: bool,
    show_explain: bool,
    /// The slug of the first Lab not passing in the latest grade that ran the tests.
    working_on: Option<String>,
    frame: usize,
}

/// What the screen shows that does not change while watching.
struct Fixed<'a> {
    lang: Lang,
    color: bool,
    chapter: &'a crate::catalog::Chapter,
    keys: bool,
    mode: &'a changes::Mode,
    tty: bool,
}

impl<'a> Fixed<'a> {
    fn view(&'a self, state: &'a State, grading: bool) -> View<'a> {
        View {
            lang: self.lang,
            color: self.color,
            chapter: self.chapter,
            result: state.result.as_ref(),
            graded_at: state.graded_at.as_deref(),
            // In a pipe there is no spinner: each screen shows a finished grade.
            grading: grading && self.tty,
            queued: state.queued,
            show_hint: state.show_hint,
            show_explain: state.show_explain,
            working_on: state.working_on.as_deref(),
            keys: self.keys,
            mode: self.mode,
        }
    }
}

/// Grades `practice` now, then again each time an editable file is saved, until the learner stops it;
/// returns the exit status. `tty`: standard output is a terminal.
pub async fn watch(
    practice: &Practice,
    lang: Lang,
    opts: &GradeOptions,
    poll: bool,
    tty: bool,
) -> u8 {
    let chapter = &practice.chapter;
    let groups = chapter.groups.clone();
    let mut changes = Changes::start(&practice.dir, &chapter.editable, poll);
    let mut signals = Signals::install();
    let raw = RawMode::enter(tty);
    let mut keys = raw.as_ref().map(|_| term::keys());
    let reads_keys = keys.is_some();
    let screen = Screen { tty };

    let stage: RefCell<Option<Stage>> = RefCell::new(None);
    let progress = |s: Stage| *stage.borrow_mut() = Some(s);
    let start = || -> Grading<'_> {
        *stage.borrow_mut() = None;
        // Each grade reads the directory afresh, once, as it saw it when it started.
        let submission = grade::Submission::read(practice.clone());
        let (groups, progress) = (&groups, &progress);
        Box::pin(async move { grade::grade(&submission, groups, opts, progress).await })
    };

    let mut state = State {
        result: None,
        graded_at: None,
        queued: false,
        show_hint: false,
        show_explain: false,
        working_on: None,
        frame: 0,
    };
    // A copy, so that drawing does not borrow `changes`, which the loop needs mutably.
    let mode = changes.mode.clone();
    let fixed = Fixed {
        lang,
        color: opts.color,
        chapter,
        keys: reads_keys,
        mode: &mode,
        tty,
    };
    let draw = |state: &State, grading: bool| {
        let (width, height) = screen.size();
        let stage = stage.borrow();
        let lines = screen::render(
            &fixed.view(state, grading),
            stage.as_ref(),
            state.frame,
            width,
            height,
        );
        screen.full(&lines);
    };
    let draw_status = |state: &State| {
        let (width, _) = screen.size();
        let stage = stage.borrow();
        let line =
            screen::status_line(&fixed.view(state, true), stage.as_ref(), state.frame, width);
        screen.status(&line);
    };

    let mut grading: Option<Grading<'_>> = Some(start());
    draw(&state, true);
    let mut poll_timer = tokio::time::interval(changes::POLL);
    poll_timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut spin = tokio::time::interval(SPIN);
    spin.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut settle: Option<Instant> = None;

    let code = loop {
        // What to do once the loop has reacted; `Grade` starts a grade, or queues one if one runs.
        enum Then {
            Nothing,
            Grade,
            Redraw,
            Quit(u8),
        }
        let then = tokio::select! {
            result = async { grading.as_mut().expect("guarded").await }, if grading.is_some() => {
                grading = None;
                match screen::standing(Some(&result)) {
                    screen::Standing::Lab(g) => state.working_on = Some(g.group.slug.clone()),
                    screen::Standing::Done => state.working_on = None,
                    screen::Standing::Problem(_) | screen::Standing::Unknown => {}
                }
                state.result = Some(result);
                state.graded_at = Some(crate::time::clock_now());
                if std::mem::take(&mut state.queued) {
                    grading = Some(start());
                }
                Then::Redraw
            }
            _ = spin.tick(), if grading.is_some() && tty => {
                state.frame += 1;
                draw_status(&state);
                Then::Nothing
            }
            _ = poll_timer.tick() => {
                if changes.check() {
                    settle = Some(Instant::now() + DEBOUNCE);
                }
                Then::Nothing
            }
            () = changes.event() => {
                if changes.check() {
                    settle = Some(Instant::now() + DEBOUNCE);
                }
                Then::Nothing
            }
            () = tokio::time::sleep_until(settle.unwrap_or_else(Instant::now)), if settle.is_some() => {
                settle = None;
                Then::Grade
            }
            key = async { keys.as_mut().expect("guarded").recv().await }, if keys.is_some() => {
                match key {
                    None => {
                        keys = None;
                        Then::Nothing
                    }
                    Some(Key::Hint) => {
                        state.show_hint = !state.show_hint;
                        state.show_explain = false;
                        Then::Redraw
                    }
                    Some(Key::Explain) => {
                        state.show_explain = !state.show_explain;
                        state.show_hint = false;
                        Then::Redraw
                    }
                    Some(Key::Regrade) => Then::Grade,
                    Some(Key::Quit) => Then::Quit(0),
                }
            }
            () = next(&mut signals.interrupt) => Then::Quit(128 + libc::SIGINT as u8),
            () = next(&mut signals.terminate) => Then::Quit(128 + libc::SIGTERM as u8),
            () = next(&mut signals.hangup) => Then::Quit(128 + libc::SIGHUP as u8),
            () = next(&mut signals.quit) => Then::Quit(128 + libc::SIGQUIT as u8),
            () = next(&mut signals.resize) => Then::Redraw,
            () = next(&mut signals.resume) => {
                if let Some(raw) = &raw {
                    raw.reapply();
                }
                Then::Redraw
            }
        };
        match then {
            Then::Nothing => {}
            Then::Grade if grading.is_some() => {
                if !state.queued {
                    state.queued = true;
                    if tty {
                        draw_status(&state);
                    }
                }
            }
            Then::Grade => {
                grading = Some(start());
                if tty {
                    draw(&state, true);
                }
            }
            Then::Redraw => draw(&state, grading.is_some()),
            Then::Quit(code) => break code,
        }
    };

    // Dropping the grade kills its process groups; `kill_all` also stops any that a task still holds.
    drop(grading);
    process::kill_all();
    drop(raw);
    screen.leave();
    code
}

/// Where the screen goes: a terminal (redrawn in place) or a pipe (each finished grade appended).
struct Screen {
    tty: bool,
}

impl Screen {
    fn size(&self) -> (usize, usize) {
        if self.tty {
            term::size()
        } else {
            (usize::MAX / 4, usize::MAX / 4)
        }
    }

    /// Draws `lines` over the whole screen: home, each line cleared to its end, everything below cleared.
    /// Nothing is blanked first, so a redraw does not flicker.
    fn full(&self, lines: &[String]) {
        let mut out = String::new();
        if self.tty {
            out.push_str("\x1b[H");
            out.push_str(&lines.join("\x1b[K\n"));
            out.push_str("\x1b[K\x1b[J");
        } else {
            out.push_str(&lines.join("\n"));
            out.push_str("\n\n");
        }
        write_out(&out);
    }

    /// Rewrites the status line only.
    fn status(&self, line: &str) {
        if self.tty {
            write_out(&format!(
                "\x1b7\x1b[{};1H{line}\x1b[K\x1b8",
                screen::STATUS_ROW
            ));
        }
    }

    /// Leaves the last screen in place and the cursor on a fresh line below it.
    fn leave(&self) {
        if self.tty {
            write_out("\n");
        }
    }
}

fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed terminal or pipe: nothing more to show, and the loop ends on SIGHUP or a key.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}
