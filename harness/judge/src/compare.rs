//! The comparison: a recorded trace against the expected trace of its instance (docs/JUDGE.md).
//!
//! The grader judges every graded test with this module, and every Rust practice directory has a copy
//! of this crate, so a hand run (`cargo test --test ch07`) judges with the same code and prints the same
//! message. It knows no chapter: the expected trace is a small graph of steps, each with the steps it must
//! come after and the rule it pins; the freedoms are the `$` nodes of a step (see [`matches`]). Only
//! `serde_json` is needed, so both sides build it.
//!
//! The TypeScript track's `test/judge.ts` is a line-by-line port of this file (a TypeScript hand run
//! judges with it); `tests/cli/judge/agreement.rs` keeps their verdicts and messages equal. Change both.
//!
//! A trace step matches an expected step whose predecessors have all matched, so the steps of concurrent
//! calls may interleave while everything else has one order. The first trace step that matches no enabled
//! expected step, or an expected step still unmatched when the trace ends, is the first divergence.
//!
//! A test may hold several instances (`{"runs": [...]}`: the boundary values a grade must reach, and a
//! freely drawn one). The harness then marks the start of each instance's steps with an [`INSTANCE`]
//! step, and each instance is judged by itself: the test passes when every instance does, and fails with
//! the first instance that diverges, named in the message.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// The language of a divergence's message. `Both` is for a hand run with no language chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Zh,
    En,
    Both,
}

/// Where a trace first left the expected one.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// The index of the trace step that matched nothing; the trace's length when it ended too early.
    pub index: usize,
    /// That step, or `None` when the trace ended.
    pub actual: Option<Value>,
    /// The expected steps that could have come there (their `match` values).
    pub expected: Vec<Value>,
    /// The rule the closest expected step pins.
    pub rule: String,
    /// Where the closest expected step and the actual one differ, when they are steps of one kind.
    pub detail: Option<Mismatch>,
}

/// The first place two values differ: a JSON path, what was expected there and what was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub path: String,
    pub expected: String,
    pub actual: String,
}

/// The step a harness writes before the steps of each instance of a test that holds several:
/// `{"kind": "instance", "index": k}`.
pub const INSTANCE: &str = "instance";

/// Compares `trace` with `expected` and explains the first divergence in `lang`; `None` when the trace
/// is one the chapter allows.
pub fn judge(expected: &Value, trace: &[Value], lang: Lang) -> Option<String> {
    let (instance, outcome) = focus(expected, trace);
    let divergence = outcome.err()?;
    Some(instance.explain(&divergence, lang))
}

/// Compares `trace` with `expected`: `Ok` when the chapter allows it, otherwise the first divergence (of
/// the first instance that diverges, for a test of several; [`message`] names that instance).
pub fn compare(expected: &Value, trace: &[Value]) -> Result<(), Box<Divergence>> {
    focus(expected, trace).1
}

/// One instance of a test as the comparison sees it: its expected graph, its steps, and which instance
/// it is when the test holds several.
struct Instance<'a> {
    expected: Cow<'a, Value>,
    steps: Cow<'a, [Value]>,
    /// Its number from 1, how many the test holds, what it covers (`{"zh": …, "en": …}`).
    which: Option<(usize, usize, Option<&'a Value>)>,
}

impl Instance<'_> {
    fn explain(&self, d: &Divergence, lang: Lang) -> String {
        let body = message_one(&self.expected, &self.steps, d, lang);
        let Some((number, of, about)) = self.which else {
            return body;
        };
        let about = |l: &str| {
            about
                .and_then(|a| a.get(l))
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
        };
        let line = pick(
            lang,
            match about("zh") {
                Some(a) => format!("  实例：第 {number} 个，共 {of} 个（{a}）"),
                None => format!("  实例：第 {number} 个，共 {of} 个"),
            },
            match about("en") {
                Some(a) => format!("  instance: {number} of {of} ({a})"),
                None => format!("  instance: {number} of {of}"),
            },
        );
        // The first line says where the run left the rules (a one-line report shows only it); which
        // instance that was comes next.
        match body.split_once('\n') {
            Some((first, rest)) => format!("{first}\n{line}\n{rest}"),
            None => format!("{body}\n{line}"),
        }
    }
}

fn is_instance_mark(step: &Value) -> bool {
    step.get("kind").and_then(Value::as_str) == Some(INSTANCE)
}

/// The steps of each of a test's `runs` instances: those that follow its mark. Steps before the first
/// mark go to the first instance, and marks past the last instance stay in the last one's steps: either
/// way that instance diverges there. A segment that is one stretch of the trace is borrowed from it.
fn segments(trace: &[Value], runs: usize) -> Vec<Cow<'_, [Value]>> {
    // Each segment as stretches of the trace, `(start, end)`.
    let mut stretches: Vec<Vec<(usize, usize)>> = vec![vec![(0, 0)]];
    let mut marks = 0;
    for (i, step) in trace.iter().enumerate() {
        if is_instance_mark(step) {
            marks += 1;
            // The first mark opens the first instance, each later one the next while any is left.
            let opens = if marks == 1 {
                stretches[0].push((i + 1, i + 1));
                true
            } else if stretches.len() < runs {
                stretches.push(vec![(i + 1, i + 1)]);
                true
            } else {
                false
            };
            if opens {
                continue;
            }
        }
        let last = stretches.last_mut().and_then(|s| s.last_mut());
        last.expect("one stretch at least").1 = i + 1;
    }
    let mut segments: Vec<Cow<'_, [Value]>> = stretches
        .into_iter()
        .map(|parts| {
            let parts: Vec<_> = parts.into_iter().filter(|(a, b)| a < b).collect();
            match parts.as_slice() {
                [] => Cow::Borrowed(&trace[..0]),
                [(a, b)] => Cow::Borrowed(&trace[*a..*b]),
                more => Cow::Owned(
                    more.iter()
                        .flat_map(|(a, b)| &trace[*a..*b])
                        .cloned()
                        .collect(),
                ),
            }
        })
        .collect();
    segments.resize(runs.max(1), Cow::Borrowed(&trace[..0]));
    segments
}

/// Instance `i` of a test that holds `runs`, with `steps`: its expected graph is the test's shared keys
/// (the rules, the test's Lab) with the run's alternatives.
fn instance_of<'a>(
    expected: &'a Value,
    runs: &'a [Value],
    i: usize,
    steps: Cow<'a, [Value]>,
) -> Instance<'a> {
    let mut graph: Map<String, Value> = expected
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| k.as_str() != "runs")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let run = &runs[i];
    graph.insert(
        "alternatives".into(),
        run.get("alternatives").cloned().unwrap_or(Value::Null),
    );
    Instance {
        expected: Cow::Owned(Value::Object(graph)),
        steps,
        which: Some((i + 1, runs.len(), run.get("about"))),
    }
}

/// The instance that decides the verdict, with its comparison: the first that diverges, else the last.
/// Each instance is compared where it lies; only the deciding one is put together as an [`Instance`].
fn focus<'a>(
    expected: &'a Value,
    trace: &'a [Value],
) -> (Instance<'a>, Result<(), Box<Divergence>>) {
    let Some(runs) = expected.get("runs").and_then(Value::as_array) else {
        let one = Instance {
            expected: Cow::Borrowed(expected),
            steps: Cow::Borrowed(trace),
            which: None,
        };
        let outcome = compare_one(&one.expected, &one.steps);
        return (one, outcome);
    };
    if runs.is_empty() {
        // A test of no instance at all: nothing can pass it.
        let none = Instance {
            expected: Cow::Owned(Value::Null),
            steps: Cow::Borrowed(trace),
            which: None,
        };
        let outcome = compare_one(&none.expected, &none.steps);
        return (none, outcome);
    }
    let mut segments = segments(trace, runs.len());
    let last = runs.len() - 1;
    for (i, run) in runs.iter().enumerate() {
        let outcome = compare_alternatives(alternatives_of(run), &segments[i]);
        if outcome.is_err() || i == last {
            let steps = segments.swap_remove(i);
            return (instance_of(expected, runs, i, steps), outcome);
        }
    }
    unreachable!("the last instance returns")
}

/// An expected graph's alternatives.
fn alternatives_of(expected: &Value) -> &[Value] {
    expected
        .get("alternatives")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Compares `trace` with every alternative of `expected`: `Ok` when one of them matches the whole trace,
/// otherwise the divergence of the alternative that went furthest.
fn compare_one(expected: &Value, trace: &[Value]) -> Result<(), Box<Divergence>> {
    compare_alternatives(alternatives_of(expected), trace)
}

/// Compares `trace` with each of `alternatives`, as [`compare_one`] does.
fn compare_alternatives(alternatives: &[Value], trace: &[Value]) -> Result<(), Box<Divergence>> {
    let mut furthest: Option<Box<Divergence>> = None;
    for alternative in alternatives {
        match walk(alternative, trace, &mut Vec::new()) {
            Ok(()) => return Ok(()),
            Err(d) if furthest.as_ref().is_none_or(|f| d.index > f.index) => furthest = Some(d),
            Err(_) => {}
        }
    }
    Err(furthest.unwrap_or_else(|| {
        Box::new(Divergence {
            index: 0,
            actual: trace.first().cloned(),
            expected: Vec::new(),
            rule: String::new(),
            detail: None,
        })
    }))
}

struct Expected<'a> {
    after: Vec<usize>,
    pattern: &'a Value,
    rule: &'a str,
    /// A more precise rule for a difference under a path (`"caller"`, `"event.result"`).
    path_rules: Vec<(&'a str, &'a str)>,
}

fn steps_of(alternative: &Value) -> Vec<Expected<'_>> {
    let steps = alternative.get("steps").and_then(Value::as_array);
    let steps = steps.map(Vec::as_slice).unwrap_or_default();
    steps
        .iter()
        .map(|s| Expected {
            after: s
                .get("after")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_u64)
                        .map(|i| i as usize)
                        .collect()
                })
                .unwrap_or_default(),
            pattern: s.get("match").unwrap_or(&Value::Null),
            rule: s.get("rule").and_then(Value::as_str).unwrap_or(""),
            path_rules: s
                .get("path_rules")
                .and_then(Value::as_object)
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// Walks `trace` through one alternative's graph; `pairs` gets (expected step, trace step) for each match.
fn walk<'a>(
    alternative: &'a Value,
    trace: &'a [Value],
    pairs: &mut Vec<(usize, usize)>,
) -> Result<(), Box<Divergence>> {
    let steps = steps_of(alternative);
    let mut matched = vec![false; steps.len()];
    let mut bound = Bindings::new();
    // Trace steps already matched out of their place (events delivered late, see below).
    let mut taken = vec![false; trace.len()];
    let enabled = |matched: &[bool]| -> Vec<usize> {
        (0..steps.len())
            .filter(|&i| {
                !matched[i]
                    && steps[i]
                        .after
                        .iter()
                        .all(|&a| matched.get(a) == Some(&true))
            })
            .collect()
    };
    // The first enabled step `actual` matches, its bindings added; a trial that fails binds nothing.
    let try_match = |actual: &'a Value, matched: &[bool], bound: &mut Bindings<'a>| {
        enabled(matched).into_iter().find(|&i| {
            let mark = bound.mark();
            let fits = matches(steps[i].pattern, Some(actual), "", bound).is_ok();
            if !fits {
                bound.undo(mark);
            }
            fits
        })
    };
    let mut index = 0;
    while index < trace.len() {
        if taken[index] {
            index += 1;
            continue;
        }
        let actual = &trace[index];
        if let Some(i) = try_match(actual, &matched, &mut bound) {
            matched[i] = true;
            pairs.push((i, index));
            index += 1;
            continue;
        }
        // The freedom of event delivery: a loop may hand its events to the sink later than the steps
        // they report (queued, delivered in order), so the next event of the trace may stand after
        // steps of the run's own work, never after another event or the run's end.
        let late = match is_event(actual) || is_end(actual) {
            true => None,
            false => (index + 1..trace.len())
                .filter(|&j| !taken[j])
                .find(|&j| is_event(&trace[j]) || is_end(&trace[j]))
                .filter(|&j| is_event(&trace[j])),
        };
        match late.and_then(|j| try_match(&trace[j], &matched, &mut bound).map(|i| (j, i))) {
            Some((j, i)) => {
                matched[i] = true;
                taken[j] = true;
                pairs.push((i, j));
            }
            None => {
                return Err(Box::new(diverge(
                    &steps,
                    &enabled(&matched),
                    index,
                    Some(actual),
                    &bound,
                )))
            }
        }
    }
    let left = enabled(&matched);
    match left.is_empty() {
        true => Ok(()),
        false => Err(Box::new(diverge(&steps, &left, trace.len(), None, &bound))),
    }
}

fn is_event(step: &Value) -> bool {
    step.get("kind").and_then(Value::as_str) == Some("event")
}

/// A step after which a run has nothing more to say: its result, or how it stopped.
fn is_end(step: &Value) -> bool {
    let kind = step.get("kind").and_then(Value::as_str).unwrap_or("");
    matches!(
        kind,
        "result" | "panic" | "hang" | "overflow" | "timeout" | "exit" | "crash"
    )
}

/// One row of a timeline: an expected step and the trace step that matched it, or, from the first
/// divergence on, what was still expected beside what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// The row of the first divergence.
    pub diverges: bool,
}

/// The expected and the actual timeline side by side (for `pi-course explain`): the matched steps in the
/// trace's order, then the first divergence, then what was left of each. The alternative shown is the one
/// that matched, or else the one that went furthest. For a test of several instances, the instance that
/// decides its verdict.
pub fn timeline(expected: &Value, trace: &[Value]) -> Vec<Row> {
    let (instance, _) = focus(expected, trace);
    timeline_one(&instance.expected, &instance.steps)
}

fn timeline_one(expected: &Value, trace: &[Value]) -> Vec<Row> {
    let alternatives = expected
        .get("alternatives")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    type Walked = (Value, Vec<(usize, usize)>, Result<(), Box<Divergence>>);
    let mut best: Option<Walked> = None;
    for alternative in alternatives {
        let mut pairs = Vec::new();
        let outcome = walk(&alternative, trace, &mut pairs);
        let better = match (&best, &outcome) {
            (None, _) => true,
            (Some((_, _, Ok(()))), _) => false,
            (Some(_), Ok(())) => true,
            (Some((_, _, Err(b))), Err(d)) => d.index > b.index,
        };
        if better {
            best = Some((alternative, pairs, outcome));
        }
    }
    let Some((alternative, mut pairs, outcome)) = best else {
        return trace
            .iter()
            .map(|t| Row {
                expected: None,
                actual: Some(label(t)),
                diverges: false,
            })
            .collect();
    };
    let steps = steps_of(&alternative);
    pairs.sort_by_key(|&(_, t)| t);
    let mut rows: Vec<Row> = pairs
        .iter()
        .map(|&(e, t)| Row {
            expected: Some(label(steps[e].pattern)),
            actual: Some(label(&trace[t])),
            diverges: false,
        })
        .collect();
    if let Err(d) = outcome {
        let seen: Vec<usize> = pairs.iter().map(|&(_, t)| t).collect();
        let used: Vec<usize> = pairs.iter().map(|&(e, _)| e).collect();
        let left: Vec<String> = (0..steps.len())
            .filter(|i| !used.contains(i))
            .map(|i| label(steps[i].pattern))
            .collect();
        let rest: Vec<String> = (d.index..trace.len())
            .filter(|t| !seen.contains(t))
            .map(|t| label(&trace[t]))
            .collect();
        let wanted: Vec<String> = d.expected.iter().map(label).collect();
        rows.push(Row {
            expected: Some(if wanted.is_empty() {
                "(end)".to_string()
            } else {
                wanted.join(" | ")
            }),
            actual: Some(rest.first().cloned().unwrap_or_else(|| "(end)".to_string())),
            diverges: true,
        });
        let left: Vec<String> = left.into_iter().filter(|l| !wanted.contains(l)).collect();
        let rest = rest.into_iter().skip(1);
        let mut rest = rest.peekable();
        let mut left = left.into_iter().peekable();
        while left.peek().is_some() || rest.peek().is_some() {
            rows.push(Row {
                expected: left.next(),
                actual: rest.next(),
                diverges: false,
            });
        }
    }
    rows
}

/// The divergence at `index`: the closest candidate is one of the same kind (and event type) as the
/// actual step, so the message can say which field differs; otherwise the first candidate.
fn diverge(
    steps: &[Expected],
    candidates: &[usize],
    index: usize,
    actual: Option<&Value>,
    bound: &Bindings,
) -> Divergence {
    let same_kind =
        |i: &&usize| actual.is_some_and(|a| label_key(steps[**i].pattern) == label_key(a));
    let closest = candidates.iter().find(same_kind).or(candidates.first());
    let detail = match (closest, actual) {
        (Some(&i), Some(a)) if label_key(steps[i].pattern) == label_key(a) => {
            matches(steps[i].pattern, Some(a), "", &mut bound.clone()).err()
        }
        _ => None,
    };
    let rule = closest.map(|&i| {
        let step = &steps[i];
        let under = |prefix: &str, path: &str| {
            path == prefix
                || path.starts_with(&format!("{prefix}."))
                || path.starts_with(&format!("{prefix}["))
        };
        let precise = detail.as_ref().and_then(|m| {
            let found = step.path_rules.iter().filter(|(p, _)| under(p, &m.path));
            found.max_by_key(|(p, _)| p.len()).map(|(_, r)| *r)
        });
        precise.unwrap_or(step.rule).to_string()
    });
    Divergence {
        index,
        actual: actual.cloned(),
        expected: candidates
            .iter()
            .map(|&i| steps[i].pattern.clone())
            .collect(),
        rule: rule.unwrap_or_default(),
        detail,
    }
}

/// The free values bound so far (`$bind`), by name, in the order they were bound. Matching only ever
/// adds to them, so a trial that fails is undone by going back to its [`Bindings::mark`]: nothing is
/// copied to try a step.
#[derive(Debug, Clone, Default)]
pub struct Bindings<'a>(Vec<(&'a str, &'a Value)>);

impl<'a> Bindings<'a> {
    pub fn new() -> Bindings<'a> {
        Bindings(Vec::new())
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    fn mark(&self) -> usize {
        self.0.len()
    }

    fn undo(&mut self, mark: usize) {
        self.0.truncate(mark);
    }
}

/// Where in a step a value lies, put into words only when a mismatch is reported: the path of the
/// step's root (`""` or a prefix), then keys (`a.b`) and items (`a[2]`).
enum At<'p> {
    Root(&'p str),
    Key(&'p At<'p>, &'p str),
    Item(&'p At<'p>, usize),
}

impl At<'_> {
    fn path(&self) -> String {
        match self {
            At::Root(path) => path.to_string(),
            At::Key(parent, key) => join(&parent.path(), key),
            At::Item(parent, i) => format!("{}[{i}]", parent.path()),
        }
    }
}

/// Whether `actual` (`None`: the key is missing) fits `pattern`. A pattern is a value that must be equal,
/// except for these nodes, the freedoms:
///
/// - `{"$any": F}`: anything, a missing key too (with `"$without": [S…]`: that holds none of the S; with
///   `"$no_stack": true`: whose strings hold no stack);
/// - `{"$text": F}`: a non-empty string;
/// - `{"$carries": M, "$without": [S…]}`: a string that contains M, none of the S, and no stack;
/// - `{"$one_of": [V…]}`: one of the V;
/// - `{"$bind": NAME, "$match": P}`: P; the first value matched under NAME is kept, and a later node with
///   that NAME must equal it (a free value stays the same wherever it travels);
/// - `{"$absent_or": V}`: a missing key, or V (what a track's surface cannot carry).
pub fn matches<'a>(
    pattern: &'a Value,
    actual: Option<&'a Value>,
    path: &str,
    bound: &mut Bindings<'a>,
) -> Result<(), Mismatch> {
    fits(pattern, actual, &At::Root(path), bound)
}

/// [`matches`], with the path kept as [`At`] until a mismatch needs it in words.
fn fits<'a>(
    pattern: &'a Value,
    actual: Option<&'a Value>,
    at: &At<'_>,
    bound: &mut Bindings<'a>,
) -> Result<(), Mismatch> {
    let fail = |expected: String| {
        let path = at.path();
        Err(Mismatch {
            path: if path.is_empty() {
                "$".to_string()
            } else {
                path
            },
            expected,
            actual: actual.map_or_else(|| "(missing)".to_string(), |a| show(a, 160)),
        })
    };
    if let Some(node) = pattern
        .as_object()
        .filter(|o| o.keys().any(|k| k.starts_with('$')))
    {
        if node.contains_key("$any") {
            // `$without` on a free value: none of these texts anywhere in it (a Debug rendering, say).
            let without = node.get("$without").and_then(Value::as_array);
            let mut without = without.into_iter().flatten().filter_map(Value::as_str);
            let leaked = without.any(|w| actual.is_some_and(|a| holds_text(a, w)));
            // `$no_stack`: no string in it holds a stack either.
            let no_stack = node.get("$no_stack") == Some(&Value::Bool(true));
            let stacked = no_stack && actual.is_some_and(holds_stack);
            return match leaked || stacked {
                false => Ok(()),
                true => fail(format!(
                    "(anything without {}{})",
                    show(&node["$without"], 80),
                    if no_stack { ", and no stack" } else { "" }
                )),
            };
        }
        if let Some(inner) = node.get("$absent_or") {
            return match actual {
                None => Ok(()),
                Some(_) => fits(inner, actual, at, bound),
            };
        }
        let Some(actual_value) = actual else {
            return fail(describe(pattern));
        };
        if node.contains_key("$text") {
            return match actual_value.as_str() {
                Some(s) if !s.trim().is_empty() => Ok(()),
                _ => fail(describe(pattern)),
            };
        }
        if let Some(carried) = node.get("$carries").and_then(Value::as_str) {
            let without = node.get("$without").and_then(Value::as_array);
            let without = without.map(Vec::as_slice).unwrap_or_default();
            return match actual_value.as_str() {
                Some(s)
                    if s.contains(carried)
                        && !without
                            .iter()
                            .filter_map(Value::as_str)
                            .any(|w| s.contains(w))
                        && !has_stack(s) =>
                {
                    Ok(())
                }
                _ => fail(describe(pattern)),
            };
        }
        if let Some(options) = node.get("$one_of").and_then(Value::as_array) {
            for option in options {
                let mark = bound.mark();
                if fits(option, actual, at, bound).is_ok() {
                    return Ok(());
                }
                bound.undo(mark);
            }
            return fail(describe(pattern));
        }
        if let Some(name) = node.get("$bind").and_then(Value::as_str) {
            if let Some(earlier) = bound.get(name) {
                return match same(earlier, actual_value) {
                    true => Ok(()),
                    false => fail(show(earlier, 160)),
                };
            }
            let inner = node.get("$match").unwrap_or(&Value::Null);
            fits(inner, actual, at, bound)?;
            bound.0.push((name, actual_value));
            return Ok(());
        }
        return fail(describe(pattern));
    }
    let Some(actual_value) = actual else {
        return fail(show(pattern, 160));
    };
    match (pattern, actual_value) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, want_value) in want {
                fits(want_value, got.get(key), &At::Key(at, key), bound)?;
            }
            match got.keys().find(|k| !want.contains_key(*k)) {
                Some(extra) => Err(Mismatch {
                    path: join(&at.path(), extra),
                    expected: "(no such field)".to_string(),
                    actual: show(&got[extra], 160),
                }),
                None => Ok(()),
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            for (i, want_item) in want.iter().enumerate() {
                fits(want_item, got.get(i), &At::Item(at, i), bound)?;
            }
            match got.len() > want.len() {
                true => Err(Mismatch {
                    path: format!("{}[{}]", at.path(), want.len()),
                    expected: "(no such item)".to_string(),
                    actual: show(&got[want.len()], 160),
                }),
                false => Ok(()),
            }
        }
        (want, got) if same(want, got) => Ok(()),
        (want, _) => fail(show(want, 160)),
    }
}

/// Whether any string in `value` holds a stack.
fn holds_stack(value: &Value) -> bool {
    match value {
        Value::String(s) => has_stack(s),
        Value::Array(items) => items.iter().any(holds_stack),
        Value::Object(o) => o.values().any(holds_stack),
        _ => false,
    }
}

/// Whether any string in `value` (a key too) contains `text`.
fn holds_text(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|v| holds_text(v, text)),
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| k.contains(text) || holds_text(v, text)),
        _ => false,
    }
}

/// JSON equality, with numbers compared by value (`1` and `1.0` are one number).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Whether a text holds a stack: a frame line (`    at f (file.ts:3:9)`), a panic's location or
/// backtrace, or a source position (`agent_loop.rs:12`).
pub fn has_stack(text: &str) -> bool {
    let lines = text.lines().map(str::trim_start);
    let frame = lines.clone().any(|l| l.starts_with("at ") && l.len() > 3);
    let words = ["panicked at", "stack backtrace", "RUST_BACKTRACE"];
    frame || words.iter().any(|w| text.contains(w)) || has_position(text)
}

/// `name.rs:12`, `name.ts:3:9` and the like.
fn has_position(text: &str) -> bool {
    [".rs:", ".ts:", ".js:", ".mjs:", ".cjs:"]
        .iter()
        .any(|ext| {
            text.match_indices(ext).any(|(at, _)| {
                let rest = &text[at + ext.len()..];
                rest.chars().next().is_some_and(|c| c.is_ascii_digit())
            })
        })
}

fn join(path: &str, key: &str) -> String {
    match path.is_empty() {
        true => key.to_string(),
        false => format!("{path}.{key}"),
    }
}

/// A value on one line, cut to about `max` characters.
pub fn show(value: &Value, max: usize) -> String {
    let text = value.to_string();
    cut(&text, max)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What a freedom node accepts, in words the message can show.
fn describe(pattern: &Value) -> String {
    let node = pattern.as_object().cloned().unwrap_or_default();
    if node.contains_key("$text") {
        return "(any non-empty text)".to_string();
    }
    if let Some(m) = node.get("$carries").and_then(Value::as_str) {
        return format!("(a text that carries {m:?}, without a stack or Debug output)");
    }
    if let Some(options) = node.get("$one_of").and_then(Value::as_array) {
        let shown: Vec<String> = options.iter().map(|o| show(o, 60)).collect();
        return format!("(one of {})", shown.join(", "));
    }
    if let Some(inner) = node.get("$match") {
        return describe_or_show(inner);
    }
    show(pattern, 160)
}

fn describe_or_show(value: &Value) -> String {
    match value
        .as_object()
        .is_some_and(|o| o.keys().any(|k| k.starts_with('$')))
    {
        true => describe(value),
        false => show(value, 160),
    }
}

// ---------------------------------------------------------------------------------------------------
// Labels: a step in a few words, for messages and timelines
// ---------------------------------------------------------------------------------------------------

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("?")
}

/// What kind of step this is, precise enough to pair an expected step with an actual one.
fn label_key(step: &Value) -> String {
    let kind = text_of(step, "kind");
    match kind {
        "event" => {
            let event = step.get("event").unwrap_or(&Value::Null);
            format!("event:{}", text_of(event, "type"))
        }
        "driver" => format!("driver:{}", text_of(step, "action")),
        _ => kind.to_string(),
    }
}

/// A step in a few words: `request #2`, `tool_end(c1)`, `turn_end(stop)`, `test: release(c1)`. Labels
/// are names and values, never sentences: the same label stands in a Chinese and an English message.
pub fn label(step: &Value) -> String {
    let kind = text_of(step, "kind");
    match kind {
        "request" => format!(
            "request #{}",
            step.get("n").and_then(Value::as_u64).unwrap_or(0)
        ),
        "event" => {
            let event = step.get("event").unwrap_or(&Value::Null);
            let id_of = |key: &str| {
                let holder = event.get(key).unwrap_or(&Value::Null);
                let id = holder.get("id").or_else(|| holder.get("toolCallId"));
                id.and_then(Value::as_str).unwrap_or("?").to_string()
            };
            match text_of(event, "type") {
                "model_event" => {
                    let inner = event.get("event").unwrap_or(&Value::Null);
                    format!("model_event({})", text_of(inner, "type"))
                }
                "tool_start" => format!("tool_start({})", id_of("call")),
                "tool_progress" => format!("tool_progress({})", text_of(event, "toolCallId")),
                "tool_end" => format!("tool_end({})", id_of("result")),
                "tool_skipped" => format!("tool_skipped({})", id_of("result")),
                "turn_end" => format!("turn_end({})", describe_or_label(event.get("reason"))),
                other => other.to_string(),
            }
        }
        "exec_enter" => match text_of(step, "via") {
            "tool" => format!("tool({})", text_of(step, "tool")),
            _ => {
                let call = step.get("call").unwrap_or(&Value::Null);
                format!("executor({})", text_of(call, "id"))
            }
        },
        "exec_progress" => format!("reportProgress({})", text_of(step, "ref")),
        "exec_leave" => format!("{} returns", text_of(step, "ref")),
        "driver" => match text_of(step, "action") {
            "release" => format!("test: release({})", text_of(step, "ref")),
            "gave_up" => format!("test: gave_up({})", text_of(step, "waiting_for")),
            "stream_end" => format!(
                "test: stream_end(#{})",
                step.get("n").and_then(Value::as_u64).unwrap_or(0)
            ),
            other => format!("test: {other}"),
        },
        "caller" => format!("caller({})", text_of(step, "state")),
        "result" => format!("return({})", describe_or_label(step.get("reason"))),
        // A Rust panic or a TypeScript throw: one word for both, since the judge serves both tracks.
        "panic" => format!("crash: {}", cut(text_of(step, "message"), 120)),
        "hang" => "hang".to_string(),
        other => other.to_string(),
    }
}

fn describe_or_label(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(v) => describe_or_show(v),
        None => "?".to_string(),
    }
}

// ---------------------------------------------------------------------------------------------------
// The message
// ---------------------------------------------------------------------------------------------------

fn pick(lang: Lang, zh: String, en: String) -> String {
    match lang {
        Lang::Zh => zh,
        Lang::En => en,
        Lang::Both => format!("{zh}\n{en}"),
    }
}

/// The Lab a `todo!()` or not-implemented throw names: `not yet implemented: Lab 7.3: …` (Rust's
/// `todo!()`, also when a task's panic carries it on), `TODO(Lab 7.3): …` (the TypeScript skeleton's
/// throws).
pub fn lab_reached(step: &Value) -> Option<String> {
    if text_of(step, "kind") != "panic" {
        return None;
    }
    let message = text_of(step, "message");
    let at = [
        "not yet implemented: Lab ",
        "not implemented: Lab ",
        "TODO(Lab ",
    ]
    .iter()
    .find_map(|marker| message.find(marker).map(|at| at + marker.len()))?;
    let lab: String = message[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let lab = lab.trim_end_matches('.');
    (!lab.is_empty()).then(|| lab.to_string())
}

/// The Lab of the test itself, when the grader put it in the expected trace (`"test": {"lab": "7.4",
/// "group": {"zh": …, "en": …}}`); hand runs go without.
fn test_lab(expected: &Value) -> Option<(&str, &Value)> {
    let test = expected.get("test")?;
    Some((test.get("lab")?.as_str()?, test.get("group")?))
}

/// A mismatch's own words in Chinese: "(no such item)", "(no such field)", "(missing)".
fn zh_word(text: &str) -> String {
    match text {
        "(no such item)" => "（没有这一项）".to_string(),
        "(no such field)" => "（没有这个字段）".to_string(),
        "(missing)" => "（缺少）".to_string(),
        other => other.to_string(),
    }
}

/// The divergence explained: where the run left the chapter's rules, what was expected there, what
/// happened, which rule that is and whose Lab, and the run so far. `d` is what [`compare`] found for the
/// same `expected` and `trace`; for a test of several instances the message first names the instance.
pub fn message(expected: &Value, trace: &[Value], d: &Divergence, lang: Lang) -> String {
    focus(expected, trace).0.explain(d, lang)
}

fn message_one(expected: &Value, trace: &[Value], d: &Divergence, lang: Lang) -> String {
    let rules = expected.get("rules").and_then(Value::as_object);
    let empty = Map::new();
    let rule = rules.unwrap_or(&empty).get(&d.rule);
    let rule_text = |l: &str| {
        rule.and_then(|r| r.get(l))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let lab = rule
        .and_then(|r| r.get("lab"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let group = |l: &str| {
        let g = rule.and_then(|r| r.get("group")).and_then(|g| g.get(l));
        g.and_then(Value::as_str).unwrap_or("").to_string()
    };
    let step_no = d.index + 1;
    let wanted: Vec<String> = d.expected.iter().map(label).collect();
    let wanted = match wanted.len() {
        0 => pick(
            lang,
            "（运行应已结束）".into(),
            "(the run should have ended)".into(),
        ),
        1 => wanted[0].clone(),
        _ => pick(
            lang,
            format!("以下之一：{}", wanted.join("、")),
            format!("one of: {}", wanted.join(", ")),
        ),
    };
    let happened = match &d.actual {
        Some(step) => label(step),
        None => pick(
            lang,
            "（记录到此结束）".into(),
            "(the trace ends here)".into(),
        ),
    };
    let mut lines = Vec::new();
    let reached = d.actual.as_ref().and_then(lab_reached);
    // A run that stopped doing anything gets one plain sentence, the same on every test it hangs in:
    // no rule, and nothing of the driver's own words.
    let hung = d
        .actual
        .as_ref()
        .is_some_and(|s| matches!(text_of(s, "kind"), "hang" | "timeout"));
    if let Some(reached) = &reached {
        let reached_zh =
            format!("第 {step_no} 步到达了 Lab {reached} 还没写完的部分（骨架留下的占位）");
        let reached_en = format!(
            "step {step_no} reached Lab {reached}'s unfinished part (a placeholder the skeleton left)"
        );
        lines.push(match test_lab(expected) {
            // A test of a later Lab that needs an earlier one: which Lab to finish first.
            Some((own, group)) if own != reached => {
                let name = |l: &str| group.get(l).and_then(Value::as_str).unwrap_or("");
                pick(
                    lang,
                    format!("这个测试属于 Lab {own}（{}）；{reached_zh}：先完成 Lab {reached}。", name("zh")),
                    format!("this test belongs to Lab {own} ({}); {reached_en}: finish Lab {reached} first.", name("en")),
                )
            }
            Some(_) => pick(
                lang,
                format!("{reached_zh}：这正是这个 Lab 要你写的部分。"),
                format!("{reached_en}: this is the part this Lab asks you to write."),
            ),
            None => pick(
                lang,
                format!("{reached_zh}：先完成 Lab {reached}。"),
                format!("{reached_en}: finish Lab {reached} first."),
            ),
        });
        lines.push(format!(
            "  {}",
            text_of(d.actual.as_ref().unwrap_or(&Value::Null), "message")
        ));
    } else if hung {
        lines.push(pick(
            lang,
            format!("第 {step_no} 步：你的循环没有返回，之后也再没有任何动作（是死循环，还是在 await 期间一直持有着锁？）"),
            format!("step {step_no}: your loop did not return, and did nothing more (an endless loop, or a lock held across an await?)"),
        ));
    } else {
        lines.push(pick(
            lang,
            format!(
                "第 {step_no} 步偏离了本章的规则（Lab {lab} {}）",
                group("zh")
            ),
            format!(
                "step {step_no} left the chapter's rules (Lab {lab}, {})",
                group("en")
            ),
        ));
    }
    let detail = d.detail.as_ref().filter(|_| !hung);
    match detail {
        // The step came as expected and differs only inside: its label twice would read as right, so
        // the message leads with where and how the value differs.
        Some(m) if reached.is_none() && d.expected.len() == 1 && wanted == happened => {
            lines.push(pick(
                lang,
                format!(
                    "  {happened} 的 {}：应为 {}，实际 {}",
                    m.path,
                    zh_word(&m.expected),
                    zh_word(&m.actual)
                ),
                format!(
                    "  in {happened}, at {}: expected {}, got {}",
                    m.path, m.expected, m.actual
                ),
            ));
        }
        _ => {
            lines.push(pick(
                lang,
                format!("  应为：{wanted}"),
                format!("  expected: {wanted}"),
            ));
            if !hung {
                lines.push(pick(
                    lang,
                    format!("  实际：{happened}"),
                    format!("  happened: {happened}"),
                ));
            }
            if let Some(m) = detail {
                lines.push(pick(
                    lang,
                    format!(
                        "  在 {}：应为 {}，实际 {}",
                        m.path,
                        zh_word(&m.expected),
                        zh_word(&m.actual)
                    ),
                    format!("  at {}: expected {}, got {}", m.path, m.expected, m.actual),
                ));
            }
        }
    }
    if reached.is_none() && !hung && !rule_text("en").is_empty() {
        lines.push(pick(
            lang,
            format!("  规则：{}", rule_text("zh")),
            format!("  rule: {}", rule_text("en")),
        ));
    }
    let so_far: Vec<String> = trace[..d.index.min(trace.len())]
        .iter()
        .map(label)
        .collect();
    let skip = so_far.len().saturating_sub(24);
    let shown = so_far[skip..].join(" → ");
    let shown = match skip {
        0 => shown,
        _ => format!("… {shown}"),
    };
    lines.push(pick(
        lang,
        format!(
            "  到此为止：{}",
            if shown.is_empty() {
                "（无）".into()
            } else {
                shown.clone()
            }
        ),
        format!(
            "  so far: {}",
            if shown.is_empty() {
                "(nothing)".into()
            } else {
                shown
            }
        ),
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(after: &[usize], m: Value) -> Value {
        json!({"after": after, "match": m, "rule": "r"})
    }

    fn graph(steps: Vec<Value>) -> Value {
        json!({"alternatives": [{"steps": steps}], "rules": {"r": {"lab": "7.1", "zh": "规则", "en": "the rule"}}})
    }

    #[test]
    fn a_sequence_matches_only_in_its_order() {
        let g = graph(vec![
            step(&[], json!({"kind": "a"})),
            step(&[0], json!({"kind": "b"})),
        ]);
        assert!(compare(&g, &[json!({"kind": "a"}), json!({"kind": "b"})]).is_ok());
        let d = compare(&g, &[json!({"kind": "b"}), json!({"kind": "a"})]).unwrap_err();
        assert_eq!(d.index, 0);
        let d = compare(&g, &[json!({"kind": "a"})]).unwrap_err();
        assert_eq!((d.index, d.actual), (1, None));
        let d = compare(
            &g,
            &[
                json!({"kind": "a"}),
                json!({"kind": "b"}),
                json!({"kind": "c"}),
            ],
        );
        assert_eq!(d.unwrap_err().index, 2);
    }

    #[test]
    fn lanes_interleave_but_keep_their_own_order() {
        let g = graph(vec![
            step(&[], json!({"kind": "a1"})),
            step(&[0], json!({"kind": "a2"})),
            step(&[], json!({"kind": "b1"})),
            step(&[2], json!({"kind": "b2"})),
            step(&[1, 3], json!({"kind": "join"})),
        ]);
        let t = |ks: &[&str]| ks.iter().map(|k| json!({ "kind": k })).collect::<Vec<_>>();
        assert!(compare(&g, &t(&["a1", "b1", "b2", "a2", "join"])).is_ok());
        assert!(compare(&g, &t(&["b1", "a1", "a2", "b2", "join"])).is_ok());
        assert_eq!(compare(&g, &t(&["a2"])).unwrap_err().index, 0);
        assert_eq!(compare(&g, &t(&["a1", "join"])).unwrap_err().index, 1);
    }

    #[test]
    fn freedoms_accept_what_they_name_and_nothing_else() {
        let text = json!({"$text": "skip-text"});
        assert!(matches(&text, Some(&json!("skipped")), "", &mut Bindings::new()).is_ok());
        assert!(matches(&text, Some(&json!("  ")), "", &mut Bindings::new()).is_err());
        let carries = json!({"$carries": "disk full", "$without": ["DiskFull {"]});
        assert!(matches(
            &carries,
            Some(&json!("Tool x failed: disk full")),
            "",
            &mut Bindings::new()
        )
        .is_ok());
        assert!(matches(
            &carries,
            Some(&json!("DiskFull { .. }: disk full")),
            "",
            &mut Bindings::new()
        )
        .is_err());
        let stack = json!("Error: disk full\n    at run (src/agent-loop.ts:10:3)");
        assert!(matches(&carries, Some(&stack), "", &mut Bindings::new()).is_err());
        let located = json!("disk full (src/agent_loop.rs:88:9)");
        assert!(matches(&carries, Some(&located), "", &mut Bindings::new()).is_err());
        assert!(matches(&carries, Some(&json!("disk fu")), "", &mut Bindings::new()).is_err());
        let absent = json!({"k": {"$absent_or": "run"}});
        assert!(matches(&absent, Some(&json!({})), "", &mut Bindings::new()).is_ok());
        assert!(matches(
            &absent,
            Some(&json!({"k": "run"})),
            "",
            &mut Bindings::new()
        )
        .is_ok());
        assert!(matches(
            &absent,
            Some(&json!({"k": "other"})),
            "",
            &mut Bindings::new()
        )
        .is_err());
    }

    #[test]
    fn a_bound_value_must_stay_the_same_wherever_it_travels() {
        let free = json!({"$bind": "skip:c1", "$match": {"$text": "skip-text"}});
        let (first, again, other) = (json!("not run"), json!("not run"), json!("not run!"));
        let mut b = Bindings::new();
        assert!(matches(&free, Some(&first), "", &mut b).is_ok());
        assert!(matches(&free, Some(&again), "", &mut b).is_ok());
        let e = matches(&free, Some(&other), "x", &mut b).unwrap_err();
        assert_eq!(e.path, "x");
    }

    #[test]
    fn extra_and_missing_fields_diverge_with_their_path() {
        let want = json!({"result": {"details": null, "isError": true}});
        let got = json!({"result": {"details": {}, "isError": true}});
        let e = matches(&want, Some(&got), "", &mut Bindings::new()).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.expected.as_str(), e.actual.as_str()),
            ("result.details", "null", "{}")
        );
        let got = json!({"result": {"details": null, "isError": true, "extra": 1}});
        assert_eq!(
            matches(&want, Some(&got), "", &mut Bindings::new())
                .unwrap_err()
                .path,
            "result.extra"
        );
        assert!(matches(&json!([1, 2]), Some(&json!([1])), "", &mut Bindings::new()).is_err());
        assert!(matches(&json!(1), Some(&json!(1.0)), "", &mut Bindings::new()).is_ok());
    }

    #[test]
    fn events_may_arrive_late_but_in_order_and_before_the_end() {
        let g = graph(vec![
            step(&[], json!({"kind": "request", "n": 1})),
            step(&[0], json!({"kind": "event", "event": {"type": "a"}})),
            step(&[1], json!({"kind": "request", "n": 2})),
            step(&[2], json!({"kind": "event", "event": {"type": "b"}})),
            step(&[3], json!({"kind": "result"})),
        ]);
        let (r1, r2) = (
            json!({"kind": "request", "n": 1}),
            json!({"kind": "request", "n": 2}),
        );
        let (a, b) = (
            json!({"kind": "event", "event": {"type": "a"}}),
            json!({"kind": "event", "event": {"type": "b"}}),
        );
        let end = json!({"kind": "result"});
        let t = |steps: &[&Value]| steps.iter().map(|s| (*s).clone()).collect::<Vec<_>>();
        assert!(compare(&g, &t(&[&r1, &a, &r2, &b, &end])).is_ok());
        // Late: `a` after the second request, still before `b` and the end.
        assert!(compare(&g, &t(&[&r1, &r2, &a, &b, &end])).is_ok());
        // Never early, never out of order, never after the end.
        assert!(compare(&g, &t(&[&a, &r1, &r2, &b, &end])).is_err());
        assert!(compare(&g, &t(&[&r1, &r2, &b, &a, &end])).is_err());
        assert!(compare(&g, &t(&[&r1, &r2, &b, &end, &a])).is_err());
    }

    #[test]
    fn a_timeline_pairs_steps_then_shows_the_divergence_and_what_was_left() {
        let g = graph(vec![
            step(&[], json!({"kind": "request", "n": 1})),
            step(&[0], json!({"kind": "request", "n": 2})),
            step(&[1], json!({"kind": "result", "reason": "stop"})),
        ]);
        let trace = [
            json!({"kind": "request", "n": 1}),
            json!({"kind": "result", "reason": "stop"}),
        ];
        let rows = timeline(&g, &trace);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[0].expected.as_deref(), Some("request #1"));
        assert!(rows[1].diverges);
        assert_eq!(rows[1].expected.as_deref(), Some("request #2"));
        assert_eq!(rows[1].actual.as_deref(), Some("return(stop)"));
        assert_eq!(
            (rows[2].expected.as_deref(), rows[2].actual.as_deref()),
            (Some("return(stop)"), None)
        );
    }

    #[test]
    fn the_furthest_alternative_is_reported() {
        let g = json!({"alternatives": [
            {"steps": [{"after": [], "match": {"kind": "x"}, "rule": "r"}]},
            {"steps": [{"after": [], "match": {"kind": "a"}, "rule": "r"}, {"after": [0], "match": {"kind": "b"}, "rule": "r"}]}
        ]});
        let d = compare(&g, &[json!({"kind": "a"}), json!({"kind": "c"})]).unwrap_err();
        assert_eq!(d.index, 1);
        assert!(compare(&g, &[json!({"kind": "x"})]).is_ok());
    }

    #[test]
    fn a_todo_names_the_lab_it_belongs_to() {
        let g = graph(vec![step(&[], json!({"kind": "request", "n": 1}))]);
        let panic =
            json!({"kind": "panic", "message": "not yet implemented: Lab 7.3: the other rows"});
        let text = judge(&g, std::slice::from_ref(&panic), Lang::En).unwrap();
        assert!(text.contains("Lab 7.3"), "{text}");
        assert!(text.contains("finish Lab 7.3 first"), "{text}");
        // The TypeScript skeleton's throws, and a todo carried on by a task's panic.
        for message in [
            "TODO(Lab 7.1): a plain-text stop: this run ends normally",
            "the event sink panicked: JoinError::Panic(Id(7), \"not yet implemented: Lab 7.1: x\")",
        ] {
            let panic = json!({"kind": "panic", "message": message});
            assert_eq!(lab_reached(&panic).as_deref(), Some("7.1"), "{message}");
        }
        let other = json!({"kind": "panic", "message": "Lab 7.1 is not where this came from"});
        assert_eq!(lab_reached(&other), None);
        // Graded, the test's own Lab is known: a test of a later Lab says which to finish first.
        let mut g = g;
        g["test"] = json!({"lab": "7.4", "group": {"zh": "并发工具", "en": "concurrent tools"}});
        let text = judge(&g, std::slice::from_ref(&panic), Lang::En).unwrap();
        assert!(
            text.contains("this test belongs to Lab 7.4 (concurrent tools)")
                && text.contains("finish Lab 7.3 first")
                && text.contains("the other rows"),
            "{text}"
        );
        let zh = judge(&g, std::slice::from_ref(&panic), Lang::Zh).unwrap();
        assert!(
            zh.contains("这个测试属于 Lab 7.4（并发工具）") && zh.contains("先完成 Lab 7.3"),
            "{zh}"
        );
        g["test"]["lab"] = json!("7.3");
        let text = judge(&g, &[panic], Lang::En).unwrap();
        assert!(
            text.contains("this is the part this Lab asks you to write"),
            "{text}"
        );
        let zh = judge(&g, &[json!({"kind": "hang"})], Lang::Zh).unwrap();
        assert!(zh.contains("你的循环没有返回"), "{zh}");
        assert!(!zh.contains("规则：") && !zh.contains("expected"), "{zh}");
        let en = judge(&g, &[json!({"kind": "timeout"})], Lang::En).unwrap();
        assert!(en.contains("your loop did not return"), "{en}");
        let g = graph(vec![step(&[], json!({"k": [1]}))]);
        let zh = judge(&g, &[json!({"k": [1, 2]})], Lang::Zh).unwrap();
        assert!(
            zh.contains("（没有这一项）") && !zh.contains("no such"),
            "{zh}"
        );
        // A step that came as expected and differs only inside leads with the difference, not with
        // its own label twice (which reads as right); a step of another kind still shows both labels.
        let g = graph(vec![step(
            &[],
            json!({"kind": "result", "reason": "stop", "messages": [1]}),
        )]);
        let zh = judge(
            &g,
            &[json!({"kind": "result", "reason": "stop", "messages": [1, 1]})],
            Lang::Zh,
        )
        .unwrap();
        assert!(
            zh.contains("  return(stop) 的 messages[1]：应为 （没有这一项），实际 1")
                && !zh.contains("应为：")
                && !zh.contains("实际："),
            "{zh}"
        );
        let en = judge(
            &g,
            &[json!({"kind": "result", "reason": "stop", "messages": [1, 1]})],
            Lang::En,
        )
        .unwrap();
        assert!(
            en.contains("  in return(stop), at messages[1]: expected (no such item), got 1")
                && !en.contains("happened:"),
            "{en}"
        );
        let en = judge(&g, &[json!({"kind": "panic", "message": "x"})], Lang::En).unwrap();
        assert!(
            en.contains("  expected: return(stop)") && en.contains("  happened: crash: x"),
            "{en}"
        );
    }
}
