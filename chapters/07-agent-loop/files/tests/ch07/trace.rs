//! The recorder: one ordered list of steps per test, each handed to the harness's sink the moment it
//! is recorded (graded: the channel; by hand: kept for the comparison). Steps come from any thread (the
//! loop's, tokio's workers, a tool's own OS thread), so the list sits behind one lock, and the sink is
//! called under it: the order the sink sees is the order of the list.
//!
//! Every step is also *activity*: the driver tells a hung loop from a working one by progress, not by
//! total time (a correct loop takes microseconds between two steps, whatever runs its tools). Waiting
//! for something, the driver gives up only when nothing at all happened for a while.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pi_course_harness::Sink;
use serde_json::{json, Value};
use tokio::sync::watch;

/// A loop that emits endless events or requests is stopped here, well below the grader's own cap.
pub const MAX_STEPS: usize = 2_000;
/// How often a wait looks at the clock, to tell the loop's silence from the machine's.
const BEAT: Duration = Duration::from_millis(25);
/// How late a beat may come before the time it lost counts as the machine's, not the loop's.
const SLACK: Duration = Duration::from_millis(5);

pub struct Trace {
    state: Mutex<State>,
    /// Bumped on every step, on a tool reaching its gate, and when the trace ends.
    activity: watch::Sender<u64>,
    last: Mutex<Instant>,
}

struct State {
    steps: Vec<Value>,
    sink: Sink,
    /// No step is recorded once the run ended (a result, a panic, a hang, an overflow).
    open: bool,
}

pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere never makes the trace unreadable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Trace {
    pub fn new(sink: Sink) -> Trace {
        Trace {
            state: Mutex::new(State {
                steps: Vec::new(),
                sink,
                open: true,
            }),
            activity: watch::Sender::new(0),
            last: Mutex::new(Instant::now()),
        }
    }

    /// Records `step`; false if the trace has ended. The step that would pass [`MAX_STEPS`] ends the
    /// trace with `{"kind":"overflow"}` instead.
    pub fn record(&self, step: Value) -> bool {
        self.push(step, false)
    }

    /// Records `step` as the trace's last.
    pub fn record_last(&self, step: Value) -> bool {
        self.push(step, true)
    }

    fn push(&self, step: Value, last: bool) -> bool {
        let recorded = {
            let mut state = lock(&self.state);
            if !state.open {
                return false;
            }
            let overflow = state.steps.len() >= MAX_STEPS;
            let (step, last) = match overflow {
                true => (json!({"kind": "overflow"}), true),
                false => (step, last),
            };
            (state.sink)(step.clone());
            state.steps.push(step);
            state.open = !last;
            !overflow
        };
        self.tick();
        recorded
    }

    /// Ends the trace without a step of its own.
    pub fn close(&self) {
        lock(&self.state).open = false;
        self.tick();
    }

    pub fn is_open(&self) -> bool {
        lock(&self.state).open
    }

    /// Activity that is not a step (a tool reached its gate).
    pub fn tick(&self) {
        *lock(&self.last) = Instant::now();
        self.activity.send_modify(|n| *n += 1);
    }

    /// Reads the steps so far.
    pub fn read<R>(&self, f: impl FnOnce(&[Value]) -> R) -> R {
        f(&lock(&self.state).steps)
    }

    /// The number of `model_event` event steps so far.
    pub fn model_events(&self) -> usize {
        self.read(|steps| {
            let forwarded =
                |s: &&Value| s["kind"] == "event" && s["event"]["type"] == "model_event";
            steps.iter().filter(forwarded).count()
        })
    }

    /// Waits until `holds()`; false if the trace ended first, or if nothing happened for `quiet`.
    ///
    /// Quiet is counted only while this process runs: the wait wakes on a short beat, and a beat that comes
    /// late means the machine did not run the process (a busy machine, a loaded CI runner), so the time it
    /// lost is not the loop's silence. A loop that waits for something that never comes is still called
    /// hung after `quiet` of the process's own time; a correct loop is never called hung because the
    /// machine was busy. `quiet` is multiplied by the harness's patience.
    pub async fn wait_until(&self, holds: impl Fn() -> bool, quiet: Duration) -> bool {
        let quiet = quiet * pi_course_harness::patience();
        let mut activity = self.activity.subscribe();
        let mut seen = *lock(&self.last);
        // Time since the last activity during which this process did not run.
        let mut starved = Duration::ZERO;
        loop {
            let looked = Instant::now();
            activity.borrow_and_update();
            if holds() {
                return true;
            }
            if !self.is_open() {
                return false;
            }
            let last = *lock(&self.last);
            if last != seen {
                (seen, starved) = (last, Duration::ZERO);
            }
            // Looking waits for the trace's lock, which a step holds while it goes to the grader (a
            // busy grader reads late): that time is the recorder's, not the loop's silence.
            let looking = looked.elapsed();
            if looking > SLACK {
                starved += looking;
            }
            if last.elapsed().saturating_sub(starved) >= quiet {
                return false;
            }
            let beat = Instant::now();
            tokio::select! {
                biased;
                _ = activity.changed() => {}
                () = tokio::time::sleep(BEAT) => {
                    let late = beat.elapsed().saturating_sub(BEAT);
                    if late > SLACK {
                        starved += late;
                    }
                }
            }
        }
    }

    /// Waits until the trace ends; false if nothing happened for `quiet` before it did.
    pub async fn ended(&self, quiet: Duration) -> bool {
        self.wait_until(|| !self.is_open(), quiet).await || !self.is_open()
    }
}
