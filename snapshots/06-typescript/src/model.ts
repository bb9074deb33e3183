// 模型被问什么，流回什么。/ What a model is asked, and what it streams back.

import type { EventStream } from "./event-stream.js";
import type { AssistantMessage, Message, StopReason, ToolCall } from "./message.js";
import type { ToolDefinition } from "./tool.js";

// 模型一轮看到的全部内容。/ Everything the model sees for one turn.
export interface ModelRequest {
  systemPrompt: string;
  messages: Message[];
  // 本次运行允许的动作，即使模型一个也不用。/ The actions this run allows, even when none is used.
  tools: ToolDefinition[];
}

// 模型写作时的进度。partial 是“到目前为止的消息”，只用于显示；最终消息来自流的 result()。
// Progress while the model writes. `partial` is the message so far, for display only; the final
// message comes from the stream's result().
export type ModelEvent =
  | { type: "start"; partial: AssistantMessage }
  | { type: "text_delta"; delta: string; partial: AssistantMessage }
  | { type: "tool_call"; call: ToolCall; partial: AssistantMessage }
  | { type: "done"; reason: StopReason }
  | { type: "error"; message: string };

// 语言模型，或任何行为像它的东西。stream 从不抛错：provider 失败时，流以一条 stopReason 为 error 的
// assistant 消息结束，调用方在处理其他结果的同一个地方处理失败。
// A language model, or anything that behaves like one. `stream` never throws: a provider failure ends
// the stream with an assistant message whose stop reason is "error", so callers handle failure where
// they handle every other outcome.
export interface Model {
  stream(request: ModelRequest, signal?: AbortSignal): EventStream<ModelEvent, AssistantMessage>;
}
