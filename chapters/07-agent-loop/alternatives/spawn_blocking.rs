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

// A correct loop of another shape: every call runs on tokio's blocking pool. The blocking thread drives
// the call's future with the runtime's handle, catches a panic itself, emits `ToolEnd` as the call
// settles and returns the result; the loop awaits the blocking tasks in call order.

use std::any::Any;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    let handle = tokio::runtime::Handle::current();
    let mut tasks = Vec::new();
    for call in calls {
        (options.on_event)(LoopEvent::ToolStart { call: call.clone() });
        let work = execute(options, call);
        let (handle, call, on_event) = (handle.clone(), call.clone(), options.on_event.clone());
        tasks.push(tokio::task::spawn_blocking(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| handle.block_on(work)));
            let result = settle(&call, outcome);
            on_event(LoopEvent::ToolEnd {
                result: result.clone(),
            });
            result
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("a blocking task returns its result"));
    }
    results
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
