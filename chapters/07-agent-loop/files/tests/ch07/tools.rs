//! The scenario's tools: the driver's executor (behaviour per call id) and its registry tools
//! (behaviour per tool name). Each invocation records `exec_enter`, reports its progress (an
//! `exec_progress` step just before each report), waits at its gate, cancels the run if asked, records
//! `exec_leave`, then returns, fails or panics as the scenario says.
//!
//! # The signal a tool was given
//!
//! `exec_enter` says which signal the tool received: `run` (the run's own token), `derived` (another
//! token that follows the run's) or `other`. `CancellationToken`'s `PartialEq` is its identity: two
//! tokens are equal exactly when they share one cancellation node (clones), so `run` is decided by `==`,
//! documented behaviour rather than a look at the token's insides. Whether a *different* token follows
//! the run's cannot be asked without cancelling one of them, which would change the run being observed;
//! so a different token counts as `derived` only when that is already visible (the run's signal is
//! cancelled, and so is it) and as `other` otherwise. A child token of a live run thus reads `other`:
//! either way it is not the run's own token, which is what the chapter asks for.

use std::fmt;
use std::sync::Arc;

use pi_course::agent_loop::ToolExecutor;
use pi_course::message::{ContentBlock, ToolCall, ToolResultMessage};
use pi_course::tool::{
    BoxFuture, CancellationToken, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput,
};
use serde_json::{json, Value};

use crate::instance::{tool_ref, Behavior, Outcome, ToolOk};
use crate::scene::Scene;
use crate::wire;

/// The error a scripted failure returns: its `Display` is the message a result may carry; its `Debug`
/// is a text that must never reach a result (a loop that formats with `{:?}` leaks it).
pub struct ScriptedError {
    message: String,
    debug: String,
}

impl fmt::Display for ScriptedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ScriptedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.debug)
    }
}

impl std::error::Error for ScriptedError {}

/// Where this file's deliberate panics are raised: the driver's panic hook keeps them off stderr.
pub const DELIBERATE_PANICS: &str = file!();

/// The signal `given` to a tool, relative to the run's `run` (see the module documentation).
pub fn signal_identity(given: &CancellationToken, run: &CancellationToken) -> &'static str {
    if given == run {
        "run"
    } else if run.is_cancelled() && given.is_cancelled() {
        "derived"
    } else {
        "other"
    }
}

/// The executor handed to the loop when the instance asks for one.
pub fn executor(scene: Arc<Scene>) -> ToolExecutor {
    Arc::new(move |call: ToolCall, ctx: ToolContext| {
        let scene = scene.clone();
        let run = async move {
            let enter = json!({
                "kind": "exec_enter",
                "via": "executor",
                "call": wire::call(&call),
                "signal": signal_identity(&ctx.signal, scene.signal()),
                "ctx_call_id": ctx.call_id,
            });
            let behaviour = scene.calls(&call.id, &call.name);
            perform(&scene, &call.id, enter, behaviour, ctx).await
        };
        Box::pin(run) as BoxFuture<Result<ToolResultMessage, ToolError>>
    })
}

/// A registry tool with the scenario's definition.
pub struct ScriptedTool {
    pub definition: ToolDefinition,
    pub scene: Arc<Scene>,
}

impl Tool for ScriptedTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn execute(
        &self,
        arguments: Value,
        ctx: ToolContext,
    ) -> BoxFuture<Result<ToolOutput, ToolError>> {
        let (scene, name) = (self.scene.clone(), self.definition.name.clone());
        Box::pin(async move {
            let enter = json!({
                "kind": "exec_enter",
                "via": "tool",
                "tool": name,
                "arguments": arguments,
                "signal": signal_identity(&ctx.signal, scene.signal()),
                "ctx_call_id": ctx.call_id,
            });
            let behaviour = scene.tool_runs(&name);
            let output = perform(&scene, &tool_ref(&name), enter, behaviour, ctx).await?;
            Ok(ToolOutput {
                content: output.content,
                details: output.details,
            })
        })
    }
}

/// One invocation, from `exec_enter` to its outcome.
async fn perform<T>(
    scene: &Scene,
    reference: &str,
    enter: Value,
    behaviour: Behavior<T>,
    ctx: ToolContext,
) -> Result<T, ToolError> {
    scene.record(enter);
    for content in behaviour.progress {
        let step =
            json!({"kind": "exec_progress", "ref": reference, "content": wire::to_json(&content)});
        scene.record(step);
        (ctx.report_progress)(content);
    }
    if behaviour.gate {
        scene.gates.pass(reference).await;
    }
    if behaviour.cancel_run {
        ctx.signal.cancel();
    }
    scene.record(json!({"kind": "exec_leave", "ref": reference}));
    match behaviour.outcome {
        Outcome::Ok(value) => Ok(value),
        Outcome::Error { message, debug } => Err(Box::new(ScriptedError { message, debug })),
        // A panic with a literal's payload (`&'static str`, as `panic!("…")` raises it), and one with a
        // `String` payload: a loop must read both.
        Outcome::Panic(text) => std::panic::panic_any(&*Box::leak(text.into_boxed_str())),
        Outcome::ThrowValue(text) => std::panic::panic_any(text),
        // Neither `&str` nor `String`: a loop that can only show text payloads must still pair it.
        Outcome::PanicValue(value) => std::panic::panic_any(value),
    }
}

/// What an invocation does when the scenario scripted none for it (a call that should never have run):
/// it answers at once (docs/JUDGE.md), and the judge sees the run where it should not be.
pub fn unscripted<T>(answer: T) -> Behavior<T> {
    Behavior {
        progress: Vec::new(),
        gate: false,
        cancel_run: false,
        sync: false,
        outcome: Outcome::Ok(answer),
    }
}

/// The executor's answer to a call it had no behaviour for.
pub fn unplanned_result(id: &str, name: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: id.to_string(),
        tool_name: name.to_string(),
        content: vec![ContentBlock::text(UNPLANNED)],
        details: Value::Null,
        is_error: false,
    }
}

/// A registry tool's output for an invocation it had no behaviour for.
pub fn unplanned_output() -> ToolOk {
    ToolOk {
        content: vec![ContentBlock::text(UNPLANNED)],
        details: Value::Null,
    }
}

/// The text of those answers.
const UNPLANNED: &str = "unplanned call";
