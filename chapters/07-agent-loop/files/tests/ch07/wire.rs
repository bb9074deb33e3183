//! Canonical JSON (docs/JUDGE.md, "The instance"): the wire shape both tracks share. Messages, tool
//! calls and definitions derive it (`details` is always written, `errorMessage` only when set); the
//! loop's own types and the model's events are written here by hand.
//!
//! A message or a call standing alone is written as the other track holds it: an assistant message or
//! a tool result with its `role`, a tool call with its `"type": "toolCall"` (the Rust structs carry
//! neither; the enums they sit in do). Reading, those tags are ignored.

use pi_course::agent_loop::{AgentRunResult, LoopEvent, RunReason};
use pi_course::message::{AssistantMessage, Message, StopReason, ToolCall};
use pi_course::message::{ContentBlock, ToolResultMessage};
use pi_course::model::{ModelEvent, ModelRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// `ModelEvent` as an instance gives it (the course type has no serde of its own).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireModelEvent {
    Start {
        partial: AssistantMessage,
    },
    TextDelta {
        delta: String,
        partial: AssistantMessage,
    },
    ToolCall {
        call: ToolCall,
        partial: AssistantMessage,
    },
    Done {
        reason: StopReason,
    },
    Error {
        message: String,
    },
}

impl From<WireModelEvent> for ModelEvent {
    fn from(event: WireModelEvent) -> ModelEvent {
        match event {
            WireModelEvent::Start { partial } => ModelEvent::Start { partial },
            WireModelEvent::TextDelta { delta, partial } => {
                ModelEvent::TextDelta { delta, partial }
            }
            WireModelEvent::ToolCall { call, partial } => ModelEvent::ToolCall { call, partial },
            WireModelEvent::Done { reason } => ModelEvent::Done { reason },
            WireModelEvent::Error { message } => ModelEvent::Error { message },
        }
    }
}

/// Any value of a course type that derives the wire shape. Serializing those types cannot fail (string
/// keys, no non-finite floats from JSON), so a failure is a bug of the course, named as such.
pub fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("the course's types serialize to JSON")
}

/// An assistant message standing alone, with its `role`.
pub fn assistant(message: &AssistantMessage) -> Value {
    to_json(&Message::Assistant(message.clone()))
}

/// A tool result standing alone, with its `role`.
pub fn tool_result(result: &ToolResultMessage) -> Value {
    to_json(&Message::ToolResult(result.clone()))
}

/// A tool call standing alone, with its `type`.
pub fn call(call: &ToolCall) -> Value {
    to_json(&ContentBlock::ToolCall(call.clone()))
}

pub fn model_event(event: &ModelEvent) -> Value {
    match event {
        ModelEvent::Start { partial } => json!({"type": "start", "partial": assistant(partial)}),
        ModelEvent::TextDelta { delta, partial } => {
            json!({"type": "text_delta", "delta": delta, "partial": assistant(partial)})
        }
        ModelEvent::ToolCall { call: c, partial } => {
            json!({"type": "tool_call", "call": call(c), "partial": assistant(partial)})
        }
        ModelEvent::Done { reason } => json!({"type": "done", "reason": to_json(reason)}),
        ModelEvent::Error { message } => json!({"type": "error", "message": message}),
    }
}

pub fn messages(messages: &[Message]) -> Value {
    to_json(&messages)
}

pub fn run_reason(reason: RunReason) -> &'static str {
    match reason {
        RunReason::Stop => "stop",
        RunReason::Length => "length",
        RunReason::Error => "error",
        RunReason::Aborted => "aborted",
        RunReason::MaxSteps => "maxSteps",
    }
}

pub fn loop_event(event: &LoopEvent) -> Value {
    match event {
        LoopEvent::ModelEvent(event) => json!({"type": "model_event", "event": model_event(event)}),
        LoopEvent::AssistantMessage(message) => {
            json!({"type": "assistant_message", "message": assistant(message)})
        }
        LoopEvent::ToolStart { call: c } => json!({"type": "tool_start", "call": call(c)}),
        LoopEvent::ToolProgress { call_id, content } => {
            json!({"type": "tool_progress", "toolCallId": call_id, "content": to_json(content)})
        }
        LoopEvent::ToolEnd { result } => json!({"type": "tool_end", "result": tool_result(result)}),
        LoopEvent::ToolSkipped { result } => {
            json!({"type": "tool_skipped", "result": tool_result(result)})
        }
        LoopEvent::TurnEnd { reason } => json!({"type": "turn_end", "reason": run_reason(*reason)}),
    }
}

/// The `request` step of the `n`th model request (1-based).
pub fn request(n: usize, request: &ModelRequest) -> Value {
    json!({
        "kind": "request",
        "n": n,
        "system_prompt": request.system_prompt,
        "messages": messages(&request.messages),
        "tools": to_json(&request.tools),
    })
}

/// The `result` step: what the run returned, and the caller's context as it is after the run (`null`
/// when it could not be read: something still holds its lock).
/// The run's result, the caller's context as it is now, and whether the caller's signal is aborted now.
pub fn result(result: &AgentRunResult, caller: Value, signal_aborted: bool) -> Value {
    json!({
        "kind": "result",
        "reason": run_reason(result.reason),
        "steps": result.steps,
        "messages": messages(&result.messages),
        "caller": caller,
        "signal_aborted": signal_aborted,
    })
}
