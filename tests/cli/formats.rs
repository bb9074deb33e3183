//! The documents `grade` prints for programs: JSON stays JSON even for bad input, and Gradescope's
//! `results.json` has the fields Gradescope documents, with the chapter's points.

use std::collections::BTreeSet;

use crate::support::*;
use serde_json::Value;

/// Runs `pi-course ARGS` in `cwd` and returns the exit code and the one JSON document on stdout.
fn document(cwd: &std::path::Path, args: &[&str]) -> (i32, Value) {
    let out = run(cwd, args);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{}", describe(&out)));
    (out.status.code().expect("exited"), doc)
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn bad_input_is_still_exactly_one_json_document() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 5] = [
        &["grade", "/nonexistent", "--format", "json"],
        &["grade", ".", "--format", "json"],
        &["grade", ".", "--format=json", "--timeout", "soon"],
        &["grade", ".", "--format", "json", "--no-such-flag"],
        &["--lang", "en", "grade", "/nonexistent", "--format", "json"],
    ];
    for args in cases {
        let (code, doc) = document(tmp.path(), args);
        assert_eq!(code, 2, "{args:?}: {doc:#}");
        assert_eq!(
            keys(&doc),
            ["version", "status", "message", "fix"]
                .map(String::from)
                .into(),
            "{args:?}: {doc:#}"
        );
        assert_eq!(doc["version"], 1);
        assert_eq!(doc["status"], "error");
        assert!(!doc["message"].as_str().unwrap().is_empty(), "{doc:#}");
        assert!(!doc["fix"].as_str().unwrap().is_empty(), "{doc:#}");
    }
    let (_, doc) = document(tmp.path(), cases[0]);
    assert!(
        doc["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent 不存在"),
        "{doc:#}"
    );
    let (_, doc) = document(tmp.path(), cases[4]);
    assert!(
        doc["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent does not exist"),
        "{doc:#}"
    );
    let (_, doc) = document(tmp.path(), cases[2]);
    assert!(doc["message"].as_str().unwrap().contains("soon"), "{doc:#}");

    // Help is still help, and a person still gets plain text.
    let out = run(tmp.path(), &["grade", "--help", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(stdout(&out).contains("用法："), "{}", describe(&out));
    let out = run(tmp.path(), &["grade", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", describe(&out));
}

/// What Gradescope's autograder specification documents for `results.json`.
const TOP_LEVEL: [&str; 11] = [
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
];
const TEST_FIELDS: [&str; 11] = [
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
];
const VISIBILITY: [&str; 4] = ["hidden", "after_due_date", "after_published", "visible"];
const FORMATS: [&str; 5] = ["text", "html", "simple_format", "md", "ansi"];

/// Checks a results document against Gradescope's specification: only documented fields, each of its
/// documented type and values; a score at the top (so the entries need not add up to it).
fn assert_gradescope(doc: &Value) {
    let ctx = || format!("{doc:#}");
    let allowed: BTreeSet<String> = TOP_LEVEL.map(String::from).into();
    assert!(keys(doc).is_subset(&allowed), "{}", ctx());
    assert!(doc["score"].is_number(), "{}", ctx());
    for field in ["visibility", "stdout_visibility"] {
        if let Some(v) = doc.get(field) {
            assert!(VISIBILITY.contains(&v.as_str().unwrap()), "{}", ctx());
        }
    }
    for field in ["output_format", "test_output_format"] {
        if let Some(v) = doc.get(field) {
            assert!(FORMATS.contains(&v.as_str().unwrap()), "{}", ctx());
        }
    }
    if let Some(t) = doc.get("execution_time") {
        assert!(t.is_u64(), "{}", ctx());
    }
    assert!(doc["output"].is_string(), "{}", ctx());
    let allowed: BTreeSet<String> = TEST_FIELDS.map(String::from).into();
    for test in doc["tests"].as_array().unwrap() {
        assert!(keys(test).is_subset(&allowed), "{test:#}");
        for field in [
            "name",
            "score",
            "max_score",
            "status",
            "output",
            "visibility",
        ] {
            assert!(test.get(field).is_some(), "{field} missing: {test:#}");
        }
        assert!(test["name"].is_string() && test["number"].is_string());
        assert!(["passed", "failed"].contains(&test["status"].as_str().unwrap()));
        assert!(VISIBILITY.contains(&test["visibility"].as_str().unwrap()));
        let (score, max) = (
            test["score"].as_f64().unwrap(),
            test["max_score"].as_f64().unwrap(),
        );
        assert!((0.0..=max + 1e-9).contains(&score), "{test:#}");
        assert!(test["output"].is_string());
    }
}

/// The entries of lab `lab` (a group, or its tests).
fn entries<'a>(doc: &'a Value, lab: &str) -> Vec<&'a Value> {
    doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            let n = t["number"].as_str().unwrap();
            n == lab || n.starts_with(&format!("{lab}."))
        })
        .collect()
}

#[test]
fn gradescope_results_carry_the_points_per_group_or_per_test() {
    let (_tmp, dir) = practice();
    let manifest = chapter_manifest();
    let groups = manifest["group"].as_array().unwrap();

    // The skeleton: 0 points, every group failed with its failures as output.
    let (code, doc) = document(&dir, &["grade", ".", "--format", "gradescope"]);
    assert_eq!(code, 1, "{doc:#}");
    assert_gradescope(&doc);
    assert_eq!(doc["score"].as_f64(), Some(0.0), "{doc:#}");
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), groups.len(), "one entry per group: {doc:#}");
    for (entry, group) in tests.iter().zip(groups) {
        assert_eq!(entry["number"].as_str(), group["lab"].as_str());
        assert_eq!(
            entry["max_score"].as_f64().unwrap(),
            group["points"].as_integer().unwrap() as f64
        );
        assert_eq!(entry["status"], "failed");
        assert_eq!(entry["score"].as_f64(), Some(0.0));
        assert!(
            entry["output"].as_str().unwrap().contains("✗ "),
            "{entry:#}"
        );
    }

    // The reference: full marks; the bonus group's points are its own, the total stops at 100.
    write_loop(&dir, &solution());
    let (code, doc) = document(&dir, &["grade", ".", "--format", "gradescope"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_gradescope(&doc);
    assert_eq!(doc["score"].as_f64(), Some(100.0), "{doc:#}");
    assert_eq!(doc["extra_data"]["max"].as_f64(), Some(100.0), "{doc:#}");
    let sum: f64 = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["score"].as_f64().unwrap())
        .sum();
    assert_eq!(sum, 110.0, "every group passed, the bonus too: {doc:#}");
    assert!(doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "passed"));

    // Per test: every test its own entry, and a group's entries add up to its points.
    let (_, json) = grade_json(&dir, &[]);
    let (_, doc) = document(
        &dir,
        &["grade", ".", "--format", "gradescope", "--per-test"],
    );
    assert_gradescope(&doc);
    for group in json["groups"].as_array().unwrap() {
        let lab = group["lab"].as_str().unwrap();
        let per_test = entries(&doc, lab);
        assert_eq!(
            per_test.len() as u64,
            group["total"].as_u64().unwrap(),
            "{doc:#}"
        );
        let sum: f64 = per_test.iter().map(|t| t["score"].as_f64().unwrap()).sum();
        assert!(
            (sum - group["max"].as_f64().unwrap()).abs() < 1e-6,
            "{lab}: {sum}"
        );
    }

    // A loop that does not build: 0 points, the compiler's message in the output.
    write_loop(&dir, &format!("{}\nfn broken( {{\n", solution()));
    let (code, doc) = document(&dir, &["grade", ".", "--format", "gradescope"]);
    assert_eq!(code, 1);
    assert_gradescope(&doc);
    assert_eq!(doc["score"].as_f64(), Some(0.0));
    assert!(doc["output"].as_str().unwrap().contains("error"), "{doc:#}");

    // Bad input is a results document too: 0 points and what to do.
    let (code, doc) = document(
        dir.parent().unwrap(),
        &["grade", "no-such-dir", "--format", "gradescope"],
    );
    assert_eq!(code, 2);
    assert_gradescope(&doc);
    assert_eq!(doc["score"].as_f64(), Some(0.0));
    assert!(doc["output"].as_str().unwrap().contains("no-such-dir"));
    assert_eq!(doc["extra_data"]["status"], "error");
}

/// A YAML document as JSON, to walk it.
fn yaml_to_json(yaml: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => Value::from(r.parse::<f64>().unwrap()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Null => Value::Null,
        other => panic!("unexpected YAML: {other:?}"),
    }
}

/// Runs one of the workflow's shell commands in `dir`, with this build's pi-course first on the PATH.
fn run_step(dir: &std::path::Path, command: &str) -> std::process::Output {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_pi-course"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    std::process::Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("PI_COURSE_CACHE", cache())
        .output()
        .unwrap()
}

#[test]
fn the_classroom_workflow_grades_one_step_per_group_with_its_points() {
    let parent = tempfile::Builder::new()
        .prefix("classroom-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let plain = practice_at(parent.path(), "plain");
    assert!(!plain.join(".github").exists(), "only with --classroom");
    let out = run(
        parent.path(),
        &["practice", "07", "repo", "--classroom", "--lang", "en"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let dir = parent.path().join("repo");
    let text = std::fs::read_to_string(dir.join(".github/workflows/classroom.yml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("the workflow is not YAML: {e}\n{text}"));
    assert_eq!(docs.len(), 1);
    let workflow = yaml_to_json(&docs[0]);
    let on: Vec<&str> = workflow["on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(on.contains(&"push"), "{workflow:#}");
    assert_eq!(workflow["permissions"]["checks"], "write");
    let jobs = workflow["jobs"].as_object().unwrap();
    assert_eq!(jobs.len(), 1);
    let job = jobs.values().next().unwrap();
    let steps = job["steps"].as_array().unwrap();

    // One graded step per group, with the group's points; the reporter names every one of them.
    let manifest = chapter_manifest();
    let groups = manifest["group"].as_array().unwrap();
    let graders: Vec<&Value> = steps
        .iter()
        .filter(|s| s["uses"] == "classroom-resources/autograding-command-grader@v1")
        .collect();
    assert_eq!(graders.len(), groups.len(), "{workflow:#}");
    for (step, group) in graders.iter().zip(groups) {
        let slug = group["slug"].as_str().unwrap();
        assert_eq!(step["id"], slug);
        assert_eq!(
            step["with"]["max-score"].as_i64(),
            group["points"].as_integer()
        );
        assert!(step["with"]["test-name"]
            .as_str()
            .unwrap()
            .contains(group["lab"].as_str().unwrap()));
        assert!(step["with"]["timeout"].as_i64().unwrap() > 0);
    }
    let reporter = steps
        .iter()
        .find(|s| s["uses"] == "classroom-resources/autograding-grading-reporter@v1")
        .expect("the reporter step");
    let ids: Vec<String> = graders
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(reporter["with"]["runners"], ids.join(","));
    for id in &ids {
        let env = &reporter["env"][format!("{}_RESULTS", id.to_uppercase())];
        assert_eq!(
            env.as_str(),
            Some(format!("${{{{ steps.{id}.outputs.result }}}}").as_str()),
            "{reporter:#}"
        );
    }
    // pi-course is installed from its repository, which the instructor names in PI_COURSE_GIT (it is in
    // no package registry); until then the step fails, saying what to set, and installs nothing.
    let placeholder = "https://github.com/YOUR-ORG/pi-course";
    assert_eq!(
        workflow["env"]["PI_COURSE_GIT"], placeholder,
        "{workflow:#}"
    );
    assert!(
        text.contains("BEFORE THE FIRST PUSH: set PI_COURSE_GIT"),
        "{text}"
    );
    let install = steps
        .iter()
        .find(|s| s["name"] == "Install pi-course")
        .expect("the install step");
    let script = install["run"].as_str().unwrap();
    assert!(!script.contains("--version"), "{install:#}");
    // A stand-in cargo records how it was called; pi-course is not on this PATH.
    let bin = parent.path().join("fake-bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = parent.path().join("cargo-calls");
    std::fs::write(
        bin.join("cargo"),
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", calls.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("cargo"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let install_with = |git: &str| {
        std::process::Command::new("sh")
            .args(["-c", script])
            .current_dir(&dir)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("PI_COURSE_GIT", git)
            .output()
            .unwrap()
    };
    let unset = install_with(placeholder);
    assert_eq!(unset.status.code(), Some(1), "{}", describe(&unset));
    assert!(
        stdout(&unset).contains("::error::Set PI_COURSE_GIT in .github/workflows/classroom.yml"),
        "{}",
        describe(&unset)
    );
    assert!(!calls.exists(), "cargo ran with the placeholder");
    let set = install_with("https://example.org/course/pi-course.git");
    assert!(set.status.success(), "{}", describe(&set));
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "install --locked --git https://example.org/course/pi-course.git pi-course\n"
    );
    // `practice --classroom` says so, in the directory's language.
    assert!(
        stdout(&out).contains(&format!("set PI_COURSE_GIT in it (now {placeholder})")),
        "{}",
        describe(&out)
    );
    let zh = run(parent.path(), &["practice", "07", "repo-zh", "--classroom"]);
    assert!(zh.status.success(), "{}", describe(&zh));
    for wanted in [
        "推送之前",
        "PI_COURSE_GIT",
        placeholder,
        "cargo install --locked --git",
    ] {
        assert!(stdout(&zh).contains(wanted), "{wanted}: {}", describe(&zh));
    }

    // The grading commands, run here: the skeleton fails every step, the reference passes every one.
    let warm = steps
        .iter()
        .find(|s| s["name"] == "Build the loop once (not graded)")
        .expect("the build step");
    let out = run_step(&dir, warm["run"].as_str().unwrap());
    assert!(out.status.success(), "{}", describe(&out));
    for step in &graders {
        let out = run_step(&dir, step["with"]["command"].as_str().unwrap());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: {}",
            step["id"],
            describe(&out)
        );
    }
    write_loop(&dir, &solution());
    for step in &graders {
        let out = run_step(&dir, step["with"]["command"].as_str().unwrap());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            step["id"],
            describe(&out)
        );
        // The workflow is not a given file: no warning about a changed one.
        assert!(!stdout(&out).contains("⚠"), "{}", describe(&out));
    }
}

#[test]
fn the_gradescope_autograder_in_the_instructors_guide_grades_offline() {
    let docs = repo().join("docs");
    let guide = std::fs::read_to_string(docs.join("INSTRUCTORS.md")).unwrap();
    for script in ["setup.sh", "run_autograder"] {
        let text = std::fs::read_to_string(docs.join("gradescope").join(script)).unwrap();
        assert!(
            guide.contains(text.trim_end()),
            "docs/INSTRUCTORS.md shows docs/gradescope/{script} as it is"
        );
    }
    let setup = std::fs::read_to_string(docs.join("gradescope/setup.sh")).unwrap();
    assert!(setup.contains(&format!("--version {}", env!("CARGO_PKG_VERSION"))));

    let root = tempfile::Builder::new()
        .prefix("gradescope-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let submission = root.path().join("submission");
    let grade_submission = |files: &[(&str, String)]| -> Value {
        let _ = std::fs::remove_dir_all(&submission);
        std::fs::create_dir_all(&submission).unwrap();
        for (path, text) in files {
            let path = submission.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let out = std::process::Command::new(docs.join("gradescope/run_autograder"))
            .env("AUTOGRADER_ROOT", root.path())
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    std::path::Path::new(env!("CARGO_BIN_EXE_pi-course"))
                        .parent()
                        .unwrap()
                        .display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("PI_COURSE_CACHE", cache())
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        let text = std::fs::read_to_string(root.path().join("results/results.json")).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_gradescope(&doc);
        doc
    };
    let doc = grade_submission(&[("agent_loop.rs", solution())]);
    assert_eq!(doc["score"].as_f64(), Some(100.0), "{doc:#}");
    // A TypeScript learner's file is graded in the TypeScript track.
    let ts_solution =
        std::fs::read_to_string(chapter_dir().join("typescript/solution/src/agent-loop.ts"))
            .unwrap();
    let doc = grade_submission(&[("src/agent-loop.ts", ts_solution)]);
    assert_eq!(doc["score"].as_f64(), Some(100.0), "{doc:#}");
    let ts_skeleton =
        std::fs::read_to_string(chapter_dir().join("typescript/skeleton/src/agent-loop.ts"))
            .unwrap();
    let doc = grade_submission(&[("agent-loop.ts", ts_skeleton)]);
    assert_eq!(doc["score"].as_f64(), Some(0.0), "{doc:#}");
    let doc = grade_submission(&[(
        "src/agent_loop.rs",
        std::fs::read_to_string(chapter_dir().join("skeleton/src/agent_loop.rs")).unwrap(),
    )]);
    assert_eq!(doc["score"].as_f64(), Some(0.0), "{doc:#}");
    assert!(doc["tests"].as_array().unwrap().len() > 1);
    let doc = grade_submission(&[("README.md", "nothing here".into())]);
    assert_eq!(doc["score"].as_f64(), Some(0.0), "{doc:#}");
    assert!(
        doc["output"].as_str().unwrap().contains("agent_loop.rs"),
        "{doc:#}"
    );
}
