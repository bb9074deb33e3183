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

// The public types and `AgentLoopOptions::new` are written, and so are the main loop of
// `run_agent_loop` and `Run::finish`; each `todo!()` is a piece for you to write, and its message
// names its Lab.
// You may need: `crate::model::ModelRequest`, `crate::tool::execute_tool_call`,
// `serde_json::json!`, `tokio::spawn`.

use crate::message::StopReason;

impl AgentLoopOptions {
    /// The run's one look at the caller's conversation.
    fn snapshot(&self) -> AgentContext {
        todo!("Lab 7.1: clone the caller's context (system prompt and messages) once, under the lock; from then on change only that copy")
    }
}

pub async fn run_agent_loop(options: AgentLoopOptions) -> AgentRunResult {
    let mut run = Run {
        transcript: options.snapshot(),
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
                "Lab 7.3: non-executing terminal state {reason:?} ({} calls): run none of them, write a skipped result for each call, then end with the matching reason",
                calls.len()
            ),
        }
    }

    /// Starts every call at once; writes the results in call order, whatever order they finish in.
    async fn run_batch(&mut self, calls: &[&ToolCall]) {
        if calls.len() > 1 {
            todo!("Lab 7.4: start the whole batch at once (an executor's Err and panic both become error results), emit tool_end as each call finishes, then write the results in call order")
        }
        todo!("Lab 7.2: emit tool_start, give the executor the call id, the run's signal and a progress callback, emit tool_end, then write the result into the transcript")
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
