//! The chapter's input space, declared (`chapters/07-agent-loop/space.toml`), and what an instance
//! reaches of it. The table is data; this file reads each dimension's value off an instance, so a test
//! can show that every grade reaches every value in the group that owns its rule.

use serde::Deserialize;
use serde_json::Value;

const SPACE: &str = include_str!("../../../chapters/07-agent-loop/space.toml");

/// The limit a run without `max_steps` gets (`DEFAULT_MAX_STEPS` of the chapter's surface).
const DEFAULT_MAX_STEPS: u64 = 32;

#[derive(Debug, Deserialize)]
pub struct Space {
    pub dimension: Vec<Dimension>,
    #[serde(default)]
    pub pair: Vec<Pair>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    pub name: String,
    pub what: String,
    pub chapter: String,
    pub values: Vec<Owned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    pub dimensions: [String; 2],
    pub why: String,
    pub values: Vec<Owned<[String; 2]>>,
}

/// A value and the group whose rule it tests.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Owned<V> {
    pub value: V,
    pub group: String,
}

pub fn space() -> Space {
    toml::from_str(SPACE).expect("chapters/07-agent-loop/space.toml parses")
}

/// One fact about an instance: a dimension (or `a+b` for a pair) and its value (`x+y` for a pair).
pub type Fact = (String, String);

fn fact(dimension: &str, value: &str) -> Fact {
    (dimension.to_string(), value.to_string())
}

fn calls_of(message: &Value) -> Vec<&Value> {
    message["content"]
        .as_array()
        .map(|c| c.iter().filter(|b| b["type"] == "toolCall").collect())
        .unwrap_or_default()
}

fn reply_kind(message: &Value) -> String {
    let calls = calls_of(message).len();
    let reason = message["stopReason"].as_str().unwrap_or_default();
    match (reason, calls) {
        ("stop", 0) => "text".into(),
        ("stop", _) => "stop_with_calls".into(),
        ("toolUse", 0) => "tool_use_no_calls".into(),
        ("toolUse", _) => "tool_use".into(),
        (other, 0) => format!("{other}_without_calls"),
        (other, _) => format!("{other}_with_calls"),
    }
}

/// Every behaviour the instance gives its tools, with whether the injected executor runs it.
fn behaviours(instance: &Value) -> Vec<(&Value, bool)> {
    let mut all = Vec::new();
    for (key, injected) in [("calls", true), ("tool_runs", false)] {
        if let Some(map) = instance[key].as_object() {
            for list in map.values() {
                for b in list.as_array().into_iter().flatten() {
                    all.push((b, injected));
                }
            }
        }
    }
    all
}

fn texts<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(o) => {
            if o.get("type").and_then(Value::as_str) == Some("text") {
                if let Some(t) = o.get("text").and_then(Value::as_str) {
                    out.push(t);
                }
            }
            o.values().for_each(|v| texts(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| texts(v, out)),
        _ => {}
    }
}

/// What `instance` reaches of the input space.
pub fn facts(instance: &Value) -> Vec<Fact> {
    let mut facts = Vec::new();
    let max = instance["max_steps"].as_u64();
    facts.push(fact(
        "max_steps",
        match max {
            None => "default",
            Some(0) => "zero",
            Some(1) => "one",
            Some(_) => "several",
        },
    ));
    let max = max.unwrap_or(DEFAULT_MAX_STEPS);
    let turns = instance["turns"].as_array().cloned().unwrap_or_default();

    // The turns the loop reaches: from the first request until a reply that ends the run, an abort or
    // the limit.
    let pre_abort = instance["pre_abort"] == true;
    let mut previous: Option<&Value> = None;
    let mut seen_ids: Vec<String> = Vec::new();
    for (k, turn) in turns.iter().enumerate() {
        if pre_abort || k as u64 >= max {
            break;
        }
        let message = &turn["message"];
        let kind = reply_kind(message);
        let position = match (k as u64 + 1 == max, k) {
            (true, _) => "last_allowed",
            (false, 0) => "first",
            (false, _) => "later",
        };
        facts.push(fact("reply", &kind));
        facts.push(fact("position", position));
        facts.push(fact("reply+position", &format!("{kind}+{position}")));
        let calls = calls_of(message);
        if previous == Some(message) {
            facts.push(fact("repeated_reply", "equal_to_the_previous_one"));
        }
        let ids: Vec<String> = calls.iter().map(|c| c["id"].to_string()).collect();
        if ids.iter().any(|id| seen_ids.contains(id)) {
            facts.push(fact("ids", "repeated_across_turns"));
        }
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        if unique.len() < ids.len() {
            facts.push(fact("ids", "repeated_within_a_reply"));
        }
        seen_ids.extend(unique);
        let mut names: Vec<&Value> = calls.iter().map(|c| &c["name"]).collect();
        names.sort_by_key(|n| n.to_string());
        let shared_name = names.windows(2).any(|w| w[0] == w[1]);
        if kind == "tool_use" {
            let batch = match calls.len() {
                1 => "one",
                2 => "two",
                _ => "three_or_more",
            };
            facts.push(fact("batch", batch));
            if shared_name {
                let by = match instance["executor"] == true {
                    true => "executed_by_the_injected_executor",
                    false => "executed_by_the_built_in_executor",
                };
                facts.push(fact("same_name", by));
            }
            // A failure beside how many siblings.
            for call in &calls {
                let id = call["id"].as_str().unwrap_or_default();
                let name = call["name"].as_str().unwrap_or_default();
                let runs = instance["calls"][id]
                    .as_array()
                    .or(instance["tool_runs"][name].as_array());
                for b in runs.into_iter().flatten() {
                    if let Some(kind) = b["outcome"].as_object().and_then(|o| o.keys().next()) {
                        facts.push(fact(
                            "batch+outcome",
                            &format!("{batch}+{}", outcome(b, kind)),
                        ));
                    }
                }
            }
        } else if shared_name && !calls.is_empty() {
            facts.push(fact("same_name", "skipped"));
        }
        // A call's own fields at their edges, where the run executes it or skips it.
        let fate = if kind == "tool_use" {
            "executed"
        } else {
            "skipped"
        };
        for call in &calls {
            if call["id"] == "" {
                facts.push(fact("call", &format!("empty_id_{fate}")));
            }
            if call["name"] == "" {
                facts.push(fact("call", &format!("empty_name_{fate}")));
            }
            match &call["arguments"] {
                Value::Null => facts.push(fact("call", &format!("null_arguments_{fate}"))),
                Value::String(_) => facts.push(fact("call", &format!("cut_off_arguments_{fate}"))),
                _ => {}
            }
        }
        match (message.get("errorMessage"), kind.as_str()) {
            (Some(e), _) if message["stopReason"] == "error" => facts.push(fact(
                "error_message",
                if e == "" {
                    "empty_on_an_error_reply"
                } else {
                    "on_an_error_reply"
                },
            )),
            (Some(_), "text") => facts.push(fact("error_message", "on_a_stop_reply")),
            _ => {}
        }
        if turn["abort"] == true {
            facts.push(fact("signal", "aborted_while_streaming"));
        }
        if turn["paced"] == true {
            facts.push(fact("stream", "paced"));
        }
        if turn["edit_context"] == true {
            facts.push(fact("caller", "edits_its_context_during_the_run"));
        }
        let events = turn["events"].as_array().cloned().unwrap_or_default();
        let deltas: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "text_delta")
            .map(|e| &e["delta"])
            .collect();
        if deltas.windows(2).any(|w| w[0] == w[1] && w[0] != "") {
            facts.push(fact("stream", "a_delta_said_twice"));
        }
        let last_partial = events.iter().rev().find_map(|e| e.get("partial"));
        if last_partial.is_some_and(|p| p["content"] != message["content"]) {
            facts.push(fact("stream", "last_partial_differs"));
        }
        let content = message["content"].as_array().cloned().unwrap_or_default();
        if calls.is_empty()
            && content
                .iter()
                .any(|b| b["type"] == "text" && b["text"] == "")
        {
            facts.push(fact("text", "empty_block_without_calls"));
        }
        if !calls.is_empty() {
            let first_call = content.iter().position(|b| b["type"] == "toolCall");
            let last_call = content.iter().rposition(|b| b["type"] == "toolCall");
            for (i, block) in content.iter().enumerate() {
                if block["type"] != "text" {
                    continue;
                }
                if block["text"] == "" {
                    facts.push(fact("text", "empty_block_beside_calls"));
                }
                if first_call.is_some_and(|f| i < f) && block["text"] != "" {
                    facts.push(fact("text", "before_the_calls"));
                }
                if last_call.is_some_and(|l| i > l) {
                    facts.push(fact("text", "after_the_calls"));
                }
            }
        }
        let done = kind != "tool_use" || turn["abort"] == true;
        previous = Some(message);
        if done {
            break;
        }
    }

    let mut all_texts = Vec::new();
    texts(&instance["caller"], &mut all_texts);
    for turn in &turns {
        texts(&turn["message"], &mut all_texts);
    }
    for t in all_texts {
        if !t.is_ascii() {
            facts.push(fact("text", "multi_byte"));
        }
        if t.contains('\n') {
            facts.push(fact("text", "multi_line"));
        }
        if t.starts_with(' ') || t.ends_with(' ') {
            facts.push(fact("text", "edge_whitespace"));
        }
    }

    facts.push(fact(
        "executor",
        if instance["executor"] == true {
            "injected"
        } else {
            "built_in"
        },
    ));
    let aborts_a_batch = instance["plan"]
        .as_array()
        .is_some_and(|plan| plan.iter().any(|a| a.get("abort").is_some()));
    for (b, injected) in behaviours(instance) {
        let progress = match b["progress"].as_array().map_or(0, Vec::len) {
            0 => "none",
            1 => "one",
            _ => "several",
        };
        facts.push(fact("progress", progress));
        for report in b["progress"].as_array().into_iter().flatten() {
            match report.as_array().map(Vec::as_slice) {
                Some([]) => facts.push(fact("progress", "empty_report")),
                Some([only]) if only["text"] == "" => {
                    facts.push(fact("progress", "report_of_an_empty_text"))
                }
                _ => {}
            }
        }
        let executor = if injected { "injected" } else { "built_in" };
        facts.push(fact("executor+progress", &format!("{executor}+{progress}")));
        if b["cancel_run"] == true {
            facts.push(fact("signal", "aborted_by_a_tool"));
        }
        let Some(kind) = b["outcome"].as_object().and_then(|o| o.keys().next()) else {
            continue;
        };
        facts.push(fact("outcome", outcome(b, kind)));
        // A gated call of an instance whose plan aborts is in the batch the abort interrupts.
        if b["gate"] == true && aborts_a_batch {
            facts.push(fact(
                "signal+outcome",
                &format!("aborted_during_a_batch+{}", outcome(b, kind)),
            ));
        }
        let message = match kind.as_str() {
            "error" => b["outcome"]["error"]["message"].as_str(),
            "panic" | "throw_value" => b["outcome"][kind.as_str()].as_str(),
            _ => None,
        };
        if let Some(message) = message {
            let shape = match message {
                "" => "empty",
                m if m.starts_with(' ') && m.ends_with('\n') => "edge_whitespace",
                m if m.contains('\n') => "several_lines",
                _ => "one_line",
            };
            facts.push(fact("failure_message", shape));
        }
        if kind == "ok" {
            let ok = &b["outcome"]["ok"];
            let details = &ok["details"];
            facts.push(fact(
                "details",
                match details {
                    _ if ok.get("details").is_none() => "absent",
                    Value::Null => "null",
                    Value::Object(o) if o.is_empty() => "empty_object",
                    Value::Object(_) => "object",
                    Value::Array(_) => "array",
                    Value::Number(_) => "number",
                    Value::String(_) => "string",
                    Value::Bool(_) => "bool",
                },
            ));
        }
    }

    // Gated batches: the order the plan releases them in, against the order of their calls.
    let plan = instance["plan"].as_array().cloned().unwrap_or_default();
    let mut gated: Vec<String> = Vec::new();
    let mut released: Vec<String> = Vec::new();
    let close = |gated: &mut Vec<String>, released: &mut Vec<String>, facts: &mut Vec<Fact>| {
        if gated.len() >= 2 && released.len() == gated.len() {
            let reversed: Vec<String> = gated.iter().rev().cloned().collect();
            if *released == reversed {
                facts.push(fact("release", "reversed"));
            } else if released != gated {
                facts.push(fact("release", "shuffled"));
            }
        }
        gated.clear();
        released.clear();
    };
    for action in &plan {
        if let Some(refs) = action["wait"]["at_gate"].as_array() {
            close(&mut gated, &mut released, &mut facts);
            gated = refs.iter().map(|r| r.to_string()).collect();
        }
        if let Some(r) = action.get("release") {
            released.push(r.to_string());
        }
        if action.get("abort").is_some() {
            facts.push(fact("signal", "aborted_during_a_batch"));
        }
    }
    close(&mut gated, &mut released, &mut facts);

    if pre_abort {
        facts.push(fact("signal", "aborted_before_the_run"));
    }
    if instance["signal"] == false {
        facts.push(fact("signal", "left_out"));
    }
    if instance["edit_at_start"] == true {
        facts.push(fact(
            "caller",
            "edits_its_messages_right_after_the_run_started",
        ));
    }
    if instance["on_event"] == false {
        facts.push(fact("caller", "no_event_sink"));
    }
    if instance["system_prompt"] == "" {
        facts.push(fact("caller", "empty_system_prompt"));
    }
    let caller = instance["caller"].as_array().cloned().unwrap_or_default();
    if caller.iter().any(|m| m["content"] == Value::Array(vec![])) {
        facts.push(fact("caller", "a_message_without_content"));
    }
    let history = instance["caller"].as_array().map_or(0, Vec::len);
    facts.push(fact(
        "caller",
        if history == 1 {
            "history_of_one"
        } else {
            "history_of_several"
        },
    ));
    let registry = instance["tools"].as_array().map_or(0, Vec::len);
    let used: usize = turns
        .iter()
        .map(|t| calls_of(&t["message"]).len())
        .sum::<usize>()
        .min(registry);
    if registry == 0 {
        facts.push(fact("caller", "no_registry_tools"));
    } else if registry >= 2 && registry > used {
        facts.push(fact("caller", "several_registry_tools"));
    }
    facts.sort();
    facts.dedup();
    facts
}

/// The table as docs/JUDGE.md prints it: a row per dimension, then a row per pair.
pub fn markdown(space: &Space) -> String {
    let mut out =
        String::from("| dimension | what | values (group) | the chapter |\n|---|---|---|---|\n");
    for d in &space.dimension {
        let values: Vec<String> = d
            .values
            .iter()
            .map(|v| format!("`{}` ({})", v.value, v.group))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | 「{}」 |\n",
            d.name,
            d.what,
            values.join(", "),
            d.chapter
        ));
    }
    out.push_str("\n| pair | why | combinations (group) |\n|---|---|---|\n");
    for p in &space.pair {
        let values: Vec<String> = p
            .values
            .iter()
            .map(|v| format!("`{}` × `{}` ({})", v.value[0], v.value[1], v.group))
            .collect();
        out.push_str(&format!(
            "| `{}` × `{}` | {} | {} |\n",
            p.dimensions[0],
            p.dimensions[1],
            p.why,
            values.join(", ")
        ));
    }
    out
}

/// The name of a behaviour's outcome in the table: a panic whose payload is not text is `panic_value`.
fn outcome<'a>(b: &Value, kind: &'a str) -> &'a str {
    match (kind, &b["outcome"]["ok"]["isError"]) {
        ("ok", Value::Bool(true)) => "ok_error_result",
        (kind, _) => kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ch07::cases;
    use std::collections::BTreeSet;

    /// A seed drawn afresh each run (printed, so a failure replays), and two fixed ones.
    fn seeds() -> Vec<u64> {
        let fresh = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        vec![fresh, 0, u64::MAX]
    }

    fn reached(seed: u64) -> BTreeSet<(String, String, String)> {
        let mut reached = BTreeSet::new();
        for case in cases(seed) {
            for instance in case.instance["runs"].as_array().expect("a test holds runs") {
                for (dimension, value) in facts(instance) {
                    reached.insert((case.group.clone(), dimension, value));
                }
            }
        }
        reached
    }

    #[test]
    fn every_grade_reaches_every_value_and_every_pair_in_the_group_that_owns_it() {
        let space = space();
        for seed in seeds() {
            let reached = reached(seed);
            let mut missing = Vec::new();
            for d in &space.dimension {
                for v in &d.values {
                    let want = (v.group.clone(), d.name.clone(), v.value.clone());
                    if !reached.contains(&want) {
                        missing.push(format!("{} = {} in {}", d.name, v.value, v.group));
                    }
                }
            }
            for p in &space.pair {
                let name = format!("{}+{}", p.dimensions[0], p.dimensions[1]);
                for v in &p.values {
                    let value = format!("{}+{}", v.value[0], v.value[1]);
                    if !reached.contains(&(v.group.clone(), name.clone(), value.clone())) {
                        missing.push(format!("{name} = {value} in {}", v.group));
                    }
                }
            }
            assert!(
                missing.is_empty(),
                "seed {seed}: no instance reaches\n  {}",
                missing.join("\n  ")
            );
        }
    }

    #[test]
    fn the_judge_doc_prints_the_table() {
        const BEGIN: &str = "<!-- the input space: begin (src/spec/ch07/space.rs) -->\n";
        const END: &str = "<!-- the input space: end -->";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/JUDGE.md");
        let doc = std::fs::read_to_string(&path).expect("docs/JUDGE.md");
        let table = markdown(&space());
        let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("docs/JUDGE.md has no markers for the input space");
        };
        let want = format!("{}{BEGIN}{table}{}", &doc[..b], &doc[e..]);
        if std::env::var_os("PI_COURSE_BLESS").is_some() {
            std::fs::write(&path, &want).expect("write docs/JUDGE.md");
            return;
        }
        assert!(
            doc == want,
            "docs/JUDGE.md does not print chapters/07-agent-loop/space.toml: run \
             `PI_COURSE_BLESS=1 cargo test --lib space` and commit it"
        );
    }

    #[test]
    fn every_dimension_quotes_the_chapter_and_names_known_groups() {
        let chapter = include_str!("../../../chapters/07-agent-loop/CHAPTER.zh.md");
        let squash = |s: &str| s.split_whitespace().collect::<String>();
        let text = squash(chapter);
        let space = space();
        let groups: BTreeSet<String> = cases(1).into_iter().map(|c| c.group).collect();
        for d in &space.dimension {
            assert!(
                text.contains(&squash(&d.chapter)),
                "{}: the chapter does not say {:?}",
                d.name,
                d.chapter
            );
            for v in &d.values {
                assert!(groups.contains(&v.group), "{}: group {}", d.name, v.group);
            }
        }
        for p in &space.pair {
            for name in &p.dimensions {
                assert!(
                    space.dimension.iter().any(|d| &d.name == name),
                    "pair names {name}"
                );
            }
        }
    }
}
