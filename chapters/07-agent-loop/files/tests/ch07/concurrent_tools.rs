//! Lab 7.4 并发工具 / concurrent tools: a batch runs at once, results are written in call order.
//!
//! Order comes from explicit gates, never from timing: the test releases `fast` first, waits for its
//! tool_end, then releases `slow`.

use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::{Message, ToolCall};
use serde_json::json;

use crate::support::*;

/// One turn calling `slow` then `fast` (both gated), then a final stop. Both must be running before
/// either is released; fast is released first and its tool_end awaited before slow is released.
async fn run_slow_fast() -> (Outcome, Arc<Bench>) {
    let calls = vec![
        call("slow", "lookup", json!({})),
        call("fast", "lookup", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("both done")]);
    let bench = Bench::new(&["slow", "fast"]);
    run.options.executor = Some(bench.executor());
    let (b, events) = (bench.clone(), run.events.clone());
    let out = run
        .run_with(Box::pin(async move {
            b.wait_started(
                &["slow", "fast"],
                &msg!(
                    "一批调用应同时启动：放行任何一个之前两个都必须已在执行（第四步）；是否逐个 await 了工具？",
                    "both calls must be running before either is released (step 4): are tools awaited one by one?"
                ),
            )
            .await;
            b.release("fast");
            events
                .wait_for(
                    "tool_end(fast)",
                    &msg!(
                        "fast 已完成、slow 仍在运行，此时就应发出 tool_end(fast)：每个工具完成时立即发 tool_end，\
                         不要等整批结束（第四步）",
                        "fast finished while slow still runs: emit tool_end as each tool finishes, not after the \
                         whole batch (step 4)"
                    ),
                )
                .await;
            b.release("slow");
        }))
        .await;
    (out, bench)
}

/// Step 4: the calls of one batch overlap: both have started (and emitted tool_start) before either
/// finishes; each runs exactly once.
async fn both_calls_start_before_either_is_released() {
    let (out, bench) = run_slow_fast().await;

    let mut started = bench.started();
    started.sort();
    assert_eq!(
        started,
        ["fast", "slow"],
        "{}",
        msg!("每个调用应恰好执行一次", "each call must run exactly once")
    );
    let kinds = out.kinds();
    let first_end = kinds
        .iter()
        .position(|k| k.starts_with("tool_end"))
        .unwrap_or(kinds.len());
    let mut starts_before: Vec<&str> = kinds[..first_end]
        .iter()
        .filter(|k| k.starts_with("tool_start"))
        .map(|k| k.as_str())
        .collect();
    starts_before.sort();
    assert_eq!(
        starts_before,
        ["tool_start(fast)", "tool_start(slow)"],
        "{}",
        msg!(
            "两个 tool_start 都应出现在第一个 tool_end 之前：{kinds:?}",
            "both tool_start events must precede any tool_end: {kinds:?}"
        )
    );
}

/// Step 4: a batch starts whole, however many calls it holds: all three calls of this batch are
/// running before any of them is released (not two at a time, not one after another).
async fn all_three_calls_of_a_batch_start_before_any_is_released() {
    let ids = ["c1", "c2", "c3"];
    let calls: Vec<ToolCall> = ids.iter().map(|id| call(id, "lookup", json!({}))).collect();
    let mut run = setup(vec![tool_use(calls), text_reply("all done")]);
    let bench = Bench::new(&ids);
    run.options.executor = Some(bench.executor());
    let b = bench.clone();
    let out = run
        .run_with(Box::pin(async move {
            b.wait_started(
                &ids,
                &msg!(
                    "一批调用要全部同时启动：放行任何一个之前三个都必须已在执行（第四步）；是否限制了同时执行的数量，\
                     或逐个 await？",
                    "every call of a batch starts at once: all three must be running before any is released \
                     (step 4); is the number of calls at a time limited, or are they awaited one by one?"
                ),
            )
            .await;
            for id in ids {
                b.release(id);
            }
        }))
        .await;

    let mut wanted = roles(&caller_messages());
    wanted.extend(
        [
            "assistant",
            "toolResult(c1)",
            "toolResult(c2)",
            "toolResult(c3)",
            "assistant",
        ]
        .map(String::from),
    );
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "三条结果都应按调用顺序写入（第四步）",
            "all three results must be written, in call order (step 4)"
        )
    );
}

/// Step 4: completion order decides only when events appear: fast's tool_end comes first.
async fn the_fast_tool_end_is_emitted_before_the_slow_one() {
    let (out, _) = run_slow_fast().await;

    let ends: Vec<String> = out
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("tool_end"))
        .collect();
    assert_eq!(
        ends,
        ["tool_end(fast)", "tool_end(slow)"],
        "{}",
        msg!(
            "tool_end 按实际完成顺序发出：先 fast 后 slow（第四步）",
            "tool_end follows completion order: fast, then slow (step 4)"
        )
    );
}

/// Step 4: results are written in the order of the calls in the assistant message (slow, fast), not in
/// completion order.
async fn results_are_written_in_call_order_not_completion_order() {
    let (out, _) = run_slow_fast().await;

    let mut wanted = roles(&caller_messages());
    wanted.extend(
        [
            "assistant",
            "toolResult(slow)",
            "toolResult(fast)",
            "assistant",
        ]
        .map(String::from),
    );
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "结果按 assistant 中调用的顺序写入（slow 在前），而不是完成顺序（第四步）",
            "results must follow call order (slow, fast), not completion order (step 4)"
        )
    );
    out.assert_ends(
        RunReason::Stop,
        &msg!(
            "两个工具完成后模型以 stop 结束",
            "the model stops after the batch"
        ),
    );
}

/// Invariant 2: the next request, sent only after the whole batch, holds both results, slow then fast.
async fn the_next_request_holds_slow_then_fast() {
    let (out, _) = run_slow_fast().await;

    let second = roles(&out.sent_in_request(1));
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(slow)", "toolResult(fast)"].map(String::from));
    assert_eq!(
        second,
        wanted,
        "{}",
        msg!(
            "下一次请求前，每个 call 都恰好有一条同 id 的结果，按调用顺序（不变量 2）",
            "before the next request every call has exactly one result, in call order (invariant 2)"
        )
    );
}

/// Checks the result written for `id`: an error result paired to the call, whose text is exactly
/// `Tool {name} failed: {message}`, with no Debug, location or backtrace detail anywhere in it (its
/// `details` included).
fn check_failed(messages: &[Message], id: &str, name: &str, message: &str) {
    let result = result_for(messages, id).unwrap_or_else(|| {
        panic!(
            "{}",
            msg!(
                "调用 {id} 没有结果：executor 失败也必须写入配对的错误结果（第四步）",
                "call {id} has no result: a failed executor still gets a paired error result (step 4)"
            )
        )
    });
    assert_eq!(
        (result.tool_name.as_str(), result.is_error),
        (name, true),
        "{}",
        msg!(
            "executor 失败应变成同 id/name、isError 为 true 的结果",
            "a failed executor must yield a paired error result (same id and name, isError true)"
        )
    );
    let text = result.text();
    let wanted = format!("Tool {name} failed: {message}");
    assert_eq!(
        text,
        wanted,
        "{}",
        msg!(
            "错误结果的文本应为 `Tool {{name}} failed: {{message}}`，message 取 Display 或 panic 的载荷（第四步）",
            "the error text must be `Tool {{name}} failed: {{message}}`, message being the Display or the panic's \
             payload (step 4)"
        )
    );
    let whole = serde_json::to_string(result).expect("a result serializes");
    for leak in [
        DEBUG_MARKER,
        "panicked at",
        ".rs:",
        "backtrace",
        "JoinError",
        "task ",
    ] {
        assert!(
            !whole.contains(leak),
            "{}",
            msg!(
                "错误结果泄露了调试细节 {leak:?}：结果的任何部分（包括 details）都不写入 Debug 形式或 stack（第四步）\n  \
                 {whole}",
                "the error result leaks debug detail {leak:?}: no part of it, details included, may hold the \
                 Debug form or a stack (step 4)\n  {whole}"
            )
        );
    }
}

/// Every tool_end carries the very result written for its call.
fn check_tool_ends_match(out: &Outcome, ids: &[&str]) {
    let mut ended: Vec<String> = out
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("tool_end"))
        .collect();
    ended.sort();
    let mut wanted: Vec<String> = ids.iter().map(|id| format!("tool_end({id})")).collect();
    wanted.sort();
    assert_eq!(
        ended,
        wanted,
        "{}",
        msg!(
            "每个调用都恰好发出一个 tool_end，无论它成功、返回错误还是 panic（第四步）",
            "every call emits exactly one tool_end, whether it succeeds, returns an error or panics (step 4)"
        )
    );
    for end in out.events.results(false) {
        let Message::ToolResult(sent) = &end else {
            continue;
        };
        let written = result_for(&out.result.messages, &sent.tool_call_id);
        assert_eq!(
            written,
            Some(sent),
            "{}",
            msg!(
                "tool_end 携带的结果应与写入 transcript 的那一条相同",
                "a tool_end must carry the same result the transcript holds"
            )
        );
    }
}

/// Step 4: an executor that returns an error becomes an error result with the same id and name and
/// the error's Display message; it still emits its tool_end; its sibling still finishes and both are
/// written before the next request.
async fn an_executor_error_becomes_a_paired_result_and_the_sibling_still_finishes() {
    let calls = vec![
        call("boom", "explode", json!({})),
        call("ok", "lookup", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("noted")]);
    let bench = Bench::new(&["ok"]);
    run.options.executor = Some(bench.executor());
    let b = bench.clone();
    let out = run
        .run_with(Box::pin(async move {
            b.wait_started(
                &["boom", "ok"],
                &msg!("两个调用都应启动", "both calls must start"),
            )
            .await;
            b.release("ok");
        }))
        .await;

    let second = out.sent_in_request(1);
    let roles_sent = roles(&second);
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(boom)", "toolResult(ok)"].map(String::from));
    assert_eq!(
        roles_sent,
        wanted,
        "{}",
        msg!(
            "一个调用失败不能让 loop 提前退出：两条结果都写入后再请求模型（第四步）",
            "one failure must not end the batch early: both results, then the next request (step 4)"
        )
    );
    check_failed(&second, "boom", "explode", "disk full");
    assert_eq!(
        result_for(&second, "ok").map(|r| r.is_error),
        Some(false),
        "{}",
        msg!(
            "成功的兄弟调用应保留其正常结果",
            "the sibling keeps its normal result"
        )
    );
    check_tool_ends_match(&out, &["boom", "ok"]);
    out.assert_ends(
        RunReason::Stop,
        &msg!(
            "executor 错误不会终止运行",
            "an executor error does not end the run"
        ),
    );
}

/// Step 4: an executor that panics (with a &str or a String payload) becomes an error result with the
/// same id and name and the payload as message, without location or backtrace; each emits its
/// tool_end; the sibling finishes.
async fn a_panicking_executor_becomes_a_paired_result_without_location_or_backtrace() {
    let calls = vec![
        call("p1", "crash", json!({})),
        call("p2", "crash_owned", json!({})),
        call("ok", "lookup", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("noted")]);
    let bench = Bench::new(&["ok"]);
    run.options.executor = Some(bench.executor());
    let b = bench.clone();
    let out = run
        .run_with(Box::pin(async move {
            b.wait_started(
                &["p1", "p2", "ok"],
                &msg!("三个调用都应启动", "all three calls must start"),
            )
            .await;
            b.release("ok");
        }))
        .await;

    let mut wanted = roles(&caller_messages());
    wanted.extend(
        [
            "assistant",
            "toolResult(p1)",
            "toolResult(p2)",
            "toolResult(ok)",
            "assistant",
        ]
        .map(String::from),
    );
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "panic 的调用也要有配对结果，兄弟调用照常写入，按调用顺序（第四步）",
            "every call keeps a paired result, a panicking one too, in call order (step 4)"
        )
    );
    let messages = &out.result.messages;
    check_failed(messages, "p1", "crash", CRASH_TEXT);
    check_failed(
        messages,
        "p2",
        "crash_owned",
        &format!("kaboom p2 ({PANIC_MARKER})"),
    );
    check_tool_ends_match(&out, &["p1", "p2", "ok"]);
}

/// Step 4: a panic's result answers the call that panicked, whatever finishes first: here the panicking
/// call sits between two others, and it panics while the call before it is still running. Its result
/// keeps its own id and name, and the earlier call still gets its own normal result.
async fn a_panic_is_paired_to_its_own_call_whatever_finishes_first() {
    let calls = vec![
        call("first", "lookup", json!({})),
        call("p", "crash", json!({})),
        call("last", "lookup", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("noted")]);
    let bench = Bench::new(&["first", "p", "last"]);
    run.options.executor = Some(bench.executor());
    let (b, events) = (bench.clone(), run.events.clone());
    let out = run
        .run_with(Box::pin(async move {
            b.wait_started(
                &["first", "p", "last"],
                &msg!("三个调用都应启动", "all three calls must start"),
            )
            .await;
            b.release("p");
            events
                .wait_for(
                    "tool_end(p)",
                    &msg!(
                        "p panic 了，它的 tool_end 应立即发出，并带着 p 自己的 id（第四步）",
                        "p panicked: its tool_end goes out at once, under p's own id (step 4)"
                    ),
                )
                .await;
            b.release("last");
            events
                .wait_for(
                    "tool_end(last)",
                    &msg!(
                        "last 完成时就应发出 tool_end(last)（第四步）",
                        "last finished: tool_end(last) goes out at once (step 4)"
                    ),
                )
                .await;
            b.release("first");
        }))
        .await;

    let messages = &out.result.messages;
    let mut wanted = roles(&caller_messages());
    wanted.extend(
        [
            "assistant",
            "toolResult(first)",
            "toolResult(p)",
            "toolResult(last)",
            "assistant",
        ]
        .map(String::from),
    );
    assert_eq!(
        roles(messages),
        wanted,
        "{}",
        msg!(
            "每个调用恰好一条结果，按调用顺序（不变量 2）",
            "exactly one result per call, in call order (invariant 2)"
        )
    );
    check_failed(messages, "p", "crash", CRASH_TEXT);
    for id in ["first", "last"] {
        let kept =
            Message::ToolResult(ok_result(&call(id, "lookup", json!({})), bench_details(id)));
        assert_eq!(
            result_for(messages, id).cloned().map(Message::ToolResult),
            Some(kept),
            "{}",
            msg!(
                "{id} 应保留它自己的正常结果：panic 的结果属于 panic 的那个调用，不能按完成先后填进别的位置（第四步）",
                "{id} must keep its own normal result: a panic's result belongs to the call that panicked, \
                 never to whichever slot is free when it arrives (step 4)"
            )
        );
    }
    check_tool_ends_match(&out, &["first", "p", "last"]);
}

/// Step 4: every call of a batch gets a context of its own, as a lone call does (step 2): its own call
/// id, progress reported under its own id (not the first call's, not dropped), and the run's signal.
async fn each_call_of_a_batch_gets_its_own_id_progress_and_the_runs_signal() {
    let calls = vec![
        call("r1", "report", json!({})),
        call("r2", "report", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("both reported")]);
    let bench = Bench::new(&[]);
    run.options.executor = Some(bench.executor());
    let signal = run.signal();
    let out = run.run().await;

    let mut contexts = bench.contexts();
    contexts.sort();
    let pair = |id: &str| (id.to_string(), id.to_string());
    assert_eq!(
        contexts,
        [pair("r1"), pair("r2")],
        "{}",
        msg!(
            "批次中每个调用的 ctx.call_id 应是它自己的 id：每个调用构造自己的 ToolContext（第四步）",
            "(call.id, ctx.call_id) per execution: build one ToolContext per call (step 4)"
        )
    );
    let mut progress: Vec<String> = out
        .events
        .progress()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    progress.sort();
    assert_eq!(
        progress,
        ["r1", "r2"],
        "{}",
        msg!(
            "批次中每个调用的进度都应以它自己的 id 发成 tool_progress，不能丢，也不能借用别的调用的 id（第四步）",
            "each call's progress must come out as tool_progress under its own id (step 4)"
        )
    );
    signal.cancel();
    assert!(
        bench.signals().iter().all(|s| s.is_cancelled()),
        "{}",
        msg!(
            "批次中的调用没有拿到本次运行的 signal：每个 ctx.signal 都应是 options.signal 的克隆（第四步）",
            "every call of a batch must get the run's own signal (step 4)"
        )
    );
}

/// Step 4: a call alone in its turn is guarded like one in a batch: an executor error in one turn and
/// a panic in the next each become a paired error result with its tool_end, and the run goes on to
/// its stop.
async fn a_lone_failing_call_becomes_a_paired_result_too() {
    let mut run = setup(vec![
        tool_use(vec![call("boom", "explode", json!({}))]),
        tool_use(vec![call("p1", "crash", json!({}))]),
        text_reply("noted"),
    ]);
    run.options.executor = Some(Bench::new(&[]).executor());
    let out = run.run().await;

    let mut wanted = roles(&caller_messages());
    wanted.extend(
        [
            "assistant",
            "toolResult(boom)",
            "assistant",
            "toolResult(p1)",
            "assistant",
        ]
        .map(String::from),
    );
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "只有一个调用时，executor 的错误和 panic 也要变成配对结果，运行继续（第四步）",
            "a lone call's error or panic must also become a paired result (step 4)"
        )
    );
    let messages = &out.result.messages;
    check_failed(messages, "boom", "explode", "disk full");
    check_failed(messages, "p1", "crash", CRASH_TEXT);
    check_tool_ends_match(&out, &["boom", "p1"]);
    out.assert_ends(
        RunReason::Stop,
        &msg!(
            "单个调用失败不会终止运行",
            "a lone failure does not end the run"
        ),
    );
}

crate::tests![
    both_calls_start_before_either_is_released,
    all_three_calls_of_a_batch_start_before_any_is_released,
    the_fast_tool_end_is_emitted_before_the_slow_one,
    results_are_written_in_call_order_not_completion_order,
    the_next_request_holds_slow_then_fast,
    an_executor_error_becomes_a_paired_result_and_the_sibling_still_finishes,
    a_panicking_executor_becomes_a_paired_result_without_location_or_backtrace,
    a_panic_is_paired_to_its_own_call_whatever_finishes_first,
    each_call_of_a_batch_gets_its_own_id_progress_and_the_runs_signal,
    a_lone_failing_call_becomes_a_paired_result_too,
];
