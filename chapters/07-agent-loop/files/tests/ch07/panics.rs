//! Panics the driver observes. A loop's panic is a step of the trace (its message, and where it was
//! raised when that is outside these tests), so it is kept off stderr; so are the deliberate panics of
//! the scenario's tools. Every other panic is printed as usual.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic;
use std::sync::Once;

use crate::tools::DELIBERATE_PANICS;

thread_local! {
    /// Set on the thread that polls the loop.
    static LOOP_THREAD: Cell<bool> = const { Cell::new(false) };
    /// Where the loop's thread last panicked (cleared before every poll of the loop).
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the driver's hook on top of the harness's, once.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let location = info.location();
            let deliberate = location.is_some_and(|l| l.file() == DELIBERATE_PANICS);
            if LOOP_THREAD.get() {
                LOCATION.set(location.map(|l| l.to_string()));
            } else if !deliberate {
                previous(info);
            }
        }));
    });
}

/// Marks the calling thread as the one that polls the loop.
pub fn on_loop_thread() {
    LOOP_THREAD.set(true);
}

/// Forgets the last location: a panic that is resumed (`resume_unwind`) passes no hook, and must not be
/// placed where an earlier one was raised.
pub fn forget() {
    LOCATION.set(None);
}

/// The `panic` step for a panic of the loop caught on the loop's thread. The location is kept when it
/// is outside these tests (a loop's `todo!()` says where it is; the tests' own files are not the
/// learner's to look at).
pub fn step(payload: &(dyn Any + Send)) -> serde_json::Value {
    let message = pi_course_harness::payload_text(payload);
    match LOCATION.take() {
        Some(at) if !at.starts_with("tests/") => {
            serde_json::json!({"kind": "panic", "message": message, "location": at})
        }
        _ => serde_json::json!({"kind": "panic", "message": message}),
    }
}
