//! Lab 7.4 并发工具 / concurrent tools: a batch runs at once, results are written in call order.
//!
//! Order comes from explicit gates, never from timing: the test releases `fast` first, waits for its
//! tool_end, then releases `slow`.

use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::Message;
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
                "一批调用应同时启动：放行任何一个之前两个都必须已在执行（第四步）；是否逐个 await 了工具？\n  \
                 both calls must be running before either is released: are tools awaited one by one?",
            )
            .await;
            b.release("fast");
            events
                .wait_for(
                    "tool_end(fast)",
                    "fast 已完成、slow 仍在运行，此时就应发出 tool_end(fast)：每个工具完成时立即发 tool_end，\
                     不要等整批结束（第四步）\n  emit tool_end as each tool finishes, not after the whole batch",
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
        "每个调用应恰好执行一次 / each call must run exactly once"
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
        "两个 tool_start 都应出现在第一个 tool_end 之前 / both tool_start events must precede any tool_end: {kinds:?}"
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
        "tool_end 按实际完成顺序发出：先 fast 后 slow（第四步）/ tool_end follows completion order"
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
        "结果按 assistant 中调用的顺序写入（slow 在前），而不是完成顺序（第四步）\n  \
         results must follow call order (slow, fast), not completion order"
    );
    out.assert_ends(
        RunReason::Stop,
        "两个工具完成后模型以 stop 结束 / the model stops after the batch",
    );
}

/// Invariant 2: the next request, sent only after the whole batch, holds both results, slow then fast.
async fn the_next_request_holds_slow_then_fast() {
    let (out, _) = run_slow_fast().await;

    let second = roles(&out.sent_in_request(1));
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(slow)", "toolResult(fast)"].map(String::from));
    assert_eq!(
        second, wanted,
        "下一次请求前，每个 call 都恰好有一条同 id 的结果，按调用顺序（不变量 2）\n  \
         before the next request every call has exactly one result, in call order"
    );
}

/// Checks the result written for `id`: an error result paired to the call, whose text is exactly
/// `Tool {name} failed: {message}`, with no Debug, location or backtrace detail.
fn check_failed(messages: &[Message], id: &str, name: &str, message: &str) {
    let result = result_for(messages, id).unwrap_or_else(|| {
        panic!("调用 {id} 没有结果：executor 失败也必须写入配对的错误结果（第四步）/ call {id} has no result")
    });
    assert_eq!(
        (result.tool_name.as_str(), result.is_error),
        (name, true),
        "executor 失败应变成同 id/name、isError 为 true 的结果 / a failed executor must yield a paired error result"
    );
    let text = result.text();
    let wanted = format!("Tool {name} failed: {message}");
    assert_eq!(
        text, wanted,
        "错误结果的文本应为 `Tool {{name}} failed: {{message}}`，message 取 Display 或 panic 的载荷（第四步）\n  \
         the error text must be `Tool {{name}} failed: {{message}}`"
    );
    for leak in [
        DEBUG_MARKER,
        "panicked at",
        ".rs:",
        "backtrace",
        "JoinError",
        "task ",
    ] {
        assert!(
            !text.contains(leak),
            "错误结果泄露了调试细节 {leak:?}（不写入 stack / Debug）：{text:?} / the result leaks debug detail"
        );
    }
}

/// Step 4: an executor that returns an error becomes an error result with the same id and name and
/// the error's Display message; its sibling still finishes and both are written before the next request.
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
            b.wait_started(&["boom", "ok"], "两个调用都应启动 / both calls must start")
                .await;
            b.release("ok");
        }))
        .await;

    let second = out.sent_in_request(1);
    let roles_sent = roles(&second);
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(boom)", "toolResult(ok)"].map(String::from));
    assert_eq!(
        roles_sent, wanted,
        "一个调用失败不能让 loop 提前退出：两条结果都写入后再请求模型（第四步）\n  \
         one failure must not end the batch early: both results, then the next request"
    );
    check_failed(&second, "boom", "explode", "disk full");
    assert_eq!(
        result_for(&second, "ok").map(|r| r.is_error),
        Some(false),
        "成功的兄弟调用应保留其正常结果 / the sibling keeps its normal result"
    );
    out.assert_ends(
        RunReason::Stop,
        "executor 错误不会终止运行 / an executor error does not end the run",
    );
}

/// Step 4: an executor that panics (with a &str or a String payload) becomes an error result with the
/// same id and name and the payload as message, without location or backtrace; the sibling finishes.
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
                "三个调用都应启动 / all three calls must start",
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
        "panic 的调用也要有配对结果，兄弟调用照常写入，按调用顺序（第四步）/ every call keeps a paired result"
    );
    let messages = &out.result.messages;
    check_failed(messages, "p1", "crash", &format!("kaboom ({PANIC_MARKER})"));
    check_failed(
        messages,
        "p2",
        "crash_owned",
        &format!("kaboom p2 ({PANIC_MARKER})"),
    );
    let mut ended: Vec<String> = out
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("tool_end"))
        .collect();
    ended.sort();
    assert_eq!(
        ended,
        ["tool_end(ok)", "tool_end(p1)", "tool_end(p2)"],
        "每个调用（包括 panic 的）都应发出一个 tool_end / every call, a panicking one too, emits one tool_end"
    );
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
        "批次中每个调用的 ctx.call_id 应是它自己的 id：每个调用构造自己的 ToolContext（第四步）\n  \
         (call.id, ctx.call_id) per execution: build one ToolContext per call"
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
        "批次中每个调用的进度都应以它自己的 id 发成 tool_progress，不能丢，也不能借用别的调用的 id（第四步）\n  \
         each call's progress must come out as tool_progress under its own id"
    );
    signal.cancel();
    assert!(
        bench.signals().iter().all(|s| s.is_cancelled()),
        "批次中的调用没有拿到本次运行的 signal：每个 ctx.signal 都应是 options.signal 的克隆（第四步）\n  \
         every call of a batch must get the run's own signal"
    );
}

/// Step 4: a call alone in its turn is guarded like one in a batch: an executor error in one turn and
/// a panic in the next each become a paired error result, and the run goes on to its stop.
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
        "只有一个调用时，executor 的错误和 panic 也要变成配对结果，运行继续（第四步）\n  \
         a lone call's error or panic must also become a paired result"
    );
    let messages = &out.result.messages;
    check_failed(messages, "boom", "explode", "disk full");
    check_failed(messages, "p1", "crash", &format!("kaboom ({PANIC_MARKER})"));
    out.assert_ends(
        RunReason::Stop,
        "单个调用失败不会终止运行 / a lone failure does not end the run",
    );
}

crate::tests![
    both_calls_start_before_either_is_released,
    the_fast_tool_end_is_emitted_before_the_slow_one,
    results_are_written_in_call_order_not_completion_order,
    the_next_request_holds_slow_then_fast,
    an_executor_error_becomes_a_paired_result_and_the_sibling_still_finishes,
    a_panicking_executor_becomes_a_paired_result_without_location_or_backtrace,
    each_call_of_a_batch_gets_its_own_id_progress_and_the_runs_signal,
    a_lone_failing_call_becomes_a_paired_result_too,
];
