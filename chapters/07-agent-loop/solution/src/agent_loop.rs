//! 第 07 章：Agent Loop。问模型，执行它要的工具，把结果送回去，直到这次运行结束。
//! The agent loop: ask the model, run the tools it asks for, feed the results back, until the run ends.
//!
//! 每次运行都要守住三个不变量 / three invariants hold for every run:
//! 1. 每轮最终的 assistant 消息只加入 transcript 一次 / each final assistant message is appended once;
//! 2. 下一次模型请求前，每个 tool call 都恰好有一条同 id 的结果 / before the next request, every call
//!    has exactly one result with its id;
//! 3. 一次运行只发出一个 `TurnEnd` / exactly one `TurnEnd` per run.
//!
//! 公共类型（`LoopEvent`、`AgentRunResult`、`AgentLoopOptions` 等）声明在给定的 crate `api/` 里
//! （`api/src/lib.rs`），这里原样重新导出：测试用的就是这些类型。
//! The public types (`LoopEvent`, `AgentRunResult`, `AgentLoopOptions`, ...) are declared in the given
//! crate `api/` (`api/src/lib.rs`) and re-exported here as they are: they are the types the tests use.

pub use pi_course_api::agent_loop::{
    AgentContext, AgentLoopOptions, AgentRunResult, EventSink, LoopEvent, RunReason, SharedContext,
    ToolExecutor, DEFAULT_MAX_STEPS,
};

// ---------------------------------------------------------------------------------------------------
// 以上是公共表面：保持不变。你的代码写在下面；重新评分时只重新编译这个文件所在的 crate，测试不必重编。
// Above is the public surface: keep it as it is. Write your code below; a re-grade recompiles only the
// crate this file is in, never the tests.
// ---------------------------------------------------------------------------------------------------

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;
use tokio::task::{JoinError, JoinHandle};

use crate::message::StopReason;
use crate::message::{AssistantMessage, ToolCall, ToolResultMessage};
use crate::model::ModelRequest;
use crate::tool::execute_tool_call;
use crate::tool::ToolContext;

/// The run's one look at the caller's conversation. A copy, taken under the lock and released at
/// once: others may keep reading (or changing) the shared context while tools run.
fn snapshot(options: &AgentLoopOptions) -> AgentContext {
    options.context.lock().unwrap().clone()
}

/// A reason for answering a call without running it: the `reason` written to the result's details, and
/// the end of the sentence the model will read.
type Skip = (&'static str, &'static str);
const TRUNCATED: Skip = ("length", "the model response was truncated");
const FAILED: Skip = ("error", "the model response ended with an error");
const ABORTED: Skip = ("aborted", "the run was aborted");
const UNEXPECTED_STOP: Skip = (
    "unexpected-stop",
    "the model stopped without requesting tool use",
);
const DUPLICATE_ID: Skip = ("duplicate-call-id", "its message repeats a tool call id");

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
        if self.options.signal.is_cancelled() {
            Some(RunReason::Aborted)
        } else if self.steps >= self.options.max_steps {
            Some(RunReason::MaxSteps)
        } else {
            None
        }
    }

    /// One model turn: forward every event, then append the final message (never a partial) once.
    async fn request(&mut self) -> AssistantMessage {
        self.steps += 1;
        let mut stream = self.options.model.stream(ModelRequest {
            system_prompt: self.transcript.system_prompt.clone(),
            messages: self.transcript.messages.clone(),
            tools: self.options.tools.definitions(),
        });
        while let Some(event) = stream.next().await {
            self.emit(LoopEvent::ModelEvent(event));
        }
        let assistant = stream.result().await;
        self.transcript.messages.push(assistant.clone().into());
        self.emit(LoopEvent::AssistantMessage(assistant.clone()));
        assistant
    }

    /// The decision table. `None`: run the calls and ask again; `Some`: the run ends for that reason.
    fn handle_stop(&mut self, assistant: &AssistantMessage) -> Option<RunReason> {
        let calls = assistant.tool_calls();
        let (skip, reason) = match (assistant.stop_reason, calls.is_empty()) {
            (StopReason::ToolUse, false) if repeats_an_id(&calls) => {
                (DUPLICATE_ID, RunReason::Error)
            }
            (StopReason::ToolUse, false) => return None,
            // Nothing to run, yet not finished: the model cannot make progress.
            (StopReason::ToolUse, true) => return Some(RunReason::Error),
            (StopReason::Stop, true) => return Some(RunReason::Stop),
            // A protocol contradiction: never guess what the model meant.
            (StopReason::Stop, false) => (UNEXPECTED_STOP, RunReason::Error),
            // Truncated arguments may still parse; running half a `write` is never safe.
            (StopReason::Length, _) => (TRUNCATED, RunReason::Length),
            (StopReason::Error, _) => (FAILED, RunReason::Error),
            (StopReason::Aborted, _) => (ABORTED, RunReason::Aborted),
        };
        // The assistant message is already in the transcript, so its calls cannot just be dropped.
        for call in calls {
            let result = skipped(call, skip);
            self.emit(LoopEvent::ToolSkipped {
                result: result.clone(),
            });
            self.transcript.messages.push(result.into());
        }
        Some(reason)
    }

    /// Starts every call at once; writes the results in call order, whatever order they finish in.
    async fn run_batch(&mut self, calls: &[&ToolCall]) {
        let tasks: Vec<_> = calls.iter().map(|call| self.spawn(call)).collect();
        for task in tasks {
            let result = task.await.expect("the event sink panicked");
            self.transcript.messages.push(result.into());
        }
    }

    /// Runs one call on its own task and emits its ToolEnd the moment it finishes.
    fn spawn(&self, call: &ToolCall) -> JoinHandle<ToolResultMessage> {
        self.emit(LoopEvent::ToolStart { call: call.clone() });
        let options = &self.options;
        let (on_event, call_id) = (options.on_event.clone(), call.id.clone());
        let ctx = ToolContext {
            call_id: call.id.clone(),
            signal: options.signal.clone(),
            report_progress: Arc::new(move |content| {
                let call_id = call_id.clone();
                on_event(LoopEvent::ToolProgress { call_id, content })
            }),
        };
        // An inner task of its own turns a panic into a JoinError instead of unwinding through us.
        let work = match &options.executor {
            Some(executor) => tokio::spawn(executor(call.clone(), ctx)),
            None => {
                let (call, tools) = (call.clone(), options.tools.clone());
                tokio::spawn(async move { Ok(execute_tool_call(&call, &tools, ctx).await) })
            }
        };
        let (call, on_event) = (call.clone(), options.on_event.clone());
        tokio::spawn(async move {
            let result = match work.await {
                Ok(Ok(result)) => result,
                Ok(Err(error)) => failed(&call, &error.to_string()),
                Err(join_error) => failed(&call, &panic_message(join_error)),
            };
            on_event(LoopEvent::ToolEnd {
                result: result.clone(),
            });
            result
        })
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

fn repeats_an_id(calls: &[&ToolCall]) -> bool {
    let mut seen = HashSet::new();
    !calls.iter().all(|call| seen.insert(&call.id))
}

fn skipped(call: &ToolCall, (reason, why): Skip) -> ToolResultMessage {
    ToolResultMessage {
        details: json!({"skipped": true, "reason": reason}),
        ..ToolResultMessage::error(call, format!("Tool call was not executed because {why}."))
    }
}

fn failed(call: &ToolCall, message: &str) -> ToolResultMessage {
    ToolResultMessage::error(call, format!("Tool {} failed: {message}", call.name))
}

/// The text a panic was raised with: `panic!` carries a `String` or a `&str`.
fn panic_message(error: JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => match payload.downcast::<String>() {
            Ok(text) => *text,
            Err(payload) => payload
                .downcast_ref::<&str>()
                .map_or("it panicked", |s| *s)
                .to_owned(),
        },
        Err(_) => "the task was cancelled".to_owned(),
    }
}
