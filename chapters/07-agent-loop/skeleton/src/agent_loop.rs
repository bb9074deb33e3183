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

// 公共类型和 `AgentLoopOptions::new` 已经在 `api/` 里写好，`run_agent_loop` 的主循环、`Run::finish`
// 和 `run_batch` 等待、写入结果的部分也是；每个 `todo!()` 是你要写的一段，消息里写着它属于哪个 Lab。
// 可能用到：`crate::model::ModelRequest`、`crate::tool::{execute_tool_call, ToolContext}`、
// `serde_json::json!`、`tokio::spawn`、`std::sync::Arc`。

use tokio::task::{JoinError, JoinHandle};

use crate::message::{AssistantMessage, StopReason, ToolCall, ToolResultMessage};
use crate::tool::ToolError;

/// 对调用者对话的唯一一次读取。
fn snapshot(_options: &AgentLoopOptions) -> AgentContext {
    todo!("Lab 7.1: 在锁内克隆一次调用者的 context（system prompt 和消息），之后只改这份副本")
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

/// 进行中的一次运行。
struct Run {
    options: AgentLoopOptions,
    /// 本次运行自己的对话：每次请求都由它构成，每条结果都写进它。
    transcript: AgentContext,
    /// 已发出的模型请求数。
    steps: usize,
}

impl Run {
    fn emit(&self, event: LoopEvent) {
        (self.options.on_event)(event)
    }

    /// 每次请求前检查；这也正是上一批结果写入之后。
    fn check_boundaries(&self) -> Option<RunReason> {
        if self.options.signal.is_cancelled() || self.steps >= self.options.max_steps {
            todo!("Lab 7.5: 请求模型前的边界：signal 已取消就以 aborted 结束，请求次数到了上限就以 max_steps 结束")
        }
        None
    }

    /// 一轮模型：转发每个事件，再把最终消息（从不是 partial）追加一次。
    async fn request(&mut self) -> AssistantMessage {
        todo!("Lab 7.1: steps 加一，用 transcript 和全部工具定义请求模型；转发每个模型事件，再取 result()，追加一次并发出 assistant_message")
    }

    /// 决策表。`None`：执行这批调用，再问一次；`Some`：运行以这个原因结束。
    fn handle_stop(&mut self, assistant: &AssistantMessage) -> Option<RunReason> {
        let calls = assistant.tool_calls();
        match (assistant.stop_reason, calls.is_empty()) {
            // Lab 7.6（选做）：同一条消息里重复使用的 call id 怎么处理？在这一行之前加一个分支。
            (StopReason::ToolUse, false) => None,
            (StopReason::Stop, true) => todo!("Lab 7.1: 纯文本 stop：这次运行正常结束"),
            (reason, _) => todo!(
                "Lab 7.3: 非执行终态 {reason:?}（{} 个调用）：不执行任何调用，为每个调用写入 skipped(call, 原因) 并发 tool_skipped，再以对应的原因结束",
                calls.len()
            ),
        }
    }

    /// 一批调用，不论一个还是多个：先启动每个调用（各在自己的 task 上，见 `spawn`），再等待任何一个；
    /// 不论完成先后，结果按调用顺序写入。
    async fn run_batch(&mut self, calls: &[&ToolCall]) {
        let tasks: Vec<JoinHandle<ToolResultMessage>> = match calls {
            // 只有一个调用的批次：Lab 7.4 写的代码同样适用于它，届时这一支可以删掉。
            [call] => vec![self.spawn(call)],
            _ => todo!("Lab 7.4: 用 self.spawn 启动这批的每一个调用，全部启动之后才等待任何一个（只有一个调用的批次也是同一段代码）"),
        };
        for task in tasks {
            // task 本身的 panic（不是工具的：那些由 `paired` 配对）照原样继续抛出，像 loop 自己的一样。
            let result = task
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            self.transcript.messages.push(result.into());
        }
    }

    /// 在自己的 task 上执行一个调用，它一完成就发出 ToolEnd。
    fn spawn(&self, _call: &ToolCall) -> JoinHandle<ToolResultMessage> {
        todo!("Lab 7.2: 发 tool_start；把 call id、本次运行的 signal 和进度回调交给 executor（没有就用 execute_tool_call），在它自己的 task 上执行；结束时用 paired(call, 结局) 得到结果，发 tool_end 并返回它")
    }

    /// 唯一的出口：每次运行恰好在这里发一个 TurnEnd。
    fn finish(self, reason: RunReason) -> AgentRunResult {
        self.emit(LoopEvent::TurnEnd { reason });
        AgentRunResult {
            reason,
            messages: self.transcript.messages,
            steps: self.steps,
        }
    }
}

/// 一个没有执行的调用的配对结果：同 id、同 name，`is_error`，details 为 `{"skipped": true, "reason": reason}`。
#[allow(dead_code)] // 写完 Lab 7.3 的决策表之后就用上了
fn skipped(call: &ToolCall, reason: &'static str) -> ToolResultMessage {
    todo!("Lab 7.3: 为调用 {} 写一条 skipped 结果（reason {reason}）：同 id/name，is_error，details {{skipped: true, reason}}，文本见 GUIDE.md 的表格", call.id)
}

/// 一个调用的 task 结束时成了什么：executor 的结果原样返回；`Err` 或 panic 变成配对到这个调用的错误结果
/// （Lab 7.4）。每个调用都恰好得到一条带它 id 的结果，单独一个调用也一样。
#[allow(dead_code)] // 写完 Lab 7.2 的 `spawn` 之后就用上了
fn paired(
    call: &ToolCall,
    ended: Result<Result<ToolResultMessage, ToolError>, JoinError>,
) -> ToolResultMessage {
    match ended {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => todo!("Lab 7.4: 调用 {} 的 executor 返回了 Err（{error}）：写一条同 id/name 的错误结果，文本带上它的 Display，不要 Debug", call.id),
        Err(panic) => todo!("Lab 7.4: 调用 {} 的 executor panic 了（{panic}）：写一条同 id/name 的错误结果，文本带上 panic 的消息，不带位置和 backtrace", call.id),
    }
}
