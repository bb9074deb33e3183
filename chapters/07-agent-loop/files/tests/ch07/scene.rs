//! The state one run shares between the driver's parts (model, tools, plan, supervisor), on whatever
//! thread they run: the trace, the gates, the run's signal, and the caller's context with what the
//! driver left there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, TryLockError};

use pi_course::agent_loop::{AgentContext, LoopEvent, SharedContext};
use pi_course::message::{Message, ToolResultMessage};
use pi_course::tool::CancellationToken;
use serde_json::{json, Value};

use crate::gates::Gates;
use crate::instance::{tool_ref, Behavior, Instance, ToolOk};
use crate::tools::{unplanned_output, unplanned_result, unscripted};
use crate::trace::{lock, Trace};

/// What the caller writes into its context when a turn has `edit_context` (docs/JUDGE.md).
pub const EDIT: &str = "edited by the caller";
use crate::wire;

pub struct Scene {
    pub trace: Arc<Trace>,
    pub gates: Gates,
    /// The run's signal: the driver's own, or the one `AgentLoopOptions::new` made (set before the run).
    signal: OnceLock<CancellationToken>,
    /// The caller's context, as handed to the loop.
    pub context: SharedContext,
    /// What the driver left in the caller's context (changed only by a turn's `edit_context`).
    left_there: Mutex<AgentContext>,
    /// The `caller` step is recorded once per test.
    caller_reported: AtomicBool,
    /// Held while the driver itself looks into the caller's context, so that two of its own looks (from
    /// events on two threads) never take each other for a loop that holds the lock.
    looking: Mutex<()>,
    /// How often each ref (call id, `tool:<name>`) was entered: the index of its next behaviour.
    invocations: Mutex<HashMap<String, usize>>,
    calls: HashMap<String, Vec<Behavior<ToolResultMessage>>>,
    tool_runs: HashMap<String, Vec<Behavior<ToolOk>>>,
}

impl Scene {
    pub fn new(trace: Arc<Trace>, caller: AgentContext, instance: &mut Instance) -> Scene {
        Scene {
            calls: std::mem::take(&mut instance.calls),
            tool_runs: std::mem::take(&mut instance.tool_runs),
            gates: Gates::new(trace.clone()),
            trace,
            signal: OnceLock::new(),
            context: Arc::new(Mutex::new(caller.clone())),
            left_there: Mutex::new(caller),
            caller_reported: AtomicBool::new(false),
            looking: Mutex::new(()),
            invocations: Mutex::default(),
        }
    }

    pub fn set_signal(&self, signal: CancellationToken) {
        let _ = self.signal.set(signal);
    }

    /// The run's signal.
    pub fn signal(&self) -> &CancellationToken {
        self.signal
            .get()
            .expect("the run's signal is set before the run starts")
    }

    pub fn record(&self, step: Value) -> bool {
        self.trace.record(step)
    }

    /// The 0-based invocation of `reference` that starts now.
    fn invocation(&self, reference: &str) -> usize {
        let mut invocations = lock(&self.invocations);
        let n = invocations.entry(reference.to_string()).or_default();
        *n += 1;
        *n - 1
    }

    /// The behaviour of the executor's invocation for `call_id` that starts now.
    pub fn calls(&self, call_id: &str, name: &str) -> Behavior<ToolResultMessage> {
        let n = self.invocation(call_id);
        let scripted = self.calls.get(call_id).and_then(|list| list.get(n));
        scripted
            .cloned()
            .unwrap_or_else(|| unscripted(unplanned_result(call_id, name)))
    }

    /// The behaviour of the registry tool `name`'s invocation that starts now.
    pub fn tool_runs(&self, name: &str) -> Behavior<ToolOk> {
        let reference = tool_ref(name);
        let n = self.invocation(&reference);
        let scripted = self.tool_runs.get(name).and_then(|list| list.get(n));
        scripted
            .cloned()
            .unwrap_or_else(|| unscripted(unplanned_output()))
    }

    /// The event sink's work: the event step, then a look at the caller's context.
    pub fn on_event(&self, event: &LoopEvent) {
        // Past the trace's end (an overflow, say) an event is noise: it costs the run nothing.
        if !self.trace.is_open() {
            return;
        }
        self.record(json!({"kind": "event", "event": wire::loop_event(event)}));
        self.check_caller();
    }

    /// At an event, the caller (a UI, say) reads its context: can it, and is it what it left there?
    fn check_caller(&self) {
        if self.caller_reported.load(Ordering::SeqCst) {
            return;
        }
        let _looking = lock(&self.looking);
        let state = match self.context.try_lock() {
            Err(TryLockError::WouldBlock) => Some("locked"),
            Ok(shared) => (!same_context(&shared, &lock(&self.left_there))).then_some("changed"),
            Err(TryLockError::Poisoned(poisoned)) => {
                let shared = poisoned.into_inner();
                (!same_context(&shared, &lock(&self.left_there))).then_some("changed")
            }
        };
        if let Some(state) = state {
            if !self.caller_reported.swap(true, Ordering::SeqCst) {
                self.record(json!({"kind": "caller", "state": state}));
            }
        }
    }

    /// A turn's `edit_context`: the caller changes its context while the model works (a user typing
    /// on). Needs the context's lock; a loop that holds it gets a `caller locked` step instead.
    pub fn edit_context(&self) {
        self.edit(true);
    }

    /// `edit_at_start`: the caller adds a message to its context once the run has started (here, at
    /// the first request: a Rust loop's future runs nothing before its first poll), with no step of
    /// its own. A loop that copied the context at the start never shows it.
    pub fn edit_messages(&self) {
        self.edit(false);
    }

    fn edit(&self, whole: bool) {
        let _looking = lock(&self.looking);
        let mut shared = match self.context.try_lock() {
            Ok(shared) => shared,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                if !self.caller_reported.swap(true, Ordering::SeqCst) {
                    self.record(json!({"kind": "caller", "state": "locked"}));
                }
                return;
            }
        };
        shared.messages.push(Message::user(EDIT));
        if whole {
            shared.system_prompt.push_str(EDIT);
        }
        *lock(&self.left_there) = shared.clone();
        if whole {
            self.record(json!({"kind": "driver", "action": "edit_context"}));
        }
    }

    /// The caller's context after the run, or `null` if something still holds its lock.
    pub fn caller_now(&self) -> Value {
        let read = |context: &AgentContext| {
            json!({
                "system_prompt": context.system_prompt,
                "messages": wire::messages(&context.messages),
            })
        };
        match self.context.try_lock() {
            Ok(shared) => read(&shared),
            Err(TryLockError::Poisoned(poisoned)) => read(&poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => Value::Null,
        }
    }

    /// Cancels the run's signal, as the driver (not a tool) does it.
    pub fn abort(&self) {
        self.record(json!({"kind": "driver", "action": "abort"}));
        self.signal().cancel();
    }
}

/// Whether two contexts hold the same system prompt and messages, compared as the trace writes them: by
/// their fields, never by a `PartialEq` a practice directory of an older layout declares itself.
fn same_context(a: &AgentContext, b: &AgentContext) -> bool {
    a.system_prompt == b.system_prompt && wire::messages(&a.messages) == wire::messages(&b.messages)
}
