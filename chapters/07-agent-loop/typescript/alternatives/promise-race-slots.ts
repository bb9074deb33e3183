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

// 另一种形状的正确循环：transcript 用 messages.slice() 复制；一批调用的结果按下标写进预先分配好长度的数组，
// 用 Promise.race 轮流等还没完成的调用，谁先完成谁先发 tool_end。
// A correct loop of another shape: the transcript is copied with messages.slice(); a batch's results go
// into a pre-sized array by index, and Promise.race over the calls still pending drives completion, each
// tool_end emitted as its call wins the race.

import { text, toolCallsOf } from "./message.js";
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

function failed(call: ToolCall, error: unknown): ToolResultMessage {
  const message = error instanceof Error ? error.message : String(error);
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text: `Tool ${call.name} failed: ${message}` }],
    isError: true,
  };
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const systemPrompt = options.context.systemPrompt;
  const messages = options.context.messages.slice();
  const signal = options.signal ?? new AbortController().signal;
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const emit = (event: LoopEvent) => options.onEvent?.(event);
  const executor = options.executor ?? registryExecutor(options.tools);
  let steps = 0;
  let reason: RunReason | undefined;

  while (reason === undefined) {
    if (signal.aborted) {
      reason = "aborted";
      break;
    }
    if (steps >= maxSteps) {
      reason = "maxSteps";
      break;
    }
    steps++;
    const stream = options.model.stream(
      { systemPrompt, messages: messages.slice(), tools: options.tools.definitions() },
      signal,
    );
    for await (const event of stream) emit({ type: "model_event", event });
    const assistant = await stream.result();
    messages.push(assistant);
    emit({ type: "assistant_message", message: assistant });

    const calls = toolCallsOf(assistant);
    const ids = calls.map((c) => c.id);
    let skip: SkipReason | undefined;
    if (ids.some((id, i) => ids.indexOf(id) !== i)) {
      skip = "duplicate-call-id";
      reason = "error";
    } else if (assistant.stopReason === "toolUse") {
      if (calls.length === 0) reason = "error";
    } else if (assistant.stopReason === "stop") {
      reason = calls.length === 0 ? "stop" : "error";
      skip = "unexpected-stop";
    } else {
      reason = assistant.stopReason;
      skip = assistant.stopReason;
    }
    if (reason !== undefined) {
      if (skip !== undefined) {
        for (const call of calls) {
          const result = skippedCall(call, skip);
          messages.push(result);
          emit({ type: "tool_skipped", result });
        }
      }
      break;
    }

    const results: ToolResultMessage[] = new Array(calls.length);
    const pending = new Map<number, Promise<[number, ToolResultMessage]>>();
    calls.forEach((call, index) => {
      emit({ type: "tool_start", call });
      let promise: Promise<ToolResultMessage>;
      try {
        promise = executor(call, {
          signal,
          reportProgress: (content) => emit({ type: "tool_progress", toolCallId: call.id, content }),
        });
      } catch (error) {
        promise = Promise.reject(error);
      }
      pending.set(
        index,
        promise.then(
          (result): [number, ToolResultMessage] => [index, result],
          (error: unknown): [number, ToolResultMessage] => [index, failed(call, error)],
        ),
      );
    });
    while (pending.size > 0) {
      const [index, result] = await Promise.race(pending.values());
      pending.delete(index);
      results[index] = result;
      emit({ type: "tool_end", result });
    }
    for (const result of results) messages.push(result);
  }
  emit({ type: "turn_end", reason });
  return { reason, messages, steps };
}
