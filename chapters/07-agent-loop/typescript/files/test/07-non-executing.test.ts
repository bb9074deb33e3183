// Lab 7.3 非执行终态 / non-executing terminal states: calls that must not run still get a paired result.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="非执行终态" dist/test/07-*.test.js

import type { RunReason } from "../src/agent-loop.js";
import type { AssistantMessage, StopReason } from "../src/message.js";
import { text } from "../src/message.js";
import {
  call,
  callerMessages,
  echo,
  expectEqual,
  msg,
  roles,
  setup,
  skipped,
  streamedKinds,
  test,
  textReply,
  withCalls,
} from "./support.js";

const LENGTH_TEXT = "Tool call was not executed because the model response was truncated.";
const ERROR_TEXT = "Tool call was not executed because the model response ended with an error.";
const ABORTED_TEXT = "Tool call was not executed because the run was aborted.";
const UNEXPECTED_STOP_TEXT = "Tool call was not executed because the model stopped without requesting tool use.";

// 运行一轮：最终消息的 stopReason 为 stop，带两个调用（echo、write），检查整条非执行分支：什么都不执行；
// 每个调用一条 skipped 结果，按调用顺序；每个调用一个 tool_skipped，没有 tool_start；一个 turn_end；不再请求。
// Runs one model turn whose final message has `stop` and two calls (echo, write), and checks the whole
// non-executing branch: nothing runs, one skipped result per call in call order, one tool_skipped per
// call and no tool_start, one turn_end, no further request.
async function checkBranch(stop: StopReason, reason: string, body: string, ends: RunReason, rule: string) {
  const calls = [echo("cut"), call("cut-2", "write", { text: "rm -rf build" })];
  const message = withCalls(stop, calls);
  const runs = { count: 0 };
  const run = setup([message, textReply("never requested")]);
  run.options.tools = run.countingTools(runs);
  const out = await run.run();

  expectEqual(
    runs.count,
    0,
    `${rule}: ${msg("任何调用都不得执行（第三步）", "no call may run (step 3)")}`,
  );
  expectEqual(
    roles(out.result.messages),
    [...roles(callerMessages()), "assistant", "toolResult(cut)", "toolResult(cut-2)"],
    `${rule}: ${msg(
      "先是这条 assistant，之后按调用顺序每个 call 一条结果（不变量 2）",
      "the assistant comes first, then one result per call, in call order (invariant 2)",
    )}`,
  );
  expectEqual(
    out.result.messages[callerMessages().length],
    message,
    `${rule}: ${msg(
      "assistant 应原样写入 transcript，包括 stopReason 和 errorMessage（不变量 1）",
      "the assistant must be appended exactly as the stream's result, errorMessage included (invariant 1)",
    )}`,
  );
  const skippedResults = calls.map((c) => skipped(c, reason, body));
  expectEqual(
    out.result.messages,
    [...callerMessages(), message, ...skippedResults],
    `${rule}: ${msg(
      `assistant 之后应按调用顺序为每个 call 写入一条 skipped 错误结果，details { skipped: true, reason: "${reason}" }（不变量 2）`,
      `expected one skipped error result per call, in call order, details { skipped: true, reason: "${reason}" } (invariant 2)`,
    )}`,
  );
  expectEqual(
    out.kinds(),
    [...streamedKinds(message), "assistant_message", "tool_skipped(cut)", "tool_skipped(cut-2)", `turn_end(${ends})`],
    `${rule}: ${msg(
      "每个 call 发一个 tool_skipped（按调用顺序），不得有 tool_start，最后一个 turn_end（第三步）",
      "expected one tool_skipped per call, in call order, no tool_start, then a single turn_end (step 3)",
    )}`,
  );
  expectEqual(
    out.events.results(true),
    skippedResults,
    `${rule}: ${msg(
      "tool_skipped 事件应携带写入 transcript 的同一条结果",
      "tool_skipped must carry the result written to the transcript",
    )}`,
  );
  out.assertEnds(ends, rule);
  expectEqual(
    [out.model.calls, out.result.steps],
    [1, 1],
    `${rule}: ${msg(
      "终态之后不得再请求模型，[模型调用次数, steps] 应为 [1, 1]",
      "no request may follow a terminal state: [model calls, steps] must be [1, 1]",
    )}`,
  );
}

// 第三步，本章自己的“故意弄坏”：被截断（length）的回复带着调用，一个都不执行，每个配一条 skipped 结果，以 length 结束。
// Step 3, the chapter's own break: a truncated (length) response with calls executes none of them, pairs
// each with a skipped result and ends the run with length.
test("非执行终态 › length with calls executes nothing and skips each call", async () => {
  await checkBranch("length", "length", LENGTH_TEXT, "length", "length + calls");
});

// 第三步：length 调用的 skipped 结果与本章的线上示例完全一致。
// Step 3: the skipped result of a length call has exactly the chapter's wire form.
test("非执行终态 › the length skipped result matches the chapter's wire example", async () => {
  const out = await setup([withCalls("length", [echo("cut")])]).run();

  const example: unknown = JSON.parse(`{
    "role": "toolResult",
    "toolCallId": "cut",
    "toolName": "echo",
    "content": [{
      "type": "text",
      "text": "Tool call was not executed because the model response was truncated."
    }],
    "details": {"skipped": true, "reason": "length"},
    "isError": true
  }`);
  const last = out.result.messages.at(-1);
  expectEqual(
    last === undefined ? undefined : JSON.parse(JSON.stringify(last)),
    example,
    msg(
      "length 调用的 skipped 结果应与本章示例的 JSON 完全一致（第三步）",
      "the skipped result must match the chapter's example exactly (step 3)",
    ),
  );
});

// 第三步：被截断的回复也从不调用注入的 executor。
// Step 3: an injected executor is never called for a truncated response either.
test("非执行终态 › length never reaches an injected executor", async () => {
  const run = setup([withCalls("length", [call("cut", "write", {})])]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const out = await run.run();

  expectEqual(
    bench.started,
    [],
    msg("length 回合不得调用注入的 executor（第三步）", "length must not call the injected executor (step 3)"),
  );
  out.assertEnds("length", "length + calls");
});

// 第三步：以 error 结束的回复，调用一个都不执行，每个配一条 skipped 结果（reason error），以 error 结束。
// Step 3: a response that ended with an error executes none of its calls, pairs each with a skipped
// result (reason error) and ends the run with error.
test("非执行终态 › error with calls executes nothing and ends error", async () => {
  await checkBranch("error", "error", ERROR_TEXT, "error", "error + calls");
});

// 第三步：aborted 的回复，调用一个都不执行，每个配一条 skipped 结果（reason aborted），以 aborted 结束。
// Step 3: an aborted response executes none of its calls, pairs each with a skipped result (reason
// aborted) and ends the run with aborted.
test("非执行终态 › aborted with calls executes nothing and ends aborted", async () => {
  await checkBranch("aborted", "aborted", ABORTED_TEXT, "aborted", "aborted + calls");
});

// 决策表：stop 里出现调用是协议矛盾：不执行，每个得到 unexpected-stop 结果，以 error 结束。
// Decision table: calls under stop are a protocol contradiction: not executed, each gets an
// unexpected-stop skipped result, and the run ends with error.
test("非执行终态 › stop with calls writes unexpected-stop results and ends error", async () => {
  await checkBranch("stop", "unexpected-stop", UNEXPECTED_STOP_TEXT, "error", "stop + calls");
});

// 决策表：toolUse 却没有调用，无法继续：不写结果，不再请求，以 error 结束。
// Decision table: toolUse without any call cannot continue: no result is written, the model is not asked
// again, and the run ends with error.
test("非执行终态 › toolUse without calls ends error without any result", async () => {
  const message: AssistantMessage = { role: "assistant", content: [text("I will use a tool now.")], stopReason: "toolUse" };
  const out = await setup([message, textReply("never requested")]).run();

  expectEqual(
    out.result.messages,
    [...callerMessages(), message],
    msg(
      "toolUse 却没有 call：只写入这条 assistant，不写任何结果",
      "toolUse without calls: only the assistant is written, no result",
    ),
  );
  expectEqual(
    out.kinds(),
    [...streamedKinds(message), "assistant_message", "turn_end(error)"],
    msg("toolUse 无 call 应直接以 error 结束", "toolUse without calls: expected a direct turn_end(error)"),
  );
  out.assertEnds("error", msg("toolUse 无 call", "toolUse without calls"));
  expectEqual(
    out.model.calls,
    1,
    msg("toolUse 无 call 不得再请求模型", "toolUse without calls: no further request"),
  );
});

// 决策表：没有调用的 length、error 和 aborted 也以它们自己的原因结束（只有无调用的 stop 才是 stop）：
// 不写结果，不再请求。
// Decision table: length, error and aborted without any call still end the run with their own reason
// (only a stop without calls is a stop): no result is written and the model is not asked again.
test("非执行终态 › length, error and aborted without calls end with their own reason", async () => {
  const rows: [StopReason, RunReason][] = [
    ["length", "length"],
    ["error", "error"],
    ["aborted", "aborted"],
  ];
  for (const [stop, ends] of rows) {
    const message: AssistantMessage = { ...withCalls(stop, []), content: [text("The files are a.ts and")] };
    const out = await setup([message, textReply("never requested")]).run();

    const rule = msg(`${stop} 无 call`, `${stop} without calls`);
    out.assertEnds(ends, rule);
    expectEqual(
      out.result.messages,
      [...callerMessages(), message],
      `${rule}: ${msg("没有 call 就没有要配对的结果，只写入这条 assistant（第三步）", "no call: only the assistant is written (step 3)")}`,
    );
    expectEqual(
      out.model.calls,
      1,
      `${rule}: ${msg("终态之后不得再请求模型", "no request may follow a terminal state")}`,
    );
  }
});
