// 比较期望的轨迹和记下的轨迹，说出第一处分歧。手动运行时用；评分时比较在评分器里，不在这个进程里。
// Compares the expected trace with the recorded one and says where they first diverge. Used by hand;
// graded, the comparison runs in the grader, never in this process.
//
// 暂时的版本：逐步比较 JSON 是否相等（期望图的第一条路径，按顺序），不认识自由度。
// A stand-in: step-by-step JSON equality (the expected graph's first alternative, in order), without
// the freedoms.

import { hasOwn, isArray, ownKeys, stringify } from "./safe.js";

export function judge(expected: unknown, trace: unknown[], lang: "zh" | "en" | "both"): string | undefined {
  const say = (zh: string, en: string) => (lang === "zh" ? zh : lang === "en" ? en : `${zh} / ${en}`);
  const steps = expectedSteps(expected);
  for (let index = 0; index < Math.max(steps.length, trace.length); index += 1) {
    const want = steps[index];
    const got = trace[index];
    if (index < steps.length && index < trace.length && same(want, got)) continue;
    const where = say(`轨迹第 ${index} 步与期望不同`, `step ${index} of the trace differs from the expected one`);
    const wanted = index < steps.length ? stringify(want) : say("（轨迹应在此结束）", "(the trace should end here)");
    const happened = index < trace.length ? stringify(got) : say("（轨迹在此结束）", "(the trace ended here)");
    return `${where}\n  ${say("期望", "expected")}: ${wanted}\n  ${say("实际", "actual")}: ${happened}`;
  }
  return undefined;
}

// 期望图第一条路径的各步（每步都在前一步之后）。/ The steps of the expected graph's first alternative.
function expectedSteps(expected: unknown): unknown[] {
  const alternatives = (expected as { alternatives?: { steps?: { match?: unknown }[] }[] } | null)?.alternatives;
  const steps = isArray(alternatives) ? alternatives[0]?.steps : undefined;
  return isArray(steps) ? steps.map((step) => step.match) : [];
}

// JSON 相等，对象的键不论顺序。/ JSON equality, whatever the order of an object's keys.
function same(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b;
  if (isArray(a) !== isArray(b)) return false;
  const keysA = ownKeys(a);
  const keysB = ownKeys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) => hasOwn(b, key) && same((a as never)[key], (b as never)[key]));
}
