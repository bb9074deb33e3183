// 第 07 章：Agent Loop。问模型，执行它要的工具，把结果送回去，直到这次运行结束。
// The agent loop: ask the model, run the tools it asks for, feed the results back, until the run ends.
//
// 每次运行都要守住三个不变量 / three invariants hold for every run:
// 1. 每轮最终的 assistant 消息只加入 transcript 一次 / each final assistant message is appended once;
// 2. 下一次模型请求前，每个 tool call 都恰好有一条同 id 的结果 / before the next request, every call
//    has exactly one result with its id;
// 3. 一次运行只发出一个 turn_end / exactly one turn_end per run.

import type { AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage } from "./message.js";
import type { Model, ModelEvent } from "./model.js";
import type { ToolExecutor, ToolRegistry } from "./tool.js";

export const DEFAULT_MAX_STEPS = 32;

// 循环运行时报告的事情，按发生的顺序。
// What the loop reports while it runs, in the order it happens.
export type LoopEvent =
  // 模型的流式事件，原样转发。/ A streaming event from the model, forwarded as is.
  | { type: "model_event"; event: ModelEvent }
  // 一轮模型的最终消息，即加入 transcript 的那一条。/ A turn's final message, as appended to the transcript.
  | { type: "assistant_message"; message: AssistantMessage }
  | { type: "tool_start"; call: ToolCall }
  | { type: "tool_progress"; toolCallId: string; content: TextContent[] }
  // 调用一完成就发出，所以可能不按调用顺序。/ Emitted the moment a call finishes: maybe out of call order.
  | { type: "tool_end"; result: ToolResultMessage }
  // 没有执行就得到回答的调用。/ A call that was answered without being run.
  | { type: "tool_skipped"; result: ToolResultMessage }
  // 每次运行的最后一个事件。/ The last event of every run.
  | { type: "turn_end"; reason: RunReason };

// 一次运行为什么结束。/ Why a run ended.
export type RunReason = "stop" | "length" | "error" | "aborted" | "maxSteps";

export interface AgentRunResult {
  reason: RunReason;
  // 本次运行的 transcript：调用者的消息，加上本次运行追加的一切。
  // The run's transcript: the caller's messages followed by everything this run added.
  messages: Message[];
  // 发出了多少次模型请求。/ How many model requests were made.
  steps: number;
}

// 调用者的对话。循环在开始时复制一次它的 messages，从不写它。
// The caller's conversation. The loop copies its messages once, at the start, and never writes to it.
export interface AgentContext {
  systemPrompt: string;
  messages: Message[];
}

export interface AgentLoopOptions {
  context: AgentContext;
  model: Model;
  tools: ToolRegistry;
  // 不给就用内置的 executor 按 tools 执行。/ Absent: calls run with the built-in executor against `tools`.
  executor?: ToolExecutor;
  // abort 之后，运行在下一个边界结束；工具也拿到它。/ Aborting it ends the run at the next boundary; tools get it too.
  signal?: AbortSignal;
  // 一次运行最多发出的模型请求数，默认 DEFAULT_MAX_STEPS。/ The most model requests one run may make.
  maxSteps?: number;
  onEvent?: (event: LoopEvent) => void;
}

// 不执行就回答一个调用的原因：写进结果的 details.reason。
// Why a call is answered without being run: the `reason` written to the result's details.
export type SkipReason = "length" | "error" | "aborted" | "unexpected-stop" | "duplicate-call-id";

// ---------------------------------------------------------------------------------------------------
// 以上是公共表面：保持不变，测试用的就是这些类型。你的代码写在下面。
// Above is the public surface: keep it as it is, the tests use these types. Write your code below.
// ---------------------------------------------------------------------------------------------------

// 另一种形状的正确循环：决策表是数据（每个 stop reason 一行，分有无调用）；循环是按步数预算的 while，signal
// 显式地在第一次请求前和每批之后检查；一批调用在 for 循环里全部启动，再按调用顺序逐个 await（每个完成时
// 已经自己发了 tool_end）。
// A correct loop of another shape: the decision table is data (a row per stop reason, with or without
// calls); the loop is a while over the step budget, the signal checked explicitly before the first
// request and after each batch; a batch starts every call in a for loop, then awaits the promises one by
// one in call order (each has already emitted its tool_end as it settled).

import { text, toolCallsOf } from "./message.js";
import type { StopReason } from "./message.js";
import { registryExecutor } from "./tool.js";

interface Row {
  run: boolean;
  skip?: SkipReason;
  reason?: RunReason;
}

const TABLE: Record<StopReason, { none: Row; some: Row }> = {
  stop: { none: { run: false, reason: "stop" }, some: { run: false, skip: "unexpected-stop", reason: "error" } },
  toolUse: { none: { run: false, reason: "error" }, some: { run: true } },
  length: { none: { run: false, reason: "length" }, some: { run: false, skip: "length", reason: "length" } },
  error: { none: { run: false, reason: "error" }, some: { run: false, skip: "error", reason: "error" } },
  aborted: { none: { run: false, reason: "aborted" }, some: { run: false, skip: "aborted", reason: "aborted" } },
};
const DUPLICATE: Row = { run: false, skip: "duplicate-call-id", reason: "error" };

const SKIPPED_TEXT: { [R in SkipReason]: string } = {
  length: "Tool call was not executed because the model response was truncated.",
  error: "Tool call was not executed because the model response ended with an error.",
  aborted: "Tool call was not executed because the run was aborted.",
  "unexpected-stop": "Tool call was not executed because the model stopped without requesting tool use.",
  "duplicate-call-id": "Tool call was not executed because its message repeats a tool call id.",
};

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  return Object.assign(
    { role: "toolResult" as const },
    { toolCallId: call.id, toolName: call.name },
    { content: [text(SKIPPED_TEXT[reason])], details: { skipped: true, reason }, isError: true },
  );
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const { systemPrompt } = options.context;
  const transcript: Message[] = [].concat(options.context.messages as never[]);
  const signal = options.signal ?? AbortSignal.any([]);
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const onEvent = options.onEvent ?? null;
  const executor = options.executor ?? registryExecutor(options.tools);
  const emit = (event: LoopEvent) => {
    if (onEvent !== null) onEvent(event);
  };
  let steps = 0;
  const end = (reason: RunReason): AgentRunResult => {
    emit({ type: "turn_end", reason });
    return { reason, messages: transcript, steps };
  };

  if (signal.aborted) return end("aborted");
  while (steps < maxSteps) {
    steps += 1;
    const stream = options.model.stream(
      { systemPrompt, messages: transcript.concat(), tools: options.tools.definitions() },
      signal,
    );
    for await (const event of stream) emit({ type: "model_event", event });
    const assistant = await stream.result();
    transcript.push(assistant);
    emit({ type: "assistant_message", message: assistant });

    const calls = toolCallsOf(assistant);
    const unique = new Set(calls.map((c) => c.id)).size === calls.length;
    const row = !unique ? DUPLICATE : TABLE[assistant.stopReason][calls.length > 0 ? "some" : "none"];
    if (!row.run) {
      if (row.skip !== undefined) {
        for (const call of calls) {
          const result = skippedCall(call, row.skip);
          transcript.push(result);
          emit({ type: "tool_skipped", result });
        }
      }
      return end(row.reason!);
    }

    const running: Promise<ToolResultMessage>[] = [];
    for (const call of calls) {
      emit({ type: "tool_start", call });
      const settle = (result: ToolResultMessage) => {
        emit({ type: "tool_end", result });
        return result;
      };
      const fail = (error: unknown): ToolResultMessage =>
        settle({
          role: "toolResult",
          toolCallId: call.id,
          toolName: call.name,
          content: [text(`Tool ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`)],
          isError: true,
        });
      try {
        running.push(
          executor(call, {
            signal,
            reportProgress: (content) => emit({ type: "tool_progress", toolCallId: call.id, content }),
          }).then(settle, fail),
        );
      } catch (error) {
        running.push(Promise.resolve().then(() => fail(error)));
      }
    }
    const results: ToolResultMessage[] = [];
    for (const promise of running) results.push(await promise);
    transcript.push(...results);
    if (signal.aborted) return end("aborted");
  }
  return end("maxSteps");
}
