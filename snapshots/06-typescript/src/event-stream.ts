// 一串过程事件，最后恰好一个最终值。模型边写边发 delta，agent 保留的是写完的消息：
// 两者分开，消费者可以用事件显示进度，而只信任最终值。
// A stream of progress events that ends with exactly one final value. A model streams deltas while it
// writes, but what the agent keeps is the finished message: keeping the two apart lets a consumer show
// progress from the events and trust only the final value.

export class EventStream<E, R> implements AsyncIterable<E> {
  #queue: E[] = [];
  #ended = false;
  // 正在等下一个事件的消费者（只有一个）。/ The consumer waiting for the next event (there is one).
  #wake: (() => void) | undefined;
  #result: Promise<R>;
  #resolve!: (result: R) => void;

  constructor() {
    this.#result = new Promise<R>((resolve) => {
      this.#resolve = resolve;
    });
  }

  // 生产者：发一个事件。结束之后再发是生产者的 bug。
  // Producer: one more event. Pushing after the end is a bug in the producer.
  push(event: E): void {
    if (this.#ended) throw new Error("EventStream: push() after end()");
    this.#queue.push(event);
    this.#wakeConsumer();
  }

  // 生产者：给出最终值并关闭流。缓冲的事件仍会先被读完。
  // Producer: the final value; closes the stream. Buffered events are still read first.
  end(result: R): void {
    if (this.#ended) throw new Error("EventStream: end() called twice");
    this.#ended = true;
    this.#resolve(result);
    this.#wakeConsumer();
  }

  // 消费者：按顺序读事件，end() 之后读完缓冲就停。
  // Consumer: the events in order; iteration stops once end() was called and the buffer is read.
  async *[Symbol.asyncIterator](): AsyncIterator<E> {
    for (;;) {
      if (this.#queue.length > 0) {
        yield this.#queue.shift() as E;
      } else if (this.#ended) {
        return;
      } else {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    }
  }

  // 消费者：唯一的最终值。不读事件也可以直接取。
  // Consumer: the one final value. It can be taken without reading the events.
  result(): Promise<R> {
    return this.#result;
  }

  #wakeConsumer(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
