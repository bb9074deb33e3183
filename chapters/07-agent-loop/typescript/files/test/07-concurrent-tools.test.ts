// Lab 7.4 并发工具 / concurrent tools: a batch runs at once, results are written in call order.
//
// 顺序来自显式的 gate，从不来自时间：测试先放行 fast，等到它的 tool_end，再放行 slow。
// Order comes from explicit gates, never from timing: the test releases `fast` first, waits for its
// tool_end, then releases `slow`.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="并发工具" dist/test/07-*.test.js

import type { Message } from "../src/message.js";
import { resultText } from "../src/message.js";
import {
  benchDetails,
  call,
  callerMessages,
  CRASH_TEXT,
  DEBUG_MARKER,
  expectEqual,
  expectTrue,
  fail,
  msg,
  okResult,
  type Outcome,
  progressReport,
  resultFor,
  roles,
  setup,
  test,
  textReply,
  THROW_MARKER,
  toolUse,
} from "./support.js";

// 一轮调用 slow 和 fast（都被 gate 住），然后一个最终 stop。放行任何一个之前两者都必须在运行；
// 先放行 fast 并等到它的 tool_end，再放行 slow。
// One turn calling `slow` then `fast` (both gated), then a final stop. Both must be running before either
// is released; fast is released first and its tool_end awaited before slow is released.
async function runSlowFast(): Promise<Outcome> {
  const run = setup([toolUse([call("slow", "lookup", {}), call("fast", "lookup", {})]), textReply("both done")]);
  const bench = run.bench(["slow", "fast"]);
  run.options.executor = bench.executor;
  return run.run(async () => {
    await bench.waitStarted(
      ["slow", "fast"],
      msg(
        "一批调用应同时启动：放行任何一个之前两个都必须已在执行（第四步）；是否逐个 await 了工具？",
        "both calls must be running before either is released (step 4): are tools awaited one by one?",
      ),
    );
    bench.release("fast");
    await run.events.waitFor(
      "tool_end(fast)",
      msg(
        "fast 已完成、slow 仍在运行，此时就应发出 tool_end(fast)：每个工具完成时立即发 tool_end，不要等整批结束（第四步）",
        "fast finished while slow still runs: emit tool_end as each tool finishes, not after the whole batch (step 4)",
      ),
    );
    bench.release("slow");
  });
}

// 第四步：一批调用互相重叠：两者都已开始（并发出 tool_start），任何一个才完成；每个恰好执行一次。
// Step 4: the calls of one batch overlap: both have started (and emitted tool_start) before either
// finishes; each runs exactly once.
test("并发工具 › both calls start before either is released", async () => {
  const out = await runSlowFast();

  const kinds = out.kinds();
  const ended = kinds.findIndex((k) => k.startsWith("tool_end"));
  const startsBefore = kinds.slice(0, ended === -1 ? kinds.length : ended).filter((k) => k.startsWith("tool_start"));
  expectEqual(
    startsBefore.sort(),
    ["tool_start(fast)", "tool_start(slow)"],
    msg(
      `两个 tool_start 都应出现在第一个 tool_end 之前：${kinds.join(", ")}`,
      `both tool_start events must precede any tool_end: ${kinds.join(", ")}`,
    ),
  );
  expectEqual(
    out.events.startedCalls().map((c) => c.id).sort(),
    ["fast", "slow"],
    msg("每个调用应恰好启动一次", "each call must start exactly once"),
  );
});

// 第四步：一批调用整批启动，不管有几个：三个调用全部在运行，任何一个才被放行（不是两个两个，也不是一个接一个）。
// Step 4: a batch starts whole, however many calls it holds: all three are running before any is
// released (not two at a time, not one after another).
test("并发工具 › all three calls of a batch start before any is released", async () => {
  const ids = ["c1", "c2", "c3"];
  const run = setup([toolUse(ids.map((id) => call(id, "lookup", {}))), textReply("all done")]);
  const bench = run.bench(ids);
  run.options.executor = bench.executor;
  const out = await run.run(async () => {
    await bench.waitStarted(
      ids,
      msg(
        "一批调用要全部同时启动：放行任何一个之前三个都必须已在执行（第四步）；是否限制了同时执行的数量，或逐个 await？",
        "every call of a batch starts at once: all three must be running before any is released (step 4); is the number of calls at a time limited, or are they awaited one by one?",
      ),
    );
    for (const id of ids) bench.release(id);
  });

  expectEqual(
    roles(out.result.messages),
    [...roles(callerMessages()), "assistant", "toolResult(c1)", "toolResult(c2)", "toolResult(c3)", "assistant"],
    msg("三条结果都应按调用顺序写入（第四步）", "all three results must be written, in call order (step 4)"),
  );
});

// 第四步：完成顺序只决定事件何时出现：fast 的 tool_end 在前。
// Step 4: completion order decides only when events appear: fast's tool_end comes first.
test("并发工具 › the fast tool_end is emitted before the slow one", async () => {
  const out = await runSlowFast();

  expectEqual(
    out.kinds().filter((k) => k.startsWith("tool_end")),
    ["tool_end(fast)", "tool_end(slow)"],
    msg(
      "tool_end 按实际完成顺序发出：先 fast 后 slow（第四步）",
      "tool_end follows completion order: fast, then slow (step 4)",
    ),
  );
});

// 第四步：结果按 assistant 中调用的顺序（slow、fast）写入，而不是完成顺序。
// Step 4: results are written in the order of the calls in the assistant (slow, fast), not in
// completion order.
test("并发工具 › results are written in call order, not completion order", async () => {
  const out = await runSlowFast();

  expectEqual(
    roles(out.result.messages),
    [...roles(callerMessages()), "assistant", "toolResult(slow)", "toolResult(fast)", "assistant"],
    msg(
      "结果按 assistant 中调用的顺序写入（slow 在前），而不是完成顺序（第四步）",
      "results must follow call order (slow, fast), not completion order (step 4)",
    ),
  );
  out.assertEnds("stop", msg("两个工具完成后模型以 stop 结束", "the model stops after the batch"));
});

// 不变量 2：整批结束后才发出的下一次请求，包含两条结果，slow 在前。
// Invariant 2: the next request, sent only after the whole batch, holds both results, slow then fast.
test("并发工具 › the next request holds slow, then fast", async () => {
  const out = await runSlowFast();

  expectEqual(
    roles(out.sentInRequest(1)),
    [...roles(callerMessages()), "assistant", "toolResult(slow)", "toolResult(fast)"],
    msg(
      "下一次请求前，每个 call 都恰好有一条同 id 的结果，按调用顺序（不变量 2）",
      "before the next request every call has exactly one result, in call order (invariant 2)",
    ),
  );
});

// 检查为 id 写入的结果：与调用配对的错误结果，文本恰好是 `Tool {name} failed: {message}`，
// 结果的任何部分（包括 details）都没有 stack 或错误对象的其他属性。
// Checks the result written for `id`: an error result paired to the call, whose text is exactly
// `Tool {name} failed: {message}`, with no stack nor other property of the error anywhere in it
// (its details included).
function checkFailed(messages: readonly Message[], id: string, name: string, message: string): void {
  const result = resultFor(messages, id);
  if (result === undefined) {
    fail(
      msg(
        `调用 ${id} 没有结果：executor 失败也必须写入配对的错误结果（第四步）`,
        `call ${id} has no result: a failed executor still gets a paired error result (step 4)`,
      ),
    );
  }
  expectEqual(
    [result.toolName, result.isError],
    [name, true],
    msg(
      "executor 失败应变成同 id/name、isError 为 true 的结果",
      "a failed executor must yield a paired error result (same id and name, isError true)",
    ),
  );
  expectEqual(
    resultText(result),
    `Tool ${name} failed: ${message}`,
    msg(
      "错误结果的文本应为 `Tool ${name} failed: ${message}`，message 取 Error 的 message；抛出的不是 Error 时取 String(value)（第四步）",
      "the error text must be `Tool ${name} failed: ${message}`, message being the Error's message, or String(value) for a value that is not an Error (step 4)",
    ),
  );
  const whole = JSON.stringify(result);
  for (const leak of [DEBUG_MARKER, "/dev/sda1", "DiskFull", "stack", " at ", ".js:", "node:internal"]) {
    expectTrue(
      !whole.includes(leak),
      msg(
        `错误结果泄露了调试细节 ${JSON.stringify(leak)}：结果的任何部分（包括 details）都不写入 stack 或错误对象本身（第四步）\n  ${whole}`,
        `the error result leaks debug detail ${JSON.stringify(leak)}: no part of it, details included, may hold the stack or the error object (step 4)\n  ${whole}`,
      ),
    );
  }
}

// 每个 tool_end 携带的正是为它的调用写入的结果。/ Every tool_end carries the very result written for its call.
function checkToolEndsMatch(out: Outcome, ids: string[]): void {
  expectEqual(
    out.kinds().filter((k) => k.startsWith("tool_end")).sort(),
    ids.map((id) => `tool_end(${id})`).sort(),
    msg(
      "每个调用都恰好发出一个 tool_end，无论它成功、reject 还是同步 throw（第四步）",
      "every call emits exactly one tool_end, whether it succeeds, rejects or throws (step 4)",
    ),
  );
  for (const sent of out.events.results(false)) {
    expectEqual(
      resultFor(out.result.messages, sent.toolCallId),
      sent,
      msg(
        "tool_end 携带的结果应与写入 transcript 的那一条相同",
        "a tool_end must carry the same result the transcript holds",
      ),
    );
  }
}

// 第四步：reject 的 executor 变成同 id/name、带错误 message 的错误结果；它照样发 tool_end；
// 兄弟调用照常完成，两者都在下一次请求之前写入。
// Step 4: an executor that rejects becomes an error result with the same id and name and the error's
// message; it still emits its tool_end; its sibling still finishes and both are written before the next
// request.
test("并发工具 › a rejecting executor becomes a paired result and the sibling still finishes", async () => {
  const run = setup([toolUse([call("boom", "explode", {}), call("ok", "lookup", {})]), textReply("noted")]);
  const bench = run.bench(["ok"]);
  run.options.executor = bench.executor;
  const out = await run.run(async () => {
    await bench.waitStarted(["boom", "ok"], msg("两个调用都应启动", "both calls must start"));
    bench.release("ok");
  });

  const second = out.sentInRequest(1);
  expectEqual(
    roles(second),
    [...roles(callerMessages()), "assistant", "toolResult(boom)", "toolResult(ok)"],
    msg(
      "一个调用失败不能让循环提前退出：两条结果都写入后再请求模型（第四步）；Promise.all 遇到第一个 rejection 就会 reject，每个调用要自己 catch",
      "one failure must not end the batch early: both results, then the next request (step 4); Promise.all rejects at the first rejection, so each call must catch its own",
    ),
  );
  checkFailed(second, "boom", "explode", "disk full");
  expectEqual(
    resultFor(second, "ok")?.isError,
    false,
    msg("成功的兄弟调用应保留其正常结果", "the sibling keeps its normal result"),
  );
  checkToolEndsMatch(out, ["boom", "ok"]);
  out.assertEnds("stop", msg("executor 的错误不会终止运行", "an executor error does not end the run"));
});

// 第四步：同步 throw 的 executor（还没返回 Promise 就抛出）和 reject 一个不是 Error 的值的 executor，
// 都变成同 id/name 的错误结果，不带 stack；各自发 tool_end；兄弟调用照常完成。
// Step 4: an executor that throws synchronously (before it returns any promise) and one that rejects
// with a value that is not an Error both become same id/name error results without a stack; each emits
// its tool_end; the sibling finishes.
test("并发工具 › a throwing executor becomes a paired result without a stack", async () => {
  const run = setup([
    toolUse([call("p1", "crash", {}), call("p2", "crash_value", {}), call("ok", "lookup", {})]),
    textReply("noted"),
  ]);
  const bench = run.bench(["ok"]);
  run.options.executor = bench.executor;
  const out = await run.run(async () => {
    await bench.waitStarted(
      ["p1", "p2", "ok"],
      msg(
        "三个调用都应启动：p1 的 executor 同步 throw 了，它不能让后面的调用启动不了（第四步）",
        "all three calls must start: p1's executor threw synchronously, which must not keep the later calls from starting (step 4)",
      ),
    );
    bench.release("ok");
  });

  const messages = out.result.messages;
  expectEqual(
    roles(messages),
    [...roles(callerMessages()), "assistant", "toolResult(p1)", "toolResult(p2)", "toolResult(ok)", "assistant"],
    msg(
      "throw 的调用也要有配对结果，兄弟调用照常写入，按调用顺序（第四步）；executor 可能在返回 Promise 之前就同步 throw，.catch() 接不住它，要在 try 里调用 executor",
      "every call keeps a paired result, a throwing one too, in call order (step 4); an executor may throw before it returns a promise, which .catch() never sees: call it inside a try",
    ),
  );
  checkFailed(messages, "p1", "crash", CRASH_TEXT);
  checkFailed(messages, "p2", "crash_value", `kaboom p2 (${THROW_MARKER})`);
  checkToolEndsMatch(out, ["p1", "p2", "ok"]);
});

// 第四步：失败的结果回答的是失败的那个调用，不管谁先完成：这里失败的调用夹在两个调用之间，
// 而且在它前面的调用还在运行时就失败了。它的结果保留自己的 id 和 name，前后两个调用也保留各自的正常结果。
// Step 4: a failure's result answers the call that failed, whatever finishes first: here the failing call
// sits between two others, and it fails while the call before it still runs. Its result keeps its own id
// and name, and the calls around it keep their own normal results.
test("并发工具 › a failure is paired to its own call, whatever finishes first", async () => {
  const run = setup([
    toolUse([call("first", "lookup", {}), call("p", "crash", {}), call("last", "lookup", {})]),
    textReply("noted"),
  ]);
  const bench = run.bench(["first", "p", "last"]);
  run.options.executor = bench.executor;
  const out = await run.run(async () => {
    await bench.waitStarted(["first", "p", "last"], msg("三个调用都应启动", "all three calls must start"));
    bench.release("p");
    await run.events.waitFor(
      "tool_end(p)",
      msg(
        "p 失败了，它的 tool_end 应立即发出，并带着 p 自己的 id（第四步）",
        "p failed: its tool_end goes out at once, under p's own id (step 4)",
      ),
    );
    bench.release("last");
    await run.events.waitFor(
      "tool_end(last)",
      msg("last 完成时就应发出 tool_end(last)（第四步）", "last finished: tool_end(last) goes out at once (step 4)"),
    );
    bench.release("first");
  });

  const messages = out.result.messages;
  expectEqual(
    roles(messages),
    [...roles(callerMessages()), "assistant", "toolResult(first)", "toolResult(p)", "toolResult(last)", "assistant"],
    msg("每个调用恰好一条结果，按调用顺序（不变量 2）", "exactly one result per call, in call order (invariant 2)"),
  );
  checkFailed(messages, "p", "crash", CRASH_TEXT);
  for (const id of ["first", "last"]) {
    expectEqual(
      resultFor(messages, id),
      okResult(call(id, "lookup", {}), benchDetails(id)),
      msg(
        `${id} 应保留它自己的正常结果：失败的结果属于失败的那个调用，不能按完成先后填进别的位置（第四步）`,
        `${id} must keep its own normal result: a failure's result belongs to the call that failed, never to whichever slot is free when it arrives (step 4)`,
      ),
    );
  }
  checkToolEndsMatch(out, ["first", "p", "last"]);
});

// 第四步：批次中每个调用都有自己的 context，和单个调用（第二步）一样：executor 收到的是它自己的调用、
// 以它自己的 id 报告的进度（不是第一个调用的，也没有丢），以及本次运行的 signal。
// Step 4: every call of a batch gets a context of its own, as a lone call does (step 2): the executor
// gets its own call, progress under its own id (not the first call's, not dropped), and the run's signal.
test("并发工具 › each call of a batch gets its own call, its own progress and the run's signal", async () => {
  const run = setup([toolUse([call("r1", "report", { n: 1 }), call("r2", "report", { n: 2 })]), textReply("both reported")]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const out = await run.run();

  expectEqual(
    bench.calls.map((c) => [c.id, c.arguments]).sort(),
    [
      ["r1", { n: 1 }],
      ["r2", { n: 2 }],
    ],
    msg(
      "批次中每次执行收到的应是它自己的调用：每个调用单独调用 executor（第四步）",
      "each execution of a batch must get its own call: call the executor once per call (step 4)",
    ),
  );
  expectEqual(
    out.events.progressReports().sort(),
    [
      ["r1", progressReport()],
      ["r2", progressReport()],
    ],
    msg(
      "批次中每个调用的进度都应以它自己的 id 发成 tool_progress，不能丢，也不能借用别的调用的 id（第四步）",
      "each call's progress must come out as a tool_progress under its own id (step 4)",
    ),
  );
  expectTrue(
    bench.contexts.every((context) => context.signal === run.options.signal),
    msg(
      "批次中的调用没有拿到本次运行的 signal：每个 context.signal 都应是 options.signal 本身（第四步）",
      "every call of a batch must get the run's own signal, options.signal itself (step 4)",
    ),
  );
});

// 第四步：一轮里只有一个调用时也一样受保护：一轮里 executor reject，下一轮同步 throw，各自变成配对的错误结果
// 并发 tool_end，运行继续到 stop。
// Step 4: a call alone in its turn is guarded like one in a batch: a rejection in one turn and a
// synchronous throw in the next each become a paired error result with its tool_end, and the run goes on
// to its stop.
test("并发工具 › a lone failing call becomes a paired result too", async () => {
  const run = setup([
    toolUse([call("boom", "explode", {})]),
    toolUse([call("p1", "crash", {})]),
    textReply("noted"),
  ]);
  run.options.executor = run.bench().executor;
  const out = await run.run();

  const messages = out.result.messages;
  expectEqual(
    roles(messages),
    [...roles(callerMessages()), "assistant", "toolResult(boom)", "assistant", "toolResult(p1)", "assistant"],
    msg(
      "只有一个调用时，executor 的 reject 和同步 throw 也要变成配对结果，运行继续（第四步）",
      "a lone call's rejection or synchronous throw must also become a paired result (step 4)",
    ),
  );
  checkFailed(messages, "boom", "explode", "disk full");
  checkFailed(messages, "p1", "crash", CRASH_TEXT);
  checkToolEndsMatch(out, ["boom", "p1"]);
  out.assertEnds("stop", msg("单个调用失败不会终止运行", "a lone failure does not end the run"));
});
