// 可选 Lab 7.6 重复 call id / optional: duplicate call ids. The loop is the layer that refuses a message
// whose calls repeat an id: such calls are answered with duplicate-call-id results and never run.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="重复 call id" dist/test/07-*.test.js

import {
  call,
  callerMessages,
  expectEqual,
  expectTrue,
  msg,
  roles,
  setup,
  skipped,
  test,
  textReply,
  toolUse,
} from "./support.js";

const DUPLICATE_TEXT = "Tool call was not executed because its message repeats a tool call id.";

// 附加：共用一个 id 的两个调用都得到 duplicate-call-id 结果，按调用顺序；都不执行，不再请求模型，以 error 结束。
// Bonus: two calls sharing one id are both answered with a duplicate-call-id result, in call order;
// neither runs, the model is not asked again and the run ends with error.
test("重复 call id › calls that share an id never run and each gets a duplicate result", async () => {
  const calls = [call("dup", "write", { text: "first" }), call("dup", "write", { text: "second" })];
  const message = toolUse(calls);
  const run = setup([message, textReply("never requested")]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const out = await run.run();

  expectEqual(
    bench.started,
    [],
    msg("重复 id 的调用一个都不得执行，更不能执行两次", "calls with a repeated id must not run at all, let alone twice"),
  );
  expectEqual(
    out.result.messages,
    [...callerMessages(), message, ...calls.map((c) => skipped(c, "duplicate-call-id", DUPLICATE_TEXT))],
    msg(
      "每个重复 id 的调用都应得到一条 duplicate-call-id 结果，按调用顺序",
      "one duplicate-call-id result per call, in call order",
    ),
  );
  out.assertEnds("error", msg("重复的 call id", "repeated call id"));
  expectEqual(out.model.calls, 1, msg("重复 id 之后不得再请求模型", "no request after a repeated id"));
});

// 附加：两个重复 id 旁边的唯一 id 调用，在自己的位置恰好一条结果，至多执行一次；重复的那些从不执行。
// Bonus: a call with a unique id beside two that repeat one still gets exactly one result in its place
// and runs at most once; the repeated ones never run.
test("重复 call id › a unique sibling of repeated ids gets exactly one result", async () => {
  const calls = [call("dup", "write", { text: "first" }), call("solo", "lookup", {}), call("dup", "write", { text: "second" })];
  const run = setup([toolUse(calls), textReply("never requested")]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const out = await run.run();

  const started = bench.started;
  expectTrue(
    !started.includes("dup") && started.filter((id) => id === "solo").length <= 1,
    msg(
      `重复 id 的调用不得执行，唯一 id 的调用至多执行一次：实际执行 ${started.join(", ")}`,
      `repeated ids never run, the unique one at most once: ${started.join(", ")} ran`,
    ),
  );
  expectEqual(
    roles(out.result.messages.slice(callerMessages().length)),
    ["assistant", "toolResult(dup)", "toolResult(solo)", "toolResult(dup)"],
    msg("每个调用都恰好有一条结果，按调用顺序（不变量 2）", "exactly one result per call, in call order (invariant 2)"),
  );
  out.assertEnds("error", msg("重复的 call id", "repeated call id"));
});
