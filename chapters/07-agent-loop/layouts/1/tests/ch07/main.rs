//! Chapter 07's test target in a practice directory of layout 1, where `src/agent_loop.rs` declares the
//! chapter's types itself: the same driver as today's layout (the modules beside this file), compiled
//! with your crate. It never decides a verdict: by hand the harness compares each trace with
//! `expected.json`; graded, the grader does. Run one group by itself with
//! `cargo test --test ch07 plain_stop`.

mod gates;
mod instance;
mod model;
mod panics;
mod plan;
mod run;
mod scene;
mod tools;
mod trace;
mod wire;

use std::future::Future;
use std::pin::Pin;

use pi_course::agent_loop::{AgentLoopOptions, AgentRunResult};
use pi_course_harness::Sink;

/// How the driver starts the learner's loop: `run_agent_loop`, boxed.
pub type RunLoop = fn(AgentLoopOptions) -> Pin<Box<dyn Future<Output = AgentRunResult>>>;

/// Every test's instance and expected trace, for runs by hand.
const EXPECTED: &str = include_str!("expected.json");

fn main() -> std::process::ExitCode {
    pi_course_harness::run(drive, EXPECTED)
}

fn drive(instance: &str, sink: Sink) {
    run::run(pi_course::boxed_agent_loop, instance, sink)
}
