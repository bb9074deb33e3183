// 驱动程序用到的内置函数，在测试工具加载时（任何学习者代码运行之前）取好。
// The built-ins the driver calls, taken when the kit loads, before any learner code runs.
//
// 驱动程序记下的步骤绝不能取决于学习者代码之后能改的东西。评分时 JavaScript 自己的内置对象（Array、
// JSON、Promise 的原型……）已被冻结，但全局对象上的名字（globalThis.JSON = …）和 Node 自己的 Web 类
// （AbortSignal、performance）仍然可以被替换：所以它们在这里取一次，之后只用这些。
// The steps the driver records must never depend on anything learner code can change later. Graded,
// JavaScript's own built-ins (the prototypes of Array, JSON, Promise...) are frozen, but the names on
// the global object (globalThis.JSON = ...) and node's own web classes (AbortSignal, performance) can
// still be replaced: so they are taken here once, and only these are used afterwards.

export const { stringify, parse } = JSON;
export const { isArray } = Array;
export const { apply, ownKeys } = Reflect;
export const { create, defineProperty, freeze, getOwnPropertyDescriptor, hasOwn, keys } = Object;
export const { isFinite } = Number;
export const SafePromise = Promise;
export const SafeMap = Map;
export const SafeSet = Set;
export const SafeError = Error;
export const SafeBigInt = BigInt;
export const SafeNumber = Number;
export const setTimer = setTimeout;
export const clearTimer = clearTimeout;
export const now: () => number = performance.now.bind(performance);

// 评分器重判一个由时间决定的测试时（docs/JUDGE.md），驱动程序的每段等待都放长这么多倍；手动运行时是 1。
// How many times longer every wait of the driver lasts: more than 1 when the grader judges a test that
// time decided again (docs/JUDGE.md); 1 when run by hand.
export const PATIENCE: number = patienceFrom(process.env.PI_COURSE_PATIENCE);

function patienceFrom(text: string | undefined): number {
  const n = SafeNumber(text);
  return SafeNumber.isInteger(n) && n >= 1 && n <= 10 ? n : 1;
}

const SignalClass = AbortSignal;
const ControllerClass = AbortController;
const abortedGetter = getOwnPropertyDescriptor(SignalClass.prototype, "aborted")!.get!;
const abortMethod = ControllerClass.prototype.abort;
const signalGetter = getOwnPropertyDescriptor(ControllerClass.prototype, "signal")!.get!;
const addListener = EventTarget.prototype.addEventListener;

// 一份纯 JSON 数据的深拷贝：交给循环的总是新对象，驱动程序自己的数据它碰不到。
// A deep copy of plain JSON data: the loop is always handed fresh objects, never the driver's own.
export function clone<T>(value: T): T {
  return parse(stringify(value)) as T;
}

// 一个新的 AbortController 和它的 signal。/ A new AbortController and its signal.
export function newController(): { controller: AbortController; signal: AbortSignal } {
  const controller = new ControllerClass();
  return { controller, signal: apply(signalGetter, controller, []) as AbortSignal };
}

export function abortController(controller: AbortController): void {
  apply(abortMethod, controller, []);
}

// value 是 AbortSignal 时返回它是否已 abort，否则 undefined（用品牌检查，不用 instanceof）。
// Whether `value` is aborted if it is an AbortSignal, else undefined (a brand check, not instanceof).
export function abortedState(value: unknown): boolean | undefined {
  try {
    return apply(abortedGetter, value, []) as boolean;
  } catch {
    return undefined;
  }
}

export function onAbort(signal: AbortSignal, listener: () => void): void {
  apply(addListener, signal, ["abort", listener, { once: true }]);
}

// AbortSignal.any() 派生的 signal 记着它的来源（Node 的内部字段，只读不写）。
// A signal made by AbortSignal.any() keeps its sources (a node-internal field, only read here).
export function sourcesOf(signal: unknown): unknown[] {
  const found: unknown[] = [];
  try {
    for (const key of ownKeys(signal as object)) {
      if (typeof key !== "symbol" || key.description !== "kSourceSignals") continue;
      // Node's own Set and WeakRef (not the global classes): known by their shape.
      const sources = getOwnPropertyDescriptor(signal as object, key)?.value as Iterable<unknown>;
      for (const ref of sources) {
        const deref = (ref as { deref?: unknown }).deref;
        if (typeof deref === "function") found.push(apply(deref, ref, []));
      }
    }
  } catch {
    // Not a signal of node's own making: no known sources.
  }
  return found;
}
