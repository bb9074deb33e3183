//! Attacks on the TypeScript track's grade, each a real malicious `src/agent-loop.ts` graded through the
//! real practice-and-grade path (tsc, then node under the permission model and the grader's sandbox):
//! the attack must fail, and the verdict must hold.
//!
//! Each attack proves that its code ran. An attack that runs inside `runAgentLoop` collects what each of
//! its attempts did in `STATE` and then either throws `ATTACK-RAN[<STATE>]` (the skeleton-based ones:
//! every test's trace ends with it, a `panic` step) or sends a digest of it as the system prompt of every
//! request (the reference-based ones: every plain-stop test fails at its request step, unless the attack
//! forged what the driver records). The grader's messages quote a step only in part, so these are read
//! whole from the last grade's evidence (`.pi-course/last-traces.json`: each failing test's trace).
//! An attempt the grade stopped says `refused (…)` or `kept`; one that got through says `CHANGED`,
//! `ESCAPED` or what it read.
//!
//! These tests need the sandbox (Linux with Landlock). Where it is missing they fail, saying so, unless
//! `PI_COURSE_TESTS_ALLOW_UNSANDBOXED=1` is set: then each says it was skipped.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------------
// Building attacks
// ---------------------------------------------------------------------------------------------------

/// Appended to every attack: `STATE` and the way each attempt records what happened to it.
const PRELUDE: &str = r#"
// ---- attack ----
let STATE = "";
// The caller's system prompt, kept by a reference-based attack as its run starts.
let REAL_PROMPT: unknown = undefined;
let TRIED = 0;
let REFUSED = 0;
const THROUGH: string[] = [];
function why(error: unknown): string {
  try {
    const e = error as { code?: unknown; message?: unknown };
    return String(e?.code ?? e?.message ?? error).slice(0, 90).split("\n").join(" ");
  } catch {
    return "an error that cannot be shown";
  }
}
function note(name: string, outcome: string): void {
  TRIED += 1;
  if (outcome.startsWith("refused")) REFUSED += 1;
  STATE += `${name}: ${outcome}; `;
  if (!outcome.startsWith("refused") && outcome !== "kept") THROUGH.push(`${name}: ${outcome}`);
}
// Short enough to be shown whole where a test prints a value.
function digest(): string {
  return `tried ${TRIED}; refused ${REFUSED}; through: ${THROUGH.length === 0 ? "none" : THROUGH.join("; ")}`;
}
function tried(name: string, attempt: () => string): void {
  try {
    note(name, attempt());
  } catch (error) {
    note(name, `refused (${why(error)})`);
  }
}
async function triedAsync(name: string, attempt: () => Promise<string>): Promise<void> {
  try {
    note(name, await attempt());
  } catch (error) {
    note(name, `refused (${why(error)})`);
  }
}
// Replaces owner[key]; says whether the replacement took.
function swap(name: string, owner: any, key: PropertyKey, value: unknown): void {
  tried(name, () => {
    const before = owner[key];
    owner[key] = value;
    return owner[key] === before ? "kept" : "CHANGED";
  });
}
"#;

/// The skeleton with `top` at module level (run when the module is imported) and `first` run first thing
/// in `runAgentLoop`, which then throws `ATTACK-RAN[<STATE>]`: every test fails with what the attack did.
fn on_skeleton(top: &str, first: &str) -> String {
    let code = ts_starting_with(
        &ts_skeleton(),
        &format!("{first}\n  throw new Error(\"ATTACK-RAN[\" + STATE + \"]\");"),
    );
    format!("{code}{PRELUDE}{top}\n")
}

/// The reference with `top` at module level and `first` run first thing in `runAgentLoop`, which then
/// sends `ATTACK-RAN[tried N; refused M; through: …]` as the system prompt of every request: each
/// plain-stop test must fail with it (see [`prompt_problem`]). The caller's real prompt is kept in
/// `REAL_PROMPT` first, for the forgeries that would put it back where the driver records the request.
fn on_reference(top: &str, first: &str) -> String {
    let line = "systemPrompt: options.context.systemPrompt,";
    let reference = ts_solution();
    assert_eq!(reference.matches(line).count(), 1);
    let code = ts_starting_with(
        &reference.replacen(line, "systemPrompt: \"ATTACK-RAN[\" + digest() + \"]\",", 1),
        &format!("REAL_PROMPT = options.context.systemPrompt;\n  {first}"),
    );
    format!("{code}{PRELUDE}{top}\n")
}

/// A TypeScript string literal.
fn ts_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

// ---------------------------------------------------------------------------------------------------
// Reading reports
// ---------------------------------------------------------------------------------------------------

/// The attack compiled (a report of `error` would prove nothing about it).
fn assert_built(report: &Value) {
    assert_ne!(
        report["status"], "error",
        "the attack did not build: {report:#}"
    );
}

/// Every test of every group failed or timed out: nothing passed.
fn assert_nothing_passed(report: &Value) {
    for (slug, test) in report_tests(report) {
        assert_ne!(test["status"], "pass", "{slug}: a test passed: {test:#}");
    }
    for group in report["groups"].as_array().unwrap() {
        assert_ne!(group["status"], "pass", "a group passed: {group:#}");
    }
    assert_ne!(report["status"], "pass");
}

/// Every required group is in the report and did not pass.
fn assert_required_fail(report: &Value) {
    for slug in REQUIRED {
        let status = group_status(report, slug);
        assert!(
            status == "fail" || status == "timeout",
            "{slug} is {status}: {report:#}"
        );
    }
}

/// The last grade's evidence (`.pi-course/last-traces.json`): each failing test's entry, with the trace
/// its driver recorded whole (a report's message quotes only the start of a step).
fn evidence(dir: &Path) -> Vec<Value> {
    let path = dir.join(".pi-course/last-traces.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let last: Value = serde_json::from_str(&text).unwrap();
    last["tests"].as_array().unwrap().clone()
}

/// The steps of `kind` in the traces of the evidence's tests that `keep` accepts, test by test in order.
fn steps_of(dir: &Path, kind: &str, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    evidence(dir)
        .into_iter()
        .filter(|test| keep(test))
        .flat_map(|test| test["trace"].as_array().unwrap().clone())
        .filter(|step| step["kind"] == kind)
        .collect()
}

/// What the attack recorded: the first thrown `ATTACK-RAN[<record>]`, whole, from the `panic` steps of the
/// last grade's evidence. Panics if none holds one: the attack's code did not run, and the test would
/// prove nothing.
fn state(dir: &Path) -> String {
    let panics = steps_of(dir, "panic", |_| true);
    panics
        .iter()
        .find_map(|step| marked(step["message"].as_str()?))
        .unwrap_or_else(|| panic!("no panic step shows the attack ran: {panics:#?}"))
}

/// The record in a text that is `ATTACK-RAN[<record>]` and nothing else.
fn marked(text: &str) -> Option<String> {
    Some(
        text.strip_prefix("ATTACK-RAN[")?
            .strip_suffix(']')?
            .to_string(),
    )
}

/// A digest `tried N; refused M; through: …` as (N, M).
fn counts(digest: &str) -> (usize, usize) {
    let numbers: Vec<usize> = digest
        .split(';')
        .take(2)
        .map(|part| part.split_whitespace().last().unwrap().parse().unwrap())
        .collect();
    (numbers[0], numbers[1])
}

/// For a reference-based attack that made `attempts` attempts: what went wrong, if the prompt
/// was forged (a plain-stop test passed although the loop sent a wrong prompt to every request) or an
/// attempt got through or never ran. Every plain-stop scenario makes a request, so every one of its tests
/// must fail; the digests come from the request steps of the evidence, whole. A test process runs several
/// tests and `STATE` grows with each, so the first test of each process shows exactly `attempts`, and
/// every test shows no attempt through.
fn prompt_problem(dir: &Path, report: &Value, what: &str, attempts: usize) -> Option<String> {
    assert_built(report);
    let passed: Vec<&str> = report_tests(report)
        .into_iter()
        .filter(|(slug, t)| slug == "plain-stop" && t["status"] == "pass")
        .map(|(_, t)| t["name"].as_str().unwrap())
        .collect();
    if !passed.is_empty() || group_status(report, "plain-stop") == "pass" {
        return Some(format!(
            "{what}: the loop sent a wrong system prompt, yet plain-stop passed {passed:?}: the attack forged the comparison"
        ));
    }
    let prompts = steps_of(dir, "request", |test| test["lab"] == "7.1");
    let digests: Vec<String> = prompts
        .iter()
        .filter_map(|step| marked(step["system_prompt"].as_str()?))
        .collect();
    if digests.is_empty() || digests.len() != prompts.len() {
        let ends: Vec<String> = evidence(dir)
            .iter()
            .map(|t| {
                format!(
                    "{}: {}",
                    t["name"],
                    t["trace"]
                        .as_array()
                        .unwrap()
                        .last()
                        .unwrap_or(&Value::Null)
                )
            })
            .collect();
        return Some(format!(
            "{what}: not every request shows the attack ran: {prompts:#?}\nthe traces end with:\n{}",
            ends.join("\n")
        ));
    }
    if let Some(digest) = digests.iter().find(|d| !d.ends_with("through: none")) {
        return Some(format!("{what}: an attempt got through: {digest}"));
    }
    let first = digests.iter().map(|d| counts(d).0).min().unwrap();
    if first != attempts {
        return Some(format!(
            "{what}: not every attempt ran ({attempts} made, the first test of a process tried {first}): {digests:?}"
        ));
    }
    None
}

/// See [`prompt_problem`].
fn assert_prompt_not_forged(dir: &Path, report: &Value, what: &str, attempts: usize) {
    if let Some(problem) = prompt_problem(dir, report, what, attempts) {
        panic!("{problem}");
    }
}

/// The names of the chapter's TypeScript tests, from one grade of the skeleton.
fn test_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let (_tmp, dir) = practice_ts();
        let (_, report) = grade_json(&dir, &[]);
        let names: Vec<String> = report_tests(&report)
            .into_iter()
            .map(|(_, t)| t["name"].as_str().unwrap().to_string())
            .collect();
        assert!(names.len() > 10, "{report:#}");
        names
    })
}

fn names_of(report: &Value) -> BTreeSet<String> {
    report_tests(report)
        .into_iter()
        .map(|(_, t)| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The chapter's test names as a TypeScript array literal.
fn names_literal() -> String {
    serde_json::to_string(test_names()).unwrap()
}

// ---------------------------------------------------------------------------------------------------
// Printing passing lines and exiting
// ---------------------------------------------------------------------------------------------------

/// What node:test would print for every test passing, and the attack's marker last.
fn passing_lines(marker: &str) -> String {
    let mut lines = String::from("TAP version 13\n");
    for (i, name) in test_names().iter().enumerate() {
        lines.push_str(&format!("# Subtest: {name}\nok {} - {name}\n", i + 1));
    }
    let n = test_names().len();
    lines.push_str(&format!(
        "1..{n}\n# tests {n}\n# pass {n}\n# fail 0\n✔ all tests passed\n{marker}\n"
    ));
    lines
}

#[test]
fn passing_lines_and_an_exit_at_import_forge_nothing() {
    // A cache of its own, listed by the skeleton first: the attack then runs its tests from that list
    // (it exits while being listed too; a build slot that never listed would leave nothing to run).
    let cache = private_cache();
    let (_tmp, dir) = practice_ts();
    let (_, first) = grade_json_in(cache.path(), &dir, &[]);
    if !sandboxed(&first) {
        return;
    }
    let lines = ts_string(&passing_lines("ATTACK-RAN[import]"));
    let top = format!(
        "import * as attackFs from \"node:fs\";\nattackFs.writeSync(1, {lines});\nattackFs.writeSync(2, {lines});\nprocess.exit(0);"
    );
    // Without the prelude: the attack stays the skeleton's closest version, so the grade puts it in the
    // build slot the skeleton listed.
    write_ts_loop(&dir, &format!("{}{top}\n", ts_skeleton()));
    // A generous timeout: the attack ends its process in every test, so each test starts a process of its
    // own, which a loaded machine must not turn into a timeout.
    let (code, report) = grade_json_in(cache.path(), &dir, &["--timeout", "30"]);
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    assert_required_fail(&report);
    assert_eq!(
        names_of(&report),
        names_of(&first),
        "the same tests are graded"
    );
    for (slug, test) in report_tests(&report) {
        let message = test["message"].as_str().unwrap();
        assert!(
            message.contains("ATTACK-RAN[import]"),
            "{slug}: the attack's output is shown: {message}"
        );
    }
}

#[test]
/// The tests are listed before the learner's module is ever loaded (the test kit imports it lazily), so a
/// module that exits as it loads cannot empty the list: every test fails with what it printed.
fn an_exit_as_the_module_loads_leaves_the_list_whole() {
    let cache = private_cache();
    let (_tmp, dir) = practice_ts();
    let top = "import * as attackFs from \"node:fs\";\nattackFs.writeSync(1, \"ATTACK-RAN[listing]\\n\");\nprocess.exit(0);";
    write_ts_loop(&dir, &format!("{}{top}\n", ts_skeleton()));
    // A generous timeout: the attack ends its process in every test, so each test starts a process of its
    // own, which a loaded machine must not turn into a timeout.
    let (code, report) = grade_json_in(cache.path(), &dir, &["--lang", "en", "--timeout", "30"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "fail", "{report:#}");
    let graded = names_of(&report);
    let chapter: BTreeSet<String> = test_names().iter().cloned().collect();
    assert_eq!(graded, chapter, "every test of the chapter is graded");
    assert_nothing_passed(&report);
    for (slug, test) in report_tests(&report) {
        let message = test["message"].as_str().unwrap_or("");
        assert!(
            message.contains("ATTACK-RAN[listing]"),
            "{slug}: the failure shows what the module printed: {message}"
        );
    }
}

#[test]
fn passing_lines_and_an_exit_inside_the_loop_forge_nothing() {
    let (_tmp, dir) = practice_ts();
    let lines = ts_string(&passing_lines("ATTACK-RAN[loop]"));
    let first = format!(
        "attackFs.writeSync(1, {lines}); attackFs.writeSync(2, {lines}); process.exitCode = 0; process.exit(0);"
    );
    write_ts_loop(
        &dir,
        &on_skeleton("import * as attackFs from \"node:fs\";", &first),
    );
    // A generous timeout: the attack ends its process in every test, so each test starts a process of its
    // own, which a loaded machine must not turn into a timeout.
    let (code, report) = grade_json(&dir, &["--timeout", "30"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    assert_required_fail(&report);
    for (slug, test) in report_tests(&report) {
        let message = test["message"].as_str().unwrap();
        assert!(
            message.contains("ATTACK-RAN[loop]"),
            "{slug}: the attack's output is shown: {message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// The verdict channel and its key
// ---------------------------------------------------------------------------------------------------

#[test]
fn forged_records_on_every_descriptor_forge_nothing() {
    let (_tmp, dir) = practice_ts();
    let top = format!(
        r#"import * as attackFs from "node:fs";
const NAMES: string[] = {names};
const GUESSES = ["", "0".repeat(32), "f".repeat(32), "0123456789abcdef0123456789abcdef", String(process.env["PI_COURSE_GRADED"])];
// Writes `text` whole. Node's stdout and stderr are non-blocking pipes, which refuse a write with EAGAIN
// while full: that is the pipe waiting for its reader (the grader), not a refusal, so it is tried again.
function writeAll(fd: number, text: string): void {{
  let bytes = Buffer.from(text);
  while (bytes.length > 0) {{
    try {{
      bytes = bytes.subarray(attackFs.writeSync(fd, bytes));
    }} catch (error) {{
      if ((error as {{ code?: unknown }})?.code !== "EAGAIN") throw error;
    }}
  }}
}}
function forge(): void {{
  for (const fd of [4, 3, 1, 2]) {{
    tried(`fd ${{fd}}`, () => {{
      let lines = 0;
      for (const key of GUESSES) {{
        for (const test of NAMES) {{
          for (const event of ["started", "passed"]) {{
            writeAll(fd, JSON.stringify({{ key, event, test, message: null }}) + "\n");
            lines += 1;
          }}
        }}
      }}
      writeAll(fd, JSON.stringify({{ event: "passed", test: NAMES[0] }}) + "\n");
      return `wrote ${{lines + 1}} records`;
    }});
  }}
}}"#,
        names = names_literal()
    );
    write_ts_loop(&dir, &on_skeleton(&top, "forge();"));
    let (code, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    assert_required_fail(&report);
    let record = state(&dir);
    // The grader's descriptors are refused before a record is written; the loop's own output is not.
    for fd in [4, 3] {
        assert!(
            record.contains(&format!("fd {fd}: refused (ERR_ACCESS_DENIED)")),
            "fd {fd} was not refused: {record}"
        );
    }
    for fd in [1, 2] {
        assert!(record.contains(&format!("fd {fd}: wrote")), "{record}");
    }
}

/// Every way JavaScript names a descriptor by number, tried on the grader's two (`fd N …`), and on
/// stdout, which is the loop's own.
#[test]
fn the_graders_descriptors_are_refused_to_graded_code() {
    let (_tmp, dir) = practice_ts();
    let top = r#"import * as attackFs from "node:fs";
import * as attackFsPromises from "node:fs/promises";
import * as attackNet from "node:net";
import * as attackTty from "node:tty";
import * as attackDgram from "node:dgram";
// What a refusal said, whole: the test shows it.
function said(error: unknown): string {
  return String((error as { message?: unknown })?.message ?? error).split("\n")[0];
}
function attempt(name: string, run: () => string): void {
  try {
    note(name, run());
  } catch (error) {
    note(name, `refused (${said(error)})`);
  }
}
async function attemptAsync(name: string, run: () => Promise<string>): Promise<void> {
  try {
    note(name, await run());
  } catch (error) {
    note(name, `refused (${said(error)})`);
  }
}
const FORGED = '{"key":"0","event":"passed","test":"x","message":null}\n';
async function reach(): Promise<void> {
  for (const fd of [4, 3]) {
    attempt(`fd ${fd} writeSync`, () => `WROTE ${attackFs.writeSync(fd, FORGED)}`);
    attempt(`fd ${fd} writevSync`, () => `WROTE ${attackFs.writevSync(fd, [Buffer.from(FORGED)])}`);
    attempt(`fd ${fd} fstatSync`, () => `STAT ${attackFs.fstatSync(fd).mode}`);
    attempt(`fd ${fd} readSync`, () => `READ ${attackFs.readSync(fd, Buffer.alloc(64))}`);
    attempt(`fd ${fd} readFileSync`, () => `READ ${attackFs.readFileSync(fd, "utf8").length}`);
    attempt(`fd ${fd} appendFileSync`, () => { attackFs.appendFileSync(fd, FORGED); return "WROTE"; });
    attempt(`fd ${fd} closeSync`, () => { attackFs.closeSync(fd); return "CLOSED"; });
    await attemptAsync(`fd ${fd} write`, () => new Promise((resolve, reject) => {
      attackFs.write(fd, FORGED, (error) => (error ? reject(error) : resolve("WROTE")));
    }));
    attempt(`fd ${fd} createWriteStream`, () => { attackFs.createWriteStream("", { fd }).write(FORGED); return "WROTE"; });
    attempt(`fd ${fd} net.Socket`, () => { new attackNet.Socket({ fd, readable: false, writable: true }).write(FORGED); return "WROTE"; });
    attempt(`fd ${fd} tty.WriteStream`, () => { new attackTty.WriteStream(fd).write(FORGED); return "WROTE"; });
    attempt(`fd ${fd} tty constructor`, () => { new (attackTty.WriteStream.prototype.constructor as any)(fd).write(FORGED); return "WROTE"; });
    attempt(`fd ${fd} Pipe.open`, () => {
      const Pipe = (process.stderr as any)._handle.constructor;
      return `OPENED ${new Pipe(0).open(fd)}`;
    });
    await attemptAsync(`fd ${fd} dgram bind`, () => new Promise((resolve, reject) => {
      const socket = attackDgram.createSocket("udp4");
      socket.on("error", reject);
      socket.bind({ fd }, () => resolve("BOUND"));
    }));
  }
  await attemptAsync("FileHandle fd", async () => {
    const handle = await attackFsPromises.open("package.json");
    Object.defineProperty(handle, "fd", { value: 4 });
    await handle.write(FORGED);
    return "WROTE";
  });
  attempt("fd 1 writeSync", () => `wrote ${attackFs.writeSync(1, "the loop's own output\n")}`);
}"#;
    write_ts_loop(&dir, &on_skeleton(top, "await reach();"));
    let (code, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    for fd in [4, 3] {
        for way in [
            "writeSync",
            "writevSync",
            "fstatSync",
            "readSync",
            "readFileSync",
            "appendFileSync",
            "closeSync",
            "write",
            "createWriteStream",
            "tty.WriteStream",
            "tty constructor",
            "Pipe.open",
        ] {
            let refusal = format!(
                "fd {fd} {way}: refused (pi-course: descriptor {fd} belongs to the grader: graded code may not use it"
            );
            assert!(
                record.contains(&refusal),
                "not refused: fd {fd} {way}: {record}"
            );
        }
        // net and dgram take only a socket's descriptor of their kind: the placeholder held at 3 is a
        // file, and the verdict socket is no UDP socket.
        for way in ["net.Socket", "dgram bind"] {
            assert!(
                record.contains(&format!("fd {fd} {way}: refused (")),
                "not refused: fd {fd} {way}: {record}"
            );
        }
    }
    assert!(
        record.contains("fd 4 net.Socket: refused (pi-course: descriptor 4 belongs to the grader"),
        "{record}"
    );
    assert!(
        record.contains(
            "FileHandle fd: refused (pi-course: fs.promises.open is not available to graded code)"
        ),
        "{record}"
    );
    assert!(record.contains("fd 1 writeSync: wrote "), "{record}");
    assert!(
        !["WROTE", "STAT", "READ", "CLOSED", "OPENED", "BOUND"]
            .iter()
            .any(|done| record.contains(&format!(": {done}"))),
        "{record}"
    );
}

/// Node's ways to list or watch the objects of the process, each tried (`NAME: …`).
#[test]
fn heap_inspection_is_refused_to_graded_code() {
    let (_tmp, dir) = practice_ts();
    let top = r#"import * as attackV8 from "node:v8";
import * as attackInspector from "node:inspector";
function inspect(): void {
  tried("v8.queryObjects", () => `LISTED ${attackV8.queryObjects(Object, { format: "summary" }).length}`);
  tried("v8.getHeapSnapshot", () => { attackV8.getHeapSnapshot(); return "LISTED"; });
  tried("v8.writeHeapSnapshot", () => `LISTED ${attackV8.writeHeapSnapshot()}`);
  tried("v8.setHeapSnapshotNearHeapLimit", () => { attackV8.setHeapSnapshotNearHeapLimit(1); return "LISTED"; });
  tried("v8.promiseHooks", () => { attackV8.promiseHooks.onInit(() => {}); return "LISTED"; });
  tried("v8.takeCoverage", () => { attackV8.takeCoverage(); return "LISTED"; });
  tried("v8.setFlagsFromString", () => { attackV8.setFlagsFromString("--allow-natives-syntax"); return "LISTED"; });
  tried("process.report", () => `LISTED ${JSON.stringify(process.report.getReport()).length}`);
  tried("process.report.writeReport", () => `LISTED ${process.report.writeReport()}`);
  tried("process._getActiveHandles", () => `LISTED ${(process as any)._getActiveHandles().length}`);
  tried("process._getActiveRequests", () => `LISTED ${(process as any)._getActiveRequests().length}`);
  tried("process._debugProcess", () => { (process as any)._debugProcess(process.pid); return "LISTED"; });
  tried("inspector.Session", () => { new attackInspector.Session().connect(); return "LISTED"; });
  tried("inspector.open", () => { attackInspector.open(0); return `LISTED ${attackInspector.url()}`; });
  tried("SIGUSR1", () => { process.kill(process.pid, "SIGUSR1"); return "sent"; });
  STATE += `inspector url: ${String(attackInspector.url())}; `;
}"#;
    write_ts_loop(&dir, &on_skeleton(top, "inspect();"));
    let (code, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    assert!(!record.contains("LISTED"), "{record}");
    for name in [
        "v8.queryObjects",
        "v8.getHeapSnapshot",
        "v8.writeHeapSnapshot",
        "v8.setHeapSnapshotNearHeapLimit",
        "v8.promiseHooks",
        "v8.takeCoverage",
        "v8.setFlagsFromString",
        "process.report",
        "process.report.writeReport",
        "process._getActiveHandles",
        "process._getActiveRequests",
        "process._debugProcess",
        "inspector.Session",
        "inspector.open",
    ] {
        assert!(
            record.contains(&format!("{name}: refused (")),
            "{name} was not refused: {record}"
        );
    }
    // Whatever the signal did, no inspector listens.
    assert!(record.contains("inspector url: undefined;"), "{record}");
}

#[test]
fn the_key_cannot_be_read_and_what_was_found_forges_nothing() {
    let (_tmp, dir) = practice_ts();
    let top = format!(
        r#"import * as attackFs from "node:fs";
import * as attackV8 from "node:v8";
import * as attackInspector from "node:inspector";
const NAMES: string[] = {names};
const FOUND = new Set<string>();
function scan(text: string): string {{
  const keys = text.match(/[0-9a-f]{{32}}/g) ?? [];
  for (const key of keys) FOUND.add(key);
  return `read ${{text.length}} characters, ${{keys.length}} keys`;
}}
function steal(): void {{
  tried("fd 3", () => scan(attackFs.readFileSync(3, "utf8")));
  tried("/proc/self/fd/3", () => scan(attackFs.readFileSync("/proc/self/fd/3", "utf8")));
  tried("/proc/self/fd/4", () => scan(attackFs.readFileSync("/proc/self/fd/4", "utf8")));
  tried("/proc/self/cmdline", () => scan(attackFs.readFileSync("/proc/self/cmdline", "utf8")));
  tried("/proc/self/environ", () => scan(attackFs.readFileSync("/proc/self/environ", "utf8")));
  tried("/proc/self/maps", () => scan(attackFs.readFileSync("/proc/self/maps", "utf8")));
  tried("heap snapshot", () => {{
    const stream: any = attackV8.getHeapSnapshot();
    let text = "";
    for (let chunk; (chunk = stream.read()) !== null; ) text += chunk;
    return scan(text);
  }});
  tried("heap snapshot file", () => scan(attackFs.readFileSync(attackV8.writeHeapSnapshot(), "utf8")));
  tried("process.binding", () => scan(JSON.stringify(Object.keys((process as any).binding("fs")))));
  tried("inspector", () => {{
    const session = new attackInspector.Session();
    session.connect();
    let text = "";
    session.post("Runtime.evaluate", {{ expression: "1" }}, (_e: unknown, r: unknown) => {{ text = JSON.stringify(r); }});
    return scan(text);
  }});
  tried("report", () => scan(JSON.stringify((process as any).report.getReport())));
  tried("environment", () => scan(JSON.stringify(process.env)));
  tried("arguments", () => scan(JSON.stringify([process.argv, process.execArgv])));
  tried("stack frames", () => {{
    const prior = (Error as any).prepareStackTrace;
    (Error as any).prepareStackTrace = (_e: unknown, frames: any[]) =>
      frames.map((f) => String(f.getFunction?.()) + String(f.getThis?.())).join("\n");
    const text = String(new Error().stack);
    (Error as any).prepareStackTrace = prior;
    return scan(text);
  }});
  STATE += `candidates: ${{FOUND.size}}; `;
  for (const key of FOUND) {{
    for (const test of NAMES) {{
      try {{
        attackFs.writeSync(4, JSON.stringify({{ key, event: "passed", test, message: null }}) + "\n");
      }} catch {{}}
    }}
  }}
}}"#,
        names = names_literal()
    );
    write_ts_loop(&dir, &on_skeleton(&top, "steal();"));
    let (code, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    assert_required_fail(&report);
    let record = state(&dir);
    assert!(
        record.contains("candidates: 0;"),
        "a key-shaped string was found: {record}"
    );
    for refused in [
        "/proc/self/fd/3",
        "/proc/self/fd/4",
        "/proc/self/cmdline",
        "/proc/self/environ",
        "heap snapshot",
        "heap snapshot file",
        "process.binding",
        "inspector",
    ] {
        assert!(
            record.contains(&format!("{refused}: refused")),
            "{refused} was not refused: {record}"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// Rewriting what the tests check with
// ---------------------------------------------------------------------------------------------------

/// Attempts to replace the assertion module and JavaScript's own intrinsics, as `PHASE …`.
fn intrinsic_swaps(phase: &str) -> String {
    format!(
        r#"swap("{phase} assert.deepStrictEqual", attackAssert, "deepStrictEqual", () => {{}});
swap("{phase} assert.strict.deepStrictEqual", attackAssert.strict, "deepStrictEqual", () => {{}});
swap("{phase} assert/strict.equal", attackStrict, "equal", () => {{}});
swap("{phase} Array.prototype.map", Array.prototype, "map", function () {{ return []; }});
swap("{phase} Array.prototype.filter", Array.prototype, "filter", function () {{ return []; }});
swap("{phase} JSON.stringify", JSON, "stringify", () => "{{}}");
swap("{phase} Object.prototype.toJSON", Object.prototype, "toJSON", () => ({{}}));
tried("{phase} defineProperty Object.prototype.toJSON", () => {{
  Object.defineProperty(Object.prototype, "toJSON", {{ value: () => ({{}}), configurable: true }});
  return (Object.prototype as any).toJSON === undefined ? "kept" : "CHANGED";
}});
swap("{phase} String.prototype.startsWith", String.prototype, "startsWith", () => true);
swap("{phase} Map.prototype.get", Map.prototype, "get", () => undefined);
swap("{phase} Promise.prototype.then", Promise.prototype, "then", () => undefined);"#
    )
}

/// How many attempts an attack's code makes.
fn attempts(code: &str) -> usize {
    ["swap(\"", "tried(\"", "triedAsync(\""]
        .iter()
        .map(|call| code.matches(call).count())
        .sum()
}

/// Grades the reference with `top` at the module's top and `first` run first thing in the loop (group 7.1),
/// and checks that neither forged the system prompt the tests check (`what` names the attack).
fn prompt_attack_fails(what: &str, top: &str, first: &str) {
    let (_tmp, dir) = practice_ts();
    write_ts_loop(&dir, &on_reference(top, first));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_prompt_not_forged(&dir, &report, what, attempts(top) + attempts(first));
}

#[test]
fn the_assertion_module_and_the_intrinsics_cannot_be_patched() {
    let top = format!(
        "import attackAssert from \"node:assert\";\nimport attackStrict from \"node:assert/strict\";\n{}",
        intrinsic_swaps("import")
    );
    let first = intrinsic_swaps("run");
    prompt_attack_fails("assert and the intrinsics", &top, &first);
}

/// `util.isDeepStrictEqual` replaced, and node's ESM view of builtins brought up to date, as `PHASE …`.
fn util_swap(phase: &str) -> String {
    format!(
        r#"swap("{phase} util.isDeepStrictEqual", attackRequire("node:util"), "isDeepStrictEqual", () => true);
tried("{phase} syncBuiltinESMExports", () => {{ attackModule.syncBuiltinESMExports(); return attackUtil.isDeepStrictEqual(1, 2) ? "CHANGED" : "kept"; }});"#
    )
}

#[test]
/// Nothing in a graded process compares any more (the grader judges), but `node:util` is still frozen
/// before the learner's code loads, and the attack still imports it: which also proves the module can be
/// imported then (freezing it before its lazy exports were loaded once made every such module fail to
/// load, "Cannot redefine property: parseArgs").
fn is_deep_strict_equal_cannot_be_swapped() {
    let top = format!(
        "import * as attackUtil from \"node:util\";\nimport * as attackModule from \"node:module\";\nconst attackRequire = attackModule.createRequire(import.meta.url);\n{}",
        util_swap("import")
    );
    let first = util_swap("run");
    prompt_attack_fails("util.isDeepStrictEqual", &top, &first);
}

/// The ways to copy a value replaced by ones that put the caller's real prompt into every copy of a
/// request, as `PHASE …`: `structuredClone` (which the test kit once copied each request with) and
/// `JSON.parse` (which the driver's `plain` and `clone` copy with now, taken when the kit loaded).
fn clone_swap(phase: &str) -> String {
    format!(
        r#"swap("{phase} structuredClone", globalThis, "structuredClone", (value: any, options?: any) => {{
  const copy = ATTACK_CLONE(value, options);
  if (copy !== null && typeof copy === "object" && typeof copy.systemPrompt === "string") {{
    copy.systemPrompt = REAL_PROMPT;
  }}
  return copy;
}});
swap("{phase} JSON.parse", JSON, "parse", (text: string, reviver?: any) => {{
  const copy = ATTACK_PARSE(text, reviver);
  if (copy !== null && typeof copy === "object" && typeof copy.systemPrompt === "string") {{
    copy.systemPrompt = REAL_PROMPT;
  }}
  return copy;
}});"#
    )
}

/// The global bindings the test kit and the tests look up when they call them, replaced, as `PHASE …`: a
/// JSON whose `parse` always gives the same value (which made any comparison of two parsed values pass),
/// and stand-ins for the others that behave like them (so that, were they taken, the tests would still
/// run and the JSON forgery decide).
fn global_swaps(phase: &str) -> String {
    format!(
        r#"swap("{phase} globalThis.JSON", globalThis, "JSON", FORGED_JSON);
tried("{phase} defineProperty globalThis.JSON", () => {{
  Object.defineProperty(globalThis, "JSON", {{ value: FORGED_JSON, writable: true, configurable: true }});
  return JSON === FORGED_JSON ? "CHANGED" : "kept";
}});
swap("{phase} globalThis.Promise", globalThis, "Promise", class extends ATTACK.Promise<unknown> {{}});
swap("{phase} globalThis.Array", globalThis, "Array", new Proxy(ATTACK.Array, {{}}));
swap("{phase} Array.from", ATTACK.Array, "from", (...args: any[]) => (ATTACK.from as any)(...args));
swap("{phase} globalThis.Math", globalThis, "Math", Object.create(ATTACK.Math));
swap("{phase} globalThis.Object", globalThis, "Object", new Proxy(ATTACK.Object, {{}}));
swap("{phase} globalThis.performance", globalThis, "performance", {{ now: () => ATTACK.now() }});
swap("{phase} performance.now", ATTACK.performance, "now", () => ATTACK.now());
swap("{phase} globalThis.AbortController", globalThis, "AbortController", class extends ATTACK.AbortController {{}});
tried("{phase} AbortSignal.prototype.aborted", () => {{
  const aborted = Object.getOwnPropertyDescriptor(ATTACK.AbortSignal.prototype, "aborted")!;
  Object.defineProperty(ATTACK.AbortSignal.prototype, "aborted", {{ ...aborted, get() {{ return aborted.get!.call(this); }} }});
  return "CHANGED";
}});
swap("{phase} globalThis.structuredClone", globalThis, "structuredClone", (value: unknown) => ATTACK.structuredClone(value));
swap("{phase} globalThis.setTimeout", globalThis, "setTimeout", (...args: any[]) => (ATTACK.setTimeout as any)(...args));"#
    )
}

/// The globals as they were, and the forged JSON.
const GLOBALS_TAKEN: &str = r#"const ATTACK = {
  Promise, Array, from: Array.from, Math, Object, performance, now: performance.now.bind(performance),
  AbortController, AbortSignal, structuredClone, setTimeout,
};
const FORGED_FIXED = { forged: true };
const FORGED_JSON = { parse: (_text: string) => FORGED_FIXED, stringify: (_value: unknown) => "{}" };"#;

#[test]
/// With the global bindings writable, replacing `JSON` alone once made a test pass with no loop at all
/// (when the tests compared in their own process). Here the loop is no loop either: it returns at once,
/// with a transcript that holds what the attack did.
fn the_global_bindings_cannot_be_replaced() {
    let (_tmp, dir) = practice_ts();
    let import = global_swaps("import");
    let run = global_swaps("run");
    let no_loop = format!(
        "{run}
  return {{ reason: \"length\", steps: 1, messages: [{{ role: \"assistant\", content: [{{ type: \"text\", text: \"ATTACK-RAN[\" + digest() + \"]\" }}], stopReason: \"stop\" }}] }} as any;"
    );
    let code = format!(
        "{}{PRELUDE}{GLOBALS_TAKEN}\n{import}\n",
        ts_starting_with(&ts_skeleton(), &no_loop)
    );
    write_ts_loop(&dir, &code);
    // A generous timeout: nothing here waits, and a loaded machine must not turn a failure into a timeout.
    let (code, report) = grade_json(&dir, &["--timeout", "30"]);
    if !sandboxed(&report) {
        return;
    }
    assert_built(&report);
    // No loop, so nothing passes: every test's trace ends with the no-loop's result, which shows the
    // attack's digest, whole, in the evidence.
    assert_eq!(code, 1, "{report:#}");
    assert_nothing_passed(&report);
    let results = steps_of(&dir, "result", |_| true);
    let digests: Vec<String> = results
        .iter()
        .filter_map(|step| marked(step["messages"][0]["content"][0]["text"].as_str()?))
        .collect();
    assert!(
        !digests.is_empty() && digests.len() == results.len(),
        "not every result shows the attack ran: {results:#?}"
    );
    // "tried N; refused M; through: none" in every test: both phases ran in the first test of each
    // process (a later test of the same process adds to N), and every attempt was refused (an
    // assignment to a fixed binding throws in a module).
    let attempts = attempts(&import) + attempts(&run);
    let first = digests.iter().map(|d| counts(d).0).min().unwrap();
    assert_eq!(first, attempts, "not every attempt ran: {digests:?}");
    for digest in &digests {
        let (tried, refused) = counts(digest);
        assert_eq!(tried, refused, "an attempt was not refused: {digest}");
        assert!(digest.ends_with("through: none"), "{digest}");
    }
}

#[test]
/// See [`clone_swap`]: the copies the driver records a request from cannot be made to hold the real
/// prompt the loop did not send.
fn structured_clone_cannot_be_swapped() {
    let top = format!(
        "const ATTACK_CLONE = globalThis.structuredClone;\nconst ATTACK_PARSE = JSON.parse;\n{}",
        clone_swap("import")
    );
    let first = clone_swap("run");
    prompt_attack_fails("structuredClone", &top, &first);
}

#[test]
fn async_local_storage_cannot_be_swapped() {
    let (_tmp, dir) = practice_ts();
    let swap = |phase: &str| {
        format!(
            r#"swap("{phase} AsyncLocalStorage.prototype.run", AttackStorage.prototype, "run", function () {{ return undefined; }});"#
        )
    };
    let import = "import { AsyncLocalStorage as AttackStorage } from \"node:async_hooks\";";
    // At import, before any test is registered; and at run time, from the first test of a batch.
    let mut problems = Vec::new();
    for (what, code) in [
        (
            "at import",
            on_skeleton(&format!("{import}\n{}", swap("import")), ""),
        ),
        ("at run time", on_skeleton(import, &swap("run"))),
    ] {
        write_ts_loop(&dir, &code);
        let (code, report) = grade_json(&dir, &[]);
        if !sandboxed(&report) {
            return;
        }
        assert_built(&report);
        let passed: Vec<String> = report_tests(&report)
            .into_iter()
            .filter(|(_, t)| t["status"] == "pass")
            .map(|(_, t)| t["name"].as_str().unwrap().to_string())
            .collect();
        if code != 1 || !passed.is_empty() {
            problems.push(format!(
                "{what}: the skeleton exits {code}, scores {}/{}, and passes {} tests",
                report["score"],
                report["max"],
                passed.len()
            ));
        } else {
            let record = state(&dir);
            if record.contains("CHANGED") {
                problems.push(format!("{what}: {record}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The course classes the driver runs the loop with (`src/`), wrapped, as `PHASE …`: the event stream its
/// model pushes the model's events into, and the registry that holds its tools. (The course's
/// `ScriptedModel` is no longer what the tests run: the driver's own model is, see [`kit_swaps`].)
fn class_swaps(phase: &str) -> String {
    format!(
        r#"{{
  const push = AttackStream.prototype.push;
  swap("{phase} EventStream.prototype.push", AttackStream.prototype, "push", function (this: any, event: any) {{ return push.call(this, event); }});
  const end = AttackStream.prototype.end;
  swap("{phase} EventStream.prototype.end", AttackStream.prototype, "end", function (this: any, result: any) {{ return end.call(this, result); }});
  const definitions = AttackRegistry.prototype.definitions;
  swap("{phase} ToolRegistry.prototype.definitions", AttackRegistry.prototype, "definitions", function (this: any) {{ return definitions.call(this); }});
}}"#
    )
}

/// The test kit's driver (`test/`), rewritten so that the request it records holds the caller's real
/// system prompt (`REAL_PROMPT`) whatever the loop sent, as `PHASE …`: its model's `stream`, the trace's
/// `record` that every step goes through, and the kit's module bindings that turn a request into a step
/// (`plain`) and a step into its JSON (`stringify`). `kit` is an object holding the namespaces of
/// `test/model.js`, `test/trace.js`, `test/canonical.js` and `test/safe.js`.
fn kit_swaps(phase: &str, kit: &str) -> String {
    format!(
        r#"{{
  const k: any = {kit};
  const stream = k.model.DriverModel.prototype.stream;
  swap("{phase} kit DriverModel.prototype.stream", k.model.DriverModel.prototype, "stream", function (this: any, request: any, signal?: AbortSignal) {{
    return stream.call(this, {{ ...request, systemPrompt: REAL_PROMPT }}, signal);
  }});
  const record = k.trace.Trace.prototype.record;
  swap("{phase} kit Trace.prototype.record", k.trace.Trace.prototype, "record", function (this: any, step: any) {{
    return record.call(this, step?.kind === "request" ? {{ ...step, system_prompt: REAL_PROMPT }} : step);
  }});
  const plain = k.canonical.plain;
  swap("{phase} kit namespace plain", k.canonical, "plain", (value: unknown) => {{
    const seen = plain(value);
    if (seen !== null && typeof seen === "object" && "systemPrompt" in seen) seen.systemPrompt = REAL_PROMPT;
    return seen;
  }});
  const stringify = k.safe.stringify;
  swap("{phase} kit namespace stringify", k.safe, "stringify", (value: any) =>
    stringify(value?.kind === "request" ? {{ ...value, system_prompt: REAL_PROMPT }} : value));
}}"#
    )
}

const CLASS_IMPORTS: &str = r#"import { EventStream as AttackStream } from "./event-stream.js";
import { ToolRegistry as AttackRegistry } from "./tool.js";"#;

const KIT_IMPORTS: &str = r#"import * as attackModel from "../test/model.js";
import * as attackTrace from "../test/trace.js";
import * as attackCanonical from "../test/canonical.js";
import * as attackSafe from "../test/safe.js";
const ATTACK_KIT = { model: attackModel, trace: attackTrace, canonical: attackCanonical, safe: attackSafe };"#;

/// The model the loop is handed, reached through the object itself (no import), rewritten like
/// [`kit_swaps`]'s, as `PHASE …`: its own `stream`, and its class's.
fn handed_model_swaps(phase: &str) -> String {
    format!(
        r#"{{
  const model: any = options.model;
  const stream = model.stream;
  const rewritten = function (this: any, request: any, signal?: AbortSignal) {{
    return stream.call(this, {{ ...request, systemPrompt: REAL_PROMPT }}, signal);
  }};
  swap("{phase} the handed model's stream", model, "stream", rewritten);
  swap("{phase} the handed model's class stream", Object.getPrototypeOf(model), "stream", rewritten);
}}"#
    )
}

#[test]
/// The learner's module is loaded inside the first test's body, after the harness froze the course code
/// and the test kit: at run time, neither can be rewritten, whether reached by import or through the
/// model the loop is handed.
fn the_course_classes_and_the_test_kit_cannot_be_patched_while_tests_run() {
    let (_tmp, dir) = practice_ts();
    let top = format!("{CLASS_IMPORTS}\n{KIT_IMPORTS}");
    let first = format!(
        "{}\n  {}\n  {}",
        class_swaps("run"),
        kit_swaps("run", "ATTACK_KIT"),
        handed_model_swaps("run")
    );
    write_ts_loop(&dir, &on_reference(&top, &first));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_prompt_not_forged(
        &dir,
        &report,
        "the course classes and the kit at run time",
        attempts(&first),
    );
}

#[test]
/// The same rewrites while the learner's module is evaluated. The test kit once loaded it with the test
/// files (and this attack had to wait for the kit to finish loading); it now loads it lazily, in the
/// first test's body, so the module's own top level comes after the harness froze both.
fn the_course_classes_and_the_test_kit_cannot_be_patched_at_import() {
    let (_tmp, dir) = practice_ts();
    let top = format!(
        "{CLASS_IMPORTS}\n{KIT_IMPORTS}\n{}\n{}",
        class_swaps("import"),
        kit_swaps("import", "ATTACK_KIT")
    );
    write_ts_loop(&dir, &on_reference(&top, ""));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_prompt_not_forged(
        &dir,
        &report,
        "the course classes and the kit at import",
        attempts(&top),
    );
}

// ---------------------------------------------------------------------------------------------------
// Registering tests
// ---------------------------------------------------------------------------------------------------

/// What the harness says to a registration once the test files have loaded.
const SEALED: &str = "pi-course: tests are registered only while the test files load";

/// Registers a passing test under each of `names` (a TypeScript array expression), as `PHASE …`.
fn registrations(phase: &str, names: &str) -> String {
    format!(
        r#"{{
  const register = (globalThis as any)[Symbol.for("pi-course.test")];
  for (const name of {names}) tried(`{phase} register ${{name}}`, () => {{ register(name, () => {{}}); return "ACCEPTED"; }});
  swap("{phase} the register symbol", globalThis, Symbol.for("pi-course.test"), () => {{}});
}}"#
    )
}

#[test]
fn tests_cannot_be_registered_while_tests_run() {
    let (_tmp, dir) = practice_ts();
    let names = format!(
        "[...{}, \"纯文本 stop › a test of the attacker's own\"]",
        names_literal()
    );
    write_ts_loop(&dir, &on_skeleton("", &registrations("run", &names)));
    let (code, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    assert_required_fail(&report);
    let record = state(&dir);
    assert!(!record.contains("ACCEPTED"), "{record}");
    assert!(!record.contains("CHANGED"), "{record}");
    assert!(record.contains("run register 纯文本 stop › a test of the attacker's own: refused"));
    for name in test_names() {
        assert!(
            record.contains(&format!("run register {name}: refused ({SEALED})")),
            "{record}"
        );
    }
    let graded = names_of(&report);
    let chapter: BTreeSet<String> = test_names().iter().cloned().collect();
    assert_eq!(graded, chapter, "only the chapter's tests are graded");
}

#[test]
fn tests_registered_at_import_under_the_real_names_pass_nothing() {
    let (_tmp, dir) = practice_ts();
    write_ts_loop(
        &dir,
        &on_skeleton(&registrations("import", &names_literal()), ""),
    );
    let (code, report) = grade_json(&dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    assert_required_fail(&report);
    for (slug, test) in report_tests(&report) {
        let message = test["message"].as_str().unwrap();
        assert!(
            message.contains("two tests are named") || message.contains("ATTACK-RAN["),
            "{slug}: {message}"
        );
    }
    // The test kit loads the learner's module inside the first test, after the list was sealed: every
    // registration is refused. (When the module loaded with the test files, they were accepted, and every
    // real test became ambiguous and failed as such.)
    let record = state(&dir);
    assert!(!record.contains("ACCEPTED"), "{record}");
    assert!(!record.contains("CHANGED"), "{record}");
    for name in test_names() {
        assert!(
            record.contains(&format!("import register {name}: refused ({SEALED})")),
            "{record}"
        );
    }
}

#[test]
fn tests_registered_at_import_are_not_graded_and_not_remembered() {
    let chapter: BTreeSet<String> = test_names().iter().cloned().collect();
    let cache = private_cache();
    let (_tmp, dir) = practice_ts();
    let extra = "[\"纯文本 stop › forged\", \"单工具往返 › forged\", \"非执行终态 › forged\", \"并发工具 › forged\", \"取消与上限 › forged\"]";
    // The reference with extra tests first, so that the build slot lists them; then the reference alone,
    // which the grade puts in the same slot (its closest version). The attack shows its record in the
    // requests' system prompt: its registrations ran (and were refused, the list being sealed before the
    // learner's module loads).
    let registered = registrations("import", extra);
    write_ts_loop(&dir, &on_reference(&registered, ""));
    let (_, report) = grade_json_in(cache.path(), &dir, &[]);
    if !sandboxed(&report) {
        return;
    }
    let mut problems = Vec::new();
    // One registration per name (in a loop), and the symbol swapped.
    let names: Vec<String> = serde_json::from_str(extra).unwrap();
    problems.extend(prompt_problem(
        &dir,
        &report,
        "registrations at import",
        names.len() + attempts(&registered),
    ));
    let graded = names_of(&report);
    if graded != chapter {
        problems.push(format!(
            "the attack's own tests were graded: {:?}",
            graded.difference(&chapter).collect::<Vec<_>>()
        ));
    }
    write_ts_loop(&dir, &ts_solution());
    let (code, report) = grade_json_in(cache.path(), &dir, &[]);
    if code != 0 || names_of(&report) != chapter {
        let failing: Vec<String> = report_tests(&report)
            .into_iter()
            .filter(|(_, t)| t["status"] != "pass")
            .map(|(_, t)| format!("{}: {}", t["name"], t["message"]))
            .collect();
        problems.push(format!(
            "the next grade in the slot, the reference, exits {code}:\n  {}",
            failing.join("\n  ")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------------
// Escapes
// ---------------------------------------------------------------------------------------------------

#[test]
fn no_child_process_worker_or_code_from_strings_ever_runs() {
    let (_tmp, dir) = practice_ts();
    let top = r#"import * as attackChild from "node:child_process";
import * as attackWorkers from "node:worker_threads";
import * as attackVm from "node:vm";
async function escape(): Promise<void> {
  tried("execSync", () => "ESCAPED " + attackChild.execSync("sleep 301.5 & echo started").toString());
  tried("spawn", () => { const c = attackChild.spawn("sleep", ["301.5"], { detached: true }); c.on("error", () => {}); return c.pid === undefined ? "refused (no pid)" : "ESCAPED " + c.pid; });
  tried("spawnSync", () => { const r = attackChild.spawnSync("sleep", ["301.5"]); return r.error ? `refused (${why(r.error)})` : "ESCAPED"; });
  tried("fork", () => { attackChild.fork("/dev/null"); return "ESCAPED"; });
  tried("Worker", () => { new attackWorkers.Worker("process.exit(0)", { eval: true }); return "ESCAPED"; });
  tried("vm.runInThisContext", () => "ESCAPED " + String(attackVm.runInThisContext("6 * 7")));
  tried("vm.Script", () => "ESCAPED " + String(new attackVm.Script("6 * 7").runInThisContext()));
  tried("vm.runInNewContext", () => "ESCAPED " + String(attackVm.runInNewContext("6 * 7")));
  tried("eval", () => "ESCAPED " + String(eval("6 * 7")));
  tried("Function", () => "ESCAPED " + String(new Function("return 6 * 7")()));
  tried("setTimeout string", () => { (setTimeout as any)("globalThis.escaped = 1", 0); return "scheduled"; });
  tried("dlopen", () => { (process as any).dlopen({ exports: {} }, "/usr/lib/x86_64-linux-gnu/libc.so.6"); return "ESCAPED"; });
  tried("process.binding", () => { (process as any).binding("spawn_sync"); return "ESCAPED"; });
  await triedAsync("WebAssembly", async () => { await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); return "compiled"; });
  STATE += `escaped: ${String((globalThis as any).escaped)}; `;
}"#;
    write_ts_loop(&dir, &on_skeleton(top, "await escape();"));
    let (code, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    assert!(!record.contains("ESCAPED"), "{record}");
    assert!(record.contains("escaped: undefined;"), "{record}");
    for name in [
        "execSync",
        "spawn",
        "fork",
        "Worker",
        "vm.runInThisContext",
        "eval",
        "Function",
        "dlopen",
        "process.binding",
    ] {
        assert!(
            record.contains(&format!("{name}: refused")),
            "{name} was not refused: {record}"
        );
    }
    assert_none_left(Duration::from_secs(2), || {
        processes()
            .into_iter()
            .filter(|p| p.args.contains("301.5"))
            .collect()
    });
}

#[test]
/// A module from a `data:` URL is code built from a string, which node does not refuse here (its loader
/// hooks, which could, need a worker, and the permission model refuses those). It runs with the loop's own
/// rights and no more: it forges nothing.
fn code_from_a_data_url_gains_nothing() {
    let (_tmp, dir) = practice_ts();
    let top = r#"async function escape(): Promise<void> {
  const url: string = "data:text/javascript,globalThis.escaped = 2";
  await triedAsync("data: import", async () => { await import(url); return "ESCAPED"; });
  STATE += `escaped: ${String((globalThis as any).escaped)}; `;
}"#;
    write_ts_loop(&dir, &on_skeleton(top, "await escape();"));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    assert!(record.contains("data: import"), "the attack ran: {record}");
}

/// A fake home with a secret in it.
struct Home {
    _dir: tempfile::TempDir,
    path: PathBuf,
    secret: PathBuf,
}

const SECRET: &str = "SECRET-CONTENT-5b21e0";

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

/// `grade --format json` and the human report with HOME set to `home`: the report and all text shown.
fn grade_with_home(dir: &Path, home: &Home, args: &[&str]) -> (Value, String) {
    let run = |extra: &[&str]| {
        pi_course(dir)
            .env("HOME", &home.path)
            .arg("grade")
            .arg(dir)
            .args(extra)
            .args(args)
            .output()
            .unwrap()
    };
    let human = run(&[]);
    let json = run(&["--format", "json"]);
    let report: Value =
        serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{}", describe(&json)));
    assert_schema(&report);
    let text = format!(
        "{}{}{}{}",
        stdout(&human),
        stderr(&human),
        stdout(&json),
        stderr(&json)
    );
    (report, text)
}

/// Every file of the build slots of the shared cache (both tracks), and the installed dependencies.
fn slot_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for root in [cache().join("work"), cache().join("target")] {
        for key in fs::read_dir(&root).into_iter().flatten().flatten() {
            for slot in fs::read_dir(key.path()).into_iter().flatten().flatten() {
                let slot = slot.path();
                if !slot.is_dir() {
                    continue;
                }
                for name in [
                    "src/agent-loop.ts",
                    "src/agent_loop.rs",
                    "package.json",
                    "Cargo.toml",
                    ".pi-course-tests",
                ] {
                    if slot.join(name).is_file() {
                        found.push(slot.join(name));
                    }
                }
            }
        }
    }
    for dir in fs::read_dir(cache().join("node"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let manifest = dir.path().join("package.json");
        if manifest.is_file() {
            found.push(manifest);
        }
    }
    found
}

#[test]
fn the_home_proc_and_the_build_slots_are_unreadable() {
    let home = home();
    let (_tmp, dir) = practice_ts();
    // A grade with the real home first, so the dependencies are installed and the slots exist.
    let (_, first) = grade_json(&dir, &[]);
    if !sandboxed(&first) {
        return;
    }
    let slots = slot_files();
    assert!(
        slots.iter().any(|p| p.ends_with("src/agent-loop.ts")),
        "no TypeScript build slot in {slots:?}"
    );
    let mut paths: Vec<String> = vec![
        home.secret.display().to_string(),
        home.path.display().to_string(),
        "/proc/self/environ".into(),
        "/proc/1/environ".into(),
        "/proc/self/status".into(),
        "/etc/passwd".into(),
        dir.join(TS_LOOP).display().to_string(),
    ];
    paths.extend(slots.iter().map(|p| p.display().to_string()));
    let top = format!(
        r#"import * as attackFs from "node:fs";
const TARGETS: string[] = {targets};
function read(): void {{
  for (const path of TARGETS) {{
    tried(path, () => {{
      const stat = attackFs.statSync(path);
      const text = stat.isDirectory() ? attackFs.readdirSync(path).join(",") : attackFs.readFileSync(path, "utf8");
      return `READ ${{text.slice(0, 200)}}`;
    }});
  }}
  tried("parent", () => `READ /proc/${{process.ppid}}/cmdline ` + attackFs.readFileSync(`/proc/${{process.ppid}}/cmdline`, "utf8"));
}}"#,
        targets = serde_json::to_string(&paths).unwrap()
    );
    write_ts_loop(&dir, &on_skeleton(&top, "read();"));
    let (report, text) = grade_with_home(&dir, &home, &["--group", "7.1"]);
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    assert!(!text.contains(SECRET), "the secret leaked:\n{text}");
    assert!(
        !text.contains("--format"),
        "the grader's command line leaked:\n{text}"
    );
    assert!(!record.contains("READ"), "something was read: {record}");
    // Every path and the parent's command line. (The grade shortens the path of its own build slot in
    // messages, so the record is counted rather than searched for each path.)
    assert_eq!(
        record.matches(": refused (").count(),
        paths.len() + 1,
        "not every read was refused: {record}"
    );
}

#[test]
fn writes_outside_the_scratch_directory_never_happen() {
    let home = home();
    let (tmp, dir) = practice_ts();
    let (_, first) = grade_json(&dir, &[]);
    if !sandboxed(&first) {
        return;
    }
    let targets = [
        home.path.join("written"),
        std::env::temp_dir().join(format!("pi-course-ts-attack-{}", std::process::id())),
        dir.join("written"),
        tmp.path().join("written"),
        cache().join("written"),
        cache().join("node/written"),
    ];
    let editable = dir.join(TS_LOOP);
    let mut all: Vec<String> = targets.iter().map(|t| t.display().to_string()).collect();
    all.push(editable.display().to_string());
    let top = format!(
        r#"import * as attackFs from "node:fs";
const TARGETS: string[] = {targets};
function write(): void {{
  for (const path of TARGETS) {{
    tried(path, () => {{ attackFs.writeFileSync(path, "// nothing to see here"); return "ESCAPED"; }});
  }}
  tried("scratch", () => {{ attackFs.writeFileSync("written-here", "x"); return "written"; }});
  tried("symlink", () => {{ attackFs.symlinkSync("/", "root-link"); return "ESCAPED"; }});
}}"#,
        targets = serde_json::to_string(&all).unwrap()
    );
    let code = on_skeleton(&top, "write();");
    write_ts_loop(&dir, &code);
    let before = files(&dir);
    let (report, _) = grade_with_home(&dir, &home, &["--group", "7.1"]);
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    assert!(!record.contains("ESCAPED"), "{record}");
    for t in &targets {
        assert!(!t.exists(), "{} was written", t.display());
    }
    assert_eq!(fs::read_to_string(&editable).unwrap(), code);
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
fn a_network_connection_to_a_local_listener_never_arrives() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let (_tmp, dir) = practice_ts();
    let top = format!(
        r#"import * as attackNet from "node:net";
import * as attackDgram from "node:dgram";
function tcp(): Promise<string> {{
  return new Promise((resolve) => {{
    try {{
      const socket = attackNet.connect({port}, "127.0.0.1");
      socket.on("connect", () => {{ socket.write("hello"); socket.end(); resolve("ESCAPED (connected)"); }});
      socket.on("error", (e) => resolve(`refused (${{why(e)}})`));
    }} catch (e) {{
      resolve(`refused (${{why(e)}})`);
    }}
  }});
}}
function udp(): Promise<string> {{
  return new Promise((resolve) => {{
    try {{
      const socket = attackDgram.createSocket("udp4");
      socket.on("error", (e) => resolve(`refused (${{why(e)}})`));
      socket.send("hello", {udp_port}, "127.0.0.1", (e) => {{ socket.close(); resolve(e ? `refused (${{why(e)}})` : "ESCAPED (sent)"); }});
    }} catch (e) {{
      resolve(`refused (${{why(e)}})`);
    }}
  }});
}}
async function connect(): Promise<void> {{
  await triedAsync("tcp", tcp);
  await triedAsync("udp", udp);
  await triedAsync("fetch", async () => `ESCAPED (${{(await fetch("http://127.0.0.1:{port}/")).status}})`);
}}"#
    );
    write_ts_loop(&dir, &on_skeleton(&top, "await connect();"));
    let (_, report) = grade_json(&dir, &["--group", "7.1"]);
    if !sandboxed(&report) {
        return;
    }
    assert_built(&report);
    assert_nothing_passed(&report);
    let record = state(&dir);
    assert!(!record.contains("ESCAPED"), "{record}");
    for name in ["tcp", "udp", "fetch"] {
        assert!(record.contains(&format!("{name}: refused")), "{record}");
    }
    assert!(
        listener.accept().is_err(),
        "a connection arrived from the graded code"
    );
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram arrived from the graded code"
    );
}

#[test]
fn a_memory_bomb_gets_the_memory_limit_verdict() {
    let (_tmp, dir) = practice_ts();
    let bomb = "const hog: number[][] = []; for (;;) hog.push(new Array(1 << 20).fill(7));";
    write_ts_loop(&dir, &ts_starting_with(&ts_skeleton(), bomb));
    // A generous timeout: near its heap limit V8 collects garbage again and again, which on a loaded
    // machine could otherwise outlast the default timeout and give a timeout verdict instead.
    let (code, report) = grade_json(
        &dir,
        &[
            "--group",
            "7.1",
            "--memory-limit",
            "256M",
            "--timeout",
            "60",
        ],
    );
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_nothing_passed(&report);
    for (_, test) in report_tests(&report) {
        let message = test["message"].as_str().unwrap();
        assert!(message.contains("256 MiB"), "{message}");
    }
    // And in English.
    let (_, report) = grade_json(
        &dir,
        &[
            "--group",
            "7.1",
            "--memory-limit",
            "256M",
            "--timeout",
            "60",
            "--lang",
            "en",
        ],
    );
    let test = &report["groups"][0]["tests"][0];
    let message = test["message"].as_str().unwrap();
    assert!(message.contains("256 MiB"), "{message}");
}

#[test]
fn an_endless_loop_gets_the_timeout_verdict() {
    let (_tmp, dir) = practice_ts();
    write_ts_loop(&dir, &ts_starting_with(&ts_skeleton(), "for (;;) {}"));
    let (code, report) = grade_json(&dir, &["--group", "7.1", "--timeout", "2"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(code, 1, "{report:#}");
    assert_built(&report);
    assert_eq!(group_status(&report, "plain-stop"), "timeout", "{report:#}");
    for (_, test) in report_tests(&report) {
        assert_eq!(test["status"], "timeout", "{test:#}");
    }
}

/// Test processes (node running the harness) whose parent is not a pi-course: left behind by a grade.
fn orphaned_test_processes() -> Vec<Proc> {
    let all = processes();
    all.iter()
        .filter(|p| p.args.contains("harness/run.mjs") && !p.zombie)
        .filter(|p| {
            !all.iter()
                .any(|parent| parent.pid == p.ppid && parent.args.contains("pi-course"))
        })
        .cloned()
        .collect()
}

#[test]
fn stray_timers_and_exit_handlers_do_not_hold_the_grade_or_outlive_it() {
    let (_tmp, dir) = practice_ts();
    let stray = "setInterval(() => {}, 1000); void new Promise(() => {}); process.on(\"exit\", () => { for (;;) {} });";
    let code = format!(
        "{}\nsetInterval(() => {{}}, 1000);\n",
        ts_starting_with(&ts_solution(), stray)
    );
    write_ts_loop(&dir, &code);
    let (exit, report) = grade_json(&dir, &["--timeout", "3"]);
    if !sandboxed(&report) {
        return;
    }
    assert_eq!(
        (exit, report["status"].as_str()),
        (0, Some("pass")),
        "every verdict arrived before the process was stopped: {report:#}"
    );
    assert_none_left(Duration::from_secs(3), orphaned_test_processes);
}

/// The compiler, TypeScript 7's native executable now, reads nothing outside what a build needs. A
/// reference to a file in the home, whose one type error would print its secret, reaches the compiler:
/// unconfined (the reported fallback) the secret is printed, so the attack works; confined, the
/// compiler reads nothing of the file and the secret stays where it is.
#[test]
fn a_file_in_the_home_is_unreadable_at_compile_time() {
    let home = home();
    let secret_ts = home.path.join("secret.ts");
    fs::write(
        &secret_ts,
        format!("export const leak: \"nothing\" = \"{SECRET}\";\n"),
    )
    .unwrap();
    let (_tmp, dir) = practice_ts();
    write_ts_loop(
        &dir,
        &format!(
            "/// <reference path={:?} />\n{}",
            secret_ts.display().to_string(),
            ts_solution()
        ),
    );

    let unconfined = pi_course(&dir)
        .env("HOME", &home.path)
        .env("PI_COURSE_SANDBOX_PRETEND_MISSING", "1")
        .args(["grade", ".", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&unconfined.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{}", describe(&unconfined)));
    assert_eq!(report["sandbox"]["active"], false, "{report}");
    assert_eq!(report["status"], "error", "{report}");
    assert!(
        report["message"]
            .as_str()
            .unwrap_or_default()
            .contains(SECRET),
        "unconfined, the compiler reads the file and prints its secret: {report}"
    );

    let (report, text) = grade_with_home(&dir, &home, &[]);
    if !sandboxed(&report) {
        return;
    }
    assert!(!text.contains(SECRET), "the secret leaked:\n{text}");
    // The native compiler sees that the file is there but reads nothing of it: the loop compiles as if
    // the file were empty (or, should a later compiler say so, the build fails naming the file).
    let message = report["message"].as_str().unwrap_or_default();
    assert!(
        report["status"] == "pass"
            || (report["status"] == "error" && message.contains("secret.ts")),
        "{report}"
    );
}

/// The reference renamed, and a `runAgentLoop` that returns what `wrap` makes of its honest result
/// (`truth`): an object whose own properties tell the caller one thing and whose `toJSON` tells
/// JSON.stringify another.
fn lying_to_the_caller(wrap: &str) -> String {
    let reference = ts_solution();
    assert_eq!(reference.matches(TS_RUN_SIGNATURE).count(), 1);
    let honest = reference.replacen(
        TS_RUN_SIGNATURE,
        "async function honestRun(options: AgentLoopOptions): Promise<AgentRunResult> {\n",
        1,
    );
    format!(
        "{honest}\n{TS_RUN_SIGNATURE}  const truth = await honestRun(options);\n  return {wrap};\n}}\n"
    )
}

/// Round 5 of the TypeScript track: a value that reads one way to the recorder and another to the
/// caller. The recorder reads a learner's value as a caller does, property by property, and never
/// calls its `toJSON`: a result whose messages are empty to its caller, or whose messages are empty
/// user messages, with a `toJSON` that returns the honest result, is recorded as the caller sees it
/// and passes nothing. (A Rust loop returns the API's own types, whose serialization it cannot
/// change: the attack has no Rust form.)
#[test]
fn a_result_that_shows_json_one_thing_and_the_caller_another_is_recorded_as_the_caller_sees_it() {
    let (_tmp, dir) = practice_ts();
    for (what, wrap, caller_sees) in [
        (
            "an empty transcript",
            "Object.assign({ ...truth, messages: [] }, { toJSON: () => truth })",
            json!([]),
        ),
        (
            "blank messages",
            "{ ...truth, messages: truth.messages.map((m) => Object.assign({ role: \"user\", content: [] }, { toJSON: () => m }) as unknown as typeof m) }",
            json!({"role": "user", "content": []}),
        ),
    ] {
        write_ts_loop(&dir, &lying_to_the_caller(wrap));
        let (code, report) = grade_json(&dir, &[]);
        assert_eq!(code, 1, "{what}: {report:#}");
        assert_built(&report);
        // It ran: what the driver recorded of each result is what its caller reads.
        let results = steps_of(&dir, "result", |_| true);
        assert!(!results.is_empty(), "{what}: no result recorded");
        for result in &results {
            let messages = result["messages"].as_array().unwrap();
            match caller_sees.as_array() {
                Some(empty) => assert_eq!(messages, empty, "{what}: {result:#}"),
                None => assert!(
                    !messages.is_empty() && messages.iter().all(|m| *m == caller_sees),
                    "{what}: {result:#}"
                ),
            }
        }
        // And it got nothing.
        assert_required_fail(&report);
    }
}
