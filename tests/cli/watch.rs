//! `pi-course watch`, driven for real in a pseudo-terminal: the tests edit the learner's file the ways
//! editors do, read the screen, press keys and check that nothing is left running afterwards.
//!
//! Nothing here sleeps to prove an order: every step waits (with a generous bound, since the first grade on
//! a machine compiles the dependencies) for the screen to show what should come next.

#![cfg(unix)]

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::{
    assert_none_left, chapter_manifest, pi_course, practice, processes, solution,
    solution_starting_with, Proc,
};

/// The first grade may have to compile every dependency into the shared cache.
const FIRST_GRADE: Duration = Duration::from_secs(300);
/// Any later grade, with the dependencies built (a bound, not an expectation).
const REGRADE: Duration = Duration::from_secs(180);
/// Quitting, once asked.
const QUIT: Duration = Duration::from_secs(20);

const COLS: u16 = 110;
const ROWS: u16 = 45;

/// The hint of Lab `lab` in `lang`, from the chapter manifest.
fn hint(lab: &str, lang: &str) -> String {
    let manifest = chapter_manifest();
    let group = manifest["group"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["lab"].as_str() == Some(lab))
        .unwrap();
    group["hint"][lang].as_str().unwrap().trim().to_string()
}

/// Removes escape sequences: CSI (`ESC [ ... letter`) and two-byte ones (`ESC 7`, `ESC 8`).
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// `pi-course watch` running in a pseudo-terminal of its own, as the leader of a new session.
struct Watch {
    child: Child,
    master: File,
    output: Arc<Mutex<Vec<u8>>>,
    /// The session id of the watch process: every process it starts stays in its session.
    session: i32,
}

impl Watch {
    fn start(dir: &Path, args: &[&str]) -> Watch {
        Watch::start_in(dir, Some(dir), args)
    }

    /// `pi-course watch [DIR] ARGS` run in `cwd`.
    fn start_in(cwd: &Path, dir: Option<&Path>, args: &[&str]) -> Watch {
        let (master, slave) = open_pty();
        let mut cmd = pi_course(cwd);
        cmd.arg("watch")
            .args(dir)
            .args(args)
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                #[allow(clippy::useless_conversion)]
                if libc::ioctl(0, libc::TIOCSCTTY.into(), 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start pi-course watch");
        // The slave ends live only in the child now (the Command held the last copies).
        drop(cmd);
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            // Ends with EIO once every slave end is closed.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let session = child.id() as i32;
        Watch {
            child,
            master,
            output,
            session,
        }
    }

    /// Everything written to the terminal so far, escapes removed.
    fn transcript(&self) -> String {
        strip_escapes(&String::from_utf8_lossy(&self.output.lock().unwrap()))
    }

    /// The screen as last drawn in full (everything since the last cursor-home), escapes removed. Status
    /// line updates after it are appended, which is harmless for the checks here.
    fn screen(&self) -> String {
        let raw = String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned();
        let last = raw.rfind("\x1b[H").map_or(0, |i| i + 3);
        strip_escapes(&raw[last..])
    }

    /// Waits until the screen satisfies `done`; panics with the screen after `limit`.
    fn wait_for(&mut self, what: &str, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "watch exited ({status}) while waiting for {what}\n{}",
                    self.transcript()
                );
            }
            assert!(
                started.elapsed() < limit,
                "no {what} within {limit:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn press(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for the process to end; panics after `limit`.
    fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if started.elapsed() > limit {
                let _ = self.child.kill();
                panic!("watch did not exit within {limit:?}\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Live processes of the watch's session (it started every one of them).
    fn session_processes(&self) -> Vec<Proc> {
        processes()
            .into_iter()
            // SAFETY: getsid only reads; a process that is gone yields -1.
            .filter(|p| !p.zombie && unsafe { libc::getsid(p.pid) } == self.session)
            .collect()
    }

    /// After the watch exited: no process of its session is left (allowing the kernel a moment), and the
    /// terminal is back in line mode with echo.
    fn assert_clean_exit(&self) {
        assert_none_left(Duration::from_secs(5), || self.session_processes());
        // On a pty master, tcgetattr reads the terminal's (the slave side's) settings.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::tcgetattr(self.master.as_raw_fd(), &mut t) },
            0
        );
        assert_ne!(t.c_lflag & libc::ICANON, 0, "line mode not restored");
        assert_ne!(t.c_lflag & libc::ECHO, 0, "echo not restored");
        let raw = String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned();
        let hidden = raw.rfind("\x1b[?25l");
        let shown = raw.rfind("\x1b[?25h");
        assert!(shown >= hidden, "the cursor is left hidden");
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // A failed test must not leave a watch running.
        if self.child.try_wait().ok().flatten().is_none() {
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGKILL);
            }
            let _ = self.child.wait();
        }
    }
}

fn open_pty() -> (File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: ROWS,
        ws_col: COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills the two descriptors; the null name and settings pointers are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // Other tests start processes concurrently: they must not inherit this terminal.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors are fresh and owned here.
    unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// The row of Lab `lab` on `screen` (`> 7.2  单工具往返   0/2  ✗`), if any.
fn row<'a>(screen: &'a str, lab: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        let l = l.strip_prefix('>').unwrap_or(l).trim_start();
        l.strip_prefix(lab)
            .is_some_and(|rest| rest.starts_with(' '))
    })
}

fn lab_shows(screen: &str, lab: &str, mark: char) -> bool {
    row(screen, lab).is_some_and(|r| r.trim_end().ends_with(mark))
}

/// The reference loop with every run blocking its thread first: its grade hangs in "running tests" until
/// the per-test timeout, or until it is killed.
fn hanging() -> String {
    solution_starting_with("std::thread::sleep(std::time::Duration::from_secs(600));")
}

const REQUIRED_LABS: [&str; 5] = ["7.1", "7.2", "7.3", "7.4", "7.5"];

fn all_required_pass(screen: &str) -> bool {
    REQUIRED_LABS.iter().all(|lab| lab_shows(screen, lab, '✓'))
}

/// The skeleton graded: 7.1 fails, and the next step points at it.
/// The first whole frame: the terminal gets a frame in pieces, so the wait is for its last line (the
/// keys) as well as for the verdicts above it.
fn first_verdict(w: &mut Watch) -> String {
    w.wait_for(
        "the first verdict (7.1 ✗) and the keys",
        FIRST_GRADE,
        |s| {
            REQUIRED_LABS.iter().all(|lab| lab_shows(s, lab, '✗'))
                && s.contains("下一步：Lab 7.1")
                && s.contains("h 提示")
        },
    )
}

#[test]
fn a_save_regrades_h_shows_the_hint_and_q_quits() {
    let (_guard, dir) = practice();
    let mut w = Watch::start(&dir, &[]);
    let screen = first_verdict(&mut w);
    assert!(screen.contains("pi-course watch"), "{screen}");
    for lab in REQUIRED_LABS {
        assert!(lab_shows(&screen, lab, '✗'), "{lab} in\n{screen}");
    }
    // The first failing test's message: the skeleton's todo!() names its Lab.
    assert!(screen.contains("Lab 7.1"), "{screen}");
    assert!(screen.contains("h 提示"), "{screen}");

    w.press(b"h");
    let first_words: String = hint("7.1", "zh").chars().take(12).collect();
    w.wait_for("the hint for Lab 7.1", REGRADE, |s| {
        s.contains(&first_words)
    });

    fs::write(dir.join("src/agent_loop.rs"), solution()).unwrap();
    let screen = w.wait_for("every required Lab passing", REGRADE, all_required_pass);
    assert!(!screen.contains("下一步：Lab 7.1"), "{screen}");

    w.press(b"q");
    let status = w.wait_exit(QUIT);
    assert_eq!(status.code(), Some(0), "{}", w.transcript());
    w.assert_clean_exit();
}

#[test]
fn with_poll_a_save_is_noticed_without_file_events() {
    let (_guard, dir) = practice();
    let mut w = Watch::start(&dir, &["--poll", "--lang", "en"]);
    // The footer is drawn after the verdict: wait for the whole frame, not a part of it.
    let screen = w.wait_for(
        "the first verdict (7.1 ✗) and the footer",
        FIRST_GRADE,
        |s| lab_shows(s, "7.1", '✗') && s.contains("Next: Lab 7.1") && s.contains("polling"),
    );
    assert!(screen.contains("polling"), "{screen}");

    fs::write(dir.join("src/agent_loop.rs"), solution()).unwrap();
    w.wait_for("every required Lab passing", REGRADE, all_required_pass);

    w.press(b"q");
    assert_eq!(w.wait_exit(QUIT).code(), Some(0));
    w.assert_clean_exit();
}

#[test]
fn a_save_by_rename_is_noticed() {
    let (_guard, dir) = practice();
    let mut w = Watch::start(&dir, &[]);
    first_verdict(&mut w);

    // How many editors save: write a temporary file beside the original, then rename it over.
    let tmp = dir.join("src/.agent_loop.rs.tmp");
    fs::write(&tmp, solution()).unwrap();
    fs::rename(&tmp, dir.join("src/agent_loop.rs")).unwrap();
    w.wait_for("every required Lab passing", REGRADE, all_required_pass);

    w.press(b"q");
    assert_eq!(w.wait_exit(QUIT).code(), Some(0));
    w.assert_clean_exit();
}

#[test]
fn a_save_during_a_grade_queues_one_more() {
    let (_guard, dir) = practice();
    // The hanging loop's grade lasts at least this long once its tests run.
    let mut w = Watch::start(&dir, &["--timeout", "3"]);
    first_verdict(&mut w);

    fs::write(dir.join("src/agent_loop.rs"), hanging()).unwrap();
    w.wait_for("the tests running", REGRADE, |s| s.contains("运行测试 "));
    fs::write(dir.join("src/agent_loop.rs"), solution()).unwrap();
    w.wait_for("the queued grade", REGRADE, |s| s.contains("已排队"));
    // The running grade finishes with its timeouts, then the queued one grades the reference.
    w.wait_for("every required Lab passing", REGRADE, all_required_pass);
    let transcript = w.transcript();
    let is_row = |l: &&str, mark: char| {
        let l = l.strip_prefix('>').unwrap_or(l).trim();
        l.starts_with("7.1 ") && l.ends_with(mark)
    };
    let lines: Vec<&str> = transcript.lines().collect();
    // The hanging loop's verdict: its tests killed at the timeout (⏱), or judged on the hang the
    // driver saw (✗, and the first failing test's message says so in a plain sentence).
    let hung = lines
        .iter()
        .position(|l| is_row(l, '⏱') || l.contains("你的循环没有返回"));
    let passed = lines.iter().rposition(|l| is_row(l, '✓'));
    assert!(
        hung.is_some() && hung < passed,
        "the hanging grade's verdict was shown before the queued one's (✓)\n{transcript}"
    );

    w.press(b"q");
    assert_eq!(w.wait_exit(QUIT).code(), Some(0));
    w.assert_clean_exit();
}

#[test]
fn ctrl_c_during_a_grade_kills_it_and_restores_the_terminal() {
    let (_guard, dir) = practice();
    // A generous per-test timeout, so the grade below is surely still running when Ctrl-C comes.
    let mut w = Watch::start(&dir, &["--timeout", "120"]);
    first_verdict(&mut w);

    fs::write(dir.join("src/agent_loop.rs"), hanging()).unwrap();
    w.wait_for("the tests running", REGRADE, |s| s.contains("运行测试 "));
    // The test processes are up.
    let running = Instant::now();
    while w.session_processes().len() < 2 && running.elapsed() < REGRADE {
        std::thread::sleep(Duration::from_millis(50));
    }

    w.press(b"\x03");
    let status = w.wait_exit(QUIT);
    assert_eq!(status.code(), Some(130), "{}", w.transcript());
    w.assert_clean_exit();
}

#[test]
fn bad_input_is_refused_before_the_screen_is_taken() {
    let empty = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let run = |args: &[&str]| {
        pi_course(empty.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["watch", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("不是练习目录"), "{stderr}");
    assert!(stderr.contains("pi-course practice 07"), "{stderr}");

    let (_guard, dir) = practice();
    let out = run(&[
        "watch",
        dir.to_str().unwrap(),
        "--timeout",
        "0",
        "--lang",
        "en",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--timeout"),
        "{out:?}"
    );
}

/// A directory made in English is watched in English: the rows, the first failing test's message (its
/// Lab named, its todo!() quoted), the next step and the hint; nothing Chinese on the screen. The
/// message of a 7.2 test names Lab 7.2 once 7.1 is done.
#[test]
fn a_directory_made_in_english_is_watched_in_english() {
    let tmp = tempfile::Builder::new()
        .prefix("watch-en-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let out = support::run(tmp.path(), &["practice", "07", "p", "--lang", "en"]);
    assert!(out.status.success(), "{}", support::describe(&out));
    let dir = tmp.path().join("p");
    let cjk = |s: &str| {
        s.chars()
            .any(|c| matches!(c, '\u{3000}'..='\u{303f}' | '\u{3400}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}'))
    };
    let mut w = Watch::start(&dir, &[]);
    let screen = w.wait_for("the first verdict (7.1 ✗)", FIRST_GRADE, |s| {
        lab_shows(s, "7.1", '✗') && s.contains("Next: Lab 7.1")
    });
    assert!(
        screen.contains("Lab 7.1") && screen.contains("unfinished part"),
        "{screen}"
    );
    assert!(!cjk(&screen), "{screen}");

    w.press(b"h");
    let first_words: String = hint("7.1", "en").chars().take(30).collect();
    let screen = w.wait_for("the hint for Lab 7.1", REGRADE, |s| {
        s.contains(&first_words)
    });
    assert!(!cjk(&screen), "{screen}");

    // Lab 7.1 done (the reference's `snapshot`, `request` and plain stop): 7.2's message is its own todo.
    let staged = fs::read_to_string(dir.join("src/agent_loop.rs"))
        .unwrap()
        .replace(
            "fn snapshot(_options: &AgentLoopOptions) -> AgentContext {\n    todo!(\"Lab 7.1: clone the caller's context (system prompt and messages) once, under the lock; from then on change only that copy\")",
            "fn snapshot(options: &AgentLoopOptions) -> AgentContext {\n    options.context.lock().unwrap().clone()",
        );
    let start = staged.find("    async fn request(&mut self)").unwrap();
    let end = start + staged[start..].find("\n    }\n").unwrap();
    let mut staged = staged;
    staged.replace_range(
        start..end,
        "    async fn request(&mut self) -> AssistantMessage {
        self.steps += 1;
        let mut stream = self.options.model.stream(crate::model::ModelRequest {
            system_prompt: self.transcript.system_prompt.clone(),
            messages: self.transcript.messages.clone(),
            tools: self.options.tools.definitions(),
        });
        while let Some(event) = stream.next().await {
            self.emit(LoopEvent::ModelEvent(event));
        }
        let assistant = stream.result().await;
        self.transcript.messages.push(assistant.clone().into());
        self.emit(LoopEvent::AssistantMessage(assistant.clone()));
        assistant",
    );
    let staged = staged.replace(
        "(StopReason::Stop, true) => todo!(\"Lab 7.1: a plain-text stop: this run ends normally\"),",
        "(StopReason::Stop, true) => Some(RunReason::Stop),",
    );
    fs::write(dir.join("src/agent_loop.rs"), staged).unwrap();
    let screen = w.wait_for("Lab 7.1 passing", REGRADE, |s| {
        lab_shows(s, "7.1", '✓') && s.contains("Next: Lab 7.2")
    });
    assert!(screen.contains("Lab 7.2's unfinished part"), "{screen}");
    assert!(!cjk(&screen), "{screen}");

    w.press(b"q");
    let status = w.wait_exit(QUIT);
    assert_eq!(status.code(), Some(0), "{}", w.transcript());
    w.assert_clean_exit();
}

#[test]
fn started_in_a_folder_inside_a_practice_directory_it_watches_that_directory() {
    let (_guard, dir) = practice();
    let src = dir.join("src");
    let mut w = Watch::start_in(&src, None, &[]);
    first_verdict(&mut w);
    fs::write(src.join("agent_loop.rs"), solution()).unwrap();
    w.wait_for("every required Lab passing", REGRADE, all_required_pass);
    w.press(b"q");
    let status = w.wait_exit(QUIT);
    assert_eq!(status.code(), Some(0), "{}", w.transcript());
    w.assert_clean_exit();
}
