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

// 另一种形状的正确循环：请求照本章正文的写法构成，每次请求都读 options.context.systemPrompt；开始时只复制
// messages（本章要求复制的只有它）。
// A correct loop of another shape: the request is built as the chapter writes it, reading
// options.context.systemPrompt at every request; only the messages are copied at the start (the only
// part of the context the chapter asks to copy).

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor } from "./tool.js";

const SKIP_TEXT: Record<SkipReason, string> = {
  length: "Tool call was not executed because the model response was truncated.",
  error: "Tool call was not executed because the model response ended with an error.",
  aborted: "Tool call was not executed because the run was aborted.",
  "unexpected-stop": "Tool call was not executed because the model stopped without requesting tool use.",
  "duplicate-call-id": "Tool call was not executed because its message repeats a tool call id.",
};

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(SKIP_TEXT[reason])],
    details: { skipped: true, reason },
    isError: true,
  };
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const messages: Message[] = [...options.context.messages];
  const signal = options.signal ?? new AbortController().signal;
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const emit = options.onEvent ?? (() => {});
  const executor = options.executor ?? registryExecutor(options.tools);
  let steps = 0;
  const end = (reason: RunReason): AgentRunResult => {
    emit({ type: "turn_end", reason });
    return { reason, messages, steps };
  };
  const skipAll = (calls: ToolCall[], reason: SkipReason) => {
    for (const call of calls) {
      const result = skippedCall(call, reason);
      messages.push(result);
      emit({ type: "tool_skipped", result });
    }
  };
  for (;;) {
    if (signal.aborted) return end("aborted");
    if (steps >= maxSteps) return end("maxSteps");
    steps += 1;
    const stream = options.model.stream(
      { systemPrompt: options.context.systemPrompt, messages, tools: options.tools.definitions() },
      signal,
    );
    for await (const event of stream) emit({ type: "model_event", event });
    const assistant = await stream.result();
    messages.push(assistant);
    emit({ type: "assistant_message", message: assistant });
    const calls = toolCallsOf(assistant);
    if (new Set(calls.map((c) => c.id)).size !== calls.length) {
      skipAll(calls, "duplicate-call-id");
      return end("error");
    }
    switch (assistant.stopReason) {
      case "stop":
        if (calls.length === 0) return end("stop");
        skipAll(calls, "unexpected-stop");
        return end("error");
      case "toolUse":
        if (calls.length === 0) return end("error");
        break;
      default:
        skipAll(calls, assistant.stopReason);
        return end(assistant.stopReason);
    }
    const results = await Promise.all(
      calls.map(async (call) => {
        emit({ type: "tool_start", call });
        let result: ToolResultMessage;
        try {
          result = await executor(call, {
            signal,
            reportProgress: (content) => emit({ type: "tool_progress", toolCallId: call.id, content }),
          });
        } catch (error) {
          result = errorResult(call, `Tool ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
        emit({ type: "tool_end", result });
        return result;
      }),
    );
    messages.push(...results);
  }
}
