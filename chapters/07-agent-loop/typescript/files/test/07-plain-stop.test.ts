// Lab 7.1 纯文本 stop / plain-text stop: one request, one final message, one turn_end.
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="纯文本 stop" dist/test/07-*.test.js

import { isDeepStrictEqual } from "node:util";

import type { AssistantMessage } from "../src/message.js";
import { text } from "../src/message.js";
import type { ModelEvent } from "../src/model.js";
import { eventsFor } from "../src/scripted-model.js";
import {
  callerMessages,
  countingTools,
  expectEqual,
  expectTrue,
  msg,
  Progress,
  roles,
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


// 第一步：先 for await 转发事件，再取 result()。真实 provider 边写边发：这里的流由测试逐个推送事件，每推一个就等
// 循环转发它，最后才给出最终消息。先等 result() 或把事件攒到流结束才转发的循环，UI 在模型写完之前什么都看不到。
// Step 1: forward the events with for await, then take result(). A real provider streams while it writes:
// here the test pushes the events one by one, waiting for each to be forwarded, and gives the final
// message only at the end. A loop that awaits result() first, or holds the events until the stream ends,
// shows a UI nothing until the model has finished.
test("纯文本 stop › each model event is forwarded while the stream is still open", async () => {
  const reply = textReply("Here are the files.");
  const run = setupStreaming([[reply, "live"]]);
  const live = run.live(0);
  const out = await run.run(async () => {
    await live.forward(
      eventsFor(reply),
      msg(
        "每个模型事件一到就转发：先 for await 读流并转发，流结束后才 await stream.result()；最终消息在流结束之前还不存在（第一步）",
        "forward each model event as it arrives: read the stream with for await, and await stream.result() only after it ends; the final message does not exist before the stream ends (step 1)",
      ),
    );
    live.end();
  });

  expectEqual(
    out.kinds(),
    [...streamedKinds(reply), "assistant_message", "turn_end(stop)"],
    msg(
      "事件顺序应为：流中全部 model_event → 一个 assistant_message → turn_end(stop)（第一步）",
      "expected every model event, then one assistant_message, then turn_end(stop) (step 1)",
    ),
  );
  expectEqual(
    out.result.messages,
    [...callerMessages(), reply],
    msg("transcript 应是调用者历史加上最终 assistant（不变量 1）", "the transcript must be the caller's history plus the final assistant (invariant 1)"),
  );
});

// 第一步：本次运行的 signal 作为 stream() 的第二个参数交给模型，provider 才能在 abort 时停止写作。
// Step 1: the run's signal goes to the model as stream()'s second argument, so a provider can stop
// writing when the run is aborted.
test("纯文本 stop › the model's stream gets the run's signal", async () => {
  const run = setup([textReply("Here are the files.")]);
  const out = await run.run();
  out.assertEnds("stop", msg("第一步", "step 1"));

  const given = run.model.signals;
  expectEqual(given.length, 1, msg("模型应恰好被请求一次", "the model must be asked exactly once"));
  const signal = given[0];
  expectTrue(
    signal instanceof AbortSignal && !signal.aborted,
    msg(
      "model.stream() 没有收到一个未 abort 的 AbortSignal：把本次运行的 signal 作为第二个参数传进去（第一步）",
      "model.stream() did not get a live AbortSignal: pass the run's signal as its second argument (step 1)",
    ),
  );
  run.controller.abort();
  expectTrue(
    signal.aborted,
    msg(
      "abort 本次运行的 controller 后，模型拿到的 signal 没有 aborted：它要是本次运行的 signal（第一步）",
      "the model's signal did not see the run aborted: it must be the run's signal (step 1)",
    ),
  );
});

// 第一步的缺省值：调用者不给 signal、maxSteps 和 onEvent 时，运行照常进行：signal 用一个永远不会 abort 的，
// 事件不发给任何人。
// Step 1's defaults: a caller that gives no signal, maxSteps or onEvent still gets a normal run: a signal
// that never aborts, and events that go nowhere.
test("纯文本 stop › a run without signal, maxSteps or onEvent uses the defaults", async () => {
  const reply = textReply("Here are the files.");
  const run = setup([reply]);
  delete run.options.signal;
  delete run.options.maxSteps;
  delete run.options.onEvent;
  const out = await run.run();

  expectEqual(
    [out.result.reason, out.result.steps, roles(out.result.messages)],
    ["stop", 1, [...roles(callerMessages()), "assistant"]],
    msg(
      "没有 signal、maxSteps 和 onEvent 时运行也要照常完成：[reason, steps, transcript] 应为 [stop, 1, 历史 + assistant]；缺省值见第一步（signal 用一个永远不会 abort 的，maxSteps 用 DEFAULT_MAX_STEPS，没有 onEvent 就不发事件）",
      "without signal, maxSteps or onEvent the run must still complete: [reason, steps, transcript] must be [stop, 1, history + assistant]; see the defaults of step 1 (a signal that never aborts, DEFAULT_MAX_STEPS, events that go nowhere)",
    ),
  );
  expectEqual(out.result.messages.at(-1), reply, msg("最终消息来自 stream.result()", "the final message comes from stream.result()"));
});
