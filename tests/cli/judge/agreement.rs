//! The comparison exists twice: the grader's (`harness/judge/src/compare.rs`, which every Rust practice
//! directory copies) and its TypeScript port (`test/judge.ts` of the TypeScript track), which judges a
//! TypeScript hand run. By hand a learner must read what the grader would say, so this test gives both
//! the same (expected, trace) pairs and asserts every verdict and every message equal, in Chinese, in
//! English and in both:
//!
//! - **drawn** pairs: every scenario of the specification at a few seeds, with a trace its expected
//!   graph allows (each freedom filled with a value it accepts, as the specification's own `sample`
//!   test does), and that trace broken the ways loops break it: a step dropped, a field changed, two
//!   steps swapped, an event moved later, a Lab's unfinished part reached, a hang;
//! - **recorded** pairs: what both drivers recorded on the reference, the alternatives and some mutants
//!   (`tests/fixtures/judge-corpus.jsonl`, made by `scripts/record-judge-corpus.sh`), against the hand
//!   fixture's expected traces;
//! - **edge** pairs: the values where the two languages differ most (numbers, escapes, Unicode order and
//!   white space, stacks, cuts inside multi-byte text) and every freedom node.
//!
//! The TypeScript side is a practice directory's own `test/judge.ts`, built by its pinned tsc, in one
//! node process that reads a value per line and answers a line. A hand run hands the grader what
//! `JSON.stringify` writes; so when node would write a value differently from the line it read (a
//! number JSON text cannot keep exactly), it answers with its text and the Rust side judges that.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::*;
use pi_course::spec;
use pi_course_judge::compare::{judge as rust_judge, Lang};
use serde_json::{json, Value};

/// The seeds the drawn pairs come from (the hand fixture's seed, 7, is the recorded pairs').
const SEEDS: [u64; 4] = [1, 2, 3, 4];

const LANGS: [(Lang, &str); 3] = [(Lang::Zh, "zh"), (Lang::En, "en"), (Lang::Both, "both")];

/// The recorded traces, one JSON object a line: `source`, `test` (a scenario name), `trace`.
const CORPUS: &str = "tests/fixtures/judge-corpus.jsonl";

/// One question for both comparisons: the expected graph (an index into the list of graphs) and a trace.
struct Pair {
    source: String,
    expected: usize,
    trace: Vec<Value>,
}

/// Reads a value per line: `E<TAB>json` (an expected graph, kept) or `T<TAB>index<TAB>json` (a trace,
/// judged against graph `index` in every language). Answers each line with `echo`: the text
/// JSON.stringify writes for the value when it differs from the line's.
const NODE_JUDGE: &str = r#"
import { createInterface } from "node:readline";
import { judge } from "./dist/test/judge.js";

const graphs = [];
const echo = (text, value) => {
  const again = JSON.stringify(value);
  return again === text ? null : again;
};
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const [kind, ...rest] = line.split("\t");
  if (kind === "E") {
    const text = rest.join("\t");
    const value = JSON.parse(text);
    graphs.push(value);
    process.stdout.write(JSON.stringify({ echo: echo(text, value) }) + "\n");
  } else {
    const text = rest.slice(1).join("\t");
    const trace = JSON.parse(text);
    const expected = graphs[Number(rest[0])];
    const answer = { echo: echo(text, trace) };
    for (const lang of ["zh", "en", "both"]) answer[lang] = judge(expected, trace, lang) ?? null;
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
}
"#;

#[test]
fn the_typescript_comparison_says_what_the_graders_says() {
    let (_tmp, dir) = practice_ts();
    build_typescript(&dir);

    let mut graphs: Vec<Value> = Vec::new();
    let mut pairs: Vec<Pair> = Vec::new();
    drawn_pairs(&mut graphs, &mut pairs);
    let drawn = pairs.len();
    recorded_pairs(&mut graphs, &mut pairs);
    let recorded = pairs.len() - drawn;
    edge_pairs(&mut graphs, &mut pairs);
    let edges = pairs.len() - drawn - recorded;

    let answers = ask_node(&dir, &graphs, &pairs);
    let (graph_echoes, trace_answers) = answers.split_at(graphs.len());
    let graphs: Vec<Value> = graphs
        .iter()
        .zip(graph_echoes)
        .map(|(graph, answer)| echoed(graph, answer))
        .collect();

    let mut disagreements = Vec::new();
    let (mut passed, mut failed, mut echoed_traces) = (0, 0, 0);
    let mut seen = BTreeMap::<&str, usize>::new();
    for (pair, answer) in pairs.iter().zip(trace_answers) {
        let given = Value::Array(pair.trace.clone());
        let trace = echoed(&given, answer);
        echoed_traces += usize::from(trace != given);
        let trace = trace.as_array().expect("a trace is an array").clone();
        for (lang, key) in LANGS {
            let rust = rust_judge(&graphs[pair.expected], &trace, lang);
            let typescript = answer[key].as_str().map(str::to_string);
            match &rust {
                None => passed += 1,
                Some(text) => {
                    failed += 1;
                    for mark in [
                        "reached Lab 7.3",
                        "\n  at ",
                        "one of: ",
                        "(the trace ends here)",
                        "rule: ",
                    ] {
                        *seen.entry(mark).or_default() += usize::from(text.contains(mark));
                    }
                }
            }
            if rust != typescript {
                disagreements.push(format!(
                    "{} ({key}):\n--- Rust\n{}\n--- TypeScript\n{}\n--- trace\n{}",
                    pair.source,
                    rust.as_deref().unwrap_or("(passes)"),
                    typescript.as_deref().unwrap_or("(passes)"),
                    serde_json::to_string(&trace).unwrap(),
                ));
            }
        }
    }
    eprintln!(
        "{} pairs ({drawn} drawn, {recorded} recorded, {edges} edge; {echoed_traces} traces as node writes \
         them), the grader's verdicts: {passed} pass, {failed} fail; messages that say: {seen:?}",
        pairs.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} of {} verdicts differ; the first:\n\n{}",
        disagreements.len(),
        pairs.len() * LANGS.len(),
        disagreements
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // The corpus is what it claims: traces that pass and traces that fail in every way a message can say.
    assert!(
        recorded >= 100,
        "the recorded corpus holds {recorded} traces"
    );
    assert!(passed >= 3 * 300, "{passed} verdicts pass");
    assert!(failed >= 3 * 1000, "{failed} verdicts fail");
    for (mark, count) in seen {
        assert!(count > 0, "no message says {mark:?}");
    }
}

/// The dependencies (those a grade installed into the shared cache already, or `npm ci` as a learner
/// installs them), then `tsc -p`, as a learner builds a practice directory.
fn build_typescript(dir: &Path) {
    let lock = fs::read(dir.join("package-lock.json")).unwrap();
    let installed = fs::read_dir(cache().join("node"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|d| {
            d.join(".pi-course-installed").is_file()
                && fs::read(d.join("package-lock.json")).is_ok_and(|l| l == lock)
        });
    let mut steps: Vec<(&str, &str, &[&str])> = Vec::new();
    match installed {
        Some(deps) => {
            std::os::unix::fs::symlink(deps.join("node_modules"), dir.join("node_modules")).unwrap()
        }
        None => steps.push((
            "npm ci",
            "npm",
            &[
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ],
        )),
    }
    steps.push((
        "tsc",
        "node",
        &["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"],
    ));
    for (what, program, args) in steps {
        let out = Command::new(program)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.status.success(), "{what} failed\n{}", describe(&out));
    }
    assert!(
        dir.join("dist/test/judge.js").is_file(),
        "tsc built the port"
    );
}

/// Asks node about every graph, then every pair: one answer a line, in order.
fn ask_node(dir: &Path, graphs: &[Value], pairs: &[Pair]) -> Vec<Value> {
    fs::write(dir.join("judge-lines.mjs"), NODE_JUDGE).unwrap();
    let mut child = Command::new("node")
        .arg("judge-lines.mjs")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let mut input = Vec::new();
    for graph in graphs {
        input.extend_from_slice(format!("E\t{graph}\n").as_bytes());
    }
    for pair in pairs {
        input.extend_from_slice(
            format!(
                "T\t{}\t{}\n",
                pair.expected,
                Value::Array(pair.trace.clone())
            )
            .as_bytes(),
        );
    }
    let mut stdin = child.stdin.take().unwrap();
    // Written beside the reading, so neither pipe fills up while the other waits.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let answers: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| {
            serde_json::from_str(&line.expect("node's answer")).expect("one JSON answer a line")
        })
        .collect();
    writer.join().unwrap().expect("node reads every line");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "node judged\n{}", describe(&out));
    assert_eq!(
        answers.len(),
        graphs.len() + pairs.len(),
        "an answer a line\n{}",
        describe(&out)
    );
    answers
}

/// The value as node holds it: what it echoed (read as the grader reads a step), or the value itself.
fn echoed(value: &Value, answer: &Value) -> Value {
    match answer["echo"].as_str() {
        Some(text) => serde_json::from_str(text).expect("node writes JSON"),
        None => value.clone(),
    }
}

// ---------------------------------------------------------------------------------------------------
// Drawn pairs
// ---------------------------------------------------------------------------------------------------

fn drawn_pairs(graphs: &mut Vec<Value>, pairs: &mut Vec<Pair>) {
    for seed in SEEDS {
        for case in spec::cases("07", seed).expect("chapter 07 has a specification") {
            graphs.push(case.expected.clone());
            let expected = graphs.len() - 1;
            let sample = spec::sample(&case.expected);
            for (how, trace) in broken(&sample) {
                let source = format!("seed {seed} {} {how}", case.name);
                pairs.push(Pair {
                    source,
                    expected,
                    trace,
                });
            }
        }
    }
}

/// The sample as is, and broken the ways a loop breaks a trace.
fn broken(sample: &[Value]) -> Vec<(&'static str, Vec<Value>)> {
    let n = sample.len();
    let mid = n / 2;
    let mut out = vec![("as drawn", sample.to_vec())];
    for (how, at) in [
        ("first step dropped", 0),
        ("middle step dropped", mid),
        ("last step dropped", n - 1),
    ] {
        let mut t = sample.to_vec();
        t.remove(at);
        out.push((how, t));
    }
    for (how, last) in [("a field changed", false), ("a deep field changed", true)] {
        let mut t = sample.to_vec();
        if change_leaf(&mut t[mid], last) {
            out.push((how, t));
        }
    }
    if mid + 1 < n {
        let mut t = sample.to_vec();
        t.swap(mid, mid + 1);
        out.push(("two steps swapped", t));
    }
    if let Some(e) = sample.iter().position(|s| s["kind"] == "event") {
        for (how, to) in [
            ("an event two steps later", (e + 2).min(n - 1)),
            ("an event after the end", n - 1),
        ] {
            let mut t = sample.to_vec();
            let event = t.remove(e);
            t.insert(to, event);
            out.push((how, t));
        }
    }
    let mut t = sample[..mid].to_vec();
    t.push(json!({"kind": "panic", "message": "not yet implemented: Lab 7.3: the other stop reasons", "location": "src/agent_loop.rs:120:9"}));
    out.push(("Lab 7.3 reached", t));
    let mut t = sample[..mid].to_vec();
    t.push(json!({"kind": "hang", "waiting_for": "the run to return (last step: request)"}));
    out.push(("a hang", t));
    out
}

/// Changes the first (or last) leaf of `value`, in the order serde_json keeps keys: a string grows, a
/// number grows by one, a truth flips, a null becomes a text.
fn change_leaf(value: &mut Value, last: bool) -> bool {
    let changed = match &*value {
        Value::String(s) => json!(format!("{s}~")),
        Value::Number(n) => json!(n.as_f64().unwrap_or_default() as i64 + 1),
        Value::Bool(b) => json!(!b),
        Value::Null => json!("changed"),
        Value::Object(_) | Value::Array(_) => {
            let mut children: Vec<&mut Value> = match value {
                Value::Object(o) => o.values_mut().collect(),
                Value::Array(a) => a.iter_mut().collect(),
                _ => unreachable!("a container"),
            };
            if last {
                children.reverse();
            }
            return children.into_iter().any(|c| change_leaf(c, last));
        }
    };
    *value = changed;
    true
}

// ---------------------------------------------------------------------------------------------------
// Recorded pairs
// ---------------------------------------------------------------------------------------------------

fn recorded_pairs(graphs: &mut Vec<Value>, pairs: &mut Vec<Pair>) {
    let fixture = ts_dir().join("files/test/07-expected.json");
    let fixture: Value = serde_json::from_str(&fs::read_to_string(&fixture).unwrap()).unwrap();
    let mut index = BTreeMap::new();
    for test in fixture["tests"].as_array().unwrap() {
        graphs.push(test["expected"].clone());
        index.insert(test["name"].as_str().unwrap().to_string(), graphs.len() - 1);
    }
    let corpus = fs::read_to_string(repo().join(CORPUS)).expect("the recorded corpus");
    for line in corpus.lines() {
        let entry: Value = serde_json::from_str(line).expect("a corpus line is JSON");
        let test = entry["test"].as_str().unwrap();
        let expected = *index.get(test).unwrap_or_else(|| {
            panic!("{CORPUS} names {test}, which the hand fixture has not: run scripts/record-judge-corpus.sh")
        });
        let source = format!("{} {test}", entry["source"].as_str().unwrap());
        let trace = entry["trace"].as_array().unwrap().clone();
        pairs.push(Pair {
            source,
            expected,
            trace,
        });
    }
}

// ---------------------------------------------------------------------------------------------------
// Edge pairs
// ---------------------------------------------------------------------------------------------------

fn edge_pairs(graphs: &mut Vec<Value>, pairs: &mut Vec<Pair>) {
    let rules = json!({
        "r": {"lab": "7.2", "zh": "规则", "en": "the rule", "group": {"zh": "单工具往返", "en": "single tool"}},
        "precise": {"lab": "7.1", "zh": "更准确", "en": "more precise"},
        "deeper": {"lab": "7.4", "zh": "更深", "en": "deeper", "group": {"zh": "并发工具", "en": "concurrent tools"}},
        "no-english": {"lab": "7.5", "zh": "只有中文"},
    });
    let mut add = |source: &str, expected: Value, traces: Vec<Vec<Value>>| {
        graphs.push(expected);
        for trace in traces {
            pairs.push(Pair {
                source: source.to_string(),
                expected: graphs.len() - 1,
                trace,
            });
        }
    };
    let one = |m: Value| json!({"alternatives": [{"steps": [{"after": [], "match": m, "rule": "r"}]}], "rules": rules});
    let x = |v: Value| json!({"kind": "x", "v": v});

    // Numbers, as serde_json reads and writes them (some only reach node's side as node writes them).
    let numbers = [
        "0",
        "-0",
        "1",
        "1.0",
        "1.5",
        "-1.5",
        "0.1",
        "1e-7",
        "1.5e-7",
        "0.00001",
        "1e-6",
        "1e15",
        "1e16",
        "1e21",
        "1e+21",
        "1e300",
        "5e-324",
        "1.7976931348623157e308",
        "9007199254740993",
        "18446744073709551615",
        "18446744073709552000",
        "123456789012345680000",
        "99999999999999990000",
        "-9223372036854775808",
        "-9223372036854776000",
        "-9223372036854775000",
        "1234567890123456.7",
        "100",
        "4.35e-6",
    ];
    let numbers: Vec<Value> = numbers
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    let traces = numbers.iter().map(|n| vec![x(n.clone())]).collect();
    add("a number shown", one(x(json!("a text"))), traces);
    let traces = numbers
        .iter()
        .map(|n| vec![json!({"kind": "request", "n": n})])
        .collect();
    add(
        "a request numbered",
        one(json!({"kind": "request", "n": 1.5})),
        traces,
    );
    let traces = numbers.iter().map(|n| vec![x(n.clone())]).collect();
    add("numbers compared by value", one(x(json!(1))), traces);

    // Texts: escapes, white space, order of keys, cuts inside multi-byte characters.
    let texts = [
        "",
        " ",
        "\u{85}",
        "\u{feff}",
        " \u{3000}",
        "\u{2028}",
        "a\u{2029}b",
        "\u{1}\u{7f}\t\n\r\"\\/",
        "中文",
        "😀",
        "e\u{301}",
        "\u{200b}",
    ];
    let traces = texts.iter().map(|t| vec![x(json!(t))]).collect();
    add("a free text", one(x(json!({"$text": "skip-text"}))), traces);
    let long = |c: &str, n: usize| c.repeat(n);
    let traces = ["中", "😀", "a", "é"]
        .iter()
        .flat_map(|c| [158, 159, 160, 161, 200].map(|n| vec![x(json!(long(c, n)))]))
        .collect();
    add("a long text cut", one(x(json!(1))), traces);
    let traces = ["中", "😀", "x"]
        .iter()
        .flat_map(|c| {
            [119, 120, 121].map(|n| vec![json!({"kind": "panic", "message": long(c, n)})])
        })
        .collect();
    add("a long panic cut", one(json!({"kind": "result"})), traces);
    let traces = vec![
        vec![json!({"kind": "x", "v": 1, "😀": 1, "\u{ffff}": 2})],
        vec![json!({"kind": "x", "v": 1, "b": 1, "B": 2, "é": 3, "__proto__": 4, "10": 5, "9": 6})],
        vec![json!({"kind": "x", "v": {"😀": 1, "\u{e000}": 2, "z": [1, {"b": 2, "a": 1}]}})],
        vec![json!({"kind": "x", "v": [1, 2, 3]})],
        vec![json!({"kind": "x"})],
        vec![json!({"kind": "x", "v": null})],
        vec![json!({"kind": "x", "v": {"__proto__": {"polluted": true}}})],
    ];
    add(
        "keys in serde_json's order",
        one(x(json!({"a": 1, "__proto__": 1, "😀": 1}))),
        traces.clone(),
    );
    add("arrays item by item", one(x(json!([1, 2]))), traces);

    // Failure texts: what carries the message, what is a stack, how Rust's Debug writes the carried text.
    let failures = [
        "Tool x failed: disk full",
        "disk full\n    at run (src/agent-loop.ts:10:3)",
        "disk full\r\n   at x",
        "disk full\n\u{85}at x",
        "disk full\n\u{feff}at x",
        "disk full\rat x",
        "disk full\nat \r\nnext",
        "disk full\nat ",
        "disk full at lib.rs:12",
        "disk full in x.ts:a",
        "disk full (x.mjs:1)",
        "disk full, thread panicked at src/lib.rs",
        "DiskFull { code: 28 }: disk full",
        "disk fu",
    ];
    let traces: Vec<Vec<Value>> = failures.iter().map(|t| vec![x(json!(t))]).collect();
    add(
        "a failure text",
        one(x(
            json!({"$carries": "disk full", "$without": ["DiskFull {"], "$freedom": "failure-wording"}),
        )),
        traces.clone(),
    );
    add(
        "a carried text shown as Rust's Debug writes it",
        one(x(
            json!({"$carries": "tab\there \"q\" 'single' \\ \u{301}\u{200b}é中😀\u{0}\u{7f}\u{85}\u{a0}\u{2028}\u{feff}\u{e000}\u{10ffff} \u{3000}"}),
        )),
        traces,
    );

    // The other freedoms.
    let traces = vec![
        vec![x(json!("stop"))],
        vec![x(json!("length"))],
        vec![x(json!({"k": "stop"}))],
        vec![json!({"kind": "x"})],
    ];
    add(
        "one of",
        one(x(
            json!({"$one_of": ["stop", {"k": "stop"}, 1.5], "$freedom": "f"}),
        )),
        traces,
    );
    let bound = json!({"alternatives": [{"steps": [
        {"after": [], "match": x(json!({"$bind": "skip:c1", "$match": {"$text": "skip-text"}})), "rule": "r"},
        {"after": [0], "match": x(json!({"$bind": "skip:c1", "$match": {"$text": "skip-text"}})), "rule": "r"},
    ]}], "rules": rules});
    let traces = vec![
        vec![x(json!("not run")), x(json!("not run"))],
        vec![x(json!("not run")), x(json!("not run!"))],
        vec![x(json!("not run")), x(json!(" "))],
        vec![x(json!(" ")), x(json!("not run"))],
    ];
    add("a bound value", bound, traces);
    let traces = vec![
        vec![json!({"kind": "x"})],
        vec![x(json!("run"))],
        vec![x(json!("other"))],
        vec![x(json!(null))],
    ];
    add("absent or", one(x(json!({"$absent_or": "run"}))), traces);
    let traces = vec![
        vec![x(json!({"debug": "ScriptedError { message }"}))],
        vec![x(json!(["fine", {"ScriptedError {": 1}]))],
        vec![x(json!("fine"))],
        vec![json!({"kind": "x"})],
    ];
    add(
        "anything without",
        one(x(
            json!({"$any": "details", "$without": ["ScriptedError {"]}),
        )),
        traces,
    );
    add(
        "unknown node",
        one(x(json!({"$unknown": 1}))),
        vec![vec![x(json!(1))]],
    );

    // Path rules: the longest that holds the difference names the rule.
    let ruled = json!({"alternatives": [{"steps": [{"after": [], "rule": "r",
        "path_rules": {"caller": "precise", "caller.messages": "deeper", "callers": "no-english"},
        "match": {"kind": "result", "caller": {"messages": [1], "system_prompt": "p"}, "callers": 1}}]}],
        "rules": rules});
    let result = |messages: Value, prompt: &str, callers: Value| json!({"kind": "result", "caller": {"messages": messages, "system_prompt": prompt}, "callers": callers});
    let traces = vec![
        vec![result(json!([2]), "p", json!(1))],
        vec![result(json!([1]), "q", json!(1))],
        vec![result(json!([1]), "p", json!(2))],
        vec![result(json!([1, 2]), "p", json!(1))],
        vec![json!({"kind": "result"})],
    ];
    add("path rules", ruled, traces);

    // Labels, late events, alternatives, and graphs that are not quite graphs.
    let steps = [
        json!({"kind": "event", "event": {"type": "tool_end", "result": {"id": null, "toolCallId": "c1"}}}),
        json!({"kind": "event", "event": {"type": "tool_skipped", "result": {"toolCallId": "c2"}}}),
        json!({"kind": "event", "event": {"type": "tool_start", "call": {"id": 7}}}),
        json!({"kind": "event", "event": {"type": "turn_end", "reason": 5}}),
        json!({"kind": "event", "event": {"type": "turn_end"}}),
        json!({"kind": "event", "event": {"type": "model_event", "event": {"type": "done"}}}),
        json!({"kind": "event", "event": {"type": "tool_progress", "toolCallId": "c3"}}),
        json!({"kind": "event", "event": "not an object"}),
        json!({"kind": "exec_enter", "via": "tool", "tool": "read"}),
        json!({"kind": "exec_enter", "via": "executor", "call": {"id": "c4"}}),
        json!({"kind": "exec_progress", "ref": "tool:read"}),
        json!({"kind": "exec_leave", "ref": "c4"}),
        json!({"kind": "driver", "action": "gave_up", "waiting_for": "at_gate c1"}),
        json!({"kind": "driver", "action": "stream_end", "n": 1}),
        json!({"kind": "driver", "action": "release", "ref": "c1"}),
        json!({"kind": "driver", "action": "abort"}),
        json!({"kind": "caller", "state": "locked"}),
        json!({"kind": "result", "reason": {"weird": true}}),
        json!({"kind": "hang"}),
        json!({"kind": "overflow"}),
        json!({"no": "kind"}),
        json!("a step that is a text"),
        json!({"kind": "panic", "message": "not implemented: Lab 7.3."}),
        json!({"kind": "panic", "message": "TODO(Lab 7.1): 复制一次调用者的 context"}),
        json!({"kind": "panic", "message": "Lab 7. is not done"}),
        json!({"kind": "panic", "message": "Lab x not done"}),
        json!({"kind": "panic", "message": "Lab 7.2 done"}),
    ];
    let expected = json!({"alternatives": [{"steps": [
        {"after": [], "match": {"kind": "request", "n": 1}, "rule": "r"},
        {"after": [0], "match": {"kind": "event", "event": {"type": "turn_end", "reason": {"$one_of": ["stop", "length"]}}}, "rule": "deeper"},
        {"after": [0], "match": {"kind": "event", "event": {"type": "tool_end", "result": {"toolCallId": "c1"}}}, "rule": "no-english"},
        {"after": [1, 2], "match": {"kind": "result", "reason": "stop"}, "rule": "precise"},
    ]}], "rules": rules});
    let request = json!({"kind": "request", "n": 1});
    let mut traces: Vec<Vec<Value>> = steps
        .iter()
        .map(|s| vec![request.clone(), s.clone()])
        .collect();
    traces.push(steps.to_vec());
    let long: Vec<Value> = (0..30)
        .map(|i| json!({"kind": "request", "n": i}))
        .collect();
    traces.push([vec![request.clone()], long].concat());
    let end = json!({"kind": "event", "event": {"type": "turn_end", "reason": "stop"}});
    let tool_end = steps[0].clone();
    let result = json!({"kind": "result", "reason": "stop"});
    let exec = steps[11].clone();
    traces.push(vec![
        request.clone(),
        exec.clone(),
        tool_end.clone(),
        end.clone(),
        result.clone(),
    ]);
    traces.push(vec![
        request.clone(),
        exec.clone(),
        exec.clone(),
        tool_end.clone(),
        end.clone(),
        result.clone(),
    ]);
    traces.push(vec![
        request.clone(),
        exec.clone(),
        result.clone(),
        end.clone(),
    ]);
    traces.push(vec![
        request.clone(),
        end.clone(),
        tool_end.clone(),
        result.clone(),
    ]);
    traces.push(vec![request.clone(), end.clone(), tool_end.clone()]);
    traces.push(vec![]);
    add("labels and late events", expected, traces);
    let alternatives = json!({"alternatives": [
        {"steps": [{"after": [], "match": {"kind": "x"}, "rule": "r"}]},
        {"steps": [{"after": [], "match": {"kind": "a"}, "rule": "precise"}, {"after": [0], "match": {"kind": "b"}, "rule": "deeper"}]},
        {"steps": [{"after": [], "match": {"kind": "a"}, "rule": "no-english"}, {"after": [0], "match": {"kind": "c"}}]},
    ], "rules": rules});
    let k = |kind: &str| json!({"kind": kind});
    let traces = vec![
        vec![k("x")],
        vec![k("a"), k("b")],
        vec![k("a"), k("d")],
        vec![k("a")],
        vec![k("d")],
        vec![],
    ];
    add("alternatives", alternatives, traces.clone());
    for (source, odd) in [
        ("no alternatives", json!({"rules": rules})),
        ("not a graph", json!("text")),
        (
            "steps that are not steps",
            json!({"alternatives": [{"steps": [1, {"after": [-1]}, {"after": [1.5, "0"], "match": {"kind": "a"}}]}, "x"]}),
        ),
        (
            "an order out of range",
            json!({"alternatives": [{"steps": [{"after": [5], "match": {"kind": "a"}, "rule": "r"}]}], "rules": rules}),
        ),
        (
            "a rule with no texts",
            json!({"alternatives": [{"steps": [{"after": [], "match": {"kind": "a"}, "rule": "r"}]}], "rules": {"r": 1}}),
        ),
    ] {
        add(source, odd, traces.clone());
    }
}
