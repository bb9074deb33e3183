//! Gates: a tool invocation that the scenario gates waits at its gate until the driver's plan releases
//! it, so the order of concurrent steps comes from explicit actions, never from timing. A gate is named
//! by its ref (a call id, or `tool:<name>`); releases of one ref open its invocations in arrival order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::trace::{lock, Trace};

#[derive(Default, Clone, Copy)]
struct Count {
    arrived: usize,
    released: usize,
}

pub struct Gates {
    counts: Mutex<HashMap<String, Count>>,
    /// Bumped on every release and when the run ends; tools may wait on any runtime or thread.
    changed: watch::Sender<u64>,
    closed: Mutex<bool>,
    trace: Arc<Trace>,
}

impl Gates {
    pub fn new(trace: Arc<Trace>) -> Gates {
        Gates {
            counts: Mutex::default(),
            changed: watch::Sender::new(0),
            closed: Mutex::new(false),
            trace,
        }
    }

    /// Waits at the gate `gate` until a release opens it (or the run has ended).
    pub async fn pass(&self, gate: &str) {
        let place = {
            let mut counts = lock(&self.counts);
            let count = counts.entry(gate.to_string()).or_default();
            count.arrived += 1;
            count.arrived - 1
        };
        self.trace.tick();
        let mut changes = self.changed.subscribe();
        let open = |_: &u64| *lock(&self.closed) || self.count(gate).released > place;
        // The sender lives as long as `self`, so the wait only ends when the gate opens.
        let _ = changes.wait_for(open).await;
    }

    /// Opens the gate `gate` once.
    pub fn release(&self, gate: &str) {
        lock(&self.counts)
            .entry(gate.to_string())
            .or_default()
            .released += 1;
        self.changed.send_modify(|n| *n += 1);
    }

    /// Someone waits at `gate`, not yet released.
    pub fn waiting(&self, gate: &str) -> bool {
        let count = self.count(gate);
        count.arrived > count.released
    }

    /// The gates someone waits at, sorted.
    pub fn all_waiting(&self) -> Vec<String> {
        let counts = lock(&self.counts);
        let mut waiting: Vec<String> = counts
            .iter()
            .filter(|(_, c)| c.arrived > c.released)
            .map(|(gate, _)| gate.clone())
            .collect();
        waiting.sort();
        waiting
    }

    /// The run is over: every gate opens, so tools left running (on threads the loop never joined)
    /// finish instead of waiting forever.
    pub fn close(&self) {
        *lock(&self.closed) = true;
        self.changed.send_modify(|n| *n += 1);
    }

    fn count(&self, gate: &str) -> Count {
        lock(&self.counts).get(gate).copied().unwrap_or_default()
    }
}
