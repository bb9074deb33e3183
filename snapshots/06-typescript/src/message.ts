// 用户、模型与工具之间的对话。字段名与 pi 的线上格式一致（role、type 标签，camelCase），
// 一方保存的 transcript 另一方可以原样重放。
// The conversation between the user, the model and the tools. Field names follow pi's wire shape
// (a `role` tag on messages, a `type` tag on content blocks, camelCase), so a saved transcript replays as is.

export interface TextContent {
  type: "text";
  text: string;
}

// 模型请求的一个动作；对应的结果用 id 回答它。
// The model asking for one action; the matching result answers to `id`.
export interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  // 模型写出的参数，未经检查：被截断时可能不是对象。
  // The arguments as the model wrote them, unchecked: a truncated response may leave them malformed.
  arguments: unknown;
}

export type ContentBlock = TextContent | ToolCall;

// 模型为什么停止写这条消息。
// Why the model stopped writing this message.
//   stop: 答完了 / finished its answer;  toolUse: 要执行消息里的调用 / wants its calls run;
//   length: 输出被截断 / ran out of output tokens;  error: provider 失败 / the provider failed;
//   aborted: 请求被取消 / the request was cancelled.
export type StopReason = "stop" | "toolUse" | "length" | "error" | "aborted";

export interface UserMessage {
  role: "user";
  content: TextContent[];
}

export interface AssistantMessage {
  role: "assistant";
  content: ContentBlock[];
  stopReason: StopReason;
  // 只在 stopReason 为 error 时出现。/ Present only when the provider failed.
  errorMessage?: string;
}

export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  // 模型读 content；details 给程序（UI、测试）用。
  // The model reads `content`; `details` is structured data for programs (a UI, a test).
  content: TextContent[];
  details?: unknown;
  isError: boolean;
}

export type Message = UserMessage | AssistantMessage | ToolResultMessage;

export function text(value: string): TextContent {
  return { type: "text", text: value };
}

export function userMessage(value: string): UserMessage {
  return { role: "user", content: [text(value)] };
}

export function toolCall(id: string, name: string, args: unknown): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

// 消息里的调用，按模型写出的顺序。/ The calls in a message, in the order the model wrote them.
export function toolCallsOf(message: AssistantMessage): ToolCall[] {
  return message.content.filter((block): block is ToolCall => block.type === "toolCall");
}

// 给 call 的一条失败结果：同 id、同 name，一个文本块。
// A failed result for `call`: same id and name, one text block.
export function errorResult(call: ToolCall, message: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(message)],
    isError: true,
  };
}

// 所有文本块，用换行连接。/ Every text block, joined by newlines.
export function resultText(result: ToolResultMessage): string {
  return result.content.map((block) => block.text).join("\n");
}
