//! The chapter's test target: the tests (built once, in `tests/ch07/`) joined to your loop.
//! Run one group with `cargo test --test ch07 plain_stop`.

fn main() -> std::process::ExitCode {
    ch07_tests::main(pi_course::boxed_agent_loop)
}
