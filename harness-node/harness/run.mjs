// The graded entry point of a TypeScript practice directory: pi-course runs this, never `node --test`.
// By hand, learners run the tests with `node --test`; this file is how the grader gets, for each test,
// the trace of steps the test kit's driver observed, which nothing under test can forge. It speaks
// protocol 2 of the channel (docs/JUDGE.md "Orders and records" in the pi-course repository):
//
// - descriptor 3 holds the orders: a per-grade key, then `run`, then one test per line, its name and its
//   scenario instance (JSON) separated by a tab. They are read whole and the descriptor is closed before
//   any test file loads.
//   A test may hold several instances (`{"runs": [...]}`): they run one after another, each after an
//   instance step (`{"kind":"instance","index":k}`) that tells the grader where its steps begin.
// - descriptor 4 is a socket: one JSON record per line (started, step, finished), each with the key.
//   A step is written the moment the driver records it. Nothing here compares or decides: the grader
//   computes the expected trace of each instance and judges.
//
// Why the learner's code cannot forge a record:
// - The key lives only in this module's scope, and every function used to write a record was taken
//   before any other code ran. Node's own intrinsics are frozen (--frozen-intrinsics), so the learner
//   cannot swap Array or JSON methods under the driver either; the driver takes the global names it
//   calls (JSON, Promise, timers, AbortSignal...) when it loads, before the learner's code does.
// - The test files load the learner's loop lazily, inside test bodies. So every test is registered and
//   the list is sealed before one line of learner code runs: no test can be added, removed or replaced.
// - Each test body gets its step writer as an argument and keeps it in its own scope; a writer accepts
//   steps only while its test runs.
// - The modules the tests rely on (the course code, the test kit, node:assert, node:util) are frozen,
//   and every global binding is fixed, before the first test runs, so learner code cannot rewrite what
//   the driver records with (lockdown.mjs). Node's ways to look into its own process (heap snapshots,
//   queryObjects, vm, V8 flags, loader hooks, reports) are refused.
// - No JavaScript API reaches descriptors 3 and 4 any more once the orders are read (lockdown.mjs).
// - node runs with the permission model: no child processes, workers, inspector or native addons, and
//   reads only of the compiled code and the test data. The grader's sandbox confines the process besides.

import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { guardDescriptors, lockGlobals } from "./lockdown.mjs";

// Taken before any other code runs (see above).
const { writeSync, readFileSync, closeSync, readdirSync } = fs;
const stringify = JSON.stringify;
// Ends the process without running "exit" listeners, which the code under test may have added.
const exit = (process.reallyExit ?? process.exit).bind(process);
const stderrWrite = process.stderr.write.bind(process.stderr);
const ORDERS_FD = 3;
const VERDICTS_FD = 4;
const REGISTER = Symbol.for("pi-course.test");

const orders = readFileSync(ORDERS_FD, "utf8").split("\n");
closeSync(ORDERS_FD);
const key = orders[0];
const mode = orders[1];
// Each test to run: its name, and its instance as the grader wrote it (parsed by the test kit).
const wanted = [];
for (const line of orders.slice(2)) {
  if (line.length === 0) continue;
  const tab = line.indexOf("\t");
  const test = tab === -1 ? { name: line, instance: "" } : { name: line.slice(0, tab), instance: line.slice(tab + 1) };
  wanted.push({ name: test.name, ...runsOf(test.instance) });
}

// The steps that end a trace as no correct loop's ends, and the most steps of a test the grader reads.
const ENDINGS = ['{"kind":"hang"', '{"kind":"panic"', '{"kind":"overflow"'];
const MAX_STEPS = 4000;
// The most bytes of one test's steps the grader reads (its MAX_TRACE_BYTES). A step's length in UTF-16
// units is never more than its UTF-8 bytes, so a test counted past it is past the grader's bound too.
const MAX_TRACE_BYTES = 4 * 1024 * 1024;

/** The instances of one test: each of `{"runs": [...]}` as JSON text (marked), or the instance itself. */
function runsOf(instance) {
  let value;
  try {
    value = JSON.parse(instance);
  } catch {
    return { runs: [instance], marked: false };
  }
  const runs = value !== null && typeof value === "object" ? value.runs : undefined;
  if (!Array.isArray(runs)) return { runs: [instance], marked: false };
  return { runs: runs.map((run) => stringify(run)), marked: true };
}

/** Writes one keyed record. Built by hand: no learner-reachable function ever sees the key. */
function record(event, test, step) {
  const line =
    '{"key":' + stringify(key) + ',"event":' + stringify(event) + ',"test":' + stringify(test) +
    (typeof step === "string" ? ',"step":' + step : "") + "}\n";
  writeSync(VERDICTS_FD, line);
}

function fail(reason) {
  stderrWrite(`pi-course harness: ${reason}\n`);
  exit(2);
}

if (typeof key !== "string" || key.length < 32 || mode !== "run") {
  fail("no orders on descriptor 3: this file is run by `pi-course grade`; by hand, use `node --test`");
}
guardDescriptors([ORDERS_FD, VERDICTS_FD]);

// Registration: open while the test files load, sealed before any test runs.
const tests = new Map();
const duplicates = new Set();
let sealed = false;
Object.defineProperty(globalThis, REGISTER, {
  value: function register(name, body) {
    if (sealed) throw new Error("pi-course: tests are registered only while the test files load");
    if (typeof name !== "string" || typeof body !== "function") {
      throw new TypeError("pi-course: test(name, body) takes a string and a function");
    }
    if (tests.has(name)) duplicates.add(name);
    tests.set(name, body);
  },
  writable: false,
  enumerable: false,
  configurable: false,
});

/** Freezes `value` and everything reachable from it through properties and prototypes. */
function harden(value, seen = new Set()) {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return;
  if (seen.has(value)) return;
  seen.add(value);
  try {
    Object.freeze(value);
  } catch {
    // A module namespace cannot be frozen; its bindings are read-only to importers anyway.
  }
  harden(Object.getPrototypeOf(value), seen);
  for (const key of Reflect.ownKeys(value)) {
    const desc = Object.getOwnPropertyDescriptor(value, key);
    if (desc === undefined) continue;
    if ("value" in desc) harden(desc.value, seen);
    harden(desc.get, seen);
    harden(desc.set, seen);
  }
}

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, "..", "dist");
// Editable files (`src/agent-loop.ts`) compile to modules this harness must never load itself.
const editable = new Set(
  (process.env.PI_COURSE_EDITABLE ?? "")
    .split(",")
    .filter((p) => p.length > 0)
    .map((p) => path.join(dist, p.replace(/\.ts$/, ".js"))),
);

function modulesIn(dir, suffix) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith(suffix))
    .sort()
    .map((n) => path.join(dir, n))
    .filter((p) => !editable.has(p));
}

// Node's ways to look into this process from inside it. A heap snapshot holds every string, the key
// included; queryObjects lists every live object of a class, promise hooks every promise made, a report
// and the active handles the process's descriptors and timers; vm compiles code under any file name; V8
// flags undo the ones this process started with. The permission model already refuses the inspector,
// child processes, workers and addons. (Heap statistics stay: they are counts, not contents.)
const builtin = createRequire(import.meta.url);
function refusal(what) {
  return function refused() {
    throw new Error(`pi-course: ${what} is not available to graded code`);
  };
}
function refuse(moduleName, names) {
  const exports = builtin(moduleName);
  for (const name of names) {
    if (name in exports) {
      const what = `${moduleName}.${name}`;
      const current = exports[name];
      // An object of functions (v8.promiseHooks, process.report) becomes one whose every member refuses.
      const value =
        typeof current === "object" && current !== null
          ? Object.freeze(Object.fromEntries(Object.keys(current).map((key) => [key, refusal(`${what}.${key}`)])))
          : refusal(what);
      Object.defineProperty(exports, name, { value, writable: false, configurable: false });
    }
  }
}
refuse("node:v8", [
  "getHeapSnapshot", "writeHeapSnapshot", "setFlagsFromString", "setHeapSnapshotNearHeapLimit", "queryObjects",
  "promiseHooks", "takeCoverage", "stopCoverage",
]);
refuse("node:process", ["report", "_getActiveHandles", "_getActiveRequests", "_debugProcess", "_debugEnd"]);
refuse("node:vm", ["Script", "createContext", "runInContext", "runInNewContext", "runInThisContext", "compileFunction", "measureMemory", "SourceTextModule", "SyntheticModule"]);
refuse("node:trace_events", ["createTracing"]);
refuse("node:module", ["register"]);
syncBuiltinESMExports();
const HARDENED_MODULES = ["node:assert", "node:assert/strict", "node:util", "node:async_hooks"];

/**
 * `exports` with every lazy export loaded. node defines some (util.parseArgs, util.TextDecoder...) as a
 * getter that replaces itself with the value on first read, which a frozen object refuses: frozen
 * first, the module could no longer be imported ("Cannot redefine property") by the learner's code,
 * which loads after this.
 */
function materialized(exports) {
  for (const key of Reflect.ownKeys(exports)) {
    try {
      void exports[key];
    } catch {
      // An export node refuses here (behind a flag or a permission): nothing can use it.
    }
  }
  return exports;
}

const given = [];
try {
  for (const file of modulesIn(path.join(dist, "test"), ".test.js")) {
    given.push(await import(pathToFileURL(file).href));
  }
  // The course code and the test kit, loaded already by the tests: the same module instances.
  for (const file of [...modulesIn(path.join(dist, "src"), ".js"), ...modulesIn(path.join(dist, "test"), ".js")]) {
    given.push(await import(pathToFileURL(file).href));
  }
} catch (error) {
  fail(`the test files did not load: ${error?.stack ?? error}`);
}
sealed = true;
for (const namespace of given) harden(namespace);
// Every global binding, and the built-in modules the tests check with: fixed before any learner code
// runs. (Node's own classes such as EventEmitter are left alone: freezing their prototypes would break
// node itself.)
lockGlobals(harden);
for (const moduleName of HARDENED_MODULES) harden(materialized(builtin(moduleName)));

/** The text of whatever a test threw, without running learner code that could hang or throw again. */
function messageOf(error) {
  try {
    if (error instanceof Error) return String(error.message);
    return String(error);
  } catch {
    return "the test threw a value that cannot be shown";
  }
}

for (const { name, runs, marked } of wanted) {
  record("started", name);
  const body = tests.get(name);
  if (body === undefined || duplicates.has(name)) {
    stderrWrite(`pi-course harness: ${body === undefined ? "no test is named" : "two tests are named"} ${stringify(name)}\n`);
    record("finished", name);
    continue;
  }
  let steps = 0;
  let bytes = 0;
  let ended = false;
  for (let index = 0; index < runs.length; index++) {
    if (marked) {
      record("step", name, '{"kind":"instance","index":' + stringify(index) + "}");
    }
    // The driver's JSON of one step (one line, written by the kit's own captured JSON.stringify), taken
    // only while this instance runs: a step that comes later would land in the next one's trace.
    // Once an instance's trace ended as no correct loop's does (the driver's hang, panic or overflow
    // step), or the test's steps reach the grader's bounds (of steps, of bytes), its later instances are
    // not run: the test is decided, and a hung or flooding loop's work would only pile up.
    let open = true;
    const onStep = (json) => {
      if (open && typeof json === "string" && json.indexOf("\n") === -1) {
        steps += 1;
        bytes += json.length;
        if (ENDINGS.some((end) => json.startsWith(end)) || steps >= MAX_STEPS || bytes >= MAX_TRACE_BYTES) {
          ended = true;
        }
        record("step", name, json);
      }
    };
    try {
      await body(runs[index], onStep);
    } catch (error) {
      // The driver failed (its own bug, or an instance it cannot read): a message, never a verdict.
      stderrWrite(`pi-course harness: the driver stopped on ${stringify(name)}: ${messageOf(error)}\n`);
      open = false;
      break;
    }
    open = false;
    if (ended) break;
  }
  record("finished", name);
}
exit(0);
