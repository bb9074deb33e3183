//! Tools the model may call, the registry that holds them, and the executor that turns one call into
//! exactly one result.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{ContentBlock, ToolCall, ToolResultMessage};

/// Re-exported so code that builds a [`ToolContext`] needs no direct dependency on tokio-util.
pub use tokio_util::sync::CancellationToken;

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// A JSON schema for the arguments.
    pub parameters: Value,
}

/// Receives partial output while a tool is still running.
pub type ProgressReporter = Arc<dyn Fn(Vec<ContentBlock>) + Send + Sync>;

/// What a running tool may know about its surroundings.
#[derive(Clone)]
pub struct ToolContext {
    pub call_id: String,
    /// Cancelled when the run is aborted; a long tool should watch it and stop early.
    pub signal: CancellationToken,
    pub report_progress: ProgressReporter,
}

impl ToolContext {
    /// A context that discards progress.
    pub fn new(call_id: impl Into<String>, signal: CancellationToken) -> Self {
        ToolContext {
            call_id: call_id.into(),
            signal,
            report_progress: Arc::new(|_| {}),
        }
    }

    pub fn report(&self, content: Vec<ContentBlock>) {
        (self.report_progress)(content)
    }
}

/// What a tool returns when it succeeds.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: Vec<ContentBlock>,
    /// Structured data for programs; passed through to the result unchanged.
    pub details: Value,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: Value::Null,
        }
    }
}

pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// A future that can be moved to another task: tools may be run concurrently.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

pub trait Tool: Send + Sync {
    fn definition(&self) -> ToolDefinition;
    /// `arguments` have already been checked against `definition().parameters`.
    fn execute(
        &self,
        arguments: Value,
        ctx: ToolContext,
    ) -> BoxFuture<Result<ToolOutput, ToolError>>;
}

/// The tools available to a run, in registration order.
///
/// Registering a tool whose name is already taken replaces the earlier tool in its original position:
/// the model must never see two tools with one name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    // Shared, so cloning a registry into every running call costs one reference count.
    tools: Arc<Vec<(String, Arc<dyn Tool>)>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: impl Tool + 'static) {
        let name = tool.definition().name;
        let tool: Arc<dyn Tool> = Arc::new(tool);
        let tools = Arc::make_mut(&mut self.tools);
        match tools.iter_mut().find(|(existing, _)| *existing == name) {
            Some(slot) => slot.1 = tool,
            None => tools.push((name, tool)),
        }
    }

    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|(_, tool)| tool.definition())
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|(existing, _)| existing == name)
            .map(|(_, tool)| Arc::clone(tool))
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|(name, _)| name))
            .finish()
    }
}

/// Runs one call and always returns its result, paired to `call.id` and `call.name`.
///
/// Every failure the model can cause (an unknown tool, bad arguments) or a tool can report becomes an
/// `is_error` result the model can read and react to; none of them stops the agent.
pub async fn execute_tool_call(
    call: &ToolCall,
    registry: &ToolRegistry,
    ctx: ToolContext,
) -> ToolResultMessage {
    let Some(tool) = registry.get(&call.name) else {
        return ToolResultMessage::error(call, format!("Tool \"{}\" not found", call.name));
    };
    if let Err(problem) = check_arguments(&tool.definition().parameters, &call.arguments) {
        return ToolResultMessage::error(
            call,
            format!("Invalid arguments for tool \"{}\": {problem}", call.name),
        );
    }
    match tool.execute(call.arguments.clone(), ctx).await {
        Ok(output) => ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            details: output.details,
            is_error: false,
        },
        Err(error) => ToolResultMessage::error(call, error.to_string()),
    }
}

/// A deliberately small JSON-schema check: the argument object, its required properties, and the
/// primitive type of each property the schema describes. Anything else in the schema is not checked.
fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Ok(());
    }
    let Some(arguments) = arguments.as_object() else {
        return Err(format!("expected an object, got {}", type_name(arguments)));
    };
    let required = schema["required"].as_array().into_iter().flatten();
    for name in required.filter_map(Value::as_str) {
        if !arguments.contains_key(name) {
            return Err(format!("missing required property \"{name}\""));
        }
    }
    let no_properties = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&no_properties);
    for (name, value) in arguments {
        let expected = properties.get(name).and_then(|p| p["type"].as_str());
        if let Some(expected) = expected {
            if !has_type(value, expected) {
                return Err(format!(
                    "property \"{name}\" must be {expected}, got {}",
                    type_name(value)
                ));
            }
        }
    }
    Ok(())
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "string" => value.is_string(),
        "number" => value.is_number(),
        // JSON has one number type; an integer is a number without a fractional part (1.0 counts).
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // A type this check does not know is left to the tool.
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// Returns its `text` argument, reporting it as progress first.
    struct Echo;

    impl Tool for Echo {
        fn definition(&self) -> ToolDefinition {
            ToolDefinition {
                name: "echo".into(),
                description: "Repeats the text.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
                    "required": ["text"]
                }),
            }
        }

        fn execute(
            &self,
            arguments: Value,
            ctx: ToolContext,
        ) -> BoxFuture<Result<ToolOutput, ToolError>> {
            Box::pin(async move {
                let text = arguments["text"].as_str().unwrap_or_default().to_owned();
                ctx.report(vec![ContentBlock::text(format!("echoing {text}"))]);
                Ok(ToolOutput {
                    content: vec![ContentBlock::text(text.clone())],
                    details: json!({"length": text.len(), "callId": ctx.call_id}),
                })
            })
        }
    }

    /// Always fails with its own message.
    struct Broken;

    impl Tool for Broken {
        fn definition(&self) -> ToolDefinition {
            ToolDefinition {
                name: "broken".into(),
                description: "Fails.".into(),
                parameters: json!({"type": "object"}),
            }
        }

        fn execute(&self, _: Value, _: ToolContext) -> BoxFuture<Result<ToolOutput, ToolError>> {
            Box::pin(async { Err("disk is full".into()) })
        }
    }

    fn registry() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry.register(Echo);
        registry.register(Broken);
        registry
    }

    async fn run(name: &str, arguments: Value) -> ToolResultMessage {
        let call = ToolCall::new("call-1", name, arguments);
        let ctx = ToolContext::new("call-1", CancellationToken::new());
        execute_tool_call(&call, &registry(), ctx).await
    }

    #[tokio::test]
    async fn success_passes_content_and_details_through() {
        let result = run("echo", json!({"text": "hi"})).await;
        assert!(!result.is_error);
        assert_eq!(
            (result.tool_call_id.as_str(), result.tool_name.as_str()),
            ("call-1", "echo")
        );
        assert_eq!(result.text(), "hi");
        assert_eq!(result.details, json!({"length": 2, "callId": "call-1"}));
    }

    #[tokio::test]
    async fn progress_goes_to_the_reporter() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let ctx = ToolContext {
            report_progress: Arc::new(move |content| sink.lock().unwrap().push(content)),
            ..ToolContext::new("call-1", CancellationToken::new())
        };
        let call = ToolCall::new("call-1", "echo", json!({"text": "hi"}));
        execute_tool_call(&call, &registry(), ctx).await;
        assert_eq!(
            *seen.lock().unwrap(),
            vec![vec![ContentBlock::text("echoing hi")]]
        );
    }

    #[tokio::test]
    async fn every_failure_becomes_a_paired_error_result() {
        let cases = [
            ("missing", json!({}), "Tool \"missing\" not found"),
            (
                "echo",
                json!({}),
                "Invalid arguments for tool \"echo\": missing required property \"text\"",
            ),
            (
                "echo",
                json!({"text": 7}),
                "Invalid arguments for tool \"echo\": property \"text\" must be string, got number",
            ),
            (
                "echo",
                json!({"text": "hi", "times": 1.5}),
                "Invalid arguments for tool \"echo\": property \"times\" must be integer, got number",
            ),
            (
                "echo",
                json!("hi"),
                "Invalid arguments for tool \"echo\": expected an object, got string",
            ),
            ("broken", json!({}), "disk is full"),
        ];
        for (name, arguments, text) in cases {
            let result = run(name, arguments).await;
            assert!(result.is_error, "{name} should fail");
            assert_eq!(
                (result.tool_call_id.as_str(), result.tool_name.as_str()),
                ("call-1", name)
            );
            assert_eq!(result.text(), text);
        }
    }

    #[test]
    fn registry_keeps_order_and_replaces_by_name() {
        let mut registry = registry();
        let names = |r: &ToolRegistry| -> Vec<String> {
            r.definitions().into_iter().map(|d| d.name).collect()
        };
        assert_eq!(names(&registry), ["echo", "broken"]);

        registry.register(Echo);
        assert_eq!(names(&registry), ["echo", "broken"]);
        assert!(registry.get("echo").is_some());
        assert!(registry.get("nope").is_none());
    }
}
