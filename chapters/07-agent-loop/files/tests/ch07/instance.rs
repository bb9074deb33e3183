//! The scenario instance the grader sends (docs/JUDGE.md, "The instance"), read into the driver's types.
//! Unknown fields are refused: a field the driver would silently ignore is a scenario it would not run.

use std::collections::HashMap;

use pi_course::message::{AssistantMessage, ContentBlock, Message, ToolResultMessage};
use pi_course::tool::ToolDefinition;
use serde::Deserialize;
use serde_json::Value;

use crate::wire::WireModelEvent;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Informational: the test's name.
    #[serde(default)]
    #[allow(dead_code)]
    pub test: String,
    pub system_prompt: String,
    pub caller: Vec<Message>,
    /// Registry tools, registered in this order.
    pub tools: Vec<ToolDefinition>,
    /// Hand the loop the driver's executor; otherwise the built-in one runs the registry tools.
    pub executor: bool,
    /// Hand the run a signal the driver holds; otherwise keep `AgentLoopOptions::new`'s.
    pub signal: bool,
    /// Abort the signal before the run starts.
    #[serde(default)]
    pub pre_abort: bool,
    /// The caller adds a message to its context right after the run started (see `Scene::edit_messages`).
    #[serde(default)]
    pub edit_at_start: bool,
    pub max_steps: Option<usize>,
    pub on_event: bool,
    /// The answer to request n is `turns[n - 1]`.
    pub turns: Vec<Turn>,
    /// The answer to any request past the script.
    pub exhausted: AssistantMessage,
    #[serde(default)]
    pub calls: HashMap<String, Vec<Behavior<ToolResultMessage>>>,
    #[serde(default)]
    pub tool_runs: HashMap<String, Vec<Behavior<ToolOk>>>,
    #[serde(default)]
    pub plan: Vec<Action>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub message: AssistantMessage,
    #[serde(default)]
    pub events: Vec<WireModelEvent>,
    #[serde(default)]
    pub paced: bool,
    #[serde(default)]
    pub abort: bool,
    #[serde(default)]
    pub edit_context: bool,
}

/// What one invocation of the executor (for a call id) or of a registry tool does, in this order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior<T> {
    #[serde(default)]
    pub progress: Vec<Vec<ContentBlock>>,
    #[serde(default)]
    pub gate: bool,
    #[serde(default)]
    pub cancel_run: bool,
    /// The reports come inside the call that starts the tool (TypeScript: before it returns its
    /// promise). A Rust tool's future plays them in its first poll either way, so this changes nothing
    /// here.
    #[serde(default)]
    #[allow(dead_code)]
    pub sync: bool,
    pub outcome: Outcome<T>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome<T> {
    Ok(T),
    Error {
        message: String,
        debug: String,
    },
    Panic(String),
    ThrowValue(String),
    /// A panic whose payload is no text: the JSON value itself (a number, null, an object, ...).
    PanicValue(Value),
}

/// A registry tool's output.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOk {
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub details: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    Wait(Wait),
    /// Releases one gate: a call id (executor) or `tool:<name>` (registry tool).
    Release(String),
    /// Cancels the run's signal (`{"abort": null}`).
    Abort(()),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Wait {
    /// Each of these has reached its gate.
    AtGate { at_gate: Vec<String> },
    /// `count` events of this type for this call id were recorded (`tool_end`: one).
    Event {
        event: EventKind,
        id: String,
        #[serde(default = "one")]
        count: usize,
    },
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    ToolEnd,
    ToolProgress,
}

impl Instance {
    pub fn parse(text: &str) -> Result<Instance, String> {
        serde_json::from_str(text).map_err(|e| format!("the instance cannot be read: {e}"))
    }
}

/// What the registry tool `name` is called by in gates and steps.
pub fn tool_ref(name: &str) -> String {
    format!("tool:{name}")
}
