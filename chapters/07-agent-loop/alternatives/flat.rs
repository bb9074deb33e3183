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

use crate::message::{ToolCall, ToolResultMessage};
use crate::tool::ToolContext;

// A correct loop of another shape: one flat function. The decision table, the skipped results, the
// batch and the error results are all written inline in `run_agent_loop`, with no helper at all.

use std::collections::HashSet;

use serde_json::json;

use crate::message::StopReason;
use crate::model::ModelRequest;
use crate::tool::execute_tool_call;

pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {
    let emit = |event: LoopEvent| (options.on_event)(event);
    let (system_prompt, mut messages) = {
        let shared = options.context.lock().unwrap();
        (shared.system_prompt.clone(), shared.messages.clone())
    };
    let mut steps = 0;
    let reason = 'run: loop {
        if options.signal.is_cancelled() {
            break RunReason::Aborted;
        }
        if steps >= options.max_steps {
            break RunReason::MaxSteps;
        }
        steps += 1;
        let mut stream = options.model.stream(ModelRequest {
            system_prompt: system_prompt.clone(),
            messages: messages.clone(),
            tools: options.tools.definitions(),
        });
        while let Some(event) = stream.next().await {
            emit(LoopEvent::ModelEvent(event));
        }
        let assistant = stream.result().await;
        messages.push(assistant.clone().into());
        emit(LoopEvent::AssistantMessage(assistant.clone()));

        let calls: Vec<ToolCall> = assistant.tool_calls().into_iter().cloned().collect();
        let mut ids = HashSet::new();
        let repeats = !calls.iter().all(|call| ids.insert(call.id.clone()));
        let (reason, why, ends) = match (assistant.stop_reason, calls.is_empty()) {
            (StopReason::ToolUse, false) if repeats => (
                "duplicate-call-id",
                "its message repeats a tool call id",
                RunReason::Error,
            ),
            (StopReason::ToolUse, false) => {
                let mut tasks = Vec::new();
                for call in &calls {
                    emit(LoopEvent::ToolStart { call: call.clone() });
                    let (on_event, call_id) = (options.on_event.clone(), call.id.clone());
                    let ctx = ToolContext {
                        call_id: call.id.clone(),
                        signal: options.signal.clone(),
                        report_progress: Arc::new(move |content| {
                            let call_id = call_id.clone();
                            on_event(LoopEvent::ToolProgress { call_id, content })
                        }),
                    };
                    let work = match &options.executor {
                        Some(executor) => tokio::spawn(executor(call.clone(), ctx)),
                        None => {
                            let (call, tools) = (call.clone(), options.tools.clone());
                            tokio::spawn(
                                async move { Ok(execute_tool_call(&call, &tools, ctx).await) },
                            )
                        }
                    };
                    let (call, on_event) = (call.clone(), options.on_event.clone());
                    tasks.push(tokio::spawn(async move {
                        let message = match work.await {
                            Ok(Ok(result)) => Ok(result),
                            Ok(Err(error)) => Err(error.to_string()),
                            Err(join_error) => Err(match join_error.try_into_panic() {
                                Ok(payload) => match payload.downcast::<String>() {
                                    Ok(text) => *text,
                                    Err(payload) => match payload.downcast::<&'static str>() {
                                        Ok(text) => text.to_string(),
                                        Err(_) => "the tool panicked".to_string(),
                                    },
                                },
                                Err(_) => "the task was cancelled".to_string(),
                            }),
                        };
                        let result = message.unwrap_or_else(|message| {
                            let text = format!("Tool {} failed: {message}", call.name);
                            ToolResultMessage::error(&call, text)
                        });
                        on_event(LoopEvent::ToolEnd {
                            result: result.clone(),
                        });
                        result
                    }));
                }
                for task in tasks {
                    let result = task.await.expect("the outer task never panics");
                    messages.push(result.into());
                }
                continue 'run;
            }
            (StopReason::ToolUse, true) => break RunReason::Error,
            (StopReason::Stop, true) => break RunReason::Stop,
            (StopReason::Stop, false) => (
                "unexpected-stop",
                "the model stopped without requesting tool use",
                RunReason::Error,
            ),
            (StopReason::Length, _) => (
                "length",
                "the model response was truncated",
                RunReason::Length,
            ),
            (StopReason::Error, _) => (
                "error",
                "the model response ended with an error",
                RunReason::Error,
            ),
            (StopReason::Aborted, _) => ("aborted", "the run was aborted", RunReason::Aborted),
        };
        for call in &calls {
            let result = ToolResultMessage {
                details: json!({ "skipped": true, "reason": reason }),
                ..ToolResultMessage::error(
                    call,
                    format!("Tool call was not executed because {why}."),
                )
            };
            emit(LoopEvent::ToolSkipped {
                result: result.clone(),
            });
            messages.push(result.into());
        }
        break ends;
    };
    emit(LoopEvent::TurnEnd { reason });
    AgentRunResult {
        reason,
        messages,
        steps,
    }
}
