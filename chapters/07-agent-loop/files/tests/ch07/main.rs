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

mod support;

mod cancel_and_limits;
mod concurrent_tools;
mod duplicate_call_ids;
mod non_executing;
mod plain_stop;
mod single_tool;
