//! The chapters' executable specifications (docs/JUDGE.md): from a seed, fresh instances of every
//! scenario and the trace each must produce. Only the grader has this code; a practice directory gets
//! the instances of one fixed seed with their expected traces already computed.

pub mod ch07;
pub mod ch08;
mod rng;

use serde_json::Value;

pub use rng::Rng;

/// A JSON object of `fields`, moved in. `json!` serialises each value it is given by reference, a deep
/// copy; a specification builds megabytes of expected steps out of values it already owns, so its large
/// parts go in through here.
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// One test of one grade: a scenario drawn into an instance, with its expected trace.
#[derive(Debug, Clone)]
pub struct Case {
    /// The scenario's name (snake case); each track names its test from it and the group.
    pub name: String,
    /// The group's slug.
    pub group: String,
    /// What the scenario checks, in a line.
    pub about: String,
    /// What the driver is given (docs/JUDGE.md, "The instance").
    pub instance: Value,
    /// The expected graph, with the rules it names.
    pub expected: Value,
}

/// A place where a chapter leaves a choice: the expected trace holds a node that accepts every choice
/// (docs/JUDGE.md). Each quotes the line of the chapter that grants it; a freedom not on its chapter's
/// list does not exist, and the guides list the same ones.
pub struct Freedom {
    /// The name the expected trace's nodes carry (`"$freedom"`).
    pub name: &'static str,
    /// What is free.
    pub what: &'static str,
    /// The chapter's own words that leave it free.
    pub quote: &'static str,
    /// The same words in English, for learners who read the course in English.
    pub quote_en: &'static str,
}

/// One chapter's executable specification, as the grader reaches it.
pub struct Spec {
    /// The chapter's id, as its `chapter.toml` has it.
    pub chapter: &'static str,
    /// Every scenario of the chapter drawn with a seed, with the trace each must produce.
    pub cases: fn(u64) -> Vec<Case>,
    /// The chapter's freedoms.
    pub freedoms: &'static [Freedom],
}

/// Every chapter's specification. A chapter adds its module and a line here; nothing else in the
/// grader names a chapter.
pub const SPECS: &[Spec] = &[Spec {
    chapter: "07",
    cases: ch07::cases,
    freedoms: ch07::freedoms::FREEDOMS,
}];

/// The specification of `chapter`; `None` for a chapter without one.
pub fn spec(chapter: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.chapter == chapter)
}

/// The seed of the fixed instances every practice directory holds for hand runs.
pub const HAND_SEED: u64 = 7;

/// What the scenario behind test `test` (a full test name of either track) checks, in a line.
pub fn about(chapter: &str, test: &str) -> Option<String> {
    let scenario = test.rsplit(['›', ':']).next()?.trim().replace(' ', "_");
    cases(chapter, 0)?
        .into_iter()
        .find(|c| c.name == scenario)
        .map(|c| c.about)
}

/// The freedoms an expected trace grants, for `explain`: each name, what it leaves free, and the
/// chapter's words that grant it (in the chapter's Chinese, with an English rendering for `quoted_en`).
/// The specification knows no language of the tool's: tests/cli/judge/agreement.rs compiles it alone.
pub fn freedoms_in(chapter: &str, expected: &Value, english: bool) -> Vec<(&'static str, String)> {
    let Some(spec) = spec(chapter) else {
        return Vec::new();
    };
    let text = expected.to_string();
    spec.freedoms
        .iter()
        .filter(|f| text.contains(&format!("\"{}\"", f.name)))
        .map(|f| match english {
            false => (f.name, format!("{} (「{}」)", f.what, f.quote)),
            true => (
                f.name,
                format!("{} (the chapter: \"{}\")", f.what, f.quote_en),
            ),
        })
        .collect()
}

/// The cases of `chapter` drawn with `seed`; `None` for a chapter without a specification.
pub fn cases(chapter: &str, seed: u64) -> Option<Vec<Case>> {
    spec(chapter).map(|s| (s.cases)(seed))
}

/// The fixed instances a practice directory holds for hand runs, with their expected traces: the
/// chapter's `tests/ch07/expected.json` (Rust) and `test/07-expected.json` (TypeScript). Both are
/// files of this repository, kept equal to this by a test (`PI_COURSE_BLESS=1` rewrites them).
#[cfg(test)]
pub fn fixture(chapter: &str) -> Option<String> {
    let tests: Vec<Value> = cases(chapter, HAND_SEED)?
        .into_iter()
        .map(|c| {
            serde_json::json!({
                "name": c.name, "group": c.group, "about": c.about,
                "instance": c.instance, "expected": c.expected,
            })
        })
        .collect();
    let file = serde_json::json!({ "version": 1, "seed": HAND_SEED, "tests": tests });
    Some(format!("{file}\n"))
}

/// A trace an expected graph allows, for tests of the comparison: its first alternative's steps in
/// order, each freedom filled with a value it accepts; for a test of several instances, each instance's
/// sample after its mark, as a harness writes them. (Public for the tests that compare the two
/// comparisons, `tests/cli/judge/agreement.rs`.)
pub fn sample(expected: &Value) -> Vec<Value> {
    if let Some(runs) = expected["runs"].as_array() {
        let mut trace = Vec::new();
        for (index, run) in runs.iter().enumerate() {
            trace.push(serde_json::json!({ "kind": "instance", "index": index }));
            trace.extend(sample(run));
        }
        return trace;
    }
    let steps = expected["alternatives"][0]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    steps.iter().map(|s| fill(&s["match"])).collect()
}

fn fill(pattern: &Value) -> Value {
    use serde_json::json;
    match pattern {
        Value::Object(o) if o.contains_key("$text") => json!("not run"),
        Value::Object(o) if o.contains_key("$carries") => {
            json!(format!(
                "Tool failed: {}",
                o["$carries"].as_str().unwrap_or_default()
            ))
        }
        Value::Object(o) if o.contains_key("$one_of") => fill(&o["$one_of"][0]),
        Value::Object(o) if o.contains_key("$bind") => fill(&o["$match"]),
        Value::Object(o) if o.contains_key("$any") => Value::Null,
        Value::Object(o) if o.contains_key("$absent_or") => fill(&o["$absent_or"]),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), fill(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(fill).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    /// Where each track of chapter 07 keeps its hand-run fixture.
    const FIXTURES: &[&str] = &[
        "chapters/07-agent-loop/files/tests/ch07/expected.json",
        "chapters/07-agent-loop/typescript/files/test/07-expected.json",
    ];

    #[test]
    fn the_hand_run_fixtures_are_the_specifications_own() {
        let want = super::fixture("07").expect("chapter 07 has a specification");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for path in FIXTURES {
            let path = root.join(path);
            if std::env::var_os("PI_COURSE_BLESS").is_some() {
                std::fs::write(&path, &want).expect("write the fixture");
            }
            let have = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                have == want,
                "{} is not what the specification draws with the hand seed: run \
                 `PI_COURSE_BLESS=1 cargo test --lib fixtures` and commit it",
                path.display()
            );
        }
    }
}
