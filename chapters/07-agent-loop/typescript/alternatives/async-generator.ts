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

// 另一种形状的正确循环：整个运行写成一个事件的 async generator，runAgentLoop 只负责把事件交给 onEvent，
// 最后拿到 generator 的返回值。一批调用的事件来自回调，先进一个队列，generator 按到达顺序 yield。
// A correct loop of another shape: the whole run is an async generator of events; runAgentLoop only hands
// each event to onEvent and takes the generator's return value at the end. A batch's events come from
// callbacks, so they go through a queue that the generator yields in order of arrival.

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor } from "./tool.js";

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  const because: Record<SkipReason, string> = {
    length: "the model response was truncated",
    error: "the model response ended with an error",
    aborted: "the run was aborted",
    "unexpected-stop": "the model stopped without requesting tool use",
    "duplicate-call-id": "its message repeats a tool call id",
  };
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(`Tool call was not executed because ${because[reason]}.`)],
    details: { skipped: true, reason },
    isError: true,
  };
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const events = agentEvents(options);
  for (;;) {
    const next = await events.next();
    if (next.done) return next.value;
    options.onEvent?.(next.value);
  }
}

async function* agentEvents(options: AgentLoopOptions): AsyncGenerator<LoopEvent, AgentRunResult, void> {
  const signal = options.signal ?? new AbortController().signal;
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const executor = options.executor ?? registryExecutor(options.tools);
  const systemPrompt = options.context.systemPrompt;
  const messages: Message[] = [...options.context.messages];
  let steps = 0;
  let reason: RunReason;
  for (;;) {
    if (signal.aborted) {
      reason = "aborted";
      break;
    }
    if (steps >= maxSteps) {
      reason = "maxSteps";
      break;
    }
    steps += 1;
    const stream = options.model.stream(
      { systemPrompt, messages: [...messages], tools: options.tools.definitions() },
      signal,
    );
    for await (const event of stream) yield { type: "model_event", event };
    const assistant = await stream.result();
    messages.push(assistant);
    yield { type: "assistant_message", message: assistant };

    const calls = toolCallsOf(assistant);
    const ending = decision(assistant, calls);
    if (ending === undefined) {
      messages.push(...(yield* batch(calls, executor, signal)));
      continue;
    }
    for (const call of ending.skip === undefined ? [] : calls) {
      const result = skippedCall(call, ending.skip!);
      messages.push(result);
      yield { type: "tool_skipped", result };
    }
    reason = ending.reason;
    break;
  }
  yield { type: "turn_end", reason };
  return { reason, messages, steps };
}

// The decision table: undefined runs the batch; otherwise the run ends, skipping the calls if `skip`.
function decision(assistant: AssistantMessage, calls: ToolCall[]): { skip?: SkipReason; reason: RunReason } | undefined {
  switch (assistant.stopReason) {
    case "toolUse":
      if (calls.length === 0) return { reason: "error" };
      return new Set(calls.map((c) => c.id)).size === calls.length ? undefined : { skip: "duplicate-call-id", reason: "error" };
    case "stop":
      return calls.length === 0 ? { reason: "stop" } : { skip: "unexpected-stop", reason: "error" };
    default:
      return { skip: assistant.stopReason, reason: assistant.stopReason };
  }
}

// Starts every call, yields each event as it arrives, returns the results in call order.
async function* batch(
  calls: ToolCall[],
  executor: ToolExecutor,
  signal: AbortSignal,
): AsyncGenerator<LoopEvent, ToolResultMessage[], void> {
  const queue: LoopEvent[] = [];
  let wake: (() => void) | undefined;
  const push = (event: LoopEvent) => {
    queue.push(event);
    wake?.();
    wake = undefined;
  };
  let remaining = calls.length;
  const results = calls.map(async (call) => {
    push({ type: "tool_start", call });
    const reportProgress = (content: TextContent[]) => push({ type: "tool_progress", toolCallId: call.id, content });
    let result: ToolResultMessage;
    try {
      result = await executor(call, { signal, reportProgress });
    } catch (error) {
      result = errorResult(call, `Tool ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    remaining -= 1;
    push({ type: "tool_end", result });
    return result;
  });
  while (remaining > 0 || queue.length > 0) {
    if (queue.length > 0) yield queue.shift()!;
    else await new Promise<void>((resolve) => (wake = resolve));
  }
  return Promise.all(results);
}
