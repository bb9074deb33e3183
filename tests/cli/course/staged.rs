//! The staged path is real: a scripted learner fills the reference's code into the skeleton one Lab at a
//! time (`staged.toml` of each track: per Lab, the edits that complete its `todo!()`s or TODO throws),
//! grades through the real binary after every step, and sees exactly the groups of the finished Labs
//! pass. Then the same with each single Lab skipped: the skipped Lab, and only the Labs whose tests need
//! it, fail, and every such failure names the skipped Lab.
//!
//! Each test prints its table (Lab finished → groups passing) and asserts it equals the expected one.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::*;
use serde_json::Value;

/// One edit of `staged.toml` (see its header).
enum Edit {
    Replace {
        find: String,
        until: Option<String>,
        replace: String,
    },
    Append(String),
}

/// The Labs of a track's `staged.toml`, in order: (Lab, its edits).
fn labs(staged: &Path) -> Vec<(String, Vec<Edit>)> {
    let text = std::fs::read_to_string(staged).expect("staged.toml");
    let table: toml::Table = toml::from_str(&text).expect("staged.toml parses");
    let s = |v: &toml::Value, key: &str| v.get(key).and_then(|v| v.as_str()).map(str::to_string);
    table["lab"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lab| {
            let edits = lab["edit"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| match s(e, "append") {
                    Some(text) => Edit::Append(text),
                    None => Edit::Replace {
                        find: s(e, "find").expect("find"),
                        until: s(e, "until"),
                        replace: s(e, "replace").expect("replace"),
                    },
                })
                .collect();
            (s(lab, "lab").unwrap(), edits)
        })
        .collect()
}

/// `code` with Lab `lab`'s edits made. Each `find` must occur exactly once.
fn apply(code: &str, lab: &str, edits: &[Edit]) -> String {
    let mut code = code.to_string();
    for edit in edits {
        match edit {
            Edit::Append(text) => code.push_str(text),
            Edit::Replace {
                find,
                until,
                replace,
            } => {
                assert_eq!(
                    code.matches(find.as_str()).count(),
                    1,
                    "Lab {lab}: {find:?} must occur once in\n{code}"
                );
                let start = code.find(find.as_str()).unwrap();
                let end = match until {
                    None => start + find.len(),
                    Some(until) => {
                        let from = start + find.len();
                        from + code[from..]
                            .find(until.as_str())
                            .unwrap_or_else(|| panic!("Lab {lab}: no {until:?} after {find:?}"))
                            + until.len()
                    }
                };
                code.replace_range(start..end, replace);
            }
        }
    }
    code
}

/// A track as the scripted learner sees it.
struct Track {
    name: &'static str,
    staged: std::path::PathBuf,
    editable: &'static str,
    practice: &'static [&'static str],
}

fn rust() -> Track {
    Track {
        name: "Rust",
        staged: chapter_dir().join("staged.toml"),
        editable: "src/agent_loop.rs",
        practice: &[],
    }
}

fn typescript() -> Track {
    Track {
        name: "TypeScript",
        staged: ts_dir().join("staged.toml"),
        editable: TS_LOOP,
        practice: &["--track", "typescript"],
    }
}

/// What a grade of one step showed.
struct Step {
    passing: Vec<String>,
    /// Every failing test: (its group's Lab, its message).
    failures: Vec<(String, String)>,
}

/// Grades `dir` (in the language it was made in) and reads the verdicts.
fn grade_step(dir: &Path) -> Step {
    let out = grade(dir, &["--format", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{}", describe(&out)));
    assert!(json["status"] != "error", "the grade did not run: {json:#}");
    let mut passing = Vec::new();
    let mut failures = Vec::new();
    for g in json["groups"].as_array().unwrap() {
        let lab = g["lab"].as_str().unwrap().to_string();
        if g["status"] == "pass" {
            passing.push(lab);
            continue;
        }
        for t in g["tests"].as_array().unwrap() {
            if t["status"] != "pass" {
                let message = t["message"].as_str().unwrap_or_default().to_string();
                failures.push((lab.clone(), message));
            }
        }
        if g["tests"].as_array().unwrap().is_empty() {
            failures.push((lab, format!("no tests ran: {}", json["message"])));
        }
    }
    Step { passing, failures }
}

fn row(label: &str, passing: &[String]) -> String {
    let shown = if passing.is_empty() {
        "(none)".to_string()
    } else {
        passing.join(" ")
    };
    format!("  {label:<9}→ {shown}\n")
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303f}' | '\u{3400}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

/// Walks the track: the skeleton, then each Lab in order but `skip`, grading after every step, in a
/// directory made in `lang`. Returns the table's rows, and what is wrong with the failing tests'
/// messages (each must name an unfinished Lab, the skipped one once it is the only one left).
fn walk(track: &Track, skip: Option<&str>, lang: &str) -> (String, Vec<String>) {
    let tmp = tempfile::Builder::new()
        .prefix("staged-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mut args = vec!["practice", "07", "p", "--lang", lang];
    args.extend_from_slice(track.practice);
    let out = run(tmp.path(), &args);
    assert!(out.status.success(), "{}", describe(&out));
    let dir = tmp.path().join("p");
    let file = dir.join(track.editable);
    let mut code = std::fs::read_to_string(&file).unwrap();
    let labs = labs(&track.staged);
    let all: Vec<String> = labs.iter().map(|(lab, _)| lab.clone()).collect();

    let mut table = String::new();
    let mut wrong = Vec::new();
    let mut check = |ok: bool, problem: String| {
        if !ok {
            wrong.push(problem);
        }
    };
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let steps = std::iter::once(None).chain(labs.iter().map(Some));
    for step in steps {
        let label = match step {
            None => "skeleton".to_string(),
            Some((lab, _)) if Some(lab.as_str()) == skip => continue,
            Some((lab, edits)) => {
                code = apply(&code, lab, edits);
                std::fs::write(&file, &code).unwrap();
                finished.insert(lab.clone());
                lab.clone()
            }
        };
        let graded = grade_step(&dir);
        table.push_str(&row(&label, &graded.passing));
        for (own, message) in &graded.failures {
            let context = format!(
                "{} ({lang}), after {label}, a test of Lab {own}:\n{message}",
                track.name
            );
            if lang == "en" {
                check(
                    !message.chars().any(is_cjk),
                    format!("Chinese in an English directory: {context}"),
                );
            }
            // A failure names a Lab that is not finished: the one it reached, or the rule's own.
            let named: Vec<&String> = all
                .iter()
                .filter(|lab| message.contains(&format!("Lab {lab}")))
                .collect();
            check(
                named.iter().any(|lab| !finished.contains(*lab)),
                format!("the failure names no unfinished Lab: {context}"),
            );
            // Once every other Lab is done, each failure is the skipped Lab's doing, and says so.
            if let Some(skipped) = skip.filter(|_| finished.len() + 1 == all.len()) {
                check(
                    message.contains(&format!("Lab {skipped}")),
                    format!("the failure does not name the skipped Lab {skipped}: {context}"),
                );
                let reached =
                    message.contains("还没写完的部分") || message.contains("unfinished part");
                if reached && own != skipped {
                    let first = match lang {
                        "en" => format!("finish Lab {skipped} first"),
                        _ => format!("先完成 Lab {skipped}"),
                    };
                    check(
                        message.contains(&first),
                        format!("no \"{first}\": {context}"),
                    );
                }
            }
        }
    }
    (table, wrong)
}

/// The whole table of a track: in order, then with each Lab skipped; the languages alternate, so both
/// are walked in every track.
fn table(track: &Track, first_lang: &str) -> (String, Vec<String>) {
    let other = if first_lang == "en" { "zh" } else { "en" };
    let mut table = format!("{}, in order:\n", track.name);
    let (rows, mut wrong) = walk(track, None, first_lang);
    table.push_str(&rows);
    let labs: Vec<String> = labs(&track.staged)
        .into_iter()
        .map(|(lab, _)| lab)
        .collect();
    for (i, skipped) in labs.iter().enumerate() {
        let lang = if i % 2 == 0 { other } else { first_lang };
        table.push_str(&format!("{}, {skipped} skipped:\n", track.name));
        let (rows, more) = walk(track, Some(skipped), lang);
        table.push_str(&rows);
        wrong.extend(more);
    }
    println!("{table}");
    (table, wrong)
}

/// The track's table equals the expected one, and every failure along the way named the right Lab.
fn assert_staged(track: &Track, first_lang: &str) {
    let (table, wrong) = table(track, first_lang);
    for problem in &wrong {
        println!("{problem}\n");
    }
    assert_eq!(table, EXPECTED.replace("{track}", track.name));
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// What every track must show: each Lab, once finished, passes its group, and the groups that need a
/// Lab fail without it.
const EXPECTED: &str = "\
{track}, in order:
  skeleton → (none)
  7.1      → 7.1
  7.2      → 7.1 7.2
  7.3      → 7.1 7.2 7.3
  7.4      → 7.1 7.2 7.3 7.4
  7.5      → 7.1 7.2 7.3 7.4 7.5
  7.6      → 7.1 7.2 7.3 7.4 7.5 7.6
{track}, 7.1 skipped:
  skeleton → (none)
  7.2      → (none)
  7.3      → (none)
  7.4      → (none)
  7.5      → (none)
  7.6      → (none)
{track}, 7.2 skipped:
  skeleton → (none)
  7.1      → 7.1
  7.3      → 7.1
  7.4      → 7.1
  7.5      → 7.1
  7.6      → 7.1 7.6
{track}, 7.3 skipped:
  skeleton → (none)
  7.1      → 7.1
  7.2      → 7.1 7.2
  7.4      → 7.1 7.2 7.4
  7.5      → 7.1 7.2 7.4
  7.6      → 7.1 7.2 7.4
{track}, 7.4 skipped:
  skeleton → (none)
  7.1      → 7.1
  7.2      → 7.1 7.2
  7.3      → 7.1 7.2 7.3
  7.5      → 7.1 7.2 7.3
  7.6      → 7.1 7.2 7.3 7.6
{track}, 7.5 skipped:
  skeleton → (none)
  7.1      → 7.1
  7.2      → 7.1 7.2
  7.3      → 7.1 7.2 7.3
  7.4      → 7.1 7.2 7.3 7.4
  7.6      → 7.1 7.2 7.3 7.4 7.6
{track}, 7.6 skipped:
  skeleton → (none)
  7.1      → 7.1
  7.2      → 7.1 7.2
  7.3      → 7.1 7.2 7.3
  7.4      → 7.1 7.2 7.3 7.4
  7.5      → 7.1 7.2 7.3 7.4 7.5
";

#[test]
fn a_learner_who_finishes_the_rust_labs_in_order_sees_their_groups_pass() {
    assert_staged(&rust(), "zh");
}

#[test]
fn a_learner_who_finishes_the_typescript_labs_in_order_sees_their_groups_pass() {
    assert_staged(&typescript(), "en");
}

/// A person's grade fits a screen, in both tracks and both languages: on the fresh skeleton and after
/// Lab 7.1 passes, at most 60 lines: the Lab at hand's first failing test in full, one line for each of
/// its other failing tests, one line for each other group, and a line saying how to see the rest.
/// `--all` shows every failing test with its message, and JSON stays complete.
#[test]
fn a_grade_fits_a_screen_on_the_skeleton_and_after_lab_7_1() {
    for track in [rust(), typescript()] {
        let labs = labs(&track.staged);
        let (_, lab_7_1) = labs.iter().find(|(lab, _)| lab == "7.1").unwrap();
        for lang in ["zh", "en"] {
            let tmp = tempfile::Builder::new()
                .prefix("screen-")
                .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                .unwrap();
            let mut args = vec!["practice", "07", "p", "--lang", lang];
            args.extend_from_slice(track.practice);
            let out = run(tmp.path(), &args);
            assert!(out.status.success(), "{}", describe(&out));
            let dir = tmp.path().join("p");
            let file = dir.join(track.editable);
            let skeleton = std::fs::read_to_string(&file).unwrap();
            let what = format!("{} {lang}", track.name);
            let rest = match lang {
                "zh" => "其余的失败：pi-course grade --all",
                _ => "The rest: pi-course grade --all",
            };

            for (step, focus, passing) in [("skeleton", "7.1", 0), ("Lab 7.1 done", "7.2", 1)] {
                if focus == "7.2" {
                    std::fs::write(&file, apply(&skeleton, "7.1", lab_7_1)).unwrap();
                }
                let what = format!("{what}, {step}");
                let (code, json) = grade_json(&dir, &[]);
                assert_eq!(code, 1, "{what}: {json:#}");
                // JSON: every test, every failing one with its message.
                let tests = report_tests(&json);
                assert!(tests.len() >= 60, "{what}: {} tests", tests.len());
                let failing: Vec<(String, String, String)> = tests
                    .iter()
                    .filter(|(_, t)| t["status"] != "pass")
                    .map(|(slug, t)| {
                        let message = t["message"].as_str().unwrap_or_else(|| {
                            panic!("{what}: a failing test without its message: {t:#}")
                        });
                        (
                            slug.clone(),
                            t["name"].as_str().unwrap().to_string(),
                            message.to_string(),
                        )
                    })
                    .collect();
                let passed = json["groups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|g| g["status"] == "pass")
                    .count();
                assert_eq!(passed, passing, "{what}: {json:#}");

                let out = grade(&dir, &[]);
                assert_eq!(out.status.code(), Some(1), "{what}: {}", describe(&out));
                let text = stdout(&out);
                let lines: Vec<&str> = text.lines().collect();
                assert!(lines.len() <= 60, "{what}: {} lines\n{text}", lines.len());
                assert!(text.contains(rest), "{what}:\n{text}");
                // The Lab at hand: its first failing test with its message, then one line per other one.
                let focus_slug = json["groups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|g| g["lab"] == focus)
                    .unwrap()["slug"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let in_focus: Vec<&(String, String, String)> = failing
                    .iter()
                    .filter(|(s, _, _)| *s == focus_slug)
                    .collect();
                let (_, first, message) = in_focus[0];
                let at = lines
                    .iter()
                    .position(|l| l.trim_start().strip_prefix("✗ ") == Some(first.as_str()))
                    .unwrap_or_else(|| panic!("{what}: {first} not shown\n{text}"));
                let first_line = message.lines().next().unwrap();
                assert!(lines[at + 1].contains(first_line.trim()), "{what}:\n{text}");
                for (_, name, _) in &in_focus[1..] {
                    let i = lines
                        .iter()
                        .position(|l| l.trim_start().strip_prefix("✗ ") == Some(name.as_str()))
                        .unwrap_or_else(|| panic!("{what}: {name} not listed\n{text}"));
                    let next = lines[i + 1].trim_start();
                    assert!(
                        next.starts_with("✗ ") || next.starts_with("✓ ") || next.is_empty(),
                        "{what}: {name} takes one line\n{text}"
                    );
                }
                // Other groups: their verdict line only.
                for (slug, name, _) in failing.iter().filter(|(s, _, _)| *s != focus_slug) {
                    assert!(
                        !text.contains(name.as_str()),
                        "{what}: {slug} {name}\n{text}"
                    );
                }
                for g in json["groups"].as_array().unwrap() {
                    let lab = format!("Lab {}", g["lab"].as_str().unwrap());
                    assert!(
                        lines
                            .iter()
                            .any(|l| l.contains(&lab) && l.contains(g["slug"].as_str().unwrap())),
                        "{what}: {lab}\n{text}"
                    );
                }

                // --all: every failing test, each with its message.
                let all = grade(&dir, &["--all"]);
                assert_eq!(all.status.code(), Some(1), "{what}: {}", describe(&all));
                let all_text = stdout(&all);
                for (_, name, _) in &failing {
                    assert!(all_text.contains(name.as_str()), "{what} --all: {name}");
                }
                assert!(
                    all_text.lines().count() > 2 * failing.len(),
                    "{what} --all:\n{all_text}"
                );
                assert!(!all_text.contains(rest), "{what} --all:\n{all_text}");
            }
        }
    }
}
