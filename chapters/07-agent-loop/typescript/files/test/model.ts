// 驱动程序的模型：按实例的 turns 回答第 n 次请求，并把请求记成一步。
// The driver's model: answers request n with the instance's turn n, and records the request as a step.
//
// 一轮可以是「急」的：所有事件先推完、流先结束，再把流交出去；也可以是「逐个」的（paced）：事件 k
// 被循环转发成 event 步骤之后才推事件 k+1，最后一个被转发之后才结束流（记 driver stream_end）。只有流
// 还开着时就逐个转发事件的循环才能走完逐个的一轮。
// A turn is either eager (every event pushed and the stream ended before it is handed over) or paced
// (event k+1 is pushed only once event k was forwarded as an event step, and the stream ends only after
// the last one was, recorded as driver stream_end). Only a loop that forwards each event while the
// stream is still open gets through a paced turn.

import { EventStream } from "../src/event-stream.js";
import type { AssistantMessage } from "../src/message.js";
import type { Model, ModelEvent, ModelRequest } from "../src/model.js";
import { messages, plain } from "./canonical.js";
import type { Turn } from "./instance.js";
import { clone, freeze, isArray } from "./safe.js";
import type { Step, Trace } from "./trace.js";

// 驱动程序等一个事件被转发的时长（期间没有任何步骤）。/ How long a pace waits, without any step.
export const PACE_QUIET_MS = 1000;

// 模型需要从这次运行知道和做的事。/ What the model needs to know about, and do to, the run.
export interface RunSide {
  // stream() 的第二个参数是什么：run、none 或 other（docs/JUDGE.md）。/ What stream()'s signal is.
  requestSignal(signal: unknown): "run" | "none" | "other";
  // value 是不是调用者 context 里的那个数组本身。/ Whether `value` is the caller's own messages array.
  isCallersArray(value: unknown): boolean;
  // 在模型调用中取消运行的 signal（记 driver abort）。/ Cancels the run's signal (records driver abort).
  abort(): void;
  // 在模型调用中改调用者的 context（记 driver edit_context）。/ Changes the caller's context.
  editContext(): void;
}

export class DriverModel implements Model {
  // 循环拿到的就是这个对象：状态都在私有字段里，对象冻结。
  // The loop is handed this very object: its state lives in private fields, and it is frozen.
  readonly #turns: Turn[];
  readonly #exhausted: AssistantMessage;
  readonly #trace: Trace;
  readonly #run: RunSide;
  #requests = 0;
  constructor(turns: Turn[], exhausted: AssistantMessage, trace: Trace, run: RunSide) {
    this.#turns = turns;
    this.#exhausted = exhausted;
    this.#trace = trace;
    this.#run = run;
    freeze(this);
  }

  stream(request: ModelRequest, signal?: AbortSignal): EventStream<ModelEvent, AssistantMessage> {
    const stream = new EventStream<ModelEvent, AssistantMessage>();
    // 测试结束后仍在请求的循环停在一个永不结束的流上，不再占用 CPU。
    // A loop still asking after the test is over waits on a stream that never ends, using no CPU.
    if (this.#trace.isClosed) return stream;
    this.#requests += 1;
    const n = this.#requests;
    const seen = plain(request);
    const fields = typeof seen === "object" && seen !== null && !isArray(seen) ? seen : {};
    const step: Step = {
      kind: "request",
      n,
      system_prompt: fields["systemPrompt"] ?? null,
      messages: messages(fields["messages"]),
      tools: fields["tools"] ?? null,
      signal: this.#run.requestSignal(signal),
    };
    // 只有 TypeScript 能把调用者的数组本身交给模型；只在发生时记下（docs/JUDGE.md 之外的一个键）。
    // Only TypeScript can hand the model the caller's array itself; recorded only when it happens (a key
    // beyond docs/JUDGE.md's).
    if (this.#run.isCallersArray(messagesOf(request))) step["messages_array"] = "caller";
    this.#trace.record(step);
    const turn = this.#turns[n - 1];
    if (turn === undefined) {
      stream.end(clone(this.#exhausted));
      return stream;
    }
    if (turn.abort) this.#run.abort();
    if (turn.edit_context) this.#run.editContext();
    if (turn.paced) {
      this.#pace(stream, turn, n);
    } else {
      for (const event of turn.events) stream.push(clone(event));
      stream.end(clone(turn.message));
    }
    return stream;
  }

  // 推第一个事件，之后每当又有一个 model_event 步骤就推下一个；最后一个被转发后结束流。
  // Pushes the first event, then the next one each time one more model_event step is recorded; ends
  // the stream once the last one was forwarded.
  #pace(stream: EventStream<ModelEvent, AssistantMessage>, turn: Turn, n: number): void {
    const trace = this.#trace;
    const events = turn.events;
    let pushed = 0;
    let forwarded = 0;
    let seen = trace.steps.length;
    let done = false;
    const end = () => {
      done = true;
      trace.record({ kind: "driver", action: "stream_end", n });
      stream.end(clone(turn.message));
    };
    const pushNext = () => {
      stream.push(clone(events[pushed]!));
      pushed += 1;
    };
    if (events.length === 0) return end();
    pushNext();
    trace.watch(() => {
      if (done || trace.isClosed) return false;
      const steps = trace.steps;
      for (; seen < steps.length; seen += 1) {
        const event = steps[seen]!["event"];
        if (steps[seen]!["kind"] === "event" && isModelEvent(event)) forwarded += 1;
      }
      if (forwarded < pushed) return true;
      if (pushed < events.length) {
        pushNext();
        return true;
      }
      end();
      return false;
    });
    // 一段时间没有任何步骤：放弃逐个推送，把剩下的一次推完并结束流。
    // No step for a while: give up pacing, push the rest at once and end the stream.
    const giveUp = async (): Promise<void> => {
      while (!done && !trace.isClosed) {
        const waited = pushed;
        if (await trace.until(() => done || pushed !== waited, PACE_QUIET_MS)) continue;
        if (done || trace.isClosed) return;
        trace.record({
          kind: "driver",
          action: "gave_up",
          waiting_for: `request ${n}: model event ${pushed - 1} forwarded as an event step`,
        });
        while (pushed < events.length) pushNext();
        end();
      }
    };
    void giveUp();
  }
}

function messagesOf(request: unknown): unknown {
  try {
    return (request as { messages?: unknown }).messages;
  } catch {
    return undefined;
  }
}

function isModelEvent(event: unknown): boolean {
  return typeof event === "object" && event !== null && (event as { type?: unknown }).type === "model_event";
}
