//! The driver's model: answers request n with the scenario's turn n, and records what it was asked.
//!
//! An eager turn pushes every event and ends its stream before returning it. A paced turn hands the
//! stream over empty: a task on the driver's runtime pushes event k+1 only once event k came back as an
//! event step, and ends the stream only once the last one did, so "the loop forwarded every event before
//! taking the result" is something the trace shows, not something timing happens to show.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pi_course::event_stream::{event_stream, EventSender, EventStream};
use pi_course::message::AssistantMessage;
use pi_course::model::{Model, ModelEvent, ModelRequest};
use serde_json::json;
use tokio::runtime::Handle;

use crate::instance::Turn;
use crate::scene::Scene;
use crate::wire;

/// How long a paced stream waits for its last event to be forwarded while nothing at all happens.
const PACE_QUIET: Duration = Duration::from_millis(1000);

pub struct DriverModel {
    scene: Arc<Scene>,
    turns: Vec<Turn>,
    exhausted: AssistantMessage,
    requests: AtomicUsize,
    /// The driver's runtime, where paced streams run (the loop may call `stream` from any thread).
    runtime: Handle,
    /// The instance's `edit_at_start`: the caller edits its messages at the first request.
    pub edit_at_start: bool,
}

impl DriverModel {
    pub fn new(
        scene: Arc<Scene>,
        turns: Vec<Turn>,
        exhausted: AssistantMessage,
        runtime: Handle,
    ) -> DriverModel {
        DriverModel {
            scene,
            turns,
            exhausted,
            requests: AtomicUsize::new(0),
            runtime,
            edit_at_start: false,
        }
    }
}

impl Model for DriverModel {
    fn stream(&self, request: ModelRequest) -> EventStream<ModelEvent, AssistantMessage> {
        let n = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        self.scene.record(wire::request(n, &request));
        let (tx, stream) = event_stream();
        let Some(turn) = self.turns.get(n - 1).cloned() else {
            tx.end(self.exhausted.clone());
            return stream;
        };
        if turn.abort {
            self.scene.abort();
        }
        if turn.edit_context {
            self.scene.edit_context();
        }
        if n == 1 && self.edit_at_start {
            self.scene.edit_messages();
        }
        let events: Vec<ModelEvent> = turn.events.into_iter().map(ModelEvent::from).collect();
        if turn.paced {
            let scene = self.scene.clone();
            self.runtime.spawn(pace(scene, n, events, turn.message, tx));
        } else {
            for event in events {
                tx.push(event);
            }
            tx.end(turn.message);
        }
        stream
    }
}

/// Streams `events` one at a time, each after the previous one was forwarded as an event step.
async fn pace(
    scene: Arc<Scene>,
    n: usize,
    events: Vec<ModelEvent>,
    message: AssistantMessage,
    tx: EventSender<ModelEvent, AssistantMessage>,
) {
    let mut events = events.into_iter().enumerate();
    while let Some((k, event)) = events.next() {
        let before = scene.trace.model_events();
        tx.push(event);
        let trace = &scene.trace;
        let forwarded = trace
            .wait_until(|| trace.model_events() > before, PACE_QUIET)
            .await;
        if !forwarded {
            let waiting_for = format!("request {n}: model event {k} forwarded as an event step");
            scene
                .record(json!({"kind": "driver", "action": "gave_up", "waiting_for": waiting_for}));
            for (_, event) in events.by_ref() {
                tx.push(event);
            }
        }
    }
    scene.record(json!({"kind": "driver", "action": "stream_end", "n": n}));
    tx.end(message);
}
