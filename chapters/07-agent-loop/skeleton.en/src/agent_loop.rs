//! Chapter 07: the agent loop. Ask the model, run the tools it asks for, feed the results back, until
//! the run ends.
//!
//! Three invariants hold for every run:
//! 1. each final assistant message is appended to the transcript once;
//! 2. before the next model request, every tool call has exactly one result with its id;
//! 3. exactly one `TurnEnd` per run.
//!
//! The public types (`LoopEvent`, `AgentRunResult`, `AgentLoopOptions`, ...) are declared in the given
//! crate `api/` (`api/src/lib.rs`) and re-exported here as they are: they are the types the tests use.

pub use pi_course_api::agent_loop::{
    AgentContext, AgentLoopOptions, AgentRunResult, EventSink, LoopEvent, RunReason, SharedContext,
    ToolExecutor, DEFAULT_MAX_STEPS,
};

// ---------------------------------------------------------------------------------------------------
// Above is the public surface: keep it as it is. Write your code below; a re-grade recompiles only the
// crate this file is in, never the tests.
// ---------------------------------------------------------------------------------------------------

// The public types and `AgentLoopOptions::new` are written (in `api/`), and so are the main loop of
// `run_agent_loop`, `Run::finish`, and the part of `run_batch` that awaits and writes the results; each
// `todo!()` is a piece for you to write, and its message names its Lab.
// You may need: `crate::model::ModelRequest`, `crate::tool::{execute_tool_call, ToolContext}`,
// `serde_json::json!`, `tokio::spawn`, `std::sync::Arc`.

use tokio::task::{JoinError, JoinHandle};

use crate::message::{AssistantMessage, StopReason, ToolCall, ToolResultMessage};
use crate::tool::ToolError;

/// The run's one look at the caller's conversation.
fn snapshot(_options: &AgentLoopOptions) -> AgentContext {
    todo!("Lab 7.1: clone the caller's context (system prompt and messages) once, under the lock; from then on change only that copy")
}

pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {
    let mut run = Run {
        transcript: snapshot(&options),
        options,
        steps: 0,
    };
    let reason = loop {
        if let Some(reason) = run.check_boundaries() {
            break reason;
        }
        let assistant = run.request().await;
        if let Some(reason) = run.handle_stop(&assistant) {
            break reason;
        }
        run.run_batch(&assistant.tool_calls()).await;
    };
    run.finish(reason)
}

/// One run in progress.
struct Run {
    options: AgentLoopOptions,
    /// The run's own conversation: every request is built from it, every result is written to it.
    transcript: AgentContext,
    /// Model requests made so far.
    steps: usize,
}

impl Run {
    fn emit(&self, event: LoopEvent) {
        (self.options.on_event)(event)
    }

    /// Checked before every request, which is also right after the previous batch was written.
    fn check_boundaries(&self) -> Option<RunReason> {
        if self.options.signal.is_cancelled() || self.steps >= self.options.max_steps {
            todo!("Lab 7.5: the boundary before a request: end aborted if the signal is cancelled, end max_steps if the request limit is reached")
        }
        None
    }

    /// One model turn: forward every event, then append the final message (never a partial) once.
    async fn request(&mut self) -> AssistantMessage {
        todo!("Lab 7.1: add one to steps and request the model with the transcript and every tool definition; forward each model event, then take result(), append it once and emit assistant_message")
    }

    /// The decision table. `None`: run the calls and ask again; `Some`: the run ends for that reason.
    fn handle_stop(&mut self, assistant: &AssistantMessage) -> Option<RunReason> {
        let calls = assistant.tool_calls();
        match (assistant.stop_reason, calls.is_empty()) {
            // Lab 7.6 (optional): a call id used twice in one message? Add an arm before this line.
            (StopReason::ToolUse, false) => None,
            (StopReason::Stop, true) => todo!("Lab 7.1: a plain-text stop: this run ends normally"),
            (reason, _) => todo!(
                "Lab 7.3: non-executing terminal state {reason:?} ({} calls): run none of them, write skipped(call, reason) and emit tool_skipped for each call, then end with the matching reason",
                calls.len()
            ),
        }
    }

    /// A batch, of one call or of several: every call starts (each on a task of its own, see `spawn`)
    /// before any is awaited, and the results are written in call order, whatever order they finish in.
    async fn run_batch(&mut self, calls: &[&ToolCall]) {
        let tasks: Vec<JoinHandle<ToolResultMessage>> = match calls {
            // A batch of one call: the code Lab 7.4 writes serves it as well, and this arm can go then.
            [call] => vec![self.spawn(call)],
            _ => todo!("Lab 7.4: start every call of the batch with self.spawn, all of them before awaiting any (a batch of one call is the same code)"),
        };
        for task in tasks {
            // A panic of the task itself (not of the tool: `paired` pairs those) goes on as the loop's own.
            let result = task
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            self.transcript.messages.push(result.into());
        }
    }

    /// Runs one call on a task of its own and emits its ToolEnd the moment it finishes.
    fn spawn(&self, _call: &ToolCall) -> JoinHandle<ToolResultMessage> {
        todo!("Lab 7.2: emit tool_start; hand the executor (execute_tool_call if there is none) the call id, the run's signal and a progress callback, on a task of its own; when it ends, paired(call, how it ended) gives the result: emit tool_end and return it")
    }

    /// The single exit: every run emits exactly one TurnEnd, here.
    fn finish(self, reason: RunReason) -> AgentRunResult {
        self.emit(LoopEvent::TurnEnd { reason });
        AgentRunResult {
            reason,
            messages: self.transcript.messages,
            steps: self.steps,
        }
    }
}

/// The paired result of a call that was not run: same id and name, `is_error`, details
/// `{"skipped": true, "reason": reason}`.
#[allow(dead_code)] // in use once Lab 7.3's rows of the decision table are written
fn skipped(call: &ToolCall, reason: &'static str) -> ToolResultMessage {
    todo!("Lab 7.3: write a skipped result for call {} (reason {reason}): same id/name, is_error, details {{skipped: true, reason}}, text from the table in GUIDE.en.md", call.id)
}

/// What a call's task became: the executor's result as it is; an `Err` or a panic becomes an error result
/// paired to the call (Lab 7.4). Every call gets exactly one result with its id, a lone call too.
#[allow(dead_code)] // in use once Lab 7.2's `spawn` is written
fn paired(
    call: &ToolCall,
    ended: Result<Result<ToolResultMessage, ToolError>, JoinError>,
) -> ToolResultMessage {
    match ended {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => todo!("Lab 7.4: the executor of call {} returned Err ({error}): write an error result with its id and name whose text carries its Display, never its Debug form", call.id),
        Err(panic) => todo!("Lab 7.4: the executor of call {} panicked ({panic}): write an error result with its id and name whose text carries the panic's message, no location or backtrace", call.id),
    }
}
