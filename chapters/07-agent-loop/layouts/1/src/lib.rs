//! Chapter 07: the agent loop.
//!
//! Everything up to chapter 06 lives in the `course` crate and is re-exported here unchanged, so the
//! paths are the same as in earlier chapters. This chapter adds one module, [`agent_loop`].
//!
//! No `unsafe` here: the graded code cannot reach memory or descriptors that are not its own.
#![forbid(unsafe_code)]

use std::future::Future;
use std::pin::Pin;

pub use pi_course_base::{event_stream, message, model, scripted_model, tool};

/// Ask the model, run the tools it asks for, feed the results back, until the run ends.
pub mod agent_loop;

/// How the chapter's tests start your loop: `run_agent_loop`, behind one plain (non-generic) function.
///
/// Why: code is compiled where it is first made concrete. Awaited directly, the loop's future would be
/// compiled into the test crate, so every edit of `agent_loop.rs` would recompile all the tests. Boxed
/// here, the compiled loop stays in this crate, and an edit recompiles only this crate and relinks.
pub fn boxed_agent_loop(
    options: agent_loop::AgentLoopOptions,
) -> Pin<Box<dyn Future<Output = agent_loop::AgentRunResult>>> {
    Box::pin(agent_loop::run_agent_loop(options))
}
