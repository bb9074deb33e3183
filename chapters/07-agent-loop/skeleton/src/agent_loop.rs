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

// 公共类型和 `AgentLoopOptions::new` 已经写好，`run_agent_loop` 的主循环和 `Run::finish` 也是；
// 每个 `todo!()` 是你要写的一段，消息里写着它属于哪个 Lab。
// 可能用到 / you may need: `crate::model::ModelRequest`, `crate::tool::execute_tool_call`,
// `serde_json::json!`, `tokio::spawn`.

use crate::message::StopReason;

impl AgentLoopOptions {
    /// The run's one look at the caller's conversation.
    fn snapshot(&self) -> AgentContext {
        todo!("Lab 7.1: 在锁内克隆一次调用者的 context（system prompt 和消息），之后只改这份副本")
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
            todo!("Lab 7.5: 请求模型前的边界：signal 已取消就以 aborted 结束，请求次数到了上限就以 max_steps 结束")
        }
        None
    }

    /// One model turn: forward every event, then append the final message (never a partial) once.
    async fn request(&mut self) -> AssistantMessage {
        todo!("Lab 7.1: steps 加一，用 transcript 和全部工具定义请求模型；转发每个模型事件，再取 result()，追加一次并发出 assistant_message")
    }

    /// The decision table. `None`: run the calls and ask again; `Some`: the run ends for that reason.
    fn handle_stop(&mut self, assistant: &AssistantMessage) -> Option<RunReason> {
        let calls = assistant.tool_calls();
        match (assistant.stop_reason, calls.is_empty()) {
            // Lab 7.6（选做）：同一条消息里重复使用的 call id 怎么处理？在这一行之前加一个分支。
            (StopReason::ToolUse, false) => None,
            (StopReason::Stop, true) => todo!("Lab 7.1: 纯文本 stop：这次运行正常结束"),
            (reason, _) => todo!(
                "Lab 7.3: 非执行终态 {reason:?}（{} 个调用）：不执行任何调用，为每个调用写入 skipped 结果，再以对应的原因结束",
                calls.len()
            ),
        }
    }

    /// Starts every call at once; writes the results in call order, whatever order they finish in.
    async fn run_batch(&mut self, calls: &[&ToolCall]) {
        if calls.len() > 1 {
            todo!("Lab 7.4: 同时启动整批调用（executor 的 Err 和 panic 都变成错误结果），每个完成就发 tool_end，最后按调用顺序写入结果")
        }
        todo!("Lab 7.2: 发 tool_start，把 call id、signal 和进度回调交给 executor，发 tool_end，再把结果写入 transcript")
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
