//! A class graded as parts on several machines: `grade-class --shard K/N` and `merge-class`, through the
//! real binary. A mixed class (both tracks, broken and bad entries) graded whole and as 1, 2, 3 and 7 parts
//! merges to the same bytes but for the timing columns; parts are balanced by expected cost; every way
//! parts can disagree is refused, naming them; the three recipes of docs/INSTRUCTORS.md parse and their
//! every pi-course command runs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("shards-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Writes `text` to `path`, making its directory.
fn put(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A class of 28 entries in `parent/submissions`, each graded the same way on every run: Rust loops that
/// pass (the reference, alternatives), fail at the first request (mutants, the skeleton) or do not
/// compile, as files, folders and practice directories; TypeScript skeletons (a file, a folder, a practice
/// directory) and a type error; and entries that cannot be graded (a note, an empty folder, a folder with
/// two files, a link, a file too large).
fn mixed_class(parent: &Path) -> PathBuf {
    let subs = parent.join("submissions");
    fs::create_dir(&subs).unwrap();
    let file = |rel: &str, text: &str| put(&subs.join(rel), text);
    let reference = solution();
    file("ref.rs", &reference);
    for name in ["flat", "join_all", "recursive"] {
        let text =
            fs::read_to_string(chapter_dir().join(format!("alternatives/{name}.rs"))).unwrap();
        file(&format!("alt-{name}.rs"), &text);
    }
    // Mutants that leave the rules at the first request: their failures read the same on every run. (A
    // failure later in a test shows the steps so far, and concurrent calls may interleave differently
    // from one run to the next: such a learner's report is not reproducible, merged or not.)
    for name in ["tool-definitions-not-sent", "system-prompt-not-sent"] {
        file(&format!("mutant-{name}.rs"), &mutant(name));
        file(
            &format!("mutant-{name}-again.rs"),
            &format!("{}\n// again\n", mutant(name)),
        );
    }
    file("skel.rs", &skeleton());
    for (i, tail) in [
        "fn broken( {",
        "fn f() -> u8 { \"no\" }",
        "use no_such_crate::x;",
    ]
    .iter()
    .enumerate()
    {
        file(&format!("broken-{i}.rs"), &format!("{reference}\n{tail}\n"));
    }
    file(
        "folder/agent_loop.rs",
        &format!("{reference}\n// a folder\n"),
    );
    file(
        "nested/src/agent_loop.rs",
        &mutant("system-prompt-not-sent"),
    );
    practice_at(&subs, "untouched");
    let practiced = practice_at(&subs, "practiced");
    write_loop(&practiced, &reference);

    // TypeScript loops whose grades read the same on every run: skeletons and a type error.
    file("ts-skel.ts", &ts_skeleton());
    file(
        "ts-folder/src/agent-loop.ts",
        &format!("{}\n// a folder\n", ts_skeleton()),
    );
    file(
        "ts-broken.ts",
        &format!("{}\nconst wrong: number = \"text\";\n", ts_solution()),
    );
    practice_ts_at(&subs, "ts-practiced");

    file("notes.txt", "not a submission");
    file("readme.md", "# nor this");
    fs::create_dir(subs.join("empty")).unwrap();
    file("two/agent_loop.rs", &reference);
    file("two/src/agent_loop.rs", &reference);
    std::os::unix::fs::symlink(subs.join("ref.rs"), subs.join("link.rs")).unwrap();
    file("huge.rs", &"/".repeat(2 << 20));
    file("image.png", "\u{89}PNG");
    file("other/README", "a folder without a loop");
    subs
}

/// A class that grades in seconds: three loops that do not compile, and entries that cannot be graded.
/// As two parts: ann and gus in part 0, the others in part 1.
fn cheap_class(parent: &Path, name: &str) -> PathBuf {
    let subs = parent.join(name);
    fs::create_dir(&subs).unwrap();
    put(&subs.join("ann.rs"), "fn broken( {\n");
    put(&subs.join("fay.rs"), "fn also_broken( {\n");
    put(&subs.join("gus/agent_loop.rs"), "fn broken_too( {\n");
    put(&subs.join("bob.txt"), "not a submission");
    put(&subs.join("cy.md"), "nor this");
    fs::create_dir(subs.join("dee")).unwrap();
    put(&subs.join("eve/notes.txt"), "no loop here");
    subs
}

/// `pi-course grade-class SUBS --out OUT --shard K/N ARGS`, run in `cwd`.
fn part(cwd: &Path, subs: &str, out: &str, shard: &str, args: &[&str]) -> Output {
    let mut all = vec!["--shard", shard];
    all.extend_from_slice(args);
    grade_class(cwd, Path::new(subs), Path::new(out), &all)
}

/// `pi-course merge-class PARTS --out OUT ARGS`, run in `cwd`.
fn merge(cwd: &Path, parts: &[&str], out: &str, args: &[&str]) -> Output {
    pi_course(cwd)
        .arg("merge-class")
        .args(parts)
        .args(["--out", out])
        .args(args)
        .output()
        .unwrap()
}

/// A part's `part.json`.
fn record(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("part.json")).unwrap()).unwrap()
}

/// JUnit XML with the value of every `time="…"` attribute blanked.
fn blank_xml_times(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" time=\"") {
        let start = at + " time=\"".len();
        let end = start + rest[start..].find('"').unwrap();
        out.push_str(&rest[..start]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// index.html with the seconds column's cells blanked.
fn blank_html_seconds(text: &str) -> String {
    let marker = "data-key=\"seconds\"";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let start = at + marker.len();
        let end = start + rest[start..].find("</td>").unwrap();
        out.push_str(&rest[..start]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// summary.json with every learner's `seconds` blanked.
fn blank_json_seconds(text: &str) -> String {
    text.lines()
        .map(
            |line| match line.trim_start().strip_prefix("\"seconds\": ") {
                Some(_) => "\"seconds\": _,",
                None => line,
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// summary.csv with the `seconds` column blanked. The class's fields hold no line break, so a record is
/// a line; a comma inside quotes is skipped.
fn blank_csv_seconds(text: &str) -> String {
    let split = |line: &str| -> Vec<String> {
        let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
        for c in line.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    field.push(c);
                }
                ',' if !quoted => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        fields.push(field);
        fields
    };
    let mut lines = text.split("\r\n");
    let header = split(lines.next().unwrap());
    let column = header.iter().position(|h| h == "seconds").unwrap();
    let mut out = vec![header.join(",")];
    for line in lines {
        let mut fields = split(line);
        if fields.len() > column {
            fields[column] = "_".into();
        }
        out.push(fields.join(","));
    }
    out.join("\r\n")
}

/// `text` with what the judge's messages take from the run's interleaving blanked: the number of the
/// step where a run left the rules, the steps that could have come there, the steps so far, and the
/// timelines of a learner's page. Two grades with one seed judge the same, but
/// the steps of concurrent calls may interleave differently from one run to the next (docs/JUDGE.md).
fn blank_interleaving(text: &str) -> String {
    let digits_after = |line: &str, marker: &str| -> String {
        let mut out = String::new();
        let mut rest = line;
        while let Some(at) = rest.find(marker) {
            out.push_str(&rest[..at + marker.len()]);
            rest = &rest[at + marker.len()..];
            let n = rest.chars().take_while(char::is_ascii_digit).count();
            if n > 0 {
                out.push('_');
                rest = &rest[n..];
            }
        }
        out.push_str(rest);
        out
    };
    // A failing test's two timelines on a learner's page: the actual one is the run's own order.
    let mut text = text.to_string();
    let mut from = 0;
    while let Some(at) = text[from..].find("<details class=\"timeline\">") {
        let start = from + at;
        let pre = start + text[start..].find("<pre>").unwrap() + "<pre>".len();
        let end = pre + text[pre..].find("</pre>").unwrap();
        text.replace_range(pre..end, "…");
        from = pre;
    }
    text.lines()
        .map(|line| {
            for label in ["so far: ", "到此为止：", "one of: ", "以下之一："] {
                if let Some(at) = line.find(label) {
                    return format!("{}{label}…", &line[..at]);
                }
            }
            digits_after(&digits_after(line, "step "), "第 ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file of a class's results, its timing blanked.
fn results_without_timing(dir: &Path) -> BTreeMap<String, String> {
    files_under(dir)
        .into_iter()
        .map(|(rel, bytes)| {
            let text = String::from_utf8(bytes).unwrap();
            let text = if rel == "summary.json" {
                blank_json_seconds(&text)
            } else if rel == "summary.csv" {
                blank_csv_seconds(&text)
            } else if rel == "index.html" {
                blank_html_seconds(&text)
            } else if rel.ends_with(".xml") {
                blank_xml_times(&text)
            } else {
                text
            };
            (rel, blank_interleaving(&text))
        })
        .collect()
}

/// The two results are the same files with the same bytes, timing aside; the timing did differ
/// somewhere, so the blanking is what made them equal.
fn assert_same_results(whole: &Path, merged: &Path, what: &str) {
    let (a, b) = (
        results_without_timing(whole),
        results_without_timing(merged),
    );
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}: the same files"
    );
    // The summary first: a learner graded differently is named there, with every test's verdict.
    let summary_first = a
        .iter()
        .filter(|(rel, _)| rel.as_str() == "summary.csv")
        .chain(a.iter().filter(|(rel, _)| rel.as_str() != "summary.csv"));
    for (rel, text) in summary_first {
        if let Some((x, y)) = text.lines().zip(b[rel].lines()).find(|(x, y)| x != y) {
            let why = match rel.as_str() {
                "summary.csv" => format!(
                    "\n  whole's failures: {}\n  parts' failures: {}",
                    failures_of(whole, x),
                    failures_of(merged, y)
                ),
                _ => String::new(),
            };
            panic!("{what}: {rel} differs beyond timing:\n  whole: {x}\n  parts: {y}{why}");
        }
        assert!(
            text == &b[rel],
            "{what}: {rel} differs beyond timing (its length)"
        );
    }
}

/// The failing tests of the learner a summary.csv row names (its first field), with their messages: a
/// learner graded differently by two runs shows what each run saw.
fn failures_of(results: &Path, row: &str) -> String {
    let name = row.split(',').next().unwrap_or_default();
    let Ok(text) = fs::read_to_string(results.join(format!("learners/{name}.json"))) else {
        return format!("no report for {name:?}");
    };
    let report: Value = serde_json::from_str(&text).unwrap();
    let failing: Vec<String> = report["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["tests"].as_array().into_iter().flatten())
        .filter(|t| t["status"] != "pass")
        .map(|t| format!("{} ({}): {}", t["name"], t["status"], t["message"]))
        .collect();
    match failing.is_empty() {
        true => "none".to_string(),
        false => failing.join("\n    "),
    }
}

/// The seed `grade-class --seed class_seed` grades learner `name`'s submission of sha256 `sha256` with,
/// as docs/INSTRUCTORS.md defines it.
fn learner_seed(class_seed: u64, name: &str, sha256: &str) -> u64 {
    let digest = Sha256::digest(format!("{class_seed}:{name}:{sha256}").as_bytes());
    u64::from_be_bytes(digest[..8].try_into().unwrap())
}

/// What a part records of the class seed `seed`, as docs/INSTRUCTORS.md defines it.
fn fingerprint(seed: u64) -> String {
    let digest = Sha256::digest(format!("pi-course class seed:{seed}").as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// How the mixed class is graded, whole and as parts: one class seed, and a per-test timeout generous
/// enough that a loaded machine times no test out (a verdict that depended on the load would make the
/// runs differ for a reason that is not the merge's).
const CLASS_ARGS: &[&str] = &[
    "--seed",
    "7",
    "--jobs",
    "2",
    "--timeout",
    "30",
    "--lang",
    "en",
];

#[test]
fn a_class_graded_as_1_2_3_or_7_parts_merges_to_the_whole_class_byte_for_byte() {
    let dir = tmp();
    let root = dir.path();
    mixed_class(root);
    let whole = grade_class(
        root,
        Path::new("submissions"),
        Path::new("whole"),
        CLASS_ARGS,
    );
    // Some entries cannot be graded: exit 1, with every other learner's verdict.
    assert_eq!(whole.status.code(), Some(1), "{}", describe(&whole));
    let summary = class_summary(&root.join("whole"));
    let rows = summary["learners"].as_array().unwrap();
    assert_eq!(rows.len(), 28, "{summary:#}");
    let verdict = |name: &str| {
        learner_row(&summary, name)["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (name, status) in [
        ("ref", "pass"),
        ("alt-flat", "pass"),
        ("practiced", "pass"),
        ("mutant-system-prompt-not-sent", "fail"),
        ("skel", "fail"),
        ("ts-skel", "fail"),
        ("broken-0", "error"),
        ("ts-broken", "error"),
        ("notes.txt", "error"),
    ] {
        assert_eq!(verdict(name), status, "{name}");
    }
    // The TypeScript loops built and got their verdicts in their own track (which tests they pass is the
    // business of tests/cli/grade/typescript.rs).
    for name in ["ts-skel", "ts-folder", "ts-practiced"] {
        let row = learner_row(&summary, name);
        assert_eq!(row["track"], "typescript", "{row:#}");
        assert_eq!(row["build"], "ok", "{row:#}");
        assert_eq!(row["graded"], true, "{row:#}");
    }
    assert_eq!(learner_row(&summary, "ts-broken")["build"], "error");
    // Every learner draws their own instances, from the class's seed, their name and their submission.
    let mut seeds = BTreeSet::new();
    for name in ["ref", "skel", "ts-skel", "mutant-system-prompt-not-sent"] {
        let report: Value = serde_json::from_str(
            &fs::read_to_string(root.join(format!("whole/learners/{name}.json"))).unwrap(),
        )
        .unwrap();
        let sha256 = learner_row(&summary, name)["sha256"].as_str().unwrap();
        assert_eq!(sha256.len(), 64, "{name}");
        assert_eq!(
            report["instances"]["seed"].as_u64(),
            Some(learner_seed(7, name, sha256)),
            "{name}"
        );
        seeds.insert(report["instances"]["seed"].as_u64().unwrap());
    }
    assert_eq!(seeds.len(), 4);

    let names: BTreeSet<String> = rows
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    for n in [1, 2, 3, 7] {
        let mut parts = Vec::new();
        let mut held = BTreeMap::new();
        let mut loads = Vec::new();
        let mut largest = 0;
        for k in 0..n {
            let out = format!("parts-{n}/part-{k}");
            fs::create_dir_all(root.join(format!("parts-{n}"))).unwrap();
            let graded = part(root, "submissions", &out, &format!("{k}/{n}"), CLASS_ARGS);
            assert!(
                matches!(graded.status.code(), Some(0 | 1)),
                "{}",
                describe(&graded)
            );
            let record = record(&root.join(&out));
            assert_eq!(
                (record["part"].as_u64(), record["parts"].as_u64()),
                (Some(k as u64), Some(n as u64))
            );
            // The class seed's fingerprint, never the seed.
            assert_eq!(
                record["seeds"],
                serde_json::json!({"policy": "class", "fingerprint": fingerprint(7)})
            );
            let class = record["class"].as_array().unwrap();
            assert_eq!(class.len(), 28, "every part records the whole class");
            let own: BTreeSet<String> = class
                .iter()
                .filter(|e| e["part"] == k as u64)
                .map(|e| e["name"].as_str().unwrap().to_string())
                .collect();
            let rows: BTreeSet<String> = class_summary(&root.join(&out))["learners"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(rows, own, "part {k}/{n} grades exactly its own learners");
            let mut load = 0;
            for e in class {
                let cost = e["cost"].as_u64().unwrap();
                largest = largest.max(cost);
                if e["part"] == k as u64 {
                    load += cost;
                    assert!(
                        held.insert(e["name"].as_str().unwrap().to_string(), k)
                            .is_none(),
                        "in two parts: {e}"
                    );
                }
            }
            loads.push(load);
            parts.push(out);
        }
        assert_eq!(
            held.keys().cloned().collect::<BTreeSet<_>>(),
            names,
            "{n} parts hold every learner once"
        );
        let spread = loads.iter().max().unwrap() - loads.iter().min().unwrap();
        assert!(
            spread <= largest,
            "{n} parts: costs {loads:?} differ by more than one entry's largest cost {largest}"
        );
        let out = format!("merged-{n}");
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let merged = merge(root, &refs, &out, &["--lang", "en"]);
        assert_eq!(merged.status.code(), Some(1), "{}", describe(&merged));
        assert!(
            stdout(&merged).contains("28 learners"),
            "{}",
            describe(&merged)
        );
        assert_same_results(&root.join("whole"), &root.join(&out), &format!("{n} parts"));
    }
    // The costs are the documented model: an entry that cannot be graded 1, a TypeScript file more than
    // a Rust file of its size, and the one over a megabyte counts as nothing to grade.
    let costs: BTreeMap<String, u64> = record(&root.join("parts-2/part-0"))["class"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["cost"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(costs["notes.txt"], 1);
    assert_eq!(costs["huge"], 1);
    assert_eq!(costs["link"], 1);
    assert!(costs["ts-skel"] > costs["skel"], "{costs:?}");
    assert!(costs["ref"] >= 10, "{costs:?}");
}

#[test]
fn the_parts_are_the_same_whatever_order_the_entries_were_made_in() {
    let dir = tmp();
    let root = dir.path();
    let names = [
        "a.txt", "b.md", "c", "d.txt", "e.md", "f", "g.txt", "h.md", "i", "j.txt",
    ];
    for (subs, order) in [
        ("forward", names.to_vec()),
        ("backward", {
            let mut v = names.to_vec();
            v.reverse();
            v
        }),
    ] {
        fs::create_dir(root.join(subs)).unwrap();
        for name in order {
            if name.contains('.') {
                put(&root.join(subs).join(name), name);
            } else {
                fs::create_dir(root.join(subs).join(name)).unwrap();
            }
        }
        let out = part(
            root,
            subs,
            &format!("{subs}-part"),
            "1/3",
            &["--lang", "en"],
        );
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    }
    let (a, b) = (
        record(&root.join("forward-part")),
        record(&root.join("backward-part")),
    );
    assert_eq!(a["class"], b["class"]);
    let own: Vec<&str> = a["class"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["part"] == 1)
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // Ten entries of cost 1, dealt by name to the lightest part: 0, 1, 2, 0, 1, 2, ...
    assert_eq!(own, ["b.md", "e.md", "h.md"]);
}

/// Runs `pi-course ARGS` in `cwd` and checks that it is bad input: exit 2, each of `named` in what it
/// says on stderr, and `out` not made.
fn assert_refused(output: &Output, named: &[&str], out: &Path) {
    assert_eq!(output.status.code(), Some(2), "{}", describe(output));
    for word in named {
        assert!(
            stderr(output).contains(word),
            "the refusal names {word}\n{}",
            describe(output)
        );
    }
    assert!(!out.exists(), "nothing written at {}", out.display());
}

/// Reads, changes and writes back a JSON file.
fn edit_json(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut value: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    change(&mut value);
    fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

/// Copies a directory tree (its empty folders too).
fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            fs::create_dir_all(target).unwrap();
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn parts_that_disagree_are_refused_naming_them_and_a_part_run_twice_merges_once() {
    let dir = tmp();
    let root = dir.path();
    cheap_class(root, "subs");
    let seeded = ["--seed", "3", "--lang", "en"];
    for k in 0..2 {
        let out = part(root, "subs", &format!("p{k}"), &format!("{k}/2"), &seeded);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            describe(&out)
        );
    }
    let whole = grade_class(root, Path::new("subs"), Path::new("whole"), &seeded);
    assert_eq!(whole.status.code(), Some(1), "{}", describe(&whole));
    let good = merge(root, &["p0", "p1"], "merged", &["--lang", "en"]);
    assert_eq!(good.status.code(), Some(1), "{}", describe(&good));
    assert_same_results(&root.join("whole"), &root.join("merged"), "2 parts");
    let out = root.join("refused");

    let own = |dir: &str| -> Vec<String> {
        class_summary(&root.join(dir))["learners"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(own("p0"), ["ann", "gus"]);

    // A part given twice (a job that ran twice) merges once; so does a part graded again in place
    // (it resumes: nobody is graded again).
    copy_tree(&root.join("p0"), &root.join("p0-again"));
    let again = part(root, "subs", "p0", "0/2", &seeded);
    assert!(
        stdout(&again).contains("Graded 0 now, skipped 2"),
        "{}",
        describe(&again)
    );
    let twice = merge(
        root,
        &["p1", "p0", "p0-again", "p1"],
        "twice",
        &["--lang", "en"],
    );
    assert_eq!(twice.status.code(), Some(1), "{}", describe(&twice));
    assert!(
        stderr(&twice).contains("merged once"),
        "{}",
        describe(&twice)
    );
    assert_same_results(
        &root.join("whole"),
        &root.join("twice"),
        "parts given twice",
    );

    // A part missing, a folder that is no part, an --out that is not new or lies in a part.
    let only = merge(root, &["p0"], "refused", &["--lang", "en"]);
    assert_refused(&only, &["No part 1/2", "p0 (0/2)"], &out);
    let no_part = merge(root, &["p0", "whole"], "refused", &["--lang", "en"]);
    assert_refused(&no_part, &["whole is not a part"], &out);
    let taken = merge(root, &["p0", "p1"], "merged", &["--lang", "en"]);
    assert_refused(
        &taken,
        &["merged already exists"],
        &root.join("merged/nothing"),
    );
    let inside = merge(root, &["p0", "p1"], "p0/results", &["--lang", "en"]);
    assert_refused(
        &inside,
        &["p0/results", "inside the part p0"],
        &root.join("p0/results"),
    );

    // Another seed policy, language or N; other submissions.
    let variants: [(&str, &str, &[&str], String); 4] = [
        (
            "fresh",
            "1/2",
            &["--lang", "en"],
            format!(
                "the seed policy is a --seed of fingerprint {} in p0 (0/2) but fresh seeds",
                fingerprint(3)
            ),
        ),
        (
            "zh",
            "1/2",
            &["--seed", "3"],
            "the language (--lang) is en in p0 (0/2) but zh in zh (1/2)".into(),
        ),
        (
            "thirds",
            "1/3",
            &seeded,
            "the number of parts N is 2 in p0 (0/2) but 3 in thirds (1/3)".into(),
        ),
        (
            "other-seed",
            "1/2",
            &["--seed", "4", "--lang", "en"],
            format!("a --seed of fingerprint {}", fingerprint(4)),
        ),
    ];
    for (name, shard, args, says) in variants {
        let graded = part(root, "subs", name, shard, args);
        assert!(
            matches!(graded.status.code(), Some(0 | 1)),
            "{}",
            describe(&graded)
        );
        let refused = merge(root, &["p0", name], "refused", &["--lang", "en"]);
        assert_refused(&refused, &[says.as_str()], &out);
    }
    put(&root.join("subs/late.rs"), "fn late( {\n");
    let late = part(root, "subs", "late", "1/2", &seeded);
    assert!(
        matches!(late.status.code(), Some(0 | 1)),
        "{}",
        describe(&late)
    );
    let refused = merge(root, &["p0", "late"], "refused", &["--lang", "en"]);
    assert_refused(
        &refused,
        &["the class (its entries or their files) is no late in p0 (0/2) but late's file"],
        &out,
    );
    fs::remove_file(root.join("subs/late.rs")).unwrap();

    // Another chapter or another pi-course (made by hand: this binary has one chapter and one version).
    for (name, key, value, says) in [
        (
            "chapter",
            "chapter",
            "08",
            "the chapter is 07 in p0 (0/2) but 08 in chapter (1/2)",
        ),
        (
            "version",
            "pi_course",
            "0.0.1",
            "The part version was graded by pi-course 0.0.1",
        ),
    ] {
        copy_tree(&root.join("p1"), &root.join(name));
        for file in ["part.json", "summary.json"] {
            edit_json(&root.join(name).join(file), |v| v[key] = value.into());
        }
        let refused = merge(root, &["p0", name], "refused", &["--lang", "en"]);
        assert_refused(&refused, &[says], &out);
    }

    // A learner in two parts: p0's learner copied by hand into a copy of p1.
    let p0_rows = class_summary(&root.join("p0"))["learners"].clone();
    let moved = p0_rows[0]["name"].as_str().unwrap().to_string();
    copy_tree(&root.join("p1"), &root.join("doubled"));
    for ext in ["json", "xml", "html"] {
        let rel = format!("learners/{moved}.{ext}");
        fs::copy(root.join("p0").join(&rel), root.join("doubled").join(&rel)).unwrap();
    }
    edit_json(&root.join("doubled/summary.json"), |v| {
        v["learners"]
            .as_array_mut()
            .unwrap()
            .push(p0_rows[0].clone());
    });
    let refused = merge(root, &["p0", "doubled"], "refused", &["--lang", "en"]);
    assert_refused(
        &refused,
        &[
            &format!("{moved} was graded twice"),
            "p0 (0/2)",
            "doubled (1/2)",
        ],
        &out,
    );
    // Without them in p0, the copy holds a learner of another part.
    copy_tree(&root.join("p0"), &root.join("p0-without"));
    edit_json(&root.join("p0-without/summary.json"), |v| {
        v["learners"].as_array_mut().unwrap().remove(0);
    });
    let refused = merge(
        root,
        &["p0-without", "doubled"],
        "refused",
        &["--lang", "en"],
    );
    assert_refused(
        &refused,
        &[&format!(
            "{moved} is in doubled (1/2) but belongs to part 0/2"
        )],
        &out,
    );

    // A learner missing from their part (a part stopped halfway): refused; running the part again
    // grades only them, and the merge goes through.
    edit_json(&root.join("p0/summary.json"), |v| {
        v["learners"].as_array_mut().unwrap().remove(0);
    });
    let refused = merge(root, &["p0", "p1"], "refused", &["--lang", "en"]);
    assert_refused(&refused, &["ann is missing from p0 (0/2)"], &out);
    let resumed = part(root, "subs", "p0", "0/2", &seeded);
    assert!(
        stdout(&resumed).contains("Graded 1 now, skipped 1"),
        "{}",
        describe(&resumed)
    );
    let merged = merge(
        root,
        &["p0", "p1"],
        "resumed",
        &["--lang", "en", "--format", "json"],
    );
    assert_eq!(merged.status.code(), Some(1), "{}", describe(&merged));
    let json: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(json["learners"].as_array().unwrap().len(), 7);
    assert_same_results(&root.join("whole"), &root.join("resumed"), "a part resumed");
}

#[test]
fn a_bad_shard_is_refused_before_anything_is_graded() {
    let dir = tmp();
    let root = dir.path();
    cheap_class(root, "subs");
    for (shard, says) in [
        ("4/4", "K counts from 0, so the parts of 4 are 0/4 to 3/4"),
        ("0/0", "N must be at least 1"),
        ("two/4", "`two` is not a whole number"),
        ("/8", "K is empty"),
        ("3", "is not K/N"),
    ] {
        let out = part(root, "subs", "results", shard, &["--lang", "en"]);
        assert_refused(&out, &[says], &root.join("results"));
        let json = part(
            root,
            "subs",
            "results",
            shard,
            &["--format", "json", "--lang", "en"],
        );
        assert_eq!(json.status.code(), Some(2), "{}", describe(&json));
        let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(doc["status"], "error");
        assert!(doc["message"].as_str().unwrap().contains(says), "{doc:#}");
    }
    // In Chinese, the same refusal in Chinese: the command line speaks the learner's language too.
    let zh = part(root, "subs", "results", "4/4", &["--format", "json"]);
    assert_eq!(zh.status.code(), Some(2), "{}", describe(&zh));
    let doc: Value = serde_json::from_slice(&zh.stdout).unwrap();
    assert!(
        doc["message"].as_str().unwrap().contains("0/4 到 3/4"),
        "{doc:#}"
    );
    let none = pi_course(root)
        .args(["merge-class", "--out", "x"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2), "{}", describe(&none));
}

#[test]
fn a_part_on_a_machine_without_the_sandbox_says_so_or_with_require_refuses() {
    let dir = tmp();
    let root = dir.path();
    cheap_class(root, "subs");
    let missing = "PI_COURSE_SANDBOX_PRETEND_MISSING";
    let required = pi_course(root)
        .env(missing, "1")
        .args(["grade-class", "subs", "--out", "required", "--shard", "0/2"])
        .args(["--sandbox", "require", "--lang", "en"])
        .output()
        .unwrap();
    assert_refused(
        &required,
        &["--sandbox require: this machine cannot confine learner code"],
        &root.join("required"),
    );
    let unconfined = pi_course(root)
        .env(missing, "1")
        .args([
            "grade-class",
            "subs",
            "--out",
            "unconfined",
            "--shard",
            "0/2",
            "--lang",
            "en",
        ])
        .output()
        .unwrap();
    assert_eq!(
        unconfined.status.code(),
        Some(0),
        "{}",
        describe(&unconfined)
    );
    let summary = class_summary(&root.join("unconfined"));
    let row = learner_row(&summary, "ann");
    assert_eq!(row["build"], "error", "{row:#}");
    assert_eq!(row["sandbox"], "off", "{row:#}");
    let report: Value = serde_json::from_str(
        &fs::read_to_string(root.join("unconfined/learners/ann.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["sandbox"]["active"], false);
    assert!(
        report["sandbox"]["reason"]
            .as_str()
            .unwrap()
            .contains("Landlock is not available"),
        "{report:#}"
    );
}

// ---------------------------------------------------------------------------------------------------
// The recipes of docs/INSTRUCTORS.md
// ---------------------------------------------------------------------------------------------------

/// A recipe's file, checked to be shown in docs/INSTRUCTORS.md as it is.
fn recipe(name: &str) -> String {
    let text = fs::read_to_string(repo().join("docs/shards").join(name)).unwrap();
    let guide = fs::read_to_string(repo().join("docs/INSTRUCTORS.md")).unwrap();
    assert!(
        guide.contains(text.trim_end()),
        "docs/INSTRUCTORS.md shows docs/shards/{name} as it is"
    );
    text
}

fn yaml(text: &str) -> Vec<yaml_rust2::Yaml> {
    yaml_rust2::YamlLoader::load_from_str(text).expect("the recipe is YAML")
}

/// This build's pi-course first on the PATH.
fn path_with_pi_course(extra: &[&Path]) -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_pi-course")).parent().unwrap();
    let mut dirs: Vec<String> = extra.iter().map(|p| p.display().to_string()).collect();
    dirs.push(bin.display().to_string());
    dirs.push(std::env::var("PATH").unwrap());
    dirs.join(":")
}

/// Runs a recipe's shell script in `cwd` with `env`, as bash; it must succeed.
fn run_script(cwd: &Path, script: &str, env: &[(&str, String)]) -> Output {
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(cwd)
        .env("PATH", path_with_pi_course(&[]))
        .env("PI_COURSE_CACHE", cache());
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{script}\n{}", describe(&out));
    out
}

/// The files under `dir` that hold `text`, and whether `output` shows it anywhere but in the lines that
/// start with one of `allowed`: a seed must be in neither.
fn shown_anywhere(dir: &Path, output: &Output, text: &str, allowed: &[&str]) -> Vec<String> {
    let mut found: Vec<String> = files(dir)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(text))
        .map(|(path, _)| path.display().to_string())
        .collect();
    let streams = format!("{}\n{}", stdout(output), stderr(output));
    for line in streams.lines() {
        if line.contains(text) && !allowed.iter().any(|a| line.starts_with(a)) {
            found.push(format!("output: {line}"));
        }
    }
    found
}

/// The merged results of a recipe: every learner of the cheap class.
fn assert_class_merged(results: &Path) {
    let summary = class_summary(results);
    let names: Vec<&str> = summary["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["ann", "bob.txt", "cy.md", "dee", "eve", "fay", "gus"]
    );
    assert_eq!(learner_row(&summary, "ann")["build"], "error");
    assert!(results.join("index.html").is_file());
}

#[test]
fn the_github_actions_recipe_grades_each_part_on_its_runner_and_merges_them() {
    let text = recipe("github-actions.yml");
    let doc = &yaml(&text)[0];
    let jobs = &doc["jobs"];
    let matrix = jobs["part"]["strategy"]["matrix"]["part"].as_vec().unwrap();
    let n = matrix.len();
    assert_eq!(
        matrix
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect::<Vec<_>>(),
        (0..n as i64).collect::<Vec<_>>()
    );
    assert_eq!(jobs["merge"]["needs"].as_str(), Some("part"));
    // No seed in the file: each job derives the run's from a repository secret and the run's id.
    assert!(doc["env"]["SEED"].is_badvalue(), "a seed in the recipe");
    let grade_step = jobs["part"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| s["run"].as_str().is_some_and(|r| r.contains("grade-class")))
        .unwrap();
    assert_eq!(
        grade_step["env"]["SEED_KEY"].as_str(),
        Some("${{ secrets.PI_COURSE_SEED_KEY }}")
    );
    let key = format!("class-key-{}", std::process::id());
    let version = format!("--version {}", env!("CARGO_PKG_VERSION"));
    let runs = |job: &str| -> Vec<String> {
        jobs[job]["steps"]
            .as_vec()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str().map(str::to_string))
            .filter(|run| {
                if run.contains("cargo install") {
                    assert!(run.contains(&version), "{run}");
                    false
                } else {
                    true
                }
            })
            .collect()
    };
    let (part_runs, merge_runs) = (runs("part"), runs("merge"));
    assert!(part_runs
        .iter()
        .any(|r| r.contains("pi-course grade-class")));
    assert!(merge_runs
        .iter()
        .any(|r| r.contains("pi-course merge-class")));
    let uploaded = jobs["part"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find_map(|s| s["with"]["path"].as_str())
        .unwrap()
        .to_string();
    let download = jobs["merge"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/download-artifact"))
        })
        .unwrap();
    assert_eq!(download["with"]["pattern"].as_str(), Some("part-*"));
    assert_eq!(download["with"]["merge-multiple"].as_bool(), Some(true));

    let dir = tmp();
    let root = dir.path();
    let subs = cheap_class(root, "class");
    let merge_runner = root.join("merge-runner");
    fs::create_dir(&merge_runner).unwrap();
    let mut seeds = BTreeSet::new();
    for k in 0..n {
        // Each runner's checkout: the submissions at the same relative path.
        let runner = root.join(format!("runner-{k}"));
        copy_tree(&subs, &runner.join("submissions"));
        let fill = |s: &str| {
            s.replace("${{ strategy.job-index }}", &k.to_string())
                .replace("${{ strategy.job-total }}", &n.to_string())
                .replace("${{ github.run_id }}", "9876543210")
        };
        for run in &part_runs {
            let out = run_script(&runner, &fill(run), &[("SEED_KEY", key.clone())]);
            if !run.contains("grade-class") {
                continue;
            }
            // The seed is masked before anything else is printed, and then shown nowhere.
            let seed = stdout(&out)
                .lines()
                .find_map(|l| l.strip_prefix("::add-mask::"))
                .expect("the seed is masked")
                .to_string();
            assert!(seed.parse::<u64>().is_ok_and(|s| s > 1 << 40), "{seed}");
            let shown = shown_anywhere(&runner, &out, &seed, &["::add-mask::"]);
            assert!(shown.is_empty(), "the seed is shown: {shown:?}");
            seeds.insert(seed);
        }
        let artifact = fill(&uploaded);
        fs::copy(runner.join(&artifact), merge_runner.join(&artifact)).unwrap();
    }
    assert_eq!(
        seeds.len(),
        1,
        "one seed for every runner of a run: {seeds:?}"
    );
    for run in &merge_runs {
        run_script(&merge_runner, run, &[]);
    }
    assert_class_merged(&merge_runner.join("results"));
    // Without the secret, no part is graded.
    let runner = root.join("runner-without-key");
    copy_tree(&subs, &runner.join("submissions"));
    let grade = part_runs
        .iter()
        .find(|r| r.contains("grade-class"))
        .unwrap();
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", grade])
        .current_dir(&runner)
        .env("PATH", path_with_pi_course(&[]))
        .env("SEED_KEY", "")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        stdout(&out).contains("PI_COURSE_SEED_KEY"),
        "{}",
        describe(&out)
    );
    assert!(!runner.join("part-0").exists());
}

#[test]
fn the_kubernetes_recipe_grades_each_index_and_merges_the_parts() {
    let text = recipe("kubernetes.yaml");
    let docs = yaml(&text);
    assert_eq!(docs.len(), 2);
    let (grade, merge_job) = (&docs[0], &docs[1]);
    for (job, step) in [(grade, "grade"), (merge_job, "merge")] {
        assert_eq!(job["kind"].as_str(), Some("Job"));
        assert_eq!(job["metadata"]["labels"]["step"].as_str(), Some(step));
        assert!(text.contains(&format!("kubectl apply -f grade-class.yaml -l step={step}")));
    }
    let spec = &grade["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let n = spec["completions"].as_i64().unwrap() as usize;
    assert!(text.contains(&format!(
        "job/{}",
        grade["metadata"]["name"].as_str().unwrap()
    )));
    let container =
        |job: &yaml_rust2::Yaml| -> (BTreeMap<String, String>, String, Vec<(String, String)>) {
            let c = &job["spec"]["template"]["spec"]["containers"][0];
            assert_eq!(
                c["command"]
                    .as_vec()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect::<Vec<_>>(),
                ["bash", "-c"]
            );
            // A value, or `secret:<name>:<key>` for one read from a Secret.
            let env = c["env"]
                .as_vec()
                .unwrap()
                .iter()
                .map(|e| {
                    let secret = &e["valueFrom"]["secretKeyRef"];
                    let value = match e["value"].as_str() {
                        Some(value) => value.to_string(),
                        None => format!(
                            "secret:{}:{}",
                            secret["name"].as_str().unwrap(),
                            secret["key"].as_str().unwrap()
                        ),
                    };
                    (e["name"].as_str().unwrap().to_string(), value)
                })
                .collect();
            let mounts = c["volumeMounts"]
                .as_vec()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["name"].as_str().unwrap().to_string(),
                        m["mountPath"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            (env, c["args"][0].as_str().unwrap().to_string(), mounts)
        };
    let (env, script, mounts) = container(grade);
    assert_eq!(
        env["PARTS"],
        n.to_string(),
        "PARTS is the number of completions"
    );
    assert!(mounts.contains(&("submissions".into(), env["SUBMISSIONS"].clone())));
    assert!(mounts.contains(&("results".into(), env["RESULTS"].clone())));
    let (merge_env, merge_script, merge_mounts) = container(merge_job);
    assert!(merge_mounts.contains(&("results".into(), merge_env["RESULTS"].clone())));
    assert!(
        script.contains("pi-course grade-class") && merge_script.contains("pi-course merge-class")
    );

    // The seed comes from a Secret drawn when the class is graded, and deleted once it is merged.
    assert_eq!(env["SEED"], "secret:grade-class-seed:seed");
    let create = "kubectl create secret generic grade-class-seed --from-literal=seed=\"$(";
    let drawn = text
        .lines()
        .find_map(|l| Some(l.split_once(create)?.1.strip_suffix(")\"")?.to_string()))
        .expect("the recipe creates the Secret");
    assert!(text.contains("kubectl delete secret grade-class-seed"));
    assert!(
        !text.contains("--seed \"$SEED\" --seed") && !text.contains("value: \"2026"),
        "a seed in the recipe"
    );
    let draw = || {
        let out = run_script(Path::new("/"), &drawn, &[]);
        stdout(&out).trim().to_string()
    };
    let seed = draw();
    assert!(seed.parse::<u64>().is_ok(), "{seed}");
    assert_ne!(seed, draw(), "drawn at random");

    let dir = tmp();
    let root = dir.path();
    let subs = cheap_class(root, "class");
    let results = root.join("results");
    fs::create_dir(&results).unwrap();
    let mut env = env;
    env.insert("SEED".into(), seed.clone());
    // The pods' environment, with the volumes where this test keeps them.
    let pod = |extra: &[(&str, String)], env: &BTreeMap<String, String>| -> Vec<(String, String)> {
        let mut all: BTreeMap<String, String> = env.clone();
        all.insert("SUBMISSIONS".into(), subs.display().to_string());
        all.insert("RESULTS".into(), results.display().to_string());
        all.insert("PI_COURSE_CACHE".into(), cache().display().to_string());
        for (k, v) in extra {
            all.insert(k.to_string(), v.clone());
        }
        all.into_iter().collect()
    };
    for k in 0..n {
        let env = pod(&[("JOB_COMPLETION_INDEX", k.to_string())], &env);
        let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let out = run_script(root, &script, &env);
        let shown = shown_anywhere(&results, &out, &seed, &[]);
        assert!(shown.is_empty(), "the seed is shown: {shown:?}");
    }
    let env = pod(&[], &merge_env);
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    run_script(root, &merge_script, &env);
    assert_class_merged(&results.join("class"));
}

#[test]
fn the_slurm_recipe_is_a_job_array_whose_first_task_submits_the_merge() {
    let text = recipe("slurm.sh");
    let script = repo().join("docs/shards/slurm.sh");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", describe(&syntax));
    let array = text
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array="))
        .unwrap();
    let (first, last) = array.split_once('-').unwrap();
    assert_eq!(first, "0", "K counts from 0");
    let n: usize = last.parse::<usize>().unwrap() + 1;

    let dir = tmp();
    let root = dir.path();
    let subs = cheap_class(root, "class");
    let results = root.join("results");
    // sbatch, recording what it was asked to run.
    let bin = root.join("bin");
    put(
        &bin.join("sbatch"),
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {}\necho 'Submitted batch job 4243'\n",
            root.join("sbatch.log").display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(bin.join("sbatch"), fs::Permissions::from_mode(0o755)).unwrap();
    let task = |k: usize| {
        let out = Command::new("bash")
            .arg(&script)
            .current_dir(root)
            .env("PATH", path_with_pi_course(&[&bin]))
            .env("SLURM_ARRAY_TASK_ID", k.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", n.to_string())
            .env("SLURM_ARRAY_JOB_ID", "4242")
            .env("SLURM_CPUS_PER_TASK", "2")
            .env("SUBMISSIONS", &subs)
            .env("RESULTS", &results)
            .env("PI_COURSE_CACHE", cache())
            .env("USER", "instructor")
            .output()
            .unwrap();
        assert!(out.status.success(), "task {k}\n{}", describe(&out));
        out
    };
    let mut outputs: Vec<Output> = (0..n).map(task).collect();
    // Task 0 again (requeued): its part resumes, and the merge is not submitted twice.
    outputs.push(task(0));
    // One seed, drawn by the first task into a file only its user reads, and shown nowhere else.
    let seed_file = results.join(".class-seed");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs::metadata(&seed_file).unwrap().mode() & 0o777, 0o600);
    let seed = fs::read_to_string(&seed_file).unwrap();
    assert!(seed.parse::<u64>().is_ok(), "{seed:?}");
    assert!(!text.contains("SEED=${SEED:-"), "a seed in the recipe");
    fs::rename(&seed_file, root.join("seed-kept-aside")).unwrap();
    for out in &outputs {
        let shown = shown_anywhere(&results, out, &seed, &[]);
        assert!(shown.is_empty(), "the seed is shown: {shown:?}");
    }
    fs::rename(root.join("seed-kept-aside"), &seed_file).unwrap();
    let leftovers: Vec<String> = names(&results)
        .into_iter()
        .filter(|n| n.starts_with(".class-seed."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let log = fs::read_to_string(root.join("sbatch.log")).unwrap();
    let args: Vec<&str> = log.lines().collect();
    assert_eq!(
        args.iter().filter(|a| a.starts_with("--wrap=")).count(),
        1,
        "{log}"
    );
    assert!(args.contains(&"--dependency=afterany:4242"), "{log}");
    let wrap = args.iter().find_map(|a| a.strip_prefix("--wrap=")).unwrap();
    // sbatch --wrap runs the command with sh.
    let out = Command::new("sh")
        .args(["-c", wrap])
        .current_dir(root)
        .env("PATH", path_with_pi_course(&[]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{wrap}\n{}", describe(&out));
    assert_class_merged(&results.join("class"));
}
