//! `pi-course practice`, driven through the real binary. What a practice directory must hold is read from
//! the repository (the chapter manifest and its files), so these tests follow the content as it changes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support;
use crate::support::{
    chapter_dir, chapter_manifest, describe, files_under, names, pi_course, practice_at, repo, run,
    stderr, stdout, tree,
};
use sha2::{Digest, Sha256};

const METADATA: &str = ".pi-course/practice.toml";

/// The parts of `chapter.toml` these tests rely on.
struct Manifest {
    default_dir: String,
    snapshot: Option<String>,
    editable: Vec<String>,
    guide_zh: String,
    guide_en: String,
    title_zh: String,
    title_en: String,
}

fn manifest() -> Manifest {
    let m = chapter_manifest();
    let text_of = |key: &str, lang: &str| m[key][lang].as_str().unwrap().to_string();
    Manifest {
        default_dir: m["default_dir"].as_str().unwrap().to_string(),
        snapshot: m.get("snapshot").map(|s| s.as_str().unwrap().to_string()),
        editable: m["editable"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_string())
            .collect(),
        guide_zh: text_of("guide", "zh"),
        guide_en: text_of("guide", "en"),
        title_zh: text_of("title", "zh"),
        title_en: text_of("title", "en"),
    }
}

/// The given files: the snapshot, overridden by the chapter's own files, without the editable ones.
fn expected_given() -> BTreeMap<String, Vec<u8>> {
    let m = manifest();
    // The test harness every chapter gets, under harness/.
    let mut files: BTreeMap<String, Vec<u8>> = files_under(&repo().join("harness"))
        .into_iter()
        .map(|(path, bytes)| (format!("harness/{path}"), bytes))
        .collect();
    if let Some(s) = &m.snapshot {
        files.extend(files_under(&repo().join("snapshots").join(s)));
    }
    files.extend(files_under(&chapter_dir().join("files")));
    for editable in &m.editable {
        files.remove(editable);
    }
    files
}

/// The editable files as the learner receives them.
fn expected_skeleton() -> BTreeMap<String, Vec<u8>> {
    let skeleton = files_under(&chapter_dir().join("skeleton"));
    manifest()
        .editable
        .iter()
        .map(|path| (path.clone(), skeleton[path].clone()))
        .collect()
}

/// The files of a made practice directory by `/`-separated relative path.
fn written_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files_under(dir)
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn assert_refused(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(2),
        "expected exit 2\n{}",
        describe(output)
    );
    assert!(
        stdout(output).is_empty(),
        "nothing on stdout on error\n{}",
        describe(output)
    );
}

/// A practice directory holds exactly the given files, the skeleton and the metadata.
fn assert_whole(dir: &Path) {
    let written = written_files(dir);
    let mut expected = expected_given();
    expected.extend(expected_skeleton());
    let expected_paths: BTreeSet<&str> = expected
        .keys()
        .map(String::as_str)
        .chain([METADATA])
        .collect();
    let written_paths: BTreeSet<&str> = written.keys().map(String::as_str).collect();
    assert_eq!(written_paths, expected_paths, "files in {}", dir.display());
    for (path, bytes) in &expected {
        assert!(
            written[path] == *bytes,
            "{path} differs from the repository copy"
        );
    }
}

fn has_cjk(text: &str) -> bool {
    text.chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3000}'..='\u{303f}').contains(&c))
}

#[test]
fn default_dir_comes_from_the_manifest_and_the_output_says_what_to_do() {
    let m = manifest();
    let tmp = tempfile::tempdir().unwrap();
    let output = run(tmp.path(), &["practice", "07"]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(
        names(tmp.path()),
        [m.default_dir.as_str()],
        "only the directory, no staging sibling"
    );
    let dir = tmp.path().join(&m.default_dir);
    assert_whole(&dir);

    let out = stdout(&output);
    let absolute = fs::canonicalize(&dir).unwrap();
    assert!(
        out.contains(&absolute.display().to_string()),
        "says where it is\n{out}"
    );
    assert!(
        out.contains(&format!("cd {}", m.default_dir)),
        "says to cd into it\n{out}"
    );
    assert!(
        out.contains("pi-course grade"),
        "names the first command\n{out}"
    );
    assert!(out.contains(&m.guide_zh), "names the guide\n{out}");
    assert!(out.contains(&m.title_zh), "names the chapter\n{out}");
    assert!(has_cjk(&out), "Chinese by default\n{out}");
}

#[test]
fn explicit_dir_and_every_spelling_of_the_chapter() {
    let tmp = tempfile::tempdir().unwrap();
    for (chapter, name) in [
        ("07", "mine"),
        ("7", "seven"),
        ("07-agent-loop", "folder"),
        ("agent-loop", "slug"),
    ] {
        let output = run(tmp.path(), &["practice", chapter, name]);
        assert!(
            output.status.success(),
            "practice {chapter} {name}\n{}",
            describe(&output)
        );
        assert_whole(&tmp.path().join(name));
    }
    // A trailing slash names the same directory.
    let output = run(tmp.path(), &["practice", "07", "slashed/"]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(
        names(tmp.path()),
        ["folder", "mine", "seven", "slashed", "slug"]
    );
}

#[test]
fn metadata_fingerprints_every_given_file_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = practice_at(tmp.path(), "p");
    let text = fs::read_to_string(dir.join(METADATA)).unwrap();
    let metadata: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(metadata["chapter"].as_str(), Some("07"));
    assert_eq!(
        metadata["made_by"].as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );

    let given = metadata["given"].as_table().expect("a [given] table");
    let fingerprinted: BTreeSet<&str> = given.keys().map(String::as_str).collect();
    let expected = expected_given();
    let expected_paths: BTreeSet<&str> = expected.keys().map(String::as_str).collect();
    assert_eq!(
        fingerprinted, expected_paths,
        "one fingerprint per given file, and only those"
    );
    for (path, fingerprint) in given {
        let written = fs::read(dir.join(path)).unwrap();
        assert_eq!(
            fingerprint.as_str(),
            Some(sha256(&written).as_str()),
            "{path}"
        );
    }
    for editable in manifest().editable {
        assert!(
            !given.contains_key(&editable),
            "{editable} is the learner's, not a given file"
        );
    }
}

#[test]
fn the_reference_solution_is_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = practice_at(tmp.path(), "p");
    let written = written_files(&dir);
    for (path, skeleton) in expected_skeleton() {
        assert!(written[&path] == skeleton, "{path} is the skeleton");
    }
    let skeletons: Vec<Vec<u8>> = expected_skeleton().into_values().collect();
    for (path, solution) in files_under(&chapter_dir().join("solution")) {
        if solution.is_empty() || skeletons.contains(&solution) {
            continue;
        }
        for (written_path, bytes) in &written {
            assert!(
                *bytes != solution,
                "{written_path} is the reference solution's {path}"
            );
        }
    }
    assert!(written
        .keys()
        .all(|p| !p.contains("solution") && !p.contains("mutants")));
    assert!(!dir.join(".git").exists(), "no git repository");
}

#[test]
fn the_directory_is_a_standalone_cargo_package() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = practice_at(tmp.path(), "p");
    let cargo: toml::Table =
        toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    assert!(
        cargo.contains_key("workspace"),
        "its own [workspace], so it builds inside another workspace"
    );
    assert!(
        dir.join("Cargo.lock").is_file(),
        "dependency versions are pinned"
    );
}

#[cfg(unix)]
#[test]
fn permissions_are_those_of_mkdir() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = practice_at(tmp.path(), "p");
    let reference = tmp.path().join("reference");
    fs::create_dir(&reference).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(
        mode(&dir),
        mode(&reference),
        "not the 0700 of a temporary directory"
    );
}

#[test]
fn a_non_empty_dir_is_refused_untouched_with_a_free_name_suggested() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pi-practice-07");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("notes.txt"), "mine, do not touch\n").unwrap();
    fs::create_dir(tmp.path().join("pi-practice-07-2")).unwrap(); // taken, so -3 is suggested
    let before = tree(tmp.path());

    for args in [
        &["practice", "07"][..],
        &["practice", "07", "pi-practice-07"],
    ] {
        let output = run(tmp.path(), args);
        assert_refused(&output);
        let err = stderr(&output);
        assert!(err.contains("pi-practice-07"), "names the directory\n{err}");
        assert!(
            err.contains("pi-course practice 07 pi-practice-07-3"),
            "suggests a free name\n{err}"
        );
        assert_eq!(tree(tmp.path()), before, "nothing changed, no sibling left");
    }
}

#[test]
fn a_dir_holding_only_hidden_files_is_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    fs::create_dir_all(dir.join(".git")).unwrap();
    fs::write(dir.join(".env"), "SECRET=1\n").unwrap();
    let before = tree(tmp.path());
    let output = run(tmp.path(), &["practice", "07", "p"]);
    assert_refused(&output);
    assert_eq!(tree(tmp.path()), before);
}

#[cfg(unix)]
#[test]
fn an_empty_dir_is_filled_in_place() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    fs::create_dir(&dir).unwrap();
    let inode = fs::metadata(&dir).unwrap().ino();
    let output = run(tmp.path(), &["practice", "07", "p"]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_whole(&dir);
    assert_eq!(
        fs::metadata(&dir).unwrap().ino(),
        inode,
        "the same directory, not a replacement"
    );
    assert_eq!(names(tmp.path()), ["p"]);
}

#[test]
fn dot_fills_the_empty_current_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let output = run(tmp.path(), &["practice", "07", "."]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_whole(tmp.path());
    let out = stdout(&output);
    assert!(!out.contains("cd "), "already there: no cd\n{out}");
    assert!(out.contains("pi-course grade"), "{out}");
}

#[test]
fn a_file_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("p"), b"\x00not a directory\xff").unwrap();
    let before = tree(tmp.path());
    let output = run(tmp.path(), &["practice", "07", "p"]);
    assert_refused(&output);
    assert!(
        stderr(&output).contains("p-2"),
        "suggests a free name\n{}",
        describe(&output)
    );
    assert_eq!(tree(tmp.path()), before);
}

#[test]
fn a_missing_parent_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let output = run(tmp.path(), &["practice", "07", "no/such/place"]);
    assert_refused(&output);
    let err = stderr(&output);
    assert!(err.contains("no/such"), "names the missing folder\n{err}");
    assert!(
        err.contains("mkdir -p no/such"),
        "says how to make it\n{err}"
    );
    assert!(names(tmp.path()).is_empty());
}

#[test]
fn a_parent_that_is_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("f"), "a file").unwrap();
    let before = tree(tmp.path());
    for dir in ["f/p", "f/sub/p"] {
        let output = run(tmp.path(), &["practice", "07", dir]);
        assert_refused(&output);
        assert_eq!(tree(tmp.path()), before, "{dir}");
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_place_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    if support::is_root() {
        eprintln!("note: skipped: running as root, where permission bits do not stop writes");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let locked = tmp.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
    let before = tree(tmp.path());
    // A new directory in a read-only parent, and the read-only empty directory itself.
    let outputs = [
        run(tmp.path(), &["practice", "07", "locked/p"]),
        run(tmp.path(), &["practice", "07", "locked"]),
    ];
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    for output in &outputs {
        assert_refused(output);
        assert!(
            stderr(output).contains("locked"),
            "names the place\n{}",
            describe(output)
        );
    }
    assert_eq!(tree(tmp.path()), before);
}

#[test]
fn an_unknown_chapter_is_refused_with_the_known_ones_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let output = run(tmp.path(), &["practice", "99"]);
    assert_refused(&output);
    let err = stderr(&output);
    assert!(err.contains("99"), "names what was asked\n{err}");
    assert!(
        err.contains("07") && err.contains(&manifest().title_zh),
        "lists the chapters\n{err}"
    );
    assert!(names(tmp.path()).is_empty());
}

#[test]
fn spaces_and_non_ascii_in_the_path_work() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("练习 目录")).unwrap();
    let output = run(tmp.path(), &["practice", "07", "练习 目录/第七章"]);
    assert!(output.status.success(), "{}", describe(&output));
    let dir = tmp.path().join("练习 目录").join("第七章");
    assert_whole(&dir);
    assert_eq!(names(&tmp.path().join("练习 目录")), ["第七章"]);
    let out = stdout(&output);
    assert!(
        out.contains("cd '练习 目录/第七章'"),
        "a cd the shell takes as one word\n{out}"
    );

    // The same place again: refused, with a suggestion the shell can take too.
    let output = run(tmp.path(), &["practice", "07", "练习 目录/第七章"]);
    assert_refused(&output);
    assert!(
        stderr(&output).contains("'练习 目录/第七章-2'"),
        "{}",
        describe(&output)
    );

    // A working directory with spaces and non-ASCII characters, and the default name inside it.
    let output = run(&tmp.path().join("练习 目录"), &["practice", "07"]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_whole(&tmp.path().join("练习 目录").join(manifest().default_dir));
}

#[test]
fn english_with_the_flag_or_the_environment() {
    let m = manifest();
    let tmp = tempfile::tempdir().unwrap();
    let by_flag = run(tmp.path(), &["--lang", "en", "practice", "07", "a"]);
    let by_env = pi_course(tmp.path())
        .env("PI_COURSE_LANG", "en")
        .args(["practice", "07", "b"])
        .output()
        .unwrap();
    let flag_after = run(tmp.path(), &["practice", "07", "c", "--lang", "en"]);
    for output in [&by_flag, &by_env, &flag_after] {
        assert!(output.status.success(), "{}", describe(output));
        let out = stdout(output);
        assert!(!has_cjk(&out), "English only\n{out}");
        assert!(out.contains(&m.guide_en), "names the English guide\n{out}");
        assert!(out.contains(&m.title_en), "{out}");
        assert!(out.contains("pi-course grade"), "{out}");
    }
    // Errors too.
    let output = run(tmp.path(), &["--lang", "en", "practice", "99"]);
    assert_refused(&output);
    assert!(!has_cjk(&stderr(&output)), "{}", describe(&output));
    let output = run(tmp.path(), &["--lang", "en", "practice", "07", "a"]);
    assert_refused(&output);
    assert!(!has_cjk(&stderr(&output)), "{}", describe(&output));
}

/// A write failing part way (as with a full disk) leaves nothing: no directory, no staging sibling.
/// The failure is real, not simulated inside pi-course: the child runs under a file-size limit (what
/// `ulimit -f` sets), so writing past it fails with EFBIG, as a full disk fails with ENOSPC.
#[cfg(unix)]
#[test]
fn a_failure_half_way_leaves_nothing() {
    use std::os::unix::process::CommandExt;

    let mut sizes: Vec<usize> = expected_given()
        .values()
        .chain(expected_skeleton().values())
        .map(Vec::len)
        .collect();
    sizes.sort();
    let largest = *sizes.last().unwrap();
    // 1 byte: fails at the first non-empty file. largest - 1: every smaller file is written first.
    let limits = [1, largest.saturating_sub(1).max(1)];

    for limit in limits {
        for empty_dir_first in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            if empty_dir_first {
                fs::create_dir(tmp.path().join("p")).unwrap();
            }
            let before = tree(tmp.path());
            let mut command = pi_course(tmp.path());
            command.args(["practice", "07", "p"]);
            let limit = limit as libc::rlim_t;
            // SAFETY: between fork and exec only an async-signal-safe call (setrlimit).
            unsafe {
                command.pre_exec(move || {
                    let rlimit = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let output = command.output().unwrap();
            let case = format!(
                "limit {limit} bytes, empty dir first: {empty_dir_first}\n{}",
                describe(&output)
            );
            assert_eq!(output.status.code(), Some(1), "{case}");
            assert!(stderr(&output).contains("p"), "{case}");
            assert_eq!(tree(tmp.path()), before, "nothing left behind: {case}");
        }
    }
}

/// Ctrl-C at any moment leaves either the whole directory or nothing. The signal is sent at delays spread
/// over the command's run, so some land inside the window where the directory is being written.
#[cfg(unix)]
#[test]
fn an_interrupt_leaves_the_whole_directory_or_nothing() {
    use std::time::{Duration, Instant};

    // How long a run lasts after `spawn` returns (the best of three), to spread the delays over it.
    let run_time = (0..3)
        .map(|_| {
            let probe = tempfile::tempdir().unwrap();
            let mut child = pi_course(probe.path())
                .args(["practice", "07", "p"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let started = Instant::now();
            assert!(child.wait().unwrap().success());
            started.elapsed()
        })
        .min()
        .unwrap()
        .max(Duration::from_micros(500));

    let steps = 30;
    for empty_dir_first in [false, true] {
        let (mut made, mut untouched) = (0, 0);
        for step in 0..steps {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("p");
            if empty_dir_first {
                fs::create_dir(&dir).unwrap();
            }
            let before = tree(tmp.path());
            let mut child = pi_course(tmp.path())
                .args(["practice", "07", "p"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(run_time * step / steps);
            // SAFETY: kill with the pid of our own child, which has not been waited for yet.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGINT);
            }
            child.wait().unwrap();
            if dir.join(METADATA).exists() {
                assert_whole(&dir);
                assert_eq!(names(tmp.path()), ["p"], "no staging sibling left");
                made += 1;
            } else {
                let case = format!("step {step}, empty dir first: {empty_dir_first}");
                assert_eq!(tree(tmp.path()), before, "interrupted at {case}: half-made");
                untouched += 1;
            }
        }
        eprintln!(
            "interrupts (empty dir first: {empty_dir_first}): {made} left a whole directory, {untouched} left nothing changed"
        );
    }
}

/// A place that takes no new directory (like /proc) is bad input, said with the system's reason (in
/// the learner's language) and no name of a temporary directory, in both languages.
#[cfg(target_os = "linux")]
#[test]
fn a_place_that_takes_no_directory_is_refused_without_a_temporary_name() {
    let tmp = tempfile::tempdir().unwrap();
    for (lang, wanted) in [
        ("zh", "无法在 /proc 中写入"),
        ("en", "Cannot write in /proc"),
    ] {
        let out = run(tmp.path(), &["practice", "07", "/proc/x", "--lang", lang]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        let err = stderr(&out);
        assert!(err.contains(wanted), "{err}");
        assert!(!err.contains(".tmp-") && !err.contains("at path"), "{err}");
        assert!(err.contains("cd ~ && pi-course practice 07"), "{err}");
        // The system's reason, in the learner's language, with its number.
        assert!(
            err.contains("(os error ") || err.contains("（os error "),
            "{err}"
        );
        if lang == "zh" {
            assert!(!err.contains("No such") && !err.contains("denied"), "{err}");
        }
    }
}
