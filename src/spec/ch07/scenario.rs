//! The scenario templates of chapter 07 (`chapters/07-agent-loop/scenarios.toml`), as plain types.

use serde::Deserialize;

const SCENARIOS: &str = include_str!("../../../chapters/07-agent-loop/scenarios.toml");

#[derive(Debug, Deserialize)]
struct File {
    scenario: Vec<Scenario>,
}

/// A count: a number, or `[min, max]` to draw from.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum Count {
    Exactly(u64),
    Between([u64; 2]),
}

impl Count {
    pub fn range(self) -> (u64, u64) {
        match self {
            Count::Exactly(n) => (n, n),
            Count::Between([a, b]) => (a, b),
        }
    }
}

/// `max_steps`: a number, a range, or `"turns"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum MaxSteps {
    Count(Count),
    Named(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub group: String,
    pub name: String,
    pub about: String,
    #[serde(default)]
    pub history: Option<Count>,
    #[serde(default)]
    pub tools: Option<Count>,
    #[serde(default)]
    pub executor: Option<bool>,
    #[serde(default)]
    pub signal: Option<bool>,
    #[serde(default)]
    pub on_event: Option<bool>,
    #[serde(default)]
    pub max_steps: Option<MaxSteps>,
    #[serde(default)]
    pub pre_abort: bool,
    #[serde(default)]
    pub edit_at_start: bool,
    pub turns: Vec<TurnTemplate>,
}

/// A reply kind, or a list of them: a dimension whose every value a grade reaches (`cover.rs`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Replies {
    One(String),
    Any(Vec<String>),
}

impl Replies {
    pub fn all(&self) -> Vec<&str> {
        match self {
            Replies::One(r) => vec![r.as_str()],
            Replies::Any(rs) => rs.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnTemplate {
    pub reply: Replies,
    #[serde(default)]
    pub calls: Option<Count>,
    #[serde(default)]
    pub via: Option<String>,
    #[serde(default)]
    pub text: bool,
    #[serde(default)]
    pub same_name: bool,
    #[serde(default)]
    pub gated: bool,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub progress: Option<Count>,
    #[serde(default)]
    pub outcomes: Vec<String>,
    #[serde(default)]
    pub cancel_run: Option<usize>,
    #[serde(default)]
    pub duplicate: Option<String>,
    #[serde(default)]
    pub paced: bool,
    #[serde(default)]
    pub partial_differs: bool,
    #[serde(default)]
    pub abort: bool,
    #[serde(default)]
    pub abort_in_batch: bool,
    #[serde(default)]
    pub edit_context: bool,
    #[serde(default)]
    pub repeat: Option<Count>,
}

/// Every scenario of the chapter, in file order (the order tests run and reports list them).
pub fn all() -> Vec<Scenario> {
    let file: File =
        toml::from_str(SCENARIOS).expect("chapters/07-agent-loop/scenarios.toml parses");
    file.scenario
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLIES: &[&str] = &[
        "text",
        "tool_use",
        "length",
        "error",
        "aborted",
        "stop_with_calls",
        "tool_use_no_calls",
        "same_as_previous",
    ];
    const OUTCOMES: &[&str] = &[
        "ok",
        "ok_error_result",
        "error",
        "panic",
        "throw_value",
        "panic_value",
    ];
    const GROUPS: &[&str] = &[
        "plain-stop",
        "single-tool",
        "non-executing",
        "concurrent-tools",
        "cancel-and-limits",
        "duplicate-call-ids",
    ];

    #[test]
    fn every_scenario_uses_only_known_words_and_has_a_unique_name() {
        let all = all();
        assert!(all.len() >= 50, "{} scenarios", all.len());
        let mut names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len(), "scenario names are unique");
        for s in &all {
            assert!(
                GROUPS.contains(&s.group.as_str()),
                "{}: group {}",
                s.name,
                s.group
            );
            assert!(
                s.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{}",
                s.name
            );
            for t in &s.turns {
                for reply in t.reply.all() {
                    assert!(REPLIES.contains(&reply), "{}: reply {reply}", s.name);
                }
                for o in &t.outcomes {
                    assert!(OUTCOMES.contains(&o.as_str()), "{}: outcome {o}", s.name);
                }
                let via = t.via.as_deref().unwrap_or("executor");
                assert!(
                    ["executor", "registry", "unknown"].contains(&via),
                    "{}",
                    s.name
                );
                // A registry tool's steps name the tool, not the call: calls that share a tool and run
                // at once could not be told apart in the trace.
                assert!(
                    !(t.same_name && via == "registry" && t.reply.all().contains(&"tool_use")),
                    "{}: same_name runs through the injected executor only",
                    s.name
                );
                let release = t.release.as_deref().unwrap_or("in_order");
                assert!(
                    ["in_order", "reversed", "shuffled"].contains(&release),
                    "{}",
                    s.name
                );
            }
            if let Some(MaxSteps::Named(n)) = &s.max_steps {
                assert_eq!(n, "turns", "{}", s.name);
            }
        }
    }
}
