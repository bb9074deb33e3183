// 第 07 章测试的共用工具，这里没有测试。/ Shared helpers for the chapter 07 tests; nothing here is a test.
//
// - setup() 准备一次运行：ScriptedModel、调用者的 context、记录每个事件的 onEvent，以及 run()：有界的运行器。
//   setup() prepares a run: a ScriptedModel, the caller's context, an onEvent that records every event,
//   and run(), the bounded runner.
// - Bench 是注入的 executor，由 gate（手动 resolve 的 Promise）驱动：被 gate 住的调用等测试放行。
//   Bench is an injected executor driven by gates (promises the test resolves by hand).
// - countingTools() 是只计数、不写文件的 registry 工具。/ countingTools(): registry tools that only count.
// - msg() 用学习者的语言写失败信息。/ msg() writes a failure message in the learner's language.
//
// 卡住的循环怎么发现 / How a hung loop is caught
//
// 循环可能做的每一步都经过这个文件：事件到达 Recorder、请求到达模型、调用进入或离开 Bench 或计数工具、
// 测试放行一个 gate。每一步都记一次进展（tick）。一次运行约 1.2 秒没有任何进展才算卡住；测试等待某个
// 预期的步骤时，约 1 秒没有进展就带着自己的说明失败。正确的循环两步之间只要几微秒，所以结论从不依赖
// 时间运气；测试内部的先后顺序一律用显式的 gate 证明，不用定时器。
// Every step a loop can take passes through this file: an event reaches the Recorder, a request reaches
// the model, a call enters or leaves the Bench or a counting tool, the test releases a gate. Each one
// ticks the run's progress. A run counts as hung only after about 1.2 s without any progress; a test
// waiting for one expected step gives up after about 1 s without progress, with its own message. A
// correct loop takes microseconds between two steps, so no verdict depends on timing luck; the order
// of steps inside a test is proven with explicit gates, never with timers.

import { AsyncLocalStorage } from "node:async_hooks";
import * as nodeTest from "node:test";
import { inspect, isDeepStrictEqual } from "node:util";

import type {
  AgentContext,
  AgentLoopOptions,
  AgentRunResult,
  LoopEvent,
  RunReason,
} from "../src/agent-loop.js";
import { EventStream } from "../src/event-stream.js";
import {
  text,
  toolCall,
  userMessage,
  type AssistantMessage,
  type Message,
  type StopReason,
  type TextContent,
  type ToolCall,
  type ToolResultMessage,
} from "../src/message.js";
import type { Model, ModelEvent, ModelRequest } from "../src/model.js";
import { eventsFor, ScriptedModel } from "../src/scripted-model.js";
import { ToolRegistry, type ToolContext, type ToolExecutor } from "../src/tool.js";

// 学习者的循环在测试运行时才加载，测试文件加载时从不加载：评分时，所有测试在任何学习者代码运行之前就已登记、
// 封存。下面这些全局函数也在那之前取好，之后学习者代码对全局对象做的任何改动都影响不到测试。
// The learner's loop is loaded when a test runs, never while the test files load: graded, every test is
// registered and sealed before any learner code runs. The globals below are taken before that too, so
// nothing the learner's code later does to the global object changes what the tests see.
const { structuredClone, setTimeout, clearTimeout } = globalThis;
let learnerModule: Promise<typeof import("../src/agent-loop.js")> | undefined;
function learnerLoop(): Promise<typeof import("../src/agent-loop.js")> {
  learnerModule ??= import("../src/agent-loop.js");
  return learnerModule;
}

// 公共表面的 DEFAULT_MAX_STEPS，在测试运行时才从学习者的模块取。
// The public surface's DEFAULT_MAX_STEPS, taken from the learner's module only when a test runs.
export async function defaultMaxSteps(): Promise<number> {
  return (await learnerLoop()).DEFAULT_MAX_STEPS;
}

// ---------------------------------------------------------------------------------------------
// 注册测试 / Registering tests
// ---------------------------------------------------------------------------------------------

export type TestBody = () => void | Promise<void>;

// 由 pi-course 评分时，测试登记到它的 harness 而不是 node:test（它在任何测试文件加载之前，把这个 symbol
// 定义在 globalThis 上，不可写）。手动运行时由 node:test 执行。
// Graded by pi-course, tests register with its harness instead of node:test (it defines this symbol on
// globalThis, non-writable, before any test file loads). By hand, node:test runs them.
const graded = (globalThis as Record<symbol, unknown>)[Symbol.for("pi-course.test")] as
  | ((name: string, body: TestBody) => void)
  | undefined;

// 正在运行的测试名：失败信息据此说出它属于哪个 Lab，测试并发运行时也不会串。
// The running test's name, so a failure can say which Lab it belongs to, even if tests run concurrently.
const running = new AsyncLocalStorage<string>();

export function test(name: string, body: TestBody): void {
  const withName: TestBody = () => running.run(name, body);
  if (graded) graded(name, withName);
  else nodeTest.test(name, withName);
}

// ---------------------------------------------------------------------------------------------
// 学习者的语言 / The learner's language
// ---------------------------------------------------------------------------------------------

// pi-course grade 为每个测试把 PI_COURSE_LANG 设为 zh 或 en；手动运行不设，两种都给，中文在前。
// `pi-course grade` sets PI_COURSE_LANG to zh or en; by hand it is unset and both come, Chinese first.
type Lang = "zh" | "en" | "both";

function lang(): Lang {
  const value = (process.env["PI_COURSE_LANG"] ?? "").toLowerCase();
  if (value.startsWith("en")) return "en";
  if (value.startsWith("zh")) return "zh";
  return "both";
}

// 一条学习者语言的信息：中文、英文，或两者（短的用 " / " 连接，长的英文另起一行）。
// One message in the learner's language: zh, en, or both (" / " between short ones, en on a line of
// its own when either is long).
export function msg(zh: string, en: string): string {
  switch (lang()) {
    case "zh":
      return zh;
    case "en":
      return en;
    case "both":
      return zh.includes("\n") || [...zh].length + [...en].length > 100 ? `${zh}\n  ${en}` : `${zh} / ${en}`;
  }
}

const GROUPS = [
  { slug: "plain-stop", lab: "7.1", zh: "纯文本 stop", en: "plain-text stop" },
  { slug: "single-tool", lab: "7.2", zh: "单工具往返", en: "single tool round trip" },
  { slug: "non-executing", lab: "7.3", zh: "非执行终态", en: "non-executing terminal states" },
  { slug: "concurrent-tools", lab: "7.4", zh: "并发工具", en: "concurrent tools" },
  { slug: "cancel-and-limits", lab: "7.5", zh: "取消与上限", en: "cancellation and limits" },
  { slug: "duplicate-call-ids", lab: "7.6", zh: "重复 call id", en: "duplicate call ids" },
];

// 测试名以组的中文名开头："纯文本 stop › ..."。/ A test's name starts with its group's Chinese name.
function runningGroup() {
  const name = running.getStore() ?? "";
  return GROUPS.find((group) => name.startsWith(`${group.zh} ›`));
}

// "[Lab 7.3 非执行终态]"：每条失败信息的开头。/ The head of every failure message.
function labTag(): string {
  const group = runningGroup();
  if (group === undefined) return "";
  const both = `${group.zh} / ${group.en}`;
  return `[Lab ${group.lab} ${lang() === "zh" ? group.zh : lang() === "en" ? group.en : both}] `;
}

// ---------------------------------------------------------------------------------------------
// 断言 / Assertions
// ---------------------------------------------------------------------------------------------

export class TestFailure extends Error {
  constructor(message: string) {
    super(labTag() + message);
    this.name = "TestFailure";
  }
}

export function fail(message: string): never {
  throw new TestFailure(message);
}

export function show(value: unknown): string {
  const shown = inspect(value, { depth: 8, breakLength: 110, maxArrayLength: 60, maxStringLength: 400 });
  return shown.replaceAll("\n", "\n      ");
}

// 深度相等，否则失败：信息先说规则，再给期望值和实际值。
// Deep equality, or a failure that states the rule, then what was expected and what happened.
export function expectEqual<T>(actual: T, expected: T, rule: string): void {
  if (!isDeepStrictEqual(actual, expected)) {
    fail(`${rule}\n    ${msg("期望", "expected")}: ${show(expected)}\n    ${msg("实际", "actual")}: ${show(actual)}`);
  }
}

export function expectTrue(condition: boolean, rule: string): asserts condition {
  if (!condition) fail(rule);
}

// ---------------------------------------------------------------------------------------------
// 进展：如何区分卡住的循环和正在工作的循环（见文件开头）
// Progress: how a hung loop is told from a working one (see the top of this file)
// ---------------------------------------------------------------------------------------------

// 测试等待一个预期步骤的时长（期间没有任何进展）。/ How long a test waits for one expected step, without progress.
const STEP_QUIET_MS = 1000;
// 一次运行没有任何进展多久算卡住。/ How long a run may go without any progress before it counts as hung.
const RUN_QUIET_MS = 1200;
// 比任何测试的脚本都多：到这里的循环自己停不下来。/ More than any script needs: a loop that gets here never ends.
const REQUEST_LIMIT = 100;
const EVENT_LIMIT = 5000;

export class Progress {
  #last = performance.now();
  #listeners = new Set<() => void>();
  #timers = new Set<NodeJS.Timeout>();
  #runaway: ((message: string) => void) | undefined;
  // 运行必须立刻结束时带着说明 resolve：循环停不下来（请求或事件太多），或给模型的请求不成形。
  // Resolves with a message when the run must end at once: the loop never ends (too many requests or
  // events), or it sent the model a malformed request.
  readonly runaway = new Promise<string>((resolve) => {
    this.#runaway = resolve;
  });

  // 发生了一件事：事件、请求、工具动作、放行 gate。/ Something happened: an event, a request, a tool step, a gate.
  tick(): void {
    this.#last = performance.now();
    for (const listener of [...this.#listeners]) listener();
  }

  runawayWith(message: string): void {
    this.#runaway?.(message);
  }

  // predicate 成立时 resolve；连续 quietMs 没有进展则以 stalled() 的信息 reject。
  // Resolves once `predicate` holds; rejects with stalled()'s message after quietMs without progress.
  until(predicate: () => boolean, quietMs: number, stalled: () => string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (predicate()) return resolve();
      let timer: NodeJS.Timeout;
      const stop = () => {
        this.#listeners.delete(listener);
        clearTimeout(timer);
        this.#timers.delete(timer);
      };
      const listener = () => {
        if (predicate()) {
          stop();
          resolve();
        }
      };
      const check = () => {
        this.#timers.delete(timer);
        const idle = performance.now() - this.#last;
        if (idle >= quietMs) {
          stop();
          reject(new TestFailure(stalled()));
        } else {
          timer = setTimeout(check, Math.max(1, quietMs - idle));
          this.#timers.add(timer);
        }
      };
      this.#listeners.add(listener);
      timer = setTimeout(check, quietMs);
      this.#timers.add(timer);
    });
  }

  // 运行结束：清掉所有计时器，进程可以立刻退出。/ The run is over: clear every timer so the process can exit.
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#listeners.clear();
  }
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}

// ---------------------------------------------------------------------------------------------
// 构造消息 / Builders
// ---------------------------------------------------------------------------------------------

export const SYSTEM_PROMPT = "You are a careful coding agent (test system prompt).";

// 运行前调用者的对话：一段以用户请求结尾的短历史。每次调用都是新对象。
// The caller's conversation before the run: a short history ending with the user's request. Fresh each call.
export function callerMessages(): Message[] {
  return [userMessage("hello"), textReply("Hi! What should I do?"), userMessage("list the files")];
}

export function call(id: string, name: string, args: unknown): ToolCall {
  return toolCall(id, name, args);
}

// 对 registry 工具 echo 的调用，参数合法。/ A call to the registry tool `echo`, valid arguments.
export function echo(id: string): ToolCall {
  return call(id, "echo", { text: id });
}

export function textReply(value: string): AssistantMessage {
  return { role: "assistant", content: [text(value)], stopReason: "stop" };
}

// stopReason 给定、content 就是这些调用的最终消息。/ A final message of these calls with this stop reason.
export function withCalls(stopReason: StopReason, calls: ToolCall[]): AssistantMessage {
  const message: AssistantMessage = { role: "assistant", content: [...calls], stopReason };
  if (stopReason === "error") message.errorMessage = "provider error (scripted)";
  return message;
}

export function toolUse(calls: ToolCall[]): AssistantMessage {
  return withCalls("toolUse", calls);
}

// 行为正常的 executor 对 call 返回的结果。/ The result a well-behaved executor returns for `call`.
export function okResult(call: ToolCall, details: unknown): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(`${call.id} done`)],
    details,
    isError: false,
  };
}

// Bench 每条正常结果带的 details。/ The details Bench returns with every normal result.
export function benchDetails(id: string): unknown {
  return { call: id, lines: [1, 2, 3] };
}

// 本章规定的、不得执行的调用的跳过结果。/ The skipped result the chapter prescribes for a call that must not run.
export function skipped(call: ToolCall, reason: string, body: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(body)],
    details: { skipped: true, reason },
    isError: true,
  };
}

// 每条消息的角色，例如 ["user", "assistant", "toolResult(call-1)"]。
// The role of each message, e.g. ["user", "assistant", "toolResult(call-1)"].
export function roles(messages: readonly Message[]): string[] {
  return messages.map((m) => (m?.role === "toolResult" ? `toolResult(${m.toolCallId})` : String(m?.role)));
}

// messages 中回答 id 的那条结果。/ The tool result answering `id` in `messages`, if any.
export function resultFor(messages: readonly Message[], id: string): ToolResultMessage | undefined {
  return messages.find((m): m is ToolResultMessage => m?.role === "toolResult" && m.toolCallId === id);
}

// ScriptedModel 为 message 流出的模型事件（循环必须转发的）。
// The kinds of the model events a ScriptedModel streams for `message` (what the loop must forward).
export function streamedKinds(message: AssistantMessage): string[] {
  return eventsFor(message).map((event) => `model_event(${event.type})`);
}

// ---------------------------------------------------------------------------------------------
// 事件记录 / Event recording
// ---------------------------------------------------------------------------------------------

// 事件的短名，例如 model_event(start)、tool_end(call-1)、turn_end(stop)。
// A short name for an event, e.g. model_event(start), tool_end(call-1), turn_end(stop).
export function kind(event: LoopEvent): string {
  const e = event as Partial<Record<string, any>>;
  switch (e?.["type"]) {
    case "model_event":
      return `model_event(${e["event"]?.type})`;
    case "assistant_message":
      return "assistant_message";
    case "tool_start":
      return `tool_start(${e["call"]?.id})`;
    case "tool_progress":
      return `tool_progress(${e["toolCallId"]})`;
    case "tool_end":
      return `tool_end(${e["result"]?.toolCallId})`;
    case "tool_skipped":
      return `tool_skipped(${e["result"]?.toolCallId})`;
    case "turn_end":
      return `turn_end(${e["reason"]})`;
    default:
      return `?(${show(event)})`;
  }
}

function copy<T>(value: T): T {
  try {
    return structuredClone(value);
  } catch {
    return value;
  }
}

// 按发出顺序保存每个事件（发出时的副本）。/ Keeps every event in the order emitted (a copy as it was then).
export class Recorder {
  readonly events: LoopEvent[] = [];

  constructor(private readonly progress: Progress) {}

  readonly sink = (event: LoopEvent): void => {
    this.events.push(copy(event));
    const count = this.events.length;
    if (count > EVENT_LIMIT) {
      const message = msg(`循环已发出 ${count} 个事件，停不下来`, `the loop emitted ${count} events and never ends`);
      this.progress.runawayWith(message);
      throw new Error(message);
    }
    this.progress.tick();
  };

  kinds(): string[] {
    return this.events.map(kind);
  }

  // 失败信息里的事件：全部，或长运行的最后 24 个。/ The events for a failure message: all, or the last 24.
  summary(): string {
    const kinds = this.kinds();
    if (kinds.length <= 24) return show(kinds);
    return msg(`（共 ${kinds.length} 个，最后 24 个）`, `(last 24 of ${kinds.length}) `) + show(kinds.slice(-24));
  }

  count(prefix: string): number {
    return this.kinds().filter((k) => k.startsWith(prefix)).length;
  }

  assistantMessages(): AssistantMessage[] {
    return this.events.flatMap((e) => (e.type === "assistant_message" ? [e.message] : []));
  }

  startedCalls(): ToolCall[] {
    return this.events.flatMap((e) => (e.type === "tool_start" ? [e.call] : []));
  }

  // tool_end（skipped 为 true 时是 tool_skipped）事件携带的结果。/ The results of tool_end (or tool_skipped) events.
  results(skippedOnes: boolean): ToolResultMessage[] {
    const wanted = skippedOnes ? "tool_skipped" : "tool_end";
    return this.events.flatMap((e) => (e.type === wanted ? [e.result] : []));
  }

  progressReports(): [string, TextContent[]][] {
    return this.events.flatMap((e) => (e.type === "tool_progress" ? [[e.toolCallId, e.content]] : []));
  }

  // 等到发出这种事件；循环先停止进展则带着 why 失败。/ Waits for an event of this kind; fails with `why` on a stall.
  waitFor(wanted: string, why: string): Promise<void> {
    return this.progress.until(
      () => this.kinds().includes(wanted),
      STEP_QUIET_MS,
      () =>
        `${msg(
          `等待事件 ${wanted} 超时：${seconds(STEP_QUIET_MS)} 秒内循环没有任何进展`,
          `timed out waiting for event ${wanted}: the loop made no progress for ${seconds(STEP_QUIET_MS)} s`,
        )}\n  ${why}\n  ${msg("已发生的事件", "events so far")}: ${this.summary()}`,
    );
  }
}

// 最后一个事件是 last 的循环最可能在等什么（运行卡住时用）。
// Where a loop whose last event is `last` most likely waits (used when a run hangs).
function hangHint(last: string | undefined): string {
  if (last === undefined) {
    return msg(
      "第一次模型请求之前或之中：是否在等一个不会到来的东西（例如没有 end 的流、从不 resolve 的 Promise）？",
      "before or inside the first model request: waiting for something that never comes (a promise that never resolves?)",
    );
  }
  if (last.startsWith("model_event(done") || last.startsWith("model_event(error")) {
    return msg(
      "模型流已结束：是否在等 stream.result()，或在流结束后还在读事件？",
      "the model stream ended: waiting for its result, or reading events past the end?",
    );
  }
  if (last.startsWith("model_event")) return msg("正在读取模型流", "reading the model stream");
  if (last.startsWith("tool_start") || last.startsWith("tool_progress")) {
    return msg(
      "在等一个工具：它在等测试放行，或工具被逐个 await、后面的调用从未启动",
      "waiting for a tool (one the test has not released, or tools awaited one by one so later calls never started)",
    );
  }
  if (last.startsWith("tool_end")) {
    return msg("一个工具结束后：在等同一批的其他调用？", "after a tool ended: waiting for the rest of the batch?");
  }
  if (last.startsWith("turn_end")) return msg("turn_end 之后应立即返回", "after turn_end the loop should return at once");
  return msg(
    "处理最终 assistant 消息时（决策表，或一批调用发出 tool_start 之前）",
    "after the final message: in the decision table, or before a batch's tool_start",
  );
}

// ---------------------------------------------------------------------------------------------
// 只计数的 registry 工具 / Registry tools that only count
// ---------------------------------------------------------------------------------------------

export interface Counter {
  count: number;
}

export function fakeToolParameters(): Record<string, unknown> {
  return { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
}

// 含 write 和 echo 的 registry（按这个顺序注册，不是字母序：请求里的定义要保持注册顺序），两者都只给 runs 加一：
// 不写文件，不启动进程。
// A registry holding `write` and `echo` (registered in that order, not alphabetical: a request keeps the
// registration order), both only counting into `runs`: no file written, no process started.
export function countingTools(progress: Progress, runs: Counter = { count: 0 }): ToolRegistry {
  const registry = new ToolRegistry();
  for (const name of ["write", "echo"]) {
    registry.register({
      definition: {
        name,
        description: `${name} (test tool: only counts executions)`,
        parameters: fakeToolParameters(),
      },
      async execute(args: unknown, context: ToolContext) {
        runs.count += 1;
        progress.tick();
        context.reportProgress([text("halfway")]);
        const value = String((args as { text?: unknown }).text ?? "");
        return { content: [text(`echo: ${value}`)], details: { echoed: value, bytes: value.length } };
      },
    });
  }
  return registry;
}

// ---------------------------------------------------------------------------------------------
// 由 gate 驱动的注入 executor / An injected executor driven by gates
// ---------------------------------------------------------------------------------------------

// 只在调试形式里出现、绝不能进入结果的标记。/ A marker that lives only in debug detail, never in a result.
export const DEBUG_MARKER = "DEBUG-ONLY-DETAIL";
export const THROW_MARKER = "deliberate test throw";
// crash 工具抛出的 Error 的 message。/ The message of the Error the `crash` tool throws.
export const CRASH_TEXT = `kaboom (${THROW_MARKER})`;

// explode 工具 reject 的错误：message 可以进入结果，其余属性（和 stack）不可以。
// The error the `explode` tool rejects with: its message may reach a result, its other properties
// (and its stack) may not.
export class DiskFull extends Error {
  readonly device = "/dev/sda1";
  readonly note = DEBUG_MARKER;
  constructor() {
    super("disk full");
    this.name = "DiskFull";
  }
}

// report 工具报告的进度：两个文本块，循环要原样转发（不合并，不截取）。
// The progress the `report` tool reports: two text blocks, which the loop forwards as they are (neither
// joined nor cut).
export function progressReport(): TextContent[] {
  return [text("step 1 of 2: "), text("reading a.ts")];
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

// 按调用的工具名决定行为的注入 executor。被 gate 住的 id 先等测试 release(id)，然后：
// An injected executor whose behaviour is chosen by the call's tool name. A gated id first waits until the
// test calls release(id), then:
//   explode:     reject，DiskFull（message "disk full"）/ rejects with DiskFull (message "disk full");
//   crash:       未被 gate 时同步 throw new Error(CRASH_TEXT)，不返回 Promise；被 gate 时放行后 reject 同一个错误
//                / not gated: throws Error(CRASH_TEXT) synchronously, no promise returned; gated: rejects with it;
//   crash_value: reject 一个不是 Error 的值（字符串）/ rejects with a value that is not an Error (a string);
//   report:      先报告一次进度（两个文本块），再等 gate（若有），然后正常返回；测试可以在它完成之前看到进度
//                / reports progress once (two text blocks) before waiting at its gate (if any), then returns
//                normally, so a test can see the progress before the call finishes;
//   cancel_run:  abort 本次运行的 controller 再正常返回 / aborts the run's controller, then returns normally;
//   其他 / other: 正常结果 okResult(call, benchDetails(id)) / a normal result.
export class Bench {
  readonly #gates = new Map<string, Deferred>();
  // 进入 executor 的调用 id，按进入顺序。/ Call ids in the order the executor was entered.
  readonly started: string[] = [];
  // 每次执行收到的 call 和 context。/ The call and context of every execution.
  readonly calls: ToolCall[] = [];
  readonly contexts: ToolContext[] = [];

  constructor(
    private readonly progress: Progress,
    gatedIds: readonly string[],
    private readonly controller: AbortController,
  ) {
    for (const id of gatedIds) this.#gates.set(id, deferred());
  }

  // 不是 async 函数：crash 要能在返回 Promise 之前同步 throw。
  // Not an async function: `crash` must be able to throw synchronously, before any promise exists.
  readonly executor: ToolExecutor = (call, context) => {
    this.started.push(call.id);
    this.calls.push(copy(call));
    this.contexts.push(context);
    this.progress.tick();
    if (call.name === "crash" && !this.#gates.has(call.id)) throw new Error(CRASH_TEXT);
    return this.#finish(call, context);
  };

  async #finish(call: ToolCall, context: ToolContext): Promise<ToolResultMessage> {
    // 真实工具的进度和结果总是晚于调用本身：先让出一次。/ A real tool reports and returns after the call: yield once.
    await null;
    if (call.name === "report") context.reportProgress(progressReport());
    const gate = this.#gates.get(call.id);
    if (gate !== undefined) {
      await gate.promise;
      this.progress.tick();
    }
    try {
      switch (call.name) {
        case "explode":
          throw new DiskFull();
        case "crash":
          throw new Error(CRASH_TEXT);
        case "crash_value":
          throw `kaboom ${call.id} (${THROW_MARKER})`;
        case "cancel_run":
          this.controller.abort();
          break;
      }
      return okResult(call, benchDetails(call.id));
    } finally {
      this.progress.tick();
    }
  }

  // 让被 gate 住的调用 id 完成。/ Lets the gated call `id` finish.
  release(id: string): void {
    const gate = this.#gates.get(id);
    if (gate === undefined) throw new Error(`no gate for ${id}`);
    gate.resolve();
    this.progress.tick();
  }

  // 等到 ids 中每个调用都已进入 executor；循环先停止进展则带着 why 失败。
  // Waits until the executor was entered for every id in `ids`; fails with `why` on a stall.
  waitStarted(ids: readonly string[], why: string): Promise<void> {
    return this.progress.until(
      () => ids.every((id) => this.started.includes(id)),
      STEP_QUIET_MS,
      () =>
        `${msg(
          `等待调用 ${show(ids)} 全部开始执行超时：${seconds(STEP_QUIET_MS)} 秒内循环没有任何进展`,
          `timed out waiting for calls ${show(ids)} to start: the loop made no progress for ${seconds(STEP_QUIET_MS)} s`,
        )}\n  ${why}\n  ${msg("实际开始执行的", "actually started")}: ${show(this.started)}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// 由测试推动的模型流 / A model stream the test drives
// ---------------------------------------------------------------------------------------------

// 像真实 provider 那样边写边发的一轮：循环请求这一轮时流才打开；测试推一个事件，就等循环把它转发成
// model_event，再推下一个；最终消息最后才给出。所以只有在流还开着时就逐个转发事件的循环才能走下去：
// 先等 result() 的循环，或把事件攒到流结束才发的循环，会停在第一个事件上。
// A turn written while it streams, as a real provider does: the stream opens when the loop requests the
// turn; the test pushes one event, waits until the loop has forwarded it as a model_event, then pushes the
// next; the final message comes last. Only a loop that forwards each event while the stream is still open
// gets through: one that awaits result() first, or holds the events until the stream ends, stops at the
// first event.
export class LiveTurn {
  #stream: EventStream<ModelEvent, AssistantMessage> | undefined;
  #pushed = 0;

  constructor(
    private readonly progress: Progress,
    private readonly events: Recorder,
    // 这一轮的最终消息（end() 给出）。/ The turn's final message (given by end()).
    readonly message: AssistantMessage,
  ) {}

  // 模型收到这一轮的请求时调用。/ Called when the model gets this turn's request.
  open(): EventStream<ModelEvent, AssistantMessage> {
    this.#stream = new EventStream<ModelEvent, AssistantMessage>();
    this.progress.tick();
    return this.#stream;
  }

  // 推出 events 中的每个事件，每推一个就等循环把它转发出去；循环先停止进展则带着 why 失败。
  // Pushes each of `events`, waiting after each one until the loop has forwarded it; fails with `why` on
  // a stall.
  async forward(events: readonly ModelEvent[], why: string): Promise<void> {
    await this.progress.until(
      () => this.#stream !== undefined,
      STEP_QUIET_MS,
      () =>
        `${msg(
          `等待这一轮的模型请求超时：${seconds(STEP_QUIET_MS)} 秒内循环没有任何进展`,
          `timed out waiting for this turn's model request: the loop made no progress for ${seconds(STEP_QUIET_MS)} s`,
        )}\n  ${msg("已发生的事件", "events so far")}: ${this.events.summary()}`,
    );
    const forwarded = () => this.events.count("model_event");
    const base = forwarded() - this.#pushed;
    for (const event of events) {
      this.#stream!.push(structuredClone(event));
      this.#pushed += 1;
      this.progress.tick();
      const wanted = base + this.#pushed;
      await this.progress.until(
        () => forwarded() >= wanted,
        STEP_QUIET_MS,
        () =>
          `${msg(
            `模型流还开着，已推出事件 ${event.type}，循环却没有把它转发成 model_event（${seconds(STEP_QUIET_MS)} 秒内没有任何进展）`,
            `the model stream is still open and pushed ${event.type}, yet the loop has not forwarded it as a model_event (no progress for ${seconds(STEP_QUIET_MS)} s)`,
          )}\n  ${why}\n  ${msg("已发生的事件", "events so far")}: ${this.events.summary()}`,
      );
    }
  }

  // 给出最终消息，关闭流。/ Gives the final message and closes the stream.
  end(): void {
    this.#stream!.end(structuredClone(this.message));
    this.progress.tick();
  }
}

// ---------------------------------------------------------------------------------------------
// 有界的运行器 / The bounded runner
// ---------------------------------------------------------------------------------------------

// 把每个请求交给 ScriptedModel（由它记录），给有自定义事件的回合流出测试自己的事件，
// 并拦住一直请求下去的循环。
// Hands every request to the ScriptedModel (which records it), streams the test's own events for a turn
// that has them (or opens the test's live stream), and stops a loop that would request forever.
export class Guarded implements Model {
  // 循环拿到的就是这个对象，所以状态都在私有字段里，对象本身冻结：循环改不了测试据以判断的记录。
  // The loop is handed this very object, so its state lives in private fields and the object is frozen:
  // the loop cannot rewrite the records the tests judge it by.
  readonly #sentCallersArray: boolean[] = [];
  readonly #signals: (AbortSignal | undefined)[] = [];
  readonly #scripted: ScriptedModel;
  readonly #script: AssistantMessage[];
  readonly #streams: (ModelEvent[] | LiveTurn | undefined)[];
  readonly #callersArray: Message[];
  readonly #progress: Progress;

  constructor(
    scripted: ScriptedModel,
    script: AssistantMessage[],
    streams: (ModelEvent[] | LiveTurn | undefined)[],
    callersArray: Message[],
    progress: Progress,
  ) {
    Object.freeze(scripted);
    this.#scripted = scripted;
    this.#script = script;
    this.#streams = streams;
    this.#callersArray = callersArray;
    this.#progress = progress;
    Object.freeze(this);
  }

  get scripted(): ScriptedModel {
    return this.#scripted;
  }

  // 每次请求的 messages 是不是调用者自己的数组。/ Per request: was `messages` the caller's own array?
  get sentCallersArray(): boolean[] {
    return [...this.#sentCallersArray];
  }

  // 每次请求时 stream() 收到的 signal（第二个参数）。/ Per request: the signal stream() was given (its second argument).
  get signals(): (AbortSignal | undefined)[] {
    return [...this.#signals];
  }

  stream(request: ModelRequest, signal?: AbortSignal): EventStream<ModelEvent, AssistantMessage> {
    this.#progress.tick();
    const calls = this.#scripted.calls;
    if (calls >= REQUEST_LIMIT) {
      const message = msg(
        `模型已被请求 ${calls} 次，循环停不下来：是否有终态分支没有结束运行，或没有遵守 maxSteps？`,
        `the model was asked ${calls} times: the loop never ends (a terminal branch that goes on, or maxSteps ignored?)`,
      );
      this.#progress.runawayWith(message);
      throw new Error(message);
    }
    if (typeof request !== "object" || request === null || !Array.isArray(request.messages)) {
      const message = msg(
        `model.stream() 收到的请求不是 { systemPrompt, messages, tools }：${show(request)}（第一步）`,
        `model.stream() got a request that is not { systemPrompt, messages, tools }: ${show(request)} (step 1)`,
      );
      this.#progress.runawayWith(message);
      throw new Error(message);
    }
    this.#sentCallersArray.push(request.messages === this.#callersArray);
    this.#signals.push(signal);
    const scripted = this.#scripted.stream(request, signal);
    const events = this.#streams[calls];
    if (events instanceof LiveTurn) return events.open();
    const last = this.#script[calls];
    if (events === undefined || last === undefined) return scripted;
    const stream = new EventStream<ModelEvent, AssistantMessage>();
    for (const event of events) stream.push(structuredClone(event));
    stream.end(structuredClone(last));
    return stream;
  }
}

// 一次即将开始的运行。测试在 run() 之前调整 options（tools、executor、maxSteps）。
// A run about to start. Tests adjust `options` (tools, executor, maxSteps) before run().
export class Setup {
  readonly progress = new Progress();
  readonly controller = new AbortController();
  readonly events = new Recorder(this.progress);
  readonly context: AgentContext = { systemPrompt: SYSTEM_PROMPT, messages: callerMessages() };
  // 调用者的数组本身：运行后它必须还是同一个数组，内容不变。/ The caller's array itself: same array, same content after.
  readonly callersArray = this.context.messages;
  readonly model: Guarded;
  readonly options: AgentLoopOptions;
  readonly #live: (LiveTurn | undefined)[];

  constructor(turns: [AssistantMessage, ModelEvent[] | "live" | undefined][]) {
    // 模型拿到的是副本：循环改了它返回的消息，也改不到测试手里的期望值。
    // The model gets copies: a loop that changes a message it was given cannot change the test's expectations.
    const script = structuredClone(turns.map(([message]) => message));
    const scripted = new ScriptedModel(structuredClone(script));
    this.#live = turns.map(([message, events]) =>
      events === "live" ? new LiveTurn(this.progress, this.events, structuredClone(message)) : undefined,
    );
    const streams = turns.map(([, events], n) => (events === "live" ? this.#live[n] : events));
    this.model = new Guarded(scripted, script, streams, this.callersArray, this.progress);
    this.options = {
      context: this.context,
      model: this.model,
      tools: new ToolRegistry(),
      signal: this.controller.signal,
      onEvent: this.events.sink,
    };
  }

  // 第 n 轮（从 0 数）的 live 流：setupStreaming 里标为 "live" 的那一轮。/ The live stream of turn n (from 0).
  live(n: number): LiveTurn {
    const turn = this.#live[n];
    if (turn === undefined) throw new Error(`turn ${n} is not live`);
    return turn;
  }

  bench(gatedIds: readonly string[] = []): Bench {
    return new Bench(this.progress, gatedIds, this.controller);
  }

  countingTools(runs?: Counter): ToolRegistry {
    return countingTools(this.progress, runs);
  }

  // 运行循环，同时运行 driver（测试一方：放行 gate、取消）。循环停止进展时失败而不是永远等待；
  // 循环 throw 时带着它的信息失败。
  // Runs the loop, and `driver` (the test's side: releasing gates, aborting) beside it. Fails instead of
  // waiting forever if the loop stops making progress; fails with the loop's own error if it throws.
  async run(driver?: () => Promise<void>): Promise<Outcome> {
    const { progress, events } = this;
    progress.tick();
    let loop: Promise<AgentRunResult>;
    try {
      const { runAgentLoop } = await learnerLoop();
      loop = Promise.resolve(runAgentLoop(this.options));
    } catch (error) {
      loop = Promise.reject(error);
    }
    const driving = driver === undefined ? Promise.resolve() : driver();
    driving.catch(() => {});
    const hung = progress.until(() => false, RUN_QUIET_MS, () => "");
    hung.catch(() => {});
    type Ending =
      | { kind: "done"; result: AgentRunResult }
      | { kind: "threw"; error: unknown }
      | { kind: "driver"; error: unknown }
      | { kind: "hung" }
      | { kind: "runaway"; message: string };
    const never = new Promise<never>(() => {});
    try {
      const ending = await Promise.race<Ending>([
        loop.then(
          (result) => ({ kind: "done", result }),
          (error: unknown) => ({ kind: "threw", error }),
        ),
        driving.then(
          () => never,
          (error: unknown) => ({ kind: "driver", error }),
        ),
        hung.then(
          () => never,
          () => ({ kind: "hung" }),
        ),
        progress.runaway.then((message) => ({ kind: "runaway", message })),
      ]);
      switch (ending.kind) {
        case "done":
          // 循环已返回，driver 仍可以完成（它自己的等待会在卡住时带着准确的信息失败）。
          // The loop returned; the driver may still finish (its own waits fail precisely if they cannot).
          await driving;
          return new Outcome(checkedResult(ending.result, events), this);
        case "threw":
          return fail(loopThrew(ending.error, events));
        case "driver":
          throw ending.error;
        case "runaway":
          return fail(`${ending.message}\n  ${msg("已发生的事件", "events so far")}: ${events.summary()}`);
        case "hung":
          return fail(
            `${msg(
              `循环卡住了：${seconds(RUN_QUIET_MS)} 秒内没有任何进展（没有事件、模型请求或工具动作），也没有返回`,
              `the loop hung: nothing happened for ${seconds(RUN_QUIET_MS)} s (no event, model request or tool step) and it never returned`,
            )}\n  ${msg("已发生的事件", "events so far")}: ${events.summary()}\n  ${msg("可能卡在", "probably waiting")}: ${hangHint(events.kinds().at(-1))}`,
          );
      }
    } finally {
      progress.close();
    }
  }
}

// 一次运行的 setup，调用者的 context 为 SYSTEM_PROMPT + callerMessages()。
// A run of the loop over `script`, the caller's context being SYSTEM_PROMPT + callerMessages().
export function setup(script: AssistantMessage[]): Setup {
  return new Setup(script.map((message) => [message, undefined]));
}

// 同 setup，但给了事件的回合流出的正是这些事件（不是 ScriptedModel 推导的），最后仍以脚本消息结束：
// 测试用它做出 partial 与最终消息不同的流，真实 provider 就可能这样。标为 "live" 的回合由测试逐个推送
// （见 LiveTurn，用 setup.live(n) 取得）。
// Like setup, but a turn given with events streams exactly those events (not the ones ScriptedModel
// derives), then still ends with the scripted final message: a stream whose partials differ from its
// final message, as a real provider's may. A turn marked "live" is pushed by the test, event by event
// (see LiveTurn, reached with setup.live(n)).
export function setupStreaming(turns: [AssistantMessage, ModelEvent[] | "live" | undefined][]): Setup {
  return new Setup(turns);
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    // 只留循环自己的位置，不要测试工具和 Node 内部的。/ Only the loop's own frames, not the kit's or Node's.
    const frames = (error.stack ?? "")
      .split("\n")
      .filter((line) => line.trimStart().startsWith("at ") && !/\/test\/support\.|node:internal/.test(line));
    const where = frames.slice(0, 3).map((line) => `\n      ${line.trim()}`).join("");
    return `${error.name}: ${error.message}${where}`;
  }
  return show(error);
}

function loopThrew(error: unknown, events: Recorder): string {
  const text = errorText(error);
  const soFar = `${msg("已发生的事件", "events so far")}: ${events.summary()}`;
  if (text.includes("TODO(Lab")) {
    return `${msg("这个 Lab 还没完成", "this Lab is not done yet")}\n  ${msg(
      "循环停在了骨架的 TODO",
      "the loop stopped at a TODO of the skeleton",
    )}: ${text}\n  ${msg("按 7.1 → 7.5 的顺序完成各个 Lab", "finish the Labs in order, 7.1 → 7.5")}\n  ${soFar}`;
  }
  return `${msg("runAgentLoop 抛出了错误（它应当总是 resolve 为 AgentRunResult）", "runAgentLoop threw (it must always resolve to an AgentRunResult)")}: ${text}\n  ${msg(
    "若它来自 executor 的 reject 或 throw，说明它没有被转换成配对的错误结果",
    "if it comes from an executor's rejection or throw, it escaped instead of becoming a paired error result",
  )}\n  ${soFar}`;
}

function checkedResult(result: AgentRunResult, events: Recorder): AgentRunResult {
  const ok =
    typeof result === "object" &&
    result !== null &&
    Array.isArray(result.messages) &&
    typeof result.steps === "number" &&
    typeof result.reason === "string";
  if (!ok) {
    fail(
      `${msg(
        "runAgentLoop 应 resolve 为 { reason, messages, steps }",
        "runAgentLoop must resolve to { reason, messages, steps }",
      )}: ${show(result)}\n  ${msg("已发生的事件", "events so far")}: ${events.summary()}`,
    );
  }
  return result;
}

// 一次结束的运行留下的一切。/ Everything a finished run left behind.
export class Outcome {
  readonly model: ScriptedModel;
  readonly events: Recorder;
  readonly context: AgentContext;

  constructor(
    readonly result: AgentRunResult,
    readonly setup: Setup,
  ) {
    this.model = setup.model.scripted;
    this.events = setup.events;
    this.context = setup.context;
  }

  kinds(): string[] {
    return this.events.kinds();
  }

  requests(): ModelRequest[] {
    return this.model.requests;
  }

  // 第 n 次（从 0 数）请求里模型看到的消息；没有这次请求时为空，断言会说缺了什么。
  // The messages the model saw in request n (from 0); empty when there was none, so the assertion says what is missing.
  sentInRequest(n: number): Message[] {
    return this.requests()[n]?.messages ?? [];
  }

  // 恰好一个 turn_end，是最后一个事件，原因为 reason；返回值的 reason 也是它。
  // Exactly one turn_end, the last event, with `reason`; and the returned reason is the same.
  assertEnds(reason: RunReason, rule: string): void {
    const kinds = this.kinds();
    const turnEnds = kinds.filter((k) => k.startsWith("turn_end"));
    const all = `${msg("全部事件", "all events")}: ${show(kinds)}`;
    expectTrue(
      turnEnds.length === 1,
      `${rule}: ${msg(
        `一次运行恰好发出一个 turn_end（不变量 3），实际 ${turnEnds.length} 个`,
        `one run emits exactly one turn_end (invariant 3), got ${turnEnds.length}`,
      )}\n  ${all}`,
    );
    expectTrue(
      kinds.at(-1)?.startsWith("turn_end") === true,
      `${rule}: ${msg("turn_end 必须是最后一个事件", "turn_end must be the last event")}\n  ${all}`,
    );
    const wanted = `turn_end(${reason})`;
    expectEqual(turnEnds[0], wanted, `${rule}: ${msg(`运行应以 ${wanted} 结束`, `the run must end with ${wanted}`)}\n  ${all}`);
    expectEqual(
      this.result.reason,
      reason,
      `${rule}: ${msg(`返回的 reason 应与 turn_end 一致：${reason}`, `the returned reason must match the turn_end: ${reason}`)}`,
    );
  }

  // 每轮模型恰好一个 assistant_message：与请求次数相同，不重复，不编造。
  // Exactly one assistant_message per model turn: as many as requests, none repeated, none invented.
  assertOneAssistantMessagePerTurn(rule: string): void {
    const sent = this.events.count("assistant_message");
    const calls = this.model.calls;
    expectTrue(
      sent === calls,
      `${rule}: ${msg(
        `每个模型回合恰好一个 assistant_message：模型被请求 ${calls} 次，却发出了 ${sent} 个（不重复发，也不编造）`,
        `exactly one assistant_message per model turn: ${calls} requests, ${sent} events (never repeated, never invented)`,
      )}\n  ${msg("全部事件", "all events")}: ${show(this.kinds())}`,
    );
  }

  // 调用者的 context 还是原来的样子：同一个数组，内容逐项不变，system prompt 不变。
  // The caller's context is as it was: the same array, every message unchanged, the same system prompt.
  assertContextUntouched(): void {
    expectEqual(
      this.context.systemPrompt,
      SYSTEM_PROMPT,
      msg("调用者的 systemPrompt 被改动了", "the caller's systemPrompt was changed"),
    );
    expectTrue(
      this.context.messages === this.setup.callersArray,
      msg(
        "调用者 context 的 messages 被换成了另一个数组：循环从不写调用者的 context（第一步）",
        "the caller's context.messages was replaced by another array: the loop never writes the caller's context (step 1)",
      ),
    );
    expectEqual(
      this.context.messages,
      callerMessages(),
      msg(
        "调用者的 messages 被写入或改动了：运行开始时先复制，之后只改本次运行自己的副本（第一步）",
        "the caller's messages were written or changed: copy them once at the start, change only the run's own copy (step 1)",
      ),
    );
  }
}
