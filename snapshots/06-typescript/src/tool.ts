// 模型可以调用的工具、保存它们的 registry，以及把一次调用变成恰好一条结果的 executor。
// Tools the model may call, the registry that holds them, and the executor that turns one call into
// exactly one result.

import { errorResult, type TextContent, type ToolCall, type ToolResultMessage } from "./message.js";

// 模型看到的工具说明。parameters 是参数的 JSON schema。
// What the model is told about a tool. `parameters` is a JSON schema for the arguments.
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

// 正在执行的工具能知道的外部情况。
// What a running tool may know about its surroundings.
export interface ToolContext {
  // 运行被取消时 aborted；耗时的工具应留意它并提前停下。
  // Aborted when the run is cancelled; a long tool should watch it and stop early.
  signal: AbortSignal;
  // 工具还在运行时的部分输出。/ Partial output while the tool is still running.
  reportProgress: (content: TextContent[]) => void;
}

// 工具成功时返回的东西。/ What a tool returns when it succeeds.
export interface ToolOutput {
  content: TextContent[];
  // 给程序用的结构化数据，原样进入结果。/ Structured data for programs, passed to the result unchanged.
  details?: unknown;
}

export interface Tool {
  definition: ToolDefinition;
  // 参数已按 definition.parameters 检查过。失败就 throw：executor 会把它变成错误结果。
  // The arguments were checked against definition.parameters. Throw to fail: the executor turns it
  // into an error result.
  execute(args: unknown, context: ToolContext): Promise<ToolOutput>;
}

// 执行一次调用，返回它的结果。第 07 章可以换掉内置的 executor（例如先问用户）。
// Runs one call and returns its result. Chapter 07 may replace the built-in one (to ask the user first).
export type ToolExecutor = (call: ToolCall, context: ToolContext) => Promise<ToolResultMessage>;

// 一次运行可用的工具，按注册顺序。重名注册会在原位置替换旧工具：模型绝不能看到两个同名工具。
// The tools available to a run, in registration order. Registering a taken name replaces the earlier
// tool in its place: the model must never see two tools with one name.
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();

  register(tool: Tool): this {
    this.#tools.set(tool.definition.name, tool);
    return this;
  }

  definitions(): ToolDefinition[] {
    return [...this.#tools.values()].map((tool) => tool.definition);
  }

  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }
}

// 执行一次调用，总是返回与 call.id、call.name 配对的结果。模型造成的失败（未知工具、参数不对）
// 和工具报告的失败都变成 isError 结果，模型可以读到并应对；它们都不会让 agent 停下。
// Runs one call and always returns its result, paired to call.id and call.name. Every failure the model
// can cause (an unknown tool, bad arguments) or a tool can report becomes an isError result the model
// can read and react to; none of them stops the agent.
export async function executeToolCall(
  call: ToolCall,
  registry: ToolRegistry,
  context: ToolContext,
): Promise<ToolResultMessage> {
  const tool = registry.get(call.name);
  if (tool === undefined) return errorResult(call, `Tool "${call.name}" not found`);
  const problem = checkArguments(tool.definition.parameters, call.arguments);
  if (problem !== undefined) {
    return errorResult(call, `Invalid arguments for tool "${call.name}": ${problem}`);
  }
  try {
    const output = await tool.execute(call.arguments, context);
    return {
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: output.content,
      // 没有 details 就不写这个键，和线上格式一致。/ No details, no key, as on the wire.
      ...(output.details === undefined ? {} : { details: output.details }),
      isError: false,
    };
  } catch (error) {
    return errorResult(call, error instanceof Error ? error.message : String(error));
  }
}

// 内置 executor：按 registry 执行。/ The built-in executor: runs calls against `registry`.
export function registryExecutor(registry: ToolRegistry): ToolExecutor {
  return (call, context) => executeToolCall(call, registry, context);
}

// 故意很小的 JSON schema 检查：参数是对象、必填属性都在、已描述属性的基本类型。其余交给工具。
// A deliberately small JSON-schema check: an object, its required properties, and the primitive type
// of each property the schema describes. Anything else is left to the tool.
function checkArguments(schema: Record<string, unknown>, args: unknown): string | undefined {
  if (schema["type"] !== "object") return undefined;
  if (typeOf(args) !== "object") return `expected an object, got ${typeOf(args)}`;
  const object = args as Record<string, unknown>;
  const required = Array.isArray(schema["required"]) ? schema["required"] : [];
  for (const name of required) {
    if (typeof name === "string" && !(name in object)) return `missing required property "${name}"`;
  }
  const properties = (schema["properties"] ?? {}) as Record<string, { type?: unknown }>;
  for (const [name, value] of Object.entries(object)) {
    const expected = properties[name]?.type;
    if (typeof expected === "string" && !hasType(value, expected)) {
      return `property "${name}" must be ${expected}, got ${typeOf(value)}`;
    }
  }
  return undefined;
}

function hasType(value: unknown, expected: string): boolean {
  // JSON 只有一种数字；integer 是没有小数部分的数字。/ JSON has one number type; an integer has no fraction.
  if (expected === "integer") return Number.isInteger(value);
  const known = ["string", "number", "boolean", "object", "array", "null"];
  // 不认识的类型交给工具自己检查。/ A type this check does not know is left to the tool.
  return known.includes(expected) ? typeOf(value) === expected : true;
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
