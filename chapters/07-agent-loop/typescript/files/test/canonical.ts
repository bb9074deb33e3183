// 步骤里的值的规范形式（docs/JUDGE.md）：两个语言的驱动程序对同一次运行写出同一份 JSON。
// The canonical form of the values in a step (docs/JUDGE.md), so the drivers of both tracks write the
// same JSON for the same run:
//
// - 学习者给的值先变成纯 JSON 数据，只读一次，读法和调用方一样：逐个读它自己的可枚举属性（getter 和
//   Proxy 在这里运行，之后不再碰它），从不调用 toJSON，所以记下的就是调用方读到的；
//   a learner's value becomes plain JSON data first, read once, the way a caller reads it: its own
//   enumerable properties one by one (its getters and Proxy traps run here, and it is never touched
//   again), never its toJSON, so what is recorded is what a caller reads;
// - details 和 errorMessage 只在有时出现（JSON 本就丢掉 undefined）：null 和没有这个键是两个不同的值；
//   `details` and `errorMessage` appear only when set (JSON drops undefined already): null and no key at
//   all are two different values;
// - 已知形状的键按线上格式的顺序排列，多出来的键原样留在后面（它们也是观察到的）。
//   the keys of a known shape come in wire order; extra keys stay, after them (they were observed too).

import { SafeError, create, hasOwn, isArray, isFinite, keys, ownKeys } from "./safe.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

// 写不成 JSON 的值（循环引用、BigInt……）在步骤里的样子。/ A value JSON cannot hold (a cycle, a BigInt...).
export const NOT_JSON = "<not JSON>";

export function plain(value: unknown): Json {
  try {
    return read(value, []) ?? null;
  } catch {
    // A cycle, a BigInt, a getter or a trap that throws, a value nested past the stack.
    return NOT_JSON;
  }
}

// JSON 的规则，但按属性读：undefined、函数和 symbol 在对象里省略、在数组里是 null；非有限的数是 null。
// JSON's rules, read by property: undefined, functions and symbols are left out of an object and null
// in an array; a number that is not finite is null. `open` holds the objects being read (a cycle).
function read(value: unknown, open: object[]): Json | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return isFinite(value) ? value + 0 : null;
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    case "bigint":
      throw new SafeError("a BigInt is not JSON");
  }
  if (value === null) return null;
  const object = value as { [key: string]: unknown };
  if (open.includes(object)) throw new SafeError("a cycle is not JSON");
  open.push(object);
  let out: Json;
  if (isArray(object)) {
    const items: Json[] = [];
    const length = (object as unknown as unknown[]).length;
    for (let i = 0; i < length; i++) items.push(read(object[i], open) ?? null);
    out = items;
  } else {
    // Without a prototype, so a key named "__proto__" is kept as a key like any other.
    const fields = create(null) as JsonObject;
    for (const key of keys(object)) {
      const item = read(object[key], open);
      if (item !== undefined) fields[key] = item;
    }
    out = fields;
  }
  open.pop();
  return out;
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !isArray(value);
}

// 先放 keys（有的才放），再放其余的键。/ `keys` first (those present), then every other key.
function ordered(value: JsonObject, keys: readonly string[]): JsonObject {
  // Without a prototype, so a key named "__proto__" is kept as a key like any other.
  const out = create(null) as JsonObject;
  for (const key of keys) {
    if (hasOwn(value, key)) out[key] = value[key]!;
  }
  for (const key of ownKeys(value)) {
    if (typeof key === "string" && !hasOwn(out, key)) out[key] = value[key]!;
  }
  return out;
}

function list(value: Json | undefined, each: (item: Json) => Json): Json {
  return isArray(value) ? value.map(each) : (value ?? null);
}

// value 的一份浅拷贝，其中 key（有的话）换成 f 的结果。/ A shallow copy of `value`, its `key` (if any) mapped by f.
function mapped(value: JsonObject, key: string, f: (item: Json) => Json): JsonObject {
  if (!hasOwn(value, key)) return value;
  const out = ordered(value, []);
  out[key] = f(value[key]!);
  return out;
}

export function block(value: Json): Json {
  if (!isObject(value)) return value;
  if (value["type"] === "text") return ordered(value, ["type", "text"]);
  if (value["type"] === "toolCall") return ordered(value, ["type", "id", "name", "arguments"]);
  return value;
}

export function blocks(value: Json | undefined): Json {
  return list(value, block);
}

export function message(value: Json): Json {
  if (!isObject(value)) return value;
  const withContent = mapped(value, "content", blocks);
  switch (value["role"]) {
    case "user":
      return ordered(withContent, ["role", "content"]);
    case "assistant":
      return ordered(withContent, ["role", "content", "stopReason", "errorMessage"]);
    case "toolResult":
      return ordered(withContent, ["role", "toolCallId", "toolName", "content", "details", "isError"]);
    default:
      return value;
  }
}

export function messages(value: Json | undefined): Json {
  return list(value, message);
}

export function modelEvent(value: Json): Json {
  if (!isObject(value)) return value;
  const event = mapped(mapped(value, "partial", message), "call", block);
  switch (value["type"]) {
    case "start":
      return ordered(event, ["type", "partial"]);
    case "text_delta":
      return ordered(event, ["type", "delta", "partial"]);
    case "tool_call":
      return ordered(event, ["type", "call", "partial"]);
    case "done":
      return ordered(event, ["type", "reason"]);
    case "error":
      return ordered(event, ["type", "message"]);
    default:
      return value;
  }
}

export function loopEvent(value: Json): Json {
  if (!isObject(value)) return value;
  switch (value["type"]) {
    case "model_event":
      return ordered(mapped(value, "event", modelEvent), ["type", "event"]);
    case "assistant_message":
      return ordered(mapped(value, "message", message), ["type", "message"]);
    case "tool_start":
      return ordered(mapped(value, "call", block), ["type", "call"]);
    case "tool_progress":
      return ordered(mapped(value, "content", blocks), ["type", "toolCallId", "content"]);
    case "tool_end":
    case "tool_skipped":
      return ordered(mapped(value, "result", message), ["type", "result"]);
    case "turn_end":
      return ordered(value, ["type", "reason"]);
    default:
      return value;
  }
}
