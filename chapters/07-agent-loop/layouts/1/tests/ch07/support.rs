//! Shared helpers for the chapter 07 tests. Nothing here is a test.
//!
//! - [`Setup`] builds a run: a `ScriptedModel`, the caller's shared context, options whose event sink
//!   records every `LoopEvent`, and [`Setup::run`] / [`Setup::run_with`], the bounded runner.
//! - [`Recorder`] is the thread-safe event sink (events may come from any task or thread).
//! - [`Bench`] is an injected executor driven by gates: a gated call waits until the test releases it.
//! - [`FakeTool`] is a registry tool that only counts its executions and reports progress.
//! - [`msg!`] writes a failure message in the learner's language.
//!
//! # How a hung loop is caught
//!
//! A correct loop may run its tools anywhere: on tokio tasks of the test's runtime, on the blocking pool,
//! on OS threads that drive the tool on a runtime of their own, or by awaiting them in place. The tests
//! must pass for every one of those, every time, and still fail a loop that hangs, quickly and with a
//! message that says where it waits.
//!
//! A paused tokio clock cannot do both: it jumps to the next timer whenever the test's runtime is idle,
//! and the test's runtime is idle exactly while a tool works on another thread, so a correct loop whose
//! tools run on OS threads was reported hung. So the clock is real, and a hang is judged by *progress*,
//! not by total time. Every step a loop can take passes through this file: an event reaches the
//! [`Recorder`], a request reaches the model, a call enters, passes its gate or leaves the [`Bench`] or a
//! [`FakeTool`], the test releases a gate. Each of those, from whatever thread, ticks the test's
//! [`Progress`]. A run counts as hung only when nothing at all has happened for [`RUN_QUIET`]; a test
//! waiting for one expected step gives up after [`STEP_QUIET`] without progress, with its own message.
//!
//! A correct loop takes microseconds between two such steps, whatever runs its tools, so it is never
//! near the limit; no verdict depends on timing luck. The order of steps inside a test is still proven
//! with explicit gates (oneshot, watch), never with time. A loop that waits for something that never
//! comes makes no progress, and fails after about a second with the events so far and where it
//! probably waits, well within the grader's per-test time limit. A loop that never stops asking the
//! model or emitting events is stopped by [`REQUEST_LIMIT`] and [`EVENT_LIMIT`].
//!
//! [`STEP_QUIET`] is shorter than [`RUN_QUIET`], and both count from the same last tick, so when a test
//! waits for a step that never comes, its own precise message wins over the general one.

use std::any::Any;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pi_course::agent_loop::{
    AgentContext, AgentLoopOptions, AgentRunResult, EventSink, LoopEvent, RunReason, SharedContext,
    ToolExecutor,
};
use pi_course::event_stream::{event_stream, EventStream};
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

/// How long a test waits for one expected step of the loop while nothing at all happens.
const STEP_QUIET: Duration = Duration::from_millis(1000);
/// How long a run may go without any progress before it counts as hung.
const RUN_QUIET: Duration = Duration::from_millis(1200);

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
// The learner's language
// ---------------------------------------------------------------------------------------------

/// The language of failure messages. `pi-course grade` sets `PI_COURSE_LANG` to `zh` or `en` for every
/// test; a bare `cargo test` leaves it unset and gets both, Chinese first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Zh,
    En,
    Both,
}

pub fn lang() -> Lang {
    static LANG: OnceLock<Lang> = OnceLock::new();
    *LANG.get_or_init(|| {
        let value = std::env::var("PI_COURSE_LANG").unwrap_or_default();
        let value = value.to_ascii_lowercase();
        if value.starts_with("en") {
            Lang::En
        } else if value.starts_with("zh") {
            Lang::Zh
        } else {
            Lang::Both
        }
    })
}

/// One message in the learner's language: `zh`, `en`, or both (`zh / en`, or `en` on a line of its
/// own when either is long).
pub fn pick(zh: String, en: String) -> String {
    match lang() {
        Lang::Zh => zh,
        Lang::En => en,
        Lang::Both if zh.contains('\n') || zh.chars().count() + en.chars().count() > 100 => {
            format!("{zh}\n  {en}")
        }
        Lang::Both => format!("{zh} / {en}"),
    }
}

/// `msg!("中文 {x}", "English {x}")`: a failure message in the learner's language (see [`pick`]). Both
/// texts are format strings; they may capture the same variables.
macro_rules! msg {
    ($zh:literal, $en:literal $(,)?) => {
        $crate::support::pick(format!($zh), format!($en))
    };
}
pub(crate) use msg;

// ---------------------------------------------------------------------------------------------
// Progress: how a hung loop is told from a working one (see the module documentation)
// ---------------------------------------------------------------------------------------------

/// When the test's loop last did anything observable, and a signal on every such step.
pub struct Progress {
    last: Mutex<Instant>,
    ticks: watch::Sender<u64>,
}

thread_local! {
    /// The running test's progress. libtest runs every test on a thread of its own, so this is one per
    /// test; every helper is made on that thread and keeps an `Arc` of it for whatever thread it runs on.
    static PROGRESS: OnceCell<Arc<Progress>> = const { OnceCell::new() };
}

impl Progress {
    /// The running test's progress.
    pub fn current() -> Arc<Progress> {
        PROGRESS.with(|cell| {
            cell.get_or_init(|| {
                Arc::new(Progress {
                    last: Mutex::new(Instant::now()),
                    ticks: watch::Sender::new(0),
                })
            })
            .clone()
        })
    }

    /// Something happened: an event, a request, a tool step, a gate released.
    pub fn tick(&self) {
        *lock(&self.last) = Instant::now();
        self.ticks.send_modify(|n| *n += 1);
    }

    /// Returns once nothing has happened for `quiet`; never returns while the loop keeps moving.
    pub async fn stalled(&self, quiet: Duration) {
        let mut ticks = self.ticks.subscribe();
        loop {
            ticks.borrow_and_update();
            let deadline = *lock(&self.last) + quiet;
            tokio::select! {
                biased;
                _ = ticks.changed() => {}
                () = tokio::time::sleep_until(deadline.into()) => {
                    if lock(&self.last).elapsed() >= quiet {
                        return;
                    }
                }
            }
        }
    }
}

fn quiet_secs(quiet: Duration) -> String {
    format!("{:.1}", quiet.as_secs_f64())
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

/// The details [`Bench`] returns with every normal result.
pub fn bench_details(id: &str) -> Value {
    json!({ "call": id, "lines": [1, 2, 3] })
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
    progress: Arc<Progress>,
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
            progress: Progress::current(),
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
                    "{}",
                    msg!(
                        "循环已发出 {count} 个事件，停不下来",
                        "the loop emitted {count} events and never ends"
                    )
                );
            }
            me.changed.send_modify(|n| *n += 1);
            me.progress.tick();
        })
    }

    pub fn kinds(&self) -> Vec<String> {
        lock(&self.events).iter().map(kind).collect()
    }

    /// The event kinds for a failure message: all of them, or the last few of a long run.
    pub fn summary(&self) -> String {
        let kinds = self.kinds();
        let skip = kinds.len().saturating_sub(24);
        let (total, shown) = (kinds.len(), &kinds[skip..]);
        match skip {
            0 => format!("{kinds:?}"),
            _ => msg!(
                "（共 {total} 个，最后 24 个）{shown:?}",
                "(last 24 of {total}) {shown:?}"
            ),
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

    /// The calls carried by every `tool_start` event.
    pub fn started_calls(&self) -> Vec<ToolCall> {
        let events = lock(&self.events);
        let found = events.iter().filter_map(|e| match e {
            LoopEvent::ToolStart { call } => Some(call.clone()),
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

    /// Waits until an event of this kind has been emitted; fails with `why` if the loop stops making
    /// progress before it is.
    pub async fn wait_for(&self, wanted: &str, why: &str) {
        let mut changes = self.changed.subscribe();
        let seen = changes.wait_for(|_| self.kinds().iter().any(|k| k == wanted));
        tokio::select! {
            biased;
            _ = seen => {}
            () = self.progress.stalled(STEP_QUIET) => {
                let (quiet, kinds) = (quiet_secs(STEP_QUIET), self.kinds());
                panic!(
                    "{}\n  {why}\n  {}: {kinds:?}",
                    msg!(
                        "等待事件 {wanted} 超时：{quiet} 秒内循环没有任何进展",
                        "timed out waiting for event {wanted}: the loop made no progress for {quiet} s"
                    ),
                    msg!("已发生的事件", "events so far"),
                )
            }
        }
    }
}

/// Where a loop whose last event is `last` most likely waits (used when a run hangs).
fn hang_hint(last: Option<&String>) -> String {
    let last = match last {
        None => {
            return msg!(
                "第一次模型请求之前或之中：是否在等待一个不会到来的东西（例如自己持有的锁）？",
                "before or inside the first model request: waiting for something that never comes (a lock \
                 you hold yourself?)"
            )
        }
        Some(last) => last.as_str(),
    };
    if last.starts_with("model_event(done") || last.starts_with("model_event(error") {
        msg!(
            "模型流已结束，是否在等 stream.result()，或事件读取没有在 None 处停下？",
            "the model stream ended: waiting for its result, or reading events past the None?"
        )
    } else if last.starts_with("model_event") {
        msg!("正在读取模型流", "reading the model stream")
    } else if last.starts_with("tool_start") || last.starts_with("tool_progress") {
        msg!(
            "在等待一个工具：它在等测试放行，或工具被逐个执行、后面的调用从未启动",
            "waiting for a tool (one the test has not released, or tools run one after another)"
        )
    } else if last.starts_with("tool_end") {
        msg!(
            "一个工具结束后：在等同一批的其他调用？",
            "after a tool ended: waiting for the rest of the batch"
        )
    } else if last.starts_with("turn_end") {
        msg!(
            "turn_end 之后应立即返回",
            "after turn_end the loop should return at once"
        )
    } else {
        msg!(
            "处理最终 assistant 消息时（决策表，或一批调用发出 tool_start 之前）",
            "after the final message: in the decision table, or before a batch's tool_start"
        )
    }
}

// ---------------------------------------------------------------------------------------------
// A registry tool that counts its executions
// ---------------------------------------------------------------------------------------------

/// A registry tool that does nothing but count: no file is written, no process started.
pub struct FakeTool {
    pub name: &'static str,
    pub runs: Arc<AtomicUsize>,
    pub progress: Arc<Progress>,
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
        self.progress.tick();
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
/// The payload of the tool `crash`: a `&'static str`, as `panic!("literal")` raises.
pub const CRASH_TEXT: &str = "kaboom (deliberate test panic)";

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

/// An injected executor whose behaviour is chosen by the call's tool name. A call whose id was gated
/// with [`Bench::new`] first waits until the test releases it, then:
///
/// - `explode`: returns `Err(DiskFull)`;
/// - `crash`: panics with a `&'static str` payload ([`CRASH_TEXT`]); `crash_owned`: panics with a
///   `String` payload (`kaboom <id> (deliberate test panic)`);
/// - `report`: reports progress once, then returns a normal result;
/// - `cancel_run`: cancels the signal in its context, then returns a normal result;
/// - any other name: returns a normal result ([`ok_result`] with [`bench_details`]).
pub struct Bench {
    gates: Mutex<HashMap<String, oneshot::Receiver<()>>>,
    releases: Mutex<HashMap<String, oneshot::Sender<()>>>,
    started: Mutex<Vec<String>>,
    contexts: Mutex<Vec<(String, String)>>,
    signals: Mutex<Vec<CancellationToken>>,
    changed: watch::Sender<usize>,
    progress: Arc<Progress>,
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
            progress: Progress::current(),
        })
    }

    pub fn executor(self: &Arc<Self>) -> ToolExecutor {
        let me = Arc::clone(self);
        Arc::new(move |call: ToolCall, ctx: ToolContext| {
            let me = Arc::clone(&me);
            let run = async move {
                let result = me.execute(call, ctx).await;
                me.progress.tick();
                result
            };
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
        self.progress.tick();
        let gate = lock(&self.gates).remove(&call.id);
        if let Some(gate) = gate {
            // Dropping the sender (the test ended) also ends the wait.
            let _ = gate.await;
            self.progress.tick();
        }
        match call.name.as_str() {
            "explode" => return Err(Box::new(DiskFull)),
            "crash" => std::panic::panic_any(CRASH_TEXT),
            "crash_owned" => std::panic::panic_any(format!("kaboom {} ({PANIC_MARKER})", call.id)),
            "report" => (ctx.report_progress)(vec![ContentBlock::text("step 1 of 2")]),
            "cancel_run" => ctx.signal.cancel(),
            _ => {}
        }
        Ok(ok_result(&call, bench_details(&call.id)))
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
        self.progress.tick();
    }

    /// Waits until the executor has been entered for every id in `ids`; fails with `why` if the loop
    /// stops making progress before.
    pub async fn wait_started(&self, ids: &[&str], why: &str) {
        let all_started = |_: &usize| {
            let started = lock(&self.started);
            ids.iter().all(|id| started.iter().any(|s| s == id))
        };
        let mut changes = self.changed.subscribe();
        tokio::select! {
            biased;
            _ = changes.wait_for(all_started) => {}
            () = self.progress.stalled(STEP_QUIET) => {
                let (quiet, started) = (quiet_secs(STEP_QUIET), self.started());
                panic!(
                    "{}\n  {why}\n  {}: {started:?}",
                    msg!(
                        "等待调用 {ids:?} 全部开始执行超时：{quiet} 秒内循环没有任何进展",
                        "timed out waiting for calls {ids:?} to start: the loop made no progress for {quiet} s"
                    ),
                    msg!("实际开始执行的", "actually started"),
                )
            }
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
    setup_streaming(script.into_iter().map(|m| (m, None)).collect())
}

/// Like [`setup`], but a turn given with `Some(events)` streams exactly those events instead of the
/// ones the `ScriptedModel` derives, then still ends with the scripted final message. That is how a
/// test makes a stream whose partials differ from its final message, as a real provider's may.
pub fn setup_streaming(turns: Vec<(AssistantMessage, Option<Vec<ModelEvent>>)>) -> Setup {
    silence_deliberate_panics();
    let script: Vec<AssistantMessage> = turns.iter().map(|(m, _)| m.clone()).collect();
    let streams = turns.into_iter().map(|(_, events)| events).collect();
    let model = Arc::new(ScriptedModel::new(script.clone()));
    let context = Arc::new(Mutex::new(AgentContext {
        system_prompt: SYSTEM_PROMPT.to_string(),
        messages: caller_messages(),
    }));
    let events = Recorder::new();
    let guarded = Arc::new(Guarded {
        model: model.clone(),
        script,
        streams,
        progress: Progress::current(),
    });
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
    for name in ["echo", "write"] {
        tools.register(FakeTool {
            name,
            runs: runs.clone(),
            progress: Progress::current(),
        });
    }
    tools
}

/// More requests than any test's script needs: a loop that gets here never ends by itself.
const REQUEST_LIMIT: usize = 100;
/// More events than any test produces: a loop that emits this many never ends by itself.
const EVENT_LIMIT: usize = 5_000;

/// Hands every request to the scripted model (which records it), streams the test's own events for a
/// turn that has them, and stops a loop that would request forever.
struct Guarded {
    model: Arc<ScriptedModel>,
    script: Vec<AssistantMessage>,
    streams: Vec<Option<Vec<ModelEvent>>>,
    progress: Arc<Progress>,
}

impl Model for Guarded {
    fn stream(&self, request: ModelRequest) -> EventStream<ModelEvent, AssistantMessage> {
        self.progress.tick();
        let calls = self.model.calls();
        if calls >= REQUEST_LIMIT {
            panic!(
                "{}",
                msg!(
                    "模型已被请求 {calls} 次，循环停不下来：是否有终态分支没有结束运行，或没有遵守 max_steps？",
                    "the model was asked {calls} times: the loop never ends (a terminal branch that goes on, \
                     or max_steps ignored?)"
                )
            );
        }
        let scripted = self.model.stream(request);
        match (self.streams.get(calls), self.script.get(calls)) {
            (Some(Some(events)), Some(last)) => {
                let (tx, stream) = event_stream();
                for event in events {
                    tx.push(event.clone());
                }
                tx.end(last.clone());
                stream
            }
            _ => scripted,
        }
    }
}

pub type Driver = Pin<Box<dyn Future<Output = ()>>>;

/// Runs one test's future to its end on a current-thread runtime (what `#[tokio::test]` would do).
pub fn block_on(test: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
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
    /// Fails, instead of waiting forever, if the loop stops making progress; fails with the payload if
    /// the loop panics.
    pub async fn run_with(self, driver: Driver) -> Outcome {
        let Setup {
            model,
            context,
            events,
            options,
        } = self;
        let progress = Progress::current();
        progress.tick();
        let both = drive(pi_course::boxed_agent_loop(options), driver);
        let outcome = tokio::select! {
            biased;
            outcome = both => Some(outcome),
            () = progress.stalled(RUN_QUIET) => None,
        };
        let result = match outcome {
            Some(Ok(result)) => result,
            Some(Err(payload)) => {
                let text = payload_text(payload.as_ref());
                if text.contains("not yet implemented") {
                    panic!(
                        "{}\n  {}: {text}\n  {}",
                        this_lab(),
                        msg!(
                            "循环停在了骨架的 todo!()",
                            "the loop stopped at a todo!() of the skeleton"
                        ),
                        msg!(
                            "按 7.1 → 7.5 的顺序完成各个 Lab",
                            "finish the Labs in order, 7.1 → 7.5"
                        )
                    )
                }
                let hint = if text.contains("never ends") || text.contains("停不下来") {
                    String::new()
                } else {
                    format!(
                        "\n  {}",
                        msg!(
                            "若它来自执行器的错误或 panic，说明它没有被转换成配对的错误结果",
                            "if it comes from an executor's error or panic, it escaped instead of becoming a \
                             paired error result"
                        )
                    )
                };
                panic!(
                    "{}: {text}{hint}\n  {}: {}",
                    msg!("循环本身 panic 了", "the loop panicked"),
                    msg!("已发生的事件", "events so far"),
                    events.summary()
                )
            }
            None => {
                let quiet = quiet_secs(RUN_QUIET);
                panic!(
                    "{}\n  {}: {}\n  {}: {}",
                    msg!(
                        "循环卡住了：{quiet} 秒内没有任何进展（没有事件、模型请求或工具动作），也没有返回",
                        "the loop hung: nothing happened for {quiet} s (no event, model request or tool step) \
                         and it never returned"
                    ),
                    msg!("已发生的事件", "events so far"),
                    events.summary(),
                    msg!("可能卡在", "probably waiting"),
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

/// "Lab 7.2 (single tool round trip) is not done yet", in the learner's language, for the running test.
fn this_lab() -> String {
    let thread = std::thread::current();
    let module = thread
        .name()
        .and_then(|n| n.split("::").next())
        .unwrap_or("");
    match LABS.iter().find(|(m, ..)| *m == module) {
        Some((_, lab, zh, en)) => {
            msg!(
                "Lab {lab}（{zh}）还没完成",
                "Lab {lab} ({en}) is not done yet"
            )
        }
        None => msg!("这个 Lab 还没完成", "this Lab is not done yet"),
    }
}

type LoopFuture = Pin<Box<dyn Future<Output = AgentRunResult>>>;

/// Polls the loop and the driver together. A loop panic ends everything at once; a loop that returns
/// still lets the driver finish (its own waits fail with a precise message if it cannot).
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
        msg!("（不是字符串的 panic 载荷）", "(non-string panic payload)")
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
        let count = turn_ends.len();
        assert_eq!(
            count,
            1,
            "{}\n  {}: {kinds:?}",
            msg!(
                "一次运行恰好发出一个 turn_end（不变量 3），实际 {count} 个",
                "one run emits exactly one turn_end (invariant 3), got {count}"
            ),
            msg!("全部事件", "all events"),
        );
        assert!(
            kinds.last().is_some_and(|k| k.starts_with("turn_end")),
            "{}",
            msg!(
                "turn_end 必须是最后一个事件：{kinds:?}",
                "turn_end must be the last event: {kinds:?}"
            )
        );
        let wanted = format!("turn_end({reason:?})");
        assert_eq!(
            turn_ends[0],
            &wanted,
            "{rule}: {}\n  {}: {kinds:?}",
            msg!("运行应以 {wanted} 结束", "the run must end with {wanted}"),
            msg!("全部事件", "all events"),
        );
        assert_eq!(
            self.result.reason,
            reason,
            "{rule}: {}",
            msg!(
                "返回的 reason 应与 turn_end 一致，为 {reason:?}",
                "the returned reason must match the turn_end: {reason:?}"
            )
        );
    }

    /// Each model turn emitted exactly one assistant_message, carrying the final message the model
    /// returned: as many events as model requests, no repeat, none invented.
    pub fn assert_one_assistant_message_per_turn(&self, rule: &str) {
        let (sent, calls) = (self.events.count("assistant_message"), self.model.calls());
        let kinds = self.kinds();
        assert_eq!(
            sent,
            calls,
            "{rule}: {}\n  {}: {kinds:?}",
            msg!(
                "每个模型回合恰好一个 assistant_message：模型被请求 {calls} 次，却发出了 {sent} 个（不重复发，也不编造）",
                "exactly one assistant_message per model turn: {calls} requests, {sent} events (never repeated, \
                 never invented)"
            ),
            msg!("全部事件", "all events"),
        );
    }

    /// The context shared with the caller still holds exactly what it held before the run.
    pub fn assert_context_untouched(&self) {
        let context = lock(&self.context);
        assert_eq!(
            context.system_prompt,
            SYSTEM_PROMPT,
            "{}",
            msg!(
                "调用者的 system prompt 被改动了",
                "the caller's system prompt was changed"
            )
        );
        assert_eq!(
            context.messages,
            caller_messages(),
            "{}",
            msg!(
                "调用者共享的 context 被写入了：loop 应在开始时克隆消息，只修改自己的 transcript（第一步）",
                "the caller's shared context was written: clone it once at the start, change only the run's \
                 own copy (step 1)"
            ),
        );
    }
}
