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
    let messages: String = report_tests(&report)
        .iter()
        .filter_map(|(_, t)| t["message"].as_str())
        .collect();
    let env_line = messages
        .lines()
        .find(|l| l.contains("ENV HOME="))
        .expect("a message carries the build's environment");
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
