//! Runs one instance: builds the loop's options from it, starts the learner's loop on a thread of its
//! own, runs the plan beside it, and ends the trace with what became of the run: `result`, `panic`,
//! `hang` (nothing happened for [`RUN_QUIET`]) or `overflow` (see `trace.rs`).
//!
//! The runtime is multi-threaded, and the loop is polled on a thread the driver can leave behind: the
//! plan and the hang watch run on tokio's workers, so they keep working while the loop's thread is busy
//! (even blocked), and a loop that never returns costs its thread, not the test. Tools may run anywhere
//! the loop puts them: tasks, the blocking pool, OS threads with runtimes of their own, or in place.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::Poll;
use std::thread;
use std::time::Duration;

use crate::RunLoop;
use pi_course::agent_loop::{AgentContext, AgentLoopOptions, AgentRunResult};
use pi_course::tool::{CancellationToken, ToolRegistry};
use pi_course_harness::Sink;
use serde_json::{json, Value};

use crate::instance::Instance;
use crate::model::DriverModel;
use crate::scene::Scene;
use crate::tools::{executor, ScriptedTool};
use crate::trace::Trace;
use crate::{panics, plan, wire};

/// A run that goes this long without any step counts as hung.
pub const RUN_QUIET: Duration = Duration::from_millis(1200);

pub fn run(run_loop: RunLoop, instance: &str, sink: Sink) {
    panics::install();
    let trace = Arc::new(Trace::new(sink));
    let mut instance = match Instance::parse(instance) {
        Ok(instance) => instance,
        Err(detail) => {
            trace
                .record_last(json!({"kind": "driver", "action": "bad_instance", "detail": detail}));
            return;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the driver's runtime");

    let caller = AgentContext {
        system_prompt: instance.system_prompt.clone(),
        messages: instance.caller.clone(),
    };
    let scene = Arc::new(Scene::new(trace.clone(), caller, &mut instance));
    let mut model = DriverModel::new(
        scene.clone(),
        std::mem::take(&mut instance.turns),
        instance.exhausted.clone(),
        runtime.handle().clone(),
    );
    model.edit_at_start = instance.edit_at_start;
    let mut options = AgentLoopOptions::new(Arc::new(model), scene.context.clone());
    // The run's signal: with `signal`, one the driver makes and hands over; without, the one
    // `AgentLoopOptions::new` made. The driver keeps a clone either way, to tell it apart (tools.rs).
    if instance.signal {
        options.signal = CancellationToken::new();
    }
    scene.set_signal(options.signal.clone());
    if instance.pre_abort {
        scene.abort();
    }
    if !instance.tools.is_empty() {
        let mut tools = ToolRegistry::new();
        for definition in instance.tools.drain(..) {
            let scene = scene.clone();
            tools.register(ScriptedTool { definition, scene });
        }
        options.tools = tools;
    }
    if instance.executor {
        options.executor = Some(executor(scene.clone()));
    }
    if let Some(max_steps) = instance.max_steps {
        options.max_steps = max_steps;
    }
    if instance.on_event {
        let scene = scene.clone();
        options.on_event = Arc::new(move |event| scene.on_event(&event));
    }

    let handle = runtime.handle().clone();
    let looping = scene.clone();
    let name = thread::current().name().unwrap_or("test").to_string();
    let spawned = thread::Builder::new()
        .name(format!("{name} (loop)"))
        .spawn(move || {
            panics::on_loop_thread();
            let outcome = handle.block_on(polled(run_loop, options));
            let step = match outcome {
                Ok(result) => wire::result(
                    &result,
                    looping.caller_now(),
                    looping.signal().is_cancelled(),
                ),
                Err(payload) => panics::step(payload.as_ref()),
            };
            looping.trace.record_last(step);
        });
    let Ok(loop_thread) = spawned else {
        trace.record_last(json!({"kind": "hang", "waiting_for": "a thread to run the loop on"}));
        return;
    };
    runtime.spawn(plan::run(scene.clone(), std::mem::take(&mut instance.plan)));
    let ended = runtime.block_on(trace.ended(RUN_QUIET));
    if !ended {
        trace.record_last(json!({"kind": "hang", "waiting_for": waiting_for(&scene)}));
    }
    // The run is over: gated tools left behind finish, and a loop that never returned keeps its
    // thread (nothing it does is recorded any more).
    scene.gates.close();
    trace.close();
    if loop_thread.is_finished() {
        let _ = loop_thread.join();
    }
    runtime.shutdown_background();
}

/// Starts the loop and polls it to its end, catching a panic wherever it is raised in it (also in the
/// call that makes the future).
async fn polled(
    run_loop: RunLoop,
    options: AgentLoopOptions,
) -> Result<AgentRunResult, Box<dyn std::any::Any + Send>> {
    panics::forget();
    let mut future = catch_unwind(AssertUnwindSafe(|| run_loop(options)))?;
    std::future::poll_fn(|cx| {
        panics::forget();
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    })
    .await
}

/// What a hung run waits for, as far as the driver can tell.
fn waiting_for(scene: &Scene) -> String {
    let last = scene.trace.read(|steps| steps.last().map(describe));
    let mut text = match last {
        Some(last) => format!("the run to return (last step: {last})"),
        None => "the run to return (no step yet: before or inside the first request)".to_string(),
    };
    let gates = scene.gates.all_waiting();
    if !gates.is_empty() {
        text.push_str(&format!("; waiting at gates: {}", gates.join(", ")));
    }
    text
}

/// A step in a few words: its kind, and the event's type for an event.
fn describe(step: &Value) -> String {
    let kind = step["kind"].as_str().unwrap_or("?");
    match step["event"]["type"].as_str() {
        Some(event) if kind == "event" => format!("event {event}"),
        _ => kind.to_string(),
    }
}
