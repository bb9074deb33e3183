// 比较：记下的轨迹对照它的实例的期望轨迹（pi-course 的 docs/JUDGE.md）。手动运行时用；评分时比较在评分
// 器里，不在这个进程里。
// The comparison: a recorded trace against the expected trace of its instance (docs/JUDGE.md in the
// pi-course repository). Used by hand; graded, the grader compares, never this process.
//
// 这是评分器的比较（harness/judge/src/compare.rs）逐行的移植：同样的图、同样的自由度、同样的信息，一字不差。
// 评分器读的是这个进程写下的 JSON，所以这里的一个值就是「JSON.stringify 写出、serde_json 读回」的那个
// 值：数、对象键的顺序、字符串的写法都照 serde_json 来。两边相等由 pi-course 的一个差分测试证明。
// A line-by-line port of the grader's comparison (harness/judge/src/compare.rs): the same graph, the same
// freedoms, the same message to the character. The grader reads the JSON this process writes, so a value
// here is the one JSON.stringify writes and serde_json reads back: numbers, the order of an object's keys
// and how strings are written all follow serde_json. A differential test of pi-course proves the two equal.
//
// 期望的轨迹是一个小图：每一步有它必须排在后面的步骤，和它钉住的规则；自由度是一步里的 `$` 节点
// （见 matches）。轨迹的一步匹配一个前驱都已匹配的期望步骤，所以并发调用的步骤可以交错，其余的只有一种
// 顺序。第一个匹配不上任何可用期望步骤的轨迹步骤，或轨迹结束时仍未匹配的期望步骤，就是第一处分歧。
// The expected trace is a small graph of steps, each with the steps it must come after and the rule it
// pins; the freedoms are the `$` nodes of a step (see matches). A trace step matches an expected step
// whose predecessors have all matched, so the steps of concurrent calls may interleave while everything
// else has one order. The first trace step that matches no enabled expected step, or an expected step
// still unmatched when the trace ends, is the first divergence.

import { hasOwn, isArray, ownKeys, SafeBigInt, SafeMap, SafeNumber, stringify } from "./safe.js";

export type Lang = "zh" | "en" | "both";

// 一个 JSON 值（JSON.parse 的结果）；undefined 是「没有这个键」。/ A JSON value; undefined: the key is missing.
type Value = unknown;
type JsonObject = { [key: string]: Value };

// 轨迹第一次离开期望的地方。/ Where a trace first left the expected one.
export interface Divergence {
  // 匹配不上的轨迹步骤的下标；轨迹提前结束时是它的长度。/ The index of the step that matched nothing.
  index: number;
  // 那一步，轨迹结束时是 undefined。/ That step, or undefined when the trace ended.
  actual: Value | undefined;
  // 那里本可以出现的期望步骤（它们的 match）。/ The expected steps that could have come there.
  expected: Value[];
  // 最接近的期望步骤钉住的规则。/ The rule the closest expected step pins.
  rule: string;
  // 同一种步骤时，两者不同的地方。/ Where the two differ, when they are steps of one kind.
  detail: Mismatch | undefined;
}

// 两个值第一处不同：JSON 路径，那里期望什么、见到什么。/ The first place two values differ.
export interface Mismatch {
  path: string;
  expected: string;
  actual: string;
}

// 一个测试有多个实例时（{"runs": [...]}），harness 在每个实例的步骤之前写下的一步：
// {"kind": "instance", "index": k}。每个实例单独比较：全部通过才算通过，第一个偏离的实例决定信息。
// The step a harness writes before each instance's steps when a test holds several (`{"runs": [...]}`).
// Each instance is judged by itself: the test passes when every one does; the first to diverge decides.
export const INSTANCE = "instance";

// 比较 trace 和 expected，用 lang 说出第一处分歧；轨迹是本章允许的时返回 undefined。
// Compares `trace` with `expected` and explains the first divergence in `lang`; undefined when the trace
// is one the chapter allows.
export function judge(expected: Value, trace: readonly Value[], lang: Lang): string | undefined {
  const { instance, divergence } = focus(expected, trace);
  if (divergence === undefined) return undefined;
  return explain(instance, divergence, lang);
}

// 比较 trace 和 expected：允许时返回 undefined，否则是第一处分歧（多个实例时，第一个偏离的实例的）。
// Compares `trace` with `expected`: undefined when allowed, else the first divergence (of the first
// instance that diverges, for a test of several).
export function compare(expected: Value, trace: readonly Value[]): Divergence | undefined {
  return focus(expected, trace).divergence;
}

// 比较器眼中的一个实例：期望的图、它的步骤、以及（有多个时）它是第几个、共几个、覆盖了什么。
// One instance as the comparison sees it: its graph, its steps, and which one it is when there are several.
interface Instance {
  expected: Value;
  steps: readonly Value[];
  which: { number: number; of: number; about: Value } | undefined;
}

function explain(instance: Instance, d: Divergence, lang: Lang): string {
  const body = messageOne(instance.expected, instance.steps, d, lang);
  const which = instance.which;
  if (which === undefined) return body;
  const about = (l: string): string | undefined => {
    const a = get(which.about, l);
    return typeof a === "string" && a !== "" ? a : undefined;
  };
  const zh = about("zh");
  const en = about("en");
  const line = pick(
    lang,
    zh !== undefined ? `  实例：第 ${which.number} 个，共 ${which.of} 个（${zh}）` : `  实例：第 ${which.number} 个，共 ${which.of} 个`,
    en !== undefined ? `  instance: ${which.number} of ${which.of} (${en})` : `  instance: ${which.number} of ${which.of}`,
  );
  // 第一行说运行在哪里离开了规则（一行的报告只显示它），接着是哪一个实例。
  // The first line says where the run left the rules (a one-line report shows only it); the instance next.
  const cut = body.indexOf("\n");
  if (cut === -1) return `${body}\n${line}`;
  return `${body.slice(0, cut)}\n${line}\n${body.slice(cut + 1)}`;
}

function isInstanceMark(step: Value): boolean {
  return get(step, "kind") === INSTANCE;
}

// 一个测试的实例：一个，或 runs 的每一个和它的标记之后的步骤。第一个标记之前的步骤归第一个实例，
// 最后一个实例之后多出的标记留在最后一个实例的步骤里：两种情况下那个实例都在那里偏离。
// The instances of a test: one, or each of `runs` with the steps after its mark. Steps before the first
// mark go to the first instance; marks past the last instance stay in its steps: either way it diverges.
function instances(expected: Value, trace: readonly Value[]): Instance[] {
  const runs = asArray(get(expected, "runs"));
  if (runs === undefined) return [{ expected, steps: trace, which: undefined }];
  const segments: Value[][] = [[]];
  let marks = 0;
  for (const step of trace) {
    if (isInstanceMark(step)) {
      marks += 1;
      if (marks === 1) continue;
      if (segments.length < runs.length) {
        segments.push([]);
        continue;
      }
    }
    segments[segments.length - 1]!.push(step);
  }
  const shared: JsonObject = {};
  if (isObject(expected)) {
    for (const key of keysOf(expected)) if (key !== "runs") shared[key] = expected[key];
  }
  return runs.map((run, i) => ({
    expected: { ...shared, alternatives: get(run, "alternatives") ?? null },
    steps: segments[i] ?? [],
    which: { number: i + 1, of: runs.length, about: get(run, "about") },
  }));
}

// 决定结论的实例和它的比较：第一个偏离的，否则最后一个。/ The instance that decides: the first to diverge, else the last.
function focus(expected: Value, trace: readonly Value[]): { instance: Instance; divergence: Divergence | undefined } {
  const all = instances(expected, trace);
  if (all.length === 0) {
    const none: Instance = { expected: null, steps: trace, which: undefined };
    return { instance: none, divergence: compareOne(none.expected, none.steps) };
  }
  for (const instance of all) {
    const divergence = compareOne(instance.expected, instance.steps);
    if (divergence !== undefined) return { instance, divergence };
  }
  return { instance: all[all.length - 1]!, divergence: undefined };
}

// 和 expected 的每条路径比较：有一条匹配整条轨迹时返回 undefined，否则返回走得最远的那条的分歧。
// Compares `trace` with every alternative of `expected`: undefined when one of them matches the whole
// trace, otherwise the divergence of the alternative that went furthest.
function compareOne(expected: Value, trace: readonly Value[]): Divergence | undefined {
  const alternatives = asArray(get(expected, "alternatives")) ?? [];
  let furthest: Divergence | undefined;
  for (const alternative of alternatives) {
    const d = walk(alternative, trace);
    if (d === undefined) return undefined;
    if (furthest === undefined || d.index > furthest.index) furthest = d;
  }
  return furthest ?? { index: 0, actual: trace[0], expected: [], rule: "", detail: undefined };
}

interface Expected {
  after: number[];
  pattern: Value;
  rule: string;
  // 一个路径下的差异的更准确的规则（"caller"、"event.result"）。/ A more precise rule under a path.
  pathRules: [string, string][];
}

function stepsOf(alternative: Value): Expected[] {
  const steps = asArray(get(alternative, "steps")) ?? [];
  return steps.map((s) => {
    const after: number[] = [];
    for (const a of asArray(get(s, "after")) ?? []) {
      const index = asU64(a);
      if (index !== undefined) after.push(SafeNumber(index));
    }
    const pathRules: [string, string][] = [];
    const paths = get(s, "path_rules");
    if (isObject(paths)) {
      for (const key of keysOf(paths)) {
        const rule = paths[key];
        if (typeof rule === "string") pathRules.push([key, rule]);
      }
    }
    const pattern = get(s, "match");
    const rule = get(s, "rule");
    return {
      after,
      pattern: pattern === undefined ? null : pattern,
      rule: typeof rule === "string" ? rule : "",
      pathRules,
    };
  });
}

function walk(alternative: Value, trace: readonly Value[]): Divergence | undefined {
  const steps = stepsOf(alternative);
  const matched: boolean[] = steps.map(() => false);
  let bound: Bindings = new SafeMap();
  // 已经在别处匹配掉的轨迹步骤（迟到的事件，见下）。/ Trace steps matched out of their place (see below).
  const taken: boolean[] = trace.map(() => false);
  const enabled = (): number[] => {
    const out: number[] = [];
    for (let i = 0; i < steps.length; i += 1) {
      if (!matched[i] && steps[i]!.after.every((a) => matched[a] === true)) out.push(i);
    }
    return out;
  };
  const tryMatch = (actual: Value): [number, Bindings] | undefined => {
    for (const i of enabled()) {
      const trial: Bindings = new SafeMap(bound);
      if (matches(steps[i]!.pattern, actual, "", trial) === undefined) return [i, trial];
    }
    return undefined;
  };
  let index = 0;
  while (index < trace.length) {
    if (taken[index]) {
      index += 1;
      continue;
    }
    const actual = trace[index];
    const hit = tryMatch(actual);
    if (hit !== undefined) {
      matched[hit[0]] = true;
      bound = hit[1];
      index += 1;
      continue;
    }
    // 事件投递的自由：循环可以晚一些把事件交给 sink（排队、按顺序），所以轨迹的下一个事件可以排在运行
    // 自己的工作之后，但不能排在另一个事件或运行的结束之后。
    // The freedom of event delivery: a loop may hand its events to the sink later than the steps they
    // report (queued, delivered in order), so the next event of the trace may stand after steps of the
    // run's own work, never after another event or the run's end.
    let late: number | undefined;
    if (!isEvent(actual) && !isEnd(actual)) {
      for (let j = index + 1; j < trace.length; j += 1) {
        if (taken[j]) continue;
        if (isEvent(trace[j]) || isEnd(trace[j])) {
          if (isEvent(trace[j])) late = j;
          break;
        }
      }
    }
    const lateHit = late === undefined ? undefined : tryMatch(trace[late]);
    if (late === undefined || lateHit === undefined) return diverge(steps, enabled(), index, actual, bound);
    matched[lateHit[0]] = true;
    bound = lateHit[1];
    taken[late] = true;
  }
  const left = enabled();
  return left.length === 0 ? undefined : diverge(steps, left, trace.length, undefined, bound);
}

function isEvent(step: Value): boolean {
  return get(step, "kind") === "event";
}

// 运行之后再没有话说的一步：它的结果，或它怎样停下。/ A step after which a run has nothing more to say.
function isEnd(step: Value): boolean {
  const kind = get(step, "kind");
  return (
    kind === "result" ||
    kind === "panic" ||
    kind === "hang" ||
    kind === "overflow" ||
    kind === "timeout" ||
    kind === "exit" ||
    kind === "crash"
  );
}

// index 处的分歧：最接近的候选是和实际步骤同一种（事件还要同一种 type）的，这样信息能说出哪个字段不同；
// 否则是第一个候选。
// The divergence at `index`: the closest candidate is one of the same kind (and event type) as the
// actual step, so the message can say which field differs; otherwise the first candidate.
function diverge(
  steps: Expected[],
  candidates: number[],
  index: number,
  actual: Value | undefined,
  bound: Bindings,
): Divergence {
  const sameKind = (i: number) => actual !== undefined && labelKey(steps[i]!.pattern) === labelKey(actual);
  const closest = candidates.find(sameKind) ?? candidates[0];
  const detail =
    closest !== undefined && actual !== undefined && labelKey(steps[closest]!.pattern) === labelKey(actual)
      ? matches(steps[closest]!.pattern, actual, "", new SafeMap(bound))
      : undefined;
  let rule = "";
  if (closest !== undefined) {
    const step = steps[closest]!;
    const under = (prefix: string, path: string) =>
      path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
    let precise: string | undefined;
    if (detail !== undefined) {
      // Rust's max_by_key: the longest (in UTF-8 bytes), the last of equals.
      let best = -1;
      for (const [p, r] of step.pathRules) {
        if (!under(p, detail.path)) continue;
        const length = utf8Length(p);
        if (length >= best) {
          best = length;
          precise = r;
        }
      }
    }
    rule = precise ?? step.rule;
  }
  return {
    index,
    actual,
    expected: candidates.map((i) => steps[i]!.pattern),
    rule,
    detail,
  };
}

type Bindings = Map<string, Value>;

// actual（undefined：没有这个键）是否合 pattern。pattern 是一个必须相等的值，除了这些节点，即自由度：
// Whether `actual` (undefined: the key is missing) fits `pattern`. A pattern is a value that must be
// equal, except for these nodes, the freedoms:
//
// - {"$any": F}: anything, a missing key too (with "$without": [S…]: that holds none of the S; with
//   "$no_stack": true: whose strings hold no stack);
// - {"$text": F}: a non-empty string;
// - {"$carries": M, "$without": [S…]}: a string that contains M, none of the S, and no stack;
// - {"$one_of": [V…]}: one of the V;
// - {"$bind": NAME, "$match": P}: P; the first value matched under NAME is kept, and a later node with
//   that NAME must equal it (a free value stays the same wherever it travels);
// - {"$absent_or": V}: a missing key, or V (what a track's surface cannot carry).
//
// 返回第一处不同，合时返回 undefined。/ Returns the first difference, undefined when it fits.
export function matches(pattern: Value, actual: Value | undefined, path: string, bound: Bindings): Mismatch | undefined {
  const fail = (expected: string): Mismatch => ({
    path: path === "" ? "$" : path,
    expected,
    actual: actual === undefined ? "(missing)" : show(actual, 160),
  });
  if (isObject(pattern) && keysOf(pattern).some((k) => k.startsWith("$"))) {
    const node = pattern;
    if (hasOwn(node, "$any")) {
      // 自由值上的 $without：它里面哪里都没有这些文字（比如 Debug 的写法）。
      // `$without` on a free value: none of these texts anywhere in it (a Debug rendering, say).
      const without = asArray(node["$without"]) ?? [];
      const leaked = without.some((w) => typeof w === "string" && actual !== undefined && holdsText(actual, w));
      // $no_stack：它里面也没有哪个字符串带 stack。/ `$no_stack`: no string in it holds a stack either.
      const noStack = node["$no_stack"] === true;
      const stacked = noStack && actual !== undefined && holdsStack(actual);
      return leaked || stacked
        ? fail(`(anything without ${show(hasOwn(node, "$without") ? node["$without"] : null, 80)}${noStack ? ", and no stack" : ""})`)
        : undefined;
    }
    if (hasOwn(node, "$absent_or")) {
      return actual === undefined ? undefined : matches(node["$absent_or"], actual, path, bound);
    }
    if (actual === undefined) return fail(describe(pattern));
    if (hasOwn(node, "$text")) {
      return typeof actual === "string" && trim(actual) !== "" ? undefined : fail(describe(pattern));
    }
    const carried = node["$carries"];
    if (typeof carried === "string") {
      const without = asArray(node["$without"]) ?? [];
      const fits =
        typeof actual === "string" &&
        actual.includes(carried) &&
        !without.some((w) => typeof w === "string" && actual.includes(w)) &&
        !hasStack(actual);
      return fits ? undefined : fail(describe(pattern));
    }
    const options = asArray(node["$one_of"]);
    if (options !== undefined) {
      for (const option of options) {
        const trial: Bindings = new SafeMap(bound);
        if (matches(option, actual, path, trial) === undefined) {
          bound.clear();
          for (const [k, v] of trial) bound.set(k, v);
          return undefined;
        }
      }
      return fail(describe(pattern));
    }
    const name = node["$bind"];
    if (typeof name === "string") {
      if (bound.has(name)) {
        const earlier = bound.get(name);
        return same(earlier, actual) ? undefined : fail(show(earlier, 160));
      }
      const inner = hasOwn(node, "$match") ? node["$match"] : null;
      const mismatch = matches(inner, actual, path, bound);
      if (mismatch !== undefined) return mismatch;
      bound.set(name, actual);
      return undefined;
    }
    return fail(describe(pattern));
  }
  if (actual === undefined) return fail(show(pattern, 160));
  if (isObject(pattern) && isObject(actual)) {
    for (const key of keysOf(pattern)) {
      const mismatch = matches(pattern[key], hasOwn(actual, key) ? actual[key] : undefined, join(path, key), bound);
      if (mismatch !== undefined) return mismatch;
    }
    const extra = keysOf(actual).find((k) => !hasOwn(pattern, k));
    if (extra === undefined) return undefined;
    return { path: join(path, extra), expected: "(no such field)", actual: show(actual[extra], 160) };
  }
  if (isArray(pattern) && isArray(actual)) {
    for (let i = 0; i < pattern.length; i += 1) {
      const mismatch = matches(pattern[i], i < actual.length ? actual[i] : undefined, `${path}[${i}]`, bound);
      if (mismatch !== undefined) return mismatch;
    }
    if (actual.length > pattern.length) {
      return { path: `${path}[${pattern.length}]`, expected: "(no such item)", actual: show(actual[pattern.length], 160) };
    }
    return undefined;
  }
  return same(pattern, actual) ? undefined : fail(show(pattern, 160));
}

// value 里有没有哪个字符串带 stack。/ Whether any string in `value` holds a stack.
function holdsStack(value: Value): boolean {
  if (typeof value === "string") return hasStack(value);
  if (isArray(value)) return value.some((v) => holdsStack(v));
  if (isObject(value)) return keysOf(value).some((k) => holdsStack(value[k]));
  return false;
}

// value 里（键也算）有没有哪个字符串含 text。/ Whether any string in `value` (a key too) contains `text`.
function holdsText(value: Value, text: string): boolean {
  if (typeof value === "string") return value.includes(text);
  if (isArray(value)) return value.some((v) => holdsText(v, text));
  if (isObject(value)) return keysOf(value).some((k) => k.includes(text) || holdsText(value[k], text));
  return false;
}

// JSON 相等，数按数值比较（1 和 1.0 是同一个数）。/ JSON equality, with numbers compared by value.
function same(a: Value, b: Value): boolean {
  if (typeof a === "number" && typeof b === "number") return asF64(a) === asF64(b);
  if (isArray(a) && isArray(b)) return a.length === b.length && a.every((p, i) => same(p, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = keysOf(a);
    return keys.length === keysOf(b).length && keys.every((k) => hasOwn(b, k) && same(a[k], b[k]));
  }
  if (typeof a === "number" || typeof b === "number") return false;
  if (isArray(a) || isArray(b) || isObject(a) || isObject(b)) return false;
  return a === b;
}

// 一段文字里有没有栈：一行帧（`    at f (file.ts:3:9)`）、panic 的位置或 backtrace，或源码位置
// （`agent_loop.rs:12`）。
// Whether a text holds a stack: a frame line (`    at f (file.ts:3:9)`), a panic's location or
// backtrace, or a source position (`agent_loop.rs:12`).
export function hasStack(text: string): boolean {
  const frame = lines(text).some((line) => {
    const l = trimStart(line);
    return l.startsWith("at ") && utf8Length(l) > 3;
  });
  const words = ["panicked at", "stack backtrace", "RUST_BACKTRACE"];
  return frame || words.some((w) => text.includes(w)) || hasPosition(text);
}

// `name.rs:12`、`name.ts:3:9` 之类。/ `name.rs:12`, `name.ts:3:9` and the like.
function hasPosition(text: string): boolean {
  return [".rs:", ".ts:", ".js:", ".mjs:", ".cjs:"].some((ext) => {
    let at = text.indexOf(ext);
    while (at !== -1) {
      const next = text.charCodeAt(at + ext.length);
      if (next >= 0x30 && next <= 0x39) return true;
      at = text.indexOf(ext, at + ext.length);
    }
    return false;
  });
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

// 一行里的一个值，截到大约 max 个字符。/ A value on one line, cut to about `max` characters.
export function show(value: Value, max: number): string {
  return cut(toJson(value), max);
}

// 前 max 个字符（Unicode 标量值）再加 "…"，不超过时原样。/ The first `max` chars and "…", or all of it.
function cut(text: string, max: number): string {
  let count = 0;
  let at = 0;
  for (const c of text) {
    if (count === max) return `${text.slice(0, at)}…`;
    count += 1;
    at += c.length;
  }
  return text;
}

// 自由度节点接受什么，用信息能显示的话说。/ What a freedom node accepts, in words the message can show.
function describe(pattern: Value): string {
  const node: JsonObject = isObject(pattern) ? pattern : {};
  if (hasOwn(node, "$text")) return "(any non-empty text)";
  const carried = node["$carries"];
  if (typeof carried === "string") return `(a text that carries ${debugString(carried)}, without a stack or Debug output)`;
  const options = asArray(node["$one_of"]);
  if (options !== undefined) return `(one of ${options.map((o) => show(o, 60)).join(", ")})`;
  if (hasOwn(node, "$match")) return describeOrShow(node["$match"]);
  return show(pattern, 160);
}

function describeOrShow(value: Value): string {
  return isObject(value) && keysOf(value).some((k) => k.startsWith("$")) ? describe(value) : show(value, 160);
}

// ---------------------------------------------------------------------------------------------------
// 标签：几个字说出一步，给信息和时间线用 / Labels: a step in a few words, for messages and timelines
// ---------------------------------------------------------------------------------------------------

function textOf(value: Value, key: string): string {
  const text = get(value, key);
  return typeof text === "string" ? text : "?";
}

// 这是哪一种步骤，准确到能把期望的一步和实际的一步配对。/ What kind of step this is.
function labelKey(step: Value): string {
  const kind = textOf(step, "kind");
  if (kind === "event") return `event:${textOf(get(step, "event") ?? null, "type")}`;
  if (kind === "driver") return `driver:${textOf(step, "action")}`;
  return kind;
}

// 几个字的一步：`request #2`、`tool_end(c1)`、`turn_end(stop)`、`test: release(c1)`。
// A step in a few words: `request #2`, `tool_end(c1)`, `turn_end(stop)`, `test: release(c1)`.
export function label(step: Value): string {
  const kind = textOf(step, "kind");
  switch (kind) {
    case "request":
      return `request #${asU64(get(step, "n")) ?? "0"}`;
    case "event": {
      const event = get(step, "event") ?? null;
      const idOf = (key: string) => {
        const holder = get(event, key) ?? null;
        const named = get(holder, "id");
        const id = named !== undefined ? named : get(holder, "toolCallId");
        return typeof id === "string" ? id : "?";
      };
      const type = textOf(event, "type");
      switch (type) {
        case "model_event":
          return `model_event(${textOf(get(event, "event") ?? null, "type")})`;
        case "tool_start":
          return `tool_start(${idOf("call")})`;
        case "tool_progress":
          return `tool_progress(${textOf(event, "toolCallId")})`;
        case "tool_end":
          return `tool_end(${idOf("result")})`;
        case "tool_skipped":
          return `tool_skipped(${idOf("result")})`;
        case "turn_end":
          return `turn_end(${describeOrLabel(get(event, "reason"))})`;
        default:
          return type;
      }
    }
    case "exec_enter":
      if (textOf(step, "via") === "tool") return `tool(${textOf(step, "tool")})`;
      return `executor(${textOf(get(step, "call") ?? null, "id")})`;
    case "exec_progress":
      return `reportProgress(${textOf(step, "ref")})`;
    case "exec_leave":
      return `${textOf(step, "ref")} returns`;
    case "driver": {
      const action = textOf(step, "action");
      if (action === "release") return `test: release(${textOf(step, "ref")})`;
      if (action === "gave_up") return `test: gave_up(${textOf(step, "waiting_for")})`;
      if (action === "stream_end") return `test: stream_end(#${asU64(get(step, "n")) ?? 0})`;
      return `test: ${action}`;
    }
    case "caller":
      return `caller(${textOf(step, "state")})`;
    case "result":
      return `return(${describeOrLabel(get(step, "reason"))})`;
    case "panic":
      return `crash: ${cut(textOf(step, "message"), 120)}`;
    case "hang":
      return "hang";
    default:
      return kind;
  }
}

function describeOrLabel(value: Value | undefined): string {
  if (typeof value === "string") return value;
  if (value !== undefined) return describeOrShow(value);
  return "?";
}

// ---------------------------------------------------------------------------------------------------
// 信息 / The message
// ---------------------------------------------------------------------------------------------------

function pick(lang: Lang, zh: string, en: string): string {
  if (lang === "zh") return zh;
  if (lang === "en") return en;
  return `${zh}\n${en}`;
}

// todo!() 或未实现的 throw 说出的 Lab：它信息里的 `Lab 7.3`。/ The Lab a todo!() or not-implemented throw names.
export function labReached(step: Value): string | undefined {
  if (textOf(step, "kind") !== "panic") return undefined;
  const text = textOf(step, "message");
  let at = -1;
  for (const marker of ["not yet implemented: Lab ", "not implemented: Lab ", "TODO(Lab "]) {
    const found = text.indexOf(marker);
    if (found !== -1) {
      at = found + marker.length;
      break;
    }
  }
  if (at === -1) return undefined;
  let lab = "";
  for (const c of text.slice(at)) {
    if ((c >= "0" && c <= "9") || c === ".") lab += c;
    else break;
  }
  while (lab.endsWith(".")) lab = lab.slice(0, -1);
  return lab !== "" ? lab : undefined;
}

// 评分器放进期望轨迹里的测试自己的 Lab（"test": {"lab", "group"}）；手动运行没有。
// The Lab of the test itself, when the grader put it in the expected trace; hand runs go without.
function testLab(expected: Value): { own: string; group: Value } | undefined {
  const test = get(expected, "test");
  if (test === undefined) return undefined;
  const own = get(test, "lab");
  const group = get(test, "group");
  return typeof own === "string" && group !== undefined ? { own, group } : undefined;
}

// 分歧的说明：运行在哪里离开了本章的规则，那里期望什么，发生了什么，是哪条规则、哪个 Lab 的，以及
// 到那里为止的运行。
// The divergence explained: where the run left the chapter's rules, what was expected there, what
// happened, which rule that is and whose Lab, and the run so far.
// 差异自己的话的中文：(no such item)、(no such field)、(missing)。/ A mismatch's own words in Chinese.
function zhWord(text: string): string {
  if (text === "(no such item)") return "（没有这一项）";
  if (text === "(no such field)") return "（没有这个字段）";
  if (text === "(missing)") return "（缺少）";
  return text;
}

// d 是 compare 对同一 expected 和 trace 找到的；多个实例时，信息先说出是哪一个。
// `d` is what compare found for the same expected and trace; for several instances the message names it.
export function message(expected: Value, trace: readonly Value[], d: Divergence, lang: Lang): string {
  return explain(focus(expected, trace).instance, d, lang);
}

function messageOne(expected: Value, trace: readonly Value[], d: Divergence, lang: Lang): string {
  const rules = get(expected, "rules");
  const rule = isObject(rules) && hasOwn(rules, d.rule) ? rules[d.rule] : undefined;
  const ruleText = (l: string) => {
    const text = get(rule, l);
    return typeof text === "string" ? text : "";
  };
  const labValue = get(rule, "lab");
  const lab = typeof labValue === "string" ? labValue : "?";
  const group = (l: string) => {
    const g = get(get(rule, "group"), l);
    return typeof g === "string" ? g : "";
  };
  const stepNo = d.index + 1;
  const labels = d.expected.map(label);
  let wanted: string;
  if (labels.length === 0) wanted = pick(lang, "（运行应已结束）", "(the run should have ended)");
  else if (labels.length === 1) wanted = labels[0]!;
  else wanted = pick(lang, `以下之一：${labels.join("、")}`, `one of: ${labels.join(", ")}`);
  const happened = d.actual !== undefined ? label(d.actual) : pick(lang, "（记录到此结束）", "(the trace ends here)");
  const out: string[] = [];
  const reached = d.actual !== undefined ? labReached(d.actual) : undefined;
  // 不再有任何动作的运行：一句平实的话，在它卡住的每个测试里都一样；没有规则，也没有驱动程序自己的话。
  // A run that stopped doing anything gets one plain sentence, the same on every test it hangs in.
  const kind = d.actual !== undefined ? textOf(d.actual, "kind") : "";
  const hung = kind === "hang" || kind === "timeout";
  if (reached !== undefined) {
    const reachedZh = `第 ${stepNo} 步到达了 Lab ${reached} 还没写完的部分（骨架留下的占位）`;
    const reachedEn = `step ${stepNo} reached Lab ${reached}'s unfinished part (a placeholder the skeleton left)`;
    const test = testLab(expected);
    if (test !== undefined && test.own !== reached) {
      // 后面的 Lab 的测试需要前面的 Lab：先完成哪一个。/ A later Lab's test that needs an earlier one.
      const name = (l: string) => {
        const v = get(test.group, l);
        return typeof v === "string" ? v : "";
      };
      out.push(
        pick(
          lang,
          `这个测试属于 Lab ${test.own}（${name("zh")}）；${reachedZh}：先完成 Lab ${reached}。`,
          `this test belongs to Lab ${test.own} (${name("en")}); ${reachedEn}: finish Lab ${reached} first.`,
        ),
      );
    } else if (test !== undefined) {
      out.push(pick(lang, `${reachedZh}：这正是这个 Lab 要你写的部分。`, `${reachedEn}: this is the part this Lab asks you to write.`));
    } else {
      out.push(pick(lang, `${reachedZh}：先完成 Lab ${reached}。`, `${reachedEn}: finish Lab ${reached} first.`));
    }
    out.push(`  ${textOf(d.actual ?? null, "message")}`);
  } else if (hung) {
    out.push(
      pick(
        lang,
        `第 ${stepNo} 步：你的循环没有返回，之后也再没有任何动作（是死循环，还是在 await 期间一直持有着锁？）`,
        `step ${stepNo}: your loop did not return, and did nothing more (an endless loop, or a lock held across an await?)`,
      ),
    );
  } else {
    out.push(
      pick(
        lang,
        `第 ${stepNo} 步偏离了本章的规则（Lab ${lab} ${group("zh")}）`,
        `step ${stepNo} left the chapter's rules (Lab ${lab}, ${group("en")})`,
      ),
    );
  }
  const m = hung ? undefined : d.detail;
  if (m !== undefined && reached === undefined && d.expected.length === 1 && wanted === happened) {
    // 步骤本身如期而至，只在内部不同：同一个标签写两遍读起来像是对的，所以先说哪里、怎样不同。
    // The step came as expected and differs only inside: the message leads with the difference.
    out.push(
      pick(
        lang,
        `  ${happened} 的 ${m.path}：应为 ${zhWord(m.expected)}，实际 ${zhWord(m.actual)}`,
        `  in ${happened}, at ${m.path}: expected ${m.expected}, got ${m.actual}`,
      ),
    );
  } else {
    out.push(pick(lang, `  应为：${wanted}`, `  expected: ${wanted}`));
    if (!hung) out.push(pick(lang, `  实际：${happened}`, `  happened: ${happened}`));
    if (m !== undefined) {
      out.push(
        pick(
          lang,
          `  在 ${m.path}：应为 ${zhWord(m.expected)}，实际 ${zhWord(m.actual)}`,
          `  at ${m.path}: expected ${m.expected}, got ${m.actual}`,
        ),
      );
    }
  }
  if (reached === undefined && !hung && ruleText("en") !== "") {
    out.push(pick(lang, `  规则：${ruleText("zh")}`, `  rule: ${ruleText("en")}`));
  }
  const soFar = trace.slice(0, Math.min(d.index, trace.length)).map(label);
  const skip = Math.max(soFar.length - 24, 0);
  let shown = soFar.slice(skip).join(" → ");
  if (skip !== 0) shown = `… ${shown}`;
  out.push(
    pick(lang, `  到此为止：${shown === "" ? "（无）" : shown}`, `  so far: ${shown === "" ? "(nothing)" : shown}`),
  );
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------------
// serde_json 眼中的值 / Values as serde_json sees them
// ---------------------------------------------------------------------------------------------------

function isObject(value: Value): value is JsonObject {
  return typeof value === "object" && value !== null && !isArray(value);
}

// serde_json 的 Value::get：对象的一个键，别的值都没有键。/ Value::get: an object's key; nothing else has keys.
function get(value: Value, key: string): Value | undefined {
  return isObject(value) && hasOwn(value, key) ? value[key] : undefined;
}

function asArray(value: Value | undefined): Value[] | undefined {
  return isArray(value) ? value : undefined;
}

// 对象的键，按 serde_json 的 Map（BTreeMap）的顺序：按 UTF-8 字节，也就是按码点。
// An object's keys in the order of serde_json's Map (a BTreeMap): by UTF-8 bytes, that is by code point.
function keysOf(value: JsonObject): string[] {
  const keys: string[] = [];
  for (const key of ownKeys(value)) if (typeof key === "string") keys.push(key);
  return keys.sort(byCodePoint);
}

function byCodePoint(a: string, b: string): number {
  const x = a[Symbol.iterator]();
  const y = b[Symbol.iterator]();
  for (;;) {
    const p = x.next();
    const q = y.next();
    if (p.done || q.done) return p.done && q.done ? 0 : p.done ? -1 : 1;
    const cp = p.value.codePointAt(0)!;
    const cq = q.value.codePointAt(0)!;
    if (cp !== cq) return cp < cq ? -1 : 1;
  }
}

function utf8Length(text: string): number {
  let length = 0;
  for (const c of text) {
    const cp = c.codePointAt(0)!;
    length += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return length;
}

// Rust 的 str::lines：按 \n 分，去掉行尾的一个 \r（只在 \n 前）。/ Rust's str::lines.
function lines(text: string): string[] {
  const parts = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < parts.length; i += 1) {
    const line = parts[i]!;
    const ended = i < parts.length - 1;
    if (!ended && line === "") break;
    out.push(ended && line.endsWith("\r") ? line.slice(0, -1) : line);
  }
  return out;
}

// Rust 的 char::is_whitespace（Unicode 的 White_Space），和 JavaScript 的 trim 不完全一样。
// Rust's char::is_whitespace (Unicode White_Space), which JavaScript's trim differs from.
function isWhitespace(c: string): boolean {
  const cp = c.codePointAt(0)!;
  return (
    (cp >= 0x09 && cp <= 0x0d) ||
    cp === 0x20 ||
    cp === 0x85 ||
    cp === 0xa0 ||
    cp === 0x1680 ||
    (cp >= 0x2000 && cp <= 0x200a) ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    cp === 0x202f ||
    cp === 0x205f ||
    cp === 0x3000
  );
}

function trimStart(text: string): string {
  let at = 0;
  for (const c of text) {
    if (!isWhitespace(c)) break;
    at += c.length;
  }
  return text.slice(at);
}

function trim(text: string): string {
  const chars = [...trimStart(text)];
  while (chars.length > 0 && isWhitespace(chars.at(-1)!)) chars.pop();
  return chars.join("");
}

// Rust 的 `{:?}` 写一个 &str：引号，\0 \t \r \n \\ \" 转义，不可打印的字符和组合用字符写成 \u{…}。
// Rust's `{:?}` of a &str: quoted, with \0 \t \r \n \\ \" escaped, and characters that are not printable
// or that extend a grapheme written as \u{…}.
function debugString(text: string): string {
  let out = '"';
  for (const c of text) {
    if (c === "\0") out += "\\0";
    else if (c === "\t") out += "\\t";
    else if (c === "\r") out += "\\r";
    else if (c === "\n") out += "\\n";
    else if (c === "\\") out += "\\\\";
    else if (c === '"') out += '\\"';
    else if (GRAPHEME_EXTEND.test(c) || (c !== " " && NOT_PRINTABLE.test(c))) {
      out += `\\u{${c.codePointAt(0)!.toString(16)}}`;
    } else out += c;
  }
  return `${out}"`;
}

// 和 Rust 的 core::unicode::printable 同样的类别。/ The same categories as Rust's printable table.
const NOT_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;
const GRAPHEME_EXTEND = /^\p{Grapheme_Extend}$/u;

// serde_json 读一个数：JSON.stringify 写出的文字是整数时读成 u64 或 i64（放得下的话），否则读成 f64，
// 用它自己的算法（不总是最接近的那个 f64）。
// How serde_json reads a number: the text JSON.stringify writes is read as a u64 or an i64 when it is
// an integer that fits, otherwise as an f64, with its own algorithm (not always the nearest f64).
type SerdeNumber = { int: string } | { float: number };

const U64_MAX = SafeBigInt("18446744073709551615");
const I64_MIN = SafeBigInt("-9223372036854775808");
const POW10: number[] = [];
for (let i = 0; i <= 308; i += 1) POW10.push(SafeNumber(`1e${i}`));

function serdeNumber(value: number): SerdeNumber {
  const text = stringify(value) as string;
  let at = 0;
  const negative = text[0] === "-";
  if (negative) at += 1;
  const digit = () => text.charCodeAt(at) - 0x30;
  const isDigit = () => at < text.length && digit() >= 0 && digit() <= 9;
  let significand = SafeBigInt(0);
  let exponent = 0;
  let overflowed = false;
  // Integer part (parse_integer, parse_long_integer).
  while (isDigit()) {
    const d = SafeBigInt(digit());
    if (!overflowed && significand * SafeBigInt(10) + d > U64_MAX) overflowed = true;
    if (overflowed) exponent += 1;
    else significand = significand * SafeBigInt(10) + d;
    at += 1;
  }
  if (at === text.length && !overflowed) {
    if (!negative) return { int: text };
    const neg = -significand;
    // -0 and what does not fit an i64 are read as floats.
    if (neg < I64_MIN || neg === SafeBigInt(0)) return { float: -SafeNumber(significand) };
    return { int: text };
  }
  // Fraction (parse_decimal; parse_decimal_overflow: from the first digit that does not fit a u64 on,
  // every digit is dropped).
  if (text[at] === ".") {
    at += 1;
    let dropped = false;
    while (isDigit()) {
      const d = SafeBigInt(digit());
      if (!dropped && significand * SafeBigInt(10) + d > U64_MAX) dropped = true;
      if (!dropped) {
        significand = significand * SafeBigInt(10) + d;
        exponent -= 1;
      }
      at += 1;
    }
  }
  // Exponent (parse_exponent).
  if (text[at] === "e" || text[at] === "E") {
    at += 1;
    let positive = true;
    if (text[at] === "+") at += 1;
    else if (text[at] === "-") {
      positive = false;
      at += 1;
    }
    let exp = 0;
    while (isDigit()) {
      exp = exp * 10 + digit();
      at += 1;
    }
    exponent = positive ? exponent + exp : exponent - exp;
  }
  // f64_from_parts.
  let f = SafeNumber(significand);
  for (;;) {
    const pow = POW10[Math.abs(exponent)];
    if (pow !== undefined) {
      if (exponent >= 0) f *= pow;
      else f /= pow;
      break;
    }
    if (f === 0 || exponent >= 0) break;
    f /= 1e308;
    exponent += 308;
  }
  return { float: negative ? -f : f };
}

// serde_json 的 as_u64：非负、放得下 u64 的整数，以它的十进制文字。/ serde_json's as_u64, as its digits.
function asU64(value: Value | undefined): string | undefined {
  if (typeof value !== "number") return undefined;
  const n = serdeNumber(value);
  return "int" in n && !n.int.startsWith("-") ? n.int : undefined;
}

function asF64(value: number): number {
  const n = serdeNumber(value);
  return "int" in n ? SafeNumber(SafeBigInt(n.int)) : n.float;
}

// serde_json 的紧凑写法（Value 的 to_string）：键按顺序，数照 serde_json 的写法。
// serde_json's compact rendering (Value's to_string): keys in order, numbers as serde_json writes them.
function toJson(value: Value): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return numberText(value);
  if (typeof value === "string") return stringify(value) as string;
  if (isArray(value)) return `[${value.map(toJson).join(",")}]`;
  if (isObject(value)) {
    return `{${keysOf(value)
      .map((k) => `${stringify(k) as string}:${toJson(value[k])}`)
      .join(",")}}`;
  }
  return "null";
}

// 一个 f64 的写法：最短的能读回的数字，指数在 -5..=15 时写成小数（总带小数点），否则写成 d.ddde±x。
// An f64 as serde_json writes it: the shortest digits that read back, as a decimal (always with a point)
// when the exponent is within -5..=15, otherwise as d.ddde±x.
function numberText(value: number): string {
  const n = serdeNumber(value);
  if ("int" in n) return n.int;
  const f = n.float;
  if (f === 0) return Object.is(f, -0) ? "-0.0" : "0.0";
  const sign = f < 0 ? "-" : "";
  const [mantissa, exp] = Math.abs(f).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const e = SafeNumber(exp);
  if (e >= -5 && e <= 15) {
    if (digits.length - 1 <= e) return `${sign}${digits}${"0".repeat(e + 1 - digits.length)}.0`;
    if (e >= 0) return `${sign}${digits.slice(0, e + 1)}.${digits.slice(e + 1)}`;
    return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  }
  const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${head}e${e >= 0 ? "+" : "-"}${Math.abs(e)}`;
}
