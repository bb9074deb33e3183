// Lab 7.1 纯文本 stop / plain-text stop: one request, one final message, one turn_end.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="纯文本 stop" dist/test/07-*.test.js

import { isDeepStrictEqual } from "node:util";

import type { AssistantMessage } from "../src/message.js";
import { text } from "../src/message.js";
import type { ModelEvent } from "../src/model.js";
import {
  callerMessages,
  countingTools,
  expectEqual,
  expectTrue,
  msg,
  Progress,
  setup,
  setupStreaming,
  streamedKinds,
  SYSTEM_PROMPT,
  test,
  textReply,
} from "./support.js";

// 第一步：请求带着本次运行的 system prompt、调用者消息的副本和 registry 的全部工具定义，即使脚本从不调用工具。
// Step 1: a request carries the system prompt, a copy of the caller's messages and every tool definition
// of the registry, even when the script never calls a tool.
test("纯文本 stop › the request holds the system prompt, the caller's messages and every tool definition", async () => {
  const run = setup([textReply("Here are the files.")]);
  run.options.tools = run.countingTools();
  const out = await run.run();

  const requests = out.requests();
  expectEqual(
    requests.length,
    1,
    msg("纯文本 stop 只应请求模型一次", "a plain stop makes exactly one request"),
  );
  const request = requests[0]!;
  expectEqual(
    request.systemPrompt,
    SYSTEM_PROMPT,
    msg("请求必须带上 context 的 systemPrompt（第一步）", "the request must carry the context's systemPrompt (step 1)"),
  );
  expectEqual(
    request.messages,
    callerMessages(),
    msg(
      "第一次请求的 messages 应是调用者消息的完整副本，顺序不变（第一步）",
      "the first request must hold a copy of the caller's messages, all of them, in order (step 1)",
    ),
  );
  expectEqual(
    request.tools,
    countingTools(new Progress()).definitions(),
    msg(
      "请求必须带上 options.tools.definitions() 的全部工具定义，按注册顺序，即使本轮不调用工具（第一步）",
      "the request must carry every tool definition of options.tools.definitions(), in registration order, even if none is called (step 1)",
    ),
  );
});

// 第一步：循环在开始时复制调用者的消息，从不写调用者的 context；返回的 transcript 是调用者的历史加上最终 assistant。
// Step 1: the loop copies the caller's messages once and never writes the caller's context; the returned
// transcript is the caller's history followed by the final assistant message.
test("纯文本 stop › the caller's context is left untouched and the transcript extends a copy", async () => {
  const reply = textReply("Here are the files.");
  const run = setup([reply]);
  const out = await run.run();

  out.assertContextUntouched();
  expectTrue(
    out.result.messages !== run.callersArray,
    msg(
      "返回的 messages 就是调用者的数组：transcript 必须是运行开始时复制出来的另一个数组（第一步）",
      "the returned messages are the caller's own array: the transcript must be a copy made at the start (step 1)",
    ),
  );
  expectEqual(
    out.result.messages,
    [...callerMessages(), reply],
    msg(
      "返回的 messages 应是调用者历史加上唯一的最终 assistant（不变量 1）",
      "the result must be the caller's history plus the one final assistant message (invariant 1)",
    ),
  );
});

// 第一步：请求的 messages 从不是调用者自己的数组；模型事件流动期间，调用者（这里是 onEvent，像 UI 那样）读到的 context 也没变。
// Step 1: a request's messages is never the caller's own array; while model events flow, the caller
// (here onEvent, as a UI would) reads its context unchanged.
test("纯文本 stop › the caller's array is never sent to the model nor written while events flow", async () => {
  const run = setup([textReply("Here are the files.")]);
  const record = run.options.onEvent!;
  const unchanged: boolean[] = [];
  run.options.onEvent = (event) => {
    if (event.type === "model_event") {
      const context = run.context;
      unchanged.push(context.messages === run.callersArray && isDeepStrictEqual(context.messages, callerMessages()));
    }
    record(event);
  };
  const out = await run.run();

  const kinds = out.kinds();
  expectTrue(
    unchanged.length > 0,
    msg(`没有转发任何 model_event（第一步）：${kinds.join(", ")}`, `no model_event was forwarded (step 1): ${kinds.join(", ")}`),
  );
  expectEqual(
    run.model.sentCallersArray,
    [false],
    msg(
      "请求的 messages 就是调用者的数组：模型可能保留或修改它。先复制，请求里放本次运行自己的消息（第一步）",
      "the request's messages was the caller's own array, which a model may keep or change: copy first, send the run's own messages (step 1)",
    ),
  );
  expectTrue(
    unchanged.every(Boolean),
    msg(
      `模型事件转发期间，调用者的 context 已经变了：循环从不写调用者的 context（第一步）\n  每个 model_event 时是否不变：${unchanged.join(", ")}`,
      `while model events flowed, the caller's context had changed: the loop never writes it (step 1)\n  unchanged at each model_event: ${unchanged.join(", ")}`,
    ),
  );
});

// 第一步：流中的每个模型事件都按顺序转发为 model_event，在唯一的 assistant_message 之前；然后 turn_end(stop)。
// Step 1: every model event is forwarded as a model_event, in stream order, before the single
// assistant_message; then turn_end(stop) closes the run.
test("纯文本 stop › model events are forwarded before the single assistant message", async () => {
  const reply = textReply("Here are the files.");
  const out = await setup([reply]).run();

  expectEqual(
    out.kinds(),
    [...streamedKinds(reply), "assistant_message", "turn_end(stop)"],
    msg(
      "事件顺序应为：转发流中全部 model_event → 一个 assistant_message → turn_end(stop)（第一步）",
      "expected every model event forwarded, then one assistant_message, then turn_end(stop) (step 1)",
    ),
  );
  expectEqual(
    out.events.assistantMessages(),
    [reply],
    msg(
      "assistant_message 事件应携带 stream.result() 的最终消息",
      "assistant_message must carry the final message from stream.result()",
    ),
  );
});

// 不变量 1：最终消息只追加一次，流式 partial 一个也不追加，即使流产生了多个逐渐变长的 partial。
// Invariant 1: the final message is appended exactly once and no streaming partial ever is, even when
// the stream produced several growing partials.
test("纯文本 stop › the final message is appended once and no partial ever is", async () => {
  const reply: AssistantMessage = {
    role: "assistant",
    content: [text("Looking at the tree. "), text("There are three files: "), text("a.ts, b.ts and c.ts.")],
    stopReason: "stop",
  };
  const out = await setup([reply]).run();

  expectEqual(
    out.result.messages.slice(callerMessages().length),
    [reply],
    msg(
      "transcript 只能多出一条最终 assistant：流式中间片段不是事实，不得写入（不变量 1）",
      "exactly one message (the final one) may be appended: partials are never written (invariant 1)",
    ),
  );
});

// 第一步：最终消息来自 stream.result()，而不是流的事件。这里像真实 provider 那样，partial 比最终文本短：
// 把最后一个 partial 补上 done 事件的 stop reason 并不是最终消息。
// Step 1: the final message comes from stream.result(), never from the events. Here, as a real provider's
// may, the partials stop short of the final text: the last partial patched with the done event's stop
// reason is not the final message.
test("纯文本 stop › the final message comes from result(), not from the last partial", async () => {
  const partial = (...texts: string[]): AssistantMessage => ({
    role: "assistant",
    content: texts.map(text),
    stopReason: "stop",
  });
  const events: ModelEvent[] = [
    { type: "start", partial: partial() },
    { type: "text_delta", delta: "Here are", partial: partial("Here are") },
    { type: "text_delta", delta: " the files", partial: partial("Here are the files") },
    { type: "done", reason: "stop" },
  ];
  const reply = partial("Here are the files: a.ts, b.ts and c.ts.", "Shall I open one?");
  const out = await setupStreaming([[reply, events]]).run();

  expectEqual(
    out.result.messages,
    [...callerMessages(), reply],
    msg(
      "写入 transcript 的必须是 stream.result() 返回的最终消息：流式片段只是过程，最后一个片段也不是事实（第一步）",
      "the transcript must get the final message from stream.result(): partials are only progress, the last one included (step 1)",
    ),
  );
  expectEqual(
    out.events.assistantMessages(),
    [reply],
    msg(
      "assistant_message 事件也必须携带 stream.result() 的最终消息，而不是拼出来的片段（第一步）",
      "assistant_message must carry the final message from stream.result(), not one built from partials (step 1)",
    ),
  );
  out.assertEnds("stop", msg("最终消息为 stop", "the final message is a stop"));
});

// 不变量 3：纯文本 stop 以恰好一个 turn_end(stop) 结束，模型只被请求一次，steps 为 1。
// Invariant 3: a plain stop ends the run with exactly one turn_end(stop), one model call and steps 1.
test("纯文本 stop › a plain stop ends with one turn_end, one request and one step", async () => {
  const out = await setup([textReply("done"), textReply("never requested")]).run();

  out.assertEnds("stop", msg("最终消息为 stop 且没有 call", "the final message is a stop without calls"));
  const calls = out.model.calls;
  expectEqual(
    calls,
    1,
    msg(`stop 之后不得再请求模型：实际请求 ${calls} 次`, `no request may follow a stop: ${calls} requests`),
  );
  expectEqual(
    out.result.steps,
    1,
    msg("steps 是模型回合数，这里应为 1", "steps counts model turns: expected 1"),
  );
});

