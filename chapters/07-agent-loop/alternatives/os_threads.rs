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

use crate::message::{ToolCall, ToolResultMessage};
use crate::tool::ToolContext;

// A correct loop of another shape: every tool runs on an OS thread of its own (`std::thread`), which
// drives the call on a current-thread runtime it builds for itself. The thread emits `ToolEnd` the
// moment its call settles and hands the result back over a oneshot channel; the loop awaits those
// channels in call order.

use std::any::Any;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::json;
use tokio::sync::oneshot;

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
    let reason = loop {
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
        match decide(assistant.stop_reason, &calls) {
            Decision::Execute => {}
            Decision::End(reason) => break reason,
            Decision::Skip(reason, why, ends) => {
                for call in &calls {
                    let result = skipped(call, reason, why);
                    emit(LoopEvent::ToolSkipped {
                        result: result.clone(),
                    });
                    messages.push(result.into());
                }
                break ends;
            }
        }

        let mut pending = Vec::new();
        for call in &calls {
            emit(LoopEvent::ToolStart { call: call.clone() });
            let (done, result) = oneshot::channel();
            let (options, call) = (options.clone(), call.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the tool thread");
                let settled = catch_unwind(AssertUnwindSafe(|| {
                    runtime.block_on(execute(&options, &call))
                }));
                let result = match settled {
                    Ok(Ok(result)) => result,
                    Ok(Err(error)) => failed(&call, &error.to_string()),
                    Err(payload) => failed(&call, &panic_text(payload)),
                };
                (options.on_event)(LoopEvent::ToolEnd {
                    result: result.clone(),
                });
                let _ = done.send(result);
            });
            pending.push(result);
        }
        for result in pending {
            let result = result.await.expect("every tool thread sends its result");
            messages.push(result.into());
        }
    };
    emit(LoopEvent::TurnEnd { reason });
    AgentRunResult {
        reason,
        messages,
        steps,
    }
}

async fn execute(
    options: &AgentLoopOptions,
    call: &ToolCall,
) -> Result<ToolResultMessage, crate::tool::ToolError> {
    let on_event = options.on_event.clone();
    let call_id = call.id.clone();
    let ctx = ToolContext {
        call_id: call.id.clone(),
        signal: options.signal.clone(),
        report_progress: std::sync::Arc::new(move |content| {
            on_event(LoopEvent::ToolProgress {
                call_id: call_id.clone(),
                content,
            })
        }),
    };
    match &options.executor {
        Some(executor) => executor(call.clone(), ctx).await,
        None => Ok(execute_tool_call(call, &options.tools, ctx).await),
    }
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
