// 一次运行：按实例搭好 options，运行学习者的循环，计划在旁边执行，记下观察到的一切，直到循环返回
// （result）、抛出（panic）、卡住（hang）或步数超限（overflow）：这一步总是轨迹的最后一步。
// One run: options built from the instance, the learner's loop run with the plan beside it, and
// everything observed recorded, until the loop returns (result), throws (panic), hangs (hang) or runs
// past the step limit (overflow): that step is always the trace's last.

import type { AgentContext, AgentLoopOptions, AgentRunResult } from "../src/agent-loop.js";
import type { Message } from "../src/message.js";
import { loopEvent, messages, plain, type Json } from "./canonical.js";
import type { Instance } from "./instance.js";
import { DriverModel } from "./model.js";
import { runPlan } from "./plan.js";
import {
  abortController,
  abortedState,
  clone,
  isArray,
  newController,
  SafeError,
  SafePromise,
  sourcesOf,
  stringify,
} from "./safe.js";
import { Bench } from "./tools.js";
import { Trace, type Step } from "./trace.js";

// 调用者在 edit_context 时写进自己 context 的文字（docs/JUDGE.md）。
// What the caller writes into its context when a turn has edit_context (docs/JUDGE.md).
export const EDIT = "edited by the caller";
// 调用者在运行返回之后写进自己 messages 的文字。/ What the caller adds to its messages after the run returned.
const AFTERWARDS = "written by the caller after the run returned";

// 一次运行多久没有任何步骤、也没有返回，就算卡住。/ How long a run may go without any step before it hangs.
export const RUN_QUIET_MS = 1200;

type Loop = Pick<typeof import("../src/agent-loop.js"), "runAgentLoop">;

// 在 instance 上运行 loadLoop() 给出的循环，返回轨迹。onStep 在每一步记下时收到它的 JSON。
// Runs the loop loadLoop() gives on `instance` and returns the trace; onStep gets each step's JSON the
// moment it is recorded.
export async function drive(
  instance: Instance,
  loadLoop: () => Promise<Loop>,
  onStep?: (json: string) => void,
): Promise<readonly Step[]> {
  const trace = new Trace(onStep);
  const held = instance.signal ? newController() : undefined;
  const controller = held?.controller;
  const runSignal = held?.signal;
  const caller = new Caller(trace, instance);

  const abort = () => {
    if (controller === undefined) return;
    trace.record({ kind: "driver", action: "abort" });
    abortController(controller);
  };
  const bench = new Bench(trace, instance.calls, instance.tool_runs, {
    toolSignal: (signal) => toolSignal(signal, runSignal),
    cancel: (signal) => {
      if (controller !== undefined && signal === runSignal) abortController(controller);
    },
  });
  const model = new DriverModel(instance.turns, instance.exhausted, trace, {
    requestSignal: (signal) => requestSignal(signal, runSignal),
    isCallersArray: (value) => caller.isArray(value),
    abort,
    editContext: () => caller.edit(),
  });

  // 运行开始之前就取消：这一步是轨迹的第一步。/ Cancelled before the run starts: the trace's first step.
  if (instance.pre_abort) abort();
  // 实例没给的选项就不放：缺省值由循环自己决定。/ Options the instance leaves out are left out.
  const options: AgentLoopOptions = { context: caller.context, model, tools: bench.registry(instance.tools) };
  if (instance.executor) options.executor = bench.executor;
  if (runSignal !== undefined) options.signal = runSignal;
  if (instance.max_steps !== null) options.maxSteps = instance.max_steps;
  if (instance.on_event) {
    options.onEvent = (event) => {
      // 轨迹结束后（例如超出上限）事件只是噪声，不再花时间。/ Past the trace's end an event costs nothing.
      if (trace.isClosed) return;
      trace.record({ kind: "event", event: loopEvent(plain(event)) });
      caller.check();
    };
  }

  type Ending = { returned: AgentRunResult } | { threw: unknown };
  let running: Promise<Ending>;
  try {
    const { runAgentLoop } = await loadLoop();
    running = SafePromise.resolve(runAgentLoop(options)).then(
      (returned) => ({ returned }),
      (threw: unknown) => ({ threw }),
    );
    // 运行已经开始（runAgentLoop 同步的部分已经跑完）：一个在开始时复制 context 的循环看不到这条消息。
    // The run has started (runAgentLoop's synchronous part is done): a loop that copied the context at
    // the start never shows this message.
    if (instance.edit_at_start) caller.editMessages();
  } catch (threw) {
    running = SafePromise.resolve({ threw });
  }
  let ending: Ending | undefined;
  void running.then((settled) => {
    ending = settled;
    trace.changed();
  });
  const plan = runPlan(instance.plan, trace, bench, abort);

  if (!(await trace.until(() => ending !== undefined, RUN_QUIET_MS))) {
    // until() gives up on a close too (the step limit): only real quiet is a hang.
    if (!trace.isClosed) trace.record({ kind: "hang", waiting_for: hangingOn(trace, bench) });
    trace.close();
    return trace.steps;
  }
  // The run's end is the trace's last step: nothing after it is recorded (the plan stops there, and a
  // loop that still emits after returning shows as a result that came too early).
  if ("returned" in ending!) trace.record(caller.result(ending.returned, runSignal));
  else trace.record(panic(ending!.threw));
  trace.close();
  await plan;
  return trace.steps;
}

// 卡住的运行在等什么，驱动程序看得到的部分。/ What a hung run waits for, as far as the driver can tell.
function hangingOn(trace: Trace, bench: Bench): string {
  const last = trace.steps.at(-1);
  let text =
    last === undefined
      ? "the run to return (no step yet: before or inside the first request)"
      : `the run to return (last step: ${describeStep(last)})`;
  const held = bench.held();
  if (held.length > 0) text += `; waiting at gates: ${held.join(", ")}`;
  return text;
}

// 一步的几个字：它的 kind，事件再加上事件的 type。/ A step in a few words: its kind, and an event's type.
function describeStep(step: Step): string {
  const event = step["event"] as { type?: unknown } | null | undefined;
  return step["kind"] === "event" && typeof event?.type === "string" ? `event ${event.type}` : `${step["kind"] as string}`;
}

// 调用者的 context：驱动程序放进去的样子，每个事件时检查它有没有被改（只记一次）。
// The caller's context: what the driver left there, checked at every event (recorded once).
class Caller {
  readonly context: AgentContext;
  readonly #trace: Trace;
  readonly #array: Message[];
  #json: string;
  #prompt: string;
  #reported = false;

  constructor(trace: Trace, instance: Instance) {
    this.#trace = trace;
    this.#array = clone(instance.caller);
    this.#prompt = instance.system_prompt;
    this.#json = stringify(this.#array);
    this.context = { systemPrompt: this.#prompt, messages: this.#array };
  }

  isArray(value: unknown): boolean {
    return value === this.#array;
  }

  check(): void {
    if (this.#reported) return;
    let same: boolean;
    try {
      same =
        this.context.messages === this.#array &&
        this.context.systemPrompt === this.#prompt &&
        stringify(this.#array) === this.#json;
    } catch {
      same = false;
    }
    if (same) return;
    this.#reported = true;
    this.#trace.record({ kind: "caller", state: "changed" });
  }

  // 调用者在运行中改自己的 context：追加一条用户消息，system prompt 后面接上同一段文字。
  // The caller changes its own context mid-run: one more user message, and the same text appended to
  // the system prompt.
  // 运行开始后调用者加一条用户消息，没有步骤，system prompt 不变。
  // Right after the run starts the caller adds a user message, with no step; the system prompt stays.
  editMessages(): void {
    this.#array.push({ role: "user", content: [{ type: "text", text: EDIT }] });
    this.#json = stringify(this.#array);
  }

  edit(): void {
    this.#trace.record({ kind: "driver", action: "edit_context" });
    this.#array.push({ role: "user", content: [{ type: "text", text: EDIT }] });
    this.#prompt = `${this.#prompt}${EDIT}`;
    this.context.systemPrompt = this.#prompt;
    this.#json = stringify(this.#array);
  }

  // 循环返回的结果，和那时调用者的 context。/ What the loop returned, and the caller's context then.
  // 运行的结果、调用者此刻的 context，以及调用者的 signal 此刻是否已 abort（没给 signal 时不记）。
  // The run's result, the caller's context now, and whether the caller's signal is aborted now (none
  // recorded for a run handed no signal).
  result(returned: AgentRunResult, signal: AbortSignal | undefined): Step {
    const context = plain(this.context) as { [key: string]: Json };
    // 调用者拿到结果后接着写自己的对话：结果的 messages 若就是调用者的数组，就会多出这一条。
    // The caller goes on with its conversation once the run returned: a result whose messages are the
    // caller's own array shows this message too (a Rust result owns its messages and cannot).
    try {
      this.#array.push({ role: "user", content: [{ type: "text", text: AFTERWARDS }] });
    } catch {
      // 数组被冻结或换成了别的东西：循环动了调用者的数组。/ Frozen or replaced: the loop changed the caller's array.
      if (!this.#reported) this.#trace.record({ kind: "caller", state: "changed" });
      this.#reported = true;
    }
    const seen = plain(returned);
    const fields: { [key: string]: Json } = typeof seen === "object" && seen !== null && !isArray(seen) ? seen : {};
    const step: Step = {
      kind: "result",
      reason: fields["reason"] ?? null,
      steps: fields["steps"] ?? null,
      messages: messages(fields["messages"]),
      caller: { system_prompt: context["systemPrompt"] ?? null, messages: messages(context["messages"]) },
    };
    if (signal !== undefined) step["signal_aborted"] = abortedState(signal) ?? null;
    return step;
  }
}

// 循环 throw 或 reject 了：它的信息，和栈里学习者文件的第一个位置（有 source map 时）。
// The loop threw or rejected: its message, and the first position of the learner's file in the stack
// (when source maps are on).
function panic(threw: unknown): Step {
  let message: string;
  let stack = "";
  try {
    if (threw instanceof SafeError) {
      message = `${threw.message}`;
      stack = `${threw.stack ?? ""}`;
    } else {
      message = `${threw as string}`;
    }
  } catch {
    message = "a thrown value that cannot be shown";
  }
  const at = /src\/agent-loop\.ts:(\d+):(\d+)/.exec(stack);
  return at === null ? { kind: "panic", message } : { kind: "panic", message, location: `src/agent-loop.ts:${at[1]}:${at[2]}` };
}

// model.stream() 的第二个参数（docs/JUDGE.md）。/ The second argument of model.stream() (docs/JUDGE.md).
function requestSignal(signal: unknown, run: AbortSignal | undefined): "run" | "none" | "other" {
  if (signal === undefined) return "none";
  if (run === undefined) return abortedState(signal) === false ? "run" : "other";
  return signal === run ? "run" : "other";
}

// 工具拿到的 signal：就是运行的（run），跟随运行的另一个（derived），或别的（other）。检查不改变任何
// signal：运行的已 abort 时看它是否也 abort；还没有时看它是不是由 AbortSignal.any() 从运行的派生。
// The signal a tool got: the run's own (run), another one that follows it (derived), or anything else
// (other). Checking changes no signal: once the run's is aborted, whether it is aborted too; before,
// whether AbortSignal.any() derived it from the run's.
function toolSignal(signal: unknown, run: AbortSignal | undefined): "run" | "derived" | "other" {
  const aborted = abortedState(signal);
  if (run === undefined) return aborted === false ? "run" : "other";
  if (signal === run) return "run";
  if (aborted === undefined) return "other";
  if (abortedState(run)) return aborted ? "derived" : "other";
  return !aborted && sourcesOf(signal).includes(run) ? "derived" : "other";
}
