//! Chapter 07: the agent loop.
//!
//! Everything up to chapter 06 lives in the `course` crate, and this chapter's public types in the `api`
//! crate; both are re-exported here unchanged, so the paths are the same as in earlier chapters. This
//! chapter adds one module, [`agent_loop`], the one you write.
//!
//! No `unsafe` here: the graded code cannot reach memory or descriptors that are not its own.
#![forbid(unsafe_code)]

pub use pi_course_api::{event_stream, message, model, scripted_model, tool};

/// Ask the model, run the tools it asks for, feed the results back, until the run ends.
pub mod agent_loop;

/// How the chapter's tests start your loop: `run_agent_loop`, behind one plain (non-generic) function.
///
/// Why: the tests are compiled once, without your crate (they know only the types in `api/`), and the
/// test target hands them this function. Code is compiled where it is first made concrete: boxed here,
/// the compiled loop stays in this crate, so an edit recompiles this crate and relinks, nothing more.
pub fn boxed_agent_loop(options: agent_loop::AgentLoopOptions) -> pi_course_api::LoopFuture {
    Box::pin(agent_loop::run_agent_loop(options))
}
