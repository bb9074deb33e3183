//! The driver's actions beside the running loop, in the scenario's order: wait for a state, release a
//! gate, abort the run. Each action is a `driver` step; a wait that sees nothing at all happen for
//! [`WAIT_QUIET`] gives up (a `gave_up` step) and the plan goes on.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::instance::{Action, EventKind, Wait};
use crate::scene::Scene;

/// Shorter than the run's hang limit, and counted from the same last step, so a wait that cannot be
/// met says so before the run is called hung.
pub const WAIT_QUIET: Duration = Duration::from_millis(1000);

pub async fn run(scene: Arc<Scene>, plan: Vec<Action>) {
    for action in plan {
        if !scene.trace.is_open() {
            return;
        }
        match action {
            Action::Wait(wait) => {
                let holds = || holds(&scene, &wait);
                if !scene.trace.wait_until(holds, WAIT_QUIET).await {
                    let waiting_for = describe(&wait);
                    scene.record(
                        json!({"kind": "driver", "action": "gave_up", "waiting_for": waiting_for}),
                    );
                }
            }
            Action::Release(gate) => {
                // The step first: whatever the released tool does comes after it in the trace.
                scene.record(json!({"kind": "driver", "action": "release", "ref": gate}));
                scene.gates.release(&gate);
            }
            Action::Abort(()) => scene.abort(),
        }
    }
}

fn holds(scene: &Scene, wait: &Wait) -> bool {
    match wait {
        Wait::AtGate { at_gate } => at_gate.iter().all(|gate| scene.gates.waiting(gate)),
        Wait::Event { event, id, count } => scene.trace.read(|steps| {
            steps
                .iter()
                .filter(|step| is_event(step, *event, id))
                .count()
                >= *count
        }),
    }
}

fn is_event(step: &Value, kind: EventKind, id: &str) -> bool {
    let event = &step["event"];
    step["kind"] == "event"
        && match kind {
            EventKind::ToolEnd => {
                event["type"] == "tool_end" && event["result"]["toolCallId"] == id
            }
            EventKind::ToolProgress => {
                event["type"] == "tool_progress" && event["toolCallId"] == id
            }
        }
}

fn describe(wait: &Wait) -> String {
    match wait {
        Wait::AtGate { at_gate } => format!("at_gate {}", at_gate.join(", ")),
        Wait::Event {
            event: EventKind::ToolEnd,
            id,
            ..
        } => format!("event tool_end {id}"),
        Wait::Event {
            event: EventKind::ToolProgress,
            id,
            count,
        } => {
            format!("event tool_progress {id} ({count})")
        }
    }
}
