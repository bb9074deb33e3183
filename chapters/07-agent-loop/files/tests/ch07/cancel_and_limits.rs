//! Lab 7.5 取消与上限 / cancellation and limits: the signal is checked before every request and after
//! every batch; max_steps bounds the number of model turns.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pi_course::agent_loop::RunReason;
use pi_course::message::{AssistantMessage, ContentBlock, Message, StopReason};
use serde_json::json;

use crate::support::*;

/// Step 5: a signal aborted before the run starts means no model call at all: steps 0, the caller's
/// messages returned as given, a single turn_end(aborted) and nothing else.
async fn an_abort_before_the_run_calls_no_model_and_returns_zero_steps() {
    let run = setup(vec![text_reply("never requested")]);
    run.signal().cancel();
    let out = run.run().await;

    assert_eq!(
        out.model.calls(),
        0,
        "{}",
        msg!(
            "signal 在运行前已取消：发起模型请求前必须先检查它，不得调用模型（第五步）",
            "the signal was cancelled before the run: check it before every request, call no model (step 5)"
        )
    );
    assert_eq!(
        out.kinds(),
        ["turn_end(Aborted)"],
        "{}",
        msg!(
            "提前取消的运行只发出一个 turn_end(aborted)",
            "an early abort emits only turn_end(aborted)"
        )
    );
    out.assert_ends(
        RunReason::Aborted,
        &msg!("运行前已取消", "aborted before the run"),
    );
    assert_eq!(
        out.result.steps,
        0,
        "{}",
        msg!(
            "没有模型回合，steps 应为 0",
            "no model turn: steps must be 0"
        )
    );
    assert_eq!(
        out.result.messages,
        caller_messages(),
        "{}",
        msg!(
            "提前取消时返回的 messages 应与调用者给的一致",
            "the messages must come back as given"
        )
    );
    out.assert_context_untouched();
}

/// Runs one batch of two gated calls (`a`, `b`); while both run, the test aborts the run's signal, then
/// releases `b`, waits for its tool_end, and releases `a`: the calls finish after the abort, out of call
/// order.
async fn abort_during_batch(max_steps: usize) -> Outcome {
    let calls = vec![
        call("a", "lookup", json!({})),
        call("b", "lookup", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("never requested")]);
    let bench = Bench::new(&["a", "b"]);
    run.options.executor = Some(bench.executor());
    run.options.max_steps = max_steps;
    let (b, signal, events) = (bench.clone(), run.signal(), run.events.clone());
    run.run_with(Box::pin(async move {
        b.wait_started(
            &["a", "b"],
            &msg!(
                "toolUse 回合的两个调用都应启动",
                "both calls must start"
            ),
        )
        .await;
        signal.cancel();
        b.release("b");
        events
            .wait_for(
                "tool_end(b)",
                &msg!(
                    "取消之后 b 才完成：它完成时照样立即发出 tool_end，取消不会让已提交的调用失去事件（第四、五步）",
                    "b finished after the abort: its tool_end still goes out as it finishes (steps 4 and 5)"
                ),
            )
            .await;
        b.release("a");
    }))
    .await
}

fn check_aborted_batch(out: &Outcome, rule: &str) {
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(a)", "toolResult(b)"].map(String::from));
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{rule}: {}",
        msg!(
            "已提交的执行返回后，先按调用顺序（a 在前，尽管 b 先完成）保留它们的配对结果，再以 aborted 结束（第五步）",
            "the batch's results must be kept, paired and in call order (a first, though b finished first), \
             before the run ends aborted (step 5)"
        )
    );
    let kept: Vec<Message> = ["a", "b"]
        .iter()
        .map(|id| Message::ToolResult(ok_result(&call(id, "lookup", json!({})), bench_details(id))))
        .collect();
    assert_eq!(
        out.result.messages[out.result.messages.len() - 2..],
        kept[..],
        "{rule}: {}",
        msg!(
            "保留的是工具真实返回的结果：等已提交的执行返回，不要用 skipped/aborted 结果代替（第五步）",
            "the kept results must be what the tools returned: wait for them, do not replace them (step 5)"
        )
    );
    let calls = out.model.calls();
    assert_eq!(
        calls,
        1,
        "{rule}: {}",
        msg!(
            "一批工具完成后要检查 signal，取消后不得再请求模型，实际请求 {calls} 次",
            "check the signal after a batch: no request after an abort, got {calls} (step 5)"
        )
    );
    let kinds = out.kinds();
    assert_eq!(
        out.events.count("tool_end"),
        2,
        "{rule}: {}",
        msg!(
            "取消之后完成的两个调用都应发出 tool_end：{kinds:?}",
            "both calls finished after the abort emit tool_end: {kinds:?}"
        )
    );
    out.assert_one_assistant_message_per_turn(rule);
    let tail: Vec<&str> = kinds
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        tail,
        ["tool_end(b)", "tool_end(a)", "turn_end(Aborted)"],
        "{rule}: {}",
        msg!(
            "取消后的最后事件应是两个 tool_end，然后直接是 turn_end(aborted)，中间不重发任何事件（第五步）",
            "after the abort the last events are the two tool_end, then turn_end(aborted) at once, nothing \
             repeated in between (step 5)"
        )
    );
    out.assert_ends(RunReason::Aborted, rule);
    assert_eq!(
        out.result.steps,
        1,
        "{}",
        msg!("只进行了一次模型回合", "one model turn was made")
    );
}

/// Step 5: an abort while tools run lets the batch finish; its results are written and paired, the
/// model is not asked again and the run ends aborted, each turn's assistant_message emitted once.
async fn an_abort_during_a_batch_keeps_its_results_and_requests_nothing_more() {
    let out = abort_during_batch(8).await;
    check_aborted_batch(&out, &msg!("工具执行期间取消", "aborted while tools run"));
}

/// Step 5: the signal is checked right after a batch is written, so an abort during the last allowed
/// batch ends the run aborted, not max_steps.
async fn an_abort_during_the_last_allowed_batch_ends_aborted_not_max_steps() {
    let out = abort_during_batch(1).await;
    check_aborted_batch(
        &out,
        &msg!(
            "最后一个允许的回合中取消：批次结束后立即检查 signal",
            "abort in the last allowed turn: check the signal right after the batch"
        ),
    );
}

/// Steps 2 and 5: the executor holds the run's own signal, so a tool that cancels it cancels the run:
/// its batch still finishes and is written, then the run ends aborted without asking the model again.
async fn a_tool_that_cancels_its_signal_ends_the_run_after_its_batch() {
    let calls = vec![
        call("c1", "cancel_run", json!({})),
        call("c2", "lookup", json!({})),
    ];
    let mut run = setup(vec![tool_use(calls), text_reply("never requested")]);
    run.options.executor = Some(Bench::new(&[]).executor());
    let out = run.run().await;

    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(c1)", "toolResult(c2)"].map(String::from));
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "工具取消了 signal：这一批的结果照常写入，然后以 aborted 结束（第五步）",
            "a tool cancelled the signal: the batch's results are written as usual, then the run ends aborted \
             (step 5)"
        )
    );
    let calls = out.model.calls();
    assert_eq!(
        calls,
        1,
        "{}",
        msg!(
            "工具取消了本次运行的 signal（ctx.signal 就是 options.signal），批次结束后不得再请求模型，实际请求 {calls} 次\
             （第二、五步）",
            "a tool cancelled the run's signal (ctx.signal is options.signal): no request after the batch, got \
             {calls} (steps 2 and 5)"
        )
    );
    out.assert_ends(
        RunReason::Aborted,
        &msg!("工具取消了 signal", "a tool cancelled the signal"),
    );
}

/// Step 5: the last allowed toolUse turn still executes and writes its results, then the run ends with
/// max_steps: every message in the transcript is one the model or a tool really produced.
async fn max_steps_writes_the_last_turns_results_then_ends_max_steps() {
    let (first, second) = (tool_use(vec![echo("t1")]), tool_use(vec![echo("t2")]));
    let runs = Arc::new(AtomicUsize::new(0));
    let mut run = setup(vec![
        first.clone(),
        second.clone(),
        text_reply("never requested"),
    ]);
    run.options.tools = counting_tools(&runs);
    run.options.max_steps = 2;
    let out = run.run().await;

    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "{}",
        msg!(
            "最后一个允许的 toolUse 回合仍要执行其工具",
            "the last allowed turn still runs its tools"
        )
    );
    let mut wanted = roles(&caller_messages());
    wanted.extend(["assistant", "toolResult(t1)", "assistant", "toolResult(t2)"].map(String::from));
    assert_eq!(
        roles(&out.result.messages),
        wanted,
        "{}",
        msg!(
            "写完最后一批结果就以 maxSteps 结束：最后一条应是工具结果（第五步）",
            "the transcript must end with the last result (step 5)"
        )
    );
    let messages = &out.result.messages;
    let base = caller_messages().len();
    assert_eq!(
        (&messages[base], &messages[base + 2]),
        (&Message::Assistant(first), &Message::Assistant(second)),
        "{}",
        msg!(
            "transcript 中的 assistant 必须是模型真实给出的消息",
            "assistants must be the model's own"
        )
    );
    out.assert_ends(
        RunReason::MaxSteps,
        &msg!("回合数达到 max_steps", "max_steps reached"),
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

/// Step 5: only a toolUse turn that reaches the limit ends with max_steps. Any other final message on
/// the last allowed turn ends the run with its own row of the decision table: a stop is a stop, a
/// truncated response is length, toolUse without calls is an error.
async fn the_last_allowed_turn_ends_with_its_own_reason_unless_it_used_tools() {
    let cut = AssistantMessage {
        content: vec![ContentBlock::text("The files are a.rs and")],
        ..with_calls(StopReason::Length, Vec::new())
    };
    let no_calls = AssistantMessage {
        content: vec![ContentBlock::text("I will use a tool now.")],
        ..with_calls(StopReason::ToolUse, Vec::new())
    };
    let rows = [
        ("stop", text_reply("All done."), RunReason::Stop),
        ("length", cut, RunReason::Length),
        ("toolUse, no calls", no_calls, RunReason::Error),
    ];
    for (row, last, ends) in rows {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut run = setup(vec![tool_use(vec![echo("t1")]), last, text_reply("never")]);
        run.options.tools = counting_tools(&runs);
        run.options.max_steps = 2;
        let out = run.run().await;

        let rule = msg!(
            "max_steps = 2，第 2 回合（最后一个允许的回合）是 {row}",
            "max_steps = 2, the 2nd (last allowed) turn is {row}"
        );
        out.assert_ends(ends, &rule);
        let steps = out.result.steps;
        assert_eq!(
            steps,
            2,
            "{rule}: {}",
            msg!("steps 应为 2，实际 {steps}", "steps must be 2, got {steps}")
        );
        out.assert_one_assistant_message_per_turn(&rule);
    }
}

/// Step 5: reaching max_steps never invents a stop message: after the last tool_end comes only the
/// turn_end, no assistant_message the model never produced.
async fn reaching_max_steps_never_invents_a_stop_message() {
    let mut run = setup(vec![
        tool_use(vec![echo("t1")]),
        text_reply("never requested"),
    ]);
    run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
    run.options.max_steps = 1;
    let out = run.run().await;

    let kinds = out.kinds();
    let tail: Vec<&str> = kinds
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        tail,
        ["tool_end(t1)", "turn_end(MaxSteps)"],
        "{}",
        msg!(
            "到达上限时不要伪造一条模型从未生成的 stop 消息（第五步）：{kinds:?}",
            "no invented message at max_steps (step 5): {kinds:?}"
        )
    );
    out.assert_one_assistant_message_per_turn("max_steps = 1");
    assert_eq!(
        out.result
            .messages
            .last()
            .map(|m| matches!(m, Message::ToolResult(_))),
        Some(true),
        "{}",
        msg!(
            "transcript 的最后一条应是工具结果，而不是伪造的 assistant",
            "the last message must be the tool result, not an invented assistant"
        )
    );
    out.assert_ends(RunReason::MaxSteps, "max_steps = 1");
}

/// Step 5: every loop iteration consumes at most one model request, so the model is called exactly
/// max_steps times when it keeps asking for tools; the limit holds before the first request too, so
/// max_steps = 0 asks the model nothing.
async fn the_model_is_called_exactly_max_steps_times_when_it_keeps_using_tools() {
    for max_steps in [3, 0] {
        let script = (1..=5)
            .map(|i| tool_use(vec![echo(&format!("t{i}"))]))
            .collect();
        let mut run = setup(script);
        run.options.tools = counting_tools(&Arc::new(AtomicUsize::new(0)));
        run.options.max_steps = max_steps;
        let out = run.run().await;

        let calls = out.model.calls();
        assert_eq!(
            calls,
            max_steps,
            "{}",
            msg!(
                "max_steps = {max_steps} 时模型应恰好被请求 {max_steps} 次，实际 {calls} 次：每次请求之前都要检查上限，\
                 第一次也不例外（第五步）",
                "the model must be called exactly max_steps = {max_steps} times, got {calls}: check the limit \
                 before every request, the first one too (step 5)"
            )
        );
        assert_eq!(
            out.result.steps,
            max_steps,
            "{}",
            msg!("steps 应等于 max_steps", "steps must equal max_steps")
        );
        out.assert_ends(RunReason::MaxSteps, &format!("max_steps = {max_steps}"));
    }
}

crate::tests![
    an_abort_before_the_run_calls_no_model_and_returns_zero_steps,
    an_abort_during_a_batch_keeps_its_results_and_requests_nothing_more,
    an_abort_during_the_last_allowed_batch_ends_aborted_not_max_steps,
    a_tool_that_cancels_its_signal_ends_the_run_after_its_batch,
    max_steps_writes_the_last_turns_results_then_ends_max_steps,
    the_last_allowed_turn_ends_with_its_own_reason_unless_it_used_tools,
    reaching_max_steps_never_invents_a_stop_message,
    the_model_is_called_exactly_max_steps_times_when_it_keeps_using_tools,
];
