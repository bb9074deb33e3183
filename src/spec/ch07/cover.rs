//! What every grade reaches, whatever its seed: each scenario's covering set of instances.
//!
//! A template's knobs that take a range (`history = [1, 4]`, `calls = [1, 3]`, ...) are the dimensions
//! of its input space, and a loop that goes wrong only at one end of a range must fail in every grade,
//! not in the grades whose draw happened to land there. So a test holds several instances: one for each
//! row of a covering array over the template's dimensions (each dimension at its boundary values, every
//! pair of boundary values of two dimensions in some row), and one drawn freely. Everything a row leaves
//! open (ids, names, texts, details, where texts fall, the order gates open) is still drawn from the
//! seed, and the instances run in an order the seed draws, so no earlier trace can be relabelled into
//! this grade's.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::scenario::{Count, MaxSteps, Scenario};

/// One dimension of a template: the key the drawing asks for, and the values every grade reaches.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub key: String,
    pub values: Vec<u64>,
}

/// The values one instance takes on some dimensions; the drawing picks the rest.
pub type Row = BTreeMap<String, u64>;

/// The key of a knob of the `turn`-th reply template (from 0).
pub fn turn_key(turn: usize, knob: &str) -> String {
    format!("t{turn}.{knob}")
}

/// Where the texts beside a reply's calls go (`text_at`): before them, or after them.
pub const TEXT_BEFORE: u64 = 0;
pub const TEXT_AFTER: u64 = 1;

fn range(key: String, count: Option<Count>) -> Option<Dimension> {
    let (low, high) = count?.range();
    (low < high).then(|| Dimension {
        key,
        values: vec![low, high],
    })
}

/// The history a template draws: its own, or, left out, one message. (Drawn at random instead, it
/// would decide by the seed whether a test reaches a rule about history: it must be a dimension, or
/// fixed.)
pub fn history(s: &Scenario) -> Count {
    s.history.unwrap_or(Count::Exactly(1))
}

/// The registry tools a template adds beside those its calls use: its own, or, left out, none.
pub fn tools(s: &Scenario) -> Count {
    s.tools.unwrap_or(Count::Exactly(0))
}

/// The dimensions of `s`, in a fixed order.
pub fn dimensions(s: &Scenario) -> Vec<Dimension> {
    let mut dims = Vec::new();
    dims.extend(range("history".into(), Some(history(s))));
    dims.extend(range("tools".into(), Some(tools(s))));
    if let Some(MaxSteps::Count(c)) = &s.max_steps {
        dims.extend(range("max_steps".into(), Some(*c)));
    }
    for (i, t) in s.turns.iter().enumerate() {
        dims.extend(range(turn_key(i, "repeat"), t.repeat));
        dims.extend(range(turn_key(i, "calls"), t.calls));
        dims.extend(range(turn_key(i, "progress"), t.progress));
        let replies = t.reply.all();
        if replies.len() > 1 {
            dims.push(Dimension {
                key: turn_key(i, "reply"),
                values: (0..replies.len() as u64).collect(),
            });
        }
        let may_have_calls = t.calls.is_none_or(|c| c.range().1 > 0);
        let calls_reply = replies
            .iter()
            .any(|r| !matches!(*r, "text" | "tool_use_no_calls"));
        if t.text && may_have_calls && calls_reply {
            dims.push(Dimension {
                key: turn_key(i, "text_at"),
                values: vec![TEXT_BEFORE, TEXT_AFTER],
            });
        }
    }
    dims
}

/// A covering array over `dims`: every value of every dimension, and every pair of values of two
/// dimensions, in some row. Up to three dimensions every combination is a row; past that rows are added
/// greedily, each the combination that covers the most pairs still missing (the same rows every time).
pub fn rows(dims: &[Dimension]) -> Vec<Row> {
    let combinations = |dims: &[Dimension]| {
        let mut all: Vec<Vec<u64>> = vec![Vec::new()];
        for d in dims {
            all = all
                .into_iter()
                .flat_map(|row| {
                    d.values.iter().map(move |v| {
                        let mut row = row.clone();
                        row.push(*v);
                        row
                    })
                })
                .collect();
        }
        all
    };
    let as_row = |values: &[u64]| -> Row {
        dims.iter()
            .zip(values)
            .map(|(d, v)| (d.key.clone(), *v))
            .collect()
    };
    if dims.len() <= 3 {
        return combinations(dims).iter().map(|v| as_row(v)).collect();
    }
    let mut missing: Vec<(usize, u64, usize, u64)> = Vec::new();
    for (a, da) in dims.iter().enumerate() {
        for (b, db) in dims.iter().enumerate().skip(a + 1) {
            for va in &da.values {
                for vb in &db.values {
                    missing.push((a, *va, b, *vb));
                }
            }
        }
    }
    let candidates = combinations(dims);
    let mut chosen = Vec::new();
    while !missing.is_empty() {
        let covers = |row: &[u64]| {
            missing
                .iter()
                .filter(|(a, va, b, vb)| row[*a] == *va && row[*b] == *vb)
                .count()
        };
        let best = candidates
            .iter()
            .max_by_key(|row| (covers(row), std::cmp::Reverse(*row)))
            .expect("a dimension has values");
        missing.retain(|(a, va, b, vb)| !(best[*a] == *va && best[*b] == *vb));
        chosen.push(as_row(best));
    }
    chosen
}

/// What a row covers, in words, for a failure's message: `{"zh": …, "en": …}`; an empty row (the
/// instance drawn freely) says so.
pub fn about(row: &Row) -> Value {
    if row.is_empty() {
        return json!({ "zh": "自由抽取", "en": "drawn freely" });
    }
    let (mut zh, mut en) = (Vec::new(), Vec::new());
    for (key, v) in row {
        let (turn, knob) = match key.split_once('.') {
            Some((t, k)) => (t.trim_start_matches('t').parse::<usize>().ok(), k),
            None => (None, key.as_str()),
        };
        let reply = turn.map_or(0, |t| t + 1);
        let (z, e) = match knob {
            "history" => (
                format!("调用者消息 {v} 条"),
                format!("a history of {v} messages"),
            ),
            "tools" => (
                format!("另有 {v} 个工具"),
                format!("{v} more registered tools"),
            ),
            "max_steps" => (format!("max_steps {v}"), format!("max_steps {v}")),
            "repeat" => (
                format!("第 {reply} 个回复出现 {v} 次"),
                format!("reply {reply} {v} times"),
            ),
            "calls" => (
                format!("第 {reply} 个回复 {v} 个调用"),
                format!("{v} calls in reply {reply}"),
            ),
            "progress" => (
                format!("第 {reply} 个回复的每个调用报告进度 {v} 次"),
                format!("{v} progress reports per call of reply {reply}"),
            ),
            "text_at" if *v == TEXT_AFTER => (
                format!("第 {reply} 个回复的文字在调用之后"),
                format!("the text of reply {reply} after its calls"),
            ),
            "reply" => (
                format!("第 {reply} 个回复取第 {} 种", v + 1),
                format!("reply {reply} of kind {}", v + 1),
            ),
            "text_at" => (
                format!("第 {reply} 个回复的文字在调用之前"),
                format!("the text of reply {reply} before its calls"),
            ),
            other => (format!("{other} {v}"), format!("{other} {v}")),
        };
        zh.push(z);
        en.push(e);
    }
    json!({ "zh": zh.join("，"), "en": en.join(", ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: usize) -> Vec<Dimension> {
        (0..n)
            .map(|i| Dimension {
                key: format!("d{i}"),
                values: vec![i as u64, 10 + i as u64],
            })
            .collect()
    }

    #[test]
    fn every_pair_of_boundary_values_is_in_some_row() {
        for n in 0..=9 {
            let dims = dims(n);
            let rows = rows(&dims);
            assert!(!rows.is_empty());
            for a in &dims {
                for b in &dims {
                    for va in &a.values {
                        for vb in &b.values {
                            if a.key == b.key && va != vb {
                                continue;
                            }
                            assert!(
                                rows.iter().any(|r| r[&a.key] == *va && r[&b.key] == *vb),
                                "{n} dimensions: {}={va} with {}={vb} in no row",
                                a.key,
                                b.key
                            );
                        }
                    }
                }
            }
            // Pairwise stays small: far fewer rows than combinations once there are many dimensions.
            assert!(rows.len() <= 8, "{n} dimensions: {} rows", rows.len());
        }
    }

    #[test]
    fn the_rows_are_the_same_every_time() {
        assert_eq!(rows(&dims(6)), rows(&dims(6)));
    }

    #[test]
    fn a_row_is_said_in_both_languages() {
        let row: Row = [("t0.calls".to_string(), 3), ("history".to_string(), 1)].into();
        let said = about(&row);
        assert_eq!(said["en"], "a history of 1 messages, 3 calls in reply 1");
        assert_eq!(said["zh"], "调用者消息 1 条，第 1 个回复 3 个调用");
        assert_eq!(about(&Row::new())["en"], "drawn freely");
    }
}
