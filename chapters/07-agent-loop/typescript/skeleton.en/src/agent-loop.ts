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

// The main loop (runAgentLoop, turns) and the single exit finish() are written; each TODO is a piece
// for you to write, and its message names its Lab. You may need: toolCallsOf, text and errorResult
// from message.ts, registryExecutor from tool.ts, Promise.all.

import { toolCallsOf } from "./message.js";

// The paired result of a call that was not run (Lab 7.3): same id and name, isError true, details
// { skipped: true, reason }; the texts are in the table of GUIDE.en.md.
export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  throw new Error(
    `TODO(Lab 7.3): write a skipped result for call ${call.id} (reason ${reason}): same id/name, isError: true, details { skipped: true, reason }, text from GUIDE.en.md`,
  );
}

// One run in progress.
interface Run {
  options: AgentLoopOptions;
  systemPrompt: string;
  // The run's own conversation: every request is built from it, every result is written to it.
  messages: Message[];
  // Model requests made so far.
  steps: number;
  signal: AbortSignal;
  maxSteps: number;
  emit: (event: LoopEvent) => void;
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const run = startRun(options);
  return finish(run, await turns(run));
}

// The run's one look at the caller's context.
function startRun(options: AgentLoopOptions): Run {
  throw new Error(
    "TODO(Lab 7.1): copy the caller's context once (systemPrompt and the messages array) and from then on change only that copy; give signal, maxSteps and onEvent their defaults when absent",
  );
}

// Turn after turn, until a boundary or the decision table gives a reason to end.
async function turns(run: Run): Promise<RunReason> {
  for (;;) {
    const boundary = checkBoundaries(run);
    if (boundary !== undefined) return boundary;
    const assistant = await request(run);
    const end = decide(run, assistant);
    if (end !== undefined) return end;
    await runBatch(run, toolCallsOf(assistant));
  }
}

// Checked before every request, which is also right after the previous batch was written.
function checkBoundaries(run: Run): RunReason | undefined {
  if (run.signal.aborted || run.steps >= run.maxSteps) {
    throw new Error(
      "TODO(Lab 7.5): the boundary before a request: end aborted if the signal is aborted, end maxSteps if the request limit is reached",
    );
  }
  return undefined;
}

// One model turn: forward every event, then append the final message (never a partial) once.
async function request(run: Run): Promise<AssistantMessage> {
  throw new Error(
    "TODO(Lab 7.1): add one to steps and request the model with the systemPrompt, a copy of the transcript and every tool definition; forward each model event, then take result(), append it once and emit assistant_message",
  );
}

// The decision table. undefined: run the calls and ask again; otherwise the run ends for that reason.
function decide(run: Run, assistant: AssistantMessage): RunReason | undefined {
  const calls = toolCallsOf(assistant);
  // Lab 7.6 (optional): a call id used twice in one message? Add a branch before this line.
  if (assistant.stopReason === "toolUse" && calls.length > 0) return undefined;
  if (assistant.stopReason === "stop" && calls.length === 0) {
    throw new Error("TODO(Lab 7.1): a plain-text stop: this run ends normally");
  }
  throw new Error(
    `TODO(Lab 7.3): non-executing terminal state ${assistant.stopReason} (${calls.length} calls): run none of them, write a skipped result and emit tool_skipped for each call, then end with the matching reason`,
  );
}

// Starts every call at once; writes the results in call order, whatever order they finish in.
async function runBatch(run: Run, calls: ToolCall[]): Promise<void> {
  if (calls.length > 1) {
    throw new Error(
      "TODO(Lab 7.4): start the whole batch at once (an executor's rejection and synchronous throw both become paired error results), emit tool_end as each call finishes, then write the results in call order",
    );
  }
  throw new Error(
    "TODO(Lab 7.2): emit tool_start, hand the call and { signal, reportProgress } to the executor (the built-in one if none is given), emit tool_end, then write the result to the transcript",
  );
}

// The single exit: every run emits exactly one turn_end, here.
function finish(run: Run, reason: RunReason): AgentRunResult {
  run.emit({ type: "turn_end", reason });
  return { reason, messages: run.messages, steps: run.steps };
}
