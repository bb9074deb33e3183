//! Drawing an instance from a scenario template: fresh ids, names, texts, arguments, counts, gate orders,
//! all from one seeded generator. The instance is everything the driver needs to run the loop, and
//! nothing of what the loop should answer (docs/JUDGE.md).
//!
//! The draws are adversarial on purpose, so that a loop which changes something in transit cannot pass
//! by luck: system prompts keep surrounding whitespace, tool definitions are never registered in sorted
//! order, results carry several content blocks and every kind of `details`, and partial messages are
//! distinct values.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::cover::{self, Row};
use super::scenario::{Count, MaxSteps, Scenario, TurnTemplate};
use super::wire;
use crate::spec::object;
use crate::spec::rng::Rng;

const WORDS: &[&str] = &[
    "lookup", "grep", "read", "write", "list", "fetch", "diff", "build", "search", "format",
    "count", "patch", "probe", "index", "scan", "stat",
];
const PHRASES: &[&str] = &[
    "Let me check that.",
    "I will look at the files.",
    "好的，我先看一下。",
    "Done: everything is in place.",
    "Here is what I found",
    "  spaces stay as written  ",
    "two\nlines",
    "😀 emoji too",
];

/// The kinds of `details` a tool's result carries: null, {}, an object, a list, a number, none at all.
const DETAILS_KINDS: usize = 6;

/// Cards dealt in a shuffled order, every card once before any card again: the phrases and the kinds
/// of details one test's instances draw, so that a test with as many draws as cards reaches them all.
#[derive(Debug, Default)]
pub struct Decks {
    phrases: Vec<usize>,
    details: Vec<usize>,
    failures: Vec<usize>,
    values: Vec<usize>,
    /// The boundary decks below deal their boundary card first in each round (see [`deal_from`]).
    prompts: Vec<usize>,
    caller_blocks: Vec<usize>,
    blanks: Vec<usize>,
    notes: Vec<usize>,
    provider_errors: Vec<usize>,
    call_ids: Vec<usize>,
    call_names: Vec<usize>,
    arguments: Vec<usize>,
    reports: Vec<usize>,
    echoes: Vec<usize>,
}

/// The shapes of a failure's message: one line with quotes, several lines, none at all, and one line
/// between spaces that ends in a line break, dealt first (a loop that trims it no longer carries it).
const FAILURE_SHAPES: usize = 4;
const FAILURE_PADDED: usize = 3;

fn deal(deck: &mut Vec<usize>, cards: usize, rng: &mut Rng) -> usize {
    deal_from(deck, cards, &[], rng)
}

/// Like [`deal`], but each round of the deck deals the cards `first` in that order before the shuffled
/// rest: the boundary values a wrong loop mishandles, which every test that draws at least one card then
/// reaches under every seed (a test that reached them only on some draws would pass or fail by luck).
fn deal_from(deck: &mut Vec<usize>, cards: usize, first: &[usize], rng: &mut Rng) -> usize {
    if deck.is_empty() {
        let mut rest: Vec<usize> = (0..cards).filter(|c| !first.contains(c)).collect();
        rng.shuffle(&mut rest);
        // Dealt from the end: the shuffled rest goes under the boundary cards.
        *deck = rest;
        deck.extend(first.iter().rev());
    }
    deck.pop().expect("a deck of cards")
}

/// The kinds of `details` every test that draws one reaches first: `null`, then none at all.
const DETAILS_FIRST: &[usize] = &[0, 5];

/// A boundary deck: card 0 is the boundary value, dealt first in each round; the other cards are the
/// ordinary value. So every test that draws from it reaches the boundary, under every seed, and most
/// of its draws are still ordinary.
fn boundary(deck: &mut Vec<usize>, cards: usize, rng: &mut Rng) -> bool {
    deal_from(deck, cards, &[0], rng) == 0
}

/// The instance of `scenario` drawn by `rng`, with the values `row` fixes (see `cover.rs`); `decks`
/// carries on from the test's earlier instances.
pub fn draw(scenario: &Scenario, row: &Row, rng: &mut Rng, decks: &mut Decks) -> Value {
    Drawing::new(rng, row, decks).instance(scenario)
}

struct Drawing<'r> {
    rng: &'r mut Rng,
    /// The values this instance must take; every other count is drawn.
    row: &'r Row,
    decks: &'r mut Decks,
    used_ids: BTreeSet<String>,
    used_names: BTreeSet<String>,
    registry: Vec<String>,
    calls: BTreeMap<String, Vec<Value>>,
    tool_runs: BTreeMap<String, Vec<Value>>,
    plan: Vec<Value>,
    /// How many behaviours this instance has drawn.
    behaviours: u64,
}

impl<'r> Drawing<'r> {
    fn new(rng: &'r mut Rng, row: &'r Row, decks: &'r mut Decks) -> Self {
        Drawing {
            rng,
            row,
            decks,
            used_ids: BTreeSet::new(),
            used_names: BTreeSet::new(),
            registry: Vec::new(),
            calls: BTreeMap::new(),
            tool_runs: BTreeMap::new(),
            plan: Vec::new(),
            behaviours: 0,
        }
    }

    /// The count `key` takes: the row's value, or one drawn from the template's range.
    fn count(&mut self, key: &str, count: Option<Count>, default: u64) -> u64 {
        if let Some(v) = self.row.get(key) {
            return *v;
        }
        let (low, high) = count.map_or((default, default), Count::range);
        self.rng.between(low, high)
    }

    fn instance(mut self, s: &Scenario) -> Value {
        // An empty system prompt is the caller's too: a loop may not put a default of its own in.
        let system_prompt = match boundary(&mut self.decks.prompts, 3, self.rng) {
            true => String::new(),
            false => {
                format!(
                    "  You are {}, a careful coding agent.\n",
                    self.rng.pick(&["pi", "a helper", "the agent"])
                ) + &format!("Session marker {}.\n", self.rng.token(8))
            }
        };
        // A template's history and its extra tools: see `cover::history` and `cover::tools`.
        let history = self.count("history", Some(cover::history(s)), 1).max(1);
        // Each of the caller's messages holds one to three texts: with the history's length this is
        // structure a run without requests still shows, so even its trace cannot be relabelled. An
        // earlier one may hold none at all (the copy keeps it too); the last one, which the run answers,
        // always holds text, so that no first request is the same in two grades.
        let caller: Vec<Value> = (0..history)
            .map(|i| {
                let earlier = i + 1 < history;
                let blocks = match earlier && boundary(&mut self.decks.caller_blocks, 4, self.rng) {
                    true => 0,
                    false => self.rng.between(1, 3),
                };
                let texts: Vec<Value> = (0..blocks).map(|_| wire::text(&self.sentence())).collect();
                match (history - 1 - i) % 2 {
                    0 => json!({ "role": "user", "content": texts }),
                    _ => wire::assistant(texts, "stop", None),
                }
            })
            .collect();

        let mut turns = Vec::new();
        let mut previous: Option<(Value, Vec<Value>, Vec<Value>)> = None;
        for (index, template) in s.turns.iter().enumerate() {
            let repeat = self.count(&cover::turn_key(index, "repeat"), template.repeat, 1);
            let replies = template.reply.all();
            let reply = match self.row.get(&cover::turn_key(index, "reply")) {
                Some(i) => replies[*i as usize],
                None => *self.rng.pick(&replies),
            };
            for _ in 0..repeat {
                let turn = match reply {
                    "same_as_previous" => {
                        let (message, events, behaviours) =
                            previous.clone().expect("same_as_previous follows a turn");
                        self.again(&message, behaviours.clone());
                        (message, events, behaviours)
                    }
                    _ => self.turn(index, reply, template),
                };
                let (message, events, _) = &turn;
                turns.push(object([
                    ("message", message.clone()),
                    ("events", Value::Array(events.clone())),
                    ("paced", json!(template.paced)),
                    ("abort", json!(template.abort)),
                    ("edit_context", json!(template.edit_context)),
                ]));
                previous = Some(turn);
            }
        }

        let extra = self.count("tools", Some(cover::tools(s)), 0);
        for _ in 0..extra {
            let name = self.name();
            self.registry.push(name);
        }
        self.rng.shuffle(&mut self.registry);
        if self.registry.len() > 1 && self.registry.windows(2).all(|w| w[0] <= w[1]) {
            self.registry.swap(0, 1);
        }
        let tools: Vec<Value> = self.registry.iter().map(|n| tool_definition(n)).collect();

        let max_steps = match &s.max_steps {
            None => Value::Null,
            Some(MaxSteps::Named(name)) => {
                assert_eq!(
                    name, "turns",
                    "{}: max_steps is a number or \"turns\"",
                    s.name
                );
                json!(turns.len())
            }
            Some(MaxSteps::Count(c)) => json!(self.count("max_steps", Some(*c), 1)),
        };
        // Each list in a map of id to values, moved in (see [`object`]).
        let lists = |map: BTreeMap<String, Vec<Value>>| {
            Value::Object(map.into_iter().map(|(k, v)| (k, Value::Array(v))).collect())
        };
        object([
            ("test", json!(s.name)),
            ("system_prompt", json!(system_prompt)),
            ("caller", Value::Array(caller)),
            ("tools", Value::Array(tools)),
            ("executor", json!(s.executor.unwrap_or(false))),
            ("signal", json!(s.signal.unwrap_or(true))),
            ("pre_abort", json!(s.pre_abort)),
            ("edit_at_start", json!(s.edit_at_start)),
            ("max_steps", max_steps),
            ("on_event", json!(s.on_event.unwrap_or(true))),
            ("turns", Value::Array(turns)),
            (
                "exhausted",
                wire::assistant(vec![], "error", Some("the script has no reply left")),
            ),
            ("calls", lists(self.calls)),
            ("tool_runs", lists(self.tool_runs)),
            ("plan", Value::Array(self.plan)),
        ])
    }

    /// A failure's message, in the shape the deck deals: `line` as it is, over several lines, or empty.
    /// Every failure text must carry it whole, whatever its shape.
    fn failure(&mut self, line: &str) -> String {
        let first = [FAILURE_PADDED];
        match deal_from(&mut self.decks.failures, FAILURE_SHAPES, &first, self.rng) {
            0 => line.to_string(),
            1 => format!(
                "{line}\n  while writing {}\n  (retry later)",
                self.rng.token(4)
            ),
            FAILURE_PADDED => format!("  {line}  \n"),
            _ => String::new(),
        }
    }

    /// A call's id: every test's first is the empty string (an id all the same), the rest fresh.
    fn call_id(&mut self) -> String {
        match boundary(&mut self.decks.call_ids, 4, self.rng) && self.used_ids.insert(String::new())
        {
            true => String::new(),
            false => self.id(),
        }
    }

    /// The name of a call the injected executor answers or that is skipped: every test's first is the
    /// empty string (no tool has to exist for it), the rest fresh.
    fn call_name(&mut self) -> String {
        match boundary(&mut self.decks.call_names, 4, self.rng)
            && self.used_names.insert(String::new())
        {
            true => String::new(),
            false => self.name(),
        }
    }

    /// A call's arguments, as the model wrote them: an object, or, where no schema checks them (the
    /// injected executor, a call that is skipped), `null` or the text of a cut-off object.
    fn arguments(&mut self, checked: bool) -> Value {
        let object = json!({ "path": format!("/src/{}.rs", self.rng.token(4)), "limit": self.rng.between(1, 50) });
        if checked {
            return object;
        }
        match deal_from(&mut self.decks.arguments, 5, &[0, 1], self.rng) {
            0 => Value::Null,
            1 => json!(format!("{{\"path\": \"/src/{}", self.rng.token(3))),
            _ => object,
        }
    }

    /// What a tool reports as progress: one or two texts, or, first in each test, no content at all,
    /// then an empty text.
    fn report(&mut self) -> Value {
        match deal_from(&mut self.decks.reports, 4, &[0, 1], self.rng) {
            0 => json!([]),
            1 => json!([wire::text("")]),
            _ => Value::Array(self.texts(1, 2)),
        }
    }

    fn sentence(&mut self) -> String {
        let phrase = PHRASES[deal(&mut self.decks.phrases, PHRASES.len(), self.rng)];
        format!("{phrase} ({})", self.rng.token(5))
    }

    fn id(&mut self) -> String {
        loop {
            let id = format!("call_{}", self.rng.token(6));
            if self.used_ids.insert(id.clone()) {
                return id;
            }
        }
    }

    fn name(&mut self) -> String {
        loop {
            let name = format!("{}_{}", self.rng.pick(WORDS), self.rng.token(3));
            if self.used_names.insert(name.clone()) {
                return name;
            }
        }
    }

    fn texts(&mut self, low: u64, high: u64) -> Vec<Value> {
        let n = self.rng.between(low, high);
        (0..n).map(|_| wire::text(&self.sentence())).collect()
    }

    /// A result's details, of the kind the deck deals; `None`: the result has no `details` key at all.
    fn details(&mut self) -> Option<Value> {
        Some(
            match deal_from(
                &mut self.decks.details,
                DETAILS_KINDS,
                DETAILS_FIRST,
                self.rng,
            ) {
                0 => Value::Null,
                1 => json!({}),
                2 => {
                    json!({ "lines": [1, 2, self.rng.between(3, 99)], "path": format!("/src/{}.rs", self.rng.token(4)) })
                }
                3 => json!([self.rng.token(3), { "nested": { "ok": true } }]),
                4 => json!(self.rng.between(0, 1000)),
                _ => return None,
            },
        )
    }

    /// One turn: its final message, the events streamed before it, the behaviours of its calls.
    fn turn(
        &mut self,
        index: usize,
        reply: &str,
        t: &TurnTemplate,
    ) -> (Value, Vec<Value>, Vec<Value>) {
        let key = |knob: &str| cover::turn_key(index, knob);
        let stop_reason = match reply {
            "text" | "stop_with_calls" => "stop",
            "tool_use" | "tool_use_no_calls" => "toolUse",
            other => other,
        };
        let n = match reply {
            "text" | "tool_use_no_calls" => 0,
            _ => self.count(&key("calls"), t.calls, 1),
        };
        let via = t.via.as_deref().unwrap_or("executor");
        let mut content = Vec::new();
        if reply == "text" || reply == "tool_use_no_calls" || t.text {
            content.extend(self.texts(1, 3));
        }
        // A plain reply's first text may be one half said twice, streamed as two equal deltas: each is
        // an event of its own, first in each test.
        if reply == "text" && boundary(&mut self.decks.echoes, 3, self.rng) {
            let half = self.sentence();
            content[0] = wire::text(&format!("{half}{half}"));
        }
        // A reply without calls may hold an empty text block too, first in each test.
        if n == 0 && boundary(&mut self.decks.blanks, 2, self.rng) {
            let at = self.rng.between(0, content.len() as u64) as usize;
            content.insert(at, wire::text(""));
        }
        // A model may stream an empty text block beside its calls; it is part of the message too.
        if t.text && n > 0 {
            content.insert(0, wire::text(""));
        }
        let shared_name = self.name();
        let shared_id = self.id();
        let mut calls = Vec::new();
        for i in 0..n {
            let name = match (via, t.same_name) {
                (_, true) => shared_name.clone(),
                ("unknown", _) => format!("missing_{}", self.rng.token(4)),
                ("executor", _) => self.call_name(),
                _ => self.name(),
            };
            let id = match (t.duplicate.as_deref(), i) {
                (Some("all"), _) | (Some("sibling"), 0 | 2) => shared_id.clone(),
                _ => self.call_id(),
            };
            // The built-in executor checks a registry tool's arguments against its schema.
            let checked = reply == "tool_use" && via != "executor";
            let arguments = self.arguments(checked);
            calls.push(wire::tool_call(&id, &name, arguments));
        }
        if via == "registry" {
            for call in &calls {
                let name = call["name"].as_str().unwrap_or_default().to_string();
                if !self.registry.contains(&name) {
                    self.registry.push(name);
                }
            }
        }
        // Text beside the calls goes before them, after them, or both, as a model writes it.
        let after = match self.row.get(&key("text_at")) {
            Some(at) => *at == cover::TEXT_AFTER,
            None => self.rng.chance(50),
        };
        if t.text && !calls.is_empty() && after {
            let tail = content.pop();
            content.extend(calls.iter().cloned());
            content.extend(tail);
        } else {
            content.extend(calls.iter().cloned());
        }
        // An error reply's message, empty first in each test; a plain stop may carry one too (the final
        // message is kept as it is, whatever it holds).
        let error_message = match stop_reason {
            "error" => Some(
                match boundary(&mut self.decks.provider_errors, 3, self.rng) {
                    true => String::new(),
                    false => format!("provider failed: {}", self.rng.token(6)),
                },
            ),
            _ if reply == "text" && boundary(&mut self.decks.notes, 2, self.rng) => {
                Some(format!("note {}", self.rng.token(5)))
            }
            _ => None,
        };
        let message = wire::assistant(content, stop_reason, error_message.as_deref());
        let events = self.events(&message, t.partial_differs);

        let mut behaviours = Vec::new();
        if reply == "tool_use" {
            let duplicated = |i: usize| match t.duplicate.as_deref() {
                Some("all") => true,
                Some("sibling") => i == 0 || i == 2,
                _ => false,
            };
            let mut gated_refs = Vec::new();
            for (i, call) in calls.iter().enumerate() {
                if duplicated(i) {
                    continue;
                }
                let id = call["id"].as_str().unwrap_or_default().to_string();
                let name = call["name"].as_str().unwrap_or_default().to_string();
                if via == "unknown" {
                    continue;
                }
                let outcome = t
                    .outcomes
                    .get(i % t.outcomes.len().max(1))
                    .map_or("ok", String::as_str);
                let progress_count = self.count(&key("progress"), t.progress, 0);
                let progress: Vec<Value> = (0..progress_count).map(|_| self.report()).collect();
                let outcome = self.outcome(outcome, via, &id, &name);
                // Every other behaviour, from the instance's first, reports inside the call that starts
                // it: a loop that emits tool_start only after starting its tool is seen in every grade.
                let sync = self.behaviours.is_multiple_of(2);
                self.behaviours += 1;
                let behaviour = json!({
                    "progress": progress,
                    "gate": t.gated,
                    "cancel_run": t.cancel_run == Some(i),
                    "sync": sync,
                    "outcome": outcome,
                });
                let reference = match via {
                    "registry" => {
                        self.tool_runs
                            .entry(name.clone())
                            .or_default()
                            .push(behaviour.clone());
                        format!("tool:{name}")
                    }
                    _ => {
                        self.calls
                            .entry(id.clone())
                            .or_default()
                            .push(behaviour.clone());
                        id.clone()
                    }
                };
                behaviours.push(behaviour);
                if t.gated {
                    gated_refs.push((reference, id, progress_count));
                }
            }
            if !gated_refs.is_empty() {
                self.gate_plan(t, gated_refs);
            }
        }
        (message, events, behaviours)
    }

    /// A repeated reply repeats its calls: each gets the same behaviour again.
    fn again(&mut self, message: &Value, behaviours: Vec<Value>) {
        let calls = message["content"].as_array().cloned().unwrap_or_default();
        let calls = calls.iter().filter(|b| b["type"] == "toolCall");
        for (call, behaviour) in calls.zip(behaviours) {
            let id = call["id"].as_str().unwrap_or_default().to_string();
            self.calls.entry(id).or_default().push(behaviour);
        }
    }

    fn outcome(&mut self, outcome: &str, via: &str, id: &str, name: &str) -> Value {
        let content = self.texts(1, 3);
        // Only a result has details: a failure draws none, so the deck deals its kinds to results.
        let ok = !matches!(outcome, "error" | "panic" | "throw_value" | "panic_value");
        let details = if ok { self.details() } else { None };
        let without_key = |mut value: Value| {
            if details.is_none() {
                if let Some(o) = value.as_object_mut() {
                    o.remove("details");
                }
            }
            value
        };
        let details_value = details.clone().unwrap_or(Value::Null);
        match (outcome, via) {
            // Every failure text holds a quote: written with Debug (`{:?}`), it would be escaped, and no
            // longer the message as it is.
            ("error", _) => {
                let line = format!("disk \"full\" on /dev/{}", self.rng.token(5));
                json!({ "error": {
                    "message": self.failure(&line),
                    "debug": format!("DiskFull {{ device: {:?} }}", self.rng.token(7)),
                }})
            }
            ("panic", _) => {
                let line = format!("tool \"{}\" crashed", self.rng.token(6));
                json!({ "panic": self.failure(&line) })
            }
            ("throw_value", _) => {
                let line = format!("thrown \"value\" {}", self.rng.token(6));
                json!({ "throw_value": self.failure(&line) })
            }
            // A payload that is no text at all: a number, null, an object, a list or a boolean.
            ("panic_value", _) => {
                let n = self.rng.between(1, 999);
                let value = match deal(&mut self.decks.values, 5, self.rng) {
                    0 => json!(n),
                    1 => Value::Null,
                    2 => json!({ "code": n }),
                    3 => json!([n, self.rng.token(3)]),
                    _ => json!(n.is_multiple_of(2)),
                };
                json!({ "panic_value": value })
            }
            (_, "registry") => {
                json!({ "ok": without_key(json!({ "content": content, "details": details_value })) })
            }
            (kind, _) => json!({ "ok": without_key(wire::tool_result(
                id,
                name,
                content,
                details_value,
                kind == "ok_error_result"
            )) }),
        }
    }

    /// The test's part in a gated batch: wait until every gated call waits and its reports reached the
    /// events, maybe abort, then release them one by one, each time waiting for its tool_end, in the
    /// template's order.
    fn gate_plan(&mut self, t: &TurnTemplate, mut gated: Vec<(String, String, u64)>) {
        let refs: Vec<&String> = gated.iter().map(|(r, _, _)| r).collect();
        self.plan.push(json!({ "wait": { "at_gate": refs } }));
        // A tool's reports must reach the events while it runs: before it is released.
        for (_, id, reports) in &gated {
            if *reports > 0 {
                self.plan.push(
                    json!({ "wait": { "event": "tool_progress", "id": id, "count": reports } }),
                );
            }
        }
        if t.abort_in_batch {
            self.plan.push(json!({ "abort": null }));
        }
        match t.release.as_deref().unwrap_or("in_order") {
            "reversed" => gated.reverse(),
            "shuffled" => {
                let original = gated.clone();
                self.rng.shuffle(&mut gated);
                if gated.len() > 1 && gated == original {
                    gated.reverse();
                }
            }
            _ => {}
        }
        for (reference, id, _) in gated {
            self.plan.push(json!({ "release": reference }));
            self.plan
                .push(json!({ "wait": { "event": "tool_end", "id": id } }));
        }
    }

    /// The model's events for `message`: start, a delta per text block and a tool_call per call, each
    /// with the message so far, then done (or error). With `partial_differs`, the last partial is a
    /// draft that the final message does not keep.
    fn events(&mut self, message: &Value, partial_differs: bool) -> Vec<Value> {
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        let partial = |content: &[Value]| wire::assistant(content.to_vec(), "stop", None);
        let mut events = vec![json!({ "type": "start", "partial": partial(&[]) })];
        for (i, block) in blocks.iter().enumerate() {
            let so_far = &blocks[..=i];
            if block["type"] == "toolCall" {
                events.push(
                    json!({ "type": "tool_call", "call": block, "partial": partial(so_far) }),
                );
                continue;
            }
            // A text streams in one to three deltas, cut between characters, each partial holding the
            // text so far: how a provider cuts its stream is nothing a loop may depend on.
            let text = block["text"].as_str().unwrap_or_default();
            let chars: Vec<char> = text.chars().collect();
            let pieces = self.rng.between(1, 3).min(chars.len().max(1) as u64) as usize;
            let mut cuts: Vec<usize> = (1..pieces).map(|k| k * chars.len() / pieces).collect();
            // A text that is one half twice streams as those two halves.
            let half = chars.len() / 2;
            if half > 0 && chars[..half] == chars[half..] {
                cuts = vec![half];
            }
            cuts.push(chars.len());
            let mut start = 0;
            for end in cuts {
                let delta: String = chars[start..end].iter().collect();
                let mut content = blocks[..i].to_vec();
                content.push(wire::text(&chars[..end].iter().collect::<String>()));
                events.push(
                    json!({ "type": "text_delta", "delta": delta, "partial": partial(&content) }),
                );
                start = end;
            }
        }
        if partial_differs {
            let draft = format!("draft {}", self.rng.token(5));
            let mut content = blocks.clone();
            content.push(wire::text(&draft));
            events.push(
                json!({ "type": "text_delta", "delta": draft, "partial": partial(&content) }),
            );
        }
        match message["stopReason"] == "error" {
            true => events.push(json!({ "type": "error", "message": message["errorMessage"] })),
            false => events.push(json!({ "type": "done", "reason": message["stopReason"] })),
        }
        events
    }
}

/// A registry tool's definition: an object schema with one required string and an integer.
pub fn tool_definition(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("{} a file of the project", name.split('_').next().unwrap_or(name)),
        "parameters": {
            "type": "object",
            "properties": { "path": { "type": "string" }, "limit": { "type": "integer" } },
            "required": ["path"],
        },
    })
}
