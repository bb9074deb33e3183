//! Shared helpers for the chapter 07 tests. Nothing here is a test.
//!
//! - [`Setup`] builds a run: a `ScriptedModel`, the caller's shared context, options whose event sink
//!   records every `LoopEvent`, and [`Setup::run`] / [`Setup::run_with`], the bounded runner.
//! - [`Recorder`] is the thread-safe event sink (events may come from any task).
//! - [`Bench`] is an injected executor driven by gates: a gated call waits until the test releases it.
//! - [`FakeTool`] is a registry tool that only counts its executions and reports progress.
//!
//! Every run happens on a current-thread runtime whose clock is paused. When every task is idle the clock
//! jumps to the next timer, so a loop that waits for something that never comes hits the timeout at
//! once, with a message that says where it probably waits. No real time is ever spent.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::task::{Context, Poll};
use std::time::Duration;

use pi_course::agent_loop::{
    AgentContext, AgentLoopOptions, AgentRunResult, EventSink, LoopEvent, RunReason, SharedContext,
    ToolExecutor,
};
use pi_course::event_stream::EventStream;
use pi_course::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage,
};
use pi_course::model::{Model, ModelEvent, ModelRequest};
use pi_course::scripted_model::ScriptedModel;
use pi_course::tool::{
    BoxFuture, CancellationToken, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput,
};
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

/// How long (on the paused clock) a run may take before it counts as hung.
const RUN_LIMIT: Duration = Duration::from_secs(600);
/// How long (on the paused clock) a test's driver waits for one expected step of the loop.
const STEP_LIMIT: Duration = Duration::from_secs(60);

pub const SYSTEM_PROMPT: &str = "You are a careful coding agent (test system prompt).";

/// The caller's conversation before the run: a short history that ends with the user's request.
pub fn caller_messages() -> Vec<Message> {
    vec![
        Message::user("hello"),
        Message::Assistant(text_reply("Hi! What should I do?")),
        Message::user("list the files"),
    ]
}

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

pub fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// A call to the registry tool `echo` with valid arguments.
pub fn echo(id: &str) -> ToolCall {
    call(id, "echo", json!({ "text": id }))
}

/// A final assistant message holding only text, stop reason `stop`.
pub fn text_reply(text: &str) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::text(text)],
        stop_reason: StopReason::Stop,
        error_message: None,
    }
}

/// A final assistant message with the given stop reason whose content is the given calls.
pub fn with_calls(stop_reason: StopReason, calls: Vec<ToolCall>) -> AssistantMessage {
    let error_message = match stop_reason {
        StopReason::Error => Some("provider error (scripted)".to_string()),
        _ => None,
    };
    AssistantMessage {
        content: calls.into_iter().map(ContentBlock::ToolCall).collect(),
        stop_reason,
        error_message,
    }
}

pub fn tool_use(calls: Vec<ToolCall>) -> AssistantMessage {
    with_calls(StopReason::ToolUse, calls)
}

/// The result a well-behaved executor returns for `call`.
pub fn ok_result(call: &ToolCall, details: Value) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![ContentBlock::text(format!("{} done", call.id))],
        details,
        is_error: false,
    }
}

/// The skipped result the chapter prescribes for a call that must not run.
pub fn skipped(call: &ToolCall, reason: &str, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![ContentBlock::text(text)],
        details: json!({ "skipped": true, "reason": reason }),
        is_error: true,
    })
}

/// The `role` of each message, e.g. `["user", "assistant", "toolResult"]`.
pub fn roles(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m {
            Message::User(_) => "user".to_string(),
            Message::Assistant(_) => "assistant".to_string(),
            Message::ToolResult(r) => format!("toolResult({})", r.tool_call_id),
        })
        .collect()
}

/// The tool result answering `id` in `messages`, if there is one.
pub fn result_for<'a>(messages: &'a [Message], id: &str) -> Option<&'a ToolResultMessage> {
    let mut results = messages.iter().filter_map(Message::as_tool_result);
    results.find(|r| r.tool_call_id == id)
}

// ---------------------------------------------------------------------------------------------
// Event recording
// ---------------------------------------------------------------------------------------------

/// A thread-safe event sink that keeps every event, in the order the loop emitted them.
pub struct Recorder {
    events: Mutex<Vec<LoopEvent>>,
    changed: watch::Sender<usize>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A short name for an event, e.g. `model_event(start)`, `tool_end(call-1)`, `turn_end(Stop)`.
pub fn kind(event: &LoopEvent) -> String {
    match event {
        LoopEvent::ModelEvent(e) => format!("model_event({})", model_event_kind(e)),
        LoopEvent::AssistantMessage(_) => "assistant_message".to_string(),
        LoopEvent::ToolStart { call } => format!("tool_start({})", call.id),
        LoopEvent::ToolProgress { call_id, .. } => format!("tool_progress({call_id})"),
        LoopEvent::ToolEnd { result } => format!("tool_end({})", result.tool_call_id),
        LoopEvent::ToolSkipped { result } => format!("tool_skipped({})", result.tool_call_id),
        LoopEvent::TurnEnd { reason } => format!("turn_end({reason:?})"),
    }
}

fn model_event_kind(event: &ModelEvent) -> &'static str {
    match event {
        ModelEvent::Start { .. } => "start",
        ModelEvent::TextDelta { .. } => "text_delta",
        ModelEvent::ToolCall { .. } => "tool_call",
        ModelEvent::Done { .. } => "done",
        ModelEvent::Error { .. } => "error",
    }
}

impl Recorder {
    pub fn new() -> Arc<Recorder> {
        Arc::new(Recorder {
            events: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
        })
    }

    pub fn sink(self: &Arc<Self>) -> EventSink {
        let me = Arc::clone(self);
        Arc::new(move |event| {
            let count = {
                let mut events = lock(&me.events);
                events.push(event);
                events.len()
            };
            if count > EVENT_LIMIT {
                panic!(
                    "循环已发出 {count} 个事件，停不下来 / the loop emitted {count} events and never ends"
                );
            }
            me.changed.send_modify(|n| *n += 1);
        })
    }

    pub fn kinds(&self) -> Vec<String> {
        lock(&self.events).iter().map(kind).collect()
    }

    /// The event kinds for a failure message: all of them, or the last few of a long run.
    pub fn summary(&self) -> String {
        let kinds = self.kinds();
        let skip = kinds.len().saturating_sub(24);
        match skip {
            0 => format!("{kinds:?}"),
            _ => format!("(last 24 of {}) {:?}", kinds.len(), &kinds[skip..]),
        }
    }

    pub fn count(&self, kind_prefix: &str) -> usize {
        self.kinds()
            .iter()
            .filter(|k| k.starts_with(kind_prefix))
            .count()
    }

    /// The payloads of every `assistant_message` event.
    pub fn assistant_messages(&self) -> Vec<AssistantMessage> {
        let events = lock(&self.events);
        let found = events.iter().filter_map(|e| match e {
            LoopEvent::AssistantMessage(m) => Some(m.clone()),
            _ => None,
        });
        found.collect()
    }

    /// The results carried by `tool_end` (or, with `skipped`, `tool_skipped`) events, as messages.
    pub fn results(&self, skipped: bool) -> Vec<Message> {
        let events = lock(&self.events);
        let found = events.iter().filter_map(|e| match (e, skipped) {
            (LoopEvent::ToolEnd { result }, false) | (LoopEvent::ToolSkipped { result }, true) => {
                Some(Message::ToolResult(result.clone()))
            }
            _ => None,
        });
        found.collect()
    }

    /// Every `tool_progress` event as (call id, content).
    pub fn progress(&self) -> Vec<(String, Vec<ContentBlock>)> {
        let events = lock(&self.events);
        let found = events.iter().filter_map(|e| match e {
            LoopEvent::ToolProgress { call_id, content } => {
                Some((call_id.clone(), content.clone()))
            }
            _ => None,
        });
        found.collect()
    }

    /// Waits until an event of this kind has been emitted; fails with `why` if it never is.
    pub async fn wait_for(&self, wanted: &str, why: &str) {
        let mut changes = self.changed.subscribe();
        let seen = changes.wait_for(|_| self.kinds().iter().any(|k| k == wanted));
        if tokio::time::timeout(STEP_LIMIT, seen).await.is_err() {
            panic!(
                "等待事件 {wanted} 超时：{why}\n  已发生的事件 / events so far: {:?}\n  \
                 timed out waiting for event {wanted}",
                self.kinds()
            );
        }
    }
}

/// Where a loop whose last event is `last` most likely waits (used when a run hangs).
fn hang_hint(last: Option<&String>) -> &'static str {
    let last = match last {
        None => {
            return "第一次模型请求之前或之中：是否在等待一个不会到来的东西（例如自己持有的锁）？ \
                    / before or inside the first model request"
        }
        Some(last) => last.as_str(),
    };
    if last.starts_with("model_event(done") || last.starts_with("model_event(error") {
        "模型流已结束，是否在等 stream.result()，或事件读取没有在 None 处停下？ \
         / the model stream ended: waiting for its result?"
    } else if last.starts_with("model_event") {
        "正在读取模型流 / reading the model stream"
    } else if last.starts_with("tool_start") || last.starts_with("tool_progress") {
        "在等待一个工具：它在等测试放行，或工具被逐个执行、后面的调用从未启动 \
         / waiting for a tool (one the test has not released, or tools run one after another)"
    } else if last.starts_with("tool_end") {
        "一个工具结束后：在等同一批的其他调用？ / after a tool ended: waiting for the rest of the batch"
    } else if last.starts_with("turn_end") {
        "turn_end 之后应立即返回 / after turn_end the loop should return at once"
    } else {
        "处理最终 assistant 消息时（决策表，或一批调用发出 tool_start 之前） \
         / after the final message: in the decision table, or before a batch's tool_start"
    }
}

// ---------------------------------------------------------------------------------------------
// A registry tool that counts its executions
// ---------------------------------------------------------------------------------------------

/// A registry tool that does nothing but count: no file is written, no process started.
pub struct FakeTool {
    pub name: &'static str,
    pub runs: Arc<AtomicUsize>,
}

impl FakeTool {
    pub fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"],
        })
    }
}

impl Tool for FakeTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.to_string(),
            description: format!("{} (test tool: only counts executions)", self.name),
            parameters: FakeTool::parameters(),
        }
    }

    fn execute(
        &self,
        arguments: Value,
        ctx: ToolContext,
    ) -> BoxFuture<Result<ToolOutput, ToolError>> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            (ctx.report_progress)(vec![ContentBlock::text("halfway")]);
            let text = arguments["text"].as_str().unwrap_or_default().to_string();
            Ok(ToolOutput {
                content: vec![ContentBlock::text(format!("echo: {text}"))],
                details: json!({ "echoed": text, "bytes": text.len() }),
            })
        })
    }
}

// ---------------------------------------------------------------------------------------------
// An injected executor driven by gates
// ---------------------------------------------------------------------------------------------

/// The error returned for calls of the tool `explode`. Its `Display` is the message a result may keep;
/// its `Debug` holds a marker that must never reach a result.
pub struct DiskFull;

pub const DEBUG_MARKER: &str = "DEBUG-ONLY-DETAIL";
pub const PANIC_MARKER: &str = "deliberate test panic";

impl fmt::Display for DiskFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("disk full")
    }
}

impl fmt::Debug for DiskFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DiskFull {{ device: \"/dev/sda1\", note: \"{DEBUG_MARKER}\" }}"
        )
    }
}

impl std::error::Error for DiskFull {}

/// An injected executor whose behaviour is chosen by the call's tool name:
///
/// - `explode`: returns `Err(DiskFull)` at once;
/// - `crash`: panics with a `&'static str` payload; `crash_owned`: panics with a `String` payload;
/// - `report`: reports progress once, then behaves like any other name;
/// - any other name: returns a normal result ([`ok_result`]), after waiting for its gate if the call's id
///   was gated with [`Bench::new`].
pub struct Bench {
    gates: Mutex<HashMap<String, oneshot::Receiver<()>>>,
    releases: Mutex<HashMap<String, oneshot::Sender<()>>>,
    started: Mutex<Vec<String>>,
    contexts: Mutex<Vec<(String, String)>>,
    signals: Mutex<Vec<CancellationToken>>,
    changed: watch::Sender<usize>,
}

impl Bench {
    pub fn new(gated_ids: &[&str]) -> Arc<Bench> {
        let (mut gates, mut releases) = (HashMap::new(), HashMap::new());
        for id in gated_ids {
            let (tx, rx) = oneshot::channel();
            gates.insert(id.to_string(), rx);
            releases.insert(id.to_string(), tx);
        }
        Arc::new(Bench {
            gates: Mutex::new(gates),
            releases: Mutex::new(releases),
            started: Mutex::new(Vec::new()),
            contexts: Mutex::new(Vec::new()),
            signals: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
        })
    }

    pub fn executor(self: &Arc<Self>) -> ToolExecutor {
        let me = Arc::clone(self);
        Arc::new(move |call: ToolCall, ctx: ToolContext| {
            let me = Arc::clone(&me);
            let run = async move { me.execute(call, ctx).await };
            Box::pin(run) as BoxFuture<Result<ToolResultMessage, ToolError>>
        })
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: ToolContext,
    ) -> Result<ToolResultMessage, ToolError> {
        lock(&self.started).push(call.id.clone());
        lock(&self.contexts).push((call.id.clone(), ctx.call_id.clone()));
        lock(&self.signals).push(ctx.signal.clone());
        self.changed.send_modify(|n| *n += 1);
        match call.name.as_str() {
            "explode" => return Err(Box::new(DiskFull)),
            "crash" => panic!("kaboom ({PANIC_MARKER})"),
            "crash_owned" => std::panic::panic_any(format!("kaboom {} ({PANIC_MARKER})", call.id)),
            "report" => (ctx.report_progress)(vec![ContentBlock::text("step 1 of 2")]),
            _ => {}
        }
        let gate = lock(&self.gates).remove(&call.id);
        if let Some(gate) = gate {
            // Dropping the sender (the test ended) also ends the wait.
            let _ = gate.await;
        }
        Ok(ok_result(
            &call,
            json!({ "call": call.id, "lines": [1, 2, 3] }),
        ))
    }

    /// Call ids in the order the executor was entered (one entry per execution).
    pub fn started(&self) -> Vec<String> {
        lock(&self.started).clone()
    }

    /// (call.id, ctx.call_id) for every execution.
    pub fn contexts(&self) -> Vec<(String, String)> {
        lock(&self.contexts).clone()
    }

    /// The `ctx.signal` of every execution, in the order the executor was entered.
    pub fn signals(&self) -> Vec<CancellationToken> {
        lock(&self.signals).clone()
    }

    /// Lets the gated call `id` finish.
    pub fn release(&self, id: &str) {
        let tx = lock(&self.releases)
            .remove(id)
            .expect("each gate is released once");
        let _ = tx.send(());
    }

    /// Waits until the executor has been entered for every id in `ids`; fails with `why` if not.
    pub async fn wait_started(&self, ids: &[&str], why: &str) {
        let all_started = |_: &usize| {
            let started = lock(&self.started);
            ids.iter().all(|id| started.iter().any(|s| s == id))
        };
        let mut changes = self.changed.subscribe();
        if tokio::time::timeout(STEP_LIMIT, changes.wait_for(all_started))
            .await
            .is_err()
        {
            panic!(
                "等待调用 {ids:?} 全部开始执行超时：{why}\n  实际开始执行的 / actually started: {:?}\n  \
                 timed out waiting for calls {ids:?} to start",
                self.started()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The bounded runner
// ---------------------------------------------------------------------------------------------

/// A run about to start. Tests adjust `options` (tools, executor, signal, max_steps) before running.
pub struct Setup {
    pub model: Arc<ScriptedModel>,
    pub context: SharedContext,
    pub events: Arc<Recorder>,
    pub options: AgentLoopOptions,
}

/// Everything a finished run left behind.
pub struct Outcome {
    pub result: AgentRunResult,
    pub model: Arc<ScriptedModel>,
    pub context: SharedContext,
    pub events: Arc<Recorder>,
}

/// A run of the loop over `script`, with the caller's context [`SYSTEM_PROMPT`] + [`caller_messages`].
pub fn setup(script: Vec<AssistantMessage>) -> Setup {
    silence_deliberate_panics();
    let model = Arc::new(ScriptedModel::new(script));
    let context = Arc::new(Mutex::new(AgentContext {
        system_prompt: SYSTEM_PROMPT.to_string(),
        messages: caller_messages(),
    }));
    let events = Recorder::new();
    let guarded = Arc::new(Guarded(model.clone()));
    let mut options = AgentLoopOptions::new(guarded, context.clone());
    options.on_event = events.sink();
    Setup {
        model,
        context,
        events,
        options,
    }
}

/// A registry holding `echo` and `write`, both counting into `runs`.
pub fn counting_tools(runs: &Arc<AtomicUsize>) -> pi_course::tool::ToolRegistry {
    let mut tools = pi_course::tool::ToolRegistry::new();
    tools.register(FakeTool {
        name: "echo",
        runs: runs.clone(),
    });
    tools.register(FakeTool {
        name: "write",
        runs: runs.clone(),
    });
    tools
}

/// More requests than any test's script needs: a loop that gets here never ends by itself.
const REQUEST_LIMIT: usize = 100;
/// More events than any test produces: a loop that emits this many never ends by itself.
const EVENT_LIMIT: usize = 5_000;

/// Hands every request to the scripted model, but stops a loop that would request forever (a busy
/// loop never lets the paused clock reach a timeout).
struct Guarded(Arc<ScriptedModel>);

impl Model for Guarded {
    fn stream(&self, request: ModelRequest) -> EventStream<ModelEvent, AssistantMessage> {
        let calls = self.0.calls();
        if calls >= REQUEST_LIMIT {
            panic!(
                "模型已被请求 {calls} 次，循环停不下来：是否有终态分支没有结束运行，或没有遵守 max_steps？\n  \
                 the model was asked {calls} times: the loop never ends (a terminal branch that goes on, \
                 or max_steps ignored?)"
            );
        }
        self.0.stream(request)
    }
}

pub type Driver = Pin<Box<dyn Future<Output = ()>>>;

/// Runs one test's future to its end on a current-thread runtime whose clock is paused.
pub fn block_on(test: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a test runtime")
        .block_on(test)
}

impl Setup {
    pub fn signal(&self) -> CancellationToken {
        self.options.signal.clone()
    }

    /// Runs the loop to its end.
    pub async fn run(self) -> Outcome {
        self.run_with(Box::pin(async {})).await
    }

    /// Runs the loop and `driver` (the test's side: releasing gates, cancelling) on the same task.
    /// Fails, instead of waiting forever, if the loop hangs; fails with the payload if the loop panics.
    pub async fn run_with(self, driver: Driver) -> Outcome {
        let Setup {
            model,
            context,
            events,
            options,
        } = self;
        let both = drive(pi_course::boxed_agent_loop(options), driver);
        let result = match tokio::time::timeout(RUN_LIMIT, both).await {
            Ok(Ok(result)) => result,
            Ok(Err(payload)) => {
                let text = payload_text(payload.as_ref());
                if text.contains("not yet implemented") {
                    panic!(
                        "{}\n  循环停在了骨架的 todo!() / the loop stopped at a todo!() of the skeleton: {text}\n  \
                         按 7.1 → 7.5 的顺序完成各个 Lab / finish the Labs in order, 7.1 → 7.5",
                        this_lab()
                    )
                }
                let hint = if text.contains("never ends") {
                    ""
                } else {
                    "\n  （若它来自执行器的错误或 panic，说明它没有被转换成配对的错误结果 / if it comes from \
                     an executor's error or panic, it escaped instead of becoming a paired error result）"
                };
                panic!(
                    "循环本身 panic 了 / the loop panicked: {text}{hint}\n  \
                     已发生的事件 / events so far: {}",
                    events.summary()
                )
            }
            Err(_) => {
                panic!(
                    "循环卡住了：在（暂停的）时钟上 {}s 内没有返回 / the loop hung and never returned\n  \
                     已发生的事件 / events so far: {}\n  可能卡在 / probably waiting: {}",
                    RUN_LIMIT.as_secs(),
                    events.summary(),
                    hang_hint(events.kinds().last())
                )
            }
        };
        Outcome {
            result,
            model,
            context,
            events,
        }
    }
}

/// The groups, by module: the running test's group is read from its thread name, which libtest sets
/// to the test's path (`single_tool::...`), so a failure can say which Lab it belongs to.
const LABS: &[(&str, &str, &str, &str)] = &[
    ("plain_stop", "7.1", "纯文本 stop", "plain-text stop"),
    ("single_tool", "7.2", "单工具往返", "single tool round trip"),
    (
        "non_executing",
        "7.3",
        "非执行终态",
        "non-executing terminal states",
    ),
    ("concurrent_tools", "7.4", "并发工具", "concurrent tools"),
    (
        "cancel_and_limits",
        "7.5",
        "取消与上限",
        "cancellation and limits",
    ),
    (
        "duplicate_call_ids",
        "7.6",
        "重复 call id",
        "duplicate call ids",
    ),
];

/// "Lab 7.2（单工具往返）还没完成 / Lab 7.2 (single tool round trip) is not done yet", for the running test.
fn this_lab() -> String {
    let thread = std::thread::current();
    let module = thread
        .name()
        .and_then(|n| n.split("::").next())
        .unwrap_or("");
    match LABS.iter().find(|(m, ..)| *m == module) {
        Some((_, lab, zh, en)) => {
            format!("Lab {lab}（{zh}）还没完成 / Lab {lab} ({en}) is not done yet")
        }
        None => "这个 Lab 还没完成 / this Lab is not done yet".to_string(),
    }
}

type LoopFuture = Pin<Box<dyn Future<Output = AgentRunResult>>>;

/// Polls the loop and the driver together. A loop panic ends everything at once; a loop that returns
/// still lets the driver finish (its own waits time out with a precise message if it cannot).
async fn drive(
    mut run: LoopFuture,
    mut driver: Driver,
) -> Result<AgentRunResult, Box<dyn Any + Send>> {
    let mut driver_done = false;
    let result = std::future::poll_fn(|cx: &mut Context<'_>| {
        if !driver_done && driver.as_mut().poll(cx).is_ready() {
            driver_done = true;
        }
        match catch_unwind(AssertUnwindSafe(|| run.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    })
    .await;
    if result.is_ok() && !driver_done {
        driver.await;
    }
    result
}

pub fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// The test executor panics on purpose; keep exactly those expected panics out of the test output.
/// Every other panic (a failing assert, a `todo!()`, a loop that lets the executor's panic escape and
/// fails on it) is printed as usual.
fn silence_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = payload_text(info.payload());
            let deliberate =
                text.starts_with("kaboom") && text.ends_with(&format!("({PANIC_MARKER})"));
            if !deliberate {
                previous(info);
            }
        }));
    });
}

/// The kinds of the model events a `ScriptedModel` streams for `message` (what the loop must forward).
pub async fn streamed_kinds(message: &AssistantMessage) -> Vec<String> {
    let model = ScriptedModel::new(vec![message.clone()]);
    let request = ModelRequest {
        system_prompt: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
    };
    let mut stream = model.stream(request);
    let mut kinds = Vec::new();
    while let Some(event) = stream.next().await {
        kinds.push(format!("model_event({})", model_event_kind(&event)));
    }
    kinds
}

impl Outcome {
    pub fn kinds(&self) -> Vec<String> {
        self.events.kinds()
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.model.requests()
    }

    /// The messages the model saw in request `n` (0-based); empty when the loop never made it, so the
    /// assertion comparing them says what was missing.
    pub fn sent_in_request(&self, n: usize) -> Vec<Message> {
        self.requests()
            .get(n)
            .map(|r| r.messages.clone())
            .unwrap_or_default()
    }

    /// The loop emitted exactly one turn_end, as its last event, with `reason`; and returned `reason`.
    pub fn assert_ends(&self, reason: RunReason, rule: &str) {
        let kinds = self.kinds();
        let turn_ends: Vec<&String> = kinds.iter().filter(|k| k.starts_with("turn_end")).collect();
        assert_eq!(
            turn_ends.len(),
            1,
            "一次运行恰好发出一个 turn_end（不变量 3），实际 {} 个 / one run emits exactly one turn_end\n  \
             全部事件 / all events: {kinds:?}",
            turn_ends.len()
        );
        assert!(
            kinds.last().is_some_and(|k| k.starts_with("turn_end")),
            "turn_end 必须是最后一个事件 / turn_end must be the last event: {kinds:?}"
        );
        let wanted = format!("turn_end({reason:?})");
        assert_eq!(
            turn_ends[0], &wanted,
            "{rule}：运行应以 {wanted} 结束 / the run must end with {wanted}\n  全部事件 / all events: {kinds:?}"
        );
        assert_eq!(
            self.result.reason, reason,
            "{rule}：返回的 reason 应与 turn_end 一致，为 {reason:?} / the returned reason must be {reason:?}"
        );
    }

    /// The context shared with the caller still holds exactly what it held before the run.
    pub fn assert_context_untouched(&self) {
        let context = lock(&self.context);
        assert_eq!(
            context.system_prompt, SYSTEM_PROMPT,
            "调用者的 system prompt 被改动了 / the caller's system prompt was changed"
        );
        assert_eq!(
            context.messages,
            caller_messages(),
            "调用者共享的 context 被写入了：loop 应在开始时克隆消息，只修改自己的 transcript（第一步）\n  \
             the caller's shared context was written: clone it once, change only the run's own copy",
        );
    }
}
