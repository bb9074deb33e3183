//! The course library as it stands after chapter 06.
//!
//! - [`message`]: the conversation, in the same JSON shape pi sends over the wire;
//! - [`event_stream`]: a stream of events that ends with exactly one final value;
//! - [`model`]: what a model is asked, and what it streams back;
//! - [`scripted_model`]: a model that replays a script, so tests need no network;
//! - [`tool`]: tools, their registry and the executor that turns one call into one result.

pub mod event_stream;
pub mod message;
pub mod model;
pub mod scripted_model;
pub mod tool;
