//! Chapter 07 tests: the agent loop. One module per group; run one group by itself with
//!
//! ```text
//! cargo test --test ch07 plain_stop          # Lab 7.1 纯文本 stop
//! cargo test --test ch07 single_tool         # Lab 7.2 单工具往返
//! cargo test --test ch07 non_executing       # Lab 7.3 非执行终态
//! cargo test --test ch07 concurrent_tools    # Lab 7.4 并发工具
//! cargo test --test ch07 cancel_and_limits   # Lab 7.5 取消与上限
//! cargo test --test ch07 duplicate_call_ids  # optional 可选：重复 call id
//! ```
//!
//! The tests judge what the loop does (requests, events, transcript, result), never how it is built.
//! Every test is bounded by the progress the loop makes (see `support.rs`): a loop that hangs fails with a
//! message instead of waiting forever. These files are given: change `src/agent_loop.rs`, not the tests.
//!
//! The tests are a library that knows only the chapter's types (`api/`), never `src/agent_loop.rs`: it is
//! compiled once, and the test target `tests/ch07.rs` hands it your loop. They run on the course's own
//! harness (`harness/`): by hand it behaves like `cargo test`; under `pi-course grade` it reports each
//! verdict over a channel the code under test cannot reach.

mod support;

mod cancel_and_limits;
mod concurrent_tools;
mod duplicate_call_ids;
mod non_executing;
mod plain_stop;
mod single_tool;

/// The loop under test, as the test target hands it over.
static RUN: std::sync::OnceLock<pi_course::RunLoop> = std::sync::OnceLock::new();

/// Starts the loop under test.
fn boxed_agent_loop(options: pi_course::agent_loop::AgentLoopOptions) -> pi_course::LoopFuture {
    let run = RUN
        .get()
        .expect("main() hands over the loop before any test runs");
    run(options)
}

/// Runs the chapter's tests against `run` (the learner's `run_agent_loop`, boxed).
pub fn main(run: pi_course::RunLoop) -> std::process::ExitCode {
    let _ = RUN.set(run);
    pi_course_harness::run(
        [
            plain_stop::tests(),
            single_tool::tests(),
            non_executing::tests(),
            concurrent_tools::tests(),
            cancel_and_limits::tests(),
            duplicate_call_ids::tests(),
        ]
        .concat(),
    )
}
