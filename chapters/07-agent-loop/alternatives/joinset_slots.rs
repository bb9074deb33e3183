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

use std::sync::Arc;

use crate::message::{AssistantMessage, Message, ToolCall, ToolResultMessage};
use crate::tool::{BoxFuture, ToolContext, ToolError};

// A correct loop of another shape: the batch runs in a `JoinSet`. Results come back in completion
// order; the task id of each (also of a panicked one) names its slot, the loop emits `ToolEnd` as each
// arrives, and the slots are written in call order once all are filled.

use std::any::Any;
use std::collections::HashMap;
use std::collections::HashSet;

use serde_json::json;

use crate::message::StopReason;
use crate::model::ModelRequest;
use crate::tool::execute_tool_call;

pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {
    let (system_prompt, mut messages) = snapshot(&options);
    let mut steps = 0;
    let reason = loop {
        if options.signal.is_cancelled() {
            break RunReason::Aborted;
        }
        if steps >= options.max_steps {
            break RunReason::MaxSteps;
        }
        steps += 1;
        let assistant = request(&options, &system_prompt, &messages).await;
        messages.push(assistant.clone().into());
        (options.on_event)(LoopEvent::AssistantMessage(assistant.clone()));
        let calls: Vec<ToolCall> = assistant.tool_calls().into_iter().cloned().collect();
        match decide(assistant.stop_reason, &calls) {
            Decision::Execute => {}
            Decision::End(reason) => break reason,
            Decision::Skip(reason, why, ends) => {
                skip_all(&options, &mut messages, &calls, reason, why);
                break ends;
            }
        }
        for result in run_batch(&options, &calls).await {
            messages.push(result.into());
        }
    };
    (options.on_event)(LoopEvent::TurnEnd { reason });
    AgentRunResult {
        reason,
        messages,
        steps,
    }
}

async fn run_batch(options: &AgentLoopOptions, calls: &[ToolCall]) -> Vec<ToolResultMessage> {
    let mut set = tokio::task::JoinSet::new();
    let mut slot_of = HashMap::new();
    for (index, call) in calls.iter().enumerate() {
        (options.on_event)(LoopEvent::ToolStart { call: call.clone() });
        let task = set.spawn(execute(options, call));
        slot_of.insert(task.id(), index);
    }
    let mut slots: Vec<Option<ToolResultMessage>> = vec![None; calls.len()];
    while let Some(joined) = set.join_next_with_id().await {
        let (id, outcome) = match joined {
            Ok((id, result)) => (id, Ok(result)),
            Err(error) => (error.id(), Err(error)),
        };
        let index = slot_of[&id];
        let outcome = outcome.map_err(|error| match error.try_into_panic() {
            Ok(payload) => payload,
            Err(_) => Box::new("the task was cancelled") as Box<dyn Any + Send>,
        });
        let result = settle(&calls[index], outcome);
        (options.on_event)(LoopEvent::ToolEnd {
            result: result.clone(),
        });
        slots[index] = Some(result);
    }
    slots
        .into_iter()
        .map(|slot| slot.expect("every call has a result"))
        .collect()
}

/// The context one call runs with: its own id, the run's own signal, progress under its id.
fn context_for(options: &AgentLoopOptions, call: &ToolCall) -> ToolContext {
    let on_event = options.on_event.clone();
    let call_id = call.id.clone();
    ToolContext {
        call_id: call.id.clone(),
        signal: options.signal.clone(),
        report_progress: Arc::new(move |content| {
            on_event(LoopEvent::ToolProgress {
                call_id: call_id.clone(),
                content,
            })
        }),
    }
}

/// The future of one call's result, from the injected executor or the registry.
fn execute(
    options: &AgentLoopOptions,
    call: &ToolCall,
) -> BoxFuture<Result<ToolResultMessage, ToolError>> {
    let ctx = context_for(options, call);
    match &options.executor {
        Some(executor) => executor(call.clone(), ctx),
        None => {
            let (call, tools) = (call.clone(), options.tools.clone());
            Box::pin(async move { Ok(execute_tool_call(&call, &tools, ctx).await) })
        }
    }
}

/// The result of a call that ran: its own, or a paired error for an `Err` or a panic.
fn settle(
    call: &ToolCall,
    outcome: Result<Result<ToolResultMessage, ToolError>, Box<dyn Any + Send>>,
) -> ToolResultMessage {
    match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => failed(call, &error.to_string()),
        Err(payload) => failed(call, &panic_text(payload)),
    }
}

/// One model turn: forward every event of the stream, then take its one final message.
async fn request(
    options: &AgentLoopOptions,
    system_prompt: &str,
    messages: &[Message],
) -> AssistantMessage {
    let mut stream = options.model.stream(ModelRequest {
        system_prompt: system_prompt.to_string(),
        messages: messages.to_vec(),
        tools: options.tools.definitions(),
    });
    while let Some(event) = stream.next().await {
        (options.on_event)(LoopEvent::ModelEvent(event));
    }
    stream.result().await
}

/// Answers every call without running it, in call order.
fn skip_all(
    options: &AgentLoopOptions,
    messages: &mut Vec<Message>,
    calls: &[ToolCall],
    reason: &str,
    why: &str,
) {
    for call in calls {
        let result = skipped(call, reason, why);
        (options.on_event)(LoopEvent::ToolSkipped {
            result: result.clone(),
        });
        messages.push(result.into());
    }
}

/// The run's one look at the caller's conversation, taken under the lock and released at once.
fn snapshot(options: &AgentLoopOptions) -> (String, Vec<Message>) {
    let shared = options.context.lock().unwrap();
    (shared.system_prompt.clone(), shared.messages.clone())
}

enum Decision {
    Execute,
    End(RunReason),
    Skip(&'static str, &'static str, RunReason),
}

/// The decision table, one row per arm.
fn decide(stop_reason: StopReason, calls: &[ToolCall]) -> Decision {
    let mut ids = HashSet::new();
    let repeats = !calls.iter().all(|call| ids.insert(&call.id));
    match (stop_reason, calls.is_empty()) {
        (StopReason::ToolUse, false) if repeats => Decision::Skip(
            "duplicate-call-id",
            "its message repeats a tool call id",
            RunReason::Error,
        ),
        (StopReason::ToolUse, false) => Decision::Execute,
        (StopReason::ToolUse, true) => Decision::End(RunReason::Error),
        (StopReason::Stop, true) => Decision::End(RunReason::Stop),
        (StopReason::Stop, false) => Decision::Skip(
            "unexpected-stop",
            "the model stopped without requesting tool use",
            RunReason::Error,
        ),
        (StopReason::Length, _) => Decision::Skip(
            "length",
            "the model response was truncated",
            RunReason::Length,
        ),
        (StopReason::Error, _) => Decision::Skip(
            "error",
            "the model response ended with an error",
            RunReason::Error,
        ),
        (StopReason::Aborted, _) => {
            Decision::Skip("aborted", "the run was aborted", RunReason::Aborted)
        }
    }
}

fn skipped(call: &ToolCall, reason: &str, why: &str) -> ToolResultMessage {
    ToolResultMessage {
        details: json!({ "skipped": true, "reason": reason }),
        ..ToolResultMessage::error(call, format!("Tool call was not executed because {why}."))
    }
}

fn failed(call: &ToolCall, message: &str) -> ToolResultMessage {
    ToolResultMessage::error(call, format!("Tool {} failed: {message}", call.name))
}

/// A panic's text: `panic!` raises a `&'static str` or a `String`.
fn panic_text(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(text) => *text,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(text) => text.to_string(),
            Err(_) => "the tool panicked".to_string(),
        },
    }
}
