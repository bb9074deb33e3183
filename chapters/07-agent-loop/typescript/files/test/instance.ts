// 场景实例：评分器（或手动运行时的 07-expected.json）交给驱动程序的一次运行的全部输入。格式见
// pi-course 的 docs/JUDGE.md「The instance」；这里只有它的类型和读取。
// A scenario instance: everything one run takes, as the grader (or, by hand, 07-expected.json) hands it
// to the driver. Its format is docs/JUDGE.md "The instance" in the pi-course repository; this module
// holds its types and how it is read.

import type { AssistantMessage, Message, TextContent, ToolResultMessage } from "../src/message.js";
import type { ModelEvent } from "../src/model.js";
import type { ToolDefinition } from "../src/tool.js";
import { isArray, ownKeys, parse, SafeError } from "./safe.js";

export interface Instance {
  test?: string;
  system_prompt: string;
  caller: Message[];
  tools: ToolDefinition[];
  executor: boolean;
  signal: boolean;
  pre_abort: boolean;
  // 运行开始后调用者立刻往自己的 context 里加一条消息（没有步骤）。/ The caller adds a message right after the run starts.
  edit_at_start: boolean;
  max_steps: number | null;
  on_event: boolean;
  turns: Turn[];
  exhausted: AssistantMessage;
  calls: Record<string, Behavior[]>;
  tool_runs: Record<string, Behavior[]>;
  plan: Action[];
}

export interface Turn {
  message: AssistantMessage;
  events: ModelEvent[];
  paced: boolean;
  abort: boolean;
  edit_context: boolean;
}

export interface Behavior {
  progress: TextContent[][];
  gate: boolean;
  cancel_run: boolean;
  // 进度在调用之内、返回 Promise 之前报告（没有 gate 时）。/ Reports inside the call, before its promise (no gate).
  sync?: boolean;
  outcome: Outcome;
}

export type Outcome =
  | { ok: ToolResultMessage | { content: TextContent[]; details: unknown } }
  | { error: { message: string; debug: string } }
  | { panic: string }
  | { throw_value: string }
  | { panic_value: unknown };

export type Action = { wait: Wait } | { release: string } | { abort: null };

// tool_end 的 count 是 1。/ A tool_end wait counts one.
export type Wait = { at_gate: string[] } | { event: "tool_end" | "tool_progress"; id: string; count: number };

// 不该发生的调用（实例没有为它写行为，或调用次数超出了脚本）立刻得到这段文字作答，运行继续，
// 轨迹让评分器看到循环走到了不该去的地方。
// A call that should not have happened (no behaviour scripted for it, or one past its list) is answered
// at once with this text, the run goes on, and the trace shows the grader where the loop went.
export const UNPLANNED = "unplanned call";

// 执行器对这样的调用的回答。/ The executor's answer to such a call.
export function unplannedResult(id: string, name: string): Behavior {
  const result: ToolResultMessage = {
    role: "toolResult",
    toolCallId: id,
    toolName: name,
    content: [{ type: "text", text: UNPLANNED }],
    details: null,
    isError: false,
  };
  return { progress: [], gate: false, cancel_run: false, outcome: { ok: result } };
}

// registry 工具对这样的调用的输出。/ A registry tool's output for such a call.
export function unplannedOutput(): Behavior {
  const output = { content: [{ type: "text" as const, text: UNPLANNED }], details: null };
  return { progress: [], gate: false, cancel_run: false, outcome: { ok: output } };
}

// 读一个实例。只检查驱动程序赖以运行的形状，内容由评分器负责；省略的可选字段取缺省值（false、空），
// 和 Rust 的驱动程序一样。
// Reads an instance. Only the shape the driver relies on is checked (the content is the grader's);
// optional fields left out take their defaults (false, empty), as the Rust driver's do.
export function readInstance(text: string): Instance {
  return withDefaults(parse(text));
}

export function withDefaults(value: unknown): Instance {
  const given = value as Partial<Instance> | null;
  const shaped =
    typeof given === "object" &&
    given !== null &&
    typeof given.system_prompt === "string" &&
    isArray(given.caller) &&
    isArray(given.tools) &&
    isArray(given.turns);
  if (!shaped) throw new SafeError("pi-course: the instance is not a scenario instance (docs/JUDGE.md)");
  const behaviours = (scripts: Record<string, Partial<Behavior>[]> | undefined) => {
    const out: Record<string, Behavior[]> = {};
    for (const key of ownKeys(scripts ?? {})) {
      if (typeof key === "string") out[key] = (scripts![key] ?? []).map(behavior);
    }
    return out;
  };
  return {
    ...given,
    system_prompt: given.system_prompt!,
    caller: given.caller!,
    tools: given.tools!,
    executor: given.executor === true,
    signal: given.signal === true,
    pre_abort: given.pre_abort === true,
    edit_at_start: given.edit_at_start === true,
    max_steps: typeof given.max_steps === "number" ? given.max_steps : null,
    on_event: given.on_event === true,
    turns: given.turns!.map((turn: Partial<Turn>) => ({
      message: turn.message!,
      events: turn.events ?? [],
      paced: turn.paced === true,
      abort: turn.abort === true,
      edit_context: turn.edit_context === true,
    })),
    exhausted: given.exhausted!,
    calls: behaviours(given.calls),
    tool_runs: behaviours(given.tool_runs),
    plan: (given.plan ?? []).map(action),
  };
}

// 等事件的 count 缺省为 1，和 Rust 的驱动程序一样。/ An event wait's count defaults to 1, as in Rust.
function action(given: Action): Action {
  if (typeof given !== "object" || given === null || !("wait" in given)) return given;
  const wait = given.wait as Partial<Wait> | null;
  if (typeof wait !== "object" || wait === null || !("event" in wait)) return given;
  return { wait: { ...wait, count: typeof wait.count === "number" ? wait.count : 1 } as Wait };
}

function behavior(given: Partial<Behavior>): Behavior {
  return {
    progress: given.progress ?? [],
    gate: given.gate === true,
    cancel_run: given.cancel_run === true,
    sync: given.sync === true,
    outcome: given.outcome!,
  };
}
