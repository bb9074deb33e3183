// 驱动程序的工具：注入的 executor（按 call id 的行为）和 registry 工具（按工具名的行为），每次调用
// 按实例里的一条行为执行，每一步都记下来。
// The driver's tools: the injected executor (a behaviour per call id) and the registry tools (a
// behaviour per tool name). Each invocation plays one behaviour of the instance, and records each step:
//
//   exec_enter → exec_progress（每次 report 之前 / before each report）→ gate → cancel_run → exec_leave
//   → resolve / reject / 同步 throw (synchronous throw)
//
// 结局为 panic 或 throw_value 且没有 gate 时，整个行为在调用内同步完成，在任何 Promise 出现之前 throw；
// 其余的先让出一次（真实工具的进度和结果总晚于调用本身）。
// A behaviour whose outcome is panic or throw_value and that has no gate plays whole inside the call and
// throws before any promise exists; any other yields once first (a real tool reports and returns after
// the call).

import { ToolRegistry, type ToolContext, type ToolDefinition, type ToolExecutor } from "../src/tool.js";
import { block, blocks, plain, type Json } from "./canonical.js";
import { unplannedOutput, unplannedResult, type Behavior, type Outcome } from "./instance.js";
import { clone, freeze, hasOwn, isArray, SafeError, SafeMap, SafePromise, stringify } from "./safe.js";
import type { Step, Trace } from "./trace.js";

// 工具从这次运行需要的：它拿到的 signal 是什么，以及取消它。
// What the tools need from the run: what the signal they were given is, and cancelling it.
export interface ToolSide {
  toolSignal(signal: unknown): "run" | "derived" | "other";
  cancel(signal: unknown): void;
}

interface Gate {
  // 停在 gate 前的调用，按到达顺序。/ The invocations held at the gate, in arrival order.
  held: (() => void)[];
  // 在任何调用到达之前就已放行的次数。/ Releases given before any invocation arrived.
  permits: number;
}

export class Bench {
  readonly #trace: Trace;
  readonly #calls: Record<string, Behavior[]>;
  readonly #toolRuns: Record<string, Behavior[]>;
  readonly #side: ToolSide;
  readonly #invocations = new SafeMap<string, number>();
  readonly #gates = new SafeMap<string, Gate>();

  constructor(trace: Trace, calls: Record<string, Behavior[]>, toolRuns: Record<string, Behavior[]>, side: ToolSide) {
    this.#trace = trace;
    this.#calls = calls;
    this.#toolRuns = toolRuns;
    this.#side = side;
  }

  // 不是 async 函数：panic 要能在返回 Promise 之前同步 throw。
  // Not an async function: a panic must be able to throw synchronously, before any promise exists.
  readonly executor: ToolExecutor = (call, context) => {
    const seen = block(plain(call));
    const fields = typeof seen === "object" && seen !== null && !isArray(seen) ? seen : {};
    const id = fields["id"];
    const ref = typeof id === "string" ? id : stringify(id ?? null);
    const name = typeof fields["name"] === "string" ? fields["name"] : "";
    const enter: Step = { kind: "exec_enter", via: "executor", call: seen };
    return this.#invoke(ref, scriptOf(this.#calls, ref), () => unplannedResult(ref, name), enter, context) as Promise<never>;
  };

  // 按实例的定义、按顺序注册的 registry 工具。/ The registry tools, registered in the instance's order.
  registry(definitions: ToolDefinition[]): ToolRegistry {
    const registry = new ToolRegistry();
    for (const definition of definitions) {
      const name = definition.name;
      const ref = `tool:${name}`;
      registry.register(
        freeze({
          definition: clone(definition),
          execute: (args: unknown, context: ToolContext) => {
            const enter: Step = { kind: "exec_enter", via: "tool", tool: name, arguments: plain(args) };
            return this.#invoke(ref, scriptOf(this.#toolRuns, name), unplannedOutput, enter, context) as Promise<never>;
          },
        }),
      );
    }
    return registry;
  }

  // 有调用正停在 gate 前的 ref，排好序。/ The refs with an invocation held at their gate, sorted.
  held(): string[] {
    const refs: string[] = [];
    for (const [ref, gate] of this.#gates) if (gate.held.length > 0) refs.push(ref);
    return refs.sort();
  }

  // ref 有调用正停在 gate 前。/ Whether an invocation of `ref` is held at its gate now.
  atGate(ref: string): boolean {
    return (this.#gates.get(ref)?.held.length ?? 0) > 0;
  }

  // 放行 ref 的一个 gate：最早到达的那个，还没有调用到达时留给下一个。
  // Releases one gate of `ref`: the invocation that arrived first, or the next to arrive.
  release(ref: string): void {
    const gate = this.#gate(ref);
    const next = gate.held.shift();
    if (next === undefined) gate.permits += 1;
    else next();
  }

  #gate(ref: string): Gate {
    let gate = this.#gates.get(ref);
    if (gate === undefined) {
      gate = { held: [], permits: 0 };
      this.#gates.set(ref, gate);
    }
    return gate;
  }

  // unplanned: the behaviour of an invocation the script has none for (docs/JUDGE.md).
  #invoke(
    ref: string,
    script: Behavior[] | undefined,
    unplanned: () => Behavior,
    enter: Step,
    context: ToolContext,
  ): unknown {
    // 测试结束后仍在执行工具的循环停在一个永不完成的调用上。
    // A loop still running tools after the test is over waits on a call that never settles.
    if (this.#trace.isClosed) return new SafePromise(() => {});
    const n = this.#invocations.get(ref) ?? 0;
    this.#invocations.set(ref, n + 1);
    const behavior = script?.[n] ?? unplanned();
    let signal: unknown;
    try {
      signal = context.signal;
    } catch {
      signal = undefined;
    }
    this.#trace.record({ ...enter, signal: this.#side.toolSignal(signal) });
    const { outcome } = behavior;
    if (!behavior.gate && ("panic" in outcome || "throw_value" in outcome || "panic_value" in outcome)) {
      this.#play(ref, behavior, context, signal);
      this.#leave(ref);
      throw failure(outcome);
    }
    // sync：进度在调用之内报告，在它返回 Promise 之前。/ sync: the reports come inside the call, before it returns.
    const played = behavior.sync === true && !behavior.gate;
    if (played) this.#play(ref, behavior, context, signal);
    return this.#later(ref, behavior, context, signal, played);
  }

  async #later(ref: string, behavior: Behavior, context: ToolContext, signal: unknown, played: boolean): Promise<unknown> {
    await null;
    if (!played) this.#play(ref, behavior, context, signal);
    if (behavior.gate) await this.#arrive(ref);
    if (behavior.cancel_run) this.#side.cancel(signal);
    this.#leave(ref);
    const { outcome } = behavior;
    if ("ok" in outcome) return clone(outcome.ok);
    throw failure(outcome);
  }

  // 进度报告（以及没有 gate 时的 cancel_run）。循环给的 reportProgress 抛出时，这次调用以它结束。
  // The progress reports (and, without a gate, cancel_run). If the loop's reportProgress throws, the
  // invocation ends with that.
  #play(ref: string, behavior: Behavior, context: ToolContext, signal: unknown): void {
    try {
      for (const content of behavior.progress) {
        this.#trace.record({ kind: "exec_progress", ref, content: blocks(content as unknown as Json) });
        context.reportProgress(clone(content));
      }
      if (!behavior.gate && behavior.cancel_run) this.#side.cancel(signal);
    } catch (error) {
      this.#leave(ref);
      throw error;
    }
  }

  #arrive(ref: string): Promise<void> {
    const gate = this.#gate(ref);
    if (gate.permits > 0) {
      gate.permits -= 1;
      return SafePromise.resolve();
    }
    return new SafePromise<void>((resolve) => {
      gate.held.push(resolve);
      this.#trace.changed();
    });
  }

  #leave(ref: string): void {
    this.#trace.record({ kind: "exec_leave", ref });
  }
}

function scriptOf(scripts: Record<string, Behavior[]>, key: string): Behavior[] | undefined {
  return hasOwn(scripts, key) ? scripts[key] : undefined;
}

// 失败的结局变成的异常：reject 的 Error 带自己的 debug 属性，名字也是 debug 的文字（结果里只该有 message：
// String(error) 会带上名字，就像 Rust 的 {:?} 带上 Debug）；panic 是 Error；throw_value 是字符串本身；
// panic_value 是既不是 Error 也不是字符串的值（数、null、对象、数组、布尔）。
// What a failing outcome throws: the rejected Error with an own `debug`, and the debug text as its name
// too (a result carries the message alone: String(error) adds the name, as Rust's {:?} shows the
// Debug form); a panic's Error; the string itself for throw_value; for panic_value, a value that is no
// Error and no string (a number, null, an object, a list, a boolean).
function failure(outcome: Outcome): unknown {
  if ("error" in outcome) {
    const error = new SafeError(outcome.error.message) as Error & { debug?: string };
    error.debug = outcome.error.debug;
    error.name = outcome.error.debug;
    return error;
  }
  if ("panic" in outcome) return new SafeError(outcome.panic);
  if ("throw_value" in outcome) return outcome.throw_value;
  if ("panic_value" in outcome) return clone(outcome.panic_value as Json);
  return new SafeError("pi-course: an ok outcome does not fail");
}
