//! Chapter 07's driver: it runs your loop on a scenario and records what it observes, step by step
//! (docs/JUDGE.md in the course's repository). It never decides a verdict itself: by hand, the harness
//! compares the trace with the expected one in `expected.json`; graded, the grader does, with
//! scenarios it makes at grade time. Run one group by itself with
//!
//! ```text
//! cargo test --test ch07 plain_stop          # Lab 7.1 纯文本 stop
//! cargo test --test ch07 single_tool         # Lab 7.2 单工具往返
//! cargo test --test ch07 non_executing       # Lab 7.3 非执行终态
//! cargo test --test ch07 concurrent_tools    # Lab 7.4 并发工具
//! cargo test --test ch07 cancel_and_limits   # Lab 7.5 取消与上限
//! cargo test --test ch07 duplicate_call_ids  # optional 可选：重复 call id
//! PI_COURSE_TRACE=1 cargo test --test ch07 plain_stop   # also print every step to stderr
//! ```
//!
//! The driver is a library that knows only the chapter's types (`api/`), never `src/agent_loop.rs`: it
//! is compiled once, and the test target `tests/ch07.rs` hands it your loop. These files are given:
//! change `src/agent_loop.rs`, not the tests.

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

use pi_course_harness::Sink;

/// How the driver starts the learner's loop: `run_agent_loop`, boxed (see `api/`).
pub type RunLoop = pi_course::RunLoop;

/// The loop under test, as the test target hands it over.
static RUN: std::sync::OnceLock<RunLoop> = std::sync::OnceLock::new();

/// Every test's instance and expected trace, for runs by hand.
const EXPECTED: &str = include_str!("expected.json");

/// Runs the chapter's tests against `run` (the learner's `run_agent_loop`, boxed).
pub fn main(run: RunLoop) -> std::process::ExitCode {
    let _ = RUN.set(run);
    pi_course_harness::run(drive, EXPECTED)
}

/// The harness's driver: one instance, its steps to `sink`.
fn drive(instance: &str, sink: Sink) {
    let run_loop = *RUN
        .get()
        .expect("main() hands over the loop before any test runs");
    run::run(run_loop, instance, sink)
}
