//! Lab 7.1 纯文本 stop / plain-text stop: one request, one final message, one turn_end.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use pi_course::agent_loop::{LoopEvent, RunReason};
use pi_course::message::{AssistantMessage, ContentBlock, Message, StopReason};
use pi_course::model::ModelEvent;

use crate::support::*;

/// Step 1: a request carries the run's system prompt, a copy of the caller's messages and every tool
/// definition of the registry, even when the script never calls a tool.
async fn the_request_holds_system_prompt_caller_messages_and_every_tool_definition() {
    let mut run = setup(vec![text_reply("Here are the files.")]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let requests = out.requests();
    let made = requests.len();
    assert_eq!(
        made,
        1,
        "{}",
        msg!(
            "纯文本 stop 只应请求模型一次：实际 {made} 次",
            "a plain stop makes exactly one request, not {made}"
        )
    );
    let request = &requests[0];
    assert_eq!(
        request.system_prompt,
        SYSTEM_PROMPT,
        "{}",
        msg!(
            "请求必须带上 context 的 system prompt（第一步）",
            "the request must carry the context's system prompt (step 1)"
        )
    );
    assert_eq!(
        request.messages,
        caller_messages(),
        "{}",
        msg!(
            "第一次请求的 messages 应是调用者消息的完整副本（第一步）",
            "the first request must hold a copy of the caller's messages, all of them, in order (step 1)"
        )
    );
    let wanted = counting_tools(&Arc::new(AtomicUsize::new(0))).definitions();
    assert_eq!(
        request.tools,
        wanted,
        "{}",
        msg!(
            "请求必须带上 options.tools.definitions() 的全部工具定义，按注册顺序，即使本轮不调用工具（第一步）",
            "the request must carry every tool definition, in registration order, even if none is called \
             (step 1)"
        )
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
        out.result.messages,
        wanted,
        "{}",
        msg!(
            "返回的 messages 应是调用者历史加上唯一的最终 assistant（不变量 1）",
            "the result must be the caller's history plus the one final assistant message (invariant 1)"
        )
    );
}

/// Step 1: the loop snapshots the shared context and lets go of its lock at once. While model events
/// flow, whoever shares the context (here the event sink, as a UI would) can lock it and reads it
/// unchanged.
async fn the_shared_context_stays_readable_while_model_events_flow() {
    let mut run = setup(vec![text_reply("Here are the files.")]);
    let (record, context) = (run.options.on_event.clone(), run.context.clone());
    let readable: Arc<Mutex<Vec<bool>>> = Arc::default();
    let seen = readable.clone();
    run.options.on_event = Arc::new(move |event| {
        if matches!(event, LoopEvent::ModelEvent(_)) {
            let unchanged = context
                .try_lock()
                .is_ok_and(|shared| shared.messages == caller_messages());
            seen.lock().unwrap().push(unchanged);
        }
        record(event)
    });
    let out = run.run().await;

    let (readable, kinds) = (readable.lock().unwrap().clone(), out.kinds());
    assert!(
        !readable.is_empty(),
        "{}",
        msg!(
            "没有转发任何 model_event（第一步）：{kinds:?}",
            "no model_event was forwarded (step 1): {kinds:?}"
        )
    );
    assert!(
        readable.iter().all(|ok| *ok),
        "{}",
        msg!(
            "模型事件转发期间，调用者无法锁住共享 context（或读到的内容变了）：loop 只在开始时加锁克隆一次，\
             立刻释放，不要跨 await 持有这把锁（第一步）\n  每个 model_event 时能否读取：{readable:?}",
            "while model events flowed, the caller could not lock the shared context (or found it changed): \
             lock it once at the start, clone, and let go at once; never hold it across an await (step 1)\n  \
             readable at each model_event: {readable:?}"
        )
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
        "{}",
        msg!(
            "事件顺序应为：转发流中全部 model_event → 一个 assistant_message → turn_end(stop)（第一步）",
            "expected every model event forwarded, then one assistant_message, then turn_end(stop) (step 1)"
        )
    );
    assert_eq!(
        out.events.assistant_messages(),
        vec![reply],
        "{}",
        msg!(
            "assistant_message 事件应携带 stream.result() 的最终消息",
            "assistant_message must carry the final message from stream.result()"
        )
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
        "{}",
        msg!(
            "transcript 只能多出一条最终 assistant：流式中间片段不是事实，不得写入（不变量 1）",
            "exactly one message (the final one) may be appended: partials are never written (invariant 1)"
        )
    );
}

/// Step 1: the final message comes from `stream.result()`, never from the stream's events. Here, as
/// a real provider may, the stream's partials stop short of the final text: the last partial patched
/// with the stop reason of the done event is not the final message.
async fn the_final_message_comes_from_result_not_from_the_last_partial() {
    let partial = |text: &str| AssistantMessage {
        content: vec![ContentBlock::text(text)],
        ..text_reply("")
    };
    let events = vec![
        ModelEvent::Start {
            partial: AssistantMessage {
                content: Vec::new(),
                ..text_reply("")
            },
        },
        ModelEvent::TextDelta {
            delta: "Here are".into(),
            partial: partial("Here are"),
        },
        ModelEvent::TextDelta {
            delta: " the files".into(),
            partial: partial("Here are the files"),
        },
        ModelEvent::Done {
            reason: StopReason::Stop,
        },
    ];
    let reply = AssistantMessage {
        content: vec![
            ContentBlock::text("Here are the files: a.rs, b.rs and c.rs."),
            ContentBlock::text("Shall I open one?"),
        ],
        stop_reason: StopReason::Stop,
        error_message: None,
    };
    let out = setup_streaming(vec![(reply.clone(), Some(events))])
        .run()
        .await;

    let mut wanted = caller_messages();
    wanted.push(Message::Assistant(reply.clone()));
    assert_eq!(
        out.result.messages,
        wanted,
        "{}",
        msg!(
            "写入 transcript 的必须是 stream.result() 返回的最终消息：流式片段只是过程，最后一个片段也不是事实\
             （第一步）",
            "the transcript must get the final message from stream.result(): partials are only progress, the \
             last one included (step 1)"
        )
    );
    assert_eq!(
        out.events.assistant_messages(),
        vec![reply],
        "{}",
        msg!(
            "assistant_message 事件也必须携带 stream.result() 的最终消息，而不是拼出来的片段（第一步）",
            "assistant_message must carry the final message from stream.result(), not one built from partials \
             (step 1)"
        )
    );
    out.assert_ends(
        RunReason::Stop,
        &msg!("最终消息为 stop", "the final message is a stop"),
    );
}

/// Invariant 3: a plain stop ends the run with exactly one turn_end(stop), one model call and steps = 1.
async fn a_plain_stop_ends_with_one_turn_end_one_call_and_one_step() {
    let out = setup(vec![text_reply("done"), text_reply("never requested")])
        .run()
        .await;

    out.assert_ends(
        RunReason::Stop,
        &msg!(
            "最终消息为 stop 且没有 call",
            "the final message is a stop without calls"
        ),
    );
    let calls = out.model.calls();
    assert_eq!(
        calls,
        1,
        "{}",
        msg!(
            "stop 之后不得再请求模型：实际请求 {calls} 次",
            "no request may follow a stop: {calls} requests"
        )
    );
    let steps = out.result.steps;
    assert_eq!(
        steps,
        1,
        "{}",
        msg!(
            "steps 是模型回合数，这里应为 1，实际 {steps}",
            "steps counts model turns: expected 1, got {steps}"
        )
    );
}

crate::tests![
    the_request_holds_system_prompt_caller_messages_and_every_tool_definition,
    the_callers_context_is_left_untouched_and_the_transcript_extends_a_copy,
    the_shared_context_stays_readable_while_model_events_flow,
    model_events_are_forwarded_before_the_single_assistant_message,
    the_final_message_is_appended_once_and_no_partial_ever_is,
    the_final_message_comes_from_result_not_from_the_last_partial,
    a_plain_stop_ends_with_one_turn_end_one_call_and_one_step,
];
