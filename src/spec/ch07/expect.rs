//! Chapter 07's executable specification: the trace an instance must produce, computed from the
//! chapter's rules alone (docs/JUDGE.md). It reads like the chapter: check the boundaries, request, forward
//! the events, append the final message once, then one row of the decision table; a batch starts every
//! call at once, emits each tool_end as its call completes, and appends the results in call order.
//!
//! The result is a graph: each step lists the steps it must come after, so the steps of concurrent
//! calls may interleave and nothing else may. Where the chapter leaves a choice, the step holds a
//! freedom node (see `freedoms.rs`); everything else must be equal.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Value};

use super::wire;
use crate::spec::object;

/// The default limit of model requests (the chapter's DEFAULT_MAX_STEPS).
pub const DEFAULT_MAX_STEPS: u64 = 32;
/// What the caller writes into its context when a turn has `edit_context` (docs/JUDGE.md).
pub const EDIT: &str = "edited by the caller";
/// The length skip's text, the chapter's JSON example word for word.
pub const LENGTH_TEXT: &str =
    "Tool call was not executed because the model response was truncated.";

/// The expected graph of `instance`, once per free path the run may take (who answers repeated ids).
pub fn alternatives(instance: &Value) -> Vec<Vec<Value>> {
    let mut found: Vec<Vec<Value>> = Vec::new();
    // Who answers a repeated id matters only to a message that repeats one: every other instance has
    // one path, and simulating it three times would only find it three times.
    let repeats = instance["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|turn| repeats_an_id(&wire::calls_of(&turn["message"])));
    let siblings: &[Sibling] = match repeats {
        true => &[Sibling::Skipped, Sibling::Executed, Sibling::Refused],
        false => &[Sibling::Skipped],
    };
    for &sibling in siblings {
        let mut sim = Sim::new(instance);
        sim.sibling = sibling;
        sim.run();
        if !found.contains(&sim.graph.steps) {
            found.push(sim.graph.steps);
        }
    }
    found
}

#[derive(Clone)]
struct Graph {
    steps: Vec<Value>,
    /// The steps the next step in sequence comes after.
    last: Vec<usize>,
}

impl Graph {
    fn add(&mut self, after: &[usize], pattern: Value, rule: &str) -> usize {
        self.add_with(after, pattern, rule, json!({}))
    }

    fn add_with(
        &mut self,
        after: &[usize],
        pattern: Value,
        rule: &str,
        path_rules: Value,
    ) -> usize {
        let mut step = object([
            ("after", json!(after)),
            ("match", pattern),
            ("rule", json!(rule)),
        ]);
        if path_rules.as_object().is_some_and(|o| !o.is_empty()) {
            step["path_rules"] = path_rules;
        }
        self.steps.push(step);
        self.steps.len() - 1
    }

    fn then(&mut self, pattern: Value, rule: &str) -> usize {
        self.then_with(pattern, rule, json!({}))
    }

    fn then_with(&mut self, pattern: Value, rule: &str, path_rules: Value) -> usize {
        let after = std::mem::take(&mut self.last);
        let id = self.add_with(&after, pattern, rule, path_rules);
        self.last = vec![id];
        id
    }
}

/// Who answers a message that repeats a call id (Lab 7.6): the chapter lets either layer decide. The loop
/// skips every call of it, or runs the unique sibling and skips the repeated ones; or the message
/// validation layer refuses the message itself, which then never becomes a fact (no assistant_message,
/// not in the transcript, nothing to pair).
#[derive(Clone, Copy, PartialEq)]
enum Sibling {
    Skipped,
    Executed,
    Refused,
}

#[derive(Clone)]
struct Sim<'a> {
    instance: &'a Value,
    graph: Graph,
    transcript: Vec<Value>,
    caller_prompt: String,
    caller_messages: Vec<Value>,
    edited: bool,
    aborted: bool,
    steps: u64,
    ended: bool,
    plan: VecDeque<Value>,
    /// How many behaviours of each call id / tool name have been used.
    used: BTreeMap<String, usize>,
    sibling: Sibling,
    last_batch: usize,
}

fn text_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn event(inner: Value) -> Value {
    object([("kind", json!("event")), ("event", inner)])
}

impl<'a> Sim<'a> {
    fn new(instance: &'a Value) -> Sim<'a> {
        Sim {
            instance,
            graph: Graph {
                steps: Vec::new(),
                last: Vec::new(),
            },
            transcript: instance["caller"].as_array().cloned().unwrap_or_default(),
            caller_prompt: text_of(&instance["system_prompt"]),
            caller_messages: {
                let mut messages = instance["caller"].as_array().cloned().unwrap_or_default();
                // The caller's edit right after the run started: in its context, never in the run's.
                if instance["edit_at_start"] == true {
                    messages.push(wire::user(EDIT));
                }
                messages
            },
            edited: false,
            aborted: false,
            steps: 0,
            ended: false,
            plan: instance["plan"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into(),
            used: BTreeMap::new(),
            sibling: Sibling::Skipped,
            last_batch: 0,
        }
    }

    fn events(&self) -> bool {
        self.instance["on_event"].as_bool().unwrap_or(true)
    }

    fn emit(&mut self, inner: Value, rule: &str) {
        if self.events() {
            self.graph.then(event(inner), rule);
        }
    }

    fn run(&mut self) {
        if self.steps == 0 && self.graph.steps.is_empty() && self.instance["pre_abort"] == true {
            self.graph.then(
                json!({ "kind": "driver", "action": "abort" }),
                "abort-boundaries",
            );
            self.aborted = true;
        }
        let max = self.instance["max_steps"]
            .as_u64()
            .unwrap_or(DEFAULT_MAX_STEPS);
        while !self.ended {
            if self.aborted {
                self.end("aborted", "abort-boundaries");
                break;
            }
            if self.steps >= max {
                self.end("maxSteps", "max-steps");
                break;
            }
            self.turn();
        }
    }

    fn system_prompt(&self) -> Value {
        let original = text_of(&self.instance["system_prompt"]);
        match self.edited {
            false => json!(original),
            true => json!({
                "$bind": "system-prompt-after-edit",
                "$match": { "$one_of": [original, self.caller_prompt.clone()], "$freedom": "system-prompt-read" },
            }),
        }
    }

    /// One model turn: the request, the events, the final message once, then its row of the table.
    fn turn(&mut self) {
        self.steps += 1;
        let n = self.steps;
        let request = object([
            ("kind", json!("request")),
            ("n", json!(n)),
            ("system_prompt", self.system_prompt()),
            ("messages", Value::Array(self.transcript.clone())),
            ("tools", self.instance["tools"].clone()),
            ("signal", json!({ "$absent_or": "run" })),
        ]);
        let messages_rule = match (n, self.last_batch) {
            (1, _) => "request",
            (_, 2..) => "call-order",
            _ => "next-request",
        };
        let path_rules = json!({
            "system_prompt": "request", "tools": "request", "signal": "request", "messages": messages_rule,
        });
        self.graph.then_with(request, messages_rule, path_rules);

        let instance = self.instance;
        let exhausted;
        let turn = match instance["turns"].get(n as usize - 1) {
            Some(turn) => turn,
            None => {
                exhausted =
                    json!({ "message": instance["exhausted"], "events": [], "paced": false });
                &exhausted
            }
        };
        if turn["abort"] == true {
            self.graph.then(
                json!({ "kind": "driver", "action": "abort" }),
                "abort-boundaries",
            );
            self.aborted = true;
        }
        if turn["edit_context"] == true {
            self.graph.then(
                json!({ "kind": "driver", "action": "edit_context" }),
                "caller-untouched",
            );
            self.edited = true;
            self.caller_prompt.push_str(EDIT);
            self.caller_messages.push(wire::user(EDIT));
        }
        for e in turn["events"].as_array().into_iter().flatten() {
            self.emit(
                json!({ "type": "model_event", "event": e }),
                "forward-events",
            );
        }
        if turn["paced"] == true && self.events() {
            let end = json!({ "kind": "driver", "action": "stream_end", "n": n });
            self.graph.then(end, "forward-while-open");
        }
        let message = turn["message"].clone();
        let calls = wire::calls_of(&message);
        let reason = text_of(&message["stopReason"]);
        if self.sibling == Sibling::Refused && reason == "toolUse" && repeats_an_id(&calls) {
            self.end("error", "duplicate-ids");
            return;
        }
        self.transcript.push(message.clone());
        self.emit(
            json!({ "type": "assistant_message", "message": message }),
            "assistant-once",
        );

        match (reason.as_str(), calls.is_empty()) {
            ("stop", true) => self.end("stop", "plain-stop"),
            ("toolUse", true) => self.end("error", "decision-table"),
            ("toolUse", false) if repeats_an_id(&calls) => self.duplicates(&calls, n),
            ("toolUse", false) => self.batch(&calls, n),
            ("stop", false) => {
                self.skip_all(&calls, "unexpected-stop", n, "decision-table");
                self.end("error", "decision-table");
            }
            (other, _) => {
                self.skip_all(&calls, other, n, "decision-table");
                self.end(other, "decision-table");
            }
        }
    }

    fn end(&mut self, reason: &str, rule: &str) {
        self.emit(json!({ "type": "turn_end", "reason": reason }), rule);
        let caller = object([
            ("system_prompt", json!(self.caller_prompt)),
            ("messages", Value::Array(self.caller_messages.clone())),
        ]);
        let result = object([
            ("kind", json!("result")),
            ("reason", json!(reason)),
            ("steps", json!(self.steps)),
            ("messages", Value::Array(self.transcript.clone())),
            ("caller", caller),
            // Whether the caller's signal is aborted once the run returned: only if the test aborted it.
            // A run handed no signal has none the caller holds (TypeScript records none).
            (
                "signal_aborted",
                match self.instance["signal"] == true {
                    true => json!(self.aborted),
                    false => json!({ "$absent_or": false }),
                },
            ),
        ]);
        let path_rules = json!({ "caller": "caller-untouched", "messages": "transcript", "steps": rule, "reason": rule,
                                 "signal_aborted": "signal-read-only" });
        self.graph.then_with(result, rule, path_rules);
        self.ended = true;
    }

    fn skip_all(&mut self, calls: &[Value], reason: &str, turn: u64, rule: &str) {
        for (i, call) in calls.iter().enumerate() {
            let result = skipped(call, reason, &format!("{turn}:{i}"));
            let path_rules = json!({ "event.result": "skipped-result" });
            if self.events() {
                let step = event(json!({ "type": "tool_skipped", "result": result }));
                self.graph.then_with(step, rule, path_rules);
            }
            self.transcript.push(result);
        }
    }

    /// The next behaviour planned for a call id (executor) or a tool name (`tool:NAME`).
    fn behaviour(&mut self, reference: &str) -> Option<Value> {
        let (table, key) = match reference.strip_prefix("tool:") {
            Some(name) => ("tool_runs", name),
            None => ("calls", reference),
        };
        let used = self.used.entry(reference.to_string()).or_default();
        let found = self.instance[table][key].get(*used).cloned();
        *used += 1;
        found
    }

    /// A toolUse batch: every call starts at once, each tool_end goes out as its call completes, and
    /// the results are appended in call order.
    fn batch(&mut self, calls: &[Value], turn: u64) {
        let start = std::mem::take(&mut self.graph.last);
        let results = self.run_calls(calls, turn, &start, &[]);
        self.transcript.extend(results);
        self.last_batch = calls.len();
    }

    /// Runs `calls` (skipping the positions in `skip`), returning their results in call order and
    /// leaving `graph.last` at the join of every lane and the test's part.
    fn run_calls(
        &mut self,
        calls: &[Value],
        turn: u64,
        start: &[usize],
        skip: &[usize],
    ) -> Vec<Value> {
        let multi = calls.len() - skip.len() > 1;
        let begin_rule = if multi {
            "batch-at-once"
        } else {
            "tool-round-trip"
        };
        let end_rule = if multi {
            "end-on-completion"
        } else {
            "tool-round-trip"
        };
        let executor = self.instance["executor"] == true;
        let registered: Vec<String> = self.instance["tools"]
            .as_array()
            .map(|t| t.iter().map(|d| text_of(&d["name"])).collect())
            .unwrap_or_default();

        let mut joins: Vec<usize> = Vec::new();
        let mut results: Vec<Option<Value>> = vec![None; calls.len()];
        // A gated lane waits at its gate: its last step, and what is left to finish it.
        let mut gated: BTreeMap<String, (usize, usize, Value)> = BTreeMap::new();
        let mut tool_end_of: BTreeMap<String, usize> = BTreeMap::new();
        // The last tool_progress of each call, which its tool_end (and a release waiting on it) follows.
        let mut progress_of: BTreeMap<String, Vec<usize>> = BTreeMap::new();

        for (i, call) in calls.iter().enumerate() {
            if skip.contains(&i) {
                continue;
            }
            let id = text_of(&call["id"]);
            let name = text_of(&call["name"]);
            let mut lane: Vec<usize> = start.to_vec();
            if self.events() {
                let step = event(json!({ "type": "tool_start", "call": call }));
                lane = vec![self.graph.add(&lane, step, begin_rule)];
            }
            let reference = match executor {
                true => id.clone(),
                false => format!("tool:{name}"),
            };
            let behaviour = match executor || registered.contains(&name) {
                true => self.behaviour(&reference),
                false => None,
            };
            let result = match (&behaviour, executor) {
                (None, false) => {
                    // The built-in executor answers a call to an unknown tool itself.
                    let text = format!("Tool \"{name}\" not found");
                    wire::tool_result(&id, &name, vec![wire::text(&text)], no_details(), true)
                }
                (None, true) => unplanned(&id, &name),
                (Some(b), _) => result_of(call, &b["outcome"], executor, &format!("{turn}:{i}")),
            };
            if let Some(b) = &behaviour {
                let enter = match executor {
                    true => json!({ "kind": "exec_enter", "via": "executor", "call": call,
                                    "signal": "run", "ctx_call_id": { "$absent_or": id } }),
                    false => json!({ "kind": "exec_enter", "via": "tool", "tool": name,
                                     "arguments": call["arguments"], "signal": "run",
                                     "ctx_call_id": { "$absent_or": id } }),
                };
                let path_rules = json!({ "signal": "executor-gets-signal" });
                lane = vec![self.graph.add_with(&lane, enter, begin_rule, path_rules)];
                // Each report reaches the loop's events while the tool still runs: after its own report and
                // the one before, before the call's tool_end. A loop may relay it from another task, so it
                // need not come before the tool's next step (docs/JUDGE.md).
                let mut forwarded: Vec<usize> = Vec::new();
                for content in b["progress"].as_array().cloned().unwrap_or_default() {
                    let report =
                        json!({ "kind": "exec_progress", "ref": reference, "content": content });
                    lane = vec![self.graph.add(&lane, report, "progress-with-id")];
                    if self.events() {
                        let step = event(
                            json!({ "type": "tool_progress", "toolCallId": id, "content": content }),
                        );
                        let after: Vec<usize> = lane.iter().chain(&forwarded).copied().collect();
                        forwarded = vec![self.graph.add(&after, step, "progress-with-id")];
                    }
                }
                progress_of.insert(id.clone(), forwarded.clone());
                if b["cancel_run"] == true {
                    self.aborted = true;
                }
                if b["gate"] == true {
                    gated.insert(reference.clone(), (lane[0], i, result.clone()));
                    results[i] = Some(result);
                    continue;
                }
                let leave = json!({ "kind": "exec_leave", "ref": reference });
                lane = vec![self.graph.add(&lane, leave, end_rule)];
                lane.extend(forwarded);
            }
            if self.events() {
                let step = event(json!({ "type": "tool_end", "result": result }));
                let path_rules = json!({ "event.result": result_rule(behaviour.as_ref()) });
                lane = vec![self.graph.add_with(&lane, step, end_rule, path_rules)];
            }
            tool_end_of.insert(id.clone(), lane[0]);
            joins.extend(lane);
            results[i] = Some(result);
        }

        if !gated.is_empty() {
            joins.extend(self.gates(&mut gated, &mut tool_end_of, &progress_of, multi, end_rule));
        }
        self.graph.last = match joins.is_empty() {
            true => start.to_vec(),
            false => joins,
        };
        results.into_iter().flatten().collect()
    }

    /// The test's part in a gated batch, from the plan: it waits until every gated call waits, maybe
    /// aborts, then releases each, waiting for its tool_end. Returns the steps the batch's end follows.
    fn gates(
        &mut self,
        gated: &mut BTreeMap<String, (usize, usize, Value)>,
        tool_end_of: &mut BTreeMap<String, usize>,
        progress_of: &BTreeMap<String, Vec<usize>>,
        multi: bool,
        end_rule: &str,
    ) -> Vec<usize> {
        let release_rule = if multi {
            "batch-at-once"
        } else {
            "tool-round-trip"
        };
        let mut after: Vec<usize> = Vec::new();
        let mut joins = Vec::new();
        let mut first = true;
        while let Some(action) = self.plan.front().cloned() {
            if let Some(refs) = action["wait"]["at_gate"].as_array() {
                if !first {
                    break;
                }
                first = false;
                after = refs
                    .iter()
                    .filter_map(|r| gated.get(&text_of(r)).map(|g| g.0))
                    .collect();
            } else if action.get("abort").is_some() {
                let step = json!({ "kind": "driver", "action": "abort" });
                after = vec![self.graph.add(&after, step, "abort-boundaries")];
                self.aborted = true;
            } else if let Some(reference) = action["release"].as_str() {
                let step = json!({ "kind": "driver", "action": "release", "ref": reference });
                let release = self.graph.add(&after, step, release_rule);
                after = vec![release];
                if let Some((waiting, _, result)) = gated.remove(reference) {
                    let leave = json!({ "kind": "exec_leave", "ref": reference });
                    let left = self.graph.add(&[waiting, release], leave, end_rule);
                    let mut last = left;
                    if self.events() {
                        let id = text_of(&result["toolCallId"]);
                        let mut after = vec![left];
                        after.extend(progress_of.get(&id).into_iter().flatten());
                        let step = event(json!({ "type": "tool_end", "result": result }));
                        last = self.graph.add(&after, step, end_rule);
                    }
                    tool_end_of.insert(text_of(&result["toolCallId"]), last);
                    joins.push(last);
                }
            } else if action["wait"]["event"] == "tool_end" {
                if let Some(&end) = tool_end_of.get(&text_of(&action["wait"]["id"])) {
                    after = vec![end];
                }
            } else if action["wait"]["event"] == "tool_progress" {
                // The test waits until the call's reports reached the events, so they come before the
                // release: "while the tool runs".
                after.extend(
                    progress_of
                        .get(&text_of(&action["wait"]["id"]))
                        .into_iter()
                        .flatten(),
                );
            }
            self.plan.pop_front();
        }
        joins.extend(after);
        joins
    }

    /// A toolUse message that repeats a call id (Lab 7.6): no repeated call runs, each is answered with
    /// a duplicate-call-id result, and the run ends error. Whether the unique sibling runs is free.
    fn duplicates(&mut self, calls: &[Value], turn: u64) {
        let ids: Vec<String> = calls.iter().map(|c| text_of(&c["id"])).collect();
        let repeated: Vec<usize> = (0..calls.len())
            .filter(|&i| ids.iter().filter(|x| **x == ids[i]).count() > 1)
            .collect();
        let unique: Vec<usize> = (0..calls.len()).filter(|i| !repeated.contains(i)).collect();
        let start = std::mem::take(&mut self.graph.last);
        let mut ends = Vec::new();
        let mut results: Vec<Option<Value>> = vec![None; calls.len()];
        let executed = self.sibling == Sibling::Executed && !unique.is_empty();
        let skipped_ones: Vec<usize> = match executed {
            true => repeated.clone(),
            false => (0..calls.len()).collect(),
        };
        for &i in &skipped_ones {
            let result = skipped(&calls[i], "duplicate-call-id", &format!("{turn}:{i}"));
            if self.events() {
                let step = event(json!({ "type": "tool_skipped", "result": result }));
                let path_rules = json!({ "event.result": "skipped-result" });
                ends.push(
                    self.graph
                        .add_with(&start, step, "duplicate-ids", path_rules),
                );
            }
            results[i] = Some(result);
        }
        if executed {
            let ran = self.run_calls(calls, turn, &start, &repeated);
            for (&i, result) in unique.iter().zip(ran) {
                results[i] = Some(result);
            }
            ends.append(&mut self.graph.last);
        }
        self.graph.last = if ends.is_empty() { start } else { ends };
        self.transcript.extend(results.into_iter().flatten());
        self.end("error", "duplicate-ids");
    }
}

fn repeats_an_id(calls: &[Value]) -> bool {
    let mut ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
    let before = ids.len();
    ids.sort_unstable();
    ids.dedup();
    ids.len() < before
}

/// The rule a tool_end's result pins: passed through, or a failure turned into a result.
fn result_rule(behaviour: Option<&Value>) -> &'static str {
    let outcome = behaviour.map(|b| &b["outcome"]);
    match outcome
        .and_then(|o| o.as_object())
        .and_then(|o| o.keys().next())
        .map(String::as_str)
    {
        Some("ok") | None => "result-passes-through",
        Some(_) => "failure-paired",
    }
}

/// The result a call's behaviour must produce. An executor's own result passes through as it is; a
/// failure becomes an error result with the call's id and name that carries the message (freedom:
/// the wording); a registry tool's output becomes the built-in executor's result.
fn result_of(call: &Value, outcome: &Value, executor: bool, key: &str) -> Value {
    let id = text_of(&call["id"]);
    let name = text_of(&call["name"]);
    if let Some(ok) = outcome.get("ok") {
        let mut result = match executor {
            true => ok.clone(),
            false => wire::tool_result(
                &id,
                &name,
                ok["content"].as_array().cloned().unwrap_or_default(),
                ok["details"].clone(),
                false,
            ),
        };
        // A result with no details passes through with none; Rust's surface cannot leave the key out
        // (it reads null).
        if ok.get("details").is_none() {
            result["details"] = no_details();
        }
        return result;
    }
    let (message, debug) = match outcome.as_object().and_then(|o| o.iter().next()) {
        Some((kind, v)) if kind == "error" => (text_of(&v["message"]), Some(text_of(&v["debug"]))),
        // A panic's payload that is no text has no message to carry, and its Debug form (a boxed `Any`
        // prints as `Any { .. }`) is no message either.
        Some((kind, _)) if kind == "panic_value" => (String::new(), Some(ANY_DEBUG.to_string())),
        Some((_, v)) => (text_of(v), None),
        None => (String::new(), None),
    };
    if !executor {
        // The built-in executor's own wording: the error's message, as is, and no details.
        return wire::tool_result(&id, &name, vec![wire::text(&message)], no_details(), true);
    }
    let without: Vec<String> = debug.into_iter().collect();
    let without = json!(without);
    json!({
        "role": "toolResult",
        "toolCallId": id,
        "toolName": name,
        "content": [{ "type": "text", "text": {
            "$bind": format!("failure-text:{key}"),
            "$match": { "$carries": message, "$without": without, "$freedom": "failure-text" },
        }}],
        // Free, or left out (a TypeScript result may have no details key at all).
        "details": { "$absent_or": { "$bind": format!("failure-details:{key}"),
                     "$match": { "$any": "failure-details", "$without": without, "$no_stack": true } } },
        "isError": true,
    })
}

/// How Rust's Debug prints a panic's payload that is no text (`Box<dyn Any + Send>`).
const ANY_DEBUG: &str = "Any { .. }";

/// A result without details: no `details` key, or `null` where a track's surface always has one (Rust).
fn no_details() -> Value {
    json!({ "$absent_or": null })
}

/// A call the driver had no behaviour for (it should never have run): the driver answers it at once.
fn unplanned(id: &str, name: &str) -> Value {
    wire::tool_result(
        id,
        name,
        vec![wire::text("unplanned call")],
        Value::Null,
        false,
    )
}

/// The skipped result of a call that must not run. Only length's text is the chapter's own; the
/// others are free (any non-empty text), the same wherever the result travels.
pub fn skipped(call: &Value, reason: &str, key: &str) -> Value {
    let text = match reason {
        "length" => json!(LENGTH_TEXT),
        _ => json!({ "$bind": format!("skip-text:{key}"), "$match": { "$text": "skip-text" } }),
    };
    json!({
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": [{ "type": "text", "text": text }],
        "details": { "skipped": true, "reason": reason },
        "isError": true,
    })
}

/// The rules as the graph holds them, checked on every instance three seeds draw: what the chapter
/// says of any run, whatever its scenario (the fixtures and the judge's own tests check whole traces).
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every drawn instance with its alternatives: (test, instance, alternatives).
    fn drawn() -> Vec<(String, Value, Vec<Vec<Value>>)> {
        let mut all = Vec::new();
        for seed in [1, 7, 2024] {
            for case in super::super::cases(seed) {
                for instance in case.instance["runs"].as_array().unwrap() {
                    all.push((case.name.clone(), instance.clone(), alternatives(instance)));
                }
            }
        }
        assert!(all.len() > 150, "{} instances", all.len());
        all
    }

    /// The steps step `i` comes after, directly or through others.
    fn before(steps: &[Value], i: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<usize> = vec![i];
        while let Some(j) = todo.pop() {
            for a in steps[j]["after"].as_array().unwrap() {
                let a = a.as_u64().unwrap() as usize;
                if seen.insert(a) {
                    todo.push(a);
                }
            }
        }
        seen
    }

    fn kind(step: &Value) -> &str {
        step["match"]["kind"].as_str().unwrap_or_default()
    }

    #[test]
    fn a_step_comes_only_after_earlier_ones_and_the_result_after_all() {
        for (test, _, paths) in drawn() {
            for steps in &paths {
                for (i, step) in steps.iter().enumerate() {
                    for a in step["after"].as_array().unwrap() {
                        assert!((a.as_u64().unwrap() as usize) < i, "{test}: step {i}");
                    }
                    assert!(!step["rule"].as_str().unwrap_or_default().is_empty());
                }
                // One result, last, and nothing of the run may come after it.
                let last = steps.len() - 1;
                assert_eq!(kind(&steps[last]), "result", "{test}");
                assert_eq!(steps.iter().filter(|s| kind(s) == "result").count(), 1);
                assert_eq!(before(steps, last), (0..last).collect(), "{test}");
            }
        }
    }

    #[test]
    fn the_requests_are_counted_bounded_and_an_aborted_start_makes_none() {
        for (test, instance, paths) in drawn() {
            let limit = instance["max_steps"].as_u64().unwrap_or(DEFAULT_MAX_STEPS);
            for steps in &paths {
                let requests: Vec<&Value> = steps.iter().filter(|s| kind(s) == "request").collect();
                let result = &steps[steps.len() - 1]["match"];
                assert!(requests.len() as u64 <= limit, "{test}");
                // `steps` is the number of requests the run made, numbered from one.
                assert_eq!(result["steps"], json!(requests.len()), "{test}");
                for (n, request) in requests.iter().enumerate() {
                    assert_eq!(request["match"]["n"], json!(n + 1), "{test}");
                }
                if instance["pre_abort"] == true {
                    assert!(requests.is_empty(), "{test}");
                    assert_eq!(result["reason"], "aborted", "{test}");
                }
            }
        }
    }

    #[test]
    fn the_calls_of_a_batch_run_at_once_and_none_waits_for_another() {
        let mut batches = 0;
        for (test, _, paths) in drawn() {
            for steps in &paths {
                // The tools entered between two requests are one batch's.
                let mut batch: Vec<usize> = Vec::new();
                let mut check = |batch: &mut Vec<usize>| {
                    for &x in batch.iter() {
                        for &y in batch.iter() {
                            assert!(
                                !before(steps, x).contains(&y),
                                "{test}: step {x} waits for step {y} of its batch"
                            );
                        }
                    }
                    batches += usize::from(batch.len() > 1);
                    batch.clear();
                };
                for (i, step) in steps.iter().enumerate() {
                    match kind(step) {
                        "request" | "result" => check(&mut batch),
                        "exec_enter" => batch.push(i),
                        _ => {}
                    }
                }
            }
        }
        assert!(batches > 20, "{batches} batches of two calls or more");
    }

    #[test]
    fn only_a_repeated_call_id_leaves_who_answers_it_free() {
        let mut free = 0;
        for (test, instance, paths) in drawn() {
            let repeats = instance["turns"]
                .as_array()
                .unwrap()
                .iter()
                .any(|turn| repeats_an_id(&wire::calls_of(&turn["message"])));
            assert_eq!(paths.len() > 1, repeats, "{test}");
            free += usize::from(repeats);
            // The paths differ, and each is whole.
            for (i, a) in paths.iter().enumerate() {
                assert!(paths[i + 1..].iter().all(|b| b != a), "{test}");
            }
        }
        assert!(free > 0);
    }
}
