//! Chapter 07's messages in the wire shape both tracks share (docs/JUDGE.md): camelCase fields, `role`
//! and `type` tags, `details` always present, `errorMessage` only when set.

use serde_json::{json, Value};

use crate::spec::object;

pub fn text(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

pub fn user(line: &str) -> Value {
    json!({ "role": "user", "content": [text(line)] })
}

pub fn assistant(content: Vec<Value>, stop_reason: &str, error_message: Option<&str>) -> Value {
    let mut message = object([
        ("role", json!("assistant")),
        ("content", Value::Array(content)),
        ("stopReason", json!(stop_reason)),
    ]);
    if let Some(error) = error_message {
        message["errorMessage"] = json!(error);
    }
    message
}

pub fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({ "type": "toolCall", "id": id, "name": name, "arguments": arguments })
}

pub fn tool_result(
    id: &str,
    name: &str,
    content: Vec<Value>,
    details: Value,
    is_error: bool,
) -> Value {
    object([
        ("role", json!("toolResult")),
        ("toolCallId", json!(id)),
        ("toolName", json!(name)),
        ("content", Value::Array(content)),
        ("details", details),
        ("isError", json!(is_error)),
    ])
}

/// The calls of an assistant message, in the order the model wrote them.
pub fn calls_of(message: &Value) -> Vec<Value> {
    let content = message["content"].as_array().cloned().unwrap_or_default();
    content
        .into_iter()
        .filter(|b| b["type"] == "toolCall")
        .collect()
}
