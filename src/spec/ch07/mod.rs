//! Chapter 07's executable specification: its scenario templates drawn into instances, and the trace
//! each instance must produce. A new chapter adds a module like this one and its data, nothing else.

mod cover;
mod draw;
mod expect;
pub mod freedoms;
mod scenario;
#[cfg(test)]
mod space;
mod wire;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{object, Case, Rng};

const RULES: &str = include_str!("../../../chapters/07-agent-loop/rules.toml");
const CHAPTER: &str = include_str!("../../../chapters/07-agent-loop/chapter.toml");

/// Every scenario of the chapter drawn with `seed`, in the order of the file. Each test holds the
/// instances of its covering rows and one drawn freely, in an order the seed draws (see `cover.rs`).
pub fn cases(seed: u64) -> Vec<Case> {
    let root = Rng::new(seed);
    let rules = rules();
    scenario::all()
        .into_iter()
        .map(|s| {
            let mut rng = root.fork(&s.name);
            let mut rows = cover::rows(&cover::dimensions(&s));
            // At least one instance drawn freely, and three instances in all.
            rows.push(cover::Row::new());
            while rows.len() < 3 {
                rows.push(cover::Row::new());
            }
            rng.shuffle(&mut rows);
            let mut decks = draw::Decks::default();
            let instances: Vec<Value> = rows
                .iter()
                .map(|row| draw::draw(&s, row, &mut rng, &mut decks))
                .collect();
            let expected = expected(&instances, &rows, &rules);
            Case {
                name: s.name,
                group: s.group,
                about: s.about,
                instance: object([("runs", Value::Array(instances))]),
                expected,
            }
        })
        .collect()
}

/// The expected traces of a test's instances: each one's alternatives and what its row covers, and the
/// rules their steps name.
fn expected(instances: &[Value], rows: &[cover::Row], rules: &Map<String, Value>) -> Value {
    let mut used = Map::new();
    let mut runs = Vec::new();
    for (instance, row) in instances.iter().zip(rows) {
        let alternatives = expect::alternatives(instance);
        for step in alternatives.iter().flatten() {
            let mut names = vec![step["rule"].as_str().unwrap_or_default().to_string()];
            if let Some(paths) = step["path_rules"].as_object() {
                names.extend(paths.values().filter_map(Value::as_str).map(str::to_string));
            }
            for name in names {
                if let Some(rule) = rules.get(&name) {
                    used.insert(name, rule.clone());
                }
            }
        }
        let alternatives: Vec<Value> = alternatives
            .into_iter()
            .map(|steps| object([("steps", Value::Array(steps))]))
            .collect();
        runs.push(object([
            ("alternatives", Value::Array(alternatives)),
            ("about", cover::about(row)),
        ]));
    }
    object([("runs", Value::Array(runs)), ("rules", Value::Object(used))])
}

#[derive(Deserialize)]
struct ChapterGroups {
    group: Vec<GroupName>,
}

#[derive(Deserialize)]
struct GroupName {
    lab: String,
    name: Value,
}

/// The rules of `rules.toml`, each with the name of its Lab's group.
fn rules() -> Map<String, Value> {
    let table: Map<String, Value> = toml::from_str(RULES).expect("rules.toml parses");
    let groups: ChapterGroups = toml::from_str(CHAPTER).expect("chapter.toml parses");
    table
        .into_iter()
        .map(|(name, mut rule)| {
            let lab = rule["lab"].as_str().unwrap_or_default().to_string();
            if let Some(g) = groups.group.iter().find(|g| g.lab == lab) {
                rule["group"] = g.name.clone();
            }
            (name, rule)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::sample;
    use pi_course_judge::compare::{compare, Lang};
    use serde_json::json;

    #[test]
    fn every_expected_trace_accepts_its_own_sample_and_rejects_a_step_dropped() {
        for seed in [1, 2, 3, 99, 12345] {
            for case in cases(seed) {
                let trace = sample(&case.expected);
                assert!(trace.len() >= 2, "{}: {} steps", case.name, trace.len());
                if let Err(d) = compare(&case.expected, &trace) {
                    panic!(
                        "{} (seed {seed}): {}",
                        case.name,
                        pi_course_judge::compare::message(&case.expected, &trace, &d, Lang::En)
                    );
                }
                for drop in [0, trace.len() / 2, trace.len() - 1] {
                    let mut short = trace.clone();
                    short.remove(drop);
                    assert!(
                        compare(&case.expected, &short).is_err(),
                        "{}: step {drop} dropped",
                        case.name
                    );
                }
            }
        }
    }

    #[test]
    fn one_seed_draws_the_same_cases_and_another_seed_different_ones() {
        let (a, b, c) = (cases(5), cases(5), cases(6));
        assert_eq!(a.len(), b.len());
        for ((x, y), z) in a.iter().zip(&b).zip(&c) {
            assert_eq!(x.instance, y.instance, "{}", x.name);
            assert_eq!(x.expected, y.expected, "{}", x.name);
            assert_ne!(x.instance, z.instance, "{}", x.name);
        }
    }

    /// Every string of `value`, in a fixed order (objects by key).
    fn strings(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
            Value::Object(o) => o.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }

    fn relabel(value: &Value, map: &std::collections::HashMap<String, String>) -> Value {
        match value {
            Value::String(s) => Value::String(map.get(s).cloned().unwrap_or_else(|| s.clone())),
            Value::Array(a) => Value::Array(a.iter().map(|v| relabel(v, map)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), relabel(v, map)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The forger a red team built: it takes the practice directory's fixed instances and their
    /// expected traces, and puts this grade's ids, names and texts in place of the fixed ones, string
    /// by string in the order they appear. It must pass no test of any grade: a grade's instances differ
    /// from the fixed ones in structure, not only in labels.
    #[test]
    fn a_fixed_trace_relabelled_with_fresh_ids_names_and_texts_passes_no_test() {
        let hand = cases(crate::spec::HAND_SEED);
        let fresh_base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(11, |d| d.as_nanos() as u64);
        let mut passed = Vec::new();
        for k in 0..20u64 {
            let seed = fresh_base.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            for (fixed, fresh) in hand.iter().zip(cases(seed)) {
                let (mut old, mut new) = (Vec::new(), Vec::new());
                strings(&fixed.instance, &mut old);
                strings(&fresh.instance, &mut new);
                let mut map = std::collections::HashMap::new();
                for (o, n) in old.into_iter().zip(new) {
                    map.entry(o).or_insert(n);
                }
                let forged: Vec<Value> = sample(&fixed.expected)
                    .iter()
                    .map(|step| relabel(step, &map))
                    .collect();
                if compare(&fresh.expected, &forged).is_ok() {
                    passed.push(format!("{} (seed {seed})", fresh.name));
                }
            }
        }
        assert!(
            passed.is_empty(),
            "relabelled fixed traces passed: {passed:?}"
        );
    }

    /// What a run is handed before it asks anything (its system prompt and the caller's messages) is
    /// drawn afresh in every instance, boundary values and all: the message the run answers always holds
    /// text of its own, so no instance's first request is the same in two grades, even where the system
    /// prompt is empty and an earlier message has no content.
    #[test]
    fn no_instance_opens_the_same_in_two_grades() {
        let opening = |instance: &Value| json!({ "system_prompt": instance["system_prompt"], "caller": instance["caller"] });
        let (a, b) = (cases(5), cases(6));
        let mut empty_prompts = 0;
        for (x, y) in a.iter().zip(&b) {
            let runs = |c: &Case| c.instance["runs"].as_array().unwrap().clone();
            for (i, run) in runs(x).iter().enumerate() {
                let last = run["caller"].as_array().unwrap().last().unwrap();
                let texts = last["content"].as_array().unwrap();
                assert!(!texts.is_empty(), "{} run {i}: {last}", x.name);
                empty_prompts += usize::from(run["system_prompt"] == "");
                for other in runs(y) {
                    assert_ne!(opening(run), opening(&other), "{} run {i}", x.name);
                }
            }
        }
        assert!(empty_prompts > 0, "no instance drew an empty system prompt");
    }

    #[test]
    fn every_rule_a_step_names_exists() {
        let rules = rules();
        for case in cases(3) {
            let runs = case.expected["runs"].as_array().unwrap();
            for alt in runs
                .iter()
                .flat_map(|r| r["alternatives"].as_array().unwrap())
            {
                for step in alt["steps"].as_array().unwrap() {
                    let rule = step["rule"].as_str().unwrap();
                    assert!(rules.contains_key(rule), "{}: rule {rule}", case.name);
                    assert!(rules[rule]["group"].is_object(), "{rule} has a group name");
                }
            }
        }
    }
}
