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

// 另一种形状的正确循环：循环把事件发给一个 EventEmitter，它的监听器把事件放进队列，按顺序交给 onEvent
// （投递中途又发出的事件排队等候，不会插队）；调用者的消息用 structuredClone 复制。
// A correct loop of another shape: the loop emits its events on an EventEmitter whose listener puts them
// on a queue drained in order into onEvent (an event emitted while another is being delivered waits its
// turn); the caller's messages are copied with structuredClone.

import { EventEmitter } from "node:events";

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor } from "./tool.js";

const WHY: Record<SkipReason, string> = {
  length: "the model response was truncated",
  error: "the model response ended with an error",
  aborted: "the run was aborted",
  "unexpected-stop": "the model stopped without requesting tool use",
  "duplicate-call-id": "its message repeats a tool call id",
};

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  return {
    ...errorResult(call, `Tool call was not executed because ${WHY[reason]}.`),
    details: { skipped: true, reason },
  };
}

class OrderedSink {
  readonly #queue: LoopEvent[] = [];
  #draining = false;
  constructor(private readonly deliver: (event: LoopEvent) => void) {}
  put(event: LoopEvent): void {
    this.#queue.push(event);
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#queue.length > 0) this.deliver(this.#queue.shift()!);
    } finally {
      this.#draining = false;
    }
  }
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const bus = new EventEmitter();
  const sink = new OrderedSink((event) => options.onEvent?.(event));
  bus.on("loop", (event: LoopEvent) => sink.put(event));
  const emit = (event: LoopEvent) => void bus.emit("loop", event);

  const systemPrompt = options.context.systemPrompt;
  const messages = structuredClone(options.context.messages);
  const signal = options.signal ?? new AbortController().signal;
  const limit = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const executor = options.executor ?? registryExecutor(options.tools);
  let steps = 0;

  const done = (reason: RunReason): AgentRunResult => {
    emit({ type: "turn_end", reason });
    bus.removeAllListeners();
    return { reason, messages, steps };
  };

  const runOne = async (call: ToolCall): Promise<ToolResultMessage> => {
    emit({ type: "tool_start", call });
    try {
      const result = await executor(call, {
        signal,
        reportProgress(content) {
          emit({ type: "tool_progress", toolCallId: call.id, content });
        },
      });
      emit({ type: "tool_end", result });
      return result;
    } catch (error) {
      const result = errorResult(call, `Tool ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`);
      emit({ type: "tool_end", result });
      return result;
    }
  };

  for (;;) {
    if (signal.aborted) return done("aborted");
    if (steps === limit) return done("maxSteps");
    steps++;
    const stream = options.model.stream({ systemPrompt, messages: [...messages], tools: options.tools.definitions() }, signal);
    for await (const event of stream) emit({ type: "model_event", event });
    const message = await stream.result();
    messages.push(message);
    emit({ type: "assistant_message", message });

    const calls = toolCallsOf(message);
    const seen = new Set<string>();
    const repeated = calls.some((c) => seen.size === seen.add(c.id).size);
    const skipEach = (reason: SkipReason) =>
      calls.forEach((call) => {
        const result = skippedCall(call, reason);
        messages.push(result);
        emit({ type: "tool_skipped", result });
      });
    if (repeated) {
      skipEach("duplicate-call-id");
      return done("error");
    }
    if (message.stopReason !== "toolUse") {
      if (message.stopReason === "stop") {
        if (calls.length === 0) return done("stop");
        skipEach("unexpected-stop");
        return done("error");
      }
      skipEach(message.stopReason);
      return done(message.stopReason);
    }
    if (calls.length === 0) return done("error");
    const results = await Promise.all(calls.map(runOne));
    messages.push(...results);
  }
}
