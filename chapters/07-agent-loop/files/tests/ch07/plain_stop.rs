//! Lab 7.1 纯文本 stop / plain-text stop: one request, one final message, one turn_end.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::{AssistantMessage, ContentBlock, Message, StopReason};

use crate::support::*;

/// Step 1: a request carries the run's system prompt, a copy of the caller's messages and every tool
/// definition of the registry, even when the script never calls a tool.
async fn the_request_holds_system_prompt_caller_messages_and_every_tool_definition() {
    let mut run = setup(vec![text_reply("Here are the files.")]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let requests = out.requests();
    assert_eq!(
        requests.len(),
        1,
        "纯文本 stop 只应请求模型一次：实际 {} 次 / a plain stop makes exactly one request",
        requests.len()
    );
    let request = &requests[0];
    assert_eq!(
        request.system_prompt, SYSTEM_PROMPT,
        "请求必须带上 context 的 system prompt（第一步）/ the request must carry the system prompt"
    );
    assert_eq!(
        request.messages,
        caller_messages(),
        "第一次请求的 messages 应是调用者消息的完整副本（第一步）/ the first request must hold a copy of the \
         caller's messages, all of them, in order"
    );
    let wanted = counting_tools(&Arc::new(AtomicUsize::new(0))).definitions();
    assert_eq!(
        request.tools, wanted,
        "请求必须带上 options.tools.definitions() 的全部工具定义，按注册顺序，即使本轮不调用工具（第一步）\n  \
         the request must carry every tool definition, in registration order, even if none is called"
    );
}

/// Step 1: the loop clones the caller's messages once and never writes to the shared context; the
/// returned transcript is the caller's history followed by the final assistant message.
async fn the_callers_context_is_left_untouched_and_the_transcript_extends_a_copy() {
    let reply = text_reply("Here are the files.");
    let out = setup(vec![reply.clone()]).run().await;

    out.assert_context_untouched();
    let mut wanted = caller_messages();
    wanted.push(Message::Assistant(reply));
    assert_eq!(
        out.result.messages, wanted,
        "返回的 messages 应是调用者历史加上唯一的最终 assistant（不变量 1）\n  \
         the result must be the caller's history plus the one final assistant message"
    );
}

/// Step 1: every model event of the stream is forwarded as a model_event, in stream order, before the
/// single assistant_message; then turn_end(stop) closes the run.
async fn model_events_are_forwarded_before_the_single_assistant_message() {
    let reply = text_reply("Here are the files.");
    let out = setup(vec![reply.clone()]).run().await;

    let mut wanted = streamed_kinds(&reply).await;
    wanted.push("assistant_message".into());
    wanted.push("turn_end(Stop)".into());
    assert_eq!(
        out.kinds(),
        wanted,
        "事件顺序应为：转发流中全部 model_event → 一个 assistant_message → turn_end(stop)（第一步）\n  \
         expected every model event forwarded, then one assistant_message, then turn_end(stop)"
    );
    assert_eq!(
        out.events.assistant_messages(),
        vec![reply],
        "assistant_message 事件应携带 stream.result() 的最终消息 / assistant_message must carry the final message"
    );
}

/// Invariant 1: the final message is appended exactly once and no streaming partial ever is, even when
/// the stream produced several growing partials.
async fn the_final_message_is_appended_once_and_no_partial_ever_is() {
    let reply = AssistantMessage {
        content: vec![
            ContentBlock::text("Looking at the tree. "),
            ContentBlock::text("There are three files: "),
            ContentBlock::text("a.rs, b.rs and c.rs."),
        ],
        stop_reason: StopReason::Stop,
        error_message: None,
    };
    let out = setup(vec![reply.clone()]).run().await;

    let messages = &out.result.messages;
    let appended = &messages[caller_messages().len().min(messages.len())..];
    assert_eq!(
        appended,
        [Message::Assistant(reply)],
        "transcript 只能多出一条最终 assistant：流式中间片段不是事实，不得写入（不变量 1）\n  \
         exactly one message (the final one) may be appended: partials are never written"
    );
}

/// Invariant 3: a plain stop ends the run with exactly one turn_end(stop), one model call and steps = 1.
async fn a_plain_stop_ends_with_one_turn_end_one_call_and_one_step() {
    let out = setup(vec![text_reply("done"), text_reply("never requested")])
        .run()
        .await;

    out.assert_ends(
        RunReason::Stop,
        "最终消息为 stop 且没有 call / the final message is a stop without calls",
    );
    assert_eq!(
        out.model.calls(),
        1,
        "stop 之后不得再请求模型：实际请求 {} 次 / no request may follow a stop",
        out.model.calls()
    );
    assert_eq!(
        out.result.steps, 1,
        "steps 是模型回合数，这里应为 1，实际 {} / steps counts model turns: expected 1",
        out.result.steps
    );
}

crate::tests![
    the_request_holds_system_prompt_caller_messages_and_every_tool_definition,
    the_callers_context_is_left_untouched_and_the_transcript_extends_a_copy,
    model_events_are_forwarded_before_the_single_assistant_message,
    the_final_message_is_appended_once_and_no_partial_ever_is,
    a_plain_stop_ends_with_one_turn_end_one_call_and_one_step,
];
