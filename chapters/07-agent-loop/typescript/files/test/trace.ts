// 轨迹：驱动程序观察到的每一步，按发生的顺序（docs/JUDGE.md「The trace」）。只记录，从不判断。
// The trace: every step the driver observed, in the order it happened (docs/JUDGE.md "The trace"). It
// records; it never judges.
//
// 每一步在记下的那一刻就写成一行 JSON 交给 onStep（评分时就是发给评分器的记录）。等待也在这里：驱动
// 程序的每个等待都以「多久没有任何步骤」计时，所以正确的循环（两步之间只要几微秒）从不碰到超时，结论
// 也从不依赖时间运气。
// Each step is written as one line of JSON the moment it is recorded and handed to onStep (graded,
// that is the record sent to the grader). The waits live here too: every wait of the driver is timed
// by how long no step at all has happened, so a correct loop (microseconds between two steps) never
// meets a timeout, and no trace depends on timing luck.

import type { Json } from "./canonical.js";
import { clearTimer, now, PATIENCE, SafePromise, SafeSet, setTimer, stringify } from "./safe.js";

export type Step = { [key: string]: Json };

// 多于任何场景需要的步数和字节：到这里的运行停不下来。（评分器自己的上限是 4,000 步、4 MiB。）
// More steps and bytes than any scenario needs: such a run never ends. (The grader's own limits are
// 4,000 steps and 4 MiB.)
export const STEP_LIMIT = 2000;
export const SIZE_LIMIT = 4 << 20;

// 等待多久看一次时钟，用来分辨 loop 的沉默和机器的忙碌。/ How often a wait looks at the clock.
const BEAT_MS = 25;
// 节拍迟到多少以上，丢掉的时间算机器的而不是 loop 的。/ How late a beat may come before its lost time is the machine's.
const SLACK_MS = 5;

export class Trace {
  readonly #steps: Step[] = [];
  readonly #onStep: ((json: string) => void) | undefined;
  readonly #listeners = new SafeSet<() => void>();
  #last = now();
  #size = 0;
  #closed = false;
  #close!: () => void;
  // 轨迹关闭时 resolve：驱动程序做完了，或步数到了上限。/ Resolves when the trace closes.
  readonly closed = new SafePromise<void>((resolve) => {
    this.#close = resolve;
  });

  constructor(onStep?: (json: string) => void) {
    this.#onStep = onStep;
  }

  get steps(): readonly Step[] {
    return this.#steps;
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  // 记下一步，然后叫醒等待者（它们可能据此推进：推下一个模型事件、放行下一步计划）。
  // Records one step, then wakes the waiters (which may act on it: push the next model event, go on
  // with the plan).
  record(step: Step): void {
    if (this.#closed) return;
    const json = stringify(step);
    this.#size += json.length;
    if (this.#steps.length >= STEP_LIMIT || this.#size > SIZE_LIMIT) {
      const overflow = { kind: "overflow" };
      this.#append(overflow, stringify(overflow));
      this.close();
      return;
    }
    this.#append(step, json);
    this.changed();
  }

  // 步骤交给评分器之后才算活动：评分器读得慢时，写入会阻塞，那段时间不是 loop 的沉默。
  // The step counts as activity once it is handed on: a write blocks while a busy grader reads late,
  // and that time is not the loop's silence.
  #append(step: Step, json: string): void {
    this.#steps.push(step);
    this.#onStep?.(json);
    this.#last = now();
  }

  // 没有新步骤、但驱动程序的状态变了（例如一个调用到了 gate）：让等待者再看一次。
  // The driver's state changed without a step (a call reached its gate): let the waiters look again.
  changed(): void {
    for (const listener of [...this.#listeners]) listener();
  }

  // 结束记录：之后的步骤都不算，等待者都放弃。/ Ends the recording: later steps are dropped, waits give up.
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#close();
    this.changed();
  }

  // holds 成立时 resolve 为 true；连续 quietMs 没有任何步骤（或轨迹关闭）时 resolve 为 false。
  // 只计本进程在运行的时间：按短节拍看时钟，节拍迟到说明机器没有运行本进程（负载高），那段时间不算 loop 的沉默。等待时长乘以 PATIENCE。
  // Resolves to true once `holds` is true; to false after quietMs without any step (or on close).
  // Quiet counts only while this process runs: the wait looks at the clock on a short beat, and a beat
  // that comes late means the machine did not run the process (a busy machine), so that time is not the
  // loop's silence. The quiet time is multiplied by PATIENCE.
  until(holds: () => boolean, quietMs: number): Promise<boolean> {
    const quiet = quietMs * PATIENCE;
    return new SafePromise<boolean>((resolve) => {
      let timer: ReturnType<typeof setTimer> | undefined;
      let seen = this.#last;
      // Time since the last step during which this process did not run.
      let starved = 0;
      let beat = now();
      const settle = (value: boolean) => {
        this.#listeners.delete(listener);
        clearTimer(timer);
        resolve(value);
      };
      const listener = () => {
        if (holds()) settle(true);
        else if (this.#closed) settle(false);
      };
      const check = () => {
        const late = now() - beat - BEAT_MS;
        if (late > SLACK_MS) starved += late;
        if (this.#last !== seen) {
          seen = this.#last;
          starved = 0;
        }
        if (now() - this.#last - starved >= quiet) return settle(false);
        beat = now();
        timer = setTimer(check, BEAT_MS);
      };
      if (holds()) return resolve(true);
      if (this.#closed) return resolve(false);
      this.#listeners.add(listener);
      timer = setTimer(check, BEAT_MS);
    });
  }

  // 每当记下一步就调用 listener，直到它返回 false。/ Calls `listener` after every step until it returns false.
  watch(listener: () => boolean): void {
    const wrapped = () => {
      if (!listener()) this.#listeners.delete(wrapped);
    };
    this.#listeners.add(wrapped);
  }
}
