// What graded code may not change or reach, set up by run.mjs before any learner code loads.
//
// - lockGlobals: the global bindings. `--frozen-intrinsics` freezes JSON, Promise, Array... themselves,
//   but not the global object's properties: `globalThis.JSON = forgery` would change what `JSON` means
//   in the tests, which look it up when they call it. Every global becomes read-only and fixed.
// - guardDescriptors: the grader's descriptors. Node's permission model does not check descriptors
//   ("using existing file descriptors via the node:fs module bypasses the Permission Model"), so every
//   way JavaScript can name a descriptor by number refuses the grader's: the fs functions, the handles
//   behind net, dgram and tty, and fs.promises' FileHandle (whose descriptor is a property graded code
//   could rewrite).

import { createRequire, syncBuiltinESMExports } from "node:module";
import { fileURLToPath } from "node:url";

const builtin = createRequire(import.meta.url);
const { openSync, fstatSync } = builtin("node:fs");

/** An error for graded code that tried to reach what is not its own. */
function denied(text) {
  const error = new Error(`pi-course: ${text}`);
  error.code = "ERR_ACCESS_DENIED";
  return error;
}

/** Replaces `owner[name]` for good: graded code can neither restore it nor redefine it. */
function fix(owner, name, value) {
  const enumerable = Object.getOwnPropertyDescriptor(owner, name)?.enumerable ?? true;
  Object.defineProperty(owner, name, { value, writable: false, configurable: false, enumerable });
}

// ---------------------------------------------------------------------------------------------------
// Global bindings
// ---------------------------------------------------------------------------------------------------

// node's fetch classes (and, from node 22, its WebSocket and web storage) load a module of their own on
// first use, the HTTP client alone about 40 ms per test process; nothing graded uses them, so they stay
// as node made them, lazily loaded (and replaceable).
const LAZY = new Set([
  "FormData", "Headers", "Request", "Response", "WebSocket", "EventSource", "localStorage", "sessionStorage",
]);
// The global object itself, and node's `process` and `Buffer`, which node keeps writing to.
const UNFROZEN = new Set(["global", "globalThis", "process", "Buffer"]);

/**
 * Makes every global binding read-only and fixed, and hardens (with `harden(value, seen)`, which freezes
 * an object and everything reachable from it not in `seen`) the values that --frozen-intrinsics leaves
 * alone: node's own globals such as performance, AbortController and AbortSignal, which the tests call
 * too. A global that node loads lazily is loaded now, so that its binding can be fixed.
 */
export function lockGlobals(harden) {
  const seen = new Set();
  for (const key of Reflect.ownKeys(globalThis)) {
    if (LAZY.has(key)) continue;
    const desc = Object.getOwnPropertyDescriptor(globalThis, key);
    if (!desc.configurable && !desc.writable) continue;
    let value;
    try {
      value = "value" in desc ? desc.value : desc.get?.call(globalThis);
    } catch {
      continue; // A global node refuses to load here (behind a flag or a permission): nothing can use it.
    }
    Object.defineProperty(globalThis, key, {
      value,
      writable: false,
      configurable: false,
      enumerable: desc.enumerable,
    });
    if (!UNFROZEN.has(key)) harden(value, seen);
  }
}

// ---------------------------------------------------------------------------------------------------
// The grader's descriptors
// ---------------------------------------------------------------------------------------------------

// The fs functions whose first argument may be a descriptor (node 20-24).
const FS_BY_DESCRIPTOR = [
  "close", "fchmod", "fchown", "fdatasync", "fstat", "fsync", "ftruncate", "futimes", "read", "readv",
  "write", "writev", "readFile", "writeFile", "appendFile",
].flatMap((name) => [name, `${name}Sync`]);

/**
 * Refuses every use of `fds` (the grader's descriptors) from JavaScript. A descriptor among them that is
 * closed already is held open on a file of the harness, so that no file opened later gets its number.
 */
export function guardDescriptors(fds) {
  const grader = new Set(fds);
  for (const fd of grader) hold(fd);
  const check = (fd, what) => {
    if (typeof fd === "number" && grader.has(fd)) {
      throw denied(`descriptor ${fd} belongs to the grader: graded code may not use it (${what})`);
    }
  };

  // fs: the descriptor functions, and the streams' `fd` option (the streams then read and write
  // through these same functions, looked up on the module each time).
  const fs = builtin("node:fs");
  for (const name of FS_BY_DESCRIPTOR) {
    wrap(fs, name, (args) => check(args[0], `fs.${name}`));
  }
  for (const name of ["createReadStream", "createWriteStream"]) {
    wrap(fs, name, (args) => check(args[1]?.fd, `fs.${name}`));
  }
  // A FileHandle writes to whatever its `fd` property says, which its holder can redefine.
  const promises = builtin("node:fs/promises");
  fix(promises, "open", () => Promise.reject(denied("fs.promises.open is not available to graded code")));

  // net, dgram: every socket made from a descriptor is a libuv handle opened with `open(fd)`; the
  // handle classes are reached through a handle of each kind, made without a descriptor.
  for (const handle of [pipeHandle(), tcpHandle(), udpHandle()]) {
    const proto = Object.getPrototypeOf(handle);
    const name = proto.constructor.name;
    wrap(proto, "open", (args) => check(args[0], `${name}.open`));
  }
  // tty: a terminal handle takes its descriptor in its constructor, and would take any kind (a socket
  // too). Only a real terminal gets one; the grader never gives a test process a terminal.
  const tty = builtin("node:tty");
  for (const name of ["ReadStream", "WriteStream"]) {
    const Original = tty[name];
    const Guarded = function (...args) {
      check(args[0], `tty.${name}`);
      if (!tty.isatty(args[0])) throw denied(`tty.${name}: descriptor ${args[0]} is not a terminal`);
      return Reflect.construct(Original, args, new.target ?? Original);
    };
    Guarded.prototype = Original.prototype;
    fix(Original.prototype, "constructor", Guarded);
    fix(tty, name, Guarded);
  }
  syncBuiltinESMExports();
}

/** Keeps `fd` taken: if it is closed, the lowest free number, it gets a harmless file (this one). */
function hold(fd) {
  try {
    fstatSync(fd);
    return;
  } catch {
    // Closed: take it.
  }
  const held = openSync(fileURLToPath(import.meta.url), "r");
  if (held !== fd) throw new Error(`pi-course harness: descriptor ${fd} could not be held (got ${held})`);
}

/** Replaces `owner[name]` with a function that runs `check(args)` first. */
function wrap(owner, name, check) {
  const original = owner[name];
  if (typeof original !== "function") return;
  const guarded = function (...args) {
    check(args);
    return Reflect.apply(original, this, args);
  };
  // util.promisify's own forms (fs.read, fs.write) are kept.
  for (const key of Reflect.ownKeys(original)) {
    if (typeof key === "symbol") Object.defineProperty(guarded, key, Object.getOwnPropertyDescriptor(original, key));
  }
  fix(owner, name, guarded);
}

// Each handle below is made by a call that fails after the handle exists and before any system call,
// which is the only public way to reach its class. The harness stops if one cannot be reached.
function pipeHandle() {
  const net = builtin("node:net");
  const socket = new net.Socket();
  try {
    socket.connect({ path: 1 });
  } catch {
    // A path must be a string: checked after the handle is made.
  }
  return made(socket, "a pipe");
}

function tcpHandle() {
  const net = builtin("node:net");
  const socket = new net.Socket();
  try {
    socket.connect({ port: 1, host: "127.0.0.1", localAddress: "no address" });
  } catch {
    // The local address is checked after the handle is made.
  }
  return made(socket, "a TCP socket");
}

function udpHandle() {
  const socket = builtin("node:dgram").createSocket("udp4");
  const handle = Object.getOwnPropertySymbols(socket)
    .map((key) => socket[key]?.handle)
    .find((value) => typeof value?.open === "function");
  socket.close();
  if (handle === undefined) throw new Error("pi-course harness: cannot reach the handle class of a UDP socket");
  return handle;
}

function made(socket, what) {
  const handle = socket._handle;
  socket.destroy();
  if (typeof handle?.open !== "function") throw new Error(`pi-course harness: cannot reach the handle class of ${what}`);
  return handle;
}
