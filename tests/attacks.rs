//! Attacks on the grade, each a real malicious submission graded through the real practice-and-grade
//! path: the attack must fail, and the verdict must hold.
//!
//! These tests need the sandbox (Linux with Landlock). Where it is missing they fail, saying so, unless
//! `PI_COURSE_TESTS_ALLOW_UNSANDBOXED=1` is set: then each says it was skipped.

mod support;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

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
        &format!(
            "const LEAK: &str = include_str!({secret:?});\n{}",
            solution_starting_with("let _ = LEAK;")
        ),
    );
    let (report, text) = reports_with_home(&dir, &home);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(report["status"], "error", "{report}");
    assert!(!text.contains(SECRET), "the secret leaked:\n{text}");
    assert!(
        text.contains("secret.txt"),
        "rustc's error names the file:\n{text}"
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
    let attack =
        r#"let mut hog: Vec<Vec<u8>> = Vec::new(); loop { hog.push(vec![7u8; 64 << 20]); }"#;
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
