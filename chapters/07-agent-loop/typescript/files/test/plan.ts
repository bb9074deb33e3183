// 计划：驱动程序在循环旁边按顺序做的事（等待、放行 gate、取消），每个动作记成 driver 步骤。
// The plan: what the driver does beside the running loop, in order (wait, release a gate, abort), each
// action recorded as a driver step.
//
// 顺序来自显式的动作，从不来自时间：等待成立才做下一步。一个等待连续 1.0 秒没有任何步骤就放弃，记下
// gave_up，然后计划继续（循环也许还能走下去，轨迹会说明它做了什么）。
// Order comes from explicit actions, never from timing: the next action waits until the wait holds. A
// wait gives up after 1.0 s without any step, records gave_up, and the plan goes on (the loop may still
// get somewhere, and the trace says what it did).

import type { Action, Wait } from "./instance.js";
import type { Bench } from "./tools.js";
import type { Step, Trace } from "./trace.js";

// 计划的一个等待最多等多久（期间没有任何步骤）。/ How long a wait waits, without any step.
export const WAIT_QUIET_MS = 1000;

export async function runPlan(plan: Action[], trace: Trace, bench: Bench, abort: () => void): Promise<void> {
  for (const action of plan) {
    if (trace.isClosed) return;
    if ("wait" in action) {
      const wait = action.wait;
      if (!(await trace.until(() => holds(wait, trace, bench), WAIT_QUIET_MS)) && !trace.isClosed) {
        trace.record({ kind: "driver", action: "gave_up", waiting_for: describe(wait) });
      }
    } else if ("release" in action) {
      trace.record({ kind: "driver", action: "release", ref: action.release });
      bench.release(action.release);
    } else if ("abort" in action) {
      abort();
    }
  }
}

function holds(wait: Wait, trace: Trace, bench: Bench): boolean {
  if ("at_gate" in wait) return wait.at_gate.every((ref) => bench.atGate(ref));
  let seen = 0;
  for (const step of trace.steps) if (isEvent(step, wait.event, wait.id)) seen += 1;
  return seen >= wait.count;
}

// 这一步是不是那个 call id 的那种事件：tool_end 的 id 在 result 里，tool_progress 的在事件本身上。
// Whether this step is that kind of event for that call id: tool_end's id is in its result,
// tool_progress's on the event itself.
function isEvent(step: Step, type: "tool_end" | "tool_progress", id: string): boolean {
  if (step["kind"] !== "event") return false;
  const event = step["event"] as { type?: unknown; toolCallId?: unknown; result?: { toolCallId?: unknown } } | null;
  if (typeof event !== "object" || event === null || event.type !== type) return false;
  const of = type === "tool_end" ? event.result?.toolCallId : event.toolCallId;
  return of === id;
}

// gave_up 步骤里说明在等什么。/ What a gave_up step says it waited for.
export function describe(wait: Wait): string {
  if ("at_gate" in wait) return `at_gate ${wait.at_gate.join(", ")}`;
  if (wait.event === "tool_end") return `event tool_end ${wait.id}`;
  return `event tool_progress ${wait.id} (${wait.count})`;
}
