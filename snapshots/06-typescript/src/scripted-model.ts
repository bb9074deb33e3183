// 按脚本重放回答的模型：测试不需要网络，也不需要 provider。
// A model that replays a script, so the agent can be tested without a network or a provider.

import { EventStream } from "./event-stream.js";
import type { AssistantMessage } from "./message.js";
import type { Model, ModelEvent, ModelRequest } from "./model.js";

// 第 N 次请求得到脚本里的第 N 条消息；记下每次请求。
// Answers request N with the N-th scripted message, and records every request.
export class ScriptedModel implements Model {
  readonly #script: AssistantMessage[];
  readonly #requests: ModelRequest[] = [];

  constructor(script: AssistantMessage[]) {
    this.#script = [...script];
  }

  // 每次请求在发出那一刻的样子（副本：之后调用方再改也不影响记录）。
  // Every request as it was when it was made (a copy: later changes by the caller do not reach it).
  get requests(): ModelRequest[] {
    return [...this.#requests];
  }

  get calls(): number {
    return this.#requests.length;
  }

  stream(request: ModelRequest, _signal?: AbortSignal): EventStream<ModelEvent, AssistantMessage> {
    this.#requests.push(structuredClone(request));
    const message = this.#next();
    const stream = new EventStream<ModelEvent, AssistantMessage>();
    for (const event of eventsFor(message)) stream.push(event);
    stream.end(message);
    return stream;
  }

  #next(): AssistantMessage {
    const call = this.#requests.length - 1;
    // 脚本用完是普通的模型失败而不是异常：由被测代码决定怎么办，测试看它怎么做。
    // Running off the end is an ordinary model failure, not an exception: the code under test decides
    // what to do with it, and the test sees what it did.
    return (
      this.#script.shift() ?? {
        role: "assistant",
        content: [],
        stopReason: "error",
        errorMessage: `ScriptedModel has no response left for request ${call}`,
      }
    );
  }
}

// 真实的流式 provider 写出 message 时会发的事件。
// The events a streaming provider would have sent while writing `message`.
export function eventsFor(message: AssistantMessage): ModelEvent[] {
  // 流结束前 partial 没有自己的 stop reason；这里的 "stop" 只是占位。
  // Until the stream is done a partial has no stop reason of its own; "stop" is a placeholder.
  const snapshot = (content: AssistantMessage["content"]): AssistantMessage =>
    structuredClone({ role: "assistant", content, stopReason: "stop" });
  const events: ModelEvent[] = [{ type: "start", partial: snapshot([]) }];
  const content: AssistantMessage["content"] = [];
  for (const block of message.content) {
    content.push(block);
    events.push(
      block.type === "text"
        ? { type: "text_delta", delta: block.text, partial: snapshot(content) }
        : { type: "tool_call", call: structuredClone(block), partial: snapshot(content) },
    );
  }
  events.push(
    message.stopReason === "error"
      ? { type: "error", message: message.errorMessage ?? "model error" }
      : { type: "done", reason: message.stopReason },
  );
  return events;
}
