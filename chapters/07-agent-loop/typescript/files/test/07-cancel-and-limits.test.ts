// Lab 7.5 取消与上限 / cancellation and limits: the signal is checked before every request and after
// every batch; maxSteps bounds the number of model turns.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="取消与上限" dist/test/07-*.test.js

import type { RunReason } from "../src/agent-loop.js";
import type { AssistantMessage } from "../src/message.js";
import { text } from "../src/message.js";
import { eventsFor } from "../src/scripted-model.js";
import {
  benchDetails,
  call,
  callerMessages,
  defaultMaxSteps,
  echo,
  expectEqual,
  msg,
  okResult,
  type Outcome,
  roles,
  setup,
  setupStreaming,
  test,
  textReply,
  toolUse,
  withCalls,
} from "./support.js";

// 第五步：运行开始前 signal 已 abort：一次模型都不调用，steps 为 0，原样返回调用者的消息，只有一个 turn_end(aborted)。
// Step 5: a signal aborted before the run starts means no model call at all: steps 0, the caller's
// messages returned as given, a single turn_end(aborted) and nothing else.
test("取消与上限 › an abort before the run calls no model and returns zero steps", async () => {
  const run = setup([textReply("never requested")]);
  run.controller.abort();
  const out = await run.run();

  expectEqual(
    out.model.calls,
    0,
    msg(
      "signal 在运行前已 abort：发起模型请求前必须先检查它，不得调用模型（第五步）",
      "the signal was aborted before the run: check it before every request, call no model (step 5)",
    ),
  );
  expectEqual(
    out.kinds(),
    ["turn_end(aborted)"],
    msg("提前取消的运行只发出一个 turn_end(aborted)", "an early abort emits only turn_end(aborted)"),
  );
  out.assertEnds("aborted", msg("运行前已取消", "aborted before the run"));
  expectEqual(out.result.steps, 0, msg("没有模型回合，steps 应为 0", "no model turn: steps must be 0"));
  expectEqual(
    out.result.messages,
    callerMessages(),
    msg("提前取消时返回的 messages 应与调用者给的一致", "the messages must come back as given"),
  );
  out.assertContextUntouched();
});

// 运行一批两个被 gate 住的调用（a、b）；两者都在运行时测试 abort 本次运行，然后放行 b、等它的 tool_end，
// 再放行 a：两个调用都在 abort 之后完成，而且不按调用顺序。
// Runs one batch of two gated calls (a, b); while both run, the test aborts the run, then releases b,
// waits for its tool_end, and releases a: the calls finish after the abort, out of call order.
async function abortDuringBatch(maxSteps: number): Promise<Outcome> {
  const run = setup([toolUse([call("a", "lookup", {}), call("b", "lookup", {})]), textReply("never requested")]);
  const bench = run.bench(["a", "b"]);
  run.options.executor = bench.executor;
  run.options.maxSteps = maxSteps;
  return run.run(async () => {
    await bench.waitStarted(["a", "b"], msg("toolUse 回合的两个调用都应启动", "both calls must start"));
    run.controller.abort();
    bench.release("b");
    await run.events.waitFor(
      "tool_end(b)",
      msg(
        "abort 之后 b 才完成：它完成时照样立即发出 tool_end，取消不会让已提交的调用失去事件（第四、五步）",
        "b finished after the abort: its tool_end still goes out as it finishes (steps 4 and 5)",
      ),
    );
    bench.release("a");
  });
}

function checkAbortedBatch(out: Outcome, rule: string): void {
  expectEqual(
    roles(out.result.messages),
    [...roles(callerMessages()), "assistant", "toolResult(a)", "toolResult(b)"],
    `${rule}: ${msg(
      "已提交的执行返回后，先按调用顺序（a 在前，尽管 b 先完成）保留它们的配对结果，再以 aborted 结束（第五步）",
      "the batch's results must be kept, paired and in call order (a first, though b finished first), before the run ends aborted (step 5)",
    )}`,
  );
  expectEqual(
    out.result.messages.slice(-2),
    ["a", "b"].map((id) => okResult(call(id, "lookup", {}), benchDetails(id))),
    `${rule}: ${msg(
      "保留的是工具真实返回的结果：等已提交的执行返回，不要用 skipped/aborted 结果代替（第五步）",
      "the kept results must be what the tools returned: wait for them, do not replace them (step 5)",
    )}`,
  );
  expectEqual(
    out.model.calls,
    1,
    `${rule}: ${msg(
      "一批工具完成后要检查 signal，取消后不得再请求模型（第五步）",
      "check the signal after a batch: no request after an abort (step 5)",
    )}`,
  );
  const kinds = out.kinds();
  expectEqual(
    out.events.count("tool_end"),
    2,
    `${rule}: ${msg(
      `abort 之后完成的两个调用都应发出 tool_end：${kinds.join(", ")}`,
      `both calls finished after the abort emit tool_end: ${kinds.join(", ")}`,
    )}`,
  );
  out.assertOneAssistantMessagePerTurn(rule);
  expectEqual(
    kinds.slice(-3),
    ["tool_end(b)", "tool_end(a)", "turn_end(aborted)"],
    `${rule}: ${msg(
      "abort 后的最后事件应是两个 tool_end，然后直接是 turn_end(aborted)，中间不重发任何事件（第五步）",
      "after the abort the last events are the two tool_end, then turn_end(aborted) at once, nothing repeated in between (step 5)",
    )}`,
  );
  out.assertEnds("aborted", rule);
  expectEqual(out.result.steps, 1, `${rule}: ${msg("只进行了一次模型回合", "one model turn was made")}`);
}

// 第五步：工具运行时 abort，这一批照样完成；结果写入并配对，不再请求模型，以 aborted 结束，每轮的 assistant_message 只发一次。
// Step 5: an abort while tools run lets the batch finish; its results are written and paired, the model
// is not asked again and the run ends aborted, each turn's assistant_message emitted once.
test("取消与上限 › an abort during a batch keeps its results and requests nothing more", async () => {
  checkAbortedBatch(await abortDuringBatch(8), msg("工具执行期间取消", "aborted while tools run"));
});

// 第五步：一批结果写入后立即检查 signal，所以最后一个允许的批次中 abort，以 aborted 结束而不是 maxSteps。
// Step 5: the signal is checked right after a batch is written, so an abort during the last allowed
// batch ends the run aborted, not maxSteps.
test("取消与上限 › an abort during the last allowed batch ends aborted, not maxSteps", async () => {
  checkAbortedBatch(
    await abortDuringBatch(1),
    msg(
      "最后一个允许的回合中取消：批次结束后先检查 signal，再检查上限",
      "abort in the last allowed turn: after the batch, check the signal before the limit",
    ),
  );
});

// 第二、五步：executor 拿着本次运行的 signal；一个工具让运行的 controller abort（像用户在工具运行时按了停止），
// 这一批照样完成并写入，然后以 aborted 结束，不再请求模型。
// Steps 2 and 5: the executor holds the run's signal; a tool that aborts the run's controller (as a user
// pressing stop while it runs) still lets its batch finish and be written, then the run ends aborted
// without asking the model again.
test("取消与上限 › a tool that aborts the run ends it after its batch", async () => {
  const run = setup([toolUse([call("c1", "cancel_run", {}), call("c2", "lookup", {})]), textReply("never requested")]);
  run.options.executor = run.bench().executor;
  const out = await run.run();

  expectEqual(
    roles(out.result.messages),
    [...roles(callerMessages()), "assistant", "toolResult(c1)", "toolResult(c2)"],
    msg(
      "工具执行时运行被 abort：这一批的结果照常写入，然后以 aborted 结束（第五步）",
      "the run was aborted while a tool ran: the batch's results are written as usual, then the run ends aborted (step 5)",
    ),
  );
  expectEqual(
    out.model.calls,
    1,
    msg(
      "批次结束后 signal 已 abort，不得再请求模型（第二、五步）",
      "the signal was aborted when the batch ended: no further request (steps 2 and 5)",
    ),
  );
  out.assertEnds("aborted", msg("工具执行时运行被 abort", "the run was aborted while a tool ran"));
});

// 第五步：最后一个允许的 toolUse 回合仍执行并写入结果，然后以 maxSteps 结束：transcript 里每条消息都是
// 模型或工具真实产生的。
// Step 5: the last allowed toolUse turn still executes and writes its results, then the run ends with
// maxSteps: every message in the transcript is one the model or a tool really produced.
test("取消与上限 › maxSteps writes the last turn's results, then ends maxSteps", async () => {
  const first = toolUse([echo("t1")]);
  const second = toolUse([echo("t2")]);
  const runs = { count: 0 };
  const run = setup([first, second, textReply("never requested")]);
  run.options.tools = run.countingTools(runs);
  run.options.maxSteps = 2;
  const out = await run.run();

  expectEqual(runs.count, 2, msg("最后一个允许的 toolUse 回合仍要执行其工具", "the last allowed turn still runs its tools"));
  const messages = out.result.messages;
  expectEqual(
    roles(messages),
    [...roles(callerMessages()), "assistant", "toolResult(t1)", "assistant", "toolResult(t2)"],
    msg(
      "写完最后一批结果就以 maxSteps 结束：最后一条应是工具结果（第五步）",
      "the transcript must end with the last result (step 5)",
    ),
  );
  const base = callerMessages().length;
  expectEqual(
    [messages[base], messages[base + 2]],
    [first, second],
    msg("transcript 中的 assistant 必须是模型真实给出的消息", "assistants must be the model's own"),
  );
  out.assertEnds("maxSteps", msg("回合数达到 maxSteps", "maxSteps reached"));
  expectEqual(
    [out.result.steps, out.model.calls],
    [2, 2],
    msg("[steps, 模型调用次数] 应为 [2, 2]", "[steps, model calls] must be [2, 2]"),
  );
});

// 第五步：只有用到上限的 toolUse 回合以 maxSteps 结束。最后一个允许的回合若是别的最终消息，就按决策表
// 自己那一行结束：stop 是 stop，截断是 length，没有调用的 toolUse 是 error。
// Step 5: only a toolUse turn that reaches the limit ends with maxSteps. Any other final message on the
// last allowed turn ends the run with its own row of the decision table: a stop is a stop, a truncated
// response is length, toolUse without calls is an error.
test("取消与上限 › the last allowed turn ends with its own reason unless it used tools", async () => {
  const cut: AssistantMessage = { ...withCalls("length", []), content: [text("The files are a.ts and")] };
  const noCalls: AssistantMessage = { ...withCalls("toolUse", []), content: [text("I will use a tool now.")] };
  const rows: [string, AssistantMessage, RunReason][] = [
    ["stop", textReply("All done."), "stop"],
    ["length", cut, "length"],
    ["toolUse, no calls", noCalls, "error"],
  ];
  for (const [row, last, ends] of rows) {
    const run = setup([toolUse([echo("t1")]), last, textReply("never")]);
    run.options.tools = run.countingTools();
    run.options.maxSteps = 2;
    const out = await run.run();

    const rule = msg(
      `maxSteps = 2，第 2 回合（最后一个允许的回合）是 ${row}`,
      `maxSteps = 2, the 2nd (last allowed) turn is ${row}`,
    );
    out.assertEnds(ends, rule);
    expectEqual(out.result.steps, 2, `${rule}: ${msg("steps 应为 2", "steps must be 2")}`);
    out.assertOneAssistantMessagePerTurn(rule);
  }
});

// 第五步：到达 maxSteps 从不编造 stop 消息：最后一个 tool_end 之后只有 turn_end，没有模型从未产生的 assistant_message。
// Step 5: reaching maxSteps never invents a stop message: after the last tool_end comes only the
// turn_end, no assistant_message the model never produced.
test("取消与上限 › reaching maxSteps never invents a stop message", async () => {
  const run = setup([toolUse([echo("t1")]), textReply("never requested")]);
  run.options.tools = run.countingTools();
  run.options.maxSteps = 1;
  const out = await run.run();

  const kinds = out.kinds();
  expectEqual(
    kinds.slice(-2),
    ["tool_end(t1)", "turn_end(maxSteps)"],
    msg(
      `到达上限时不要伪造一条模型从未生成的 stop 消息（第五步）：${kinds.join(", ")}`,
      `no invented message at maxSteps (step 5): ${kinds.join(", ")}`,
    ),
  );
  out.assertOneAssistantMessagePerTurn("maxSteps = 1");
  expectEqual(
    out.result.messages.at(-1)?.role,
    "toolResult",
    msg(
      "transcript 的最后一条应是工具结果，而不是伪造的 assistant",
      "the last message must be the tool result, not an invented assistant",
    ),
  );
  out.assertEnds("maxSteps", "maxSteps = 1");
});

// 第五步：每次循环最多消费一次模型请求，所以模型一直要工具时恰好被请求 maxSteps 次；第一次请求前也检查上限，
// 所以 maxSteps = 0 一次也不请求。
// Step 5: every iteration consumes at most one model request, so the model is called exactly maxSteps
// times when it keeps asking for tools; the limit holds before the first request too, so maxSteps = 0
// asks the model nothing.
test("取消与上限 › the model is called exactly maxSteps times when it keeps using tools", async () => {
  for (const maxSteps of [3, 0]) {
    const script = [1, 2, 3, 4, 5].map((i) => toolUse([echo(`t${i}`)]));
    const run = setup(script);
    run.options.tools = run.countingTools();
    run.options.maxSteps = maxSteps;
    const out = await run.run();

    expectEqual(
      out.model.calls,
      maxSteps,
      msg(
        `maxSteps = ${maxSteps} 时模型应恰好被请求 ${maxSteps} 次：每次请求之前都要检查上限，第一次也不例外（第五步）`,
        `the model must be called exactly maxSteps = ${maxSteps} times: check the limit before every request, the first one too (step 5)`,
      ),
    );
    expectEqual(out.result.steps, maxSteps, msg("steps 应等于 maxSteps", "steps must equal maxSteps"));
    out.assertEnds("maxSteps", `maxSteps = ${maxSteps}`);
  }
});

// 第五步：signal 只在两处检查：请求模型之前、一批结果写入之后。这里 abort 发生在模型流式输出期间，模型（像忽略
// signal 的 provider 那样）仍以带调用的 toolUse 结束：这批调用照常执行（工具拿着已 abort 的 signal，自己决定
// 是否提前停下），写入真实结果，然后在批次之后的检查处以 aborted 结束，不再请求模型。
// Step 5: the signal is checked at two places only, before a model request and after a batch is written.
// Here the abort comes while the model streams, and the model (as a provider that ignores the signal may)
// still ends with toolUse and a call: that batch runs as usual (the tool holds the aborted signal and may
// stop early on its own), its real result is written, and the check after the batch ends the run aborted,
// with no further request.
test("取消与上限 › an abort while the model streams is seen after the batch, not before it", async () => {
  const theCall = call("c1", "lookup", {});
  const message = toolUse([theCall]);
  const run = setupStreaming([
    [message, "live"],
    [textReply("never requested"), undefined],
  ]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const live = run.live(0);
  const [first, ...rest] = eventsFor(message);
  const why = msg("每个模型事件一到就转发（第一步）", "forward each model event as it arrives (step 1)");
  const out = await run.run(async () => {
    await live.forward([first!], why);
    run.controller.abort();
    await live.forward(rest, why);
    live.end();
  });

  expectEqual(
    bench.started,
    ["c1"],
    msg(
      "模型流式输出期间 abort，它仍要求了调用 c1：signal 只在请求模型前和一批结果写入后检查，所以这批调用照常执行（第五步）；不要在执行前再加一处检查",
      "the abort came while the model streamed, and it still asked for c1: the signal is checked only before a request and after a batch, so the batch runs as usual (step 5); add no third check before it runs",
    ),
  );
  expectEqual(
    out.result.messages,
    [...callerMessages(), message, okResult(theCall, benchDetails("c1"))],
    msg(
      "这批调用的真实结果照常写入，而不是 skipped 结果（第五步）",
      "the batch's real result is written, not a skipped one (step 5)",
    ),
  );
  expectEqual(
    out.kinds().slice(-3),
    ["tool_start(c1)", "tool_end(c1)", "turn_end(aborted)"],
    msg(
      "批次照常发 tool_start 和 tool_end，写入之后的检查才以 turn_end(aborted) 结束（第五步）",
      "the batch emits tool_start and tool_end as usual; the check after it ends the run with turn_end(aborted) (step 5)",
    ),
  );
  out.assertEnds("aborted", msg("模型流式输出期间取消", "aborted while the model streamed"));
  expectEqual(
    [out.model.calls, out.result.steps],
    [1, 1],
    msg("批次之后 signal 已 abort，不得再请求模型：[模型调用次数, steps] 应为 [1, 1]", "aborted after the batch, no further request: [model calls, steps] must be [1, 1]"),
  );
});

// 第五步的缺省值：调用者没给 maxSteps 时上限是 DEFAULT_MAX_STEPS：模型一直要工具，就恰好被请求那么多次，
// 以 maxSteps 结束。
// Step 5 with the default: without the caller's maxSteps the limit is DEFAULT_MAX_STEPS: a model that
// keeps using tools is asked exactly that many times, and the run ends maxSteps.
test("取消与上限 › without maxSteps the limit is DEFAULT_MAX_STEPS", async () => {
  const limit = await defaultMaxSteps();
  const script = Array.from({ length: limit + 2 }, (_, i) => toolUse([echo(`t${i + 1}`)]));
  const run = setup(script);
  run.options.tools = run.countingTools();
  delete run.options.maxSteps;
  const out = await run.run();

  expectEqual(
    [out.model.calls, out.result.steps],
    [limit, limit],
    msg(
      `没有 maxSteps 时上限是 DEFAULT_MAX_STEPS（${limit}）：[模型调用次数, steps] 应为 [${limit}, ${limit}]（第一、五步）`,
      `without maxSteps the limit is DEFAULT_MAX_STEPS (${limit}): [model calls, steps] must be [${limit}, ${limit}] (steps 1 and 5)`,
    ),
  );
  out.assertEnds("maxSteps", msg("用到缺省上限", "the default limit reached"));
});
