//! What a model is asked, and what it streams back.

use crate::event_stream::EventStream;
use crate::message::{AssistantMessage, Message, StopReason, ToolCall};
use crate::tool::ToolDefinition;

/// Everything the model sees for one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub system_prompt: String,
    pub messages: Vec<Message>,
    /// The actions this run allows, even when the model uses none of them.
    pub tools: Vec<ToolDefinition>,
}

/// Progress while the model writes. Each event carries the message so far (`partial`); partials are for
/// display only, the final message comes from the stream's result.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
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

/// A language model, or anything that behaves like one.
///
/// `stream` never fails: a provider error ends the stream with an assistant message whose stop reason is
/// `Error`, so callers handle failure in the same place as every other outcome.
pub trait Model: Send + Sync {
    fn stream(&self, request: ModelRequest) -> EventStream<ModelEvent, AssistantMessage>;
}
