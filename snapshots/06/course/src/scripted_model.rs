//! A model that replays a fixed script, so the agent can be tested without a network or a provider.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::event_stream::{event_stream, EventStream};
use crate::message::{AssistantMessage, ContentBlock, StopReason};
use crate::model::{Model, ModelEvent, ModelRequest};

/// Answers request N with the N-th scripted message and remembers every request it was sent.
///
/// Tests usually keep an `Arc<ScriptedModel>` to inspect, and hand a clone to the code under test as an
/// `Arc<dyn Model>`.
pub struct ScriptedModel {
    script: Mutex<VecDeque<AssistantMessage>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub fn new(script: Vec<AssistantMessage>) -> Self {
        ScriptedModel {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request seen, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests were made.
    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    fn next_message(&self) -> AssistantMessage {
        let call = self.calls();
        // Running off the end is an ordinary model failure, not a panic: the caller under test decides
        // what to do with it, and the test sees what it did.
        self.script.lock().unwrap().pop_front().unwrap_or_else(|| {
            AssistantMessage::error(format!(
                "ScriptedModel has no response left for request {call}"
            ))
        })
    }
}

impl Model for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> EventStream<ModelEvent, AssistantMessage> {
        self.requests.lock().unwrap().push(request);
        let message = self.next_message();

        let (sender, stream) = event_stream();
        for event in events_for(&message) {
            sender.push(event);
        }
        sender.end(message);
        stream
    }
}

/// The events a streaming provider would have sent while writing `message`.
fn events_for(message: &AssistantMessage) -> Vec<ModelEvent> {
    // Until the stream is done, a partial has no stop reason of its own; `Stop` is a placeholder.
    let mut partial = AssistantMessage::new(Vec::new(), StopReason::Stop);
    let mut events = vec![ModelEvent::Start {
        partial: partial.clone(),
    }];
    for block in &message.content {
        partial.content.push(block.clone());
        events.push(match block {
            ContentBlock::Text { text } => ModelEvent::TextDelta {
                delta: text.clone(),
                partial: partial.clone(),
            },
            ContentBlock::ToolCall(call) => ModelEvent::ToolCall {
                call: call.clone(),
                partial: partial.clone(),
            },
        });
    }
    events.push(match message.stop_reason {
        StopReason::Error => ModelEvent::Error {
            message: message
                .error_message
                .clone()
                .unwrap_or_else(|| "model error".to_owned()),
        },
        reason => ModelEvent::Done { reason },
    });
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, ToolCall};
    use serde_json::json;
    use std::sync::Arc;

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system_prompt: "be brief".into(),
            messages: vec![Message::user(text)],
            tools: Vec::new(),
        }
    }

    async fn drain(
        mut stream: EventStream<ModelEvent, AssistantMessage>,
    ) -> (Vec<ModelEvent>, AssistantMessage) {
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        (events, stream.result().await)
    }

    #[tokio::test]
    async fn streams_events_derived_from_the_message() {
        let call = ToolCall::new("call-1", "echo", json!({"text": "hi"}));
        let mut message = AssistantMessage::tool_use(vec![call.clone()]);
        message.content.insert(0, ContentBlock::text("Checking."));
        let model = ScriptedModel::new(vec![message.clone()]);

        let (events, result) = drain(model.stream(request("hi"))).await;

        let mut partial = AssistantMessage::new(Vec::new(), StopReason::Stop);
        let start = ModelEvent::Start {
            partial: partial.clone(),
        };
        partial.content.push(ContentBlock::text("Checking."));
        let delta = ModelEvent::TextDelta {
            delta: "Checking.".into(),
            partial: partial.clone(),
        };
        partial.content.push(ContentBlock::ToolCall(call.clone()));
        let tool_call = ModelEvent::ToolCall { call, partial };
        let done = ModelEvent::Done {
            reason: StopReason::ToolUse,
        };
        assert_eq!(events, vec![start, delta, tool_call, done]);
        assert_eq!(result, message);
    }

    #[tokio::test]
    async fn an_error_message_streams_an_error_event() {
        let model = ScriptedModel::new(vec![AssistantMessage::error("overloaded")]);
        let (events, result) = drain(model.stream(request("hi"))).await;
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Error {
                message: "overloaded".into()
            })
        );
        assert_eq!(result.stop_reason, StopReason::Error);
    }

    #[tokio::test]
    async fn records_every_request_even_past_the_end_of_the_script() {
        // Tests hold the concrete model and hand out a trait object, as the agent loop will.
        let scripted = Arc::new(ScriptedModel::new(vec![AssistantMessage::text(
            "only answer",
        )]));
        let model: Arc<dyn Model> = scripted.clone();

        let (_, first) = drain(model.stream(request("one"))).await;
        let (_, second) = drain(model.stream(request("two"))).await;

        assert_eq!(first, AssistantMessage::text("only answer"));
        assert_eq!(second.stop_reason, StopReason::Error);
        assert!(second.error_message.unwrap().contains("no response left"));
        assert_eq!(scripted.calls(), 2);
        assert_eq!(scripted.requests()[1], request("two"));
    }
}
