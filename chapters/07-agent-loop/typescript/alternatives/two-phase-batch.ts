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

// 另一种形状的正确循环：一批调用先发出全部 tool_start，再启动全部 executor，每个 context 由工厂函数生成；
// 模型事件的转发和 stream.result() 用 Promise.all 并排等待；每轮是一次带着运行状态的异步递归调用。
// A correct loop of another shape: a batch announces every tool_start first, then starts every executor,
// each with a context from a factory; forwarding the model events and awaiting stream.result() run side
// by side under Promise.all; each turn is an async recursive call carrying the run's state.

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor, type ToolContext } from "./tool.js";

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  const texts = {
    length: "Tool call was not executed because the model response was truncated.",
    error: "Tool call was not executed because the model response ended with an error.",
    aborted: "Tool call was not executed because the run was aborted.",
    "unexpected-stop": "Tool call was not executed because the model stopped without requesting tool use.",
    "duplicate-call-id": "Tool call was not executed because its message repeats a tool call id.",
  } satisfies Record<SkipReason, string>;
  const result = errorResult(call, texts[reason]);
  result.details = { skipped: true, reason };
  return result;
}

interface State {
  readonly systemPrompt: string;
  readonly transcript: Message[];
  readonly signal: AbortSignal;
  readonly maxSteps: number;
  readonly executor: ToolExecutor;
  readonly emit: (event: LoopEvent) => void;
  steps: number;
}

async function forward(stream: AsyncIterable<ModelEvent>, emit: (event: LoopEvent) => void): Promise<void> {
  for await (const event of stream) emit({ type: "model_event", event });
}

function contextFor(state: State, call: ToolCall): ToolContext {
  return {
    signal: state.signal,
    reportProgress: (content) => state.emit({ type: "tool_progress", toolCallId: call.id, content }),
  };
}

async function attempt(state: State, call: ToolCall): Promise<ToolResultMessage> {
  let result: ToolResultMessage;
  try {
    result = await state.executor(call, contextFor(state, call));
  } catch (error) {
    result = errorResult(call, `Tool ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  state.emit({ type: "tool_end", result });
  return result;
}

function closing(state: State, reason: RunReason): AgentRunResult {
  state.emit({ type: "turn_end", reason });
  return { reason, messages: state.transcript, steps: state.steps };
}

async function turn(state: State, options: AgentLoopOptions): Promise<AgentRunResult> {
  if (state.signal.aborted) return closing(state, "aborted");
  if (state.steps >= state.maxSteps) return closing(state, "maxSteps");
  state.steps += 1;
  const stream = options.model.stream(
    { systemPrompt: state.systemPrompt, messages: [...state.transcript], tools: options.tools.definitions() },
    state.signal,
  );
  const [assistant] = await Promise.all([stream.result(), forward(stream, state.emit)]);
  state.transcript.push(assistant);
  state.emit({ type: "assistant_message", message: assistant });

  const calls = toolCallsOf(assistant);
  const skip = (reason: SkipReason) => {
    for (const call of calls) {
      const result = skippedCall(call, reason);
      state.transcript.push(result);
      state.emit({ type: "tool_skipped", result });
    }
  };
  if (new Set(calls.map((c) => c.id)).size !== calls.length) {
    skip("duplicate-call-id");
    return closing(state, "error");
  }
  switch (assistant.stopReason) {
    case "stop":
      if (calls.length > 0) {
        skip("unexpected-stop");
        return closing(state, "error");
      }
      return closing(state, "stop");
    case "length":
    case "error":
    case "aborted":
      skip(assistant.stopReason);
      return closing(state, assistant.stopReason);
    case "toolUse":
      if (calls.length === 0) return closing(state, "error");
  }
  for (const call of calls) state.emit({ type: "tool_start", call });
  const results = await Promise.all(calls.map((call) => attempt(state, call)));
  state.transcript.push(...results);
  return turn(state, options);
}

export function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const state: State = {
    systemPrompt: options.context.systemPrompt,
    transcript: options.context.messages.map((m) => m),
    signal: options.signal ?? new AbortController().signal,
    maxSteps: options.maxSteps ?? DEFAULT_MAX_STEPS,
    executor: options.executor ?? registryExecutor(options.tools),
    emit: options.onEvent ?? (() => {}),
    steps: 0,
  };
  return turn(state, options);
}
