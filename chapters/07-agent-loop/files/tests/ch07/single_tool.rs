//! Lab 7.2 单工具往返 / single tool round trip: one call executed, its result sent back to the model.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::{AssistantMessage, ContentBlock, Message, StopReason};
use serde_json::json;

use crate::support::*;

/// Step 2: one call runs as tool_start → tool_progress → tool_end, and only then comes the next request
/// (its model events follow the tool_end). The tool_start carries the call as the model wrote it.
async fn tool_events_run_start_progress_end_then_the_next_request() {
    let (first, second) = (
        tool_use(vec![echo("call-1")]),
        text_reply("The file says call-1."),
    );
    let mut run = setup(vec![first.clone(), second.clone()]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let mut wanted = streamed_kinds(&first).await;
    wanted.extend(
        [
            "assistant_message",
            "tool_start(call-1)",
            "tool_progress(call-1)",
            "tool_end(call-1)",
        ]
        .map(String::from),
    );
    wanted.extend(streamed_kinds(&second).await);
    wanted.extend(["assistant_message", "turn_end(Stop)"].map(String::from));
    assert_eq!(
        out.kinds(),
        wanted,
        "{}",
        msg!(
            "单个调用应依次发出 tool_start → tool_progress → tool_end，之后才发下一次模型请求（第二步）",
            "expected tool_start, tool_progress, tool_end, then the next request's events (step 2)"
        )
    );
    assert_eq!(
        out.events.started_calls(),
        vec![echo("call-1")],
        "{}",
        msg!(
            "tool_start 应携带完整的调用：id、name 和 arguments 都与 assistant 中的一致（第二步）",
            "tool_start must carry the whole call: id, name and arguments as in the assistant message (step 2)"
        )
    );
}

/// Step 2: report_progress becomes a tool_progress event that carries the call id and the reported
/// content, also when the executor is injected.
async fn progress_is_forwarded_with_the_call_id_and_its_content() {
    let mut run = setup(vec![
        tool_use(vec![call("call-3", "report", json!({}))]),
        text_reply("ok"),
    ]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let out = run.run().await;

    assert_eq!(
        out.events.progress(),
        vec![(
            "call-3".to_string(),
            vec![ContentBlock::text("step 1 of 2")]
        )],
        "{}",
        msg!(
            "reportProgress 必须转成带 call id 的 tool_progress，内容原样（第二步）",
            "progress must become tool_progress with the call id and the same content (step 2)"
        )
    );
}

/// Step 2: the executor receives the call's id in its context and the run's own signal: cancelling
/// the run's signal (here after the run, so no cancellation rule of step 5 is involved) is seen by the
/// token the executor was given.
async fn the_executor_gets_the_call_id_and_the_runs_signal() {
    let mut run = setup(vec![
        tool_use(vec![call("call-7", "lookup", json!({}))]),
        text_reply("ok"),
    ]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let signal = run.signal();
    let out = run.run().await;
    out.assert_ends(RunReason::Stop, &msg!("第二步", "step 2"));

    assert_eq!(
        bench.contexts(),
        vec![("call-7".to_string(), "call-7".to_string())],
        "{}",
        msg!(
            "executor 的 ToolContext.call_id 应是被执行调用的 id",
            "ctx.call_id must be the executed call's id"
        )
    );
    let given = bench.signals();
    assert!(
        given.iter().all(|s| !s.is_cancelled()),
        "{}",
        msg!(
            "运行没有被取消，executor 拿到的 signal 却已被取消：把 options.signal 原样交给 executor，loop 自己不要取消它",
            "the run was not cancelled, yet the executor's signal was: pass the run's signal as is, never cancel it"
        )
    );
    signal.cancel();
    assert!(
        given.iter().all(|s| s.is_cancelled()),
        "{}",
        msg!(
            "取消本次运行的 signal 后，executor 的 ctx.signal 没有被取消：signal 要原样交给 executor（第二步）",
            "the executor's ctx.signal did not see the run's signal cancelled: pass the run's signal (step 2)"
        )
    );
}

/// Step 2: "signal 也要原样交给 executor": `ToolContext.signal` is the run's own token, not a child of it
/// and not a copy. So it works both ways: a tool that cancels its signal cancels the run's signal too
/// (checked after the run, so no cancellation rule of step 5 is involved).
async fn the_executors_signal_is_the_runs_own_token_not_a_child() {
    let mut run = setup(vec![
        tool_use(vec![call("call-7", "lookup", json!({}))]),
        text_reply("ok"),
    ]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let signal = run.signal();
    let out = run.run().await;
    out.assert_ends(RunReason::Stop, &msg!("第二步", "step 2"));

    let given = bench.signals();
    assert_eq!(
        given.len(),
        1,
        "{}",
        msg!(
            "executor 应恰好被调用一次",
            "the executor must be called exactly once"
        )
    );
    given[0].cancel();
    assert!(
        signal.is_cancelled(),
        "{}",
        msg!(
            "工具取消了它拿到的 ctx.signal，本次运行的 signal 却没有被取消：ctx.signal 必须是 options.signal 本身\
             （克隆同一个 token），不能是 child_token() 或新建的 token（第二步）",
            "the tool cancelled its ctx.signal, yet the run's signal was not cancelled: ctx.signal must be the \
             run's own token (a clone of options.signal), not a child_token() or a new token (step 2)"
        )
    );
}

/// Invariant 2: the second request sees the whole causal chain: the caller's messages, the assistant
/// with the call, then the tool result with the same id and name.
async fn the_second_request_sees_the_assistant_then_its_paired_result() {
    let first = tool_use(vec![echo("call-1")]);
    let mut run = setup(vec![first.clone(), text_reply("done")]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let requests = out.requests();
    assert_eq!(
        requests.len(),
        2,
        "{}",
        msg!(
            "工具结果写回后应再请求模型一次",
            "one more request must follow the tool result"
        )
    );
    let definitions = counting_tools(&Arc::new(AtomicUsize::new(0))).definitions();
    assert_eq!(
        (requests[1].system_prompt.as_str(), &requests[1].tools),
        (SYSTEM_PROMPT, &definitions),
        "{}",
        msg!(
            "每次请求（不只第一次）都要带上 system prompt 和全部工具定义（第一步）",
            "every request, not only the first, carries the system prompt and every tool definition (step 1)"
        )
    );
    let mut wanted: Vec<String> = roles(&caller_messages());
    wanted.extend(["assistant".to_string(), "toolResult(call-1)".to_string()]);
    assert_eq!(
        roles(&requests[1].messages),
        wanted,
        "{}",
        msg!(
            "第二次请求应看到 user → assistant(toolCall call-1) → toolResult(call-1)（不变量 2）",
            "the second request must hold the assistant with the call, then its result (invariant 2)"
        )
    );
    let sent = &requests[1].messages;
    assert_eq!(
        sent[sent.len() - 2],
        Message::Assistant(first),
        "{}",
        msg!(
            "带 call 的 assistant 应原样进入 transcript",
            "the assistant with the call must be kept as is"
        )
    );
    let result = sent[sent.len() - 1]
        .as_tool_result()
        .expect("checked above: a tool result");
    assert_eq!(
        (
            result.tool_call_id.as_str(),
            result.tool_name.as_str(),
            result.is_error
        ),
        ("call-1", "echo", false),
        "{}",
        msg!(
            "工具结果应与调用配对：同 id、同 name，执行成功",
            "the result must pair the call by id and name, and succeed"
        )
    );
    assert_eq!(
        result.text(),
        "echo: call-1",
        "{}",
        msg!(
            "结果内容应来自工具本身",
            "the result content must be the tool's"
        )
    );
}

/// Invariant 2: the transcript only grows. Every request holds everything before it: the third request
/// sees the caller's messages and both earlier turns, each assistant followed by its result.
async fn the_third_request_holds_every_turn_so_far() {
    let (first, second) = (tool_use(vec![echo("t1")]), tool_use(vec![echo("t2")]));
    let mut run = setup(vec![first.clone(), second.clone(), text_reply("done")]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let sent = out.sent_in_request(2);
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(t1)", "assistant", "toolResult(t2)"].map(String::from));
    assert_eq!(
        roles(&sent),
        wanted,
        "{}",
        msg!(
            "第三次请求应包含调用者消息和之前两轮的全部内容：每次请求都由完整的 transcript 构成，而不只是最近一轮\
             （不变量 2）",
            "the third request must hold the caller's messages and both earlier turns: every request is built \
             from the whole transcript, not only the last turn (invariant 2)"
        )
    );
    let base = caller_messages().len();
    assert_eq!(
        (sent.get(base), sent.get(base + 2)),
        (
            Some(&Message::Assistant(first)),
            Some(&Message::Assistant(second))
        ),
        "{}",
        msg!(
            "两条带 call 的 assistant 都应原样留在 transcript 中",
            "both assistants with calls must stay in the transcript as they were"
        )
    );
    out.assert_ends(
        RunReason::Stop,
        &msg!("两轮工具之后 stop", "a stop after two tool turns"),
    );
}

/// Invariant 1: an assistant message that holds text beside its calls (an empty text block included)
/// is appended once, exactly as the model returned it: in the transcript, in the next request and in
/// its assistant_message event.
async fn text_beside_the_calls_is_kept_as_the_model_wrote_it() {
    let message = AssistantMessage {
        content: vec![
            ContentBlock::text("Let me look at the file first."),
            ContentBlock::text(""),
            ContentBlock::ToolCall(echo("call-1")),
            ContentBlock::text("Then I will summarize it."),
        ],
        stop_reason: StopReason::ToolUse,
        error_message: None,
    };
    let mut run = setup(vec![message.clone(), text_reply("done")]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let base = caller_messages().len();
    let wanted = Some(&Message::Assistant(message.clone()));
    assert_eq!(
        out.result.messages.get(base),
        wanted,
        "{}",
        msg!(
            "带 call 的 assistant 要原样写入 transcript：文本块（包括空文本块）和调用都保留，顺序不变（不变量 1）",
            "the assistant with calls must be appended as it is: every text block (empty ones included) and \
             every call, in order (invariant 1)"
        )
    );
    assert_eq!(
        out.sent_in_request(1).get(base),
        wanted,
        "{}",
        msg!(
            "下一次请求里的这条 assistant 也必须原样保留",
            "the next request must hold that assistant as it is too"
        )
    );
    assert_eq!(
        out.events.assistant_messages().first(),
        Some(&message),
        "{}",
        msg!(
            "assistant_message 事件应携带原样的最终消息",
            "assistant_message must carry the final message as it is"
        )
    );
}

/// Invariant 2, with the built-in executor: a call to a tool the registry does not know is still
/// handed to `execute_tool_call`, which answers it with a paired error result; the loop writes it and
/// asks the model again. Nothing is dropped.
async fn an_unknown_tool_still_gets_its_paired_result() {
    let missing = call("call-9", "missing", json!({ "path": "a.rs" }));
    let mut run = setup(vec![tool_use(vec![missing.clone()]), text_reply("noted")]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    let out = run.run().await;

    let sent = out.sent_in_request(1);
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(call-9)"].map(String::from));
    assert_eq!(
        roles(&sent),
        wanted,
        "{}",
        msg!(
            "未知工具的调用也要交给 execute_tool_call，写入它返回的配对结果，再请求模型（不变量 2）",
            "a call to an unknown tool still goes to execute_tool_call; its paired result is written before the \
             next request (invariant 2)"
        )
    );
    let result = result_for(&sent, "call-9").map(|r| (r.tool_name.as_str(), r.is_error, r.text()));
    assert_eq!(
        result,
        Some(("missing", true, "Tool \"missing\" not found".to_string())),
        "{}",
        msg!(
            "结果应是 execute_tool_call 给出的同 id/name 错误结果",
            "the result must be execute_tool_call's error, paired by id and name"
        )
    );
    assert_eq!(
        out.kinds()
            .iter()
            .filter(|k| k.starts_with("tool_"))
            .collect::<Vec<_>>(),
        ["tool_start(call-9)", "tool_end(call-9)"],
        "{}",
        msg!(
            "未知工具的调用同样发出 tool_start 和 tool_end（第二步）",
            "a call to an unknown tool emits tool_start and tool_end too (step 2)"
        )
    );
}

/// Step 2: the executor's result is written as is: content, details and error flag pass through
/// unchanged to the transcript and to the tool_end event.
async fn the_executors_result_passes_through_with_its_details() {
    let the_call = call("call-2", "lookup", json!({ "key": "a" }));
    let mut run = setup(vec![tool_use(vec![the_call.clone()]), text_reply("done")]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let out = run.run().await;

    let wanted = Message::ToolResult(ok_result(&the_call, bench_details("call-2")));
    assert_eq!(
        out.result.messages.get(caller_messages().len() + 1),
        Some(&wanted),
        "{}",
        msg!(
            "executor 返回的结果（含 details）应原样写入 transcript",
            "the executor's result, details included, must be written unchanged"
        )
    );
    assert_eq!(
        out.events.results(false),
        vec![wanted],
        "{}",
        msg!(
            "tool_end 应携带同一条结果",
            "tool_end must carry that same result"
        )
    );
}

/// Invariants 1 and 3: a round trip is two model turns: user, assistant(call), result, final assistant;
/// the tool runs once and one turn_end(stop) closes the run.
async fn a_round_trip_runs_the_tool_once_and_stops_after_two_steps() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut run = setup(vec![tool_use(vec![echo("call-1")]), text_reply("done")]);
    run.options.tools = counting_tools(&runs);
    let out = run.run().await;

    out.assert_ends(
        RunReason::Stop,
        &msg!(
            "工具往返后模型以 stop 结束",
            "the model stops after the round trip"
        ),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "{}",
        msg!("工具应恰好执行一次", "the tool must run exactly once")
    );
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(call-1)", "assistant"].map(String::from));
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "transcript 应为 历史 → assistant(call) → toolResult → assistant(stop)",
            "the transcript must be history → assistant(call) → toolResult → assistant(stop)"
        )
    );
    assert_eq!(
        (out.result.steps, out.model.calls()),
        (2, 2),
        "{}",
        msg!(
            "(steps, 模型调用次数) 应为 (2, 2)",
            "(steps, model calls) must be (2, 2)"
        )
    );
}

/// Step 1: the loop snapshots the caller's messages once. While a tool runs, the caller can still lock
/// and read the context (the loop holds no lock across an await), sees it unchanged, and a message the
/// caller adds during the run does not leak into the run's next request. (Not the system prompt: the
/// chapter writes the request as `systemPrompt: options.context.systemPrompt`, so copying it at the start
/// and reading it for each request are both right.)
async fn the_shared_context_is_snapshotted_once_and_stays_readable_while_a_tool_runs() {
    let mut run = setup(vec![
        tool_use(vec![call("call-1", "lookup", json!({}))]),
        text_reply("done"),
    ]);
    let bench = Bench::new(&["call-1"]);
    run.options.executor = Some(bench.executor());
    let (b, context) = (bench.clone(), run.context.clone());
    let out = run
        .run_with(Box::pin(async move {
            b.wait_started(
                &["call-1"],
                &msg!(
                    "toolUse 回合的调用应交给注入的 executor",
                    "the call must reach the injected executor"
                ),
            )
            .await;
            {
                let mut shared = context.try_lock().unwrap_or_else(|_| {
                    panic!(
                        "{}",
                        msg!(
                            "工具运行期间调用者无法锁住共享 context：loop 不应跨 await 持有这把锁，只在开始时克隆一次",
                            "the caller cannot lock the shared context while a tool runs: snapshot it, do not \
                             hold the lock"
                        )
                    )
                });
                assert_eq!(
                    shared.messages,
                    caller_messages(),
                    "{}",
                    msg!(
                        "运行途中共享 context 已被写入",
                        "the shared context was written during the run"
                    )
                );
                shared
                    .messages
                    .push(Message::user("a note the UI added during the run"));
            }
            b.release("call-1");
        }))
        .await;

    let second = roles(&out.sent_in_request(1));
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(call-1)"].map(String::from));
    assert_eq!(
        second,
        wanted,
        "{}",
        msg!(
            "第二次请求应只基于开始时的快照和本次运行的 transcript，调用者后来加入的消息不属于本次运行（第一步）",
            "the second request must come from the run's own copy, not re-read from the shared context (step 1)"
        )
    );
}

crate::tests![
    tool_events_run_start_progress_end_then_the_next_request,
    progress_is_forwarded_with_the_call_id_and_its_content,
    the_executor_gets_the_call_id_and_the_runs_signal,
    the_executors_signal_is_the_runs_own_token_not_a_child,
    the_second_request_sees_the_assistant_then_its_paired_result,
    the_third_request_holds_every_turn_so_far,
    text_beside_the_calls_is_kept_as_the_model_wrote_it,
    an_unknown_tool_still_gets_its_paired_result,
    the_executors_result_passes_through_with_its_details,
    a_round_trip_runs_the_tool_once_and_stops_after_two_steps,
    the_shared_context_is_snapshotted_once_and_stays_readable_while_a_tool_runs,
];
