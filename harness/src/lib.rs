//! The harness that runs a chapter's tests.
//!
//! A test process never decides a verdict (docs/JUDGE.md). Every test is a scenario **instance** run by
//! the chapter's **driver**, which reports each step it observes to a [`Sink`].
//!
//! Run by hand (`cargo test --test ch07 plain_stop`), the tests and their instances come from the
//! practice directory's `expected.json`, and the harness behaves like Rust's own test runner (its
//! filters and flags, `--exact`, `--skip`, `--list`, ..., its `test name ... ok` lines and its exit
//! status): it keeps each test's steps and compares them with the expected trace ([`judge`]), exactly
//! as the grader would. `PI_COURSE_TRACE=1` also prints every step to stderr as it is recorded.
//!
//! Run by `pi-course grade`, it takes its orders (tests and their instances) and reports every step over
//! a channel that only the grader and this harness hold (see [`protocol`]): whatever the code under test
//! prints, or however its process ends, it cannot write a step, let alone a verdict.
//!
//! Each test runs on a thread of its own, named after the test.

pub use pi_course_judge::compare as judge;
pub use pi_course_judge::protocol;

use std::cell::Cell;
use std::fs::File;
use std::io::{Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use protocol::Record;
use serde_json::Value;

/// Where a driver hands every step, the moment it is recorded, from whatever thread recorded it.
pub type Sink = Box<dyn FnMut(Value) + Send>;

/// Runs one test: the instance (JSON text) on the code under test, each observed step handed to the sink.
/// Returns once the test's trace has ended.
pub type Driver = fn(instance: &str, sink: Sink);

/// One test run by hand: its full name (`plain_stop::a_plain_stop_ends_the_run`), its fixed instance and
/// the trace expected of it (the graph of docs/JUDGE.md, with the rules' texts).
#[derive(Clone)]
pub struct Test {
    pub name: String,
    pub instance: String,
    pub expected: Value,
}

/// The tests of an `expected.json` (`{"version":1,"seed":N,"tests":[{"name","group","instance",
/// "expected"}]}`), each named as the grader names it: its group's module, then its own name
/// (`plain_stop::the_request_holds_every_tool`). Each expected graph carries the rules it names.
pub fn hand_tests(expected_json: &str) -> Result<Vec<Test>, String> {
    let file: Value = serde_json::from_str(expected_json).map_err(|e| e.to_string())?;
    let tests = file["tests"].as_array().ok_or("no \"tests\" array")?;
    tests
        .iter()
        .map(|test| {
            let name = test["name"].as_str().ok_or("a test without a name")?;
            let name = match test["group"].as_str() {
                Some(group) => format!("{}::{name}", group.replace('-', "_")),
                None => name.to_string(),
            };
            Ok(Test {
                name,
                instance: test["instance"].to_string(),
                expected: test["expected"].clone(),
            })
        })
        .collect()
}

/// The most steps of one test the grader reads (its `MAX_STEPS`): past it, no more instances run.
pub const MAX_STEPS: usize = 4_000;

/// The most bytes of one test's steps the grader reads (its `MAX_TRACE_BYTES`): past it, likewise.
pub const MAX_TRACE_BYTES: usize = 4 << 20;

/// How many times longer a driver waits for the code under test (its quiet times, its hang watch): more
/// than 1 when the grader judges a test that time decided again (`PI_COURSE_PATIENCE`, docs/JUDGE.md); 1
/// when run by hand. Read once.
pub fn patience() -> u32 {
    static PATIENCE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *PATIENCE.get_or_init(|| {
        std::env::var("PI_COURSE_PATIENCE")
            .ok()
            .and_then(|text| text.parse().ok())
            .filter(|n| (1..=10).contains(n))
            .unwrap_or(1)
    })
}

/// The bytes of `step`'s texts (its strings and keys): never more than its JSON, and cheap to count, so a
/// step of a 50 MB string is seen to pass the grader's bound without writing its JSON twice.
fn text_bytes(step: &Value) -> usize {
    match step {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(text_bytes).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + text_bytes(v)).sum(),
        _ => 0,
    }
}

/// Runs the tests as the command line (or the grader) asks; the test target's `main` returns this.
/// `expected_json` is only read by hand: graded, the tests and their instances come with the orders.
pub fn run(driver: Driver, expected_json: &str) -> ExitCode {
    install_panic_hook();
    if std::env::var_os(protocol::ENV).is_some() {
        graded(driver)
    } else {
        // `PI_COURSE_FIXTURE=FILE`: the instances of another seed, for a developer's sweep of seeds (a
        // hand run decides nothing: it only shows the learner what the grader would say).
        let other = std::env::var_os("PI_COURSE_FIXTURE").map(std::fs::read_to_string);
        let expected_json = match &other {
            Some(Ok(text)) => text.as_str(),
            Some(Err(e)) => {
                eprintln!("error: PI_COURSE_FIXTURE cannot be read: {e}");
                return ExitCode::from(101);
            }
            None => expected_json,
        };
        match hand_tests(expected_json) {
            Ok(tests) => by_hand(driver, tests),
            Err(e) => {
                eprintln!("error: the tests' expected.json cannot be read: {e}");
                ExitCode::from(101)
            }
        }
    }
}

/// What `cargo test --test ch07 [ARGS]` asks for: the flags of Rust's own test runner that matter here.
#[derive(Debug, Default, PartialEq)]
struct Args {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
    terse: bool,
    quiet: bool,
    color: Option<bool>,
}

impl Args {
    /// Parses the arguments after the program name. Flags that change nothing here (`--nocapture`,
    /// `--test-threads N`, `--ignored`, ...) are accepted, so commands that work with `cargo test` work.
    fn parse(mut words: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut args = Args::default();
        while let Some(word) = words.next() {
            let (flag, inline) = match word.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (word.clone(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| words.next())
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match flag.as_str() {
                "--exact" => args.exact = true,
                "--list" => args.list = true,
                "-q" | "--quiet" => args.quiet = true,
                "--skip" => args.skip.push(value("--skip")?),
                "--format" => args.terse = value("--format")? == "terse",
                "--color" => {
                    args.color = match value("--color")?.as_str() {
                        "always" => Some(true),
                        "never" => Some(false),
                        _ => None,
                    }
                }
                "--test-threads" | "--logfile" | "-Z" => {
                    value(&flag)?;
                }
                "--nocapture" | "--no-capture" | "--show-output" | "--ignored"
                | "--include-ignored" | "--test" | "--bench" | "--no-fail-fast" => {}
                "-h" | "--help" => return Err(String::new()),
                f if f.starts_with('-') => return Err(format!("unknown option {f}")),
                _ => args.filters.push(word),
            }
        }
        Ok(args)
    }

    fn chooses(&self, name: &str) -> bool {
        let matches = |filter: &String| match self.exact {
            true => name == filter,
            false => name.contains(filter.as_str()),
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skip.iter().any(matches)
    }
}

const USAGE: &str =
    "usage: cargo test --test <target> [FILTER...] [--exact] [--skip FILTER] [--list] [-q]";

/// Like Rust's own test runner, with the same output, so the commands of the guide and of `cargo test`
/// work as a learner expects. Written here rather than taken from a crate: the argument parser such a
/// crate brings costs a tenth of every edit-to-verdict in link time (docs/ARCHITECTURE.md).
fn by_hand(driver: Driver, tests: Vec<Test>) -> ExitCode {
    use std::io::IsTerminal;
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(if e.is_empty() { 0 } else { 101 });
        }
    };
    let chosen: Vec<&Test> = tests.iter().filter(|t| args.chooses(&t.name)).collect();
    if args.list {
        for test in &chosen {
            println!("{}: test", test.name);
        }
        if !args.terse {
            println!("\n{} tests, 0 benchmarks", chosen.len());
        }
        return ExitCode::SUCCESS;
    }
    let color = args
        .color
        .unwrap_or_else(|| std::io::stdout().is_terminal());
    let paint = |text: &str, code: &str| match color {
        true => format!("\x1b[{code}m{text}\x1b[0m"),
        false => text.to_string(),
    };
    let started = std::time::Instant::now();
    let width = chosen.iter().map(|t| t.name.len()).max().unwrap_or(0);
    println!("\nrunning {} tests", chosen.len());
    let mut failures = Vec::new();
    for test in &chosen {
        let outcome = judge_one(driver, test);
        if args.quiet {
            print!("{}", if outcome.is_ok() { "." } else { "F" });
        } else {
            let verdict = match &outcome {
                Ok(()) => paint("ok", "32"),
                Err(_) => paint("FAILED", "31"),
            };
            println!("test {:<width$} ... {verdict}", test.name);
        }
        if let Err(message) = outcome {
            failures.push((test.name.as_str(), message));
        }
    }
    if args.quiet {
        println!();
    }
    if !failures.is_empty() {
        println!("\nfailures:\n");
        for (name, message) in &failures {
            println!("---- {name} ----\n{message}\n");
        }
        println!("\nfailures:");
        for (name, _) in &failures {
            println!("    {name}");
        }
    }
    let passed = chosen.len() - failures.len();
    println!(
        "\ntest result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failures.is_empty() { paint("ok", "32") } else { paint("FAILED", "31") },
        failures.len(),
        tests.len() - chosen.len(),
        started.elapsed().as_secs_f64()
    );
    match failures.is_empty() {
        true => ExitCode::SUCCESS,
        // What Rust's own test runner exits with when a test failed.
        false => ExitCode::from(101),
    }
}

fn graded(driver: Driver) -> ExitCode {
    std::env::remove_var(protocol::ENV);
    // SAFETY: the grader opened both descriptors for this process, and nothing else here uses them. The
    // orders are read to their end and closed before any test runs.
    let (mut orders, records) = unsafe {
        use std::os::fd::FromRawFd;
        (
            File::from_raw_fd(protocol::ORDERS_FD),
            File::from_raw_fd(protocol::VERDICTS_FD),
        )
    };
    let mut text = String::new();
    let read = orders.read_to_string(&mut text);
    drop(orders);
    if read.is_err() {
        return ExitCode::FAILURE;
    }
    let mut lines = text.lines();
    let (Some(key), Some(protocol::RUN)) = (lines.next(), lines.next()) else {
        return ExitCode::FAILURE;
    };
    let channel = Arc::new(Mutex::new(Channel {
        key: key.to_string(),
        records,
    }));
    for (name, instance) in lines.filter_map(protocol::split_order) {
        let send = |record: Record| lock(&channel).send(record);
        send(Record::Started {
            test: name.to_string(),
        });
        let (channel, test) = (Arc::clone(&channel), name.to_string());
        let sink: Sink = Box::new(move |step| {
            let test = test.clone();
            lock(&channel).send(Record::Step { test, step })
        });
        // A driver that fails cannot say what happened after: the grader ends the trace itself.
        if run_one(name, driver, instance, sink).is_err() {
            return ExitCode::from(101);
        }
        send(Record::Finished {
            test: name.to_string(),
        });
    }
    ExitCode::SUCCESS
}

struct Channel {
    key: String,
    records: File,
}

impl Channel {
    fn send(&mut self, record: Record) {
        // A grader that stopped listening has no use for the rest.
        if self
            .records
            .write_all(record.encode(&self.key).as_bytes())
            .is_err()
        {
            std::process::exit(1);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The language of a hand run's messages: `PI_COURSE_LANG` (`zh`, `en`), both when unset.
fn lang() -> judge::Lang {
    let value = std::env::var("PI_COURSE_LANG").unwrap_or_default();
    match value.to_ascii_lowercase() {
        v if v.starts_with("en") => judge::Lang::En,
        v if v.starts_with("zh") => judge::Lang::Zh,
        _ => judge::Lang::Both,
    }
}

/// Runs one test by hand and compares its trace with the expected one. `Err` holds the failure message.
fn judge_one(driver: Driver, test: &Test) -> Result<(), String> {
    let trace = Arc::new(Mutex::new(Vec::new()));
    let (kept, name) = (Arc::clone(&trace), test.name.clone());
    let show = std::env::var_os("PI_COURSE_TRACE").is_some_and(|v| !v.is_empty() && v != "0");
    let sink: Sink = Box::new(move |step| {
        if show {
            eprintln!("[{name}] {step}");
        }
        lock(&kept).push(step);
    });
    run_one(&test.name, driver, &test.instance, sink)?;
    let trace = lock(&trace).clone();
    match judge::judge(&test.expected, &trace, lang()) {
        None => Ok(()),
        Some(message) => Err(message),
    }
}

thread_local! {
    /// Set on a test's own thread: a panic there is the driver's own failure, reported with the test.
    static IN_TEST: Cell<bool> = const { Cell::new(false) };
    /// Where the test's thread last panicked.
    static LOCATION: Cell<Option<String>> = const { Cell::new(None) };
}

/// The instances of a test that holds several (`{"runs": [...]}`), each as JSON text; `None` for a test
/// of one instance.
fn runs_of(instance: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(instance).ok()?;
    let runs = value.get("runs")?.as_array()?;
    Some(runs.iter().map(Value::to_string).collect())
}

/// Runs the driver on one test's instance, or on each of its instances in turn, on a thread named after
/// the test. Before each of several instances the sink gets an instance mark (`judge::INSTANCE`), and a
/// step that an instance's code sends after its driver returned is dropped, so that it never lands in
/// the next instance's steps. Once an instance's trace ended in a way no correct loop's does (its
/// driver's `hang`, `panic` or `overflow` step), or the test's steps reach [`MAX_STEPS`] or
/// [`MAX_TRACE_BYTES`], the test's later instances are not run: the test is decided already (the grader reads no step past that bound),
/// and a hung or flooding loop's work would only pile up. `Err`: the driver itself failed.
fn run_one(name: &str, driver: Driver, instance: &str, sink: Sink) -> Result<(), String> {
    let runs = runs_of(instance);
    let instance = instance.to_string();
    let body = move || {
        IN_TEST.set(true);
        let Some(runs) = runs else {
            return drive_one(driver, &instance, sink);
        };
        let shared = Arc::new(Mutex::new(sink));
        let ended = Arc::new(AtomicBool::new(false));
        let steps = Arc::new(AtomicUsize::new(0));
        let bytes = Arc::new(AtomicUsize::new(0));
        for (index, run) in runs.iter().enumerate() {
            (lock(&shared))(serde_json::json!({ "kind": judge::INSTANCE, "index": index }));
            let open = Arc::new(AtomicBool::new(true));
            let (to, gate, over) = (Arc::clone(&shared), Arc::clone(&open), Arc::clone(&ended));
            let (counted, weighed) = (Arc::clone(&steps), Arc::clone(&bytes));
            let sink: Sink = Box::new(move |step| {
                if gate.load(Ordering::SeqCst) {
                    let kind = step.get("kind").and_then(Value::as_str);
                    let size = text_bytes(&step);
                    if matches!(kind, Some("hang" | "panic" | "overflow"))
                        || counted.fetch_add(1, Ordering::SeqCst) + 1 >= MAX_STEPS
                        || weighed.fetch_add(size, Ordering::SeqCst) + size >= MAX_TRACE_BYTES
                    {
                        over.store(true, Ordering::SeqCst);
                    }
                    (lock(&to))(step)
                }
            });
            let driven = drive_one(driver, run, sink);
            open.store(false, Ordering::SeqCst);
            driven?;
            if ended.load(Ordering::SeqCst) {
                break;
            }
        }
        Ok(())
    };
    let spawned = thread::Builder::new().name(name.to_string()).spawn(body);
    match spawned.map(|handle| handle.join()) {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err("the test's thread ended without a trace".to_string()),
        Err(e) => Err(format!("the test's thread could not start: {e}")),
    }
}

/// The driver on one instance, its panic caught and reported with where it happened.
fn drive_one(driver: Driver, instance: &str, sink: Sink) -> Result<(), String> {
    panic::catch_unwind(AssertUnwindSafe(|| driver(instance, sink))).map_err(|payload| {
        let text = payload_text(payload.as_ref());
        match LOCATION.take() {
            Some(at) => format!("the test's driver failed: {text} ({at})"),
            None => format!("the test's driver failed: {text}"),
        }
    })
}

/// A panic on a test's thread is reported with the test, so the hook only keeps where it happened;
/// panics on other threads are printed as usual (a driver may silence its own, deliberate ones).
fn install_panic_hook() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if IN_TEST.get() {
            LOCATION.set(info.location().map(|l| l.to_string()));
        } else {
            previous(info);
        }
    }));
}

/// The text a panic was raised with: `panic!` carries a `String` or a `&str`.
pub fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a text message)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::protocol::{split_order, Record};
    use super::{hand_tests, Args};
    use serde_json::json;

    #[test]
    fn records_go_through_the_channel_unchanged_and_only_with_the_key() {
        let records = [
            Record::Started {
                test: "a::b".into(),
            },
            Record::Step {
                test: "a::b".into(),
                step: json!({"kind": "event", "event": {"type": "turn_end", "reason": "stop"}}),
            },
            Record::Finished {
                test: "a::b".into(),
            },
        ];
        for record in records {
            let line = record.encode("k1");
            assert!(
                line.ends_with('\n') && !line.trim_end().contains('\n'),
                "{line}"
            );
            assert_eq!(Record::decode(line.trim_end(), "k1"), Some(record.clone()));
            assert_eq!(Record::decode(line.trim_end(), "k2"), None);
        }
    }

    #[test]
    fn an_order_is_a_name_a_tab_and_the_instance() {
        let instance =
            json!({"caller": [{"role": "user", "content": [{"type": "text", "text": "a\tb"}]}]});
        let line = format!("plain_stop::x\t{instance}");
        assert_eq!(
            split_order(&line),
            Some(("plain_stop::x", instance.to_string().as_str()))
        );
        assert_eq!(split_order("no tab"), None);
        assert_eq!(split_order("\t{}"), None);
    }

    /// A driver that sends the steps its instance lists.
    fn replay(instance: &str, mut sink: super::Sink) {
        let value: serde_json::Value = serde_json::from_str(instance).unwrap();
        for step in value["steps"].as_array().cloned().unwrap_or_default() {
            sink(step);
        }
    }

    fn run(instance: serde_json::Value) -> Vec<serde_json::Value> {
        let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = std::sync::Arc::clone(&kept);
        let sink: super::Sink = Box::new(move |step| into.lock().unwrap().push(step));
        super::run_one("t", replay, &instance.to_string(), sink).unwrap();
        let steps = kept.lock().unwrap().clone();
        steps
    }

    #[test]
    fn each_instance_of_a_test_runs_after_its_mark_until_one_ends_as_no_correct_loop_does() {
        let one = json!({"steps": [{"kind": "a"}]});
        assert_eq!(
            run(one.clone()),
            [json!({"kind": "a"})],
            "one instance: no mark"
        );
        let runs = json!({"runs": [one, {"steps": [{"kind": "b"}]}]});
        assert_eq!(
            run(runs),
            [
                json!({"kind": "instance", "index": 0}),
                json!({"kind": "a"}),
                json!({"kind": "instance", "index": 1}),
                json!({"kind": "b"}),
            ]
        );
        for end in ["panic", "hang", "overflow"] {
            let runs = json!({"runs": [{"steps": [{"kind": end}]}, {"steps": [{"kind": "b"}]}]});
            assert_eq!(
                run(runs),
                [
                    json!({"kind": "instance", "index": 0}),
                    json!({"kind": end})
                ],
                "{end} ends the test's instances"
            );
        }
        let flood: Vec<serde_json::Value> =
            (0..super::MAX_STEPS).map(|i| json!({"n": i})).collect();
        let runs = json!({"runs": [{"steps": flood}, {"steps": [{"kind": "b"}]}]});
        assert_eq!(
            run(runs).len(),
            super::MAX_STEPS + 1,
            "the bound ends them too"
        );
        let huge = json!({"kind": "event", "text": "x".repeat(super::MAX_TRACE_BYTES)});
        let runs = json!({"runs": [{"steps": [huge.clone()]}, {"steps": [{"kind": "b"}]}]});
        assert_eq!(
            run(runs),
            [json!({"kind": "instance", "index": 0}), huge],
            "so does the bound of bytes"
        );
    }

    #[test]
    fn hand_tests_are_named_by_group_and_carry_their_instance_and_rules() {
        let rules = json!({"r": {"lab": "7.1", "zh": "z", "en": "e"}});
        let file = json!({"version": 1, "seed": 7,
            "tests": [{"name": "t", "group": "plain-stop", "instance": {"x": 1},
                       "expected": {"alternatives": [], "rules": rules}}]});
        let tests = hand_tests(&file.to_string()).unwrap();
        assert_eq!(tests.len(), 1);
        assert_eq!(tests[0].name, "plain_stop::t");
        assert_eq!(tests[0].instance, r#"{"x":1}"#);
        assert_eq!(tests[0].expected["rules"]["r"]["en"], "e");
        assert!(hand_tests("{}").is_err());
    }

    fn parse(words: &[&str]) -> Result<Args, String> {
        Args::parse(words.iter().map(|w| w.to_string()))
    }

    #[test]
    fn the_flags_of_cargo_test_are_understood() {
        let args = parse(&[
            "plain_stop",
            "--exact",
            "--skip",
            "x",
            "--test-threads=1",
            "--nocapture",
        ]);
        let args = args.unwrap();
        assert_eq!(args.filters, ["plain_stop"]);
        assert_eq!(args.skip, ["x"]);
        assert!(args.exact);
        assert!(parse(&["--list", "--format", "terse"]).unwrap().terse);
        assert!(parse(&["--test-threads"]).is_err());
        assert!(parse(&["--frobnicate"]).is_err());
    }

    #[test]
    fn filters_match_parts_of_names_unless_exact() {
        let args = parse(&["plain_stop", "--skip", "slow"]).unwrap();
        assert!(args.chooses("plain_stop::a"));
        assert!(!args.chooses("plain_stop::slow_one"));
        assert!(!args.chooses("single_tool::a"));
        let exact = parse(&["plain_stop::a", "--exact"]).unwrap();
        assert!(exact.chooses("plain_stop::a"));
        assert!(!exact.chooses("plain_stop::ab"));
        assert!(parse(&[]).unwrap().chooses("anything"));
    }
}
