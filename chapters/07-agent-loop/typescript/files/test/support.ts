// 第 07 章的测试工具：把 07-expected.json 里的场景登记成测试，这里没有测试。
// The chapter 07 test kit: registers the scenarios of 07-expected.json as tests; nothing here is a test.
//
// 每个测试是一个场景实例：驱动程序（run.ts）在它上面运行你的循环，记下一条轨迹（请求、事件、工具的
// 进出……），再与期望的轨迹比较。
// Each test is a scenario instance: the driver (run.ts) runs your loop on it and records a trace (the
// requests, the events, the tools entered and left...), which is then compared with the expected one.
//
// - 手动运行（node --test）：实例来自 07-expected.json，比较在这个进程里（judge.ts），失败信息说出第一处
//   分歧。PI_COURSE_TRACE=1 时每一步都打印到 stderr。
//   By hand (node --test): the instance comes from 07-expected.json and the comparison runs here
//   (judge.ts); a failure names the first divergence. With PI_COURSE_TRACE=1 every step goes to stderr.
// - 由 pi-course 评分：测试登记到它的 harness，实例来自评分器，每一步立刻发给评分器，比较在评分器里：
//   这个进程里没有任何判断。
//   Graded by pi-course: the tests register with its harness, the instance comes from the grader, each
//   step goes to the grader the moment it is recorded, and the grader compares: nothing in this process
//   judges.

import { readFileSync } from "node:fs";
import * as nodeTest from "node:test";

import type { Instance } from "./instance.js";
import { readInstance, withDefaults } from "./instance.js";
import { INSTANCE, judge } from "./judge.js";
import { drive } from "./run.js";
import { isArray, parse, SafeError, stringify } from "./safe.js";

// 学习者的循环在测试运行时才加载，测试文件加载时从不加载：评分时，所有测试在任何学习者代码运行之前就已
// 登记、封存。驱动程序用的内置函数也在那之前取好（safe.ts）。
// The learner's loop is loaded when a test runs, never while the test files load: graded, every test is
// registered and sealed before any learner code runs. The built-ins the driver uses are taken before
// that too (safe.ts).
let learnerModule: Promise<typeof import("../src/agent-loop.js")> | undefined;
function learnerLoop(): Promise<typeof import("../src/agent-loop.js")> {
  learnerModule ??= import("../src/agent-loop.js");
  return learnerModule;
}

// 由 pi-course 评分时，测试登记到它的 harness 而不是 node:test（它在任何测试文件加载之前，把这个 symbol
// 定义在 globalThis 上，不可写）。它以评分器给的实例调用测试，并收下每一步。
// Graded by pi-course, tests register with its harness instead of node:test (it defines this symbol on
// globalThis, non-writable, before any test file loads). It calls a test with the grader's instance and
// takes each step.
type GradedBody = (instance: string, onStep: (json: string) => void) => Promise<void>;
const graded = (globalThis as Record<symbol, unknown>)[Symbol.for("pi-course.test")] as
  | ((name: string, body: GradedBody) => void)
  | undefined;

// 手动运行时让栈指向 src/agent-loop.ts 的行（评分时 node 以 --enable-source-maps 启动）。
// By hand, stacks name the lines of src/agent-loop.ts (graded, node starts with --enable-source-maps).
if (graded === undefined) process.setSourceMapsEnabled(true);

// 组的中文名是测试名的开头："纯文本 stop › ..."（chapter.toml）。/ A test's name starts with its group's Chinese name.
const GROUPS: Record<string, string> = {
  "plain-stop": "纯文本 stop",
  "single-tool": "单工具往返",
  "non-executing": "非执行终态",
  "concurrent-tools": "并发工具",
  "cancel-and-limits": "取消与上限",
  "duplicate-call-ids": "重复 call id",
};

interface Fixture {
  version: number;
  seed: number;
  tests: { name: string; group: string; instance: Instance | { runs: Instance[] }; expected: Record<string, unknown> }[];
}

// pi-course practice 用固定的种子写下的场景：每个测试的实例和期望的轨迹（带着它用到的规则的文字）。
// The scenarios `pi-course practice` wrote from a fixed seed: each test's instance and its expected
// trace (with the texts of the rules it names).
const fixture = parse(readFileSync(new URL("../../test/07-expected.json", import.meta.url), "utf8")) as Fixture;

// 登记一组的测试，名为「组的中文名 › 场景名（_ 换成空格）」。
// Registers a group's tests, named "<group's Chinese name> › <scenario name, _ as spaces>".
export function registerGroup(slug: string): void {
  const group = GROUPS[slug];
  if (group === undefined) throw new SafeError(`pi-course: no group ${slug}`);
  for (const test of fixture.tests) {
    if (test.group !== slug) continue;
    const name = `${group} › ${test.name.replaceAll("_", " ")}`;
    if (graded !== undefined) {
      graded(name, async (instance, onStep) => {
        await drive(readInstance(instance), learnerLoop, onStep);
      });
    } else {
      nodeTest.test(name, () => byHand(name, test.instance, test.expected));
    }
  }
}

// 一个测试可以有多个实例（{"runs": [...]}）：依次运行，每个之前记下一步 {"kind": "instance"}，和评分时
// harness 做的一样。/ A test may hold several instances: run in turn, each after an instance step, as graded.
async function byHand(name: string, instance: unknown, expected: unknown): Promise<void> {
  const show = process.env["PI_COURSE_TRACE"] === "1";
  const onStep = show ? (json: string) => process.stderr.write(`${name}: ${json}\n`) : undefined;
  const runs = (instance as { runs?: unknown }).runs;
  const trace: unknown[] = [];
  if (isArray(runs)) {
    for (let index = 0; index < runs.length; index++) {
      const mark = { kind: INSTANCE, index };
      trace.push(mark);
      onStep?.(stringify(mark));
      const steps = await drive(withDefaults(runs[index] as Instance), learnerLoop, onStep);
      trace.push(...steps);
      // 一个实例卡住、抛出或溢出后不再运行后面的，和评分时一样。/ After a hang, a throw or an overflow the rest do not run, as graded.
      const last = steps.length > 0 ? steps[steps.length - 1]!.kind : undefined;
      if (last === "hang" || last === "panic" || last === "overflow") break;
    }
  } else {
    trace.push(...(await drive(withDefaults(instance as Instance), learnerLoop, onStep)));
  }
  // 评分器读到的是每一步的 JSON：这里也比较它读回的样子。/ The grader reads each step's JSON: so does this.
  const message = judge(expected, trace.map((step) => parse(stringify(step))), lang());
  if (message === undefined) return;
  const failure = new SafeError(message);
  // 信息就是全部：测试工具自己的栈对学习者没有用。/ The message is all: the kit's own stack helps no one.
  failure.stack = message;
  throw failure;
}

// pi-course grade 设 PI_COURSE_LANG 为 zh 或 en；手动运行不设，两种都给，中文在前。
// `pi-course grade` sets PI_COURSE_LANG to zh or en; by hand it is unset and both come, Chinese first.
function lang(): "zh" | "en" | "both" {
  const value = (process.env["PI_COURSE_LANG"] ?? "").toLowerCase();
  if (value.startsWith("en")) return "en";
  if (value.startsWith("zh")) return "zh";
  return "both";
}
