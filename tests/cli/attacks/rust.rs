//! Attacks on the grade, each a real malicious submission graded through the real practice-and-grade
//! path: the attack must fail, and the verdict must hold.
//!
//! These tests need the sandbox (Linux with Landlock). Where it is missing they fail, saying so, unless
//! `PI_COURSE_TESTS_ALLOW_UNSANDBOXED=1` is set: then each says it was skipped.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;
use serde_json::Value;

/// The skeleton with `statement` run first thing in `run_agent_loop`.
fn skeleton_starting_with(statement: &str) -> String {
    let signature = "pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {\n";
    let s = fs::read_to_string(chapter_dir().join("skeleton/src/agent_loop.rs")).unwrap();
    assert_eq!(s.matches(signature).count(), 1);
    s.replacen(signature, &format!("{signature}    {statement}\n"), 1)
}

/// The attack compiled and its tests ran (a report of `error` would prove nothing about the attack).
fn assert_ran(report: &Value) {
    assert_ne!(
        report["status"], "error",
        "the attack did not build: {report}"
    );
}

/// Every test of every group failed or timed out: nothing passed.
fn assert_nothing_passed(report: &Value) {
    for group in report["groups"].as_array().unwrap() {
        for test in group["tests"].as_array().unwrap() {
            assert_ne!(test["status"], "pass", "a test passed: {test}");
        }
        assert_ne!(group["status"], "pass", "a group passed: {group}");
    }
    assert_ne!(report["status"], "pass");
}

#[test]
fn printing_libtest_lines_and_exiting_forges_nothing() {
    let (_tmp, dir) = practice();
    write_loop(
        &dir,
        &skeleton_starting_with(
            r#"println!("\ntest result: ok. 1 passed;"); eprintln!("test result: ok."); std::process::exit(0);"#,
        ),
    );
    let (code, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report}");
    assert_nothing_passed(&report);
}

#[test]
fn printing_a_passing_line_for_every_test_forges_nothing() {
    let (_tmp, dir) = practice();
    write_loop(&dir, &solution());
    let (_, reference) = grade_json(&dir, &[]);
    let mut lines = String::new();
    for group in reference["groups"].as_array().unwrap() {
        for test in group["tests"].as_array().unwrap() {
            lines.push_str(&format!(
                "test {} ... ok\\n",
                test["name"].as_str().unwrap()
            ));
        }
    }
    let attack = format!(
        r#"print!("{lines}"); println!("test result: ok. 36 passed; 0 failed"); std::process::exit(0);"#
    );
    write_loop(&dir, &skeleton_starting_with(&attack));
    let (code, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1);
    assert_nothing_passed(&report);
}

/// The test executables and build records of every slot in the cache.
fn slot_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![cache().join("target")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ch07-") || n.starts_with(".pi-course"))
            {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_submission_cannot_poison_the_cache_for_later_grades() {
    let (_tmp, dir) = practice();
    // Make sure the slots hold built executables to poison.
    write_loop(&dir, &solution());
    grade_json(&dir, &[]);
    let targets = slot_files();
    assert!(!targets.is_empty(), "no test executable in the cache");
    let list = targets
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect::<Vec<_>>()
        .join(", ");
    let fake = "#!/bin/sh\\necho 'test result: ok. 1 passed;'\\n";
    let attack = format!(
        r#"for path in [{list}] {{ let _ = std::fs::write(path, "{fake}"); let _ = std::fs::remove_file(path); }}"#
    );
    write_loop(&dir, &solution_starting_with(&attack));
    let (_, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_ran(&report);
    // Another learner's untouched skeleton still fails everything, and an aborting loop too.
    let (_tmp2, other) = practice();
    let (code, report) = grade_json(&other, &[]);
    assert_eq!(code, 1);
    assert_nothing_passed(&report);
    write_loop(&other, &skeleton_starting_with("std::process::abort();"));
    let (code, report) = grade_json(&other, &[]);
    assert_eq!(code, 1);
    assert_nothing_passed(&report);
    // And the reference still passes.
    write_loop(&other, &solution());
    let (code, report) = grade_json(&other, &[]);
    assert_eq!(
        (code, report["status"].as_str()),
        (0, Some("pass")),
        "{report}"
    );
}

#[test]
fn planted_cargo_configuration_never_runs() {
    let (tmp, dir) = practice();
    let marker = tmp.path().join("wrapper-ran");
    let wrapper = tmp.path().join("wrapper.sh");
    fs::write(
        &wrapper,
        format!("#!/bin/sh\ntouch {}\nexec \"$@\"\n", marker.display()),
    )
    .unwrap();
    let config = format!(
        "[build]\nrustc-wrapper = {:?}\n",
        wrapper.display().to_string()
    );
    let planted: Vec<PathBuf> = [
        cache().join(".cargo"),
        cache().join("work/.cargo"),
        cache().join("target/.cargo"),
    ]
    .to_vec();
    let attack = planted
        .iter()
        .map(|d| {
            format!(
                r#"let _ = std::fs::create_dir_all({d:?}); let _ = std::fs::write({f:?}, {config:?});"#,
                d = d.display().to_string(),
                f = d.join("config.toml").display().to_string()
            )
        })
        .collect::<String>();
    write_loop(&dir, &solution_starting_with(&attack));
    let (_, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_ran(&report);
    for d in &planted {
        assert!(!d.exists(), "{} was planted", d.display());
    }
    // A later build (an edit forces one) never runs the wrapper.
    write_loop(&dir, &format!("{}\n// edited\n", solution()));
    let (code, report) = grade_json(&dir, &[]);
    assert_eq!(code, 0, "{report}");
    assert!(!marker.exists(), "the planted rustc-wrapper ran");
}

#[test]
fn a_submission_cannot_compile_another_slots_loop() {
    let (_tmp, dir) = practice();
    write_loop(&dir, &solution());
    let (code, _) = grade_json(&dir, &[]);
    assert_eq!(code, 0);
    let work = fs::read_dir(cache().join("work"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with("07-"))
        .expect("a build key for chapter 07");
    for slot in 0..2 {
        let absolute = work.join(format!("slot-{slot}/src/agent_loop.rs"));
        for path in [
            absolute.display().to_string(),
            format!("../../slot-{slot}/src/agent_loop.rs"),
        ] {
            let (_tmp2, other) = practice();
            write_loop(
                &other,
                &format!("#[path = {path:?}]\nmod other;\npub use other::*;\n"),
            );
            let (code, report) = grade_json(&other, &[]);
            if !sandboxed(&report) {
                return;
            }
            assert_eq!(code, 1, "{path}: {report}");
            assert_nothing_passed(&report);
            let message = report["message"].as_str().unwrap();
            assert!(
                message.contains("Permission denied") || message.contains("slot-"),
                "{path}: the build must fail on reading the other slot: {message}"
            );
        }
    }
}

/// A fake home with a secret in it; the grader runs with it as HOME (the toolchain stays where it is).
struct Home {
    _dir: tempfile::TempDir,
    path: PathBuf,
    secret: PathBuf,
}

const SECRET: &str = "SECRET-CONTENT-7f3a9c";

fn home() -> Home {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().to_path_buf();
    let secret = path.join("secret.txt");
    fs::write(&secret, SECRET).unwrap();
    Home {
        _dir: dir,
        path,
        secret,
    }
}

/// `grade` in every format with HOME set to `home`, as one text.
fn reports_with_home(dir: &Path, home: &Home) -> (Value, String) {
    let real_home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    let junit = home.path.join("report.xml");
    let run = |args: &[&str]| {
        pi_course(dir)
            .env("HOME", &home.path)
            .env("CARGO_HOME", &cargo_home)
            .env("RUSTUP_HOME", &rustup_home)
            .arg("grade")
            .arg(dir)
            .args(args)
            .output()
            .unwrap()
    };
    let human = run(&["--junit", junit.to_str().unwrap()]);
    let json = run(&["--format", "json"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    let text = format!(
        "{}{}{}{}{}",
        stdout(&human),
        stderr(&human),
        stdout(&json),
        stderr(&json),
        fs::read_to_string(&junit).unwrap_or_default()
    );
    (report, text)
}

#[test]
fn a_file_in_the_home_is_unreadable_at_compile_time() {
    let home = home();
    let (_tmp, dir) = practice();
    let secret = home.secret.display().to_string();
    write_loop(
        &dir,
        // After the file's inner doc comments, which must come first: the read is the only error.
        &format!(
            "{}\nconst LEAK: &str = include_str!({secret:?});\n",
            solution_starting_with(r#"panic!("LEAK {LEAK}");"#)
        ),
    );
    let (report, text) = reports_with_home(&dir, &home);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(report["status"], "error", "{report}");
    assert!(!text.contains(SECRET), "the secret leaked:\n{text}");
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("secret.txt") && message.contains("Permission denied"),
        "rustc's error names the file it could not read:\n{message}"
    );
}

#[test]
fn the_home_the_grader_and_proc_are_unreadable_at_run_time() {
    let home = home();
    let (_tmp, dir) = practice();
    let attack = format!(
        r#"let leak = [std::fs::read_to_string({:?}), std::fs::read_to_string("/proc/self/cmdline"), std::fs::read_to_string("/proc/1/environ"), std::fs::read_to_string(format!("/proc/{{}}/cmdline", std::os::unix::process::parent_id()))]; panic!("LEAK {{leak:?}}");"#,
        home.secret.display().to_string()
    );
    write_loop(&dir, &solution_starting_with(&attack));
    let (report, text) = reports_with_home(&dir, &home);
    if !sandboxed(&report) {
        return;
    }
    assert!(text.contains("LEAK"), "the attack ran:\n{text}");
    assert!(!text.contains(SECRET), "the secret leaked:\n{text}");
    assert!(
        !text.contains("--format"),
        "the grader's command line leaked:\n{text}"
    );
    assert!(text.contains("Permission denied"), "{text}");
}

#[test]
fn writes_outside_the_scratch_directory_never_happen() {
    let home = home();
    let (tmp, dir) = practice();
    let targets = [
        home.path.join("written"),
        std::env::temp_dir().join(format!("pi-course-attack-{}", std::process::id())),
        dir.join("written"),
        dir.join("src/agent_loop.rs"),
        tmp.path().join("written"),
    ];
    let attack = targets
        .iter()
        .map(|t| {
            format!(
                r#"let _ = std::fs::write({:?}, "// nothing to see here");"#,
                t.display().to_string()
            )
        })
        .collect::<String>();
    let code = solution_starting_with(&attack);
    write_loop(&dir, &code);
    let before = files(&dir);
    let (report, _) = reports_with_home(&dir, &home);
    if !sandboxed(&report) {
        return;
    }
    assert_ran(&report);
    for t in &targets[..3] {
        assert!(!t.exists(), "{} was written", t.display());
    }
    assert!(!targets[4].exists());
    assert_eq!(
        fs::read_to_string(dir.join("src/agent_loop.rs")).unwrap(),
        code
    );
    // The only change in the practice directory is the grade's own record.
    let after = files(&dir);
    let changed: Vec<&PathBuf> = after
        .keys()
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    assert!(
        changed.iter().all(|p| p.starts_with(".pi-course")),
        "{changed:?}"
    );
}

#[test]
fn a_tcp_connection_to_a_local_listener_never_arrives() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (_tmp, dir) = practice();
    let attack = format!(
        r#"let c = std::net::TcpStream::connect(("127.0.0.1", {port})); let u = std::net::UdpSocket::bind("127.0.0.1:0"); panic!("NET {{c:?}} {{u:?}}");"#
    );
    write_loop(&dir, &solution_starting_with(&attack));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert!(
        listener.accept().is_err(),
        "a connection arrived from the graded code"
    );
    let message = report["groups"][0]["tests"][0]["message"].as_str().unwrap();
    assert!(message.contains("NET Err"), "{message}");
}

#[test]
fn spawned_processes_never_start_and_none_survive() {
    let (_tmp, dir) = practice();
    let attack = r#"use std::os::unix::process::CommandExt; let c = std::process::Command::new("sleep").arg("301.5").process_group(0).spawn(); let t = std::thread::spawn(|| 2).join(); let e = std::process::Command::new("/usr/bin/sleep").arg("301.5").exec(); panic!("SPAWN {c:?} THREAD {t:?} EXEC {e:?}");"#;
    write_loop(&dir, &solution_starting_with(attack));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    let message = report["groups"][0]["tests"][0]["message"].as_str().unwrap();
    assert!(message.contains("SPAWN Err"), "{message}");
    assert!(
        message.contains("THREAD Ok(2)"),
        "threads are fine: {message}"
    );
    assert_none_left(Duration::from_secs(2), || {
        processes()
            .into_iter()
            .filter(|p| p.args.contains("301.5"))
            .collect()
    });
}

#[test]
fn a_memory_bomb_gets_the_memory_limit_verdict() {
    let (_tmp, dir) = practice();
    // Reserved, not filled: the limit bounds the address space for data, and a bomb that first fills
    // its pages would race the driver's hang watch (1.2 s without a step) on a loaded machine.
    let attack = r#"let mut hog: Vec<Vec<u8>> = Vec::new(); loop { hog.push(Vec::with_capacity(64 << 20)); }"#;
    write_loop(&dir, &solution_starting_with(attack));
    let (code, report) = grade_json(&dir, &["--group", "7.1", "--memory-limit", "256M"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1);
    let test = &report["groups"][0]["tests"][0];
    let message = test["message"].as_str().unwrap();
    assert!(message.contains("256 MiB"), "{message}");
    assert_nothing_passed(&report);
}

#[test]
fn an_endless_constant_evaluation_is_stopped_at_the_build_timeout() {
    let (_tmp, dir) = practice();
    let code = format!(
        "#[allow(long_running_const_eval)]\nconst FOREVER: u64 = {{ let mut i: u64 = 0; loop {{ i = i.wrapping_add(1); if i == u64::MAX {{ break i; }} }} }};\n{}",
        solution_starting_with("let _ = FOREVER;")
    );
    write_loop(&dir, &code);
    let started = Instant::now();
    let (status, report) = grade_json(&dir, &["--build-timeout", "5"]);
    let took = started.elapsed();
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(status, 1, "{report}");
    assert_eq!(report["status"], "error");
    assert!(
        report["message"].as_str().unwrap().contains("超过了 5 秒"),
        "{report}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
    // No compiler is left evaluating it.
    assert_none_left(Duration::from_secs(2), || {
        processes()
            .into_iter()
            .filter(|p| p.args.contains("rustc") && p.args.contains(dir.to_str().unwrap()))
            .collect()
    });
}

/// `grade` must answer at once, with exit 2, for an editable file that is not one.
fn assert_bad_input_at_once(dir: &Path, what: &str) {
    let started = Instant::now();
    let mut child = pi_course(dir)
        .args(["grade", "."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            assert_eq!(status.code(), Some(2), "{what}: {err}");
            assert!(err.contains("src/agent_loop.rs"), "{what}: {err}");
            break;
        }
        if started.elapsed() > Duration::from_secs(3) {
            let _ = child.kill();
            panic!("{what}: grade did not answer within 3 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{what}: took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_fifo_a_device_and_a_huge_file_are_bad_input_at_once() {
    let (_tmp, dir) = practice();
    let editable = dir.join("src/agent_loop.rs");

    fs::remove_file(&editable).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&editable)
        .status()
        .unwrap();
    assert!(status.success());
    assert_bad_input_at_once(&dir, "a FIFO");

    fs::remove_file(&editable).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &editable).unwrap();
    assert_bad_input_at_once(&dir, "a symlink to /dev/zero");

    fs::remove_file(&editable).unwrap();
    fs::write(&editable, vec![b'/'; 2 << 20]).unwrap();
    assert_bad_input_at_once(&dir, "a 2 MiB file");
}

#[test]
fn killing_the_grader_kills_its_test_processes() {
    let (_tmp, dir) = practice();
    write_loop(
        &dir,
        &solution_starting_with("loop { std::hint::spin_loop(); }"),
    );
    // Build first, so the grade below reaches its tests quickly.
    let mut child = pi_course(&dir)
        .args(["grade", ".", "--timeout", "60", "--format", "json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let is_test = |p: &Proc| p.args.contains("/deps/ch07-");
    let started = Instant::now();
    while !processes()
        .iter()
        .any(|p| is_test(p) && p.ppid == child.id() as i32)
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no test process started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let tests: Vec<i32> = processes()
        .into_iter()
        .filter(|p| is_test(p) && p.ppid == child.id() as i32)
        .map(|p| p.pid)
        .collect();
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    assert_none_left(Duration::from_secs(2), || {
        processes()
            .into_iter()
            .filter(|p| tests.contains(&p.pid) && !p.zombie)
            .collect()
    });
}

#[test]
fn without_landlock_the_grade_says_so_and_require_refuses() {
    let (_tmp, dir) = practice();
    let out = pi_course(&dir)
        .env("PI_COURSE_SANDBOX_PRETEND_MISSING", "1")
        .args(["grade", ".", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sandbox"]["active"], false, "{report}");
    assert!(report["sandbox"]["reason"]
        .as_str()
        .unwrap()
        .contains("Landlock"));
    assert!(report["sandbox"]["layers"]
        .as_array()
        .unwrap()
        .contains(&Value::from("verdict-channel")));

    let out = pi_course(&dir)
        .env("PI_COURSE_SANDBOX_PRETEND_MISSING", "1")
        .args(["grade", ".", "--sandbox", "require"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(stderr(&out).contains("Landlock"), "{}", describe(&out));
    // The human report says it in one line.
    let out = pi_course(&dir)
        .env("PI_COURSE_SANDBOX_PRETEND_MISSING", "1")
        .args(["grade", "."])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("未隔离"), "{}", describe(&out));
    let out = pi_course(&dir).args(["grade", "."]).output().unwrap();
    assert!(stdout(&out).contains("已隔离"), "{}", describe(&out));
}

/// `pi-course grade DIR --format json ARGS` for bad input: exit 2 and the one error document on stdout.
/// Returns the document and everything the command wrote.
fn refused(dir: &Path, args: &[&str]) -> (Value, String) {
    let out = grade(dir, &[&["--format", "json"], args].concat());
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", describe(&out)));
    assert_eq!(doc["status"], "error", "{doc:#}");
    (doc, describe(&out))
}

#[test]
fn a_linked_loop_or_source_directory_is_bad_input_and_never_read() {
    let (tmp, dir) = practice();
    // What the links point at: a classmate's loop that earns every point, and a file of the instructor's
    // whose first line rustc would quote in a compile error.
    let classmate = practice_at(tmp.path(), "classmate");
    write_loop(&classmate, &solution());
    let (code, report) = grade_json(&classmate, &[]);
    assert_eq!(
        (code, report["score"].as_f64()),
        (0, Some(100.0)),
        "{report:#}"
    );
    let record = classmate.join(".pi-course/last-grade.json");
    let classmates_record = fs::read(&record).unwrap();
    let secret = tmp.path().join("instructor-notes.txt");
    fs::write(&secret, format!("{SECRET} is the first line\n")).unwrap();
    let editable = dir.join("src/agent_loop.rs");
    let skeleton = fs::read(&editable).unwrap();

    let link = |target: &Path, at: &Path| {
        if at.is_dir() && !at.is_symlink() {
            fs::rename(at, at.with_extension("real")).unwrap();
        } else {
            let _ = fs::remove_file(at);
        }
        std::os::unix::fs::symlink(target, at).unwrap();
    };
    let restore = |at: &Path| {
        fs::remove_file(at).unwrap();
        let real = at.with_extension("real");
        if real.exists() {
            fs::rename(real, at).unwrap();
        } else {
            fs::write(at, &skeleton).unwrap();
        }
    };
    let cases: [(&str, PathBuf, PathBuf); 5] = [
        (
            "the loop, to a classmate's",
            classmate.join("src/agent_loop.rs"),
            editable.clone(),
        ),
        (
            "the loop, relative",
            PathBuf::from("../../classmate/src/agent_loop.rs"),
            editable.clone(),
        ),
        (
            "the loop, to an instructor's file",
            secret.clone(),
            editable.clone(),
        ),
        (
            "src, to a classmate's",
            classmate.join("src"),
            dir.join("src"),
        ),
        (
            ".pi-course, to a classmate's",
            classmate.join(".pi-course"),
            dir.join(".pi-course"),
        ),
    ];
    for (what, target, at) in &cases {
        link(target, at);
        // The link leads where the attack wants: reading through it gives the classmate's loop or the
        // instructor's file.
        assert!(at.exists(), "{what}: the link resolves");
        let (doc, all) = refused(&dir, &[]);
        let message = doc["message"].as_str().unwrap();
        assert!(message.contains("符号链接"), "{what}: {message}");
        assert!(!all.contains(SECRET), "{what}: the secret leaked\n{all}");
        // In a person's words too, on stderr.
        let human = grade(&dir, &["--lang", "en"]);
        assert_eq!(human.status.code(), Some(2), "{what}: {}", describe(&human));
        assert!(
            stderr(&human).contains("symbolic link"),
            "{what}: {}",
            describe(&human)
        );
        restore(at);
    }
    assert_eq!(
        fs::read(&record).unwrap(),
        classmates_record,
        "the classmate's record was written"
    );
    // Without the links, the directory grades as before.
    let (code, report) = grade_json(&dir, &["--group", "7.1"]);
    assert_eq!(
        (code, report["status"].as_str()),
        (1, Some("fail")),
        "{report:#}"
    );
}

#[test]
fn huge_panic_messages_and_floods_of_output_give_bounded_reports() {
    let (tmp, dir) = practice();
    write_loop(&dir, &skeleton_starting_with(FLOOD));
    let junit = tmp.path().join("report.xml");
    let mut command = pi_course(&dir);
    // A generous timeout: the attack is about size, and a test that formats and sends 8 MiB takes a
    // while in a debug build on a busy machine.
    command
        .args([
            "grade",
            ".",
            "--format",
            "json",
            "--lang",
            "en",
            "--timeout",
            "30",
            "--junit",
        ])
        .arg(&junit);
    let (out, peak_kib) = output_and_peak_kib(command);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", describe(&out)));
    assert_schema(&report);
    if !sandboxed(&report) {
        return;
    }
    // The attack ran: its panic reached the grader (a test that took longer to print and panic than
    // the driver's hang watch allows is judged hung instead), each string of its step cut to 64 KiB as
    // the grader read it, and the evidence kept no more.
    let tests = report_tests(&report);
    assert!(tests.len() > 20, "{report:#}");
    let panics = panic_texts(&dir);
    assert!(
        panics.iter().any(|p| p.starts_with("FLOOD-PREFIX xxx")),
        "the flood's panic arrived: {panics:.300?}"
    );
    for panic in &panics {
        assert!(
            panic.len() < 80 << 10,
            "a panic kept whole: {} bytes",
            panic.len()
        );
    }
    // Every test failed, with a message that quotes at most the panic's start.
    for (_, test) in &tests {
        assert_eq!(test["status"], "fail", "{test:.300}");
        let message = test["message"].as_str().unwrap_or_default();
        assert!(
            message.len() <= 16 << 10,
            "{} bytes: {message:.300}",
            message.len()
        );
    }
    let json_bytes = out.stdout.len();
    let junit_bytes = fs::metadata(&junit).unwrap().len();
    eprintln!("report sizes: JSON {json_bytes} bytes, JUnit {junit_bytes} bytes; grader peak ≥ {peak_kib} KiB");
    assert!(json_bytes < 2_000_000, "JSON report of {json_bytes} bytes");
    assert!(
        junit_bytes < 2_000_000,
        "JUnit report of {junit_bytes} bytes"
    );
    roxmltree::Document::parse(&fs::read_to_string(&junit).unwrap()).unwrap();
    // The grader never held the messages whole (36 of 8 MiB are 288 MiB).
    assert!(peak_kib < 150 << 10, "the grader reached {peak_kib} KiB");
}

/// A loop that emits a million progress events, and one that emits a 50 MB payload, before it does
/// anything else: the driver records every one, and the grader must still come to a clear verdict
/// while holding no more than its bounds (4,000 steps, 4 MiB, 64 KiB per string).
const MILLION_EVENTS: &str = r#"for _ in 0..1_000_000 { (options.on_event)(LoopEvent::ToolProgress { call_id: "MILLION-EVENTS".into(), content: Vec::new() }); }"#;
const HUGE_PAYLOAD: &str = r#"(options.on_event)(LoopEvent::ToolProgress { call_id: format!("HUGE-PAYLOAD{}", "x".repeat(50_000_000)), content: Vec::new() });"#;

#[test]
fn a_million_events_or_a_50_mb_payload_get_a_clear_verdict_and_a_small_grader() {
    let (_tmp, dir) = practice();
    for (attack, statement) in [
        ("MILLION-EVENTS", MILLION_EVENTS),
        ("HUGE-PAYLOAD", HUGE_PAYLOAD),
    ] {
        write_loop(&dir, &solution_starting_with(statement));
        let mut command = pi_course(&dir);
        command.args([
            "grade",
            ".",
            "--format",
            "json",
            "--lang",
            "en",
            "--group",
            "7.1",
            "--timeout",
            "60",
        ]);
        let (out, peak_kib) = output_and_peak_kib(command);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{attack}: one JSON document ({e}): {}", describe(&out)));
        assert_schema(&report);
        if !sandboxed(&report) {
            return;
        }
        // The attack ran: its first event is the step where every test with an event sink left the
        // rules (a run without one drops the events, as the chapter's default sink does, and passes).
        let tests = report_tests(&report);
        let failed: Vec<&Value> = tests
            .iter()
            .map(|(_, t)| *t)
            .filter(|t| t["status"] != "pass")
            .collect();
        assert!(failed.len() * 2 > tests.len(), "{attack}: {report:#}");
        assert_eq!(report["status"], "fail", "{attack}: {report:#}");
        for test in failed {
            assert_eq!(test["status"], "fail", "{attack}: {test:.600}");
            let message = test["message"].as_str().unwrap_or_default();
            // A driver may record a step past its own bound as the trace's overflow, or judge a loop
            // that spends a second building one event hung (said in one plain sentence). The reference
            // passes every test, so any failure at step 1 is the attack's.
            let left = message.starts_with("step 1 left the chapter's rules");
            assert!(
                (left && message.contains(&format!("happened: tool_progress({attack}")))
                    || (attack == "HUGE-PAYLOAD"
                        && ((left && message.contains("happened: overflow"))
                            || message.starts_with("step 1: your loop did not return"))),
                "{attack}: {message:.600}"
            );
        }
        eprintln!("{attack}: grader peak ≥ {peak_kib} KiB");
        assert!(
            peak_kib < 150 << 10,
            "{attack}: the grader reached {peak_kib} KiB"
        );
    }
}

#[test]
fn any_character_in_a_panic_message_keeps_the_junit_report_valid_xml() {
    let (tmp, dir) = practice();
    write_loop(
        &dir,
        &skeleton_starting_with(
            r#"panic!("XML-ATTACK \u{1}\u{8}\u{b}\u{c}\u{1b}[31m \u{FFFE}\u{FFFF} <![CDATA[ ]]> &amp; \u{0} end");"#,
        ),
    );
    let junit = tmp.path().join("report.xml");
    let (_, report) = grade_json(
        &dir,
        &["--group", "7.1", "--junit", junit.to_str().unwrap()],
    );
    if !sandboxed(&report) {
        return;
    }
    let message = report["groups"][0]["tests"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("XML-ATTACK") && message.contains("\u{c} \u{FFFE}\u{FFFF}"),
        "the message reached the report: {message:?}"
    );
    let xml = fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    let text = failure.text().unwrap_or_default();
    assert!(
        text.contains("XML-ATTACK") && text.contains("<![CDATA[ ]]> &amp;") && text.contains("end"),
        "{text:?}"
    );
}

/// Runs the real `pi-course` with every capability dropped (as root: root without its privileges, whom
/// file permissions bind like anyone else), or as it is when this is not root anyway.
fn pi_course_without_capabilities(cwd: &Path) -> std::process::Command {
    if !is_root() {
        return pi_course(cwd);
    }
    let drop_all = [
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--bounding-set=-all",
        "--",
    ];
    // The command drops them for real on this machine.
    let probe = std::process::Command::new("setpriv")
        .args(drop_all)
        .args(["grep", "CapEff", "/proc/self/status"])
        .output()
        .expect("setpriv (util-linux)");
    assert!(
        String::from_utf8_lossy(&probe.stdout).contains("0000000000000000"),
        "{probe:?}"
    );
    let plain = pi_course(cwd);
    let mut command = std::process::Command::new("setpriv");
    command.args(drop_all).arg(plain.get_program());
    command.current_dir(cwd);
    for (key, value) in plain.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
}

#[test]
fn scratch_directories_go_whatever_their_depth_or_modes() {
    let attack = r#"let deep = std::fs::create_dir_all("d/".repeat(1100)); let locked = { use std::os::unix::fs::PermissionsExt; std::fs::create_dir_all("locked/inner").and_then(|_| std::fs::write("locked/inner/f", "x")).and_then(|_| std::fs::set_permissions("locked/inner", std::fs::Permissions::from_mode(0))).and_then(|_| std::fs::set_permissions("locked", std::fs::Permissions::from_mode(0))).and_then(|_| std::fs::set_permissions(".", std::fs::Permissions::from_mode(0o500))) }; panic!("SCRATCH deep={deep:?} locked={locked:?}");"#;
    let (tmp, dir) = practice();
    write_loop(&dir, &skeleton_starting_with(attack));
    for privileged in [true, false] {
        let scratch = tmp.path().join(format!("tmp-{privileged}"));
        fs::create_dir(&scratch).unwrap();
        let mut command = if privileged {
            pi_course(&dir)
        } else {
            pi_course_without_capabilities(&dir)
        };
        let out = command
            .args(["grade", ".", "--group", "7.1", "--format", "json"])
            .env("TMPDIR", &scratch)
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", describe(&out)));
        if !sandboxed(&report) {
            return;
        }
        let messages: Vec<String> = report_tests(&report)
            .iter()
            .map(|(_, t)| t["message"].as_str().unwrap_or_default().to_string())
            .collect();
        assert!(
            messages
                .iter()
                .any(|m| m.contains("SCRATCH deep=Ok(()) locked=Ok(())")),
            "privileged {privileged}: the attack ran: {messages:#?}"
        );
        assert_eq!(
            names(&scratch),
            Vec::<String>::new(),
            "privileged {privileged}: a scratch directory was left"
        );
    }
}

#[test]
fn learner_code_has_no_capability_even_when_graded_as_root() {
    let (_tmp, dir) = practice();
    let attack = r#"let made = std::fs::write("owned", "x"); let chown = std::os::unix::fs::chown("owned", Some(4242), Some(4242)); let chroot = std::os::unix::fs::chroot("."); let socket = std::os::unix::net::UnixListener::bind("socket").map(|_| ()); let setuid = { use std::os::unix::fs::PermissionsExt; std::fs::set_permissions("owned", std::fs::Permissions::from_mode(0o6755)).and_then(|_| std::fs::metadata("owned")).map(|m| format!("{:o}", m.permissions().mode())) }; panic!("PRIVILEGE made={made:?} chown={chown:?} chroot={chroot:?} socket={socket:?} setuid={setuid:?}");"#;
    write_loop(&dir, &skeleton_starting_with(attack));
    let (_, report) = grade_json(&dir, &["--group", "7.1", "--lang", "en"]);
    if !sandboxed(&report) {
        return;
    }
    // The verdict's message quotes the panic's start; the trace the grader kept holds all of it.
    let message = &panic_texts(&dir)[0];
    eprintln!("graded as root: {}; {message}", is_root());
    assert!(message.contains("PRIVILEGE made=Ok(())"), "{message}");
    // Giving a file away needs CAP_CHOWN; changing the root directory, CAP_SYS_CHROOT.
    assert!(message.contains("chown=Err"), "{message}");
    assert!(message.contains("chroot=Err"), "{message}");
    assert!(message.contains("Operation not permitted"), "{message}");
    // What any user may do in a directory of their own still works: no privilege is needed, and none
    // comes of it (a set-user-id bit means nothing without exec, and nothing may be executed there).
    assert!(message.contains("socket=Ok(())"), "{message}");
    assert!(message.contains("setuid=Ok(\"106755\")"), "{message}");
}

/// The text of every panic the last grade's failing tests recorded, in the order of its evidence
/// (`.pi-course/last-traces.json`): whole, where a verdict's message quotes only its start.
fn panic_texts(dir: &Path) -> Vec<String> {
    let text = fs::read_to_string(dir.join(".pi-course/last-traces.json")).unwrap();
    let last: Value = serde_json::from_str(&text).unwrap();
    let steps = last["tests"].as_array().unwrap().iter();
    let steps = steps.flat_map(|t| t["trace"].as_array().unwrap().clone());
    steps
        .filter(|s| s["kind"] == "panic")
        .map(|s| s["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Grades `code` (group 7.1) and returns its report, each test checked to have failed with a message of
/// its own; `ran` must appear in a message, so the attack ran.
fn grade_attack(dir: &Path, code: &str, ran: &str) -> Option<Value> {
    write_loop(dir, code);
    let (code, report) = grade_json(dir, &["--group", "7.1", "--lang", "en"]);
    if !sandboxed(&report) {
        return None;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_nothing_passed(&report);
    let tests = report_tests(&report);
    assert!(!tests.is_empty());
    for (_, test) in &tests {
        assert_eq!(test["status"], "fail", "{test:#}");
        assert!(test["message"].is_string(), "{test:#}");
    }
    assert!(
        tests
            .iter()
            .any(|(_, t)| t["message"].as_str().unwrap().contains(ran)),
        "the attack did not run: {report:#}"
    );
    Some(report)
}

#[test]
fn panics_in_drop_panic_hooks_and_aborts_each_get_their_own_verdict() {
    let (_tmp, dir) = practice();
    // A destructor that panics while a panic unwinds: the runtime aborts the process.
    let drop_bomb = skeleton_starting_with(
        r#"struct Bomb; impl Drop for Bomb { fn drop(&mut self) { panic!("DROP-BOMB") } } let _bomb = Bomb; panic!("FIRST-PANIC");"#,
    );
    let Some(report) = grade_attack(&dir, &drop_bomb, "non-unwinding panic") else {
        return;
    };
    assert!(report.to_string().contains("SIGABRT"), "{report:#}");

    // A panic hook of the learner's that prints passing lines and exits 0 in the middle of a panic.
    let hook_exit = skeleton_starting_with(
        r#"std::panic::set_hook(Box::new(|_| { println!("test plain_stop::x ... ok\ntest result: ok. 1 passed;"); std::process::exit(0); })); panic!("HOOKED");"#,
    );
    let report = grade_attack(&dir, &hook_exit, "test result: ok. 1 passed;").unwrap();
    assert!(report.to_string().contains("code 0"), "{report:#}");

    // A hook that aborts.
    let hook_abort = skeleton_starting_with(
        r#"std::panic::set_hook(Box::new(|_| { eprintln!("HOOK-ABORTS"); std::process::abort(); })); panic!("HOOKED");"#,
    );
    grade_attack(&dir, &hook_abort, "HOOK-ABORTS").unwrap();

    // The reference, aborting as it returns its (right) result, before any test can check it.
    let abort_at_end = solution_starting_with(
        r#"struct AbortAtEnd; impl Drop for AbortAtEnd { fn drop(&mut self) { eprintln!("ABORT-AT-END"); std::process::abort(); } } let _at_end = AbortAtEnd;"#,
    );
    let report = grade_attack(&dir, &abort_at_end, "ABORT-AT-END").unwrap();
    assert!(report.to_string().contains("SIGABRT"), "{report:#}");
}

// ---------------------------------------------------------------------------------------------------
// Forged traces: code that holds the key and the channel (docs/SECURITY.md, "Forged traces")
// ---------------------------------------------------------------------------------------------------

/// The answers a forger can know, as a forger carries them: one line per step, `test\tstep` (the step as
/// JSON), each test's steps together and in order. Each test's steps are the trace its expected graph
/// asks for: its first alternative's steps in order, every freedom filled in. `file` is an
/// `expected.json` (tests with `group` and `name`) or a `last-traces.json` (full `name`); `only` keeps
/// the tests whose name starts with one of its prefixes.
fn answer_lines(file: &Value, only: &[&str]) -> String {
    let mut lines = String::new();
    for test in file["tests"].as_array().unwrap() {
        let name = test["name"].as_str().unwrap();
        let name = match test["group"].as_str() {
            Some(group) => format!("{}::{name}", group.replace('-', "_")),
            None => name.to_string(),
        };
        if !only.iter().any(|prefix| name.starts_with(prefix)) {
            continue;
        }
        // A test of several instances: each one's steps after its mark, as the harness writes them.
        let expected = &test["expected"];
        let runs: Vec<(Option<usize>, &Value)> = match expected["runs"].as_array() {
            Some(runs) => runs.iter().enumerate().map(|(i, r)| (Some(i), r)).collect(),
            None => vec![(None, expected)],
        };
        for (index, run) in runs {
            if let Some(index) = index {
                let mark = serde_json::json!({"kind": "instance", "index": index});
                lines.push_str(&format!("{name}\t{mark}\n"));
            }
            let mut bound = std::collections::HashMap::new();
            let steps = run["alternatives"][0]["steps"].as_array().unwrap();
            for step in steps.iter().filter_map(|s| fill(&s["match"], &mut bound)) {
                lines.push_str(&format!("{name}\t{step}\n"));
            }
        }
    }
    lines
}

/// A value `pattern` matches (docs/JUDGE.md, its `$` nodes); `None` where it allows a missing key.
fn fill(pattern: &Value, bound: &mut std::collections::HashMap<String, Value>) -> Option<Value> {
    let node = match pattern {
        Value::Array(items) => {
            let items = items.iter().map(|v| fill(v, bound).unwrap_or(Value::Null));
            return Some(Value::Array(items.collect()));
        }
        Value::Object(node) => node,
        other => return Some(other.clone()),
    };
    if node.contains_key("$any") || node.contains_key("$absent_or") {
        return None;
    }
    if node.contains_key("$text") {
        return Some("forged".into());
    }
    if let Some(carried) = node.get("$carries") {
        return Some(carried.clone());
    }
    if let Some(first) = node.get("$one_of").and_then(|o| o.get(0)) {
        return Some(first.clone());
    }
    if let Some(name) = node.get("$bind").and_then(Value::as_str) {
        if let Some(value) = bound.get(name) {
            return Some(value.clone());
        }
        let value = fill(&node["$match"], bound)?;
        bound.insert(name.to_string(), value.clone());
        return Some(value);
    }
    let fields = node
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), fill(v, bound)?)));
    Some(Value::Object(fields.collect()))
}

/// The practice directory's `expected.json`.
fn fixed(dir: &Path) -> Value {
    let text = fs::read_to_string(dir.join("tests/ch07/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every test of chapter 07 (the prefix of every test name).
const ALL: &[&str] = &[""];

/// The most answers a forger can carry: its file must stay under the grader's 1 MiB limit.
const CARRIED_BYTES: usize = 900 << 10;

/// The answers of `file` for as many of its tests, in order, as a forger's file can carry.
fn answers_that_fit(file: &Value) -> String {
    let mut carried = String::new();
    for test in file["tests"].as_array().unwrap() {
        let one = serde_json::json!({ "tests": [test] });
        let lines = answer_lines(&one, ALL);
        if carried.len() + lines.len() > CARRIED_BYTES {
            break;
        }
        carried.push_str(&lines);
    }
    carried
}

/// The forger's side: `answers` as Rust (the lines of [`answer_lines`]) and the records it makes of them.
fn carried(answers: &str) -> String {
    assert!(!answers.contains("\"####"));
    format!(
        r#####"
/// The answers this forger carries: `test\tstep` lines.
const ANSWERS: &str = r####"{answers}"####;

mod records {{
    /// Each test of `answers` with its steps, in order.
    pub fn tests(answers: &str) -> Vec<(&str, Vec<&str>)> {{
        let mut tests: Vec<(&str, Vec<&str>)> = Vec::new();
        for (test, step) in answers.lines().filter_map(|l| l.split_once('\t')) {{
            match tests.last_mut() {{
                Some((last, steps)) if *last == test => steps.push(step),
                _ => tests.push((test, vec![step])),
            }}
        }}
        tests
    }}

    /// One record, as the harness would write it (test names need no escaping).
    pub fn record(key: &str, event: &str, test: &str, step: Option<&str>) -> String {{
        match step {{
            Some(step) => format!("{{{{\"key\":\"{{key}}\",\"event\":\"{{event}}\",\"test\":\"{{test}}\",\"step\":{{step}}}}}}\n"),
            None => format!("{{{{\"key\":\"{{key}}\",\"event\":\"{{event}}\",\"test\":\"{{test}}\"}}}}\n"),
        }}
    }}
}}
"#####
    )
}

/// The forgery through a soundness hole of the compiler (rust-lang/rust#25860), in safe Rust that
/// `#![forbid(unsafe_code)]` accepts: it reads any memory, finds the grade's key in the harness's heap,
/// turns descriptor 4 into a `File`, writes every test's records with the answers it carries, and ends
/// the process.
const SOUNDNESS_HOLE_FORGERY: &str = r#"
mod forgery {
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    // The implied bound 'b: 'a of `&'a &'b ()` is lost when `extend` becomes a higher-ranked fn
    // pointer: any borrow can be made to live as long as the caller likes.
    static UNIT: &&() = &&();
    fn extend<'a, 'b, T: ?Sized>(_: &'a &'b (), v: &'b mut T) -> &'a mut T {
        v
    }
    fn forever<'a, 'b, T: ?Sized>(v: &'a mut T) -> &'b mut T {
        let f: for<'x> fn(_, &'x mut T) -> &'b mut T = extend;
        f(UNIT, v)
    }

    enum Either<A, B> {
        A(#[allow(dead_code)] Option<Box<A>>),
        B(Option<Box<B>>),
    }

    /// `std::mem::transmute` without `unsafe`: a borrow of the `B` outlives the enum's switch to `A`.
    #[inline(never)]
    fn transmute<A, B>(a: A) -> B {
        let mut either = std::hint::black_box(Either::<A, B>::B(None));
        let Either::B(b) = &mut either else { unreachable!() };
        let b = forever(b);
        either = Either::A(Some(Box::new(a)));
        std::hint::black_box(&mut either);
        *b.take().unwrap()
    }

    static MARK: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

    /// Every 32-hex-digit string of the main heap, which holds the harness's key. The heap starts
    /// within 1 GiB above the executable's data; a page can be read where `pwrite` can copy from it.
    fn keys() -> Vec<String> {
        let probe = std::fs::File::create("probe").unwrap();
        let readable = |at: usize| probe.write_at(transmute::<usize, &[u8; 1]>(at), 0).is_ok();
        let mut page = (&MARK as *const _ as usize) & !4095;
        while readable(page) {
            page += 4096;
        }
        let Some(mut page) = (1..(1 << 14) + 1024).map(|i| page + (i << 16)).find(|&p| readable(p)) else {
            return Vec::new();
        };
        while readable(page - 4096) {
            page -= 4096;
        }
        let mut heap = Vec::new();
        while readable(page) && heap.len() < 256 << 20 {
            heap.extend_from_slice(transmute::<usize, &[u8; 4096]>(page));
            page += 4096;
        }
        let mut keys: Vec<String> = Vec::new();
        for run in heap.split(|b| !b.is_ascii_hexdigit()).filter(|run| run.len() == 32) {
            let key = String::from_utf8_lossy(run).into_owned();
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys
    }

    /// Under every key found: each test started, its steps, finished. Then the process ends.
    pub fn forge() -> ! {
        let keys = keys();
        let mut channel = transmute::<i32, std::fs::File>(4);
        let mut sent = 0;
        for key in &keys {
            for (test, steps) in super::records::tests(super::ANSWERS) {
                let mut lines = vec![super::records::record(key, "started", test, None)];
                lines.extend(steps.iter().map(|s| super::records::record(key, "step", test, Some(s))));
                lines.push(super::records::record(key, "finished", test, None));
                for line in lines {
                    sent += channel.write_all(line.as_bytes()).is_ok() as usize;
                }
            }
        }
        println!("FORGED {sent} records under {} keys", keys.len());
        std::process::exit(0)
    }
}
"#;

/// The skeleton that, first thing, forges every test's records with `answers` (the lines of
/// [`answer_lines`]) through the soundness hole.
fn soundness_hole_forger(answers: &str) -> String {
    format!(
        "{}\n{}\n{SOUNDNESS_HOLE_FORGERY}",
        skeleton_starting_with("forgery::forge();"),
        carried(answers)
    )
}

/// The opening of a run: its first request's system prompt and messages (the caller's), as one text.
/// Drawn afresh each grade (the caller's texts carry tokens of their own, even where the prompt is
/// empty), so only a replay of those instances' answers can put it in a trace.
fn opening(system_prompt: &Value, messages: &Value) -> String {
    serde_json::json!({ "system_prompt": system_prompt, "messages": messages }).to_string()
}

/// The opening of each test's first instance in `file` (an `expected.json`, or the expected traces of
/// a `last-traces.json`), by test name.
fn prompts_of(file: &Value) -> std::collections::BTreeMap<String, String> {
    file["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap();
            let name = match t["group"].as_str() {
                Some(group) => format!("{}::{name}", group.replace('-', "_")),
                None => name.to_string(),
            };
            // A test of several instances: its first one's.
            let expected = match t["expected"]["runs"].as_array() {
                Some(runs) => &runs[0],
                None => &t["expected"],
            };
            let first = &expected["alternatives"][0]["steps"][0]["match"];
            (name, opening(&first["system_prompt"], &first["messages"]))
        })
        .collect()
}

/// The last grade's evidence (`.pi-course/last-traces.json`): its seed and each failing test's entry.
fn last_traces(dir: &Path) -> Value {
    let text = fs::read_to_string(dir.join(".pi-course/last-traces.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The failing tests of the last grade whose trace opens with the request `prompts[test]` names: the
/// tests whose trace a forgery wrote (the loop under test never asks the model anything).
fn traces_opening_with(dir: &Path, prompts: &std::collections::BTreeMap<String, String>) -> usize {
    let last = last_traces(dir);
    let tests = last["tests"].as_array().unwrap();
    tests
        .iter()
        .filter(|t| {
            // The first step past any instance mark.
            let steps = t["trace"].as_array().map(Vec::as_slice).unwrap_or_default();
            let first = steps
                .iter()
                .find(|s| s["kind"] != "instance")
                .unwrap_or(&Value::Null);
            let name = t["name"].as_str().unwrap();
            first["kind"] == "request"
                && prompts
                    .get(name)
                    .is_some_and(|p| opening(&first["system_prompt"], &first["messages"]) == *p)
        })
        .count()
}

/// How many tests of a report passed.
fn passed(report: &Value) -> usize {
    report_tests(report)
        .iter()
        .filter(|(_, t)| t["status"] == "pass")
        .count()
}

#[test]
fn a_soundness_hole_forgery_with_the_practice_answers_earns_nothing_on_fresh_instances() {
    let (_tmp, dir) = practice();
    let fixed = fixed(&dir);
    let prompts = prompts_of(&fixed);
    write_loop(&dir, &soundness_hole_forger(&answers_that_fit(&fixed)));
    let (code, report) = grade_json(&dir, &["--lang", "en"]);
    if !sandboxed(&report) {
        return;
    }
    assert_ran(&report);
    // It ran: the traces the grader judged are the forged ones, answering the fixed instances, and the
    // messages show their steps.
    let forged = traces_opening_with(&dir, &prompts);
    let total = report_tests(&report).len();
    eprintln!("forged traces judged: {forged} of {total}");
    assert!(
        forged > 0,
        "the forgery's records never arrived: {report:#}"
    );
    let caller_texts: Vec<&str> = fixed["tests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["instance"]["runs"][0]["caller"].as_array().unwrap())
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(
        report_tests(&report).iter().any(|(_, t)| {
            let message = t["message"].as_str().unwrap_or_default();
            caller_texts.iter().any(|text| message.contains(text))
        }),
        "a message shows a forged step: {report:#}"
    );
    // It got nothing: no test passes, no point is earned.
    assert_eq!(code, 1, "{report:#}");
    assert_nothing_passed(&report);
    assert_eq!(report["score"].as_f64(), Some(0.0), "{report:#}");

    // The same forgery graded on the very instances it answers (the practice directory's seed, which
    // only a replay asks for): its records are taken as traces and pass. It is a working forgery; only
    // instances first seen at grade time stop it.
    let seed = fixed["seed"].to_string();
    let (_, replayed) = grade_json(&dir, &["--lang", "en", "--seed", &seed]);
    eprintln!(
        "with the practice seed {seed}: {} of {} pass",
        passed(&replayed),
        report_tests(&replayed).len()
    );
    assert!(passed(&replayed) > 0, "{replayed:#}");
}

/// Grades `dir` with a debug build's replacements of given files (`replace`: path → contents), the
/// attack tests' way to give learner code what no grade gives it (`PI_COURSE_TEST_REPLACE_GIVEN`).
fn grade_test_build(dir: &Path, replace: &[(String, String)], args: &[&str]) -> (i32, Value) {
    let given = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (path, text) in replace {
        let at = given.path().join(path);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        fs::write(at, text).unwrap();
    }
    let out = pi_course(dir)
        .env("PI_COURSE_TEST_REPLACE_GIVEN", given.path())
        .args(["grade", ".", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", describe(&out)));
    assert_schema(&report);
    (out.status.code().unwrap(), report)
}

/// `dir`'s given file `path` with `find` replaced (once) by `with`.
fn patched(dir: &Path, path: &str, find: &str, with: &str) -> (String, String) {
    let text = fs::read_to_string(dir.join(path)).unwrap();
    assert_eq!(text.matches(find).count(), 1, "{path}: {find}");
    (path.to_string(), text.replacen(find, with, 1))
}

/// The test build that hands the key and the channel to the code under test: the harness puts the key
/// in the environment once it has read its orders, and the practice crate allows `unsafe`, so the loop
/// can own descriptor 4.
fn handing_over(dir: &Path) -> Vec<(String, String)> {
    vec![
        patched(
            dir,
            "harness/src/lib.rs",
            "    let channel = Arc::new(Mutex::new(Channel {",
            "    std::env::set_var(\"PI_COURSE_TEST_HANDED_KEY\", key);\n    let channel = Arc::new(Mutex::new(Channel {",
        ),
        patched(dir, "src/lib.rs", "#![forbid(unsafe_code)]", ""),
    ]
}

/// A forger handed the key and the channel. Unless `silent`, it writes every test's records in one of
/// four ways, by the test's place `i` among the answers: `i % 4 == 0` its answer as is; `1` no step at
/// all; `2` its answer labelled as the next test's steps; `3` its answer before the test's `started`.
/// Then the process ends.
const HANDED_FORGERY: &str = r#"
mod handed {
    use std::io::Write;
    use std::os::fd::FromRawFd;

    pub fn forge(silent: bool) -> ! {
        use super::records::record;
        let key = std::env::var("PI_COURSE_TEST_HANDED_KEY").expect("this test build hands over the key");
        // SAFETY: this test build allows `unsafe`; descriptor 4 is the grader's channel, left open.
        let mut channel = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(4) });
        let mut send = |line: String| {
            let _ = channel.write_all(line.as_bytes());
        };
        let tests = super::records::tests(super::ANSWERS);
        for (i, (test, steps)) in tests.iter().enumerate().filter(|_| !silent) {
            let next = tests[(i + 1) % tests.len()].0;
            match i % 4 {
                0 => {
                    send(record(&key, "started", test, None));
                    steps.iter().for_each(|s| send(record(&key, "step", test, Some(s))));
                    send(record(&key, "finished", test, None));
                }
                1 => {
                    send(record(&key, "started", test, None));
                    send(record(&key, "finished", test, None));
                }
                2 => {
                    send(record(&key, "started", test, None));
                    steps.iter().for_each(|s| send(record(&key, "step", next, Some(s))));
                    send(record(&key, "finished", test, None));
                }
                _ => {
                    steps.iter().for_each(|s| send(record(&key, "step", test, Some(s))));
                    send(record(&key, "started", test, None));
                    send(record(&key, "finished", test, None));
                }
            }
        }
        println!("HANDED-OVER silent={silent} key={}", key.len());
        std::process::exit(0)
    }
}
"#;

#[test]
fn handed_the_key_and_the_channel_forged_records_earn_nothing_on_fresh_instances() {
    let (_tmp, dir) = practice();
    let fixed = fixed(&dir);
    let prompts = prompts_of(&fixed);
    let graded = ["plain_stop::", "single_tool::"];
    let answers = answer_lines(&fixed, &graded);
    let order: Vec<&str> = answers.lines().map(|l| l.split('\t').next().unwrap()).fold(
        Vec::new(),
        |mut order, test| {
            if order.last() != Some(&test) {
                order.push(test);
            }
            order
        },
    );
    let build = handing_over(&dir);
    let forger = |statement: &str| {
        format!(
            "{}\n{}\n{HANDED_FORGERY}",
            skeleton_starting_with(statement),
            carried(&answers)
        )
    };
    write_loop(&dir, &forger("handed::forge(false);"));
    let groups = ["--group", "7.1", "--group", "7.2", "--lang", "en"];

    // On the instances whose answers it holds, the records are taken exactly as the protocol says:
    // a test's answer between its `started` and `finished` passes; no step, the answer under another
    // test's name, or the answer before `started`, passes nothing.
    let seed = fixed["seed"].to_string();
    let (_, known) = grade_test_build(&dir, &build, &[&groups[..], &["--seed", &seed]].concat());
    if !sandboxed(&known) {
        return;
    }
    assert_ran(&known);
    let tests = report_tests(&known);
    assert_eq!(tests.len(), order.len(), "{known:#}");
    for (_, test) in &tests {
        let name = test["name"].as_str().unwrap();
        let way = order.iter().position(|n| *n == name).unwrap() % 4;
        let want = if way == 0 { "pass" } else { "fail" };
        assert_eq!(test["status"], want, "{name} (way {way}): {test:#}");
    }

    // On instances first seen at grade time: nothing.
    let (code, fresh) = grade_test_build(&dir, &build, &groups);
    assert_ran(&fresh);
    assert!(
        traces_opening_with(&dir, &prompts) > 0,
        "the forged answers were judged: {fresh:#}"
    );
    assert_eq!(code, 1, "{fresh:#}");
    assert_nothing_passed(&fresh);

    // Writing nothing and ending the process: nothing.
    write_loop(&dir, &forger("handed::forge(true);"));
    let (code, silent) = grade_test_build(&dir, &build, &groups);
    assert_eq!(code, 1, "{silent:#}");
    assert_nothing_passed(&silent);
    for (_, test) in report_tests(&silent) {
        let message = test["message"].as_str().unwrap();
        assert!(
            message.contains("HANDED-OVER silent=true key=32"),
            "{message}"
        );
    }
}

/// Code that runs before `main`: a naked function, which `#![forbid(unsafe_code)]` lets through, makes
/// system calls from safe code, and its assembly puts `first` in `.init_array`. `first` reads the orders
/// on descriptor 3 before the harness can, then writes, for every test they name, the answer it carries
/// for that test, and last, as a step of its own, what it read for that test.
const BEFORE_MAIN_FORGERY: &str = r#"
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod before_main {
    /// System call `n` with three arguments.
    #[unsafe(naked)]
    pub extern "C" fn syscall(n: usize, a: usize, b: usize, c: usize) -> isize {
        core::arch::naked_asm!(
            ".pushsection .init_array,\"aw\"",
            ".balign 8",
            ".quad {first}",
            ".popsection",
            "mov rax, rdi",
            "mov rdi, rsi",
            "mov rsi, rdx",
            "mov rdx, rcx",
            "syscall",
            "ret",
            first = sym first,
        )
    }

    pub extern "C" fn first() {
        use super::records::record;
        let (mut orders, mut buffer) = (Vec::new(), vec![0u8; 1 << 16]);
        loop {
            let n = syscall(0, 3, buffer.as_mut_ptr() as usize, buffer.len());
            if n <= 0 {
                break;
            }
            orders.extend_from_slice(&buffer[..n as usize]);
        }
        let orders = String::from_utf8_lossy(&orders).into_owned();
        let mut lines = orders.lines();
        let key = lines.next().unwrap_or_default().to_string();
        let send = |line: String| {
            syscall(1, 4, line.as_ptr() as usize, line.len());
        };
        let answers = super::records::tests(super::ANSWERS);
        for line in lines.skip(1) {
            let Some((test, _)) = line.split_once('\t') else { continue };
            send(record(&key, "started", test, None));
            for (_, steps) in answers.iter().filter(|(name, _)| *name == test) {
                steps.iter().for_each(|s| send(record(&key, "step", test, Some(s))));
            }
            let seen = format!("{{\"kind\":\"orders_seen\",\"key\":\"{key}\",\"line\":{line:?}}}");
            send(record(&key, "step", test, Some(&seen)));
            send(record(&key, "finished", test, None));
        }
    }
}
"#;

/// Checks the last grade of a before-`main` forgery: it ran (every failing test's trace ends with what
/// it read, after the fixed instances' answers it wrote) and what it read was the key and the test's
/// instance, fresh, never an expected trace.
fn assert_saw_instances_only(dir: &Path, report: &Value) {
    let prompts = prompts_of(&fixed(dir));
    let last = last_traces(dir);
    let tests = last["tests"].as_array().unwrap();
    assert_eq!(tests.len(), report_tests(report).len(), "{report:#}");
    assert!(
        traces_opening_with(dir, &prompts) > 0,
        "the forged answers were judged"
    );
    for test in tests {
        let name = test["name"].as_str().unwrap();
        let trace = test["trace"].as_array().unwrap();
        let seen = trace
            .iter()
            .find(|s| s["kind"] == "orders_seen")
            .unwrap_or_else(|| panic!("{name}: what it read is in its trace: {test:#}"));
        let key = seen["key"].as_str().unwrap();
        assert!(
            key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit()),
            "{key}"
        );
        let line = seen["line"].as_str().unwrap();
        let (ordered, instance) = line.split_once('\t').unwrap();
        assert_eq!(ordered, name);
        let instance: Value = serde_json::from_str(instance).unwrap();
        // A test of several instances: its first one is enough to tell.
        let instance = instance["runs"].get(0).cloned().unwrap_or(instance);
        // A fresh instance, and nothing of an answer.
        assert!(instance["turns"].is_array(), "{instance:#}");
        assert_ne!(
            Some(opening(&instance["system_prompt"], &instance["caller"])),
            prompts.get(name).cloned()
        );
        for answer in ["alternatives", "\"rule\"", "$bind", "\"after\""] {
            assert!(!line.contains(answer), "{name}: the orders hold {answer}");
        }
    }
}

#[test]
fn code_before_main_sees_instances_never_answers_and_earns_nothing() {
    let (_tmp, dir) = practice();
    let groups = ["--group", "7.1", "--lang", "en"];
    let forgery = format!(
        "{}\n{BEFORE_MAIN_FORGERY}",
        carried(&answer_lines(&fixed(&dir), &["plain_stop::"]))
    );
    // The linker keeps `.init_array` entries of the objects it links: something linked names the
    // naked function.
    let named = "#[cfg(all(target_os = \"linux\", target_arch = \"x86_64\"))]\n    let _ = before_main::syscall as usize;";
    // In the learner's file: refused before the build where the grader refuses such code, else it runs.
    write_loop(
        &dir,
        &format!("{}\n{forgery}", skeleton_starting_with(named)),
    );
    let (code, report) = grade_json(&dir, &groups);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_nothing_passed(&report);
    let message = report["message"].as_str().unwrap();
    if report["status"] == "error" {
        assert!(
            message.contains("not allowed in the practice crate") && message.contains("naked"),
            "refused for what it is: {message}"
        );
    } else {
        assert_saw_instances_only(&dir, &report);
    }

    // In a given file of a test build, where no check of the learner's file reaches: it runs before
    // `main`, and still earns nothing.
    write_loop(&dir, &skeleton());
    let (path, lib) = patched(
        &dir,
        "src/lib.rs",
        "    Box::pin(agent_loop::run_agent_loop(options))",
        &format!("    {named}\n    Box::pin(agent_loop::run_agent_loop(options))"),
    );
    let lib = (path, format!("{lib}\n{forgery}"));
    let (code, report) = grade_test_build(&dir, &[lib], &groups);
    assert_ran(&report);
    assert_eq!(code, 1, "{report:#}");
    assert_nothing_passed(&report);
    assert_saw_instances_only(&dir, &report);
}

#[test]
fn an_earlier_grades_answers_replayed_earn_nothing_on_a_fresh_grade() {
    let (_tmp, dir) = practice();
    // An earlier grade with seed S: its evidence holds the expected trace of every test it failed.
    let earlier = "20260401";
    let (_, report) = grade_json(&dir, &["--group", "7.1", "--seed", earlier]);
    if !sandboxed(&report) {
        return;
    }
    let last = last_traces(&dir);
    assert_eq!(last["seed"], 20260401);
    let count = last["tests"].as_array().unwrap().len();
    assert_eq!(count, report_tests(&report).len(), "{report:#}");
    let prompts = prompts_of(&last);
    write_loop(&dir, &soundness_hole_forger(&answers_that_fit(&last)));
    let (code, fresh) = grade_json(&dir, &["--group", "7.1", "--lang", "en"]);
    assert_ran(&fresh);
    assert!(
        traces_opening_with(&dir, &prompts) > 0,
        "the replayed answers were judged: {fresh:#}"
    );
    assert_eq!(code, 1, "{fresh:#}");
    assert_nothing_passed(&fresh);

    // Graded with seed S again, the replay passes: the answers were right, for that grade only.
    let (_, again) = grade_json(&dir, &["--group", "7.1", "--seed", earlier]);
    eprintln!(
        "replayed on seed {earlier}: {} of {} pass",
        passed(&again),
        report_tests(&again).len()
    );
    assert!(passed(&again) > 0, "{again:#}");
}

/// The cargo home as the grader's machine has it: `CARGO_HOME` or `~/.cargo`.
fn real_cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"))
}

/// A registry token no report may ever show.
const TOKEN: &str = "cio-TOKEN-3b8e1d0f";

/// A cargo home laid out as rustup lays one out (`bin/cargo` a link to the `rustup` beside it), with the
/// downloaded packages of the real one and a `credentials.toml` holding [`TOKEN`]; `PATH` for a grader
/// that finds its cargo there.
struct RustupCargoHome {
    _dir: tempfile::TempDir,
    path: PathBuf,
    search_path: String,
}

fn rustup_cargo_home() -> RustupCargoHome {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("cargo-home");
    let bin = path.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let real = real_cargo_home();
    // A copy of rustup, not a link to it: the layout is the standard one, rooted here.
    let rustup = real.join("bin/rustup");
    if rustup.is_file() {
        fs::copy(&rustup, bin.join("rustup")).unwrap();
        for proxy in ["cargo", "rustc"] {
            std::os::unix::fs::symlink("rustup", bin.join(proxy)).unwrap();
        }
    } else {
        // A toolchain without rustup: its cargo, linked.
        let cargo = std::env::var_os("CARGO").expect("cargo runs the tests");
        std::os::unix::fs::symlink(cargo, bin.join("cargo")).unwrap();
    }
    std::os::unix::fs::symlink(real.join("registry"), path.join("registry")).unwrap();
    fs::write(
        path.join("credentials.toml"),
        format!("[registry]\ntoken = \"{TOKEN}\"\n"),
    )
    .unwrap();
    let search_path = format!("{}:/usr/bin:/bin", bin.display());
    RustupCargoHome {
        _dir: dir,
        path,
        search_path,
    }
}

/// `grade` in every format with HOME set to `home` and the toolchain found through `cargo_home`, as one
/// text.
fn reports_with_cargo_home(
    dir: &Path,
    home: &Home,
    cargo_home: &RustupCargoHome,
) -> (Value, String) {
    let real_home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    let junit = home.path.join("report.xml");
    let run = |args: &[&str]| {
        pi_course(dir)
            .env("HOME", &home.path)
            .env("CARGO_HOME", &cargo_home.path)
            .env("RUSTUP_HOME", &rustup_home)
            .env("PATH", &cargo_home.search_path)
            .env_remove("CARGO")
            .env_remove("RUSTC")
            .arg("grade")
            .arg(dir)
            .args(args)
            .output()
            .unwrap()
    };
    let human = run(&["--junit", junit.to_str().unwrap()]);
    let json = run(&["--format", "json"]);
    let report: Value =
        serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{}", describe(&json)));
    let text = format!(
        "{}{}{}{}{}",
        stdout(&human),
        stderr(&human),
        stdout(&json),
        stderr(&json),
        fs::read_to_string(&junit).unwrap_or_default()
    );
    (report, text)
}

#[test]
fn the_cargo_home_and_its_credentials_are_unreadable_at_compile_time() {
    let home = home();
    let cargo_home = rustup_cargo_home();
    let (_tmp, dir) = practice();
    let credentials = cargo_home.path.join("credentials.toml");
    // Named outright, and found through the build's environment.
    for source in [
        format!("{:?}", credentials.display().to_string()),
        r#"concat!(env!("CARGO_HOME"), "/credentials.toml")"#.to_string(),
    ] {
        write_loop(
            &dir,
            &format!(
                "{}\nconst LEAK: &str = include_str!({source});\n",
                solution_starting_with(r#"panic!("LEAK {LEAK}");"#)
            ),
        );
        let (report, text) = reports_with_cargo_home(&dir, &home, &cargo_home);
        if !sandboxed(&report) {
            return;
        }
        assert!(!text.contains(TOKEN), "{source}: the token leaked:\n{text}");
        assert_eq!(report["status"], "error", "{source}: {report}");
        assert!(
            text.contains("credentials.toml"),
            "{source}: rustc's error names the file it tried to read:\n{text}"
        );
    }
    // The literal path is refused by the sandbox, not missing.
    write_loop(
        &dir,
        &format!(
            "{}\nconst LEAK: &str = include_str!({:?});\n",
            solution_starting_with(r#"panic!("LEAK {LEAK}");"#),
            credentials.display().to_string(),
        ),
    );
    let (report, text) = reports_with_cargo_home(&dir, &home, &cargo_home);
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{text}"
    );
}

#[test]
fn the_build_environment_names_nothing_of_the_grader() {
    let home = home();
    let cargo_home = rustup_cargo_home();
    let (_tmp, dir) = practice();
    let attack = r#"panic!("ENV HOME={:?} CARGO_HOME={:?} PATH={:?} TARGET={:?} USER={:?} RUSTUP_HOME={:?}", option_env!("HOME"), option_env!("CARGO_HOME"), option_env!("PATH"), option_env!("CARGO_TARGET_DIR"), option_env!("USER"), option_env!("RUSTUP_HOME"));"#;
    write_loop(&dir, &solution_starting_with(attack));
    let (report, text) = reports_with_cargo_home(&dir, &home, &cargo_home);
    if !sandboxed(&report) {
        return;
    }
    assert!(text.contains("ENV HOME="), "the attack ran:\n{text}");
    // A judge's message shows a panic cut short: the whole panic is in the grade's evidence.
    let evidence = fs::read_to_string(dir.join(".pi-course/last-traces.json")).unwrap();
    let evidence: Value = serde_json::from_str(&evidence).unwrap();
    let panics: Vec<String> = evidence["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["trace"].as_array().cloned().unwrap_or_default())
        .filter(|step| step["kind"] == "panic")
        .filter_map(|step| step["message"].as_str().map(str::to_string))
        .collect();
    let env_line = panics
        .iter()
        .find(|l| l.contains("ENV HOME="))
        .cloned()
        .expect("a panic carries the build's environment");
    for (what, path) in [
        ("the home", home.path.clone()),
        ("the cargo home", cargo_home.path.clone()),
        ("the real cargo home", real_cargo_home()),
        ("the practice directory", dir.clone()),
    ] {
        let path = path.display().to_string();
        assert!(
            !env_line.contains(&path),
            "the build's environment names {what} ({path}): {env_line}"
        );
    }
    for name in ["TARGET", "USER", "RUSTUP_HOME"] {
        assert!(
            env_line.contains(&format!("{name}=None")),
            "{name} reaches the build: {env_line}"
        );
    }
}

/// Every text file under `dir`, concatenated: whatever a class run wrote.
fn all_text(dir: &Path) -> String {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .collect()
}

/// The learner outputs in a build slot's target, by name (rustc's and cargo's for the practice crate).
fn learner_outputs(target: &Path) -> Vec<PathBuf> {
    let debug = target.join("debug");
    // `<name>-<hash>` (and an extension), not a dependency's `pi-course-07-api-<hash>`.
    let is_learners = |name: &str| {
        ["ch07-", "libpi_course-", "pi_course-", "pi-course-07-"]
            .iter()
            .any(|p| name.strip_prefix(p).is_some_and(|hash| !hash.contains('-')))
    };
    let mut found = Vec::new();
    for dir in ["deps", "incremental", ".fingerprint"] {
        for entry in fs::read_dir(debug.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            if is_learners(&entry.file_name().to_string_lossy()) {
                found.extend(
                    walkdir::WalkDir::new(entry.path())
                        .into_iter()
                        .flatten()
                        .filter(|e| e.file_type().is_file())
                        .map(|e| e.into_path()),
                );
            }
        }
    }
    found
}

const ALICE_MARK: &str = "ALICE-MARK-5d1e77";

#[test]
fn a_reused_build_slot_holds_nothing_of_the_previous_learner() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cache = tmp.path().join("cache");
    let subs = tmp.path().join("subs");
    fs::create_dir_all(&subs).unwrap();
    let class = |subs: &Path, out: &str| {
        let out = pi_course(tmp.path())
            .env("PI_COURSE_CACHE", &cache)
            .args(["grade-class", subs.to_str().unwrap(), "--out", out])
            // The first build compiles the dependencies into this cache, maybe on a busy machine.
            .args(["--jobs", "1", "--format", "json", "--build-timeout", "900"])
            .output()
            .unwrap();
        assert!(out.status.code().is_some(), "{}", describe(&out));
        out
    };
    // Alice's loop holds a string no one else's has.
    let alice = solution_starting_with(&format!("std::hint::black_box({ALICE_MARK:?});"));
    fs::write(subs.join("alice.rs"), &alice).unwrap();
    class(&subs, "run1");
    let summary = class_summary(&tmp.path().join("run1"));
    assert_eq!(
        learner_row(&summary, "alice")["status"],
        "pass",
        "{summary:#}"
    );
    // What an attacker learns by grading at home: the build key and the names of the test executable
    // and the crate's library (the same in every slot and every cache).
    let targets = cache.join("target");
    let key = names(&targets).into_iter().next().expect("a build key");
    let deps = targets.join(&key).join("slot-0/debug/deps");
    let named = |prefix: &str| {
        names(&deps)
            .into_iter()
            .find(|n| n.starts_with(prefix) && !n.ends_with(".d") && !n.ends_with(".rmeta"))
            .unwrap_or_else(|| panic!("no {prefix}* in {}", deps.display()))
    };
    let exe = named("ch07-");

    // Zed's loop is Alice's with her mark taken out (so it builds where hers did) and a probe put in: it
    // reads her test executable from the slot's target, found from its own manifest directory. (Her
    // library is no use to it: rustc removes it before it compiles Zed's.)
    let read = |file: &str| {
        format!(
            r#"include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../target/{key}/slot-0/debug/deps/{file}"))"#
        )
    };
    let probe = r#"let needle = ["ALICE-MARK", "-5d1e77"].concat(); let has = |b: &[u8]| b.windows(needle.len()).any(|w| w == needle.as_bytes()); panic!("PROBE exe={}", has(PREVIOUS_EXE));"#;
    let zed = format!(
        "{}\nstatic PREVIOUS_EXE: &[u8] = {};\n",
        solution_starting_with(probe),
        read(&exe),
    );
    assert!(!zed.contains(ALICE_MARK));
    fs::write(subs.join("zed.rs"), &zed).unwrap();
    let run2 = tmp.path().join("run2");
    class(&subs, "run2");
    let summary = class_summary(&run2);
    assert_eq!(
        learner_row(&summary, "alice")["status"],
        "pass",
        "{summary:#}"
    );
    let zed_report = fs::read_to_string(run2.join("learners/zed.json")).unwrap();
    assert!(
        !all_text(&run2).contains(ALICE_MARK),
        "alice's mark is in the class's reports"
    );
    assert!(
        !zed_report.contains("exe=true"),
        "zed's build read alice's compiled loop: {zed_report}"
    );
    // The read was attempted, and found nothing there.
    assert!(zed_report.contains(&exe), "{zed_report}");
    assert!(zed_report.contains("No such file"), "{zed_report}");

    // Carol's loop is close to Alice's, so it builds in the same slot: nothing of the previous
    // learner's build (its incremental data, fingerprints, library, executable) is reused.
    let carol_subs = tmp.path().join("subs-carol");
    fs::create_dir_all(&carol_subs).unwrap();
    fs::write(
        carol_subs.join("carol.rs"),
        format!("{}\n// carol\n", solution()),
    )
    .unwrap();
    let slot0 = targets.join(&key).join("slot-0");
    assert!(!learner_outputs(&slot0).is_empty());
    let before = std::time::SystemTime::now();
    std::thread::sleep(Duration::from_millis(20));
    class(&carol_subs, "run3");
    let summary = class_summary(&tmp.path().join("run3"));
    assert_eq!(
        learner_row(&summary, "carol")["status"],
        "pass",
        "{summary:#}"
    );
    let outputs = learner_outputs(&slot0);
    assert!(
        outputs
            .iter()
            .any(|p| p.to_string_lossy().contains("/incremental/")),
        "carol's build is incremental"
    );
    let older: Vec<&PathBuf> = outputs
        .iter()
        .filter(|p| fs::metadata(p).unwrap().modified().unwrap() < before)
        .collect();
    assert!(
        older.is_empty(),
        "carol's build reused the previous learner's outputs: {older:#?}"
    );
}

/// A naked function that the loader runs before `main`: its assembly lists it in `.init_array` and
/// prints a line. No `unsafe` block, no `global_asm!`: `#![forbid(unsafe_code)]` lets it through.
#[cfg(target_arch = "x86_64")]
const BEFORE_MAIN: &str = r#"
/// Runs before `main`.
#[unsafe(naked)]
pub extern "C" fn before_main() {
    std::arch::naked_asm!(
        ".pushsection .init_array,\"aw\"",
        ".balign 8",
        ".quad {f}",
        ".popsection",
        "lea rsi, [rip + 2f]",
        "mov edi, 1",
        "mov edx, 13",
        "mov eax, 1",
        "syscall",
        "ret",
        "2:",
        ".ascii \"NAKED-RAN-42\\n\"",
        f = sym before_main,
    )
}
"#;

/// The test executable of the practice directory `dir`, built by plain cargo (outside the grader, with
/// a target directory of this test's own).
fn plain_cargo_build(dir: &Path) -> PathBuf {
    let out =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args([
                "test",
                "--no-run",
                "--locked",
                "--test",
                "ch07",
                "--message-format=json",
            ])
            .current_dir(dir)
            .env(
                "CARGO_TARGET_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("attacks-plain-target"),
            )
            .output()
            .unwrap();
    assert!(
        out.status.success(),
        "plain cargo build\n{}",
        describe(&out)
    );
    stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .next_back()
        .expect("cargo names the test executable")
}

#[cfg(target_arch = "x86_64")]
#[test]
fn code_that_runs_before_main_is_refused_before_the_build() {
    let (_tmp, dir) = practice();
    let code = solution_starting_with("std::hint::black_box(before_main as extern \"C\" fn());")
        + BEFORE_MAIN;
    write_loop(&dir, &code);
    // Built as a learner would build it, the attack runs before the tests' `main`.
    let exe = plain_cargo_build(&dir);
    let out = std::process::Command::new(&exe)
        .arg("--list")
        .output()
        .unwrap();
    assert!(
        stdout(&out).starts_with("NAKED-RAN-42\n"),
        "the naked function did not run before main\n{}",
        describe(&out)
    );

    // The grader refuses it before building, naming the line and what it is.
    let line = code
        .lines()
        .position(|l| l == "#[unsafe(naked)]")
        .expect("the attribute's line")
        + 1;
    for (lang, words) in [("zh", "不允许"), ("en", "not allowed")] {
        let (code, report) = grade_json(&dir, &["--lang", lang]);
        assert_eq!(code, 1, "{report}");
        assert_eq!(report["status"], "error", "{report}");
        let message = report["message"].as_str().unwrap();
        assert!(!message.contains("NAKED-RAN"), "{message}");
        assert!(message.contains(words), "{lang}: {message}");
        assert!(message.contains("naked"), "{lang}: {message}");
        assert!(
            message.contains(&format!("src/agent_loop.rs:{line}:")),
            "{lang}: the message names line {line}: {message}"
        );
        for group in report["groups"].as_array().unwrap() {
            assert_eq!(group["status"], "error", "{group}");
        }
    }

    // The check reads code, not text: the same words in comments and strings are fine.
    let mentions = r##"
// Not used here: asm!, naked_asm!, #[unsafe(naked)], #[no_mangle], extern "C" { }.
/// Nor `#[link_section = ".init_array"]` or `global_asm!`.
pub const NOTES: &str = r#"naked_asm!("ret") #[used] extern crate alloc; extern "C" { }"#;
"##;
    write_loop(&dir, &(solution_starting_with("let _ = NOTES;") + mentions));
    let (code, report) = grade_json(&dir, &[]);
    assert_eq!(code, 0, "{report}");
}

/// [`BEFORE_MAIN`] spelled past a check that compares spellings: the naked attribute is a macro's
/// fragment inside `cfg_attr`, and the assembly macro is a raw identifier.
#[cfg(target_arch = "x86_64")]
const SPELLED_BEFORE_MAIN: &str = r#"
/// Runs before `main`: `unsafe(naked)` comes in as the macro's tokens.
macro_rules! before_main {
    ($($attribute:tt)*) => {
        #[cfg_attr(all(), $($attribute)*)]
        pub extern "C" fn before_main() {
            std::arch::r#naked_asm!(
                ".pushsection .init_array,\"aw\"",
                ".balign 8",
                ".quad {f}",
                ".popsection",
                "lea rsi, [rip + 2f]",
                "mov edi, 1",
                "mov edx, 13",
                "mov eax, 1",
                "syscall",
                "ret",
                "2:",
                ".ascii \"NAKED-RAN-42\\n\"",
                f = sym before_main,
            )
        }
    };
}
before_main!(unsafe(naked));
"#;

#[cfg(target_arch = "x86_64")]
#[test]
fn a_raw_assembly_macro_and_a_macro_filled_cfg_attr_run_before_main_and_are_refused() {
    let (_tmp, dir) = practice();
    let code = solution_starting_with("std::hint::black_box(before_main as extern \"C\" fn());")
        + SPELLED_BEFORE_MAIN;
    write_loop(&dir, &code);
    // Built as a learner would build it, the spelled attack runs before the tests' `main`.
    let exe = plain_cargo_build(&dir);
    let out = std::process::Command::new(&exe)
        .arg("--list")
        .output()
        .unwrap();
    assert!(
        stdout(&out).starts_with("NAKED-RAN-42\n"),
        "the spelled naked function did not run before main\n{}",
        describe(&out)
    );

    // The grader refuses both spellings, each at its line, before building anything.
    let line_of = |needle: &str| code.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (attribute, assembly) = (line_of("#[cfg_attr(all(), $("), line_of("r#naked_asm!("));
    let (code, report) = grade_json(&dir, &["--lang", "en"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["status"], "error", "{report}");
    let message = report["message"].as_str().unwrap();
    assert!(!message.contains("NAKED-RAN"), "{message}");
    for (construct, line) in [("`#[$...]`", attribute), ("`naked_asm!`", assembly)] {
        let refusal = format!("{construct} is not allowed in the practice crate");
        let at = message
            .find(&refusal)
            .unwrap_or_else(|| panic!("{construct} is refused: {message}"));
        assert!(
            message[at..].contains(&format!("src/agent_loop.rs:{line}:")),
            "{construct} is refused at line {line}: {message}"
        );
    }
    for group in report["groups"].as_array().unwrap() {
        assert_eq!(group["status"], "error", "{group}");
        assert!(group["tests"].as_array().unwrap().is_empty(), "{group}");
    }
}

/// The reference loop with a function of `depth` nested parentheses after it, and that function's line.
/// 5,000 deep is 10 KB more, and overflowed the grader's stack in the parse of its refusal check (rustc's
/// own parser overflows on it too, in a process of its own).
fn nested(depth: usize) -> (String, usize) {
    let code = format!(
        "{}\n/// Nested deep.\n#[allow(unused_parens)]\npub fn deep() -> i32 {{\n    {}1{}\n}}\n",
        solution(),
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let line = code.lines().position(|l| l.contains("((((")).unwrap() + 1;
    (code, line)
}

fn nested_five_thousand_deep() -> (String, usize) {
    nested(5000)
}

#[test]
fn a_file_nested_five_thousand_deep_is_bad_input_and_the_grader_lives() {
    let (_tmp, dir) = practice();
    // Nested 100 deep, the loop is read, built and graded as any other: the depth reaches the parse.
    write_loop(&dir, &nested(100).0);
    let (code, report) = grade_json(&dir, &["--group", "7.1"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "pass", "{report:#}");

    let (code, line) = nested_five_thousand_deep();
    write_loop(&dir, &code);

    // A grade says so at once, naming the line: bad input (exit 2), never a crash of the grader.
    for (lang, words) in [("en", "nests 257 deep here"), ("zh", "嵌套了 257 层")] {
        let out = grade(&dir, &["--lang", lang]);
        assert_eq!(out.status.code(), Some(2), "{lang}\n{}", describe(&out));
        let err = stderr(&out);
        assert!(err.contains(words) && err.contains("256"), "{lang}: {err}");
        assert!(
            err.contains(&format!("src/agent_loop.rs:{line}:")),
            "{lang}: the message names line {line}: {err}"
        );
    }
}

#[test]
fn a_file_nested_five_thousand_deep_is_one_row_of_a_class_that_completes() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let subs = tmp.path().join("subs");
    fs::create_dir_all(&subs).unwrap();
    let (deep, line) = nested_five_thousand_deep();
    fs::write(subs.join("ann.rs"), solution()).unwrap();
    fs::write(subs.join("bob.rs"), solution_starting_with("let _ = 1;")).unwrap();
    fs::write(subs.join("deb.rs"), &deep).unwrap();
    let results = tmp.path().join("results");
    let out = grade_class(
        tmp.path(),
        &subs,
        &results,
        &["--jobs", "2", "--format", "json", "--lang", "en"],
    );
    // Graded to the end: some learner could not be graded (1), not a crash.
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let summary = class_summary(&results);
    assert_eq!(
        summary["learners"].as_array().unwrap().len(),
        3,
        "{summary:#}"
    );
    for name in ["ann", "bob"] {
        assert_eq!(learner_row(&summary, name)["status"], "pass", "{summary:#}");
    }
    let row = learner_row(&summary, "deb");
    assert_ne!(row["status"], "pass", "{row:#}");
    assert_eq!(row["total"], 0.0, "{row:#}");
    let message = row["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("deb.rs:{line}:")) && message.contains("nests 257 deep"),
        "{message}"
    );
    let csv = fs::read_to_string(results.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
}

/// The seed a learner `name` would have been graded with in a class of seed `class_seed` before a
/// learner's seed depended on their submission: the first 8 bytes of sha256(`<class_seed>:<name>`).
fn seed_by_name_only(class_seed: u64, name: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{class_seed}:{name}").as_bytes());
    u64::from_be_bytes(digest[..8].try_into().unwrap())
}

/// The seed a class of seed `class_seed` grades learner `name`'s submission of sha256 `sha256` with.
fn seed_of_submission(class_seed: u64, name: &str, sha256: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{class_seed}:{name}:{sha256}").as_bytes());
    u64::from_be_bytes(digest[..8].try_into().unwrap())
}

/// Grades the class in `subs` into `results` with `--seed class_seed`; returns the exit code, `name`'s
/// row and their JSON report.
fn class_of(subs: &Path, results: &Path, class_seed: u64, name: &str) -> (i32, Value, Value) {
    let seed = class_seed.to_string();
    let args = ["--seed", seed.as_str(), "--jobs", "1", "--format", "json"];
    let out = grade_class(subs.parent().unwrap(), subs, results, &args);
    let code = out.status.code().expect("exited");
    let row = learner_row(&class_summary(results), name).clone();
    let text = fs::read_to_string(results.join(row["report"].as_str().unwrap())).unwrap();
    (code, row, serde_json::from_str(&text).unwrap())
}

/// Harvests with `pi-course grade --seed SEED` on the untouched skeleton in `dir`: the expected traces of
/// that seed's instances, as the soundness-hole forgery that writes them back, and their prompts.
fn harvest(dir: &Path, seed: u64) -> Option<(String, std::collections::BTreeMap<String, String>)> {
    write_loop(dir, &skeleton());
    let (_, report) = grade_json(dir, &["--seed", &seed.to_string()]);
    if !sandboxed(&report) {
        return None;
    }
    let last = last_traces(dir);
    assert_eq!(last["seed"], seed);
    assert_eq!(
        last["tests"].as_array().unwrap().len(),
        report_tests(&report).len()
    );
    Some((
        soundness_hole_forger(&answers_that_fit(&last)),
        prompts_of(&last),
    ))
}

/// Replays, with `pi-course grade --seed SEED`, the class grade of the forgery in `dir` that named SEED:
/// the forged answers were judged (the traces open with the harvested prompts), and earned nothing.
fn assert_forgery_judged_and_failed(
    dir: &Path,
    seed: u64,
    prompts: &std::collections::BTreeMap<String, String>,
) {
    let (code, replay) = grade_json(dir, &["--seed", &seed.to_string()]);
    assert_ran(&replay);
    assert_eq!(code, 1, "{replay:#}");
    assert_nothing_passed(&replay);
    assert!(
        traces_opening_with(dir, prompts) > 0,
        "the forged answers were judged: {replay:#}"
    );
}

#[test]
fn a_known_class_seed_harvested_by_name_earns_nothing_in_the_class() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = practice_at(tmp.path(), "harvest");
    // The class seed leaked (the recipes used to print one). Mallory computes the seed her name gave and
    // harvests that seed's expected traces on the untouched skeleton.
    let class_seed = 20260901;
    let by_name = seed_by_name_only(class_seed, "mallory");
    let Some((forgery, prompts)) = harvest(&dir, by_name) else {
        return;
    };
    // On the harvested seed, the forgery passes: the answers are right for those instances.
    write_loop(&dir, &forgery);
    let (_, replayed) = grade_json(&dir, &["--seed", &by_name.to_string()]);
    eprintln!(
        "the harvest on its own seed: {} of {} pass",
        passed(&replayed),
        report_tests(&replayed).len()
    );
    assert!(passed(&replayed) > 0, "{replayed:#}");

    // In the class, her seed follows from her submission too: it earns nothing.
    let subs = tmp.path().join("subs");
    fs::create_dir_all(&subs).unwrap();
    fs::write(subs.join("mallory.rs"), &forgery).unwrap();
    let (code, row, report) = class_of(&subs, &tmp.path().join("results"), class_seed, "mallory");
    assert_eq!(code, 0, "{row:#}");
    assert_ran(&report);
    assert_nothing_passed(&report);
    assert_eq!(row["total"], 0.0, "{row:#}");
    let seed = report["instances"]["seed"].as_u64().unwrap();
    assert_ne!(seed, by_name);
    assert_eq!(
        seed,
        seed_of_submission(class_seed, "mallory", row["sha256"].as_str().unwrap())
    );
    // Replayed by hand with the seed the report names, the class's grade is the same: the forgery ran
    // and its answers were judged against instances it had never seen.
    assert_forgery_judged_and_failed(&dir, seed, &prompts);
}

#[test]
fn a_seed_from_an_earlier_report_replayed_in_a_resumed_class_earns_nothing() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let subs = tmp.path().join("subs");
    fs::create_dir_all(&subs).unwrap();
    let results = tmp.path().join("results");
    let class_seed = u64::from(std::process::id()) << 20 | 0x5eed;
    // Mallory hands in the skeleton; her report names the seed of its grade.
    fs::write(subs.join("mallory.rs"), skeleton()).unwrap();
    let (_, first_row, first) = class_of(&subs, &results, class_seed, "mallory");
    if first["sandbox"]["active"] != true {
        assert!(sandboxed(&first));
        return;
    }
    let named = first["instances"]["seed"]
        .as_u64()
        .expect("the report names its seed");
    // With it she harvests that grade's expected traces, and hands in the forgery that writes them.
    let dir = practice_at(tmp.path(), "harvest");
    let (forgery, prompts) = harvest(&dir, named).unwrap();
    write_loop(&dir, &forgery);
    let (_, replayed) = grade_json(&dir, &["--seed", &named.to_string()]);
    assert!(
        passed(&replayed) > 0,
        "on the named seed it passes: {replayed:#}"
    );
    fs::write(subs.join("mallory.rs"), &forgery).unwrap();

    // Again, later: the class resumes, regrades her changed file with a seed no report has named, and
    // the replay earns nothing.
    let (code, row, report) = class_of(&subs, &results, class_seed, "mallory");
    assert_eq!(code, 0, "{row:#}");
    assert_ne!(row["sha256"], first_row["sha256"]);
    assert_ran(&report);
    assert_nothing_passed(&report);
    let seed = report["instances"]["seed"].as_u64().unwrap();
    assert_ne!(seed, named, "a regrade reused a seed a report named");
    assert_forgery_judged_and_failed(&dir, seed, &prompts);

    // Without --seed, each run draws a class seed of its own: the same file draws other instances.
    let fresh = |out: &str| {
        let results = tmp.path().join(out);
        let out = grade_class(
            tmp.path(),
            &subs,
            &results,
            &["--jobs", "1", "--format", "json"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        let row = learner_row(&class_summary(&results), "mallory").clone();
        let text = fs::read_to_string(results.join(row["report"].as_str().unwrap())).unwrap();
        let report: Value = serde_json::from_str(&text).unwrap();
        assert_nothing_passed(&report);
        report["instances"]["seed"].as_u64().unwrap()
    };
    assert_ne!(fresh("fresh-1"), fresh("fresh-2"));
}

#[test]
fn a_classmate_spinning_48_threads_in_every_test_costs_correct_loops_nothing() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let subs = tmp.path().join("subs");
    fs::create_dir_all(&subs).unwrap();
    // Every test of the hog's spins 48 threads on every core and never ends.
    let hog = skeleton_starting_with(
        "for _ in 0..48 { std::thread::spawn(|| loop { std::hint::spin_loop() }); } std::future::pending::<()>().await;",
    );
    fs::write(subs.join("hog.rs"), hog).unwrap();
    let copies = ["ann", "bob", "cat", "dan", "eve"];
    for name in copies {
        fs::write(subs.join(format!("{name}.rs")), solution()).unwrap();
    }
    let results = tmp.path().join("results");
    let out = grade_class(
        tmp.path(),
        &subs,
        &results,
        &["--jobs", "2", "--format", "json", "--lang", "en"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let summary = class_summary(&results);
    let report = |name: &str| -> Value {
        let row = learner_row(&summary, name);
        let text = fs::read_to_string(results.join(row["report"].as_str().unwrap())).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    // The hog ran: its tests were stopped, not refused or unbuilt.
    let hogged = report("hog");
    if !sandboxed(&hogged) {
        return;
    }
    assert_ran(&hogged);
    assert_nothing_passed(&hogged);
    let stopped = report_tests(&hogged)
        .iter()
        .filter(|(_, t)| t["status"] == "timeout")
        .count();
    assert!(stopped > 0, "{hogged:#}");
    // Every correct loop beside it gets every point.
    for name in copies {
        let row = learner_row(&summary, name);
        assert_eq!(row["status"], "pass", "{name}: {:#}", report(name));
        assert_eq!(row["total"], 100.0, "{name}: {row:#}");
    }
}
