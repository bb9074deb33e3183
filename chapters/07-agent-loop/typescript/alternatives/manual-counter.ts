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

// 另一种形状的正确循环：不用 Promise.all。整批调用全部启动，每个完成时把结果放进自己的槽位、发 tool_end、
// 计数减一；计数到零时 resolve 一个手写的 Promise。
// A correct loop of another shape: no Promise.all. Every call of the batch is started; each one that
// finishes puts its result in its own slot, emits tool_end and counts down; a hand-made promise resolves
// when the count reaches zero.

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor } from "./tool.js";

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  const because = {
    length: "the model response was truncated",
    error: "the model response ended with an error",
    aborted: "the run was aborted",
    "unexpected-stop": "the model stopped without requesting tool use",
    "duplicate-call-id": "its message repeats a tool call id",
  }[reason];
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(`Tool call was not executed because ${because}.`)],
    details: { skipped: true, reason },
    isError: true,
  };
}

class Loop {
  readonly messages: Message[];
  readonly systemPrompt: string;
  readonly signal: AbortSignal;
  readonly maxSteps: number;
  readonly executor: ToolExecutor;
  steps = 0;

  constructor(readonly options: AgentLoopOptions) {
    this.messages = [...options.context.messages];
    this.systemPrompt = options.context.systemPrompt;
    this.signal = options.signal ?? new AbortController().signal;
    this.maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
    this.executor = options.executor ?? registryExecutor(options.tools);
  }

  emit(event: LoopEvent): void {
    this.options.onEvent?.(event);
  }

  async run(): Promise<AgentRunResult> {
    let reason: RunReason | undefined;
    while (reason === undefined) {
      if (this.signal.aborted) reason = "aborted";
      else if (this.steps >= this.maxSteps) reason = "maxSteps";
      else reason = await this.turn();
    }
    this.emit({ type: "turn_end", reason });
    return { reason, messages: this.messages, steps: this.steps };
  }

  // One model turn and, when it asks for tools, its batch. Returns a reason only when the run ends.
  async turn(): Promise<RunReason | undefined> {
    this.steps += 1;
    const request = { systemPrompt: this.systemPrompt, messages: [...this.messages], tools: this.options.tools.definitions() };
    const stream = this.options.model.stream(request, this.signal);
    for await (const event of stream) this.emit({ type: "model_event", event });
    const assistant = await stream.result();
    this.messages.push(assistant);
    this.emit({ type: "assistant_message", message: assistant });

    const calls = toolCallsOf(assistant);
    let skip: SkipReason | undefined;
    let reason: RunReason;
    if (assistant.stopReason === "toolUse") {
      if (calls.length === 0) return "error";
      if (new Set(calls.map((c) => c.id)).size === calls.length) {
        this.messages.push(...(await this.batch(calls)));
        return undefined;
      }
      [skip, reason] = ["duplicate-call-id", "error"];
    } else if (assistant.stopReason === "stop") {
      if (calls.length === 0) return "stop";
      [skip, reason] = ["unexpected-stop", "error"];
    } else {
      [skip, reason] = [assistant.stopReason, assistant.stopReason];
    }
    for (const call of calls) {
      const result = skippedCall(call, skip);
      this.emit({ type: "tool_skipped", result });
      this.messages.push(result);
    }
    return reason;
  }

  batch(calls: ToolCall[]): Promise<ToolResultMessage[]> {
    return new Promise((resolve) => {
      const slots: ToolResultMessage[] = new Array(calls.length);
      let remaining = calls.length;
      const settle = (index: number, result: ToolResultMessage) => {
        slots[index] = result;
        this.emit({ type: "tool_end", result });
        remaining -= 1;
        if (remaining === 0) resolve(slots);
      };
      calls.forEach((call, index) => {
        this.emit({ type: "tool_start", call });
        const fail = (error: unknown) =>
          settle(index, errorResult(call, `Tool ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`));
        try {
          const context = {
            signal: this.signal,
            reportProgress: (content: TextContent[]) => this.emit({ type: "tool_progress", toolCallId: call.id, content }),
          };
          this.executor(call, context).then((result) => settle(index, result), fail);
        } catch (error) {
          fail(error);
        }
      });
    });
  }
}

export function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  return new Loop(options).run();
}
