// Lab 7.2 单工具往返 / single tool round trip: one call executed, its result sent back to the model.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="单工具往返" dist/test/07-*.test.js

import type { AssistantMessage } from "../src/message.js";
import { resultText, text, userMessage } from "../src/message.js";
import {
  benchDetails,
  call,
  callerMessages,
  countingTools,
  echo,
  expectEqual,
  expectTrue,
  msg,
  okResult,
  Progress,
  progressReport,
  resultFor,
  roles,
  setup,
  streamedKinds,
  SYSTEM_PROMPT,
  test,
  textReply,
  toolUse,
} from "./support.js";

// 第二步：一个调用依次发出 tool_start → tool_progress → tool_end，之后才是下一次请求（它的模型事件在 tool_end 之后）。
// tool_start 携带模型写出的完整调用。
// Step 2: one call runs as tool_start → tool_progress → tool_end, and only then comes the next request
// (its model events follow the tool_end). The tool_start carries the call as the model wrote it.
test("单工具往返 › tool_start, tool_progress, tool_end, then the next request", async () => {
  const first = toolUse([echo("call-1")]);
  const second = textReply("The file says call-1.");
  const run = setup([first, second]);
  run.options.tools = run.countingTools();
  const out = await run.run();

  expectEqual(
    out.kinds(),
    [
      ...streamedKinds(first),
      "assistant_message",
      "tool_start(call-1)",
      "tool_progress(call-1)",
      "tool_end(call-1)",
      ...streamedKinds(second),
      "assistant_message",
      "turn_end(stop)",
    ],
    msg(
      "单个调用应依次发出 tool_start → tool_progress → tool_end，之后才发下一次模型请求（第二步）",
      "expected tool_start, tool_progress, tool_end, then the next request's events (step 2)",
    ),
  );
  expectEqual(
    out.events.startedCalls(),
    [echo("call-1")],
    msg(
      "tool_start 应携带完整的调用：type、id、name 和 arguments 都与 assistant 中的一致（第二步）",
      "tool_start must carry the whole call: type, id, name and arguments as in the assistant message (step 2)",
    ),
  );
});

// 第二步：reportProgress 变成带 call id 和所报内容（两个文本块，原样）的 tool_progress，注入的 executor 也一样；
// 它在工具还在运行时就发出：这里工具报告进度后停在 gate，测试看到 tool_progress 才放行它。
// Step 2: reportProgress becomes a tool_progress event carrying the call id and the reported content (two
// text blocks, as they are), also when the executor is injected; it goes out while the tool still runs:
// here the tool reports, then waits at its gate, and the test releases it only once the tool_progress is out.
test("单工具往返 › progress is forwarded with the call id and its content while the tool runs", async () => {
  const run = setup([toolUse([call("call-3", "report", {})]), textReply("ok")]);
  const bench = run.bench(["call-3"]);
  run.options.executor = bench.executor;
  const out = await run.run(async () => {
    await run.events.waitFor(
      "tool_progress(call-3)",
      msg(
        "工具报告了进度、仍在运行，此时就应发出 tool_progress(call-3)：reportProgress 一被调用就发事件，不要攒到工具结束（第二步）",
        "the tool reported progress and still runs: tool_progress(call-3) goes out now, as reportProgress is called, not held until the tool ends (step 2)",
      ),
    );
    bench.release("call-3");
  });

  expectEqual(
    out.events.progressReports(),
    [["call-3", progressReport()]],
    msg(
      "reportProgress 必须转成带 call id 的 tool_progress（toolCallId），内容原样：每个文本块都在，不合并、不截取（第二步）",
      "progress must become a tool_progress with the call id (toolCallId) and the same content: every text block, neither joined nor cut (step 2)",
    ),
  );
});

// 第二步：executor 收到的是被执行的那个调用，和本次运行的 signal：运行结束后 abort 调用者的 controller
// （此时不涉及第五步的取消规则），executor 拿到的 signal 也看得到。
// Step 2: the executor receives the call being executed and the run's signal: aborting the caller's
// controller (after the run, so no cancellation rule of step 5 is involved) is seen by the signal the
// executor was given.
test("单工具往返 › the executor gets the call and the run's signal", async () => {
  const theCall = call("call-7", "lookup", { key: "a" });
  const run = setup([toolUse([theCall]), textReply("ok")]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const out = await run.run();
  out.assertEnds("stop", msg("第二步", "step 2"));

  expectEqual(
    bench.calls,
    [theCall],
    msg(
      "executor 应恰好被调用一次，收到的是被执行的调用本身（id、name、arguments）",
      "the executor must be called once, with the call being executed (id, name, arguments)",
    ),
  );
  const given = bench.contexts.map((context) => context.signal);
  expectTrue(
    given.every((signal) => signal instanceof AbortSignal && !signal.aborted),
    msg(
      "运行没有被取消，executor 拿到的 signal 却不是未 abort 的 AbortSignal：把本次运行的 signal 原样交给 executor，循环自己不要 abort 它",
      "the run was not aborted, yet the executor's signal is not a live AbortSignal: pass the run's signal as is, never abort it yourself",
    ),
  );
  run.controller.abort();
  expectTrue(
    given.every((signal) => signal.aborted),
    msg(
      "abort 本次运行的 controller 后，executor 的 signal 没有 aborted：signal 要原样交给 executor（第二步）",
      "the executor's signal did not see the run aborted: pass the run's signal to the executor (step 2)",
    ),
  );
});

// 第二步的缺省值：调用者没给 signal 时，executor 仍拿到一个 AbortSignal，它永远不会 abort（也没有 onEvent）。
// Step 2 with the defaults: when the caller gives no signal, the executor still gets an AbortSignal, one
// that never aborts (and there is no onEvent either).
test("单工具往返 › without the caller's signal the executor gets one that never aborts", async () => {
  const run = setup([toolUse([call("call-7", "lookup", {})]), textReply("ok")]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  delete run.options.signal;
  delete run.options.onEvent;
  const out = await run.run();

  expectEqual(
    [out.result.reason, roles(out.result.messages)],
    ["stop", [...roles(callerMessages()), "assistant", "toolResult(call-7)", "assistant"]],
    msg(
      "没有 signal 和 onEvent 时，工具往返也要照常完成（第一步的缺省值）",
      "without signal or onEvent the round trip must still complete (the defaults of step 1)",
    ),
  );
  const given = bench.contexts.map((context) => context.signal);
  expectTrue(
    given.length === 1 && given[0] instanceof AbortSignal && !given[0].aborted,
    msg(
      "调用者没给 signal，executor 的 context.signal 却不是一个未 abort 的 AbortSignal：缺省时用一个永远不会 abort 的 signal，也交给 executor（第一、二步）",
      "the caller gave no signal, and the executor's context.signal is not a live AbortSignal: default to a signal that never aborts, and hand that one to the executor (steps 1 and 2)",
    ),
  );
});

// 第二步："signal 也要原样交给 executor"：executor 拿到的就是 options.signal 这个对象本身，不是由它派生的
// 新 signal（AbortSignal.any、新的 AbortController）。工具可能据它登记监听、比较身份，或者把它交给子进程。
// Step 2: "pass the signal to the executor as is": the executor gets the options.signal object itself,
// not a signal derived from it (AbortSignal.any, a new AbortController). A tool may register listeners on
// it, compare it, or hand it to a child process.
test("单工具往返 › the executor's signal is the run's own, not a derived one", async () => {
  const run = setup([toolUse([call("call-7", "lookup", {})]), textReply("ok")]);
  const bench = run.bench();
  run.options.executor = bench.executor;
  const out = await run.run();
  out.assertEnds("stop", msg("第二步", "step 2"));

  expectEqual(bench.contexts.length, 1, msg("executor 应恰好被调用一次", "the executor must be called exactly once"));
  expectTrue(
    bench.contexts[0]!.signal === run.options.signal,
    msg(
      "executor 的 context.signal 不是 options.signal 本身：不要用 AbortSignal.any() 或新的 AbortController 派生一个，原样交给它（第二步）",
      "the executor's context.signal is not options.signal itself: do not derive one (AbortSignal.any(), a new AbortController), pass it as is (step 2)",
    ),
  );
});

// 不变量 2：第二次请求看到完整的因果链：调用者的消息、带调用的 assistant、同 id 同 name 的结果。
// Invariant 2: the second request sees the whole causal chain: the caller's messages, the assistant with
// the call, then the tool result with the same id and name.
test("单工具往返 › the second request sees the assistant, then its paired result", async () => {
  const first = toolUse([echo("call-1")]);
  const run = setup([first, textReply("done")]);
  run.options.tools = run.countingTools();
  const out = await run.run();

  const requests = out.requests();
  expectEqual(requests.length, 2, msg("工具结果写回后应再请求模型一次", "one more request must follow the tool result"));
  const second = requests[1]!;
  expectEqual(
    [second.systemPrompt, second.tools],
    [SYSTEM_PROMPT, countingTools(new Progress()).definitions()],
    msg(
      "每次请求（不只第一次）都要带上 systemPrompt 和全部工具定义（第一步）",
      "every request, not only the first, carries the systemPrompt and every tool definition (step 1)",
    ),
  );
  expectEqual(
    roles(second.messages),
    [...roles(callerMessages()), "assistant", "toolResult(call-1)"],
    msg(
      "第二次请求应看到 user → assistant(toolCall call-1) → toolResult(call-1)（不变量 2）",
      "the second request must hold the assistant with the call, then its result (invariant 2)",
    ),
  );
  const sent = second.messages;
  expectEqual(sent.at(-2), first, msg("带 call 的 assistant 应原样进入 transcript", "the assistant with the call must be kept as is"));
  const result = resultFor(sent, "call-1")!;
  expectEqual(
    [result.toolCallId, result.toolName, result.isError],
    ["call-1", "echo", false],
    msg(
      "工具结果应与调用配对：同 id、同 name，执行成功",
      "the result must pair the call by id and name, and succeed",
    ),
  );
  expectEqual(resultText(result), "echo: call-1", msg("结果内容应来自工具本身", "the result content must be the tool's"));
});

// 不变量 2：transcript 只增不减。第三次请求包含调用者的消息和之前两轮，每个 assistant 后面跟着它的结果。
// Invariant 2: the transcript only grows. The third request holds the caller's messages and both earlier
// turns, each assistant followed by its result.
test("单工具往返 › the third request holds every turn so far", async () => {
  const first = toolUse([echo("t1")]);
  const second = toolUse([echo("t2")]);
  const run = setup([first, second, textReply("done")]);
  run.options.tools = run.countingTools();
  const out = await run.run();

  const sent = out.sentInRequest(2);
  expectEqual(
    roles(sent),
    [...roles(callerMessages()), "assistant", "toolResult(t1)", "assistant", "toolResult(t2)"],
    msg(
      "第三次请求应包含调用者消息和之前两轮的全部内容：每次请求都由完整的 transcript 构成，而不只是最近一轮（不变量 2）",
      "the third request must hold the caller's messages and both earlier turns: every request is built from the whole transcript, not only the last turn (invariant 2)",
    ),
  );
  const base = callerMessages().length;
  expectEqual(
    [sent[base], sent[base + 2]],
    [first, second],
    msg(
      "两条带 call 的 assistant 都应原样留在 transcript 中",
      "both assistants with calls must stay in the transcript as they were",
    ),
  );
  out.assertEnds("stop", msg("两轮工具之后 stop", "a stop after two tool turns"));
});

// 不变量 1：带调用的 assistant 旁边的文本（包括空文本块）原样保留：transcript、下一次请求和 assistant_message 事件里都是。
// Invariant 1: an assistant message holding text beside its calls (an empty text block included) is
// appended once, exactly as the model returned it: in the transcript, the next request and its event.
test("单工具往返 › text beside the calls is kept as the model wrote it", async () => {
  const message: AssistantMessage = {
    role: "assistant",
    content: [text("Let me look at the file first."), text(""), echo("call-1"), text("Then I will summarize it.")],
    stopReason: "toolUse",
  };
  const run = setup([message, textReply("done")]);
  run.options.tools = run.countingTools();
  const out = await run.run();

  const base = callerMessages().length;
  expectEqual(
    out.result.messages[base],
    message,
    msg(
      "带 call 的 assistant 要原样写入 transcript：文本块（包括空文本块）和调用都保留，顺序不变（不变量 1）",
      "the assistant with calls must be appended as it is: every text block (empty ones included) and every call, in order (invariant 1)",
    ),
  );
  expectEqual(
    out.sentInRequest(1)[base],
    message,
    msg("下一次请求里的这条 assistant 也必须原样保留", "the next request must hold that assistant as it is too"),
  );
  expectEqual(
    out.events.assistantMessages()[0],
    message,
    msg("assistant_message 事件应携带原样的最终消息", "assistant_message must carry the final message as it is"),
  );
});

// 不变量 2，内置 executor：对 registry 不认识的工具的调用仍交给内置 executor，它给出配对的错误结果；
// 循环写入它，再请求模型。什么都不丢。
// Invariant 2, with the built-in executor: a call to a tool the registry does not know still goes to the
// built-in executor, which answers it with a paired error result; the loop writes it and asks again.
test("单工具往返 › an unknown tool still gets its paired result", async () => {
  const missing = call("call-9", "missing", { path: "a.ts" });
  const run = setup([toolUse([missing]), textReply("noted")]);
  run.options.tools = run.countingTools();
  const out = await run.run();

  const sent = out.sentInRequest(1);
  expectEqual(
    roles(sent),
    [...roles(callerMessages()), "assistant", "toolResult(call-9)"],
    msg(
      "未知工具的调用也要交给 executor（没有注入时用内置的 registryExecutor），写入它返回的配对结果，再请求模型（不变量 2）",
      "a call to an unknown tool still goes to the executor (the built-in registryExecutor when none is injected); its paired result is written before the next request (invariant 2)",
    ),
  );
  const result = resultFor(sent, "call-9");
  expectEqual(
    result && [result.toolName, result.isError, resultText(result)],
    ["missing", true, 'Tool "missing" not found'],
    msg(
      "结果应是内置 executor 给出的同 id/name 错误结果",
      "the result must be the built-in executor's error, paired by id and name",
    ),
  );
  expectEqual(
    out.kinds().filter((k) => k.startsWith("tool_")),
    ["tool_start(call-9)", "tool_end(call-9)"],
    msg(
      "未知工具的调用同样发出 tool_start 和 tool_end（第二步）",
      "a call to an unknown tool emits tool_start and tool_end too (step 2)",
    ),
  );
});

// 第二步：executor 的结果原样写入：content、details 和 isError 原样进入 transcript 和 tool_end 事件。
// Step 2: the executor's result is written as is: content, details and isError reach the transcript and
// the tool_end event unchanged.
test("单工具往返 › the executor's result passes through with its details", async () => {
  const theCall = call("call-2", "lookup", { key: "a" });
  const run = setup([toolUse([theCall]), textReply("done")]);
  run.options.executor = run.bench().executor;
  const out = await run.run();

  const wanted = okResult(theCall, benchDetails("call-2"));
  expectEqual(
    out.result.messages[callerMessages().length + 1],
    wanted,
    msg(
      "executor 返回的结果（含 details）应原样写入 transcript",
      "the executor's result, details included, must be written unchanged",
    ),
  );
  expectEqual(out.events.results(false), [wanted], msg("tool_end 应携带同一条结果", "tool_end must carry that same result"));
});

// 不变量 1 和 3：一次往返是两轮模型：user、assistant(call)、result、最终 assistant；工具执行一次，一个 turn_end(stop)。
// Invariants 1 and 3: a round trip is two model turns: user, assistant(call), result, final assistant; the
// tool runs once and one turn_end(stop) closes the run.
test("单工具往返 › a round trip runs the tool once and stops after two steps", async () => {
  const runs = { count: 0 };
  const run = setup([toolUse([echo("call-1")]), textReply("done")]);
  run.options.tools = run.countingTools(runs);
  const out = await run.run();

  out.assertEnds("stop", msg("工具往返后模型以 stop 结束", "the model stops after the round trip"));
  expectEqual(runs.count, 1, msg("工具应恰好执行一次", "the tool must run exactly once"));
  expectEqual(
    roles(out.result.messages),
    [...roles(callerMessages()), "assistant", "toolResult(call-1)", "assistant"],
    msg(
      "transcript 应为 历史 → assistant(call) → toolResult → assistant(stop)",
      "the transcript must be history → assistant(call) → toolResult → assistant(stop)",
    ),
  );
  expectEqual(
    [out.result.steps, out.model.calls],
    [2, 2],
    msg("[steps, 模型调用次数] 应为 [2, 2]", "[steps, model calls] must be [2, 2]"),
  );
});

// 第一步：循环在开始时复制一次调用者的 messages，之后的请求都由本次运行的 transcript 构成。工具运行期间调用者
// 改了自己的消息（加一条消息，甚至换掉整个数组），这些改动不会进入本次运行的下一次请求。（system prompt 不在此列：
// 本章的请求写作 systemPrompt: options.context.systemPrompt，开始时复制一次或每次请求时读取都可以。）
// Step 1: the loop copies the caller's messages once, at the start, and builds every request from the
// run's transcript. What the caller changes in its messages while a tool runs (a new message, even a new
// array) does not reach the run's next request. (Not the system prompt: the chapter writes the request as
// systemPrompt: options.context.systemPrompt, so copying it at the start and reading it per request are
// both right.)
test("单工具往返 › the caller's messages are copied once, and later changes stay out of the run", async () => {
  const run = setup([toolUse([call("call-1", "lookup", {})]), textReply("done")]);
  const bench = run.bench(["call-1"]);
  run.options.executor = bench.executor;
  const out = await run.run(async () => {
    await bench.waitStarted(
      ["call-1"],
      msg("toolUse 回合的调用应交给注入的 executor", "the call must reach the injected executor"),
    );
    run.context.messages.push(userMessage("a note the UI added during the run"));
    run.context.messages = [...run.context.messages, userMessage("a whole new array")];
    bench.release("call-1");
  });

  expectEqual(
    roles(out.sentInRequest(1)),
    [...roles(callerMessages()), "assistant", "toolResult(call-1)"],
    msg(
      "第二次请求应只基于开始时的副本和本次运行的 transcript，调用者后来加入的消息不属于本次运行（第一步）",
      "the second request must come from the run's own copy, not re-read from the caller's context (step 1)",
    ),
  );
});
