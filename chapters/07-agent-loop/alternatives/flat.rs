//! 第 07 章：Agent Loop。问模型，执行它要的工具，把结果送回去，直到这次运行结束。
//! The agent loop: ask the model, run the tools it asks for, feed the results back, until the run ends.
//!
//! 每次运行都要守住三个不变量 / three invariants hold for every run:
//! 1. 每轮最终的 assistant 消息只加入 transcript 一次 / each final assistant message is appended once;
//! 2. 下一次模型请求前，每个 tool call 都恰好有一条同 id 的结果 / before the next request, every call
//!    has exactly one result with its id;
//! 3. 一次运行只发出一个 `TurnEnd` / exactly one `TurnEnd` per run.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::message::{AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage};
use crate::model::{Model, ModelEvent};
use crate::tool::{BoxFuture, ToolContext, ToolError, ToolRegistry};

pub const DEFAULT_MAX_STEPS: usize = 32;

/// What the loop reports while it runs, in the order it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopEvent {
    /// A streaming event from the model, forwarded as is.
    ModelEvent(ModelEvent),
    /// The final message of one model turn, as appended to the transcript.
    AssistantMessage(AssistantMessage),
    ToolStart {
        call: ToolCall,
    },
    ToolProgress {
        call_id: String,
        content: Vec<ContentBlock>,
    },
    /// Emitted the moment a call finishes, so it may come out of call order.
    ToolEnd {
        result: ToolResultMessage,
    },
    /// A call that was answered without being run.
    ToolSkipped {
        result: ToolResultMessage,
    },
    /// The last event of every run.
    TurnEnd {
        reason: RunReason,
    },
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunReason {
    Stop,
    Length,
    Error,
    Aborted,
    MaxSteps,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentRunResult {
    pub reason: RunReason,
    /// The run's transcript: the caller's messages followed by everything this run added.
    pub messages: Vec<Message>,
    /// How many model requests were made.
    pub steps: usize,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentContext {
    pub system_prompt: String,
    pub messages: Vec<Message>,
}

/// The caller's conversation, shared with whoever else reads it (a UI, a session store): the loop
/// snapshots it once and never writes to it.
pub type SharedContext = Arc<Mutex<AgentContext>>;

pub type EventSink = Arc<dyn Fn(LoopEvent) + Send + Sync>;

/// Runs one call. Replaces the built-in `execute_tool_call`, e.g. to ask the user first.
pub type ToolExecutor = Arc<
    dyn Fn(ToolCall, ToolContext) -> BoxFuture<Result<ToolResultMessage, ToolError>> + Send + Sync,
>;

#[derive(Clone)]
pub struct AgentLoopOptions {
    pub model: Arc<dyn Model>,
    pub tools: ToolRegistry,
    pub context: SharedContext,
    /// Cancelling it ends the run at the next boundary; tools receive it too.
    pub signal: CancellationToken,
    pub on_event: EventSink,
    /// `None` runs calls with `execute_tool_call` against `tools`.
    pub executor: Option<ToolExecutor>,
    /// The most model requests one run may make.
    pub max_steps: usize,
}

impl AgentLoopOptions {
    /// No tools, a fresh signal, no event sink, the built-in executor and `DEFAULT_MAX_STEPS`.
    pub fn new(model: Arc<dyn Model>, context: SharedContext) -> Self {
        AgentLoopOptions {
            model,
            tools: ToolRegistry::new(),
            context,
            signal: CancellationToken::new(),
            on_event: Arc::new(|_| {}),
            executor: None,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// 以上是公共表面，测试按它编译：保持不变，新的 `use` 写在下面，重新评分就只需重新编译你的循环。
// Above is the public surface the tests compile against. Keep it as it is and add new `use` lines
// below: a re-grade then recompiles only your loop.
// ---------------------------------------------------------------------------------------------------

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
