//! Lab 7.2 单工具往返 / single tool round trip: one call executed, its result sent back to the model.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::{ContentBlock, Message};
use serde_json::json;

use crate::support::*;

/// Step 2: one call runs as tool_start → tool_progress → tool_end, and only then comes the next request
/// (its model events follow the tool_end).
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
        "单个调用应依次发出 tool_start → tool_progress → tool_end，之后才发下一次模型请求（第二步）\n  \
         expected tool_start, tool_progress, tool_end, then the next request's events"
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
        "reportProgress 必须转成带 call id 的 tool_progress，内容原样（第二步）\n  \
         progress must become tool_progress with the call id and the same content"
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
    out.assert_ends(RunReason::Stop, "第二步 / step 2");

    assert_eq!(
        bench.contexts(),
        vec![("call-7".to_string(), "call-7".to_string())],
        "executor 的 ToolContext.call_id 应是被执行调用的 id / ctx.call_id must be the executed call's id"
    );
    let given = bench.signals();
    assert!(
        given.iter().all(|s| !s.is_cancelled()),
        "运行没有被取消，executor 拿到的 signal 却已被取消：把 options.signal 原样交给 executor，loop 自己不要取消它\n  \
         the run was not cancelled, yet the executor's signal was: pass the run's signal as is, never cancel it"
    );
    signal.cancel();
    assert!(
        given.iter().all(|s| s.is_cancelled()),
        "取消本次运行的 signal 后，executor 的 ctx.signal 没有被取消：signal 要原样交给 executor（第二步）\n  \
         the executor's ctx.signal did not see the run's signal cancelled: pass the run's signal"
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
        "工具结果写回后应再请求模型一次 / one more request must follow the tool result"
    );
    let definitions = counting_tools(&Arc::new(AtomicUsize::new(0))).definitions();
    assert_eq!(
        (requests[1].system_prompt.as_str(), &requests[1].tools),
        (SYSTEM_PROMPT, &definitions),
        "每次请求（不只第一次）都要带上 system prompt 和全部工具定义（第一步）\n  \
         every request, not only the first, carries the system prompt and every tool definition"
    );
    let mut wanted: Vec<String> = roles(&caller_messages());
    wanted.extend(["assistant".to_string(), "toolResult(call-1)".to_string()]);
    assert_eq!(
        roles(&requests[1].messages),
        wanted,
        "第二次请求应看到 user → assistant(toolCall call-1) → toolResult(call-1)（不变量 2）\n  \
         the second request must hold the assistant with the call, then its result"
    );
    let sent = &requests[1].messages;
    assert_eq!(
        sent[sent.len() - 2],
        Message::Assistant(first),
        "带 call 的 assistant 应原样进入 transcript / the assistant with the call must be kept as is"
    );
    let result = sent[sent.len() - 1]
        .as_tool_result()
        .expect("checked above: a tool result");
    assert_eq!(
        (result.tool_call_id.as_str(), result.tool_name.as_str(), result.is_error),
        ("call-1", "echo", false),
        "工具结果应与调用配对：同 id、同 name，执行成功 / the result must pair the call by id and name"
    );
    assert_eq!(
        result.text(),
        "echo: call-1",
        "结果内容应来自工具本身 / the result content must be the tool's"
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

    let wanted = Message::ToolResult(ok_result(
        &the_call,
        json!({ "call": "call-2", "lines": [1, 2, 3] }),
    ));
    assert_eq!(
        out.result.messages.get(caller_messages().len() + 1),
        Some(&wanted),
        "executor 返回的结果（含 details）应原样写入 transcript / the executor's result, details included, must be \
         written unchanged"
    );
    assert_eq!(
        out.events.results(false),
        vec![wanted],
        "tool_end 应携带同一条结果 / tool_end must carry that same result"
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
        "工具往返后模型以 stop 结束 / the model stops after the round trip",
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "工具应恰好执行一次 / the tool must run exactly once"
    );
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(call-1)", "assistant"].map(String::from));
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "transcript 应为 历史 → assistant(call) → toolResult → assistant(stop) / unexpected transcript"
    );
    assert_eq!(
        (out.result.steps, out.model.calls()),
        (2, 2),
        "(steps, 模型调用次数) 应为 (2, 2) / (steps, model calls) must be (2, 2)"
    );
}

/// Step 1: the loop snapshots the caller's context once. While a tool runs, the caller can still lock
/// and read it (the loop holds no lock across an await), sees it unchanged, and what the caller adds
/// during the run does not leak into the run's transcript.
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
            b.wait_started(&["call-1"], "toolUse 回合的调用应交给注入的 executor / the call must reach the executor").await;
            {
                let mut shared = context.try_lock().expect(
                    "工具运行期间调用者无法锁住共享 context：loop 不应跨 await 持有这把锁，只在开始时克隆一次\n  \
                     the caller cannot lock the shared context while a tool runs: snapshot it, do not hold the lock",
                );
                assert_eq!(
                    shared.messages,
                    caller_messages(),
                    "运行途中共享 context 已被写入 / the shared context was written during the run"
                );
                shared.messages.push(Message::user("a note the UI added during the run"));
            }
            b.release("call-1");
        }))
        .await;

    let second = roles(&out.sent_in_request(1));
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(call-1)"].map(String::from));
    assert_eq!(
        second, wanted,
        "第二次请求应只基于开始时的快照和本次运行的 transcript，调用者后来加入的消息不属于本次运行（第一步）\n  \
         the second request must come from the run's own copy, not re-read from the shared context"
    );
}

crate::tests![
    tool_events_run_start_progress_end_then_the_next_request,
    progress_is_forwarded_with_the_call_id_and_its_content,
    the_executor_gets_the_call_id_and_the_runs_signal,
    the_second_request_sees_the_assistant_then_its_paired_result,
    the_executors_result_passes_through_with_its_details,
    a_round_trip_runs_the_tool_once_and_stops_after_two_steps,
    the_shared_context_is_snapshotted_once_and_stays_readable_while_a_tool_runs,
];
