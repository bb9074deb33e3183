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

import { errorResult, text, toolCallsOf } from "./message.js";
import { registryExecutor, type ToolContext } from "./tool.js";

// 每个跳过原因对应的句子结尾：模型会读到它。/ The end of the sentence the model reads, per reason.
const SKIPPED_BECAUSE: Record<SkipReason, string> = {
  length: "the model response was truncated",
  error: "the model response ended with an error",
  aborted: "the run was aborted",
  "unexpected-stop": "the model stopped without requesting tool use",
  "duplicate-call-id": "its message repeats a tool call id",
};

// 一条没有执行的调用的配对结果。/ The paired result of a call that was not run.
export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(`Tool call was not executed because ${SKIPPED_BECAUSE[reason]}.`)],
    details: { skipped: true, reason },
    isError: true,
  };
}

// 进行中的一次运行。/ One run in progress.
interface Run {
  options: AgentLoopOptions;
  systemPrompt: string;
  // 本次运行自己的对话：每次请求都由它构成，每条结果都写进它。
  // The run's own conversation: every request is built from it, every result is written to it.
  messages: Message[];
  // 已发出的模型请求数。/ Model requests made so far.
  steps: number;
  signal: AbortSignal;
  maxSteps: number;
  executor: ToolExecutor;
  emit: (event: LoopEvent) => void;
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const run: Run = {
    options,
    // 对调用者 context 的唯一一次读取：复制，之后只改副本。
    // The run's one look at the caller's context: a copy; from here on only the copy changes.
    systemPrompt: options.context.systemPrompt,
    messages: [...options.context.messages],
    steps: 0,
    signal: options.signal ?? new AbortController().signal,
    maxSteps: options.maxSteps ?? DEFAULT_MAX_STEPS,
    executor: options.executor ?? registryExecutor(options.tools),
    emit: options.onEvent ?? (() => {}),
  };
  return finish(run, await turns(run));
}

// 一轮接一轮，直到某个边界或决策表给出结束的原因。
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

// 每次请求前检查；这也正是上一批结果写入之后。
// Checked before every request, which is also right after the previous batch was written.
function checkBoundaries(run: Run): RunReason | undefined {
  if (run.signal.aborted) return "aborted";
  if (run.steps >= run.maxSteps) return "maxSteps";
  return undefined;
}

// 一轮模型：转发每个事件，再把最终消息（从不是 partial）追加一次。
// One model turn: forward every event, then append the final message (never a partial) once.
async function request(run: Run): Promise<AssistantMessage> {
  run.steps += 1;
  const stream = run.options.model.stream(
    {
      systemPrompt: run.systemPrompt,
      messages: [...run.messages],
      tools: run.options.tools.definitions(),
    },
    run.signal,
  );
  for await (const event of stream) run.emit({ type: "model_event", event });
  const assistant = await stream.result();
  run.messages.push(assistant);
  run.emit({ type: "assistant_message", message: assistant });
  return assistant;
}

// 决策表。undefined：执行这批调用，再问一次；否则运行以这个原因结束。
// The decision table. undefined: run the calls and ask again; otherwise the run ends for that reason.
function decide(run: Run, assistant: AssistantMessage): RunReason | undefined {
  const calls = toolCallsOf(assistant);
  let skip: SkipReason;
  let reason: RunReason;
  switch (assistant.stopReason) {
    case "toolUse":
      // 没有可执行的，却又没结束：模型无法前进。/ Nothing to run, yet not finished: no way forward.
      if (calls.length === 0) return "error";
      if (!repeatsAnId(calls)) return undefined;
      [skip, reason] = ["duplicate-call-id", "error"];
      break;
    case "stop":
      if (calls.length === 0) return "stop";
      // 协议矛盾：不去猜模型的意思。/ A protocol contradiction: never guess what the model meant.
      [skip, reason] = ["unexpected-stop", "error"];
      break;
    // 截断的参数也可能解析成功；执行半个 write 从来都不安全。
    // Truncated arguments may still parse; running half a `write` is never safe.
    case "length":
      [skip, reason] = ["length", "length"];
      break;
    case "error":
      [skip, reason] = ["error", "error"];
      break;
    case "aborted":
      [skip, reason] = ["aborted", "aborted"];
      break;
  }
  // assistant 已经在 transcript 里，它的调用不能就这么丢掉。
  // The assistant is already in the transcript, so its calls cannot just be dropped.
  for (const call of calls) {
    const result = skippedCall(call, skip);
    run.emit({ type: "tool_skipped", result });
    run.messages.push(result);
  }
  return reason;
}

function repeatsAnId(calls: ToolCall[]): boolean {
  return new Set(calls.map((call) => call.id)).size !== calls.length;
}

// 同时启动整批调用；不论完成先后，结果按调用顺序写入（Promise.all 保留输入顺序）。
// Starts every call at once; writes the results in call order whatever order they finish in
// (Promise.all keeps the order of its input).
async function runBatch(run: Run, calls: ToolCall[]): Promise<void> {
  const results = await Promise.all(calls.map((call) => runCall(run, call)));
  run.messages.push(...results);
}

// 执行一个调用，完成时立刻发 tool_end。从不 reject：executor 的失败变成配对的错误结果。
// Runs one call and emits its tool_end the moment it finishes. Never rejects: an executor's failure
// becomes a paired error result.
async function runCall(run: Run, call: ToolCall): Promise<ToolResultMessage> {
  run.emit({ type: "tool_start", call });
  const context: ToolContext = {
    signal: run.signal,
    reportProgress: (content) => run.emit({ type: "tool_progress", toolCallId: call.id, content }),
  };
  let result: ToolResultMessage;
  try {
    // await 在 try 里面：同步 throw 和 rejection 都落到 catch。
    // The await is inside the try: a synchronous throw and a rejection both land in the catch.
    result = await run.executor(call, context);
  } catch (error) {
    result = failed(call, error);
  }
  run.emit({ type: "tool_end", result });
  return result;
}

// 只取消息，不要 stack：错误文本给模型看。/ The message only, never the stack: the model reads this text.
function failed(call: ToolCall, error: unknown): ToolResultMessage {
  const message = error instanceof Error ? error.message : String(error);
  return errorResult(call, `Tool ${call.name} failed: ${message}`);
}

// 唯一的出口：每次运行恰好在这里发一个 turn_end。
// The single exit: every run emits exactly one turn_end, here.
function finish(run: Run, reason: RunReason): AgentRunResult {
  run.emit({ type: "turn_end", reason });
  return { reason, messages: run.messages, steps: run.steps };
}
