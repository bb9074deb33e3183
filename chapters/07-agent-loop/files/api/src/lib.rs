//! 第 07 章的公共表面：循环的类型，给定，不用修改。
//! The public surface of chapter 07: the loop's types, given, not to be changed.
//!
//! 它们单独放在这个 crate 里，是为了速度：测试只依赖这些类型，不依赖你的 `src/agent_loop.rs`，所以改动
//! 循环之后只需重新编译你的 crate，测试早已编译好。你的 `src/agent_loop.rs` 把它们原样重新导出。
//! They live in a crate of their own for speed: the tests depend on these types, not on your
//! `src/agent_loop.rs`, so an edit of your loop recompiles only your crate; the tests are built once.
//! Your `src/agent_loop.rs` re-exports them as they are.

pub use pi_course_base::{event_stream, message, model, scripted_model, tool};

/// The types of `run_agent_loop`: what it takes, what it reports and what it returns.
pub mod agent_loop {
    use std::sync::{Arc, Mutex};

    use tokio_util::sync::CancellationToken;

    use pi_course_base::message::{
        AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage,
    };
    use pi_course_base::model::{Model, ModelEvent};
    use pi_course_base::tool::{BoxFuture, ToolContext, ToolError, ToolRegistry};

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
        dyn Fn(ToolCall, ToolContext) -> BoxFuture<Result<ToolResultMessage, ToolError>>
            + Send
            + Sync,
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
}

use std::future::Future;
use std::pin::Pin;

/// A run of the loop, boxed: how the tests hold `run_agent_loop` without knowing where it lives.
pub type LoopFuture = Pin<Box<dyn Future<Output = agent_loop::AgentRunResult>>>;

/// `run_agent_loop` as the tests call it (see `pi_course::boxed_agent_loop` in `src/lib.rs`).
pub type RunLoop = fn(agent_loop::AgentLoopOptions) -> LoopFuture;
