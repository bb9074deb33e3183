//! `pi-course grade-class` on real classes: every shape of entry, attacks among them in both orders,
//! summaries that match the per-learner reports, resuming, Ctrl-C, and bad input.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use crate::support::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("class-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// The skeleton with `statement` run first thing in `run_agent_loop`.
fn skeleton_starting_with(statement: &str) -> String {
    let signature = "pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {\n";
    let s = skeleton();
    assert_eq!(s.matches(signature).count(), 1);
    s.replacen(signature, &format!("{signature}    {statement}\n"), 1)
}

/// A loop that prints passing lines for every test and exits: it must forge nothing.
fn forging() -> String {
    skeleton_starting_with(
        r#"println!("\ntest result: ok. 36 passed;"); eprintln!("test result: ok."); std::process::exit(0);"#,
    )
}

/// The reference, first trying to overwrite or remove every test executable and build record in the
/// shared cache, so that later grades would run its fake.
fn poisoning() -> String {
    let mut found = Vec::new();
    let mut stack = vec![cache().join("target")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name.starts_with("ch07-") || name.starts_with(".pi-course") {
                found.push(format!("{:?}", path.display().to_string()));
            }
        }
    }
    let fake = "#!/bin/sh\\necho 'test result: ok. 1 passed;'\\n";
    solution_starting_with(&format!(
        r#"for path in [{}] {{ let _ = std::fs::write(path, "{fake}"); let _ = std::fs::remove_file(path); }}"#,
        found.join(", ")
    ))
}

/// Writes `text` to `path`, making its directory.
fn put(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A class with every shape of entry: the reference as a file, an untouched practice directory, a
/// folder holding a buggy loop, a file that does not compile, and a forging and a poisoning submission
/// named so they sort `attackers` ("aa" first, "zz" last). Returns the submissions folder and, by
/// learner, the file graded.
fn class(parent: &Path, attackers: &str) -> (PathBuf, BTreeMap<String, PathBuf>) {
    let subs = parent.join("submissions");
    fs::create_dir(&subs).unwrap();
    let mut files = BTreeMap::new();
    let mut file = |name: &str, rel: &str, text: &str| {
        let path = subs.join(rel);
        put(&path, text);
        files.insert(name.to_string(), path);
    };
    file("reference", "reference.rs", &solution());
    file(
        "buggy",
        "buggy/agent_loop.rs",
        &mutant("tool-definitions-not-sent"),
    );
    file(
        "broken",
        "broken.rs",
        &format!("{}\nfn broken( {{\n", solution()),
    );
    file(
        &format!("{attackers}-forge"),
        &format!("{attackers}-forge/src/agent_loop.rs"),
        &forging(),
    );
    file(
        &format!("{attackers}-poison"),
        &format!("{attackers}-poison.rs"),
        &poisoning(),
    );
    let untouched = practice_at(&subs, "untouched");
    files.insert("untouched".into(), untouched.join("src/agent_loop.rs"));
    (subs, files)
}

/// Every learner's report, by name, each checked against the grade's JSON schema.
fn reports(results: &Path, summary: &Value) -> BTreeMap<String, Value> {
    summary["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let path = results.join(row["report"].as_str().unwrap());
            let report: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_schema(&report);
            (row["name"].as_str().unwrap().to_string(), report)
        })
        .collect()
}

/// Parses RFC 4180 CSV.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

/// Points as the CSV writes them.
fn points(v: &Value) -> String {
    let x = v.as_f64().unwrap();
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The summaries agree with each other and with every learner's report and file.
fn assert_summaries_match(results: &Path, files: &BTreeMap<String, PathBuf>) {
    let summary = class_summary(results);
    let reports = reports(results, &summary);
    let rows = summary["learners"].as_array().unwrap();
    let names: BTreeSet<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let expected: BTreeSet<&str> = files.keys().map(String::as_str).collect();
    assert!(
        expected.is_subset(&names),
        "{names:?} lacks some of {expected:?}"
    );
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let report = &reports[name];
        assert_eq!(row["status"], report["status"], "{name}");
        assert_eq!(row["total"], report["score"], "{name}");
        assert_eq!(row["max"], report["max"], "{name}");
        assert_eq!(row["warnings"], report["warnings"], "{name}");
        assert_eq!(
            row["sandbox"] == "on",
            report["sandbox"]["active"] == true,
            "{name}"
        );
        let groups = report["groups"].as_array().unwrap();
        let cells = row["groups"].as_array().unwrap();
        assert_eq!(cells.len(), groups.len(), "{name}");
        for (cell, group) in cells.iter().zip(groups) {
            assert_eq!(cell["slug"], group["slug"], "{name}");
            assert_eq!(cell["status"], group["status"], "{name}");
            assert_eq!(cell["score"], group["score"], "{name}");
            assert_eq!(cell["max"], group["max"], "{name}");
        }
        if let Some(file) = files.get(name) {
            assert_eq!(
                row["sha256"].as_str().unwrap(),
                sha256(&fs::read(file).unwrap()),
                "{name}"
            );
        }
        for key in ["junit", "page"] {
            assert!(
                results.join(row[key].as_str().unwrap()).is_file(),
                "{name}: {key}"
            );
        }
        let xml = fs::read_to_string(results.join(row["junit"].as_str().unwrap())).unwrap();
        roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    // The CSV holds the same rows.
    let csv = parse_csv(&fs::read_to_string(results.join("summary.csv")).unwrap());
    let header = &csv[0];
    assert_eq!(csv.len() - 1, rows.len());
    for (line, row) in csv[1..].iter().zip(rows) {
        let field = |column: &str| {
            let i = header
                .iter()
                .position(|h| h == column)
                .unwrap_or_else(|| panic!("no column {column}: {header:?}"));
            line[i].as_str()
        };
        let name = row["name"].as_str().unwrap();
        assert_eq!(field("name"), name);
        assert_eq!(field("status"), row["status"].as_str().unwrap(), "{name}");
        assert_eq!(field("total"), points(&row["total"]), "{name}");
        assert_eq!(field("max"), points(&row["max"]), "{name}");
        assert_eq!(field("build"), row["build"].as_str().unwrap(), "{name}");
        assert_eq!(field("sandbox"), row["sandbox"].as_str().unwrap(), "{name}");
        assert_eq!(field("sha256"), row["sha256"].as_str().unwrap(), "{name}");
        assert_eq!(field("graded"), row["graded"].to_string(), "{name}");
        assert!(field("seconds").parse::<f64>().is_ok(), "{name}");
        let warnings: Vec<&str> = row["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(field("warnings"), warnings.join(" | "), "{name}");
        for cell in row["groups"].as_array().unwrap() {
            let slug = cell["slug"].as_str().unwrap();
            assert_eq!(field(slug), cell["status"].as_str().unwrap(), "{name}");
            assert_eq!(
                field(&format!("{slug} points")),
                points(&cell["score"]),
                "{name}"
            );
        }
    }
}

/// The statuses of a report's groups, by slug.
fn group_statuses(report: &Value) -> BTreeMap<String, String> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["slug"].as_str().unwrap().to_string(),
                g["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// What each learner got is what they deserve, whatever the attackers did.
fn assert_verdicts(results: &Path, attackers: &str) {
    let summary = class_summary(results);
    let reports = reports(results, &summary);
    let row = |name: &str| learner_row(&summary, name).clone();

    let reference = row("reference");
    assert_eq!(
        (reference["status"].as_str(), reference["total"].as_f64()),
        (Some("pass"), Some(100.0)),
        "{reference:#}"
    );
    assert_eq!(reference["build"], "ok");
    assert_eq!(reference["graded"], true);

    let untouched = row("untouched");
    assert_eq!(untouched["status"], "fail", "{untouched:#}");
    assert_eq!(untouched["total"].as_f64(), Some(0.0));
    for cell in untouched["groups"].as_array().unwrap() {
        assert_eq!(cell["status"], "fail", "{untouched:#}");
    }

    let buggy = row("buggy");
    assert_eq!(buggy["status"], "fail", "{buggy:#}");
    assert_eq!(
        group_statuses(&reports["buggy"])["plain-stop"],
        "fail",
        "the mutant is caught by its group"
    );

    let broken = row("broken");
    assert_eq!(
        (
            broken["status"].as_str(),
            broken["build"].as_str(),
            broken["graded"].as_bool()
        ),
        (Some("error"), Some("error"), Some(true)),
        "{broken:#}"
    );
    assert!(
        reports["broken"]["message"]
            .as_str()
            .unwrap()
            .contains("broken.rs:"),
        "the compile error points at the submitted file: {:#}",
        reports["broken"]
    );

    // The forger passes nothing; the poisoner's own grade ran, and nobody else was touched by it.
    let forge = &reports[&format!("{attackers}-forge")];
    assert_ne!(
        forge["status"], "error",
        "the forger built and ran: {forge:#}"
    );
    for group in forge["groups"].as_array().unwrap() {
        for test in group["tests"].as_array().unwrap() {
            assert_ne!(test["status"], "pass", "forged: {test:#}");
        }
    }
    let poison = &reports[&format!("{attackers}-poison")];
    assert_ne!(
        poison["status"], "error",
        "the poisoner built and ran: {poison:#}"
    );
    for (name, report) in &reports {
        assert_eq!(
            report["sandbox"]["active"], true,
            "{name} was not sandboxed"
        );
    }
}

#[test]
fn a_class_of_every_shape_gets_the_right_verdicts_whatever_order_the_attackers_come_in() {
    for attackers in ["aa", "zz"] {
        let dir = tmp();
        let (subs, files) = class(dir.path(), attackers);
        let before = tree(&subs);
        let results = dir.path().join("results");
        let out = grade_class(
            dir.path(),
            &subs,
            &results,
            &["--jobs", "2", "--lang", "en"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{attackers}: {}",
            describe(&out)
        );
        assert!(
            stdout(&out).contains("6 learners: 2 passed, 3 failed, 1 did not build, 0 could not"),
            "{}",
            describe(&out)
        );
        // Progress: one line per learner when stderr is not a terminal, with the count and the time left.
        let err = stderr(&out);
        for name in files.keys() {
            assert!(
                err.lines().any(|l| l.contains(&format!("] {name}: "))),
                "{name}: {err}"
            );
        }
        assert!(err.contains("[6/6]"), "{err}");
        assert_eq!(tree(&subs), before, "the submissions were written to");
        assert_summaries_match(&results, &files);
        assert_verdicts(&results, attackers);
        assert!(results.join("index.html").is_file());
    }
}

#[test]
fn the_class_verdicts_are_those_of_single_grades() {
    let dir = tmp();
    let subs = dir.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    let loops = [
        ("mutant-a", mutant("second-turn-end")),
        ("mutant-b", mutant("partial-appended")),
        ("skeleton-en", {
            fs::read_to_string(chapter_dir().join("skeleton.en/src/agent_loop.rs")).unwrap()
        }),
    ];
    for (name, code) in &loops {
        put(&subs.join(format!("{name}.rs")), code);
    }
    // One class seed: each learner's own is derived from it, their name and their file (the same
    // whichever part or run grades them); a single grade with that learner's seed draws the same
    // instances, so the same verdicts and the same messages (up to how concurrent calls interleaved, see
    // `replayable`).
    let seed = "4242";
    let results = dir.path().join("results");
    let out = grade_class(
        dir.path(),
        &subs,
        &results,
        &["--jobs", "2", "--seed", seed],
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let summary = class_summary(&results);
    let reports = reports(&results, &summary);
    let (_p, practice) = practice();
    for (name, code) in &loops {
        let learner_seed = reports[*name]["instances"]["seed"].to_string();
        assert!(
            learner_seed.parse::<u64>().is_ok() && learner_seed != seed,
            "{name}: a learner's seed is derived from the class's: {learner_seed}"
        );
        write_loop(&practice, code);
        let (_, single) = grade_json(&practice, &["--seed", &learner_seed]);
        assert_eq!(
            group_statuses(&reports[*name]),
            group_statuses(&single),
            "{name}"
        );
        assert_eq!(reports[*name]["score"], single["score"], "{name}");
        assert_eq!(
            replayable(&reports[*name]["groups"]),
            replayable(&single["groups"]),
            "{name}"
        );
    }
}

fn modified(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

#[test]
fn a_second_run_skips_everyone_and_a_changed_file_is_graded_alone() {
    let dir = tmp();
    let subs = dir.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    put(&subs.join("ann.rs"), &solution());
    put(&subs.join("ben/agent_loop.rs"), &skeleton());
    let cy = practice_at(&subs, "cy");
    put(&subs.join("notes.txt"), "not a submission");
    let results = dir.path().join("results");

    let first = grade_class(dir.path(), &subs, &results, &["--lang", "en"]);
    // notes.txt is one row that could not be graded: reported, not stopping the class, exit 1.
    assert_eq!(first.status.code(), Some(1), "{}", describe(&first));
    let summary = class_summary(&results);
    let notes = learner_row(&summary, "notes.txt");
    assert_eq!(
        (notes["graded"].as_bool(), notes["build"].as_str()),
        (Some(false), Some("none"))
    );
    assert!(
        notes["message"].as_str().unwrap().contains(".rs"),
        "{notes:#}"
    );
    assert!(stdout(&first).contains("notes.txt"), "{}", describe(&first));
    let reports_of = |name: &str| results.join(format!("learners/{name}.json"));
    let times: BTreeMap<&str, SystemTime> = ["ann", "ben", "cy"]
        .into_iter()
        .map(|n| (n, modified(&reports_of(n))))
        .collect();

    // Nothing changed: everyone who got a verdict is kept as is.
    let second = grade_class(dir.path(), &subs, &results, &["--lang", "en"]);
    assert!(
        stdout(&second).contains("Graded 1 now, skipped 3"),
        "{}",
        describe(&second)
    );
    for (name, time) in &times {
        assert_eq!(
            modified(&reports_of(name)),
            *time,
            "{name} was graded again"
        );
    }
    assert_eq!(class_summary(&results)["learners"], summary["learners"]);
    // For a program: the summary itself on stdout.
    let json = grade_class(
        dir.path(),
        &subs,
        &results,
        &["--format", "json", "--lang", "en"],
    );
    let printed: Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(printed["learners"], summary["learners"]);
    assert_eq!(json.status.code(), Some(1), "notes.txt is still not graded");

    // One learner changed their file: they alone are graded again.
    write_loop(&cy, &solution());
    let third = grade_class(dir.path(), &subs, &results, &["--lang", "en"]);
    assert!(
        stdout(&third).contains("Graded 2 now, skipped 2"),
        "{}",
        describe(&third)
    );
    let summary = class_summary(&results);
    assert_eq!(learner_row(&summary, "cy")["status"], "pass");
    assert_ne!(modified(&reports_of("cy")), times["cy"]);
    for name in ["ann", "ben"] {
        assert_eq!(modified(&reports_of(name)), times[name], "{name}");
    }

    // --force grades everyone again; another language is another set of results.
    let forced = grade_class(dir.path(), &subs, &results, &["--lang", "en", "--force"]);
    assert!(
        !stdout(&forced).contains("skipped"),
        "{}",
        describe(&forced)
    );
    let chinese = grade_class(dir.path(), &subs, &results, &[]);
    assert!(!stdout(&chinese).contains("跳过"), "{}", describe(&chinese));
    let files = BTreeMap::from([
        ("ann".to_string(), subs.join("ann.rs")),
        ("ben".to_string(), subs.join("ben/agent_loop.rs")),
        ("cy".to_string(), cy.join("src/agent_loop.rs")),
    ]);
    assert_summaries_match(&results, &files);
}

#[test]
fn ctrl_c_keeps_every_finished_result_and_leaves_no_partial_file() {
    let dir = tmp();
    let subs = dir.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    put(&subs.join("a-done.rs"), &solution());
    put(
        &subs.join("b-spins.rs"),
        &solution_starting_with("loop { std::hint::spin_loop(); }"),
    );
    let results = dir.path().join("results");
    let scratch = dir.path().join("tmp");
    fs::create_dir(&scratch).unwrap();
    let mut child = pi_course(dir.path())
        .args(["grade-class", "submissions", "--out", "results"])
        .args(["--jobs", "1", "--timeout", "120", "--lang", "en"])
        .env("TMPDIR", &scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Gate 1: the first learner is done (one line per learner on a stderr that is not a terminal).
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines
        .by_ref()
        .map(|l| l.unwrap())
        .find(|l| l.starts_with("[1/2]"))
        .expect("the first learner finished");
    assert!(first.contains("a-done: passed"), "{first}");
    // Gate 2: the second learner's tests are running (they spin until the timeout).
    let seen = watch_children(&mut child, Duration::from_secs(600), |seen| {
        seen.iter().any(|p| p.args.contains("ch07-"))
    });
    assert!(
        seen.iter().any(|p| p.args.contains("ch07-")),
        "no test process seen: {seen:#?}"
    );
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(rest.iter().any(|l| l.contains("Interrupted")), "{rest:#?}");
    assert_groups_gone(&seen.iter().map(|p| p.pgid).collect());

    // The finished learner is kept whole; nothing of the other, and no temporary file anywhere.
    let summary = class_summary(&results);
    let names: Vec<&str> = summary["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a-done"]);
    reports(&results, &summary);
    for (path, _) in tree(&results) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.') && !name.contains("tmp"),
            "left behind: {}",
            path.display()
        );
        assert!(!name.starts_with("b-spins"), "{}", path.display());
    }
    assert_eq!(
        names_in(&scratch),
        Vec::<String>::new(),
        "the scratch directory was left"
    );

    // The same command again resumes: the finished learner is kept.
    put(&subs.join("b-spins.rs"), &skeleton());
    let again = grade_class(dir.path(), &subs, &results, &["--lang", "en"]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    assert!(
        stdout(&again).contains("Graded 1 now, skipped 1"),
        "{}",
        describe(&again)
    );
}

fn names_in(dir: &Path) -> Vec<String> {
    names(dir)
}

#[test]
fn bad_input_exits_2_says_what_to_do_and_writes_nothing() {
    let dir = tmp();
    let root = dir.path();
    let subs = root.join("submissions");
    fs::create_dir(&subs).unwrap();
    let results = root.join("results");

    // An empty class.
    fs::write(subs.join(".DS_Store"), "").unwrap();
    let out = grade_class(root, &subs, &results, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr(&out).contains("holds no submission"),
        "{}",
        describe(&out)
    );

    // Two entries that are the same learner.
    put(&subs.join("ann.rs"), &solution());
    put(&subs.join("ann/agent_loop.rs"), &solution());
    let out = grade_class(root, &subs, &results, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(stderr(&out).contains("ann"), "{}", describe(&out));
    assert!(stderr(&out).contains("rename"), "{}", describe(&out));
    fs::remove_dir_all(subs.join("ann")).unwrap();

    // Results inside the submissions, or the submissions inside the results.
    let inside = subs.join("results");
    let out = grade_class(root, &subs, &inside, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr(&out).contains("inside the submissions"),
        "{}",
        describe(&out)
    );
    assert!(stderr(&out).contains("--out"), "{}", describe(&out));
    let out = grade_class(root, &subs, root, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));

    // A directory of something else is never written into.
    let other = root.join("other");
    put(&other.join("index.html"), "mine");
    let out = grade_class(root, &subs, &other, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert_eq!(
        fs::read_to_string(other.join("index.html")).unwrap(),
        "mine"
    );

    // No learner at all at once, and a chapter that does not exist.
    for args in [["--jobs", "0"], ["--chapter", "99"]] {
        let out = grade_class(root, &subs, &results, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }

    // As JSON: one document on stdout.
    let out = grade_class(root, &subs, &inside, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["status"], "error");
    assert!(doc["fix"].is_string(), "{doc:#}");

    assert!(!results.exists(), "a refused class wrote its results");
    assert!(!inside.exists());
    assert_eq!(names(&subs), [".DS_Store", "ann.rs"]);
}

#[test]
fn on_a_terminal_the_progress_bar_redraws_in_place() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tmp();
    let subs = dir.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    put(&subs.join("ann.rs"), &solution());
    put(&subs.join("ben.rs"), &skeleton());
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty fills the two descriptors; the null name and settings pointers are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (fs::File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = pi_course(dir.path())
        .args([
            "grade-class",
            "submissions",
            "--out",
            "results",
            "--lang",
            "en",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut master = master;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child, the only holder of the terminal, has exited.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = child.wait().unwrap();
    let screen = reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert!(screen.contains("\r\x1b[2K"), "redrawn in place: {screen:?}");
    assert!(screen.contains('█'), "a bar: {screen:?}");
    assert!(
        screen.contains("2/2 · class so far: 1 not passed"),
        "{screen:?}"
    );
    for line in ["ann: passed 100/100", "ben: failed 0/100"] {
        assert!(screen.contains(line), "{line}: {screen:?}");
    }
    assert!(
        !screen.contains("[1/2]"),
        "no log lines on a terminal: {screen:?}"
    );
}

/// Makes a symbolic link at `at` (and its directory) to `target`.
fn link(target: &Path, at: &Path) {
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

#[test]
fn links_in_a_class_grade_nobody_elses_work_and_read_no_instructor_file() {
    const SECRET: &str = "INSTRUCTOR-NOTES-5c1e";
    let dir = tmp();
    let subs = dir.path().join("submissions");
    put(&subs.join("alice/src/agent_loop.rs"), &solution());
    let secret = dir.path().join("instructor-notes.txt");
    fs::write(&secret, format!("{SECRET} on the first line\n")).unwrap();
    // A classmate's loop through a link to her file, to her folder, to her `src`; a file of the
    // instructor's; and a practice directory whose loop is a link.
    link(
        Path::new("../../alice/src/agent_loop.rs"),
        &subs.join("mallory/src/agent_loop.rs"),
    );
    link(
        &subs.join("alice/src/agent_loop.rs"),
        &subs.join("peggy/agent_loop.rs"),
    );
    link(Path::new("alice"), &subs.join("trudy"));
    link(Path::new("../alice/src"), &subs.join("oscar/src"));
    link(&secret, &subs.join("eve.rs"));
    let victor = practice_at(&subs, "victor");
    fs::remove_file(victor.join("src/agent_loop.rs")).unwrap();
    link(
        Path::new("../../alice/src/agent_loop.rs"),
        &victor.join("src/agent_loop.rs"),
    );
    let linked = ["eve", "mallory", "oscar", "peggy", "trudy", "victor"];
    for name in linked {
        let entry = fs::read_dir(&subs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_stem().unwrap() == name)
            .unwrap();
        // Every link leads to something that can be read: alice's loop, or the instructor's notes.
        assert!(walkdir::WalkDir::new(&entry)
            .follow_links(true)
            .into_iter()
            .flatten()
            .any(|e| e.file_type().is_file()
                && fs::read_to_string(e.path())
                    .is_ok_and(|t| t == solution() || t.contains(SECRET))));
    }
    let before = tree(&subs);

    let results = dir.path().join("results");
    let out = grade_class(dir.path(), &subs, &results, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let summary = class_summary(&results);
    // What the links lead to earns every point.
    let alice = learner_row(&summary, "alice");
    assert_eq!(
        (alice["status"].as_str(), alice["total"].as_f64()),
        (Some("pass"), Some(100.0)),
        "{alice:#}"
    );
    for name in linked {
        let row = learner_row(&summary, name);
        assert_eq!(row["graded"], false, "{name}: {row:#}");
        assert_eq!(row["total"].as_f64(), Some(0.0), "{name}: {row:#}");
        assert!(
            row["message"].as_str().unwrap().contains("symbolic link"),
            "{name}: {row:#}"
        );
    }
    let everything = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!everything.contains(SECRET), "{everything}");
    for (path, entry) in tree(&results) {
        if let Entry::File(bytes) = entry {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(SECRET),
                "{} holds the instructor's notes",
                path.display()
            );
        }
    }
    assert_eq!(tree(&subs), before, "the submissions were written to");
}

#[test]
fn every_cell_a_spreadsheet_could_run_is_defused_in_summary_csv() {
    let dir = tmp();
    let subs = dir.path().join("submissions");
    fs::create_dir(&subs).unwrap();
    // Learners named like formulas: one graded (its name comes from `@bob.rs`), the others entries that
    // are no submission (each still a row, named after the entry).
    put(&subs.join("@bob.rs"), &skeleton());
    let expected = [
        ("@bob", "'@bob"),
        ("\t=1+1.txt", "'\t'=1+1.txt"),
        ("\r=2+2.txt", "'\r'=2+2.txt"),
        ("=HYPERLINK(\"http:x\").txt", "'=HYPERLINK(\"http:x\").txt"),
        ("  @SUM(1).txt", "'  @SUM(1).txt"),
        ("ann;=3+3.txt", "ann;'=3+3.txt"),
        ("+cmd.txt", "'+cmd.txt"),
        ("-2+5.txt", "'-2+5.txt"),
        ("＝4.txt", "'＝4.txt"),
    ];
    for (name, _) in &expected[1..] {
        put(&subs.join(name), "not a submission");
    }
    let results = dir.path().join("results");
    let out = grade_class(dir.path(), &subs, &results, &["--lang", "en"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    // The names reached the class as they are.
    let summary = class_summary(&results);
    for (name, _) in &expected {
        learner_row(&summary, name);
    }
    assert_eq!(learner_row(&summary, "@bob")["status"], "fail");

    let csv = parse_csv(&fs::read_to_string(results.join("summary.csv")).unwrap());
    let header = &csv[0];
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let names: Vec<&str> = csv[1..]
        .iter()
        .map(|r| r[column("name")].as_str())
        .collect();
    for (name, defused) in &expected {
        assert!(
            names.contains(defused),
            "{name:?} as {defused:?}: {names:?}"
        );
    }
    // No cell of any column starts a formula (after white space, or after a `;`, tab or line break).
    for row in &csv[1..] {
        for cell in row {
            for part in cell.split([';', '\t', '\r', '\n']) {
                let part = part.trim_start();
                assert!(
                    !part.starts_with(['=', '+', '-', '@', '＝']) || part.parse::<f64>().is_ok(),
                    "{cell:?} in {row:?}"
                );
            }
        }
    }
}

#[test]
fn one_learner_exhausting_output_memory_or_time_changes_no_one_elses_grade() {
    let honest = [
        ("reference", solution()),
        ("buggy", mutant("tool-definitions-not-sent")),
        ("skeleton", skeleton()),
    ];
    let attackers = [
        ("flood", skeleton_starting_with(FLOOD)),
        (
            "hog",
            solution_starting_with(
                "let mut hog: Vec<Vec<u8>> = Vec::new(); loop { hog.push(vec![7u8; 64 << 20]); }",
            ),
        ),
        (
            "spin",
            solution_starting_with("loop { std::hint::spin_loop(); }"),
        ),
    ];
    // Both classes draw the same instances, so an honest learner's messages can be compared exactly.
    let args = [
        "--jobs",
        "2",
        "--timeout",
        "3",
        "--memory-limit",
        "256M",
        "--lang",
        "en",
        "--seed",
        "77",
    ];
    let grade_class_of = |learners: &[&(&str, String)]| {
        let dir = tmp();
        let subs = dir.path().join("submissions");
        for (name, code) in learners {
            put(&subs.join(format!("{name}.rs")), code);
        }
        let results = dir.path().join("results");
        let out = grade_class(dir.path(), &subs, &results, &args);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        let summary = class_summary(&results);
        (dir, reports(&results, &summary))
    };
    let (_alone, alone) = grade_class_of(&honest.iter().collect::<Vec<_>>());
    let (_with, with) = grade_class_of(&honest.iter().chain(&attackers).collect::<Vec<_>>());

    // Each attack ran and got its own verdict.
    let messages = |name: &str| -> Vec<String> {
        report_tests(&with[name])
            .iter()
            .map(|(_, t)| t["message"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // The flood's output, or its panic message (a test that formats and sends 8 MiB may also run past
    // the short timeout of this class: either way it fails, with its own verdict).
    assert!(
        messages("flood")
            .iter()
            .any(|m| m.contains("FLOOD-PREFIX") || m.contains(&"o".repeat(64))),
        "{:#}",
        with["flood"]
    );
    for name in ["flood", "hog", "spin"] {
        assert!(
            report_tests(&with[name])
                .iter()
                .all(|(_, t)| t["status"] != "pass"),
            "{name}: {:#}",
            with[name]
        );
    }
    assert!(
        messages("hog").iter().any(|m| m.contains("256 MiB")),
        "{:#}",
        with["hog"]
    );
    // A loop that spins before its first step: killed at the timeout, or judged on what the driver
    // recorded before that, which holds nothing from the loop: the hang its watch saw, said in one plain
    // sentence, or the driver's own plan giving up on calls that never came (after the steps the test
    // takes itself, such as aborting the signal before the run).
    assert!(
        report_tests(&with["spin"]).iter().all(|(_, t)| {
            let message = t["message"].as_str().unwrap_or_default();
            let hang = message
                .strip_prefix("step ")
                .and_then(|m| m.split_once(": your loop did not return"))
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
            let plan_gave_up = message.contains("\n  happened: test: gave_up(");
            let nothing_from_the_loop = message.split_once("so far:").is_some_and(|(_, so_far)| {
                so_far.trim() == "(nothing)"
                    || so_far
                        .lines()
                        .all(|l| l.trim().is_empty() || l.trim().starts_with("test:"))
            });
            t["status"] == "timeout"
                || (t["status"] == "fail" && (hang || plan_gave_up) && nothing_from_the_loop)
        }),
        "{:#}",
        with["spin"]
    );
    for name in ["flood", "hog", "spin"] {
        assert_eq!(with[name]["sandbox"]["active"], true, "{name}");
        assert!(with[name].to_string().len() < 2_000_000, "{name}'s report");
    }
    // Everyone else's grade is what it is without them: each verdict, score and message.
    assert_eq!(alone["reference"]["score"].as_f64(), Some(100.0));
    for (name, _) in &honest {
        let (a, b) = (&alone[*name], &with[*name]);
        assert_eq!(a["status"], b["status"], "{name}");
        assert_eq!(a["score"], b["score"], "{name}");
        assert_eq!(replayable(&a["groups"]), replayable(&b["groups"]), "{name}");
    }
}

/// Results from one submissions folder are never mixed with another's: `grade-class other --out results`
/// is refused (exit 2, naming both folders, in the language asked for) and changes nothing; `--fresh`
/// starts over, keeping nothing of the other class.
#[test]
fn results_of_another_class_are_refused_unless_told_to_start_over() {
    let dir = tmp();
    let root = dir.path();
    let (a, b) = (root.join("class-a"), root.join("class-b"));
    put(&a.join("ann.rs"), &skeleton());
    put(&b.join("bob.rs"), &skeleton());
    let results = root.join("results");
    let first = grade_class(root, &a, &results, &["--lang", "en"]);
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    let before = tree(&results);

    for lang in ["zh", "en"] {
        let out = grade_class(root, &b, &results, &["--lang", lang]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        let err = stderr(&out);
        let a_shown = a.canonicalize().unwrap().display().to_string();
        for wanted in [a_shown.as_str(), b.to_str().unwrap(), "--fresh", "--out"] {
            assert!(err.contains(wanted), "{wanted}: {err}");
        }
        if lang == "en" {
            assert!(err.contains("another submissions folder"), "{err}");
            assert!(
                !err.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{err}"
            );
        } else {
            assert!(err.contains("另一个提交目录"), "{err}");
        }
        assert_eq!(tree(&results), before, "a refused run changed the results");
    }
    // The same class again resumes as before.
    let again = grade_class(root, &a, &results, &["--lang", "en"]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    assert!(stdout(&again).contains("skipped 1"), "{}", describe(&again));

    // --fresh: only the new class is left, each learner graded.
    let fresh = grade_class(root, &b, &results, &["--lang", "en", "--fresh"]);
    assert_eq!(fresh.status.code(), Some(0), "{}", describe(&fresh));
    let names: Vec<String> = class_summary(&results)["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["bob"]);
    let learner_files = names_in(&results.join("learners"));
    assert!(
        learner_files.iter().all(|f| f.starts_with("bob.")) && !learner_files.is_empty(),
        "{learner_files:?}"
    );
    // From now on the results are class-b's: class-b resumes, class-a is refused.
    let resumed = grade_class(root, &b, &results, &["--lang", "en"]);
    assert!(
        stdout(&resumed).contains("skipped 1"),
        "{}",
        describe(&resumed)
    );
    let refused = grade_class(root, &a, &results, &["--lang", "en"]);
    assert_eq!(refused.status.code(), Some(2), "{}", describe(&refused));
}

/// Results are for others to read too (a TA, a web server): files 0644 and folders 0755 under the usual
/// umask, the JUnit report of a single grade as well. The progress line counts the class so far.
#[test]
fn result_files_are_readable_by_others_and_progress_counts_the_class() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tmp();
    let root = dir.path();
    let subs = root.join("subs");
    put(&subs.join("ann.rs"), &skeleton());
    let results = root.join("results");
    let mut command = pi_course(root);
    command
        .args(["grade-class", "subs", "--out", "results", "--lang", "en"])
        .stdin(Stdio::null());
    // SAFETY: umask is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        stderr(&out).contains("[1/1] ann: failed 0/100 · class so far: 1 not passed"),
        "{}",
        describe(&out)
    );
    let mut seen = 0;
    for entry in walkdir::WalkDir::new(&results) {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        let wanted = if entry.file_type().is_dir() {
            0o755
        } else {
            0o644
        };
        assert_eq!(mode, wanted, "{:o}: {}", mode, entry.path().display());
        seen += 1;
    }
    assert!(seen >= 8, "{seen}");

    let practice_dir = practice_at(root, "p");
    let mut command = pi_course(&practice_dir);
    command.args(["grade", "-g", "7.1", "--junit", "report.xml"]);
    // SAFETY: as above.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    for file in ["report.xml", ".pi-course/last-grade.json"] {
        let mode = fs::metadata(practice_dir.join(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o644, "{file}: {mode:o}");
    }
}
