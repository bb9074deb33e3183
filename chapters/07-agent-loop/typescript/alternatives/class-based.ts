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

// 另一种形状的正确循环：一次运行是一个类的实例（class AgentRun），状态在私有字段里；调用者的消息用
// JSON.parse(JSON.stringify(...)) 复制，每次请求也给一份 JSON 副本；模型流用手动的 iterator.next() 读；
// 决策是返回裁决对象的方法，每条出路都经过同一个方法。
// A correct loop of another shape: a run is an instance of a class (class AgentRun) with its state in
// private fields; the caller's messages are copied with JSON.parse(JSON.stringify(...)), and so is each
// request's; the model stream is read with iterator.next() by hand; the decision is a method returning a
// verdict object, and every way out goes through one method.

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor } from "./tool.js";

export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  let why: string;
  switch (reason) {
    case "length":
      why = "the model response was truncated";
      break;
    case "error":
      why = "the model response ended with an error";
      break;
    case "aborted":
      why = "the run was aborted";
      break;
    case "unexpected-stop":
      why = "the model stopped without requesting tool use";
      break;
    case "duplicate-call-id":
      why = "its message repeats a tool call id";
      break;
  }
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(`Tool call was not executed because ${why}.`)],
    details: { skipped: true, reason },
    isError: true,
  };
}

type Verdict = { kind: "run"; calls: ToolCall[] } | { kind: "end"; reason: RunReason; skip?: SkipReason; calls: ToolCall[] };

class AgentRun {
  readonly #systemPrompt: string;
  readonly #transcript: Message[];
  readonly #signal: AbortSignal;
  readonly #maxSteps: number;
  readonly #executor: ToolExecutor;
  #steps = 0;
  #ended = false;

  constructor(private readonly options: AgentLoopOptions) {
    this.#systemPrompt = options.context.systemPrompt;
    this.#transcript = JSON.parse(JSON.stringify(options.context.messages)) as Message[];
    this.#signal = options.signal ?? new AbortController().signal;
    this.#maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
    this.#executor = options.executor ?? registryExecutor(options.tools);
  }

  #emit(event: LoopEvent): void {
    if (this.options.onEvent) this.options.onEvent(event);
  }

  async run(): Promise<AgentRunResult> {
    while (!this.#signal.aborted && this.#steps < this.#maxSteps) {
      const assistant = await this.#ask();
      const verdict = this.#judge(assistant);
      if (verdict.kind === "end") {
        if (verdict.skip) this.#skip(verdict.calls, verdict.skip);
        return this.#end(verdict.reason);
      }
      this.#transcript.push(...(await this.#execute(verdict.calls)));
    }
    return this.#end(this.#signal.aborted ? "aborted" : "maxSteps");
  }

  async #ask(): Promise<AssistantMessage> {
    this.#steps += 1;
    const request = {
      systemPrompt: this.#systemPrompt,
      messages: JSON.parse(JSON.stringify(this.#transcript)) as Message[],
      tools: this.options.tools.definitions(),
    };
    const stream = this.options.model.stream(request, this.#signal);
    const iterator = stream[Symbol.asyncIterator]();
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      this.#emit({ type: "model_event", event: next.value });
    }
    const assistant = await stream.result();
    this.#transcript.push(assistant);
    this.#emit({ type: "assistant_message", message: assistant });
    return assistant;
  }

  #judge(assistant: AssistantMessage): Verdict {
    const calls = toolCallsOf(assistant);
    if (new Set(calls.map((c) => c.id)).size < calls.length) {
      return { kind: "end", reason: "error", skip: "duplicate-call-id", calls };
    }
    const some = calls.length > 0;
    switch (assistant.stopReason) {
      case "toolUse":
        return some ? { kind: "run", calls } : { kind: "end", reason: "error", calls };
      case "stop":
        return some ? { kind: "end", reason: "error", skip: "unexpected-stop", calls } : { kind: "end", reason: "stop", calls };
      case "length":
      case "error":
      case "aborted":
        return { kind: "end", reason: assistant.stopReason, skip: assistant.stopReason, calls };
    }
  }

  #skip(calls: ToolCall[], reason: SkipReason): void {
    for (const call of calls) {
      const result = skippedCall(call, reason);
      this.#transcript.push(result);
      this.#emit({ type: "tool_skipped", result });
    }
  }

  #execute(calls: ToolCall[]): Promise<ToolResultMessage[]> {
    return Promise.all(calls.map((call) => this.#one(call)));
  }

  async #one(call: ToolCall): Promise<ToolResultMessage> {
    this.#emit({ type: "tool_start", call });
    const context = {
      signal: this.#signal,
      reportProgress: (content: TextContent[]) => this.#emit({ type: "tool_progress", toolCallId: call.id, content }),
    };
    let result: ToolResultMessage;
    try {
      result = await this.#executor(call, context);
    } catch (thrown) {
      const message = thrown instanceof Error ? thrown.message : String(thrown);
      result = errorResult(call, `Tool ${call.name} failed: ${message}`);
    }
    this.#emit({ type: "tool_end", result });
    return result;
  }

  #end(reason: RunReason): AgentRunResult {
    if (this.#ended) throw new Error("a run ends once");
    this.#ended = true;
    this.#emit({ type: "turn_end", reason });
    return { reason, messages: this.#transcript, steps: this.#steps };
  }
}

export function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  return new AgentRun(options).run();
}
