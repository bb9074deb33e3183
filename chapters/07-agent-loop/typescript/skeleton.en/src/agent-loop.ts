// Chapter 07: the agent loop. Ask the model, run the tools it asks for, feed the results back, until
// the run ends.
//
// Three invariants hold for every run:
// 1. each final assistant message is appended to the transcript once;
// 2. before the next model request, every tool call has exactly one result with its id;
// 3. exactly one turn_end per run.

import type { AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage } from "./message.js";
import type { Model, ModelEvent } from "./model.js";
import type { ToolExecutor, ToolRegistry } from "./tool.js";

export const DEFAULT_MAX_STEPS = 32;

// What the loop reports while it runs, in the order it happens.
export type LoopEvent =
  // A streaming event from the model, forwarded as is.
  | { type: "model_event"; event: ModelEvent }
  // A turn's final message, as appended to the transcript.
  | { type: "assistant_message"; message: AssistantMessage }
  | { type: "tool_start"; call: ToolCall }
  | { type: "tool_progress"; toolCallId: string; content: TextContent[] }
  // Emitted the moment a call finishes: maybe out of call order.
  | { type: "tool_end"; result: ToolResultMessage }
  // A call that was answered without being run.
  | { type: "tool_skipped"; result: ToolResultMessage }
  // The last event of every run.
  | { type: "turn_end"; reason: RunReason };

// Why a run ended.
export type RunReason = "stop" | "length" | "error" | "aborted" | "maxSteps";

export interface AgentRunResult {
  reason: RunReason;
  // The run's transcript: the caller's messages followed by everything this run added.
  messages: Message[];
  // How many model requests were made.
  steps: number;
}

// The caller's conversation. The loop copies its messages once, at the start, and never writes to it.
export interface AgentContext {
  systemPrompt: string;
  messages: Message[];
}

export interface AgentLoopOptions {
  context: AgentContext;
  model: Model;
  tools: ToolRegistry;
  // Absent: calls run with the built-in executor against `tools`.
  executor?: ToolExecutor;
  // Aborting it ends the run at the next boundary; tools get it too.
  signal?: AbortSignal;
  // The most model requests one run may make; DEFAULT_MAX_STEPS when absent.
  maxSteps?: number;
  onEvent?: (event: LoopEvent) => void;
}

// Why a call is answered without being run: the `reason` written to the result's details.
export type SkipReason = "length" | "error" | "aborted" | "unexpected-stop" | "duplicate-call-id";

// ---------------------------------------------------------------------------------------------------
// Above is the public surface: keep it as it is, the tests use these types. Write your code below.
// ---------------------------------------------------------------------------------------------------

// The main loop (runAgentLoop, turns), the single exit finish() and the part of runBatch that awaits
// and writes the results are written; each TODO is a piece for you to write, and its message names its
// Lab. You may need: toolCallsOf, text and errorResult from message.ts, registryExecutor from tool.ts,
// Promise.all.

import { toolCallsOf } from "./message.js";

// The paired result of a call that was not run (Lab 7.3): same id and name, isError true, details
// { skipped: true, reason }; the texts are in the table of GUIDE.en.md.
export function skippedCall(call: ToolCall, reason: SkipReason): ToolResultMessage {
  throw new Error(
    `TODO(Lab 7.3): write a skipped result for call ${call.id} (reason ${reason}): same id/name, isError: true, details { skipped: true, reason }, text from GUIDE.en.md`,
  );
}

// One run in progress.
interface Run {
  options: AgentLoopOptions;
  systemPrompt: string;
  // The run's own conversation: every request is built from it, every result is written to it.
  messages: Message[];
  // Model requests made so far.
  steps: number;
  signal: AbortSignal;
  maxSteps: number;
  emit: (event: LoopEvent) => void;
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  const run = startRun(options);
  return finish(run, await turns(run));
}

// The run's one look at the caller's context.
function startRun(options: AgentLoopOptions): Run {
  throw new Error(
    "TODO(Lab 7.1): copy the caller's context once (systemPrompt and the messages array) and from then on change only that copy; give signal, maxSteps and onEvent their defaults when absent",
  );
}

// Turn after turn, until a boundary or the decision table gives a reason to end.
async function turns(run: Run): Promise<RunReason> {
  for (;;) {
    const boundary = checkBoundaries(run);
    if (boundary !== undefined) return boundary;
    const assistant = await request(run);
    const end = decide(run, assistant);
    if (end !== undefined) return end;
    await runBatch(run, toolCallsOf(assistant));
  }
}

// Checked before every request, which is also right after the previous batch was written.
function checkBoundaries(run: Run): RunReason | undefined {
  if (run.signal.aborted || run.steps >= run.maxSteps) {
    throw new Error(
      "TODO(Lab 7.5): the boundary before a request: end aborted if the signal is aborted, end maxSteps if the request limit is reached",
    );
  }
  return undefined;
}

// One model turn: forward every event, then append the final message (never a partial) once.
async function request(run: Run): Promise<AssistantMessage> {
  throw new Error(
    "TODO(Lab 7.1): add one to steps and request the model with the systemPrompt, a copy of the transcript and every tool definition; forward each model event, then take result(), append it once and emit assistant_message",
  );
}

// The decision table. undefined: run the calls and ask again; otherwise the run ends for that reason.
function decide(run: Run, assistant: AssistantMessage): RunReason | undefined {
  const calls = toolCallsOf(assistant);
  // Lab 7.6 (optional): a call id used twice in one message? Add a branch before this line.
  if (assistant.stopReason === "toolUse" && calls.length > 0) return undefined;
  if (assistant.stopReason === "stop" && calls.length === 0) {
    throw new Error("TODO(Lab 7.1): a plain-text stop: this run ends normally");
  }
  throw new Error(
    `TODO(Lab 7.3): non-executing terminal state ${assistant.stopReason} (${calls.length} calls): run none of them, write a skipped result and emit tool_skipped for each call, then end with the matching reason`,
  );
}

// A batch, of one call or of several: every call starts (runCall) before any is awaited, and the results
// are written in call order, whatever order they finish in (Promise.all keeps the order of its input).
async function runBatch(run: Run, calls: ToolCall[]): Promise<void> {
  if (calls.length !== 1) {
    throw new Error(
      "TODO(Lab 7.4): start every call of the batch with runCall, all of them before awaiting any (a batch of one call is the same code; the special case below can go then)",
    );
  }
  // A batch of one call: the code Lab 7.4 writes serves it as well.
  const results = await Promise.all([runCall(run, calls[0])]);
  run.messages.push(...results);
}

// Runs one call and emits its tool_end the moment it finishes. Never rejects: the executor's synchronous
// throw and its rejection both go to failed().
async function runCall(run: Run, call: ToolCall): Promise<ToolResultMessage> {
  throw new Error(
    "TODO(Lab 7.2): emit tool_start, hand the call and { signal, reportProgress } to the executor (the built-in one if none is given), await it inside a try and give what the catch gets to failed(call, error); emit tool_end, return the result",
  );
}

// What a call whose executor threw or rejected becomes (Lab 7.4): an error result paired to the call.
// Every call gets exactly one result with its id, a lone call too.
function failed(call: ToolCall, error: unknown): ToolResultMessage {
  throw new Error(
    `TODO(Lab 7.4): the executor of call ${call.id} failed: write an error result with its id and name whose text carries the error's message, no stack`,
  );
}

// The single exit: every run emits exactly one turn_end, here.
function finish(run: Run, reason: RunReason): AgentRunResult {
  run.emit({ type: "turn_end", reason });
  return { reason, messages: run.messages, steps: run.steps };
}
