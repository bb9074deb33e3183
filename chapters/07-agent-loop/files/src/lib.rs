//! Chapter 07: the agent loop.
//!
//! Everything up to chapter 06 lives in the `course` crate and is re-exported here unchanged, so the
//! paths are the same as in earlier chapters. This chapter adds one module, [`agent_loop`].

pub use pi_course_base::{event_stream, message, model, scripted_model, tool};

/// Ask the model, run the tools it asks for, feed the results back, until the run ends.
pub mod agent_loop;
