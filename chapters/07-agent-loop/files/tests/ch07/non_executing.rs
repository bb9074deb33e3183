//! Lab 7.3 非执行终态 / non-executing terminal states: calls that must not run still get a paired result.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::{AssistantMessage, ContentBlock, Message, StopReason};
use serde_json::{json, Value};

use crate::support::*;

const LENGTH_TEXT: &str = "Tool call was not executed because the model response was truncated.";
const ERROR_TEXT: &str =
    "Tool call was not executed because the model response ended with an error.";
const ABORTED_TEXT: &str = "Tool call was not executed because the run was aborted.";
const UNEXPECTED_STOP_TEXT: &str =
    "Tool call was not executed because the model stopped without requesting tool use.";

/// Runs one model turn whose final message has `stop` and two calls (echo, write), and checks the
/// whole non-executing branch: nothing runs, one skipped result per call in call order, one
/// tool_skipped per call and no tool_start, one turn_end, no further request.
async fn check_branch(stop: StopReason, reason: &str, text: &str, ends: RunReason, rule: &str) {
    let calls = vec![
        echo("cut"),
        call("cut-2", "write", json!({ "text": "rm -rf build" })),
    ];
    let message = with_calls(stop, calls.clone());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut run = setup(vec![message.clone(), text_reply("never requested")]);
    run.options.tools = counting_tools(&runs);
    let out = run.run().await;

    let executed = runs.load(Ordering::SeqCst);
    assert_eq!(
        executed,
        0,
        "{rule}: {}",
        msg!(
            "任何调用都不得执行，实际执行了 {executed} 次（第三步）",
            "no call may run, yet {executed} ran (step 3)"
        )
    );
    let mut order = roles(&caller_messages());
    order.extend(["assistant", "toolResult(cut)", "toolResult(cut-2)"].map(String::from));
    assert_eq!(
        roles(&out.result.messages),
        order,
        "{rule}: {}",
        msg!(
            "先是这条 assistant，之后按调用顺序每个 call 一条结果（不变量 2）",
            "the assistant comes first, then one result per call, in call order (invariant 2)"
        )
    );
    assert_eq!(
        out.result.messages[caller_messages().len()],
        Message::Assistant(message.clone()),
        "{rule}: {}",
        msg!(
            "assistant 应原样写入 transcript，包括 stop_reason 和 error_message（不变量 1）",
            "the assistant must be appended exactly as the stream's result, error_message included (invariant 1)"
        )
    );
    let skipped_results: Vec<Message> = calls.iter().map(|c| skipped(c, reason, text)).collect();
    let mut wanted = caller_messages();
    wanted.push(Message::Assistant(message.clone()));
    wanted.extend(skipped_results.clone());
    assert_eq!(
        out.result.messages,
        wanted,
        "{rule}: {}",
        msg!(
            "assistant 之后应按调用顺序为每个 call 写入一条 skipped 错误结果，details \
             {{skipped: true, reason: {reason:?}}}（不变量 2）",
            "expected one skipped error result per call, in call order, details {{skipped: true, reason: \
             {reason:?}}} (invariant 2)"
        )
    );

    let mut kinds = streamed_kinds(&message).await;
    kinds.extend(
        [
            "assistant_message",
            "tool_skipped(cut)",
            "tool_skipped(cut-2)",
        ]
        .map(String::from),
    );
    kinds.push(format!("turn_end({ends:?})"));
    assert_eq!(
        out.kinds(),
        kinds,
        "{rule}: {}",
        msg!(
            "每个 call 发一个 tool_skipped（按调用顺序），不得有 tool_start，最后一个 turn_end（第三步）",
            "expected one tool_skipped per call, in call order, no tool_start, then a single turn_end (step 3)"
        )
    );
    assert_eq!(
        out.events.results(true),
        skipped_results,
        "{rule}: {}",
        msg!(
            "tool_skipped 事件应携带写入 transcript 的同一条结果",
            "tool_skipped must carry the result written to the transcript"
        )
    );
    out.assert_ends(ends, rule);
    assert_eq!(
        (out.model.calls(), out.result.steps),
        (1, 1),
        "{rule}: {}",
        msg!(
            "终态之后不得再请求模型，(模型调用次数, steps) 应为 (1, 1)",
            "no request may follow a terminal state: (model calls, steps) must be (1, 1)"
        )
    );
}

/// Step 3, the chapter's own break: a truncated (length) response with calls executes none of them,
/// pairs each with a skipped result and ends the run with length.
async fn length_with_calls_executes_nothing_and_skips_each_call() {
    check_branch(
        StopReason::Length,
        "length",
        LENGTH_TEXT,
        RunReason::Length,
        "length + calls",
    )
    .await;
}

/// Step 3: the skipped result of a length call has exactly the chapter's wire form.
async fn the_length_skipped_result_matches_the_chapters_wire_example() {
    let out = setup(vec![with_calls(StopReason::Length, vec![echo("cut")])])
        .run()
        .await;

    let example: Value = serde_json::from_str(
        r#"{
          "role": "toolResult",
          "toolCallId": "cut",
          "toolName": "echo",
          "content": [{
            "type": "text",
            "text": "Tool call was not executed because the model response was truncated."
          }],
          "details": {"skipped": true, "reason": "length"},
          "isError": true
        }"#,
    )
    .expect("the chapter's example is JSON");
    let written = out
        .result
        .messages
        .last()
        .map(|m| serde_json::to_value(m).expect("serializable"));
    assert_eq!(
        written,
        Some(example),
        "{}",
        msg!(
            "length 调用的 skipped 结果应与本章示例的 JSON 完全一致（第三步）",
            "the skipped result must match the chapter's example exactly (step 3)"
        )
    );
}

/// Step 3: an injected executor is never called for a truncated response either.
async fn length_never_reaches_an_injected_executor() {
    let mut run = setup(vec![with_calls(
        StopReason::Length,
        vec![call("cut", "write", json!({}))],
    )]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let out = run.run().await;

    assert_eq!(
        bench.started(),
        Vec::<String>::new(),
        "{}",
        msg!(
            "length 回合不得调用注入的 executor（第三步）",
            "length must not call the injected executor (step 3)"
        )
    );
    out.assert_ends(RunReason::Length, "length + calls");
}

/// Step 3: a response that ended with an error executes none of its calls, pairs each with a skipped
/// result (reason error) and ends the run with error.
async fn error_with_calls_executes_nothing_and_ends_error() {
    check_branch(
        StopReason::Error,
        "error",
        ERROR_TEXT,
        RunReason::Error,
        "error + calls",
    )
    .await;
}

/// Step 3: an aborted response executes none of its calls, pairs each with a skipped result (reason
/// aborted) and ends the run with aborted.
async fn aborted_with_calls_executes_nothing_and_ends_aborted() {
    check_branch(
        StopReason::Aborted,
        "aborted",
        ABORTED_TEXT,
        RunReason::Aborted,
        "aborted + calls",
    )
    .await;
}

/// Decision table: calls under stop are a protocol contradiction: they are not executed, each gets an
/// unexpected-stop skipped result, and the run ends with error.
async fn stop_with_calls_writes_unexpected_stop_results_and_ends_error() {
    check_branch(
        StopReason::Stop,
        "unexpected-stop",
        UNEXPECTED_STOP_TEXT,
        RunReason::Error,
        "stop + calls",
    )
    .await;
}

/// Decision table: toolUse without any call cannot continue: no result is written, the model is not
/// asked again, and the run ends with error.
async fn tool_use_without_calls_ends_error_without_any_result() {
    let message = AssistantMessage {
        content: vec![ContentBlock::text("I will use a tool now.")],
        stop_reason: StopReason::ToolUse,
        error_message: None,
    };
    let out = setup(vec![message.clone(), text_reply("never requested")])
        .run()
        .await;

    let mut wanted = caller_messages();
    wanted.push(Message::Assistant(message.clone()));
    assert_eq!(
        out.result.messages,
        wanted,
        "{}",
        msg!(
            "toolUse 却没有 call：只写入这条 assistant，不写任何结果",
            "toolUse without calls: only the assistant is written, no result"
        )
    );
    let mut kinds = streamed_kinds(&message).await;
    kinds.extend(["assistant_message", "turn_end(Error)"].map(String::from));
    assert_eq!(
        out.kinds(),
        kinds,
        "{}",
        msg!(
            "toolUse 无 call 应直接以 error 结束",
            "toolUse without calls: expected a direct turn_end(error)"
        )
    );
    out.assert_ends(
        RunReason::Error,
        &msg!("toolUse 无 call", "toolUse without calls"),
    );
    let calls = out.model.calls();
    assert_eq!(
        calls,
        1,
        "{}",
        msg!(
            "toolUse 无 call 不得再请求模型：实际请求 {calls} 次",
            "toolUse without calls: no further request, got {calls}"
        )
    );
}

/// Decision table: length, error and aborted without any call still end the run with their own reason
/// (only a stop without calls is a stop): no result is written and the model is not asked again.
async fn length_error_and_aborted_without_calls_end_with_their_own_reason() {
    let rows = [
        (StopReason::Length, RunReason::Length),
        (StopReason::Error, RunReason::Error),
        (StopReason::Aborted, RunReason::Aborted),
    ];
    for (stop, ends) in rows {
        let message = AssistantMessage {
            content: vec![ContentBlock::text("The files are a.rs and")],
            ..with_calls(stop, Vec::new())
        };
        let out = setup(vec![message.clone(), text_reply("never requested")])
            .run()
            .await;

        let rule = msg!("{stop:?} 无 call", "{stop:?} without calls");
        out.assert_ends(ends, &rule);
        let mut wanted = caller_messages();
        wanted.push(Message::Assistant(message));
        assert_eq!(
            out.result.messages,
            wanted,
            "{rule}: {}",
            msg!(
                "没有 call 就没有要配对的结果，只写入这条 assistant（第三步）",
                "no call: only the assistant is written (step 3)"
            )
        );
        assert_eq!(
            out.model.calls(),
            1,
            "{rule}: {}",
            msg!(
                "终态之后不得再请求模型",
                "no request may follow a terminal state"
            )
        );
    }
}

crate::tests![
    length_with_calls_executes_nothing_and_skips_each_call,
    the_length_skipped_result_matches_the_chapters_wire_example,
    length_never_reaches_an_injected_executor,
    error_with_calls_executes_nothing_and_ends_error,
    aborted_with_calls_executes_nothing_and_ends_aborted,
    stop_with_calls_writes_unexpected_stop_results_and_ends_error,
    tool_use_without_calls_ends_error_without_any_result,
    length_error_and_aborted_without_calls_end_with_their_own_reason,
];
