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

// 主循环（runAgentLoop、turns）、唯一的出口 finish() 和 runBatch 等待、写入结果的部分已经写好；每个
// TODO 是你要写的一段，消息里写着它属于哪个 Lab。可能用到：message.ts 的 toolCallsOf、text、errorResult，
// tool.ts 的 registryExecutor，Promise.all。

import { toolCallsOf } from "./message.js";

// 一条没有执行的调用的配对结果（Lab 7.3）：同 id、同 name，isError 为 true，
// details 为 { skipped: true, reason }，文本见 GUIDE.md 的表格。
export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  throw new Error(
    `TODO(Lab 7.3): 为调用 ${call.id} 写一条 skipped 结果（reason ${reason}）：同 id/name，isError: true，details { skipped: true, reason }，文本见 GUIDE.md`,
  );
}

// 进行中的一次运行。
interface Run {
  options: AgentLoopOptions;
  systemPrompt: string;
  // 本次运行自己的对话：每次请求都由它构成，每条结果都写进它。
  messages: Message[];
  // 已发出的模型请求数。
  steps: number;
  signal: AbortSignal;
  maxSteps: number;
  emit: (event: LoopEvent) => void;
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const run = startRun(options);
  return finish(run, await turns(run));
}

// 对调用者 context 的唯一一次读取。
function startRun(options: AgentLoopOptions): Run {
  throw new Error(
    "TODO(Lab 7.1): 复制一次调用者的 context（systemPrompt 和 messages 数组），之后只改这份副本；signal、maxSteps、onEvent 缺省时给默认值",
  );
}

// 一轮接一轮，直到某个边界或决策表给出结束的原因。
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
function checkBoundaries(run: Run): RunReason | undefined {
  if (run.signal.aborted || run.steps >= run.maxSteps) {
    throw new Error(
      "TODO(Lab 7.5): 请求模型前的边界：signal 已 abort 就以 aborted 结束，请求次数到了上限就以 maxSteps 结束",
    );
  }
  return undefined;
}

// 一轮模型：转发每个事件，再把最终消息（从不是 partial）追加一次。
async function request(run: Run): Promise<AssistantMessage> {
  throw new Error(
    "TODO(Lab 7.1): steps 加一，用 systemPrompt、transcript 的副本和全部工具定义请求模型；转发每个模型事件，再取 result()，追加一次并发出 assistant_message",
  );
}

// 决策表。undefined：执行这批调用，再问一次；否则运行以这个原因结束。
function decide(run: Run, assistant: AssistantMessage): RunReason | undefined {
  const calls = toolCallsOf(assistant);
  // Lab 7.6（选做）：同一条消息里重复使用的 call id 怎么处理？在这一行之前加一个分支。
  if (assistant.stopReason === "toolUse" && calls.length > 0) return undefined;
  if (assistant.stopReason === "stop" && calls.length === 0) {
    throw new Error("TODO(Lab 7.1): 纯文本 stop：这次运行正常结束");
  }
  throw new Error(
    `TODO(Lab 7.3): 非执行终态 ${assistant.stopReason}（${calls.length} 个调用）：不执行任何调用，为每个调用写入 skipped 结果并发 tool_skipped，再以对应的原因结束`,
  );
}

// 一批调用，不论一个还是多个：先启动每个调用（runCall），再等待任何一个；不论完成先后，结果按调用顺序
// 写入（Promise.all 保留输入的顺序）。
async function runBatch(run: Run, calls: ToolCall[]): Promise<void> {
  if (calls.length !== 1) {
    throw new Error(
      "TODO(Lab 7.4): 用 runCall 启动这批的每一个调用，全部启动之后才等待任何一个（只有一个调用的批次也是同一段代码，写完后下面那行的特例可以删掉）",
    );
  }
  // 只有一个调用的批次：Lab 7.4 写的代码同样适用于它。
  const results = await Promise.all([runCall(run, calls[0])]);
  run.messages.push(...results);
}

// 执行一个调用，它一完成就发 tool_end。从不 reject：executor 的同步 throw 和 rejection 都交给 failed()。
async function runCall(run: Run, call: ToolCall): Promise<ToolResultMessage> {
  throw new Error(
    "TODO(Lab 7.2): 发 tool_start，把 call 和 { signal, reportProgress } 交给 executor（没有就用内置的），在 try 里 await 它，catch 到的交给 failed(call, error)；发 tool_end，返回结果",
  );
}

// 一个调用的 executor 同步 throw 或 reject 之后成了什么（Lab 7.4）：配对到这个调用的错误结果。
// 每个调用都恰好得到一条带它 id 的结果，单独一个调用也一样。
function failed(call: ToolCall, error: unknown): ToolResultMessage {
  throw new Error(
    `TODO(Lab 7.4): 调用 ${call.id} 的 executor 失败了：写一条同 id/name 的错误结果，文本带上它的消息，不带 stack`,
  );
}

// 唯一的出口：每次运行恰好在这里发一个 turn_end。
function finish(run: Run, reason: RunReason): AgentRunResult {
  run.emit({ type: "turn_end", reason });
  return { reason, messages: run.messages, steps: run.steps };
}
