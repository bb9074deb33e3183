//! The conversation between the user, the model and the tools.
//!
//! The serde attributes reproduce pi's wire shape exactly (a `role` tag on messages, a `type` tag on
//! content blocks, camelCase field names), so a transcript saved by one side can be replayed by the other.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    Text { text: String },
    ToolCall(ToolCall),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// The model asking for one action. `id` is what the matching result answers to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// Why the model stopped producing this message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Finished its answer.
    Stop,
    /// Ran out of output tokens: whatever it was writing may be cut short.
    Length,
    /// Wants the tool calls in this message run.
    ToolUse,
    /// The provider failed; `error_message` says how.
    Error,
    /// The request was cancelled.
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub content: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

impl AssistantMessage {
    pub fn new(content: Vec<ContentBlock>, stop_reason: StopReason) -> Self {
        AssistantMessage {
            content,
            stop_reason,
            error_message: None,
        }
    }

    /// A finished text answer (stop reason `Stop`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)], StopReason::Stop)
    }

    /// A message that asks for these calls to be run (stop reason `ToolUse`).
    pub fn tool_use(calls: Vec<ToolCall>) -> Self {
        let content = calls.into_iter().map(ContentBlock::ToolCall).collect();
        Self::new(content, StopReason::ToolUse)
    }

    /// A failed response (stop reason `Error`) with no content.
    pub fn error(message: impl Into<String>) -> Self {
        AssistantMessage {
            error_message: Some(message.into()),
            ..Self::new(Vec::new(), StopReason::Error)
        }
    }

    /// The tool calls in this message, in the order the model wrote them.
    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolCall(call) => Some(call),
                ContentBlock::Text { .. } => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    /// Structured data for programs (a UI, a test); the model reads `content`.
    #[serde(default)]
    pub details: Value,
    pub is_error: bool,
}

impl ToolResultMessage {
    /// A failed result for `call`: one text block, no details.
    pub fn error(call: &ToolCall, text: impl Into<String>) -> Self {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![ContentBlock::text(text)],
            details: Value::Null,
            is_error: true,
        }
    }

    /// All text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                ContentBlock::ToolCall(_) => None,
            })
            .collect();
        texts.join("\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage {
            content: vec![ContentBlock::text(text)],
        })
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(message) => Some(message),
            _ => None,
        }
    }

    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            Message::ToolResult(message) => Some(message),
            _ => None,
        }
    }
}

impl From<AssistantMessage> for Message {
    fn from(message: AssistantMessage) -> Self {
        Message::Assistant(message)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(message: ToolResultMessage) -> Self {
        Message::ToolResult(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn skipped_result_keeps_the_wire_shape() {
        // The skipped-call example from chapter 07, exactly as pi writes it.
        let wire = json!({
            "role": "toolResult",
            "toolCallId": "cut",
            "toolName": "echo",
            "content": [{
                "type": "text",
                "text": "Tool call was not executed because the model response was truncated."
            }],
            "details": {"skipped": true, "reason": "length"},
            "isError": true
        });

        let message: Message = serde_json::from_value(wire.clone()).unwrap();
        let result = message.as_tool_result().expect("a tool result");
        assert_eq!(result.tool_call_id, "cut");
        assert!(result.is_error);
        assert_eq!(serde_json::to_value(&message).unwrap(), wire);
    }

    #[test]
    fn assistant_message_with_a_call_round_trips() {
        let wire = json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "toolCall", "id": "call-1", "name": "echo", "arguments": {"text": "hi"}}
            ],
            "stopReason": "toolUse"
        });

        let message: Message = serde_json::from_value(wire.clone()).unwrap();
        let assistant = message.as_assistant().expect("an assistant message");
        assert_eq!(assistant.stop_reason, StopReason::ToolUse);
        assert_eq!(
            assistant.tool_calls(),
            vec![&ToolCall::new("call-1", "echo", json!({"text": "hi"}))]
        );
        // No `errorMessage` key appears when there is no error.
        assert_eq!(serde_json::to_value(&message).unwrap(), wire);
    }

    #[test]
    fn error_message_is_written_only_when_present() {
        let value =
            serde_json::to_value(Message::from(AssistantMessage::error("overloaded"))).unwrap();
        assert_eq!(value["stopReason"], "error");
        assert_eq!(value["errorMessage"], "overloaded");
    }

    #[test]
    fn tool_result_text_joins_text_blocks() {
        let call = ToolCall::new("c", "echo", json!({}));
        let mut result = ToolResultMessage::error(&call, "first");
        result.content.push(ContentBlock::text("second"));
        assert_eq!(result.text(), "first\nsecond");
    }
}
