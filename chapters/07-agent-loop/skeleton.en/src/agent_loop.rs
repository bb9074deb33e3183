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

// The public types and `AgentLoopOptions::new` are written (in `api/`), and so are the main loop of
// `run_agent_loop` and `Run::finish`; each `todo!()` is a piece for you to write, and its message
// names its Lab.
// You may need: `crate::model::ModelRequest`, `crate::tool::execute_tool_call`,
// `serde_json::json!`, `tokio::spawn`.

use crate::message::{AssistantMessage, StopReason, ToolCall};

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
