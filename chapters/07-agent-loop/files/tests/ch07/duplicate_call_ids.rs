//! Optional 可选：重复 call id / duplicate call ids. The loop is the layer that refuses a message whose
//! calls repeat an id: such calls are answered with `duplicate-call-id` results and never run.

use pi_course::agent_loop::RunReason;
use pi_course::message::Message;
use serde_json::json;

use crate::support::*;

const DUPLICATE_TEXT: &str =
    "Tool call was not executed because its message repeats a tool call id.";

/// Bonus: two calls sharing one id are both answered with a duplicate-call-id result, in call order;
/// neither runs, the model is not asked again and the run ends with error.
async fn calls_that_share_an_id_never_run_and_each_gets_a_duplicate_result() {
    let calls = vec![
        call("dup", "write", json!({ "text": "first" })),
        call("dup", "write", json!({ "text": "second" })),
    ];
    let message = tool_use(calls.clone());
    let mut run = setup(vec![message.clone(), text_reply("never requested")]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let out = run.run().await;

    assert_eq!(
        bench.started(),
        Vec::<String>::new(),
        "{}",
        msg!(
            "重复 id 的调用一个都不得执行，更不能执行两次",
            "calls with a repeated id must not run at all, let alone twice"
        )
    );
    let mut wanted = caller_messages();
    wanted.push(Message::Assistant(message));
    wanted.extend(
        calls
            .iter()
            .map(|c| skipped(c, "duplicate-call-id", DUPLICATE_TEXT)),
    );
    assert_eq!(
        out.result.messages,
        wanted,
        "{}",
        msg!(
            "每个重复 id 的调用都应得到一条 duplicate-call-id 结果，按调用顺序",
            "one duplicate-call-id result per call, in call order"
        )
    );
    out.assert_ends(
        RunReason::Error,
        &msg!("重复的 call id", "repeated call id"),
    );
    assert_eq!(
        out.model.calls(),
        1,
        "{}",
        msg!(
            "重复 id 之后不得再请求模型",
            "no request after a repeated id"
        )
    );
}

/// Bonus: a call with a unique id beside two that repeat one still gets exactly one result in its
/// place and runs at most once; the repeated ones never run.
async fn a_unique_sibling_of_repeated_ids_gets_exactly_one_result() {
    let calls = vec![
        call("dup", "write", json!({ "text": "first" })),
        call("solo", "lookup", json!({})),
        call("dup", "write", json!({ "text": "second" })),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("never requested")]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let out = run.run().await;

    let started = bench.started();
    assert!(
        !started.iter().any(|id| id == "dup")
            && started.iter().filter(|id| *id == "solo").count() <= 1,
        "{}",
        msg!(
            "重复 id 的调用不得执行，唯一 id 的调用至多执行一次：实际执行 {started:?}",
            "repeated ids never run, the unique one at most once: {started:?} ran"
        )
    );
    assert_eq!(
        roles(&out.result.messages[caller_messages().len().min(out.result.messages.len())..]),
        [
            "assistant",
            "toolResult(dup)",
            "toolResult(solo)",
            "toolResult(dup)"
        ],
        "{}",
        msg!(
            "每个调用都恰好有一条结果，按调用顺序（不变量 2）",
            "exactly one result per call, in call order (invariant 2)"
        )
    );
    out.assert_ends(
        RunReason::Error,
        &msg!("重复的 call id", "repeated call id"),
    );
}

crate::tests![
    calls_that_share_an_id_never_run_and_each_gets_a_duplicate_result,
    a_unique_sibling_of_repeated_ids_gets_exactly_one_result,
];
